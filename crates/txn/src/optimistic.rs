//! `OptimisticDb`: transactions that take no locks and are validated when
//! they commit (RocksDB's `OptimisticTransactionDB`).

use std::borrow::Borrow;
use std::ops::Deref;
use std::path::Path;

use lithify_engine::{Db, Options, WriteOptions};

use crate::error::Result;
use crate::transaction::{Mode, Transaction};

/// Options of one optimistic transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct OptimisticTransactionOptions {
    /// Take the snapshot reads use when the transaction begins (default
    /// on). Off, reads see the latest state until
    /// [`Transaction::set_snapshot`] is called — and each read is still
    /// validated at commit against the state it saw.
    pub set_snapshot: bool,
    /// Validate the key ranges the transaction's iterators covered as well
    /// as the keys it read (default off): no phantoms, so range reads are
    /// serializable too. Off, two transactions that each scan a range and
    /// write into it can both commit (write skew through ranges).
    pub serializable: bool,
}

lithify_base::options_builder!(OptimisticTransactionOptions {
    set_snapshot: bool,
    serializable: bool,
});

impl Default for OptimisticTransactionOptions {
    fn default() -> Self {
        OptimisticTransactionOptions {
            set_snapshot: true,
            serializable: false,
        }
    }
}

/// A database whose transactions are optimistic: they take no locks;
/// [`Transaction::commit`] validates, inside the write group (so no other
/// commit can slip in between), that no key the transaction read or wrote
/// was written after the transaction read it, and fails with
/// [`Error::Conflict`](crate::Error::Conflict) otherwise.
///
/// Isolation: every key read is validated, so point reads and writes are
/// serializable (no lost update, no write skew through keys); with the
/// default snapshot at begin, all reads see one consistent state. Ranges
/// read by iterators are validated only with
/// [`serializable`](OptimisticTransactionOptions::serializable).
///
/// Plain writes through the wrapped [`Db`] (it derefs to it) take part:
/// a transaction that read a key a plain write changed fails to commit.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use lithify_engine::Options;
/// use lithify_txn::OptimisticDb;
///
/// let db = OptimisticDb::open(dir.path(), Options::default()).unwrap();
/// db.put(b"stock", b"5").unwrap();
/// let mut a = db.transaction();
/// let mut b = db.transaction();
/// for t in [&mut a, &mut b] {
///     let n: u32 = std::str::from_utf8(&t.get(b"stock").unwrap().unwrap()).unwrap().parse().unwrap();
///     t.put(b"stock", (n - 1).to_string()).unwrap();
/// }
/// a.commit().unwrap();
/// let err = b.commit().unwrap_err();
/// assert!(err.is_busy(), "{err}");
/// assert_eq!(db.get(b"stock").unwrap().unwrap(), &b"4"[..]);
/// ```
///
/// `D` is how the database is held: owned (the default) or borrowed
/// (`OptimisticDb<&Db>`, for a database opened elsewhere).
#[derive(Debug)]
pub struct OptimisticDb<D: Borrow<Db> = Db> {
    db: D,
}

impl OptimisticDb<Db> {
    /// Opens the database in `path` (see [`Db::open`]).
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Self> {
        Ok(OptimisticDb::new(Db::open(path, options)?))
    }

    /// Closes the database (see [`Db::close`]).
    pub fn close(self) -> Result<()> {
        Ok(self.db.close()?)
    }
}

impl<D: Borrow<Db>> OptimisticDb<D> {
    /// Wraps an open database.
    pub fn new(db: D) -> Self {
        OptimisticDb { db }
    }

    /// Begins a transaction with the default options.
    pub fn transaction(&self) -> Transaction<'_> {
        self.transaction_opt(
            &WriteOptions::default(),
            &OptimisticTransactionOptions::default(),
        )
    }

    /// Begins a transaction; its commit writes with `write_options`.
    pub fn transaction_opt(
        &self,
        write_options: &WriteOptions,
        options: &OptimisticTransactionOptions,
    ) -> Transaction<'_> {
        Transaction::begin(
            self.db.borrow(),
            Mode::Optimistic {
                serializable: options.serializable,
            },
            *write_options,
            options.set_snapshot,
        )
    }

    /// The database.
    pub fn db(&self) -> &Db {
        self.db.borrow()
    }

    /// Unwraps the database.
    pub fn into_inner(self) -> D {
        self.db
    }
}

impl<D: Borrow<Db>> Deref for OptimisticDb<D> {
    type Target = Db;

    fn deref(&self) -> &Db {
        self.db.borrow()
    }
}
