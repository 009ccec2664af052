//! RocksDB's leveled compaction picker (`LevelCompactionPicker` and
//! `LevelCompactionBuilder`, `db/compaction/compaction_picker_level.cc`).

mod manual;

use std::sync::Arc;

use lithify_version::{FileMetadata, Version, VersionEdit};

use manual::pick_compact_range;
pub use manual::refit_level;

use super::expand::{
    Files, conflicts_with_running, expand_to_clean_cut, grandparents, setup_other_inputs,
    total_size,
};
use super::file_order::files_by_compaction_pri;
use super::l0::{cost_based_intra_l0, l0_trivial_move, size_based_intra_l0};
use super::marked::MarkedFiles;
use crate::options::LeveledOptions;
use crate::score::{CompensatedSizes, Scores, estimated_compaction_needed_bytes};
use crate::targets::LevelTargets;
use lithify_compaction::bounds::{key_range, overlapping_files};
use lithify_compaction::{
    Compaction, CompactionInputs, CompactionPicker, CompactionPri, CompactionReason, LevelScore,
    ManualPick, ManualRequest, PickContext, Result, forced_blob_gc_files,
};

/// RocksDB's `kMaxMultiTrivialMove`.
const MAX_MULTI_TRIVIAL_MOVE: usize = 4;

/// The leveled picker. See the crate documentation for the rules and
/// their order.
#[derive(Debug, Clone)]
pub struct LeveledPicker {
    opts: LeveledOptions,
}

impl LeveledPicker {
    /// A picker with `opts` (sanitized).
    pub fn new(opts: LeveledOptions) -> Result<Self> {
        Ok(LeveledPicker {
            opts: opts.sanitize()?,
        })
    }

    /// The options.
    pub fn options(&self) -> &LeveledOptions {
        &self.opts
    }

    /// The level targets of `version`.
    pub fn targets(&self, version: &Version) -> LevelTargets {
        LevelTargets::compute(version.all_level_bytes(), &self.opts)
    }

    /// The scores of `version` in RocksDB's order.
    pub fn scores(&self, version: &Version, ctx: &PickContext<'_>) -> Scores {
        let targets = self.targets(version);
        Scores::compute(
            version,
            &self.opts,
            &targets,
            ctx.in_progress,
            &CompensatedSizes::compute(version),
        )
    }

