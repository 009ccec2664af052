//! `lithify bench`: the engine's benchmark, as RocksDB's db_bench.
//!
//! Runs the benchmarks of `--benchmarks` in order on one database — by
//! default fillrandom, readrandom and seekrandom over 1M keys of 16 bytes
//! with 100-byte values, in a fresh temporary directory removed afterwards
//! (`--keep-db` keeps it, `--db` names one). Prints per workload ops/s, MB/s
//! and latency percentiles, then the engine's compaction stats table and
//! its write / read / space amplification; `--json` prints one JSON object
//! per workload instead.
//!
//! The workloads, their reports and the HTML pages are the
//! `lithify-bench` crate's; this module turns the flags into its
//! [`Settings`] and the engine's options (`options`: by their RocksDB
//! names) and prints what it measured.

pub(crate) mod options;

use std::path::PathBuf;

use clap::Args;
use lithify::vfs::{FileSystem as _, OsFs};
use lithify::{Db, Options, WriteOptions};
use snafu::ResultExt as _;

use lithify_bench::transaction::{MAX_SETS, TxnKind};
use lithify_bench::{Benchmark, Settings, report, strategies, strategies_html, timeline, workload};

use crate::error::{DbSnafu, IoSnafu, Result, UsageSnafu};
use crate::json::JsonArgs;
use crate::numbers;
use crate::output::say;
use options::EngineArgs;

/// The largest `--key-size`: 1 MiB.
const MAX_KEY_SIZE: usize = 1 << 20;

/// The largest `--value-size`: 64 MiB.
const MAX_VALUE_SIZE: usize = 64 << 20;

