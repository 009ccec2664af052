//! The bookkeeping of jobs: the flush queue, the flushes and compactions
//! running (each registered with its table while it runs, so no two jobs
//! take one file), manual and scheduled major compactions, and the choice
//! of a background thread's next job. Running the jobs is `flush` and
//! `compaction`'s; what they change is installed through [`super::install`].

use std::collections::HashSet;
use std::sync::LazyLock;
use std::sync::atomic::Ordering;

use lithify_base::sync::Arc;
use lithify_compaction::{Compaction, CompactionStats, PickContext};
use lithify_version::TableId;

use super::table::{Imm, TableMut};
use super::{DbInner, DbState};
use crate::stall::StallCondition;
use lithify_memtable::MemTable;

/// A compaction chosen for a table and registered as running.
pub(crate) struct PickedCompaction {
    pub(crate) table: TableId,
    pub(crate) compaction: Compaction,
    /// Its registration in the table's running compactions.
    pub(crate) id: u64,
}

/// A background thread's job.
pub(crate) enum Job {
    Flush(TableId),
    Compaction(Box<PickedCompaction>),
    /// A table's scheduled major compaction is due.
    ScheduledMajor(TableId),
}

/// What a finished [`Job`] was, for [`DbState::finish_job`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum JobKind {
    Flush,
    Compaction,
    ScheduledMajor(TableId),
}

impl Job {
    /// What the job is, without what it holds.
    pub(crate) fn kind(&self) -> JobKind {
        match self {
            Job::Flush(_) => JobKind::Flush,
            Job::Compaction(_) => JobKind::Compaction,
            Job::ScheduledMajor(table) => JobKind::ScheduledMajor(*table),
        }
    }
}

/// The memtables a flush takes, newest first, and the WAL created when the
/// newest of them was switched out (the table's log number once they are
/// flushed).
pub(crate) struct FlushInput {
    pub(crate) mems: Vec<Arc<MemTable>>,
    pub(crate) next_log: u64,
}

static NO_MARKED: LazyLock<HashSet<u64>> = LazyLock::new(HashSet::new);

impl DbState {
    /// Queues a flush of `table` unless one is queued; `first` puts it
    /// ahead of the others (a flush asked for, or a WAL to free).
    pub(crate) fn queue_flush(&mut self, table: TableId, first: bool) {
        let Some(t) = self.tables.get_mut(&table) else {
            return;
        };
        if t.flush_queued {
            return;
        }
        t.flush_queued = true;
        if first {
            self.flush_queue.push_front(table);
        } else {
            self.flush_queue.push_back(table);
        }
    }

    /// Begins a flush of `table`: takes its immutable memtables, unless a
    /// flush of it runs, it has none, or it was dropped.
    pub(crate) fn begin_flush(&mut self, table: TableId) -> Option<FlushInput> {
        let t = self.tables.get_mut(&table)?;
        t.flush_queued = false;
        if t.state.is_dropped() || t.flush_running || t.imm.is_empty() {
            return None;
        }
        t.flush_running = true;
        let mut mems = Vec::with_capacity(t.imm.len());
        let mut next_log = 0;
        for imm in t.imm.iter_mut() {
            imm.flushing = true;
            mems.push(Arc::clone(&imm.mem));
            next_log = next_log.max(imm.next_log);
        }
        mems.reverse(); // newest first
        Some(FlushInput { mems, next_log })
    }

    /// A flush of `table` failed: its memtables wait for the next one.
    pub(crate) fn abort_flush(&mut self, table: TableId) {
        if let Some(t) = self.tables.get_mut(&table) {
            t.flush_running = false;
            for imm in t.imm.iter_mut() {
                imm.flushing = false;
            }
        }
    }

    /// A flush of `table`'s `count` oldest memtables is installed: they
    /// go, its statistics are counted (at `plan_level` for a flush plan),
    /// and a flush of memtables switched out meanwhile is queued.
    pub(crate) fn finish_flush(
        &mut self,
        table: TableId,
        count: usize,
        plan_level: Option<usize>,
        stats: &CompactionStats,
    ) {
        let Some(t) = self.tables.get_mut(&table) else {
            return;
        };
        for _ in 0..count {
            t.imm.pop_front();
        }
        t.flush_running = false;
        match plan_level {
            None => {
                t.stats.record_flush(stats);
                t.flush_shape.record(stats, count);
            }
            Some(level) => t.stats.record_compaction(level, stats),
        }
        if !t.imm.is_empty() {
            self.queue_flush(table, false);
        }
    }

