//! The compaction mechanics every lithify strategy shares: what to run
//! and how to run it, whoever decided it.
//!
//! * [`CompactionPicker`]: the trait every strategy implements — a pure
//!   function of a [`Version`](lithify_version::Version), its options and a
//!   [`PickContext`] — and the manual-compaction driver for any picker
//!   ([`ManualCompaction`], [`CompactFilesOptions`]).
//! * [`Compaction`]: what a picker returns and a job runs;
//!   [`CompactionsInProgress`] is what the engine keeps running.
//! * [`iter`]: the compaction iterator (snapshot stripes, tombstones, merge
//!   operands, the compaction filter), shared by compactions and flushes.
//! * [`job`]: [`run_compaction`], [`flush_to_level0`] and [`run_flush`]
//!   write tables and return a `VersionEdit`; outputs are cut by size,
//!   grandparent overlap or given boundaries; subcompactions run on scoped
//!   threads; output is paced through a [`WriteRateLimiter`].
//! * [`remote`]: a compaction as a job another process runs (RocksDB's
//!   `CompactionService`), the worker's run of it, and the primary's check
//!   of what comes back.
//! * [`CompactionStatsTable`]: RocksDB's "Compaction Stats" table.
//! * [`ReadHeat`]: where a table's recent reads went, for pickers that
//!   merge first where reads are.
//! * [`bounds`]: key-range arithmetic with RocksDB's tombstone-sentinel rule.
//!
//! The pickers live elsewhere: RocksDB's leveled one in
//! `lithify-compaction-leveled`, the OceanBase-style ones in
//! `lithify-compaction-tiered`, the per-table choice among them in
//! `lithify-compaction-strategy`; the simulator in `lithify-compaction-sim`.
//!
//! ```
//! use lithify_base::{InternalIterator, InternalKey, InternalKeyComparator, ValueKind, VecIterator};
//! use lithify_compaction::iter::{CompactionIterOptions, CompactionIterator, Snapshots};
//!
//! // Two versions of one key and no snapshot: only the newest survives.
//! let cmp = InternalKeyComparator::bytewise();
//! let entries = vec![
//!     (InternalKey::new(b"a", 9, ValueKind::Put).into_encoded(), b"new".to_vec()),
//!     (InternalKey::new(b"a", 3, ValueKind::Put).into_encoded(), b"old".to_vec()),
//! ];
//! let input = VecIterator::new(cmp.clone(), entries);
//! let mut it = CompactionIterator::new(input, cmp, CompactionIterOptions::for_flush(Snapshots::new(vec![]), None));
//! it.seek_to_first().unwrap();
//! assert_eq!(&it.value()[..], b"new");
//! it.next().unwrap();
//! assert!(!it.valid());
//! ```

pub mod bounds;
mod compaction;
mod compaction_pri;
mod error;
pub mod iter;
pub mod job;
pub mod picker;
mod read_heat;
pub mod remote;
mod stats;

pub use compaction::{
    Compaction, CompactionInputs, CompactionReason, CompactionsInProgress, DeeperLevels,
    RunningCompaction,
};
pub use compaction_pri::CompactionPri;
pub use error::{Error, Result};
pub use job::{
    BlobSettings, CompactionResult, FileNumbers, FlushResult, JobOptions, MemtableInput,
    OutputFactory, SstOpener, WriteRateLimiter, file_metadata, flush_to_level0, run_compaction,
    run_flush,
};
pub use picker::{
    BlobGcPolicy, BottommostLevelCompaction, CompactFilesOptions, CompactRangeOptions,
    CompactionPicker, LevelScore, ManualCompaction, ManualOutput, ManualPick, ManualRequest,
    ManualStep, PickContext, forced_blob_gc_files, relocate_below,
};
pub use read_heat::{READ_HEAT_SAMPLE_EVERY, READ_HEAT_SAMPLES, ReadHeat, StripeHeat};
pub use stats::{
    CompactionStats, CompactionStatsTable, LevelShape, LevelStats, exact_size, human_count,
    human_size, write_table,
};

/// The README's example, run as a doctest so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
