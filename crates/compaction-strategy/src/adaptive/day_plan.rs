//! [`DayPlan`]: `Adaptive`'s horizon on a table with an off-peak window —
//! whether a shape per part of the day repays reshaping twice a day.

use std::fmt;

use crate::cost_model::{Mix, Objective, Scored, TableSize, mean_upper_bytes, reshape_bytes};
use crate::strategy::CompactionStrategy;

use super::{AdaptiveOptions, MIN_GAIN, WorkloadStats, score_of};

/// The cheapest shape for each part of a table's day over the phase
/// lengths observed, reshaping the table twice a day included, and the
/// cheapest single shape to compare it with.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DayPlan {
    /// The shape outside the off-peak window.
    pub peak: CompactionStrategy,
    /// The shape inside it.
    pub off_peak: CompactionStrategy,
    /// What a day costs with the plan, its two reshapes included (the
    /// objective's units: µs of CPU, or bytes written).
    pub cost: f64,
    /// The two reshapes' share of `cost`.
    pub reshapes: f64,
    /// The single shape that costs least over a day.
    pub single: CompactionStrategy,
    /// What a day costs in `single`.
    pub single_cost: f64,
    /// The objective the costs are in.
    pub objective: Objective,
}

impl DayPlan {
    /// Whether the plan beats the best single shape by [`MIN_GAIN`]: what
    /// a table needs to take it up.
    pub fn pays(&self) -> bool {
        self.cost < (1.0 - MIN_GAIN) * self.single_cost
    }

    /// Whether the plan costs less than the best single shape at all: what
    /// a table following it needs to go on.
    pub fn beats_single(&self) -> bool {
        self.cost < self.single_cost
    }

    /// The shape for `off_peak` (or peak) windows.
    pub fn shape(&self, off_peak: bool) -> &CompactionStrategy {
        if off_peak { &self.off_peak } else { &self.peak }
    }
}

impl fmt::Display for DayPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = match self.objective {
            Objective::Cpu => " µs",
            Objective::WriteAmp => " bytes written",
            Objective::SpaceAmp => "",
        };
        write!(
            f,
            "a shape per part of the day, {} at peak and {} off-peak: {:.0}{unit} a day with two reshapes ({:.0}), against {:.0} in {} all day",
            self.peak, self.off_peak, self.cost, self.reshapes, self.single_cost, self.single
        )
    }
}

