//! `DbInner`: the state shared by the `Db` handle, its writers, readers
//! and background threads.
//!
//! Locks, in the order they may be taken:
//!
//! 1. `leader` — the write leader's state (WAL writers, sequence counter,
//!    current memtables). Only the leader of a write group holds it for
//!    long; others (WAL sync, purge) take it briefly.
//! 2. `state` — the database mutex (RocksDB's `mutex_`): memtable lists,
//!    versions, background job bookkeeping, stall state. Held for short
//!    sections and for MANIFEST writes.
//! 3. a table's super-version cell — held only to clone or swap an `Arc`.
//!
//! The modules below own the state's changes: [`install`] applies edits
//! to the MANIFEST and installs them (the one door), [`jobs`] keeps the
//! background and manual jobs' bookkeeping, [`strategy`] switches a
//! table's compaction strategy, [`table`] holds a table's parts, and
//! [`leader`] what the write group's leader owns.

pub(crate) mod install;
pub(crate) mod jobs;
pub(crate) mod leader;
pub(crate) mod strategy;
pub(crate) mod table;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc as StdArc;
use std::time::{Duration, Instant};

use lithify_base::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use lithify_base::sync::{Condvar, Mutex, MutexGuard};
use lithify_base::{Id, SeqNo};
use lithify_sstable::BlockCache;
use lithify_version::{TableId, VersionSet};
use lithify_vfs::{FileLock, FileSystem};

use crate::error::{Error, OpenedReadOnlySnafu, ReadOnlySnafu, Result};
use crate::events::Events;
use crate::options::Options;
use crate::recovery::RecoveryReport;
use crate::snapshot::SnapshotList;
use crate::sst_files::SstFiles;
use crate::state::table::{TableMut, TableState};
use crate::stats::Counters;
use crate::write_controller::WriteController;
use crate::write_thread::WriteThread;
use leader::LeaderState;

/// The state guarded by the database mutex. Its fields are private: the
/// modules below this one change it through named transitions ([`jobs`]:
/// queue, begin and finish flushes and compactions; [`install`]: apply an
/// edit and install it; [`strategy`]: switch a table's strategy), and
/// everyone else reads it through accessors.
pub(crate) struct DbState {
    tables: BTreeMap<TableId, TableMut>,
    bg_error: Option<StdArc<Error>>,
    shutting_down: bool,
    /// Tables with a flush to run, in request order.
    flush_queue: VecDeque<TableId>,
    running_flushes: usize,
    running_compactions: usize,
    /// Exclusive manual compactions waiting or running: automatic ones
    /// are not picked meanwhile.
    exclusive_manual: usize,
    /// Manual compaction jobs running on callers' threads.
    running_manual: usize,
    controller: WriteController,
    /// WAL files that exist (or may), by number.
    live_logs: BTreeSet<u64>,
}

impl DbState {
    /// The state of a database just opened with `tables`, stalling at
    /// `delayed_write_rate`, with WALs `live_logs`.
    pub(crate) fn new(
        tables: BTreeMap<TableId, TableMut>,
        delayed_write_rate: u64,
        live_logs: BTreeSet<u64>,
    ) -> DbState {
        DbState {
            tables,
            bg_error: None,
            shutting_down: false,
            flush_queue: VecDeque::new(),
            running_flushes: 0,
            running_compactions: 0,
            exclusive_manual: 0,
            running_manual: 0,
            controller: WriteController::new(delayed_write_rate),
            live_logs,
        }
    }

    /// Table `id`'s mutable part.
    pub(crate) fn table(&self, id: TableId) -> Option<&TableMut> {
        self.tables.get(&id)
    }

    /// Every table, by id (the default table first).
    pub(crate) fn tables(&self) -> impl Iterator<Item = (TableId, &TableMut)> {
        self.tables.iter().map(|(id, t)| (*id, t))
    }

    /// The ids of the tables.
    pub(crate) fn table_ids(&self) -> Vec<TableId> {
        self.tables.keys().copied().collect()
    }

    /// The error that made the database read-only, if any.
    pub(crate) fn bg_error(&self) -> Option<&StdArc<Error>> {
        self.bg_error.as_ref()
    }

