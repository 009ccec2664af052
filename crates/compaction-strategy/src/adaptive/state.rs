//! [`AdaptiveState`]: one table's current strategy and when to leave it.

use crate::cost_model::{Objective, Scored, TableSize, reshape_bytes};
use crate::strategy::CompactionStrategy;

use super::WorkloadStats;
use super::day_plan::{DayPlan, plan_day};
use super::{AdaptiveOptions, Choice, choose_strategy, score_of};

/// A switch decided by [`AdaptiveState::observe`].
#[derive(Debug, Clone, PartialEq)]
pub struct Switch {
    /// The strategy before.
    pub from: CompactionStrategy,
    /// The strategy after.
    pub to: CompactionStrategy,
    /// Why.
    pub reason: String,
}

/// Flushes a table must hold before the model decides anything: below
/// it the table is far from the steady state the model predicts (a table
/// still growing from empty would switch to what suits its first
/// megabytes).
pub const MIN_TABLE_FLUSHES: f64 = 4.0;

/// Smallest predicted gain, as a share of the current strategy's figure,
/// that counts as a better choice (below it the two are a tie, and a tie
/// never switches).
pub const MIN_GAIN: f64 = 0.03;

/// The adaptive strategy's state for one table: the strategy in force and
/// the evidence for leaving it.
///
/// Each window, [`choose_strategy`] ranks the candidates by the cost
/// model. While one candidate stays the best and beats the current
/// strategy by at least [`MIN_GAIN`], the state adds up what staying
/// costs — the gain per operation times the window's operations (µs of
/// CPU for the `cpu` objective, bytes written for `write-amp`), the
/// current strategy priced at what it has written lately when that is
/// less than its prediction (a table far from its steady state; see
/// [`OBSERVED_MIN_FLUSHES`]) —
/// and switches to it once that regret pays for reshaping the table
/// ([`reshape_bytes`](crate::cost_model::reshape_bytes)), the
/// ski-rental rule, and at least `switch_after_windows` windows agreed. A
/// window where the current strategy is best (or within [`MIN_GAIN`]), or
/// where another candidate is best, starts the count and the regret
/// again: a mix that only now and then favours a shape never pays for
/// reshaping to it. With the `space-amp` objective, and whenever the
/// current strategy exceeds the limits more than the best candidate, the
/// windows alone decide. Nothing is decided before the table holds
/// [`MIN_TABLE_FLUSHES`] flushes.
///
/// Going back to the strategy the last switch left costs more: each
/// consecutive return doubles the windows it needs (at most
/// [`MAX_RETURN_DOUBLINGS`] times), since a workload swinging between two
/// mixes pays a reshaping compaction at every switch. The strategy left,
/// and the doubling, are forgotten once the current strategy has been
/// chosen [`SETTLED_WINDOWS`] windows in a row, or
/// [`FORGET_AFTER_WINDOWS`] windows after the switch whatever they chose.
///
/// ```
/// use lithify_compaction_strategy::adaptive::{AdaptiveOptions, AdaptiveState, WorkloadStats};
/// use lithify_compaction_strategy::cost_model::TableSize;
///
/// let mut state = AdaptiveState::new(AdaptiveOptions::default());
/// assert_eq!(state.current().to_string(), "two-tier(minor=none,stripes=1,ratio=1)");
/// // A 1 MiB table of 16 KiB flushes, read and scanned: one L0 table per
/// // flush leaves ~32 sorted runs for each scan to merge; merging each
/// // flush with the previous L0 table leaves two, and reshaping (the
/// // table's L0) costs less than a window of the gain.
/// state.set_table_size(TableSize::new(1 << 20, 16 << 10, 128));
/// let scans = WorkloadStats {
///     reads: 9_800, scans: 3_000, writes: 200, ordered_writes: 100, updates: 20,
///     hot_range_share: 0.125, ..WorkloadStats::default()
/// };
/// assert!(state.observe(&scans).is_none()); // one window is not enough
/// let switch = state.observe(&scans).unwrap();
/// assert_eq!(switch.to.to_string(), "two-tier(minor=merge-previous,stripes=1,ratio=0.25)");
/// assert!(state.reason().starts_with("read-mostly"));
/// ```
#[derive(Debug, Clone)]
pub struct AdaptiveState {
    opts: AdaptiveOptions,
    current: CompactionStrategy,
    reason: String,
    size: TableSize,
    /// The current strategy's prediction for the last window's mix.
    prediction: Option<Scored>,
    /// The candidate that beat the current strategy in the last windows.
    pending: Option<Pending>,
    /// The strategy the last switch left.
    left: Option<CompactionStrategy>,
    /// Consecutive switches back to the strategy the switch before left.
    returns: u32,
    /// Windows in a row that chose the current strategy.
    settled: u32,
    /// Windows since the last switch.
    since_switch: u32,
    /// The mix of each part of the day, when the table has an off-peak
    /// window.
    day: DailyMix,
    /// What the current strategy has written lately.
    written: Written,
    /// The cheapest shape per part of the day, as the latest part's
    /// start weighed it.
    plan: Option<DayPlan>,
    /// Whether the table follows `plan`.
    following: bool,
}

