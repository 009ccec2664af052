//! RocksDB's leveled compaction for lithify.

pub mod bounds;
mod compaction;
mod error;
pub mod iter;
pub mod job;
mod options;
pub mod picker;
mod score;
pub mod sim;
mod stats;
mod targets;

pub use compaction::{
    Compaction, CompactionInputs, CompactionReason, CompactionsInProgress, DeeperLevels,
    RunningCompaction, human_bytes,
};
pub use error::{Error, Result};
pub use job::{
    CompactionResult, FileNumbers, FlushResult, JobOptions, OutputFactory, TableOpener,
    flush_to_level0, run_compaction,
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
