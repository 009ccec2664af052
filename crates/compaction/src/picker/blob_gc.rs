//! Forced blob garbage collection (RocksDB's
//! `blob_garbage_collection_force_threshold` and
//! `VersionStorageInfo::ComputeFilesMarkedForForcedBlobGC`).
//!
//! Garbage collection relocates values out of the oldest blob files only
//! when a compaction happens to read the SSTs that refer to them. When the
//! oldest files are mostly garbage and nothing compacts their SSTs (a
//! quiet key range, a deep level), they stay on disk. The force rule picks
//! those SSTs:
//!
//! 1. the batch of blob files garbage collection may relocate from is the
//!    oldest `floor(age_cutoff × count)` of the table's blob files (none:
//!    nothing to force);
//! 2. when the batch's garbage is at least `force_threshold` of its stored
//!    value bytes, the SSTs that refer to the **oldest** blob file are due
//!    (RocksDB's "linked SSTs": lithify records each SST's references, so
//!    they are exactly those);
//! 3. each is compacted; the compaction relocates what it reads from files
//!    below the cutoff, so once all of them are rewritten the oldest file
//!    has no reference left and is deleted. The next version's rule then
//!    looks at the next oldest.
//!
//! How a strategy compacts the due files is its own: the leveled strategy
//! rewrites each in place at its level, as RocksDB does; the two-tier
//! strategies rewrite those of the major level in place and leave L0 to
//! their minor and major compactions.

use std::sync::Arc;

use lithify_version::{FileMetadata, Version};

use crate::compaction::CompactionsInProgress;

/// The settings of forced blob garbage collection, from a table's blob
/// options: it is on when garbage collection is, the age cutoff is above
/// 0 and the threshold below 1 (RocksDB's condition).
///
/// ```
/// use lithify_compaction::BlobGcPolicy;
/// assert!(BlobGcPolicy::new(0.25, 0.8).is_some());
/// assert!(BlobGcPolicy::new(0.25, 1.0).is_none()); // the default: never forced
/// assert!(BlobGcPolicy::new(0.0, 0.5).is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlobGcPolicy {
    age_cutoff: f64,
    force_threshold: f64,
}

impl BlobGcPolicy {
    /// The policy for an age cutoff and a force threshold, or `None` when
    /// they never force anything.
    pub fn new(age_cutoff: f64, force_threshold: f64) -> Option<Self> {
        (age_cutoff > 0.0 && force_threshold < 1.0).then_some(BlobGcPolicy {
            age_cutoff: age_cutoff.min(1.0),
            force_threshold,
        })
    }

    /// The oldest fraction of blob files garbage collection relocates from.
    pub fn age_cutoff(&self) -> f64 {
        self.age_cutoff
    }

    /// The garbage share of that batch that forces compactions.
    pub fn force_threshold(&self) -> f64 {
        self.force_threshold
    }
}

/// The blob file number below which a compaction relocates the values
/// it writes (RocksDB's `blob_garbage_collection_age_cutoff`): the file
/// at position `floor(age_cutoff × count)` among `numbers`, the table's
/// blob files in ascending order, so the oldest `age_cutoff` of them are
/// relocated from; one past the newest when that position is past the
/// end; 0 (nothing) when there are no blob files.
///
/// ```
/// use lithify_compaction::relocate_below;
///
/// let files = [3, 7, 9, 12];
/// assert_eq!(relocate_below(&files, 0.25), 7); // file 3, the oldest quarter
/// assert_eq!(relocate_below(&files, 0.0), 3); // none
/// assert_eq!(relocate_below(&files, 1.0), 13); // all
/// assert_eq!(relocate_below(&[], 0.25), 0);
/// ```
pub fn relocate_below(numbers: &[u64], age_cutoff: f64) -> u64 {
    let Some(&newest) = numbers.last() else {
        return 0;
    };
    let cut = (numbers.len() as f64 * age_cutoff.clamp(0.0, 1.0)).floor() as usize;
    numbers.get(cut).copied().unwrap_or(newest + 1)
}

/// The SSTs of `version` due for forced blob garbage collection under
/// `policy`, as `(level, file)` in level order; files being compacted are
/// left out. The rule (RocksDB's):
///
/// 1. the batch is the oldest `floor(age_cutoff × count)` of the table's
///    blob files (none: nothing is due);
/// 2. when the batch's garbage is at least `force_threshold` of its
///    stored value bytes, the SSTs that refer to the **oldest** blob file
///    are due: compacting them relocates its values, and once none refers
///    to it the file is deleted and the rule looks at the next oldest.
///
/// ```
/// use lithify_compaction::{BlobGcPolicy, CompactionsInProgress, forced_blob_gc_files};
/// use lithify_version::Version;
///
/// // Blob file 1 is 90% garbage; SST 7 (at L2) still refers to it.
/// let v = Version::from_text("
/// L1:
///   000008:[a#20,SET-c#20,SET] size=1K blob=000002:5/500
/// L2:
///   000007:[d#10,SET-f#10,SET] size=1K blob=000001:1/100
/// blobs:
///   000001.blob values=10 bytes=1000 garbage=9/900
///   000002.blob values=5 bytes=500 garbage=0/0
/// ").unwrap();
/// let policy = BlobGcPolicy::new(0.5, 0.8).unwrap();
/// let due = forced_blob_gc_files(&v, policy, &CompactionsInProgress::new());
/// let due: Vec<_> = due.iter().map(|(l, f)| (*l, f.number)).collect();
/// assert_eq!(due, [(2, 7)]);
/// ```
pub fn forced_blob_gc_files(
    version: &Version,
    policy: BlobGcPolicy,
    in_progress: &CompactionsInProgress,
) -> Vec<(usize, Arc<FileMetadata>)> {
    let blob_files = version.blob_files();
    let batch = (policy.age_cutoff * blob_files.len() as f64) as usize;
    let Some(oldest) = blob_files.values().next() else {
        return Vec::new();
    };
    if batch == 0 {
        return Vec::new();
    }
    let (total, garbage) = blob_files
        .values()
        .take(batch)
        .fold((0u64, 0u64), |(t, g), b| {
            (t + b.meta.blob_bytes, g + b.garbage_bytes)
        });
    if (garbage as f64) < policy.force_threshold * total as f64 {
        return Vec::new();
    }
    let mut due = Vec::new();
    for (level, f) in version.all_files() {
        if f.blob_refs.iter().any(|r| r.file_number == oldest.number())
            && !in_progress.is_being_compacted(f.number)
        {
            due.push((level, Arc::clone(f)));
        }
    }
    due
}
