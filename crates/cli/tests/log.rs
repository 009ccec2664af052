//! The `lithify log` commands, run as a user runs them.

#[allow(dead_code)] // this file runs the binary its own way
mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use lithify::vfs::{FileSystem as _, OsFs};

/// Runs `lithify`, with the libraries' `tracing` events off so stderr
/// holds the command's own sentences only.
fn lithify(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lithify"))
        .args(args)
        .env("RUST_LOG", "off")
        .output()
        .expect("the lithify binary runs")
}

/// Runs `lithify` with the default event filter (warnings and errors).
fn lithify_with_events(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lithify"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("the lithify binary runs")
}

fn ok(args: &[&str]) -> String {
    common::checked(args, lithify(args))
}

fn fails(args: &[&str]) -> String {
    common::refused(args, lithify(args))
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
    lithify::vfs::write_file_atomic(&OsFs, path.as_ref(), data.as_ref()).unwrap();
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
    let before = records(&ok(&["log", "dump", s(&log), "--print-data-log"]));
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
    let after = records(&ok(&["log", "dump", s(&log), "--print-data-log"]));
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
    let kept = records(&ok(&["log", "dump", s(&log), "--print-data-log"]));
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
    let final_records = records(&ok(&["log", "dump", s(&log), "--print-data-log"]));
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
    let mut bytes = lithify::vfs::read_file(&OsFs, &seg).unwrap();
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
    assert!(
        err.contains("failed to clean log t-0") && err.contains("00000000000000000000.log"),
        "{err}"
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
    let err = fails(&[
        "log",
        "produce",
        s(&tmp.path().join("plain")),
        "--records",
        "5",
    ]);
    assert!(
        err.contains("plain") && err.contains("<topic>-<partition>"),
        "{err}"
    );
    assert!(!OsFs.exists(&tmp.path().join("plain")), "nothing created");
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

#[test]
fn bench_cleans_partitions_on_threads_and_reports_json() {
    let out = ok(&[
        "log",
        "bench",
        "--records",
        "2000",
        "--keys",
        "50",
        "--value-size",
        "20",
        "--partitions",
        "2",
        "--threads",
        "2",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (v["partitions"].as_u64(), v["threads"].as_u64()),
        (Some(2), Some(2))
    );
    let rounds = v["rounds"].as_array().unwrap();
    let names: Vec<&str> = rounds
        .iter()
        .map(|r| r["partition"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["bench-0", "bench-1"]);
    for r in rounds {
        // Every record read, one kept per key (50 keys, no tombstones).
        assert_eq!(r["records_read"].as_u64(), Some(2000), "{r}");
        assert_eq!(r["records_kept"].as_u64(), Some(50), "{r}");
        for field in [
            "secs",
            "map_secs",
            "rewrite_secs",
            "mb_per_s",
            "records_per_s",
            "copy_ratio",
        ] {
            assert!(
                r[field].as_f64().is_some_and(f64::is_finite),
                "{field}: {r}"
            );
        }
    }
    assert_eq!(v["total"]["records_read"].as_u64(), Some(4000));
    assert!(
        v["total"]["copy_ratio"].as_f64().is_some_and(|x| x > 0.0),
        "{v}"
    );

    let text = ok(&[
        "log",
        "bench",
        "--records",
        "2000",
        "--keys",
        "50",
        "--partitions",
        "2",
    ]);
    assert!(
        text.contains("clean bench-0:") && text.contains("clean bench-1:"),
        "{text}"
    );
    assert!(text.contains("(2 partitions, 1 threads)"), "{text}");
}

/// The `.log` files of a log directory, in offset order.
fn segment_logs(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut names: Vec<String> = OsFs
        .list_dir(dir)
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".log"))
        .collect();
    names.sort();
    names.into_iter().map(|n| dir.join(n)).collect()
}

/// Byte positions of the batches of a `.log`.
fn batch_starts(bytes: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos + 12 <= bytes.len() {
        out.push(pos);
        let len = i32::from_be_bytes(bytes[pos + 8..pos + 12].try_into().unwrap());
        pos += 12 + len as usize;
    }
    out
}

/// Every index file of every log under `data`: a whole number of entries
/// and no preallocated zeros (an all-zero entry is never written).
fn assert_indexes_trimmed(data: &Path) {
    let mut seen = 0;
    for dir in OsFs.list_dir(data).unwrap() {
        let dir = data.join(dir);
        if !OsFs.is_dir(&dir) {
            continue;
        }
        for name in OsFs.list_dir(&dir).unwrap() {
            let entry = if name.ends_with(".index") {
                8
            } else if name.ends_with(".timeindex") {
                12
            } else {
                continue;
            };
            let bytes = lithify::vfs::read_file(&OsFs, &dir.join(&name)).unwrap();
            assert_eq!(bytes.len() % entry, 0, "{name}: {} bytes", bytes.len());
            assert!(
                bytes.chunks(entry).all(|e| e.iter().any(|b| *b != 0)),
                "{name}: {} bytes with zero entries (preallocated, not trimmed)",
                bytes.len()
            );
            seen += 1;
        }
    }
    assert!(seen > 0);
}

fn produce(log: &Path, extra: &[&str]) -> String {
    let mut args = vec!["log", "produce", s(log), "--now", "1000"];
    args.extend_from_slice(extra);
    ok(&args)
}

/// Issue 18: three segments of duplicate keys, the middle segment's first
/// batch with magic byte 0xFF. `log clean` used to clean the log without
/// that segment's records and move the checkpoint past them.
#[test]
fn a_bad_magic_byte_in_a_flushed_segment_is_refused_naming_file_and_offset() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path();
    let log = data.join("t-0");
    produce(
        &log,
        &[
            "--records",
            "60",
            "--keys",
            "5",
            "--batch-size",
            "10",
            "--value-size",
            "20",
            "--config",
            "segment.bytes=1000",
        ],
    );
    let segs = segment_logs(&log);
    assert_eq!(segs.len(), 3);
    let mut bytes = lithify::vfs::read_file(&OsFs, &segs[1]).unwrap();
    bytes[16] = 0xff;
    write(&segs[1], &bytes);
    let out = lithify(&["log", "clean", s(data), "--now", "5000"]);
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(s(&segs[1])) && stderr.contains("byte offset 0"),
        "{stderr}"
    );
    assert!(stderr.contains("recovery point"), "{stderr}");
    assert!(
        stdout.contains("0 of 1 logs cleaned, 0 not eligible, 1 failed"),
        "{stdout}"
    );
    // Nothing replaced, nothing truncated, no checkpoint.
    assert_eq!(lithify::vfs::read_file(&OsFs, &segs[1]).unwrap(), bytes);
    assert_eq!(segment_logs(&log), segs);
    assert!(!OsFs.exists(&data.join("cleaner-offset-checkpoint")));
    let first = records(&ok(&["log", "dump", s(&segs[0]), "--print-data-log"]));
    assert_eq!(first.len(), 20);
}

