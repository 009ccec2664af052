//! `cargo xtask crash`: the crash loops, as RocksDB's `db_crashtest.py`
//! runs `db_stress`.
//!
//! * `--kills N`: `lithify stress db` (engine) and `lithify stress log`
//!   (log cleaner; with `--transactional`, or as the `log-txn` target, its
//!   transactional mode: transactions, some aborted, read as a
//!   `read_committed` consumer reads them, every `.txnindex` checked against
//!   the markers) and `lithify stress bank` (the `bank` target: transfers
//!   in optimistic or pessimistic transactions, the accounts' sum checked)
//!   run in a child process with options drawn per run, and
//!   are SIGKILLed at a random moment — most often while the workload runs
//!   (flushes, compactions and cleaning rounds in progress), sometimes
//!   before it starts (during recovery or verification). Each run begins by
//!   reopening what the killed one left and verifying it against the
//!   expected-state file; a failing run, a run that dies on its own, or a
//!   failing final `--verify-only` stops the loop and reports the seeds.
//! * `--simulated N`: the power-cut loop of `crates/lithify/tests/power_cut.rs`
//!   on `MemFs`, N crash points.

use std::fs;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::{Result, cargo, root, run};

/// Kills per target in the CI loop.
const CI_KILLS: u64 = 20;
/// Crash points of the CI power-cut loop.
const CI_SIMULATED: u64 = 300;
/// How long a run may take to reach its workload.
const START_TIMEOUT: Duration = Duration::from_secs(300);

/// The loop's own choices come from lithify's one seedable generator (the
/// same as the `lithify` command's workloads).
type Rng = lithify_base::rand::SplitMix64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Engine,
    Log,
    /// `lithify stress log --transactional`.
    TxnLog,
    /// `lithify stress bank`: transactions between accounts.
    Bank,
}

impl Target {
    fn name(self) -> &'static str {
        match self {
            Target::Engine => "engine",
            Target::Log => "log",
            Target::TxnLog => "log-txn",
            Target::Bank => "bank",
        }
    }

    /// The `lithify stress` command it runs.
    fn command(self) -> &'static str {
        match self {
            Target::Engine => "db",
            Target::Log | Target::TxnLog => "log",
            Target::Bank => "bank",
        }
    }

    /// The directory of its files inside the loop's directory.
    fn data_dir(self, dir: &Path) -> PathBuf {
        dir.join(match self {
            Target::Engine | Target::Bank => "db",
            Target::Log | Target::TxnLog => "data",
        })
    }
}

