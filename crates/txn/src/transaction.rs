//! `Transaction`: reads that see the transaction's own writes, writes
//! collected in a [`WriteBatchWithIndex`], save points, and a commit that
//! writes the batch as one WAL record — validated (optimistic) or under
//! locks (pessimistic).

use std::ops::Bound;
use std::time::Duration;

use bytes::Bytes;
use lithify_base::key::escape;
use lithify_base::sync::Mutex;
use lithify_base::{SeqNo, ValueKind};
use lithify_engine::{Db, ReadOptions, Snapshot, Table, WriteOptions};

use crate::error::{
    ConflictSnafu, DeadlockSnafu, Error, InvalidArgumentSnafu, NoSavePointSnafu,
    RangeConflictSnafu, Result, TimedOutSnafu,
};
use crate::indexed_batch::WriteBatchWithIndex;
use crate::iter::BaseDeltaIterator;
use crate::lock_table::{LockError, LockTable, TxnId};
use crate::pessimistic::table_name;
use crate::tracker::{Tracker, TrackerMark};

/// How a transaction keeps other commits out of its way.
pub(crate) enum Mode<'db> {
    /// Validate at commit.
    Optimistic {
        /// Also validate the ranges iterators covered (phantoms).
        serializable: bool,
    },
    /// Lock before writing (and on `get_for_update`).
    Pessimistic {
        locks: &'db LockTable,
        id: TxnId,
        lock_timeout: Option<Duration>,
        deadlock_detect: bool,
        deadlock_detect_depth: usize,
    },
}

/// A transaction over a [`Db`]: begun by
/// [`OptimisticDb::transaction`](crate::OptimisticDb::transaction) or
/// [`TransactionDb::transaction`](crate::TransactionDb::transaction).
/// It borrows the database; it is `Send`, so it may move between threads,
/// but its methods are meant for one thread at a time.
///
/// * Reads ([`get`](Self::get), [`iter`](Self::iter)) see the database at
///   the transaction's snapshot, if it has one, else its latest state —
///   with the transaction's own writes applied, merges included.
/// * Writes collect in a batch; [`commit`](Self::commit) writes it as one
///   WAL record (after a crash it is there completely or not at all) with
///   the transaction's [`WriteOptions`].
/// * [`set_save_point`](Self::set_save_point) and
///   [`rollback_to_save_point`](Self::rollback_to_save_point) undo part of
///   the batch; [`rollback`](Self::rollback) (or dropping the transaction)
///   undoes all of it.
///
/// What keeps concurrent transactions apart depends on the kind; see the
/// crate documentation.
pub struct Transaction<'db> {
    db: &'db Db,
    default_table: Table,
    mode: Mode<'db>,
    batch: WriteBatchWithIndex,
    snapshot: Option<Snapshot>,
    tracker: Mutex<Tracker>,
    save_points: Vec<TrackerMark>,
    write_options: WriteOptions,
    /// Committed or rolled back: the locks are released.
    finished: bool,
}

impl std::fmt::Debug for Transaction<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("id", &self.id())
            .field("writes", &self.batch.len())
            .field("snapshot", &self.snapshot)
            .finish_non_exhaustive()
    }
}

impl<'db> Transaction<'db> {
    pub(crate) fn begin(
        db: &'db Db,
        mode: Mode<'db>,
        write_options: WriteOptions,
        set_snapshot: bool,
    ) -> Self {
        let mut txn = Transaction {
            db,
            default_table: db.default_table(),
            mode,
            batch: WriteBatchWithIndex::new(),
            snapshot: None,
            tracker: Mutex::new(Tracker::default()),
            save_points: Vec::new(),
            write_options,
            finished: false,
        };
        if set_snapshot {
            txn.set_snapshot();
        }
        txn
    }

    /// The transaction's id: unique within its [`TransactionDb`](crate::TransactionDb) (0 for an
    /// optimistic transaction).
    pub fn id(&self) -> u64 {
        match &self.mode {
            Mode::Optimistic { .. } => 0,
            Mode::Pessimistic { id, .. } => *id,
        }
    }

    /// Reads from now on see the database as of this moment (plus the
    /// transaction's writes); a pessimistic transaction's later locks fail
    /// with [`Error::Conflict`] if the key changed after it.
    pub fn set_snapshot(&mut self) {
        let snap = self.db.snapshot();
        let tracker = self.tracker.get_mut();
        if tracker.guard.is_none() {
            tracker.guard = Some(snap.clone());
        }
        self.snapshot = Some(snap);
    }

