//! The compaction simulator: the real pickers of every strategy driven by
//! synthetic flushes, with file contents tracked as key sets instead of
//! written.
//!
//! Keys are integers. A flush turns the memtable's newest operation per
//! key (a put or a delete) into an L0 file — or, when the strategy's
//! [`pick_flush`](lithify_compaction::CompactionPicker::pick_flush) plans one, merges it
//! straight into existing files (major flushes of `MajorOnly`, flushes
//! cut by stripe or merged with the previous L0 table of `TwoTier`). Each
//! level L1+ keeps bitmaps of its keys and tombstones, so a compaction is
//! a merge of bitmap ranges and L0 key lists, newest first, walked in key
//! order through the same [`OutputCutter`](lithify_compaction::job::OutputCutter) the
//! job uses; incremental majors leave files without new keys in place.
//! File sizes come from a [`SizeModel`] measured on real tables. Metadata
//! goes through a real `VersionSet` on an in-memory file system, so
//! versions, edits and pickers are exactly the engine's.
//!
//! Compactions run to completion after each flush (an infinitely fast
//! compaction thread, one compaction at a time); at the end the last
//! memtable is flushed and compactions drained.
//!
//! Two kinds of input: the plain write stream of db_bench's `fillrandom`
//! / `fillseq` (by [`KeyDistribution`]), or one of the six workloads of
//! the strategies report ([`WorkloadKind`]: reads, puts and deletes, some
//! after a sorted load). With a workload, point reads are simulated too
//! (tables probed per read), and `Adaptive` observes the operations in
//! windows and switches strategy as [`AdaptiveState`] decides.

mod bitmap;
pub mod calibration;
mod error;
mod lsm;
mod ops;
mod size_model;
mod workload;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use lithify_base::InternalKeyComparator;
use lithify_sstable::SstOptions;
use lithify_version::Version;

pub use error::{Error, Result};
pub use ops::{
    DIURNAL_DAYTIME_TENTHS, DIURNAL_OFFPEAK_UTC, Op, OpGenerator, SCAN_LENGTH, WorkloadKind,
};
pub use size_model::{SizeModel, calibrate, db_bench_key};
pub use workload::{KeyDistribution, KeyGenerator};

use crate::error::InvalidArgumentSnafu;
use bitmap::{Bitmap, MemKeys};
use lithify_compaction::{
    CompactionPicker, CompactionStatsTable, CompactionsInProgress, LevelShape, PickContext,
    human_size,
};
use lithify_compaction_leveled::LeveledOptions;
use lithify_compaction_strategy::CompactionStrategy;
use lithify_compaction_strategy::adaptive::{
    AdaptiveState, DayPart, WorkloadRecorder, WorkloadStats,
};
use lithify_compaction_strategy::cost_model::TableSize;
use lithify_compaction_tiered::stripe_boundaries;
use lsm::{SimLsm, user_key_of};

/// What to simulate.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Number of writes (with a workload: operations after its load).
    pub num_writes: u64,
    /// Number of distinct keys writes are drawn from (db_bench's `--num`).
    pub key_space: u64,
    /// User key size in bytes.
    pub key_size: usize,
    /// Value size in bytes.
    pub value_size: usize,
    /// How keys are drawn (without a workload).
    pub distribution: KeyDistribution,
    /// Memtable size that triggers a flush (`write_buffer_size`).
    pub write_buffer_size: u64,
    /// Memtable bytes per entry beyond key, trailer and value (skiplist
    /// node header and links).
    pub memtable_entry_overhead: u64,
    /// Table options of the engine (block size, filter, compression).
    pub sst_options: SstOptions<InternalKeyComparator>,
    /// Leveled options (the strategy when `strategy` is `None`; its
    /// `num_levels` is the version's for every strategy).
    pub options: LeveledOptions,
    /// The strategy; `None` means `Leveled(options)`.
    pub strategy: Option<CompactionStrategy>,
    /// One of the strategies report's workloads instead of the plain write
    /// stream.
    pub workload: Option<WorkloadKind>,
    /// Operations per `Adaptive` observation window.
    pub adaptive_window: u64,
    /// One point read in this many is probed for read amplification.
    pub read_sample: u64,
    /// Random seed.
    pub seed: u64,
}

