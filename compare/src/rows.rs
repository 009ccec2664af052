//! The comparison table: every row of the engine README's performance
//! table, each engine in its own child process, one after another.

use std::process::Command;

use serde_json::Value;

use crate::Args;
use crate::engines::{ENGINES, TXN_MODES};
use crate::workloads::WORKLOADS;

/// What a row's headline number is.
#[derive(Clone, Copy)]
enum Metric {
    /// Operations per second (higher is better), with p99.
    Throughput,
    /// Bytes written over user bytes (lower is better).
    WriteAmp,
    /// Bytes on disk after the run (lower is better).
    DirBytes,
    /// Peak resident memory during the measured phase (lower is better).
    PeakRss,
    /// Committed transactions per second (higher is better), with the
    /// conflict rate and p99.
    Commits,
    /// Bytes written without the WAL over user bytes (lower is better),
    /// with the WAL's beside it.
    WriteAmpWithoutWal,
    /// Directory bytes over live bytes (lower is better).
    SpaceAmp,
}

struct Row {
    name: String,
    workload: &'static str,
    num: u64,
    keys: u64,
    threads: u64,
    value_size: u64,
    sync: bool,
    zstd: bool,
    /// WAL compression on (`--wal-compression`).
    wal_compressed: bool,
    /// randomtransaction's `--txn` mode.
    txn: Option<&'static str>,
    /// Key-value separation from this value size on (`--blob-min-size`).
    blob_min_size: Option<u64>,
    /// WAL recycling on, with memtables of this many bytes so that WALs
    /// roll over during the row (`--recycle-wal --write-buffer-size`).
    recycled_wal: Option<u64>,
    /// The part of a multi-phase run's result the row shows (`fill`,
    /// `overwrite`, `writes`, ...), or the whole result.
    phase: Option<&'static str>,
    metric: Metric,
}

#[allow(clippy::too_many_arguments)]
fn row(
    name: impl Into<String>,
    workload: &'static str,
    num: u64,
    keys: u64,
    threads: u64,
    value_size: u64,
    flags: (bool, bool),
    metric: Metric,
) -> Row {
    Row {
        name: name.into(),
        workload,
        num,
        keys,
        threads,
        value_size,
        sync: flags.0,
        zstd: flags.1,
        wal_compressed: false,
        txn: None,
        blob_min_size: None,
        recycled_wal: None,
        phase: None,
        metric,
    }
}

impl Row {
    /// The row with WAL compression on.
    fn wal_compressed(mut self) -> Row {
        self.wal_compressed = true;
        self
    }

    /// The row with WAL recycling on and memtables of `memtable` bytes.
    fn recycled_wal(mut self, memtable: u64) -> Row {
        self.recycled_wal = Some(memtable);
        self
    }
}

/// Key-value separation's rows: for 1, 4 and 16 KiB values, each engine
/// separating them (from 512 bytes, garbage collection on) and the same
/// runs inline, the `fill-overwrite` sequence: fillrandom, overwrite of
/// twice the key space, write amplification of both without the WAL (the
/// WAL beside it), space amplification after the overwrite, then
/// readrandom and seekrandom on that tree. 100-byte values with
/// separation configured stay inline: those rows show what configuring it
/// costs values below `min_blob_size`.
fn separated_rows(full: bool) -> Vec<Row> {
    use Metric::*;
    let sizes: [(u64, u64); 4] = if full {
        [
            (1024, 1_000_000),
            (4096, 1_000_000),
            (16384, 250_000),
            (100, 1_000_000),
        ]
    } else {
        [
            (1024, 100_000),
            (4096, 30_000),
            (16384, 8_000),
            (100, 300_000),
        ]
    };
    let mut rows = Vec::new();
    for (value_size, keys) in sizes {
        let what = if value_size < 1024 {
            format!("{value_size}-byte values")
        } else {
            format!("{} KiB values", value_size / 1024)
        };
        let n = if keys >= 1_000_000 {
            format!("{}M", keys / 1_000_000)
        } else {
            format!("{}K", keys / 1000)
        };
        let configured = if value_size < 512 {
            "blob files configured"
        } else {
            "blob files"
        };
        for (label, blob_min_size) in [(configured, Some(512)), ("inline", None)] {
            for (name, phase, metric) in [
                (format!("fillrandom {n}"), "fill", Throughput),
                ("overwrite 2x".to_owned(), "overwrite", Throughput),
                (
                    "write amplification without WAL".to_owned(),
                    "writes",
                    WriteAmpWithoutWal,
                ),
                (
                    "space amplification after overwrite".to_owned(),
                    "writes",
                    SpaceAmp,
                ),
                ("readrandom".to_owned(), "readrandom", Throughput),
                ("seekrandom".to_owned(), "seekrandom", Throughput),
            ] {
                let mut r = row(
                    format!("{what}, {label}: {name}"),
                    "fill-overwrite",
                    keys,
                    keys,
                    1,
                    value_size,
                    (false, false),
                    metric,
                );
                r.blob_min_size = blob_min_size;
                r.phase = Some(phase);
                rows.push(r);
            }
        }
    }
    rows
}

