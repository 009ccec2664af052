//! Per-table (column family) state: everything the engine keeps for one
//! table, keyed by its id. Issue 8 exposes only the default table, but the
//! write path, read path, flush and compaction all work per table.

use std::collections::VecDeque;
use std::sync::Arc as StdArc;

use crate::mem::Mem;
use lithify_base::InternalKeyComparator;
use lithify_base::sync::Arc;
use lithify_base::sync::atomic::{AtomicBool, Ordering};
use lithify_compaction_leveled::{CompactionPicker, CompactionStatsTable, CompactionsInProgress};
use lithify_version::{TableId, Version};

use crate::options::Options;
use crate::super_version::{ArcCell, SuperVersion};

/// The shared, mostly immutable part of a table.
pub(crate) struct TableState {
    pub(crate) id: TableId,
    pub(crate) name: String,
    pub(crate) options: StdArc<Options>,
    pub(crate) icmp: InternalKeyComparator,
    /// What readers pin.
    pub(crate) sv: ArcCell<SuperVersion>,
    /// Set by an insert that filled the memtable; the next write leader
    /// switches it.
    pub(crate) needs_switch: AtomicBool,
}

impl TableState {
    pub(crate) fn new_memtable(&self) -> Mem {
        Mem::new(&self.icmp, &self.options)
    }

    /// Whether the memtable passed `write_buffer_size`.
    #[inline]
    pub(crate) fn is_full(&self, mem: &Mem) -> bool {
        mem.approximate_memory_usage() >= self.options.write_buffer_size
    }

    pub(crate) fn mark_full(&self) -> bool {
        !self.needs_switch.swap(true, Ordering::AcqRel)
    }

    pub(crate) fn take_full(&self) -> bool {
        self.needs_switch.swap(false, Ordering::AcqRel)
    }
}

pub(crate) fn new_memtable(icmp: &InternalKeyComparator, options: &Options) -> Mem {
    Mem::new(icmp, options)
}

/// An immutable memtable waiting for (or in) its flush.
pub(crate) struct Imm {
    pub(crate) mem: Arc<Mem>,
    /// The WAL created when this memtable was switched out: once it is
    /// flushed, the table needs no older WAL.
    pub(crate) next_log: u64,
    pub(crate) flushing: bool,
}

/// The mutable part of a table, guarded by the database state mutex.
pub(crate) struct TableMut {
    pub(crate) state: StdArc<TableState>,
    pub(crate) mem: Arc<Mem>,
    /// Immutable memtables, oldest first.
    pub(crate) imm: VecDeque<Imm>,
    pub(crate) version: StdArc<Version>,
    /// A flush of this table is running.
    pub(crate) flush_running: bool,
    /// A flush was asked for and not yet picked.
    pub(crate) flush_queued: bool,
    /// The table's compaction strategy.
    pub(crate) picker: StdArc<dyn CompactionPicker>,
    /// Its compactions running now.
    pub(crate) compactions: CompactionsInProgress,
    /// Cumulative flush and compaction statistics per level.
    pub(crate) stats: CompactionStatsTable,
}

impl TableMut {
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