/// Arguments of `bench` (db_bench's names, with `-` or `_`).
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// Benchmarks to run in order, comma-separated: fillseq, fillrandom,
    /// overwrite, readrandom, readseq, seekrandom, readwhilewriting,
    /// deleterandom, mergerandom, readrandommergerandom (the last two with
    /// --merge-operator), bulkload (external SST files ingested), flush,
    /// compact, randomtransaction (with --optimistic-transaction-db or
    /// --transaction-db).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "fillrandom,readrandom,seekrandom"
    )]
    pub benchmarks: Vec<Benchmark>,
    /// Keys in the key space; operations of each write benchmark
    /// (default 1000000; with --strategies-report 250000)
    /// [range: 1..=1000000000000].
    #[arg(long, value_parser = numbers::int::<u64>(1, numbers::MAX_OPS))]
    pub num: Option<u64>,
    /// The compaction strategy: leveled (default), major-only, two-tier,
    /// two-tier:write-only, two-tier:write-mostly, two-tier:read-mostly-
    /// few, two-tier:read-mostly-many, two-tier:read-mostly-many:table-
    /// count (L0 merged where writes went, not by read heat), adaptive;
    /// major-level files are cut at --target-file-size-base. A database another strategy shaped is
    /// reshaped by the new one.
    #[arg(long)]
    pub strategy: Option<String>,
    /// Run one workload instead of --benchmarks: a row of the strategies'
    /// workload classes (increasing, write-only-random, write-mostly-random,
    /// read-only, read-mostly-few-updates, read-mostly-many-updates) or
    /// one that changes while it runs (phase-shift: an increasing bulk
    /// load, random updates, read-mostly, then deletes and scans;
    /// diurnal: four write-heavy days and read-heavy nights, on a
    /// simulated clock whose nights are the off-peak window unless
    /// --daily-offpeak-time-utc names another), or moving-hot-spot (70 %
    /// Zipfian reads of a 1/16 of the keys that moves every eighth of the
    /// operations, 30 % random updates).
    #[arg(long, conflicts_with = "strategies_report")]
    pub workload: Option<String>,
    /// Run every workload under every fixed strategy and adaptive, each on
    /// a fresh database, and print throughput, amplification and p99.
    #[arg(long)]
    pub strategies_report: bool,
    /// Operations of --workload / --strategies-report after the load
    /// (default: twice the keys) [range: 0..=1000000000000].
    #[arg(long, value_parser = numbers::int::<u64>(0, numbers::MAX_OPS))]
    pub ops: Option<u64>,
    /// Measured runs of each --workload / --strategies-report cell, each
    /// on a fresh database, the strategies' runs taking turns; the run of
    /// the median CPU per operation is reported, with the spread (default
    /// 1; with --strategies-report 5) [range: 1..=1000].
    #[arg(long, value_parser = numbers::int::<u64>(1, 1000), conflicts_with = "deterministic")]
    pub repeat: Option<u64>,
    /// Run --workload / --strategies-report with flushes and compactions
    /// synchronous (one background thread, each operation waiting for the
    /// work it left), so that the engine's counts of the work, and the
    /// cost they add up to, are the same in every run; no measured runs.
    /// --strategies-report without it prints this table first, then the
    /// measured one.
    #[arg(long)]
    pub deterministic: bool,
    /// Measure this machine's unit costs for the cost model (a write, a
    /// byte written by compaction, a file, a lookup, a further table
    /// probed, a scan, a further sorted run; about ten seconds, in
    /// databases in a temporary directory), print them and write them to
    /// --cpu-costs (default: $XDG_CONFIG_HOME/lithify/cpu-costs or
    /// ~/.config/lithify/cpu-costs).
    #[arg(long, conflicts_with_all = ["workload", "strategies_report"])]
    pub calibrate: bool,
    /// Operations of each read benchmark, and transactions of
    /// randomtransaction (default: --num) [range: 0..=1000000000000].
    #[arg(long, value_parser = numbers::int::<u64>(0, numbers::MAX_OPS))]
    pub reads: Option<u64>,
    /// Bytes per key [range: 1..=1048576].
    #[arg(long, default_value_t = 16,
          value_parser = numbers::int::<usize>(1, MAX_KEY_SIZE))]
    pub key_size: usize,
    /// Bytes per value; a batch of --batch-size entries must stay within 1
    /// GiB [range: 0..=67108864]
    #[arg(long, default_value_t = 100,
          value_parser = numbers::int::<usize>(0, MAX_VALUE_SIZE))]
    pub value_size: usize,
    /// Share of each value that is random; the rest repeats it, so values
    /// compress to about this ratio [range: 0..=1].
    #[arg(long, default_value_t = 0.5,
          value_parser = numbers::float(0.0, 1.0))]
    pub compression_ratio: f64,
    /// Threads doing the work: `bench` splits each benchmark's operations
    /// between them (readwhilewriting adds one writer); `log bench` runs
    /// that many cleaner threads (`log.cleaner.threads`, the offset map
    /// memory divided among them; default the `--config` value, else 1);
    /// `stress db` and `stress bank` run every thread for --ops-per-thread
    /// operations (`stress bank` adds a checker thread) [range: 1..=256]
    #[arg(long, default_value_t = 1, value_parser = numbers::int::<usize>(1, numbers::MAX_THREADS))]
    pub threads: usize,
    /// Seed of the workload's generators (a command with several threads
    /// derives one per thread) [range: any u64]
    #[arg(long, default_value_t = 301, value_parser = numbers::int::<u64>(0, u64::MAX))]
    pub seed: u64,
    /// Nexts after each seek of seekrandom [range: 0..=1000000].
    #[arg(long, default_value_t = 10,
          value_parser = numbers::int::<usize>(0, 1_000_000))]
    pub seek_nexts: usize,
    /// Entries per batch: keys per write batch (`bench`), records per
    /// record batch (`log produce`, `log bench`; `stress log`: at most,
    /// each batch has 1 to N). A batch (--batch-size entries of their
    /// bytes) must stay within 1 GiB [range: 1..=1000000]
    #[arg(long, default_value_t = 1,
          value_parser = numbers::int::<usize>(1, 1_000_000))]
    pub batch_size: usize,
    /// Percent of readrandom lookups aimed at keys never written (on top of
    /// the keys fillrandom left out: about 37 % of the key space)
    /// [range: 0..=100].
    #[arg(long, default_value_t = 0,
          value_parser = numbers::int::<u8>(0, 100))]
    pub read_miss_percent: u8,
    /// Percent of readrandommergerandom operations that merge (the rest
    /// read) [range: 0..=100].
    #[arg(long, default_value_t = 70,
          value_parser = numbers::int::<u8>(0, 100))]
    pub merge_percent: u8,
    /// Make every write durable (fsync the WAL) before it returns.
    #[arg(long)]
    pub sync: bool,
    /// Write without the WAL.
    #[arg(long)]
    pub disable_wal: bool,
    /// Run randomtransaction on an optimistic transaction database
    /// (validated at commit).
    #[arg(long)]
    pub optimistic_transaction_db: bool,
    /// Run randomtransaction on a pessimistic transaction database (key
    /// locks, deadlock detection).
    #[arg(long)]
    pub transaction_db: bool,
    /// Sets of keys each randomtransaction transaction adds to one key of
    /// [range: 1..=9999].
    #[arg(long, default_value_t = 2,
          value_parser = numbers::int::<u16>(1, MAX_SETS))]
    pub transaction_sets: u16,
    /// Milliseconds a --transaction-db transaction waits for a key's lock
    /// before it fails [range: 0..=86400000, a day].
    #[arg(long, default_value_t = 100,
          value_parser = numbers::int::<u64>(0, 86_400_000))]
    pub transaction_lock_timeout: u64,
    /// The database directory. `bench` runs in a fresh temporary directory
    /// without it (removed afterwards unless --keep-db); the other commands
    /// need it.
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// The S3-compatible bucket of the database's tables (and, with
    /// `bench --manifest-in-bucket`, its MANIFEST): http://host:port/name
    /// (an S3-compatible server), file:///path or a path (object_store's
    /// local store), memory://. `bench` keeps the tables there instead of
    /// in its directory (the WAL stays there) and prints the requests and
    /// bytes sent per user byte and the page cache's hit rate;
    /// `compaction-worker` and `replica` work on the database there.
    #[arg(long, value_name = "URL")]
    pub bucket: Option<String>,
    /// The prefix of the database's objects in --bucket (default
    /// `lithify-bench/` and the directory's path with `/` as `_`):
    /// compaction workers and replicas are pointed at it.
    #[arg(long, value_name = "PREFIX", requires = "bucket")]
    pub bucket_prefix: Option<String>,
    /// Keep the MANIFEST and CURRENT in --bucket too, claiming the
    /// database for this writer (what replicas and workers on other
    /// machines follow); without it they stay in --db.
    #[arg(long, requires = "bucket")]
    pub manifest_in_bucket: bool,
    /// Hand compactions to `lithify compaction-worker` processes watching
    /// --bucket at the same prefix. A job no worker claims within 10 s, or
    /// whose outcome fails the checks, runs here.
    #[arg(long, requires = "bucket")]
    pub remote_compaction: bool,
    /// Run on the database already in --db instead of refusing it.
    #[arg(long)]
    pub use_existing_db: bool,
    /// Keep the temporary database directory and print its path.
    #[arg(long)]
    pub keep_db: bool,
    #[command(flatten)]
    pub json: JsonArgs,
    /// Write one self-contained HTML page (inline SVG, no network) to this
    /// file: `lsm` draws the tree now and over time; `bench` throughput and
    /// amplification over the run (sampled every 250 ms), or with
    /// `--strategies-report` or `--workload` the strategies' results as bar
    /// charts.
    #[arg(long, value_name = "OUT.html")]
    pub html: Option<std::path::PathBuf>,
    /// Engine options.
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Where the database lives, and whether to remove it afterwards.
enum DbDir {
    Given(PathBuf),
    Temporary(tempfile::TempDir),
}

