//! Manual compaction: `compact_range` level by level, `change_level`
//! refits, and `compact_files` input sanitisation (RocksDB's
//! `DBImpl::CompactRangeInternal`, `CompactionPicker::CompactRange`,
//! `DBImpl::ReFitLevel`, `SanitizeCompactionInputFiles`).

use std::collections::BTreeSet;
use std::sync::Arc;

use lithify_base::{InternalKey, MAX_SEQNO, ValueKind};
use lithify_sstable::Compression;
use lithify_version::{FileMetadata, Version, VersionEdit};

use super::expand::{
    Files, conflicts_with_running, expand_to_clean_cut, grandparents, setup_other_inputs,
    total_size,
};
use super::leveled::{LeveledPicker, two_levels};
use super::{CompactionPicker, PickContext};
use crate::bounds::overlapping_files;
use crate::compaction::{Compaction, CompactionInputs, CompactionReason};
use crate::error::{ConflictSnafu, InvalidArgumentSnafu, Result};

/// What `compact_range` does with the last level once the range has
/// reached it (RocksDB's `BottommostLevelCompaction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BottommostLevelCompaction {
    /// Never rewrite the last level.
    Skip,
    /// Rewrite it only when a compaction filter is configured, skipping
    /// files this manual compaction wrote (the default).
    #[default]
    IfHaveCompactionFilter,
    /// Always rewrite it.
    Force,
    /// Always rewrite it, skipping files this manual compaction wrote.
    ForceOptimized,
}

/// Options of `compact_range` (RocksDB's `CompactRangeOptions`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CompactRangeOptions {
    /// Wait for running compactions and block automatic ones while this
    /// runs (the engine enforces it; the planner only records it).
    pub exclusive_manual_compaction: bool,
    /// Move the result to another level afterwards (`target_level`).
    pub change_level: bool,
    /// Where `change_level` moves the files; `None` picks the smallest empty
    /// level above that can hold them.
    pub target_level: Option<usize>,
    /// What to do with the last level.
    pub bottommost_level_compaction: BottommostLevelCompaction,
    /// Overrides `max_subcompactions` when nonzero.
    pub max_subcompactions: usize,
}

/// Where one manual step writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManualOutput {
    /// To this level.
    Level(usize),
    /// To the base level of the moment (L0 with dynamic targets).
    BaseLevel,
}

/// One step of a manual compaction: compact the files of `input_level`
/// overlapping `[begin, end]` (user keys, inclusive; `None` unbounded)
/// into `output`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManualRequest {
    /// The level compacted.
    pub input_level: usize,
    /// Where the outputs go.
    pub output: ManualOutput,
    /// Lower bound (inclusive), as an internal key the step starts from.
    pub begin: Option<InternalKey>,
    /// Upper bound (inclusive user key).
    pub end: Option<Vec<u8>>,
    /// Files numbered at or above this were written by this manual
    /// compaction and are skipped when rewriting the last level
    /// (`ForceOptimized`, `IfHaveCompactionFilter`); `u64::MAX` skips none.
    pub max_file_num_to_ignore: u64,
    /// The bottommost policy (decides whether `max_file_num_to_ignore`
    /// applies).
    pub bottommost_level_compaction: BottommostLevelCompaction,
    /// Overrides `max_subcompactions` when nonzero.
    pub max_subcompactions: usize,
}

/// A manual step's compaction and, when it covers only part of the range
/// (it was cut at `max_compaction_bytes`), where the next round of the
/// same step starts.
#[derive(Debug, Clone)]
pub struct ManualPick {
    /// The compaction to run.
    pub compaction: Compaction,
    /// The start of the rest of the range, if any remains.
    pub next_begin: Option<InternalKey>,
}

fn seek_key(user_key: &[u8]) -> InternalKey {
    InternalKey::seek(user_key, MAX_SEQNO)
}

fn end_key(user_key: &[u8]) -> InternalKey {
    InternalKey::new(user_key, 0, ValueKind::Delete)
}

