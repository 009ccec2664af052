//! One language across the commands: the exit statuses, `--table` on
//! every command that works on one table, one spelling per setting (with
//! RocksDB's `_` spellings everywhere), errors that say what to do, and
//! files of the wrong kind named for what they look like.

#[allow(dead_code)] // each test file uses its share of the helpers
mod common;

use std::path::Path;
use std::process::Output;

use common::{fails, lithify, ok, s};
use lithify::vfs::{FileSystem as _, OsFs, read_file, write_file_atomic};

/// The exit status and stderr of `lithify args`, with no panic.
fn status(args: &[&str]) -> (i32, String) {
    let out: Output = lithify(args);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        !stderr.contains("panicked") && !stderr.contains("internal error"),
        "{args:?}: {stderr}"
    );
    (out.status.code().expect("exited"), stderr)
}

/// Asserts `lithify args` exits with `code` and an `error:` line holding
/// every one of `phrases`.
#[track_caller]
fn exits(args: &[&str], code: i32, phrases: &[&str]) {
    let (got, stderr) = status(args);
    assert_eq!(got, code, "{args:?}: {stderr}");
    assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
    for p in phrases {
        assert!(stderr.contains(p), "{args:?} should say {p:?}: {stderr}");
    }
}

#[test]
fn exit_statuses_follow_one_rule() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let db_s = s(&db);
    // 2: usage. A missing database says how to make one.
    exits(
        &["put", "--db", db_s, "k", "v"],
        2,
        &["does not exist", "--create-if-missing"],
    );
    exits(
        &["get", "--db", db_s, "k"],
        2,
        &["does not exist", "put --create-if-missing"],
    );
    exits(&["get", "--no-such-flag"], 2, &[]);
    exits(&["scan", "--db", db_s, "--limit", "-1"], 2, &["--limit"]);
    ok(&["put", "--db", db_s, "--create-if-missing", "k", "v"]);
    exits(
        &["scan", "--db", db_s, "--from", "z", "--to", "a"],
        2,
        &["--from must not sort after --to"],
    );
    exits(
        &["stats", "--db", db_s, "--property", "lithify.nope"],
        2,
        &["unknown property", "<N>"],
    );
    exits(
        &["get", "--db", db_s, "--table", "nope", "k"],
        2,
        &["no table \"nope\"", "create-table"],
    );
    // 1: not found, and nothing else is 1.
    exits(
        &["get", "--db", db_s, "missing"],
        1,
        &["not in table \"default\""],
    );
    assert_eq!(ok(&["get", "--db", db_s, "k"]).trim(), "v");
    // 3: damage found.
    let (sst, _) = flushed_table(&db);
    flip_middle_byte(&sst);
    let (code, _) = status(&["check", "--db", db_s]);
    assert_eq!(code, 3);
    exits(&["dump-sst", s(&sst)], 3, &[s(&sst)]);
    // 4: anything else, such as a file that cannot be read.
    let gone = tmp.path().join("gone.sst");
    exits(&["dump-sst", s(&gone)], 4, &[s(&gone)]);
    // --help lists the statuses.
    let help = ok(&["--help"]);
    assert!(
        help.contains("Exit status: 0 success; 1 not found (get); 2 usage error"),
        "{help}"
    );
}

/// Flushes the database at `db` and returns its one SST and the directory.
fn flushed_table(db: &Path) -> (std::path::PathBuf, String) {
    ok(&["compact", "--db", s(db)]);
    let out = ok(&["live-files", "--db", s(db)]);
    let line = out.lines().nth(1).expect("one live file");
    let name = line.split('\t').nth(2).unwrap().to_owned();
    (db.join(&name), name)
}

/// The file of `dir` whose name `pick` accepts.
fn file_in(dir: &Path, pick: impl Fn(&str) -> bool) -> std::path::PathBuf {
    let name = OsFs
        .list_dir(dir)
        .unwrap()
        .into_iter()
        .find(|n| pick(n))
        .expect("the file is there");
    dir.join(name)
}