/// The bytes the current strategy's flushes and compactions wrote, and the
/// user bytes they were for, over about the last table's worth of user
/// writes (older windows fade out), since the switch to it.
#[derive(Debug, Clone, Copy, Default)]
struct Written {
    table_bytes: f64,
    user_bytes: f64,
}

/// User bytes, in memtables, the current strategy must have written for
/// since the switch before its observed write amplification counts.
pub const OBSERVED_MIN_FLUSHES: f64 = 4.0;

impl Written {
    /// Adds a window, fading what came before by how much of the table
    /// (`live_bytes`, in user bytes) the window's writes renewed.
    fn add(&mut self, stats: &WorkloadStats, live_user_bytes: f64) {
        let user = stats.user_bytes as f64;
        let fade = (-user / live_user_bytes.max(1.0)).exp();
        self.table_bytes = self.table_bytes * fade + stats.table_bytes_written as f64;
        self.user_bytes = self.user_bytes * fade + user;
    }

    /// Table bytes per user byte, once `min_user_bytes` count.
    fn write_amp(&self, min_user_bytes: f64) -> Option<f64> {
        (self.user_bytes >= min_user_bytes.max(1.0) && self.user_bytes > 0.0)
            .then(|| self.table_bytes / self.user_bytes)
    }
}

/// Where a window fell in the table's day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DayPart {
    /// The table has no off-peak window.
    Unknown,
    /// Outside the off-peak window.
    Peak,
    /// Inside the off-peak window.
    OffPeak,
}

/// The workload of a day with an off-peak window: for each part, the
/// operations of its last whole stretch and of the stretch in progress.
#[derive(Debug, Clone, Default)]
struct DailyMix {
    /// `[peak, off-peak]`: the last whole stretch.
    last: [WorkloadStats; 2],
    /// `[peak, off-peak]`: the stretch in progress (zero for the part the
    /// day is not in).
    now: [WorkloadStats; 2],
    /// The part of the last window.
    part: Option<usize>,
    /// Whether a day's mix has decided yet.
    decided: bool,
    /// `[peak, off-peak]`: whether `now` began at a change of part (the
    /// stretch in progress when observation started may be partial).
    now_whole: [bool; 2],
    /// `[peak, off-peak]`: whether `last` is a whole stretch.
    last_whole: [bool; 2],
}

impl DailyMix {
    /// Adds a window of `part` (0 peak, 1 off-peak); returns whether it
    /// starts a stretch (the first window, or a change of part).
    fn add(&mut self, part: usize, stats: &WorkloadStats) -> bool {
        let started = self.part != Some(part);
        if self.part.is_some_and(|p| p != part) {
            let other = 1 - part;
            self.last[other] = std::mem::take(&mut self.now[other]);
            self.last_whole[other] = self.now_whole[other];
            self.now_whole[part] = true;
        }
        self.part = Some(part);
        self.now[part].merge(stats);
        started
    }

    /// Part `p`'s last whole stretch, or the stretch in progress once it
    /// is longer.
    fn part(&self, p: usize) -> WorkloadStats {
        if self.now[p].total_ops() >= self.last[p].total_ops() {
            self.now[p]
        } else {
            self.last[p]
        }
    }

    /// One day's mix: each part's [`part`](Self::part), weighed by their
    /// operations. `None` until both parts have been seen.
    fn mix(&self) -> Option<WorkloadStats> {
        let (peak, off) = (self.part(0), self.part(1));
        if peak.total_ops() == 0 || off.total_ops() == 0 {
            return None;
        }
        let mut day = peak;
        day.merge(&off);
        Some(day)
    }

    /// Each part's [`part`](Self::part), once a whole stretch of each has
    /// been seen: the phase lengths a [`DayPlan`] weighs.
    fn whole_parts(&self) -> Option<[WorkloadStats; 2]> {
        (self.last_whole == [true, true]).then(|| [self.part(0), self.part(1)])
    }
}

/// Most doublings of the windows a return needs (16 times
/// `switch_after_windows`).
pub const MAX_RETURN_DOUBLINGS: u32 = 4;

/// Windows in a row choosing the current strategy after which returns
/// count from zero again.
pub const SETTLED_WINDOWS: u32 = 16;

/// Windows after a switch after which the strategy it left is forgotten
/// whatever they chose: a return never waits longer than this plus
/// `switch_after_windows`, even when stray windows keep resetting its
/// count.
pub const FORGET_AFTER_WINDOWS: u32 = 64;

impl AdaptiveState {
    /// Starts with the options' initial strategy, for a table of the
    /// default [`TableSize`] until [`set_table_size`](Self::set_table_size).
    pub fn new(opts: AdaptiveOptions) -> Self {
        let current = opts.sized(&opts.initial);
        AdaptiveState {
            reason: format!(
                "initial strategy, before {} operations were observed",
                opts.min_window_ops
            ),
            opts,
            current,
            size: TableSize::default(),
            prediction: None,
            pending: None,
            left: None,
            returns: 0,
            settled: 0,
            since_switch: 0,
            day: DailyMix::default(),
            written: Written::default(),
            plan: None,
            following: false,
        }
    }

