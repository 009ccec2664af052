//! `TwoTier`, "Memtable + L0 + L1": flushes write L0 tables, minor
//! compactions keep L0 small, major compactions merge L0 into the major
//! level once it holds `major_ratio` of it — per stripe of the key space.

use std::collections::HashSet;
use std::sync::Arc;

use lithify_version::{FileMetadata, Version, VersionEdit};

use crate::options::{MinorPolicy, TwoTierOptions};
use crate::tiers::{self, TierOutput, TierPick, file_in_stripe, major_level, stripe_boundaries};
use lithify_compaction::{
    Compaction, CompactionInputs, CompactionPicker, CompactionReason, Error, LevelScore,
    ManualPick, ManualRequest, PickContext, Result,
};

/// The `TwoTier` picker ("Memtable + L0 + L1"). In order of priority:
///
/// 1. **Reshape**: middle levels left by another strategy are merged, with
///    every delta file sharing keys with them, into the major level; an L0
///    table spanning several stripes (flushed before a switch to more
///    stripes) is cut into one table per stripe.
/// 2. **Major**: for each stripe (the whole key space with one stripe),
///    its score is its L0 bytes over `major_ratio` times its major-level
///    bytes (infinite over an empty stripe); a stripe with a score of at
///    least 1, or more than `max_l0_tables` L0 tables, is merged into the
///    major level — highest score first — with the delta files sharing
///    keys with it; major-level files meeting no delta file stay in place
///    and outputs are cut at stripe boundaries.
/// 3. **Minor**, by [`MinorPolicy`], on the newest L0 tables of a stripe,
///    the stripe with the most L0 tables first, or with read heat the one
///    whose reads probe the most extra tables ([`read_heat`](Self::read_heat))
///    (grown, when a table of
///    another stripe sits between them in L0 order and shares keys with
///    them, to take it too, so the merged table can take their place).
///
/// Flush plans ([`pick_flush`](CompactionPicker::pick_flush)) cut flushes
/// at stripe boundaries, and with `MergeWithPrevious` merge them with the
/// L0 tables they meet.
///
/// ```
/// use lithify_compaction::{CompactionPicker, CompactionReason, CompactionsInProgress, PickContext};
/// use lithify_compaction_tiered::{TwoTierOptions, TwoTierPicker};
/// use lithify_version::Version;
///
/// let picker = TwoTierPicker::new(TwoTierOptions::write_only()).unwrap();
/// let running = CompactionsInProgress::new();
/// let ctx = PickContext::new(&running);
/// // L0 holds half of L6's bytes: no major yet, and no minor with one
/// // table per flush.
/// let v = Version::from_text("
/// L0:
///   000011:[a#20,SET-z#20,SET] size=1M
/// L6:
///   000001:[a#1,SET-z#1,SET] size=2M
/// ").unwrap();
/// assert!(picker.pick_auto(&v, &ctx).is_none());
/// let v = Version::from_text("
/// L0:
///   000012:[a#30,SET-z#30,SET] size=1M
///   000011:[a#20,SET-z#20,SET] size=1M
/// L6:
///   000001:[a#1,SET-z#1,SET] size=2M
/// ").unwrap();
/// let c = picker.pick_auto(&v, &ctx).unwrap();
/// assert_eq!(c.reason, CompactionReason::Major);
/// assert_eq!((c.num_input_files(), c.output_level), (3, 6));
/// ```
#[derive(Debug, Clone)]
pub struct TwoTierPicker {
    opts: TwoTierOptions,
}

/// One stripe's state.
#[derive(Debug, Clone)]
pub struct StripeScore {
    /// Its index (stripes are in key order).
    pub stripe: usize,
    /// Its L0 tables, in L0 order (newest first).
    pub l0: Vec<Arc<FileMetadata>>,
    /// Bytes of its L0 tables.
    pub l0_bytes: u64,
    /// Bytes of its major-level files.
    pub major_bytes: u64,
    /// `l0_bytes / (major_ratio x major_bytes)`; infinite when the stripe
    /// has L0 bytes and no major-level bytes.
    pub score: f64,
}

