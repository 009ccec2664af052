//! `cargo xtask cluster`: one writer, two compaction workers and one read
//! replica, each its own `lithify` process, talking through an S3 server
//! (s3s-fs) on loopback; the writer pinned to core 0, everything else to
//! core 1. Measured against the same writer alone on core 0, doing its own
//! compactions, and against that writer with compactions off (the floor:
//! the least CPU per key any offload could leave it):
//!
//! * fill throughput and the writer's CPU per operation;
//! * the replica's lag: from the writer's log line for a flush to the
//!   replica's first version holding that flush's table (both stamped on
//!   this machine's clock);
//! * requests and bytes sent to the store per user byte (writer and
//!   workers), and the page caches' hit rates.
//!
//! Writes `target/cluster/report.md` and prints it.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead as _, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::{Result, cargo, root, run};

/// The S3 server CI installs (`.ci/run`), in the same place.
const S3S_VERSION: &str = "0.14.1";

struct Settings {
    num: u64,
    write_buffer_size: Option<String>,
    baseline: bool,
}

fn parse(args: &[String]) -> Result<Settings> {
    let mut s = Settings {
        num: 10_000_000,
        write_buffer_size: None,
        baseline: true,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--num" => {
                s.num = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .ok_or("--num needs a number of keys")?;
            }
            "--write-buffer-size" => {
                s.write_buffer_size =
                    Some(it.next().ok_or("--write-buffer-size needs bytes")?.clone());
            }
            "--no-baseline" => s.baseline = false,
            other => return Err(format!("cluster: unknown argument {other}")),
        }
    }
    Ok(s)
}

/// A child process killed when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

/// The s3s-fs binary: `LITHIFY_S3FS_BIN`, CI's cache, or installed there.
fn s3s_binary() -> Result<PathBuf> {
    if let Ok(p) = std::env::var("LITHIFY_S3FS_BIN") {
        return Ok(PathBuf::from(p));
    }
    let home = std::env::var("HOME").map_err(|_| "no HOME")?;
    let dir = Path::new(&home).join(format!(".cache/lithify-ci/s3s-{S3S_VERSION}"));
    let bin = dir.join("bin/s3s-fs");
    if !bin.exists() {
        run(cargo()
            .args(["install", "-q", "--locked"])
            .arg(format!("s3s-fs@{S3S_VERSION}"))
            .args(["--features", "binary", "--root"])
            .arg(&dir))?;
    }
    Ok(bin)
}

fn pinned(core: &str, program: &Path) -> Command {
    let mut c = Command::new("taskset");
    c.arg("-c").arg(core).arg(program);
    c.env("AWS_ACCESS_KEY_ID", "lithify")
        .env("AWS_SECRET_ACCESS_KEY", "lithify-secret");
    c
}

/// Where a writer run's compactions happen.
#[derive(Clone, Copy)]
enum Compactions {
    /// On the writer's own core (the baseline).
    Here,
    /// On the workers (`--remote-compaction`).
    Workers,
    /// Nowhere (`--disable-auto-compactions`): the writer's CPU with no
    /// compaction at all, the floor any offload can reach.
    Off,
}

/// What a writer run printed.
#[derive(Default, Debug)]
struct WriterRun {
    ops_per_sec: f64,
    seconds: f64,
    cpu_seconds: f64,
    /// The wait for the compactions the fill left (`waitforcompaction`).
    wait_seconds: f64,
    wait_cpu_seconds: f64,
    remote: String,
    stalls: String,
    bucket: BucketLine,
    /// The log line of each flush: (time, table numbers).
    flushes: Vec<(u128, Vec<u64>)>,
}

/// The figures of one `BucketStats` line.
#[derive(Default, Debug, Clone, Copy)]
struct BucketLine {
    requests: u64,
    mb_up: f64,
    mb_down: f64,
    hit_rate: f64,
}

/// Parses "N requests (...), X MB up, Y MB down, ...; page cache hit rate Z %".
fn bucket_line(text: &str) -> Option<BucketLine> {
    let requests = text
        .split(" requests")
        .next()?
        .rsplit(' ')
        .next()?
        .parse()
        .ok()?;
    let number_before = |marker: &str| -> Option<f64> {
        text.split(marker).next()?.rsplit(' ').next()?.parse().ok()
    };
    Some(BucketLine {
        requests,
        mb_up: number_before(" MB up")?,
        mb_down: number_before(" MB down")?,
        hit_rate: number_before(" % (")?,
    })
}