    /// Tells the model the table's size (before each window is observed).
    pub fn set_table_size(&mut self, size: TableSize) {
        self.size = size;
    }

    /// The table size the model was last given.
    pub fn table_size(&self) -> &TableSize {
        &self.size
    }

    /// Windows in a row a candidate must win before the table switches to
    /// it: `switch_after_windows`, doubled for each consecutive return if
    /// the candidate is the strategy the last switch left.
    pub fn windows_needed(&self, candidate: &CompactionStrategy) -> u32 {
        let base = self.opts.switch_after_windows.max(1);
        if self.left.as_ref() == Some(candidate) {
            base.saturating_mul(1 << self.returns.saturating_add(1).min(MAX_RETURN_DOUBLINGS))
        } else {
            base
        }
    }

    /// The strategy in force.
    pub fn current(&self) -> &CompactionStrategy {
        &self.current
    }

    /// Why it is in force.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// The model's prediction for the strategy in force on the last
    /// window's mix (none before the first full window).
    pub fn prediction(&self) -> Option<&Scored> {
        self.prediction.as_ref()
    }

    /// The cheapest shape per part of the day, as the latest start of a
    /// part weighed it (see [`plan_day`]), and whether the table follows
    /// it: from the start of a part where it [`pays`](DayPlan::pays) until
    /// the start of one where the same pair no longer
    /// [`beats_single`](DayPlan::beats_single) (another pair must pay).
    pub fn day_plan(&self) -> Option<(&DayPlan, bool)> {
        self.plan.as_ref().map(|p| (p, self.following))
    }

    /// The options.
    pub fn options(&self) -> &AdaptiveOptions {
        &self.opts
    }

    /// Feeds one window of a table without an off-peak window; returns
    /// the switch to make, if any.
    pub fn observe(&mut self, stats: &WorkloadStats) -> Option<Switch> {
        self.observe_at(stats, DayPart::Unknown)
    }