impl TwoTierPicker {
    /// A picker with `opts` (sanitized).
    pub fn new(opts: TwoTierOptions) -> Result<Self> {
        Ok(TwoTierPicker {
            opts: opts.sanitize()?,
        })
    }

    /// The options.
    pub fn options(&self) -> &TwoTierOptions {
        &self.opts
    }

    fn output(&self) -> TierOutput {
        TierOutput {
            target_file_size: self.opts.target_file_size,
            compression: self.opts.compression,
            max_subcompactions: self.opts.max_subcompactions,
        }
    }

    /// The stripe boundaries of `version`.
    pub fn stripes(&self, version: &Version) -> Vec<Vec<u8>> {
        stripe_boundaries(version, self.opts.stripes)
    }

    /// Every stripe's L0 tables, bytes and score. A table crossing a
    /// boundary counts in every stripe it meets.
    pub fn stripe_scores(&self, version: &Version, boundaries: &[Vec<u8>]) -> Vec<StripeScore> {
        let cmp = version.comparator();
        let major = major_level(version);
        (0..=boundaries.len())
            .map(|i| {
                let l0: Vec<Arc<FileMetadata>> = version
                    .files(0)
                    .iter()
                    .filter(|f| file_in_stripe(cmp, boundaries, i, f))
                    .cloned()
                    .collect();
                let l0_bytes = l0.iter().map(|f| f.size).sum::<u64>();
                let major_bytes = version
                    .files(major)
                    .iter()
                    .filter(|f| file_in_stripe(cmp, boundaries, i, f))
                    .map(|f| f.size)
                    .sum::<u64>();
                let score = if l0_bytes == 0 {
                    0.0
                } else if major_bytes == 0 {
                    f64::INFINITY
                } else {
                    l0_bytes as f64 / (self.opts.major_ratio * major_bytes as f64)
                };
                StripeScore {
                    stripe: i,
                    l0,
                    l0_bytes,
                    major_bytes,
                    score,
                }
            })
            .collect()
    }

    /// Restriping after a switch to more stripes: the newest L0 table
    /// spanning two or more stripe boundaries (flushed before the stripes
    /// existed) is rewritten into one L0 table per stripe, so the stripes'
    /// majors stay apart instead of all joining one major over the whole
    /// table. A table crossing a single boundary (boundaries drift as the
    /// major level changes) just joins the neighbouring stripe's major.
    fn pick_restripe(
        &self,
        version: &Version,
        ctx: &PickContext<'_>,
        boundaries: &[Vec<u8>],
    ) -> Option<Compaction> {
        if boundaries.len() < 2 {
            return None;
        }
        let cmp = version.comparator();
        let f = version.files(0).iter().find(|f| {
            !ctx.in_progress.is_being_compacted(f.number)
                && boundaries
                    .iter()
                    .filter(|b| {
                        cmp.compare_user(f.smallest_user_key(), b).is_lt()
                            && cmp.compare_user(f.largest_user_key(), b).is_ge()
                    })
                    .count()
                    >= 2
        })?;
        tiers::build(
            version,
            ctx,
            &self.output(),
            vec![CompactionInputs {
                level: 0,
                files: vec![f.clone()],
            }],
            TierPick {
                reason: CompactionReason::Reshape,
                output_level: 0,
                score: 0.0,
                manual: false,
                stripes: boundaries,
                reuse_untouched_files: false,
                memtable_range: None,
            },
        )
    }

    fn wants_major(&self, s: &StripeScore) -> bool {
        !s.l0.is_empty() && (s.score >= 1.0 || s.l0.len() > self.opts.max_l0_tables)
    }

