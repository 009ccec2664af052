//! Every command with extreme numbers: no panic, no abort, no huge
//! allocation; a number out of its option's range is a usage error (exit
//! code 2, one line) naming the option, the value and the range; a number
//! in range is accepted (the command then stops at a later, cheap error
//! that proves the parse passed, or runs to success on a scratch database
//! or log).
//!
//! The commands and their options are read from `lithify --help`, so a new
//! command, or a new option that takes a value, fails
//! `every_command_and_value_option_is_covered` until it is in a table
//! here.

mod common;

use std::path::Path;
use std::process::Output;

use common::{ok, s};
use lithify::vfs::{FileSystem as _, OsFs};

/// How an option's value is bounded.
#[derive(Debug, Clone, Copy)]
enum Range {
    /// Whole numbers in `lo..=hi`.
    Int(i128, i128),
    /// Finite numbers in `lo..=hi`.
    Float(f64, f64),
    /// Finite numbers above 0, at most `hi`.
    Positive(f64),
}

use Range::{Float, Int, Positive};

const U32: i128 = u32::MAX as i128;
const U64: i128 = u64::MAX as i128;
const OPS: i128 = 1_000_000_000_000;
const EPOCH: i128 = 253_402_300_799_999;

/// Every numeric option (or `<ARG>` positional) of every command, with its
/// range.
const NUMERIC: &[(&str, &str, Range)] = &[
    ("bench", "--num", Int(1, OPS)),
    ("compaction-worker", "--poll-ms", Int(1, 60_000)),
    ("compaction-worker", "--max-jobs", Int(1, 1_000_000_000)),
    ("replica", "--catch-up-ms", Int(1, 3_600_000)),
    ("replica", "--duration-secs", Int(1, 31_536_000)),
    ("bench", "--ops", Int(0, OPS)),
    ("bench", "--repeat", Int(1, 1000)),
    ("bench", "--reads", Int(0, OPS)),
    ("bench", "--key-size", Int(1, 1 << 20)),
    ("bench", "--value-size", Int(0, 64 << 20)),
    ("bench", "--compression-ratio", Float(0.0, 1.0)),
    ("bench", "--threads", Int(1, 256)),
    ("bench", "--seed", Int(0, U64)),
    ("bench", "--seek-nexts", Int(0, 1_000_000)),
    ("bench", "--batch-size", Int(1, 1_000_000)),
    ("bench", "--read-miss-percent", Int(0, 100)),
    ("bench", "--merge-percent", Int(0, 100)),
    ("bench", "--transaction-sets", Int(1, 9999)),
    ("bench", "--transaction-lock-timeout", Int(0, 86_400_000)),
    ("bench", "--write-buffer-size", Int(65536, 64 << 30)),
    ("bench", "--max-write-buffer-number", Int(1, 256)),
    ("bench", "--min-write-buffer-number-to-merge", Int(1, 256)),
    ("bench", "--cache-size", Int(0, 1 << 40)),
    ("bench", "--block-size", Int(1, 256 << 20)),
    ("bench", "--block-restart-interval", Int(1, 65536)),
    ("bench", "--bloom-bits", Float(0.0, 100.0)),
    ("bench", "--compression-level", Int(-131072, 22)),
    ("bench", "--num-levels", Int(2, 64)),
    (
        "bench",
        "--level0-file-num-compaction-trigger",
        Int(1, 1 << 30),
    ),
    ("bench", "--level0-slowdown-writes-trigger", Int(1, 1 << 30)),
    ("bench", "--level0-stop-writes-trigger", Int(1, 1 << 30)),
    ("bench", "--max-bytes-for-level-base", Int(1, 1 << 50)),
    (
        "bench",
        "--max-bytes-for-level-multiplier",
        Positive(1000.0),
    ),
    ("bench", "--target-file-size-base", Int(1, 1 << 40)),
    ("bench", "--target-file-size-multiplier", Int(1, 1000)),
    ("bench", "--max-compaction-bytes", Int(0, 1 << 50)),
    ("bench", "--max-background-jobs", Int(1, 256)),
    ("bench", "--max-subcompactions", Int(1, 256)),
    ("bench", "--compaction-pri", Int(0, 4)),
    ("bench", "--delayed-write-rate", Int(0, 1 << 40)),
    (
        "bench",
        "--soft-pending-compaction-bytes-limit",
        Int(0, 1 << 50),
    ),
    (
        "bench",
        "--hard-pending-compaction-bytes-limit",
        Int(0, 1 << 50),
    ),
    ("bench", "--min-blob-size", Int(0, U64)),
    ("bench", "--blob-file-size", Int(1, 1 << 40)),
    (
        "bench",
        "--blob-garbage-collection-age-cutoff",
        Float(0.0, 1.0),
    ),
    (
        "bench",
        "--blob-garbage-collection-force-threshold",
        Float(0.0, 1.0),
    ),
    ("bench", "--blob-compaction-readahead-size", Int(0, 1 << 30)),
    ("bench", "--blob-cache-size", Int(1, 1 << 40)),
    (
        "bench",
        "--max-write-batch-group-size-bytes",
        Int(1, 1 << 30),
    ),
    ("bench", "--recycle-log-file-num", Int(0, 1024)),
    ("bench", "--adaptive-max-space-amp", Positive(1000.0)),
    ("bench", "--adaptive-max-write-amp", Positive(1000.0)),
    ("bench", "--adaptive-max-read-amp", Positive(1000.0)),
    ("scan", "--limit", Int(0, U64)),
    ("checkpoint", "--log-size-for-flush", Int(0, U64)),
    ("lsm", "--max-steps", Int(0, 1_000_000)),
    ("backup verify", "--id", Int(1, U32)),
    ("backup restore", "--id", Int(1, U32)),
    ("backup purge", "--keep", Int(0, U32)),
    ("dump-sst", "--limit", Int(0, U64)),
    ("dump-blob", "--limit", Int(0, U64)),
    ("log produce", "--records", Int(0, OPS)),
    ("log produce", "--keys", Int(1, OPS)),
    ("log produce", "--value-size", Int(0, 16 << 20)),
    ("log produce", "--tombstone-percent", Int(0, 100)),
    ("log produce", "--batch-size", Int(1, 1_000_000)),
    ("log produce", "--seed", Int(0, U64)),
    ("log produce", "--now", Int(0, EPOCH)),
    ("log produce", "--time-step-ms", Int(0, 86_400_000)),
    ("log produce", "--abort-ratio", Float(0.0, 1.0)),
    ("log produce", "--producers", Int(1, 10_000)),
    ("log produce", "--txn-batches", Int(1, 1_000_000)),
    ("log clean", "--now", Int(0, EPOCH)),
    ("log clean", "--map-memory", Int(1, 1 << 40)),
    ("log clean", "--load-factor", Positive(1.0)),
    ("log bench", "--records", Int(1, OPS)),
    ("log bench", "--keys", Int(1, OPS)),
    ("log bench", "--value-size", Int(0, 16 << 20)),
    ("log bench", "--batch-size", Int(1, 1_000_000)),
    ("log bench", "--tombstone-percent", Int(0, 100)),
    ("log bench", "--seed", Int(0, U64)),
    ("log bench", "--partitions", Int(1, 1024)),
    ("log bench", "--threads", Int(1, 256)),
    ("stress db", "--keys", Int(1, 1 << 24)),
    ("stress db", "--max-value-size", Int(16, 1 << 20)),
    ("stress db", "--threads", Int(1, 256)),
    ("stress db", "--ops-per-thread", Int(0, OPS)),
    ("stress db", "--duration", Float(0.0, 31_536_000.0)),
    ("stress db", "--seed", Int(0, U64)),
    ("stress db", "--sync-percent", Int(0, 100)),
    ("stress db", "--readpercent", Int(0, 100)),
    ("stress db", "--writepercent", Int(0, 100)),
    ("stress db", "--delpercent", Int(0, 100)),
    ("stress db", "--delrangepercent", Int(0, 100)),
    ("stress db", "--batchpercent", Int(0, 100)),
    ("stress db", "--iterpercent", Int(0, 100)),
    ("stress db", "--range-width", Int(1, 1_000_000)),
    ("stress db", "--flush-one-in", Int(0, U64)),
    ("stress db", "--compact-range-one-in", Int(0, U64)),
    ("stress db", "--snapshot-hold-ops", Int(1, 1_000_000_000)),
    ("stress log", "--partitions", Int(1, 256)),
    ("stress log", "--keys", Int(1, 1 << 24)),
    ("stress log", "--max-value-size", Int(16, 1 << 20)),
    ("stress log", "--records", Int(0, OPS)),
    ("stress log", "--duration", Float(0.0, 31_536_000.0)),
    ("stress log", "--rate", Int(0, 1_000_000_000)),
    ("stress log", "--max-segments", Int(0, 1_000_000)),
    ("stress log", "--batch-size", Int(1, 100_000)),
    ("stress log", "--tombstone-percent", Int(0, 100)),
    ("stress log", "--flush-one-in", Int(0, U64)),
    ("stress log", "--seed", Int(0, U64)),
    ("stress log", "--abort-percent", Int(0, 100)),
    ("stress log", "--txn-batches", Int(1, 1_000_000)),
    ("stress bank", "--accounts", Int(2, 1_000_000)),
    ("stress bank", "--initial", Int(0, U64)),
    ("stress bank", "--threads", Int(1, 256)),
    ("stress bank", "--ops-per-thread", Int(0, OPS)),
    ("stress bank", "--sync-percent", Int(0, 100)),
    ("stress bank", "--seed", Int(0, U64)),
];