impl SimConfig {
    /// db_bench-like defaults: `num_writes` writes over as many keys,
    /// 16-byte keys, 100-byte values, uniform keys, 64 MiB write buffer,
    /// default options.
    pub fn fillrandom(num_writes: u64) -> Self {
        SimConfig {
            num_writes,
            key_space: num_writes,
            key_size: 16,
            value_size: 100,
            distribution: KeyDistribution::Uniform,
            write_buffer_size: 64 << 20,
            memtable_entry_overhead: 32,
            sst_options: SstOptions::for_internal_keys(InternalKeyComparator::bytewise()),
            options: LeveledOptions::default(),
            strategy: None,
            workload: None,
            adaptive_window: 0,
            read_sample: 4,
            seed: 0x5eed,
        }
    }

    /// `ops` operations of `workload` over `key_space` keys with
    /// `strategy`; the adaptive window defaults to 1/40 of the operations.
    pub fn workload(
        workload: WorkloadKind,
        ops: u64,
        key_space: u64,
        strategy: CompactionStrategy,
    ) -> Self {
        SimConfig {
            key_space,
            workload: Some(workload),
            strategy: Some(strategy),
            adaptive_window: (ops / 40).max(1),
            ..SimConfig::fillrandom(ops)
        }
    }

    fn strategy(&self) -> CompactionStrategy {
        self.strategy
            .clone()
            .unwrap_or_else(|| CompactionStrategy::Leveled(self.options.clone()))
    }
}

/// Counts by kind of compaction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimCounts {
    /// Flushes.
    pub flushes: u64,
    /// Flushes that merged into existing files (flush plans).
    pub flush_plans: u64,
    /// Compactions that rewrote data, by reason.
    pub compactions: HashMap<&'static str, u64>,
    /// Trivial moves.
    pub trivial_moves: u64,
    /// Bytes incremental majors left in place.
    pub bytes_reused: u64,
}

/// A strategy switch `Adaptive` made.
#[derive(Debug, Clone, PartialEq)]
pub struct SimSwitch {
    /// Operations done when it switched.
    pub at_op: u64,
    /// The new strategy.
    pub to: String,
    /// Why.
    pub reason: String,
}

/// The simulator's result.
#[derive(Debug, Clone)]
pub struct SimReport {
    /// The configuration.
    pub config_summary: String,
    /// The strategy simulated (for `Adaptive`, `adaptive`).
    pub strategy: String,
    /// The final LSM shape.
    pub version: Arc<Version>,
    /// Cumulative stats per level (after the load, with a workload).
    pub stats: CompactionStatsTable,
    /// The final scores per level.
    pub scores: Vec<f64>,
    /// Counts.
    pub counts: SimCounts,
    /// Distinct keys held (live keys and tombstones not yet dropped).
    pub unique_keys: u64,
    /// Live keys at the end.
    pub live_keys: u64,
    /// Bytes the user wrote (writes x (key + value); after the load).
    pub user_bytes: u64,
    /// All bytes flushes and compactions wrote (after the load).
    pub bytes_written: u64,
    /// Bytes written by the load, if any.
    pub load_bytes_written: u64,
    /// Size of the live data compacted into one sorted run.
    pub logical_bytes: u64,
    /// The most bytes on disk at once, over the live data at the end.
    pub peak_space_amplification: f64,
    /// Point reads simulated, and tables they probed.
    pub reads_probed: u64,
    /// Tables those reads probed in total.
    pub tables_probed: u64,
    /// `Adaptive`'s switches.
    pub switches: Vec<SimSwitch>,
    /// The table size model used.
    pub size_model: SizeModel,
    /// Bytes of one user write (key + value).
    pub key_value_bytes: u64,
    /// What a [`WorkloadRecorder`] saw over the whole run (windows
    /// merged; empty without a workload): the cost model's input.
    pub observed: WorkloadStats,
    /// Live data in one sorted run, averaged over the run's windows (the
    /// table size the cost model is given).
    pub mean_live_bytes: u64,
    /// Table bytes of one full flush (the memtable's entries as a file).
    pub flush_bytes: u64,
    /// Distinct keys per write in the flushed memtables (after the load):
    /// 1 when no flush held two writes of one key.
    pub flush_distinct_share: f64,
    /// Wall time of the simulation.
    pub elapsed_secs: f64,
}

impl SimReport {
    /// All bytes written (flushes and compactions) per byte flushed
    /// (RocksDB's `Sum W-Amp`; flushes merged into files count as
    /// compactions).
    pub fn write_amplification(&self) -> f64 {
        self.stats.write_amplification()
    }

    /// All bytes written per byte the user wrote (key + value).
    pub fn write_amplification_vs_user(&self) -> f64 {
        self.bytes_written as f64 / self.user_bytes.max(1) as f64
    }

