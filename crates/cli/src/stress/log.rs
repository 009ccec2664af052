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
    /// The expected-state file (default: the database's or data directory's
    /// path with `.expected-state` appended). Created with the database or
    /// logs; a later run verifies against it before running.
    #[arg(long)]
    pub expected_state: Option<PathBuf>,
    /// Logs (partitions) to write: `log bench` writes and cleans `bench-0`,
    /// `bench-1`, ..., each with the whole workload; `stress log` gives
    /// each its own producer (default 3; fixed when the expected state is
    /// created; --partitions x --keys at most 16777216) [range: 1..=256]
    #[arg(long, value_parser = numbers::int::<usize>(1, 256))]
    pub partitions: Option<usize>,
    /// Distinct keys: uniformly chosen, so keys are overwritten. For
    /// `stress db` the whole key space (default 10000), for `stress log`
    /// the keys per partition (default 500), fixed when the expected state
    /// is created [range: 1..=16777216]
    #[arg(long, value_parser = numbers::int::<u64>(1, MAX_STRESS_KEYS))]
    pub keys: Option<u64>,
    /// Largest value in bytes (default: 256 for `stress db`, 200 for
    /// `stress log`; fixed when the expected state is created) [range:
    /// 16..=1048576]
    #[arg(long, value_parser = numbers::int::<u32>(MIN_VALUE_SIZE as u32, MAX_VALUE_SIZE))]
    pub max_value_size: Option<u32>,
    /// Records to append: in all (`log produce`), in the log (`log bench`),
    /// per producer at most (`stress log`) [range: 0..=1000000000000]
    #[arg(long, default_value_t = 1_000_000, value_parser = numbers::int::<u64>(0, numbers::MAX_OPS))]
    pub records: u64,
    /// Stop after this many seconds even if operations remain [range:
    /// 0..=31536000, a year]
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
    /// Entries per batch: keys per write batch (`bench`), records per
    /// record batch (`log produce`, `log bench`; `stress log`: at most,
    /// each batch has 1 to N). A batch (--batch-size entries of their
    /// bytes) must stay within 1 GiB [range: 1..=100000]
    #[arg(long, default_value_t = 20, value_parser = numbers::int::<u64>(1, 100_000))]
    pub batch_size: u64,
    /// Percent of records that are tombstones [range: 0..=100].
    #[arg(long, default_value_t = 10, value_parser = numbers::int::<u8>(0, 100))]
    pub tombstone_percent: u8,
    /// How often a flush follows the work, 0 never: `stress db` flushes the
    /// memtable after one operation in N per thread on average (chosen at
    /// random), `stress log` fsyncs each producer's log after every Nth
    /// batch [range: any u64]
    #[arg(long, default_value_t = 50, value_parser = numbers::int::<u64>(0, u64::MAX))]
    pub flush_one_in: u64,
    /// Seed of the workload's generators (a command with several threads
    /// derives one per thread) [range: any u64]
    #[arg(long, default_value_t = 1, value_parser = numbers::int::<u64>(0, u64::MAX))]
    pub seed: u64,
    /// A setting by its Kafka name, `NAME=VALUE` (repeatable): a log
    /// setting (`segment.bytes=1048576`), or a cleaner setting where a
    /// cleaner runs (`log.cleaner.threads=2`); `log clean` applies it to
    /// every log, `stress log` over its own defaults (small segments, a
    /// busy cleaner).
    #[arg(long = "config", value_name = "NAME=VALUE")]
    pub config: Vec<String>,
    /// Only verify what earlier runs left against the expected state
    /// (`stress bank`: the sum of the accounts), then exit.
    #[arg(long)]
    pub verify_only: bool,
    /// Append in transactions of interleaved transactional producers, ended
    /// by COMMIT or ABORT markers (some aborted); `stress log` verifies
    /// what a `read_committed` consumer reads.
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
