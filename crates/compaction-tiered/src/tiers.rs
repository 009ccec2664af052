//! What the two-tier pickers share: the major level, stripes, the delta
//! closure of a major compaction, and building the compaction
//! descriptions.
//!
//! Vocabulary: the **major level** is the version's last level; every
//! level above it holds **delta** files (L0, and the middle levels a
//! `Leveled` table leaves behind when it switches strategy). A **major**
//! compaction merges delta files into the major level; a **minor** one
//! merges L0 files into L0.

use std::collections::HashSet;
use std::sync::Arc;

use lithify_base::InternalKeyComparator;
use lithify_sstable::Compression;
use lithify_version::{FileMetadata, Version};

use lithify_compaction::{
    BottommostLevelCompaction, Compaction, CompactionInputs, CompactionReason, Error, ManualPick,
    ManualRequest, PickContext, Result,
};

type Files = Vec<Arc<FileMetadata>>;

/// The major level of `version`: its last level.
pub fn major_level(version: &Version) -> usize {
    version.num_levels() - 1
}

/// What the outputs of a two-tier compaction look like.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TierOutput {
    pub(crate) target_file_size: u64,
    pub(crate) compression: Compression,
    pub(crate) max_subcompactions: usize,
}

/// The stripe boundaries of `version` for `stripes` stripes: the smallest
/// user keys of major-level files where the bytes before them first reach
/// `j / stripes` of the level (`j = 1 .. stripes - 1`), skipping cuts that
/// would split one user key between stripes. Stripe `i` is
/// `[boundary[i - 1], boundary[i])`. Fewer boundaries when the level has
/// too few files; none for one stripe.
///
/// ```
/// use lithify_compaction_tiered::stripe_boundaries;
/// use lithify_version::Version;
///
/// let v = Version::from_text("
/// L6:
///   000001:[a#1,SET-b#1,SET] size=100
///   000002:[c#1,SET-d#1,SET] size=100
///   000003:[e#1,SET-f#1,SET] size=100
///   000004:[g#1,SET-h#1,SET] size=100
/// ").unwrap();
/// assert_eq!(stripe_boundaries(&v, 2), [b"e".to_vec()]);
/// assert_eq!(stripe_boundaries(&v, 4), [b"c".to_vec(), b"e".to_vec(), b"g".to_vec()]);
/// assert!(stripe_boundaries(&v, 1).is_empty());
/// ```
pub fn stripe_boundaries(version: &Version, stripes: usize) -> Vec<Vec<u8>> {
    let major = major_level(version);
    let files = version.files(major);
    if stripes <= 1 || files.len() < 2 {
        return Vec::new();
    }
    let cmp = version.comparator();
    let total = version.level_bytes(major).max(1) as u128;
    let k = stripes as u128;
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut before = 0u128;
    let mut j = 1u128;
    for (i, f) in files.iter().enumerate() {
        if i > 0 && before * k >= total * j {
            if cmp
                .compare_user(files[i - 1].largest_user_key(), f.smallest_user_key())
                .is_lt()
            {
                out.push(f.smallest_user_key().to_vec());
            }
            while j < k && before * k >= total * j {
                j += 1;
            }
            if before * k >= total * j {
                break;
            }
        }
        before += f.size as u128;
    }
    out
}

/// Whether a file's user-key range meets stripe `i`.
pub(crate) fn file_in_stripe(
    cmp: &InternalKeyComparator,
    boundaries: &[Vec<u8>],
    i: usize,
    f: &FileMetadata,
) -> bool {
    let after_start = i == 0
        || cmp
            .compare_user(f.largest_user_key(), &boundaries[i - 1])
            .is_ge();
    let before_end = i >= boundaries.len()
        || cmp
            .compare_user(f.smallest_user_key(), &boundaries[i])
            .is_lt();
    after_start && before_end
}

/// Every delta file (levels above the major level), with its level, in
/// level order.
pub(crate) fn delta_files(version: &Version) -> Vec<(usize, Arc<FileMetadata>)> {
    (0..major_level(version))
        .flat_map(|level| version.files(level).iter().map(move |f| (level, f.clone())))
        .collect()
}

fn range_overlap(cmp: &InternalKeyComparator, f: &FileMetadata, lo: &[u8], hi: &[u8]) -> bool {
    cmp.compare_user(f.smallest_user_key(), hi).is_le()
        && cmp.compare_user(f.largest_user_key(), lo).is_ge()
}