    /// Bytes on disk per byte of live data (one version of each key in one
    /// sorted run).
    pub fn space_amplification(&self) -> f64 {
        self.version.total_bytes() as f64 / self.logical_bytes.max(1) as f64
    }

    /// Tables a point read probed on average (no bloom filters; 0 without
    /// reads).
    pub fn read_amplification(&self) -> f64 {
        self.tables_probed as f64 / self.reads_probed.max(1) as f64
    }
}

impl fmt::Display for SimReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.config_summary)?;
        writeln!(
            f,
            "size model: {:.1} bytes/entry + {} bytes/file (measured on lithify-sstable tables)",
            self.size_model.per_entry, self.size_model.fixed
        )?;
        writeln!(f)?;
        writeln!(f, "Level  Files        Size    Score")?;
        for level in 0..self.version.num_levels() {
            let n = self.version.num_files(level);
            if n == 0 {
                continue;
            }
            writeln!(
                f,
                "L{level:<5} {n:>5} {:>11} {:>8.2}",
                human_size(self.version.level_bytes(level)),
                self.scores.get(level).copied().unwrap_or(0.0)
            )?;
        }
        writeln!(
            f,
            "total  {:>5} {:>11}",
            self.version.total_files(),
            human_size(self.version.total_bytes())
        )?;
        writeln!(f)?;
        let shapes =
            LevelShape::of_version(&self.version, &CompactionsInProgress::new(), &self.scores);
        write!(f, "{}", self.stats.format("sim", &shapes))?;
        writeln!(f)?;
        let mut reasons: Vec<_> = self.counts.compactions.iter().collect();
        reasons.sort();
        writeln!(
            f,
            "flushes {} ({} merged into files), trivial moves {}, compactions {}, reused {}",
            self.counts.flushes,
            self.counts.flush_plans,
            self.counts.trivial_moves,
            reasons
                .iter()
                .map(|(r, n)| format!("{r}={n}"))
                .collect::<Vec<_>>()
                .join(" "),
            human_size(self.counts.bytes_reused)
        )?;
        for s in &self.switches {
            writeln!(
                f,
                "switched to {} after {} ops: {}",
                s.to, s.at_op, s.reason
            )?;
        }
        writeln!(
            f,
            "keys held {} (live {}); user data {}, live data {}",
            self.unique_keys,
            self.live_keys,
            human_size(self.user_bytes),
            human_size(self.logical_bytes)
        )?;
        write!(
            f,
            "write amplification {:.2} per user byte",
            self.write_amplification_vs_user()
        )?;
        if self.write_amplification() > 0.0 {
            write!(
                f,
                " ({:.2} bytes written / bytes flushed)",
                self.write_amplification()
            )?;
        }
        writeln!(f)?;
        if self.reads_probed > 0 {
            writeln!(
                f,
                "read amplification {:.2} tables probed per read ({} reads sampled)",
                self.read_amplification(),
                self.reads_probed
            )?;
        }
        writeln!(
            f,
            "space amplification {:.3} (bytes on disk / live data), peak {:.3}",
            self.space_amplification(),
            self.peak_space_amplification
        )?;
        write!(f, "simulated in {:.2} s", self.elapsed_secs)
    }
}

/// What the run observed, for the report.
struct SimObserved {
    stats: WorkloadStats,
    mean_live_bytes: u64,
    flush_entries: u64,
    flush_distinct_share: f64,
}

/// The memtable and the counters of the stream feeding it.
struct Feeder {
    mem: MemKeys,
    mem_bytes: u64,
    first_seq: u64,
    seq: u64,
    writes_in_mem: u64,
    entry_bytes: u64,
    write_buffer_size: u64,
    /// Memtable bytes per entry beyond key, trailer and value.
    overhead: u64,
    /// Writes flushed, and distinct keys among them (summed per flush).
    flushed: (u64, u64),
}

impl Feeder {
    fn write(
        &mut self,
        lsm: &mut SimLsm,
        picker: &dyn CompactionPicker,
        id: u32,
        tombstone: bool,
    ) -> Result<()> {
        self.seq += 1;
        self.writes_in_mem += 1;
        self.mem.insert(id, tombstone);
        self.mem_bytes += self.entry_bytes;
        if self.mem_bytes >= self.write_buffer_size {
            self.flush(lsm, picker)?;
            lsm.compact_until_idle(picker)?;
        }
        Ok(())
    }

