//! Growing a set of input files: clean cuts, the output level's files,
//! growing the start level, grandparents (RocksDB's
//! `ExpandInputsToCleanCut`, `SetupOtherInputs`, `GetGrandparents`).

use std::sync::Arc;

use lithify_base::InternalKey;
use lithify_version::{FileMetadata, Version};

use lithify_compaction::CompactionsInProgress;
use lithify_compaction::bounds::{clean_files_within, key_range, overlapping_files, union_range};

pub(crate) type Files = Vec<Arc<FileMetadata>>;

pub(crate) fn total_size(files: &[Arc<FileMetadata>]) -> u64 {
    files.iter().map(|f| f.size).sum()
}

/// Expands `files` of `level` until no file outside the set shares a user
/// key with it (a no-op for L0, whose overlap is handled by the transitive
/// expansion). Returns false if the result holds a file being compacted.
pub(crate) fn expand_to_clean_cut(
    version: &Version,
    in_progress: &CompactionsInProgress,
    level: usize,
    files: &mut Files,
) -> bool {
    debug_assert!(!files.is_empty());
    if level == 0 {
        return true;
    }
    loop {
        let before = files.len();
        let (lo, hi) = key_range(version.comparator(), level, files);
        *files = overlapping_files(version, level, Some(&lo), Some(&hi));
        if files.len() <= before {
            break;
        }
    }
    !in_progress.any_being_compacted(files)
}

/// The user-key range of several input sets, if any is non-empty.
pub(crate) fn inputs_range(
    version: &Version,
    inputs: &[(usize, &[Arc<FileMetadata>])],
) -> Option<(InternalKey, InternalKey)> {
    let cmp = version.comparator();
    let mut range: Option<(InternalKey, InternalKey)> = None;
    for &(level, files) in inputs {
        if files.is_empty() {
            continue;
        }
        let r = key_range(cmp, level, files);
        range = Some(match range {
            None => r,
            Some(acc) => union_range(cmp, acc, r),
        });
    }
    range
}

/// Whether the inputs' user-key range overlaps the output range of a
/// running compaction into `output_level` (RocksDB's
/// `FilesRangeOverlapWithCompaction`).
pub(crate) fn conflicts_with_running(
    version: &Version,
    in_progress: &CompactionsInProgress,
    inputs: &[(usize, &[Arc<FileMetadata>])],
    output_level: usize,
) -> bool {
    match inputs_range(version, inputs) {
        None => false,
        Some((lo, hi)) => in_progress.output_range_conflicts(
            version.comparator(),
            output_level,
            lo.user_key(),
            hi.user_key(),
        ),
    }
}

/// Picks the output level's files for `start` (which may grow), as
/// RocksDB's `SetupOtherInputs`:
///
/// 1. the output level's files overlapping `start`, clean-cut; fail if any
///    is being compacted;
/// 2. if there are some, try to grow `start` without growing them: (a) the
///    start-level files overlapping the whole range (round robin: only from
///    `start`'s smallest key onwards), clean-cut, if they stay below
///    `2 x max_compaction_bytes` with the output files and pull in no more
///    output files; else (b) the clean set of start-level files lying
///    within the range.
///
/// Returns the output-level files, or `None` when the pick must be
/// abandoned.
pub(crate) fn setup_other_inputs(
    version: &Version,
    in_progress: &CompactionsInProgress,
    start_level: usize,
    start: &mut Files,
    output_level: usize,
    max_compaction_bytes: u64,
    only_expand_right: bool,
) -> Option<Files> {
    if start_level == output_level {
        return Some(Vec::new());
    }
    let cmp = version.comparator();
    let (lo, hi) = key_range(cmp, start_level, start);
    let mut out = overlapping_files(version, output_level, Some(&lo), Some(&hi));
    if in_progress.any_being_compacted(&out) {
        return None;
    }
    if !out.is_empty() && !expand_to_clean_cut(version, in_progress, output_level, &mut out) {
        return None;
    }
    if out.is_empty() {
        return Some(out);
    }
    let limit = max_compaction_bytes.saturating_mul(2);
    let out_size = total_size(&out);
    let (all_lo, all_hi) = union_range(cmp, (lo.clone(), hi), key_range(cmp, output_level, &out));

    // (a) Everything of the start level overlapping the whole range.
    let from = if only_expand_right { &lo } else { &all_lo };
    let mut expanded = overlapping_files(version, start_level, Some(from), Some(&all_hi));
    let expanded_size = total_size(&expanded);
    let clean = expand_to_clean_cut(version, in_progress, start_level, &mut expanded);
    let mut take = false;
    if clean
        && expanded.len() > start.len()
        && out_size + expanded_size < limit
        && !in_progress.any_being_compacted(&expanded)
    {
        let (new_lo, new_hi) = key_range(cmp, start_level, &expanded);
        let mut new_out = overlapping_files(version, output_level, Some(&new_lo), Some(&new_hi));
        if !in_progress.any_being_compacted(&new_out)
            && expand_to_clean_cut(version, in_progress, output_level, &mut new_out)
            && new_out.len() == out.len()
        {
            take = true;
        }
    }
    // (b) The clean files of the start level within the range.
    if !take {
        expanded = clean_files_within(version, start_level, &all_lo, &all_hi);
        if expanded.len() > start.len()
            && out_size + total_size(&expanded) < limit
            && !in_progress.any_being_compacted(&expanded)
        {
            take = true;
        }
    }
    if take {
        *start = expanded;
    }
    Some(out)
}

/// The files of the first non-empty level below `output_level` that
/// overlap the range of `start` and `out` (RocksDB's `GetGrandparents`).
pub(crate) fn grandparents(
    version: &Version,
    start_level: usize,
    start: &[Arc<FileMetadata>],
    output_level: usize,
    out: &[Arc<FileMetadata>],
) -> Files {
    let Some((lo, hi)) = inputs_range(version, &[(start_level, start), (output_level, out)]) else {
        return Vec::new();
    };
    for level in output_level + 1..version.num_levels() {
        let files = overlapping_files(version, level, Some(&lo), Some(&hi));
        if !files.is_empty() {
            return files;
        }
    }
    Vec::new()
}