/// The engine options `stress db` and `stress bank` share with `bench`.
fn engine_options() -> impl Iterator<Item = (&'static str, Range)> {
    NUMERIC
        .iter()
        .skip_while(|(_, o, _)| *o != "--write-buffer-size")
        .take_while(|(c, _, _)| *c == "bench")
        .map(|&(_, o, r)| (o, r))
}

/// Every numeric option, the engine options of the stress commands
/// included.
fn numeric() -> Vec<(&'static str, &'static str, Range)> {
    let mut all = NUMERIC.to_vec();
    for cmd in ["stress db", "stress bank"] {
        all.extend(engine_options().map(|(o, r)| (cmd, o, r)));
    }
    all
}

/// Options (and positionals) taking a value that is not a number.
const NOT_NUMERIC: &[(&str, &[&str])] = &[
    (
        "bench",
        &[
            "--benchmarks",
            "--strategy",
            "--workload",
            "--db",
            "--bucket",
            "--bucket-prefix",
            "--html",
            "--compression-type",
            "--level-compaction-dynamic-level-bytes",
            "--disable-auto-compactions",
            "--enable-blob-files",
            "--blob-compression-type",
            "--enable-blob-garbage-collection",
            "--use-blob-cache",
            "--use-shared-block-and-blob-cache",
            "--manual-wal-flush",
            "--wal-preallocate",
            "--release-memory-after-jobs",
            "--wal-compression",
            "--verify-checksum",
            "--memtable-whole-key-filtering",
            "--merge-operator",
            "--daily-offpeak-time-utc",
            "--scheduled-major-time-utc",
            "--adaptive-objective",
            "--cpu-costs",
        ],
    ),
    (
        "compaction-worker",
        &["--bucket", "--prefix", "--merge-operator", "--name"],
    ),
    ("replica", &["--bucket", "--prefix", "--merge-operator"]),
    ("get", &["<KEY>", "--table"]),
    ("put", &["<KEY>", "<VALUE>", "--table"]),
    ("merge", &["<KEY>", "<OPERAND>", "--table"]),
    ("delete", &["<KEY>", "--table"]),
    ("single-delete", &["<KEY>", "--table"]),
    ("scan", &["--from", "--to", "--table"]),
    ("tables", &[]),
    ("create-table", &["<NAME>"]),
    ("drop-table", &["<NAME>"]),
    ("stats", &["--property", "--table"]),
    (
        "compact",
        &["--from", "--to", "--table", "--bottommost-level-compaction"],
    ),
    ("checkpoint", &["<DEST>"]),
    ("live-files", &["--table"]),
    ("ingest", &["<FILES>", "--table"]),
    ("lsm", &["--html"]),
    ("backup create", &["--backup-dir"]),
    ("backup list", &["--backup-dir"]),
    ("backup verify", &["--backup-dir"]),
    ("backup restore", &["--backup-dir", "<DEST>"]),
    ("backup purge", &["--backup-dir"]),
    ("check", &[]),
    ("dump-sst", &["<FILE>"]),
    ("dump-blob", &["<FILE>"]),
    ("dump-wal", &["<FILE>", "--wal-recovery-mode"]),
    ("dump-manifest", &["<PATH>"]),
    ("log produce", &["<LOG_DIR>", "--config"]),
    ("log dump", &["<PATH>"]),
    ("log check", &["<PATH>"]),
    ("log clean", &["<DATA_DIR>", "--config", "--log-config"]),
    ("log bench", &["--dir", "--config"]),
    ("stress db", &["<DB>", "--expected-state", "--strategy"]),
    (
        "stress log",
        &["<DATA_DIR>", "--expected-state", "--config"],
    ),
    ("stress bank", &["<DB>", "--kind"]),
];

