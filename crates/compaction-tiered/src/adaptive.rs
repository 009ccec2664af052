//! The `Adaptive` strategy: a pure function from a window of observed
//! workload statistics to a strategy and the reason for it, a recorder
//! that gathers the statistics, and a small state machine that switches
//! only when the choice holds for several windows.
//!
//! The choice follows this table (first matching row wins):
//!
//! | workload | class | choice |
//! |---|---|---|
//! | writes ≤ 1 % of operations | read-only | `MajorOnly` |
//! | ≥ 90 % of writes in increasing key order | increasing keys | `MajorOnly` |
//! | writes ≥ 95 % of operations | write-only | `TwoTier`, one L0 table per flush |
//! | writes ≥ 50 % | write-mostly | `TwoTier`, striped, size-tiered minors |
//! | updates ≤ 10 % of operations | read-mostly, few updates | `TwoTier`, flush merged with the previous L0 table |
//! | otherwise | read-mostly, many updates | `TwoTier`, striped, merged by hot range (size-tiered when no range is hot) |
//!
//! A range-delete share of at least 10 % halves the two-tier major ratio,
//! so deleted ranges are reclaimed sooner. Thresholds are
//! [`AdaptiveThresholds`].

use std::fmt;

use lithify_base::InternalKeyComparator;

use crate::options::{MajorOnlyOptions, MinorPolicy, TwoTierOptions};
use crate::strategy::{CompactionStrategy, two_tier_label};

/// What a table did during one observation window.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WorkloadStats {
    /// Point lookups and range scans.
    pub reads: u64,
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
        self.writes += o.writes;
        self.ordered_writes += o.ordered_writes;
        self.updates += o.updates;
        self.inserts += o.inserts;
        self.range_deletes += o.range_deletes;
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// The thresholds of the choice table (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
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
    /// At or above this share of writes in the busiest eighth of the key
    /// space, a range counts as hot.
    pub hot_range_share: f64,
    /// At or above this share of range deletes among writes, majors run
    /// at half the ratio.
    pub range_delete_share: f64,
}

impl Default for AdaptiveThresholds {
    fn default() -> Self {
        AdaptiveThresholds {
            read_only_write_share: 0.01,
            increasing_share: 0.9,
            write_only_write_share: 0.95,
            write_mostly_write_share: 0.5,
            few_updates_share: 0.1,
            hot_range_share: 0.4,
            range_delete_share: 0.1,
        }
    }
}

/// Options of the `Adaptive` strategy.
#[derive(Debug, Clone, PartialEq)]
pub struct AdaptiveOptions {
    /// The strategy before enough operations were observed (default
    /// `TwoTier` with its default options: every choice of the table is a
    /// two-tier shape, so switching among them never needs a reshaping
    /// compaction).
    pub initial: Box<CompactionStrategy>,
    /// Template for `MajorOnly` choices.
    pub major_only: MajorOnlyOptions,
    /// Template for `TwoTier` choices (file size, compression, subcompactions,
    /// `max_l0_tables`); the choice sets the minor policy, stripes and ratio.
    pub two_tier: TwoTierOptions,
    /// Operations a window needs before it counts (default 10 000).
    pub min_window_ops: u64,
    /// Consecutive windows that must agree on a new choice before the
    /// table switches (default 2): a switch costs a reshaping compaction.
    pub switch_after_windows: u32,
    /// The table's thresholds.
    pub thresholds: AdaptiveThresholds,
}

impl Default for AdaptiveOptions {
    fn default() -> Self {
        AdaptiveOptions {
            initial: Box::new(CompactionStrategy::TwoTier(TwoTierOptions::default())),
            major_only: MajorOnlyOptions::default(),
            two_tier: TwoTierOptions::default(),
            min_window_ops: 10_000,
            switch_after_windows: 2,
            thresholds: AdaptiveThresholds::default(),
        }
    }
}

/// The workload classes of the choice table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
    /// Every class, in the order of the issue's table.
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