    /// `close` began: background threads stop and waiters give up.
    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shutting_down
    }

    /// Begins the shutdown; false when it had begun already.
    pub(crate) fn begin_shutdown(&mut self) -> bool {
        !std::mem::replace(&mut self.shutting_down, true)
    }

    /// Flush jobs running on the background threads.
    pub(crate) fn running_flushes(&self) -> usize {
        self.running_flushes
    }

    /// Compaction jobs running on the background threads.
    pub(crate) fn running_compactions(&self) -> usize {
        self.running_compactions
    }

    /// The write controller (stall condition, cause, delayed rate).
    pub(crate) fn controller(&self) -> &WriteController {
        &self.controller
    }

    /// How long a delayed write of `bytes` waits (the controller's token
    /// bucket).
    pub(crate) fn stall_delay(&mut self, bytes: u64, now: Instant) -> Duration {
        self.controller.delay(bytes, now)
    }

    /// The WALs that exist (or may).
    pub(crate) fn live_logs(&self) -> &BTreeSet<u64> {
        &self.live_logs
    }

    /// Records WAL `number` as created (before its creation is tried: a
    /// failed creation may leave the file).
    pub(crate) fn add_live_log(&mut self, number: u64) {
        self.live_logs.insert(number);
    }

    /// Forgets the WALs below `min_log` (about to be deleted) and returns
    /// them.
    pub(crate) fn take_logs_below(&mut self, min_log: u64) -> Vec<u64> {
        let dead: Vec<u64> = self.live_logs.range(..min_log).copied().collect();
        for n in &dead {
            self.live_logs.remove(n);
        }
        dead
    }
}

/// The database's write group: what its
/// [`WriteThread`] commits groups of writes with (`write` implements it).
pub(crate) struct WriteGroup;

/// What the database shares between threads.
pub(crate) struct DbInner {
    pub(crate) dir: PathBuf,
    pub(crate) fs: StdArc<dyn FileSystem>,
    pub(crate) options: StdArc<Options>,
    pub(crate) versions: VersionSet,
    pub(crate) opener: StdArc<SstFiles>,
    pub(crate) cache: Option<StdArc<BlockCache>>,
    pub(crate) default_table: StdArc<TableState>,
    pub(crate) write_thread: WriteThread<WriteGroup>,
    pub(crate) leader: Mutex<LeaderState>,
    /// The last sequence number readers may see.
    pub(crate) visible_seq: AtomicU64,
    pub(crate) snapshots: StdArc<SnapshotList>,
    pub(crate) state: Mutex<DbState>,
    /// Background threads wait here for work.
    pub(crate) bg_cv: Condvar,
    /// Writers (stops), `flush`/`compact_range` callers and `close` wait
    /// here for background work to finish.
    pub(crate) done_cv: Condvar,
    /// Fast-path copies of `state` facts.
    pub(crate) read_only: AtomicBool,
    pub(crate) stalled: AtomicBool,
    /// Some table's memtable is full.
    pub(crate) switch_pending: AtomicBool,
    /// Writes without WAL went to the memtables: close flushes them.
    pub(crate) unpersisted: AtomicBool,
    /// Some table is (or was) `Adaptive`: writes are observed.
    pub(crate) adaptive_seen: AtomicBool,
    /// Ingestions holding new writes back while they flush and place
    /// their files ([`DbInner::stop_writes_for_ingestion`]).
    pub(crate) ingestions_stopping_writes: AtomicUsize,
    /// `disable_file_deletions` calls not yet matched by
    /// `enable_file_deletions`: while above 0, nothing is deleted.
    pub(crate) deletions_disabled: AtomicUsize,
    /// Held by a purge from its check of `deletions_disabled` to its last
    /// deletion; `disable_file_deletions` waits for it.
    pub(crate) purge_lock: Mutex<()>,
    /// Limits the bytes compactions write per second.
    pub(crate) rate_limiter: Option<StdArc<crate::resource::RateLimiter>>,
    pub(crate) counters: Counters,
    pub(crate) opened_at: Instant,
    /// Events: tracing, the `LOG` file, the listeners.
    pub(crate) events: Events,
    /// What the open recovered and dropped.
    pub(crate) recovery: RecoveryReport,
    /// Opened with `Db::open_read_only`: no writes, no background work,
    /// nothing written to the directory.
    pub(crate) opened_read_only: bool,
    /// A read-only open: each WAL its replay read and the file's size then
    /// (what a checkpoint of it copies).
    pub(crate) replayed_wal_sizes: Vec<(u64, u64)>,
    /// This open's identity (RocksDB's `db_session_id`), recorded with the
    /// database's in every SST file the open writes.
    pub(crate) session_id: Id,
    /// The `LOCK` (none for a read-only open).
    pub(crate) _lock: Option<FileLock>,
}

