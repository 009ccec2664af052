//! Developer tasks for lithify, run as `cargo xtask <task>`.
//!
//! ```text
//! cargo xtask ci                       fmt check, clippy, tests, the facade's API check, calibration check, fuzz smoke, loom, bench smoke, crash loops, cross subset
//! cargo xtask api                      every type in the facade's signatures nameable from it, none exported twice
//! cargo xtask docs                     every crate's docs, warnings denied; the facade's as docs.rs builds them
//! cargo xtask msrv                     the libraries and the CLI checked with the declared rust-version
//! cargo xtask semver                   cargo-semver-checks of every library crate against the recorded API baseline
//! cargo xtask fuzz <target> [--seconds N]
//! cargo xtask fuzz --smoke             every target for a few seconds
//! cargo xtask fuzz --all [--seconds N] every target for N seconds each
//! cargo xtask fuzz --list
//! cargo xtask loom [filter]            loom models (RUSTFLAGS="--cfg loom", release)
//! cargo xtask bench [-- criterion args]
//! cargo xtask bench --smoke            every benchmark once, as a test
//! cargo xtask kafka-compat             check our Kafka log format against kafka-python, both ways
//! cargo xtask lsm-screenshot          the LSM page of a small bench database, as chromium shows it
//! cargo xtask compare [--size small|full] [--engines lithify,rocksdb,fjall] [--workload W]
//!                                      lithify beside rust-rocksdb and fjall (own workspace)
//! cargo xtask compare --workload randomtransaction [--txn optimistic,pessimistic] [--threads 1,4]
//!                                      db_bench's randomtransaction on each transaction database
//! cargo xtask calibrate [--check]     the cost model's calibration table from the compaction simulator
//! cargo xtask cluster [--num N] [--write-buffer-size B] [--no-baseline]
//!                                      a writer, two compaction workers and a replica as processes over s3s-fs, pinned, measured
//! cargo xtask cross [--target aarch64|windows] [--ci]
//!                                      build for ARM Linux and Windows, library tests under qemu-user and wine
//! cargo xtask crash [--kills N] [--simulated N] [--seed S] [--target engine|log|log-txn|bank|both] [--transactional] [--dev]
//!                                      SIGKILL loops of `lithify stress`, MemFs power-cut loop
//! ```
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

mod api;
mod cluster;
mod crash;
mod cross;

pub(crate) type Result<T = ()> = std::result::Result<T, String>;

