//! The `lithify log` commands, run as a user runs them.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use lithify_vfs::OsFs;

fn lithify(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lithify"))
        .args(args)
        .output()
        .expect("the lithify binary runs")
}

fn ok(args: &[&str]) -> String {
    let out = lithify(args);
    assert!(
        out.status.success(),
        "lithify {args:?} failed:\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn fails(args: &[&str]) -> String {
    let out = lithify(args);
    assert!(!out.status.success(), "lithify {args:?} succeeded");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        !stderr.contains("panicked") && !stderr.contains("RUST_BACKTRACE"),
        "{stderr}"
    );
    assert!(stderr.starts_with("error: "), "{stderr}");
    stderr
}

/// `(offset, key, payload)` of every `| offset:` line of a dump.
fn records(dump: &str) -> Vec<(i64, String, String)> {
    dump.lines()
        .filter_map(|l| l.strip_prefix("| offset: "))
        .map(|l| {
            let offset = l.split(' ').next().unwrap().parse().unwrap();
            let key = l
                .split(" key: ")
                .nth(1)
                .unwrap()
                .split(" payload: ")
                .next()
                .unwrap();
            let payload = l.split(" payload: ").nth(1).unwrap();
            (offset, key.to_string(), payload.to_string())
        })
        .collect()
}

fn write(path: impl AsRef<Path>, data: impl AsRef<[u8]>) {
    lithify_vfs::write_file_atomic(&OsFs, path.as_ref(), data.as_ref()).unwrap();
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn produce_clean_dump_shrinks_the_log_to_one_record_per_live_key_with_offsets_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path();
    let log = data.join("orders-0");
    let produced = ok(&[
        "log",
        "produce",
        s(&log),
        "--records",
        "600",
        "--keys",
        "25",
        "--tombstone-percent",
        "10",
        "--batch-size",
        "7",
        "--now",
        "1000000",
        "--roll",
        "--config",
        "segment.bytes=4000",
    ]);
    assert!(produced.starts_with("produced 600 records"), "{produced}");
    let before = records(&ok(&["log", "dump", s(&log), "--records"]));
    assert_eq!(before.len(), 600);
    assert_eq!(
        before.iter().map(|r| r.0).collect::<Vec<_>>(),
        (0..600).collect::<Vec<_>>()
    );
    // What must stay: each key's last record (tombstones included: their
    // horizon is a day away).
    let mut last: BTreeMap<&str, &(i64, String, String)> = BTreeMap::new();
    for r in &before {
        last.insert(&r.1, r);
    }
    let mut want: Vec<(i64, String, String)> = last.values().map(|r| (*r).clone()).collect();
    want.sort();

    let report = ok(&[
        "log",
        "clean",
        s(data),
        "--now",
        "2000000",
        "--config",
        "segment.bytes=4000",
    ]);
    assert!(report.contains("cleaned log orders-0"), "{report}");
    assert!(report.contains("new first dirty offset 600"), "{report}");
    assert!(report.contains("1 of 1 logs cleaned"), "{report}");
    let after = records(&ok(&["log", "dump", s(&log), "--records"]));
    assert_eq!(after, want);
    assert!(after.len() <= 25);

    // The checkpoint says where the next round starts.
    let cp = ok(&["log", "dump", s(&data.join("cleaner-offset-checkpoint"))]);
    assert!(
        cp.contains("partition: orders-0 firstDirtyOffset: 600"),
        "{cp}"
    );
    // A second run has nothing to do.
    let again = ok(&["log", "clean", s(data), "--now", "2000000"]);
    assert!(
        again.contains("0 of 1 logs cleaned, 1 not eligible"),
        "{again}"
    );

    // The first round stamped the tombstones with the horizon now +
    // delete.retention.ms (a day); a round at the horizon removes them.
    ok(&[
        "log",
        "produce",
        s(&log),
        "--records",
        "5",
        "--keys",
        "25",
        "--tombstone-percent",
        "0",
        "--seed",
        "9",
        "--now",
        "3000000",
        "--roll",
    ]);
    ok(&["log", "clean", s(data), "--now", "88399999"]);
    let kept = records(&ok(&["log", "dump", s(&log), "--records"]));
    assert!(
        kept.iter().any(|r| r.2 == "null"),
        "before the horizon: {kept:?}"
    );
    ok(&[
        "log",
        "produce",
        s(&log),
        "--records",
        "5",
        "--keys",
        "25",
        "--tombstone-percent",
        "0",
        "--seed",
        "10",
        "--now",
        "3000100",
        "--roll",
    ]);
    ok(&["log", "clean", s(data), "--now", "88400000"]);
    let final_records = records(&ok(&["log", "dump", s(&log), "--records"]));
    assert!(
        final_records.iter().all(|r| r.2 != "null"),
        "{final_records:?}"
    );
}