/// Options every database command shares (`DbArgs`), and the engine
/// options' non-numeric ones for the stress commands.
fn shared_not_numeric(cmd: &str) -> Vec<&'static str> {
    let db_args = ["--db", "--wal-recovery-mode", "--merge-operator"];
    let uses_db_args = [
        "get",
        "put",
        "merge",
        "delete",
        "single-delete",
        "scan",
        "tables",
        "create-table",
        "drop-table",
        "stats",
        "compact",
        "checkpoint",
        "live-files",
        "ingest",
        "lsm",
        "backup create",
        "check",
    ];
    let mut v = Vec::new();
    if uses_db_args.contains(&cmd) {
        v.extend(db_args);
    }
    if cmd == "stress db" || cmd == "stress bank" {
        let bench = NOT_NUMERIC.iter().find(|(c, _)| *c == "bench").unwrap().1;
        let engine_from = bench
            .iter()
            .position(|o| *o == "--compression-type")
            .unwrap();
        v.extend(&bench[engine_from..]);
    }
    v
}

/// Runs `lithify` with the libraries' events off.
fn run(args: &[String]) -> Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_lithify"));
    c.args(&args).env("RUST_LOG", "off");
    c.output().expect("the lithify binary runs")
}

/// No panic, no abort, no signal: an exit code and no bug report.
#[track_caller]
fn no_panic(args: &[String], out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.code().is_some(),
        "lithify {args:?} was killed by a signal: {stderr}"
    );
    for bug in [
        "panicked",
        "internal error",
        "RUST_BACKTRACE",
        "memory allocation",
    ] {
        assert!(!stderr.contains(bug), "lithify {args:?}: {stderr}");
    }
    stderr
}

