//! `lithify-compare`: lithify beside RocksDB (rust-rocksdb) and fjall on
//! db_bench-style workloads, identical options, one engine process at a
//! time. Run it through `cargo xtask compare`.
//!
//! * `lithify-compare run --engine E --workload W --dir D [...]` runs one
//!   workload on one engine in this process and prints one JSON object.
//! * `lithify-compare table [--size small|full] [--engines a,b,c]
//!   [--json FILE] [--dir D]` runs every row of the comparison, each
//!   (row, engine) as a child `run` process (so peak RSS and bytes written
//!   are one engine's), and prints one table with ratios against RocksDB
//!   and fjall. `--workload W` keeps W's rows only; `--workload
//!   randomtransaction` (not in the default table) runs db_bench's
//!   randomtransaction in each `--txn` mode and `--threads` count.
// A benchmark harness outside the engine: it reads /proc and removes its
// scratch directories with std::fs, as xtask does.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod engines;
mod metrics;
mod rows;
mod workloads;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use engines::{Config, ENGINES, TXN_MODES, TxnMode};
use serde_json::Value;
use workloads::{Outcome, Spec, WORKLOADS};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("run") => run(&args[1..]),
        Some("table") => rows::table(&args[1..]),
        _ => Err(format!(
            "usage: lithify-compare run --engine {{{}}} --workload {{{}}} --dir D \
             [--num N] [--keys K] [--threads T] [--value-size V] [--sync] [--zstd] \
             [--wal-compression] [--no-release-memory] \
             [--txn {}]\n       \
             lithify-compare table [--size small|full] [--engines lithify,rocksdb,fjall] \
             [--workload W] [--txn {}] [--threads T,T] [--num N] [--keys K] \
             [--json FILE] [--dir D]",
            ENGINES.join("|"),
            WORKLOADS.join("|"),
            TXN_MODES.join("|"),
            TXN_MODES.join(",")
        )),
    };
    if let Err(e) = result {
        eprintln!("lithify-compare: {e}");
        std::process::exit(1);
    }
}

/// `--name value` pairs and `--flag`s.
pub struct Args<'a>(&'a [String]);

impl<'a> Args<'a> {
    pub fn value(&self, name: &str) -> Option<&'a str> {
        self.0
            .iter()
            .position(|a| a == name)
            .and_then(|i| self.0.get(i + 1))
            .map(String::as_str)
    }

    pub fn flag(&self, name: &str) -> bool {
        self.0.iter().any(|a| a == name)
    }

    pub fn number(&self, name: &str, default: u64) -> Result<u64, String> {
        match self.value(name) {
            None => Ok(default),
            Some(v) => v
                .replace('_', "")
                .parse()
                .map_err(|_| format!("{name} takes a number, not {v:?}")),
        }
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let a = Args(args);
    let engine = a.value("--engine").ok_or("--engine is required")?;
    let workload = a.value("--workload").ok_or("--workload is required")?;
    let dir = PathBuf::from(a.value("--dir").ok_or("--dir is required")?);
    let num = a.number("--num", 1_000_000)?;
    let spec = Spec {
        ops: num,
        keys: a.number("--keys", num)?,
        threads: a.number("--threads", 1)? as usize,
        value_size: a.number("--value-size", 100)? as usize,
        sync: a.flag("--sync"),
        seed: a.number("--seed", 301)?,
    };
    let config = Config {
        zstd: a.flag("--zstd"),
        wal_compression: a.flag("--wal-compression"),
        release_memory: !a.flag("--no-release-memory"),
        blob_min_size: match a.value("--blob-min-size") {
            None => None,
            Some(_) => Some(a.number("--blob-min-size", 0)?),
        },
        blob_age_cutoff: match a.value("--blob-age-cutoff") {
            None => None,
            Some(v) => Some(
                v.parse::<f64>()
                    .map_err(|e| format!("--blob-age-cutoff {v}: {e}"))?,
            ),
        },
        recycle_wal: a.flag("--recycle-wal"),
        write_buffer_size: a.number("--write-buffer-size", engines::MEMTABLE as u64)? as usize,
    };
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    if workload == "randomtransaction" {
        let mode = TxnMode::parse(a.value("--txn").unwrap_or("optimistic"))?;
        return run_txn(engine, mode, &dir, &spec, config);
    }
    if workload == "fill-overwrite" {
        return run_fill_overwrite(engine, &dir, &spec, config);
    }
    let db = engines::open(engine, &dir, config)?;
    // The state a workload starts from (not measured).
    let preload = match workload {
        "fillrandom" => false,
        "overwrite" | "readrandom" | "seekrandom" | "readwhilewriting" | "compact" => true,
        other => return Err(format!("unknown workload {other:?}: one of {WORKLOADS:?}")),
    };
    if preload {
        workloads::load(&*db, spec.keys, spec.value_size, spec.seed ^ 0xabcd)?;
        if workload != "overwrite" && workload != "compact" {
            // Reads run on a settled tree, the same shape for every engine.
            db.compact_all()?;
            // ... and on a settled disk: without this, the kernel writes the
            // load's dirty pages back while the reads run, and the rows
            // measured the writeback's timing more than the engines (10M
            // readrandom pairs moved between 1.07x and 1.6x).
            settle_page_cache();
        }
    }
    metrics::reset_peak_rss();
    let written_before = metrics::write_bytes();
    let split_before = db.write_counters();
    let t0 = Instant::now();
    let out: Outcome = match workload {
        "fillrandom" | "overwrite" => workloads::write_random(&*db, &spec)?,
        "readrandom" => workloads::read_random(&*db, &spec)?,
        "seekrandom" => workloads::seek_random(&*db, &spec)?,
        "readwhilewriting" => workloads::read_while_writing(&*db, &spec)?,
        "compact" => {
            db.compact_all()?;
            Outcome {
                ops: 1,
                seconds: t0.elapsed().as_secs_f64(),
                ..Outcome::default()
            }
        }
        _ => unreachable!("checked above"),
    };
    let peak_rss = metrics::peak_rss();
    // The engine's own split, up to the close (what the close writes is
    // only in `written_bytes`).
    let split = db
        .write_counters()
        .zip(split_before)
        .map(|(after, before)| after - before);
    db.close()?;
    let written = metrics::write_bytes() - written_before;
    let dir_bytes = metrics::dir_bytes(&dir);
    // Live bytes: every key of the key space once the preload ran; for
    // fillrandom the expected share of distinct keys, 1 - (1 - 1/K)^N.
    let live_keys = if preload {
        spec.keys as f64
    } else {
        let (k, n) = (spec.keys as f64, spec.ops as f64);
        k * (1.0 - (-n / k).exp())
    };
    let live_bytes = live_keys * (16 + spec.value_size) as f64;
    let mut json = phase(&out);
    let rest = serde_json::json!({
        "engine": engine,
        "workload": workload,
        "threads": spec.threads,
        "user_bytes": out.user_bytes,
        "written_bytes": written,
        "write_amp": if out.user_bytes > 0 { written as f64 / out.user_bytes as f64 } else { 0.0 },
        "dir_bytes": dir_bytes,
        "space_amp": dir_bytes as f64 / live_bytes,
        "peak_rss_bytes": peak_rss,
        "wal_bytes": split.map(|s| s.wal),
        "flush_bytes": split.map(|s| s.flush),
        "compaction_bytes": split.map(|s| s.compaction),
        "wal_syncs": split.map(|s| s.wal_syncs),
    });
    if let (Some(json), Value::Object(rest)) = (json.as_object_mut(), rest) {
        json.extend(rest);
    }
    println!("{json}");
    std::fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(())
}

