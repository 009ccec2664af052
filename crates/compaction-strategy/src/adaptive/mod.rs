//! The `Adaptive` strategy: each window of observed workload statistics
//! is turned into a [`Mix`], every candidate shape is scored by the
//! [`cost model`](crate::cost_model) at the table's size, the best by the
//! user's [`Objective`] within their [`Limits`] is the choice, and
//! [`AdaptiveState`] switches to it once staying has cost more than
//! reshaping would.
//!
//! The candidates ([`AdaptiveOptions::candidates`]) are `Leveled` (the
//! table's leveled options), `MajorOnly`, and the `TwoTier` shapes: one
//! L0 table per flush with the L0 bound of the template and with a
//! quarter of it, each flush merged with the previous L0 table (major at
//! a quarter), and L0 merged by hot range over 8 stripes. A range-delete
//! share of at least 10 % halves the two-tier major ratios, so deleted
//! ranges are reclaimed sooner.
//!
//! The window is also named by a [`WorkloadClass`] (thresholds in
//! [`AdaptiveThresholds`]), which the reason shows; the class no longer
//! decides anything.

use std::fmt;

use lithify_compaction_leveled::LeveledOptions;

use crate::cost_model::{CpuCosts, Limits, Mix, Objective, Prediction, Scored, TableSize, rank};
use crate::strategy::{CompactionStrategy, two_tier_label};
use lithify_compaction_tiered::{MajorOnlyOptions, TwoTierOptions};

mod day_plan;
mod recorder;
mod state;

pub use day_plan::{DayPlan, plan_day};
pub use recorder::WorkloadRecorder;
pub use state::{
    AdaptiveState, DayPart, FORGET_AFTER_WINDOWS, MAX_RETURN_DOUBLINGS, MIN_GAIN,
    MIN_TABLE_FLUSHES, OBSERVED_MIN_FLUSHES, SETTLED_WINDOWS, Switch,
};

/// What a table did during one observation window.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WorkloadStats {
    /// Point lookups and range scans.
    pub reads: u64,
    /// Range scans (counted in `reads` too).
    pub scans: u64,
    /// Puts and point deletes.
    pub writes: u64,
    /// Writes whose key sorts at or after the previous write's key.
    pub ordered_writes: u64,
    /// Sampled writes whose key already existed (updates and deletes of
    /// live keys).
    pub updates: u64,
    /// Sampled writes whose key did not exist.
    pub inserts: u64,
    /// Range deletes.
    pub range_deletes: u64,
    /// Share of writes that landed in the busiest eighth of the key ranges
    /// the recorder tracks (0 when unknown; 0.125 for uniform writes).
    pub hot_range_share: f64,
    /// Bytes the table's flushes and compactions wrote during the window,
    /// to table and blob files (0 when the caller does not say).
    pub table_bytes_written: u64,
    /// Bytes of keys and values the window's writes carried (0 when the
    /// caller does not say).
    pub user_bytes: u64,
}

impl WorkloadStats {
    /// Reads, writes and range deletes.
    pub fn total_ops(&self) -> u64 {
        self.reads + self.writes + self.range_deletes
    }

    /// Writes (range deletes included) per operation.
    pub fn write_share(&self) -> f64 {
        ratio(self.writes + self.range_deletes, self.total_ops())
    }

    /// Share of writes in increasing key order (0 without writes).
    pub fn ordered_share(&self) -> f64 {
        ratio(self.ordered_writes, self.writes)
    }

    /// Share of sampled writes that updated an existing key (1 when
    /// nothing was sampled: every write is assumed to be an update).
    pub fn update_share(&self) -> f64 {
        if self.updates + self.inserts == 0 {
            1.0
        } else {
            ratio(self.updates, self.updates + self.inserts)
        }
    }

    /// Updates per operation.
    pub fn update_ops_share(&self) -> f64 {
        ratio(self.writes, self.total_ops()) * self.update_share()
    }

    /// Range deletes per write.
    pub fn range_delete_share(&self) -> f64 {
        ratio(self.range_deletes, self.writes + self.range_deletes)
    }