/// The delta files a major compaction must take with `seeds` (file
/// numbers) and, for a flush, the memtables' range: every delta file
/// sharing user keys with one taken, transitively. A delta file left out
/// then shares no key with the compaction's delta, so whatever it holds
/// for a key the major level now has is newer than that key's data there.
///
/// Files sharing keys transitively are exactly those whose ranges chain
/// into one interval of the union of all delta ranges, so one sort and a
/// sweep find them.
pub(crate) fn delta_closure(
    version: &Version,
    seeds: &HashSet<u64>,
    memtable_range: Option<(&[u8], &[u8])>,
) -> Vec<(usize, Arc<FileMetadata>)> {
    let cmp = version.comparator();
    let all = delta_files(version);
    let mut order: Vec<usize> = (0..all.len()).collect();
    order.sort_by(|&a, &b| {
        cmp.compare_user(all[a].1.smallest_user_key(), all[b].1.smallest_user_key())
    });
    let mut taken = vec![false; all.len()];
    let mut i = 0;
    while i < order.len() {
        // One connected group: files while they start at or before the
        // group's largest key so far.
        let mut hi = all[order[i]].1.largest_user_key();
        let mut j = i + 1;
        while j < order.len()
            && cmp
                .compare_user(all[order[j]].1.smallest_user_key(), hi)
                .is_le()
        {
            let h = all[order[j]].1.largest_user_key();
            if cmp.compare_user(h, hi).is_gt() {
                hi = h;
            }
            j += 1;
        }
        let group = &order[i..j];
        let wanted = group.iter().any(|&k| {
            let f = &all[k].1;
            seeds.contains(&f.number)
                || memtable_range.is_some_and(|(lo, hi)| range_overlap(cmp, f, lo, hi))
        });
        if wanted {
            for &k in group {
                taken[k] = true;
            }
        }
        i = j;
    }
    all.into_iter()
        .zip(taken)
        .filter_map(|(f, t)| t.then_some(f))
        .collect()
}

/// The major-level files a major compaction of `delta` (and the memtables'
/// range) rewrites: those meeting at least one delta file (user keys,
/// inclusive). Major-level files between them that meet none stay in
/// place.
pub(crate) fn base_files(
    version: &Version,
    delta: &[(usize, Arc<FileMetadata>)],
    memtable_range: Option<(&[u8], &[u8])>,
) -> Files {
    let major = major_level(version);
    let cmp = version.comparator();
    // The union of the delta ranges, as sorted disjoint intervals.
    let mut ranges: Vec<(&[u8], &[u8])> = delta
        .iter()
        .map(|(_, f)| (f.smallest_user_key(), f.largest_user_key()))
        .chain(memtable_range)
        .collect();
    ranges.sort_by(|a, b| cmp.compare_user(a.0, b.0));
    let mut union: Vec<(&[u8], &[u8])> = Vec::with_capacity(ranges.len());
    for (lo, hi) in ranges {
        match union.last_mut() {
            Some(last) if cmp.compare_user(lo, last.1).is_le() => {
                if cmp.compare_user(hi, last.1).is_gt() {
                    last.1 = hi;
                }
            }
            _ => union.push((lo, hi)),
        }
    }
    version
        .files(major)
        .iter()
        .filter(|g| {
            // The first interval ending at or after the file's start.
            let i = union.partition_point(|r| cmp.compare_user(r.1, g.smallest_user_key()).is_lt());
            union
                .get(i)
                .is_some_and(|r| cmp.compare_user(r.0, g.largest_user_key()).is_le())
        })
        .cloned()
        .collect()
}

/// Groups `(level, file)` pairs into per-level inputs in level order, with
/// `base` as the major level's entry.
pub(crate) fn group_inputs(
    delta: &[(usize, Arc<FileMetadata>)],
    major: usize,
    base: Files,
) -> Vec<CompactionInputs> {
    let mut inputs: Vec<CompactionInputs> = Vec::new();
    for (level, f) in delta {
        match inputs.last_mut() {
            Some(i) if i.level == *level => i.files.push(f.clone()),
            _ => inputs.push(CompactionInputs {
                level: *level,
                files: vec![f.clone()],
            }),
        }
    }
    if !base.is_empty() {
        inputs.push(CompactionInputs {
            level: major,
            files: base,
        });
    }
    inputs
}

