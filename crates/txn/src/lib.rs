//! Transactions over a lithify database, with RocksDB's semantics.
//!
//! * [`WriteBatchWithIndex`]: a write batch indexed by key; reads through
//!   it see the database with the batch applied (puts, deletes, range
//!   deletions, merges), point reads and cursors in both directions.
//! * [`OptimisticDb`]: transactions that take no locks and are validated
//!   when they commit — inside the engine's write group, so that no other
//!   commit can come between the validation and the write
//!   ([`Db::write_checked`](lithify_engine::Db::write_checked)).
//! * [`TransactionDb`]: transactions that lock what they write (and what
//!   they read with [`get_for_update`](Transaction::get_for_update)), with
//!   lock timeouts and deadlock detection.
//!
//! # Isolation
//!
//! | | optimistic (default) | optimistic, `serializable` | pessimistic |
//! |---|---|---|---|
//! | reads see | the snapshot at begin + own writes | same | latest state + own writes (a snapshot if `set_snapshot`) |
//! | dirty reads | never | never | never |
//! | non-repeatable reads | never (snapshot) | never | possible for plain `get` without a snapshot |
//! | lost updates | refused at commit | refused | prevented by locks (`get_for_update`) |
//! | write skew through keys read | refused at commit | refused | prevented if the keys were read with `get_for_update` |
//! | write skew / phantoms through ranges | possible | refused at commit | possible (ranges are not locked) |
//!
//! An optimistic commit fails with [`Error::Conflict`] (or
//! [`Error::RangeConflict`]) when a key it tracked was written by any other
//! commit — transactional or plain — after the transaction read it.
//! Every key read or written is tracked (RocksDB tracks only the keys read
//! with `GetForUpdate`; here every `get` counts, which is what makes point
//! reads serializable). A transaction that wrote nothing and read at its
//! snapshot commits without validation.
//!
//! # Durability
//!
//! A commit writes the transaction's batch as one WAL record through the
//! write group, with the [`WriteOptions`](lithify_engine::WriteOptions)
//! given at begin (`sync` for durability against power loss): after a
//! crash it is there completely or not at all.
//!
//! ```
//! # let dir = tempfile::tempdir().unwrap();
//! use lithify_engine::{Options, WriteOptions};
//! use lithify_txn::{OptimisticDb, OptimisticTransactionOptions};
//!
//! let db = OptimisticDb::open(dir.path(), Options::default()).unwrap();
//! let sync = WriteOptions::default()
//!     .sync(true);
//! let mut t = db.transaction_opt(&sync, &OptimisticTransactionOptions::default());
//! t.put(b"a", b"1").unwrap();
//! t.set_save_point();
//! t.put(b"b", b"2").unwrap();
//! assert_eq!(t.get(b"b").unwrap().unwrap(), &b"2"[..]);
//! t.rollback_to_save_point().unwrap();
//! t.commit().unwrap();
//! assert_eq!(db.get(b"a").unwrap().unwrap(), &b"1"[..]);
//! assert_eq!(db.get(b"b").unwrap(), None);
//! ```

mod error;
mod indexed_batch;
mod iter;
mod lock_table;
mod optimistic;
mod pessimistic;
mod tracker;
mod transaction;

pub use error::{Error, Result};
pub use indexed_batch::{BatchLookup, WriteBatchWithIndex};
pub use iter::BaseDeltaIterator;
pub use optimistic::{OptimisticDb, OptimisticTransactionOptions};
pub use pessimistic::{TransactionDb, TransactionDbOptions, TransactionOptions};
pub use transaction::{DEFAULT_LOCK_TIMEOUT, Transaction, TxnIterator};

/// The README's example, run as a doctest so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

// The thread-safety the documentation promises, checked at compile time.
const _: () = {
    const fn send_and_sync<T: Send + Sync>() {}
    const fn send<T: Send>() {}
    send_and_sync::<OptimisticDb>();
    send_and_sync::<TransactionDb>();
    send_and_sync::<Error>();
    send::<Transaction<'static>>();
    send::<WriteBatchWithIndex>();
};