/// RocksDB's `CompactionPicker::CompactRange` for leveled compaction.
pub(crate) fn pick_compact_range(
    picker: &LeveledPicker,
    version: &Version,
    ctx: &PickContext<'_>,
    request: &ManualRequest,
) -> Result<Option<ManualPick>> {
    let input_level = request.input_level;
    if input_level >= version.num_levels() {
        return InvalidArgumentSnafu {
            message: format!("level {input_level} does not exist"),
        }
        .fail();
    }
    let targets = picker.targets(version);
    let output_level = match request.output {
        ManualOutput::Level(l) => l,
        ManualOutput::BaseLevel => targets.base_level(),
    };
    if output_level >= version.num_levels() || output_level < input_level {
        return InvalidArgumentSnafu {
            message: format!("cannot compact L{input_level} into L{output_level}"),
        }
        .fail();
    }
    let end = request.end.as_deref().map(end_key);
    let mut inputs = overlapping_files(version, input_level, request.begin.as_ref(), end.as_ref());
    if inputs.is_empty() {
        return Ok(None);
    }
    if input_level == 0 && ctx.in_progress.level0_in_progress() {
        return ConflictSnafu {
            message: "only one compaction out of L0 may run at a time".to_owned(),
        }
        .fail();
    }
    let mut covering_whole_range = true;
    let limit = picker.options().max_compaction_bytes();
    if input_level > 0 {
        // Keep the compaction within max_compaction_bytes, counting the
        // output level's overlap; the first file always goes.
        let mut input_total = inputs[0].size;
        for i in 1..inputs.len() {
            let out: u64 = if output_level != input_level {
                total_size(&overlapping_files(
                    version,
                    output_level,
                    Some(&inputs[0].smallest),
                    Some(&inputs[i].largest),
                ))
            } else {
                0
            };
            if input_total + inputs[i].size + out > limit {
                covering_whole_range = false;
                inputs.truncate(i);
                break;
            }
            input_total += inputs[i].size;
        }
    }
    if matches!(
        request.bottommost_level_compaction,
        BottommostLevelCompaction::ForceOptimized
            | BottommostLevelCompaction::IfHaveCompactionFilter
    ) && request.max_file_num_to_ignore != u64::MAX
    {
        // Only a contiguous run of files older than this manual
        // compaction; later ones wait for the next round.
        let mut shrunk: Files = Vec::new();
        let mut skip_at = inputs.len();
        for (i, f) in inputs.iter().enumerate() {
            if f.number < request.max_file_num_to_ignore {
                shrunk.push(f.clone());
            } else if !shrunk.is_empty() {
                skip_at = i;
                break;
            }
        }
        if shrunk.is_empty() {
            return Ok(None);
        }
        if inputs[skip_at.min(inputs.len())..]
            .iter()
            .skip(1)
            .any(|f| f.number < request.max_file_num_to_ignore)
        {
            covering_whole_range = false;
        }
        inputs = shrunk;
    }
    if !expand_to_clean_cut(version, ctx.in_progress, input_level, &mut inputs) {
        return ConflictSnafu {
            message: format!("a file of L{input_level} in the range is being compacted"),
        }
        .fail();
    }
    let next_begin = if covering_whole_range || input_level == 0 {
        None
    } else {
        let files = version.files(input_level);
        let last = inputs.last().map(|f| f.number);
        files
            .iter()
            .position(|f| Some(f.number) == last)
            .and_then(|i| files.get(i + 1))
            .map(|f| f.smallest.clone())
    };
    let mut out = Vec::new();
    if input_level != output_level {
        out = match setup_other_inputs(
            version,
            ctx.in_progress,
            input_level,
            &mut inputs,
            output_level,
            limit,
            false,
        ) {
            Some(out) => out,
            None => {
                return ConflictSnafu {
                    message: format!("a file of L{output_level} in the range is being compacted"),
                }
                .fail();
            }
        };
    }
    if conflicts_with_running(
        version,
        ctx.in_progress,
        &[(input_level, &inputs), (output_level, &out)],
        output_level,
    ) {
        return ConflictSnafu {
            message: format!("a running compaction writes the same key range of L{output_level}"),
        }
        .fail();
    }
    let gp = grandparents(version, input_level, &inputs, output_level, &out);
    let mut compaction = picker.build_compaction(
        version,
        ctx,
        &targets,
        CompactionReason::ManualCompaction,
        two_levels(input_level, inputs, output_level, out),
        output_level,
        gp,
        0.0,
        true,
        false,
    );
    if request.max_subcompactions > 0 {
        compaction.max_subcompactions = request.max_subcompactions;
    }
    Ok(Some(ManualPick {
        compaction,
        next_begin,
    }))
}

