//! Compaction strategies: `--strategy`, the six workloads of `Adaptive`'s
//! workload classes (`--workload`), and the strategies report
//! (`--strategies-report`: every workload under every fixed strategy and
//! under `Adaptive`).
//!
//! A workload run opens a fresh database with the strategy, loads every
//! key in order first if the workload has a load (the read-mostly ones),
//! then times each operation the workload's generator draws. Throughput
//! and latency cover the operations only; write amplification is the
//! operations' share (WAL, flush and compaction bytes written per user
//! byte, counted from before the operations until background work has
//! settled after them), read amplification the tables probed per lookup,
//! space amplification the SST files over the live data at the end.
//! CPU per operation is the process's CPU time (every thread, background
//! flushes and compactions included) from the first operation until
//! background work has settled, over the operations: unlike ops/s it
//! barely moves when other processes share the machine.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use lithify::vfs::MeteredFs;
use lithify::{
    CompactionStrategy, CpuCosts, Db, DbStats, EventListener, MajorOnlyOptions, ManualClock,
    Options, Prediction, StrategySwitchInfo, TwoTierOptions,
};
/// The strategies' workloads (from the compaction simulator, which replays
/// the same operation streams without a database).
pub use lithify_compaction_sim::WorkloadKind;
use lithify_compaction_sim::{DIURNAL_OFFPEAK_UTC, Op, OpGenerator, SCAN_LENGTH};
use snafu::ResultExt as _;
use std::sync::Mutex;

use crate::data::{Values, make_key};
use crate::error::{DbSnafu, Result, UsageSnafu};
use crate::histogram::{Histogram, PerSecond, SecondLatency, worst_to_median_p999};
use crate::report;

/// Names of `--workload`: one per steady workload class, in their order,
/// then the two workloads that change while they run, then the moving
/// read hot spot.
pub const WORKLOAD_NAMES: [(&str, WorkloadKind); 9] = [
    ("increasing", WorkloadKind::IncreasingKeys),
    ("write-only-random", WorkloadKind::WriteOnly),
    ("write-mostly-random", WorkloadKind::WriteMostly),
    ("read-only", WorkloadKind::ReadOnly),
    (
        "read-mostly-few-updates",
        WorkloadKind::ReadMostlyFewUpdates,
    ),
    (
        "read-mostly-many-updates",
        WorkloadKind::ReadMostlyManyUpdates,
    ),
    ("phase-shift", WorkloadKind::PhaseShift),
    ("diurnal", WorkloadKind::Diurnal),
    ("moving-hot-spot", WorkloadKind::MovingHotSpot),
];

/// The strategies of the report: every fixed one, then `Adaptive`.
pub fn report_strategies() -> impl Iterator<Item = &'static str> {
    CompactionStrategy::FIXED.into_iter().chain(["adaptive"])
}

/// The workload named `name` (the simulator's short names work too).
pub fn workload_named(name: &str) -> Result<WorkloadKind> {
    WORKLOAD_NAMES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, k)| *k)
        .or_else(|| WorkloadKind::parse(name))
        .ok_or_else(|| {
            let names: Vec<_> = WORKLOAD_NAMES.iter().map(|(n, _)| *n).collect();
            UsageSnafu {
                message: format!("unknown workload {name:?}; known: {}", names.join(", ")),
            }
            .build()
        })
}

/// The `--workload` name of `kind`.
pub fn workload_name(kind: WorkloadKind) -> &'static str {
    WORKLOAD_NAMES
        .iter()
        .find(|(_, k)| *k == kind)
        .map_or(kind.name(), |(n, _)| n)
}

/// Strategy `name` (see `CompactionStrategy::NAMES`), its major-level
/// files (and `Adaptive`'s templates') cut at `target_file_size` like
/// the leveled strategy's.
pub fn strategy_named(name: &str, target_file_size: u64) -> Result<CompactionStrategy> {
    let Some(strategy) = CompactionStrategy::parse(name) else {
        return UsageSnafu {
            message: format!(
                "unknown compaction strategy {name:?}; known: {}",
                CompactionStrategy::NAMES.join(", ")
            ),
        }
        .fail();
    };
    let major_only = |o: MajorOnlyOptions| o.target_file_size(target_file_size);
    let two_tier = |o: TwoTierOptions| o.target_file_size(target_file_size);
    Ok(match strategy {
        CompactionStrategy::MajorOnly(o) => CompactionStrategy::MajorOnly(major_only(o)),
        CompactionStrategy::TwoTier(o) => CompactionStrategy::TwoTier(two_tier(o)),
        CompactionStrategy::Adaptive(mut a) => {
            a.major_only = major_only(a.major_only);
            a.two_tier = two_tier(a.two_tier);
            if let CompactionStrategy::TwoTier(o) = *a.initial {
                a.initial = Box::new(CompactionStrategy::TwoTier(two_tier(o)));
            }
            CompactionStrategy::Adaptive(a)
        }
        other => other,
    })
}

/// Sizes of a workload run.
#[derive(Debug, Clone)]
pub struct WorkloadSettings {
    /// Keys of the key space (and of the load).
    pub keys: u64,
    /// Operations after the load.
    pub ops: u64,
    /// Bytes per key.
    pub key_size: usize,
    /// Bytes per value.
    pub value_size: usize,
    /// Random share of each value.
    pub compression_ratio: f64,
    /// Seed of the operation stream.
    pub seed: u64,
    /// When flushes and compactions run.
    pub schedule: Schedule,
}

/// When a workload run's flushes and compactions run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Schedule {
    /// On the background threads, beside the operations: how the engine
    /// runs, and what throughput, latency and CPU time are measured on.
    #[default]
    Background,
    /// On one background thread, and each operation waits until the work
    /// it left is done (`Db::wait_for_compact`): every flush and
    /// compaction happens at the same point of the operation stream in
    /// every run, so the run's [`WorkCounts`] are the same every time.
    Synchronous,
}