    /// The table as the cost model sees it, with `live` live keys.
    fn table_size(&self, lsm: &SimLsm, live: u64) -> TableSize {
        let kv = self.entry_bytes.saturating_sub(8 + self.overhead).max(1);
        let v = lsm.current();
        let last = v.num_levels().saturating_sub(1);
        TableSize {
            live_bytes: lsm.model.file_size(live),
            upper_bytes: v.total_bytes() - v.level_bytes(last),
            flush_bytes: lsm.model.file_size(self.full_flush_entries()),
            entry_bytes: lsm.model.per_entry.round().max(1.0) as u64,
            table_bytes_per_user_byte: lsm.model.per_entry / kv as f64,
            flush_distinct_share: if self.flushed.0 == 0 {
                1.0
            } else {
                self.flushed.1 as f64 / self.flushed.0 as f64
            },
        }
    }

    /// Entries of a full memtable.
    fn full_flush_entries(&self) -> u64 {
        self.write_buffer_size.div_ceil(self.entry_bytes.max(1))
    }

    fn flush(&mut self, lsm: &mut SimLsm, picker: &dyn CompactionPicker) -> Result<()> {
        if !self.mem.is_empty() {
            self.flushed.0 += self.writes_in_mem;
            self.flushed.1 += self.mem.distinct();
            lsm.flush(
                picker,
                &mut self.mem,
                (self.first_seq, self.seq),
                self.writes_in_mem,
            )?;
        }
        self.mem_bytes = 0;
        self.writes_in_mem = 0;
        self.first_seq = self.seq + 1;
        Ok(())
    }
}