const USAGE: &str = "usage: cargo xtask <ci|api|docs|msrv|semver|fuzz|loom|bench|kafka-compat|compare|lsm-screenshot|calibrate|crash|cross|cluster> [args]

  ci                            fmt check, clippy -D warnings, cargo test, api, docs, msrv,
                                calibrate --check, kafka-compat, fuzz smoke, loom, bench smoke, crash
                                loops, cross --ci
  api                           the facade builds with `db` alone and `log` alone; on its rustdoc
                                pages (target/doc) every type in a public signature can be named from
                                the facade, and no item is exported twice
  docs                          `cargo doc --no-deps --workspace` with warnings denied, and the
                                facade's docs as docs.rs builds them (all features, each item
                                marked with the feature it needs)
  msrv                          installs the toolchain of the workspace's rust-version and checks
                                the libraries and the binaries with it (target/msrv)
  semver                        cargo-semver-checks (installed when missing) of every library
                                crate against the commit in xtask/semver-baseline: a breaking
                                change fails until it is in CHANGELOG.md and the baseline moves
  fuzz <target> [--seconds N]   run one cargo-fuzz target (default 60 s)
  fuzz --smoke                  run every target for a few seconds
  fuzz --all [--seconds N]      run every target for N seconds each
  fuzz --list                   list the targets
  loom [filter]                 run the loom models of every crate that has them
  bench [-- criterion args]     run the criterion benchmarks
  bench --smoke                 run every benchmark once, as a test
  kafka-compat                  kafka-python (in a venv under target/) validates the logs our tests
                                write, and our tests read batches kafka-python writes; the indexes
                                `lithify log produce` / `log clean` leave are read by Kafka's
                                DumpLogSegments rules (trimmed, entries at batch boundaries)
  lsm-screenshot                writes target/lsm-db (a small fillrandom), its LSM page
                                target/lsm.html (`lithify lsm`) and a headless chromium
                                screenshot target/lsm.png (not part of ci)
  compare [--size small|full] [--engines lithify,rocksdb,fjall]
                                builds compare/ (its own workspace: rust-rocksdb, fjall, lithify;
                                the first build compiles RocksDB, 20+ minutes on 2 cores, and
                                needs libclang), runs db_bench-style workloads one engine process
                                at a time with identical options, prints one table with ratios and
                                writes target/compare.json; --workload W runs only W's rows
  compare --workload randomtransaction [--txn optimistic,pessimistic] [--threads 1,4]
          [--num 300000] [--keys 100000] [--engines ...]
                                db_bench's randomtransaction (not in the default table): commits/s
                                and conflict rate on each engine's optimistic and pessimistic
                                transaction database (fjall: optimistic only), sums verified
  calibrate [--check]           simulates every fixed strategy on every steady workload at the full
                                grid's four sizes (about a minute) and writes the cost model's
                                calibration table, crates/compaction-strategy/testdata/
                                cost_model_calibration.tsv, then runs the model's tests against
                                it; --check fails instead when the table differs
  crash [--kills N] [--simulated N] [--seed S] [--target engine|log|log-txn|bank|both] [--transactional] [--dev]
                                `lithify stress` SIGKILLed N times at random moments (engine and/or
                                log cleaner; log-txn or --transactional: transactional logs; bank:
                                transfers in optimistic/pessimistic transactions, the accounts' sum
                                checked), each run verifying what the killed one left; and a
                                power-cut loop on MemFs of N crash points. Without counts: the CI
                                loop (20 kills each, 10 transactional log kills, 10 bank kills, 300
                                crash points). Release build unless --dev.
  cluster [--num N] [--write-buffer-size B] [--no-baseline]
                                (--no-baseline: only the writer with the workers)
                                one writer (taskset core 0), two `lithify compaction-worker`s, a
                                `lithify replica` and s3s-fs (core 1) as processes, against the
                                writer alone on core 0 doing its own compactions and with
                                compactions off (the floor): fillrandom of N keys (default 10M),
                                the writer's CPU per op, the replica's lag
                                behind each flush, store traffic per user byte, cache hit rates;
                                target/cluster/report.md (not part of ci)
  cross [--target aarch64|windows] [--ci]
                                builds the workspace for aarch64-unknown-linux-gnu and
                                x86_64-pc-windows-gnu and runs every library crate's tests under
                                qemu-aarch64 and wine (needs Debian's gcc-aarch64-linux-gnu,
                                qemu-user, gcc-mingw-w64-x86-64, wine, wine64); --ci: only the
                                format crates (base, vfs, wal, memtable, sstable, offsetmap) and the
                                engine's damage matrix";

/// Seconds each target runs in `fuzz --smoke`.
const FUZZ_SMOKE_SECONDS: u64 = 5;

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("api") => api::api(),
        Some("fuzz") => fuzz(&args[1..]),
        Some("loom") => loom(args.get(1).map(String::as_str)),
        Some("bench") => bench(&args[1..]),
        Some("kafka-compat") => kafka_compat(),
        Some("compare") => compare(&args[1..]),
        Some("lsm-screenshot") => lsm_screenshot(),
        Some("crash") => crash::crash(&args[1..]),
        Some("cross") => cross::cross(&args[1..]),
        Some("cluster") => cluster::cluster(&args[1..]),
        Some("docs") => docs(),
        Some("msrv") => msrv(),
        Some("semver") => semver(),
        Some("calibrate") => calibrate(args.get(1).map(String::as_str) == Some("--check")),
        Some("-h" | "--help" | "help") => {
            eprintln!("{USAGE}");
            Ok(())
        }
        _ => Err(format!("unknown or missing task\n\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `cargo xtask docs`: every crate's docs with warnings denied (a broken
/// or private link, a bad code block), then the facade's as docs.rs
/// builds them: all features, `--cfg docsrs` for `doc_cfg` (nightly-only,
/// so through `RUSTC_BOOTSTRAP` on a stable toolchain).
fn docs() -> Result {
    run(cargo()
        .args(["doc", "-q", "--no-deps", "--workspace"])
        .env("RUSTDOCFLAGS", "-D warnings"))?;
    run(cargo()
        .args(["doc", "-q", "--no-deps", "-p", "lithify", "--all-features"])
        .arg("--target-dir")
        .arg(root().join("target/docsrs"))
        .env("RUSTC_BOOTSTRAP", "1")
        .env("RUSTDOCFLAGS", "--cfg docsrs -D warnings"))
}

/// The workspace's `rust-version`, from its manifest.
fn rust_version() -> Result<String> {
    let manifest = fs::read_to_string(root().join("Cargo.toml")).map_err(|e| e.to_string())?;
    manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = \""))
        .and_then(|l| l.strip_suffix('"'))
        .map(str::to_owned)
        .ok_or_else(|| "no rust-version in the workspace manifest".to_owned())
}