    /// Adds another window's counts (the hot share is weighted by writes).
    pub fn merge(&mut self, o: &WorkloadStats) {
        let w = (self.writes + o.writes).max(1) as f64;
        self.hot_range_share =
            (self.hot_range_share * self.writes as f64 + o.hot_range_share * o.writes as f64) / w;
        self.reads += o.reads;
        self.scans += o.scans;
        self.writes += o.writes;
        self.ordered_writes += o.ordered_writes;
        self.updates += o.updates;
        self.inserts += o.inserts;
        self.range_deletes += o.range_deletes;
        self.table_bytes_written += o.table_bytes_written;
        self.user_bytes += o.user_bytes;
    }
}

pub(crate) fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// The thresholds that name a window's [`WorkloadClass`], and the share
/// of range deletes that halves the two-tier ratios.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct AdaptiveThresholds {
    /// At or below this write share the table counts as read-only.
    pub read_only_write_share: f64,
    /// At or above this ordered share, keys count as increasing.
    pub increasing_share: f64,
    /// At or above this write share the table counts as write-only.
    pub write_only_write_share: f64,
    /// At or above this write share the table counts as write-mostly.
    pub write_mostly_write_share: f64,
    /// At or below this share of operations updating keys, a read-mostly
    /// table has few updates.
    pub few_updates_share: f64,
    /// At or above this share of range deletes among writes, majors run
    /// at half the ratio.
    pub range_delete_share: f64,
}

lithify_base::options_builder!(AdaptiveThresholds {
    read_only_write_share: f64,
    increasing_share: f64,
    write_only_write_share: f64,
    write_mostly_write_share: f64,
    few_updates_share: f64,
    range_delete_share: f64,
});

impl Default for AdaptiveThresholds {
    fn default() -> Self {
        AdaptiveThresholds {
            read_only_write_share: 0.01,
            increasing_share: 0.9,
            write_only_write_share: 0.95,
            write_mostly_write_share: 0.5,
            few_updates_share: 0.1,
            range_delete_share: 0.1,
        }
    }
}

/// Options of the `Adaptive` strategy.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AdaptiveOptions {
    /// The strategy before enough operations were observed, sized by
    /// [`sized`](Self::sized) (default `TwoTier` with one L0 table per
    /// flush: the cheapest fixed strategy in CPU on most rows of the
    /// engine's strategies report).
    pub initial: Box<CompactionStrategy>,
    /// Template for the `Leveled` candidate (the engine gives it the
    /// table's leveled options).
    pub leveled: LeveledOptions,
    /// Template for the `MajorOnly` candidate.
    pub major_only: MajorOnlyOptions,
    /// Template for the `TwoTier` candidates (file size, compression,
    /// subcompactions, `max_l0_tables`); each candidate sets the minor
    /// policy, stripes and ratio.
    pub two_tier: TwoTierOptions,
    /// Operations a window needs before it counts (default 10 000).
    pub min_window_ops: u64,
    /// Consecutive windows a better candidate must win before the table
    /// switches (default 2).
    pub switch_after_windows: u32,
    /// What the choice minimises (default CPU per operation).
    pub objective: Objective,
    /// Bounds every choice keeps when a candidate can (default none).
    pub limits: Limits,
    /// The CPU cost of bytes written, reads and probes.
    pub costs: CpuCosts,
    /// The thresholds naming the workload class.
    pub thresholds: AdaptiveThresholds,
}

lithify_base::options_builder!(AdaptiveOptions {
    initial: Box<CompactionStrategy>,
    leveled: LeveledOptions,
    major_only: MajorOnlyOptions,
    two_tier: TwoTierOptions,
    min_window_ops: u64,
    switch_after_windows: u32,
    objective: Objective,
    limits: Limits,
    costs: CpuCosts,
    thresholds: AdaptiveThresholds,
});

impl Default for AdaptiveOptions {
    fn default() -> Self {
        AdaptiveOptions {
            initial: Box::new(CompactionStrategy::TwoTier(TwoTierOptions::write_only())),
            leveled: LeveledOptions::default(),
            major_only: MajorOnlyOptions::default(),
            two_tier: TwoTierOptions::default(),
            min_window_ops: 10_000,
            switch_after_windows: 2,
            objective: Objective::Cpu,
            limits: Limits::default(),
            costs: CpuCosts::default(),
            thresholds: AdaptiveThresholds::default(),
        }
    }
}