    /// Builds the compaction description for inputs picked by any rule
    /// (RocksDB's `GetCompaction` plus the `Compaction` constructor):
    /// output file sizes, compression, bottommost and trivial-move
    /// decisions, deeper files, round-robin cursors.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn build_compaction(
        &self,
        version: &Version,
        ctx: &PickContext<'_>,
        targets: &LevelTargets,
        reason: CompactionReason,
        inputs: Vec<CompactionInputs>,
        output_level: usize,
        grandparents: Files,
        score: f64,
        manual: bool,
        l0_trivial_move: bool,
    ) -> Compaction {
        let cmp = version.comparator();
        let start_level = inputs[0].level;
        let l0_might_overlap =
            start_level == 0 && !l0_trivial_move && (inputs.len() > 1 || inputs[0].files.len() > 1);
        let num_non_empty = version.bottommost_level().map_or(0, |l| l + 1);
        let base = targets.base_level();
        let target_size = targets.target_file_size(output_level);

        let mut c = Compaction {
            table: version.table(),
            reason,
            inputs,
            output_level,
            grandparents,
            target_output_file_size: target_size,
            max_output_file_size: target_size,
            max_compaction_bytes: self.opts.effective_max_compaction_bytes(),
            compression: self
                .opts
                .compression_for_level(output_level, base, num_non_empty),
            score,
            manual,
            bottommost: false,
            trivial_move: false,
            max_subcompactions: self.opts.max_subcompactions,
            dynamic_file_size: self.opts.level_compaction_dynamic_file_size,
            deeper_files: Vec::new(),
            new_compact_cursor: None,
            output_split_key: None,
            ttl_cut_files: Vec::new(),
            output_boundaries: Vec::new(),
            reuse_untouched_files: false,
            memtable_range: None,
        };
        let (lo, hi) = c.user_key_range(cmp);
        c.bottommost = is_bottommost(version, &c, &lo, &hi);
        if !c.bottommost
            && self.opts.level_compaction_dynamic_file_size
            && !c.grandparents.is_empty()
        {
            c.max_output_file_size = target_size.saturating_mul(2);
        }
        c.deeper_files = (output_level + 1..version.num_levels())
            .map(|l| version.overlapping_files(l, Some(&lo), Some(&hi)))
            .collect();
        c.trivial_move =
            self.is_trivial_move(version, ctx, &c, l0_might_overlap, base, num_non_empty);
        if self.opts.compaction_pri == CompactionPri::MinOverlappingRatio
            && self.opts.ttl > 0
            && c.inputs.len() >= 2
            && !c.bottommost
            && ctx.now >= self.opts.ttl
        {
            let old = ctx.now - self.opts.ttl / 2;
            let last = c.inputs.len() - 1;
            c.ttl_cut_files = c.inputs[last]
                .files
                .iter()
                .filter(|f| {
                    f.oldest_ancestor_time < old && f.size > self.opts.target_file_size_base / 2
                })
                .cloned()
                .collect();
        }
        if self.opts.compaction_pri == CompactionPri::RoundRobin && start_level > 0 {
            let order = files_by_compaction_pri(
                version,
                start_level,
                CompactionPri::RoundRobin,
                &CompensatedSizes::default(),
                ctx.marked_files,
                ctx.now,
                self.opts.ttl,
            );
            if !order.is_empty() {
                let mut idx = c.inputs[0].files.len();
                if idx >= order.len() {
                    idx = 0;
                }
                c.new_compact_cursor = Some((
                    start_level,
                    version.files(start_level)[order[idx]].smallest.clone(),
                ));
            }
            if let Some(cursor) = version.compact_cursor(output_level)
                && cmp.compare_user(cursor.user_key(), &lo).is_gt()
                && cmp.compare_user(cursor.user_key(), &hi).is_le()
            {
                c.output_split_key = Some(cursor.clone());
            }
        }
        c
    }

    /// RocksDB's `Compaction::IsTrivialMove`.
    fn is_trivial_move(
        &self,
        version: &Version,
        ctx: &PickContext<'_>,
        c: &Compaction,
        l0_might_overlap: bool,
        base_level: usize,
        num_non_empty: usize,
    ) -> bool {
        let start = c.start_level();
        if start == 0 && l0_might_overlap {
            return false;
        }
        if c.manual && ctx.has_compaction_filter {
            return false;
        }
        if start == c.output_level || c.inputs.len() != 1 {
            return false;
        }
        if self
            .opts
            .compression_for_level(start, base_level, num_non_empty)
            != c.compression
        {
            return false;
        }
        if c.output_level + 1 < version.num_levels() {
            for f in &c.inputs[0].files {
                let below = overlapping_files(
                    version,
                    c.output_level + 1,
                    Some(&f.smallest),
                    Some(&f.largest),
                );
                if f.size + total_size(&below) > c.max_compaction_bytes {
                    return false;
                }
            }
        }
        true
    }
}

/// The inputs of a two-level compaction (the output level's entry only
/// when it has files).
pub(crate) fn two_levels(
    start_level: usize,
    start: Files,
    output_level: usize,
    out: Files,
) -> Vec<CompactionInputs> {
    let mut inputs = vec![CompactionInputs {
        level: start_level,
        files: start,
    }];
    if !out.is_empty() && output_level != start_level {
        inputs.push(CompactionInputs {
            level: output_level,
            files: out,
        });
    }
    inputs
}

/// RocksDB's `Compaction::IsBottommostLevel`: nothing below the output
/// level overlaps the compaction's user-key range. For an output to L0 the
/// inputs must include the oldest L0 file and every deeper level must be
/// empty.
fn is_bottommost(version: &Version, c: &Compaction, lo: &[u8], hi: &[u8]) -> bool {
    let output = c.output_level;
    if output == 0 {
        let l0 = version.files(0);
        let oldest_taken = c.inputs[0]
            .files
            .iter()
            .any(|f| l0.last().is_some_and(|last| last.number == f.number));
        if !oldest_taken {
            return false;
        }
        return (1..version.num_levels()).all(|l| version.num_files(l) == 0);
    }
    (output + 1..version.num_levels())
        .all(|l| version.overlapping_files(l, Some(lo), Some(hi)).is_empty())
}