/// Runs the simulation described by `config`.
///
/// ```
/// use lithify_compaction_sim::{SimConfig, simulate};
///
/// let mut config = SimConfig::fillrandom(200_000);
/// config.write_buffer_size = 1 << 20;
/// config.options.max_bytes_for_level_base = 4 << 20;
/// config.options.target_file_size_base = 1 << 20;
/// let report = simulate(&config).unwrap();
/// assert!(report.write_amplification() > 1.0);
/// assert!(report.space_amplification() >= 1.0);
/// assert!(report.version.num_files(0) < 4);
/// ```
pub fn simulate(config: &SimConfig) -> Result<SimReport> {
    let started = Instant::now();
    let key_ids = match config.workload {
        Some(kind) => kind.key_ids(config.key_space, config.num_writes),
        None => config.key_space,
    };
    if key_ids == 0 || key_ids >= 1 << 31 {
        return InvalidArgumentSnafu {
            message: format!("key space must be in 1..2^31, not {key_ids}"),
        }
        .fail();
    }
    let options = config.options.clone().sanitize()?;
    let strategy = config.strategy();
    let mut adaptive = match &strategy {
        CompactionStrategy::Adaptive(a) => Some(AdaptiveState::new(a.clone())),
        _ => None,
    };
    let mut picker: Arc<dyn CompactionPicker> = match &adaptive {
        Some(state) => state.current().picker()?,
        None => strategy.picker()?,
    };
    let sequential = config.distribution == KeyDistribution::Sequential
        || config.workload == Some(WorkloadKind::IncreasingKeys);
    let model = calibrate(
        &config.sst_options,
        config.key_size,
        config.value_size,
        if sequential { 1 } else { 2 },
    )?;
    let mut lsm = SimLsm::new(key_ids, options.num_levels, model)?;
    let mut feeder = Feeder {
        mem: MemKeys::new(key_ids),
        mem_bytes: 0,
        first_seq: 1,
        seq: 0,
        writes_in_mem: 0,
        entry_bytes: (config.key_size + 8 + config.value_size) as u64
            + config.memtable_entry_overhead,
        write_buffer_size: config.write_buffer_size,
        overhead: config.memtable_entry_overhead,
        flushed: (0, 0),
    };
    let mut live = Bitmap::new(key_ids);
    let mut user_writes = 0u64;
    let mut load_bytes_written = 0;
    let mut reads_probed = 0u64;
    let mut tables_probed = 0u64;
    let mut switches = Vec::new();
    let mut observed = WorkloadStats::default();
    let mut live_samples = (0u64, 0u64);
    let window_ops = match config.adaptive_window {
        0 => (config.num_writes / 40).max(1),
        w => w,
    };

    match config.workload {
        None => {
            let mut keys = KeyGenerator::new(config.distribution, config.key_space, config.seed);
            for _ in 0..config.num_writes {
                let id = keys.next_key() as u32;
                live.set(id);
                feeder.write(&mut lsm, &*picker, id, false)?;
            }
            user_writes = config.num_writes;
        }
        Some(kind) => {
            if kind.has_load() {
                for id in 0..key_ids as u32 {
                    live.set(id);
                    feeder.write(&mut lsm, &*picker, id, false)?;
                }
                feeder.flush(&mut lsm, &*picker)?;
                lsm.compact_until_idle(&*picker)?;
                load_bytes_written = lsm.bytes_written;
                lsm.reset_stats();
                feeder.flushed = (0, 0);
            }
            let mut ops = OpGenerator::new(kind, config.key_space, config.num_writes, config.seed);
            let mut recorder = WorkloadRecorder::new(InternalKeyComparator::bytewise(), 8);
            recorder.set_boundaries(stripe_boundaries(&lsm.current(), 16));
            let sample = config.read_sample.max(1);
            let mut reads = 0u64;
            for i in 0..config.num_writes {
                match ops.next_op() {
                    op @ (Op::Put(k) | Op::Delete(k)) => {
                        let id = k as u32;
                        let delete = matches!(op, Op::Delete(_));
                        let sampled = recorder.should_sample().then(|| live.get(id));
                        recorder.record_write(&user_key_of(id), sampled);
                        user_writes += 1;
                        if delete {
                            live.clear(id);
                        } else {
                            live.set(id);
                        }
                        feeder.write(&mut lsm, &*picker, id, delete)?;
                    }
                    Op::Get(k) => {
                        recorder.record_read();
                        reads += 1;
                        if reads.is_multiple_of(sample) {
                            reads_probed += 1;
                            let id = k as u32;
                            if feeder.mem.lookup(id).is_none() {
                                tables_probed += lsm.probe(id) as u64;
                            }
                        }
                    }
                    Op::Scan(k) => {
                        recorder.record_scan();
                        reads += 1;
                        if reads.is_multiple_of(sample) {
                            reads_probed += 1;
                            tables_probed += lsm.scan_probe(k as u32) as u64;
                        }
                    }
                }
                if recorder.window_ops() >= window_ops {
                    let window = recorder.take_window();
                    observed.merge(&window);
                    live_samples.0 += lsm.model.file_size(live.count());
                    live_samples.1 += 1;
                    if let Some(state) = adaptive.as_mut() {
                        state.set_table_size(feeder.table_size(&lsm, live.count()));
                    }
                    // The diurnal workload declares its nights off-peak,
                    // as its engine runs do.
                    let part = match kind {
                        WorkloadKind::Diurnal
                            if OpGenerator::diurnal_is_night(i, config.num_writes) =>
                        {
                            DayPart::OffPeak
                        }
                        WorkloadKind::Diurnal => DayPart::Peak,
                        _ => DayPart::Unknown,
                    };
                    if let Some(state) = adaptive.as_mut()
                        && let Some(switch) = state.observe_at(&window, part)
                    {
                        picker = switch.to.picker()?;
                        switches.push(SimSwitch {
                            at_op: i + 1,
                            to: switch.to.to_string(),
                            reason: switch.reason,
                        });
                        lsm.compact_until_idle(&*picker)?;
                    }
                    recorder.set_boundaries(stripe_boundaries(&lsm.current(), 16));
                }
            }
            if recorder.window_ops() > 0 {
                observed.merge(&recorder.take_window());
            }
        }
    }
    if live_samples.1 == 0 {
        live_samples = (lsm.model.file_size(live.count()), 1);
    }
    feeder.flush(&mut lsm, &*picker)?;
    lsm.compact_until_idle(&*picker)?;
    finish(
        config,
        &strategy,
        lsm,
        &*picker,
        key_ids,
        live.count(),
        user_writes,
        load_bytes_written,
        (reads_probed, tables_probed),
        switches,
        SimObserved {
            stats: observed,
            mean_live_bytes: live_samples.0 / live_samples.1,
            flush_entries: feeder.full_flush_entries(),
            flush_distinct_share: if feeder.flushed.0 == 0 {
                1.0
            } else {
                feeder.flushed.1 as f64 / feeder.flushed.0 as f64
            },
        },
        started,
    )
}