impl AdaptiveOptions {
    /// `s` with the templates' sizes: `Leveled` and `MajorOnly` become
    /// their templates, `TwoTier` keeps its shape (minor policy, stripes,
    /// ratio, L0 bound) and takes the template's file size, compression,
    /// subcompactions and auto-compaction switch; `Adaptive` is its
    /// initial strategy. The initial strategy and every candidate are
    /// sized so, so a shape compares equal to its candidate.
    pub fn sized(&self, s: &CompactionStrategy) -> CompactionStrategy {
        match s {
            CompactionStrategy::Leveled(_) => CompactionStrategy::Leveled(self.leveled.clone()),
            CompactionStrategy::MajorOnly(_) => {
                CompactionStrategy::MajorOnly(self.major_only.clone())
            }
            CompactionStrategy::TwoTier(o) => CompactionStrategy::TwoTier(
                o.clone()
                    .target_file_size(self.two_tier.target_file_size)
                    .max_subcompactions(self.two_tier.max_subcompactions)
                    .compression(self.two_tier.compression)
                    .disable_auto_compactions(self.two_tier.disable_auto_compactions),
            ),
            CompactionStrategy::Adaptive(a) => self.sized(&a.initial),
        }
    }

    /// `scored` with the write amplification `write_amp` observed in place
    /// of the predicted one (the files written beyond the flush's own
    /// scaled alike), its CPU and limits figured again for `mix` at
    /// `size`.
    pub(crate) fn rescore_written(
        &self,
        scored: &Scored,
        write_amp: f64,
        mix: &Mix,
        size: &TableSize,
    ) -> Scored {
        let p = scored.prediction;
        let scale = if p.write_amp > 0.0 {
            write_amp / p.write_amp
        } else {
            1.0
        };
        let flush_files = match &scored.strategy {
            CompactionStrategy::TwoTier(o) => o.stripes.max(1) as f64,
            CompactionStrategy::Leveled(_) => 1.0,
            _ => 0.0,
        }
        .min(p.files_per_flush);
        let prediction = Prediction {
            write_amp,
            files_per_flush: flush_files + (p.files_per_flush - flush_files) * scale,
            ..p
        };
        Scored {
            strategy: scored.strategy.clone(),
            cpu_us: self.costs.per_op(&prediction, mix, size),
            excess: self.limits.excess(&prediction),
            prediction,
        }
    }

    /// The shapes the model chooses among (see the module docs); with
    /// `range_deletes`, the two-tier ratios are halved.
    pub fn candidates(&self, range_deletes: bool) -> Vec<CompactionStrategy> {
        let two_tier = |preset: TwoTierOptions| {
            let mut s = self.sized(&CompactionStrategy::TwoTier(
                preset
                    .max_l0_tables(self.two_tier.max_l0_tables)
                    .merge_by_read_heat(self.two_tier.merge_by_read_heat),
            ));
            if range_deletes && let CompactionStrategy::TwoTier(o) = &mut s {
                o.major_ratio /= 2.0;
            }
            s
        };
        // One L0 table per flush, with a quarter of the L0 bound: fewer
        // tables for reads to walk, majors four times as often.
        let mut bounded = two_tier(TwoTierOptions::write_only());
        if let CompactionStrategy::TwoTier(o) = &mut bounded {
            o.max_l0_tables = (self.two_tier.max_l0_tables / 4).max(2);
        }
        vec![
            CompactionStrategy::Leveled(self.leveled.clone()),
            CompactionStrategy::MajorOnly(self.major_only.clone()),
            two_tier(TwoTierOptions::write_only()),
            bounded,
            two_tier(TwoTierOptions::read_mostly_few_updates()),
            two_tier(TwoTierOptions::read_mostly_many_updates()),
        ]
    }
}

/// The names of workloads (a window's class, shown in the reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WorkloadClass {
    /// Keys arrive in increasing order (inserts, updates, deletes), any
    /// read share.
    IncreasingKeys,
    /// Writes only, random keys.
    WriteOnly,
    /// Mostly writes, random keys.
    WriteMostly,
    /// Reads only, or very few writes.
    ReadOnly,
    /// Mostly reads, few random updates.
    ReadMostlyFewUpdates,
    /// Mostly reads, many random updates.
    ReadMostlyManyUpdates,
}