    /// Registers `c` as running on `table`; `None` when the table is gone.
    pub(crate) fn register_compaction(&mut self, table: TableId, c: &Compaction) -> Option<u64> {
        let t = self.tables.get_mut(&table)?;
        Some(t.compactions.register(c, &t.state.icmp))
    }

    /// The compaction registered as `id` on `table` ended (installed or
    /// failed): its files are free for other jobs.
    pub(crate) fn finish_compaction(&mut self, table: TableId, id: u64) {
        if let Some(t) = self.tables.get_mut(&table) {
            t.compactions.unregister(id);
        }
    }

    /// Counts an installed compaction of `table` into `level`.
    pub(crate) fn record_compaction(
        &mut self,
        table: TableId,
        level: usize,
        stats: &CompactionStats,
    ) {
        if let Some(t) = self.tables.get_mut(&table) {
            t.stats.record_compaction(level, stats);
        }
    }

    /// An exclusive manual compaction begins waiting: no automatic
    /// compaction is picked until [`end_exclusive_manual`](Self::end_exclusive_manual).
    pub(crate) fn begin_exclusive_manual(&mut self) {
        self.exclusive_manual += 1;
    }

    /// An exclusive manual compaction ended.
    pub(crate) fn end_exclusive_manual(&mut self) {
        self.exclusive_manual -= 1;
    }

    /// A step of a manual compaction runs on its caller's thread.
    pub(crate) fn begin_manual_job(&mut self) {
        self.running_manual += 1;
    }

    /// The manual compaction step ended.
    pub(crate) fn end_manual_job(&mut self) {
        self.running_manual -= 1;
    }

    /// The soonest scheduled major compaction of any table.
    pub(crate) fn next_scheduled_major(&self) -> Option<u64> {
        self.tables
            .values()
            .filter_map(|t| t.next_scheduled_major)
            .min()
    }

    /// A background job ended: its count goes down; a scheduled major
    /// compaction is scheduled again, at its next time.
    pub(crate) fn finish_job(&mut self, job: JobKind) {
        match job {
            JobKind::Flush => self.running_flushes -= 1,
            JobKind::Compaction => self.running_compactions -= 1,
            JobKind::ScheduledMajor(table) => {
                self.running_compactions -= 1;
                if let Some(t) = self.tables.get_mut(&table) {
                    t.scheduled_major_running = false;
                    t.next_scheduled_major =
                        crate::options::translate::next_scheduled_major(&t.state.options);
                }
            }
        }
    }
}

impl DbInner {
    /// Switches `table`'s memtable out (its WAL is `next_log`, just
    /// created) and queues its flush, `first` ahead of the others.
    /// Returns the fresh memtable; `None` when the table is gone.
    pub(crate) fn switch_memtable(
        &self,
        st: &mut DbState,
        table: TableId,
        next_log: u64,
        first: bool,
    ) -> Option<Arc<MemTable>> {
        let t = st.tables.get_mut(&table)?;
        let old = std::mem::replace(&mut t.mem, Arc::new(t.state.new_memtable()));
        old.mark_immutable();
        t.imm.push_back(Imm::new(old, next_log));
        t.state.mem_first_log.store(next_log, Ordering::Relaxed);
        let fresh = Arc::clone(&t.mem);
        st.queue_flush(table, first);
        self.install(st, table);
        Some(fresh)
    }