/// The rows; `full` uses the sizes (10M keys), else a tenth of
/// the big ones so that the whole table runs in minutes.
fn rows(full: bool) -> Vec<Row> {
    use Metric::*;
    let m = 1_000_000;
    let big = if full { 10 * m } else { m };
    let fill = if full { 10 * m } else { 2 * m };
    let kib = if full { m } else { 300_000 };
    let plain = (false, false);
    let sync = (true, false);
    let zstd = (false, true);
    let mut rows = vec![
        row(
            "fillrandom 1M, 2 writer threads",
            "fillrandom",
            m,
            m,
            2,
            100,
            plain,
            Throughput,
        ),
        row(
            "fillrandom 1M, 4 writer threads",
            "fillrandom",
            m,
            m,
            4,
            100,
            plain,
            Throughput,
        ),
        row(
            "fillrandom 1M, 8 writer threads",
            "fillrandom",
            m,
            m,
            8,
            100,
            plain,
            Throughput,
        ),
        row(
            "readwhilewriting (1 writer, 2 readers)",
            "readwhilewriting",
            m,
            m,
            2,
            100,
            plain,
            Throughput,
        ),
        row(
            "fillrandom, fsync every write, 1 thread",
            "fillrandom",
            10_000,
            10_000,
            1,
            100,
            sync,
            Throughput,
        ),
        row(
            "fillrandom, fsync every write, 1 thread, WALs recycled (1 MiB memtables)",
            "fillrandom",
            30_000,
            30_000,
            1,
            100,
            sync,
            Throughput,
        )
        .recycled_wal(1 << 20),
        row(
            "fillrandom, fsync every write, 8 threads",
            "fillrandom",
            40_000,
            40_000,
            8,
            100,
            sync,
            Throughput,
        ),
        row(
            format!("fillrandom {}M, 1 thread", fill / m),
            "fillrandom",
            fill,
            fill,
            1,
            100,
            plain,
            Throughput,
        ),
        row(
            format!("write amplification, fillrandom {}M", fill / m),
            "fillrandom",
            fill,
            fill,
            1,
            100,
            plain,
            WriteAmp,
        ),
        row(
            format!("fillrandom {}M, WAL compressed", fill / m),
            "fillrandom",
            fill,
            fill,
            1,
            100,
            plain,
            Throughput,
        )
        .wal_compressed(),
        row(
            format!(
                "write amplification, fillrandom {}M, WAL compressed",
                fill / m
            ),
            "fillrandom",
            fill,
            fill,
            1,
            100,
            plain,
            WriteAmp,
        )
        .wal_compressed(),
        row(
            "overwrite 2M over 1M keys",
            "overwrite",
            2 * m,
            m,
            1,
            100,
            plain,
            Throughput,
        ),
        row(
            format!("readrandom 1M on {}M", big / m),
            "readrandom",
            m,
            big,
            1,
            100,
            plain,
            Throughput,
        ),
        row(
            format!("peak RSS during readrandom on {}M", big / m),
            "readrandom",
            m,
            big,
            1,
            100,
            plain,
            PeakRss,
        ),
        row(
            format!("seekrandom (seek + 10 next) on {}M", big / m),
            "seekrandom",
            200_000,
            big,
            1,
            100,
            plain,
            Throughput,
        ),
        // Seeks from two threads on a settled tree that fits the page
        // cache many times over: the engines' own concurrency, not the
        // disk (the performance issue's "seeks from 2 threads").
        row(
            "seekrandom (seek + 10 next) from 2 threads on 1M",
            "seekrandom",
            400_000,
            m,
            2,
            100,
            plain,
            Throughput,
        ),
        row(
            format!("1 KiB values: fillrandom {}K", kib / 1000),
            "fillrandom",
            kib,
            kib,
            1,
            1024,
            plain,
            Throughput,
        ),
        row(
            "1 KiB values: write amplification",
            "fillrandom",
            kib,
            kib,
            1,
            1024,
            plain,
            WriteAmp,
        ),
        row(
            "1 KiB values: write amplification, WAL compressed",
            "fillrandom",
            kib,
            kib,
            1,
            1024,
            plain,
            WriteAmp,
        )
        .wal_compressed(),
        row(
            "1 KiB values: readrandom",
            "readrandom",
            kib,
            kib,
            1,
            1024,
            plain,
            Throughput,
        ),
        row(
            "zstd: fillrandom 1M",
            "fillrandom",
            m,
            m,
            1,
            100,
            zstd,
            Throughput,
        ),
        row(
            "zstd: readrandom 1M",
            "readrandom",
            m,
            m,
            1,
            100,
            zstd,
            Throughput,
        ),
        row(
            "zstd: bytes after compact-all",
            "compact",
            m,
            m,
            1,
            100,
            zstd,
            DirBytes,
        ),
    ];
    if full {
        // At 50M keys a leveled tree has 4-5 levels: write amplification
        // and memory look different from 10M.
        let deep = 50 * m;
        rows.extend([
            row(
                "fillrandom 50M, 1 thread",
                "fillrandom",
                deep,
                deep,
                1,
                100,
                plain,
                Throughput,
            ),
            row(
                "write amplification, fillrandom 50M",
                "fillrandom",
                deep,
                deep,
                1,
                100,
                plain,
                WriteAmp,
            ),
            row(
                "readrandom 1M on 50M",
                "readrandom",
                m,
                deep,
                1,
                100,
                plain,
                Throughput,
            ),
            row(
                "peak RSS during readrandom on 50M",
                "readrandom",
                m,
                deep,
                1,
                100,
                plain,
                PeakRss,
            ),
        ]);
    }
    rows.extend(separated_rows(full));
    rows
}