/// Whether files of `level` go to the next level (`Yes`), stay
/// (`No`), or go to the next level except in the last non-empty level,
/// which is skipped (`SkipLastLevel`) — RocksDB's `CompactToNextLevel`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NextLevel {
    No,
    Yes,
    SkipLastLevel,
}

/// The state of one pick (RocksDB's `LevelCompactionBuilder`).
struct Builder<'a> {
    picker: &'a LeveledPicker,
    version: &'a Version,
    ctx: &'a PickContext<'a>,
    targets: LevelTargets,
    compensated: CompensatedSizes,
    scores: Scores,
    start_level: usize,
    output_level: usize,
    start: Files,
    reason: CompactionReason,
    score: f64,
    l0_trivial_move: bool,
}

impl<'a> Builder<'a> {
    fn new(picker: &'a LeveledPicker, version: &'a Version, ctx: &'a PickContext<'a>) -> Self {
        let targets = picker.targets(version);
        let compensated = CompensatedSizes::compute(version);
        let scores = Scores::compute(
            version,
            &picker.opts,
            &targets,
            ctx.in_progress,
            &compensated,
        );
        Builder {
            picker,
            version,
            ctx,
            targets,
            compensated,
            scores,
            start_level: 0,
            output_level: 0,
            start: Vec::new(),
            reason: CompactionReason::LevelMaxLevelSize,
            score: 0.0,
            l0_trivial_move: false,
        }
    }

    fn opts(&self) -> &LeveledOptions {
        &self.picker.opts
    }

    fn busy(&self, f: &FileMetadata) -> bool {
        self.ctx.in_progress.is_being_compacted(f.number)
    }

    fn num_non_empty_levels(&self) -> usize {
        self.version.bottommost_level().map_or(0, |l| l + 1)
    }

    fn pick(mut self) -> Option<Compaction> {
        self.setup_initial_files();
        if self.start.is_empty() {
            return None;
        }
        // L0 -> base: every L0 file transitively overlapping the seed.
        if self.start_level == 0 && self.output_level != 0 && !self.l0_trivial_move {
            let cmp = self.version.comparator();
            let (lo, hi) = key_range(cmp, 0, &self.start);
            self.start = overlapping_files(self.version, 0, Some(&lo), Some(&hi));
            let (lo, hi) = key_range(cmp, 0, &self.start);
            let base_files =
                overlapping_files(self.version, self.output_level, Some(&lo), Some(&hi));
            if self.ctx.in_progress.any_being_compacted(&base_files) {
                return None;
            }
        }
        let mut out = Vec::new();
        let mut gp = Vec::new();
        if self.output_level != 0 {
            let round_robin_expanding = self.opts().compaction_pri == CompactionPri::RoundRobin
                && self.reason == CompactionReason::LevelMaxLevelSize;
            if round_robin_expanding {
                self.round_robin_expansion();
            }
            if !self.l0_trivial_move {
                let max_compaction_bytes = self.opts().effective_max_compaction_bytes();
                out = setup_other_inputs(
                    self.version,
                    self.ctx.in_progress,
                    self.start_level,
                    &mut self.start,
                    self.output_level,
                    max_compaction_bytes,
                    round_robin_expanding,
                )?;
            }
            if conflicts_with_running(
                self.version,
                self.ctx.in_progress,
                &[(self.start_level, &self.start), (self.output_level, &out)],
                self.output_level,
            ) {
                return None;
            }
            if !self.l0_trivial_move {
                gp = grandparents(
                    self.version,
                    self.start_level,
                    &self.start,
                    self.output_level,
                    &out,
                );
            }
        }
        Some(self.picker.build_compaction(
            self.version,
            self.ctx,
            &self.targets,
            self.reason,
            two_levels(self.start_level, self.start, self.output_level, out),
            self.output_level,
            gp,
            self.score,
            false,
            self.l0_trivial_move,
        ))
    }