#[allow(clippy::too_many_arguments)]
fn finish(
    config: &SimConfig,
    strategy: &CompactionStrategy,
    lsm: SimLsm,
    picker: &dyn CompactionPicker,
    key_ids: u64,
    live_keys: u64,
    user_writes: u64,
    load_bytes_written: u64,
    (reads_probed, tables_probed): (u64, u64),
    switches: Vec<SimSwitch>,
    observed: SimObserved,
    started: Instant,
) -> Result<SimReport> {
    let unique_keys = lsm.distinct_entries(key_ids);
    let version = lsm.current();
    let in_progress = CompactionsInProgress::new();
    let scores = picker
        .level_scores(&version, &PickContext::new(&in_progress))
        .iter()
        .map(|s| s.score)
        .collect();
    let kv = (config.key_size + config.value_size) as u64;
    let logical_bytes = lsm.model.file_size(live_keys);
    let input = match config.workload {
        Some(kind) => format!(
            "workload {} ({} ops over {} keys{})",
            kind.name(),
            config.num_writes,
            key_ids,
            if kind.has_load() {
                ", after a sorted load"
            } else {
                ""
            }
        ),
        None => format!(
            "{} writes over {} keys ({})",
            config.num_writes,
            config.key_space,
            config.distribution.name()
        ),
    };
    Ok(SimReport {
        config_summary: format!(
            "{input}, {}-byte keys and {}-byte values, write_buffer_size {}, strategy {strategy}",
            config.key_size,
            config.value_size,
            human_size(config.write_buffer_size),
        ),
        strategy: strategy.to_string(),
        version,
        stats: lsm.stats.clone(),
        scores,
        counts: lsm.counts.clone(),
        unique_keys,
        live_keys,
        user_bytes: user_writes * kv,
        bytes_written: lsm.bytes_written,
        load_bytes_written,
        logical_bytes,
        peak_space_amplification: lsm.peak_bytes as f64 / logical_bytes.max(1) as f64,
        reads_probed,
        tables_probed,
        switches,
        size_model: lsm.model,
        key_value_bytes: kv,
        flush_bytes: lsm.model.file_size(observed.flush_entries),
        observed: observed.stats,
        mean_live_bytes: observed.mean_live_bytes,
        flush_distinct_share: observed.flush_distinct_share,
        elapsed_secs: started.elapsed().as_secs_f64(),
    })
}

/// `s` with the simulation's sizes: `Leveled` (and `Adaptive`'s leveled
/// candidate) takes `options`; the two-tier strategies (and `Adaptive`'s
/// other templates and initial strategy) take `target_file_size`.
pub fn sized_strategy(
    mut s: CompactionStrategy,
    options: &LeveledOptions,
    target_file_size: u64,
) -> CompactionStrategy {
    match &mut s {
        CompactionStrategy::Leveled(o) => *o = options.clone(),
        CompactionStrategy::MajorOnly(o) => o.target_file_size = target_file_size,
        CompactionStrategy::TwoTier(o) => o.target_file_size = target_file_size,
        CompactionStrategy::Adaptive(a) => {
            a.leveled = options.clone();
            a.major_only.target_file_size = target_file_size;
            a.two_tier.target_file_size = target_file_size;
            let initial = std::mem::take(&mut *a.initial);
            *a.initial = sized_strategy(initial, options, target_file_size);
        }
    }
    s
}

/// The strategies the report compares, sized by [`sized_strategy`]: every
/// fixed strategy (leveled, major-only, the four two-tier presets) and
/// `Adaptive`.
pub fn report_strategies(
    options: &LeveledOptions,
    target_file_size: u64,
) -> Vec<CompactionStrategy> {
    CompactionStrategy::NAMES
        .iter()
        .filter(|n| **n != "two-tier")
        .filter_map(|n| CompactionStrategy::parse(n))
        .map(|s| sized_strategy(s, options, target_file_size))
        .collect()
}

