//! The workloads of the strategies report, as operation streams over
//! integer keys (the simulator uses them as they are; a benchmark turns
//! each id into a key with [`db_bench_key`](super::db_bench_key)).

use super::workload::{KeyDistribution, KeyGenerator, SplitMix64};

/// One operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Write a value to the key (an insert or an update).
    Put(u64),
    /// Delete the key.
    Delete(u64),
    /// Read the key.
    Get(u64),
    /// Read [`SCAN_LENGTH`] entries in key order from the key on.
    Scan(u64),
}

/// Entries a [`Op::Scan`] reads.
pub const SCAN_LENGTH: usize = 20;

/// The workloads of the strategies report, one per `Adaptive` workload
/// class, two that change while they run, and one whose reads have a hot
/// spot that moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WorkloadKind {
    /// Half reads of recent keys (the newest tenth); writes insert
    /// increasing keys (94 %), update one of the last thousand inserted
    /// (3 %) and delete the oldest (3 %, expiry).
    IncreasingKeys,
    /// Writes only: random puts (90 %) and deletes (10 %).
    WriteOnly,
    /// 80 % random writes as above, 20 % random reads.
    WriteMostly,
    /// After a sorted load: 99.5 % random reads, 0.5 % random updates.
    ReadOnly,
    /// After a sorted load: 95 % random reads, 5 % random updates.
    ReadMostlyFewUpdates,
    /// After a sorted load: 70 % random reads, 30 % updates, 80 % of them
    /// in a hot range of 1/16 of the key space.
    ReadMostlyManyUpdates,
    /// A workload that changes: an increasing-key bulk load over the key
    /// space (the first 25 % of the operations), random updates (25 %),
    /// read-mostly with few updates (35 %: 95 % random reads), then a
    /// burst of random deletes and scans (15 %, half each).
    PhaseShift,
    /// Four days after a sorted load, each a write-heavy day (its first
    /// 60 %: 70 % writes, 80 % of them to a hot sixteenth of the key space,
    /// and 30 % reads) and a read-heavy night (95 % reads, 5 % random
    /// updates).
    Diurnal,
    /// After a sorted load: 70 % reads, Zipfian (θ 0.99) over a hot
    /// range of 1/16 of the key space that moves to a random place every
    /// eighth of the operations; 30 % random updates over the whole key
    /// space. Where reads go, not where writes go, is what a read-mostly
    /// table's L0 merges should follow.
    MovingHotSpot,
}

impl WorkloadKind {
    /// The steady workloads, in the order of the workload classes.
    pub const ALL: [WorkloadKind; 6] = [
        WorkloadKind::IncreasingKeys,
        WorkloadKind::WriteOnly,
        WorkloadKind::WriteMostly,
        WorkloadKind::ReadOnly,
        WorkloadKind::ReadMostlyFewUpdates,
        WorkloadKind::ReadMostlyManyUpdates,
    ];

    /// The workloads that change while they run.
    pub const CHANGING: [WorkloadKind; 2] = [WorkloadKind::PhaseShift, WorkloadKind::Diurnal];

    /// The workloads of read heat (`TwoTier`'s hot-range minors).
    pub const HEAT: [WorkloadKind; 1] = [WorkloadKind::MovingHotSpot];

    /// The steady workloads ([`ALL`](Self::ALL)), the changing ones
    /// ([`CHANGING`](Self::CHANGING)), then [`HEAT`](Self::HEAT).
    pub const EVERY: [WorkloadKind; 9] = {
        let mut every = [WorkloadKind::IncreasingKeys; 9];
        let (steady, changing) = (Self::ALL.len(), Self::CHANGING.len());
        let mut i = 0;
        while i < every.len() {
            every[i] = if i < steady {
                Self::ALL[i]
            } else if i < steady + changing {
                Self::CHANGING[i - steady]
            } else {
                Self::HEAT[i - steady - changing]
            };
            i += 1;
        }
        every
    };

