//! The log cleaner's benchmark (`lithify log bench`): cleaning throughput,
//! and its ratio to a plain copy of the same bytes (reading every segment
//! and writing it to a new file, then fsync) — the physical limit of a
//! cleaner, which must at least read the log once and write what it keeps.
//!
//! The logs are written first (on the file system given, in a directory
//! that must not exist yet), so both the copy and the cleaning read them
//! from the page cache: the figures compare CPU work, not disks.
//!
//! [`LogBench::partitions`] logs are written (`bench-0` ..; partition `p`
//! draws its [`Workload`] from seed `seed + p`) and cleaned by the cleaner
//! service's threads (`log.cleaner.threads`, which also divides the map
//! memory among them, as Kafka does): each thread cleans one log at a
//! time, the dirtiest first. The copy copies every partition's segments
//! one after another on one thread.
//!
//! ```
//! use std::sync::Arc;
//! use lithify::log::{CleanerConfig, LogConfig};
//! use lithify::vfs::OsFs;
//! use lithify_bench::log_clean::{LogBench, run};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let tmp = tempfile::tempdir()?;
//! let mut log_config = LogConfig::default();
//! log_config.cleanup_policy.compact = true;
//! let bench = LogBench { records: 2000, keys: 100, ..LogBench::new(tmp.path().join("logs")) };
//! let report = run(&bench, Arc::new(OsFs), log_config, CleanerConfig::default(), &|_| {})?;
//! assert_eq!(report.rounds.len(), 1);
//! assert_eq!(report.rounds[0].records_read, 2000);
//! assert!(report.rounds[0].records_kept <= 100);
//! # Ok(())
//! # }
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lithify::ManualClock;
use lithify::log::record::SimpleRecord;
use lithify::log::{
    CleanerConfig, CleanerEvent, Log, LogCleaner, LogConfig, OpenOptions, RoundReport, shared_log,
};
use lithify::vfs::FileSystem;
use lithify_base::rand::SplitMix64;
use snafu::ResultExt as _;

use crate::error::{CleanerSnafu, IoSnafu, LogSnafu, Result, RoundsSnafu, UsageSnafu};

/// Bytes read and written at a time by the copy.
const COPY_CHUNK: usize = 256 << 10;

/// The fixed clock of the benchmark (ms since the epoch).
const NOW: i64 = 1_700_000_000_000;

/// How long the benchmark waits for its cleaner threads' rounds.
const ROUNDS_TIMEOUT: Duration = Duration::from_secs(3600);

/// The largest value a [`Workload`] makes: 16 MiB (Kafka's default largest
/// batch, `max.message.bytes`, is 1 MiB).
pub const MAX_VALUE_SIZE: usize = 16 << 20;

/// The most records in one batch.
pub const MAX_BATCH_RECORDS: usize = 1_000_000;

/// The synthetic keyed workload of `log produce` and `log bench`: uniform
/// random keys (so most keys are overwritten many times), a share of
/// tombstones, printable values; deterministic for a seed.
///
/// ```
/// use lithify_bench::SplitMix64;
/// use lithify_bench::log_clean::Workload;
///
/// let w = Workload { keys: 10, value_size: 8, tombstone_percent: 0 };
/// let r = w.record(&mut SplitMix64::new(1), 0);
/// assert!(r.key.as_deref().unwrap().starts_with(b"key-"));
/// assert_eq!(r.value.as_deref().unwrap().len(), 8);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Workload {
    /// Distinct keys.
    pub keys: u64,
    /// Bytes per value.
    pub value_size: usize,
    /// Percent of records that are tombstones.
    pub tombstone_percent: u8,
}

impl Workload {
    /// The next record, stamped `timestamp`.
    pub fn record(&self, rng: &mut SplitMix64, timestamp: i64) -> SimpleRecord {
        let key = format!("key-{:010}", rng.below(self.keys));
        if rng.below(100) < u64::from(self.tombstone_percent) {
            return SimpleRecord::tombstone(timestamp, key);
        }
        let mut value = Vec::with_capacity(self.value_size);
        while value.len() < self.value_size {
            let r = rng.next_u64();
            for b in r.to_le_bytes() {
                if value.len() < self.value_size {
                    value.push(b'a' + b % 26);
                }
            }
        }
        SimpleRecord::new(timestamp, key, value)
    }
}