    /// The snapshot reads use, if any.
    pub fn snapshot(&self) -> Option<&Snapshot> {
        self.snapshot.as_ref()
    }

    /// The transaction's writes so far.
    pub fn write_batch(&self) -> &WriteBatchWithIndex {
        &self.batch
    }

    /// The value of `key` in the default table.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Bytes>> {
        self.get_cf(&self.default_table, key)
    }

    /// The value of `key` in `table`, as the transaction sees it. An
    /// optimistic transaction validates the key at commit.
    pub fn get_cf(&self, table: &Table, key: impl AsRef<[u8]>) -> Result<Option<Bytes>> {
        let key = key.as_ref();
        let read = self.read_options();
        if let Mode::Optimistic { .. } = self.mode {
            self.track_read(table, key);
        }
        self.batch.get_from_batch_and_db(table, key, &read)
    }

    /// [`get_cf`](Self::get_cf) for a key the transaction means to write:
    /// a pessimistic transaction takes the key's lock first (and fails with
    /// [`Error::Conflict`] if it has a snapshot and the key changed after
    /// it), then reads the latest value; an optimistic one reads as `get`
    /// does, and its commit fails with [`Error::Conflict`] if another
    /// writer changed the key after the read — even a commit that writes
    /// nothing (RocksDB's `GetForUpdate` promise).
    pub fn get_for_update(&self, key: impl AsRef<[u8]>) -> Result<Option<Bytes>> {
        self.get_for_update_cf(&self.default_table, key)
    }

    /// [`get_for_update`](Self::get_for_update) in `table`.
    pub fn get_for_update_cf(&self, table: &Table, key: impl AsRef<[u8]>) -> Result<Option<Bytes>> {
        let key = key.as_ref();
        match self.mode {
            Mode::Optimistic { .. } => {
                self.tracker.lock().for_update = true;
                self.get_cf(table, key)
            }
            Mode::Pessimistic { .. } => {
                self.lock(table, key)?;
                self.batch
                    .get_from_batch_and_db(table, key, &ReadOptions::default())
            }
        }
    }

    /// Sets `key` of the default table to `value`.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.write(None, ValueKind::Put, key.as_ref(), value.as_ref())
    }

    /// Sets `key` of `table` to `value`.
    pub fn put_cf(
        &mut self,
        table: &Table,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Result<()> {
        self.write(Some(table), ValueKind::Put, key.as_ref(), value.as_ref())
    }

    /// Deletes `key` of the default table.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> Result<()> {
        self.write(None, ValueKind::Delete, key.as_ref(), &[])
    }

    /// Deletes `key` of `table`.
    pub fn delete_cf(&mut self, table: &Table, key: impl AsRef<[u8]>) -> Result<()> {
        self.write(Some(table), ValueKind::Delete, key.as_ref(), &[])
    }

    /// Single-deletes `key` of `table` (see
    /// [`Db::single_delete`](lithify_engine::Db::single_delete)).
    pub fn single_delete_cf(&mut self, table: &Table, key: impl AsRef<[u8]>) -> Result<()> {
        self.write(Some(table), ValueKind::SingleDelete, key.as_ref(), &[])
    }

    /// Adds a merge operand to `key` of the default table.
    pub fn merge(&mut self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
        self.write(None, ValueKind::Merge, key.as_ref(), operand.as_ref())
    }

    /// Adds a merge operand to `key` of `table`; the transaction's reads
    /// of the key apply it.
    pub fn merge_cf(
        &mut self,
        table: &Table,
        key: impl AsRef<[u8]>,
        operand: impl AsRef<[u8]>,
    ) -> Result<()> {
        self.write(
            Some(table),
            ValueKind::Merge,
            key.as_ref(),
            operand.as_ref(),
        )
    }

    /// A point write of `key` in `table` (`None`: the default table): the
    /// key is tracked or locked first.
    fn write(
        &mut self,
        table: Option<&Table>,
        kind: ValueKind,
        key: &[u8],
        value: &[u8],
    ) -> Result<()> {
        let table = match table {
            Some(t) => t,
            None => &self.default_table,
        };
        self.before_write(table, key)?;
        match kind {
            ValueKind::Put => self.batch.put(table, key, value),
            ValueKind::Merge => self.batch.merge(table, key, value),
            ValueKind::SingleDelete => self.batch.single_delete(table, key),
            _ => self.batch.delete(table, key),
        }
        Ok(())
    }

    /// Deletes the keys of `table` in `[start, end)` (optimistic
    /// transactions only: a pessimistic one cannot lock a range, and
    /// refuses, as RocksDB's `TransactionDB` does). The range is not
    /// validated: it is a blind write.
    pub fn delete_range_cf(
        &mut self,
        table: &Table,
        start: impl AsRef<[u8]>,
        end: impl AsRef<[u8]>,
    ) -> Result<()> {
        if let Mode::Pessimistic { .. } = self.mode {
            return InvalidArgumentSnafu {
                message: "a pessimistic transaction cannot delete a range (it cannot lock one)"
                    .to_owned(),
            }
            .fail();
        }
        self.batch.delete_range(table, start, end);
        Ok(())
    }

    /// A cursor over the default table as the transaction sees it.
    pub fn iter(&self) -> Result<TxnIterator<'_>> {
        self.range_cf(&self.default_table, None, None)
    }

    /// A cursor over the keys of `table` in `[lower, upper)` (`None`:
    /// unbounded) as the transaction sees it. A `serializable` optimistic
    /// transaction validates the range the cursor covered at commit.
    pub fn range_cf(
        &self,
        table: &Table,
        lower: Option<&[u8]>,
        upper: Option<&[u8]>,
    ) -> Result<TxnIterator<'_>> {
        let mut read = self.read_options();
        read.lower_bound = lower.map(Bytes::copy_from_slice);
        read.upper_bound = upper.map(Bytes::copy_from_slice);
        let tracked = match self.mode {
            Mode::Optimistic { serializable: true } => {
                let mut t = self.tracker.lock();
                let seq = Self::read_seq(self.db, &mut t, read.snapshot.as_ref());
                Some(t.track_range(table.id(), seq))
            }
            _ => None,
        };
        Ok(TxnIterator {
            inner: self.batch.iter(table, &read)?,
            tracker: &self.tracker,
            tracked,
            lower: read.lower_bound,
            upper: read.upper_bound,
            table: table.clone(),
        })
    }

    /// Marks a point [`rollback_to_save_point`](Self::rollback_to_save_point)
    /// returns to (save points nest).
    pub fn set_save_point(&mut self) {
        self.batch.set_save_point();
        self.save_points.push(self.tracker.get_mut().mark());
    }

    /// Undoes the writes since the newest save point and removes it. Keys
    /// first read or locked after it are no longer tracked: an optimistic
    /// commit does not validate them, a pessimistic transaction releases
    /// their locks (RocksDB's `RollbackToSavePoint`).
    pub fn rollback_to_save_point(&mut self) -> Result<()> {
        let Some(mark) = self.save_points.pop() else {
            return NoSavePointSnafu.fail();
        };
        self.batch.rollback_to_save_point();
        let released = self.tracker.get_mut().rollback(mark);
        self.unlock_all(&released);
        Ok(())
    }

    /// Forgets the newest save point without undoing anything.
    pub fn pop_save_point(&mut self) -> Result<()> {
        if self.save_points.pop().is_none() {
            return NoSavePointSnafu.fail();
        }
        self.batch.pop_save_point();
        Ok(())
    }

    /// Writes the transaction's batch as one WAL record.
    ///
    /// An optimistic transaction first validates, in the write group, that
    /// no key it read or wrote (and, if `serializable`, no range its
    /// iterators covered) was written after it read it; if one was, the
    /// commit writes nothing and fails with [`Error::Conflict`] (or
    /// [`Error::RangeConflict`]) naming it. A pessimistic transaction holds
    /// the locks of its keys and writes; its locks are released after the
    /// write, whatever its outcome.
    pub fn commit(mut self) -> Result<()> {
        let result = self.commit_inner();
        self.finish();
        result
    }

    /// Drops the transaction's writes and releases its locks (dropping the
    /// transaction does the same).
    pub fn rollback(mut self) {
        self.finish();
    }

    fn commit_inner(&mut self) -> Result<()> {
        let batch = self.batch.take_batch();
        match self.mode {
            Mode::Pessimistic { .. } => {
                self.db.write_opt(batch, &self.write_options)?;
                Ok(())
            }
            Mode::Optimistic { serializable } => {
                let tracker = self.tracker.get_mut();
                if batch.is_empty() && self.snapshot.is_some() && !tracker.for_update {
                    // Every read saw one snapshot: nothing to validate.
                    return Ok(());
                }
                let keys = tracker.take_keys();
                let ranges = if serializable {
                    std::mem::take(&mut tracker.ranges)
                } else {
                    Vec::new()
                };
                let verdict = self
                    .db
                    .write_checked(batch, &self.write_options, move |view| {
                        for k in &keys {
                            if view.key_changed_since(k.table, &k.key, k.seq)? {
                                return Ok(Err(Conflict::Key(k.table, k.key.clone(), k.seq)));
                            }
                        }
                        for r in &ranges {
                            let Some((start, end)) = &r.covered else {
                                continue;
                            };
                            let (start, end) = (as_ref_bound(start), as_ref_bound(end));
                            if view.range_changed_since(r.table, start, end, r.seq)? {
                                return Ok(Err(Conflict::Range(r.clone())));
                            }
                        }
                        Ok(Ok(()))
                    })?;
                match verdict {
                    Ok(()) => Ok(()),
                    Err(Conflict::Key(table, key, since)) => {
                        let table = table_name(self.db, table);
                        tracing::debug!(target: "lithify::txn", %table, key = %escape(&key), since, "optimistic commit failed validation");
                        ConflictSnafu {
                            table,
                            key: escape(&key),
                            since,
                        }
                        .fail()
                    }
                    Err(Conflict::Range(r)) => {
                        let table = table_name(self.db, r.table);
                        let range = r
                            .covered
                            .as_ref()
                            .map_or_else(String::new, |(s, e)| describe_range(s, e));
                        tracing::debug!(target: "lithify::txn", %table, %range, since = r.seq, "optimistic commit failed range validation");
                        RangeConflictSnafu {
                            table,
                            range,
                            since: r.seq,
                        }
                        .fail()
                    }
                }
            }
        }
    }

    /// Releases everything (idempotent).
    fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        self.batch.clear();
        let released = self.tracker.get_mut().clear();
        self.unlock_all(&released);
        self.snapshot = None;
    }

    fn read_options(&self) -> ReadOptions {
        match &self.snapshot {
            Some(s) => ReadOptions::at(s),
            None => ReadOptions::default(),
        }
    }

    /// The sequence number a read at `snapshot` (`None`: the latest
    /// state) sees at least; takes the guard snapshot first if there is
    /// none.
    fn read_seq(db: &Db, tracker: &mut Tracker, snapshot: Option<&Snapshot>) -> SeqNo {
        if tracker.guard.is_none() {
            tracker.guard = Some(db.snapshot());
        }
        match snapshot {
            Some(s) => s.sequence_number(),
            None => db.latest_sequence_number(),
        }
    }

    fn track_read(&self, table: &Table, key: &[u8]) {
        let mut t = self.tracker.lock();
        let seq = Self::read_seq(self.db, &mut t, self.snapshot.as_ref());
        t.track(table.id(), key, seq);
    }

    fn before_write(&self, table: &Table, key: &[u8]) -> Result<()> {
        match self.mode {
            Mode::Optimistic { .. } => {
                self.track_read(table, key);
                Ok(())
            }
            Mode::Pessimistic { .. } => self.lock(table, key),
        }
    }

    /// Takes the lock of `key` (pessimistic); with a snapshot, fails if
    /// the key changed after it (and gives a newly taken lock back).
    fn lock(&self, table: &Table, key: &[u8]) -> Result<()> {
        let Mode::Pessimistic {
            locks,
            id,
            lock_timeout,
            deadlock_detect,
            deadlock_detect_depth,
        } = self.mode
        else {
            return Ok(());
        };
        let mut tracker = self.tracker.lock();
        if tracker.contains(table.id(), key) {
            return Ok(());
        }
        let taken = locks
            .lock(
                id,
                table.id(),
                key,
                lock_timeout,
                deadlock_detect,
                deadlock_detect_depth,
            )
            .map_err(|e| lock_error(table, key, e, self.db))?;
        tracker.track(table.id(), key, 0);
        if let Some(snap) = &self.snapshot {
            let since = snap.sequence_number();
            let changed = self.db.key_changed_since(table.id(), key, since);
            if !matches!(changed, Ok(false)) {
                if taken {
                    tracker.untrack_last(table.id(), key);
                    locks.unlock(id, table.id(), key);
                }
                changed?;
                return ConflictSnafu {
                    table: table.name().to_owned(),
                    key: escape(key),
                    since,
                }
                .fail();
            }
        }
        Ok(())
    }

    fn unlock_all(&self, keys: &[(u32, Bytes)]) {
        if let Mode::Pessimistic { locks, id, .. } = self.mode {
            for (table, key) in keys {
                locks.unlock(id, *table, key);
            }
        }
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Why a validation failed.
enum Conflict {
    Key(u32, Bytes, SeqNo),
    Range(crate::tracker::TrackedRange),
}

pub(crate) fn lock_error(table: &Table, key: &[u8], e: LockError, db: &Db) -> Error {
    match e {
        LockError::TimedOut { holder } => TimedOutSnafu {
            table: table.name().to_owned(),
            key: escape(key),
            holder,
        }
        .build(),
        LockError::Deadlock { cycle } => {
            let cycle = cycle
                .iter()
                .map(|(txn, t, k)| {
                    format!("txn {txn} waits for {}/{}", table_name(db, *t), escape(k))
                })
                .collect::<Vec<_>>()
                .join(" -> ");
            DeadlockSnafu {
                table: table.name().to_owned(),
                key: escape(key),
                cycle,
            }
            .build()
        }
    }
}

fn as_ref_bound(b: &Bound<Bytes>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(&k[..]),
        Bound::Excluded(k) => Bound::Excluded(&k[..]),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn describe_range(start: &Bound<Bytes>, end: &Bound<Bytes>) -> String {
    let s = match start {
        Bound::Included(k) => format!("[{}", escape(k)),
        Bound::Excluded(k) => format!("({}", escape(k)),
        Bound::Unbounded => "(-inf".to_owned(),
    };
    let e = match end {
        Bound::Included(k) => format!("{}]", escape(k)),
        Bound::Excluded(k) => format!("{})", escape(k)),
        Bound::Unbounded => "+inf)".to_owned(),
    };
    format!("{s}, {e}")
}

/// A cursor over a table as a transaction sees it (see
/// [`Transaction::range_cf`]); the moves of
/// [`BaseDeltaIterator`]. A `serializable` optimistic transaction records
/// the key range the cursor covers, for validation at commit.
pub struct TxnIterator<'t> {
    inner: BaseDeltaIterator<'t>,
    tracker: &'t Mutex<Tracker>,
    /// The index of this cursor's range in the tracker.
    tracked: Option<usize>,
    lower: Option<Bytes>,
    upper: Option<Bytes>,
    table: Table,
}

impl std::fmt::Debug for TxnIterator<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TxnIterator")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl TxnIterator<'_> {
    /// Whether the cursor is on a key.
    pub fn valid(&self) -> bool {
        self.inner.valid()
    }

    /// The current key and value.
    pub fn entry(&self) -> Option<(&[u8], &[u8])> {
        self.inner.entry()
    }

    /// The current key.
    pub fn key(&self) -> Option<&[u8]> {
        self.inner.key()
    }

    /// The current value.
    pub fn value(&self) -> Option<&[u8]> {
        self.inner.value()
    }

    /// Moves to the first key.
    pub fn seek_to_first(&mut self) -> Result<()> {
        self.inner.seek_to_first()?;
        let lower = self.lower.clone().map_or(Bound::Unbounded, Bound::Included);
        self.cover(Some(lower), None, true);
        Ok(())
    }

    /// Moves to the first key `>= target`.
    pub fn seek(&mut self, target: impl AsRef<[u8]>) -> Result<()> {
        let target = target.as_ref();
        self.inner.seek(target)?;
        self.cover(
            Some(Bound::Included(Bytes::copy_from_slice(target))),
            None,
            true,
        );
        Ok(())
    }

    /// Moves to the last key.
    pub fn seek_to_last(&mut self) -> Result<()> {
        self.inner.seek_to_last()?;
        let upper = self.upper.clone().map_or(Bound::Unbounded, Bound::Excluded);
        self.cover(None, Some(upper), false);
        Ok(())
    }

    /// Moves to the last key `<= target`.
    pub fn seek_for_prev(&mut self, target: impl AsRef<[u8]>) -> Result<()> {
        let target = target.as_ref();
        self.inner.seek_for_prev(target)?;
        self.cover(
            None,
            Some(Bound::Included(Bytes::copy_from_slice(target))),
            false,
        );
        Ok(())
    }

    /// Moves to the next key.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<()> {
        self.inner.next()?;
        self.cover(None, None, true);
        Ok(())
    }

    /// Moves to the previous key.
    pub fn prev(&mut self) -> Result<()> {
        self.inner.prev()?;
        self.cover(None, None, false);
        Ok(())
    }

    /// Widens the tracked range to take in the keys a move passed: its
    /// seek target (`from_lo`/`from_hi`), the key it stopped on, or — if
    /// it ran off the end — everything up to the bound in its direction.
    fn cover(
        &mut self,
        from_lo: Option<Bound<Bytes>>,
        from_hi: Option<Bound<Bytes>>,
        forward: bool,
    ) {
        let Some(i) = self.tracked else {
            return;
        };
        let cmp = std::sync::Arc::clone(self.table.comparator());
        let mut t = self.tracker.lock();
        let r = &mut t.ranges[i];
        let (mut lo, mut hi) = match r.covered.take() {
            Some((lo, hi)) => (Some(lo), Some(hi)),
            None => (None, None),
        };
        let mut widen_lo = |b: Bound<Bytes>| {
            lo = Some(match lo.take() {
                None => b,
                Some(cur) => lower_of(&*cmp, cur, b),
            })
        };
        if let Some(b) = from_lo {
            widen_lo(b);
        }
        match self.inner.key() {
            Some(k) => widen_lo(Bound::Included(Bytes::copy_from_slice(k))),
            None if !forward => {
                widen_lo(self.lower.clone().map_or(Bound::Unbounded, Bound::Included));
            }
            None => {}
        }
        let mut widen_hi = |b: Bound<Bytes>| {
            hi = Some(match hi.take() {
                None => b,
                Some(cur) => upper_of(&*cmp, cur, b),
            })
        };
        if let Some(b) = from_hi {
            widen_hi(b);
        }
        match self.inner.key() {
            Some(k) => widen_hi(Bound::Included(Bytes::copy_from_slice(k))),
            None if forward => {
                widen_hi(self.upper.clone().map_or(Bound::Unbounded, Bound::Excluded));
            }
            None => {}
        }
        // A move that saw nothing on one side leaves that side where the
        // other is: a point range.
        let lo = lo.or_else(|| hi.clone()).unwrap_or(Bound::Unbounded);
        let hi = hi.unwrap_or_else(|| flip(&lo));
        r.covered = Some((lo, hi));
    }
}