    /// The name [`parse`](Self::parse) reads.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::IncreasingKeys => "increasing",
            WorkloadKind::WriteOnly => "write-only",
            WorkloadKind::WriteMostly => "write-mostly",
            WorkloadKind::ReadOnly => "read-only",
            WorkloadKind::ReadMostlyFewUpdates => "read-mostly-few",
            WorkloadKind::ReadMostlyManyUpdates => "read-mostly-many",
            WorkloadKind::PhaseShift => "phase-shift",
            WorkloadKind::Diurnal => "diurnal",
            WorkloadKind::MovingHotSpot => "moving-hot-spot",
        }
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Option<WorkloadKind> {
        WorkloadKind::EVERY.into_iter().find(|k| k.name() == s)
    }

    /// Whether the workload starts with a sorted load of every key.
    pub fn has_load(self) -> bool {
        matches!(
            self,
            WorkloadKind::ReadOnly
                | WorkloadKind::ReadMostlyFewUpdates
                | WorkloadKind::ReadMostlyManyUpdates
                | WorkloadKind::Diurnal
                | WorkloadKind::MovingHotSpot
        )
    }

    /// The key ids operations use: `key_space` for random workloads, one
    /// per operation for increasing keys.
    pub fn key_ids(self, key_space: u64, ops: u64) -> u64 {
        match self {
            WorkloadKind::IncreasingKeys => ops.max(1),
            _ => key_space.max(1),
        }
    }
}

/// Tenths of a `diurnal` day that are its write-heavy daytime (the night,
/// read-heavy, starts at 14:24 of the simulated day).
pub const DIURNAL_DAYTIME_TENTHS: u64 = 6;

/// `diurnal`'s night, the off-peak window its runs declare
/// (`daily_offpeak_time_utc`): from the end of the daytime to midnight.
pub const DIURNAL_OFFPEAK_UTC: &str = "14:24-23:59";

/// Generates one workload's operations (after its load, if any).
///
/// ```
/// use lithify_compaction_sim::{Op, OpGenerator, WorkloadKind};
///
/// let mut g = OpGenerator::new(WorkloadKind::ReadMostlyFewUpdates, 1_000, 10_000, 7);
/// let ops: Vec<Op> = (0..10_000).map(|_| g.next_op()).collect();
/// let reads = ops.iter().filter(|o| matches!(o, Op::Get(_))).count();
/// assert!((9_300..9_700).contains(&reads));
/// assert!(ops.iter().all(|o| match o {
///     Op::Put(k) | Op::Delete(k) | Op::Get(k) | Op::Scan(k) => *k < 1_000,
/// }));
/// ```
#[derive(Debug, Clone)]
pub struct OpGenerator {
    kind: WorkloadKind,
    keys: u64,
    rng: SplitMix64,
    cursor: u64,
    expired: u64,
    hot_start: u64,
    hot_len: u64,
    /// Operations the run will draw (where the phases change).
    ops: u64,
    /// Operations drawn so far.
    issued: u64,
    /// `moving-hot-spot`'s reads: Zipfian ranks within the hot range.
    hot_reads: Option<KeyGenerator>,
}

impl OpGenerator {
    /// A generator of `kind` over `key_space` keys (ignored for increasing
    /// keys, which use one id per operation of `ops`).
    pub fn new(kind: WorkloadKind, key_space: u64, ops: u64, seed: u64) -> Self {
        let keys = kind.key_ids(key_space, ops);
        let mut rng = SplitMix64::new(seed);
        let hot_len = (keys / 16).max(1);
        let hot_start = rng.uniform(keys - hot_len + 1);
        let hot_reads = (kind == WorkloadKind::MovingHotSpot).then(|| {
            KeyGenerator::new(
                KeyDistribution::Zipfian { theta: 0.99 },
                hot_len,
                rng.next_u64(),
            )
        });
        OpGenerator {
            kind,
            keys,
            rng,
            cursor: 0,
            expired: 0,
            hot_start,
            hot_len,
            ops: ops.max(1),
            issued: 0,
            hot_reads,
        }
    }

    /// Number of key ids.
    pub fn key_ids(&self) -> u64 {
        self.keys
    }

    /// Operations per simulated day of `diurnal` (a quarter of the run).
    pub fn diurnal_day_ops(ops: u64) -> u64 {
        (ops / 4).max(1)
    }

    /// Where operation `i` of a `diurnal` run of `ops` operations falls
    /// in its day, in seconds since midnight: a day of
    /// [`diurnal_day_ops`](Self::diurnal_day_ops) operations spans 24
    /// hours, its first [`DIURNAL_DAYTIME_TENTHS`] tenths are the
    /// write-heavy daytime and the rest the read-heavy night.
    ///
    /// ```
    /// use lithify_compaction_sim::OpGenerator;
    ///
    /// // Days of 1 000 operations: operation 1 600 is 60 % into the
    /// // second day, where its night starts, at 14:24.
    /// assert_eq!(OpGenerator::diurnal_second_of_day(1_600, 4_000), 14 * 3_600 + 24 * 60);
    /// ```
    pub fn diurnal_second_of_day(i: u64, ops: u64) -> u64 {
        let day = Self::diurnal_day_ops(ops);
        ((u128::from(i % day) * 86_400) / u128::from(day)) as u64
    }

