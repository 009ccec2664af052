//! RocksDB's leveled picker ([`LeveledPicker`]) and what it is made of:
//! the order files are picked in ([`files_by_compaction_pri`]), L0's own
//! picks (intra-L0, trivial moves), files marked for compaction
//! ([`MarkedFiles`], bottommost files), the expansion of inputs to a clean
//! cut, and the manual steps (`compact_range`'s levels, `compact_files`,
//! [`refit_level`]).
//!
//! Like every picker it is a pure function of a version, its options and a
//! [`PickContext`](lithify_compaction::PickContext), behind
//! [`CompactionPicker`](lithify_compaction::CompactionPicker); its shapes
//! and picks are tested as text (`testdata/picker_*.txt`).

mod expand;
mod file_order;
mod l0;
mod leveled;
mod marked;

pub use file_order::files_by_compaction_pri;
pub use leveled::{LeveledPicker, refit_level};
pub use marked::{MarkedFiles, bottommost_files};