/// The user-key hull of `inputs` and an optional memtable range.
pub(crate) fn hull(
    cmp: &InternalKeyComparator,
    inputs: &[CompactionInputs],
    memtable_range: Option<(&[u8], &[u8])>,
) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut lo: Option<&[u8]> = memtable_range.map(|r| r.0);
    let mut hi: Option<&[u8]> = memtable_range.map(|r| r.1);
    for f in inputs.iter().flat_map(|i| i.files.iter()) {
        if lo.is_none_or(|l| cmp.compare_user(f.smallest_user_key(), l).is_lt()) {
            lo = Some(f.smallest_user_key());
        }
        if hi.is_none_or(|h| cmp.compare_user(f.largest_user_key(), h).is_gt()) {
            hi = Some(f.largest_user_key());
        }
    }
    Some((lo?.to_vec(), hi?.to_vec()))
}

/// Output boundaries of a compaction over `[lo, hi]` into `output_level`:
/// for the major level, the smallest keys of its files inside the range
/// that are not inputs (they stay in place, so no output may span them);
/// and the stripe boundaries inside the range.
pub(crate) fn output_boundaries(
    version: &Version,
    output_level: usize,
    inputs: &[CompactionInputs],
    range: (&[u8], &[u8]),
    stripes: &[Vec<u8>],
) -> Vec<Vec<u8>> {
    let cmp = version.comparator();
    let (lo, hi) = range;
    let mut out: Vec<Vec<u8>> = Vec::new();
    if output_level == major_level(version) {
        let taken: HashSet<u64> = inputs
            .iter()
            .filter(|i| i.level == output_level)
            .flat_map(|i| i.files.iter().map(|f| f.number))
            .collect();
        for f in version.files(output_level) {
            if !taken.contains(&f.number)
                && cmp.compare_user(f.smallest_user_key(), lo).is_gt()
                && cmp.compare_user(f.smallest_user_key(), hi).is_le()
            {
                out.push(f.smallest_user_key().to_vec());
            }
        }
    }
    for b in stripes {
        if cmp.compare_user(b, lo).is_gt() && cmp.compare_user(b, hi).is_le() {
            out.push(b.clone());
        }
    }
    out.sort_by(|a, b| cmp.compare_user(a, b));
    out.dedup_by(|a, b| cmp.compare_user(a, b).is_eq());
    out
}

/// Whether any input file is being compacted, or a running compaction
/// writes into `output_level` within `range`.
pub(crate) fn conflicts(
    version: &Version,
    ctx: &PickContext<'_>,
    inputs: &[CompactionInputs],
    output_level: usize,
    range: (&[u8], &[u8]),
) -> bool {
    inputs
        .iter()
        .any(|i| ctx.in_progress.any_being_compacted(&i.files))
        || ctx.in_progress.output_range_conflicts(
            version.comparator(),
            output_level,
            range.0,
            range.1,
        )
}

/// What a two-tier compaction needs besides its inputs.
pub(crate) struct TierPick<'a> {
    pub(crate) reason: CompactionReason,
    pub(crate) output_level: usize,
    pub(crate) score: f64,
    pub(crate) manual: bool,
    pub(crate) stripes: &'a [Vec<u8>],
    pub(crate) reuse_untouched_files: bool,
    pub(crate) memtable_range: Option<(&'a [u8], &'a [u8])>,
}

