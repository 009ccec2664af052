//! Manual compaction for any strategy: the `compact_range` plan stepped
//! level by level through a picker's `pick_manual` and `refit_level`
//! (RocksDB's `DBImpl::CompactRangeInternal`), its options, and
//! `compact_files` input sanitisation (`SanitizeCompactionInputFiles`).
//! What the leveled picker answers is in `leveled/manual.rs`.

use std::collections::BTreeSet;
use std::sync::Arc;

use lithify_base::{InternalKey, MAX_SEQNO};
use lithify_sstable::Compression;
use lithify_version::{FileMetadata, Version, VersionEdit};

use super::{CompactionPicker, PickContext};
use crate::compaction::{Compaction, CompactionInputs};
use crate::error::{ConflictSnafu, InvalidArgumentSnafu, Result};

/// What `compact_range` does with the last level once the range has
/// reached it (RocksDB's `BottommostLevelCompaction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
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
#[non_exhaustive]
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

lithify_base::options_builder!(CompactRangeOptions {
    exclusive_manual_compaction: bool,
    change_level: bool,
    target_level: Option<usize>,
    bottommost_level_compaction: BottommostLevelCompaction,
    max_subcompactions: usize,
});

/// Where one manual step writes.
///
/// Exhaustive on purpose: an output is a level or the base level, and
/// the drivers that place files must handle every case.
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

/// What a manual compaction wants done next.
///
/// Exhaustive on purpose: whoever drives a plan must handle every step.
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
/// use lithify_compaction::{CompactRangeOptions, CompactionsInProgress, ManualCompaction, ManualStep, PickContext};
/// use lithify_compaction_leveled::{LeveledOptions, LeveledPicker};
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

/// Options of `compact_files` (RocksDB's `CompactionOptions`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
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

lithify_base::options_builder!(CompactFilesOptions {
    output_file_size_limit: u64,
    max_subcompactions: usize,
    allow_trivial_move: bool,
    compression: Option<Compression>,
});

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