/// What a run's operations cost, counted by the engine: the same in every
/// [`Schedule::Synchronous`] run of a workload, strategy and seed.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct WorkCounts {
    /// Operations.
    pub ops: u64,
    /// Records written (puts and deletes).
    pub writes: u64,
    /// Key and value bytes of those writes.
    pub user_bytes: u64,
    /// Bytes flushes and compactions wrote to table files.
    pub table_bytes_written: u64,
    /// Bytes compactions read.
    pub compaction_bytes_read: u64,
    /// Table files flushes and compactions wrote.
    pub files_written: u64,
    /// Point lookups.
    pub gets: u64,
    /// Tables the lookups probed (the filter checked, and the index and
    /// data block read unless it said no).
    pub tables_probed: u64,
    /// Data blocks the lookups read.
    pub blocks_read: u64,
    /// Scans (iterators).
    pub scans: u64,
    /// Sorted runs the scans seeked and merged.
    pub scan_sorted_runs: u64,
    /// Live data at the end, in bytes.
    pub live_bytes: u64,
    /// Table file bytes over live data, the mean of the
    /// [`TIMELINE_POINTS`] samples.
    pub mean_space_amp: f64,
    /// The most bytes table files held on disk at once during the
    /// operations, live and not yet deleted (a compaction's outputs before
    /// its inputs go), over the live data at the end.
    pub peak_space_amp: f64,
    /// The temporary space of flushes and compactions: 1 + the most disk
    /// the work after one operation needed at once beyond the table files
    /// at rest before and after it, over the live data at the end (2.0: a
    /// compaction rewrote the whole table while its inputs stayed).
    /// Counted in synchronous runs only (`None` otherwise), where the
    /// work after each operation is known.
    pub peak_temp_space: Option<f64>,
}

/// The temporary space of a synchronous run's flushes and compactions:
/// after each operation's wait, the peak the [`MeteredFs`] saw since the
/// previous wait beyond the table files at rest before or after
/// (whichever is more).
struct TempSpace {
    at_rest: u64,
    peak: u64,
    most_extra: u64,
}

impl TempSpace {
    fn new(at_rest: u64) -> Self {
        TempSpace {
            at_rest,
            peak: at_rest,
            most_extra: 0,
        }
    }

    fn after_wait(&mut self, disk: &MeteredFs<Arc<dyn lithify::vfs::FileSystem>>) {
        let now = disk.space();
        self.add(now.bytes, now.peak);
        disk.reset_peak();
    }

    /// One operation's work: the files at rest after it, and the peak
    /// since the previous operation's.
    fn add(&mut self, bytes: u64, peak: u64) {
        let rest = bytes.max(self.at_rest);
        self.most_extra = self.most_extra.max(peak.saturating_sub(rest));
        self.peak = self.peak.max(peak);
        self.at_rest = bytes;
    }

    /// 1 + the most extra bytes over `live`.
    fn over(&self, live: u64) -> f64 {
        1.0 + self.most_extra as f64 / live.max(1) as f64
    }
}

impl WorkCounts {
    /// CPU µs per operation these counts cost at `costs`' unit prices:
    /// each write, byte written by flushes and compactions, file written,
    /// point read, table a read probes beyond its first, scan and sorted
    /// run a scan merges (the cost model's terms, counted instead of
    /// predicted).
    pub fn cost_us_per_op(&self, costs: &CpuCosts) -> f64 {
        let extra_probes = self.tables_probed.saturating_sub(self.gets);
        let total = self.writes as f64 * costs.write_us
            + self.table_bytes_written as f64 * costs.written_byte_us
            + self.files_written as f64 * costs.file_us
            + self.gets as f64 * costs.read_us
            + extra_probes as f64 * costs.probe_us
            + self.scans as f64 * costs.scan_us
            + self.scan_sorted_runs as f64 * costs.run_us;
        total / self.ops.max(1) as f64
    }

    /// Flush and compaction bytes per user byte.
    pub fn table_write_amp(&self) -> f64 {
        self.table_bytes_written as f64 / self.user_bytes.max(1) as f64
    }

    /// Tables probed per point lookup.
    pub fn tables_per_get(&self) -> f64 {
        self.tables_probed as f64 / self.gets.max(1) as f64
    }

    /// Data blocks read per point lookup.
    pub fn blocks_per_get(&self) -> f64 {
        self.blocks_read as f64 / self.gets.max(1) as f64
    }

    /// Sorted runs per scan.
    pub fn runs_per_scan(&self) -> f64 {
        self.scan_sorted_runs as f64 / self.scans.max(1) as f64
    }

    /// The engine's counters of the default table, for a difference of
    /// two of them.
    fn snapshot(stats: &DbStats) -> WorkCounts {
        let t = &stats.tables[0];
        WorkCounts {
            writes: t.keys_written,
            user_bytes: t.user_bytes,
            table_bytes_written: t.flush_bytes + t.compaction_write_bytes,
            compaction_bytes_read: t.sum.read_bytes,
            files_written: t.files_written,
            gets: t.gets,
            tables_probed: t.get_tables_probed,
            blocks_read: t.get_blocks_read,
            scans: t.scans,
            scan_sorted_runs: t.scan_sorted_runs,
            live_bytes: t.live_bytes,
            ..WorkCounts::default()
        }
    }

    /// What happened between `before` and `after`.
    fn between(before: &WorkCounts, after: &WorkCounts) -> WorkCounts {
        WorkCounts {
            writes: after.writes - before.writes,
            user_bytes: after.user_bytes - before.user_bytes,
            table_bytes_written: after.table_bytes_written - before.table_bytes_written,
            compaction_bytes_read: after.compaction_bytes_read - before.compaction_bytes_read,
            files_written: after.files_written - before.files_written,
            gets: after.gets - before.gets,
            tables_probed: after.tables_probed - before.tables_probed,
            blocks_read: after.blocks_read - before.blocks_read,
            scans: after.scans - before.scans,
            scan_sorted_runs: after.scan_sorted_runs - before.scan_sorted_runs,
            live_bytes: after.live_bytes,
            ..WorkCounts::default()
        }
    }
}