    /// Feeds one window that fell in `part` of the table's day; returns
    /// the switch to make, if any.
    ///
    /// A table with an off-peak window (RocksDB's
    /// `daily_offpeak_time_utc`) is taken to repeat its day: the
    /// candidates are scored on the whole day's mix (each part's last
    /// stretch, weighed by its operations) rather than on the last
    /// window, so a shape that suits only the daytime or only the night is
    /// not chased twice a day; and a switch the regret has paid for waits
    /// for the off-peak window, so the reshaping compaction runs when the
    /// foreground is quiet — unless the current shape breaks the limits
    /// more than the candidate does. The first day's mix starts the count
    /// and the regret again. Until both parts have been seen the
    /// last window's mix decides.
    ///
    /// Once a whole stretch of each part has been seen, each part's first
    /// window weighs their lengths and mixes for a shape per part
    /// ([`plan_day`]): when one pays for reshaping the table twice a day,
    /// that window switches to the part's shape without waiting for
    /// regret, and the table keeps it through the part. A plan taken up is
    /// kept while it costs less than the single shape at all, and when it
    /// no longer does, the table goes back to the single shape at once
    /// ([`day_plan`](Self::day_plan)).
    pub fn observe_at(&mut self, stats: &WorkloadStats, part: DayPart) -> Option<Switch> {
        // Checked here as well as in `choose_strategy`: that sees the
        // day's mix, which holds more than this window.
        if stats.total_ops() < self.opts.min_window_ops.max(1) {
            return None;
        }
        let (daily, started) = match part {
            DayPart::Unknown => {
                self.day = DailyMix::default();
                self.plan = None;
                self.following = false;
                (None, false)
            }
            DayPart::Peak | DayPart::OffPeak => {
                let started = self.day.add(usize::from(part == DayPart::OffPeak), stats);
                (self.day.mix(), started)
            }
        };
        if daily.is_some() && !self.day.decided {
            // Regret summed on the daytime's windows alone does not count
            // toward a choice made on the day's mix.
            self.day.decided = true;
            self.pending = None;
        }
        // The regret counts this window's operations at the day's gain
        // per operation.
        let ops = stats.total_ops() as f64;
        let window_stats = *stats;
        let stats = daily.as_ref().unwrap_or(stats);
        let mut choice = choose_strategy(stats, &self.size, &self.opts)?;
        if daily.is_some() {
            choice.situation = format!("a day's mix, {}", choice.situation);
            choice.reason = format!("a day's mix, {}", choice.reason);
        }
        let predicted = score_of(&self.current, stats, &self.size, &self.opts);
        self.prediction = Some(predicted.clone());
        // Staying costs what the current shape writes now: while it writes
        // less than its steady state (a table still far from it, a hot
        // range its compactions keep small), that is what the regret
        // counts.
        let bytes_per_user = self.size.table_bytes_per_user_byte.max(1e-9);
        self.written
            .add(&window_stats, self.size.live_bytes as f64 / bytes_per_user);
        let min_user = OBSERVED_MIN_FLUSHES * self.size.flush_bytes as f64 / bytes_per_user;
        let (current, observed) = match self.written.write_amp(min_user) {
            Some(observed) if observed < predicted.prediction.write_amp => (
                self.opts
                    .rescore_written(&predicted, observed, &choice.mix, &self.size),
                true,
            ),
            _ => (predicted, false),
        };
        self.since_switch = self.since_switch.saturating_add(1);
        if self.since_switch >= FORGET_AFTER_WINDOWS {
            self.left = None;
            self.returns = 0;
        }
        if (self.size.live_bytes as f64) < MIN_TABLE_FLUSHES * self.size.flushed_bytes() {
            self.reason = format!(
                "{}; keeping {} until the table holds {MIN_TABLE_FLUSHES} flushes",
                choice.situation, self.current
            );
            self.pending = None;
            return None;
        }
        if let (Some(day_mix), Some(parts)) = (&daily, self.day.whole_parts()) {
            let here = usize::from(part == DayPart::OffPeak);
            if started {
                // Weighed at each part's start, on the stretches seen so
                // far: taken up when it pays, kept while it beats the single
                // shape at all.
                let before = self.plan.take().filter(|_| self.following);
                self.plan = plan_day(&parts, window_stats.total_ops(), &self.size, &self.opts);
                let was_following = before.is_some();
                let same_pair = |p: &DayPlan| {
                    before
                        .as_ref()
                        .is_some_and(|b| b.peak == p.peak && b.off_peak == p.off_peak)
                };
                self.following = self
                    .plan
                    .as_ref()
                    .is_some_and(|p| p.pays() || (same_pair(p) && p.beats_single()));
                if was_following
                    && !self.following
                    && let Some(plan) = self.plan.clone()
                    && plan.single != self.current
                {
                    // Back to the single shape at once, rather than keep the
                    // other part's shape until a held switch.
                    let prediction = score_of(&plan.single, day_mix, &self.size, &self.opts);
                    let reason = format!(
                        "{}; {plan} no longer pays: back to {}",
                        choice.situation, plan.single
                    );
                    return Some(self.plan_switch(prediction, reason));
                }
            }
            if self.following
                && let Some(plan) = self.plan.clone()
            {
                return self.follow_plan(plan, here == 1, &choice.situation, &parts[here]);
            }
            if let Some(plan) = &self.plan {
                choice.situation = format!(
                    "{}; no shape per part of the day pays ({plan})",
                    choice.situation
                );
            }
        }
        let best = &choice.ranked[0];
        let objective = self.opts.objective;
        let gain = current.score(objective) - best.score(objective);
        let breaks_limit = current.excess > best.excess;
        // A gain the model cannot tell (not finite) is a tie.
        let tie = !gain.is_finite() || gain < MIN_GAIN * current.score(objective).abs();
        if best.strategy == self.current || (!breaks_limit && tie) {
            self.reason = format!(
                "{}{}",
                choice.situation,
                stay_note(&current, &choice, observed)
            );
            self.pending = None;
            self.settled = self.settled.saturating_add(1);
            if self.settled >= SETTLED_WINDOWS {
                self.returns = 0;
                self.left = None;
            }
            return None;
        }
        self.settled = 0;
        let (regret_per_op, reshape) = match objective {
            Objective::Cpu => (
                gain,
                self.opts.costs.rewrite(reshape_bytes(
                    &self.current,
                    &best.strategy,
                    &choice.mix,
                    &self.size,
                )),
            ),
            Objective::WriteAmp => (
                gain * choice.mix.write_share * self.size.user_bytes_per_write(),
                reshape_bytes(&self.current, &best.strategy, &choice.mix, &self.size),
            ),
            Objective::SpaceAmp => (0.0, 0.0),
        };
        let (windows_so_far, regret) = match &self.pending {
            Some(p) if p.target == best.strategy => (p.windows + 1, p.regret + regret_per_op * ops),
            _ => (1, regret_per_op * ops),
        };
        let windows = self.windows_needed(&best.strategy);
        let paid = windows_so_far >= windows && (breaks_limit || regret >= reshape);
        let held = paid && part == DayPart::Peak && !breaks_limit;
        if !paid || held {
            self.reason = if held {
                format!(
                    "{}; switching to {} in the off-peak window: it would save {:.3} per op ({:.0} so far, {:.0} to reshape)",
                    choice.situation, best.strategy, gain, regret, reshape,
                )
            } else {
                format!(
                    "{}; staying with {} while {} would save {:.3} per op ({:.0} so far, {:.0} to reshape; {}/{} windows)",
                    choice.situation,
                    self.current,
                    best.strategy,
                    gain,
                    regret,
                    reshape,
                    windows_so_far,
                    windows,
                )
            };
            self.pending = Some(Pending {
                target: best.strategy.clone(),
                windows: windows_so_far,
                regret,
            });
            return None;
        }
        self.pending = None;
        self.returns = if self.left.as_ref() == Some(&best.strategy) {
            self.returns.saturating_add(1)
        } else {
            0
        };
        let best = best.clone();
        Some(self.switch_to(best, choice.reason))
    }

