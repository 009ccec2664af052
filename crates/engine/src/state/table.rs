//! Per-table (column family) state: everything the engine keeps for one
//! table, keyed by its id — its memtables, version, options, compaction
//! strategy (and, for `Adaptive`, the workload it observes), running
//! compactions and statistics.

use std::collections::VecDeque;
use std::sync::Arc as StdArc;

use crate::merge::TableMerge;
use lithify_base::InternalKeyComparator;
use lithify_base::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use lithify_base::sync::{Arc, Mutex};
use lithify_compaction::{CompactionPicker, CompactionStatsTable, CompactionsInProgress, ReadHeat};
use lithify_compaction_strategy::CompactionStrategy;
use lithify_compaction_strategy::adaptive::{AdaptiveState, WorkloadRecorder, WorkloadStats};
use lithify_memtable::MemTable;
use lithify_version::{TableId, Version};

use crate::options::Options;
use crate::options::translate::memtable_options;
use crate::super_version::{ArcCell, SuperVersion};

/// The shared, mostly immutable part of a table.
pub(crate) struct TableState {
    pub(crate) id: TableId,
    pub(crate) name: String,
    pub(crate) options: StdArc<Options>,
    pub(crate) icmp: InternalKeyComparator,
    /// What reads resolve merge operands with.
    pub(crate) merge: StdArc<TableMerge>,
    /// What readers pin.
    pub(crate) sv: ArcCell<SuperVersion>,
    /// Set by an insert that filled the memtable; the next write leader
    /// switches it.
    pub(crate) needs_switch: AtomicBool,
    /// Per-table counters (amplification per table).
    pub(crate) counters: TableCounters,
    /// The workload observed for the `Adaptive` strategy.
    pub(crate) workload: WorkloadTracker,
    /// Where recent reads went (sampled), for pickers that merge first
    /// where reads are.
    pub(crate) read_heat: StdArc<ReadHeat>,
    /// The table was dropped: handles fail, jobs skip it.
    dropped: AtomicBool,
    /// The oldest WAL the mutable memtable may hold data of (the live WAL
    /// when it was created); written and read by the write leader only.
    pub(crate) mem_first_log: AtomicU64,
    /// Key-value separation as in force: `options.blob` at open, changed
    /// by `set_options`; each flush and compaction reads it when it starts.
    blob: Mutex<crate::BlobOptions>,
}

/// What one table did, counted without locks.
#[derive(Debug, Default)]
pub(crate) struct TableCounters {
    pub(crate) keys_written: AtomicU64,
    pub(crate) user_bytes: AtomicU64,
    pub(crate) gets: AtomicU64,
    pub(crate) get_tables_probed: AtomicU64,
    pub(crate) get_blocks: AtomicU64,
    /// Bytes written by flush plans (flushes merged into files).
    pub(crate) flush_plan_bytes: AtomicU64,
    pub(crate) compaction_write_bytes: AtomicU64,
    /// Bytes flushes and compactions wrote to blob files.
    pub(crate) blob_write_bytes: AtomicU64,
    /// Iterators opened on the table.
    pub(crate) scans: AtomicU64,
    /// The sorted runs of SST files those iterators merged (each L0
    /// file, each non-empty level below).
    pub(crate) scan_sorted_runs: AtomicU64,
}

/// The `Adaptive` strategy's observation of a table: reads counted with
/// an atomic, writes (their order, key range and sampled existence) in a
/// [`WorkloadRecorder`] fed by the write leader. Disabled (and free)
/// unless the table's strategy is `Adaptive`.
pub(crate) struct WorkloadTracker {
    pub(crate) enabled: AtomicBool,
    pub(crate) reads: AtomicU64,
    /// Writes observed (one in `SAMPLE_EVERY` is looked up).
    pub(crate) writes_seen: AtomicU64,
    pub(crate) recorder: Mutex<WorkloadRecorder>,
    /// Operations per window.
    pub(crate) window_ops: AtomicU64,
    /// Scans (iterators) observed, also counted in `reads`.
    pub(crate) scans: AtomicU64,
    /// A thread is closing the window.
    closing: AtomicBool,
}

/// Held while a thread closes a table's window.
pub(crate) struct Closing<'a>(&'a AtomicBool);

impl Drop for Closing<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// One write in 64 is looked up to tell updates from inserts.
pub(crate) const SAMPLE_EVERY: u64 = 64;

