//! Golden data directories: a database, a database whose live WAL is
//! LZ4-compressed, a Kafka log directory with transactions and a backup
//! directory, committed under `testdata/golden/<generation>/`. Each
//! generation was written once, by the code of its time:
//!
//! * `2026-12-a`: before file identity and WAL format version 3 (the
//!   "Contain every failure" issue);
//! * `2026-12-b`: after it (owned logs, writer identity in every table).
//! * `2026-12-c`: key-value separation (blob files, their MANIFEST records
//!   and the blob indexes in the tables; blob files shared in backups).
//!
//! Every later build must open every generation and read back exactly what
//! was written: these tests are the promise that a format change never
//! strands an existing database, log or backup (`docs/FORMATS.md`,
//! "Compatibility").
//!
//! The directories are never rewritten. `write_golden` (ignored; run with
//! `LITHIFY_WRITE_GOLDEN=<dir> cargo test -p lithify --test golden --
//! --ignored`) shows how they were made and writes them into a new `<dir>`:
//! a change to a format adds a generation that way, and a line to
//! [`GENERATIONS`]. It refuses a directory that exists.
//!
//! Each check copies the committed directory into a temporary one first: an
//! open replays and flushes WALs, a backup engine takes its `LOCK`.

// Test scaffolding copies and removes the golden trees with std::fs.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lithify::backup::BackupEngine;
use lithify::log::{
    CleanerConfig, Log, LogCleaner, LogConfig, OpenOptions, Producer, record::SimpleRecord,
    record::TransactionResult, shared_log,
};
use lithify::vfs::OsFs;
use lithify::{
    BlobCompression, BlobOptions, CompactionStrategy, Compression, Db, ManualClock, Options,
    StringAppend, TableOptions, WalCompression, WriteBatch,
};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/golden")
}

/// The golden generations, oldest first (`docs/FORMATS.md`, "Compatibility",
/// says what each one's formats are). A format change adds one; none is
/// ever removed.
const GENERATIONS: [&str; 3] = ["2026-12-a", "2026-12-b", "2026-12-c"];

/// Runs `check` on every generation, saying which one failed.
fn each_generation(check: fn(&str)) {
    for generation in GENERATIONS {
        println!("golden generation {generation}");
        check(generation);
    }
}

/// Copies the directory tree `from` into `to`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A fresh copy of one golden directory of one generation.
fn copy_of(generation: &str, name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let to = tmp.path().join(name);
    copy_tree(&golden_dir().join(generation).join(name), &to);
    (tmp, to)
}

// ----- the database -----

const TIERED: &str = "tiered";

fn db_options() -> Options {
    let mut table_options = BTreeMap::new();
    table_options.insert(
        TIERED.to_owned(),
        TableOptions::default()
            .compaction_strategy(CompactionStrategy::parse("two-tier:write-only"))
            .compression(Some(Compression::None)),
    );
    // Values of 32 bytes and more go to blob files (the generations before
    // 2026-12-c hold none; opened with this, their next flushes write
    // some), with LZ4 and garbage collection of the older half.
    let blob = BlobOptions::enabled(32)
        .blob_compression(BlobCompression::Lz4)
        .enable_blob_garbage_collection(true)
        .blob_garbage_collection_age_cutoff(0.5);
    Options::default()
        .merge_operator(Some(Arc::new(StringAppend::default())))
        .compression(Compression::zstd())
        .table_options(table_options)
        .blob(blob)
}

fn value(i: u32, tag: &str) -> String {
    // Long and repetitive enough for zstd and LZ4 to compress.
    format!("{tag}-{i:02}-").repeat(8)
}

fn key(prefix: &str, i: u32) -> String {
    format!("{prefix}{i:02}")
}