/// Builds the compaction of `inputs` (which may be empty only for a flush
/// plan), or `None` when it conflicts with a running compaction.
pub(crate) fn build(
    version: &Version,
    ctx: &PickContext<'_>,
    out: &TierOutput,
    inputs: Vec<CompactionInputs>,
    pick: TierPick<'_>,
) -> Option<Compaction> {
    let cmp = version.comparator();
    let (lo, hi) = hull(cmp, &inputs, pick.memtable_range)?;
    if conflicts(version, ctx, &inputs, pick.output_level, (&lo, &hi)) {
        return None;
    }
    let major = major_level(version);
    let output_level = pick.output_level;
    let to_l0 = output_level == 0;
    let boundaries = output_boundaries(version, output_level, &inputs, (&lo, &hi), pick.stripes);
    let bottommost = if output_level == major {
        true
    } else {
        let l0 = version.files(0);
        let oldest_taken = inputs
            .iter()
            .filter(|i| i.level == 0)
            .flat_map(|i| i.files.iter())
            .any(|f| l0.last().is_some_and(|last| last.number == f.number));
        oldest_taken && (1..version.num_levels()).all(|l| version.num_files(l) == 0)
    };
    let target = if to_l0 {
        u64::MAX
    } else {
        out.target_file_size
    };
    let trivial_move = pick.memtable_range.is_none()
        && !(pick.manual && ctx.has_compaction_filter)
        && output_level == major
        && !inputs.is_empty()
        && inputs.iter().all(|i| i.level != major)
        && pairwise_disjoint(cmp, &inputs);
    let deeper_files = (output_level + 1..version.num_levels())
        .map(|l| version.overlapping_files(l, Some(&lo), Some(&hi)))
        .collect();
    Some(Compaction {
        table: version.table(),
        reason: pick.reason,
        inputs,
        output_level,
        grandparents: Vec::new(),
        target_output_file_size: target,
        max_output_file_size: target,
        max_compaction_bytes: u64::MAX,
        compression: out.compression,
        score: pick.score,
        manual: pick.manual,
        bottommost,
        trivial_move,
        max_subcompactions: if to_l0 { 1 } else { out.max_subcompactions },
        dynamic_file_size: false,
        deeper_files,
        new_compact_cursor: None,
        output_split_key: None,
        ttl_cut_files: Vec::new(),
        output_boundaries: boundaries,
        reuse_untouched_files: pick.reuse_untouched_files && !trivial_move,
        memtable_range: pick.memtable_range.map(|(a, b)| (a.to_vec(), b.to_vec())),
    })
}

/// Forced blob garbage collection in the two-tier shapes (lithify's own
/// rule: RocksDB defines one for leveled compaction only). When the
/// oldest blob files are mostly garbage
/// ([`forced_blob_gc_files`](lithify_compaction::forced_blob_gc_files)),
/// one major-level SST that pins the oldest blob file is rewritten in
/// place, relocating those values. Delta files (L0 and middle levels) are
/// left alone: every minor or major compaction that merges them relocates
/// what they hold from old blob files anyway, and the major level is
/// where data otherwise sits untouched between majors. One file at a time
/// keeps each rewrite small (a striped or progressive major's budget is
/// not spent on it), and the next pick takes the next file.
pub(crate) fn forced_blob_gc(
    version: &Version,
    ctx: &PickContext<'_>,
    out: &TierOutput,
) -> Option<Compaction> {
    let policy = ctx.blob_gc?;
    let major = major_level(version);
    if major == 0 {
        return None;
    }
    lithify_compaction::forced_blob_gc_files(version, policy, ctx.in_progress)
        .into_iter()
        .filter(|(level, _)| *level == major)
        .find_map(|(_, f)| {
            let inputs = vec![CompactionInputs {
                level: major,
                files: vec![f],
            }];
            let pick = TierPick {
                reason: CompactionReason::ForcedBlobGc,
                output_level: major,
                score: 0.0,
                manual: false,
                stripes: &[],
                reuse_untouched_files: false,
                memtable_range: None,
            };
            build(version, ctx, out, inputs, pick)
        })
}

/// Whether no two input files share a user key (so moving them all into
/// the major level keeps it one sorted run).
fn pairwise_disjoint(cmp: &InternalKeyComparator, inputs: &[CompactionInputs]) -> bool {
    let mut files: Vec<&Arc<FileMetadata>> = inputs.iter().flat_map(|i| i.files.iter()).collect();
    files.sort_by(|a, b| cmp.compare_user(a.smallest_user_key(), b.smallest_user_key()));
    files.windows(2).all(|w| {
        cmp.compare_user(w[0].largest_user_key(), w[1].smallest_user_key())
            .is_lt()
    })
}

/// A major compaction seeded by `seeds` (file numbers of delta files), or
/// `None` when nothing is seeded or it conflicts.
pub(crate) fn major(
    version: &Version,
    ctx: &PickContext<'_>,
    out: &TierOutput,
    seeds: &HashSet<u64>,
    reason: CompactionReason,
    score: f64,
    stripes: &[Vec<u8>],
) -> Option<Compaction> {
    let delta = delta_closure(version, seeds, None);
    if delta.is_empty() {
        return None;
    }
    let major = major_level(version);
    let base = base_files(version, &delta, None);
    let inputs = group_inputs(&delta, major, base);
    build(
        version,
        ctx,
        out,
        inputs,
        TierPick {
            reason,
            output_level: major,
            score,
            manual: false,
            stripes,
            reuse_untouched_files: true,
            memtable_range: None,
        },
    )
}