#[test]
fn a_corrupt_segment_fails_with_an_error_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path();
    let log = data.join("t-0");
    ok(&[
        "log",
        "produce",
        s(&log),
        "--records",
        "200",
        "--keys",
        "10",
        "--now",
        "1000",
        "--roll",
        "--config",
        "segment.bytes=3000",
    ]);
    let seg = log.join("00000000000000000000.log");
    let mut bytes = lithify_vfs::read_file(&OsFs, &seg).unwrap();
    bytes[100] ^= 0x20;
    write(&seg, &bytes);

    let err = fails(&["log", "dump", s(&seg)]);
    assert!(
        err.contains("00000000000000000000.log") && err.contains("CRC"),
        "{err}"
    );
    let out = lithify(&["log", "dump", s(&seg)]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("isvalid: false"));

    let err = fails(&["log", "clean", s(data), "--now", "5000"]);
    assert!(err.contains("could not be cleaned"), "{err}");
    let out = lithify(&["log", "clean", s(data), "--now", "5000"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("failed to clean log t-0") && stdout.contains("00000000000000000000.log"),
        "{stdout}"
    );

    // A torn tail is damage too.
    write(&seg, &bytes[..bytes.len() - 5]);
    let err = fails(&["log", "dump", s(&seg)]);
    assert!(err.contains("not a complete batch"), "{err}");
}

#[test]
fn bad_arguments_are_one_sentence_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let err = fails(&["log", "clean", s(&tmp.path().join("missing"))]);
    assert!(
        err.contains("missing") && err.contains("not a directory"),
        "{err}"
    );
    let err = fails(&["log", "dump", s(&tmp.path().join("nope.log"))]);
    assert!(err.contains("nope.log"), "{err}");
    let log = tmp.path().join("x-0");
    let err = fails(&["log", "produce", s(&log), "--config", "segment.bytes=1"]);
    assert!(err.contains("segment.bytes"), "{err}");
    let err = fails(&["log", "produce", s(&log), "--config", "no.such.thing=1"]);
    assert!(err.contains("no.such.thing"), "{err}");
    let err = fails(&[
        "log",
        "clean",
        s(tmp.path()),
        "--config",
        "log.cleaner.threads=zero",
    ]);
    assert!(err.contains("log.cleaner.threads"), "{err}");
    // A per-log properties file with a bad line names the file.
    ok(&[
        "log",
        "produce",
        s(&log),
        "--records",
        "10",
        "--roll",
        "--now",
        "1",
    ]);
    write(
        tmp.path().join("x-0.properties"),
        "min.cleanable.dirty.ratio=7\n",
    );
    let out = lithify(&["log", "clean", s(tmp.path()), "--now", "5"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("x-0.properties"), "{stderr}");
}

#[test]
fn per_log_settings_and_map_size_reach_the_cleaner() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path();
    for p in ["a-0", "b-0"] {
        ok(&[
            "log",
            "produce",
            s(&data.join(p)),
            "--records",
            "300",
            "--keys",
            "50",
            "--now",
            "1000",
            "--roll",
            "--tombstone-percent",
            "0",
        ]);
    }
    // b is excluded by a minimum ratio it cannot beat; a map of 5 slots at
    // 0.8 holds 4 keys, so a's round is partial.
    write(
        data.join("b-0.properties"),
        "# b stays dirty\nmin.cleanable.dirty.ratio=1\n",
    );
    let out = ok(&[
        "log",
        "clean",
        s(data),
        "--now",
        "5000",
        "--map-memory",
        "120",
        "--load-factor",
        "0.8",
    ]);
    assert!(
        out.contains("cleaned log a-0") && !out.contains("cleaned log b-0"),
        "{out}"
    );
    assert!(out.contains("full: partial round"), "{out}");
    let out = ok(&[
        "log",
        "clean",
        s(data),
        "--now",
        "5000",
        "--log-config",
        "b-0:min.cleanable.dirty.ratio=0.5",
    ]);
    assert!(out.contains("cleaned log b-0"), "{out}");
}

#[test]
fn dump_reads_indexes_and_whole_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("t-0");
    ok(&[
        "log",
        "produce",
        s(&log),
        "--records",
        "300",
        "--keys",
        "30",
        "--now",
        "1000",
        "--roll",
        "--batch-size",
        "3",
        "--config",
        "segment.bytes=5000",
        "--config",
        "index.interval.bytes=200",
    ]);
    let index = ok(&["log", "dump", s(&log.join("00000000000000000000.index"))]);
    assert!(
        index.lines().nth(1).unwrap().starts_with("offset: "),
        "{index}"
    );
    let time = ok(&[
        "log",
        "dump",
        s(&log.join("00000000000000000000.timeindex")),
    ]);
    assert!(
        time.lines().nth(1).unwrap().starts_with("timestamp: "),
        "{time}"
    );
    let all = ok(&["log", "dump", s(tmp.path())]);
    assert!(all.matches("Dumping").count() > 3, "{all}");
    assert_eq!(all.matches("isvalid: true").count(), 100);
}

#[test]
fn bench_reports_cleaning_against_copy() {
    let out = ok(&[
        "log",
        "bench",
        "--records",
        "3000",
        "--keys",
        "100",
        "--value-size",
        "20",
    ]);
    assert!(out.contains("copy:") && out.contains("clean:"), "{out}");
    assert!(out.contains("the speed of a plain copy"), "{out}");
}