/// What a manual compaction wants done next.
#[derive(Debug, Clone)]
pub enum ManualStep {
    /// Run this compaction (a trivial move when `trivial_move` is set),
    /// install it, and call [`ManualCompaction::next`] again.
    Compact(Compaction),
    /// Apply this metadata-only edit (the `change_level` refit) and call
    /// `next` again.
    Refit(VersionEdit),
    /// Finished.
    Done,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Stage {
    Start,
    Level {
        level: usize,
        to_base: bool,
        begin: Option<InternalKey>,
    },
    Bottommost {
        level: usize,
        begin: Option<InternalKey>,
    },
    Refit {
        level: usize,
    },
    Done,
}

/// The plan of one `compact_range(begin, end, options)` call (RocksDB's
/// `CompactRangeInternal` for leveled compaction), driven by the engine:
///
/// 1. find the first level with files overlapping the range;
/// 2. compact it into the next level (L0 into the base level with dynamic
///    targets), one `max_compaction_bytes`-sized round at a time, then the
///    next level, until the output is the last level (dynamic targets) or
///    the last non-empty level (static);
/// 3. rewrite the last level per `bottommost_level_compaction`;
/// 4. with `change_level`, move the final level's files to `target_level`.
///
/// Each call to [`next`](Self::next) looks at the current version and
/// returns the next compaction to run; a conflict with a running
/// compaction is an error after which `next` may simply be called again.
///
/// ```
/// use lithify_compaction_leveled::{CompactRangeOptions, CompactionsInProgress, LeveledOptions, LeveledPicker, ManualCompaction, ManualStep, PickContext};
/// use lithify_version::Version;
///
/// let picker = LeveledPicker::new(LeveledOptions::default()).unwrap();
/// let v = Version::from_text("
/// L0:
///   000005:[a#20,SET-c#20,SET] size=1K
/// L6:
///   000003:[a#1,SET-z#1,SET] size=1M
/// ").unwrap();
/// let running = CompactionsInProgress::new();
/// let ctx = PickContext::new(&running);
/// let mut manual = ManualCompaction::new(None, None, CompactRangeOptions::default(), 6);
/// match manual.next(&picker, &v, &ctx).unwrap() {
///     ManualStep::Compact(c) => assert_eq!((c.start_level(), c.output_level), (0, 6)),
///     other => panic!("{other:?}"),
/// }
/// ```
#[derive(Debug, Clone)]
pub struct ManualCompaction {
    begin: Option<Vec<u8>>,
    end: Option<Vec<u8>>,
    options: CompactRangeOptions,
    next_file_number: u64,
    stage: Stage,
}

impl ManualCompaction {
    /// A plan for the user-key range `[begin, end]`; `next_file_number` is
    /// the version set's next file number when the call starts (files at or
    /// above it were written by this compaction).
    pub fn new(
        begin: Option<Vec<u8>>,
        end: Option<Vec<u8>>,
        options: CompactRangeOptions,
        next_file_number: u64,
    ) -> Self {
        ManualCompaction {
            begin,
            end,
            options,
            next_file_number,
            stage: Stage::Start,
        }
    }

    /// Whether everything is done.
    pub fn is_done(&self) -> bool {
        self.stage == Stage::Done
    }

    /// The options.
    pub fn options(&self) -> &CompactRangeOptions {
        &self.options
    }

    fn begin_key(&self) -> Option<InternalKey> {
        self.begin.as_deref().map(seek_key)
    }