/// Writes every dirty page of the machine back (`sync(1)`), so that a
/// measured phase does not share the disk and the CPU with the writeback
/// of what the preceding phase wrote.
fn settle_page_cache() {
    if let Err(e) = std::process::Command::new("sync").status() {
        eprintln!("lithify-compare: sync: {e} (the reads may overlap writeback)");
    }
}

/// One phase of a multi-phase run, as JSON: throughput and latencies.
fn phase(out: &Outcome) -> Value {
    let (p50, p99) = percentiles(out);
    serde_json::json!({
        "ops": out.ops,
        "seconds": out.seconds,
        "ops_per_sec": out.ops as f64 / out.seconds,
        "p50_us": p50,
        "p99_us": p99,
        "found": out.found,
    })
}

/// `run --workload fill-overwrite`, the key-value separation sequence:
/// fillrandom of `keys` keys, overwrite of twice the key space, then
/// readrandom (`keys` reads) and seekrandom (`keys / 4` seeks) on the
/// tree once the engine has settled. Write amplification is that of fill
/// plus overwrite **without the WAL**: the bytes the process wrote, less
/// the WAL files' bytes ([`metrics::WalBytes`], the same measure for every
/// engine), over the user bytes; the WAL bytes are reported beside it.
/// Both are taken once the engine has settled (the process wrote nothing
/// for 2 s, [`metrics::settle`]), so that work an engine defers past the
/// last write counts; the `*_at_end` figures are those of the moment the
/// overwrite returned. Space
/// amplification is the directory's bytes (the database open) over the
/// live bytes.
fn run_fill_overwrite(
    engine: &str,
    dir: &std::path::Path,
    spec: &Spec,
    config: Config,
) -> Result<(), String> {
    let db = engines::open(engine, dir, config)?;
    let owned = engine.to_owned();
    let wal = metrics::WalBytes::watch(dir, move |p| engines::is_wal_file(&owned, p));
    let written_before = metrics::write_bytes();
    let counters_before = db.write_counters();
    let fill = workloads::write_random(
        &*db,
        &Spec {
            ops: spec.keys,
            ..*spec
        },
    )?;
    let overwrite = workloads::write_random(
        &*db,
        &Spec {
            ops: 2 * spec.keys,
            seed: spec.seed ^ 0x0fe1,
            ..*spec
        },
    )?;
    let written_at_end = metrics::write_bytes() - written_before;
    let dir_bytes_at_end = metrics::dir_bytes(dir);
    let settled_after = metrics::settle(Duration::from_secs(2), Duration::from_secs(600));
    let written = metrics::write_bytes() - written_before;
    let wal_bytes = wal.finish();
    let counters = db
        .write_counters()
        .zip(counters_before)
        .map(|(after, before)| after - before);
    let dir_bytes = metrics::dir_bytes(dir);
    let reads = workloads::read_random(
        &*db,
        &Spec {
            ops: spec.keys,
            ..*spec
        },
    )?;
    let seeks = workloads::seek_random(
        &*db,
        &Spec {
            ops: (spec.keys / 4).max(1),
            ..*spec
        },
    )?;
    db.close()?;
    let user_bytes = fill.user_bytes + overwrite.user_bytes;
    let live_bytes = spec.keys as f64 * (16 + spec.value_size) as f64;
    let per_user = |b: u64| b as f64 / user_bytes.max(1) as f64;
    let json = serde_json::json!({
        "engine": engine,
        "workload": "fill-overwrite",
        "keys": spec.keys,
        "value_size": spec.value_size,
        "blob_min_size": config.blob_min_size,
        "blob_age_cutoff": config.blob_age_cutoff,
        "fill": phase(&fill),
        "overwrite": phase(&overwrite),
        "readrandom": phase(&reads),
        "seekrandom": phase(&seeks),
        "writes": {
            "user_bytes": user_bytes,
            "written_bytes": written,
            "wal_bytes": wal_bytes,
            "write_amp": per_user(written.saturating_sub(wal_bytes)),
            "wal_amp": per_user(wal_bytes),
            "engine_wal_bytes": counters.map(|c| c.wal),
            "engine_flush_bytes": counters.map(|c| c.flush),
            "engine_compaction_bytes": counters.map(|c| c.compaction),
            "dir_bytes": dir_bytes,
            "space_amp": dir_bytes as f64 / live_bytes,
            "settle_seconds": settled_after.as_secs_f64(),
            "write_amp_at_end": per_user(written_at_end.saturating_sub(wal_bytes)),
            "space_amp_at_end": dir_bytes_at_end as f64 / live_bytes,
        },
    });
    println!("{json}");
    std::fs::remove_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(())
}

