//! RocksDB's leveled compaction for lithify: level size targets, scores
//! and the picker, on the shared mechanics of `lithify-compaction`.
//!
//! * [`LevelTargets`]: level size targets (static, or dynamic as RocksDB's
//!   `CalculateBaseBytes`) and output file sizes.
//! * [`Scores`]: RocksDB's `ComputeCompactionScore`, with
//!   [`CompensatedSizes`] and [`estimated_compaction_needed_bytes`].
//! * [`LeveledPicker`]: RocksDB's picker, a pure function of a
//!   [`Version`](lithify_version::Version), [`LeveledOptions`] and a
//!   [`PickContext`](lithify_compaction::PickContext), behind the
//!   [`CompactionPicker`](lithify_compaction::CompactionPicker) trait every
//!   strategy implements; [`picker`] holds its parts.
//!
//! What a picker returns is run by `lithify-compaction`'s jobs; the
//! OceanBase-style pickers are `lithify-compaction-tiered`'s, and the
//! per-table choice among them `lithify-compaction-strategy`'s.
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

mod options;
pub mod picker;
mod score;
mod targets;

pub use options::{DEFAULT_TTL_SECONDS, LeveledOptions};
pub use picker::{LeveledPicker, MarkedFiles};
pub use score::{CompensatedSizes, SCORE_SCALE, Scores, estimated_compaction_needed_bytes};
pub use targets::LevelTargets;

/// The README's example, run as a doctest so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