    /// RocksDB's `SetupInitialFiles`: by score, then marked, bottommost,
    /// TTL and periodic files.
    fn setup_initial_files(&mut self) {
        let base = self.targets.base_level();
        let mut skipped_l0_to_base = false;
        let sorted: Vec<LevelScore> = self.scores.sorted().to_vec();
        for s in sorted {
            if s.score < 1.0 {
                break;
            }
            if skipped_l0_to_base && s.level == base {
                // A pending L0 -> base compaction must not starve.
                continue;
            }
            self.start_level = s.level;
            self.score = s.score;
            self.output_level = if s.level == 0 { base } else { s.level + 1 };
            if self.pick_file_to_compact() {
                self.reason = if s.level == 0 {
                    CompactionReason::LevelL0FilesNum
                } else {
                    CompactionReason::LevelMaxLevelSize
                };
                return;
            }
            self.start.clear();
            if s.level == 0 {
                skipped_l0_to_base = true;
                if let Some(files) = cost_based_intra_l0(
                    self.version,
                    self.ctx.in_progress,
                    self.opts().level0_file_num_compaction_trigger,
                    self.opts().effective_max_compaction_bytes(),
                ) {
                    self.start = files;
                    self.output_level = 0;
                    self.reason = CompactionReason::LevelL0FilesNum;
                    return;
                }
            }
        }
        self.score = 0.0;
        let marked = MarkedFiles::compute(self.version, self.opts(), self.ctx);
        if !marked.any() {
            self.pick_forced_blob_gc();
            return;
        }
        if self.pick_from_list(&marked.marked, NextLevel::Yes, true) {
            self.reason = CompactionReason::FilesMarkedForCompaction;
            return;
        }
        if self.pick_from_list(&marked.bottommost, NextLevel::No, false) {
            self.reason = CompactionReason::BottommostFiles;
            return;
        }
        if self.opts().compaction_pri == CompactionPri::RoundRobin
            && let Some((level, _)) = marked.expired_ttl.first()
            && *level > 0
        {
            self.start_level = *level;
            self.output_level = level + 1;
            if self.pick_file_to_compact() {
                self.reason = CompactionReason::RoundRobinTtl;
                return;
            }
            self.start.clear();
        }
        if self.pick_from_list(&marked.expired_ttl, NextLevel::SkipLastLevel, false) {
            self.reason = CompactionReason::Ttl;
            return;
        }
        let periodic_next = if self.opts().level_compaction_dynamic_level_bytes {
            NextLevel::Yes
        } else {
            NextLevel::No
        };
        if self.pick_from_list(&marked.periodic, periodic_next, false) {
            self.reason = CompactionReason::PeriodicCompaction;
            return;
        }
        self.pick_forced_blob_gc();
    }

    /// Last in RocksDB's order: an SST that pins the oldest blob file when
    /// the oldest blob files are mostly garbage, rewritten at its level
    /// (`PickFileToCompact(files_marked_for_forced_blob_gc, false)`).
    fn pick_forced_blob_gc(&mut self) {
        let Some(policy) = self.ctx.blob_gc else {
            return;
        };
        let due = forced_blob_gc_files(self.version, policy, self.ctx.in_progress);
        if self.pick_from_list(&due, NextLevel::No, false) {
            self.reason = CompactionReason::ForcedBlobGc;
        }
    }

    /// Picks the first eligible file of a list (RocksDB's
    /// `PickFileToCompact(level_files, compact_to_next_level)` and, with
    /// `marked_rule`, `PickFilesMarkedForCompaction`, whose output is always
    /// the next level).
    fn pick_from_list(
        &mut self,
        list: &[(usize, Arc<FileMetadata>)],
        next: NextLevel,
        marked_rule: bool,
    ) -> bool {
        let last_non_empty = self.num_non_empty_levels().saturating_sub(1);
        let base = self.targets.base_level();
        for (level, f) in list {
            let level = *level;
            if next == NextLevel::SkipLastLevel && level == last_non_empty {
                continue;
            }
            if level == 0 && self.ctx.in_progress.level0_in_progress() {
                continue;
            }
            self.start_level = level;
            let to_next = marked_rule || (next != NextLevel::No && level < last_non_empty);
            self.output_level = if !to_next {
                level
            } else if level == 0 {
                base
            } else {
                level + 1
            };
            self.start = vec![f.clone()];
            if expand_to_clean_cut(self.version, self.ctx.in_progress, level, &mut self.start) {
                return true;
            }
        }
        self.start.clear();
        false
    }

