//! `lithify stress log DATA_DIR`: the flags of [`lithify_stress::log`],
//! the log cleaner under a producer load (see there for what a run does
//! and checks).

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use lithify::log::CleanerConfig;
use lithify::vfs::{FileSystem, OsFs};
use lithify_stress::log::{DEFAULT_SETTINGS, LogStress};
use lithify_stress::{MAX_STRESS_KEYS, MAX_VALUE_SIZE, MIN_VALUE_SIZE};

use super::say;
use crate::error::Result;
use crate::log::settings::{apply, default_log_config, split};
use crate::numbers;

/// Arguments of `stress log`.
#[derive(Debug, Args)]
pub(crate) struct LogStressArgs {
    /// The data directory (created if missing).
    pub data_dir: PathBuf,
    /// The expected-state file (default: DATA_DIR.expected-state).
    #[arg(long)]
    pub expected_state: Option<PathBuf>,
    /// Partitions (logs), one producer each (default 3; fixed when the
    /// expected state is created); --partitions x --keys is at most
    /// 16777216 [range: 1..=256].
    #[arg(long, value_parser = numbers::int::<usize>(1, 256))]
    pub partitions: Option<usize>,
    /// Keys per partition (default 500; fixed when the expected state is
    /// created) [range: 1..=16777216].
    #[arg(long, value_parser = numbers::int::<u64>(1, MAX_STRESS_KEYS))]
    pub keys: Option<u64>,
    /// Largest value in bytes (default 200; fixed when the expected state
    /// is created) [range: 16..=1048576].
    #[arg(long, value_parser = numbers::int::<u32>(MIN_VALUE_SIZE as u32, MAX_VALUE_SIZE))]
    pub max_value_size: Option<u32>,
    /// Records each producer appends at most [range: 0..=1000000000000].
    #[arg(long, default_value_t = 1_000_000, value_parser = numbers::int::<u64>(0, numbers::MAX_OPS))]
    pub records: u64,
    /// Stop after this many seconds even if records remain
    /// [range: 0..=31536000, a year].
    #[arg(long, value_parser = numbers::float(0.0, numbers::MAX_DURATION_SECS))]
    pub duration: Option<f64>,
    /// Records per second each producer appends at most (0: no limit), so
    /// that the cleaner keeps up and the logs stay small
    /// [range: 0..=1000000000].
    #[arg(long, default_value_t = 5_000, value_parser = numbers::int::<u64>(0, 1_000_000_000))]
    pub rate: u64,
    /// Segments a partition may hold before its producer waits for the
    /// cleaner (0: never waits). The cleaner swaps a round's output in
    /// only when the round completes, so under frequent kills a backlog
    /// that takes longer to clean than a run lasts would never shrink and
    /// the logs would grow without bound (and run out of file handles)
    /// [range: 0..=1000000].
    #[arg(long, default_value_t = 256, value_parser = numbers::int::<usize>(0, 1_000_000))]
    pub max_segments: usize,
    /// Records per batch at most (each batch has 1 to N)
    /// [range: 1..=100000].
    #[arg(long, default_value_t = 20, value_parser = numbers::int::<u64>(1, 100_000))]
    pub batch_size: u64,
    /// Percent of records that are tombstones [range: 0..=100].
    #[arg(long, default_value_t = 10, value_parser = numbers::int::<u8>(0, 100))]
    pub tombstone_percent: u8,
    /// One batch in N is followed by a flush (fsync); 0 never
    /// [range: any u64].
    #[arg(long, default_value_t = 50, value_parser = numbers::int::<u64>(0, u64::MAX))]
    pub flush_one_in: u64,
    /// Seed of the producers [range: any u64].
    #[arg(long, default_value_t = 1, value_parser = numbers::int::<u64>(0, u64::MAX))]
    pub seed: u64,
    /// A log or cleaner setting by its Kafka name (repeatable), over the
    /// stress defaults: segment.bytes=16384, segment.index.bytes=4096,
    /// index.interval.bytes=512, min.cleanable.dirty.ratio=0.1,
    /// delete.retention.ms=200, log.cleaner.threads=2,
    /// log.cleaner.dedupe.buffer.size=65536, log.cleaner.backoff.ms=20.
    #[arg(long = "config", value_name = "NAME=VALUE")]
    pub config: Vec<String>,
    /// Only recover and verify the logs, then exit.
    #[arg(long)]
    pub verify_only: bool,
    /// Append in transactions (COMMIT or ABORT markers) and verify what a
    /// `read_committed` consumer reads.
    #[arg(long)]
    pub transactional: bool,
    /// With `--transactional`: percent of transactions aborted
    /// [range: 0..=100].
    #[arg(long, default_value_t = 20, value_parser = numbers::int::<u8>(0, 100))]
    pub abort_percent: u8,
    /// With `--transactional`: batches per transaction at most (each has 1
    /// to N) [range: 1..=1000000].
    #[arg(long, default_value_t = 4, value_parser = numbers::int::<u64>(1, 1_000_000))]
    pub txn_batches: u64,
}

/// Runs `stress log`: the stress settings, then `--config`.
pub(crate) fn run(a: LogStressArgs) -> Result<()> {
    let mut log = default_log_config();
    let mut cleaner = CleanerConfig::default();
    for (name, value) in DEFAULT_SETTINGS {
        apply(name, value, &mut log, Some(&mut cleaner))?;
    }
    for s in &a.config {
        let (name, value) = split(s)?;
        apply(name, value, &mut log, Some(&mut cleaner))?;
    }
    let fs: Arc<dyn FileSystem> = Arc::new(OsFs);
    let stress = LogStress {
        data_dir: a.data_dir,
        expected_state: a.expected_state,
        partitions: a.partitions,
        keys: a.keys,
        max_value_size: a.max_value_size,
        records: a.records,
        duration: a.duration,
        rate: a.rate,
        max_segments: a.max_segments,
        batch_size: a.batch_size,
        tombstone_percent: a.tombstone_percent,
        flush_one_in: a.flush_one_in,
        seed: a.seed,
        verify_only: a.verify_only,
        transactional: a.transactional,
        abort_percent: a.abort_percent,
        txn_batches: a.txn_batches,
    };
    lithify_stress::log::run(&stress, fs, log, cleaner, &say)?;
    Ok(())
}