/// What the benchmark writes and cleans.
#[derive(Debug, Clone)]
pub struct LogBench {
    /// The data directory the logs are written under; must not exist yet.
    pub dir: PathBuf,
    /// Records in each log.
    pub records: u64,
    /// Distinct keys.
    pub keys: u64,
    /// Bytes per value.
    pub value_size: usize,
    /// Records per batch.
    pub batch_size: usize,
    /// Percent of records that are tombstones.
    pub tombstone_percent: u8,
    /// Seed of the workload (partition `p` uses `seed + p`).
    pub seed: u64,
    /// Logs to write and clean (`bench-0`, `bench-1`, ...).
    pub partitions: u32,
}

impl LogBench {
    /// `lithify log bench`'s defaults under `dir`: one log of 1000000
    /// records over 100000 keys, 100-byte values, 100 records per batch,
    /// no tombstones, seed 1.
    pub fn new(dir: PathBuf) -> Self {
        LogBench {
            dir,
            records: 1_000_000,
            keys: 100_000,
            value_size: 100,
            batch_size: 100,
            tombstone_percent: 0,
            seed: 1,
            partitions: 1,
        }
    }
}

/// What the benchmark measured.
#[derive(Debug)]
pub struct LogBenchReport {
    /// MB of segments written.
    pub written_mb: f64,
    /// Segments written (the logs' inactive segments, all copied and
    /// cleaned).
    pub segments: usize,
    /// Seconds writing the logs took.
    pub write_secs: f64,
    /// MB the copy copied.
    pub copy_mb: f64,
    /// Seconds the copy took.
    pub copy_secs: f64,
    /// Each partition's round, by partition name.
    pub rounds: Vec<Round>,
    /// The cleaner's own report of each round, in the same order.
    pub reports: Vec<RoundReport>,
    /// Cleaner threads.
    pub threads: usize,
    /// Seconds from the threads' start to the last round's end.
    pub wall_secs: f64,
}

impl LogBenchReport {
    /// MB/s of the copy.
    pub fn copy_rate(&self) -> f64 {
        self.copy_mb / self.copy_secs.max(1e-9)
    }

    /// MB read by every round.
    pub fn mb_read(&self) -> f64 {
        self.rounds.iter().map(|r| r.mb_read).sum()
    }

    /// Records read by every round.
    pub fn records_read(&self) -> u64 {
        self.rounds.iter().map(|r| r.records_read).sum()
    }

    /// MB/s the cleaner read, over the wall time.
    pub fn total_rate(&self) -> f64 {
        self.mb_read() / self.wall_secs.max(1e-9)
    }

    /// How fast cleaning ran against a plain copy of the same bytes.
    pub fn copy_ratio(&self) -> f64 {
        self.total_rate() / self.copy_rate().max(1e-9)
    }
}

/// One partition's round, in the report's units.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Round {
    /// The partition (`bench-0`).
    pub partition: String,
    /// MB read.
    pub mb_read: f64,
    /// MB written.
    pub mb_written: f64,
    /// Records read.
    pub records_read: u64,
    /// Records kept.
    pub records_kept: u64,
    /// Seconds of the round.
    pub secs: f64,
    /// Seconds of its offset-map pass.
    pub map_secs: f64,
    /// Seconds of its rewrite.
    pub rewrite_secs: f64,
    /// MB/s read.
    pub mb_per_s: f64,
    /// Records/s read.
    pub records_per_s: f64,
    /// Its read rate over the copy's.
    pub copy_ratio: f64,
}