/// The four phases of the golden database: tables after a manual
/// compaction, an L0 table above them, a batch and single writes (which
/// the second backup flushes), and writes only in the WAL.
fn write_db_phase(db: &Db, phase: u32) {
    let tiered = db.table(TIERED).unwrap();
    match phase {
        1 => {
            for i in 1..=20 {
                db.put(key("k", i), value(i, "v")).unwrap();
            }
            db.delete("k03").unwrap();
            db.single_delete("k04").unwrap();
            db.merge("k05", "m1").unwrap();
            db.merge("m01", "a").unwrap();
            db.merge("m01", "b").unwrap();
            db.delete_range("k10", "k13").unwrap();
            for i in 1..=10 {
                tiered.put(key("t", i), value(i, "t")).unwrap();
            }
            tiered.delete("t02").unwrap();
            tiered.merge("t03", "x").unwrap();
            tiered.delete_range("t05", "t07").unwrap();
            db.flush().unwrap();
            tiered.flush().unwrap();
            db.compact_range(None, None).unwrap();
            tiered.compact_range(None, None).unwrap();
        }
        2 => {
            for i in 21..=25 {
                db.put(key("k", i), value(i, "v")).unwrap();
            }
            db.put("k01", value(1, "w")).unwrap();
            db.merge("k02", "m2").unwrap();
            db.delete("k06").unwrap();
            db.delete_range("k15", "k17").unwrap();
            tiered.put("t11", value(11, "t")).unwrap();
            tiered.single_delete("t04").unwrap();
            db.flush().unwrap();
            tiered.flush().unwrap();
        }
        3 => {
            let mut batch = WriteBatch::new();
            batch.put("k30", value(30, "v"));
            batch.put("k31", value(31, "v"));
            batch.single_delete("k31");
            batch.delete("k07");
            batch.merge("k08", "w");
            batch.delete_range("k18", "k20");
            db.write(batch).unwrap();
            tiered.put("t20", value(20, "t")).unwrap();
            tiered.merge("t01", "w").unwrap();
            tiered.delete("t08").unwrap();
        }
        4 => {
            db.put("k32", value(32, "v")).unwrap();
            db.delete("k21").unwrap();
            db.merge("k22", "p4").unwrap();
            db.put("k33", value(33, "v")).unwrap();
            db.single_delete("k33").unwrap();
            db.delete_range("k23", "k25").unwrap();
            tiered.put("t21", value(21, "t")).unwrap();
            tiered.delete("t09").unwrap();
            tiered.merge("t10", "p4").unwrap();
            tiered.delete_range("t11", "t12").unwrap();
        }
        _ => unreachable!(),
    }
}

type Kv = Vec<(String, String)>;

/// What the default table and the tiered table hold after `phase`.
fn db_expected(phase: u32) -> (Kv, Kv) {
    let mut d: BTreeMap<String, String> = BTreeMap::new();
    let mut t: BTreeMap<String, String> = BTreeMap::new();
    for i in 1..=20 {
        d.insert(key("k", i), value(i, "v"));
    }
    for k in ["k03", "k04", "k10", "k11", "k12"] {
        d.remove(k);
    }
    let v5 = format!("{},m1", value(5, "v"));
    d.insert("k05".into(), v5);
    d.insert("m01".into(), "a,b".into());
    for i in 1..=10 {
        t.insert(key("t", i), value(i, "t"));
    }
    for k in ["t02", "t05", "t06"] {
        t.remove(k);
    }
    t.insert("t03".into(), format!("{},x", value(3, "t")));
    if phase >= 2 {
        for i in 21..=25 {
            d.insert(key("k", i), value(i, "v"));
        }
        d.insert("k01".into(), value(1, "w"));
        d.insert("k02".into(), format!("{},m2", value(2, "v")));
        for k in ["k06", "k15", "k16"] {
            d.remove(k);
        }
        t.insert("t11".into(), value(11, "t"));
        t.remove("t04");
    }
    if phase >= 3 {
        d.insert("k30".into(), value(30, "v"));
        d.insert("k08".into(), format!("{},w", value(8, "v")));
        for k in ["k07", "k18", "k19"] {
            d.remove(k);
        }
        t.insert("t20".into(), value(20, "t"));
        t.insert("t01".into(), format!("{},w", value(1, "t")));
        t.remove("t08");
    }
    if phase >= 4 {
        d.insert("k32".into(), value(32, "v"));
        d.insert("k22".into(), format!("{},p4", value(22, "v")));
        for k in ["k21", "k23", "k24"] {
            d.remove(k);
        }
        t.insert("t21".into(), value(21, "t"));
        t.insert("t10".into(), format!("{},p4", value(10, "t")));
        t.remove("t09");
        t.remove("t11");
    }
    (d.into_iter().collect(), t.into_iter().collect())
}

