//! [`simulate`]: one run of a strategy over a write stream or a workload.

use std::sync::Arc;
use std::time::Instant;

use lithify_base::InternalKeyComparator;

use crate::{
    KeyDistribution, KeyGenerator, Op, OpGenerator, SimBlobReport, SimConfig, SimReport, SimSwitch,
    WorkloadKind, calibrate,
};

use crate::bitmap::{Bitmap, MemKeys};
use crate::blobs::SimBlobs;
use crate::error::{InvalidArgumentSnafu, Result};
use crate::lsm::{SimLsm, user_key_of};
use lithify_compaction::{CompactionPicker, CompactionsInProgress, PickContext, human_size};
use lithify_compaction_strategy::CompactionStrategy;
use lithify_compaction_strategy::adaptive::{
    AdaptiveState, DayPart, WorkloadRecorder, WorkloadStats,
};
use lithify_compaction_strategy::cost_model::TableSize;
use lithify_compaction_tiered::stripe_boundaries;

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
    /// Blob bytes a flush writes per user byte (0 without separation).
    blob_bytes_per_user_byte: f64,
    /// Garbage collection's age cutoff (0: off, or no separation).
    blob_gc_age_cutoff: f64,
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
            blob_bytes_per_user_byte: self.blob_bytes_per_user_byte,
            blob_gc_age_cutoff: self.blob_gc_age_cutoff,
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
    // With separation the tables hold blob indexes in place of values.
    let sst_value_size = match config.blob {
        Some(_) => blob_index_bytes(config.value_size),
        None => config.value_size,
    };
    let model = calibrate(
        &config.sst_options,
        config.key_size,
        sst_value_size,
        if sequential { 1 } else { 2 },
    )?;
    let mut lsm = SimLsm::new(key_ids, options.num_levels, model)?;
    lsm.blobs = config.blob.map(|b| {
        SimBlobs::new(
            b,
            blob_record_bytes(config.key_size, config.value_size),
            key_ids,
            options.num_levels,
        )
    });
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
        blob_bytes_per_user_byte: match config.blob {
            Some(_) => {
                blob_record_bytes(config.key_size, config.value_size) as f64
                    / (config.key_size + config.value_size) as f64
            }
            None => 0.0,
        },
        blob_gc_age_cutoff: config.blob.and_then(|b| b.age_cutoff).unwrap_or(0.0),
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
            // Flush and compaction bytes, and user bytes, when the last
            // window closed: `Adaptive` sees each window's difference.
            let kv_bytes = (config.key_size + config.value_size) as u64;
            // Table and blob bytes: what the model's write amp counts.
            let written_now = |lsm: &SimLsm, user_writes: u64| {
                let blob = lsm.blobs.as_ref().map_or(0, |b| b.written_bytes);
                (lsm.bytes_written + blob, user_writes * kv_bytes)
            };
            let mut written_at_window = written_now(&lsm, user_writes);
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
                    let written = written_now(&lsm, user_writes);
                    let window = WorkloadStats {
                        table_bytes_written: written.0 - written_at_window.0,
                        user_bytes: written.1 - written_at_window.1,
                        ..recorder.take_window()
                    };
                    written_at_window = written;
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
    #[cfg(test)]
    if let Some(b) = &lsm.blobs {
        // Every value a blob file counts live is one an entry refers to.
        assert_eq!(b.referenced(), b.references());
        assert_eq!(b.references(), lsm.values_held());
    }
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
        blobs: lsm.blobs.as_ref().map(|b| SimBlobReport {
            files: b.files(),
            disk_bytes: b.disk_bytes(),
            live_bytes: live_keys * blob_record_bytes(config.key_size, config.value_size),
            written_bytes: b.written_bytes,
            relocated_bytes: b.relocated_bytes,
            record_bytes: blob_record_bytes(config.key_size, config.value_size),
            age_cutoff: config.blob.and_then(|o| o.age_cutoff).unwrap_or(0.0),
        }),
    })
}

/// Bytes of one value's record in a blob file (header, key, value).
fn blob_record_bytes(key_size: usize, value_size: usize) -> u64 {
    (lithify_blob::RECORD_HEADER_LEN + key_size + value_size) as u64
}

