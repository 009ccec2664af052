//! Files that need compaction for reasons other than level size: marked
//! files, bottommost files with droppable history, TTL and periodic
//! compaction (RocksDB's `ComputeFilesMarkedForCompaction`,
//! `ComputeBottommostFilesMarkedForCompaction`, `ComputeExpiredTtlFiles`,
//! `ComputeFilesMarkedForPeriodicCompaction`).

use std::sync::Arc;

use lithify_version::{FileMetadata, Version};

use crate::options::LeveledOptions;
use lithify_compaction::PickContext;

/// The files, per reason, that need compaction regardless of level sizes,
/// each as `(level, file)` in level order. Files being compacted are left
/// out.
#[derive(Debug, Clone, Default)]
pub struct MarkedFiles {
    /// Marked for compaction (by a table-property collector), outside the
    /// last non-empty level.
    pub marked: Vec<(usize, Arc<FileMetadata>)>,
    /// Bottommost files whose largest seqno is nonzero and below the
    /// context's `bottommost_mark_threshold`: rewriting them in place zeroes
    /// their seqnos and drops tombstones no snapshot needs.
    pub bottommost: Vec<(usize, Arc<FileMetadata>)>,
    /// Files above the last level whose oldest data is older than `ttl`.
    pub expired_ttl: Vec<(usize, Arc<FileMetadata>)>,
    /// Files older than `periodic_compaction_seconds` (creation time, else
    /// oldest ancestor time; files with neither are never due).
    pub periodic: Vec<(usize, Arc<FileMetadata>)>,
}

impl MarkedFiles {
    /// Computes every list for `version`.
    pub fn compute(version: &Version, opts: &LeveledOptions, ctx: &PickContext<'_>) -> Self {
        let busy = |f: &FileMetadata| ctx.in_progress.is_being_compacted(f.number);
        let num_levels = version.num_levels();
        let mut out = MarkedFiles::default();

        if !ctx.marked_files.is_empty() {
            // Exclude the last non-empty level: moving its files down makes
            // no sense.
            let last_qualify = (1..num_levels)
                .rev()
                .find(|&l| version.num_files(l) > 0)
                .map_or(0, |l| l - 1);
            for level in 0..=last_qualify {
                for f in version.files(level) {
                    if !busy(f) && ctx.marked_files.contains(&f.number) {
                        out.marked.push((level, f.clone()));
                    }
                }
            }
        }

        if ctx.bottommost_mark_threshold > 0 {
            for (level, f) in bottommost_files(version) {
                if !busy(&f)
                    && f.largest_seqno != 0
                    && f.largest_seqno < ctx.bottommost_mark_threshold
                {
                    out.bottommost.push((level, f));
                }
            }
        }

        if opts.ttl > 0 && ctx.now > opts.ttl {
            let horizon = ctx.now - opts.ttl;
            for level in 0..num_levels.saturating_sub(1) {
                for f in version.files(level) {
                    if !busy(f) && f.oldest_ancestor_time != 0 && f.oldest_ancestor_time < horizon {
                        out.expired_ttl.push((level, f.clone()));
                    }
                }
            }
        }

        if opts.periodic_compaction_seconds > 0 && ctx.now > opts.periodic_compaction_seconds {
            let horizon = ctx.now - opts.periodic_compaction_seconds;
            for level in 0..num_levels {
                for f in version.files(level) {
                    let born = if f.creation_time != 0 {
                        f.creation_time
                    } else {
                        f.oldest_ancestor_time
                    };
                    if !busy(f) && born != 0 && born < horizon {
                        out.periodic.push((level, f.clone()));
                    }
                }
            }
        }
        out
    }

    /// Whether any list is non-empty.
    pub fn any(&self) -> bool {
        !(self.marked.is_empty()
            && self.bottommost.is_empty()
            && self.expired_ttl.is_empty()
            && self.periodic.is_empty())
    }
}

/// The files no older data lies beneath (RocksDB's
/// `GenerateBottommostFiles`): an L1+ file no deeper file overlaps, or the
/// oldest L0 file when every level below L0 is empty.
pub fn bottommost_files(version: &Version) -> Vec<(usize, Arc<FileMetadata>)> {
    let num_levels = version.num_levels();
    let mut out = Vec::new();
    for level in 0..num_levels {
        let files = version.files(level);
        for (i, f) in files.iter().enumerate() {
            let bottommost = if level == 0 {
                i + 1 == files.len() && (1..num_levels).all(|l| version.num_files(l) == 0)
            } else {
                (level + 1..num_levels).all(|l| {
                    version
                        .overlapping_files(
                            l,
                            Some(f.smallest_user_key()),
                            Some(f.largest_user_key()),
                        )
                        .is_empty()
                })
            };
            if bottommost {
                out.push((level, f.clone()));
            }
        }
    }
    out
}