fn scan(db: &Db, table: Option<&str>) -> Kv {
    let iter = match table {
        None => db.iter(),
        Some(name) => db.table(name).unwrap().iter().unwrap(),
    };
    iter.map(|kv| {
        let (k, v) = kv.unwrap();
        (
            String::from_utf8(k.to_vec()).unwrap(),
            String::from_utf8(v.to_vec()).unwrap(),
        )
    })
    .collect()
}

/// Every value both ways: by iteration (forwards and backwards) and by
/// point lookups of every key, present or removed.
fn assert_db_holds(db: &Db, phase: u32) {
    let (want_default, want_tiered) = db_expected(phase);
    assert_eq!(scan(db, None), want_default, "default table, phase {phase}");
    assert_eq!(
        scan(db, Some(TIERED)),
        want_tiered,
        "tiered table, phase {phase}"
    );
    let backwards: Kv = db
        .iter()
        .rev()
        .map(|kv| {
            let (k, v) = kv.unwrap();
            (
                String::from_utf8(k.to_vec()).unwrap(),
                String::from_utf8(v.to_vec()).unwrap(),
            )
        })
        .collect();
    assert_eq!(
        backwards,
        want_default.iter().rev().cloned().collect::<Kv>()
    );
    let present: BTreeMap<_, _> = want_default.into_iter().collect();
    for i in 1..=33 {
        let k = key("k", i);
        let got = db
            .get(&k)
            .unwrap()
            .map(|v| String::from_utf8(v.to_vec()).unwrap());
        assert_eq!(got.as_ref(), present.get(&k), "get {k}");
    }
    let tiered = db.table(TIERED).unwrap();
    let present: BTreeMap<_, _> = want_tiered.into_iter().collect();
    for i in 1..=21 {
        let k = key("t", i);
        let got = tiered
            .get(&k)
            .unwrap()
            .map(|v| String::from_utf8(v.to_vec()).unwrap());
        assert_eq!(got.as_ref(), present.get(&k), "get {k} in {TIERED}");
    }
}

#[test]
fn golden_database_opens_with_every_value() {
    each_generation(golden_database_opens_with_every_value_in);
}

fn golden_database_opens_with_every_value_in(generation: &str) {
    let (_tmp, dir) = copy_of(generation, "db");
    // Read-only first: it reads the WAL without flushing it.
    let db = Db::open_read_only(&dir, db_options()).unwrap();
    assert_db_holds(&db, 4);
    db.close().unwrap();
    let db = Db::open(&dir, db_options()).unwrap();
    assert!(
        db.recovery_report().dropped.is_empty(),
        "{:?}",
        db.recovery_report()
    );
    assert_db_holds(&db, 4);
    // It stays writable and compacts with today's code.
    db.put("k40", "new").unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.close().unwrap();
    let db = Db::open(&dir, db_options()).unwrap();
    assert_eq!(db.get("k40").unwrap().as_deref(), Some(&b"new"[..]));
    db.delete("k40").unwrap();
    assert_db_holds(&db, 4);
}

/// The log format version in the header of a WAL or MANIFEST: the 4
/// bytes after the 8-byte magic.
fn log_format_version(path: &Path) -> u32 {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[..8], b"LTHFYLOG", "{}", path.display());
    u32::from_le_bytes(bytes[8..12].try_into().unwrap())
}