pub(crate) fn crash(args: &[String]) -> Result {
    let mut kills = None;
    let mut simulated = None;
    let mut seed = None;
    let mut targets = vec![Target::Engine, Target::Log];
    let mut dev = false;
    let mut transactional = false;
    let mut it = args.iter();
    let number = |flag: &str, v: Option<&String>| -> Result<u64> {
        let v = v.ok_or_else(|| format!("{flag} needs a value"))?;
        v.parse().map_err(|_| format!("bad {flag} {v}"))
    };
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--kills" => kills = Some(number("--kills", it.next())?),
            "--simulated" => simulated = Some(number("--simulated", it.next())?),
            "--seed" => seed = Some(number("--seed", it.next())?),
            "--dev" => dev = true,
            "--transactional" => transactional = true,
            "--target" => {
                targets = match it.next().map(String::as_str) {
                    Some("engine") => vec![Target::Engine],
                    Some("log") => vec![Target::Log],
                    Some("log-txn") => vec![Target::TxnLog],
                    Some("bank") => vec![Target::Bank],
                    Some("both") => vec![Target::Engine, Target::Log],
                    other => {
                        return Err(format!(
                            "--target engine|log|log-txn|bank|both, not {other:?}"
                        ));
                    }
                }
            }
            other => return Err(format!("unknown crash argument {other}")),
        }
    }
    // The CI loops: every target, and half as many transactional log
    // and bank runs.
    let ci = kills.is_none() && simulated.is_none();
    if ci {
        kills = Some(CI_KILLS);
        simulated = Some(CI_SIMULATED);
        if !targets.contains(&Target::TxnLog) && targets.contains(&Target::Log) {
            targets.push(Target::TxnLog);
        }
        if !targets.contains(&Target::Bank) && targets.contains(&Target::Engine) {
            targets.push(Target::Bank);
        }
    }
    if transactional {
        for t in &mut targets {
            if *t == Target::Log {
                *t = Target::TxnLog;
            }
        }
        targets.dedup();
    }
    let seed = seed.unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    eprintln!(
        "xtask: crash loops with seed {seed} (repeat with --seed {seed}); {} build",
        if dev { "dev" } else { "release" }
    );
    let start = Instant::now();
    if let Some(n) = kills.filter(|&n| n > 0) {
        let bin = build_cli(dev)?;
        for &t in &targets {
            let n = if ci && matches!(t, Target::TxnLog | Target::Bank) {
                n / 2
            } else {
                n
            };
            kill_loop(&bin, t, n, seed)?;
        }
    }
    if let Some(n) = simulated.filter(|&n| n > 0) {
        power_cut_loop(n, seed, dev)?;
    }
    eprintln!(
        "xtask: crash loops passed in {:.0}s (seed {seed})",
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

fn build_cli(dev: bool) -> Result<PathBuf> {
    let mut cmd = cargo();
    cmd.args(["build", "-p", "lithify-cli", "--bin", "lithify"]);
    if !dev {
        cmd.arg("--release");
    }
    run(&mut cmd)?;
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"));
    Ok(target_dir
        .join(if dev { "debug" } else { "release" })
        .join("lithify"))
}

/// The command of one run: the target's stress command with options drawn
/// from `rng` (as db_crashtest.py varies options between runs).
fn stress_command(bin: &Path, target: Target, dir: &Path, run_seed: u64, rng: &mut Rng) -> Command {
    let mut cmd = Command::new(bin);
    let command = match target {
        Target::Engine => "db",
        Target::Bank => "bank",
        Target::Log | Target::TxnLog => "log",
    };
    let mut args: Vec<String> = vec![
        "stress".into(),
        command.into(),
        target.data_dir(dir).display().to_string(),
        "--seed".into(),
        run_seed.to_string(),
    ];
    if matches!(target, Target::Engine | Target::Bank) {
        // Runs end by being killed.
        args.extend(["--ops-per-thread".into(), "100000000".into()]);
    }
    match target {
        Target::Engine => {
            args.extend(["--keys".into(), "10000".into()]);
            let mut flag = |name: &str, value: &str| {
                args.push(format!("--{name}"));
                args.push(value.to_string());
            };
            flag("threads", rng.pick::<&str>(&["2", "4", "8"]));
            flag("sync-percent", rng.pick::<&str>(&["0", "5", "10", "50"]));
            if rng.below(4) == 0 {
                flag("manual-wal-flush", "true");
            }
            flag(
                "write-buffer-size",
                rng.pick::<&str>(&["65536", "262144", "524288", "1048576"]),
            );
            flag(
                "target-file-size-base",
                rng.pick::<&str>(&["65536", "262144"]),
            );
            flag(
                "max-bytes-for-level-base",
                rng.pick::<&str>(&["262144", "1048576"]),
            );
            flag(
                "level0-file-num-compaction-trigger",
                rng.pick::<&str>(&["2", "4"]),
            );
            flag("block-size", rng.pick::<&str>(&["256", "4096"]));
            flag(
                "block-restart-interval",
                rng.pick::<&str>(&["1", "4", "16"]),
            );
            flag("max-background-jobs", rng.pick::<&str>(&["1", "2", "4"]));
            flag("subcompactions", rng.pick::<&str>(&["1", "2"]));
            flag(
                "strategy",
                rng.pick::<&str>(&[
                    "leveled",
                    "leveled",
                    "major-only",
                    "two-tier",
                    "two-tier:write-mostly",
                    "two-tier:read-mostly-few",
                    "adaptive",
                ]),
            );
            flag(
                "compaction-pri",
                rng.pick::<&str>(&["0", "1", "2", "3", "4"]),
            );
            flag("compression-type", rng.pick::<&str>(&["none", "zstd"]));
            flag("flush-one-in", rng.pick::<&str>(&["500", "2000", "20000"]));
            flag("compact-range-one-in", rng.pick::<&str>(&["2000", "10000"]));
            flag("wal-compression", rng.pick::<&str>(&["none", "lz4"]));
            // Key-value separation in half the runs: blob files are cut by
            // the kill like every other file.
            if rng.below(2) == 0 {
                flag("enable-blob-files", "true");
                flag("min-blob-size", rng.pick::<&str>(&["0", "64", "512"]));
                flag("blob-file-size", rng.pick::<&str>(&["65536", "1048576"]));
                flag(
                    "blob-compression-type",
                    rng.pick::<&str>(&["none", "lz4", "zstd"]),
                );
                if rng.below(2) == 0 {
                    flag("enable-blob-garbage-collection", "true");
                    flag(
                        "blob-garbage-collection-age-cutoff",
                        rng.pick::<&str>(&["0.25", "0.5", "1.0"]),
                    );
                    flag(
                        "blob-garbage-collection-force-threshold",
                        rng.pick::<&str>(&["0.3", "1.0"]),
                    );
                }
            }
        }
        Target::Bank => {
            let mut flag = |name: &str, value: &str| {
                args.push(format!("--{name}"));
                args.push(value.to_string());
            };
            flag("threads", rng.pick::<&str>(&["2", "4", "8"]));
            flag("kind", rng.pick::<&str>(&["optimistic", "pessimistic"]));
            flag("sync-percent", rng.pick::<&str>(&["0", "10", "50"]));
            flag(
                "write-buffer-size",
                rng.pick::<&str>(&["65536", "262144", "1048576"]),
            );
            flag(
                "target-file-size-base",
                rng.pick::<&str>(&["65536", "262144"]),
            );
        }
        Target::Log | Target::TxnLog => {
            if target == Target::TxnLog {
                args.push("--transactional".into());
                args.extend([
                    "--abort-percent".into(),
                    (*rng.pick(&["10", "30", "60"])).into(),
                ]);
                args.extend([
                    "--txn-batches".into(),
                    (*rng.pick(&["1", "4", "10"])).into(),
                ]);
            }
            let mut config = |name: &str, value: &str| {
                args.push("--config".into());
                args.push(format!("{name}={value}"));
            };
            config(
                "compression.type",
                rng.pick::<&str>(&["none", "gzip", "snappy", "lz4", "zstd"]),
            );
            config(
                "segment.bytes",
                rng.pick::<&str>(&["4096", "16384", "65536"]),
            );
            config("log.cleaner.threads", rng.pick::<&str>(&["1", "2", "3"]));
            config(
                "delete.retention.ms",
                rng.pick::<&str>(&["0", "200", "5000"]),
            );
            config(
                "min.cleanable.dirty.ratio",
                rng.pick::<&str>(&["0.01", "0.1", "0.5"]),
            );
            config(
                "log.cleaner.dedupe.buffer.size",
                rng.pick::<&str>(&["24576", "65536", "1048576"]),
            );
            args.push("--batch-size".into());
            args.push((*rng.pick(&["1", "20", "100"])).into());
        }
    }
    cmd.args(&args);
    cmd
}

fn verify_command(bin: &Path, target: Target, dir: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.args(["stress", target.command()])
        .arg(target.data_dir(dir));
    if target == Target::TxnLog {
        cmd.arg("--transactional");
    }
    cmd.arg("--verify-only");
    cmd
}

/// A running stress process whose stdout lines arrive on a channel.
struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
    stderr: thread::JoinHandle<String>,
}

