//! How one lithify table is compacted: the choice among RocksDB's leveled
//! compaction and the OceanBase-style shapes, made once or from the
//! observed workload.
//!
//! * [`CompactionStrategy`] — `Leveled` (`lithify-compaction-leveled`),
//!   `MajorOnly` or `TwoTier` (`lithify-compaction-tiered`), or `Adaptive`;
//!   [`CompactionStrategy::picker`] builds its
//!   [`CompactionPicker`](lithify_compaction::CompactionPicker).
//! * [`cost_model`] — predicted write, read and space amplification and
//!   sorted runs of each shape for a workload mix at a table size, and the
//!   ranking of shapes by an objective under limits.
//! * [`adaptive`] — `Adaptive`: a pure function from a window of observed
//!   workload statistics to a strategy and a reason, a recorder that
//!   gathers them, and a state machine that switches after agreeing
//!   windows.
//!
//! Every picker implements the same trait, so the engine runs them with
//! the same jobs and a table can switch on the fly: the new picker's first
//! compaction reshapes what the old one left.
//!
//! ```
//! use lithify_compaction::{CompactionsInProgress, PickContext};
//! use lithify_compaction_strategy::CompactionStrategy;
//! use lithify_compaction_tiered::TwoTierOptions;
//! use lithify_version::Version;
//!
//! let picker = CompactionStrategy::TwoTier(TwoTierOptions::write_only()).picker().unwrap();
//! let v = Version::from_text("
//! L0:
//!   000004:[a#40,SET-z#40,SET] size=1M
//! L6:
//!   000001:[a#10,SET-z#10,SET] size=1M
//! ").unwrap();
//! let running = CompactionsInProgress::new();
//! let ctx = PickContext::new(&running);
//! // One L0 table as large as the major level: a major compaction.
//! let c = picker.pick_auto(&v, &ctx).unwrap();
//! assert_eq!((c.start_level(), c.output_level), (0, 6));
//! assert_eq!(CompactionStrategy::parse("two-tier:write-only"), Some(CompactionStrategy::TwoTier(TwoTierOptions::write_only())));
//! ```

pub mod adaptive;
pub mod cost_model;
mod strategy;

pub use strategy::CompactionStrategy;

/// The README's example, run as a doctest so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