/// Whether any middle level (between L0 and the major level) holds files:
/// the shape of another strategy that a reshaping compaction must merge
/// down.
pub(crate) fn has_middle_levels(version: &Version) -> bool {
    (1..major_level(version)).any(|l| version.num_files(l) > 0)
}

/// The reshaping compaction after a switch to a two-tier strategy: every
/// delta file, seeded by the middle levels (their closure takes the L0
/// files they share keys with), into the major level. `None` when there
/// is nothing to reshape or it conflicts.
pub(crate) fn reshape(
    version: &Version,
    ctx: &PickContext<'_>,
    out: &TierOutput,
    stripes: &[Vec<u8>],
) -> Option<Compaction> {
    if !has_middle_levels(version) {
        return None;
    }
    let seeds: HashSet<u64> = delta_files(version)
        .into_iter()
        .map(|(_, f)| f.number)
        .collect();
    major(
        version,
        ctx,
        out,
        &seeds,
        CompactionReason::Reshape,
        1.0,
        stripes,
    )
}

/// A step of `compact_range` for a two-tier strategy: from a delta level,
/// a major compaction of every delta file in the range (with its closure)
/// into the major level; from the major level, a rewrite of its files in
/// the range (skipping files this manual compaction wrote, as the
/// bottommost policy says).
pub(crate) fn pick_manual(
    version: &Version,
    ctx: &PickContext<'_>,
    out: &TierOutput,
    request: &ManualRequest,
) -> Result<Option<ManualPick>> {
    let major = major_level(version);
    if request.input_level > major {
        return Err(Error::invalid_argument(format!(
            "level {} does not exist",
            request.input_level
        )));
    }
    let cmp = version.comparator();
    let begin = request.begin.as_ref().map(|k| k.user_key().to_vec());
    let end = request.end.clone();
    let in_range = |f: &FileMetadata| f.overlaps_user_range(cmp, begin.as_deref(), end.as_deref());
    let (inputs, reuse) = if request.input_level < major {
        let seeds: HashSet<u64> = delta_files(version)
            .into_iter()
            .filter(|(_, f)| in_range(f))
            .map(|(_, f)| f.number)
            .collect();
        if seeds.is_empty() {
            return Ok(None);
        }
        let delta = delta_closure(version, &seeds, None);
        let base = base_files(version, &delta, None);
        (group_inputs(&delta, major, base), true)
    } else {
        let ignore = matches!(
            request.bottommost_level_compaction,
            BottommostLevelCompaction::ForceOptimized
                | BottommostLevelCompaction::IfHaveCompactionFilter
        );
        let files: Files = version
            .files(major)
            .iter()
            .filter(|f| in_range(f) && (!ignore || f.number < request.max_file_num_to_ignore))
            .cloned()
            .collect();
        if files.is_empty() {
            return Ok(None);
        }
        (
            vec![CompactionInputs {
                level: major,
                files,
            }],
            false,
        )
    };
    let mut out = *out;
    if request.max_subcompactions > 0 {
        out.max_subcompactions = request.max_subcompactions;
    }
    match build(
        version,
        ctx,
        &out,
        inputs,
        TierPick {
            reason: CompactionReason::ManualCompaction,
            output_level: major,
            score: 0.0,
            manual: true,
            stripes: &[],
            reuse_untouched_files: reuse,
            memtable_range: None,
        },
    ) {
        Some(mut c) => {
            // A rewrite in place is never a move.
            if request.input_level == major {
                c.trivial_move = false;
            }
            Ok(Some(ManualPick {
                compaction: c,
                next_begin: None,
            }))
        }
        None => Err(Error::conflict(
            "the range overlaps a running compaction".to_owned(),
        )),
    }
}

/// Delta bytes still to merge into the major level, plus the major-level
/// bytes they overlap (what the major compactions ahead must rewrite).
pub(crate) fn pending_major_bytes(version: &Version) -> u64 {
    let delta = delta_files(version);
    let base = base_files(version, &delta, None);
    delta.iter().map(|(_, f)| f.size).sum::<u64>() + base.iter().map(|f| f.size).sum::<u64>()
}