impl DbDir {
    fn path(&self) -> PathBuf {
        match self {
            DbDir::Given(p) => p.clone(),
            DbDir::Temporary(t) => t.path().to_path_buf(),
        }
    }
}

/// Runs `bench`.
pub(crate) fn run(a: BenchArgs) -> Result<()> {
    if let Some(html) = &a.html {
        crate::output::check(html)?;
    }
    if a.calibrate {
        return calibrate(&a);
    }
    if a.workload.is_some() || a.strategies_report {
        return run_strategies(&a);
    }
    if a.deterministic {
        return UsageSnafu {
            message: "--deterministic runs --workload or --strategies-report".to_owned(),
        }
        .fail();
    }
    let num = a.num.unwrap_or(1_000_000);
    let transaction_db = match (a.optimistic_transaction_db, a.transaction_db) {
        (true, true) => {
            return UsageSnafu {
                message: "--optimistic-transaction-db and --transaction-db exclude each other"
                    .to_string(),
            }
            .fail();
        }
        (true, false) => Some(TxnKind::Optimistic),
        (false, true) => Some(TxnKind::Pessimistic),
        (false, false) => None,
    };
    let settings = Settings {
        num,
        reads: a.reads.unwrap_or(num),
        key_size: a.key_size,
        value_size: a.value_size,
        compression_ratio: a.compression_ratio,
        threads: a.threads,
        seed: a.seed,
        seek_nexts: a.seek_nexts,
        batch_size: a.batch_size,
        read_miss_percent: a.read_miss_percent,
        merge_percent: a.merge_percent,
        merge_operator: a.engine.merge_operator.clone(),
        write_options: WriteOptions::default()
            .sync(a.sync)
            .disable_wal(a.disable_wal)
            .no_slowdown(false),
        transaction_db,
        transaction_sets: a.transaction_sets,
        transaction_lock_timeout: std::time::Duration::from_millis(a.transaction_lock_timeout),
        per_second: None,
    };
    workload::check(&settings, &a.benchmarks)?;
    let mut options = a.engine.to_options()?;
    if let Some(name) = &a.strategy {
        options.compaction_strategy = a.engine.strategy(name, options.target_file_size_base)?;
    }
    let db_dir = locate(&a)?;
    let dir = db_dir.path();
    let header = header(&a, &settings, &options, &dir);
    if !a.json.json {
        say(format_args!("{header}\n"))?;
    }
    let bucket = match &a.bucket {
        Some(url) => Some(open_bucket(&a, url, &dir, &mut options)?),
        None => None,
    };

    let db = Db::open(&dir, options).context(DbSnafu)?;
    let timeline = timeline::Timeline::default();
    if let (Some(first), Ok(mut w)) = (a.benchmarks.first(), timeline.workload.lock()) {
        *w = first.name().to_owned();
    }
    let settings = Settings {
        per_second: a.html.is_some().then(|| timeline.latency.clone()),
        ..settings
    };
    std::thread::scope(|scope| -> Result<()> {
        let sampler = a
            .html
            .is_some()
            .then(|| scope.spawn(|| timeline.sample(&db)));
        let ran = (|| -> Result<()> {
            for &benchmark in &a.benchmarks {
                if let Ok(mut w) = timeline.workload.lock() {
                    *w = benchmark.name().to_owned();
                }
                let outcome = workload::run(&db, benchmark, &settings)?;
                if a.json.json {
                    say(format_args!(
                        "{}\n",
                        report::json_line(&outcome, &settings, &db.stats())?
                    ))?;
                } else {
                    say(format_args!("{}\n", report::text(&outcome)))?;
                }
            }
            Ok(())
        })();
        timeline
            .stop
            .store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(s) = sampler {
            let _ = s.join();
        }
        ran
    })?;
    if let Some(path) = &a.html {
        let samples = timeline
            .samples
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default();
        let names: Vec<&str> = a.benchmarks.iter().map(|b| b.name()).collect();
        let page = timeline::page(
            &format!("lithify bench: {}", names.join(", ")),
            &samples,
            &timeline.latency.seconds(),
        );
        crate::output::write(path, page.as_bytes())?;
        if !a.json.json {
            say(format_args!(
                "wrote {} ({} samples)\n",
                path.display(),
                samples.len()
            ))?;
        }
    }
    let stats = db.stats();
    if !a.json.json {
        say(format_args!("\n{stats}"))?;
        if let Some(mb) = report::peak_rss_mb() {
            say(format_args!("Peak RSS: {mb:.1} MB\n"))?;
        }
    }
    db.close().context(DbSnafu)?;
    if let Some((bucket, prefix)) = &bucket {
        let b = bucket.stats();
        if !a.json.json {
            say(format_args!("Bucket {}: {b}\n", bucket.name()))?;
            // A run that wrote nothing (reads on an existing database) has
            // no figure per user byte.
            if stats.user_bytes > 0 {
                let user = stats.user_bytes as f64;
                say(format_args!(
                    "Per user byte: {:.3} bytes up, {:.3} bytes down, {:.2} requests per MB written\n",
                    b.bytes_uploaded as f64 / user,
                    b.bytes_downloaded as f64 / user,
                    b.requests() as f64 * 1e6 / user,
                ))?;
            }
        }
        if matches!(db_dir, DbDir::Temporary(_)) && !a.keep_db {
            bucket.remove_all(prefix).context(IoSnafu {
                action: "remove the benchmark's tables from the bucket",
                path: PathBuf::from(prefix),
            })?;
        }
    }

    match db_dir {
        DbDir::Temporary(t) if a.keep_db => {
            let kept = t.keep();
            if !a.json.json {
                say(format_args!("Database kept in {}\n", kept.display()))?;
            }
        }
        DbDir::Temporary(t) => {
            let path = t.path().to_path_buf();
            t.close().context(IoSnafu {
                action: "remove the temporary database",
                path,
            })?;
        }
        DbDir::Given(_) => {}
    }
    Ok(())
}