/// A choice of the adaptive table.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// The workload class recognised.
    pub class: WorkloadClass,
    /// The strategy for it.
    pub strategy: CompactionStrategy,
    /// Why, with the measured figures (shown in the stats).
    pub reason: String,
}

/// Chooses a strategy for a window of `stats` by the table in the module
/// docs; `None` when the window has fewer than `min_window_ops`
/// operations.
///
/// ```
/// use lithify_compaction_tiered::adaptive::{AdaptiveOptions, WorkloadClass, WorkloadStats, choose_strategy};
///
/// let stats = WorkloadStats { reads: 5_000, writes: 5_000, ordered_writes: 4_990, ..WorkloadStats::default() };
/// let choice = choose_strategy(&stats, &AdaptiveOptions::default()).unwrap();
/// assert_eq!(choice.class, WorkloadClass::IncreasingKeys);
/// assert_eq!(choice.strategy.kind_name(), "major-only");
/// assert!(choice.reason.starts_with("increasing keys"));
/// ```
pub fn choose_strategy(stats: &WorkloadStats, opts: &AdaptiveOptions) -> Option<Choice> {
    if stats.total_ops() < opts.min_window_ops.max(1) {
        return None;
    }
    let t = &opts.thresholds;
    let write_share = stats.write_share();
    let class = if write_share <= t.read_only_write_share {
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
    };
    let hot = stats.hot_range_share >= t.hot_range_share;
    let template = |preset: TwoTierOptions| TwoTierOptions {
        target_file_size: opts.two_tier.target_file_size,
        max_subcompactions: opts.two_tier.max_subcompactions,
        compression: opts.two_tier.compression,
        max_l0_tables: opts.two_tier.max_l0_tables,
        disable_auto_compactions: opts.two_tier.disable_auto_compactions,
        ..preset
    };
    let mut strategy = match class {
        WorkloadClass::IncreasingKeys | WorkloadClass::ReadOnly => {
            CompactionStrategy::MajorOnly(opts.major_only.clone())
        }
        WorkloadClass::WriteOnly => {
            CompactionStrategy::TwoTier(template(TwoTierOptions::write_only()))
        }
        WorkloadClass::WriteMostly => {
            CompactionStrategy::TwoTier(template(TwoTierOptions::write_mostly()))
        }
        WorkloadClass::ReadMostlyFewUpdates => {
            CompactionStrategy::TwoTier(template(TwoTierOptions::read_mostly_few_updates()))
        }
        WorkloadClass::ReadMostlyManyUpdates => {
            let mut o = template(TwoTierOptions::read_mostly_many_updates());
            if !hot {
                o.minor = MinorPolicy::SizeTiered {
                    max_tables: 8,
                    size_ratio_percent: 1,
                };
            }
            CompactionStrategy::TwoTier(o)
        }
    };
    let range_deletes = stats.range_delete_share() >= t.range_delete_share;
    if range_deletes && let CompactionStrategy::TwoTier(o) = &mut strategy {
        o.major_ratio /= 2.0;
    }
    let what = match &strategy {
        CompactionStrategy::TwoTier(o) => format!("two-tier, {}", two_tier_label(o)),
        CompactionStrategy::MajorOnly(_) => "major-only (Memtable + L1)".to_owned(),
        other => other.to_string(),
    };
    let mut reason = format!(
        "{class}: writes {:.0}% of {} ops, {:.0}% in key order, {:.0}% updates, {:.0}% range deletes, hottest eighth {:.0}% -> {what}",
        100.0 * write_share,
        stats.total_ops(),
        100.0 * stats.ordered_share(),
        100.0 * stats.update_share(),
        100.0 * stats.range_delete_share(),
        100.0 * stats.hot_range_share,
    );
    if range_deletes && matches!(strategy, CompactionStrategy::TwoTier(_)) {
        reason.push_str(" (major ratio halved for range deletes)");
    }
    Some(Choice {
        class,
        strategy,
        reason,
    })
}

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