/// What one workload run measured.
#[derive(Debug, Clone)]
pub struct WorkloadRun {
    /// The workload.
    pub workload: WorkloadKind,
    /// The strategy asked for.
    pub strategy: String,
    /// The strategy in force at the end and why (`Adaptive`'s choice).
    pub in_force: String,
    /// Operations timed (after the load).
    pub ops: u64,
    /// Wall time of the operations.
    pub elapsed: Duration,
    /// Latency of each operation, in nanoseconds.
    pub latency: Histogram,
    /// Bytes written (WAL, flushes, compactions) per user byte, over the operations.
    pub write_amp: f64,
    /// SST files probed per lookup.
    pub read_amp: f64,
    /// SST bytes over live data bytes at the end.
    pub space_amp: f64,
    /// CPU microseconds per operation, background work included (Linux).
    pub cpu_us_per_op: Option<f64>,
    /// Strategy switches during the operations and the settling after
    /// them: the operations done when each was reported (`ops` for one
    /// while background work settled), and the strategy it switched to.
    pub switches: Vec<(u64, String)>,
    /// Flush and compaction bytes per user byte (write amplification
    /// without the WAL, as the cost model predicts it).
    pub table_write_amp: f64,
    /// `Adaptive`'s cost model on the strategy in force at the end, and
    /// its CPU µs per operation.
    pub predicted: Option<(Prediction, f64)>,
    /// Write amplification so far and space amplification,
    /// [`TIMELINE_POINTS`] samples: at each `1/TIMELINE_POINTS` of the
    /// operations, the last after background work settled.
    pub timeline: Vec<AmpSample>,
    /// CPU µs per operation of each run of this cell (see
    /// [`median_run`]; one here).
    pub cpu_samples: Vec<f64>,
    /// When flushes and compactions ran.
    pub schedule: Schedule,
    /// What the operations cost, counted by the engine.
    pub counts: WorkCounts,
    /// Latency percentiles of each second of the operations.
    pub per_second: Vec<SecondLatency>,
    /// Writes the engine delayed or stopped (write stalls) during the
    /// operations.
    pub stalled_writes: u64,
}

/// Samples of a run's amplification over its operations.
pub const TIMELINE_POINTS: u64 = 50;

/// One sample of a run's amplification.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AmpSample {
    /// Operations done.
    pub ops: u64,
    /// Write amplification of the operations so far.
    pub write_amp: f64,
    /// Space amplification now.
    pub space_amp: f64,
}

impl AmpSample {
    fn of(db: &Db, before: (u64, u64, u64), ops: u64) -> AmpSample {
        let stats = db.stats();
        let (bytes, user, _) = written(&stats);
        AmpSample {
            ops,
            write_amp: (bytes - before.0) as f64 / (user - before.1).max(1) as f64,
            space_amp: stats.tables[0].space_amp,
        }
    }
}

/// Records each strategy switch with the number of operations done when
/// it was reported.
#[derive(Debug, Default)]
struct SwitchLog {
    done: AtomicU64,
    switches: Mutex<Vec<(u64, String)>>,
}

impl EventListener for SwitchLog {
    fn on_strategy_switched(&self, info: &StrategySwitchInfo) {
        let at = self.done.load(Ordering::Relaxed);
        self.switches
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((at, info.to.clone()));
    }
}