/// The wider of two lower bounds.
fn lower_of(cmp: &dyn lithify_base::Comparator, a: Bound<Bytes>, b: Bound<Bytes>) -> Bound<Bytes> {
    match (&a, &b) {
        (Bound::Unbounded, _) | (_, Bound::Unbounded) => Bound::Unbounded,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            match cmp.compare(x, y) {
                std::cmp::Ordering::Less => a,
                std::cmp::Ordering::Greater => b,
                std::cmp::Ordering::Equal => {
                    if matches!(a, Bound::Included(_)) {
                        a
                    } else {
                        b
                    }
                }
            }
        }
    }
}

/// The wider of two upper bounds.
fn upper_of(cmp: &dyn lithify_base::Comparator, a: Bound<Bytes>, b: Bound<Bytes>) -> Bound<Bytes> {
    match (&a, &b) {
        (Bound::Unbounded, _) | (_, Bound::Unbounded) => Bound::Unbounded,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            match cmp.compare(x, y) {
                std::cmp::Ordering::Greater => a,
                std::cmp::Ordering::Less => b,
                std::cmp::Ordering::Equal => {
                    if matches!(a, Bound::Included(_)) {
                        a
                    } else {
                        b
                    }
                }
            }
        }
    }
}

/// An upper bound for a range that holds only where `lo` starts.
fn flip(lo: &Bound<Bytes>) -> Bound<Bytes> {
    match lo {
        Bound::Included(k) | Bound::Excluded(k) => Bound::Included(k.clone()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// How long a pessimistic transaction waits for a lock by default
/// (RocksDB's `TransactionDBOptions::transaction_lock_timeout`, 1 s).
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_millis(1000);