    fn pick_major(
        &self,
        version: &Version,
        ctx: &PickContext<'_>,
        boundaries: &[Vec<u8>],
        scores: &[StripeScore],
    ) -> Option<Compaction> {
        let mut due: Vec<&StripeScore> = scores.iter().filter(|s| self.wants_major(s)).collect();
        due.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.stripe.cmp(&b.stripe)));
        for s in due {
            if ctx.in_progress.any_being_compacted(&s.l0) {
                continue;
            }
            let seeds: HashSet<u64> = s.l0.iter().map(|f| f.number).collect();
            let score = if s.score.is_finite() { s.score } else { 0.0 };
            if let Some(c) = tiers::major(
                version,
                ctx,
                &self.output(),
                &seeds,
                CompactionReason::Major,
                score,
                boundaries,
            ) {
                return Some(c);
            }
        }
        None
    }

    /// The L0 tables a minor compaction of stripe `s` merges, by policy:
    /// always the newest ones, up to the first table being compacted.
    /// `heat` holds each stripe's share of the reads when the heat rule
    /// applies ([`read_heat`](Self::read_heat)).
    fn minor_candidates(
        &self,
        s: &StripeScore,
        ctx: &PickContext<'_>,
        heat: Option<&[f64]>,
    ) -> Option<Vec<Arc<FileMetadata>>> {
        let n = s.l0.len();
        let free =
            s.l0.iter()
                .position(|f| ctx.in_progress.is_being_compacted(f.number))
                .unwrap_or(n);
        let newest = |k: usize| (k.min(free) >= 2).then(|| s.l0[..k.min(free)].to_vec());
        match self.opts.minor {
            MinorPolicy::None => None,
            MinorPolicy::MergeWithPrevious => newest(n),
            MinorPolicy::HotRange { max_tables } => {
                let bound = heat.map_or(max_tables, |h| {
                    heat_bound(max_tables, h[s.stripe], h.len(), self.opts.max_l0_tables)
                });
                if n > bound { newest(n) } else { None }
            }
            MinorPolicy::SizeTiered {
                max_tables,
                size_ratio_percent,
            } => {
                if n <= max_tables {
                    return None;
                }
                // RocksDB universal's size-ratio run from the newest table.
                let mut sum = s.l0[0].size as u128;
                let mut take = 1;
                for f in &s.l0[1..] {
                    if sum * (100 + size_ratio_percent as u128) < f.size as u128 * 100 {
                        break;
                    }
                    sum += f.size as u128;
                    take += 1;
                }
                if take < 2 {
                    take = n - max_tables + 1;
                }
                newest(take)
            }
        }
    }

    /// Each stripe's share of the table's recent reads, when the heat rule
    /// applies: the policy is [`MinorPolicy::HotRange`] with
    /// `merge_by_read_heat`, the engine samples reads, at least
    /// [`MIN_HEAT_SAMPLES`] were taken, reads were at least
    /// [`HEAT_READ_SHARE`] of the operations since the oldest, and the
    /// hottest stripe drew at least [`HEAT_SKEW`] times its even share.
    /// Otherwise the table-count rule decides (writes are the load, reads
    /// are spread evenly, or nothing is known of them).
    pub fn read_heat(
        &self,
        version: &Version,
        ctx: &PickContext<'_>,
        boundaries: &[Vec<u8>],
    ) -> Option<Vec<f64>> {
        if !(self.opts.merge_by_read_heat
            && matches!(self.opts.minor, MinorPolicy::HotRange { .. }))
        {
            return None;
        }
        let heat = ctx
            .read_heat?
            .stripe_heat(version.comparator(), boundaries)?;
        let even = 1.0 / heat.shares.len() as f64;
        let hottest = heat.shares.iter().copied().fold(0.0, f64::max);
        (heat.samples >= MIN_HEAT_SAMPLES
            && heat.read_share >= HEAT_READ_SHARE
            && hottest >= HEAT_SKEW * even)
            .then_some(heat.shares)
    }

    fn pick_minor(
        &self,
        version: &Version,
        ctx: &PickContext<'_>,
        boundaries: &[Vec<u8>],
        scores: &[StripeScore],
    ) -> Option<Compaction> {
        let heat = self.read_heat(version, ctx, boundaries);
        let mut order: Vec<&StripeScore> = scores.iter().collect();
        match &heat {
            // The stripe whose reads probe the most extra L0 tables first.
            Some(h) => order.sort_by(|a, b| {
                let extra = |s: &StripeScore| h[s.stripe] * s.l0.len().saturating_sub(1) as f64;
                extra(b).total_cmp(&extra(a)).then(a.stripe.cmp(&b.stripe))
            }),
            // The stripe with the most L0 tables (where writes went) first.
            None => order.sort_by(|a, b| b.l0.len().cmp(&a.l0.len()).then(a.stripe.cmp(&b.stripe))),
        }
        for s in order {
            let Some(files) = self.minor_candidates(s, ctx, heat.as_deref()) else {
                continue;
            };
            let Some(files) = consecutive_run(version, files) else {
                continue;
            };
            if ctx.in_progress.any_being_compacted(&files) {
                continue;
            }
            let inputs = vec![CompactionInputs { level: 0, files }];
            if let Some(c) = tiers::build(
                version,
                ctx,
                &self.output(),
                inputs,
                TierPick {
                    reason: CompactionReason::Minor,
                    output_level: 0,
                    score: 0.0,
                    manual: false,
                    stripes: boundaries,
                    reuse_untouched_files: false,
                    memtable_range: None,
                },
            ) {
                return Some(c);
            }
        }
        None
    }
}