impl WorkloadRun {
    /// Operations per second.
    pub fn ops_per_sec(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Waits (up to a minute) until no flush or compaction runs and no
/// memtable waits for its flush.
fn settle(db: &Db) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let idle = |db: &Db| {
        [
            "lithify.num-running-flushes",
            "lithify.num-running-compactions",
            "lithify.num-immutable-mem-table",
        ]
        .iter()
        .all(|p| db.property(p).as_deref() == Some("0"))
    };
    while Instant::now() < deadline {
        if idle(db) {
            // Look again once background threads had a chance to pick.
            std::thread::sleep(Duration::from_millis(20));
            if idle(db) {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A scan of the strategies' workloads: a seek to `key` and up to
/// [`SCAN_LENGTH`] entries read from there.
pub(crate) fn scan(db: &Db, key: &[u8]) -> Result<()> {
    let mut it = db
        .raw_iterator(&lithify::ReadOptions::default())
        .context(DbSnafu)?;
    it.seek(key).context(DbSnafu)?;
    for read in 0..SCAN_LENGTH {
        let (Some(k), Some(v)) = (it.key(), it.value()) else {
            break;
        };
        std::hint::black_box((k, v));
        if read + 1 < SCAN_LENGTH {
            it.next().context(DbSnafu)?;
        }
    }
    Ok(())
}

/// Whether `path` is a table or blob file (what the space meter counts).
fn is_table_file(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "sst" || e == "blob")
}

/// Bytes written for the default table: WAL, flushes and compactions,
/// the user bytes behind them, and flushes and compactions alone.
fn written(stats: &DbStats) -> (u64, u64, u64) {
    let t = &stats.tables[0];
    let tables = t.flush_bytes + t.compaction_write_bytes;
    (stats.wal_bytes + tables, t.user_bytes, tables)
}

/// The clock of a `diurnal` run: a simulated day per quarter of the
/// operations, so the engine's off-peak window (the night, unless
/// `--daily-offpeak-time-utc` names another) and daily schedules follow
/// the workload's day rather than the wall clock.
struct SimulatedDay {
    clock: Arc<ManualClock>,
    ops: u64,
}

impl SimulatedDay {
    /// The first simulated midnight (2026-01-01, UTC).
    const START_SECS: u64 = 20_454 * 86_400;

    /// Installs the clock in `options` for a `diurnal` run.
    fn install(workload: WorkloadKind, ops: u64, options: &mut Options) -> Option<SimulatedDay> {
        if workload != WorkloadKind::Diurnal {
            return None;
        }
        let clock = Arc::new(ManualClock::at_micros(Self::START_SECS * 1_000_000));
        options.clock = clock.clone();
        if options.daily_offpeak_time_utc.is_empty() {
            options.daily_offpeak_time_utc = DIURNAL_OFFPEAK_UTC.to_owned();
        }
        Some(SimulatedDay { clock, ops })
    }

    /// Moves the clock to operation `i` (days follow one another; a
    /// clock something slept on further is left where it is).
    fn at(&self, i: u64) {
        let day = OpGenerator::diurnal_day_ops(self.ops);
        let secs =
            Self::START_SECS + (i / day) * 86_400 + OpGenerator::diurnal_second_of_day(i, self.ops);
        self.clock.advance_to_micros(secs * 1_000_000);
    }
}

/// Runs `workload` on a fresh database in `dir` with `options`.
pub fn run_workload(
    dir: &Path,
    options: Options,
    strategy: &str,
    workload: WorkloadKind,
    s: &WorkloadSettings,
) -> Result<WorkloadRun> {
    let switch_log = Arc::new(SwitchLog::default());
    let mut options = options;
    options.listeners.push(switch_log.clone());
    let day = SimulatedDay::install(workload, s.ops, &mut options);
    let synchronous = s.schedule == Schedule::Synchronous;
    if synchronous {
        // One thread: two jobs at once could finish in either order.
        options.max_background_jobs = 1;
    }
    let disk = MeteredFs::new(Arc::clone(&options.fs), is_table_file);
    options.fs = Arc::new(disk.clone());
    let db = Db::open(dir, options).context(DbSnafu)?;
    let wait = |db: &Db| -> Result<()> {
        if synchronous {
            db.wait_for_compact().context(DbSnafu)?;
        }
        Ok(())
    };
    let mut values = Values::new(s.value_size, s.compression_ratio, s.seed);
    let mut key = vec![0u8; s.key_size];
    if workload.has_load() {
        const BATCH: u64 = 1000;
        let mut next = 0;
        while next < s.keys {
            let mut batch = lithify::WriteBatch::new();
            for id in next..(next + BATCH).min(s.keys) {
                make_key(id, &mut key);
                batch.put(&key, values.next_value());
            }
            db.write(batch).context(DbSnafu)?;
            wait(&db)?;
            next += BATCH;
        }
        db.flush().context(DbSnafu)?;
    }
    wait(&db)?;
    settle(&db);
    switch_log
        .switches
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clear();
    let before_stats = db.stats();
    let before = written(&before_stats);
    let counted_before = WorkCounts::snapshot(&before_stats);
    disk.reset_peak();
    let mut temp = TempSpace::new(disk.space().bytes);
    let mut ops = OpGenerator::new(workload, s.keys, s.ops, s.seed);
    let mut latency = Histogram::default();
    let mut timeline = Vec::new();
    let mut next_sample = 1;
    let sample_at = |k: u64| k * s.ops / TIMELINE_POINTS;
    let cpu_before = report::process_cpu_seconds();
    let start = Instant::now();
    let per_second = PerSecond::new(start);
    let mut second = per_second.recorder();
    for done in 0..s.ops {
        switch_log.done.store(done, Ordering::Relaxed);
        if let Some(day) = &day {
            day.at(done);
        }
        while next_sample < TIMELINE_POINTS && done >= sample_at(next_sample).max(1) {
            timeline.push(AmpSample::of(&db, before, done));
            next_sample += 1;
        }
        let t0 = Instant::now();
        match ops.next_op() {
            Op::Put(id) => {
                make_key(id, &mut key);
                db.put(&key, values.next_value()).context(DbSnafu)?;
            }
            Op::Delete(id) => {
                make_key(id, &mut key);
                db.delete(&key).context(DbSnafu)?;
            }
            Op::Get(id) => {
                make_key(id, &mut key);
                db.get(&key).context(DbSnafu)?;
            }
            Op::Scan(id) => {
                make_key(id, &mut key);
                scan(&db, &key)?;
            }
        }
        let now = Instant::now();
        let nanos = now.duration_since(t0).as_nanos() as u64;
        latency.record(nanos);
        second.record(now, nanos);
        if synchronous {
            wait(&db)?;
            temp.after_wait(&disk);
        }
    }
    let elapsed = start.elapsed();
    drop(second);
    // A switch while background work settles comes after every operation.
    switch_log.done.store(s.ops, Ordering::Relaxed);
    settle(&db);
    let cpu_us_per_op = match (cpu_before, report::process_cpu_seconds()) {
        (Some(a), Some(b)) if s.ops > 0 => Some((b - a) * 1e6 / s.ops as f64),
        _ => None,
    };
    timeline.push(AmpSample::of(&db, before, s.ops));
    let stats = db.stats();
    let after = written(&stats);
    let t = &stats.tables[0];
    let user = after.1 - before.1;
    let mut counts = WorkCounts::between(&counted_before, &WorkCounts::snapshot(&stats));
    counts.ops = s.ops;
    counts.mean_space_amp =
        timeline.iter().map(|p| p.space_amp).sum::<f64>() / timeline.len().max(1) as f64;
    let peak = temp.peak.max(disk.space().peak);
    counts.peak_space_amp = peak as f64 / counts.live_bytes.max(1) as f64;
    counts.peak_temp_space = synchronous.then(|| temp.over(counts.live_bytes));
    let run = WorkloadRun {
        workload,
        strategy: strategy.to_owned(),
        in_force: format!("{} ({})", t.strategy, t.strategy_reason),
        ops: s.ops,
        elapsed,
        latency,
        write_amp: if user == 0 {
            0.0
        } else {
            (after.0 - before.0) as f64 / user as f64
        },
        read_amp: t.read_amp_tables,
        space_amp: t.space_amp,
        cpu_us_per_op,
        switches: std::mem::take(
            &mut *switch_log
                .switches
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        ),
        table_write_amp: (after.2 - before.2) as f64 / user.max(1) as f64,
        predicted: t.predicted.zip(t.predicted_cpu_us),
        timeline,
        cpu_samples: cpu_us_per_op.into_iter().collect(),
        schedule: s.schedule,
        counts,
        per_second: per_second.seconds(),
        stalled_writes: (stats.stalls.delayed_writes + stats.stalls.stopped_writes)
            - (before_stats.stalls.delayed_writes + before_stats.stalls.stopped_writes),
    };
    db.close().context(DbSnafu)?;
    Ok(run)
}

/// One workload's rows of the report, with `Adaptive` against the best
/// fixed strategy by throughput.
pub fn report_rows(runs: &[WorkloadRun]) -> String {
    let mut out = String::new();
    let Some(first) = runs.first() else {
        return out;
    };
    let _ = writeln!(out, "\n{}", workload_name(first.workload));
    let _ = writeln!(
        out,
        "  {:<26} {:>10} {:>17} {:>7} {:>7} {:>7} {:>8} {:>9} {:>9} {:>7}",
        "strategy",
        "ops/s",
        "CPU us/op",
        "W-amp",
        "R-amp",
        "S-amp",
        "S-peak",
        "p99(us)",
        "p99.9/s",
        "stalls"
    );
    for r in runs {
        let _ = writeln!(
            out,
            "  {:<26} {:>10.0} {:>17} {:>7.2} {:>7.2} {:>7.2} {:>8.2} {:>9.1} {:>9} {:>7}",
            r.strategy,
            r.ops_per_sec(),
            cpu(r),
            r.write_amp,
            r.read_amp,
            r.space_amp,
            r.counts.peak_space_amp,
            r.latency.quantile(0.99) as f64 / 1000.0,
            smoothness(r),
            r.stalled_writes,
        );
    }
    let best = runs
        .iter()
        .filter(|r| r.strategy != "adaptive")
        .max_by(|a, b| a.ops_per_sec().total_cmp(&b.ops_per_sec()));
    let adaptive = runs.iter().find(|r| r.strategy == "adaptive");
    if let (Some(best), Some(adaptive)) = (best, adaptive) {
        let _ = writeln!(
            out,
            "  adaptive: {:.0} % of the best fixed strategy's throughput ({})",
            100.0 * adaptive.ops_per_sec() / best.ops_per_sec(),
            best.strategy,
        );
    }
    let cheapest = runs
        .iter()
        .filter(|r| r.strategy != "adaptive")
        .filter_map(|r| r.cpu_us_per_op.map(|c| (r, c)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    if let (Some((best, c)), Some(a)) = (cheapest, adaptive.and_then(|a| a.cpu_us_per_op)) {
        let _ = writeln!(
            out,
            "  adaptive: {:.0} % of the CPU per op of the cheapest fixed strategy ({})",
            100.0 * a / c,
            best.strategy,
        );
    }
    if let Some(a) = adaptive {
        let _ = writeln!(out, "  adaptive chose {}", a.in_force);
        if let Some((p, cpu)) = &a.predicted {
            let _ = writeln!(
                out,
                "  adaptive predicted (measured): write amp {:.2} ({:.2} by flushes and compactions), read amp {:.2} ({:.2}), space amp {:.2} ({:.2}), CPU {:.2} us/op ({})",
                p.write_amp,
                a.table_write_amp,
                p.read_amp,
                a.read_amp,
                p.space_amp,
                a.space_amp,
                cpu,
                a.cpu_us_per_op
                    .map_or("n/a".to_owned(), |c| format!("{c:.2}")),
            );
        }
        switches_line(&mut out, a);
        if WorkloadKind::CHANGING.contains(&first.workload)
            && runs.iter().any(|r| r.strategy != "adaptive")
        {
            let _ = writeln!(out, "  {}", against_every_fixed(a, runs));
        }
    }
    out
}

/// Where `Adaptive` stands against the fixed strategies on one workload,
/// by some cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Standing {
    /// Adaptive's cost over the cheapest fixed strategy's.
    pub to_cheapest: f64,
    /// The cheapest fixed strategy.
    pub cheapest: String,
    /// Fixed strategies that cost strictly more than Adaptive.
    pub beaten: usize,
    /// Fixed strategies compared.
    pub fixed: usize,
}

/// `Adaptive`'s standing in `runs` (one workload) by `cost`, if `runs`
/// hold it and a fixed strategy.
pub fn adaptive_standing(
    runs: &[WorkloadRun],
    cost: impl Fn(&WorkloadRun) -> f64,
) -> Option<Standing> {
    let adaptive = cost(runs.iter().find(|r| r.strategy == "adaptive")?);
    let fixed: Vec<(&WorkloadRun, f64)> = runs
        .iter()
        .filter(|r| r.strategy != "adaptive")
        .map(|r| (r, cost(r)))
        .collect();
    let (cheapest, least) = fixed.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
    Some(Standing {
        to_cheapest: adaptive / least.max(f64::MIN_POSITIVE),
        cheapest: cheapest.strategy.clone(),
        beaten: fixed.iter().filter(|(_, c)| adaptive < *c).count(),
        fixed: fixed.len(),
    })
}

/// One workload's rows of the deterministic report: what each strategy's
/// operations cost by the engine's counts ([`Schedule::Synchronous`]
/// runs), priced at `costs`, and `Adaptive`'s standing on that cost.
pub fn counted_rows(runs: &[WorkloadRun], costs: &CpuCosts) -> String {
    let mut out = String::new();
    let Some(first) = runs.first() else {
        return out;
    };
    let _ = writeln!(
        out,
        "
{} (counted)",
        workload_name(first.workload)
    );
    let _ = writeln!(
        out,
        "  {:<26} {:>10} {:>7} {:>7} {:>8} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}",
        "strategy",
        "cost us/op",
        "W-amp",
        "C-read",
        "files",
        "tbl/get",
        "blk/get",
        "run/scn",
        "S-mean",
        "S-peak",
        "S-temp"
    );
    for r in runs {
        let [cost, w, c_read, files, tbl, blk, run, mean, peak, temp] = counted_cells(r, costs);
        let _ = writeln!(
            out,
            "  {:<26} {cost:>10} {w:>7} {c_read:>7} {files:>8} {tbl:>7} {blk:>7} {run:>7} {mean:>7} {peak:>7} {temp:>7}",
            r.strategy,
        );
    }
    if let Some(s) = adaptive_standing(runs, |r| r.counts.cost_us_per_op(costs)) {
        let _ = writeln!(
            out,
            "  adaptive: {:.1} % of the cheapest fixed strategy's counted cost ({}); cheaper than {} of {}",
            100.0 * s.to_cheapest,
            s.cheapest,
            s.beaten,
            s.fixed,
        );
    }
    if let Some(a) = runs.iter().find(|r| r.strategy == "adaptive") {
        let _ = writeln!(out, "  adaptive chose {}", a.in_force);
        switches_line(&mut out, a);
    }
    out
}

/// The deterministic report as a Markdown table (for the README).
pub fn counted_markdown(runs: &[WorkloadRun], costs: &CpuCosts) -> String {
    let mut out = String::from(
        "| workload | strategy | counted µs/op | write amp (tables) | compaction read amp | files written | tables/get | blocks/get | runs/scan | mean space amp | peak space amp | peak temporary space |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in runs {
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            workload_name(r.workload),
            r.strategy,
            counted_cells(r, costs).join(" | "),
        );
    }
    out
}

/// A counted row's figures as text, in the tables' order: cost per op,
/// table write amp, compaction read amp, files written, tables and
/// blocks per lookup, runs per scan, mean, peak and temporary space
/// (`-` where not counted).
fn counted_cells(r: &WorkloadRun, costs: &CpuCosts) -> [String; 10] {
    let c = &r.counts;
    [
        format!("{:.3}", c.cost_us_per_op(costs)),
        format!("{:.2}", c.table_write_amp()),
        format!(
            "{:.2}",
            c.compaction_bytes_read as f64 / c.user_bytes.max(1) as f64
        ),
        c.files_written.to_string(),
        format!("{:.2}", c.tables_per_get()),
        format!("{:.2}", c.blocks_per_get()),
        format!("{:.2}", c.runs_per_scan()),
        format!("{:.2}", c.mean_space_amp),
        format!("{:.2}", c.peak_space_amp),
        c.peak_temp_space
            .map_or("-".to_owned(), |t| format!("{t:.2}")),
    ]
}

/// The line of `adaptive`'s switches, if it switched.
fn switches_line(out: &mut String, adaptive: &WorkloadRun) {
    if adaptive.switches.is_empty() {
        return;
    }
    let when: Vec<String> = adaptive
        .switches
        .iter()
        .map(|(at, to)| format!("{to} after op {at}"))
        .collect();
    let _ = writeln!(out, "  adaptive switched: {}", when.join("; "));
}

/// Whether `adaptive` used less CPU and wrote less than every fixed
/// strategy of `runs` (the goal on workloads that change).
fn against_every_fixed(adaptive: &WorkloadRun, runs: &[WorkloadRun]) -> String {
    let fixed: Vec<&WorkloadRun> = runs.iter().filter(|r| r.strategy != "adaptive").collect();
    let beaten = |better: &dyn Fn(&WorkloadRun) -> bool| fixed.iter().filter(|r| better(r)).count();
    let cpu_beaten = match adaptive.cpu_us_per_op {
        Some(a) => format!(
            "{} of {}",
            beaten(&|r| r.cpu_us_per_op.is_some_and(|c| a < c)),
            fixed.len()
        ),
        None => "n/a".to_string(),
    };
    format!(
        "adaptive beats {cpu_beaten} fixed strategies in CPU per op and {} of {} in write amplification",
        beaten(&|r| adaptive.write_amp < r.write_amp),
        fixed.len()
    )
}

/// The run of the median CPU per operation among `runs` (repeats of one
/// cell, interleaved with the other strategies' so that the machine's
/// drift falls on all alike), carrying every run's CPU per operation in
/// [`WorkloadRun::cpu_samples`]. With an even count the lower middle run
/// is taken; runs without a CPU figure sort last.
pub fn median_run(mut runs: Vec<WorkloadRun>) -> Option<WorkloadRun> {
    let samples: Vec<f64> = runs.iter().filter_map(|r| r.cpu_us_per_op).collect();
    runs.sort_by(|a, b| {
        let key = |r: &WorkloadRun| r.cpu_us_per_op.unwrap_or(f64::INFINITY);
        key(a).total_cmp(&key(b))
    });
    let n = runs.len();
    if n == 0 {
        return None;
    }
    let mut median = runs.swap_remove((n - 1) / 2);
    median.cpu_samples = samples;
    Some(median)
}

/// The spread of a cell's CPU per operation: (least, most).
pub fn cpu_spread(r: &WorkloadRun) -> Option<(f64, f64)> {
    let least = r.cpu_samples.iter().copied().reduce(f64::min)?;
    let most = r.cpu_samples.iter().copied().reduce(f64::max)?;
    Some((least, most))
}

/// The worst second's p99.9 over the median second's, as text (`-` for
/// a run shorter than two seconds).
fn smoothness(r: &WorkloadRun) -> String {
    if r.per_second.len() < 2 {
        "-".to_owned()
    } else {
        format!("{:.2}", worst_to_median_p999(&r.per_second))
    }
}

/// CPU microseconds per op as text (`-` where not measured), with the
/// spread of the cell's runs when there were several.
fn cpu(r: &WorkloadRun) -> String {
    match (r.cpu_us_per_op, cpu_spread(r)) {
        (None, _) => "-".to_owned(),
        (Some(c), Some((lo, hi))) if r.cpu_samples.len() > 1 => {
            format!("{c:.2} ({lo:.2}-{hi:.2})")
        }
        (Some(c), _) => format!("{c:.2}"),
    }
}

/// The report as a Markdown table (for the README).
pub fn markdown(runs: &[WorkloadRun]) -> String {
    let mut out = String::from(
        "| workload | strategy | ops/s | CPU µs/op, median (spread) | write amp | read amp (tables/get) | space amp | peak space amp | p99 (µs) | worst / median 1-s p99.9 | stalled writes |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in runs {
        let _ = writeln!(
            out,
            "| {} | {} | {:.0} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.1} | {} | {} |",
            workload_name(r.workload),
            r.strategy,
            r.ops_per_sec(),
            cpu(r),
            r.write_amp,
            r.read_amp,
            r.space_amp,
            r.counts.peak_space_amp,
            r.latency.quantile(0.99) as f64 / 1000.0,
            smoothness(r),
            r.stalled_writes,
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_workload_name_parses_and_round_trips() {
        for (name, kind) in WORKLOAD_NAMES {
            assert_eq!(workload_named(name).unwrap(), kind);
            assert_eq!(workload_name(kind), name);
            assert_eq!(workload_named(kind.name()).unwrap(), kind);
        }
        assert!(workload_named("nope").is_err());
    }

    #[test]
    fn report_strategies_carry_the_target_file_size() {
        for name in report_strategies() {
            let s = strategy_named(name, 2 << 20).unwrap();
            match &s {
                CompactionStrategy::MajorOnly(o) => assert_eq!(o.target_file_size, 2 << 20),
                CompactionStrategy::TwoTier(o) => assert_eq!(o.target_file_size, 2 << 20),
                CompactionStrategy::Adaptive(a) => {
                    assert_eq!(a.two_tier.target_file_size, 2 << 20);
                    assert_eq!(a.major_only.target_file_size, 2 << 20);
                }
                CompactionStrategy::Leveled(_) => assert_eq!(name, "leveled"),
            }
        }
        assert!(strategy_named("fastest", 1).is_err());
    }

    #[test]
    fn a_small_workload_runs_every_operation_and_measures_it() {
        let dir = tempfile::tempdir().unwrap();
        let s = WorkloadSettings {
            keys: 2_000,
            ops: 4_000,
            key_size: 16,
            value_size: 50,
            compression_ratio: 0.5,
            seed: 1,
            schedule: Schedule::Background,
        };
        let options = Options::default()
            .write_buffer_size(32 << 10)
            .compaction_strategy(strategy_named("two-tier:write-only", 32 << 10).unwrap());
        let r = run_workload(
            dir.path(),
            options,
            "two-tier:write-only",
            WorkloadKind::ReadMostlyFewUpdates,
            &s,
        )
        .unwrap();
        assert_eq!((r.ops, r.latency.count()), (4_000, 4_000));
        // The WAL alone writes every user byte once, plus record overhead.
        assert!(r.write_amp >= 1.0, "{r:?}");
        // The load was flushed: lookups probe tables.
        assert!(r.read_amp > 0.0, "{r:?}");
        assert!(r.space_amp > 0.0, "{r:?}");
        assert!(r.in_force.starts_with("two-tier"), "{}", r.in_force);
        let table = markdown(std::slice::from_ref(&r));
        assert!(
            table.contains("| read-mostly-few-updates | two-tier:write-only |"),
            "{table}"
        );
    }

    /// 4 000 keys, 40 000 operations: a changing workload small enough
    /// for a test.
    fn small_changing() -> WorkloadSettings {
        WorkloadSettings {
            keys: 4_000,
            ops: 40_000,
            key_size: 16,
            value_size: 50,
            compression_ratio: 0.5,
            seed: 3,
            schedule: Schedule::Background,
        }
    }

    /// `workload` under strategy `name` at `small_changing`'s sizes, on
    /// 32 KiB memtables and files (`Adaptive` deciding every 2 000
    /// operations).
    fn run_small(name: &str, workload: WorkloadKind) -> WorkloadRun {
        run_small_as(name, workload, Schedule::Background)
    }

    /// `run_small` with flushes and compactions run on `schedule`.
    fn run_small_as(name: &str, workload: WorkloadKind, schedule: Schedule) -> WorkloadRun {
        let dir = tempfile::tempdir().unwrap();
        let mut strategy = strategy_named(name, 32 << 10).unwrap();
        if let CompactionStrategy::Adaptive(a) = &mut strategy {
            a.min_window_ops = 2_000;
        }
        let options = Options::default()
            .write_buffer_size(32 << 10)
            .compaction_strategy(strategy);
        let s = WorkloadSettings {
            schedule,
            ..small_changing()
        };
        run_workload(dir.path(), options, name, workload, &s).unwrap()
    }

    #[test]
    fn a_changing_workload_reports_adaptive_switches_and_its_standing() {
        let s = small_changing();
        let runs: Vec<WorkloadRun> = ["two-tier:write-only", "adaptive"]
            .into_iter()
            .map(|name| run_small(name, WorkloadKind::PhaseShift))
            .collect();
        let adaptive = &runs[1];
        // The bulk load of increasing keys, then random updates: at least
        // one switch, reported with the operation it followed.
        assert!(!adaptive.switches.is_empty(), "{adaptive:?}");
        assert!(adaptive.switches.iter().all(|(at, _)| *at < s.ops));
        assert!(adaptive.switches.windows(2).all(|w| w[0].0 <= w[1].0));
        assert!(
            runs[0].switches.is_empty(),
            "a fixed strategy never switches"
        );
        let rows = report_rows(&runs);
        assert!(rows.contains("\nphase-shift\n"), "{rows}");
        assert!(rows.contains("adaptive switched: "), "{rows}");
        assert!(rows.contains(" of 1 in write amplification"), "{rows}");
        assert!(
            rows.contains("adaptive predicted (measured): write amp "),
            "{rows}"
        );
        // Amplification over the operations: 50 samples in order (the
        // last after background work settled) for each run, drawn one
        // line per strategy with Adaptive's switches marked.
        for r in &runs {
            assert_eq!(r.timeline.len() as u64, TIMELINE_POINTS, "{:?}", r.timeline);
            assert!(r.timeline.windows(2).all(|w| w[0].ops < w[1].ops));
            assert_eq!(r.timeline.last().unwrap().ops, s.ops);
            assert!(
                r.timeline
                    .iter()
                    .all(|p| p.write_amp >= 0.0 && p.space_amp >= 0.0)
            );
        }
        let page = crate::strategies_html::page(&runs);
        assert!(page.contains("write amp so far, over the operations"));
        assert!(page.contains("space amp, over the operations"));
        // Write and space amplification, and each second's p99.9.
        assert!(runs.iter().all(|r| !r.per_second.is_empty()));
        assert_eq!(page.matches("<polyline").count(), 3 * runs.len());
        assert!(page.contains("p99.9 latency of each second"));
        assert!(page.matches("stroke-dasharray").count() >= 2 * adaptive.switches.len());
    }

    #[test]
    fn synchronous_runs_count_the_same_work_every_time() {
        let costs = CpuCosts::default();
        let mut runs = Vec::new();
        for name in ["leveled", "two-tier:write-only", "adaptive"] {
            let first = run_small_as(name, WorkloadKind::PhaseShift, Schedule::Synchronous);
            let second = run_small_as(name, WorkloadKind::PhaseShift, Schedule::Synchronous);
            assert_eq!(first.counts, second.counts, "{name}");
            assert_eq!(first.switches, second.switches, "{name}");
            assert_eq!(first.in_force, second.in_force, "{name}");
            let c = &first.counts;
            // Phase-shift writes, reads and scans, over a table that is
            // flushed and compacted many times.
            assert_eq!(c.ops, 40_000);
            assert!(c.writes > 0 && c.gets > 0 && c.scans > 0, "{c:?}");
            assert!(
                c.files_written > 10 && c.table_bytes_written > c.user_bytes,
                "{c:?}"
            );
            assert!(c.tables_probed > 0 && c.blocks_read > 0, "{c:?}");
            assert!(c.scan_sorted_runs >= c.scans, "{c:?}");
            // The peak holds a compaction's inputs and outputs at once.
            assert!(
                c.peak_space_amp > c.mean_space_amp && c.mean_space_amp >= 1.0,
                "{c:?}"
            );
            // Temporary space is part of the peak (both over the live
            // data at the end, which the last phase's deletes shrink).
            let temp = c.peak_temp_space.unwrap();
            assert!(temp > 1.0 && temp <= c.peak_space_amp + 1.0, "{c:?}");
            assert!(c.cost_us_per_op(&costs) > 0.0);
            runs.push(first);
        }
        let rows = counted_rows(&runs, &costs);
        assert!(rows.contains("\nphase-shift (counted)\n"), "{rows}");
        assert!(rows.contains("adaptive: "), "{rows}");
        let s = adaptive_standing(&runs, |r| r.counts.cost_us_per_op(&costs)).unwrap();
        assert_eq!(s.fixed, 2);
        let table = counted_markdown(&runs, &costs);
        assert_eq!(table.lines().count(), 2 + runs.len(), "{table}");
    }

    /// The moving hot spot, counted: the heat rule (the preset) against the
    /// table-count rule it replaced.
    #[test]
    fn read_heat_merges_where_the_reads_are() {
        let costs = CpuCosts::default();
        let run = |name: &str| {
            let dir = tempfile::tempdir().unwrap();
            let options = Options::default()
                .write_buffer_size(64 << 10)
                .compaction_strategy(strategy_named(name, 64 << 10).unwrap());
            let s = WorkloadSettings {
                keys: 20_000,
                ops: 200_000,
                schedule: Schedule::Synchronous,
                ..small_changing()
            };
            let r = run_workload(dir.path(), options, name, WorkloadKind::MovingHotSpot, &s);
            r.unwrap().counts
        };
        let heat = run("two-tier:read-mostly-many");
        let count = run("two-tier:read-mostly-many:table-count");
        let per_get = |c: &WorkCounts| c.tables_probed as f64 / c.gets as f64;
        let write_amp = |c: &WorkCounts| c.table_bytes_written as f64 / c.user_bytes as f64;
        eprintln!(
            "heat {:.3} tables/get, write amp {:.3}, {:.3} us/op; table count {:.3}, {:.3}, {:.3}",
            per_get(&heat),
            write_amp(&heat),
            heat.cost_us_per_op(&costs),
            per_get(&count),
            write_amp(&count),
            count.cost_us_per_op(&costs)
        );
        assert!(per_get(&heat) < per_get(&count));
        assert!(write_amp(&heat) <= write_amp(&count));
        assert!(heat.cost_us_per_op(&costs) < count.cost_us_per_op(&costs));
    }

    #[test]
    fn temporary_space_is_what_each_operations_work_added_to_the_files_at_rest() {
        let mut t = TempSpace::new(100);
        // A compaction that doubled the files for a moment.
        t.add(100, 200);
        // Files shrank: the peak was the files before, no extra.
        t.add(60, 100);
        // A flush that added 10 and needed nothing more.
        t.add(70, 70);
        assert_eq!((t.most_extra, t.peak), (100, 200));
        assert_eq!(t.over(50), 3.0);
        assert_eq!(TempSpace::new(5).over(5), 1.0);
    }

    #[test]
    fn the_median_run_carries_every_runs_cpu() {
        let run = run_small("two-tier:write-only", WorkloadKind::WriteOnly);
        let with = |cpu: f64| WorkloadRun {
            cpu_us_per_op: Some(cpu),
            ..run.clone()
        };
        let median = median_run(vec![with(3.0), with(1.0), with(2.0), with(5.0)]).unwrap();
        assert_eq!(median.cpu_us_per_op, Some(2.0));
        assert_eq!(median.cpu_samples, [3.0, 1.0, 2.0, 5.0]);
        assert_eq!(cpu_spread(&median), Some((1.0, 5.0)));
        assert!(cpu(&median).starts_with("2.00 (1.00-5.00)"));
        assert!(median_run(Vec::new()).is_none());
    }

    #[test]
    fn a_diurnal_run_follows_its_simulated_day() {
        let mut o = Options::default();
        assert!(SimulatedDay::install(WorkloadKind::PhaseShift, 4_000, &mut o).is_none());
        assert!(o.daily_offpeak_time_utc.is_empty());
        let day = SimulatedDay::install(WorkloadKind::Diurnal, 4_000, &mut o).unwrap();
        assert_eq!(o.daily_offpeak_time_utc, DIURNAL_OFFPEAK_UTC);
        // Days of 1 000 operations: operation 1 600 is the second day's
        // 14:24, where its night (the off-peak window) starts.
        day.at(1_600);
        let secs = o.clock.now_secs();
        assert_eq!(
            secs,
            SimulatedDay::START_SECS + 86_400 + 14 * 3_600 + 24 * 60
        );
        let window = lithify::OffpeakWindow::parse(&o.daily_offpeak_time_utc).unwrap();
        assert!(window.contains(secs) && !window.contains(secs - 60));
        // A window the user names is kept.
        let mut named = Options::default().daily_offpeak_time_utc("01:00-02:00".to_owned());
        SimulatedDay::install(WorkloadKind::Diurnal, 4_000, &mut named).unwrap();
        assert_eq!(named.daily_offpeak_time_utc, "01:00-02:00");

        // Adaptive decides on the day's mix once it has seen a night.
        let r = run_small("adaptive", WorkloadKind::Diurnal);
        assert!(r.in_force.contains("a day's mix, "), "{}", r.in_force);
    }
}