impl DbInner {
    /// Holds new writes back until the guard is dropped, as RocksDB's
    /// ingestion stops writes while it flushes an overlapping memtable and
    /// places its files: writes already in the write group finish, new
    /// ones wait in [`wait_while_ingesting`](Self::wait_while_ingesting),
    /// except a listener's (the thread running a callback may be the
    /// ingestion itself, or a flush it waits for).
    pub(crate) fn stop_writes_for_ingestion(&self) -> IngestionStop<'_> {
        self.ingestions_stopping_writes
            .fetch_add(1, Ordering::AcqRel);
        IngestionStop { db: self }
    }

    /// Waits while an ingestion holds writes back (a write that asked for
    /// no slowdown fails instead).
    pub(crate) fn wait_while_ingesting(&self, no_slowdown: bool) -> Result<()> {
        let mut st = self.lock_state();
        while self.ingestions_stopping_writes.load(Ordering::Acquire) > 0 {
            if no_slowdown {
                return crate::error::InvalidArgumentSnafu {
                    message: "writes are held back while a file is ingested, and the write asked for no slowdown"
                        .to_owned(),
                }
                .fail();
            }
            if st.is_shutting_down() {
                return crate::error::ShuttingDownSnafu.fail();
            }
            // The stop's end notifies `done_cv`; the timeout only guards
            // against a missed wake-up.
            st = self.done_cv.wait_timeout(st, Duration::from_millis(100)).0;
        }
        Ok(())
    }

    /// Who writes this open's SST files: the database and the session
    /// (with each file's number, the file's unique id).
    pub(crate) fn writer_identity(&self) -> (Id, Id) {
        (self.versions.db_id(), self.session_id)
    }

    /// Where flushes and compactions of `table` write their tables: this
    /// directory, numbers from the version set, this open's identity, the
    /// table's key-value separation `blob` (with the garbage collection
    /// cutoff of its current blob files).
    pub(crate) fn output_factory(
        &self,
        table: TableId,
        blob: &crate::BlobOptions,
    ) -> lithify_compaction::OutputFactory<'_> {
        let blob_numbers: Vec<u64> = self
            .versions
            .current(table)
            .map(|v| v.blob_files().keys().copied().collect())
            .unwrap_or_default();
        lithify_compaction::OutputFactory {
            fs: &*self.fs,
            dir: &self.dir,
            numbers: &self.versions,
            sst_options: self.opener.options.clone(),
            identity: Some(self.writer_identity()),
            blobs: crate::options::translate::blob_settings(
                blob,
                table,
                blob.relocate_below(&blob_numbers),
                &self.opener.blobs,
            ),
        }
    }

    /// The current sequence number for reads.
    #[inline]
    pub(crate) fn visible(&self) -> SeqNo {
        self.visible_seq.load(Ordering::Acquire)
    }

    pub(crate) fn lock_state(&self) -> MutexGuard<'_, DbState> {
        self.state.lock()
    }

    /// The table `id`, or the default table's state when `id` was dropped
    /// (a job finishing for a dropped table writes with its options).
    pub(crate) fn table_or_default(&self, id: TableId) -> StdArc<TableState> {
        self.table(id)
            .unwrap_or_else(|| StdArc::clone(&self.default_table))
    }

    /// The table `id`.
    pub(crate) fn table(&self, id: TableId) -> Option<StdArc<TableState>> {
        if id == self.default_table.id {
            return Some(StdArc::clone(&self.default_table));
        }
        self.lock_state()
            .tables
            .get(&id)
            .map(|t| StdArc::clone(&t.state))
    }

    /// Fails if the database was opened read-only, or a background error
    /// made it read-only.
    #[inline]
    pub(crate) fn check_writable(&self) -> Result<()> {
        if !self.read_only.load(Ordering::Acquire) {
            return Ok(());
        }
        if self.opened_read_only {
            return OpenedReadOnlySnafu {
                dir: self.dir.clone(),
            }
            .fail();
        }
        match &self.lock_state().bg_error {
            Some(cause) => ReadOnlySnafu {
                cause: StdArc::clone(cause),
            }
            .fail(),
            None => Ok(()),
        }
    }

    /// Records the first background error: from now on the database is
    /// read-only.
    pub(crate) fn set_bg_error(&self, st: &mut DbState, err: Error) -> StdArc<Error> {
        let first = st.bg_error.is_none();
        let e = st.bg_error.get_or_insert_with(|| StdArc::new(err)).clone();
        if first {
            self.events.background_error(StdArc::clone(&e));
        }
        self.read_only.store(true, Ordering::Release);
        self.bg_cv.notify_all();
        self.done_cv.notify_all();
        e
    }

    /// Records `err` as the background error (the first one stays) and
    /// returns what the operation that met it reports: the database is
    /// read-only now, because of it.
    pub(crate) fn stop_writes(&self, st: &mut DbState, err: Error) -> Error {
        let cause = self.set_bg_error(st, err);
        ReadOnlySnafu { cause }.build()
    }

    /// Wakes the background threads.
    pub(crate) fn wake_background(&self) {
        self.bg_cv.notify_all();
    }
}

/// New writes are held back while this lives
/// ([`DbInner::stop_writes_for_ingestion`]).
pub(crate) struct IngestionStop<'a> {
    db: &'a DbInner,
}

impl Drop for IngestionStop<'_> {
    fn drop(&mut self) {
        let _st = self.db.lock_state();
        self.db
            .ingestions_stopping_writes
            .fetch_sub(1, Ordering::AcqRel);
        self.db.done_cv.notify_all();
    }
}