    /// The next thing to do given the current `version`.
    pub fn next(
        &mut self,
        picker: &dyn CompactionPicker,
        version: &Version,
        ctx: &PickContext<'_>,
    ) -> Result<ManualStep> {
        let has_filter = ctx.has_compaction_filter;
        loop {
            match self.stage.clone() {
                Stage::Start => {
                    let cmp = version.comparator();
                    let num_non_empty = version.bottommost_level().map_or(0, |l| l + 1);
                    let first =
                        (0..num_non_empty).find(|&level| {
                            version.files(level).iter().any(|f| {
                                let after_begin = self.begin.as_deref().is_none_or(|b| {
                                    cmp.compare_user(f.largest_user_key(), b).is_ge()
                                });
                                let before_end = self.end.as_deref().is_none_or(|e| {
                                    cmp.compare_user(f.smallest_user_key(), e).is_le()
                                });
                                after_begin && before_end
                            })
                        });
                    self.stage = match first {
                        None => Stage::Done,
                        Some(level) => self.after_reaching(picker, version, level, has_filter),
                    };
                }
                Stage::Level {
                    level,
                    to_base,
                    begin,
                } => {
                    let request = ManualRequest {
                        input_level: level,
                        output: if to_base {
                            ManualOutput::BaseLevel
                        } else {
                            ManualOutput::Level(level + 1)
                        },
                        begin,
                        end: self.end.clone(),
                        max_file_num_to_ignore: u64::MAX,
                        bottommost_level_compaction: self.options.bottommost_level_compaction,
                        max_subcompactions: self.options.max_subcompactions,
                    };
                    let output = match request.output {
                        ManualOutput::BaseLevel => picker.base_level(version),
                        ManualOutput::Level(l) => l,
                    };
                    match picker.pick_manual(version, ctx, &request)? {
                        Some(pick) => {
                            self.stage = match pick.next_begin {
                                Some(next) => Stage::Level {
                                    level,
                                    to_base,
                                    begin: Some(next),
                                },
                                None => self.after_reaching(
                                    picker,
                                    version,
                                    pick.compaction.output_level,
                                    has_filter,
                                ),
                            };
                            return Ok(ManualStep::Compact(pick.compaction));
                        }
                        None => {
                            self.stage = self.after_reaching(picker, version, output, has_filter);
                        }
                    }
                }
                Stage::Bottommost { level, begin } => {
                    let request = ManualRequest {
                        input_level: level,
                        output: ManualOutput::Level(level),
                        begin,
                        end: self.end.clone(),
                        max_file_num_to_ignore: self.next_file_number,
                        bottommost_level_compaction: self.options.bottommost_level_compaction,
                        max_subcompactions: self.options.max_subcompactions,
                    };
                    match picker.pick_manual(version, ctx, &request)? {
                        Some(pick) => {
                            self.stage = match pick.next_begin {
                                Some(next) => Stage::Bottommost {
                                    level,
                                    begin: Some(next),
                                },
                                None => Stage::Refit { level },
                            };
                            return Ok(ManualStep::Compact(pick.compaction));
                        }
                        None => self.stage = Stage::Refit { level },
                    }
                }
                Stage::Refit { level } => {
                    if self.options.change_level {
                        let edit =
                            picker.refit_level(version, ctx, level, self.options.target_level)?;
                        self.stage = Stage::Done;
                        if !edit.is_empty() {
                            return Ok(ManualStep::Refit(edit));
                        }
                    }
                    self.stage = Stage::Done;
                }
                Stage::Done => return Ok(ManualStep::Done),
            }
        }
    }

