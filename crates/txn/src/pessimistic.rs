//! `TransactionDb`: transactions that lock the keys they write (and those
//! they read with `get_for_update`) — RocksDB's `TransactionDB`.

use std::borrow::Borrow;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use lithify_engine::{Db, Options, Table, WriteBatch, WriteOptions};

use crate::error::{InvalidArgumentSnafu, Result};
use crate::lock_table::LockTable;
use crate::transaction::{DEFAULT_LOCK_TIMEOUT, Mode, Transaction, lock_error};

/// Options of a [`TransactionDb`] (RocksDB's `TransactionDBOptions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TransactionDbOptions {
    /// Stripes of the lock table (RocksDB's `num_stripes`, 16).
    pub num_stripes: usize,
    /// How long a transaction waits for a lock unless its own options say
    /// otherwise; `None` waits forever (RocksDB's
    /// `transaction_lock_timeout`, 1 s).
    pub transaction_lock_timeout: Option<Duration>,
    /// How long a plain write through the `TransactionDb` waits for its
    /// keys' locks (RocksDB's `default_lock_timeout`, 1 s).
    pub default_lock_timeout: Option<Duration>,
}

lithify_base::options_builder!(TransactionDbOptions {
    num_stripes: usize,
    transaction_lock_timeout: Option<Duration>,
    default_lock_timeout: Option<Duration>,
});

impl Default for TransactionDbOptions {
    fn default() -> Self {
        TransactionDbOptions {
            num_stripes: 16,
            transaction_lock_timeout: Some(DEFAULT_LOCK_TIMEOUT),
            default_lock_timeout: Some(DEFAULT_LOCK_TIMEOUT),
        }
    }
}

/// Options of one pessimistic transaction (RocksDB's
/// `TransactionOptions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct TransactionOptions {
    /// Take a snapshot when the transaction begins (default off, as in
    /// RocksDB): reads use it, and a lock taken on a key changed after it
    /// fails with [`Error::Conflict`](crate::Error::Conflict).
    pub set_snapshot: bool,
    /// How long to wait for a lock; `None`: the database's
    /// [`transaction_lock_timeout`](TransactionDbOptions::transaction_lock_timeout).
    pub lock_timeout: Option<Duration>,
    /// Before waiting for a lock, follow the chain of transactions waiting
    /// for each other and fail with
    /// [`Error::Deadlock`](crate::Error::Deadlock) if it leads back to this
    /// one (default off, as in RocksDB: a deadlock then ends in a lock
    /// timeout).
    pub deadlock_detect: bool,
    /// How far the chain is followed; a longer chain counts as a deadlock
    /// (RocksDB's `deadlock_detect_depth`, 50).
    pub deadlock_detect_depth: usize,
}

lithify_base::options_builder!(TransactionOptions {
    set_snapshot: bool,
    lock_timeout: Option<Duration>,
    deadlock_detect: bool,
    deadlock_detect_depth: usize,
});

impl Default for TransactionOptions {
    fn default() -> Self {
        TransactionOptions {
            set_snapshot: false,
            lock_timeout: None,
            deadlock_detect: false,
            deadlock_detect_depth: 50,
        }
    }
}

/// A database whose transactions are pessimistic: a transaction locks each
/// key before it writes it or reads it with
/// [`get_for_update`](Transaction::get_for_update), and holds the locks
/// until it commits or rolls back. Two transactions never both commit a
/// write to a key after reading it for update; a transaction that would
/// wait too long fails with [`Error::TimedOut`](crate::Error::TimedOut), one
/// that would close a cycle of waits with
/// [`Error::Deadlock`](crate::Error::Deadlock) (if it asked for deadlock
/// detection).
///
/// Isolation, RocksDB's: without a snapshot, plain [`get`](Transaction::get)s
/// read the latest state (a second read may differ); keys read with
/// `get_for_update` cannot change until the transaction ends.
///
/// Plain writes ([`put`](Self::put), [`write`](Self::write)) lock their keys
/// too; writing through [`db`](Self::db) directly bypasses the locks.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use lithify_engine::Options;
/// use lithify_txn::{TransactionDb, TransactionDbOptions};
///
/// let db = TransactionDb::open(dir.path(), Options::default(), TransactionDbOptions::default()).unwrap();
/// let mut t = db.transaction();
/// let n = t.get_for_update(b"counter").unwrap().map_or(0, |v| v[0]);
/// t.put(b"counter", [n + 1]).unwrap();
/// t.commit().unwrap();
/// assert_eq!(db.get(b"counter").unwrap().unwrap(), &[1u8][..]);
/// ```
///
/// `D` is how the database is held: owned (the default) or borrowed
/// (`TransactionDb<&Db>`, for a database opened elsewhere).
#[derive(Debug)]
pub struct TransactionDb<D: Borrow<Db> = Db> {
    db: D,
    locks: LockTable,
    next_id: AtomicU64,
    options: TransactionDbOptions,
}