/// The cheapest shape per part for a day whose parts did `parts`
/// (`[peak, off-peak]`, each the operations of one whole stretch) on a
/// table of `size`, observed in windows of `window_ops` operations, with
/// the best single shape to compare it with ([`DayPlan::pays`]); `None`
/// for the `space-amp` objective (which has no cost per operation to
/// weigh against a reshape), a part without operations, or fewer than
/// two candidates within the limits.
///
/// Each pair of candidates is priced over a day: each part's operations
/// at its shape's cost on that part's mix, except the first window of
/// each part, which runs in the other part's shape since a window must
/// close before the table switches,
/// plus reshaping the table from one shape to the other and back
/// ([`reshape_bytes`]), each from the bytes above the last level the shape
/// it leaves holds on average ([`mean_upper_bytes`]). Candidates beyond the limits on either part are
/// left out.
///
/// ```
/// use lithify_compaction_strategy::adaptive::{AdaptiveOptions, WorkloadStats, plan_day};
/// use lithify_compaction_strategy::cost_model::TableSize;
///
/// let opts = AdaptiveOptions::default();
/// // Days of 60 000 random writes, nights of 60 000 reads (a third of
/// // them scans), observed in windows of 10 000 operations.
/// let day = WorkloadStats { writes: 60_000, ordered_writes: 30_000, updates: 4_800, inserts: 1_200, hot_range_share: 0.125, ..WorkloadStats::default() };
/// let night = WorkloadStats { reads: 58_800, scans: 18_000, writes: 1_200, ordered_writes: 600, updates: 120, hot_range_share: 0.125, ..WorkloadStats::default() };
/// // A 1 MiB table: reshaping it twice a day is cheap against a night of scans.
/// let plan = plan_day(&[day, night], 10_000, &TableSize::new(1 << 20, 16 << 10, 128), &opts).unwrap();
/// assert_ne!(plan.peak, plan.off_peak);
/// assert!(plan.pays() && plan.cost < plan.single_cost);
/// // A 64 MiB table: rewriting it twice a day costs more than it saves.
/// let plan = plan_day(&[day, night], 10_000, &TableSize::new(64 << 20, 16 << 10, 128), &opts).unwrap();
/// assert!(!plan.pays() && plan.cost > plan.single_cost);
/// ```
pub fn plan_day(
    parts: &[WorkloadStats; 2],
    window_ops: u64,
    size: &TableSize,
    opts: &AdaptiveOptions,
) -> Option<DayPlan> {
    let objective = opts.objective;
    if objective == Objective::SpaceAmp || parts.iter().any(|p| p.total_ops() == 0) {
        return None;
    }
    let mut day = parts[0];
    day.merge(&parts[1]);
    let range_deletes = day.range_delete_share() >= opts.thresholds.range_delete_share;
    // Each candidate's cost per operation on each part's mix, and the
    // bytes above its last level it holds in that part.
    let priced: Vec<Priced> = opts
        .candidates(range_deletes)
        .into_iter()
        .filter_map(|strategy| {
            let mut per_op = [0.0; 2];
            let mut upper = [0.0; 2];
            for (p, stats) in parts.iter().enumerate() {
                let scored = score_of(&strategy, stats, size, opts);
                if scored.excess > 0.0 {
                    return None;
                }
                let mix = Mix::from_stats(stats);
                per_op[p] = op_cost(&scored, &mix, size, objective);
                upper[p] = mean_upper_bytes(&strategy, &mix, size);
            }
            Some(Priced {
                strategy,
                per_op,
                upper,
            })
        })
        .collect();
    let ops = parts.map(|p| p.total_ops() as f64);
    let lag = ops.map(|o| o.min(window_ops as f64));
    // Reshaping from `from` at the end of part `p` into `to`: from the
    // bytes above the last level `from` holds, which part `p`'s writes put
    // there (its mix says how they spread over the last level).
    let reshape = |from: &Priced, to: &Priced, p: usize| {
        let at = TableSize {
            upper_bytes: from.upper[p] as u64,
            ..*size
        };
        let bytes = reshape_bytes(
            &from.strategy,
            &to.strategy,
            &Mix::from_stats(&parts[p]),
            &at,
        );
        match objective {
            Objective::Cpu => opts.costs.rewrite(bytes),
            Objective::WriteAmp | Objective::SpaceAmp => bytes,
        }
    };
    let (single, single_cost) = priced
        .iter()
        .map(|c| (&c.strategy, c.per_op[0] * ops[0] + c.per_op[1] * ops[1]))
        .min_by(|a, b| a.1.total_cmp(&b.1))?;
    let mut best: Option<DayPlan> = None;
    for peak in &priced {
        for off in &priced {
            if peak.strategy == off.strategy {
                continue;
            }
            let reshapes = reshape(peak, off, 0) + reshape(off, peak, 1);
            let (pc, oc) = (peak.per_op, off.per_op);
            let cost = pc[0] * (ops[0] - lag[0])
                + oc[0] * lag[0]
                + oc[1] * (ops[1] - lag[1])
                + pc[1] * lag[1]
                + reshapes;
            if cost.is_finite() && best.as_ref().is_none_or(|b| cost < b.cost) {
                best = Some(DayPlan {
                    peak: peak.strategy.clone(),
                    off_peak: off.strategy.clone(),
                    cost,
                    reshapes,
                    single: single.clone(),
                    single_cost,
                    objective,
                });
            }
        }
    }
    best
}

/// A candidate priced for each part of the day.
struct Priced {
    strategy: CompactionStrategy,
    /// `[peak, off-peak]`: what one operation of the part costs.
    per_op: [f64; 2],
    /// `[peak, off-peak]`: the bytes above the last level the shape holds
    /// in the part on average, which a reshape at its end starts from.
    upper: [f64; 2],
}

/// What one operation of `mix` costs in `scored`'s shape, in the
/// objective's units (µs of CPU, or bytes written).
fn op_cost(scored: &Scored, mix: &Mix, size: &TableSize, objective: Objective) -> f64 {
    match objective {
        Objective::WriteAmp => {
            scored.prediction.write_amp * mix.write_share * size.user_bytes_per_write()
        }
        Objective::Cpu | Objective::SpaceAmp => scored.cpu_us,
    }
}
