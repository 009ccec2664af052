//! `lithify stress db DIR`: the flags of [`lithify_stress::db`], RocksDB's
//! db_stress for the engine (see there for what a run does and checks).

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use lithify::vfs::{FileSystem, OsFs};
use lithify_stress::db::{DbStress, base_options};
use lithify_stress::{MAX_STRESS_KEYS, MAX_VALUE_SIZE, MIN_VALUE_SIZE};

use super::say;
use crate::bench::options::EngineArgs;
use crate::error::Result;
use crate::numbers;

/// Arguments of `stress db` (db_stress's names where it has them).
#[derive(Debug, Args)]
pub(crate) struct DbStressArgs {
    /// The database directory (created if missing).
    pub db: PathBuf,
    /// The expected-state file (default: the database's or data directory's
    /// path with `.expected-state` appended). Created with the database or
    /// logs; a later run verifies against it before running.
    #[arg(long)]
    pub expected_state: Option<PathBuf>,
    /// Distinct keys: uniformly chosen, so keys are overwritten. For
    /// `stress db` the whole key space (default 10000), for `stress log`
    /// the keys per partition (default 500), fixed when the expected state
    /// is created [range: 1..=16777216]
    #[arg(long, alias = "max_key", value_parser = numbers::int::<u64>(1, MAX_STRESS_KEYS))]
    pub keys: Option<u64>,
    /// Largest value in bytes (default: 256 for `stress db`, 200 for
    /// `stress log`; fixed when the expected state is created) [range:
    /// 16..=1048576]
    #[arg(long, value_parser = numbers::int::<u32>(MIN_VALUE_SIZE as u32, MAX_VALUE_SIZE))]
    pub max_value_size: Option<u32>,
    /// Threads doing the work: `bench` splits each benchmark's operations
    /// between them (readwhilewriting adds one writer); `log bench` runs
    /// that many cleaner threads (`log.cleaner.threads`, the offset map
    /// memory divided among them; default the `--config` value, else 1);
    /// `stress db` and `stress bank` run every thread for --ops-per-thread
    /// operations (`stress bank` adds a checker thread) [range: 1..=256]
    #[arg(long, default_value_t = 4, value_parser = numbers::int::<usize>(1, numbers::MAX_THREADS))]
    pub threads: usize,
    /// Operations per thread: writes and reads (`stress db`), transfers
    /// (`stress bank`) [range: 0..=1000000000000]
    #[arg(long, default_value_t = 100_000,
          value_parser = numbers::int::<u64>(0, numbers::MAX_OPS))]
    pub ops_per_thread: u64,
    /// Stop after this many seconds even if operations remain [range:
    /// 0..=31536000, a year]
    #[arg(long, value_parser = numbers::float(0.0, numbers::MAX_DURATION_SECS))]
    pub duration: Option<f64>,
    /// Seed of the workload's generators (a command with several threads
    /// derives one per thread) [range: any u64]
    #[arg(long, default_value_t = 1, value_parser = numbers::int::<u64>(0, u64::MAX))]
    pub seed: u64,
    /// Percent of writes (`stress db`) or commits (`stress bank`) made with
    /// `sync` [range: 0..=100]
    #[arg(long, default_value_t = 10,
          value_parser = numbers::int::<u8>(0, 100))]
    pub sync_percent: u8,
    /// Percent of operations that are point reads; the six percents add up
    /// to 100 [range: 0..=100].
    #[arg(long, default_value_t = 25, value_parser = numbers::int::<u8>(0, 100))]
    pub readpercent: u8,
    /// Percent of operations that are puts [range: 0..=100].
    #[arg(long, default_value_t = 35, value_parser = numbers::int::<u8>(0, 100))]
    pub writepercent: u8,
    /// Percent of operations that are deletes [range: 0..=100].
    #[arg(long, default_value_t = 10, value_parser = numbers::int::<u8>(0, 100))]
    pub delpercent: u8,
    /// Percent of operations that are range deletions [range: 0..=100].
    #[arg(long, default_value_t = 5, value_parser = numbers::int::<u8>(0, 100))]
    pub delrangepercent: u8,
    /// Percent of operations that are write batches of several keys
    /// [range: 0..=100].
    #[arg(long, default_value_t = 10, value_parser = numbers::int::<u8>(0, 100))]
    pub batchpercent: u8,
    /// Percent of operations that are iterator checks [range: 0..=100].
    #[arg(long, default_value_t = 15, value_parser = numbers::int::<u8>(0, 100))]
    pub iterpercent: u8,
    /// Keys a range deletion or an iterator check covers at most
    /// [range: 1..=1000000].
    #[arg(long, alias = "range_deletion_width", default_value_t = 10,
          value_parser = numbers::int::<u64>(1, 1_000_000))]
    pub range_width: u64,
    /// How often a flush follows the work, 0 never: `stress db` flushes the
    /// memtable after one operation in N per thread on average (chosen at
    /// random), `stress log` fsyncs each producer's log after every Nth
    /// batch [range: any u64]
    #[arg(long, default_value_t = 2_000,
          value_parser = numbers::int::<u64>(0, u64::MAX))]
    pub flush_one_in: u64,
    /// One operation in N (per thread) also compacts a random key range; 0
    /// never [range: any u64].
    #[arg(long, default_value_t = 5_000,
          value_parser = numbers::int::<u64>(0, u64::MAX))]
    pub compact_range_one_in: u64,
    /// Operations a thread holds a snapshot before checking it
    /// [range: 1..=1000000000].
    #[arg(long, default_value_t = 100,
          value_parser = numbers::int::<u64>(1, 1_000_000_000))]
    pub snapshot_hold_ops: u64,
    /// Only verify what earlier runs left against the expected state
    /// (`stress bank`: the sum of the accounts), then exit.
    #[arg(long)]
    pub verify_only: bool,
    /// The compaction strategy: leveled (default), major-only, two-tier,
    /// two-tier:write-only, two-tier:write-mostly, two-tier:read-mostly-
    /// few, two-tier:read-mostly-many, two-tier:read-mostly-many:table-
    /// count (L0 merged where writes went, not by read heat), adaptive;
    /// major-level files are cut at --target-file-size-base. A database another strategy shaped is
    /// reshaped by the new one.
    #[arg(long)]
    pub strategy: Option<String>,
    /// Engine options (stress defaults: 512 KiB memtables, 256 KiB files,
    /// 1 MiB base level, 8 MiB cache, so flushes and compactions run all
    /// the time).
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Runs `stress db`.
pub(crate) fn run(a: DbStressArgs) -> Result<()> {
    let fs: Arc<dyn FileSystem> = Arc::new(OsFs);
    let mut opts = a.engine.apply_to(base_options(fs))?;
    if let Some(name) = &a.strategy {
        opts.compaction_strategy = a.engine.strategy(name, opts.target_file_size_base)?;
    }
    let stress = DbStress {
        db: a.db,
        expected_state: a.expected_state,
        keys: a.keys,
        max_value_size: a.max_value_size,
        threads: a.threads,
        ops_per_thread: a.ops_per_thread,
        duration: a.duration,
        seed: a.seed,
        sync_percent: a.sync_percent,
        readpercent: a.readpercent,
        writepercent: a.writepercent,
        delpercent: a.delpercent,
        delrangepercent: a.delrangepercent,
        batchpercent: a.batchpercent,
        iterpercent: a.iterpercent,
        range_width: a.range_width,
        flush_one_in: a.flush_one_in,
        compact_range_one_in: a.compact_range_one_in,
        snapshot_hold_ops: a.snapshot_hold_ops,
        verify_only: a.verify_only,
    };
    lithify_stress::db::run(&stress, opts, &say)?;
    Ok(())
}