impl TransactionDb<Db> {
    /// Opens the database in `path` (see [`Db::open`]).
    pub fn open(
        path: impl AsRef<Path>,
        options: Options,
        txn_options: TransactionDbOptions,
    ) -> Result<Self> {
        Ok(TransactionDb::new(Db::open(path, options)?, txn_options))
    }

    /// Closes the database (see [`Db::close`]).
    pub fn close(self) -> Result<()> {
        Ok(self.db.close()?)
    }
}

impl<D: Borrow<Db>> TransactionDb<D> {
    /// Wraps an open database.
    pub fn new(db: D, options: TransactionDbOptions) -> Self {
        TransactionDb {
            db,
            locks: LockTable::new(options.num_stripes.max(1)),
            next_id: AtomicU64::new(1),
            options,
        }
    }

    /// Begins a transaction with the default options.
    pub fn transaction(&self) -> Transaction<'_> {
        self.transaction_opt(&WriteOptions::default(), &TransactionOptions::default())
    }

    /// Begins a transaction; its commit writes with `write_options`.
    pub fn transaction_opt(
        &self,
        write_options: &WriteOptions,
        options: &TransactionOptions,
    ) -> Transaction<'_> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        Transaction::begin(
            self.db.borrow(),
            Mode::Pessimistic {
                locks: &self.locks,
                id,
                lock_timeout: options
                    .lock_timeout
                    .or(self.options.transaction_lock_timeout),
                deadlock_detect: options.deadlock_detect,
                deadlock_detect_depth: options.deadlock_detect_depth,
            },
            *write_options,
            options.set_snapshot,
        )
    }

    /// The value of `key` in the default table (no lock).
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Bytes>> {
        Ok(self.db().get(key)?)
    }

    /// Sets `key` to `value` under its lock.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put(key, value);
        self.write(b)
    }

    /// Deletes `key` under its lock.
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.write(b)
    }

    /// Adds a merge operand to `key` under its lock.
    pub fn merge(&self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.merge(key, operand);
        self.write(b)
    }

    /// Applies `batch` atomically under the locks of its keys, taken in
    /// key order (so two plain writes never deadlock) and released after
    /// the write. A batch with a range deletion is refused: a range cannot
    /// be locked.
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.write_opt(batch, &WriteOptions::default())
    }

    /// [`write`](Self::write) with explicit write options.
    pub fn write_opt(&self, batch: WriteBatch, options: &WriteOptions) -> Result<()> {
        let mut keys: Vec<(u32, Bytes)> = Vec::with_capacity(batch.len());
        for e in batch.iter() {
            let e = e.map_err(|message| InvalidArgumentSnafu { message }.build())?;
            if e.kind == lithify_base::ValueKind::RangeDelete {
                return InvalidArgumentSnafu {
                    message:
                        "a TransactionDb cannot lock a range: write range deletions through db()"
                            .to_owned(),
                }
                .fail();
            }
            keys.push((e.table, Bytes::copy_from_slice(e.key)));
        }
        keys.sort();
        keys.dedup();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut held = 0;
        let result = (|| {
            for (table, key) in &keys {
                self.locks
                    .lock(id, *table, key, self.options.default_lock_timeout, false, 0)
                    .map_err(|e| {
                        let t = table_by_id(self.db(), *table);
                        match t {
                            Some(t) => lock_error(&t, key, e, self.db()),
                            None => InvalidArgumentSnafu {
                                message: format!("no table with id {table}"),
                            }
                            .build(),
                        }
                    })?;
                held += 1;
            }
            Ok(self.db().write_opt(batch, options)?)
        })();
        for (table, key) in &keys[..held] {
            self.locks.unlock(id, *table, key);
        }
        result
    }

    /// The database (writes through it bypass the locks).
    pub fn db(&self) -> &Db {
        self.db.borrow()
    }

    /// How many key locks are held now.
    pub fn locks_held(&self) -> usize {
        self.locks.len()
    }
}

/// The name of the table of `db` with id `id`, for messages.
pub(crate) fn table_name(db: &Db, id: u32) -> String {
    table_by_id(db, id).map_or_else(|| format!("#{id}"), |t| t.name().to_owned())
}

fn table_by_id(db: &Db, id: u32) -> Option<Table> {
    db.table_names()
        .iter()
        .filter_map(|n| db.table(n))
        .find(|t| t.id() == id)
}