/// Whether a row's measured phase writes (its throughput is then shown
/// against the disk's sequential write bandwidth).
fn writes(r: &Row) -> bool {
    matches!(r.workload, "fillrandom" | "overwrite")
}

/// The disk's sequential write bandwidth in bytes per second: 1 GiB
/// written with `dd` (`oflag=direct`, 1 MiB blocks, `conv=fdatasync`)
/// into `dir`, timed; `None` (with a message) if `dd` cannot run there.
fn disk_bandwidth(dir: &str) -> Option<f64> {
    const MIB: u64 = 1 << 20;
    const COUNT: u64 = 1024;
    std::fs::create_dir_all(dir).ok()?;
    let path = format!("{dir}/disk-bandwidth");
    let start = std::time::Instant::now();
    let out = Command::new("dd")
        .args([
            "if=/dev/zero".to_owned(),
            format!("of={path}"),
            format!("bs={MIB}"),
            format!("count={COUNT}"),
            "oflag=direct".to_owned(),
            "conv=fdatasync".to_owned(),
        ])
        .output();
    let seconds = start.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&path);
    match out {
        Ok(out) if out.status.success() && seconds > 0.0 => Some((MIB * COUNT) as f64 / seconds),
        Ok(out) => {
            eprintln!(
                "lithify-compare: dd could not measure the disk: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            None
        }
        Err(e) => {
            eprintln!("lithify-compare: dd could not run: {e}");
            None
        }
    }
}

