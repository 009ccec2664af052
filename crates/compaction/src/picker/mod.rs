//! Compaction pickers: pure functions from an LSM shape to a compaction.
//!
//! A picker sees a [`Version`], its options, and a [`PickContext`] (the
//! compactions in progress, the clock, the snapshot threshold for
//! bottommost files, files marked for compaction) and returns a
//! [`Compaction`] or nothing. It keeps no state between calls: the engine
//! owns [`CompactionsInProgress`], registers what it starts and
//! unregisters what finishes. That makes pickers testable on shapes
//! written as text (`testdata/picker_*.txt`), lets the simulator drive
//! them without I/O, and lets other strategies (two-tier, major-only) be
//! added beside RocksDB's leveled picker (`lithify-compaction-leveled`)
//! without engine changes: the engine only talks to [`CompactionPicker`].

mod blob_gc;
mod manual;

use std::collections::HashSet;

use lithify_base::SeqNo;
use lithify_version::{Version, VersionEdit};

pub use blob_gc::{BlobGcPolicy, forced_blob_gc_files, relocate_below};
pub use manual::{
    BottommostLevelCompaction, CompactFilesOptions, CompactRangeOptions, ManualCompaction,
    ManualOutput, ManualPick, ManualRequest, ManualStep, sanitize_compact_files,
};

use crate::compaction::{Compaction, CompactionsInProgress};
use crate::error::Result;
use crate::read_heat::ReadHeat;

/// One level's compaction score (what [`CompactionPicker::level_scores`]
/// reports for the stats table).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevelScore {
    /// The level.
    pub level: usize,
    /// Its score: a level with score >= 1 needs compaction.
    pub score: f64,
}

/// What a picker knows besides the version and its options.
#[derive(Debug, Clone, Copy)]
pub struct PickContext<'a> {
    /// The compactions running on this table.
    pub in_progress: &'a CompactionsInProgress,
    /// The current time, seconds since the Unix epoch (TTL, periodic
    /// compaction and the TTL boost of `kMinOverlappingRatio`).
    pub now: u64,
    /// Bottommost files whose largest seqno is nonzero and below this are
    /// recompacted in place (RocksDB's `oldest_snapshot_seqnum`, which the
    /// engine advances to the oldest live snapshot — or the last sequence
    /// number when none is live — when a snapshot is released). 0 marks
    /// nothing.
    pub bottommost_mark_threshold: SeqNo,
    /// Files marked for compaction (RocksDB's `marked_for_compaction`, set
    /// by table-property collectors such as a deletion-ratio trigger).
    pub marked_files: &'a HashSet<u64>,
    /// Whether a compaction filter is configured: manual compactions are
    /// then never trivial moves, and `kIfHaveCompactionFilter` rewrites the
    /// bottommost level.
    pub has_compaction_filter: bool,
    /// Forced blob garbage collection, when the table's blob options turn
    /// it on ([`forced_blob_gc_files`] says which files are due).
    pub blob_gc: Option<BlobGcPolicy>,
    /// Where the table's recent reads went, when the engine samples them
    /// (the two-tier picker's hot-range minors merge first where reads
    /// are).
    pub read_heat: Option<&'a ReadHeat>,
}

static NO_MARKED_FILES: std::sync::LazyLock<HashSet<u64>> = std::sync::LazyLock::new(HashSet::new);

impl<'a> PickContext<'a> {
    /// A context with the compactions in `in_progress`, time 0, no
    /// bottommost threshold, no marked files, no compaction filter, no
    /// forced blob garbage collection and no read heat.
    pub fn new(in_progress: &'a CompactionsInProgress) -> Self {
        PickContext {
            in_progress,
            now: 0,
            bottommost_mark_threshold: 0,
            marked_files: &NO_MARKED_FILES,
            has_compaction_filter: false,
            blob_gc: None,
            read_heat: None,
        }
    }

    /// The same context with `heat` as the table's read heat.
    pub fn with_read_heat(self, heat: &'a ReadHeat) -> Self {
        PickContext {
            read_heat: Some(heat),
            ..self
        }
    }
}