fn flip_middle_byte(path: &Path) {
    let mut bytes = read_file(&OsFs, path).unwrap();
    let at = bytes.len() / 4;
    bytes[at] ^= 0x40;
    write_file_atomic(&OsFs, path, &bytes).unwrap();
}

#[test]
fn every_table_is_reachable() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let db_s = s(&db);
    ok(&[
        "put",
        "--db",
        db_s,
        "--create-if-missing",
        "a",
        "in-default",
    ]);
    assert_eq!(
        ok(&["create-table", "--db", db_s, "users"]).trim(),
        "created table \"users\""
    );
    exits(
        &["create-table", "--db", db_s, "users"],
        2,
        &["already has a table \"users\""],
    );
    ok(&["put", "--db", db_s, "--table", "users", "a", "in-users"]);
    ok(&["put", "--db", db_s, "--table", "users", "b", "2"]);
    ok(&["put", "--db", db_s, "--table", "users", "c", "3"]);
    ok(&["delete", "--db", db_s, "--table", "users", "b"]);
    ok(&["single-delete", "--db", db_s, "--table", "users", "c"]);
    ok(&[
        "merge",
        "--db",
        db_s,
        "--table",
        "users",
        "--merge-operator",
        "stringappend",
        "d",
        "x",
    ]);
    ok(&[
        "merge",
        "--db",
        db_s,
        "--table",
        "users",
        "--merge-operator",
        "stringappend",
        "d",
        "y",
    ]);
    assert_eq!(ok(&["get", "--db", db_s, "a"]).trim(), "in-default");
    assert_eq!(
        ok(&["get", "--db", db_s, "--table", "users", "a"]).trim(),
        "in-users"
    );
    exits(
        &["get", "--db", db_s, "--table", "users", "b"],
        1,
        &["not in table \"users\""],
    );
    assert_eq!(
        ok(&[
            "scan",
            "--db",
            db_s,
            "--table",
            "users",
            "--merge-operator",
            "stringappend"
        ]),
        "a => in-users\nd => x,y\n"
    );
    assert_eq!(ok(&["scan", "--db", db_s]), "a => in-default\n");

    // Compaction and the statistics of one table.
    let out = ok(&[
        "compact",
        "--db",
        db_s,
        "--table",
        "users",
        "--merge-operator",
        "stringappend",
        "--bottommost-level-compaction",
        "force",
    ]);
    assert!(out.starts_with("compacted table \"users\": L"), "{out}");
    assert_eq!(out.lines().count(), 1, "{out}");
    let files = ok(&["live-files", "--db", db_s, "--table", "users"]);
    assert_eq!(files.lines().count(), 2, "{files}");
    assert!(
        files.lines().nth(1).unwrap().starts_with("users\t"),
        "{files}"
    );
    let stats = ok(&["stats", "--db", db_s, "--table", "users"]);
    assert!(
        stats.contains("users") && !stats.contains("default"),
        "{stats}"
    );
    let all = ok(&["stats", "--db", db_s]);
    assert!(all.contains("users") && all.contains("default"), "{all}");
    let level = files.lines().nth(1).unwrap().split('\t').nth(1).unwrap();
    let property = format!("lithify.num-files-at-level{}", &level[1..]);
    assert_eq!(
        ok(&[
            "stats",
            "--db",
            db_s,
            "--table",
            "users",
            "--property",
            &property
        ])
        .trim(),
        "1"
    );
    assert_eq!(
        ok(&["stats", "--db", db_s, "--property", &property]).trim(),
        "0"
    );

    // The list of tables, then one dropped.
    let tables = ok(&["tables", "--db", db_s]);
    let names: Vec<&str> = tables
        .lines()
        .skip(1)
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    assert_eq!(names, ["default", "users"], "{tables}");
    assert!(
        tables
            .lines()
            .nth(2)
            .unwrap()
            .starts_with("users\tleveled\t1\t"),
        "{tables}"
    );
    ok(&["drop-table", "--db", db_s, "users"]);
    exits(
        &["drop-table", "--db", db_s, "users"],
        2,
        &["no table \"users\""],
    );
    exits(
        &["scan", "--db", db_s, "--table", "users"],
        2,
        &["no table \"users\""],
    );
}