    /// What a picker sees of `t` besides its version.
    pub(crate) fn pick_context<'a>(&self, t: &'a TableMut) -> PickContext<'a> {
        PickContext {
            in_progress: &t.compactions,
            now: self.options.clock.now_secs(),
            bottommost_mark_threshold: self.snapshots.bottommost_threshold(),
            marked_files: &NO_MARKED,
            has_compaction_filter: t.state.options.compaction_filter.is_some(),
            blob_gc: t.state.blob_options().forced_gc_policy(),
            read_heat: Some(&t.state.read_heat),
        }
    }

    /// Whether compactions may use the whole compaction share of the pool
    /// (RocksDB's `NeedSpeedupCompaction`): writes are stalled, L0 is well
    /// past its trigger, or much compaction is pending. Otherwise one runs
    /// at a time.
    fn compaction_pressure(&self, st: &DbState) -> bool {
        if st.controller.condition() != StallCondition::Normal {
            return true;
        }
        st.tables.values().any(|t| {
            let o = &t.state.options;
            let trigger = o.level0_file_num_compaction_trigger;
            let l0_speedup = (2 * trigger)
                .min(trigger + o.level0_slowdown_writes_trigger.saturating_sub(trigger) / 4);
            let soft = o.soft_pending_compaction_bytes_limit;
            t.version.num_files(0) >= l0_speedup
                || soft == 0
                || t.pending_compaction_bytes() >= (2 * o.max_bytes_for_level_base).min(soft / 4)
        })
    }

    /// The next automatic compaction of any table, registered as running.
    fn pick_compaction(&self, st: &mut DbState) -> Option<PickedCompaction> {
        if st.exclusive_manual > 0 {
            return None;
        }
        let ids: Vec<TableId> = st.tables.keys().copied().collect();
        for id in ids {
            let t = st.tables.get(&id)?;
            if t.state.options.disable_auto_compactions || t.state.is_dropped() {
                continue;
            }
            let picked = {
                let ctx = self.pick_context(t);
                if !t.picker.needs_compaction(&t.version, &ctx) {
                    continue;
                }
                t.picker.pick_auto(&t.version, &ctx)
            };
            let Some(c) = picked else { continue };
            let cid = st.register_compaction(id, &c)?;
            return Some(PickedCompaction {
                table: id,
                compaction: c,
                id: cid,
            });
        }
        None
    }

    /// A background thread's next job, counted as running: a queued flush
    /// first, then a due scheduled major compaction, then an automatic
    /// compaction (at most RocksDB's compaction share of the pool at once,
    /// one unless compaction is under pressure). `None` after a background
    /// error.
    pub(crate) fn next_job(&self, st: &mut DbState) -> Option<Job> {
        if st.bg_error.is_some() {
            return None;
        }
        if let Some(t) = st.flush_queue.pop_front() {
            st.running_flushes += 1;
            return Some(Job::Flush(t));
        }
        let (_, share) = self.options.job_limits();
        let now = self.options.clock.now_secs();
        if st.running_compactions < share
            && st.exclusive_manual == 0
            && let Some((id, t)) = st.tables.iter_mut().find(|(_, t)| {
                !t.scheduled_major_running
                    && !t.state.is_dropped()
                    && t.next_scheduled_major.is_some_and(|at| at <= now)
            })
        {
            let id = *id;
            t.scheduled_major_running = true;
            st.running_compactions += 1;
            return Some(Job::ScheduledMajor(id));
        }
        let max_compactions = if self.compaction_pressure(st) {
            share
        } else {
            1
        };
        if st.running_compactions < max_compactions
            && let Some(c) = self.pick_compaction(st)
        {
            st.running_compactions += 1;
            return Some(Job::Compaction(Box::new(c)));
        }
        None
    }

    /// Whether flushes and compactions are done for now: no flush queued
    /// or running, no memtable waiting for one, no compaction running
    /// (background, or a manual one's step), no scheduled major compaction
    /// due, and no table whose picker would pick a compaction (RocksDB's
    /// `WaitForCompact` condition).
    pub(crate) fn background_idle(&self, st: &DbState) -> bool {
        if !st.flush_queue.is_empty()
            || st.running_flushes > 0
            || st.running_compactions > 0
            || st.running_manual > 0
            || st.exclusive_manual > 0
        {
            return false;
        }
        let now = self.options.clock.now_secs();
        st.tables.values().all(|t| {
            if t.state.is_dropped() {
                return true;
            }
            if !t.imm.is_empty() || t.next_scheduled_major.is_some_and(|at| at <= now) {
                return false;
            }
            if t.state.options.disable_auto_compactions {
                return true;
            }
            let ctx = self.pick_context(t);
            !t.picker.needs_compaction(&t.version, &ctx)
                || t.picker.pick_auto(&t.version, &ctx).is_none()
        })
    }

    /// Waits until no compaction runs on the background threads (an
    /// exclusive manual compaction's start), a background error or the
    /// shutdown.
    pub(crate) fn wait_for_background_compactions<'a>(
        &'a self,
        mut st: lithify_base::sync::MutexGuard<'a, DbState>,
    ) -> lithify_base::sync::MutexGuard<'a, DbState> {
        while st.running_compactions > 0 && st.bg_error.is_none() && !st.shutting_down {
            st = self.done_cv.wait(st);
        }
        st
    }
}