impl WorkloadTracker {
    pub(crate) fn new(icmp: &InternalKeyComparator) -> Self {
        WorkloadTracker {
            enabled: AtomicBool::new(false),
            reads: AtomicU64::new(0),
            writes_seen: AtomicU64::new(0),
            recorder: Mutex::new(WorkloadRecorder::new(icmp.clone(), 1)),
            window_ops: AtomicU64::new(u64::MAX),
            scans: AtomicU64::new(0),
            closing: AtomicBool::new(false),
        }
    }

    /// Claims the closing of the window; `None` when another thread is
    /// closing it.
    pub(crate) fn begin_close(&self) -> Option<Closing<'_>> {
        (!self.closing.swap(true, Ordering::AcqRel)).then_some(Closing(&self.closing))
    }

    #[inline]
    pub(crate) fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Counts a read; true when a window may be complete (checked every
    /// 1024 reads so readers rarely touch the lock).
    #[inline]
    pub(crate) fn record_read(&self) -> bool {
        let n = self.reads.fetch_add(1, Ordering::Relaxed) + 1;
        n.is_multiple_of(1024) && self.window_full(n)
    }

    /// Counts a scan (a read too); true when a window may be complete.
    #[inline]
    pub(crate) fn record_scan(&self) -> bool {
        self.scans.fetch_add(1, Ordering::Relaxed);
        self.record_read()
    }

    fn window_full(&self, reads: u64) -> bool {
        let writes = self.recorder.lock().window_ops();
        reads + writes >= self.window_ops.load(Ordering::Relaxed)
    }

    /// Whether the window holds enough operations.
    pub(crate) fn is_full(&self) -> bool {
        self.window_full(self.reads.load(Ordering::Relaxed))
    }

    /// Turns observation on (with the adaptive window size) or off, as the
    /// table's strategy says.
    pub(crate) fn configure(&self, strategy: &StrategyState) {
        match &strategy.adaptive {
            Some(a) => {
                self.window_ops
                    .store(a.options().min_window_ops.max(1), Ordering::Relaxed);
                self.enabled.store(true, Ordering::Relaxed);
            }
            None => {
                self.enabled.store(false, Ordering::Relaxed);
                self.window_ops.store(u64::MAX, Ordering::Relaxed);
            }
        }
    }

    /// Ends the window: its statistics, reads included.
    pub(crate) fn take_window(&self) -> WorkloadStats {
        let mut rec = self.recorder.lock();
        let mut w = rec.take_window();
        w.reads += self.reads.swap(0, Ordering::Relaxed);
        w.scans += self.scans.swap(0, Ordering::Relaxed);
        w
    }
}

/// A table's strategy as configured, and the adaptive state when it is
/// `Adaptive`.
pub(crate) struct StrategyState {
    /// The strategy the user set.
    pub(super) configured: CompactionStrategy,
    /// `Adaptive`'s choice and window history.
    pub(super) adaptive: Option<AdaptiveState>,
    /// Why the strategy in force is in force (shown in the stats).
    pub(super) reason: String,
    /// Switches so far.
    pub(super) switches: u64,
    /// When `Adaptive`'s last window closed, by the engine's clock
    /// (seconds; where the next window began).
    pub(super) window_closed_at: Option<u64>,
    /// The table's flush and compaction bytes written, and user bytes,
    /// when `Adaptive`'s last window closed (each window's difference is
    /// what the strategy in force wrote for it).
    pub(super) written_at_window: (u64, u64),
}

impl StrategyState {
    /// Why the strategy in force is in force.
    pub(crate) fn reason(&self) -> &str {
        &self.reason
    }

    /// Switches so far.
    pub(crate) fn switches(&self) -> u64 {
        self.switches
    }

    /// `Adaptive`'s state, when the table is `Adaptive`.
    pub(crate) fn adaptive(&self) -> Option<&AdaptiveState> {
        self.adaptive.as_ref()
    }

    /// The strategy in force: `Adaptive`'s current choice, or the one
    /// configured.
    pub(crate) fn in_force(&self) -> &CompactionStrategy {
        match &self.adaptive {
            Some(a) => a.current(),
            None => &self.configured,
        }
    }
}

impl TableState {
    /// A table's shared state around its first super version.
    pub(crate) fn new(
        id: TableId,
        name: String,
        options: StdArc<Options>,
        icmp: InternalKeyComparator,
        sv: SuperVersion,
        recorded_merge_operator: Option<String>,
    ) -> TableState {
        TableState {
            blob: Mutex::new(options.blob),
            merge: StdArc::new(TableMerge::new(
                &name,
                options.merge_operator.clone(),
                recorded_merge_operator,
            )),
            id,
            name,
            options,
            workload: WorkloadTracker::new(&icmp),
            read_heat: StdArc::new(ReadHeat::new()),
            icmp,
            sv: ArcCell::new(sv),
            needs_switch: AtomicBool::new(false),
            counters: TableCounters::default(),
            dropped: AtomicBool::new(false),
            mem_first_log: AtomicU64::new(0),
        }
    }

