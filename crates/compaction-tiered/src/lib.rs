//! OceanBase-style compaction pickers for lithify, on the shared mechanics
//! of [`lithify_compaction`].
//!
//! * [`MajorOnlyPicker`] — "Memtable + L1": the table is one sorted run in
//!   the major level (the version's last level); a flush merges the frozen
//!   memtables into it.
//! * [`TwoTierPicker`] — "Memtable + L0 + L1": flushes write L0 tables,
//!   minor compactions keep L0 small ([`MinorPolicy`]), major compactions
//!   merge L0 into the major level, per stripe of the key space
//!   ([`stripe_boundaries`]).
//!
//! Both implement [`CompactionPicker`](lithify_compaction::CompactionPicker),
//! so the engine runs them with the same jobs as RocksDB's leveled picker;
//! the per-table choice among them is `lithify-compaction-strategy`'s.
//! Errors are [`lithify_compaction::Error`]: these pickers answer the
//! trait that crate defines.
//!
//! ```
//! use lithify_compaction::{CompactionPicker, CompactionsInProgress, PickContext};
//! use lithify_compaction_tiered::{TwoTierOptions, TwoTierPicker};
//! use lithify_version::Version;
//!
//! let picker = TwoTierPicker::new(TwoTierOptions::write_only()).unwrap();
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

mod major_only;
mod options;
mod tiers;
mod two_tier;

pub use major_only::MajorOnlyPicker;
pub use options::{MajorOnlyOptions, MinorPolicy, TwoTierOptions};
pub use tiers::{major_level, stripe_boundaries};
pub use two_tier::{HEAT_READ_SHARE, HEAT_SKEW, MIN_HEAT_SAMPLES, StripeScore, TwoTierPicker};

/// The README's example, run as a doctest so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