    /// Follows `plan` in a window of the off-peak part (or the peak):
    /// switches to the part's shape unless it is in force. Switches a
    /// plan makes wait for no regret (the plan has weighed the reshapes)
    /// and never count as returns.
    fn follow_plan(
        &mut self,
        plan: DayPlan,
        off_peak: bool,
        situation: &str,
        part_stats: &WorkloadStats,
    ) -> Option<Switch> {
        let target = plan.shape(off_peak).clone();
        let reason = format!("{situation} -> {plan}");
        let when = if off_peak { "off-peak" } else { "at peak" };
        self.pending = None;
        self.settled = 0;
        self.plan = Some(plan);
        if target == self.current {
            self.reason = format!("{reason}; keeping {target} {when}");
            return None;
        }
        let prediction = score_of(&target, part_stats, &self.size, &self.opts);
        Some(self.plan_switch(prediction, format!("{reason}; {target} {when}")))
    }

    /// A switch a day plan makes: never a return, so it neither doubles
    /// the windows the next switch needs nor remembers what it left.
    fn plan_switch(&mut self, to: Scored, reason: String) -> Switch {
        let switch = self.switch_to(to, reason);
        self.left = None;
        self.returns = 0;
        switch
    }

    /// Makes `to` the strategy in force, for `reason`.
    fn switch_to(&mut self, to: Scored, reason: String) -> Switch {
        self.since_switch = 0;
        self.written = Written::default();
        let from = std::mem::replace(&mut self.current, to.strategy.clone());
        self.left = Some(from.clone());
        let switch = Switch {
            from,
            to: to.strategy.clone(),
            reason: reason.clone(),
        };
        self.prediction = Some(to);
        self.reason = reason;
        switch
    }
}

/// A candidate that has been the best for some windows in a row.
#[derive(Debug, Clone)]
struct Pending {
    target: CompactionStrategy,
    windows: u32,
    /// What staying cost over those windows (objective units).
    regret: f64,
}