/// `--workload` (one workload under `--strategy`) or
/// `--strategies-report` (every workload under every strategy), each run
/// on a fresh database in its own temporary directory.
fn run_strategies(a: &BenchArgs) -> Result<()> {
    let report = a.strategies_report;
    let keys = a.num.unwrap_or(if report { 250_000 } else { 1_000_000 });
    let ws = strategies::WorkloadSettings {
        keys,
        ops: a.ops.unwrap_or(2 * keys),
        key_size: a.key_size,
        value_size: a.value_size,
        compression_ratio: a.compression_ratio,
        seed: a.seed,
        schedule: strategies::Schedule::Background,
    };
    let counted_pass = report || a.deterministic;
    let repeat = if a.deterministic {
        0
    } else {
        a.repeat.unwrap_or(if report { 5 } else { 1 })
    };
    let (costs, costs_from) = a.engine.cpu_costs(true)?;
    if a.key_size < 8 || a.value_size == 0 || ws.keys == 0 {
        return UsageSnafu {
            message: "workloads need --key-size of at least 8, a value and keys".to_string(),
        }
        .fail();
    }
    let base = if report {
        // Small enough that the report runs in minutes, large enough that
        // every strategy flushes and compacts many times.
        a.engine.apply_to(
            options::bench_defaults()
                .write_buffer_size(1 << 20)
                .target_file_size_base(1 << 20)
                .max_bytes_for_level_base(4 << 20),
        )?
    } else {
        a.engine.to_options()?
    };
    let workloads = match &a.workload {
        Some(name) => vec![strategies::workload_named(name)?],
        None => strategies::WORKLOAD_NAMES.iter().map(|(_, k)| *k).collect(),
    };
    let names: Vec<String> = match (&a.strategy, report) {
        (Some(s), false) => vec![s.clone()],
        (None, false) => vec!["leveled".to_string()],
        (_, true) => strategies::report_strategies().map(str::to_owned).collect(),
    };
    let mut strategies_of = Vec::new();
    for name in &names {
        let mut strategy = a.engine.strategy(name, base.target_file_size_base)?;
        if let lithify::CompactionStrategy::Adaptive(adaptive) = &mut strategy {
            // Adaptive decides with the costs the counted table prices.
            adaptive.costs = costs;
        }
        strategies_of.push(strategy);
    }
    if !a.json.json {
        say(format_args!(
            "lithify bench: {} workload(s) x {} strategy(ies); {} keys of {} bytes, \
             {} ops, values {} bytes; write_buffer_size {} KiB, target_file_size_base {} KiB\n",
            workloads.len(),
            names.len(),
            ws.keys,
            ws.key_size,
            ws.ops,
            ws.value_size,
            base.write_buffer_size >> 10,
            base.target_file_size_base >> 10,
        ))?;
        say(format_args!("unit costs: {costs_from}\n"))?;
    }
    let run_one = |w, name: &str, strategy: &lithify::CompactionStrategy, schedule| {
        let dir = temp_dir("lithify-bench-")?;
        let options = base.clone().compaction_strategy(strategy.clone());
        let settings = strategies::WorkloadSettings {
            schedule,
            ..ws.clone()
        };
        let run = strategies::run_workload(dir.path(), options, name, w, &settings)?;
        let path = dir.path().to_path_buf();
        dir.close().context(IoSnafu {
            action: "remove the temporary database",
            path,
        })?;
        Ok::<_, crate::error::Error>(run)
    };
    let (mut all, mut counted) = (Vec::new(), Vec::new());
    for &w in &workloads {
        if counted_pass {
            let mut runs = Vec::new();
            for (name, strategy) in names.iter().zip(&strategies_of) {
                let run = run_one(w, name, strategy, strategies::Schedule::Synchronous)?;
                if a.json.json {
                    say(format_args!("{}\n", report::workload_json(&run, &costs)?))?;
                }
                runs.push(run);
            }
            if !a.json.json {
                say(format_args!("{}", strategies::counted_rows(&runs, &costs)))?;
            }
            counted.extend(runs);
        }
        if repeat == 0 {
            continue;
        }
        // The strategies take turns, so the machine's drift over the
        // rounds falls on each alike.
        let mut cells: Vec<Vec<strategies::WorkloadRun>> = vec![Vec::new(); names.len()];
        for _ in 0..repeat {
            for ((name, strategy), cell) in names.iter().zip(&strategies_of).zip(&mut cells) {
                cell.push(run_one(
                    w,
                    name,
                    strategy,
                    strategies::Schedule::Background,
                )?);
            }
        }
        let mut runs = Vec::new();
        for cell in cells {
            let Some(run) = strategies::median_run(cell) else {
                continue;
            };
            if a.json.json {
                say(format_args!("{}\n", report::workload_json(&run, &costs)?))?;
            }
            runs.push(run);
        }
        if !a.json.json {
            say(format_args!("{}", strategies::report_rows(&runs)))?;
        }
        all.extend(runs);
    }
    if report && !a.json.json {
        if !counted.is_empty() {
            say(format_args!(
                "\n{}",
                strategies::counted_markdown(&counted, &costs)
            ))?;
        }
        if !all.is_empty() {
            say(format_args!("\n{}", strategies::markdown(&all)))?;
        }
    }
    if let Some(path) = &a.html {
        // The measured runs, or the counted ones when there are none.
        let page = strategies_html::page(if all.is_empty() { &counted } else { &all });
        crate::output::write(path, page.as_bytes())?;
        if !a.json.json {
            say(format_args!("wrote {}\n", path.display()))?;
        }
    }
    Ok(())
}