impl WorkloadClass {
    /// Every class, in the strategies report's order.
    pub const ALL: [WorkloadClass; 6] = [
        WorkloadClass::IncreasingKeys,
        WorkloadClass::WriteOnly,
        WorkloadClass::WriteMostly,
        WorkloadClass::ReadOnly,
        WorkloadClass::ReadMostlyFewUpdates,
        WorkloadClass::ReadMostlyManyUpdates,
    ];

    /// A short name.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadClass::IncreasingKeys => "increasing keys",
            WorkloadClass::WriteOnly => "write-only, random",
            WorkloadClass::WriteMostly => "write-mostly, random",
            WorkloadClass::ReadOnly => "read-only or very few writes",
            WorkloadClass::ReadMostlyFewUpdates => "read-mostly, few random updates",
            WorkloadClass::ReadMostlyManyUpdates => "read-mostly, many random updates",
        }
    }
}

impl fmt::Display for WorkloadClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the model chose for a window.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// The workload class recognised.
    pub class: WorkloadClass,
    /// The best candidate.
    pub strategy: CompactionStrategy,
    /// Its predicted amplification.
    pub prediction: Prediction,
    /// Its predicted CPU µs per operation.
    pub cpu_us: f64,
    /// The window's mix.
    pub mix: Mix,
    /// Every candidate, best first.
    pub ranked: Vec<Scored>,
    /// The measured figures of the window (the reason's first part).
    pub situation: String,
    /// The choice and its prediction (the reason's second part).
    pub verdict: String,
    /// Why: the situation and the verdict (shown in the stats).
    pub reason: String,
}

/// Names the window's workload by the thresholds.
pub fn classify(stats: &WorkloadStats, t: &AdaptiveThresholds) -> WorkloadClass {
    let write_share = stats.write_share();
    if write_share <= t.read_only_write_share {
        WorkloadClass::ReadOnly
    } else if stats.ordered_share() >= t.increasing_share {
        WorkloadClass::IncreasingKeys
    } else if write_share >= t.write_only_write_share {
        WorkloadClass::WriteOnly
    } else if write_share >= t.write_mostly_write_share {
        WorkloadClass::WriteMostly
    } else if stats.update_ops_share() <= t.few_updates_share {
        WorkloadClass::ReadMostlyFewUpdates
    } else {
        WorkloadClass::ReadMostlyManyUpdates
    }
}

/// A strategy's short description in reasons.
pub fn describe(s: &CompactionStrategy) -> String {
    match s {
        CompactionStrategy::TwoTier(o) => format!("two-tier, {}", two_tier_label(o)),
        CompactionStrategy::MajorOnly(_) => "major-only (Memtable + L1)".to_owned(),
        other => other.to_string(),
    }
}

/// `strategy` scored on the window's mix at `size`.
pub(crate) fn score_of(
    strategy: &CompactionStrategy,
    stats: &WorkloadStats,
    size: &TableSize,
    opts: &AdaptiveOptions,
) -> Scored {
    let mix = Mix::from_stats(stats);
    rank(
        std::slice::from_ref(strategy),
        &mix,
        size,
        opts.objective,
        &opts.limits,
        &opts.costs,
    )
    .remove(0)
}