#[test]
fn rocksdb_underscore_spellings_work_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let db_s = s(&db);
    ok(&["put", "--db", db_s, "--create_if_missing", "k", "v"]);
    ok(&["put", "--db", db_s, "--column_family", "default", "k2", "v"]);
    ok(&[
        "merge",
        "--db",
        db_s,
        "--merge_operator",
        "uint64add",
        "n",
        "2",
    ]);
    assert_eq!(
        ok(&[
            "get",
            "--db",
            db_s,
            "--wal_recovery_mode",
            "absolute",
            "--merge_operator",
            "uint64add",
            "n"
        ])
        .trim(),
        "\\x02\\x00\\x00\\x00\\x00\\x00\\x00\\x00"
    );
    ok(&[
        "compact",
        "--db",
        db_s,
        "--bottommost_level_compaction",
        "skip",
    ]);
    ok(&[
        "checkpoint",
        "--db",
        db_s,
        "--log_size_for_flush",
        "0",
        s(&tmp.path().join("cp")),
    ]);
    // ldb's command names.
    ok(&["create_column_family", "--db", db_s, "t"]);
    assert!(ok(&["list_column_families", "--db", db_s]).contains("\nt\t"));
    ok(&["drop_column_family", "--db", db_s, "t"]);
    assert!(ok(&["checkconsistency", "--db", db_s]).contains("ok: checked"));
    assert!(ok(&["manifest_dump", db_s]).starts_with("MANIFEST-"));
}

#[test]
fn one_spelling_for_the_recovery_mode() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let db_s = s(&db);
    ok(&["put", "--db", db_s, "--create-if-missing", "k", "v"]);
    let log = file_in(&db, |n| n.ends_with(".log"));
    for mode in ["point-in-time", "tolerate-tail", "absolute", "skip"] {
        ok(&["dump-wal", s(&log), "--wal-recovery-mode", mode]);
        ok(&["get", "--db", db_s, "--wal-recovery-mode", mode, "k"]);
    }
    exits(&["dump-wal", s(&log), "--mode", "skip"], 2, &[]);
    exits(
        &[
            "dump-wal",
            s(&log),
            "--wal-recovery-mode",
            "skip-any-corrupted-records",
        ],
        2,
        &[],
    );
}

#[test]
fn a_file_of_the_wrong_kind_is_named_for_what_it_looks_like() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let db_s = s(&db);
    ok(&["put", "--db", db_s, "--create-if-missing", "k", "v"]);
    let (sst, _) = flushed_table(&db);
    let topic = tmp.path().join("data/t-0");
    ok(&["log", "produce", s(&topic), "--records", "20", "--roll"]);
    let segment = topic.join("00000000000000000000.log");

    exits(
        &["dump-wal", s(&segment)],
        2,
        &[
            "is not a lithify write-ahead log or MANIFEST",
            "looks like a Kafka log segment",
            "lithify log dump",
        ],
    );
    exits(
        &["dump-sst", s(&segment)],
        2,
        &["is not a lithify SST", "looks like a Kafka log segment"],
    );
    exits(
        &["dump-wal", s(&sst)],
        2,
        &["looks like a lithify SST", "dump-sst"],
    );
    exits(
        &["log", "dump", s(&sst)],
        2,
        &["is not a Kafka log segment", "looks like a lithify SST"],
    );
    exits(
        &["log", "dump", db_s],
        2,
        &[
            "holds a lithify database, not Kafka log data",
            "dump-manifest",
        ],
    );
    let manifest = file_in(&db, |n| n.starts_with("MANIFEST-"));
    exits(
        &["log", "dump", s(&manifest)],
        2,
        &[
            "looks like a lithify write-ahead log or MANIFEST",
            "dump-wal",
        ],
    );
    // A WAL and a MANIFEST share a format: the name tells them apart.
    exits(
        &["dump-wal", s(&manifest)],
        2,
        &["is a MANIFEST", "dump-manifest"],
    );
    // The right kinds still read.
    ok(&["log", "dump", s(&segment)]);
    ok(&["dump-sst", s(&sst)]);
    ok(&["dump-manifest", s(&manifest)]);
    ok(&["put", "--db", db_s, "k2", "v"]);
    let wal = file_in(&db, |n| n.ends_with(".log"));
    exits(
        &["dump-manifest", s(&wal)],
        2,
        &["is a write-ahead log", "dump-wal"],
    );
}