    /// RocksDB's `PickFileToCompact()` for a size-triggered level.
    fn pick_file_to_compact(&mut self) -> bool {
        let level = self.start_level;
        let in_progress = self.ctx.in_progress;
        if level == 0 && in_progress.level0_in_progress() {
            return self.try_size_based_intra_l0();
        }
        self.start.clear();
        if level == 0
            && self.opts().compression_per_level.is_empty()
            && let Some(files) = l0_trivial_move(self.version, self.output_level)
        {
            self.start = files;
            self.l0_trivial_move = true;
            return true;
        }
        if level == 0 && self.try_size_based_intra_l0() {
            return true;
        }
        let round_robin = self.opts().compaction_pri == CompactionPri::RoundRobin;
        let order = files_by_compaction_pri(
            self.version,
            level,
            self.opts().compaction_pri,
            &self.compensated,
            self.ctx.marked_files,
            self.ctx.now,
            self.opts().ttl,
        );
        let files = self.version.files(level);
        for idx in order {
            let f = &files[idx];
            if self.busy(f) {
                if round_robin {
                    return false;
                }
                continue;
            }
            self.start = vec![f.clone()];
            if !expand_to_clean_cut(self.version, in_progress, level, &mut self.start)
                || conflicts_with_running(
                    self.version,
                    in_progress,
                    &[(level, &self.start)],
                    self.output_level,
                )
            {
                self.start.clear();
                if round_robin {
                    return false;
                }
                continue;
            }
            let (lo, hi) = key_range(self.version.comparator(), level, &self.start);
            let mut out = overlapping_files(self.version, self.output_level, Some(&lo), Some(&hi));
            if out.is_empty() {
                if level > 0 {
                    self.try_extend_non_l0_trivial_move(idx, round_robin);
                }
            } else if !expand_to_clean_cut(self.version, in_progress, self.output_level, &mut out) {
                self.start.clear();
                if round_robin {
                    return false;
                }
                continue;
            }
            return true;
        }
        false
    }

    fn try_size_based_intra_l0(&mut self) -> bool {
        match size_based_intra_l0(
            self.version,
            self.ctx.in_progress,
            &self.compensated,
            self.targets.base_level(),
            self.opts().level0_file_num_compaction_trigger,
            self.opts().max_bytes_for_level_multiplier,
        ) {
            Some(files) => {
                self.start = files;
                self.output_level = 0;
                true
            }
            None => false,
        }
    }

    /// RocksDB's `TryExtendNonL0TrivialMove`: grow a single file with no
    /// output-level overlap to up to 4 neighbours that keep the move
    /// trivial.
    fn try_extend_non_l0_trivial_move(&mut self, index: usize, only_right: bool) -> bool {
        if self.start.len() != 1 || !self.opts().compression_per_level.is_empty() {
            return false;
        }
        let cmp = self.version.comparator();
        let files = self.version.files(self.start_level);
        let initial = self.start[0].clone();
        let mut total = initial.size;
        let limit = self.opts().effective_max_compaction_bytes();
        let mut i = index + 1;
        while i < files.len() && self.start.len() < MAX_MULTI_TRIVIAL_MOVE {
            let next = &files[i];
            if self.busy(next)
                || !overlapping_files(
                    self.version,
                    self.output_level,
                    Some(&initial.smallest),
                    Some(&next.largest),
                )
                .is_empty()
            {
                break;
            }
            if i + 1 < files.len()
                && cmp
                    .compare_user(next.largest_user_key(), files[i + 1].smallest_user_key())
                    .is_eq()
            {
                break;
            }
            total += next.size;
            if total > limit {
                break;
            }
            self.start.push(next.clone());
            i += 1;
        }
        if !only_right {
            let mut i = index;
            while i > 0 && self.start.len() < MAX_MULTI_TRIVIAL_MOVE {
                let prev = &files[i - 1];
                if self.busy(prev)
                    || !overlapping_files(
                        self.version,
                        self.output_level,
                        Some(&prev.smallest),
                        Some(&initial.largest),
                    )
                    .is_empty()
                {
                    break;
                }
                if i > 1
                    && cmp
                        .compare_user(prev.smallest_user_key(), files[i - 2].largest_user_key())
                        .is_eq()
                {
                    break;
                }
                total += prev.size;
                if total > limit {
                    break;
                }
                self.start.insert(0, prev.clone());
                i -= 1;
            }
        }
        self.start.len() > 1
    }