/// Each generation holds the formats `docs/FORMATS.md` says it does, so
/// the tests above read what they claim to.
#[test]
fn each_generation_holds_its_log_formats() {
    let versions = |generation: &str, name: &str, file: &str| {
        log_format_version(&golden_dir().join(generation).join(name).join(file))
    };
    assert_eq!(versions("2026-12-a", "db", "MANIFEST-000001"), 1);
    assert_eq!(versions("2026-12-a", "db", "000013.log"), 1);
    assert_eq!(versions("2026-12-a", "db-lz4-wal", "000002.log"), 2);
    for generation in ["2026-12-b", "2026-12-c"] {
        for name in ["db", "db-lz4-wal"] {
            let mut logs = 0;
            for entry in std::fs::read_dir(golden_dir().join(generation).join(name)).unwrap() {
                let file = entry.unwrap().file_name().into_string().unwrap();
                if file.ends_with(".log") || file.starts_with("MANIFEST-") {
                    assert_eq!(versions(generation, name, &file), 3, "{name}/{file}");
                    logs += 1;
                }
            }
            assert!(logs >= 2, "{generation}/{name}: a WAL and a MANIFEST");
        }
    }
    // Blob files are new in 2026-12-c: in its database, and shared by its
    // backups.
    let blob_files = |dir: PathBuf| {
        std::fs::read_dir(&dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".blob")
            })
            .count()
    };
    for generation in ["2026-12-a", "2026-12-b"] {
        assert_eq!(blob_files(golden_dir().join(generation).join("db")), 0);
    }
    assert!(blob_files(golden_dir().join("2026-12-c/db")) > 0);
    assert!(blob_files(golden_dir().join("2026-12-c/backups/shared")) > 0);
}

// ----- the database with an LZ4 WAL -----

fn lz4_options() -> Options {
    Options::default()
        .merge_operator(Some(Arc::new(StringAppend::default())))
        .wal_compression(WalCompression::Lz4)
}

fn write_lz4_db(db: &Db) {
    for i in 1..=10 {
        db.put(key("k", i), value(i, "z")).unwrap();
    }
    db.delete("k02").unwrap();
    db.single_delete("k03").unwrap();
    db.merge("k04", "m").unwrap();
    db.delete_range("k06", "k08").unwrap();
}

fn lz4_expected() -> Kv {
    let mut want: Kv = (1..=10).map(|i| (key("k", i), value(i, "z"))).collect();
    want.retain(|(k, _)| !["k02", "k03", "k06", "k07"].contains(&k.as_str()));
    want[1].1.push_str(",m");
    assert_eq!(want[1].0, "k04");
    want
}

#[test]
fn golden_lz4_wal_replays_every_value() {
    each_generation(golden_lz4_wal_replays_every_value_in);
}

fn golden_lz4_wal_replays_every_value_in(generation: &str) {
    let (_tmp, dir) = copy_of(generation, "db-lz4-wal");
    // Whichever WAL compression the reader is set to.
    for options in [
        lz4_options(),
        lz4_options().wal_compression(WalCompression::None),
    ] {
        let db = Db::open_read_only(&dir, options).unwrap();
        assert_eq!(scan(&db, None), lz4_expected());
        db.close().unwrap();
    }
    let db = Db::open(&dir, lz4_options()).unwrap();
    assert_eq!(scan(&db, None), lz4_expected());
    assert_eq!(
        db.get("k04").unwrap().unwrap().len(),
        value(4, "z").len() + 2
    );
}

// ----- the backups -----

#[test]
fn golden_backups_restore_every_value() {
    each_generation(golden_backups_restore_every_value_in);
}

fn golden_backups_restore_every_value_in(generation: &str) {
    let (tmp, dir) = copy_of(generation, "backups");
    let engine = BackupEngine::open_os(&dir).unwrap();
    let list = engine.list().unwrap();
    assert_eq!(list.iter().map(|b| b.id).collect::<Vec<_>>(), [1, 2]);
    for (id, phase) in [(1, 2), (2, 3)] {
        engine.verify(id).unwrap();
        let to = tmp.path().join(format!("restored-{id}"));
        engine.restore(Some(id), &to).unwrap();
        let db = Db::open(&to, db_options()).unwrap();
        assert_db_holds(&db, phase);
    }
}

// ----- the Kafka log -----

const PARTITION: &str = "golden-0";
const COMPRESSED_PARTITION: &str = "golden-1";