/// A compaction strategy. Implementations are pure: the same version,
/// options and context give the same answer.
///
/// ```
/// use lithify_compaction::{CompactionPicker, CompactionsInProgress, PickContext};
/// use lithify_compaction_leveled::{LeveledOptions, LeveledPicker};
/// use lithify_version::Version;
///
/// let picker = LeveledPicker::new(LeveledOptions::default()).unwrap();
/// let v = Version::from_text("
/// L0:
///   000004:[a#40,SET-z#40,SET] size=1M
///   000003:[a#30,SET-z#30,SET] size=1M
///   000002:[a#20,SET-z#20,SET] size=1M
///   000001:[a#10,SET-z#10,SET] size=1M
/// ").unwrap();
/// let running = CompactionsInProgress::new();
/// let ctx = PickContext::new(&running);
/// assert!(picker.needs_compaction(&v, &ctx));
/// let c = picker.pick_auto(&v, &ctx).unwrap();
/// // Dynamic targets with nothing below L0: L0 compacts into the last level.
/// assert_eq!((c.start_level(), c.output_level, c.num_input_files()), (0, 6, 4));
/// ```
pub trait CompactionPicker: Send + Sync {
    /// The strategy's name (for logs and stats).
    fn name(&self) -> &'static str;

    /// Whether [`pick_auto`](Self::pick_auto) might find work (some level
    /// scores at least 1, or files are marked, expired or due).
    fn needs_compaction(&self, version: &Version, ctx: &PickContext<'_>) -> bool;

    /// The next automatic compaction, if any.
    fn pick_auto(&self, version: &Version, ctx: &PickContext<'_>) -> Option<Compaction>;

    /// One step of a manual compaction: the compaction for `request`, or
    /// `None` when nothing in the range needs it. A conflict with a running
    /// compaction is [`Error::Conflict`](crate::Error::Conflict).
    fn pick_manual(
        &self,
        version: &Version,
        ctx: &PickContext<'_>,
        request: &ManualRequest,
    ) -> Result<Option<ManualPick>>;

    /// Every level's score in level order (for the stats table); the last
    /// level has none and scores 0.
    fn level_scores(&self, version: &Version, ctx: &PickContext<'_>) -> Vec<LevelScore>;

    /// The output level of automatic compactions out of L0.
    fn base_level(&self, version: &Version) -> usize;

    /// Estimated bytes compactions must rewrite to bring the LSM in shape
    /// (for write stalls).
    fn estimated_compaction_needed_bytes(&self, version: &Version) -> u64;

    /// How to flush frozen memtables holding user keys in
    /// `[smallest_user_key, largest_user_key]`: `None` for a plain flush to
    /// one L0 table (the default, and the fallback whenever a plan would
    /// conflict with a running compaction), or a plan for
    /// [`run_flush`](crate::run_flush): the files to merge the memtables
    /// with, the output level and the output boundaries (its
    /// `memtable_range` is set, and its inputs may be empty). The engine
    /// registers a plan in [`CompactionsInProgress`] like a compaction
    /// while it runs.
    fn pick_flush(
        &self,
        version: &Version,
        ctx: &PickContext<'_>,
        smallest_user_key: &[u8],
        largest_user_key: &[u8],
    ) -> Option<Compaction> {
        let _ = (version, ctx, smallest_user_key, largest_user_key);
        None
    }

    /// The `change_level` step at the end of `compact_range`: the edit
    /// moving `level`'s files to `target` (or the lowest level that can
    /// hold them), or an error when the strategy has no such notion.
    fn refit_level(
        &self,
        version: &Version,
        ctx: &PickContext<'_>,
        level: usize,
        target: Option<usize>,
    ) -> Result<VersionEdit>;

    /// Whether `compact_range` goes level by level down to the last level
    /// (true) or stops at the last non-empty one (static leveled targets).
    fn manual_to_last_level(&self) -> bool;

    /// Whether the engine's L0 file-count write stalls
    /// (`level0_slowdown_writes_trigger`, `level0_stop_writes_trigger`)
    /// apply. Two-tier strategies let L0 grow by design and bound it
    /// themselves; they signal pending work through
    /// [`estimated_compaction_needed_bytes`](Self::estimated_compaction_needed_bytes).
    fn l0_count_stalls_writes(&self) -> bool {
        true
    }
}
