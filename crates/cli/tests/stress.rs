//! `lithify stress db|log` run as the crash loops run them: to the end, or
//! killed with SIGKILL and verified by the next run; and damage made by
//! hand is caught, naming the key.

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use lithify::log::record::SimpleRecord;
use lithify::log::{Log, LogConfig};
use lithify::vfs::{FileSystem, OsFs};
use lithify::{Db, Options};

mod common;

use common::{fails, ok, s};

const SMALL_DB: [&str; 10] = [
    "--keys",
    "400",
    "--threads",
    "3",
    "--write-buffer-size",
    "65536",
    "--flush-one-in",
    "300",
    "--compact-range-one-in",
    "600",
];

/// Starts a run, waits for its workload to start, lets it work a moment
/// and kills it with SIGKILL.
fn kill_during_workload(args: &[&str], after: Duration) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lithify"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let mut lines = BufReader::new(out).lines();
    loop {
        let line = lines.next().expect("the run printed its start").unwrap();
        if line.starts_with("stress: running") {
            break;
        }
    }
    std::thread::sleep(after);
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "the run ended by itself: {status}");
}

#[test]
fn engine_runs_survive_kills_and_verify() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let mut args = vec![
        "stress",
        "db",
        s(&db),
        "--ops-per-thread",
        "1500",
        "--seed",
        "3",
    ];
    args.extend(SMALL_DB);
    let out = ok(&args);
    assert!(
        out.contains("verified 400 keys after a clean close"),
        "{out}"
    );
    assert!(OsFs.exists(&dir.path().join("db.expected-state")));
    // Killed twice in the middle of work (the first into WALs sized up
    // front, the second with a buffered WAL that grows as it is written,
    // over obsolete WALs' files, so that only synced writes survive);
    // each next run verifies first.
    let mut long = vec![
        "stress",
        "db",
        s(&db),
        "--ops-per-thread",
        "100000000",
        "--seed",
        "4",
    ];
    long.extend(SMALL_DB);
    kill_during_workload(&long, Duration::from_millis(400));
    long.extend([
        "--manual-wal-flush",
        "true",
        "--wal-preallocate",
        "false",
        "--recycle-log-file-num",
        "2",
        "--sync-percent",
        "30",
    ]);
    kill_during_workload(&long, Duration::from_millis(300));
    let out = ok(&["stress", "db", s(&db), "--verify-only"]);
    assert!(out.contains("verified 400 keys at the start"), "{out}");
    let out = ok(&args);
    assert!(
        out.contains("verified 400 keys after a clean close"),
        "{out}"
    );
}

#[test]
fn engine_damage_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let mut args = vec!["stress", "db", s(&db), "--ops-per-thread", "800"];
    args.extend(SMALL_DB);
    ok(&args);
    // An acknowledged value removed behind the run's back.
    let present = {
        let db = Db::open(&db, Options::default()).unwrap();
        let (k, _) = db.iter().next().unwrap().unwrap();
        db.delete(&k).unwrap();
        db.close().unwrap();
        String::from_utf8(k.to_vec()).unwrap()
    };
    let err = fails(&["stress", "db", s(&db), "--verify-only"]);
    assert!(
        err.contains("fails verification") && err.contains(&present),
        "{err}"
    );
    assert!(err.contains("holds no value"), "{err}");
    assert!(err.contains("(seed 1;"), "{err}");
    // A value no write produced, a key no write used.
    {
        let db = Db::open(&db, Options::default()).unwrap();
        db.put(&present, b"00000001|forged value").unwrap();
        db.put(b"intruder", b"x").unwrap();
        db.close().unwrap();
    }
    let err = fails(&["stress", "db", s(&db), "--verify-only"]);
    assert!(err.contains("no write of this key produced"), "{err}");
    assert!(
        err.contains("key intruder which no write of this run produced"),
        "{err}"
    );
}