/// The adaptive strategy's state for one table: the current choice, its
/// reason, and a pending candidate that must win `switch_after_windows`
/// windows in a row before the table switches.
///
/// Going back to the strategy the last switch left costs more: each
/// consecutive return doubles the windows it needs (at most
/// [`MAX_RETURN_DOUBLINGS`] times), since a table whose workload swings
/// between two mixes pays a reshaping compaction at every switch (a
/// diurnal workload switched at every half day and cost 136 % of the
/// cheapest fixed strategy's CPU). The strategy left, and the doubling,
/// are forgotten once the current strategy has been chosen
/// [`SETTLED_WINDOWS`] windows in a row, or [`FORGET_AFTER_WINDOWS`]
/// windows after the switch whatever they chose.
///
/// ```
/// use lithify_compaction_tiered::adaptive::{AdaptiveOptions, AdaptiveState, WorkloadStats};
///
/// let mut state = AdaptiveState::new(AdaptiveOptions::default());
/// assert_eq!(state.current().kind_name(), "two-tier");
/// let read_only = WorkloadStats { reads: 20_000, writes: 10, ..WorkloadStats::default() };
/// assert!(state.observe(&read_only).is_none()); // one window is not enough
/// let switch = state.observe(&read_only).unwrap();
/// assert_eq!(switch.to.kind_name(), "major-only");
/// assert!(state.reason().starts_with("read-only"));
/// ```
#[derive(Debug, Clone)]
pub struct AdaptiveState {
    opts: AdaptiveOptions,
    current: CompactionStrategy,
    reason: String,
    pending: Option<(CompactionStrategy, u32)>,
    /// The strategy the last switch left.
    left: Option<CompactionStrategy>,
    /// Consecutive switches back to the strategy the switch before left.
    returns: u32,
    /// Windows in a row that chose the current strategy.
    settled: u32,
    /// Windows since the last switch.
    since_switch: u32,
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
    /// Starts with the options' initial strategy.
    pub fn new(opts: AdaptiveOptions) -> Self {
        let current = (*opts.initial).clone();
        AdaptiveState {
            reason: format!(
                "initial strategy, before {} operations were observed",
                opts.min_window_ops
            ),
            opts,
            current,
            pending: None,
            left: None,
            returns: 0,
            settled: 0,
            since_switch: 0,
        }
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

    /// The options.
    pub fn options(&self) -> &AdaptiveOptions {
        &self.opts
    }

    /// Feeds one window; returns the switch to make, if any.
    pub fn observe(&mut self, stats: &WorkloadStats) -> Option<Switch> {
        let choice = choose_strategy(stats, &self.opts)?;
        self.since_switch = self.since_switch.saturating_add(1);
        if self.since_switch >= FORGET_AFTER_WINDOWS {
            self.left = None;
            self.returns = 0;
        }
        if choice.strategy == self.current {
            self.reason = choice.reason;
            self.pending = None;
            self.settled = self.settled.saturating_add(1);
            if self.settled >= SETTLED_WINDOWS {
                self.returns = 0;
                self.left = None;
            }
            return None;
        }
        self.settled = 0;
        let count = match &self.pending {
            Some((s, n)) if *s == choice.strategy => n + 1,
            _ => 1,
        };
        if count < self.windows_needed(&choice.strategy) {
            self.pending = Some((choice.strategy, count));
            return None;
        }
        self.pending = None;
        self.returns = if self.left.as_ref() == Some(&choice.strategy) {
            self.returns.saturating_add(1)
        } else {
            0
        };
        self.since_switch = 0;
        let from = std::mem::replace(&mut self.current, choice.strategy.clone());
        self.left = Some(from.clone());
        self.reason = choice.reason.clone();
        Some(Switch {
            from,
            to: choice.strategy,
            reason: choice.reason,
        })
    }
}

/// Number of key ranges the recorder counts writes in.
const BUCKETS: usize = 16;

/// Gathers [`WorkloadStats`] from the operations of one table: every read
/// and write is counted, the previous write's key gives the ordered share,
/// writes are bucketed by key range (boundaries supplied by the caller,
/// e.g. [`stripe_boundaries`](crate::stripe_boundaries) of the
/// current version with 16 stripes) for the hot-range share, and the
/// caller reports, for the writes [`should_sample`](Self::should_sample)
/// picks, whether the key existed.
///
/// ```
/// use lithify_base::InternalKeyComparator;
/// use lithify_compaction_tiered::adaptive::WorkloadRecorder;
///
/// let mut rec = WorkloadRecorder::new(InternalKeyComparator::bytewise(), 1);
/// for k in [b"a", b"b", b"c", b"b"] {
///     rec.record_write(k, Some(false));
/// }
/// rec.record_read();
/// let w = rec.take_window();
/// assert_eq!((w.writes, w.ordered_writes, w.reads, w.inserts), (4, 3, 1, 4));
/// ```
#[derive(Debug, Clone)]
pub struct WorkloadRecorder {
    cmp: InternalKeyComparator,
    stats: WorkloadStats,
    last_key: Vec<u8>,
    has_last: bool,
    boundaries: Vec<Vec<u8>>,
    buckets: [u64; BUCKETS],
    sample_every: u64,
    writes_seen: u64,
}

impl WorkloadRecorder {
    /// A recorder sampling one write in `sample_every` for the
    /// update/insert share.
    pub fn new(cmp: InternalKeyComparator, sample_every: u64) -> Self {
        WorkloadRecorder {
            cmp,
            stats: WorkloadStats::default(),
            last_key: Vec::new(),
            has_last: false,
            boundaries: Vec::new(),
            buckets: [0; BUCKETS],
            sample_every: sample_every.max(1),
            writes_seen: 0,
        }
    }

