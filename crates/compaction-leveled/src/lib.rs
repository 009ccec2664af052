//! Compaction for lithify: the mechanics every strategy shares, and
//! RocksDB's leveled compaction on top of them.
//!
//! * [`LevelTargets`]: level size targets (static, or dynamic as RocksDB's
//!   `CalculateBaseBytes`) and output file sizes.
//! * [`Scores`]: RocksDB's `ComputeCompactionScore`, with
//!   [`CompensatedSizes`] and [`estimated_compaction_needed_bytes`].
//! * [`picker`]: the [`CompactionPicker`] trait every strategy implements
//!   and [`LeveledPicker`], pure functions of a
//!   [`Version`](lithify_version::Version), options and a [`PickContext`];
//!   the manual-compaction driver for any picker ([`ManualCompaction`],
//!   `compact_files`, `refit_level`).
//! * [`Compaction`]: what a picker returns and a job runs;
//!   [`CompactionsInProgress`] is what the engine keeps running.
//! * [`iter`]: the compaction iterator (snapshot stripes, tombstones, the
//!   compaction filter), shared by compactions and flushes.
//! * [`job`]: [`run_compaction`], [`flush_to_level0`] and [`run_flush`]
//!   write tables and return a `VersionEdit`; subcompactions run on scoped
//!   threads; output is paced through a [`WriteRateLimiter`].
//! * [`CompactionStatsTable`]: RocksDB's "Compaction Stats" table.
//! * [`bounds`]: key-range arithmetic with RocksDB's tombstone-sentinel rule.
//!
//! The OceanBase-style strategies are `lithify-compaction-tiered`'s, the
//! simulator is `lithify-compaction-sim`'s.
//!
//! ```
//! use lithify_compaction_leveled::{LevelTargets, LeveledOptions};
//!
//! // Dynamic targets: the last level's size decides the base level.
//! let targets = LevelTargets::compute(&[0, 0, 0, 0, 0, 0, 100 << 30], &LeveledOptions::default());
//! assert_eq!(targets.base_level(), 3);
//! // Dividing by 10 per level and multiplying back truncates a little.
//! assert_eq!(targets.target(6), 107_374_182_000);
//! ```

pub mod bounds;
mod compaction;
mod error;
pub mod iter;
pub mod job;
mod options;
pub mod picker;
mod score;
mod stats;
mod targets;

pub use compaction::{
    Compaction, CompactionInputs, CompactionReason, CompactionsInProgress, DeeperLevels,
    RunningCompaction, human_bytes,
};
pub use error::{Error, Result};
pub use job::{
    CompactionResult, FileNumbers, FlushResult, JobOptions, MemtableInput, OutputFactory,
    SstOpener, WriteRateLimiter, file_metadata, flush_to_level0, run_compaction, run_flush,
};
pub use options::{CompactionPri, DEFAULT_TTL_SECONDS, LeveledOptions};
pub use picker::{
    BottommostLevelCompaction, CompactFilesOptions, CompactRangeOptions, CompactionPicker,
    LeveledPicker, ManualCompaction, ManualOutput, ManualPick, ManualRequest, ManualStep,
    MarkedFiles, PickContext,
};
pub use score::{
    CompensatedSizes, LevelScore, SCORE_SCALE, Scores, estimated_compaction_needed_bytes,
};
pub use stats::{CompactionStats, CompactionStatsTable, LevelShape, human_count, human_size};
pub use targets::LevelTargets;

/// The README's example, run as a doctest so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
