//! The compaction iterator and what it needs: snapshot stripes, range
//! tombstones, compaction filters.
//!
//! The same iterator serves compactions and the engine's flush (memtable
//! to L0 table), so a flush applies the same snapshot rules; it works on
//! any [`InternalIterator`](lithify_base::InternalIterator).

mod blob;
mod compaction_iter;
mod filter;
mod range_del;
mod snapshots;

pub use blob::BlobFetcher;
pub use compaction_iter::{CompactionIterOptions, CompactionIterator, IterStats};
pub use filter::{CompactionFilter, FilterDecision};
pub use range_del::RangeDelAggregator;
pub use snapshots::Snapshots;
