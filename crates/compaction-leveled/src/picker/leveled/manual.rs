//! Leveled compaction's answers to manual requests: RocksDB's
//! `CompactionPicker::CompactRange` for one level of a `compact_range`,
//! `DBImpl::ReFitLevel` for `change_level`, and `CompactFiles`. The
//! driver that steps through a `compact_range` for any strategy is
//! [`ManualCompaction`](lithify_compaction::ManualCompaction).

use lithify_base::{InternalKey, ValueKind};
use lithify_version::{Version, VersionEdit};

use super::{LeveledPicker, two_levels};
use crate::picker::expand::{
    Files, conflicts_with_running, expand_to_clean_cut, grandparents, setup_other_inputs,
    total_size,
};
use lithify_compaction::bounds::overlapping_files;
use lithify_compaction::picker::sanitize_compact_files;
use lithify_compaction::{
    BottommostLevelCompaction, CompactFilesOptions, Compaction, CompactionReason, Error,
    ManualOutput, ManualPick, ManualRequest, PickContext, Result,
};

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
        return Err(Error::invalid_argument(format!(
            "level {input_level} does not exist"
        )));
    }
    let targets = picker.targets(version);
    let output_level = match request.output {
        ManualOutput::Level(l) => l,
        ManualOutput::BaseLevel => targets.base_level(),
    };
    if output_level >= version.num_levels() || output_level < input_level {
        return Err(Error::invalid_argument(format!(
            "cannot compact L{input_level} into L{output_level}"
        )));
    }
    let end = request.end.as_deref().map(end_key);
    let mut inputs = overlapping_files(version, input_level, request.begin.as_ref(), end.as_ref());
    if inputs.is_empty() {
        return Ok(None);
    }
    if input_level == 0 && ctx.in_progress.level0_in_progress() {
        return Err(Error::conflict(
            "only one compaction out of L0 may run at a time".to_owned(),
        ));
    }
    let mut covering_whole_range = true;
    let limit = picker.options().effective_max_compaction_bytes();
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
        return Err(Error::conflict(format!(
            "a file of L{input_level} in the range is being compacted"
        )));
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
                return Err(Error::conflict(format!(
                    "a file of L{output_level} in the range is being compacted"
                )));
            }
        };
    }
    if conflicts_with_running(
        version,
        ctx.in_progress,
        &[(input_level, &inputs), (output_level, &out)],
        output_level,
    ) {
        return Err(Error::conflict(format!(
            "a running compaction writes the same key range of L{output_level}"
        )));
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
        return Err(Error::invalid_argument(format!(
            "target level {to} does not exist"
        )));
    }
    if to == level {
        return Ok(edit);
    }
    let cmp = version.comparator();
    let lo = files[0].smallest.user_key().to_vec();
    let hi = files[files.len() - 1].largest.user_key().to_vec();
    let crossed: Vec<usize> = if to > level {
        if level == 0 {
            return Err(Error::invalid_argument(
                "cannot change from level 0 to other levels".to_owned(),
            ));
        }
        (level + 1..=to).collect()
    } else {
        if to == 0 && files.len() > 1 {
            return Err(Error::invalid_argument(
                "moving more than one file from L1+ to L0 brings no benefit and is not allowed",
            ));
        }
        (to..level).collect()
    };
    for l in crossed {
        if version.num_files(l) > 0 {
            return Err(Error::invalid_argument(format!(
                "levels between L{level} and L{to} are not empty for a move"
            )));
        }
        if ctx.in_progress.output_range_conflicts(cmp, l, &lo, &hi) {
            return Err(Error::conflict(format!(
                "a running compaction writes into L{l}, between L{level} and L{to}"
            )));
        }
    }
    for f in files {
        edit.delete_file(level, f.number);
        edit.add_file(to, (**f).clone());
    }
    Ok(edit)
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