#[test]
fn backup_verbs_name_ids_one_way() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let bk = tmp.path().join("bk");
    let (db_s, bk_s) = (s(&db), s(&bk));
    ok(&["put", "--db", db_s, "--create-if-missing", "k", "v"]);
    ok(&["backup", "create", "--backup-dir", bk_s, "--db", db_s]);
    ok(&["backup", "create", "--backup-dir", bk_s, "--db", db_s]);
    let newest = ok(&["backup", "verify", "--backup-dir", bk_s]);
    assert!(newest.starts_with("backup 2:"), "{newest}");
    let first = ok(&["backup", "verify", "--backup-dir", bk_s, "--id", "1"]);
    assert!(first.starts_with("backup 1:"), "{first}");
    exits(&["backup", "verify", "--backup-dir", bk_s, "1"], 2, &[]);
    ok(&[
        "backup",
        "restore",
        "--backup-dir",
        bk_s,
        "--id",
        "1",
        s(&tmp.path().join("r")),
    ]);
    ok(&["backup", "purge", "--backup-dir", bk_s, "--keep", "0"]);
    exits(
        &["backup", "verify", "--backup-dir", bk_s],
        2,
        &["holds no backup"],
    );
}

/// Runs `lithify args` and parses its stdout as one JSON value.
fn json(args: &[&str]) -> serde_json::Value {
    let out = lithify(args);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn reports_are_json_on_request() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let db_s = s(&db);
    ok(&["put", "--db", db_s, "--create-if-missing", "k", "v"]);
    ok(&["create-table", "--db", db_s, "users"]);
    ok(&["put", "--db", db_s, "--table", "users", "u", "1"]);
    let (sst, name) = flushed_table(&db);

    let stats = json(&["stats", "--db", db_s, "--json"]);
    let tables: Vec<&str> = stats["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tables, ["default", "users"], "{stats}");
    assert_eq!(stats["tables"][0]["files"], 1, "{stats}");
    let one = json(&["stats", "--db", db_s, "--json", "--table", "users"]);
    assert_eq!(one["tables"].as_array().unwrap().len(), 1, "{one}");
    let property = json(&[
        "stats",
        "--db",
        db_s,
        "--json",
        "--property",
        "lithify.num-snapshots",
    ]);
    assert_eq!(
        property,
        serde_json::json!({"name": "lithify.num-snapshots", "value": "0"})
    );

    let files = json(&["live-files", "--db", db_s, "--json"]);
    let file = &files.as_array().unwrap()[0];
    assert_eq!(file["table"], "default", "{files}");
    assert!(file["file"].as_str().unwrap().ends_with(&name), "{files}");
    assert_eq!(
        (file["smallest_key"].as_str(), file["entries"].as_u64()),
        (Some("k"), Some(1))
    );

    let bk = tmp.path().join("bk");
    ok(&["backup", "create", "--backup-dir", s(&bk), "--db", db_s]);
    let list = json(&["backup", "list", "--backup-dir", s(&bk), "--json"]);
    assert_eq!(list["backups"][0]["id"], 1, "{list}");
    assert_eq!(list["damaged"], serde_json::json!([]), "{list}");

    let intact = json(&["check", "--db", db_s, "--json"]);
    assert_eq!(
        (
            intact["ok"].as_bool(),
            intact["problems"].as_array().map(Vec::len)
        ),
        (Some(true), Some(0))
    );
    flip_middle_byte(&sst);
    let out = lithify(&["check", "--db", db_s, "--json"]);
    assert_eq!(out.status.code(), Some(3));
    let damaged: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(damaged["ok"], false, "{damaged}");
    assert!(
        damaged["problems"][0]["file"]
            .as_str()
            .unwrap()
            .ends_with(&name),
        "{damaged}"
    );

    let topic = tmp.path().join("data/t-0");
    ok(&["log", "produce", s(&topic), "--records", "20", "--roll"]);
    let checked = json(&["log", "check", s(&topic), "--json"]);
    assert_eq!(
        (
            checked["logs"].as_u64(),
            checked["problems"].as_array().map(Vec::len)
        ),
        (Some(1), Some(0)),
        "{checked}"
    );
}

#[test]
fn long_commands_keep_stderr_clean_off_a_terminal_and_take_quiet() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("db");
    let db_s = s(&db);
    ok(&["put", "--db", db_s, "--create-if-missing", "k", "v"]);
    let bk = tmp.path().join("bk");
    let data = tmp.path().join("data");
    ok(&[
        "log",
        "produce",
        s(&data.join("t-0")),
        "--records",
        "50",
        "--keys",
        "5",
        "--roll",
    ]);
    for args in [
        vec!["compact", "--db", db_s],
        vec!["--quiet", "compact", "--db", db_s],
        vec!["check", "--db", db_s, "-q"],
        vec!["checkpoint", "--db", db_s, s(&tmp.path().join("cp"))],
        vec!["backup", "create", "--backup-dir", s(&bk), "--db", db_s],
        vec![
            "backup",
            "restore",
            "--backup-dir",
            s(&bk),
            s(&tmp.path().join("r")),
        ],
        vec!["log", "clean", s(&data), "--quiet"],
    ] {
        let out = lithify(&args);
        assert!(out.status.success(), "{args:?}: {out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{args:?}");
    }
}