/// The subcommands a help text lists (without `help`).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

/// Every command, nested ones as `"log produce"`.
fn commands() -> Vec<String> {
    let mut all = Vec::new();
    for c in subcommands(&ok(&["--help"])) {
        let nested = subcommands(&ok(&[&c, "--help"]));
        if nested.is_empty() {
            all.push(c);
        } else {
            all.extend(nested.into_iter().map(|n| format!("{c} {n}")));
        }
    }
    all
}

/// `lithify CMD --help`.
fn help(cmd: &str) -> String {
    let mut args: Vec<&str> = cmd.split(' ').collect();
    args.push("--help");
    ok(&args)
}

/// The options taking a value (`--name`) and the positionals (`<NAME>`) a
/// help text lists, each with its help text.
fn value_options(help: &str) -> Vec<(String, String)> {
    let mut found: Vec<(String, String)> = Vec::new();
    let mut section = "";
    for line in help.lines() {
        if !line.starts_with(' ') {
            section = line;
            continue;
        }
        let t = line.trim_start();
        let indent = line.len() - t.len();
        let starts_item =
            indent <= 6 && (t.starts_with('-') || t.starts_with('<') || t.starts_with('['));
        if starts_item && section.starts_with("Arguments") {
            let name = t.split_whitespace().next().unwrap_or("");
            let name = name.trim_matches(|c| c == '[' || c == ']' || c == '.');
            let name = format!("<{}>", name.trim_matches(|c| c == '<' || c == '>'));
            found.push((name, t.to_owned()));
        } else if starts_item {
            let mut words = t.split_whitespace();
            let mut first = words.next().unwrap_or("");
            if first.ends_with(',') {
                first = words.next().unwrap_or("");
            }
            let takes_value = words.next().is_some_and(|w| w.starts_with('<'));
            if takes_value {
                found.push((first.to_owned(), t.to_owned()));
            } else {
                found.push((String::new(), String::new()));
            }
        } else if let Some(last) = found.last_mut() {
            last.1.push(' ');
            last.1.push_str(t);
        }
    }
    found.retain(|(n, _)| !n.is_empty());
    found
}

