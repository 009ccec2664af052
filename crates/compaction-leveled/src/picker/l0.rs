//! L0's special picks: the L0 trivial move and the two intra-L0
//! compactions (RocksDB's `TryPickL0TrivialMove`,
//! `PickSizeBasedIntraL0Compaction`, `PickIntraL0Compaction` /
//! `FindIntraL0Compaction`).

use lithify_base::Comparator as _;
use lithify_version::Version;

use super::expand::Files;
use crate::score::CompensatedSizes;
use lithify_compaction::CompactionsInProgress;
use lithify_compaction::bounds::overlapping_files;

/// RocksDB's `kMinFilesForIntraL0Compaction`.
pub(crate) const MIN_FILES_FOR_INTRA_L0: usize = 4;

/// The oldest L0 files that can move to the (non-empty) base level without
/// rewriting: walking from the oldest file to newer ones, each must lie
/// entirely left or right of the files taken so far, and their union must
/// not overlap the base level. Returned sorted by smallest key.
pub(crate) fn l0_trivial_move(version: &Version, base_level: usize) -> Option<Files> {
    if base_level == 0 || version.num_files(base_level) == 0 {
        return None;
    }
    let cmp = version.comparator();
    let mut taken: Files = Vec::new();
    let mut range: Option<(lithify_base::InternalKey, lithify_base::InternalKey)> = None;
    for f in version.files(0).iter().rev() {
        let (lo, hi) = match &range {
            None => (f.smallest.clone(), f.largest.clone()),
            Some((lo, hi)) => {
                if cmp.compare(f.largest.encoded(), lo.encoded()).is_lt() {
                    (f.smallest.clone(), hi.clone())
                } else if cmp.compare(f.smallest.encoded(), hi.encoded()).is_gt() {
                    (lo.clone(), f.largest.clone())
                } else {
                    break;
                }
            }
        };
        if !overlapping_files(version, base_level, Some(&lo), Some(&hi)).is_empty() {
            break;
        }
        range = Some((lo, hi));
        taken.push(f.clone());
    }
    if taken.is_empty() {
        return None;
    }
    taken.sort_by(|a, b| cmp.compare(a.smallest.encoded(), b.smallest.encoded()));
    Some(taken)
}

/// Size-based intra-L0: when the base level is more than `max(10,
/// multiplier) x 2` times L0's compensated size, compacting L0 into it
/// would rewrite far more than it moves; instead merge the newest L0 files
/// (up to the first one being compacted) into one L0 file, if there are at
/// least `max(2, trigger)` of them.
pub(crate) fn size_based_intra_l0(
    version: &Version,
    in_progress: &CompactionsInProgress,
    compensated: &CompensatedSizes,
    base_level: usize,
    trigger: usize,
    multiplier: f64,
) -> Option<Files> {
    if base_level == 0 {
        return None;
    }
    let l0 = version.files(0);
    let min_files = trigger.max(2);
    if l0.len() < min_files {
        return None;
    }
    let l0_size: u64 = l0.iter().map(|f| compensated.get(f)).sum();
    let factor = multiplier.max(10.0) * 2.0;
    let product = l0_size as f64 * factor;
    let min_base_size = if product >= u64::MAX as f64 {
        u64::MAX
    } else {
        product as u64
    };
    if version.level_bytes(base_level) <= min_base_size {
        return None;
    }
    let run: Files = l0
        .iter()
        .take_while(|f| !in_progress.is_being_compacted(f.number))
        .cloned()
        .collect();
    (run.len() >= min_files).then_some(run)
}

/// Cost-based intra-L0, when L0 cannot compact into the base level: with
/// at least `trigger + 2` L0 files and the newest not being compacted, take
/// files from the newest while the bytes per file removed
/// (`total / (files - 1)`) do not grow, no file is being compacted, and the
/// total stays within `max_compaction_bytes`; at least 4 files.
pub(crate) fn cost_based_intra_l0(
    version: &Version,
    in_progress: &CompactionsInProgress,
    trigger: usize,
    max_compaction_bytes: u64,
) -> Option<Files> {
    let l0 = version.files(0);
    if l0.len() < trigger + 2 || in_progress.is_being_compacted(l0[0].number) {
        return None;
    }
    let mut bytes = l0[0].size;
    let mut per_deleted = u64::MAX;
    let mut limit = 1;
    while limit < l0.len() {
        bytes += l0[limit].size;
        let new_per_deleted = bytes / limit as u64;
        if in_progress.is_being_compacted(l0[limit].number)
            || new_per_deleted > per_deleted
            || bytes > max_compaction_bytes
        {
            break;
        }
        per_deleted = new_per_deleted;
        limit += 1;
    }
    (limit >= MIN_FILES_FOR_INTRA_L0).then(|| l0[..limit].to_vec())
}