fn spawn(mut cmd: Command) -> Result<Running> {
    let shown = format!("{cmd:?}");
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("could not start {shown}: {e}"))?;
    let (tx, lines) = mpsc::channel();
    let out = child.stdout.take().ok_or("no stdout")?;
    thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(|l| l.ok()) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut err = child.stderr.take().ok_or("no stderr")?;
    let stderr = thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    Ok(Running {
        child,
        lines,
        stderr,
    })
}

fn kill_loop(bin: &Path, target: Target, kills: u64, seed: u64) -> Result {
    let dir = root()
        .join("target/crash")
        .join(format!("{}-{seed}", target.name()));
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let log_path = dir.join("runs.log");
    let mut log =
        fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let mut rng = Rng::new(
        seed ^ match target {
            Target::Engine => 0xE,
            Target::Log => 0x1,
            Target::TxnLog => 0x7,
            Target::Bank => 0xB,
        },
    );
    let start = Instant::now();
    let mut early = 0;
    let mut finished = 0;
    eprintln!(
        "xtask: {} kill loop: {kills} runs in {} (each run's output in runs.log)",
        target.name(),
        dir.display()
    );
    for i in 0..kills {
        let run_seed = rng.next_u64();
        let cmd = stress_command(bin, target, &dir, run_seed, &mut rng);
        let shown = format!("{cmd:?}");
        let mut running = spawn(cmd)?;
        // One run in eight is killed before its workload starts: during
        // the engine's or the logs' recovery and the verification.
        let before_workload = rng.below(8) == 0;
        let mut output = Vec::new();
        let mut reached = false;
        let deadline = Instant::now() + START_TIMEOUT;
        let kill_at = if before_workload {
            Some(Instant::now() + Duration::from_millis(rng.below(400)))
        } else {
            None
        };
        // Wait for the workload to start (or the early kill time).
        let mut exited = None;
        while !reached {
            let wait_until = kill_at.unwrap_or(deadline).min(deadline);
            let left = wait_until.saturating_duration_since(Instant::now());
            match running.lines.recv_timeout(left) {
                Ok(line) => {
                    reached = line.starts_with("stress: running");
                    output.push(line);
                }
                Err(mpsc::RecvTimeoutError::Timeout) => break,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    // Its stdout closed: it ended (or is ending) by itself.
                    let status = running
                        .child
                        .wait()
                        .map_err(|e| format!("could not wait for {shown}: {e}"))?;
                    exited = Some(status);
                    break;
                }
            }
        }
        if exited.is_none() {
            if reached {
                let max_ms = if target == Target::Engine { 2500 } else { 1500 };
                thread::sleep(Duration::from_millis(rng.below(max_ms)));
            } else if kill_at.is_some() {
                early += 1;
            } else {
                let _ = running.child.kill();
                let _ = running.child.wait();
                return Err(format!(
                    "{} run {i} (run seed {run_seed}) did not start its workload within {}s; \
                     files in {}",
                    target.name(),
                    START_TIMEOUT.as_secs(),
                    dir.display()
                ));
            }
        }
        let status = match exited {
            Some(status) => Some(status),
            None => match running.child.try_wait() {
                Ok(Some(status)) => Some(status),
                Ok(None) => {
                    running
                        .child
                        .kill()
                        .map_err(|e| format!("could not kill {shown}: {e}"))?;
                    let _ = running.child.wait();
                    None
                }
                Err(e) => return Err(format!("could not wait for {shown}: {e}")),
            },
        };
        output.extend(running.lines.try_iter());
        let stderr = running.stderr.join().unwrap_or_default();
        let _ = writeln!(
            log,
            "=== run {i} (seed {run_seed}){}\n{shown}\n{}\n{stderr}",
            if status.is_none() { ", killed" } else { "" },
            output.join("\n")
        );
        if let Some(status) = status {
            if !status.success() {
                return Err(format!(
                    "{} crash loop failed at run {i} of {kills} (loop seed {seed}, run seed \
                     {run_seed}): the run exited with {status}:\n{}\n{}\nfiles kept in {}; \
                     repeat the check with `{} stress {} {} --verify-only{}`; repeat the loop \
                     with `cargo xtask crash --kills {kills} --target {} --seed {seed}`",
                    target.name(),
                    output.join("\n"),
                    stderr.trim(),
                    dir.display(),
                    bin.display(),
                    target.command(),
                    target.data_dir(&dir).display(),
                    if target == Target::TxnLog {
                        " --transactional"
                    } else {
                        ""
                    },
                    target.name(),
                ));
            }
            finished += 1;
        }
        if (i + 1) % 50 == 0 || i + 1 == kills {
            eprintln!(
                "xtask: {}: {}/{kills} runs ({} killed before their workload, {} finished on \
                 their own) in {:.0}s",
                target.name(),
                i + 1,
                early,
                finished,
                start.elapsed().as_secs_f64()
            );
        }
    }
    let out = verify_command(bin, target, &dir)
        .output()
        .map_err(|e| format!("could not run the final verification: {e}"))?;
    let _ = writeln!(
        log,
        "=== final verification\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        return Err(format!(
            "{} crash loop (seed {seed}): the final verification failed:\n{}\nfiles kept in {}",
            target.name(),
            String::from_utf8_lossy(&out.stderr).trim(),
            dir.display()
        ));
    }
    eprintln!(
        "xtask: {} kill loop passed: {kills} runs, every one verified what the previous left, \
         in {:.0}s",
        target.name(),
        start.elapsed().as_secs_f64()
    );
    fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(())
}

fn power_cut_loop(points: u64, seed: u64, dev: bool) -> Result {
    let mut cmd = cargo();
    cmd.args(["test", "-p", "lithify", "--test", "power_cut"]);
    if !dev {
        cmd.arg("--release");
    }
    cmd.args(["--", "--nocapture"])
        .env("LITHIFY_POWER_CUT_POINTS", points.to_string())
        .env("LITHIFY_POWER_CUT_SEED", seed.to_string());
    run(&mut cmd).map_err(|e| {
        format!(
            "the power-cut loop failed (seed {seed}; the test's message names the scenario \
             seed): {e}"
        )
    })
}