    /// The key-value separation settings in force.
    pub(crate) fn blob_options(&self) -> crate::BlobOptions {
        *self.blob.lock()
    }

    /// Puts `blob` in force for the flushes and compactions that start
    /// from now on.
    pub(crate) fn set_blob_options(&self, blob: crate::BlobOptions) {
        *self.blob.lock() = blob;
    }

    pub(crate) fn mark_dropped(&self) {
        self.dropped.store(true, Ordering::Release);
    }

    pub(crate) fn is_dropped(&self) -> bool {
        self.dropped.load(Ordering::Acquire)
    }

    pub(crate) fn new_memtable(&self) -> MemTable {
        new_memtable(&self.icmp, &self.options)
    }

    /// Whether the memtable passed `write_buffer_size`.
    #[inline]
    pub(crate) fn is_full(&self, mem: &MemTable) -> bool {
        mem.approximate_memory_usage() >= self.options.write_buffer_size
    }

    pub(crate) fn mark_full(&self) -> bool {
        !self.needs_switch.swap(true, Ordering::AcqRel)
    }

    pub(crate) fn take_full(&self) -> bool {
        self.needs_switch.swap(false, Ordering::AcqRel)
    }
}

/// An empty memtable with the options `options` translate to.
pub(crate) fn new_memtable(icmp: &InternalKeyComparator, options: &Options) -> MemTable {
    MemTable::with_options(icmp.clone(), &memtable_options(options))
}

/// An immutable memtable waiting for (or in) its flush.
pub(crate) struct Imm {
    pub(super) mem: Arc<MemTable>,
    /// The WAL created when this memtable was switched out: once it is
    /// flushed, the table needs no older WAL.
    pub(super) next_log: u64,
    pub(super) flushing: bool,
}

impl Imm {
    /// A memtable switched out when WAL `next_log` was created (0 when no
    /// WAL was: a read-only open).
    pub(crate) fn new(mem: Arc<MemTable>, next_log: u64) -> Imm {
        Imm {
            mem,
            next_log,
            flushing: false,
        }
    }

    /// The memtable.
    pub(crate) fn mem(&self) -> &Arc<MemTable> {
        &self.mem
    }
}

/// The mutable part of a table, guarded by the database state mutex.
/// Read through its accessors; changed only by the transitions of
/// [`crate::state`]'s modules.
pub(crate) struct TableMut {
    pub(super) state: StdArc<TableState>,
    pub(super) mem: Arc<MemTable>,
    /// Immutable memtables, oldest first.
    pub(super) imm: VecDeque<Imm>,
    pub(super) version: StdArc<Version>,
    /// A flush of this table is running.
    pub(super) flush_running: bool,
    /// A flush was asked for and not yet picked.
    pub(super) flush_queued: bool,
    /// The table's compaction strategy.
    pub(super) picker: StdArc<dyn CompactionPicker>,
    /// Its compactions running now.
    pub(super) compactions: CompactionsInProgress,
    /// Cumulative flush and compaction statistics per level.
    pub(super) stats: CompactionStatsTable,
    /// The strategy and, for `Adaptive`, its state.
    pub(super) strategy: StrategyState,
    /// The next scheduled major compaction (seconds since the Unix
    /// epoch), if the table has one.
    pub(super) next_scheduled_major: Option<u64>,
    /// A scheduled major compaction is running.
    pub(super) scheduled_major_running: bool,
    /// What plain flushes wrote (the cost model's flush size).
    pub(super) flush_shape: FlushShape,
}

/// What a table's plain flushes (not flush plans) wrote, summed: the
/// `Adaptive` cost model's flush size and distinct-key share.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct FlushShape {
    /// Memtables flushed.
    pub(crate) memtables: u64,
    /// Entries they held (every version).
    pub(crate) records_in: u64,
    /// Entries the flushes wrote.
    pub(crate) records_out: u64,
    /// Bytes the flushes wrote to tables.
    pub(crate) bytes: u64,
    /// Bytes the flushes wrote to blob files (key-value separation).
    pub(crate) blob_bytes: u64,
}

