//! `lithify log bench`: cleaning throughput, and its ratio to a plain copy
//! of the same bytes (reading every segment and writing it to a new file,
//! then fsync) — the physical limit of a cleaner, which must at least read
//! the log once and write what it keeps.
//!
//! The log is written first (on the real file system, in a temporary
//! directory unless `--dir` is given), so both the copy and the cleaning
//! read it from the page cache: the figures compare CPU work, not disks.
//!
//! `--partitions P` writes P such logs (`bench-0` ..; partition `p` draws
//! its workload from seed `seed + p`) and `--threads N` cleans them with
//! the cleaner service's N threads (`log.cleaner.threads`, which also
//! divides the map memory among them, as Kafka does): each thread cleans
//! one log at a time, the dirtiest first. The report gives each
//! partition's round (MB/s read, records/s, map pass and rewrite times,
//! ratio to the copy) and the total: all bytes read over the wall time from
//! the threads' start to the last round's end. The copy copies every
//! partition's segments one after another on one thread. `--json` prints
//! the same as one JSON object.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use lithify::ManualClock;
use lithify::log::shared_log;
use lithify::log::{CleanerConfig, CleanerEvent, LogCleaner};
use lithify::log::{Log, OpenOptions};
use lithify::vfs::{FileSystem, OsFs};
use snafu::ResultExt as _;

use crate::error::{CleanerSnafu, FailuresSnafu, IoSnafu, JsonSnafu, LogSnafu, Result, UsageSnafu};
use crate::log::settings::{apply, default_log_config, split};
use crate::log::workload::{MAX_BATCH_RECORDS, MAX_VALUE_SIZE, Rng, Workload, check_batch_bytes};
use crate::numbers;

/// Bytes read and written at a time by the copy.
const COPY_CHUNK: usize = 256 << 10;

/// The fixed clock of the benchmark.
const NOW: i64 = 1_700_000_000_000;

/// How long the benchmark waits for its cleaner threads' rounds.
const ROUNDS_TIMEOUT: Duration = Duration::from_secs(3600);

/// Arguments of `log bench`.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// Records in the log [range: 1..=1000000000000].
    #[arg(long, default_value_t = 1_000_000, value_parser = numbers::int::<u64>(1, numbers::MAX_OPS))]
    pub records: u64,
    /// Distinct keys [range: 1..=1000000000000].
    #[arg(long, default_value_t = 100_000, value_parser = numbers::int::<u64>(1, numbers::MAX_OPS))]
    pub keys: u64,
    /// Bytes per value; a batch of --batch-size x --value-size bytes must
    /// stay within 1 GiB [range: 0..=16777216].
    #[arg(long, default_value_t = 100, value_parser = numbers::int::<usize>(0, MAX_VALUE_SIZE))]
    pub value_size: usize,
    /// Records per batch [range: 1..=1000000].
    #[arg(long, default_value_t = 100, value_parser = numbers::int::<usize>(1, MAX_BATCH_RECORDS))]
    pub batch_size: usize,
    /// Percent of records that are tombstones [range: 0..=100].
    #[arg(long, default_value_t = 0, value_parser = numbers::int::<u8>(0, 100))]
    pub tombstone_percent: u8,
    /// Seed of the workload [range: any u64].
    #[arg(long, default_value_t = 1, value_parser = numbers::int::<u64>(0, u64::MAX))]
    pub seed: u64,
    /// Where to write the log (default: a temporary directory, removed
    /// afterwards). Must not exist yet.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// A log or cleaner setting by its Kafka name (repeatable), e.g.
    /// `compression.type=lz4` or `lithify.cleaner.digest=xxh3`.
    #[arg(long = "config", value_name = "NAME=VALUE")]
    pub config: Vec<String>,
    /// Logs to write and clean (`bench-0`, `bench-1`, ...), each with the
    /// whole workload [range: 1..=1024].
    #[arg(long, default_value_t = 1, value_parser = numbers::int::<u32>(1, 1024))]
    pub partitions: u32,
    /// Cleaner threads (`log.cleaner.threads`; the map memory is divided
    /// among them). Default: the `--config` value, else 1 [range: 1..=256].
    #[arg(long, value_parser = numbers::int::<usize>(1, numbers::MAX_THREADS))]
    pub threads: Option<usize>,
    /// Print the results as one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Runs `log bench`.