/// Samples the heat rule needs before it decides.
pub const MIN_HEAT_SAMPLES: usize = 64;

/// Share of the operations reads must be for the heat rule to decide.
pub const HEAT_READ_SHARE: f64 = 0.5;

/// How many times its even share the hottest stripe must draw for the
/// heat rule to decide: reads spread evenly (their samples a little
/// uneven by chance) leave the table-count rule in force.
pub const HEAT_SKEW: f64 = 2.0;

/// The L0 tables a stripe drawing `share` of the reads may hold under the
/// heat rule: `max_tables` for a stripe drawing an even share
/// (`1 / stripes`), fewer for a hotter one and more for a colder one, in
/// proportion, from half of `max_tables` (at least 1) to twice it (at most
/// `max_l0_tables`). Both ends were measured on the moving hot spot
/// (engine README, "L0 merged by read heat"): merging the hottest stripe
/// at every flush rewrote its L0 with each flush and cost more than the
/// probes it saved; leaving the cold stripes to their majors cost fewer
/// bytes but, with background compactions, more tables per lookup and
/// more CPU.
fn heat_bound(max_tables: usize, share: f64, stripes: usize, max_l0_tables: usize) -> usize {
    let even = 1.0 / stripes.max(1) as f64;
    let lo = (max_tables / 2).max(1);
    let hi = (2 * max_tables).min(max_l0_tables).max(lo);
    if share <= 0.0 {
        return hi;
    }
    let bound = (max_tables as f64 * even / share).round();
    (bound.min(hi as f64) as usize).max(lo)
}

/// `files` (L0 tables) grown into a run that can be merged into one table
/// without breaking L0's order: every L0 table that sits between two of
/// them in L0 order and shares user keys with their hull joins (the hull
/// grows with it), so the merged table can take the newest one's place.
/// `None` when fewer than two tables result.
fn consecutive_run(
    version: &Version,
    files: Vec<Arc<FileMetadata>>,
) -> Option<Vec<Arc<FileMetadata>>> {
    let cmp = version.comparator();
    let l0 = version.files(0);
    let mut chosen: HashSet<u64> = files.iter().map(|f| f.number).collect();
    loop {
        let positions: Vec<usize> = l0
            .iter()
            .enumerate()
            .filter(|(_, f)| chosen.contains(&f.number))
            .map(|(i, _)| i)
            .collect();
        let (&first, &last) = (positions.first()?, positions.last()?);
        let taken = &l0[first..=last];
        let lo = taken
            .iter()
            .filter(|f| chosen.contains(&f.number))
            .map(|f| f.smallest_user_key())
            .min_by(|a, b| cmp.compare_user(a, b))?;
        let hi = taken
            .iter()
            .filter(|f| chosen.contains(&f.number))
            .map(|f| f.largest_user_key())
            .max_by(|a, b| cmp.compare_user(a, b))?;
        let joining: Vec<u64> = taken
            .iter()
            .filter(|f| {
                !chosen.contains(&f.number) && f.overlaps_user_range(cmp, Some(lo), Some(hi))
            })
            .map(|f| f.number)
            .collect();
        if joining.is_empty() {
            let run: Vec<Arc<FileMetadata>> = taken
                .iter()
                .filter(|f| chosen.contains(&f.number))
                .cloned()
                .collect();
            return (run.len() >= 2).then_some(run);
        }
        chosen.extend(joining);
    }
}