impl FlushShape {
    /// Adds a flush of `memtables` memtables; past 64 memtables the
    /// sums are halved, so recent flushes weigh most.
    pub(crate) fn record(&mut self, stats: &lithify_compaction::CompactionStats, memtables: usize) {
        if self.memtables >= 64 {
            self.memtables /= 2;
            self.records_in /= 2;
            self.records_out /= 2;
            self.bytes /= 2;
            self.blob_bytes /= 2;
        }
        self.memtables += memtables as u64;
        self.records_in += stats.num_input_records;
        self.records_out += stats.num_output_records;
        self.bytes += stats.bytes_written;
        self.blob_bytes += stats.bytes_written_blob;
    }
}

impl TableMut {
    /// A table's mutable part as an open or `create_table` builds it: no
    /// job running, none queued.
    pub(crate) fn new(
        state: StdArc<TableState>,
        mem: Arc<MemTable>,
        imm: VecDeque<Imm>,
        version: StdArc<Version>,
        stats: CompactionStatsTable,
        picker: StdArc<dyn CompactionPicker>,
        strategy: StrategyState,
    ) -> TableMut {
        let next_scheduled_major = crate::options::translate::next_scheduled_major(&state.options);
        TableMut {
            state,
            mem,
            imm,
            version,
            flush_running: false,
            flush_queued: false,
            picker,
            compactions: CompactionsInProgress::new(),
            stats,
            strategy,
            next_scheduled_major,
            scheduled_major_running: false,
            flush_shape: FlushShape::default(),
        }
    }

    /// The table's shared part.
    pub(crate) fn state(&self) -> &StdArc<TableState> {
        &self.state
    }

    /// The mutable memtable.
    pub(crate) fn mem(&self) -> &Arc<MemTable> {
        &self.mem
    }

    /// The immutable memtables, oldest first.
    pub(crate) fn imm(&self) -> &VecDeque<Imm> {
        &self.imm
    }

    /// The current version.
    pub(crate) fn version(&self) -> &StdArc<Version> {
        &self.version
    }

    /// The picker of the strategy in force.
    pub(crate) fn picker(&self) -> &dyn CompactionPicker {
        &*self.picker
    }

    /// The table's compactions running now.
    pub(crate) fn compactions(&self) -> &CompactionsInProgress {
        &self.compactions
    }

    /// The flush and compaction statistics per level.
    pub(crate) fn stats(&self) -> &CompactionStatsTable {
        &self.stats
    }

    /// The strategy and, for `Adaptive`, its state.
    pub(crate) fn strategy(&self) -> &StrategyState {
        &self.strategy
    }

    /// What plain flushes wrote.
    pub(crate) fn flush_shape(&self) -> &FlushShape {
        &self.flush_shape
    }

    /// A flush or compaction of the table is running.
    pub(crate) fn has_running_jobs(&self) -> bool {
        self.flush_running || !self.compactions.is_empty()
    }

    /// RocksDB's estimate of the bytes compaction still has to rewrite.
    pub(crate) fn pending_compaction_bytes(&self) -> u64 {
        self.picker.estimated_compaction_needed_bytes(&self.version)
    }

    /// Builds the super version of the current parts.
    pub(crate) fn super_version(&self) -> SuperVersion {
        let prev = self.state.sv.get();
        SuperVersion::new(
            Arc::clone(&self.mem),
            self.imm.iter().rev().map(|i| Arc::clone(&i.mem)).collect(),
            StdArc::clone(&self.version),
            Some(&prev),
        )
    }

    /// Immutable memtables not yet flushed.
    pub(crate) fn unflushed(&self) -> usize {
        self.imm.len()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use lithify_base::ValueKind;
    use lithify_memtable::Lookup;

    #[test]
    fn memtables_get_the_whole_key_filter_by_default() {
        let icmp = InternalKeyComparator::bytewise();
        let opts = Options::default().write_buffer_size(1 << 20);
        let m = new_memtable(&icmp, &opts);
        assert!(m.filter_size() > 0);
        m.add(1, ValueKind::Put, b"a", b"1").unwrap();
        assert_eq!(
            m.get(b"a", 5),
            Lookup::Found {
                value: b"1",
                seqno: 1
            }
        );
        assert_eq!(m.get(b"zz", 5), Lookup::NotFound);
        m.add(2, ValueKind::RangeDelete, b"m", b"p").unwrap();
        assert!(matches!(m.get(b"n", 5), Lookup::Deleted { .. }));
        let off = opts.memtable_whole_key_filtering(false);
        assert_eq!(new_memtable(&icmp, &off).filter_size(), 0);
    }
}