pub(crate) fn run(a: BenchArgs) -> Result<()> {
    check_batch_bytes(a.batch_size, a.value_size)?;
    let mut log_config = default_log_config();
    let mut cleaner_config = CleanerConfig::default();
    for s in &a.config {
        let (name, value) = split(s)?;
        apply(name, value, &mut log_config, Some(&mut cleaner_config))?;
    }
    if let Some(n) = a.threads {
        apply(
            "log.cleaner.threads",
            &n.to_string(),
            &mut log_config,
            Some(&mut cleaner_config),
        )?;
    }
    let threads = cleaner_config.threads;
    let fs: Arc<dyn FileSystem> = Arc::new(OsFs);
    let temp;
    let data_dir = match &a.dir {
        Some(d) => {
            if fs.exists(d) {
                return UsageSnafu {
                    message: format!("{} already exists; give a new directory", d.display()),
                }
                .fail();
            }
            d.clone()
        }
        None => {
            temp = tempfile::Builder::new()
                .prefix("lithify-log-bench-")
                .tempdir()
                .context(IoSnafu {
                    action: "create a temporary directory in",
                    path: std::env::temp_dir(),
                })?;
            temp.path().to_path_buf()
        }
    };
    // 1. The logs.
    let started = Instant::now();
    let mut logs = Vec::new();
    let mut segments: Vec<PathBuf> = Vec::new();
    let mut input_bytes = 0u64;
    for p in 0..a.partitions {
        let log_dir = data_dir.join(format!("bench-{p}"));
        let options = OpenOptions {
            recovery_point: None,
            clock: Arc::new(ManualClock::at_ms(NOW)),
        };
        let mut log =
            Log::open_with(fs.clone(), &log_dir, log_config.clone(), options).context(LogSnafu)?;
        let workload = Workload {
            keys: a.keys,
            value_size: a.value_size,
            tombstone_percent: a.tombstone_percent,
        };
        let mut rng = Rng::new(a.seed.wrapping_add(u64::from(p)));
        let mut batch = Vec::with_capacity(
            a.batch_size
                .min(usize::try_from(a.records).unwrap_or(usize::MAX)),
        );
        for i in 0..a.records {
            batch.push(workload.record(&mut rng, NOW - 3_600_000 + i as i64));
            if batch.len() == a.batch_size || i + 1 == a.records {
                log.append(&batch).context(LogSnafu)?;
                batch.clear();
            }
        }
        log.roll().context(LogSnafu)?;
        log.flush().context(LogSnafu)?;
        segments.extend(
            log.segments()
                .filter(|s| !s.is_active())
                .map(|s| s.log_path().to_path_buf()),
        );
        input_bytes += log.segment_infos().iter().map(|s| s.size).sum::<u64>();
        logs.push(log);
    }
    if !a.json {
        println!(
            "wrote {} x {} records ({} keys, {}-byte values, {} per batch) under {}: {:.1} MB in {} segments, {:.2} s",
            a.partitions,
            a.records,
            a.keys,
            a.value_size,
            a.batch_size,
            data_dir.display(),
            mb(input_bytes),
            segments.len(),
            started.elapsed().as_secs_f64()
        );
    }

    // 2. The physical limit: copy the same bytes.
    let copy_dir = data_dir.join("copy");
    fs.create_dir_all(&copy_dir).context(IoSnafu {
        action: "create",
        path: &copy_dir,
    })?;
    let started = Instant::now();
    let mut copied = 0;
    for (i, path) in segments.iter().enumerate() {
        let name = format!(
            "{i}-{}",
            path.file_name().unwrap_or_default().to_string_lossy()
        );
        copied += copy_file(&*fs, path, &copy_dir.join(name))?;
    }
    fs.sync_dir(&copy_dir).context(IoSnafu {
        action: "sync",
        path: &copy_dir,
    })?;
    let copy_secs = started.elapsed().as_secs_f64();
    let copy_rate = mb(copied) / copy_secs.max(1e-9);

    // 3. One cleaning round of each log, on the service's threads.
    let svc = LogCleaner::new(
        cleaner_config,
        fs.clone(),
        Arc::new(ManualClock::at_ms(NOW)),
    );
    for log in logs {
        svc.add_log(shared_log(log)).context(CleanerSnafu)?;
    }
    let events = svc.events();
    let started = Instant::now();
    svc.startup().context(CleanerSnafu)?;
    let mut reports = Vec::new();
    let mut failures = Vec::new();
    while reports.len() + failures.len() < a.partitions as usize {
        match events.recv_timeout(ROUNDS_TIMEOUT) {
            Ok(CleanerEvent::Cleaned(r)) => reports.push(*r),
            Ok(e) if e.is_failure() => failures.push(e.to_string()),
            Ok(_) => {}
            Err(_) => {
                failures.push("timed out waiting for the cleaner threads".to_string());
                break;
            }
        }
    }
    let wall_secs = started.elapsed().as_secs_f64();
    svc.shutdown();
    if !failures.is_empty() {
        for f in &failures {
            eprint!("{f}");
        }
        return FailuresSnafu {
            message: "a benchmark cleaning round did not run".to_string(),
        }
        .fail();
    }
    reports.sort_by(|x, y| {
        x.topic_partition
            .to_string()
            .cmp(&y.topic_partition.to_string())
    });

    let rounds: Vec<Round> = reports.iter().map(|r| Round::of(r, copy_rate)).collect();
    let bytes_read: u64 = reports.iter().map(|r| r.stats.bytes_read).sum();
    let records_read: u64 = reports.iter().map(|r| r.stats.messages_read).sum();
    let total_rate = mb(bytes_read) / wall_secs.max(1e-9);
    if a.json {
        let object = serde_json::json!({
            "records": a.records,
            "keys": a.keys,
            "value_size": a.value_size,
            "batch_size": a.batch_size,
            "tombstone_percent": a.tombstone_percent,
            "partitions": a.partitions,
            "threads": threads,
            "config": a.config,
            "copy": {
                "mb": mb(copied),
                "secs": copy_secs,
                "mb_per_s": copy_rate,
            },
            "rounds": rounds.iter().map(Round::json).collect::<Vec<_>>(),
            "total": {
                "mb_read": mb(bytes_read),
                "records_read": records_read,
                "wall_secs": wall_secs,
                "mb_per_s": total_rate,
                "records_per_s": records_read as f64 / wall_secs.max(1e-9),
                "copy_ratio": total_rate / copy_rate.max(1e-9),
            },
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&object).context(JsonSnafu)?
        );
        return Ok(());
    }
    if let [r] = reports.as_slice() {
        print!("{r}");
    }
    println!(
        "copy:  {:.1} MB in {:.3} s = {copy_rate:.1} MB/s (read + write + fsync)",
        mb(copied),
        copy_secs
    );
    for (r, round) in reports.iter().zip(&rounds) {
        println!(
            "clean {}: {:.1} MB in {:.3} s = {:.1} MB/s read, {:.0} records/s (map pass {:.3} s, rewrite {:.3} s; {:.1} MB written), {:.2}x copy",
            r.topic_partition,
            round.mb_read,
            round.secs,
            round.mb_per_s,
            round.records_per_s,
            round.map_secs,
            round.rewrite_secs,
            round.mb_written,
            round.copy_ratio,
        );
    }
    println!(
        "clean: {:.1} MB in {:.3} s = {total_rate:.1} MB/s read, {:.0} records/s ({} partitions, {threads} threads)",
        mb(bytes_read),
        wall_secs,
        records_read as f64 / wall_secs.max(1e-9),
        a.partitions,
    );
    println!(
        "cleaning runs at {:.2}x the speed of a plain copy of the same bytes",
        total_rate / copy_rate.max(1e-9)
    );
    Ok(())
}