/// Chooses a strategy for a window of `stats` on a table of `size`: the
/// candidate the cost model ranks first. `None` when the window has
/// fewer than `min_window_ops` operations.
///
/// ```
/// use lithify_compaction_strategy::adaptive::{AdaptiveOptions, WorkloadClass, WorkloadStats, choose_strategy};
/// use lithify_compaction_strategy::cost_model::TableSize;
///
/// // Half reads, half inserts of increasing keys, on a table of 64
/// // flushes: leveled moves each flush down without merging.
/// let stats = WorkloadStats { reads: 5_000, writes: 5_000, ordered_writes: 5_000, inserts: 50, ..WorkloadStats::default() };
/// let size = TableSize::new(64 << 20, 1 << 20, 128);
/// let choice = choose_strategy(&stats, &size, &AdaptiveOptions::default()).unwrap();
/// assert_eq!(choice.class, WorkloadClass::IncreasingKeys);
/// assert_eq!(choice.strategy.kind_name(), "leveled");
/// assert!(choice.reason.starts_with("increasing keys"));
/// assert!(choice.reason.contains("predicted write amp"));
/// ```
pub fn choose_strategy(
    stats: &WorkloadStats,
    size: &TableSize,
    opts: &AdaptiveOptions,
) -> Option<Choice> {
    if stats.total_ops() < opts.min_window_ops.max(1) {
        return None;
    }
    let class = classify(stats, &opts.thresholds);
    let range_deletes = stats.range_delete_share() >= opts.thresholds.range_delete_share;
    let mix = Mix::from_stats(stats);
    let ranked = rank(
        &opts.candidates(range_deletes),
        &mix,
        size,
        opts.objective,
        &opts.limits,
        &opts.costs,
    );
    let best = ranked[0].clone();
    let situation = format!(
        "{class}: writes {:.0}% of {} ops, {:.0}% in key order, {:.0}% updates, {:.0}% scans, {:.0}% range deletes, hottest eighth {:.0}%, table of {:.0} flushes",
        100.0 * mix.write_share,
        stats.total_ops(),
        100.0 * stats.ordered_share(),
        100.0 * stats.update_share(),
        100.0 * mix.scan_share,
        100.0 * stats.range_delete_share(),
        100.0 * stats.hot_range_share,
        size.flushes(),
    );
    let mut verdict = format!(
        "{}: predicted {}, {:.2} µs/op",
        describe(&best.strategy),
        best.prediction,
        best.cpu_us
    );
    if opts.objective != Objective::Cpu {
        verdict.push_str(&format!(" (least {})", opts.objective.name()));
    }
    if best.excess > 0.0 {
        verdict.push_str(" (no candidate keeps the limits; this one exceeds them least)");
    }
    if range_deletes && matches!(best.strategy, CompactionStrategy::TwoTier(_)) {
        verdict.push_str(" (major ratio halved for range deletes)");
    }
    Some(Choice {
        class,
        strategy: best.strategy,
        prediction: best.prediction,
        cpu_us: best.cpu_us,
        mix,
        reason: format!("{situation} -> {verdict}"),
        situation,
        verdict,
        ranked,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use lithify_compaction_tiered::MinorPolicy;

    fn opts() -> AdaptiveOptions {
        AdaptiveOptions::default().min_window_ops(1_000)
    }

    /// A window of `reads` (a `scan` share of them scans) and `writes`
    /// (`ordered` in key order, `update` of them updates).
    pub(crate) fn window(
        reads: u64,
        scans: u64,
        writes: u64,
        ordered: f64,
        update: f64,
    ) -> WorkloadStats {
        let sampled = (writes / 10).max(1);
        WorkloadStats {
            reads,
            scans,
            writes,
            ordered_writes: (writes as f64 * ordered) as u64,
            updates: (sampled as f64 * update) as u64,
            inserts: sampled - (sampled as f64 * update) as u64,
            range_deletes: 0,
            hot_range_share: 0.125,
            ..WorkloadStats::default()
        }
    }

    fn choice(stats: &WorkloadStats, size: TableSize, opts: &AdaptiveOptions) -> Choice {
        choose_strategy(stats, &size, opts).unwrap()
    }

    fn label(c: &Choice) -> String {
        c.strategy.to_string()
    }

    #[test]
    fn random_writes_on_a_large_table_choose_one_l0_table_per_flush() {
        let c = choice(
            &window(0, 0, 10_000, 0.5, 0.8),
            TableSize::new(256 << 20, 1 << 20, 128),
            &opts(),
        );
        assert_eq!(c.class, WorkloadClass::WriteOnly);
        assert_eq!(label(&c), "two-tier(minor=none,stripes=1,ratio=1)");
        // 256 flushes, a major every 64: 1 + 4 + 0.2.
        assert!((c.prediction.write_amp - 5.2).abs() < 1e-9, "{}", c.reason);
        assert_eq!(c.ranked.len(), 6);
        assert!(
            c.reason.contains("predicted write amp 5.20"),
            "{}",
            c.reason
        );
    }

    #[test]
    fn increasing_keys_append_and_a_few_out_of_order_writes_overlap() {
        let size = TableSize::new(256 << 20, 1 << 20, 128);
        // Pure appends: leveled moves every flush down untouched.
        let c = choice(&window(5_000, 0, 5_000, 1.0, 0.0), size, &opts());
        assert_eq!(c.class, WorkloadClass::IncreasingKeys);
        assert_eq!(c.strategy.kind_name(), "leveled");
        assert!((c.prediction.write_amp - 1.0).abs() < 1e-9, "{}", c.reason);
        // 6 % out of order (recent updates, expiry deletes): flushes
        // overlap, and one L0 table per flush merges least.
        let c = choice(&window(5_000, 0, 5_000, 0.94, 0.06), size, &opts());
        assert_eq!(c.class, WorkloadClass::IncreasingKeys);
        assert_eq!(label(&c), "two-tier(minor=none,stripes=1,ratio=1)");
    }

    #[test]
    fn scans_choose_few_sorted_runs() {
        // 70 % point reads, 25 % scans, 5 % random updates.
        let c = choice(
            &window(9_500, 2_500, 500, 0.5, 1.0),
            TableSize::new(256 << 20, 1 << 20, 128),
            &opts(),
        );
        assert_eq!(c.class, WorkloadClass::ReadMostlyFewUpdates);
        assert!(c.prediction.sorted_runs <= 2.0, "{}", c.reason);
        assert_eq!(
            label(&c),
            "two-tier(minor=merge-previous,stripes=1,ratio=0.25)"
        );
    }

    #[test]
    fn write_amp_objective_within_a_space_limit() {
        let o = opts()
            .objective(Objective::WriteAmp)
            .limits(Limits::default().max_space_amp(Some(1.3)));
        let size = TableSize::new(64 << 20, 1 << 20, 128);
        let c = choice(&window(0, 0, 10_000, 0.5, 0.8), size, &o);
        // One L0 table per flush writes least (2.2) but holds 40 % of the
        // table in L0 duplicates; a quarter of the bound keeps 1.1.
        match &c.strategy {
            CompactionStrategy::TwoTier(t) => {
                assert_eq!((t.minor, t.max_l0_tables), (MinorPolicy::None, 16))
            }
            other => panic!("{other}"),
        }
        assert!(c.prediction.space_amp <= 1.3);
        assert!((c.prediction.write_amp - 5.2).abs() < 1e-9);
        assert!(c.reason.contains("least write-amp"), "{}", c.reason);
        // A limit nobody keeps: the least excess wins, and the reason says so.
        let o = o.limits(Limits::default().max_space_amp(Some(0.5)));
        let c = choice(&window(0, 0, 10_000, 0.5, 0.8), size, &o);
        assert_eq!(c.strategy.kind_name(), "major-only");
        assert!(c.reason.contains("exceeds them least"), "{}", c.reason);
    }

    #[test]
    fn range_deletes_halve_the_ratio_and_small_windows_decide_nothing() {
        let mut s = window(0, 0, 10_000, 0.5, 0.8);
        s.range_deletes = 2_000;
        let c = choice(&s, TableSize::new(256 << 20, 1 << 20, 128), &opts());
        match &c.strategy {
            CompactionStrategy::TwoTier(t) => assert_eq!(t.major_ratio, 0.5),
            other => panic!("{other}"),
        }
        assert!(c.reason.contains("halved"));
        assert!(
            choose_strategy(
                &window(10, 0, 500, 0.5, 0.6),
                &TableSize::default(),
                &opts()
            )
            .is_none()
        );
    }

    #[test]
    fn classes_name_the_windows() {
        let t = AdaptiveThresholds::default();
        assert_eq!(
            classify(&window(10_000, 0, 50, 0.5, 1.0), &t),
            WorkloadClass::ReadOnly
        );
        assert_eq!(
            classify(&window(2_000, 0, 8_000, 0.5, 0.6), &t),
            WorkloadClass::WriteMostly
        );
        assert_eq!(
            classify(&window(7_000, 0, 3_000, 0.5, 1.0), &t),
            WorkloadClass::ReadMostlyManyUpdates
        );
        assert_eq!(
            classify(&window(7_000, 0, 3_000, 0.5, 0.2), &t),
            WorkloadClass::ReadMostlyFewUpdates
        );
        let mut merged = window(1, 0, 100, 0.0, 0.0);
        merged.hot_range_share = 0.5;
        let mut other = window(1, 1, 300, 0.0, 0.0);
        other.hot_range_share = 0.1;
        merged.merge(&other);
        assert_eq!((merged.writes, merged.scans), (400, 1));
        assert!((merged.hot_range_share - 0.2).abs() < 1e-9);
    }
}