/// Bytes of the blob index an SST holds in place of a value: one in a
/// file numbered in the hundreds, tens of MiB in.
fn blob_index_bytes(value_size: usize) -> usize {
    lithify_blob::BlobIndex {
        file_number: 300,
        offset: 100 << 20,
        size: value_size as u64,
        compression: 0,
    }
    .encode()
    .len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sized_strategy;
    use lithify_compaction_leveled::LeveledOptions;
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
    fn every_shape_keeps_blob_references_exact_on_every_workload() {
        // `simulate` checks, in tests, that the values each blob file
        // counts live are exactly those the tables refer to.
        for kind in WorkloadKind::ALL {
            for shape in CompactionStrategy::FIXED {
                let mut c = SimConfig::workload(kind, 30_000, 3_000, CompactionStrategy::default());
                c.write_buffer_size = 64 << 10;
                c.value_size = 400;
                c.options.max_bytes_for_level_base = 128 << 10;
                c.options.target_file_size_base = 32 << 10;
                c.strategy = Some(sized_strategy(
                    CompactionStrategy::parse(shape).unwrap(),
                    &c.options,
                    32 << 10,
                ));
                c.blob = Some(crate::SimBlobOptions {
                    age_cutoff: Some(0.25),
                    blob_file_size: 256 << 10,
                });
                let r = simulate(&c).unwrap();
                let b = r.blobs.unwrap();
                assert!(b.written_bytes > 0, "{} {shape}: {r}", kind.name());
                assert!(
                    r.space_amplification() >= 1.0,
                    "{} {shape}: {r}",
                    kind.name()
                );
            }
        }
    }

    #[test]
    fn separated_values_are_written_once_and_relocated_by_garbage_collection() {
        let run = |age_cutoff: Option<f64>, strategy: CompactionStrategy| {
            let mut c = base(100_000);
            c.value_size = 1000;
            c.strategy = Some(strategy);
            c.blob = Some(crate::SimBlobOptions {
                age_cutoff,
                blob_file_size: 1 << 20,
            });
            simulate(&c).unwrap()
        };
        let leveled = CompactionStrategy::Leveled(base(1).options);
        let major = CompactionStrategy::MajorOnly(MajorOnlyOptions::default());
        let inline = {
            let mut c = base(100_000);
            c.value_size = 1000;
            simulate(&c).unwrap()
        };
        let gc = run(Some(0.25), leveled.clone());
        let no_gc = run(None, leveled);
        let (b, n) = (gc.blobs.unwrap(), no_gc.blobs.unwrap());
        // Without collection, values are written once, by flushes (a
        // record is the 1016 user bytes and a 21-byte header; keys written
        // twice in one memtable are written once), and garbage stays.
        assert_eq!(n.relocated_bytes, 0);
        assert!(n.written_bytes <= 100_000 * 1037, "{no_gc}");
        assert!(n.disk_bytes > b.disk_bytes, "{no_gc}\n{gc}");
        // Collection relocates, and holds space amplification lower.
        assert!(b.relocated_bytes > 0, "{gc}");
        assert_eq!(b.written_bytes, n.written_bytes + b.relocated_bytes);
        assert!(gc.space_amplification() < no_gc.space_amplification());
        // Separation writes less than values inline, even here, where the
        // tables are so small that every L0 compaction rewrites all of
        // them, and so relocates from the oldest quarter of the blob files
        // each time.
        assert!(
            gc.write_amplification_vs_user() < inline.write_amplification_vs_user(),
            "{gc}\n{inline}"
        );
        // A major-only table rewrites everything at each flush: each
        // relocates from the oldest quarter of the blob files.
        let m = run(Some(0.25), major).blobs.unwrap();
        assert!(m.relocated_bytes > 2 * b.relocated_bytes, "{m:?} {b:?}");
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
        // table; each flush merged with the previous L0 table in the
        // read-mostly phase (from 100 000), whose lookups probe fewer
        // tables; leveled for the scans of the last phase (from 170 000),
        // which merge every sorted run.
        assert_eq!(
            at,
            [
                (20_000, "leveled"),
                (90_000, "two-tier(minor=none,stripes=1,ratio=1)"),
                (
                    130_000,
                    "two-tier(minor=merge-previous,stripes=1,ratio=0.25)"
                ),
                (200_000, "leveled"),
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
            CompactionStrategy::Adaptive(AdaptiveOptions::default().initial(Box::new(
                CompactionStrategy::MajorOnly(MajorOnlyOptions::default()),
            ))),
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
        c.strategy = Some(CompactionStrategy::MajorOnly(
            MajorOnlyOptions::default().target_file_size(256 << 10),
        ));
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
            CompactionStrategy::TwoTier(
                TwoTierOptions::default()
                    .minor(MinorPolicy::None)
                    .stripes(8),
            ),
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
        // one sorted run once its regret pays for the major (40 000);
        // with few updates, leveled's fewer tables per lookup pay for
        // reshaping L0 (50 000); with many, no shape saves enough per
        // operation to pay for reshaping in the run's 200 000 operations.
        let expected: [&[(u64, &str)]; 6] = [
            &[],
            &[],
            &[],
            &[(40_000, "major-only")],
            &[(50_000, "leveled")],
            &[],
        ];
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
            &AdaptiveOptions::default().min_window_ops(1),
        )
        .unwrap();
        assert_eq!(
            c.strategy.to_string(),
            "two-tier(minor=none,stripes=1,ratio=1)"
        );
    }
}