/// randomtransaction's rows: each mode in `modes` with each thread count
/// in `threads`, `num` transactions over `keys` keys per set.
fn txn_rows(modes: &[&'static str], threads: &[u64], num: u64, keys: u64) -> Vec<Row> {
    let mut rows = Vec::new();
    for &mode in modes {
        for &t in threads {
            rows.push(Row {
                name: format!(
                    "randomtransaction {mode}, {t} thread{}",
                    if t == 1 { "" } else { "s" }
                ),
                workload: "randomtransaction",
                num,
                keys,
                threads: t,
                value_size: 8,
                sync: false,
                zstd: false,
                wal_compressed: false,
                txn: Some(mode),
                blob_min_size: None,
                recycled_wal: None,
                phase: None,
                metric: Metric::Commits,
            });
        }
    }
    rows
}

/// Whether `engine` cannot run the row at all (fjall has no pessimistic
/// transactions, and compresses only journal values of 4 KiB or more).
fn not_applicable(r: &Row, engine: &str) -> Option<&'static str> {
    if engine != "fjall" {
        return None;
    }
    if r.txn == Some("pessimistic") {
        return Some("fjall has no pessimistic transactions");
    }
    if r.recycled_wal.is_some() {
        return Some("fjall has no WAL recycling");
    }
    r.wal_compressed
        .then_some("fjall compresses only journal values of 4 KiB or more")
}

/// The rows `table` runs: `--workload randomtransaction` its own rows
/// (`--txn`, `--threads`, `--num`, `--keys`), another `--workload` the
/// default rows of that workload, else every default row.
fn selected_rows(a: &Args, full: bool) -> Result<Vec<Row>, String> {
    match a.value("--workload") {
        Some("randomtransaction") => {
            let modes = match a.value("--txn") {
                None => TXN_MODES.to_vec(),
                Some(m) => m
                    .split(',')
                    .map(|m| {
                        TXN_MODES
                            .iter()
                            .copied()
                            .find(|n| *n == m)
                            .ok_or(format!("unknown --txn {m:?}: one of {TXN_MODES:?}"))
                    })
                    .collect::<Result<_, _>>()?,
            };
            let threads = match a.value("--threads") {
                None => vec![1, 4],
                Some(t) => t
                    .split(',')
                    .map(|t| {
                        t.parse()
                            .map_err(|_| format!("--threads takes numbers, not {t:?}"))
                    })
                    .collect::<Result<_, _>>()?,
            };
            Ok(txn_rows(
                &modes,
                &threads,
                a.number("--num", 300_000)?,
                a.number("--keys", 100_000)?,
            ))
        }
        Some(w) => {
            let rows: Vec<Row> = rows(full).into_iter().filter(|r| r.workload == w).collect();
            if rows.is_empty() {
                return Err(format!(
                    "no row runs --workload {w:?}: one of {WORKLOADS:?}"
                ));
            }
            Ok(rows)
        }
        None => Ok(rows(full)),
    }
}