/// Issue 18: a non-active segment cut mid-batch was cleaned with the cut
/// records gone (900 of 20,000) and exit 0.
#[test]
fn a_flushed_segment_cut_mid_batch_is_refused_and_keeps_its_records() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path();
    let log = data.join("t-0");
    produce(
        &log,
        &[
            "--records",
            "20000",
            "--keys",
            "500",
            "--config",
            "segment.bytes=1000000",
        ],
    );
    let segs = segment_logs(&log);
    assert!(segs.len() >= 2);
    let bytes = lithify::vfs::read_file(&OsFs, &segs[0]).unwrap();
    let cut = bytes.len() - bytes.len() / 20;
    let starts = batch_starts(&bytes);
    let partial = *starts.iter().rev().find(|p| **p < cut).unwrap();
    assert_ne!(partial, cut);
    write(&segs[0], &bytes[..cut]);
    let err = fails(&["log", "clean", s(data), "--now", "5000"]);
    assert!(
        err.contains(s(&segs[0])) && err.contains(&format!("byte offset {partial}")),
        "{err}"
    );
    assert_eq!(
        OsFs.file_size(&segs[0]).unwrap(),
        cut as u64,
        "nothing truncated"
    );
    assert!(!OsFs.exists(&data.join("cleaner-offset-checkpoint")));
}