#[test]
fn every_command_and_value_option_is_covered() {
    let numeric = numeric();
    let commands = commands();
    let known: Vec<&str> = NOT_NUMERIC.iter().map(|(c, _)| *c).collect();
    for cmd in &commands {
        assert!(
            known.contains(&cmd.as_str()),
            "`lithify {cmd}` is not in tests/numbers.rs: list its options there"
        );
        let h = help(cmd);
        let listed = value_options(&h);
        let mut not_numeric: Vec<&str> = NOT_NUMERIC
            .iter()
            .find(|(c, _)| c == cmd)
            .map(|(_, o)| o.to_vec())
            .unwrap_or_default();
        not_numeric.extend(shared_not_numeric(cmd));
        for (name, text) in &listed {
            let range = numeric
                .iter()
                .find(|(c, o, _)| c == cmd && o == name)
                .map(|(_, _, r)| *r);
            match range {
                Some(r) => {
                    let want = match r {
                        Int(0, U64) => "[range: any u64]".to_owned(),
                        Int(lo, hi) => format!("[range: {lo}..={hi}"),
                        Float(lo, hi) => format!("[range: {lo}..={hi}"),
                        Positive(hi) => format!("[range: above 0, at most {hi}]"),
                    };
                    assert!(
                        text.contains(&want),
                        "`lithify {cmd} {name}`'s help does not state {want}: {text}"
                    );
                }
                None => assert!(
                    not_numeric.contains(&name.as_str()),
                    "`lithify {cmd}` has {name}, which tests/numbers.rs does not list: \
                     add it to NUMERIC with its range, or to NOT_NUMERIC"
                ),
            }
        }
        for (c, o, _) in numeric.iter().filter(|(c, _, _)| c == cmd) {
            assert!(
                listed.iter().any(|(n, _)| n == o),
                "tests/numbers.rs lists `{c} {o}`, which its help does not"
            );
        }
    }
    for (c, _) in NOT_NUMERIC {
        assert!(
            commands.iter().any(|k| k == c),
            "tests/numbers.rs lists `{c}`, which `lithify --help` does not"
        );
    }
}

/// What a run of `cmd` needs so that it stops cheaply right after its
/// arguments were accepted: the arguments before the option, and the
/// phrases of the errors it may then stop at.
fn stopper(cmd: &str, tmp: &Path) -> (Vec<String>, &'static [&'static str]) {
    let missing = s(&tmp.join("missing")).to_owned();
    let file = s(&tmp.join("a-file")).to_owned();
    let words = |w: &[&str]| w.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let mut args: Vec<String> = cmd.split(' ').map(str::to_owned).collect();
    let phrases: &'static [&'static str] = match cmd {
        "bench" => {
            args.extend(words(&["--use-existing-db"]));
            // 1-byte keys cannot number a million keys.
            &[
                "--use-existing-db needs --db",
                "distinct values",
                "bytes in one write batch",
                "bytes of value buffers",
            ]
        }
        "scan" => {
            args.extend(["--db".to_owned(), missing]);
            &["does not exist"]
        }
        "checkpoint" | "lsm" => {
            args.extend(["--db".to_owned(), missing]);
            if cmd == "lsm" {
                args.extend(["--html".to_owned(), s(&tmp.join("x.html")).to_owned()]);
            } else {
                args.push(s(&tmp.join("dest")).to_owned());
            }
            &["does not exist"]
        }
        "backup verify" | "backup restore" | "backup purge" => {
            args.extend(["--backup-dir".to_owned(), missing]);
            if cmd == "backup restore" {
                args.push(s(&tmp.join("restored")).to_owned());
            }
            &["does not exist"]
        }
        "dump-sst" | "dump-blob" => {
            args.push(missing);
            &["missing"]
        }
        "log produce" => {
            args.push(s(&tmp.join("plain")).to_owned());
            &["<topic>-<partition>", "bytes in one batch"]
        }
        "log clean" => {
            args.push(missing);
            &["not a directory"]
        }
        "log bench" => {
            args.extend(["--dir".to_owned(), s(tmp).to_owned()]);
            &["already exists", "bytes in one batch"]
        }
        "stress db" => {
            args.push(file);
            &["is not a directory", "must add up to 100"]
        }
        "stress log" => {
            args.extend([s(&tmp.join("sl")).to_owned(), "--verify-only".to_owned()]);
            &["there is no expected state"]
        }
        "stress bank" => {
            args.push(file);
            &["is not a directory", "money in the bank"]
        }
        "compaction-worker" | "replica" => {
            // A bucket URL without a bucket name.
            args.extend(words(&["--bucket", "http://127.0.0.1:1", "--prefix", "p"]));
            &["expected http://host:port/bucket-name"]
        }
        other => panic!("no stopper for `{other}`"),
    };
    (args, phrases)
}

/// The values tried on every numeric option.
const EXTREMES: &[&str] = &[
    "0",
    "-1",
    "1",
    "4294967296",
    "18446744073709551615",
    "9999999999999999999999",
    "NaN",
    "inf",
    "-inf",
    "1e400",
    "abc",
];

/// Whether `value` is in `range`.
fn accepted(value: &str, range: Range) -> bool {
    match range {
        Int(lo, hi) => value.parse::<i128>().is_ok_and(|v| (lo..=hi).contains(&v)),
        Float(lo, hi) => value
            .parse::<f64>()
            .is_ok_and(|v| v.is_finite() && (lo..=hi).contains(&v)),
        Positive(hi) => value
            .parse::<f64>()
            .is_ok_and(|v| v.is_finite() && v > 0.0 && v <= hi),
    }
}