#[test]
fn log_dump_is_json_on_request() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let log = data.join("t-0");
    ok(&[
        "log",
        "produce",
        s(&log),
        "--records",
        "30",
        "--keys",
        "5",
        "--batch-size",
        "10",
        "--roll",
    ]);
    let segment = log.join("00000000000000000000.log");
    let one = json(&["log", "dump", s(&segment), "--json", "--print-data-log"]);
    let entries = one["files"][0]["entries"].as_array().unwrap();
    assert_eq!(
        entries[0],
        serde_json::json!({"logStartingOffset": 0}),
        "{one}"
    );
    let batches: Vec<&serde_json::Value> = entries
        .iter()
        .filter(|e| e.get("baseOffset").is_some())
        .collect();
    assert_eq!(batches.len(), 3, "{one}");
    assert_eq!(
        (
            batches[1]["baseOffset"].as_i64(),
            batches[1]["isvalid"].as_bool()
        ),
        (Some(10), Some(true))
    );
    let records = batches[0]["records"].as_array().unwrap();
    assert_eq!(
        (records.len(), records[9]["offset"].as_i64()),
        (10, Some(9)),
        "{one}"
    );
    // A whole data directory: every file, and the directory checks.
    let all = json(&[
        "log",
        "dump",
        s(&data),
        "--json",
        "--transaction-index-sanity-check",
    ]);
    let files: Vec<&str> = all["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["file"].as_str())
        .collect();
    assert!(
        files
            .iter()
            .any(|f| f.ends_with("00000000000000000000.log")),
        "{all}"
    );
    assert!(
        all["files"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f.get("check").is_some()),
        "{all}"
    );
    assert_eq!(all["problems"], serde_json::json!([]), "{all}");
    // Damage: the JSON is still printed, and the status says damage.
    let mut bytes = read_file(&OsFs, &segment).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x55;
    write_file_atomic(&OsFs, &segment, &bytes).unwrap();
    let out = lithify(&["log", "dump", s(&segment), "--json"]);
    assert_eq!(out.status.code(), Some(3));
    let damaged: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let invalid = damaged["files"][0]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| {
            e["isvalid"] == false || e.get("error").is_some() || e.get("invalidBytes").is_some()
        });
    assert!(invalid, "{damaged}");
}