/// Issue 18: a bad magic byte in the active segment was truncated away
/// silently (95,792 -> 23,948 bytes, exit 0). Those bytes were flushed.
#[test]
fn a_bad_magic_byte_in_the_active_segment_is_refused_not_truncated() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path();
    let log = data.join("t-0");
    produce(&log, &["--records", "800", "--keys", "50"]);
    let segs = segment_logs(&log);
    assert_eq!(segs.len(), 1);
    let mut bytes = lithify::vfs::read_file(&OsFs, &segs[0]).unwrap();
    let third = batch_starts(&bytes)[2];
    bytes[third + 16] = 0xff;
    write(&segs[0], &bytes);
    let err = fails(&["log", "clean", s(data), "--now", "5000"]);
    assert!(
        err.contains(s(&segs[0])) && err.contains(&format!("byte offset {third}")),
        "{err}"
    );
    assert_eq!(OsFs.file_size(&segs[0]).unwrap(), bytes.len() as u64);
}

/// Bytes above the recovery point (appended, never flushed: here the
/// checkpoint is set back as a crash before the last flush leaves it) are
/// truncated at the first invalid batch, with a warning naming the file,
/// the byte offset and where the dropped bytes are kept.
#[test]
fn damage_above_the_recovery_point_is_truncated_with_a_warning_and_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path();
    let log = data.join("t-0");
    produce(
        &log,
        &["--records", "100", "--keys", "10", "--batch-size", "10"],
    );
    write(
        data.join("recovery-point-offset-checkpoint"),
        "0\n1\nt 0 50\n",
    );
    let seg = &segment_logs(&log)[0];
    let mut bytes = lithify::vfs::read_file(&OsFs, seg).unwrap();
    let seventh = batch_starts(&bytes)[7];
    bytes[seventh + 16] = 0xff;
    write(seg, &bytes);
    let out = lithify_with_events(&["log", "clean", s(data), "--now", "5000"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The library's warning event, and the command's own sentence.
    assert!(
        stderr.contains("recovery truncated bytes above the recovery point"),
        "{stderr}"
    );
    let kept = log
        .join("lost")
        .join(format!("00000000000000000000.log.{seventh}"));
    assert!(
        stderr.contains("warning: log")
            && stderr.contains(s(seg))
            && stderr.contains(&format!("byte offset {seventh}"))
            && stderr.contains(s(&kept)),
        "{stderr}"
    );
    assert_eq!(
        lithify::vfs::read_file(&OsFs, &kept).unwrap(),
        &bytes[seventh..]
    );
    assert_eq!(OsFs.file_size(seg).unwrap(), seventh as u64);
    let left = records(&ok(&["log", "dump", s(seg), "--print-data-log"]));
    assert_eq!(left.len(), 70);
}

/// A `cleaner-offset-checkpoint` Kafka could not read takes its data
/// directory offline (Kafka's CheckpointFileWithFailureHandler): nothing
/// is cleaned, the file is kept, the counts add up. It used to print "1 of
/// 1 logs cleaned ... 1 failed".
#[test]
fn a_garbage_checkpoint_is_refused_and_the_counts_add_up() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path();
    produce(
        &data.join("t-0"),
        &["--records", "300", "--keys", "10", "--roll"],
    );
    let cp = data.join("cleaner-offset-checkpoint");
    write(&cp, "garbage\n");
    let out = lithify(&["log", "clean", s(data), "--now", "5000"]);
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("0 of 1 logs cleaned, 0 not eligible, 1 failed"),
        "{stdout}"
    );
    assert!(
        stderr.contains(s(&cp)) && stderr.contains("line 1 (byte offset 0)"),
        "{stderr}"
    );
    assert_eq!(lithify::vfs::read_file(&OsFs, &cp).unwrap(), b"garbage\n");
    // Removing the file loses nothing: the log is cleaned from its start.
    OsFs.remove_file(&cp).unwrap();
    let out = ok(&["log", "clean", s(data), "--now", "5000"]);
    assert!(
        out.contains("1 of 1 logs cleaned, 0 not eligible, 0 failed"),
        "{out}"
    );
}