    /// The stage once `level` is the current output: compact it further
    /// down, rewrite it as the last level, or finish.
    fn after_reaching(
        &self,
        picker: &dyn CompactionPicker,
        version: &Version,
        level: usize,
        has_filter: bool,
    ) -> Stage {
        let dynamic = picker.manual_to_last_level();
        let stop = if level == 0 {
            false
        } else if dynamic {
            level + 1 >= version.num_levels()
        } else {
            let num_non_empty = version.bottommost_level().map_or(0, |l| l + 1);
            level + 1 >= num_non_empty
        };
        if !stop {
            return Stage::Level {
                level,
                to_base: dynamic && level == 0,
                begin: self.begin_key(),
            };
        }
        let rewrite = match self.options.bottommost_level_compaction {
            BottommostLevelCompaction::Skip => false,
            BottommostLevelCompaction::IfHaveCompactionFilter => has_filter,
            BottommostLevelCompaction::Force | BottommostLevelCompaction::ForceOptimized => true,
        };
        if rewrite {
            Stage::Bottommost {
                level,
                begin: self.begin_key(),
            }
        } else {
            Stage::Refit { level }
        }
    }
}

/// The edit of RocksDB's `ReFitLevel`: move every file of `level` to
/// `target` (or, with `None`, to the smallest level above it such that it
/// and every level down to `level` are empty and its target holds the
/// files). Moving out of L0 is refused, as is moving more than one file
/// into L0; the levels crossed must be empty and not be the output of a
/// running compaction over the same range. An empty edit means there is
/// nothing to move.
pub fn refit_level(
    version: &Version,
    picker: &LeveledPicker,
    ctx: &PickContext<'_>,
    level: usize,
    target: Option<usize>,
) -> Result<VersionEdit> {
    let mut edit = VersionEdit::new(version.table());
    let files = version.files(level);
    if files.is_empty() {
        return Ok(edit);
    }
    let targets = picker.targets(version);
    let to = match target {
        Some(t) => t,
        None => {
            let mut minimum = level;
            let mut i = level;
            while i > 1 {
                i -= 1;
                if version.num_files(i) > 0 || targets.target(i) < version.level_bytes(level) {
                    break;
                }
                minimum = i;
            }
            minimum
        }
    };
    if to >= version.num_levels() {
        return InvalidArgumentSnafu {
            message: format!("target level {to} does not exist"),
        }
        .fail();
    }
    if to == level {
        return Ok(edit);
    }
    let cmp = version.comparator();
    let lo = files[0].smallest.user_key().to_vec();
    let hi = files[files.len() - 1].largest.user_key().to_vec();
    let crossed: Vec<usize> = if to > level {
        if level == 0 {
            return InvalidArgumentSnafu {
                message: "cannot change from level 0 to other levels".to_owned(),
            }
            .fail();
        }
        (level + 1..=to).collect()
    } else {
        if to == 0 && files.len() > 1 {
            return InvalidArgumentSnafu {
                message:
                    "moving more than one file from L1+ to L0 brings no benefit and is not allowed"
                        .to_owned(),
            }
            .fail();
        }
        (to..level).collect()
    };
    for l in crossed {
        if version.num_files(l) > 0 {
            return InvalidArgumentSnafu {
                message: format!("levels between L{level} and L{to} are not empty for a move"),
            }
            .fail();
        }
        if ctx.in_progress.output_range_conflicts(cmp, l, &lo, &hi) {
            return ConflictSnafu {
                message: format!(
                    "a running compaction writes into L{l}, between L{level} and L{to}"
                ),
            }
            .fail();
        }
    }
    for f in files {
        edit.delete_file(level, f.number);
        edit.add_file(to, (**f).clone());
    }
    Ok(edit)
}

/// Options of `compact_files` (RocksDB's `CompactionOptions`).
#[derive(Debug, Clone, PartialEq)]
pub struct CompactFilesOptions {
    /// Output files are cut at this size (default: never, one file).
    pub output_file_size_limit: u64,
    /// Overrides `max_subcompactions` when nonzero.
    pub max_subcompactions: usize,
    /// Let the job be a trivial move when it qualifies (default false).
    pub allow_trivial_move: bool,
    /// Overrides the output compression.
    pub compression: Option<Compression>,
}

impl Default for CompactFilesOptions {
    fn default() -> Self {
        CompactFilesOptions {
            output_file_size_limit: u64::MAX,
            max_subcompactions: 0,
            allow_trivial_move: false,
            compression: None,
        }
    }
}

/// RocksDB's `SanitizeCompactionInputFiles`: the full input set for
/// compacting `files` into `output_level`. In each L1+ level every file
/// between the first and last named ones is added, extended over
/// neighbours sharing a boundary user key; naming an L0 file (with output
/// above L0) adds every older L0 file; every file of levels
/// `max(l, 1)..=output_level` overlapping the accumulated range is added.
///
/// Errors: `InvalidArgument` for an unknown file, an output level that
/// does not exist or lies above an input; `Conflict` if a needed file is
/// being compacted or a running compaction writes the same range of the
/// output level.
pub fn sanitize_compact_files(
    version: &Version,
    ctx: &PickContext<'_>,
    files: &[u64],
    output_level: usize,
) -> Result<Vec<CompactionInputs>> {
    if output_level >= version.num_levels() {
        return InvalidArgumentSnafu {
            message: format!(
                "output level must be in [0, {}], not {output_level}",
                version.num_levels() - 1
            ),
        }
        .fail();
    }
    if files.is_empty() {
        return InvalidArgumentSnafu {
            message: "a compaction must contain at least one file".to_owned(),
        }
        .fail();
    }
    let cmp = version.comparator();
    let mut set: BTreeSet<u64> = files.iter().copied().collect();
    let mut range: Option<(Vec<u8>, Vec<u8>)> = None;
    let widen = |range: &mut Option<(Vec<u8>, Vec<u8>)>, lo: &[u8], hi: &[u8]| match range {
        None => *range = Some((lo.to_vec(), hi.to_vec())),
        Some((l, h)) => {
            if cmp.compare_user(lo, l).is_lt() {
                *l = lo.to_vec();
            }
            if cmp.compare_user(hi, h).is_gt() {
                *h = hi.to_vec();
            }
        }
    };
    for level in 0..=output_level {
        let level_files = version.files(level);
        let named: Vec<usize> = level_files
            .iter()
            .enumerate()
            .filter(|(_, f)| set.contains(&f.number))
            .map(|(i, _)| i)
            .collect();
        if let (Some(&first), Some(&last)) = (named.first(), named.last()) {
            if range.is_none() {
                let f = &level_files[first];
                range = Some((
                    f.smallest_user_key().to_vec(),
                    f.largest_user_key().to_vec(),
                ));
            }
            let (mut first, mut last) = (first, last);
            if level != 0 {
                while first > 0
                    && cmp
                        .compare_user(
                            level_files[first - 1].largest_user_key(),
                            level_files[first].smallest_user_key(),
                        )
                        .is_ge()
                {
                    first -= 1;
                }
                while last + 1 < level_files.len()
                    && cmp
                        .compare_user(
                            level_files[last + 1].smallest_user_key(),
                            level_files[last].largest_user_key(),
                        )
                        .is_le()
                {
                    last += 1;
                }
            } else if output_level > 0 {
                last = level_files.len() - 1;
            }
            for f in &level_files[first..=last] {
                if ctx.in_progress.is_being_compacted(f.number) {
                    return ConflictSnafu {
                        message: format!(
                            "necessary compaction input file {:06} is being compacted",
                            f.number
                        ),
                    }
                    .fail();
                }
                set.insert(f.number);
                widen(&mut range, f.smallest_user_key(), f.largest_user_key());
            }
            // Every file of this and the lower levels overlapping the range.
            let Some((lo, hi)) = range.clone() else {
                continue;
            };
            for m in level.max(1)..=output_level {
                for f in version.overlapping_files(m, Some(&lo), Some(&hi)) {
                    if ctx.in_progress.is_being_compacted(f.number) {
                        return ConflictSnafu {
                            message: format!(
                                "file {:06}, which overlaps an input, is being compacted",
                                f.number
                            ),
                        }
                        .fail();
                    }
                    set.insert(f.number);
                }
            }
        }
    }
    if let Some((lo, hi)) = &range
        && ctx
            .in_progress
            .output_range_conflicts(cmp, output_level, lo, hi)
    {
        return ConflictSnafu {
            message:
                "a running compaction writes to the same output level in an overlapping key range"
                    .to_owned(),
        }
        .fail();
    }
    let mut inputs: Vec<CompactionInputs> = Vec::new();
    for number in &set {
        let found = version.all_files().find(|(_, f)| f.number == *number);
        let Some((level, _)) = found else {
            return InvalidArgumentSnafu {
                message: format!("compaction input file {number:06} does not exist"),
            }
            .fail();
        };
        if ctx.in_progress.is_being_compacted(*number) {
            return ConflictSnafu {
                message: format!("compaction input file {number:06} is already being compacted"),
            }
            .fail();
        }
        if level > output_level {
            return InvalidArgumentSnafu {
                message: format!(
                    "cannot compact file {number:06} of L{level} up to L{output_level}"
                ),
            }
            .fail();
        }
    }
    for level in 0..=output_level {
        let files: Vec<Arc<FileMetadata>> = version
            .files(level)
            .iter()
            .filter(|f| set.contains(&f.number))
            .cloned()
            .collect();
        if !files.is_empty() {
            inputs.push(CompactionInputs { level, files });
        }
    }
    Ok(inputs)
}

impl LeveledPicker {
    /// The compaction of RocksDB's `CompactFiles`: the sanitized inputs of
    /// `files` written to `output_level`, no grandparents, outputs cut at
    /// `options.output_file_size_limit`.
    pub fn compact_files(
        &self,
        version: &Version,
        ctx: &PickContext<'_>,
        files: &[u64],
        output_level: usize,
        options: &CompactFilesOptions,
    ) -> Result<Compaction> {
        let inputs = sanitize_compact_files(version, ctx, files, output_level)?;
        let targets = self.targets(version);
        let mut c = self.build_compaction(
            version,
            ctx,
            &targets,
            CompactionReason::CompactFiles,
            inputs,
            output_level,
            Vec::new(),
            0.0,
            true,
            false,
        );
        c.target_output_file_size = options.output_file_size_limit;
        c.max_output_file_size = options.output_file_size_limit;
        c.trivial_move &= options.allow_trivial_move;
        if options.max_subcompactions > 0 {
            c.max_subcompactions = options.max_subcompactions;
        }
        if let Some(compression) = options.compression {
            c.compression = compression;
        }
        Ok(c)
    }
}