#[test]
fn bench_without_a_wal_and_a_small_strategies_report() {
    let out = ok(&[
        "bench",
        "--num",
        "2000",
        "--benchmarks",
        "fillrandom,readrandom",
        "--disable-wal",
        "--json",
    ]);
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert_eq!(lines[0]["engine"]["wal_bytes"], 0, "no WAL written: {out}");
    let (found, ops) = (
        lines[1]["found"].as_u64().unwrap(),
        lines[1]["ops"].as_u64().unwrap(),
    );
    assert!(found > 0 && found <= ops, "{out}");
    let report = ok(&[
        "bench",
        "--strategies-report",
        "--num",
        "2000",
        "--ops",
        "2000",
        "--repeat",
        "1",
        "--json",
    ]);
    let runs: Vec<serde_json::Value> = report
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Nine workloads (the six steady ones, phase-shift, diurnal and the
    // moving hot spot), each under the six fixed strategies and adaptive:
    // a synchronous run (the counted cost) and a measured one each.
    assert_eq!(runs.len(), 2 * 9 * 7, "{report}");
    assert!(
        runs.iter().all(|r| r["ops"].as_u64() == Some(2000)),
        "{report}"
    );
    for schedule in ["synchronous", "background"] {
        let of = runs.iter().filter(|r| r["schedule"] == schedule);
        assert_eq!(of.clone().count(), 9 * 7, "{schedule}");
        assert!(of.clone().all(|r| r["counts"]["ops"] == 2000), "{report}");
        assert!(
            of.clone()
                .all(|r| r["counted_us_per_op"].as_f64().unwrap() > 0.0),
            "{report}"
        );
    }
    // --deterministic: the synchronous runs alone, the same each time.
    let args = [
        "bench",
        "--workload",
        "phase-shift",
        "--strategy",
        "adaptive",
        "--num",
        "4000",
        "--ops",
        "12000",
        "--write-buffer-size",
        "65536",
        "--deterministic",
        "--json",
    ];
    let (first, second) = (ok(&args), ok(&args));
    // Unit costs from a file: used and named; a wrong one is refused
    // with its line.
    let tmp = tempfile::tempdir().unwrap();
    let costs = tmp.path().join("cpu-costs");
    write_file_atomic(
        &OsFs,
        &costs,
        b"# measured\nwrite_us = 1.5\nwritten_byte_us = 0.002\nread_us = 0.4\n\
         probe_us = 0.04\nscan_us = 0.7\nrun_us = 0.7\nfile_us = 300\n",
    )
    .unwrap();
    let priced = ok(&[
        "bench",
        "--workload",
        "read-only",
        "--num",
        "2000",
        "--ops",
        "2000",
        "--deterministic",
        "--cpu-costs",
        costs.to_str().unwrap(),
    ]);
    assert!(
        priced.contains(&format!("unit costs: {}", costs.display())),
        "{priced}"
    );
    write_file_atomic(&OsFs, &costs, b"write_us = 1.5\nprobe_us = fast\n").unwrap();
    let err = fails(&[
        "bench",
        "--workload",
        "read-only",
        "--cpu-costs",
        costs.to_str().unwrap(),
    ]);
    assert!(err.contains("line 2: probe_us must be a number"), "{err}");
    let counts = |out: &str| -> serde_json::Value {
        let line: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(line["schedule"], "synchronous", "{out}");
        line["counts"].clone()
    };
    assert_eq!(counts(&first), counts(&second));
    // The moving hot spot, under the hot-range preset without read heat.
    let hot = ok(&[
        "bench",
        "--workload",
        "moving-hot-spot",
        "--strategy",
        "two-tier:read-mostly-many:table-count",
        "--num",
        "2000",
        "--ops",
        "2000",
        "--deterministic",
        "--json",
    ]);
    let line: serde_json::Value = serde_json::from_str(hot.trim()).unwrap();
    assert_eq!(line["workload"], "moving-hot-spot", "{hot}");
    assert_eq!(
        line["in_force"], "two-tier(minor=hot-range:4,stripes=8,ratio=1,table-count) (configured)",
        "{hot}"
    );
    assert!(line["counts"]["gets"].as_u64().unwrap() > 1_000, "{hot}");
}
