//! `lithify log bench`: the flags of `lithify_bench::log_clean`, the log
//! cleaner's throughput against a plain copy of the same bytes, in a
//! temporary directory unless `--dir` is given. The report gives each
//! partition's round (MB/s read, records/s, map pass and rewrite times,
//! ratio to the copy) and the total: all bytes read over the wall time from
//! the threads' start to the last round's end. `--json` prints the same as
//! one JSON object.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use lithify::log::CleanerConfig;
use lithify::vfs::{FileSystem, OsFs};
use lithify_bench::log_clean::{LogBench, LogBenchReport, MAX_BATCH_RECORDS, MAX_VALUE_SIZE};
use snafu::ResultExt as _;

use crate::error::{IoSnafu, JsonSnafu, Result};
use crate::json::JsonArgs;
use crate::log::produce::check_batch_bytes;
use crate::log::settings::{apply, default_log_config, split};
use crate::numbers;

/// Arguments of `log bench`.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// Records to append: in all (`log produce`), in the log (`log bench`),
    /// per producer at most (`stress log`) [range: 1..=1000000000000]
    #[arg(long, default_value_t = 1_000_000, value_parser = numbers::int::<u64>(1, numbers::MAX_OPS))]
    pub records: u64,
    /// Distinct keys: uniformly chosen, so keys are overwritten. For
    /// `stress db` the whole key space (default 10000), for `stress log`
    /// the keys per partition (default 500), fixed when the expected state
    /// is created [range: 1..=1000000000000]
    #[arg(long, default_value_t = 100_000, value_parser = numbers::int::<u64>(1, numbers::MAX_OPS))]
    pub keys: u64,
    /// Bytes per value; a batch of --batch-size entries must stay within 1
    /// GiB [range: 0..=16777216]
    #[arg(long, default_value_t = 100, value_parser = numbers::int::<usize>(0, MAX_VALUE_SIZE))]
    pub value_size: usize,
    /// Entries per batch: keys per write batch (`bench`), records per
    /// record batch (`log produce`, `log bench`; `stress log`: at most,
    /// each batch has 1 to N). A batch (--batch-size entries of their
    /// bytes) must stay within 1 GiB [range: 1..=1000000]
    #[arg(long, default_value_t = 100, value_parser = numbers::int::<usize>(1, MAX_BATCH_RECORDS))]
    pub batch_size: usize,
    /// Percent of records that are tombstones [range: 0..=100].
    #[arg(long, default_value_t = 0, value_parser = numbers::int::<u8>(0, 100))]
    pub tombstone_percent: u8,
    /// Seed of the workload's generators (a command with several threads
    /// derives one per thread) [range: any u64]
    #[arg(long, default_value_t = 1, value_parser = numbers::int::<u64>(0, u64::MAX))]
    pub seed: u64,
    /// Where to write the log (default: a temporary directory, removed
    /// afterwards). Must not exist yet.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// A setting by its Kafka name, `NAME=VALUE` (repeatable): a log
    /// setting (`segment.bytes=1048576`), or a cleaner setting where a
    /// cleaner runs (`log.cleaner.threads=2`); `log clean` applies it to
    /// every log, `stress log` over its own defaults (small segments, a
    /// busy cleaner).
    #[arg(long = "config", value_name = "NAME=VALUE")]
    pub config: Vec<String>,
    /// Logs (partitions) to write: `log bench` writes and cleans `bench-0`,
    /// `bench-1`, ..., each with the whole workload; `stress log` gives
    /// each its own producer (default 3; fixed when the expected state is
    /// created; --partitions x --keys at most 16777216) [range: 1..=1024]
    #[arg(long, default_value_t = 1, value_parser = numbers::int::<u32>(1, 1024))]
    pub partitions: u32,
    /// Threads doing the work: `bench` splits each benchmark's operations
    /// between them (readwhilewriting adds one writer); `log bench` runs
    /// that many cleaner threads (`log.cleaner.threads`, the offset map
    /// memory divided among them; default the `--config` value, else 1);
    /// `stress db` and `stress bank` run every thread for --ops-per-thread
    /// operations (`stress bank` adds a checker thread) [range: 1..=256]
    #[arg(long, value_parser = numbers::int::<usize>(1, numbers::MAX_THREADS))]
    pub threads: Option<usize>,
    #[command(flatten)]
    pub json: JsonArgs,
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
    let fs: Arc<dyn FileSystem> = Arc::new(OsFs);
    let temp;
    let dir = match &a.dir {
        Some(d) => d.clone(),
        None => {
            temp = tempfile::Builder::new()
                .prefix("lithify-log-bench-")
                .tempdir()
                .context(IoSnafu {
                    action: "create a temporary directory in",
                    path: std::env::temp_dir(),
                })?;
            // The benchmark creates its directory itself.
            temp.path().join("logs")
        }
    };
    let bench = LogBench {
        dir,
        records: a.records,
        keys: a.keys,
        value_size: a.value_size,
        batch_size: a.batch_size,
        tombstone_percent: a.tombstone_percent,
        seed: a.seed,
        partitions: a.partitions,
    };
    let say = |line: &str| {
        if !a.json.json {
            println!("{line}");
        }
    };
    let r = lithify_bench::log_clean::run(&bench, fs, log_config, cleaner_config, &say)?;
    if a.json.json {
        let object = serde_json::json!({
            "records": a.records,
            "keys": a.keys,
            "value_size": a.value_size,
            "batch_size": a.batch_size,
            "tombstone_percent": a.tombstone_percent,
            "partitions": a.partitions,
            "threads": r.threads,
            "config": a.config,
            "copy": {
                "mb": r.copy_mb,
                "secs": r.copy_secs,
                "mb_per_s": r.copy_rate(),
            },
            "rounds": r.rounds,
            "total": {
                "mb_read": r.mb_read(),
                "records_read": r.records_read(),
                "wall_secs": r.wall_secs,
                "mb_per_s": r.total_rate(),
                "records_per_s": r.records_read() as f64 / r.wall_secs.max(1e-9),
                "copy_ratio": r.copy_ratio(),
            },
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&object).context(JsonSnafu)?
        );
        return Ok(());
    }
    print_text(&a, &r);
    Ok(())
}

/// The report as text: the copy, each round, the total.
fn print_text(a: &BenchArgs, r: &LogBenchReport) {
    if let [report] = r.reports.as_slice() {
        print!("{report}");
    }
    println!(
        "copy:  {:.1} MB in {:.3} s = {:.1} MB/s (read + write + fsync)",
        r.copy_mb,
        r.copy_secs,
        r.copy_rate()
    );
    for (report, round) in r.reports.iter().zip(&r.rounds) {
        println!(
            "clean {}: {:.1} MB in {:.3} s = {:.1} MB/s read, {:.0} records/s (map pass {:.3} s, rewrite {:.3} s; {:.1} MB written), {:.2}x copy",
            report.topic_partition,
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
        "clean: {:.1} MB in {:.3} s = {:.1} MB/s read, {:.0} records/s ({} partitions, {} threads)",
        r.mb_read(),
        r.wall_secs,
        r.total_rate(),
        r.records_read() as f64 / r.wall_secs.max(1e-9),
        a.partitions,
        r.threads,
    );
    println!(
        "cleaning runs at {:.2}x the speed of a plain copy of the same bytes",
        r.copy_ratio()
    );
}