/// p50 and p99 of the outcome's latencies, in microseconds.
fn percentiles(out: &Outcome) -> (f64, f64) {
    out.hist.as_ref().map_or((0.0, 0.0), |h| {
        (
            h.value_at_quantile(0.50) as f64 / 1000.0,
            h.value_at_quantile(0.99) as f64 / 1000.0,
        )
    })
}

/// `run --workload randomtransaction`: db_bench's randomtransaction on the
/// engine's transactional database, from an empty one; `ops_per_sec` are
/// the commits per second, the latencies those of every transaction begun.
fn run_txn(
    engine: &str,
    mode: TxnMode,
    dir: &std::path::Path,
    spec: &Spec,
    config: Config,
) -> Result<(), String> {
    let db = engines::open_txn(engine, mode, dir, config)?;
    metrics::reset_peak_rss();
    let written_before = metrics::write_bytes();
    let out = workloads::random_transaction(&*db, spec)?;
    let peak_rss = metrics::peak_rss();
    db.close()?;
    let written = metrics::write_bytes() - written_before;
    let dir_bytes = metrics::dir_bytes(dir);
    // Live bytes: the expected distinct keys of both sets written by the
    // committed transactions, 2 K (1 - (1 - 1/K)^C), of 16 + 8 bytes.
    let (k, c) = (spec.keys as f64, out.ops as f64);
    let live_bytes = 2.0 * k * (1.0 - (-c / k).exp()) * 24.0;
    let attempts = out.ops + out.failed;
    let (p50, p99) = percentiles(&out);
    let json = serde_json::json!({
        "engine": engine,
        "workload": "randomtransaction",
        "txn": mode.name(),
        "threads": spec.threads,
        "keys": spec.keys,
        "ops": out.ops,
        "attempts": attempts,
        "failed": out.failed,
        "conflict_rate": if attempts > 0 { out.failed as f64 / attempts as f64 } else { 0.0 },
        "seconds": out.seconds,
        "ops_per_sec": out.ops as f64 / out.seconds,
        "p50_us": p50,
        "p99_us": p99,
        "set_sum": out.set_sum.to_string(),
        "verified": true,
        "user_bytes": out.user_bytes,
        "written_bytes": written,
        "write_amp": if out.user_bytes > 0 { written as f64 / out.user_bytes as f64 } else { 0.0 },
        "dir_bytes": dir_bytes,
        "space_amp": if live_bytes > 0.0 { dir_bytes as f64 / live_bytes } else { 0.0 },
        "peak_rss_bytes": peak_rss,
    });
    println!("{json}");
    std::fs::remove_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(())
}