fn run_writer(
    lithify: &Path,
    work: &Path,
    url: &str,
    prefix: &str,
    s: &Settings,
    compactions: Compactions,
) -> Result<WriterRun> {
    let db = work.join(format!("{prefix}-db"));
    let mut c = pinned("0", lithify);
    c.args([
        "-v",
        "bench",
        "--benchmarks",
        "fillrandom,waitforcompaction",
        "--num",
    ])
    .arg(s.num.to_string())
    .arg("--db")
    .arg(&db)
    .args([
        "--bucket",
        url,
        "--bucket-prefix",
        prefix,
        "--manifest-in-bucket",
    ]);
    if let Some(w) = &s.write_buffer_size {
        c.args(["--write-buffer-size", w]);
    }
    match compactions {
        Compactions::Here => {}
        Compactions::Workers => {
            c.arg("--remote-compaction");
        }
        Compactions::Off => {
            c.args(["--disable-auto-compactions", "true"]);
        }
    }
    eprintln!("xtask: running {c:?}");
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("starting the writer: {e}"))?;
    // Each flush's log line, stamped as it arrives.
    let flushes = Arc::new(Mutex::new(Vec::new()));
    let stderr = child.stderr.take().expect("piped");
    let log =
        fs::File::create(work.join(format!("{prefix}-writer.err"))).map_err(|e| e.to_string())?;
    let sink = Arc::clone(&flushes);
    let reader = std::thread::spawn(move || {
        use std::io::Write as _;
        let mut log = log;
        for line in BufReader::new(stderr)
            .lines()
            .map_while(std::result::Result::ok)
        {
            let at = now_ms();
            let _ = writeln!(log, "{at} {line}");
            if line.contains("event=\"flush_completed\"")
                && let Some(files) = line
                    .split(" files [")
                    .nth(1)
                    .and_then(|r| r.split(']').next())
            {
                let numbers = files.split(", ").filter_map(|n| n.parse().ok()).collect();
                sink.lock().expect("not poisoned").push((at, numbers));
            }
        }
    });
    let stdout = child.stdout.take().expect("piped");
    let text: Vec<String> = BufReader::new(stdout)
        .lines()
        .map_while(std::result::Result::ok)
        .collect();
    let status = child.wait().map_err(|e| e.to_string())?;
    let _ = reader.join();
    fs::write(work.join(format!("{prefix}-writer.out")), text.join("\n"))
        .map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!(
            "the writer failed ({status}); see {}",
            work.display()
        ));
    }
    let mut r = WriterRun {
        flushes: std::mem::take(&mut *flushes.lock().expect("not poisoned")),
        ..WriterRun::default()
    };
    let seconds_of = |rest: &str| -> f64 {
        let fields: Vec<&str> = rest.split_whitespace().collect();
        fields
            .iter()
            .position(|f| *f == "s,")
            .and_then(|i| fields[i - 1].parse().ok())
            .unwrap_or(0.0)
    };
    let mut in_wait = false;
    for line in &text {
        if let Some(rest) = line.strip_prefix("fillrandom") {
            let fields: Vec<&str> = rest.split_whitespace().collect();
            r.ops_per_sec = fields
                .iter()
                .position(|f| *f == "ops/sec;")
                .and_then(|i| fields[i - 1].parse().ok())
                .unwrap_or(0.0);
            r.seconds = seconds_of(rest);
        } else if let Some(rest) = line.strip_prefix("waitforcompaction") {
            in_wait = true;
            r.wait_seconds = seconds_of(rest);
        } else if let Some(rest) = line.trim_start().strip_prefix("cpu: ") {
            let cpu = rest
                .split(' ')
                .next()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.0);
            if in_wait {
                r.wait_cpu_seconds = cpu;
            } else {
                r.cpu_seconds = cpu;
            }
        } else if line.starts_with("Remote compactions: ") {
            r.remote = line.trim_start_matches("Remote compactions: ").to_owned();
        } else if line.starts_with("Stalls: ") {
            r.stalls = line.trim_start_matches("Stalls: ").to_owned();
        } else if let Some(rest) = line.strip_prefix("Bucket ") {
            r.bucket = rest
                .split_once(": ")
                .and_then(|(_, b)| bucket_line(b))
                .unwrap_or_default();
        }
    }
    Ok(r)
}

fn percentile(sorted: &[u128], p: f64) -> u128 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