/// Kafka grows the cleaner's read buffer to the next batch's size, so a
/// valid batch larger than a lowered max.message.bytes is cleaned.
#[test]
fn a_batch_larger_than_max_message_bytes_is_cleaned() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path();
    produce(
        &data.join("t-0"),
        &[
            "--records",
            "400",
            "--keys",
            "50",
            "--value-size",
            "10000",
            "--batch-size",
            "200",
            "--roll",
            "--config",
            "max.message.bytes=5000000",
        ],
    );
    let out = ok(&["log", "clean", s(data), "--now", "5000"]);
    assert!(out.contains("1 of 1 logs cleaned"), "{out}");
}

/// After `log produce` and `log clean` the directory looks like one Kafka
/// leaves after a clean shutdown: no index holds preallocated zeros.
#[test]
fn produce_and_clean_leave_trimmed_indexes() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path();
    for p in ["a-0", "b-1"] {
        produce(
            &data.join(p),
            &[
                "--records",
                "3000",
                "--keys",
                "40",
                "--config",
                "segment.bytes=60000",
            ],
        );
    }
    assert_indexes_trimmed(data);
    let out = ok(&["log", "clean", s(data), "--now", "5000"]);
    assert!(out.contains("2 of 2 logs cleaned"), "{out}");
    assert_indexes_trimmed(data);
    // The recovery points were checkpointed on close.
    let rp = ok(&[
        "log",
        "dump",
        s(&data.join("recovery-point-offset-checkpoint")),
    ]);
    assert!(
        rp.contains("partition: a-0 recoveryPoint: 3000")
            && rp.contains("partition: b-1 recoveryPoint: 3000"),
        "{rp}"
    );
}

/// `(offset, key, value)` of what a `read_committed` consumer reads from
/// the log at `dir`, and its `read_uncommitted` record count.
fn committed_view(dir: &Path) -> (Vec<(i64, String, Option<String>)>, usize) {
    use lithify::log::{Log, LogConfig};
    let mut config = LogConfig::default();
    config.cleanup_policy.compact = true;
    let log = Log::open(std::sync::Arc::new(OsFs), dir, config).unwrap();
    let s = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
    let committed = log
        .committed_records_from(log.log_start_offset())
        .unwrap()
        .map(|r| {
            let r = r.unwrap();
            (r.offset, s(&r.key.unwrap()), r.value.map(|v| s(&v)))
        })
        .collect();
    let all = log.records_from(log.log_start_offset()).unwrap().count();
    log.close().unwrap();
    (committed, all)
}

