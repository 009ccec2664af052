//! RocksDB's leveled compaction for lithify: deciding what to compact,
//! doing it, measuring it, and simulating it.
//!
//! * [`LevelTargets`]: level size targets (static, or dynamic as RocksDB's
//!   `CalculateBaseBytes`) and output file sizes.
//! * [`Scores`]: RocksDB's `ComputeCompactionScore`, with
//!   [`CompensatedSizes`] and [`estimated_compaction_needed_bytes`].
//! * [`picker`]: the [`CompactionPicker`] trait and [`LeveledPicker`], pure
//!   functions of a [`Version`](lithify_version::Version), options and a
//!   [`PickContext`]; manual compaction ([`ManualCompaction`],
//!   `compact_files`, `refit_level`).
//! * [`Compaction`]: what a picker returns and a job runs;
//!   [`CompactionsInProgress`] is what the engine keeps running.
//! * [`iter`]: the compaction iterator (snapshot stripes, tombstones, the
//!   compaction filter), shared by compactions and flushes.
//! * [`job`]: [`run_compaction`] and [`flush_to_level0`] write tables and
//!   return a `VersionEdit`; subcompactions run on scoped threads.
//! * [`CompactionStatsTable`]: RocksDB's "Compaction Stats" table.
//! * [`sim`]: the simulator behind the `compaction-sim` binary.
//! * [`bounds`]: key-range arithmetic with RocksDB's tombstone-sentinel rule.
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

pub mod adaptive;
pub mod bounds;
mod compaction;
mod error;
pub mod iter;
pub mod job;
mod options;
pub mod picker;
pub mod resource;
mod score;
pub mod sim;
mod stats;
mod strategy;
mod targets;
mod tier_options;

pub use compaction::{
    Compaction, CompactionInputs, CompactionReason, CompactionsInProgress, DeeperLevels,
    RunningCompaction, human_bytes,
};
pub use error::{Error, Result};
pub use job::{
    CompactionResult, FileNumbers, FlushResult, JobOptions, MemtableInput, OutputFactory,
    TableOpener, flush_to_level0, run_compaction, run_flush,
};
pub use options::{CompactionPri, DEFAULT_TTL_SECONDS, LeveledOptions};
pub use picker::{
    BottommostLevelCompaction, CompactFilesOptions, CompactRangeOptions, CompactionPicker,
    LeveledPicker, MajorOnlyPicker, ManualCompaction, ManualOutput, ManualPick, ManualRequest,
    ManualStep, MarkedFiles, PickContext, TwoTierPicker,
};
pub use score::{
    CompensatedSizes, LevelScore, SCORE_SCALE, Scores, estimated_compaction_needed_bytes,
};
pub use stats::{CompactionStats, CompactionStatsTable, LevelShape, human_count, human_size};
pub use strategy::CompactionStrategy;
pub use targets::LevelTargets;
pub use tier_options::{MajorOnlyOptions, MinorPolicy, TwoTierOptions};

/// The README's example, run as a doctest so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