fn log_config(compression: &str) -> LogConfig {
    let mut c = LogConfig::from_properties([
        ("segment.bytes", "600"),
        ("segment.index.bytes", "1024"),
        ("index.interval.bytes", "100"),
        ("cleanup.policy", "compact"),
        ("min.cleanable.dirty.ratio", "0.01"),
        ("delete.retention.ms", "0"),
    ])
    .unwrap();
    c.set("compression.type", compression).unwrap();
    c
}

fn open_log(dir: &Path, compression: &str) -> Log {
    Log::open_with(
        Arc::new(OsFs),
        dir,
        log_config(compression),
        OpenOptions::default()
            .recovery_point(None)
            .clock(Arc::new(ManualClock::at_ms(10_000))),
    )
    .unwrap()
}

fn txn_producer(id: i64, sequence: i32) -> Producer {
    Producer {
        producer_id: id,
        producer_epoch: 0,
        base_sequence: sequence,
        transactional: true,
    }
}

/// Plain batches, a committed and an aborted transaction interleaved, a
/// tombstone, and enough bytes for several segments.
fn write_log(log: &mut Log) {
    let rec =
        |k: u32, v: &str| SimpleRecord::new(1000 + i64::from(k), format!("key{k}"), v.to_owned());
    for round in 0..3u32 {
        let batch: Vec<_> = (0..4)
            .map(|k| rec(k, &format!("plain-{round}-{k}")))
            .collect();
        log.append(&batch).unwrap();
    }
    log.append_as(
        &txn_producer(7, 0),
        &[rec(10, "committed-a"), rec(11, "committed-b")],
    )
    .unwrap();
    log.append_as(
        &txn_producer(8, 0),
        &[rec(20, "aborted-a"), rec(1, "aborted-over-key1")],
    )
    .unwrap();
    log.append(&[rec(2, "plain-between")]).unwrap();
    log.append_end_txn_marker(7, 0, TransactionResult::Commit, 0)
        .unwrap();
    log.append_end_txn_marker(8, 0, TransactionResult::Abort, 0)
        .unwrap();
    log.append(&[SimpleRecord::tombstone(1100, "key3")])
        .unwrap();
    for k in 0..4 {
        log.append(&[rec(k, &format!("last-{k}"))]).unwrap();
    }
}

/// The committed records a consumer sees: the latest value of each key
/// (the cleaner may have removed older ones), as (key, value).
fn log_expected_latest() -> BTreeMap<String, Option<String>> {
    let mut m = BTreeMap::new();
    for k in 0..4 {
        m.insert(format!("key{k}"), Some(format!("last-{k}")));
    }
    m.insert("key10".into(), Some("committed-a".into()));
    m.insert("key11".into(), Some("committed-b".into()));
    m
}

fn latest_committed(log: &Log) -> (BTreeMap<String, Option<String>>, Vec<i64>) {
    let mut latest = BTreeMap::new();
    let mut offsets = Vec::new();
    for r in log.committed_records_from(log.log_start_offset()).unwrap() {
        let r = r.unwrap();
        offsets.push(r.offset);
        let k = String::from_utf8(r.key.unwrap().to_vec()).unwrap();
        let v = r.value.map(|v| String::from_utf8(v.to_vec()).unwrap());
        latest.insert(k, v);
    }
    latest.retain(|_, v| v.is_some());
    (latest, offsets)
}

#[test]
fn golden_kafka_logs_open_and_read_committed() {
    each_generation(golden_kafka_logs_open_and_read_committed_in);
}

fn golden_kafka_logs_open_and_read_committed_in(generation: &str) {
    let (_tmp, dir) = copy_of(generation, "kafka");
    for (partition, compression, log_end) in [
        (PARTITION, "uncompressed", 24),
        (COMPRESSED_PARTITION, "lz4", 24),
    ] {
        let log = open_log(&dir.join(partition), compression);
        assert!(log.recovery_report().truncations.is_empty(), "{partition}");
        assert_eq!(log.log_end_offset(), log_end, "{partition}");
        assert!(
            log.segment_infos().len() >= 2,
            "{partition}: several segments"
        );
        let (latest, offsets) = latest_committed(&log);
        assert_eq!(latest, log_expected_latest(), "{partition}");
        assert!(offsets.windows(2).all(|w| w[0] < w[1]));
        // The aborted transaction is listed once (its data is invisible).
        assert_eq!(log.collect_aborted_transactions(0, log_end).len(), 1);
        log.close().unwrap();
    }
}