/// The bounds of `range` and the numbers just outside them.
fn edges(range: Range) -> Vec<String> {
    match range {
        Int(lo, hi) => vec![
            lo.to_string(),
            hi.to_string(),
            (lo - 1).to_string(),
            (hi + 1).to_string(),
        ],
        Float(lo, hi) => vec![
            lo.to_string(),
            hi.to_string(),
            format!("{}", lo - 0.5),
            format!("{}", hi + 0.5),
        ],
        Positive(hi) => vec![
            hi.to_string(),
            format!("{}", hi / 2.0),
            format!("{}", hi + 0.5),
            "-0.5".to_owned(),
        ],
    }
}

#[test]
fn out_of_range_numbers_are_usage_errors_naming_option_value_and_range() {
    let tmp = tempfile::tempdir().unwrap();
    lithify::vfs::write_file_atomic(&OsFs, &tmp.path().join("a-file"), b"x").unwrap();
    for (cmd, option, range) in numeric() {
        let (base, phrases) = stopper(cmd, tmp.path());
        let mut values: Vec<String> = EXTREMES.iter().map(|v| v.to_string()).collect();
        values.extend(edges(range));
        for value in values {
            let mut args = base.clone();
            if option == "--compression-level" {
                args.extend(["--compression-type".to_owned(), "zstd".to_owned()]);
            }
            // `-1` as a separate word is a value too; `-inf` would read as
            // flags, so it is given as `--opt=-inf` (or after `--`).
            match (
                option.starts_with('<'),
                value.starts_with('-') && value != "-1",
            ) {
                (true, true) => args.extend(["--".to_owned(), value.clone()]),
                (true, false) => args.push(value.clone()),
                (false, true) => args.push(format!("{option}={value}")),
                (false, false) => args.extend([option.to_owned(), value.clone()]),
            }
            let out = run(&args);
            let stderr = no_panic(&args, &out);
            if accepted(&value, range) {
                // Past its arguments the run stops at a missing database
                // (a usage error, 2) or file (an I/O error, 4).
                assert!(
                    matches!(out.status.code(), Some(2 | 4)),
                    "{args:?}: {stderr}"
                );
                assert!(
                    phrases.iter().any(|p| stderr.contains(p)),
                    "{args:?} should pass its arguments and stop at {phrases:?}: {stderr}"
                );
            } else {
                assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
                assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
                let want = match range {
                    Int(_, hi) => format!("..={hi}"),
                    Float(_, hi) => format!("..={hi}"),
                    Positive(hi) => format!("positive and at most {hi}"),
                };
                assert!(
                    stderr.starts_with("error: invalid value")
                        && stderr.contains(option)
                        && stderr.contains(&format!("'{value}'"))
                        && stderr.contains(&want),
                    "{args:?}: {stderr}"
                );
            }
        }
    }
}

/// Runs `args` (with `{D}` the scratch database, `{T}` the scratch
/// directory, `{SST}` a table of the database) and checks that it ended
/// without a panic, successfully if `must_succeed`.
fn run_case(args: &[&str], dirs: &Dirs, must_succeed: bool) -> Output {
    let args: Vec<String> = args
        .iter()
        .map(|a| {
            a.replace("{D}", &dirs.db)
                .replace("{T}", &dirs.tmp)
                .replace("{SST}", &dirs.sst)
        })
        .collect();
    let out = run(&args);
    let stderr = no_panic(&args, &out);
    if must_succeed {
        assert!(out.status.success(), "lithify {args:?} failed: {stderr}");
    }
    out
}

struct Dirs {
    tmp: String,
    db: String,
    sst: String,
}

