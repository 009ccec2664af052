//! `MajorOnly`, "Memtable + L1": the table is one sorted run in the major
//! level; a flush merges the frozen memtables into it.

use std::collections::HashSet;

use lithify_version::{Version, VersionEdit};

use crate::options::MajorOnlyOptions;
use crate::tiers::{
    self, TierOutput, TierPick, base_files, delta_closure, delta_files, group_inputs, major_level,
};
use lithify_compaction::{
    Compaction, CompactionPicker, CompactionReason, Error, LevelScore, ManualPick, ManualRequest,
    PickContext, Result,
};

/// The `MajorOnly` picker ("Memtable + L1").
///
/// * **Flush** ([`pick_flush`](CompactionPicker::pick_flush)): a major
///   flush — the memtables, every delta file (L0 files left by plain
///   flushes, middle levels left by another strategy) and the major-level
///   files they meet are merged into the major level, **incrementally**:
///   major-level files whose range receives no key stay in place
///   ([`Compaction::reuse_untouched_files`]), so an append-only table
///   writes each byte once. When a delta file is busy the plan is `None`
///   and the engine flushes to L0 as usual.
/// * **Automatic compaction**: any delta file is merged into the major
///   level the same way (a trivial move when the delta files share no key
///   with the major level or each other); with middle levels present this
///   is the reshaping compaction of a strategy switch.
///
/// ```
/// use lithify_compaction::{CompactionPicker, CompactionsInProgress, PickContext};
/// use lithify_compaction_tiered::{MajorOnlyOptions, MajorOnlyPicker};
/// use lithify_version::Version;
///
/// let picker = MajorOnlyPicker::new(MajorOnlyOptions::default()).unwrap();
/// let v = Version::from_text("
/// L6:
///   000001:[a#1,SET-c#1,SET] size=1M
///   000002:[d#1,SET-f#1,SET] size=1M
///   000003:[g#1,SET-k#1,SET] size=1M
/// ").unwrap();
/// let running = CompactionsInProgress::new();
/// let ctx = PickContext::new(&running);
/// // A memtable holding keys in [e, h] meets files 2 and 3 only.
/// let c = picker.pick_flush(&v, &ctx, b"e", b"h").unwrap();
/// assert_eq!(c.output_level, 6);
/// assert_eq!(c.num_input_files(), 2);
/// assert!(c.reuse_untouched_files);
/// ```
#[derive(Debug, Clone)]
pub struct MajorOnlyPicker {
    opts: MajorOnlyOptions,
}

impl MajorOnlyPicker {
    /// A picker with `opts` (sanitized).
    pub fn new(opts: MajorOnlyOptions) -> Result<Self> {
        Ok(MajorOnlyPicker {
            opts: opts.sanitize()?,
        })
    }

    /// The options.
    pub fn options(&self) -> &MajorOnlyOptions {
        &self.opts
    }

    fn output(&self) -> TierOutput {
        TierOutput {
            target_file_size: self.opts.target_file_size,
            compression: self.opts.compression,
            max_subcompactions: self.opts.max_subcompactions,
        }
    }
}

impl CompactionPicker for MajorOnlyPicker {
    fn name(&self) -> &'static str {
        "major-only"
    }

    fn needs_compaction(&self, version: &Version, ctx: &PickContext<'_>) -> bool {
        !self.opts.disable_auto_compactions
            && (delta_files(version)
                .iter()
                .any(|(_, f)| !ctx.in_progress.is_being_compacted(f.number))
                || tiers::forced_blob_gc(version, ctx, &self.output()).is_some())
    }

    fn pick_auto(&self, version: &Version, ctx: &PickContext<'_>) -> Option<Compaction> {
        if self.opts.disable_auto_compactions {
            return None;
        }
        let seeds: HashSet<u64> = delta_files(version)
            .into_iter()
            .filter(|(_, f)| !ctx.in_progress.is_being_compacted(f.number))
            .map(|(_, f)| f.number)
            .collect();
        if seeds.is_empty() {
            return tiers::forced_blob_gc(version, ctx, &self.output());
        }
        let reason = if tiers::has_middle_levels(version) {
            CompactionReason::Reshape
        } else {
            CompactionReason::Major
        };
        tiers::major(version, ctx, &self.output(), &seeds, reason, 1.0, &[])
    }

    fn pick_flush(
        &self,
        version: &Version,
        ctx: &PickContext<'_>,
        smallest_user_key: &[u8],
        largest_user_key: &[u8],
    ) -> Option<Compaction> {
        let range = (smallest_user_key, largest_user_key);
        let seeds: HashSet<u64> = delta_files(version)
            .into_iter()
            .map(|(_, f)| f.number)
            .collect();
        let delta = delta_closure(version, &seeds, Some(range));
        let major = major_level(version);
        let base = base_files(version, &delta, Some(range));
        tiers::build(
            version,
            ctx,
            &self.output(),
            group_inputs(&delta, major, base),
            TierPick {
                reason: CompactionReason::Flush,
                output_level: major,
                score: 0.0,
                manual: false,
                stripes: &[],
                reuse_untouched_files: true,
                memtable_range: Some(range),
            },
        )
    }

    fn pick_manual(
        &self,
        version: &Version,
        ctx: &PickContext<'_>,
        request: &ManualRequest,
    ) -> Result<Option<ManualPick>> {
        tiers::pick_manual(version, ctx, &self.output(), request)
    }

    fn level_scores(&self, version: &Version, _ctx: &PickContext<'_>) -> Vec<LevelScore> {
        let major = major_level(version);
        (0..version.num_levels())
            .map(|level| LevelScore {
                level,
                score: if level < major && version.num_files(level) > 0 {
                    1.0
                } else {
                    0.0
                },
            })
            .collect()
    }

    fn base_level(&self, version: &Version) -> usize {
        major_level(version)
    }

    fn estimated_compaction_needed_bytes(&self, version: &Version) -> u64 {
        tiers::pending_major_bytes(version)
    }

    fn refit_level(
        &self,
        _version: &Version,
        _ctx: &PickContext<'_>,
        _level: usize,
        _target: Option<usize>,
    ) -> Result<VersionEdit> {
        Err(Error::invalid_argument("change_level does not apply to the major-only strategy: its data stays in the major level".to_owned()))
    }

    fn manual_to_last_level(&self) -> bool {
        true
    }
}