impl CompactionPicker for TwoTierPicker {
    fn name(&self) -> &'static str {
        "two-tier"
    }

    fn needs_compaction(&self, version: &Version, ctx: &PickContext<'_>) -> bool {
        if self.opts.disable_auto_compactions {
            return false;
        }
        if tiers::has_middle_levels(version) {
            return true;
        }
        let boundaries = self.stripes(version);
        if self.pick_restripe(version, ctx, &boundaries).is_some() {
            return true;
        }
        let heat = self.read_heat(version, ctx, &boundaries);
        self.stripe_scores(version, &boundaries).iter().any(|s| {
            let free = !ctx.in_progress.any_being_compacted(&s.l0);
            (free && self.wants_major(s))
                || self.minor_candidates(s, ctx, heat.as_deref()).is_some()
        }) || tiers::forced_blob_gc(version, ctx, &self.output()).is_some()
    }

    fn pick_auto(&self, version: &Version, ctx: &PickContext<'_>) -> Option<Compaction> {
        if self.opts.disable_auto_compactions {
            return None;
        }
        let boundaries = self.stripes(version);
        if tiers::has_middle_levels(version) {
            return tiers::reshape(version, ctx, &self.output(), &boundaries);
        }
        if let Some(c) = self.pick_restripe(version, ctx, &boundaries) {
            return Some(c);
        }
        let scores = self.stripe_scores(version, &boundaries);
        self.pick_major(version, ctx, &boundaries, &scores)
            .or_else(|| self.pick_minor(version, ctx, &boundaries, &scores))
            .or_else(|| tiers::forced_blob_gc(version, ctx, &self.output()))
    }

    fn pick_flush(
        &self,
        version: &Version,
        ctx: &PickContext<'_>,
        smallest_user_key: &[u8],
        largest_user_key: &[u8],
    ) -> Option<Compaction> {
        let boundaries = self.stripes(version);
        let range = (smallest_user_key, largest_user_key);
        let inputs = if self.opts.minor == MinorPolicy::MergeWithPrevious {
            let previous = version.overlapping_files(0, Some(range.0), Some(range.1));
            if previous.is_empty() {
                Vec::new()
            } else {
                vec![CompactionInputs {
                    level: 0,
                    files: previous,
                }]
            }
        } else {
            Vec::new()
        };
        if inputs.is_empty() && boundaries.is_empty() {
            return None;
        }
        tiers::build(
            version,
            ctx,
            &self.output(),
            inputs,
            TierPick {
                reason: CompactionReason::Flush,
                output_level: 0,
                score: 0.0,
                manual: false,
                stripes: &boundaries,
                reuse_untouched_files: false,
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
        let boundaries = self.stripes(version);
        let l0 = self
            .stripe_scores(version, &boundaries)
            .iter()
            .map(|s| s.score)
            .fold(0.0f64, f64::max);
        (0..version.num_levels())
            .map(|level| LevelScore {
                level,
                score: match level {
                    0 => l0,
                    l if l < major && version.num_files(l) > 0 => 1.0,
                    _ => 0.0,
                },
            })
            .collect()
    }

    fn base_level(&self, version: &Version) -> usize {
        major_level(version)
    }

    fn estimated_compaction_needed_bytes(&self, version: &Version) -> u64 {
        if tiers::has_middle_levels(version) {
            return tiers::pending_major_bytes(version);
        }
        let boundaries = self.stripes(version);
        self.stripe_scores(version, &boundaries)
            .iter()
            .filter(|s| self.wants_major(s))
            .map(|s| s.l0_bytes + s.major_bytes)
            .sum()
    }

    fn refit_level(
        &self,
        _version: &Version,
        _ctx: &PickContext<'_>,
        _level: usize,
        _target: Option<usize>,
    ) -> Result<VersionEdit> {
        Err(Error::invalid_argument("change_level does not apply to the two-tier strategy: its data stays in L0 and the major level".to_owned()))
    }

    fn manual_to_last_level(&self) -> bool {
        true
    }

    fn l0_count_stalls_writes(&self) -> bool {
        false
    }
}
