//! `lithify log produce LOG_DIR`: append a synthetic workload.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use lithify_kafka_log::TopicPartition;
use lithify_kafka_log::{Clock, Log, ManualClock, OpenOptions, SystemClock};
use lithify_vfs::OsFs;
use snafu::ResultExt as _;

use crate::error::{LogSnafu, Result, UsageSnafu};
use crate::log::settings::{apply, default_log_config, split};
use crate::log::warn_recovery;
use crate::log::workload::{Rng, Workload};

/// Arguments of `log produce`.
#[derive(Debug, Args)]
pub(crate) struct ProduceArgs {
    /// The log directory, named `<topic>-<partition>` (created if missing).
    pub log_dir: PathBuf,
    /// Records to append.
    #[arg(long, default_value_t = 10_000)]
    pub records: u64,
    /// Distinct keys (uniformly chosen, so keys are overwritten).
    #[arg(long, default_value_t = 1_000)]
    pub keys: u64,
    /// Bytes per value.
    #[arg(long, default_value_t = 100)]
    pub value_size: usize,
    /// Percent of records that are tombstones.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub tombstone_percent: u8,
    /// Records per batch.
    #[arg(long, default_value_t = 100)]
    pub batch_size: usize,
    /// Seed of the workload.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Timestamp of the first record, in ms since the epoch (default: now).
    #[arg(long)]
    pub now: Option<i64>,
    /// Milliseconds between two records' timestamps.
    #[arg(long, default_value_t = 1)]
    pub time_step_ms: i64,
    /// Roll the active segment at the end, so every record is cleanable.
    #[arg(long)]
    pub roll: bool,
    /// A log setting by its Kafka name, e.g. `segment.bytes=1048576`
    /// (repeatable).
    #[arg(long = "config", value_name = "NAME=VALUE")]
    pub config: Vec<String>,
}

/// Runs `log produce`.
pub(crate) fn run(a: ProduceArgs) -> Result<()> {
    if a.batch_size == 0 || a.keys == 0 {
        return UsageSnafu {
            message: "--batch-size and --keys must be at least 1".to_string(),
        }
        .fail();
    }
    let named = a
        .log_dir
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(TopicPartition::from_dir_name);
    if named.is_none() {
        return UsageSnafu {
            message: format!(
                "{} is not named <topic>-<partition> (e.g. orders-0): Kafka, and lithify log clean, only know a log by a directory named so",
                a.log_dir.display()
            ),
        }
        .fail();
    }
    let mut config = default_log_config();
    for s in &a.config {
        let (name, value) = split(s)?;
        apply(name, value, &mut config, None)?;
    }
    let start = a.now.unwrap_or_else(|| SystemClock.now_ms());
    let clock = Arc::new(ManualClock::new(start));
    let options = OpenOptions {
        recovery_point: None,
        clock: clock.clone(),
    };
    let mut log = Log::open_with(Arc::new(OsFs), &a.log_dir, config, options).context(LogSnafu)?;
    warn_recovery(&log);
    let first = log.log_end_offset();
    let workload = Workload {
        keys: a.keys,
        value_size: a.value_size,
        tombstone_percent: a.tombstone_percent,
    };
    let mut rng = Rng::new(a.seed);
    let mut batch = Vec::with_capacity(a.batch_size);
    let mut tombstones = 0u64;
    let mut ts = start;
    for i in 0..a.records {
        let r = workload.record(&mut rng, ts);
        tombstones += u64::from(r.value.is_none());
        batch.push(r);
        ts = ts.saturating_add(a.time_step_ms);
        if batch.len() == a.batch_size || i + 1 == a.records {
            clock.set(ts);
            log.append(&batch).context(LogSnafu)?;
            batch.clear();
        }
    }
    if a.roll {
        log.roll().context(LogSnafu)?;
    }
    let segments = log.segment_infos();
    let end = log.log_end_offset();
    // As Kafka at a clean shutdown: synced, indexes trimmed, the recovery
    // point checkpointed.
    log.close().context(LogSnafu)?;
    println!(
        "produced {} records ({} tombstones, {} keys) at offsets {}..{} of {}; the log has {} segments, {} bytes",
        a.records,
        tombstones,
        a.keys,
        first,
        end,
        a.log_dir.display(),
        segments.len(),
        segments.iter().map(|s| s.size).sum::<u64>()
    );
    Ok(())
}