/// `bench --calibrate`: this machine's unit costs, printed and written
/// to `--cpu-costs` (default: the calibration file).
fn calibrate(a: &BenchArgs) -> Result<()> {
    let Some(path) = a
        .engine
        .cpu_costs
        .clone()
        .or_else(options::default_cpu_costs_path)
    else {
        return UsageSnafu {
            message:
                "no HOME or XDG_CONFIG_HOME to keep the unit costs in: name a file with --cpu-costs"
                    .to_owned(),
        }
        .fail();
    };
    crate::output::check(&path)?;
    let dir = temp_dir("lithify-calibrate-")?;
    let c = lithify_bench::cost_calibration::calibrate(dir.path())?;
    let text = format!(
        "# lithify's unit costs (µs), measured by `lithify bench --calibrate`\n{}",
        c.costs.to_text()
    );
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        lithify::vfs::FileSystem::create_dir_all(&lithify::vfs::OsFs, parent).context(IoSnafu {
            action: "create",
            path: parent,
        })?;
    }
    crate::output::write(&path, text.as_bytes())?;
    if a.json.json {
        return say(format_args!(
            "{}\n",
            serde_json::json!({
                "path": path.display().to_string(),
                "write_us": c.costs.write_us,
                "written_byte_us": c.costs.written_byte_us,
                "file_us": c.costs.file_us,
                "read_us": c.costs.read_us,
                "probe_us": c.costs.probe_us,
                "scan_us": c.costs.scan_us,
                "run_us": c.costs.run_us,
            })
        ));
    }
    let d = lithify::CpuCosts::default();
    say(format_args!(
        "unit costs of this machine (built-in in brackets), written to {}:\n\
         \x20 write          {:>9.3} us ({})\n\
         \x20 byte written   {:>9.5} us ({}); compactions wrote {} bytes in {} files ({:.3} s CPU) and {} bytes in {} files ({:.3} s)\n\
         \x20 file written   {:>9.1} us ({})\n\
         \x20 lookup         {:>9.3} us ({})\n\
         \x20 table probed   {:>9.3} us ({}); {:.2} and {:.2} tables per lookup\n\
         \x20 scan           {:>9.3} us ({})\n\
         \x20 run merged     {:>9.3} us ({}); {:.2} and {:.2} runs per scan\n",
        path.display(),
        c.costs.write_us,
        d.write_us,
        c.costs.written_byte_us,
        d.written_byte_us,
        c.compactions[0].0,
        c.compactions[0].1,
        c.compactions[0].2,
        c.compactions[1].0,
        c.compactions[1].1,
        c.compactions[1].2,
        c.costs.file_us,
        d.file_us,
        c.costs.read_us,
        d.read_us,
        c.costs.probe_us,
        d.probe_us,
        c.tables_per_get.0,
        c.tables_per_get.1,
        c.costs.scan_us,
        d.scan_us,
        c.costs.run_us,
        d.run_us,
        c.runs_per_scan.0,
        c.runs_per_scan.1,
    ))
}