/// The reason's tail when the table stays: the current strategy's
/// figures, `observed` when priced at the write amplification it has shown
/// rather than its prediction.
fn stay_note(current: &Scored, choice: &Choice, observed: bool) -> String {
    if current.strategy == choice.strategy {
        format!(" -> {}", choice.verdict)
    } else {
        format!(
            " -> keeping {}: {} {}, {:.2} µs/op (best {} within {:.0} %)",
            current.strategy,
            if observed {
                "as it writes,"
            } else {
                "predicted"
            },
            current.prediction,
            current.cpu_us,
            choice.strategy,
            100.0 * MIN_GAIN
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::window;
    use super::*;

    /// Starting from the size-tiered two-tier shape, which no window
    /// chooses: every stream starts with a switch.
    fn opts() -> AdaptiveOptions {
        AdaptiveOptions::default()
            .min_window_ops(1_000)
            .initial(Box::new(CompactionStrategy::TwoTier(
                lithify_compaction_tiered::TwoTierOptions::default(),
            )))
    }

    /// A table small enough that reshaping it costs less than one window
    /// of regret: the windows alone decide.
    fn small() -> TableSize {
        TableSize::new(1 << 20, 16 << 10, 128)
    }

    fn state(size: TableSize) -> AdaptiveState {
        let mut s = AdaptiveState::new(opts());
        s.set_table_size(size);
        s
    }

    /// Random writes, 80 % updates.
    fn writes() -> WorkloadStats {
        window(0, 0, 10_000, 0.5, 0.8)
    }

    /// Reads, a third of them scans, and 2 % updates.
    fn scans() -> WorkloadStats {
        window(9_800, 3_000, 200, 0.5, 1.0)
    }

    /// Switches of `state` fed `windows`: (window index, new strategy).
    fn switches(
        state: &mut AdaptiveState,
        windows: impl IntoIterator<Item = WorkloadStats>,
    ) -> Vec<(usize, String)> {
        windows
            .into_iter()
            .enumerate()
            .filter_map(|(i, w)| state.observe(&w).map(|s| (i, s.to.to_string())))
            .collect()
    }

    const WRITE_SHAPE: &str = "two-tier(minor=none,stripes=1,ratio=1)";
    const SCAN_SHAPE: &str = "two-tier(minor=merge-previous,stripes=1,ratio=0.25)";
    const BOUNDED_SHAPE: &str = "two-tier(minor=none,stripes=1,ratio=1,max-l0=16)";

    /// Staying is priced by what the current shape writes when that is
    /// less than the model predicts for it (a table far from its steady
    /// state), and by the prediction when it writes more.
    #[test]
    fn a_shape_writing_less_than_predicted_is_priced_by_what_it_writes() {
        let with = |table_per_user: u64| WorkloadStats {
            user_bytes: 1_000_000,
            table_bytes_written: table_per_user * 1_000_000,
            ..writes()
        };
        let predicted = switches(&mut state(small()), std::iter::repeat_n(writes(), 4));
        assert_eq!(predicted, vec![(1, WRITE_SHAPE.to_owned())]);
        // Writing no more than its flushes: cheaper than any prediction.
        let cheap = switches(&mut state(small()), std::iter::repeat_n(with(1), 4));
        assert_eq!(cheap, vec![]);
        // Writing far more than predicted: the prediction stands.
        let dear = switches(&mut state(small()), std::iter::repeat_n(with(100), 4));
        assert_eq!(dear, predicted);
        // Too few user bytes to say (under four flushes): the prediction.
        let few = WorkloadStats {
            user_bytes: 1_000,
            table_bytes_written: 1_000,
            ..writes()
        };
        assert_eq!(
            switches(&mut state(small()), std::iter::repeat_n(few, 4)),
            predicted
        );
    }

    #[test]
    fn the_two_mixes_have_different_best_shapes() {
        let w = choose_strategy(&writes(), &small(), &opts()).unwrap();
        let s = choose_strategy(&scans(), &small(), &opts()).unwrap();
        assert_eq!(w.strategy.to_string(), WRITE_SHAPE);
        assert_eq!(s.strategy.to_string(), SCAN_SHAPE);
    }

    #[test]
    fn a_stationary_mix_switches_once() {
        let mut s = state(small());
        assert_eq!(
            switches(&mut s, vec![writes(); 60]),
            [(1, WRITE_SHAPE.to_owned())]
        );
        let p = s.prediction().unwrap();
        assert_eq!(p.strategy.to_string(), WRITE_SHAPE);
        assert!(s.reason().contains("predicted write amp"), "{}", s.reason());
    }

    #[test]
    fn a_phase_change_switches_after_the_agreeing_windows() {
        let stream = std::iter::repeat_n(writes(), 20).chain(std::iter::repeat_n(scans(), 20));
        // Windows 20 and 21 are scans: the switch comes with the second,
        // as at the start.
        assert_eq!(
            switches(&mut state(small()), stream),
            [(1, WRITE_SHAPE.to_owned()), (21, SCAN_SHAPE.to_owned())]
        );
    }

    #[test]
    fn reshaping_a_large_table_waits_until_staying_cost_as_much() {
        // 4 GiB in 256 MiB flushes, leveled: random writes would be
        // cheaper with one L0 table per flush, but reshaping rewrites the
        // whole table, which takes many windows of regret to pay for.
        let size = TableSize::new(4 << 30, 256 << 20, 128);
        let mut s = AdaptiveState::new(
            opts().initial(Box::new(CompactionStrategy::Leveled(Default::default()))),
        );
        s.set_table_size(size);
        assert!(s.observe(&writes()).is_none());
        let current = s.prediction().unwrap().clone();
        let best = choose_strategy(&writes(), &size, &opts()).unwrap();
        assert_eq!(best.strategy.to_string(), WRITE_SHAPE);
        let gain = current.cpu_us - best.cpu_us;
        assert!(gain > 0.0);
        let reshape =
            opts()
                .costs
                .rewrite(reshape_bytes(s.current(), &best.strategy, &best.mix, &size));
        assert_eq!(reshape, opts().costs.rewrite((4u64 << 30) as f64));
        let windows = (reshape / (gain * 10_000.0)).ceil() as usize;
        assert!(windows > 10, "{windows}");
        let at = switches(&mut s, vec![writes(); windows + 5]);
        // Window 0 was fed above: the regret of `windows` windows pays.
        assert_eq!(at, [(windows - 2, WRITE_SHAPE.to_owned())]);
        assert!(s.reason().contains("predicted write amp"), "{}", s.reason());
    }

    #[test]
    fn a_table_too_small_for_the_model_keeps_its_shape() {
        // Three flushes: nothing is decided.
        let mut s = state(TableSize::new(48 << 10, 16 << 10, 128));
        assert!(switches(&mut s, vec![writes(); 10]).is_empty());
        assert!(
            s.reason().contains("until the table holds 4 flushes"),
            "{}",
            s.reason()
        );
    }

    #[test]
    fn returns_need_twice_the_windows_each_time() {
        let mut s = state(small());
        let mut feed = |w: &WorkloadStats, n: usize| -> Vec<usize> {
            (0..n).filter_map(|i| s.observe(w).map(|_| i)).collect()
        };
        assert_eq!(feed(&writes(), 4), [1]); // initial -> write shape
        assert_eq!(feed(&scans(), 4), [1]); // a new strategy: 2 windows
        assert_eq!(feed(&writes(), 6), [3]); // the first return: 4 windows
        assert_eq!(feed(&scans(), 10), [7]); // the second: 8 windows
        // The third return would need 16 windows; 10 are not enough.
        assert_eq!(feed(&writes(), 10), Vec::<usize>::new());
        // Once the current strategy held for SETTLED_WINDOWS windows, the
        // strategy it replaced is forgotten: going back needs 2 windows.
        assert_eq!(
            feed(&scans(), SETTLED_WINDOWS as usize),
            Vec::<usize>::new()
        );
        assert_eq!(feed(&writes(), 2), [1]);
    }

    #[test]
    fn stray_windows_cannot_hold_a_return_off_for_ever() {
        let mut s = state(small());
        let mut feed = |w: &WorkloadStats, n: usize| -> Vec<usize> {
            (0..n).filter_map(|i| s.observe(w).map(|_| i)).collect()
        };
        // Two returns: the next would need 16 windows in a row.
        assert_eq!(feed(&writes(), 2), [1]);
        assert_eq!(feed(&scans(), 2), [1]);
        assert_eq!(feed(&writes(), 4), [3]);
        assert_eq!(feed(&scans(), 8), [7]);
        // Now the mix is writes but one window in ten is scans: rounds of
        // nine write windows never reach 16. The return comes once the
        // strategy left is forgotten, FORGET_AFTER_WINDOWS after the last
        // switch: in round 6, at its fourth write window, the 64th window
        // since the switch.
        let mut at = Vec::new();
        for round in 0..10 {
            for i in feed(&writes(), 9) {
                at.push((round, i));
            }
            assert!(feed(&scans(), 1).is_empty());
        }
        assert_eq!(at, [(6, 3)]);
    }

    #[test]
    fn a_mix_swinging_every_few_windows_stops_switching() {
        // Day and night: 7 write windows, then 5 scan windows, twenty
        // times over.
        let day_night = (0..20)
            .flat_map(|_| std::iter::repeat_n(writes(), 7).chain(std::iter::repeat_n(scans(), 5)));
        let at: Vec<usize> = switches(&mut state(small()), day_night)
            .iter()
            .map(|(i, _)| *i)
            .collect();
        // The first switch, a swing and a return, then quiet until the
        // strategy left is forgotten, when a swing and a return happen
        // again: 2 per 72 windows.
        assert_eq!(at, [1, 8, 15, 80, 87, 152, 159, 224, 231]);
    }

    #[test]
    fn a_broken_limit_switches_without_waiting_for_regret() {
        let o = opts().limits(crate::cost_model::Limits::default().max_space_amp(Some(1.2)));
        let size = TableSize::new(4 << 30, 256 << 20, 128);
        let mut s = AdaptiveState::new(o.initial(Box::new(CompactionStrategy::TwoTier(
            lithify_compaction_tiered::TwoTierOptions::write_only(),
        ))));
        s.set_table_size(size);
        // One L0 table per flush holds 40 % duplicates: beyond 1.2.
        assert!(s.observe(&writes()).is_none());
        assert!(s.prediction().unwrap().excess > 0.0);
        let sw = s.observe(&writes()).unwrap();
        assert!(s.prediction().unwrap().excess == 0.0, "{}", sw.reason);
    }

    /// Switches of `state` fed `(part of the day, window)` pairs.
    fn switches_at(
        state: &mut AdaptiveState,
        windows: impl IntoIterator<Item = (DayPart, WorkloadStats)>,
    ) -> Vec<(usize, String)> {
        windows
            .into_iter()
            .enumerate()
            .filter_map(|(i, (part, w))| state.observe_at(&w, part).map(|s| (i, s.to.to_string())))
            .collect()
    }

    /// `days` days of six daytime windows of writes and four off-peak
    /// windows of reads and scans.
    fn diurnal(days: usize) -> Vec<(DayPart, WorkloadStats)> {
        days_of(days, 6, 4)
    }

    /// `days` days of `peak` daytime windows of writes and `off_peak`
    /// windows of reads and scans.
    fn days_of(days: usize, peak: usize, off_peak: usize) -> Vec<(DayPart, WorkloadStats)> {
        let day = std::iter::repeat_n((DayPart::Peak, writes()), peak)
            .chain(std::iter::repeat_n((DayPart::OffPeak, scans()), off_peak));
        day.cycle().take((peak + off_peak) * days).collect()
    }

    #[test]
    fn with_an_offpeak_window_a_paid_switch_waits_for_it() {
        let mut s = state(small());
        let day = std::iter::repeat_n((DayPart::Peak, writes()), 5)
            .chain(std::iter::repeat_n((DayPart::OffPeak, writes()), 3));
        // The daytime windows agree from window 1 on, and the regret has
        // paid: the switch is held.
        for (part, w) in day.clone().take(5) {
            assert!(s.observe_at(&w, part).is_none());
        }
        assert!(
            s.reason().contains(&format!(
                "switching to {WRITE_SHAPE} in the off-peak window"
            )),
            "{}",
            s.reason()
        );
        // The first off-peak window brings the day's mix, which starts
        // the count again; the second agrees and switches.
        assert!(s.observe_at(&writes(), DayPart::OffPeak).is_none());
        assert!(s.reason().starts_with("a day's mix, "), "{}", s.reason());
        assert!(s.observe_at(&writes(), DayPart::OffPeak).is_some());
        assert_eq!(
            switches_at(&mut state(small()), day),
            [(6, WRITE_SHAPE.to_owned())]
        );
    }

    /// Starting major-only, which rewrites the table at every flush.
    fn from_major(size: TableSize) -> AdaptiveState {
        let mut s = AdaptiveState::new(
            opts().initial(Box::new(CompactionStrategy::MajorOnly(Default::default()))),
        );
        s.set_table_size(size);
        s
    }

    #[test]
    fn with_an_offpeak_window_the_day_mix_decides_and_stays() {
        // 64 MiB: reshaping twice a day costs more than a shape per part
        // saves.
        let size = TableSize::new(64 << 20, 16 << 10, 128);
        let mut day_mix = writes();
        for _ in 0..5 {
            day_mix.merge(&writes());
        }
        for _ in 0..4 {
            day_mix.merge(&scans());
        }
        let expected = choose_strategy(&day_mix, &size, &opts()).unwrap().strategy;
        assert_eq!(expected.to_string(), WRITE_SHAPE);
        let mut s = from_major(size);
        let with_window = switches_at(&mut s, diurnal(10));
        // The daytime's paid switch waits for the night, where the day's
        // mix starts the count again and decides once two windows agree;
        // from then on one shape fits every day and nothing switches.
        assert_eq!(with_window, [(7, expected.to_string())]);
        assert_eq!(s.current(), &expected);
        assert!(
            s.day_plan()
                .is_some_and(|(p, following)| !p.pays() && !following)
        );
        assert!(
            s.reason().contains("no shape per part of the day pays"),
            "{}",
            s.reason()
        );
        // Without the window, on a table small enough for a window's
        // regret to pay a reshape, each part's mix is chased in turn.
        let unaware: Vec<_> = diurnal(10)
            .into_iter()
            .map(|(_, w)| (DayPart::Unknown, w))
            .collect();
        let chased = switches_at(&mut from_major(small()), unaware);
        assert_eq!(
            chased.iter().map(|c| c.0).collect::<Vec<_>>(),
            [1, 7, 13, 77, 83]
        );
    }

    #[test]
    fn phases_that_repay_two_reshapes_get_a_shape_each() {
        // 1 MiB, nights of six windows of scans: five windows in the scan
        // shape save more than reshaping to it and back costs (four
        // nightly windows would pay too, barely).
        let mut s = from_major(small());
        let at = switches_at(&mut s, days_of(4, 6, 6));
        // Day one: the day's mix decides in the first night (window 7),
        // for a shape that suits the day as well. From day two, with a
        // whole stretch of each part seen, each night's first window
        // switches to the scan shape and each day's back.
        assert_eq!(
            at,
            [
                (7, BOUNDED_SHAPE.to_owned()),
                (18, SCAN_SHAPE.to_owned()),
                (24, BOUNDED_SHAPE.to_owned()),
                (30, SCAN_SHAPE.to_owned()),
                (36, BOUNDED_SHAPE.to_owned()),
                (42, SCAN_SHAPE.to_owned()),
            ]
        );
        let (plan, following) = s.day_plan().unwrap();
        assert!(following);
        assert_eq!(plan.peak.to_string(), BOUNDED_SHAPE);
        assert_eq!(plan.off_peak.to_string(), SCAN_SHAPE);
        assert!(plan.pays(), "{plan}");
        assert!(
            s.reason().contains("a shape per part of the day"),
            "{}",
            s.reason()
        );
        assert!(
            s.reason()
                .ends_with(&format!("keeping {SCAN_SHAPE} off-peak")),
            "{}",
            s.reason()
        );
        // Nights of three windows, the first still in the day's shape, do
        // not repay it: the day's mix decides, as before.
        let mut s = from_major(small());
        let at = switches_at(&mut s, days_of(4, 6, 3));
        assert!(
            s.day_plan()
                .is_some_and(|(p, following)| !p.pays() && !following)
        );
        assert_eq!(at, [(7, BOUNDED_SHAPE.to_owned())]);
    }

    #[test]
    fn a_plan_that_stops_paying_goes_back_to_one_shape_at_once() {
        // Three days with nights of six scan windows, then nights of one.
        let mut stream = days_of(3, 6, 6);
        stream.extend(days_of(3, 6, 1));
        let mut s = from_major(small());
        let at = switches_at(&mut s, stream);
        // The first short night (window 42) is weighed on the long night
        // before it and switches; at the next dawn the plan, weighed on
        // the short night, no longer beats one shape, and the table goes
        // back to it at once, in that window, and stays: another pair
        // that beats one shape by less than MIN_GAIN is not taken up.
        let points: Vec<_> = at.iter().map(|(i, to)| (*i, to.as_str())).collect();
        assert_eq!(
            points[points.len() - 3..],
            [(36, BOUNDED_SHAPE), (42, SCAN_SHAPE), (43, BOUNDED_SHAPE)]
        );
        let (plan, following) = s.day_plan().unwrap();
        assert!(!following && plan.beats_single() && !plan.pays(), "{plan}");
        assert!(
            s.reason().contains("no shape per part of the day pays"),
            "{}",
            s.reason()
        );
    }

    #[test]
    fn a_broken_limit_switches_in_the_daytime() {
        let size = TableSize::new(4 << 30, 256 << 20, 128);
        let mut s = AdaptiveState::new(
            opts()
                .limits(crate::cost_model::Limits::default().max_space_amp(Some(1.2)))
                .initial(Box::new(CompactionStrategy::TwoTier(
                    lithify_compaction_tiered::TwoTierOptions::write_only(),
                ))),
        );
        s.set_table_size(size);
        assert!(s.observe_at(&writes(), DayPart::Peak).is_none());
        assert!(
            s.observe_at(&writes(), DayPart::Peak).is_some(),
            "{}",
            s.reason()
        );
    }
}
