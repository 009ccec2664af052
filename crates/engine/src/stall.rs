//! What a write stall is: its condition and its cause. The decision and
//! the delay are [`crate::write_controller`]'s; these names are shared
//! with events and statistics.

/// Whether writes run, slow down or stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum StallCondition {
    /// Writes run at full speed.
    Normal,
    /// Writes are slowed to the delayed write rate.
    Delayed,
    /// Writes wait until the condition clears.
    Stopped,
}

/// Why writes stall.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StallCause {
    /// Too many unflushed memtables.
    MemtableLimit,
    /// Too many L0 files.
    L0FileCount,
    /// Too many estimated pending compaction bytes.
    PendingCompactionBytes,
}

impl StallCause {
    /// RocksDB's name for the cause.
    pub fn name(self) -> &'static str {
        match self {
            StallCause::MemtableLimit => "memtable-limit",
            StallCause::L0FileCount => "l0-file-count-limit",
            StallCause::PendingCompactionBytes => "pending-compaction-bytes",
        }
    }
}