/// A new temporary directory named `prefix...`, removed when dropped.
fn temp_dir(prefix: &str) -> Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .context(IoSnafu {
            action: "create a temporary directory in",
            path: std::env::temp_dir(),
        })
}

/// Opens `--bucket` and points `options` at a file system keeping the
/// database's tables there, under a prefix named after the directory's
/// path.
fn open_bucket(
    a: &BenchArgs,
    url: &str,
    dir: &std::path::Path,
    options: &mut Options,
) -> Result<(lithify::bucket::Bucket, String)> {
    use lithify::bucket::{Bucket, BucketFs, ReadOptions, SplitFs};
    // A local bucket is an output directory: never inside a database or a
    // log.
    if let Some(local) = Bucket::url_local_dir(url) {
        crate::output::check(local)?;
    }
    let bucket = Bucket::open_url(url).map_err(|e| {
        UsageSnafu {
            message: format!("--bucket {url}: {e}"),
        }
        .build()
    })?;
    // One prefix per database directory: two databases never share one
    // (each would take the other's tables for orphans).
    let prefix = match &a.bucket_prefix {
        Some(p) => p.trim_matches('/').to_owned(),
        None => format!(
            "lithify-bench/{}",
            dir.to_string_lossy()
                .trim_matches('/')
                .replace(['/', '\\', ':'], "_")
        ),
    };
    let tables = BucketFs::new(bucket.clone(), dir, &prefix, ReadOptions::default());
    let local = options.fs.clone();
    options.fs = std::sync::Arc::new(if a.manifest_in_bucket {
        SplitFs::with_manifest_in_bucket(local, tables)
    } else {
        SplitFs::new(local, tables)
    });
    if a.remote_compaction {
        use lithify::cluster::{BucketCompactionService, ServiceOptions};
        options.compaction_service = Some(std::sync::Arc::new(BucketCompactionService::new(
            bucket.clone(),
            &prefix,
            ServiceOptions::default(),
        )));
    }
    Ok((bucket, prefix))
}