/// `lithify-compare table`.
pub fn table(args: &[String]) -> Result<(), String> {
    let a = Args(args);
    let full = match a.value("--size").unwrap_or("small") {
        "small" => false,
        "full" => true,
        other => return Err(format!("--size is small or full, not {other:?}")),
    };
    let engines: Vec<String> = a.value("--engines").map_or_else(
        || ENGINES.iter().map(|e| e.to_string()).collect(),
        |e| e.split(',').map(str::to_owned).collect(),
    );
    let dir = a.value("--dir").unwrap_or("compare-db").to_owned();
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    // The physical limit beside each write row.
    let disk = disk_bandwidth(&dir);
    if let Some(bw) = disk {
        eprintln!(
            "lithify-compare: the disk writes {:.0} MB/s sequentially (dd, oflag=direct)",
            bw / 1e6
        );
    }
    let mut all = Vec::new();
    let mut lines = Vec::new();
    // Runs with the same parameters are shared between rows (a row per
    // metric of one run).
    let mut cache: Vec<(String, Option<Value>)> = Vec::new();
    let only = a.value("--rows");
    for r in selected_rows(&a, full)?
        .into_iter()
        .filter(|r| only.is_none_or(|o| r.name.contains(o)))
    {
        let mut results = Vec::new();
        for engine in &engines {
            if let Some(why) = not_applicable(&r, engine) {
                eprintln!(
                    "lithify-compare: {} — {engine}: not applicable ({why})",
                    r.name
                );
                results.push(Some(serde_json::json!({ "not_applicable": why })));
                continue;
            }
            let mut cmd_args: Vec<String> = vec![
                "run".into(),
                "--engine".into(),
                engine.clone(),
                "--workload".into(),
                r.workload.into(),
                "--dir".into(),
                format!("{dir}/{engine}"),
                "--num".into(),
                r.num.to_string(),
                "--keys".into(),
                r.keys.to_string(),
                "--threads".into(),
                r.threads.to_string(),
                "--value-size".into(),
                r.value_size.to_string(),
            ];
            if r.sync {
                cmd_args.push("--sync".into());
            }
            if r.zstd {
                cmd_args.push("--zstd".into());
            }
            if r.wal_compressed {
                cmd_args.push("--wal-compression".into());
            }
            if let Some(min) = r.blob_min_size {
                cmd_args.extend(["--blob-min-size".into(), min.to_string()]);
            }
            if let Some(memtable) = r.recycled_wal {
                cmd_args.extend([
                    "--recycle-wal".into(),
                    "--write-buffer-size".into(),
                    memtable.to_string(),
                ]);
            }
            if let Some(mode) = r.txn {
                cmd_args.extend(["--txn".into(), mode.into()]);
            }
            let key = cmd_args.join(" ");
            let result = match cache.iter().find(|(k, _)| *k == key) {
                Some((_, v)) => v.clone(),
                None => {
                    eprintln!("lithify-compare: {} — {engine}", r.name);
                    let out = Command::new(&exe)
                        .args(&cmd_args)
                        .output()
                        .map_err(|e| e.to_string())?;
                    let v = if out.status.success() {
                        serde_json::from_slice::<Value>(&out.stdout).ok()
                    } else {
                        eprintln!(
                            "lithify-compare: {engine} could not run {}: {}",
                            r.name,
                            String::from_utf8_lossy(&out.stderr).trim()
                        );
                        None
                    };
                    if let Some(v) = &v {
                        all.push(serde_json::json!({ "row": r.name, "result": v }));
                    }
                    cache.push((key, v.clone()));
                    v
                }
            };
            results.push(result);
        }
        lines.push(format_row(
            &r,
            &engines,
            &results,
            disk.filter(|_| writes(&r)),
        ));
    }
    print_table(&engines, &lines);
    match disk {
        Some(bw) => println!(
            "Write rows show the bytes each engine wrote per second against the disk's \
             sequential write bandwidth, measured before the rows: {:.0} MB/s (`dd \
             if=/dev/zero bs=1M count=1024 oflag=direct conv=fdatasync`).",
            bw / 1e6
        ),
        None => println!("The disk's sequential write bandwidth could not be measured."),
    }
    if let Some(path) = a.value("--json") {
        all.push(serde_json::json!({
            "row": "disk sequential write bandwidth (dd, oflag=direct)",
            "result": { "bytes_per_sec": disk },
        }));
        let text = serde_json::to_string_pretty(&Value::Array(all)).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("{path}: {e}"))?;
        eprintln!("lithify-compare: wrote {path}");
    }
    Ok(())
}

fn headline(metric: Metric, v: &Value) -> Option<f64> {
    let field = match metric {
        Metric::Throughput => "ops_per_sec",
        Metric::WriteAmp => "write_amp",
        Metric::DirBytes => "dir_bytes",
        Metric::PeakRss => "peak_rss_bytes",
        Metric::Commits => "ops_per_sec",
        Metric::WriteAmpWithoutWal => "write_amp",
        Metric::SpaceAmp => "space_amp",
    };
    v.get(field)?.as_f64()
}