/// `cargo xtask msrv`: the libraries and the binaries built with the
/// oldest Rust the manifests promise. (Tests and benchmarks may use newer
/// dev-dependencies; they are not part of the promise.)
fn msrv() -> Result {
    let version = rust_version()?;
    let installed = Command::new("rustup")
        .args(["toolchain", "list"])
        .output()
        .map_err(|e| format!("could not run rustup: {e}"))?;
    if !String::from_utf8_lossy(&installed.stdout)
        .lines()
        .any(|l| l.starts_with(&format!("{version}-")))
    {
        run(Command::new("rustup").args([
            "toolchain",
            "install",
            &version,
            "--profile",
            "minimal",
        ]))?;
    }
    run(Command::new("rustup")
        .args(["run", &version, "cargo", "check", "-q", "--workspace"])
        .args([
            "--exclude",
            "lithify-benches",
            "--lib",
            "--bins",
            "--target-dir",
        ])
        .arg(root().join("target/msrv")))
}

/// The commit whose public API the library crates must stay compatible
/// with: the API as last released or recorded.
const SEMVER_BASELINE: &str = "xtask/semver-baseline";

/// `cargo xtask semver`: every library crate's public API against the
/// baseline commit, with cargo-semver-checks. A breaking change fails; an
/// intended one is listed in CHANGELOG.md and the baseline is moved to the
/// commit that makes it (a new release line).
fn semver() -> Result {
    let text = fs::read_to_string(root().join(SEMVER_BASELINE))
        .map_err(|e| format!("{SEMVER_BASELINE}: {e}"))?;
    let rev = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .ok_or_else(|| format!("{SEMVER_BASELINE} names no commit"))?
        .to_owned();
    let installed = Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["semver-checks", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed {
        run(cargo().args(["install", "cargo-semver-checks", "--locked"]))?;
    }
    let mut cmd = cargo();
    cmd.args(["semver-checks", "check-release", "--baseline-rev", &rev]);
    for p in library_packages()? {
        cmd.args(["-p", &p]);
    }
    run(&mut cmd)
}

/// Where the cost model's calibration table lives.
const CALIBRATION_TABLE: &str = "crates/compaction-strategy/testdata/cost_model_calibration.tsv";

/// `cargo xtask calibrate`: the full grid from the simulator into the
/// calibration table (or, with `check`, compared with it), then the
/// model's tests.
fn calibrate(check: bool) -> Result {
    let started = Instant::now();
    let out = cargo()
        .args([
            "run",
            "--release",
            "-q",
            "-p",
            "lithify-compaction-sim",
            "--bin",
            "compaction-sim",
            "--",
            "--calibration",
            "full",
        ])
        .current_dir(root())
        .output()
        .map_err(|e| format!("could not run the simulator: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "the simulator failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let table = String::from_utf8(out.stdout).map_err(|e| e.to_string())?;
    let table = format!("{}\n", table.trim_end());
    let path = root().join(CALIBRATION_TABLE);
    eprintln!(
        "xtask: simulated {} cells in {:.1}s",
        table.lines().count().saturating_sub(1),
        started.elapsed().as_secs_f64()
    );
    if check {
        let old = fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        if old != table {
            return Err(format!(
                "{CALIBRATION_TABLE} is stale: run `cargo xtask calibrate`"
            ));
        }
    } else {
        fs::write(&path, &table).map_err(|e| format!("{}: {e}", path.display()))?;
        eprintln!("xtask: wrote {CALIBRATION_TABLE}");
    }
    run(cargo().args([
        "test",
        "-p",
        "lithify-compaction-strategy",
        "--test",
        "cost_model_calibration",
    ]))?;
    run(cargo().args([
        "test",
        "-p",
        "lithify-compaction-sim",
        "--lib",
        "calibration",
    ]))
}

pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}

/// Runs a command in the workspace root, failing on a non-zero exit.
pub(crate) fn run(cmd: &mut Command) -> Result {
    let shown = format!("{cmd:?}");
    eprintln!("xtask: running {shown}");
    let start = Instant::now();
    let status = cmd
        .current_dir(root())
        .status()
        .map_err(|e| format!("could not start {shown}: {e} (is the tool installed?)"))?;
    eprintln!(
        "xtask: {shown} finished in {:.1}s",
        start.elapsed().as_secs_f64()
    );
    if status.success() {
        Ok(())
    } else {
        Err(format!("{shown} failed with {status}"))
    }
}

pub(crate) fn cargo() -> Command {
    Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

/// The `cargo` that builds fuzz targets: the nightly toolchain's when one
/// is installed, otherwise the stable one with `RUSTC_BOOTSTRAP=1`, which
/// lets stable accept the `-Z` sanitizer and coverage flags cargo-fuzz
/// passes (machines that can only fetch one toolchain still fuzz).
fn fuzz_cargo() -> Command {
    if have_nightly() {
        let mut cmd = Command::new("rustup");
        cmd.args(["run", "nightly", "cargo"]);
        cmd
    } else {
        let mut cmd = cargo();
        cmd.env("RUSTC_BOOTSTRAP", "1");
        cmd
    }
}

/// The build directories `cargo xtask ci` removes once the step that
/// alone uses them has passed: a CI machine's disk may be nearly full, and
/// the whole run builds the workspace seven ways (test, docs, MSRV, fuzz,
/// loom, two cross targets), more than 10 GB when kept together.
const CI_STEP_DIRS: &[(&str, &[&str])] = &[
    ("docs", &["target/doc", "target/docsrs"]),
    ("msrv", &["target/msrv"]),
    ("fuzz", &["fuzz/target"]),
    ("loom", &["target/loom"]),
];

/// Removes the build directories of the CI step `step` and says how much
/// room the disk has left.
fn free_step_dirs(step: &str) -> Result {
    for (name, dirs) in CI_STEP_DIRS {
        if *name != step {
            continue;
        }
        for dir in *dirs {
            let path = root().join(dir);
            if path.exists() {
                fs::remove_dir_all(&path)
                    .map_err(|e| format!("removing {}: {e}", path.display()))?;
            }
        }
    }
    report_free_disk(&format!("after {step}"));
    Ok(())
}

/// Prints the room left on the disk of the workspace (`df`), so a CI run
/// that fills the disk shows where.
fn report_free_disk(when: &str) {
    if let Ok(out) = Command::new("df")
        .args(["-h", "--output=avail"])
        .arg(root())
        .output()
        && let Some(avail) = String::from_utf8_lossy(&out.stdout).lines().nth(1)
    {
        eprintln!("xtask: disk {when}: {} available", avail.trim());
    }
}

fn ci() -> Result {
    let start = Instant::now();
    report_free_disk("at the start");
    run(cargo().args(["fmt", "--all", "--", "--check"]))?;
    run(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    // The README's test command.
    match std::env::var("LITHIFY_S3_ENDPOINT") {
        Ok(e) if !e.is_empty() => {
            eprintln!("xtask: the object-store tests run against the S3 server at {e}")
        }
        _ => eprintln!(
            "xtask: LITHIFY_S3_ENDPOINT is unset: the object-store tests run on \
             object_store's local store only (.ci/run starts an S3 server)"
        ),
    }
    run(cargo().args(["test"]))?;
    report_free_disk("after cargo test");
    api::api()?;
    docs()?;
    free_step_dirs("docs")?;
    msrv()?;
    free_step_dirs("msrv")?;
    // The whole calibration grid, not only the small one `cargo test`
    // checks, must still be what the simulator gives.
    calibrate(true)?;
    kafka_compat()?;
    fuzz(&["--smoke".to_string()])?;
    free_step_dirs("fuzz")?;
    loom(None)?;
    free_step_dirs("loom")?;
    bench(&["--smoke".to_string()])?;
    // The short crash loops, on the test build `cargo test` just made.
    crash::crash(&["--dev".to_string()])?;
    // The format crates and the damage matrix on ARM and Windows.
    cross::cross(&["--ci".to_string()])?;
    eprintln!("xtask: ci passed in {:.0}s", start.elapsed().as_secs_f64());
    Ok(())
}

// ---------------------------------------------------------------- fuzz ----

fn fuzz_targets() -> Result<Vec<String>> {
    let dir = root().join("fuzz/fuzz_targets");
    let mut targets = Vec::new();
    for entry in fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.extension().is_some_and(|e| e == "rs")
            && let Some(stem) = path.file_stem()
        {
            targets.push(stem.to_string_lossy().into_owned());
        }
    }
    targets.sort();
    Ok(targets)
}

/// Whether a nightly toolchain is installed.
fn have_nightly() -> bool {
    Command::new("rustup")
        .args(["run", "nightly", "rustc", "--version"])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn ensure_cargo_fuzz() -> Result {
    let installed = fuzz_cargo()
        .args(["fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed {
        eprintln!("xtask: cargo-fuzz is missing; installing it");
        run(cargo().args(["install", "cargo-fuzz", "--locked"]))?;
    }
    Ok(())
}

fn fuzz(args: &[String]) -> Result {
    let mut seconds: Option<u64> = None;
    let mut smoke = false;
    let mut all = false;
    let mut list = false;
    let mut target = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--smoke" => smoke = true,
            "--all" => all = true,
            "--list" => list = true,
            "--seconds" => {
                let v = it.next().ok_or("--seconds needs a value")?;
                seconds = Some(v.parse().map_err(|_| format!("bad --seconds {v}"))?);
            }
            t if !t.starts_with('-') && target.is_none() => target = Some(t.to_string()),
            other => return Err(format!("unknown fuzz argument {other}\n\n{USAGE}")),
        }
    }
    let targets = fuzz_targets()?;
    if list {
        for t in &targets {
            println!("{t}");
        }
        return Ok(());
    }
    let (chosen, secs) = if smoke {
        (targets.clone(), seconds.unwrap_or(FUZZ_SMOKE_SECONDS))
    } else if all {
        (targets.clone(), seconds.unwrap_or(60))
    } else {
        let t = target.ok_or_else(|| format!("which target? one of: {}", targets.join(", ")))?;
        if !targets.contains(&t) {
            return Err(format!(
                "no fuzz target {t}; targets: {}",
                targets.join(", ")
            ));
        }
        (vec![t], seconds.unwrap_or(60))
    };
    if !have_nightly() {
        eprintln!("xtask: no nightly toolchain; fuzzing with stable and RUSTC_BOOTSTRAP=1");
    }
    ensure_cargo_fuzz()?;
    let fuzz_dir = root().join("fuzz");
    // One build for every target, then short runs.
    run(fuzz_cargo()
        .args(["fuzz", "build", "--fuzz-dir"])
        .arg(&fuzz_dir))?;
    for t in &chosen {
        let corpus = fuzz_dir.join("corpus").join(t);
        fs::create_dir_all(&corpus).map_err(|e| format!("{}: {e}", corpus.display()))?;
        let seeds = fuzz_dir.join("seeds").join(t);
        let mut cmd = fuzz_cargo();
        cmd.args(["fuzz", "run", "--fuzz-dir"])
            .arg(&fuzz_dir)
            .arg(t)
            .arg(&corpus);
        if seeds.is_dir() {
            cmd.arg(&seeds);
        }
        cmd.arg("--")
            .arg(format!("-max_total_time={secs}"))
            .arg("-rss_limit_mb=2048")
            .arg("-malloc_limit_mb=512");
        run(&mut cmd)?;
    }
    Ok(())
}

/// The library crates: the facade and every workspace crate it depends
/// on, found with `cargo tree`. The tools (CLI, bench, stress, simulator)
/// and the test helpers are not among them.
pub(crate) fn library_packages() -> Result<Vec<String>> {
    let out = cargo()
        .args([
            "tree",
            "-p",
            "lithify",
            "--all-features",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .current_dir(root())
        .output()
        .map_err(|e| format!("could not run cargo tree: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo tree failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let mut packages = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        // Workspace crates are the ones with a path: "name v0.1.0 (/...)".
        if line.contains(" (/")
            && let Some(name) = line.split_whitespace().next()
            && !packages.iter().any(|p| p == name)
        {
            packages.push(name.to_string());
        }
    }
    Ok(packages)
}

// ---------------------------------------------------------------- loom ----

/// Packages whose sources mention `cfg(loom)` tests.
fn loom_packages() -> Result<Vec<String>> {
    let mut packages = Vec::new();
    let crates = root().join("crates");
    let mut dirs: Vec<PathBuf> = fs::read_dir(&crates)
        .map_err(|e| format!("{}: {e}", crates.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    dirs.sort();
    for dir in dirs {
        if mentions_loom_tests(&dir.join("src")) || mentions_loom_tests(&dir.join("tests")) {
            let manifest = fs::read_to_string(dir.join("Cargo.toml")).map_err(|e| e.to_string())?;
            let name = manifest
                .lines()
                .find_map(|l| l.strip_prefix("name = \""))
                .and_then(|l| l.strip_suffix('"'))
                .ok_or_else(|| format!("no package name in {}", dir.display()))?;
            packages.push(name.to_string());
        }
    }
    Ok(packages)
}

fn mentions_loom_tests(dir: &Path) -> bool {
    let Ok(entries) = fs::read_dir(dir) else {
        return false;
    };
    entries.filter_map(|e| e.ok()).any(|e| {
        let path = e.path();
        if path.is_dir() {
            mentions_loom_tests(&path)
        } else {
            path.extension().is_some_and(|x| x == "rs")
                && fs::read_to_string(&path).is_ok_and(|s| s.contains("loom::model"))
        }
    })
}

fn loom(filter: Option<&str>) -> Result {
    let packages = loom_packages()?;
    if packages.is_empty() {
        return Err("no crate has loom tests".into());
    }
    let mut cmd = cargo();
    cmd.args(["test", "--release", "--target-dir"])
        .arg(root().join("target/loom"));
    for p in &packages {
        cmd.args(["-p", p]);
    }
    // Loom tests are named `loom_*` or live in a `loom` module.
    cmd.args(["--", filter.unwrap_or("loom"), "--test-threads=2"]);
    cmd.env("RUSTFLAGS", "--cfg loom").env(
        "LOOM_MAX_PREEMPTIONS",
        env::var("LOOM_MAX_PREEMPTIONS").unwrap_or_else(|_| "2".into()),
    );
    run(&mut cmd)
}

// --------------------------------------------------------------- bench ----

fn bench(args: &[String]) -> Result {
    if args.first().is_some_and(|a| a == "--smoke") {
        // Criterion benches built as tests run each benchmark once.
        return run(cargo().args(["test", "-p", "lithify-benches", "--benches"]));
    }
    let mut cmd = cargo();
    cmd.args(["bench", "-p", "lithify-benches"]);
    let rest: Vec<&String> = args.iter().skip_while(|a| *a != "--").collect();
    cmd.args(args.iter().take_while(|a| *a != "--"));
    if !rest.is_empty() {
        cmd.args(rest);
    }
    run(&mut cmd)
}

// -------------------------------------------------------- kafka-compat ----

/// The Python packages kafka-python needs to read and write every codec:
/// kafka-python itself, python-snappy (snappy, over cramjam), lz4 (its
/// frame API) and zstandard. Pinned so CI is reproducible.
const KAFKA_COMPAT_PACKAGES: [&str; 4] = [
    "kafka-python==3.0.12",
    "python-snappy==0.7.3",
    "lz4==4.4.5",
    "zstandard==0.25.0",
];

/// The independent codec check of `lithify-kafka-log` (steps 1-4) and
/// `lithify-compaction-logclean` (step 5):
/// 1. our test writes one log per codec into `target/kafka-compat/from-rust`;
/// 2. `check.py validate` walks every batch with kafka-python
///    (`DefaultRecordBatch`: CRC, fields, records) and every index entry;
/// 3. `check.py generate` builds batches in every codec with kafka-python;
/// 4. our (otherwise ignored) test reads them back field by field;
/// 5. our test cleans a log per codec (once, and twice past the delete
///    horizon) into `target/kafka-compat/from-cleaner`, and
///    `check.py validate-cleaned` walks every batch the cleaner wrote;
///    then `check.py generate-txn` writes transactional batches of three
///    interleaved producers with kafka-python and the COMMIT/ABORT markers
///    a broker writes, our (otherwise ignored) test appends and cleans them
///    into `target/kafka-compat/from-python-txn` (as appended, cleaned, and
///    cleaned past the delete horizon), and `check.py validate-txn` reads
///    each with a `read_committed` reader of its own: every key's latest
///    committed record must survive at its offset with its value;
/// 6. `lithify log produce` and `lithify log clean`, run as a user runs
///    them, leave a data directory in `target/kafka-compat/from-cli`, and
///    `check.py validate-cli` reads every batch with kafka-python and every
///    index with our reader of Kafka's `DumpLogSegments` rules: trimmed
///    (whole entries, no preallocated zeros), each entry at a batch
///    boundary.
fn kafka_compat() -> Result {
    let work = root().join("target/kafka-compat");
    let python = kafka_compat_python(&work)?;
    for sub in [
        "from-rust",
        "from-python",
        "from-cleaner",
        "from-cli",
        "from-python-txn",
    ] {
        let d = work.join(sub);
        if d.exists() {
            fs::remove_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
    }
    let script = root().join("crates/kafka-log/tests/kafka_compat/check.py");
    let test = |package: &str, name: &str, ignored: bool| {
        let mut cmd = cargo();
        cmd.args([
            "test",
            "-p",
            package,
            "--test",
            "kafka_compat",
            "--",
            "--exact",
            name,
        ]);
        if ignored {
            cmd.arg("--ignored");
        }
        cmd.env("LITHIFY_KAFKA_COMPAT_DIR", &work);
        run(&mut cmd)
    };
    test("lithify-kafka-log", "writes_a_log_in_every_codec", false)?;
    run(python().arg(&script).arg("validate").arg(&work))?;
    run(python().arg(&script).arg("generate").arg(&work))?;
    test(
        "lithify-kafka-log",
        "reads_batches_written_by_kafka_python",
        true,
    )?;
    // Every batch the log cleaner writes, in every codec.
    test(
        "lithify-compaction-logclean",
        "cleaner_output_in_every_codec",
        false,
    )?;
    run(python().arg(&script).arg("validate-cleaned").arg(&work))?;
    // Transactions: kafka-python's transactional batches and markers
    // encoded by check.py, appended and cleaned by us, read back by a
    // read_committed reader in Python.
    run(python().arg(&script).arg("generate-txn").arg(&work))?;
    test(
        "lithify-compaction-logclean",
        "cleans_transactions_written_by_kafka_python",
        true,
    )?;
    run(python().arg(&script).arg("validate-txn").arg(&work))?;
    // What the command line leaves behind.
    kafka_compat_cli(&work.join("from-cli"))?;
    run(python().arg(&script).arg("validate-cli").arg(&work))?;
    eprintln!("xtask: kafka-compat passed in both directions");
    Ok(())
}

/// Step 6 of [`kafka_compat`]: a log per codec written by `lithify log
/// produce` (several segments, overwrites, tombstones), cleaned by
/// `lithify log clean`, appended to again (the active segment then holds
/// batches and index entries) and opened by a second `log clean`; every
/// command closes its logs as Kafka does at a clean shutdown.
fn kafka_compat_cli(data: &Path) -> Result {
    const NOW: i64 = 1_700_000_000_000;
    const CODECS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];
    const SETTINGS: [&str; 2] = ["segment.bytes=30000", "index.interval.bytes=1024"];
    let lithify = |args: Vec<String>| {
        let mut cmd = cargo();
        cmd.args([
            "run",
            "--quiet",
            "-p",
            "lithify-cli",
            "--bin",
            "lithify",
            "--",
        ]);
        cmd.args(args);
        for s in SETTINGS {
            cmd.args(["--config", s]);
        }
        run(&mut cmd)
    };
    let produce = |codec: &str, records: u32, seed: u32, now: i64, roll: bool| {
        let log = data.join(format!("compat-{codec}-0"));
        let mut args = vec![
            "log".to_string(),
            "produce".into(),
            log.display().to_string(),
        ];
        for (flag, value) in [
            ("--records", records.to_string()),
            ("--keys", "60".into()),
            ("--batch-size", "20".into()),
            ("--value-size", "80".into()),
            ("--seed", seed.to_string()),
            ("--now", now.to_string()),
            ("--config", format!("compression.type={codec}")),
        ] {
            args.extend([flag.to_string(), value]);
        }
        if roll {
            args.push("--roll".into());
        }
        lithify(args)
    };
    let clean = |now: i64| {
        lithify(vec![
            "log".into(),
            "clean".into(),
            data.display().to_string(),
            "--now".into(),
            now.to_string(),
        ])
    };
    for codec in CODECS {
        produce(codec, 3000, 1, NOW, true)?;
    }
    clean(NOW + 100_000)?;
    for codec in CODECS {
        produce(codec, 500, 2, NOW + 200_000, false)?;
    }
    clean(NOW + 300_000)
}

/// A way to run Python with kafka-python and its codec packages importable:
/// a venv under `work`, created and filled on first use; if `venv` is not
/// available, the packages are installed with `pip --target` and found
/// through `PYTHONPATH`.
fn kafka_compat_python(work: &Path) -> Result<Box<dyn Fn() -> Command>> {
    let imports = "import kafka, snappy, lz4.frame, zstandard";
    let works = |mut cmd: Command| {
        cmd.args(["-c", imports])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let system_python = env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let venv_python = work.join("venv/bin/python");
    let site = work.join("site-packages");
    let with_site = {
        let (python, site) = (system_python.clone(), site.clone());
        move || {
            let mut cmd = Command::new(&python);
            cmd.env("PYTHONPATH", &site);
            cmd
        }
    };
    let in_venv = {
        let python = venv_python.clone();
        move || Command::new(&python)
    };
    if works(in_venv()) {
        return Ok(Box::new(in_venv) as Box<dyn Fn() -> Command>);
    }
    if works(with_site()) {
        return Ok(Box::new(with_site));
    }
    fs::create_dir_all(work).map_err(|e| format!("{}: {e}", work.display()))?;
    eprintln!(
        "xtask: installing kafka-python and its codecs into {}/venv",
        work.display()
    );
    let venv_made = run(Command::new(&system_python)
        .args(["-m", "venv"])
        .arg(work.join("venv")))
    .and_then(|()| {
        run(in_venv()
            .args(["-m", "pip", "install", "--quiet"])
            .args(KAFKA_COMPAT_PACKAGES))
    });
    if venv_made.is_ok() && works(in_venv()) {
        return Ok(Box::new(in_venv));
    }
    eprintln!(
        "xtask: no usable venv; installing with pip --target {}",
        site.display()
    );
    run(Command::new(&system_python)
        .args(["-m", "pip", "install", "--quiet", "--upgrade", "--target"])
        .arg(&site)
        .args(KAFKA_COMPAT_PACKAGES))?;
    if works(with_site()) {
        Ok(Box::new(with_site))
    } else {
        Err(format!(
            "kafka-python and its codecs ({imports}) cannot be imported after installing them"
        ))
    }
}

// -------------------------------------------------------------- compare ----

/// `cargo xtask compare`: builds the comparison binary in its own
/// workspace (so that no other task ever compiles RocksDB) and runs its
/// table.
fn compare(args: &[String]) -> Result {
    if find_libclang().is_none() {
        return Err(
            "rust-rocksdb's build runs bindgen, which needs libclang: install it \
                    (Debian/Ubuntu: `apt-get install libclang-dev`) or set LIBCLANG_PATH"
                .into(),
        );
    }
    eprintln!(
        "xtask: building compare/ (the first build compiles RocksDB: 20+ minutes on 2 cores)"
    );
    run(cargo().args([
        "build",
        "--release",
        "--manifest-path",
        "compare/Cargo.toml",
    ]))?;
    let mut table = vec!["table".to_owned()];
    table.extend(args.iter().cloned());
    if !args.iter().any(|a| a == "--json") {
        table.extend(["--json".to_owned(), "target/compare.json".to_owned()]);
    }
    if !args.iter().any(|a| a == "--dir") {
        table.extend(["--dir".to_owned(), "target/compare-db".to_owned()]);
    }
    run(Command::new(root().join("compare/target/release/lithify-compare")).args(&table))
}

/// Where libclang is: `LIBCLANG_PATH`, or the usual library directories.
fn find_libclang() -> Option<PathBuf> {
    if let Ok(p) = env::var("LIBCLANG_PATH") {
        return Some(PathBuf::from(p));
    }
    let mut dirs: Vec<PathBuf> = [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/local/lib",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    if let Ok(entries) = fs::read_dir("/usr/lib") {
        dirs.extend(
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("llvm-"))
                .map(|e| e.path().join("lib")),
        );
    }
    dirs.into_iter().find(|d| {
        fs::read_dir(d).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("libclang.so"))
        })
    })
}

// ------------------------------------------------------- lsm-screenshot ----

/// `cargo xtask lsm-screenshot`: a small database, its LSM page, and a
/// screenshot of the page in headless chromium (to look at it as a user
/// would). The screenshot stays in `target/`, out of git.
fn lsm_screenshot() -> Result {
    let chromium = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .ok_or(
            "no chromium found: install it (Debian/Ubuntu: `apt-get install chromium`), \
             then run this task again",
        )?;
    let target = root().join("target");
    let db = target.join("lsm-db");
    if db.exists() {
        fs::remove_dir_all(&db).map_err(|e| format!("removing {}: {e}", db.display()))?;
    }
    let db_s = db.to_string_lossy().into_owned();
    let lithify = |args: &[&str]| {
        run(cargo()
            .args(["run", "--release", "--bin", "lithify", "--"])
            .args(args))
    };
    lithify(&[
        "bench",
        "--db",
        &db_s,
        "--benchmarks",
        "fillrandom",
        "--num",
        "300000",
        "--write-buffer-size",
        "1048576",
        "--target-file-size-base",
        "1048576",
        "--max-bytes-for-level-base",
        "4194304",
    ])?;
    let html = target.join("lsm.html");
    lithify(&["lsm", "--db", &db_s, "--html", &html.to_string_lossy()])?;
    let png = target.join("lsm.png");
    run(Command::new(chromium).args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        &format!("--screenshot={}", png.display()),
        "--window-size=1400,900",
        &format!("file://{}", html.display()),
    ]))?;
    eprintln!(
        "xtask: the page is {}, its screenshot {}",
        html.display(),
        png.display()
    );
    Ok(())
}