#[test]
fn transactional_logs_are_produced_dumped_and_cleaned_keeping_the_committed_view() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path();
    let log = data.join("txns-0");
    let produced = ok(&[
        "log",
        "produce",
        s(&log),
        "--records",
        "1500",
        "--keys",
        "40",
        "--batch-size",
        "6",
        "--transactional",
        "--abort-ratio",
        "0.3",
        "--producers",
        "3",
        "--now",
        "1000000",
        "--roll",
        "--config",
        "segment.bytes=12000",
    ]);
    assert!(
        produced.contains("committed,") && produced.contains("aborted)"),
        "{produced}"
    );
    assert!(produced.contains("of 3 producers"), "{produced}");
    // kafka-dump-log's view: producer fields, markers, .txnindex entries,
    // producer snapshots; and the indexes agree with the markers.
    let dump = ok(&[
        "log",
        "dump",
        s(&log),
        "--print-data-log",
        "--transaction-index-sanity-check",
    ]);
    assert!(
        dump.contains("isTransactional: true isControl: true"),
        "markers"
    );
    assert!(dump.contains("endTxnMarker: ABORT coordinatorEpoch: 0"));
    assert!(dump.contains("endTxnMarker: COMMIT coordinatorEpoch: 0"));
    assert!(dump.contains("version: 0 producerId: "), "txnindex entries");
    assert!(dump.contains("currentTxnFirstOffset: None"), "snapshots");
    assert!(dump.contains(" 0 problems"), "{dump}");
    let (before, all_before) = committed_view(&log);
    assert!(
        before.len() < all_before,
        "aborted records are not committed"
    );
    // What a clean leaves: each key's last committed record.
    let mut last: BTreeMap<String, (i64, String, Option<String>)> = BTreeMap::new();
    for r in &before {
        last.insert(r.1.clone(), r.clone());
    }
    let mut want: Vec<_> = last.into_values().collect();
    want.sort();

    let report = ok(&["log", "clean", s(data), "--now", "2000000"]);
    assert!(report.contains("cleaned log txns-0"), "{report}");
    assert!(
        report.contains("transactions: aborted batches removed"),
        "{report}"
    );
    let (after, all_after) = committed_view(&log);
    assert_eq!(after, want);
    assert!(all_after < all_before);
    let dump = ok(&["log", "dump", s(&log), "--transaction-index-sanity-check"]);
    assert!(dump.contains(" 0 problems"), "{dump}");

    // A day later (delete.retention.ms) the markers whose transactions
    // are gone go too; the committed view does not change.
    ok(&[
        "log",
        "produce",
        s(&log),
        "--records",
        "30",
        "--keys",
        "40",
        "--transactional",
        "--seed",
        "2",
        "--now",
        "3000000",
        "--roll",
    ]);
    let markers = |dump: &str| dump.matches("endTxnMarker").count();
    let markers_before = markers(&ok(&["log", "dump", s(&log), "--print-data-log"]));
    let every_round = "min.cleanable.dirty.ratio=0.01";
    ok(&[
        "log",
        "clean",
        s(data),
        "--now",
        "3000000",
        "--config",
        every_round,
    ]);
    ok(&[
        "log",
        "produce",
        s(&log),
        "--records",
        "5",
        "--keys",
        "40",
        "--seed",
        "3",
        "--now",
        "3000001",
        "--roll",
    ]);
    let (before_late, _) = committed_view(&log);
    let report = ok(&[
        "log",
        "clean",
        s(data),
        "--now",
        "100000000",
        "--config",
        every_round,
    ]);
    assert!(report.contains("markers removed"), "{report}");
    let markers_after = markers(&ok(&["log", "dump", s(&log), "--print-data-log"]));
    assert!(
        markers_after < markers_before,
        "{markers_before} -> {markers_after}"
    );
    // Every key keeps its latest committed record; a tombstone may have
    // gone past its horizon.
    let (final_view, _) = committed_view(&log);
    let latest = |v: &[(i64, String, Option<String>)]| {
        let mut m: BTreeMap<String, (i64, Option<String>)> = BTreeMap::new();
        for r in v {
            m.insert(r.1.clone(), (r.0, r.2.clone()));
        }
        m
    };
    let (was, now) = (latest(&before_late), latest(&final_view));
    for (k, (o, v)) in &was {
        match v {
            Some(_) => assert_eq!(now.get(k), Some(&(*o, v.clone())), "{k}"),
            None => assert!(now.get(k).is_none_or(|n| n == &(*o, None)), "{k}"),
        }
    }
    assert!(now.keys().all(|k| was.contains_key(k)));
    let dump = ok(&["log", "dump", s(&log), "--transaction-index-sanity-check"]);
    assert!(dump.contains(" 0 problems"), "{dump}");
}

/// Starts `lithify args` in the background (events off, output kept).
fn spawn(args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_lithify"))
        .args(args)
        .env("RUST_LOG", "off")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the lithify binary runs")
}

/// Waits until another process holds `dir/.lock` exclusively (a shared
/// lock is refused); panics if `child` ends first.
fn wait_until_held(dir: &Path, child: &mut std::process::Child) {
    let lock = dir.join(lithify::log::LOCK_FILE_NAME);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the first process ended ({status}) before it was seen holding {lock:?}");
        }
        match OsFs.lock_shared(&lock) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
            Ok(held) => drop(held),
            Err(_) => {}
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// Asserts a refusal for another process: exit status 2 (a usage error)
/// and one `error:` sentence naming `dir` as in use.
#[track_caller]
fn assert_in_use(args: &[&str], out: Output, dir: &Path) {
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    let stderr = common::refused(args, out);
    assert!(
        stderr.contains(&format!("{} is in use by another process", dir.display())),
        "{args:?}: {stderr}"
    );
}