    /// Whether operation `i` of a `diurnal` run of `ops` operations falls
    /// in a night (the read-heavy part, its off-peak window).
    pub fn diurnal_is_night(i: u64, ops: u64) -> bool {
        let day = Self::diurnal_day_ops(ops);
        (i % day) * 10 >= DIURNAL_DAYTIME_TENTHS * day
    }

    /// The key range `[start, start + len)` the many-updates workload
    /// updates most (and `moving-hot-spot` reads most, until it moves).
    pub fn hot_range(&self) -> (u64, u64) {
        (self.hot_start, self.hot_len)
    }

    fn percent(&mut self) -> u64 {
        self.rng.uniform(1000)
    }

    fn random(&mut self) -> u64 {
        self.rng.uniform(self.keys)
    }

    fn random_write(&mut self) -> Op {
        let k = self.random();
        if self.percent() < 100 {
            Op::Delete(k)
        } else {
            Op::Put(k)
        }
    }

    /// A put to the hot range (80 %) or anywhere.
    fn mostly_hot_put(&mut self) -> Op {
        if self.percent() < 800 {
            Op::Put(self.hot_start + self.rng.uniform(self.hot_len))
        } else {
            Op::Put(self.random())
        }
    }

    /// The next operation.
    pub fn next_op(&mut self) -> Op {
        let i = self.issued;
        self.issued += 1;
        let p = self.percent();
        match self.kind {
            WorkloadKind::PhaseShift => {
                // Phase ends, in operations: 25 %, 50 %, 85 %.
                let n = u128::from(self.ops);
                let at = u128::from(i) * 100;
                if at < 25 * n {
                    // Increasing ids spread over the whole key space.
                    // The load's last operation is `ceil(n / 4) - 1`: a
                    // share rounded up keeps every id below the key space.
                    let load = (n * 25).div_ceil(100).max(1);
                    Op::Put((u128::from(i) * u128::from(self.keys) / load) as u64)
                } else if at < 50 * n {
                    Op::Put(self.random())
                } else if at < 85 * n {
                    if p < 950 {
                        Op::Get(self.random())
                    } else {
                        Op::Put(self.random())
                    }
                } else if p < 500 {
                    Op::Delete(self.random())
                } else {
                    Op::Scan(self.random())
                }
            }
            WorkloadKind::Diurnal => {
                if !Self::diurnal_is_night(i, self.ops) {
                    if p < 300 {
                        Op::Get(self.random())
                    } else {
                        self.mostly_hot_put()
                    }
                } else if p < 950 {
                    Op::Get(self.random())
                } else {
                    Op::Put(self.random())
                }
            }
            WorkloadKind::IncreasingKeys => {
                if p < 500 && self.cursor > 0 {
                    let recent = (self.cursor / 10).max(1);
                    let back = self.rng.uniform(recent);
                    return Op::Get(self.cursor - 1 - back);
                }
                let w = self.percent();
                if w < 30 && self.cursor > 0 {
                    let recent = self.cursor.min(1_000);
                    Op::Put(self.cursor - 1 - self.rng.uniform(recent))
                } else if w < 60 && self.expired + 1 < self.cursor {
                    self.expired += 1;
                    Op::Delete(self.expired - 1)
                } else if self.cursor < self.keys {
                    self.cursor += 1;
                    Op::Put(self.cursor - 1)
                } else {
                    Op::Get(self.random())
                }
            }
            WorkloadKind::WriteOnly => self.random_write(),
            WorkloadKind::WriteMostly => {
                if p < 200 {
                    Op::Get(self.random())
                } else {
                    self.random_write()
                }
            }
            WorkloadKind::ReadOnly => {
                if p < 995 {
                    Op::Get(self.random())
                } else {
                    Op::Put(self.random())
                }
            }
            WorkloadKind::ReadMostlyFewUpdates => {
                if p < 950 {
                    Op::Get(self.random())
                } else {
                    Op::Put(self.random())
                }
            }
            WorkloadKind::ReadMostlyManyUpdates => {
                if p < 700 {
                    Op::Get(self.random())
                } else {
                    self.mostly_hot_put()
                }
            }
            WorkloadKind::MovingHotSpot => {
                let period = (self.ops / 8).max(1);
                if i > 0 && i.is_multiple_of(period) {
                    self.hot_start = self.rng.uniform(self.keys - self.hot_len + 1);
                }
                if p < 700 {
                    let rank = self.hot_reads.as_mut().map_or(0, KeyGenerator::next_key);
                    Op::Get(self.hot_start + rank)
                } else {
                    Op::Put(self.random())
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mix(kind: WorkloadKind) -> (f64, f64, f64) {
        let n = 100_000;
        let mut g = OpGenerator::new(kind, 50_000, n, 3);
        let (mut r, mut p, mut d) = (0, 0, 0);
        for _ in 0..n {
            match g.next_op() {
                Op::Get(_) => r += 1,
                Op::Put(_) => p += 1,
                Op::Delete(_) => d += 1,
                Op::Scan(_) => r += 1,
            }
        }
        let n = n as f64;
        (r as f64 / n, p as f64 / n, d as f64 / n)
    }

    #[test]
    fn each_workload_has_its_mix() {
        let near = |a: f64, b: f64| (a - b).abs() < 0.01;
        let (r, p, d) = mix(WorkloadKind::WriteOnly);
        assert!(r == 0.0 && near(p, 0.9) && near(d, 0.1), "{r} {p} {d}");
        let (r, p, d) = mix(WorkloadKind::WriteMostly);
        assert!(
            near(r, 0.2) && near(p, 0.72) && near(d, 0.08),
            "{r} {p} {d}"
        );
        let (r, _, d) = mix(WorkloadKind::ReadOnly);
        assert!(near(r, 0.995) && d == 0.0);
        let (r, _, _) = mix(WorkloadKind::ReadMostlyFewUpdates);
        assert!(near(r, 0.95));
        let (r, _, _) = mix(WorkloadKind::ReadMostlyManyUpdates);
        assert!(near(r, 0.70));
        let (r, p, d) = mix(WorkloadKind::IncreasingKeys);
        assert!(
            near(r, 0.5) && near(p, 0.485) && near(d, 0.015),
            "{r} {p} {d}"
        );
        for k in WorkloadKind::EVERY {
            assert_eq!(WorkloadKind::parse(k.name()), Some(k));
        }
    }

    /// The operations of `kind` (10 000 keys, 100 000 operations) cut in
    /// tenths: (reads, puts, deletes, scans) of each tenth.
    fn tenths(kind: WorkloadKind) -> Vec<(u32, u32, u32, u32)> {
        let mut g = OpGenerator::new(kind, 10_000, 100_000, 5);
        (0..10)
            .map(|_| {
                let mut t = (0, 0, 0, 0);
                for _ in 0..10_000 {
                    match g.next_op() {
                        Op::Get(_) => t.0 += 1,
                        Op::Put(_) => t.1 += 1,
                        Op::Delete(_) => t.2 += 1,
                        Op::Scan(_) => t.3 += 1,
                    }
                }
                t
            })
            .collect()
    }

    #[test]
    fn the_moving_hot_spot_reads_a_sixteenth_that_moves_every_eighth() {
        let (keys, ops) = (16_000u64, 80_000u64);
        let mut g = OpGenerator::new(WorkloadKind::MovingHotSpot, keys, ops, 9);
        let mut starts = Vec::new();
        for eighth in 0..8 {
            let (mut reads, mut puts) = (0u32, 0u32);
            let mut per_key = std::collections::HashMap::<u64, u32>::new();
            for n in 0..ops / 8 {
                let op = g.next_op();
                // The spot moves as the eighth's first operation is drawn.
                let (start, len) = g.hot_range();
                assert_eq!(len, 1_000);
                if n == 0 {
                    starts.push(start);
                }
                match op {
                    Op::Get(k) => {
                        assert!((start..start + len).contains(&k), "eighth {eighth}: {k}");
                        reads += 1;
                        *per_key.entry(k).or_default() += 1;
                    }
                    Op::Put(k) => {
                        assert!(k < keys);
                        puts += 1;
                    }
                    other => panic!("{other:?}"),
                }
            }
            // 70 % reads; Zipfian: the hottest key alone draws over 5 %.
            assert!((6_800..7_200).contains(&reads), "{reads}");
            assert_eq!(reads + puts, 10_000);
            let hottest = per_key.values().max().copied().unwrap_or(0);
            assert!(hottest * 20 > reads, "{hottest} of {reads}");
        }
        starts.dedup();
        assert_eq!(starts.len(), 8, "{starts:?}");
    }

    #[test]
    fn the_phase_shift_runs_its_four_phases_in_order() {
        let mut g = OpGenerator::new(WorkloadKind::PhaseShift, 10_000, 100_000, 5);
        // The load: 25 000 puts of ids that never decrease, over the
        // whole key space.
        let load: Vec<u64> = (0..25_000)
            .map(|_| match g.next_op() {
                Op::Put(k) => k,
                other => panic!("{other:?} in the load"),
            })
            .collect();
        assert!(load.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!((load[0], *load.last().unwrap()), (0, 9_999));
        let t = tenths(WorkloadKind::PhaseShift);
        // Tenths 3-4: random updates only (the load ends at 2.5).
        assert_eq!(t[3], (0, 10_000, 0, 0));
        // Tenths 5-7: 95 % reads.
        for tenth in &t[5..8] {
            assert!((9_300..9_700).contains(&tenth.0), "{tenth:?}");
            assert_eq!((tenth.2, tenth.3), (0, 0));
        }
        // Tenth 9: deletes and scans, half each.
        assert_eq!((t[9].0, t[9].1), (0, 0));
        assert!((4_700..5_300).contains(&t[9].2), "{:?}", t[9]);
        assert_eq!(t[9].2 + t[9].3, 10_000);
    }

    #[test]
    fn changing_workloads_stay_in_the_key_space_whatever_the_op_count() {
        for kind in WorkloadKind::CHANGING {
            for ops in [1, 2, 3, 5, 10, 1_001, 1_000_002] {
                let keys = 64;
                let mut g = OpGenerator::new(kind, keys, ops, 1);
                for _ in 0..ops.min(20_000) {
                    let (Op::Put(k) | Op::Delete(k) | Op::Get(k) | Op::Scan(k)) = g.next_op();
                    assert!(k < keys, "{kind:?} with {ops} ops: key {k}");
                }
            }
        }
    }

    #[test]
    fn a_diurnal_day_writes_and_its_night_reads() {
        // Days of 25 000 operations, 15 000 of day then 10 000 of night:
        // tenths 0, 3, 5 and 8 are all day, 4 and 9 all night.
        let t = tenths(WorkloadKind::Diurnal);
        for day in [t[0], t[3], t[5], t[8]] {
            assert!((6_700..7_300).contains(&day.1), "{day:?}");
        }
        for night in [t[4], t[9]] {
            assert!((9_300..9_700).contains(&night.0), "{night:?}");
        }
        assert!(WorkloadKind::Diurnal.has_load() && !WorkloadKind::PhaseShift.has_load());
        // The off-peak window the runs declare starts where the night does.
        let start = 1_440 * DIURNAL_DAYTIME_TENTHS / 10;
        let declared = format!("{:02}:{:02}-23:59", start / 60, start % 60);
        assert_eq!(declared, DIURNAL_OFFPEAK_UTC);
        assert!(!OpGenerator::diurnal_is_night(599, 4_000));
        assert!(OpGenerator::diurnal_is_night(600, 4_000));
    }

    #[test]
    fn increasing_keys_mostly_increase_and_hot_updates_cluster() {
        let mut g = OpGenerator::new(WorkloadKind::IncreasingKeys, 0, 10_000, 1);
        let mut last = None;
        let (mut writes, mut ordered) = (0, 0);
        for _ in 0..10_000 {
            if let Op::Put(k) | Op::Delete(k) = g.next_op() {
                writes += 1;
                if last.is_none_or(|l| k >= l) {
                    ordered += 1;
                }
                last = Some(k);
            }
        }
        assert!(
            ordered as f64 / writes as f64 > 0.9,
            "{ordered} of {writes}"
        );
        let mut g = OpGenerator::new(WorkloadKind::ReadMostlyManyUpdates, 16_000, 100_000, 2);
        let (start, len) = g.hot_range();
        assert_eq!(len, 1_000);
        let (mut puts, mut hot) = (0, 0);
        for _ in 0..100_000 {
            if let Op::Put(k) = g.next_op() {
                puts += 1;
                if (start..start + len).contains(&k) {
                    hot += 1;
                }
            }
        }
        let share = hot as f64 / puts as f64;
        assert!((0.78..0.84).contains(&share), "{share}");
    }
}
