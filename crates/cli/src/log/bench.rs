//! `lithify log bench`: cleaning throughput, and its ratio to a plain copy
//! of the same bytes (reading every segment and writing it to a new file,
//! then fsync) — the physical limit of a cleaner, which must at least read
//! the log once and write what it keeps.
//!
//! The log is written first (on the real file system, in a temporary
//! directory unless `--dir` is given), so both the copy and the cleaning
//! read it from the page cache: the figures compare CPU work, not disks.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use clap::Args;
use lithify_compaction_logclean::{CleanerConfig, CleanerEvent, LogCleaner, shared_log};
use lithify_kafka_log::{Log, ManualClock, OpenOptions};
use lithify_vfs::{FileSystem, OsFs};
use snafu::ResultExt as _;

use crate::error::{CleanerSnafu, FailuresSnafu, IoSnafu, LogSnafu, Result, UsageSnafu};
use crate::log::settings::{apply, default_log_config, split};
use crate::log::workload::{Rng, Workload};

/// Bytes read and written at a time by the copy.
const COPY_CHUNK: usize = 256 << 10;

/// The fixed clock of the benchmark.
const NOW: i64 = 1_700_000_000_000;

/// Arguments of `log bench`.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// Records in the log.
    #[arg(long, default_value_t = 1_000_000)]
    pub records: u64,
    /// Distinct keys.
    #[arg(long, default_value_t = 100_000)]
    pub keys: u64,
    /// Bytes per value.
    #[arg(long, default_value_t = 100)]
    pub value_size: usize,
    /// Records per batch.
    #[arg(long, default_value_t = 100)]
    pub batch_size: usize,
    /// Percent of records that are tombstones.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub tombstone_percent: u8,
    /// Seed of the workload.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Where to write the log (default: a temporary directory, removed
    /// afterwards). Must not exist yet.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// A log or cleaner setting by its Kafka name (repeatable), e.g.
    /// `compression.type=lz4` or `lithify.cleaner.digest=xxh3`.
    #[arg(long = "config", value_name = "NAME=VALUE")]
    pub config: Vec<String>,
}

/// Runs `log bench`.
pub(crate) fn run(a: BenchArgs) -> Result<()> {
    if a.batch_size == 0 || a.keys == 0 || a.records == 0 {
        return UsageSnafu {
            message: "--records, --keys and --batch-size must be at least 1".to_string(),
        }
        .fail();
    }
    let mut log_config = default_log_config();
    let mut cleaner_config = CleanerConfig::default();
    for s in &a.config {
        let (name, value) = split(s)?;
        apply(name, value, &mut log_config, Some(&mut cleaner_config))?;
    }
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
    let log_dir = data_dir.join("bench-0");

    // 1. The log.
    let started = Instant::now();
    let options = OpenOptions {
        recovery_point: None,
        clock: Arc::new(ManualClock::new(NOW)),
    };
    let mut log = Log::open_with(fs.clone(), &log_dir, log_config, options).context(LogSnafu)?;
    let workload = Workload {
        keys: a.keys,
        value_size: a.value_size,
        tombstone_percent: a.tombstone_percent,
    };
    let mut rng = Rng::new(a.seed);
    let mut batch = Vec::with_capacity(a.batch_size);
    for i in 0..a.records {
        batch.push(workload.record(&mut rng, NOW - 3_600_000 + i as i64));
        if batch.len() == a.batch_size || i + 1 == a.records {
            log.append(&batch).context(LogSnafu)?;
            batch.clear();
        }
    }
    log.roll().context(LogSnafu)?;
    log.flush().context(LogSnafu)?;
    let segments: Vec<PathBuf> = log
        .segments()
        .filter(|s| !s.is_active())
        .map(|s| s.log_path().to_path_buf())
        .collect();
    let input_bytes: u64 = log.segment_infos().iter().map(|s| s.size).sum();
    println!(
        "wrote {} records ({} keys, {}-byte values, {} per batch) to {}: {:.1} MB in {} segments, {:.2} s",
        a.records,
        a.keys,
        a.value_size,
        a.batch_size,
        log_dir.display(),
        mb(input_bytes),
        segments.len(),
        started.elapsed().as_secs_f64()
    );

    // 2. The physical limit: copy the same bytes.
    let copy_dir = data_dir.join("copy");
    fs.create_dir_all(&copy_dir).context(IoSnafu {
        action: "create",
        path: &copy_dir,
    })?;
    let started = Instant::now();
    let mut copied = 0;
    for path in &segments {
        copied += copy_file(
            &*fs,
            path,
            &copy_dir.join(path.file_name().unwrap_or_default()),
        )?;
    }
    fs.sync_dir(&copy_dir).context(IoSnafu {
        action: "sync",
        path: &copy_dir,
    })?;
    let copy_secs = started.elapsed().as_secs_f64();

    // 3. One cleaning round.
    let svc = LogCleaner::new(cleaner_config, fs.clone(), Arc::new(ManualClock::new(NOW)));
    svc.add_log(shared_log(log)).context(CleanerSnafu)?;
    let events = svc.clean_eligible_once().context(CleanerSnafu)?;
    let report = match events.as_slice() {
        [CleanerEvent::Cleaned(r)] => r.clone(),
        other => {
            for e in other {
                eprint!("{e}");
            }
            return FailuresSnafu {
                message: "the benchmark's cleaning round did not run".to_string(),
            }
            .fail();
        }
    };
    print!("{report}");
    let s = &report.stats;
    let clean_secs = s.duration.as_secs_f64();
    let copy_rate = mb(copied) / copy_secs.max(1e-9);
    let clean_rate = mb(s.bytes_read) / clean_secs.max(1e-9);
    println!(
        "copy:  {:.1} MB in {:.3} s = {copy_rate:.1} MB/s (read + write + fsync)",
        mb(copied),
        copy_secs
    );
    println!(
        "clean: {:.1} MB in {:.3} s = {clean_rate:.1} MB/s read (map pass {:.3} s, rewrite {:.3} s; {:.1} MB written)",
        mb(s.bytes_read),
        clean_secs,
        s.map_duration.as_secs_f64(),
        (s.duration - s.map_duration).as_secs_f64(),
        mb(s.bytes_written)
    );
    println!(
        "cleaning runs at {:.2}x the speed of a plain copy of the same bytes",
        clean_rate / copy_rate.max(1e-9)
    );
    Ok(())
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