/// One partition's round, in the report's units.
struct Round {
    partition: String,
    mb_read: f64,
    mb_written: f64,
    records_read: u64,
    records_kept: u64,
    secs: f64,
    map_secs: f64,
    rewrite_secs: f64,
    mb_per_s: f64,
    records_per_s: f64,
    copy_ratio: f64,
}

impl Round {
    fn of(r: &lithify::log::RoundReport, copy_rate: f64) -> Round {
        let s = &r.stats;
        let secs = s.duration.as_secs_f64();
        let mb_per_s = mb(s.bytes_read) / secs.max(1e-9);
        Round {
            partition: r.topic_partition.to_string(),
            mb_read: mb(s.bytes_read),
            mb_written: mb(s.bytes_written),
            records_read: s.messages_read,
            records_kept: s.messages_written,
            secs,
            map_secs: s.map_duration.as_secs_f64(),
            rewrite_secs: s.duration.saturating_sub(s.map_duration).as_secs_f64(),
            mb_per_s,
            records_per_s: s.messages_read as f64 / secs.max(1e-9),
            copy_ratio: mb_per_s / copy_rate.max(1e-9),
        }
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "partition": self.partition,
            "mb_read": self.mb_read,
            "mb_written": self.mb_written,
            "records_read": self.records_read,
            "records_kept": self.records_kept,
            "secs": self.secs,
            "map_secs": self.map_secs,
            "rewrite_secs": self.rewrite_secs,
            "mb_per_s": self.mb_per_s,
            "records_per_s": self.records_per_s,
            "copy_ratio": self.copy_ratio,
        })
    }
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Copies `from` to `to` in 256 KiB chunks and fsyncs it; returns the bytes.
fn copy_file(fs: &dyn FileSystem, from: &Path, to: &Path) -> Result<u64> {
    let src = fs.open(from).context(IoSnafu {
        action: "open",
        path: from,
    })?;
    let size = src.size().context(IoSnafu {
        action: "stat",
        path: from,
    })?;
    let mut dst = fs.create(to).context(IoSnafu {
        action: "create",
        path: to,
    })?;
    let mut buf = vec![0u8; COPY_CHUNK];
    let mut pos = 0u64;
    while pos < size {
        let n = COPY_CHUNK.min((size - pos) as usize);
        src.read_exact_at(pos, &mut buf[..n]).context(IoSnafu {
            action: "read",
            path: from,
        })?;
        dst.append(&buf[..n]).context(IoSnafu {
            action: "write",
            path: to,
        })?;
        pos += n as u64;
    }
    dst.sync_data().context(IoSnafu {
        action: "sync",
        path: to,
    })?;
    Ok(size)
}