/// The database directory: `--db` (refusing an existing database unless
/// `--use-existing-db`) or a new temporary directory.
fn locate(a: &BenchArgs) -> Result<DbDir> {
    match &a.db {
        Some(dir) => {
            let has_db = OsFs.exists(&dir.join(lithify::files::CURRENT));
            if has_db && !a.use_existing_db {
                return UsageSnafu {
                    message: format!(
                        "{} already holds a database; pass --use-existing-db to run on it",
                        dir.display()
                    ),
                }
                .fail();
            }
            // Never inside another database, a log or a backup directory
            // (the database itself, with --use-existing-db, is the run's).
            let outside = if has_db {
                lithify::vfs::parent_dir(dir).to_path_buf()
            } else {
                dir.clone()
            };
            crate::output::check(&outside)?;
            Ok(DbDir::Given(dir.clone()))
        }
        None => {
            if a.use_existing_db {
                return UsageSnafu {
                    message: "--use-existing-db needs --db".to_string(),
                }
                .fail();
            }
            let temp = temp_dir("lithify-bench-")?;
            Ok(DbDir::Temporary(temp))
        }
    }
}

/// db_bench's opening lines: what is measured, with which options.
fn header(a: &BenchArgs, s: &Settings, o: &Options, dir: &std::path::Path) -> String {
    let cache = o
        .block_cache
        .as_ref()
        .map_or(o.block_cache_size, |c| c.stats().capacity);
    let names: Vec<_> = a.benchmarks.iter().map(|b| b.name()).collect();
    format!(
        "lithify bench: {}\n\
         Keys:       {} bytes each\n\
         Values:     {} bytes each ({:.0} bytes after compression)\n\
         Entries:    {}; reads {}; threads {}; batch {}; seed {}\n\
         WAL:        {}\n\
         Engine:     write_buffer_size {} MiB, block cache {} MiB, compression {}, bloom {} bits/key\n\
         Levels:     L0 triggers {}/{}/{}, max_bytes_for_level_base {} MiB x {}, \
         target_file_size_base {} MiB, {} background jobs\n\
         Directory:  {}\n",
        names.join(","),
        s.key_size,
        s.value_size,
        s.value_size as f64 * s.compression_ratio.clamp(0.0, 1.0),
        s.num,
        s.reads,
        s.threads,
        s.batch_size,
        s.seed,
        if s.write_options.disable_wal {
            "disabled"
        } else if s.write_options.sync {
            "fsync on every write"
        } else {
            "written, not synced"
        },
        o.write_buffer_size >> 20,
        cache >> 20,
        o.compression.name(),
        o.bloom_bits_per_key,
        o.level0_file_num_compaction_trigger,
        o.level0_slowdown_writes_trigger,
        o.level0_stop_writes_trigger,
        o.max_bytes_for_level_base >> 20,
        o.max_bytes_for_level_multiplier,
        o.target_file_size_base >> 20,
        o.max_background_jobs,
        dir.display(),
    )
}