#[test]
fn engine_usage_and_a_damaged_expected_state() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let err = fails(&["stress", "db", s(&db), "--readpercent", "50"]);
    assert!(err.contains("must add up to 100, not 125"), "{err}");
    let err = fails(&["stress", "db", s(&db), "--verify-only"]);
    assert!(err.contains("there is no expected state"), "{err}");
    ok(&[
        "stress",
        "db",
        s(&db),
        "--keys",
        "50",
        "--ops-per-thread",
        "10",
    ]);
    let err = fails(&["stress", "db", s(&db), "--keys", "60"]);
    assert!(err.contains("cannot change them"), "{err}");
    // A database without its expected state is not adopted.
    let state = dir.path().join("db.expected-state");
    let moved = dir.path().join("elsewhere");
    OsFs.rename(&state, &moved).unwrap();
    let err = fails(&["stress", "db", s(&db)]);
    assert!(err.contains("is not empty"), "{err}");
    // Damage in a slot names the file and the byte.
    let mut bytes = lithify::vfs::read_file(&OsFs, &moved).unwrap();
    bytes[64 + 32 * 7 + 3] ^= 0x40;
    lithify::vfs::write_file_atomic(&OsFs, &state, &bytes).unwrap();
    let err = fails(&["stress", "db", s(&db), "--verify-only"]);
    assert!(
        err.contains("is damaged at byte 288") && err.contains("slot 7 checksum mismatch"),
        "{err}"
    );
}

const SMALL_LOG: [&str; 8] = [
    "--partitions",
    "2",
    "--keys",
    "60",
    "--config",
    "segment.bytes=2048",
    "--config",
    "delete.retention.ms=0",
];

#[test]
fn log_runs_survive_kills_and_verify() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut args = vec![
        "stress",
        "log",
        s(&data),
        "--records",
        "3000",
        "--seed",
        "5",
    ];
    args.extend(SMALL_LOG);
    let out = ok(&args);
    assert!(out.contains("verified 2 logs after a clean stop"), "{out}");
    let mut long = vec!["stress", "log", s(&data), "--seed", "6", "--rate", "20000"];
    long.extend(SMALL_LOG);
    kill_during_workload(&long, Duration::from_millis(500));
    kill_during_workload(&long, Duration::from_millis(150));
    let out = ok(&["stress", "log", s(&data), "--verify-only"]);
    assert!(out.contains("verified 2 logs at the start"), "{out}");
    ok(&args);
}

#[test]
fn transactional_log_runs_survive_kills_and_verify() {
    // Killed mid-transaction: the next run reads what a read_committed
    // consumer reads (the open transaction left out), checks every
    // .txnindex against the markers, aborts the open transaction and goes
    // on.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let txn = ["--transactional", "--abort-percent", "30"];
    let mut args = vec![
        "stress",
        "log",
        s(&data),
        "--records",
        "2000",
        "--seed",
        "7",
    ];
    args.extend(SMALL_LOG);
    args.extend(txn);
    let out = ok(&args);
    assert!(out.contains("verified 2 logs after a clean stop"), "{out}");
    let mut long = vec!["stress", "log", s(&data), "--seed", "8", "--rate", "20000"];
    long.extend(SMALL_LOG);
    long.extend(txn);
    kill_during_workload(&long, Duration::from_millis(400));
    kill_during_workload(&long, Duration::from_millis(120));
    let mut verify = vec!["stress", "log", s(&data), "--verify-only"];
    verify.extend(txn);
    let out = ok(&verify);
    assert!(out.contains("verified 2 logs at the start"), "{out}");
    ok(&args);
}

#[test]
fn log_damage_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut args = vec!["stress", "log", s(&data), "--records", "500"];
    args.extend(SMALL_LOG);
    ok(&args);
    // A record appended behind the run's back: the log is longer than
    // anything the run appended, and its value is not the run's.
    {
        let fs: Arc<dyn FileSystem> = Arc::new(OsFs);
        let mut config = LogConfig::default();
        config.cleanup_policy.compact = true;
        config.cleanup_policy.delete = false;
        let mut log = Log::open(fs, &data.join("stress-1"), config).unwrap();
        log.append(&[SimpleRecord::new(1, "key-0000000003", "forged")])
            .unwrap();
        log.flush().unwrap();
    }
    let err = fails(&["stress", "log", s(&data), "--verify-only"]);
    assert!(
        err.contains("stress-1") && err.contains("no append went past"),
        "{err}"
    );
    assert!(err.contains("key-0000000003 at offset"), "{err}");
}