/// A result's cell; `disk` is the disk's sequential write bandwidth for
/// a write row, which a throughput cell shows the engine's share of.
fn show(metric: Metric, v: &Value, disk: Option<f64>) -> String {
    if v.get("not_applicable").is_some() {
        return "n/a".into();
    }
    let Some(x) = headline(metric, v) else {
        return "–".into();
    };
    match metric {
        Metric::Throughput => {
            let p99 = v.get("p99_us").and_then(Value::as_f64).unwrap_or(0.0);
            let ops = v.get("ops").and_then(Value::as_f64).unwrap_or(0.0);
            let field = |k: &str| v.get(k).and_then(Value::as_f64);
            let disk_use = match (disk, field("written_bytes"), field("seconds")) {
                (Some(bw), Some(bytes), Some(secs)) if secs > 0.0 && bw > 0.0 => format!(
                    ", disk {:.0} MB/s = {:.0}%",
                    bytes / secs / 1e6,
                    100.0 * bytes / secs / bw
                ),
                _ => String::new(),
            };
            let cell = match v.get("wal_syncs").and_then(Value::as_f64) {
                // Rows with synced writes: how well syncs were shared.
                Some(syncs) if syncs > 0.0 && ops > 0.0 => format!(
                    "{:.1}K ops/s, p99 {:.1} µs, {:.2} syncs/write",
                    x / 1000.0,
                    p99,
                    syncs / ops
                ),
                _ => format!("{:.0}K ops/s, p99 {:.1} µs", x / 1000.0, p99),
            };
            cell + &disk_use
        }
        Metric::WriteAmp => {
            let sa = v.get("space_amp").and_then(Value::as_f64).unwrap_or(0.0);
            let user = v.get("user_bytes").and_then(Value::as_f64).unwrap_or(0.0);
            let part = |k: &str| v.get(k).and_then(Value::as_f64).map(|b| b / user);
            match (
                part("wal_bytes"),
                part("flush_bytes"),
                part("compaction_bytes"),
            ) {
                (Some(w), Some(f), Some(c)) if user > 0.0 => format!(
                    "WA {x:.2}, engine count WAL {w:.2} + flush {f:.2} + compaction {c:.2} (space amp {sa:.2})"
                ),
                _ => format!("WA {x:.2} (space amp {sa:.2})"),
            }
        }
        Metric::DirBytes => format!("{:.1} MB", x / 1e6),
        Metric::WriteAmpWithoutWal => {
            let wal = v.get("wal_amp").and_then(Value::as_f64).unwrap_or(0.0);
            format!("WA {x:.2} without WAL (WAL {wal:.2})")
        }
        Metric::SpaceAmp => {
            let bytes = v.get("dir_bytes").and_then(Value::as_f64).unwrap_or(0.0);
            format!("{x:.2} ({:.0} MB)", bytes / 1e6)
        }
        Metric::PeakRss => format!("{:.0} MB", x / 1e6),
        Metric::Commits => {
            let p99 = v.get("p99_us").and_then(Value::as_f64).unwrap_or(0.0);
            let rate = v
                .get("conflict_rate")
                .and_then(Value::as_f64)
                .unwrap_or(0.0);
            format!(
                "{:.1}K commits/s, {:.3}% conflicts, p99 {:.1} µs",
                x / 1000.0,
                rate * 100.0,
                p99
            )
        }
    }
}

fn format_row(
    r: &Row,
    engines: &[String],
    results: &[Option<Value>],
    disk: Option<f64>,
) -> Vec<String> {
    // The row's part of a multi-phase result.
    let results: Vec<Option<Value>> = results
        .iter()
        .map(|v| match (v, r.phase) {
            (Some(v), Some(p)) if v.get("not_applicable").is_none() => v.get(p).cloned(),
            (v, _) => v.clone(),
        })
        .collect();
    let mut cells = vec![r.name.clone()];
    for v in &results {
        cells.push(v.as_ref().map_or("–".into(), |v| show(r.metric, v, disk)));
    }
    let value_of = |name: &str| {
        let i = engines.iter().position(|e| e == name)?;
        headline(r.metric, results[i].as_ref()?)
    };
    let ours = value_of("lithify");
    for other in ["rocksdb", "fjall"] {
        if !engines.iter().any(|e| e == other) {
            continue;
        }
        cells.push(match (ours, value_of(other)) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
            _ => "–".into(),
        });
    }
    cells
}

fn print_table(engines: &[String], lines: &[Vec<String>]) {
    let mut header = vec!["workload".to_owned()];
    header.extend(engines.iter().cloned());
    for other in ["rocksdb", "fjall"] {
        if engines.iter().any(|e| e == other) {
            header.push(format!("lithify / {other}"));
        }
    }
    println!("| {} |", header.join(" | "));
    println!("|{}", "---|".repeat(header.len()));
    for l in lines {
        println!("| {} |", l.join(" | "));
    }
    println!(
        "\nRatios are lithify's number over the other engine's: above 1 is better for \
         throughput, below 1 is better for write amplification, bytes and memory."
    );
    println!(
        "lithify runs with `release_memory_after_jobs` on (malloc_trim after background \
         jobs; the library's default is off), as `lithify bench` does."
    );
}
