//! OceanBase-style compaction strategies for lithify, built on the shared
//! mechanics of [`lithify_compaction_leveled`], and the per-table choice of
//! strategy.
//!
//! * [`MajorOnlyPicker`] — "Memtable + L1": the table is one sorted run in
//!   the major level (the version's last level); a flush merges the frozen
//!   memtables into it.
//! * [`TwoTierPicker`] — "Memtable + L0 + L1": flushes write L0 tables,
//!   minor compactions keep L0 small ([`MinorPolicy`]), major compactions
//!   merge L0 into the major level, per stripe of the key space.
//! * [`adaptive`] — `Adaptive`: a pure function from a window of observed
//!   workload statistics to a strategy and a reason, a recorder that
//!   gathers them, and a state machine that switches after agreeing
//!   windows.
//! * [`CompactionStrategy`] — how one table is compacted: RocksDB's
//!   `Leveled` (from `lithify-compaction-leveled`), `MajorOnly`, `TwoTier`
//!   or `Adaptive`; [`CompactionStrategy::picker`] builds its
//!   [`CompactionPicker`](lithify_compaction_leveled::CompactionPicker).
//!
//! Every picker implements the same trait as the leveled one, so the
//! engine runs them with the same jobs and a table can switch on the fly:
//! the new picker's first compaction reshapes what the old one left.
//! Errors are `lithify-compaction-leveled`'s: these pickers answer the
//! trait it defines.
//!
//! ```
//! use lithify_compaction_leveled::{CompactionPicker, CompactionsInProgress, PickContext};
//! use lithify_compaction_tiered::{CompactionStrategy, TwoTierOptions};
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
//! ```

pub mod adaptive;
pub mod cost_model;
mod major_only;
mod options;
mod strategy;
mod tiers;
mod two_tier;

pub use major_only::MajorOnlyPicker;
pub use options::{MajorOnlyOptions, MinorPolicy, TwoTierOptions};
pub use strategy::CompactionStrategy;
pub use tiers::{major_level, stripe_boundaries};
pub use two_tier::{StripeScore, TwoTierPicker};

/// The README's example, run as a doctest so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