/// Issue 34: two `log produce` processes on one partition both succeeded
/// with overlapping offsets, and the log lost acknowledged records. Now
/// the second is refused while the first runs, and every record the first
/// acknowledged is there.
#[test]
fn a_second_producer_on_a_partition_is_refused_and_the_first_loses_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("t-0");
    // Tiny segments: a roll (and its syncs) per record keeps the first
    // producer running long enough to be overlapped.
    let first_args = [
        "log",
        "produce",
        s(&log),
        "--records",
        "2000",
        "--batch-size",
        "1",
        "--value-size",
        "10",
        "--now",
        "1000",
        "--config",
        "segment.bytes=100",
    ];
    let mut first = spawn(&first_args);
    wait_until_held(&log, &mut first);
    let second_args = [
        "log",
        "produce",
        s(&log),
        "--records",
        "50",
        "--now",
        "1000",
    ];
    assert_in_use(&second_args, lithify(&second_args), &log);
    let out = first.wait_with_output().unwrap();
    let stdout = common::checked(&first_args, out);
    assert!(stdout.contains("produced 2000 records"), "{stdout}");
    assert!(stdout.contains("at offsets 0..2000"), "{stdout}");
    // Every acknowledged record, once, in order; nothing to refuse.
    let dumped = records(&ok(&["log", "dump", s(&log), "--print-data-log"]));
    assert_eq!(
        dumped.iter().map(|r| r.0).collect::<Vec<_>>(),
        (0..2000).collect::<Vec<_>>()
    );
    ok(&["log", "check", s(&log)]);
    // Once the first is done, a second producer appends after it.
    let again = ok(&second_args);
    assert!(again.contains("at offsets 2000..2050"), "{again}");
}

/// Issue 34: two `log clean` runs of one data directory, or `log produce`
/// to a partition being cleaned, were not excluded. While a clean runs,
/// a second clean, a producer of its partition and the read-only tools
/// are refused; the clean itself succeeds.
#[test]
fn a_running_clean_excludes_a_second_clean_a_producer_and_readers() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path();
    let log = data.join("t-0");
    produce(
        &log,
        &[
            "--records",
            "1500",
            "--keys",
            "10",
            "--batch-size",
            "1",
            "--value-size",
            "10",
            "--roll",
            "--config",
            "segment.bytes=100",
        ],
    );
    // Small output segments: many renames and syncs, a long round.
    let clean_args = [
        "log",
        "clean",
        s(data),
        "--now",
        "5000",
        "--config",
        "segment.bytes=100",
    ];
    let mut first = spawn(&clean_args);
    wait_until_held(data, &mut first);
    assert_in_use(&clean_args, lithify(&clean_args), data);
    wait_until_held(&log, &mut first);
    let produce_args = ["log", "produce", s(&log), "--records", "5", "--now", "6000"];
    assert_in_use(&produce_args, lithify(&produce_args), &log);
    let check_args = ["log", "check", s(&log)];
    assert_in_use(&check_args, lithify(&check_args), &log);
    let dump_args = ["log", "dump", s(&log)];
    assert_in_use(&dump_args, lithify(&dump_args), &log);
    let out = first.wait_with_output().unwrap();
    let stdout = common::checked(&clean_args, out);
    assert!(stdout.contains("1 of 1 logs cleaned"), "{stdout}");
    // Afterwards all of them run again.
    ok(&["log", "check", s(data)]);
    let produced = ok(&produce_args);
    assert!(produced.contains("at offsets 1500..1505"), "{produced}");
}