impl Round {
    fn of(r: &RoundReport, copy_rate: f64) -> Round {
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
}

/// Checks a batch of `batch_size` records of `value_size` bytes: at most
/// [`MAX_BATCH_RECORDS`] records, values of at most [`MAX_VALUE_SIZE`],
/// and at most 1 GiB in all (a batch is built in memory before it is
/// appended); `Err` says which setting to lower.
///
/// ```
/// use lithify_bench::log_clean::check_batch;
/// assert!(check_batch(100, 100).is_ok());
/// assert!(check_batch(1_000_000, 16 << 20).unwrap_err().contains("--batch-size"));
/// ```
pub fn check_batch(batch_size: usize, value_size: usize) -> std::result::Result<(), String> {
    if batch_size == 0 || batch_size > MAX_BATCH_RECORDS || value_size > MAX_VALUE_SIZE {
        return Err(format!(
            "--batch-size must be in 1..={MAX_BATCH_RECORDS} and --value-size at most \
             {MAX_VALUE_SIZE}"
        ));
    }
    crate::check_product(
        ("--batch-size", batch_size as u64),
        ("--value-size", value_size as u64),
        crate::MAX_BATCH_BYTES,
        "bytes in one batch",
    )
}

/// Writes the logs, copies them, cleans each once; `log_config` should ask
/// for compaction (`cleanup.policy=compact`), or there is nothing to clean.
/// `say` hears one line once the logs are written (what, where, how big).
pub fn run(
    b: &LogBench,
    fs: Arc<dyn FileSystem>,
    log_config: LogConfig,
    cleaner_config: CleanerConfig,
    say: &dyn Fn(&str),
) -> Result<LogBenchReport> {
    check_batch(b.batch_size, b.value_size).map_err(|message| UsageSnafu { message }.build())?;
    if fs.exists(&b.dir) {
        return UsageSnafu {
            message: format!("{} already exists; give a new directory", b.dir.display()),
        }
        .fail();
    }
    let threads = cleaner_config.threads;

    // 1. The logs.
    let started = Instant::now();
    let mut logs = Vec::new();
    let mut segments: Vec<PathBuf> = Vec::new();
    let mut input_bytes = 0u64;
    let workload = Workload {
        keys: b.keys,
        value_size: b.value_size,
        tombstone_percent: b.tombstone_percent,
    };
    for p in 0..b.partitions {
        let log_dir = b.dir.join(format!("bench-{p}"));
        let options = OpenOptions::default()
            .recovery_point(None)
            .clock(Arc::new(ManualClock::at_ms(NOW)));
        let mut log =
            Log::open_with(fs.clone(), &log_dir, log_config.clone(), options).context(LogSnafu)?;
        let mut rng = SplitMix64::new(b.seed.wrapping_add(u64::from(p)));
        let mut batch = Vec::with_capacity(
            b.batch_size
                .min(usize::try_from(b.records).unwrap_or(usize::MAX)),
        );
        for i in 0..b.records {
            batch.push(workload.record(&mut rng, NOW - 3_600_000 + i as i64));
            if batch.len() == b.batch_size || i + 1 == b.records {
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
    let write_secs = started.elapsed().as_secs_f64();
    say(&format!(
        "wrote {} x {} records ({} keys, {}-byte values, {} per batch) under {}: {:.1} MB in {} \
         segments, {write_secs:.2} s",
        b.partitions,
        b.records,
        b.keys,
        b.value_size,
        b.batch_size,
        b.dir.display(),
        mb(input_bytes),
        segments.len(),
    ));

    // 2. The physical limit: copy the same bytes.
    let copy_dir = b.dir.join("copy");
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
    while reports.len() + failures.len() < b.partitions as usize {
        match events.recv_timeout(ROUNDS_TIMEOUT) {
            Ok(CleanerEvent::Cleaned(r)) => reports.push(*r),
            Ok(e) if e.is_failure() => failures.push(e.to_string().trim_end().to_owned()),
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
        return RoundsSnafu { failures }.fail();
    }
    reports.sort_by(|x, y| {
        x.topic_partition
            .to_string()
            .cmp(&y.topic_partition.to_string())
    });
    Ok(LogBenchReport {
        written_mb: mb(input_bytes),
        segments: segments.len(),
        write_secs,
        copy_mb: mb(copied),
        copy_secs,
        rounds: reports.iter().map(|r| Round::of(r, copy_rate)).collect(),
        reports,
        threads,
        wall_secs,
    })
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