    /// RocksDB's `SetupOtherFilesWithRoundRobinExpansion`: take more
    /// consecutive files after the picked one while nothing is being
    /// compacted, the compaction stays within `max_compaction_bytes`, and
    /// the level is still above its target after removing them.
    fn round_robin_expansion(&mut self) {
        let level = self.start_level;
        if level == 0 || self.start.is_empty() {
            return;
        }
        let version = self.version;
        let in_progress = self.ctx.in_progress;
        let files = version.files(level);
        let not_compacting: u64 = files.iter().filter(|f| !self.busy(f)).map(|f| f.size).sum();
        let target = self.targets.target(level);
        let max_to_compact = not_compacting.saturating_sub(target);
        let order = files_by_compaction_pri(
            version,
            level,
            CompactionPri::RoundRobin,
            &self.compensated,
            self.ctx.marked_files,
            self.ctx.now,
            self.opts().ttl,
        );
        let Some(&start_index) = order.first() else {
            return;
        };
        let (lo, hi) = key_range(version.comparator(), level, &self.start);
        if overlapping_files(version, self.output_level, Some(&lo), Some(&hi)).is_empty()
            && self.try_extend_non_l0_trivial_move(start_index, true)
        {
            return;
        }
        if self.start[0].size >= max_to_compact {
            return;
        }
        let mut tmp = self.start.clone();
        for f in &files[start_index + 1..] {
            if self.busy(f) {
                return;
            }
            tmp.push(f.clone());
            if !expand_to_clean_cut(version, in_progress, level, &mut tmp)
                || conflicts_with_running(version, in_progress, &[(level, &tmp)], self.output_level)
            {
                return;
            }
            let start_bytes = total_size(&tmp);
            let (lo, hi) = key_range(version.comparator(), level, &tmp);
            let mut out = overlapping_files(version, self.output_level, Some(&lo), Some(&hi));
            if !out.is_empty()
                && !expand_to_clean_cut(version, in_progress, self.output_level, &mut out)
            {
                return;
            }
            if start_bytes + total_size(&out) > self.opts().effective_max_compaction_bytes() {
                return;
            }
            self.start = tmp.clone();
            if start_bytes > max_to_compact {
                return;
            }
        }
    }
}

impl CompactionPicker for LeveledPicker {
    fn name(&self) -> &'static str {
        "leveled"
    }

    fn needs_compaction(&self, version: &Version, ctx: &PickContext<'_>) -> bool {
        if self.opts.disable_auto_compactions {
            return false;
        }
        self.scores(version, ctx).any_at_least_one()
            || MarkedFiles::compute(version, &self.opts, ctx).any()
            || ctx
                .blob_gc
                .is_some_and(|p| !forced_blob_gc_files(version, p, ctx.in_progress).is_empty())
    }

    fn pick_auto(&self, version: &Version, ctx: &PickContext<'_>) -> Option<Compaction> {
        if self.opts.disable_auto_compactions {
            return None;
        }
        Builder::new(self, version, ctx).pick()
    }

    fn pick_manual(
        &self,
        version: &Version,
        ctx: &PickContext<'_>,
        request: &ManualRequest,
    ) -> Result<Option<ManualPick>> {
        pick_compact_range(self, version, ctx, request)
    }

    fn level_scores(&self, version: &Version, ctx: &PickContext<'_>) -> Vec<LevelScore> {
        let scores = self.scores(version, ctx);
        (0..version.num_levels())
            .map(|level| LevelScore {
                level,
                score: scores.of_level(level),
            })
            .collect()
    }

    fn base_level(&self, version: &Version) -> usize {
        self.targets(version).base_level()
    }

    fn estimated_compaction_needed_bytes(&self, version: &Version) -> u64 {
        estimated_compaction_needed_bytes(version, &self.opts, &self.targets(version))
    }

    fn refit_level(
        &self,
        version: &Version,
        ctx: &PickContext<'_>,
        level: usize,
        target: Option<usize>,
    ) -> Result<VersionEdit> {
        refit_level(version, self, ctx, level, target)
    }

    fn manual_to_last_level(&self) -> bool {
        self.opts.level_compaction_dynamic_level_bytes
    }
}