/// Issue 34: `log dump` exited 0 on batches whose base offsets go
/// backwards, and nothing checked a log directory as a whole. `log check`
/// exits 3 naming the file and byte offset; so does `log dump`.
#[test]
fn check_and_dump_refuse_offsets_that_go_backwards() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path();
    let log = data.join("t-0");
    produce(
        &log,
        &[
            "--records",
            "60",
            "--keys",
            "5",
            "--batch-size",
            "10",
            "--value-size",
            "10",
            "--config",
            "segment.bytes=1000",
        ],
    );
    let report = ok(&["log", "check", s(data)]);
    assert!(report.contains(": 1 logs,"), "{report}");
    assert!(report.contains("0 problems, 0 warnings"), "{report}");
    let segs = segment_logs(&log);
    let mut bytes = lithify::vfs::read_file(&OsFs, &segs[0]).unwrap();
    let starts = batch_starts(&bytes);
    // The second batch's base offset (outside the CRC) repeats the first's.
    let base = bytes[0..8].to_vec();
    bytes[starts[1]..starts[1] + 8].copy_from_slice(&base);
    write(&segs[0], &bytes);
    let at = format!("{} at byte offset {}", segs[0].display(), starts[1]);
    for args in [
        vec!["log", "check", s(&log)],
        vec!["log", "check", s(data)],
        vec!["log", "dump", s(&log)],
        vec!["log", "dump", s(data)],
    ] {
        let out = lithify(&args);
        assert_eq!(out.status.code(), Some(3), "{args:?}");
        let stderr = common::refused(&args, out);
        assert!(stderr.contains(&at), "{args:?}: {stderr}");
    }
    let single = ["log", "dump", s(&segs[0])];
    let stderr = fails(&single);
    assert!(stderr.contains("byte offset"), "{stderr}");
}

/// Produces 60 records in batches of 10 into segments of about 1000 bytes;
/// returns the segments' `.log` files.
fn produce_small_segments(log: &Path) -> Vec<std::path::PathBuf> {
    produce(
        log,
        &[
            "--records",
            "60",
            "--keys",
            "5",
            "--batch-size",
            "10",
            "--config",
            "segment.bytes=1000",
        ],
    );
    segment_logs(log)
}

/// Issue 34: a live segment renamed `*.deleted` was deleted by the next
/// clean with no message. Now `log check` warns of it and `log clean`
/// keeps it in `lost/`, saying so; a real leftover is deleted with a
/// warning naming its offsets.
#[test]
fn a_live_segment_renamed_deleted_is_kept_and_a_leftover_is_deleted_with_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path();
    let log = data.join("t-0");
    let segs = produce_small_segments(&log);
    assert!(segs.len() >= 3, "{segs:?}");
    let middle = &segs[1];
    let renamed = std::path::PathBuf::from(format!("{}.deleted", middle.display()));
    let sibling = |ext: &str| middle.with_extension(ext);
    let renamed_sibling =
        |ext: &str| std::path::PathBuf::from(format!("{}.deleted", sibling(ext).display()));
    OsFs.rename(middle, &renamed).unwrap();
    for ext in ["index", "timeindex"] {
        OsFs.rename(&sibling(ext), &renamed_sibling(ext)).unwrap();
    }
    let out = lithify(&["log", "check", s(data)]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("warning: {}", renamed.display()))
            && stderr.contains("keeps it in lost/"),
        "{stderr}"
    );
    let out = lithify(&["log", "clean", s(data), "--now", "5000"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let name = renamed.file_name().unwrap().to_str().unwrap();
    let kept = log.join("lost").join(name);
    assert!(
        stderr.contains(&format!("moved aside the leftover {name}"))
            && stderr.contains(s(&kept))
            && stderr.contains("move it back without the .deleted suffix"),
        "{stderr}"
    );
    assert!(OsFs.exists(&kept), "kept");

    // A real leftover, in a data directory of its own: a copy of the
    // first segment under its `.deleted` name, as a crash during a swap
    // leaves it.
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path();
    let log = data.join("t-0");
    let segs = produce_small_segments(&log);
    let leftover = std::path::PathBuf::from(format!("{}.deleted", segs[0].display()));
    write(&leftover, lithify::vfs::read_file(&OsFs, &segs[0]).unwrap());
    let out = lithify(&["log", "check", s(data)]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("warning: {}", leftover.display())),
        "{stderr}"
    );
    let out = lithify(&["log", "clean", s(data), "--now", "5000"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let name = leftover.file_name().unwrap().to_str().unwrap();
    assert!(
        stderr.contains("warning: log")
            && stderr.contains(&format!("deleted the leftover {name} (offsets 0..")),
        "{stderr}"
    );
    assert!(!OsFs.exists(&leftover));
}