    /// Sets the key-range boundaries (sorted; at most 15 are used).
    pub fn set_boundaries(&mut self, mut boundaries: Vec<Vec<u8>>) {
        boundaries.truncate(BUCKETS - 1);
        self.boundaries = boundaries;
    }

    /// Whether the next write should be sampled (its caller then looks up
    /// whether the key exists and passes it to
    /// [`record_write`](Self::record_write)).
    pub fn should_sample(&self) -> bool {
        self.writes_seen.is_multiple_of(self.sample_every)
    }

    /// Counts a read.
    pub fn record_read(&mut self) {
        self.stats.reads += 1;
    }

    /// Counts a put or delete of `key`; `existed` is `Some` for sampled
    /// writes.
    pub fn record_write(&mut self, key: &[u8], existed: Option<bool>) {
        self.writes_seen += 1;
        self.stats.writes += 1;
        if !self.has_last || self.cmp.compare_user(key, &self.last_key).is_ge() {
            self.stats.ordered_writes += 1;
        }
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.has_last = true;
        match existed {
            Some(true) => self.stats.updates += 1,
            Some(false) => self.stats.inserts += 1,
            None => {}
        }
        if !self.boundaries.is_empty() {
            let i = self
                .boundaries
                .partition_point(|b| self.cmp.compare_user(b, key).is_le());
            self.buckets[i] += 1;
        }
    }

    /// Counts a range delete.
    pub fn record_range_delete(&mut self) {
        self.stats.range_deletes += 1;
    }

    /// Operations counted in the current window.
    pub fn window_ops(&self) -> u64 {
        self.stats.total_ops()
    }

