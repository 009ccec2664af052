//! Flush: immutable memtables become one L0 table, installed with a
//! `VersionEdit` that also advances the table's log number.

use std::time::{SystemTime, UNIX_EPOCH};

use lithify_base::sync::Arc;
use lithify_base::{InternalKeyComparator, MergingIterator, SeqNo};
use lithify_compaction_leveled::iter::{RangeTombstone, Snapshots};
use lithify_compaction_leveled::job::{
    FileNumbers, FlushResult, JobOptions, OutputFactory, flush_to_level0,
};
use lithify_memtable::MemTableIter;

use crate::mem::Mem;
use lithify_sstable::TableOptions;
use lithify_version::{TableId, VersionEdit};
use lithify_vfs::FileSystem;
use snafu::IntoError as _;

use crate::db_impl::DbInner;
use crate::error::{CompactionSnafu, Result};
use crate::stats::Counters;

/// Seconds since the Unix epoch.
pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Writes the memtables (newest first) into one L0 table through the
/// compaction iterator's flush rules (a version hidden by a newer one in
/// the same snapshot stripe is dropped; tombstones stay, as older data
/// lives deeper), with all their range tombstones. The file and its
/// directory are synced; `file` is `None` when nothing is left.
pub(crate) fn flush_memtables(
    fs: &dyn FileSystem,
    dir: &std::path::Path,
    numbers: &dyn FileNumbers,
    options: &TableOptions<InternalKeyComparator>,
    mems: &[Arc<Mem>],
    snapshots: &[SeqNo],
) -> Result<FlushResult> {
    let icmp = options.comparator.clone();
    let children: Vec<MemTableIter> = mems
        .iter()
        .map(|m| MemTableIter::new(Arc::clone(m.table())))
        .collect();
    let merged = MergingIterator::new(icmp, children);
    let tombstones: Vec<RangeTombstone> = mems
        .iter()
        .filter(|m| m.num_range_deletes() > 0)
        .flat_map(|m| m.range_tombstones())
        .map(|t| RangeTombstone::new(t.start, t.end, t.seqno))
        .collect();
    let factory = OutputFactory {
        fs,
        dir,
        numbers,
        table_options: options.clone(),
    };
    let now = now_secs();
    let opts = JobOptions {
        now: Some(now),
        ..JobOptions::default()
    };
    flush_to_level0(
        merged,
        tombstones,
        &Snapshots::new(snapshots.to_vec()),
        &factory,
        &opts,
        now,
    )
    .map_err(|e| CompactionSnafu.into_error(e))
}

impl DbInner {
    /// Runs one flush of `table`: picks its immutable memtables, writes
    /// them to an L0 table, installs the edit. Returns whether it did
    /// anything.
    pub(crate) fn run_flush(&self, table: TableId) -> Result<bool> {
        let (mems, next_log, count) = {
            let mut st = self.lock_state();
            let Some(t) = st.tables.get_mut(&table) else {
                return Ok(false);
            };
            t.flush_queued = false;
            if t.flush_running || t.imm.is_empty() {
                return Ok(false);
            }
            t.flush_running = true;
            let mut mems = Vec::new();
            let mut next_log = 0;
            for imm in t.imm.iter_mut() {
                imm.flushing = true;
                mems.push(Arc::clone(&imm.mem));
                next_log = next_log.max(imm.next_log);
            }
            mems.reverse(); // newest first
            let count = mems.len();
            (mems, next_log, count)
        };
        let snapshots = self.snapshots.sequences();
        let flushed = flush_memtables(
            &*self.fs,
            &self.dir,
            &self.versions,
            &self.opener.options,
            &mems,
            &snapshots,
        );
        let mut st = self.lock_state();
        let undo = |st: &mut crate::db_impl::DbState| {
            if let Some(t) = st.tables.get_mut(&table) {
                t.flush_running = false;
                for imm in t.imm.iter_mut() {
                    imm.flushing = false;
                }
            }
        };
        let flushed = match flushed {
            Ok(f) => f,
            Err(e) => {
                undo(&mut st);
                let shared = self.set_bg_error(&mut st, e);
                return Err(crate::error::ReadOnlySnafu { cause: shared }.build());
            }
        };
        let mut edit = VersionEdit::new(table);
        edit.log_number = Some(next_log);
        let number = flushed.file.as_ref().map(|f| f.number);
        if let Some(f) = flushed.file.clone() {
            edit.add_file(0, f);
        }
        self.versions.set_last_sequence(self.visible());
        if let Err(e) = self.versions.log_and_apply(vec![edit]) {
            undo(&mut st);
            if let Some(n) = number {
                let _ = self.fs.remove_file(&self.opener.path_of(n));
            }
            let shared = self.set_bg_error(&mut st, e.into());
            return Err(crate::error::ReadOnlySnafu { cause: shared }.build());
        }
        if let Some(t) = st.tables.get_mut(&table) {
            for _ in 0..count {
                t.imm.pop_front();
            }
            t.flush_running = false;
            if let Some(v) = self.versions.current(table) {
                t.version = v;
            }
            t.stats.record_flush(&flushed.stats);
            if !t.imm.is_empty() && !t.flush_queued {
                t.flush_queued = true;
                st.flush_queue.push_back(table);
            }
        }
        self.install_super_version(&mut st, table);
        self.recompute_stall(&mut st);
        st.bg_epoch += 1;
        drop(st);
        Counters::add(&self.counters.flush_bytes, flushed.stats.bytes_written);
        self.done_cv.notify_all();
        self.wake_background();
        Ok(true)
    }
}