/// Every command run with extreme numbers on a scratch database, log and
/// backup directory: in-range extremes succeed; every other run (numbers
/// as keys, paths or ids that do not exist) ends without a panic.
#[test]
fn every_command_runs_with_extreme_numbers() {
    let tmp = tempfile::tempdir().unwrap();
    let t = s(tmp.path()).to_owned();
    let db = format!("{t}/db");
    ok(&["put", "--db", &db, "--create-if-missing", "k", "v"]);
    ok(&["compact", "--db", &db]);
    let sst = OsFs
        .list_dir(Path::new(&db))
        .unwrap()
        .into_iter()
        .find(|n| n.ends_with(".sst"))
        .expect("compact writes a table");
    let dirs = Dirs {
        tmp: t.clone(),
        sst: format!("{db}/{sst}"),
        db,
    };
    const MAX: &str = "18446744073709551615";
    const HUGE: &str = "9999999999999999999999";
    // (command, arguments, must succeed)
    let cases: &[(&str, &[&str], bool)] = &[
        ("put", &["put", "--db", "{D}", MAX, HUGE], true),
        ("get", &["get", "--db", "{D}", MAX], true),
        ("merge", &["merge", "--db", "{D}", MAX, HUGE], false),
        ("delete", &["delete", "--db", "{D}", HUGE], true),
        (
            "single-delete",
            &["single-delete", "--db", "{D}", HUGE],
            true,
        ),
        (
            "scan",
            &[
                "scan", "--db", "{D}", "--limit", MAX, "--from", "-1", "--to", HUGE,
            ],
            true,
        ),
        ("scan", &["scan", "--db", "{D}", "--limit", "0"], true),
        ("stats", &["stats", "--db", "{D}", "--property", MAX], false),
        (
            "compact",
            &["compact", "--db", "{D}", "--from", "0", "--to", MAX],
            true,
        ),
        (
            "checkpoint",
            &[
                "checkpoint",
                "--db",
                "{D}",
                "{T}/cp",
                "--log-size-for-flush",
                MAX,
            ],
            true,
        ),
        ("live-files", &["live-files", "--db", "{D}"], true),
        (
            "compaction-worker",
            &[
                "compaction-worker",
                "--bucket",
                "http://127.0.0.1:1",
                "--prefix",
                MAX,
                "--poll-ms",
                "60000",
                "--max-jobs",
                "1000000000",
            ],
            false,
        ),
        (
            "replica",
            &[
                "replica",
                "--bucket",
                "http://127.0.0.1:1",
                "--prefix",
                HUGE,
                "--catch-up-ms",
                "3600000",
                "--duration-secs",
                "31536000",
            ],
            false,
        ),
        ("tables", &["tables", "--db", "{D}"], true),
        ("create-table", &["create-table", "--db", "{D}", MAX], true),
        ("drop-table", &["drop-table", "--db", "{D}", MAX], true),
        ("drop-table", &["drop-table", "--db", "{D}", HUGE], false),
        (
            "ingest",
            &["ingest", "--db", "{D}", "{T}/4294967296.sst"],
            false,
        ),
        (
            "lsm",
            &[
                "lsm",
                "--db",
                "{D}",
                "--html",
                "{T}/a.html",
                "--max-steps",
                "1000000",
            ],
            true,
        ),
        (
            "lsm",
            &[
                "lsm",
                "--db",
                "{D}",
                "--html",
                "{T}/b.html",
                "--max-steps",
                "0",
            ],
            true,
        ),
        ("check", &["check", "--db", "{D}"], true),
        (
            "dump-sst",
            &["dump-sst", "{SST}", "--entries", "--limit", MAX],
            true,
        ),
        (
            "dump-sst",
            &["dump-sst", "{SST}", "--entries", "--limit", "0"],
            true,
        ),
        (
            "dump-wal",
            &["dump-wal", "{T}/18446744073709551615.log"],
            false,
        ),
        (
            "dump-blob",
            &[
                "dump-blob",
                "{T}/18446744073709551615.blob",
                "--entries",
                "--limit",
                MAX,
            ],
            false,
        ),
        ("dump-manifest", &["dump-manifest", "{D}"], true),
        (
            "backup create",
            &["backup", "create", "--backup-dir", "{T}/bk", "--db", "{D}"],
            true,
        ),
        (
            "backup list",
            &["backup", "list", "--backup-dir", "{T}/bk"],
            true,
        ),
        (
            "backup verify",
            &["backup", "verify", "--backup-dir", "{T}/bk", "--id", "1"],
            true,
        ),
        (
            "backup verify",
            &[
                "backup",
                "verify",
                "--backup-dir",
                "{T}/bk",
                "--id",
                "4294967295",
            ],
            false,
        ),
        (
            "backup restore",
            &[
                "backup",
                "restore",
                "--backup-dir",
                "{T}/bk",
                "--id",
                "1",
                "{T}/r",
            ],
            true,
        ),
        (
            "backup purge",
            &[
                "backup",
                "purge",
                "--backup-dir",
                "{T}/bk",
                "--keep",
                "4294967295",
            ],
            true,
        ),
        (
            "backup purge",
            &["backup", "purge", "--backup-dir", "{T}/bk", "--keep", "0"],
            true,
        ),
        (
            "log produce",
            &[
                "log",
                "produce",
                "{T}/data/t-0",
                "--records",
                "3",
                "--batch-size",
                "1000000",
                "--keys",
                "1000000000000",
                "--now",
                "253402300799999",
                "--time-step-ms",
                "86400000",
                "--seed",
                MAX,
                "--tombstone-percent",
                "100",
                "--value-size",
                "0",
            ],
            true,
        ),
        (
            "log produce",
            &[
                "log",
                "produce",
                "{T}/data/x-0",
                "--records",
                "5",
                "--transactional",
                "--producers",
                "10000",
                "--txn-batches",
                "1000000",
                "--abort-ratio",
                "1",
                "--now",
                "0",
                "--time-step-ms",
                "0",
                "--roll",
            ],
            true,
        ),
        (
            "log dump",
            &["log", "dump", "{T}/data/x-0", "--print-data-log"],
            true,
        ),
        ("log check", &["log", "check", "{T}/data"], true),
        (
            "log clean",
            &[
                "log",
                "clean",
                "{T}/data",
                "--now",
                "253402300799999",
                "--load-factor",
                "1",
                "--map-memory",
                "1048576",
            ],
            true,
        ),
        (
            "log clean",
            &[
                "log",
                "clean",
                "{T}/data",
                "--now",
                "0",
                "--map-memory",
                "1",
            ],
            false,
        ),
        (
            "log bench",
            &[
                "log",
                "bench",
                "--records",
                "1",
                "--keys",
                "1000000000000",
                "--batch-size",
                "1000000",
                "--partitions",
                "2",
                "--threads",
                "2",
                "--seed",
                MAX,
                "--value-size",
                "0",
            ],
            true,
        ),
        (
            "bench",
            &[
                "bench",
                "--num",
                "1",
                "--reads",
                "0",
                "--benchmarks",
                "fillseq,readrandom,seekrandom",
                "--batch-size",
                "1000000",
                "--seek-nexts",
                "1000000",
                "--value-size",
                "0",
                "--seed",
                MAX,
                "--json",
                "--transaction-lock-timeout",
                "86400000",
                "--compression-ratio",
                "1",
            ],
            true,
        ),
        (
            "bench",
            &[
                "bench",
                "--num",
                "2",
                "--benchmarks",
                "fillrandom,readseq",
                "--key-size",
                "1048576",
                "--value-size",
                "0",
                "--threads",
                "2",
                "--read-miss-percent",
                "100",
                "--json",
            ],
            true,
        ),
        (
            "stress db",
            &[
                "stress",
                "db",
                "{T}/sdb",
                "--duration",
                "0",
                "--ops-per-thread",
                "1000000000000",
                "--threads",
                "1",
                "--keys",
                "16",
                "--flush-one-in",
                MAX,
                "--compact-range-one-in",
                MAX,
                "--snapshot-hold-ops",
                "1000000000",
                "--range-width",
                "1000000",
                "--seed",
                MAX,
                "--max-value-size",
                "16",
            ],
            true,
        ),
        (
            "stress log",
            &[
                "stress",
                "log",
                "{T}/slog",
                "--duration",
                "0",
                "--records",
                "1000000000000",
                "--rate",
                "1000000000",
                "--partitions",
                "1",
                "--keys",
                "1",
                "--batch-size",
                "100000",
                "--flush-one-in",
                MAX,
                "--seed",
                MAX,
                "--max-segments",
                "0",
            ],
            true,
        ),
        (
            // The largest bank whose sum fits in a u64: a transfer's sum
            // never overflows.
            "stress bank",
            &[
                "stress",
                "bank",
                "{T}/bank",
                "--accounts",
                "2",
                "--initial",
                "9223372036854775807",
                "--threads",
                "2",
                "--ops-per-thread",
                "20",
                "--seed",
                MAX,
                "--sync-percent",
                "100",
            ],
            true,
        ),
    ];
    for (_, args, must_succeed) in cases {
        run_case(args, &dirs, *must_succeed);
    }
    // Each in range alone, their product is refused, naming both.
    let err = common::fails(&[
        "bench",
        "--num",
        "1",
        "--threads",
        "256",
        "--value-size",
        "67108864",
    ]);
    assert!(
        err.contains("--threads 256 x --value-size 67108864") && err.contains("1073741824"),
        "{err}"
    );
    for cmd in commands() {
        assert!(
            cases.iter().any(|(c, _, _)| *c == cmd),
            "`lithify {cmd}` is not run by every_command_runs_with_extreme_numbers"
        );
    }
}
