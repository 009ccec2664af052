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

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc as StdArc;
use std::time::Instant;

use crate::mem::Mem;
use lithify_base::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use lithify_base::sync::{Arc, Condvar, Mutex, MutexGuard};
use lithify_base::{Id, SeqNo};
use lithify_sstable::BlockCache;
use lithify_version::{TableId, VersionSet};
use lithify_vfs::{FileLock, FileSystem};

use crate::error::{Error, OpenedReadOnlySnafu, ReadOnlySnafu, Result};
use crate::events::Events;
use crate::leader::LeaderState;
use crate::options::Options;
use crate::recovery::RecoveryReport;
use crate::snapshot::SnapshotList;
use crate::sst_opener::SstOpener;
use crate::stats::Counters;
use crate::table_state::{TableMut, TableState};
use crate::write_controller::{
    StallCause, StallCondition, StallInputs, WriteController, stall_condition,
};
use crate::write_thread::WriteThread;

/// The state guarded by the database mutex.
pub(crate) struct DbState {
    pub(crate) tables: BTreeMap<TableId, TableMut>,
    pub(crate) bg_error: Option<StdArc<Error>>,
    pub(crate) shutting_down: bool,
    /// Tables with a flush to run, in request order.
    pub(crate) flush_queue: VecDeque<TableId>,
    pub(crate) running_flushes: usize,
    pub(crate) running_compactions: usize,
    /// Exclusive manual compactions waiting or running: automatic ones
    /// are not picked meanwhile.
    pub(crate) exclusive_manual: usize,
    /// Manual compaction jobs running on callers' threads.
    pub(crate) running_manual: usize,
    pub(crate) controller: WriteController,
    /// WAL files that exist (or may), by number.
    pub(crate) live_logs: BTreeSet<u64>,
}

/// What the database shares between threads.
pub(crate) struct DbInner {
    pub(crate) dir: PathBuf,
    pub(crate) fs: StdArc<dyn FileSystem>,
    pub(crate) options: StdArc<Options>,
    pub(crate) versions: VersionSet,
    pub(crate) opener: StdArc<SstOpener>,
    pub(crate) cache: Option<StdArc<BlockCache>>,
    pub(crate) default_table: StdArc<TableState>,
    pub(crate) write_thread: WriteThread<DbInner>,
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
    /// database's in every table file the open writes.
    pub(crate) session_id: Id,
    /// The `LOCK` (none for a read-only open).
    pub(crate) _lock: Option<FileLock>,
}

impl DbInner {
    /// Who writes this open's table files: the database and the session
    /// (with each file's number, the file's unique id).
    pub(crate) fn writer_identity(&self) -> (Id, Id) {
        (self.versions.db_id(), self.session_id)
    }

    /// Where flushes and compactions write their tables: this directory,
    /// numbers from the version set, this open's identity.
    pub(crate) fn output_factory(&self) -> lithify_compaction::OutputFactory<'_> {
        lithify_compaction::OutputFactory {
            fs: &*self.fs,
            dir: &self.dir,
            numbers: &self.versions,
            sst_options: self.opener.options.clone(),
            identity: Some(self.writer_identity()),
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

    /// Makes a change to `table`'s parts visible — a new version after
    /// an installed edit (flush, compaction, refit), a memtable switch, a
    /// new table — the one way RocksDB's `InstallSuperVersionAndScheduleWork`
    /// does: take the table's current version from the `VersionSet`,
    /// install a new super version for readers, and recompute the write
    /// stall over all tables. The caller wakes
    /// waiters and background threads with [`notify_installed`] once it
    /// has released the database mutex.
    ///
    /// [`notify_installed`]: DbInner::notify_installed
    pub(crate) fn install(&self, st: &mut DbState, table: TableId) {
        if let Some(t) = st.tables.get_mut(&table) {
            if let Some(v) = self.versions.current(table) {
                t.version = v;
            }
            let sv = t.super_version();
            t.state.sv.install(sv);
        }
        // A read-only database takes no writes: nothing to stall.
        if !self.opened_read_only {
            self.recompute_stall(st);
        }
    }

    /// Wakes whoever waits for installed changes (flush and compaction
    /// callers, stopped writers, `close`) and the background threads
    /// (the change may have made work).
    pub(crate) fn notify_installed(&self) {
        self.done_cv.notify_all();
        self.wake_background();
    }

    /// Recomputes the write-stall condition over all tables (the worst
    /// wins, as RocksDB's DB-wide write controller).
    pub(crate) fn recompute_stall(&self, st: &mut DbState) {
        let mut worst = (StallCondition::Normal, None::<StallCause>);
        let mut worst_inputs = StallInputs::default();
        for t in st.tables.values() {
            let inputs = StallInputs {
                unflushed_imm: t.unflushed(),
                l0_files: if t.picker.l0_count_stalls_writes() {
                    t.version.num_files(0)
                } else {
                    0
                },
                pending_bytes: crate::compaction::pending_compaction_bytes(t),
            };
            let d = stall_condition(&t.state.options, &inputs);
            if d.0 > worst.0 {
                worst = d;
                worst_inputs = inputs;
            }
        }
        let was = st.controller.condition();
        let was_cause = st.controller.cause();
        st.controller.update(&self.options, worst, &worst_inputs);
        self.stalled
            .store(worst.0 != StallCondition::Normal, Ordering::Release);
        if worst.0 != was || (worst.0 != StallCondition::Normal && worst.1 != was_cause) {
            self.events.stall_changed(crate::events::WriteStallInfo {
                condition: worst.0,
                previous: was,
                cause: worst.1,
            });
        }
        if worst.0 < was {
            self.done_cv.notify_all();
        }
    }

    /// Wakes the background threads.
    pub(crate) fn wake_background(&self) {
        self.bg_cv.notify_all();
    }

    pub(crate) fn new_memtable_for(&self, t: &TableState) -> Arc<Mem> {
        Arc::new(t.new_memtable())
    }
}