/// The cleaner, with today's code, still cleans the golden logs and keeps
/// every latest value.
#[test]
fn golden_kafka_logs_clean() {
    each_generation(golden_kafka_logs_clean_in);
}

fn golden_kafka_logs_clean_in(generation: &str) {
    let (_tmp, dir) = copy_of(generation, "kafka");
    let clock = Arc::new(ManualClock::at_ms(10_000_000));
    let cleaner = LogCleaner::new(CleanerConfig::default(), Arc::new(OsFs), clock);
    let mut logs = Vec::new();
    for (partition, compression) in [(PARTITION, "uncompressed"), (COMPRESSED_PARTITION, "lz4")] {
        let log = shared_log(open_log(&dir.join(partition), compression));
        cleaner.add_log(Arc::clone(&log)).unwrap();
        logs.push(log);
    }
    cleaner.clean_eligible_once().unwrap();
    for log in &logs {
        let log = log.lock();
        assert_eq!(latest_committed(&log).0, log_expected_latest());
    }
}

// ----- writing them (once) -----

#[test]
#[ignore = "writes new golden directories; see the module documentation"]
fn write_golden() {
    let Ok(out) = std::env::var("LITHIFY_WRITE_GOLDEN") else {
        panic!("set LITHIFY_WRITE_GOLDEN to a directory that does not exist yet");
    };
    let out = PathBuf::from(out);
    assert!(
        !out.exists(),
        "{} exists: golden data is never rewritten",
        out.display()
    );

    let db_dir = out.join("db");
    let backups = BackupEngine::open_os(out.join("backups")).unwrap();
    let db = Db::open(&db_dir, db_options()).unwrap();
    db.create_table(TIERED, db_options().table_options[TIERED].clone())
        .unwrap();
    write_db_phase(&db, 1);
    write_db_phase(&db, 2);
    assert_db_holds(&db, 2);
    backups.create_backup(&db).unwrap();
    write_db_phase(&db, 3);
    assert_db_holds(&db, 3);
    backups.create_backup(&db).unwrap();
    write_db_phase(&db, 4);
    assert_db_holds(&db, 4);
    db.close().unwrap();
    drop(backups);
    for lock in ["backups/LOCK", "db/LOCK"] {
        std::fs::remove_file(out.join(lock)).unwrap();
    }

    let db = Db::open(out.join("db-lz4-wal"), lz4_options()).unwrap();
    write_lz4_db(&db);
    db.close().unwrap();
    std::fs::remove_file(out.join("db-lz4-wal/LOCK")).unwrap();

    for (partition, compression) in [(PARTITION, "uncompressed"), (COMPRESSED_PARTITION, "lz4")] {
        let dir = out.join("kafka").join(partition);
        let mut log = open_log(&dir, compression);
        write_log(&mut log);
        log.close().unwrap();
        let clock = Arc::new(ManualClock::at_ms(10_000_000));
        let cleaner = LogCleaner::new(CleanerConfig::default(), Arc::new(OsFs), clock);
        let log = shared_log(open_log(&dir, compression));
        cleaner.add_log(Arc::clone(&log)).unwrap();
        cleaner.clean_eligible_once().unwrap();
        drop(cleaner);
        let log = Arc::try_unwrap(log).ok().unwrap().into_inner();
        log.close().unwrap();
    }
    // The writers' lock files are not part of the data.
    for partition in [PARTITION, COMPRESSED_PARTITION] {
        let _ = std::fs::remove_file(out.join("kafka").join(partition).join(".lock"));
    }
    let _ = std::fs::remove_file(out.join("kafka/.lock"));
}