pub(crate) fn cluster(args: &[String]) -> Result {
    let s = parse(args)?;
    run(cargo().args(["build", "--release", "--bin", "lithify"]))?;
    let lithify = root().join("target/release/lithify");
    let s3s = s3s_binary()?;
    let work = root().join("target/cluster");
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(work.join("s3/lithify")).map_err(|e| e.to_string())?;
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?
        .port();
    let _server = Killed(
        pinned("1", &s3s)
            .args(["--host", "127.0.0.1", "--port"])
            .arg(port.to_string())
            .args(["--access-key", "lithify", "--secret-key", "lithify-secret"])
            .arg(work.join("s3"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting {}: {e}", s3s.display()))?,
    );
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if started.elapsed() > Duration::from_secs(10) {
            return Err("s3s-fs did not start".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let url = format!("http://127.0.0.1:{port}/lithify");

    let alone = if s.baseline {
        Some(run_writer(
            &lithify,
            &work,
            &url,
            "alone",
            &s,
            Compactions::Here,
        )?)
    } else {
        None
    };
    let floor = if s.baseline {
        Some(run_writer(
            &lithify,
            &work,
            &url,
            "floor",
            &s,
            Compactions::Off,
        )?)
    } else {
        None
    };

    let prefix = "cluster";
    let spawn_to = |mut c: Command, out: &str| -> Result<Killed> {
        let file = fs::File::create(work.join(out)).map_err(|e| e.to_string())?;
        Ok(Killed(
            c.stdout(file)
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("{c:?}: {e}"))?,
        ))
    };
    let mut workers = Vec::new();
    for name in ["w1", "w2"] {
        let mut c = pinned("1", &lithify);
        c.args([
            "compaction-worker",
            "--bucket",
            &url,
            "--prefix",
            prefix,
            "--name",
            name,
        ]);
        workers.push(spawn_to(c, &format!("{name}.out"))?);
    }
    // The replica needs the database to exist: it starts after the
    // writer's first flush (a thread waits for the MANIFEST).
    let replica_out = work.join("replica.out");
    let replica: Arc<Mutex<Option<Killed>>> = Arc::new(Mutex::new(None));
    let starter = {
        let replica = Arc::clone(&replica);
        let (lithify, url, s3_dir) = (
            lithify.clone(),
            url.clone(),
            work.join("s3/lithify").join(prefix),
        );
        let out = replica_out.clone();
        std::thread::spawn(move || {
            let until = Instant::now() + Duration::from_secs(600);
            while Instant::now() < until && !s3_dir.join("CURRENT").exists() {
                std::thread::sleep(Duration::from_millis(20));
            }
            let mut c = pinned("1", &lithify);
            c.args([
                "replica",
                "--bucket",
                &url,
                "--prefix",
                "cluster",
                "--catch-up-ms",
                "50",
            ]);
            if let Ok(file) = fs::File::create(&out)
                && let Ok(child) = c.stdout(file).stderr(Stdio::null()).spawn()
            {
                *replica.lock().expect("not poisoned") = Some(Killed(child));
            }
        })
    };
    let together = run_writer(&lithify, &work, &url, prefix, &s, Compactions::Workers)?;
    let _ = starter.join();
    // Let the replica see the last flush, then stop everything.
    std::thread::sleep(Duration::from_millis(500));
    drop(replica.lock().expect("not poisoned").take());
    drop(workers);

    // Replica lag: each flushed table, from the writer's line to the
    // replica's first version holding it.
    let mut seen: BTreeMap<u64, u128> = BTreeMap::new();
    let text = fs::read_to_string(&replica_out).unwrap_or_default();
    for line in text.lines() {
        let mut words = line.split(' ');
        let Some(at) = words.next().and_then(|w| w.parse::<u128>().ok()) else {
            continue;
        };
        if let Some(new) = line.split(" new ").nth(1) {
            for n in new.split(',').filter_map(|n| n.parse::<u64>().ok()) {
                seen.entry(n).or_insert(at);
            }
        }
    }
    let mut lags: Vec<u128> = together
        .flushes
        .iter()
        .filter_map(|(at, files)| {
            files
                .iter()
                .filter_map(|f| seen.get(f))
                .min()
                .map(|r| r.saturating_sub(*at))
        })
        .collect();
    lags.sort_unstable();

    // The workers' last cumulative bucket line.
    let mut worker_buckets = Vec::new();
    let mut jobs = 0;
    for name in ["w1", "w2"] {
        let text = fs::read_to_string(work.join(format!("{name}.out"))).unwrap_or_default();
        jobs += text.lines().filter(|l| l.starts_with("job ")).count();
        if let Some(b) = text
            .lines()
            .rev()
            .find_map(|l| l.split("bucket so far: ").nth(1))
            .and_then(bucket_line)
        {
            worker_buckets.push(b);
        }
    }

    let user_mb = s.num as f64 * 116.0 / 1e6;
    let mut report = String::new();
    let mut row = |cells: &[String]| report.push_str(&format!("| {} |\n", cells.join(" | ")));
    row(&[
        "".into(),
        "writer alone (core 0)".into(),
        "writer + 2 workers + replica".into(),
        "ratio".into(),
    ]);
    row(&["---".into(), "---".into(), "---".into(), "---".into()]);
    let a = alone.as_ref();
    let fmt_ratio = |x: f64, y: f64| {
        if x > 0.0 {
            format!("{:.2}x", y / x)
        } else {
            "-".into()
        }
    };
    row(&[
        format!("fillrandom {} keys (ops/s)", s.num),
        a.map_or("-".into(), |a| format!("{:.0}", a.ops_per_sec)),
        format!("{:.0}", together.ops_per_sec),
        a.map_or("-".into(), |a| {
            fmt_ratio(a.ops_per_sec, together.ops_per_sec)
        }),
    ]);
    let per_op = |r: &WriterRun| r.cpu_seconds * 1e6 / s.num as f64;
    row(&[
        "writer CPU during the fill (us/op)".into(),
        a.map_or("-".into(), |a| {
            format!("{:.3} ({:.1} s)", per_op(a), a.cpu_seconds)
        }),
        format!("{:.3} ({:.1} s)", per_op(&together), together.cpu_seconds),
        a.map_or("-".into(), |a| {
            format!("{:+.0} %", 100.0 * (per_op(&together) / per_op(a) - 1.0))
        }),
    ]);
    if let Some(f) = &floor {
        row(&[
            "writer CPU during the fill with no compaction at all, the floor of any offload (us/op)"
                .into(),
            a.map_or("-".into(), |_| {
                format!("{:.3} ({:.0} ops/s)", per_op(f), f.ops_per_sec)
            }),
            "".into(),
            a.map_or("-".into(), |a| {
                let whole = (a.cpu_seconds + a.wait_cpu_seconds) * 1e6 / s.num as f64;
                format!(
                    "{:+.0} % (against fill and debt: {:+.0} %)",
                    100.0 * (per_op(f) / per_op(a) - 1.0),
                    100.0 * (per_op(f) / whole - 1.0)
                )
            }),
        ]);
    }
    let debt = |r: &WriterRun| {
        format!(
            "{:.1} s, writer CPU {:.1} s",
            r.wait_seconds, r.wait_cpu_seconds
        )
    };
    row(&[
        "then waiting for the compactions the fill left".into(),
        a.map_or("-".into(), debt),
        debt(&together),
        "".into(),
    ]);
    let whole = |r: &WriterRun| (r.cpu_seconds + r.wait_cpu_seconds) * 1e6 / s.num as f64;
    row(&[
        "writer CPU, fill and compactions (us/op)".into(),
        a.map_or("-".into(), |a| format!("{:.3}", whole(a))),
        format!("{:.3}", whole(&together)),
        a.map_or("-".into(), |a| {
            format!("{:+.0} %", 100.0 * (whole(&together) / whole(a) - 1.0))
        }),
    ]);
    let rate = |r: &WriterRun| s.num as f64 / (r.seconds + r.wait_seconds).max(1e-9);
    row(&[
        "keys per second, fill and compactions".into(),
        a.map_or("-".into(), |a| format!("{:.0}", rate(a))),
        format!("{:.0}", rate(&together)),
        a.map_or("-".into(), |a| fmt_ratio(rate(a), rate(&together))),
    ]);
    row(&[
        "compactions".into(),
        a.map_or("-".into(), |_| "on the writer".into()),
        format!("{} ({jobs} worker job lines)", together.remote),
        "".into(),
    ]);
    let total = |w: &BucketLine, others: &[BucketLine]| {
        let up = w.mb_up + others.iter().map(|b| b.mb_up).sum::<f64>();
        let down = w.mb_down + others.iter().map(|b| b.mb_down).sum::<f64>();
        let req = w.requests + others.iter().map(|b| b.requests).sum::<u64>();
        format!(
            "{:.2} up, {:.2} down, {:.2} requests per MB",
            up / user_mb,
            down / user_mb,
            req as f64 / user_mb
        )
    };
    row(&[
        "store traffic per user byte (writer + workers)".into(),
        a.map_or("-".into(), |a| total(&a.bucket, &[])),
        total(&together.bucket, &worker_buckets),
        "".into(),
    ]);
    row(&[
        "page cache hit rate".into(),
        a.map_or("-".into(), |a| format!("{:.1} %", a.bucket.hit_rate)),
        format!(
            "writer {:.1} %, workers {}",
            together.bucket.hit_rate,
            worker_buckets
                .iter()
                .map(|b| format!("{:.1} %", b.hit_rate))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        "".into(),
    ]);
    row(&[
        "stalls".into(),
        a.map_or("-".into(), |a| a.stalls.clone()),
        together.stalls.clone(),
        "".into(),
    ]);
    row(&[
        "replica lag behind a flush (ms)".into(),
        "-".into(),
        format!(
            "p50 {}, p99 {}, max {} ({} of {} flushes seen)",
            percentile(&lags, 0.5),
            percentile(&lags, 0.99),
            lags.last().copied().unwrap_or(0),
            lags.len(),
            together.flushes.len()
        ),
        "".into(),
    ]);
    let path = work.join("report.md");
    fs::write(&path, &report).map_err(|e| e.to_string())?;
    println!("{report}");
    eprintln!("xtask: wrote {} (logs beside it)", path.display());
    Ok(())
}