    /// Ends the window: its statistics, with the hot-range share computed
    /// over the buckets in use (the busiest eighth of them, rounded up).
    pub fn take_window(&mut self) -> WorkloadStats {
        let mut stats = std::mem::take(&mut self.stats);
        let used = self.boundaries.len() + 1;
        if used > 1 {
            let mut counts: Vec<u64> = self.buckets[..used].to_vec();
            counts.sort_unstable_by(|a, b| b.cmp(a));
            let top = used.div_ceil(8);
            let hot: u64 = counts[..top].iter().sum();
            let all: u64 = counts.iter().sum();
            // Normalise to an eighth of the key space.
            let share = ratio(hot, all) * (used as f64 / 8.0) / top as f64;
            stats.hot_range_share = share.min(1.0);
        }
        self.buckets = [0; BUCKETS];
        stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> AdaptiveOptions {
        AdaptiveOptions {
            min_window_ops: 1_000,
            ..AdaptiveOptions::default()
        }
    }

    fn stats(reads: u64, writes: u64, ordered: f64, update: f64, hot: f64) -> WorkloadStats {
        let sampled = writes / 10;
        WorkloadStats {
            reads,
            writes,
            ordered_writes: (writes as f64 * ordered) as u64,
            updates: (sampled as f64 * update) as u64,
            inserts: sampled - (sampled as f64 * update) as u64,
            range_deletes: 0,
            hot_range_share: hot,
        }
    }

    fn two_tier(c: &Choice) -> &TwoTierOptions {
        match &c.strategy {
            CompactionStrategy::TwoTier(o) => o,
            other => panic!("expected two-tier, got {other}"),
        }
    }

    #[test]
    fn row_increasing_keys_any_read_share() {
        for reads in [0, 5_000, 50_000] {
            let c = choose_strategy(&stats(reads, 10_000, 0.99, 0.1, 0.9), &opts()).unwrap();
            assert_eq!(c.class, WorkloadClass::IncreasingKeys, "reads {reads}");
            assert_eq!(c.strategy.kind_name(), "major-only");
        }
    }

    #[test]
    fn row_write_only_random() {
        let c = choose_strategy(&stats(10, 10_000, 0.5, 0.6, 0.13), &opts()).unwrap();
        assert_eq!(c.class, WorkloadClass::WriteOnly);
        let o = two_tier(&c);
        assert_eq!(
            (o.minor, o.stripes, o.major_ratio),
            (MinorPolicy::None, 1, 1.0)
        );
        assert!(c.reason.contains("one L0 table per flush"), "{}", c.reason);
    }

    #[test]
    fn row_write_mostly_random() {
        let c = choose_strategy(&stats(2_000, 8_000, 0.5, 0.6, 0.13), &opts()).unwrap();
        assert_eq!(c.class, WorkloadClass::WriteMostly);
        let o = two_tier(&c);
        assert!(matches!(o.minor, MinorPolicy::SizeTiered { .. }));
        assert_eq!(o.stripes, 8);
        assert!(
            c.reason.contains("striped progressive major"),
            "{}",
            c.reason
        );
    }

    #[test]
    fn row_read_only_or_very_few_writes() {
        for writes in [0, 50] {
            let c = choose_strategy(&stats(10_000, writes, 0.0, 1.0, 0.0), &opts()).unwrap();
            assert_eq!(c.class, WorkloadClass::ReadOnly, "writes {writes}");
            assert_eq!(c.strategy.kind_name(), "major-only");
        }
    }

    #[test]
    fn row_read_mostly_few_updates() {
        let c = choose_strategy(&stats(9_500, 500, 0.5, 1.0, 0.13), &opts()).unwrap();
        assert_eq!(c.class, WorkloadClass::ReadMostlyFewUpdates);
        assert_eq!(two_tier(&c).minor, MinorPolicy::MergeWithPrevious);
        // Many writes but mostly inserts of new keys: still few updates.
        let c = choose_strategy(&stats(7_000, 3_000, 0.5, 0.2, 0.13), &opts()).unwrap();
        assert_eq!(c.class, WorkloadClass::ReadMostlyFewUpdates);
    }

    #[test]
    fn row_read_mostly_many_updates() {
        let c = choose_strategy(&stats(7_000, 3_000, 0.5, 1.0, 0.8), &opts()).unwrap();
        assert_eq!(c.class, WorkloadClass::ReadMostlyManyUpdates);
        let o = two_tier(&c);
        assert_eq!(
            (o.minor, o.stripes),
            (MinorPolicy::HotRange { max_tables: 4 }, 8)
        );
        assert!(c.reason.contains("merged by hot range"), "{}", c.reason);
        // Without a hot range the stripes merge size-tiered.
        let c = choose_strategy(&stats(7_000, 3_000, 0.5, 1.0, 0.13), &opts()).unwrap();
        assert!(matches!(two_tier(&c).minor, MinorPolicy::SizeTiered { .. }));
    }

    #[test]
    fn range_deletes_halve_the_ratio_and_small_windows_decide_nothing() {
        let mut s = stats(10, 10_000, 0.5, 0.6, 0.13);
        s.range_deletes = 2_000;
        let c = choose_strategy(&s, &opts()).unwrap();
        assert_eq!(two_tier(&c).major_ratio, 0.5);
        assert!(c.reason.contains("halved"));
        assert!(choose_strategy(&stats(10, 500, 0.5, 0.6, 0.1), &opts()).is_none());
    }

    #[test]
    fn state_switches_after_agreeing_windows_only() {
        let mut state = AdaptiveState::new(opts());
        let write_only = stats(0, 10_000, 0.5, 0.6, 0.13);
        let read_only = stats(10_000, 0, 0.0, 0.0, 0.0);
        assert!(state.observe(&write_only).is_none());
        // A different candidate resets the count.
        assert!(state.observe(&read_only).is_none());
        assert!(state.observe(&write_only).is_none());
        let s = state.observe(&write_only).unwrap();
        assert_eq!(s.from.kind_name(), "two-tier");
        assert_eq!(s.to.kind_name(), "two-tier");
        // The same choice again keeps it and refreshes the reason.
        assert!(state.observe(&write_only).is_none());
        assert!(state.reason().starts_with("write-only"));
        // Too few operations change nothing.
        assert!(state.observe(&stats(1, 1, 0.0, 0.0, 0.0)).is_none());
        assert_eq!(state.current().kind_name(), "two-tier");
    }

    /// Switches of a fresh state fed `windows`.
    fn switches(windows: impl IntoIterator<Item = WorkloadStats>) -> Vec<(usize, &'static str)> {
        let mut state = AdaptiveState::new(opts());
        windows
            .into_iter()
            .enumerate()
            .filter_map(|(i, w)| state.observe(&w).map(|s| (i, s.to.kind_name())))
            .collect()
    }

    #[test]
    fn a_stationary_mix_switches_once() {
        let read_only = stats(10_000, 0, 0.0, 0.0, 0.0);
        assert_eq!(switches(vec![read_only; 60]), [(1, "major-only")]);
    }

    #[test]
    fn a_phase_change_switches_after_the_agreeing_windows() {
        let read_only = stats(10_000, 0, 0.0, 0.0, 0.0);
        let write_only = stats(0, 10_000, 0.5, 0.6, 0.13);
        let stream = std::iter::repeat_n(read_only, 20).chain(std::iter::repeat_n(write_only, 20));
        // Windows 20 and 21 are write-only: the switch comes with the
        // second, as at the start.
        assert_eq!(switches(stream), [(1, "major-only"), (21, "two-tier")]);
    }

    #[test]
    fn returns_need_twice_the_windows_each_time() {
        let read_only = stats(10_000, 0, 0.0, 0.0, 0.0);
        let write_only = stats(0, 10_000, 0.5, 0.6, 0.13);
        let mut state = AdaptiveState::new(opts());
        let mut feed = |w: &WorkloadStats, n: usize| -> Vec<usize> {
            (0..n).filter_map(|i| state.observe(w).map(|_| i)).collect()
        };
        assert_eq!(feed(&read_only, 4), [1]); // two-tier -> major-only
        assert_eq!(feed(&write_only, 4), [1]); // a new strategy: 2 windows
        assert_eq!(feed(&read_only, 6), [3]); // the first return: 4 windows
        assert_eq!(feed(&write_only, 10), [7]); // the second: 8 windows
        // The third return would need 16 windows; 10 are not enough.
        assert_eq!(feed(&read_only, 10), Vec::<usize>::new());
        // Once the current strategy held for SETTLED_WINDOWS windows, the
        // strategy it replaced is forgotten: going back needs 2 windows.
        assert_eq!(
            feed(&write_only, SETTLED_WINDOWS as usize),
            Vec::<usize>::new()
        );
        assert_eq!(feed(&read_only, 2), [1]);
    }

    #[test]
    fn stray_windows_cannot_hold_a_return_off_for_ever() {
        let read_only = stats(10_000, 0, 0.0, 0.0, 0.0);
        let write_only = stats(0, 10_000, 0.5, 0.6, 0.13);
        let mut state = AdaptiveState::new(opts());
        let mut feed = |w: &WorkloadStats, n: usize| -> usize {
            (0..n).filter(|_| state.observe(w).is_some()).count()
        };
        // Three returns: the next would need 32 windows in a row.
        assert_eq!(feed(&read_only, 2), 1);
        assert_eq!(feed(&write_only, 2), 1);
        assert_eq!(feed(&read_only, 4), 1);
        assert_eq!(feed(&write_only, 8), 1);
        // Now the mix is read-only but one window in ten looks write-only:
        // the return comes once the strategy left is forgotten.
        let mut switched = 0;
        for _ in 0..10 {
            switched += feed(&read_only, 9) + feed(&write_only, 1);
        }
        assert_eq!(switched, 1);
    }

    #[test]
    fn a_mix_swinging_every_few_windows_stops_switching() {
        // Day and night of a diurnal workload: 7 write-only windows, then
        // 5 read-only, twenty times over.
        let read_only = stats(10_000, 0, 0.0, 0.0, 0.0);
        let write_only = stats(0, 10_000, 0.5, 0.6, 0.13);
        let day_night = (0..20).flat_map(|_| {
            std::iter::repeat_n(write_only, 7).chain(std::iter::repeat_n(read_only, 5))
        });
        let s = switches(day_night);
        // Without the doubling it switched at every half day (39 times).
        // Now: the first switch, a swing and a return, then quiet until the
        // strategy left is forgotten (FORGET_AFTER_WINDOWS after the last
        // switch), when a swing and a return happen again: 2 per 72 windows.
        let at: Vec<usize> = s.iter().map(|(i, _)| *i).collect();
        assert_eq!(at, [1, 8, 15, 80, 87, 152, 159, 224, 231]);
    }

    #[test]
    fn recorder_hot_share_and_sampling() {
        let cmp = InternalKeyComparator::bytewise();
        let mut rec = WorkloadRecorder::new(cmp, 4);
        let bounds: Vec<Vec<u8>> = (1..16u8).map(|b| vec![b * 16]).collect();
        rec.set_boundaries(bounds);
        // Uniform writes over 16 ranges: the busiest two hold 1/8.
        for i in 0..=255u8 {
            let sample = rec.should_sample();
            rec.record_write(&[i], sample.then_some(i % 2 == 0));
        }
        let w = rec.take_window();
        assert!(
            (w.hot_range_share - 0.125).abs() < 1e-9,
            "{}",
            w.hot_range_share
        );
        assert_eq!(w.updates + w.inserts, 64);
        assert_eq!(w.ordered_writes, 256);
        // All writes in one range: the hottest eighth holds everything.
        for _ in 0..100 {
            rec.record_write(&[5], None);
        }
        let w = rec.take_window();
        assert!((w.hot_range_share - 1.0).abs() < 1e-9);
        let mut merged = stats(1, 100, 0.0, 0.0, 0.5);
        merged.merge(&stats(1, 300, 0.0, 0.0, 0.1));
        assert_eq!(merged.writes, 400);
        assert!((merged.hot_range_share - 0.2).abs() < 1e-9);
    }
}