/// The strategies table: one line per (workload, strategy) with write,
/// read and space amplification, from [`simulate`] runs of `base` with
/// each workload and strategy.
///
/// ```
/// use lithify_compaction_sim::{SimConfig, WorkloadKind, report_strategies, strategies_table};
///
/// let mut base = SimConfig::fillrandom(20_000);
/// base.key_space = 5_000;
/// base.write_buffer_size = 256 << 10;
/// base.options.max_bytes_for_level_base = 1 << 20;
/// base.options.target_file_size_base = 256 << 10;
/// let strategies = report_strategies(&base.options, 256 << 10);
/// let (text, reports) = strategies_table(&base, &[WorkloadKind::WriteOnly], &strategies).unwrap();
/// assert_eq!(reports.len(), strategies.len());
/// assert!(text.contains("write-only"));
/// ```
pub fn strategies_table(
    base: &SimConfig,
    workloads: &[WorkloadKind],
    strategies: &[CompactionStrategy],
) -> Result<(String, Vec<SimReport>)> {
    let mut text = String::from(
        "| workload | strategy | write amp | read amp (tables/read) | space amp | peak space amp |\n|---|---|---|---|---|---|\n",
    );
    let mut reports = Vec::new();
    for &w in workloads {
        for s in strategies {
            let mut config = base.clone();
            config.workload = Some(w);
            config.strategy = Some(s.clone());
            if config.adaptive_window == 0 {
                config.adaptive_window = (config.num_writes / 40).max(1);
            }
            let r = simulate(&config)?;
            let label = if r.switches.is_empty() {
                r.strategy.clone()
            } else {
                format!(
                    "{} -> {}",
                    r.strategy,
                    r.switches.last().map_or("", |s| s.to.as_str())
                )
            };
            text.push_str(&format!(
                "| {} | {} | {:.2} | {:.2} | {:.2} | {:.2} |\n",
                w.name(),
                label,
                r.write_amplification_vs_user(),
                r.read_amplification(),
                r.space_amplification(),
                r.peak_space_amplification,
            ));
            reports.push(r);
        }
    }
    Ok((text, reports))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lithify_compaction_strategy::adaptive::{AdaptiveOptions, choose_strategy};
    use lithify_compaction_tiered::{MajorOnlyOptions, MinorPolicy, TwoTierOptions};

    fn base(ops: u64) -> SimConfig {
        let mut c = SimConfig::fillrandom(ops);
        c.key_space = 20_000;
        c.write_buffer_size = 256 << 10;
        c.options.max_bytes_for_level_base = 1 << 20;
        c.options.target_file_size_base = 256 << 10;
        c.adaptive_window = ops / 20;
        c
    }

    /// `Adaptive`'s switches of `r`: (operation, new strategy).
    fn switch_points(r: &SimReport) -> Vec<(u64, &str)> {
        r.switches
            .iter()
            .map(|s| (s.at_op, s.to.as_str()))
            .collect()
    }

    fn run(kind: WorkloadKind, strategy: CompactionStrategy, ops: u64) -> SimReport {
        run_sized(kind, strategy, ops, 256 << 10)
    }

    fn run_sized(
        kind: WorkloadKind,
        strategy: CompactionStrategy,
        ops: u64,
        file_size: u64,
    ) -> SimReport {
        let mut c = base(ops);
        c.workload = Some(kind);
        c.strategy = Some(sized_strategy(strategy, &c.options.clone(), file_size));
        simulate(&c).unwrap()
    }

    #[test]
    fn adaptive_follows_the_phases_of_a_changing_workload() {
        let r = run(
            WorkloadKind::PhaseShift,
            CompactionStrategy::Adaptive(AdaptiveOptions::default()),
            200_000,
        );
        let at = switch_points(&r);
        // Leveled for the increasing bulk load (pure appends move down
        // untouched); one L0 table per flush once random updates begin
        // (at 50 000) and their regret pays for reshaping the whole
        // table; through the read-mostly phase (from 100 000) no shape
        // saves enough; leveled for the scans of the last phase (from
        // 170 000), which merge every sorted run.
        assert_eq!(
            at,
            [
                (20_000, "leveled"),
                (90_000, "two-tier(minor=none,stripes=1,ratio=1)"),
                (180_000, "leveled"),
            ],
            "{:#?}",
            r.switches
        );
        assert!(
            r.switches
                .iter()
                .all(|s| s.reason.contains("predicted write amp"))
        );
        let d = run(
            WorkloadKind::Diurnal,
            CompactionStrategy::Adaptive(AdaptiveOptions {
                initial: Box::new(CompactionStrategy::MajorOnly(MajorOnlyOptions::default())),
                ..AdaptiveOptions::default()
            }),
            200_000,
        );
        // Days of 50 000 operations in windows of 5 000, nights from
        // 30 000: major-only's rewrites pay for leaving it during the
        // first daytime, and the switch waits for the night (the
        // off-peak window), where the day's mix decides it once its
        // windows agree.
        let at = switch_points(&d);
        assert_eq!(
            at,
            [(50_000, "two-tier(minor=none,stripes=1,ratio=1)")],
            "{:#?}",
            d.switches
        );
        assert!(d.switches[0].reason.starts_with("a day's mix, "));
    }

    #[test]
    fn major_only_keeps_one_sorted_run_and_appends_at_write_amplification_one() {
        let r = run_sized(
            WorkloadKind::IncreasingKeys,
            CompactionStrategy::MajorOnly(MajorOnlyOptions::default()),
            200_000,
            32 << 10,
        );
        assert_eq!(r.version.num_files(0), 0);
        assert_eq!(r.version.total_files(), r.version.num_files(6));
        // Inserts append; the few updates of recent keys and expiry
        // deletes of the oldest touch one or two files per flush.
        assert!(r.write_amplification_vs_user() < 2.0, "{r}");
        assert!(r.counts.bytes_reused > 0);
        // A pure append (no updates or deletes) writes every byte once.
        let mut c = base(100_000);
        c.distribution = KeyDistribution::Sequential;
        c.key_space = 100_000;
        c.strategy = Some(CompactionStrategy::MajorOnly(MajorOnlyOptions {
            target_file_size: 256 << 10,
            ..MajorOnlyOptions::default()
        }));
        let r = simulate(&c).unwrap();
        assert_eq!(r.stats.sum().bytes_read_output_level, 0, "{r}");
        let per_entry = r.size_model.file_size(100_000) as f64 / r.user_bytes as f64;
        assert!(
            (r.write_amplification_vs_user() - per_entry).abs() < 0.05,
            "{} vs {per_entry}",
            r.write_amplification_vs_user()
        );
    }

    #[test]
    fn two_tier_writes_less_than_leveled_on_random_writes_and_stripes_bound_peak_space() {
        let leveled = run(
            WorkloadKind::WriteOnly,
            CompactionStrategy::Leveled(LeveledOptions::default()),
            300_000,
        );
        let one = run(
            WorkloadKind::WriteOnly,
            CompactionStrategy::TwoTier(TwoTierOptions::write_only()),
            300_000,
        );
        let striped = run(
            WorkloadKind::WriteOnly,
            CompactionStrategy::TwoTier(TwoTierOptions {
                minor: MinorPolicy::None,
                stripes: 8,
                ..TwoTierOptions::default()
            }),
            300_000,
        );
        assert!(
            one.write_amplification_vs_user() < leveled.write_amplification_vs_user(),
            "{one}\n{leveled}"
        );
        // A major over everything needs the whole table twice over; a
        // stripe's major about an eighth of it.
        assert!(one.peak_space_amplification > 2.0, "{one}");
        assert!(
            striped.peak_space_amplification < one.peak_space_amplification - 0.5,
            "{striped}"
        );
    }

    #[test]
    fn merge_with_previous_keeps_reads_to_two_runs() {
        let r = run(
            WorkloadKind::ReadMostlyFewUpdates,
            CompactionStrategy::TwoTier(TwoTierOptions::read_mostly_few_updates()),
            400_000,
        );
        assert!(r.version.num_files(0) <= 1, "{r}");
        assert!(r.read_amplification() <= 2.0, "{r}");
        let none = run(
            WorkloadKind::ReadMostlyFewUpdates,
            CompactionStrategy::TwoTier(TwoTierOptions::write_only()),
            400_000,
        );
        assert!(none.read_amplification() > r.read_amplification(), "{none}");
    }

    #[test]
    fn adaptive_decides_each_steady_workload_as_the_model_says() {
        // The decisions at this size (20 000 keys, 256 KiB memtables), in
        // the order of `WorkloadKind::ALL`. The initial shape, one L0
        // table per flush, is the model's choice for the writes of the
        // first three; reads of the loaded table alone are cheaper from
        // one sorted run once its regret pays for the major (70 000); on
        // the read-mostly workloads with updates no shape saves enough per
        // operation to pay for reshaping in the run's 200 000 operations.
        let expected: [&[(u64, &str)]; 6] = [&[], &[], &[], &[(70_000, "major-only")], &[], &[]];
        for (kind, want) in WorkloadKind::ALL.into_iter().zip(expected) {
            let r = run(
                kind,
                CompactionStrategy::Adaptive(AdaptiveOptions::default()),
                200_000,
            );
            let got = switch_points(&r);
            assert_eq!(got, want, "{kind:?}: {:#?}", r.switches);
        }
        // The choice itself, from the workload's own mix: what the model
        // ranks first for random writes on this table.
        let mut g = OpGenerator::new(WorkloadKind::WriteOnly, 20_000, 200_000, 9);
        let mut rec = WorkloadRecorder::new(InternalKeyComparator::bytewise(), 1);
        for _ in 0..100_000 {
            if let Op::Put(k) | Op::Delete(k) = g.next_op() {
                rec.record_write(&user_key_of(k as u32), Some(true));
            }
        }
        let size = lithify_compaction_strategy::cost_model::TableSize::new(2 << 20, 200 << 10, 120);
        let c = choose_strategy(
            &rec.take_window(),
            &size,
            &AdaptiveOptions {
                min_window_ops: 1,
                ..AdaptiveOptions::default()
            },
        )
        .unwrap();
        assert_eq!(
            c.strategy.to_string(),
            "two-tier(minor=none,stripes=1,ratio=1)"
        );
    }
}
