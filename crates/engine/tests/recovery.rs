//! WAL replay rules, on logs written by hand: a log is replayed only after
//! its predecessor was replayed up to the sequence number it names, per
//! recovery mode; damaged records; orphan files removed at open.

use std::path::Path;
use std::sync::Arc;

use lithify_engine::Predecessor;
use lithify_engine::{Db, Options, RecoveryMode, WriteBatch};
use lithify_vfs::{FileSystem, MemFs};
use lithify_wal::Writer;

fn options(fs: &Arc<MemFs>, mode: RecoveryMode) -> Options {
    Options::default().fs(fs.clone()).wal_recovery_mode(mode)
}

/// The number of the (empty) WAL a freshly created, closed database left.
fn fresh_db(fs: &Arc<MemFs>) -> u64 {
    Db::open("/db", options(fs, RecoveryMode::PointInTimeRecovery))
        .unwrap()
        .close()
        .unwrap();
    let logs: Vec<u64> = fs
        .list_dir(Path::new("/db"))
        .unwrap()
        .iter()
        .filter_map(|n| n.strip_suffix(".log").and_then(|d| d.parse().ok()))
        .collect();
    assert_eq!(logs.len(), 1, "one live WAL after a clean close");
    logs[0]
}

fn batch(seq: u64, keys: &[&str]) -> Vec<u8> {
    let mut b = WriteBatch::new();
    for k in keys {
        b.put(k, format!("v{seq}"));
    }
    let mut rep = b.encoded().to_vec();
    rep[1..9].copy_from_slice(&seq.to_le_bytes());
    rep
}

/// Writes WAL `number` of the database in `/db` (naming it as its owner,
/// as the database's own WALs do) holding `records`.
fn write_log(fs: &Arc<MemFs>, number: u64, records: &[Vec<u8>]) {
    let path = format!("/db/{number:06}.log");
    let _ = fs.remove_file(Path::new(&path));
    let owner = lithify_version::VersionSet::recover(
        fs.clone(),
        Path::new("/db"),
        lithify_version::VersionSetOptions::default(),
    )
    .unwrap()
    .db_id();
    let options = lithify_wal::WriterOptions::default().owner(Some(owner));
    let mut w =
        Writer::with_options(fs.create(Path::new(&path)).unwrap(), &path, number, options).unwrap();
    for r in records {
        w.add_record(r).unwrap();
    }
    w.sync().unwrap();
    fs.sync_dir(Path::new("/db")).unwrap();
}

fn keys(db: &Db) -> Vec<String> {
    db.iter()
        .map(|kv| String::from_utf8(kv.unwrap().0.to_vec()).unwrap())
        .collect()
}

/// Logs `first` (a, b at seqs 1..=2, then c at 3) and `first + 1` whose
/// predecessor note claims `claimed` as the first log's last sequence.
fn two_logs(fs: &Arc<MemFs>, claimed: u64) -> u64 {
    let first = fresh_db(fs);
    write_log(fs, first, &[batch(1, &["a", "b"]), batch(3, &["c"])]);
    let note = Predecessor {
        log_number: first,
        last_sequence: claimed,
    };
    write_log(
        fs,
        first + 1,
        &[note.encode().to_vec(), batch(claimed + 1, &["d"])],
    );
    first
}

#[test]
fn a_consistent_chain_replays_every_log() {
    let fs = Arc::new(MemFs::new());
    two_logs(&fs, 3);
    let db = Db::open("/db", options(&fs, RecoveryMode::PointInTimeRecovery)).unwrap();
    assert_eq!(keys(&db), ["a", "b", "c", "d"]);
    assert_eq!(db.latest_sequence_number(), 4);
    // Replayed logs were written to L0 and deleted.
    drop(db);
    let db = Db::open("/db", options(&fs, RecoveryMode::AbsoluteConsistency)).unwrap();
    assert_eq!(keys(&db), ["a", "b", "c", "d"]);
}

#[test]
fn a_log_after_a_truncated_one_is_not_replayed() {
    // The second log says the first ended at sequence 5, but it ends at 3:
    // records 4 and 5 were lost, so replaying `d` (6) would leave a hole.
    for mode in [
        RecoveryMode::PointInTimeRecovery,
        RecoveryMode::TolerateCorruptedTailRecords,
    ] {
        let fs = Arc::new(MemFs::new());
        two_logs(&fs, 5);
        let db = Db::open("/db", options(&fs, mode)).unwrap();
        assert_eq!(keys(&db), ["a", "b", "c"], "{mode:?}");
        // New writes continue above every sequence number seen on disk.
        db.put("e", "1").unwrap();
        drop(db);
        let db = Db::open("/db", options(&fs, mode)).unwrap();
        assert_eq!(keys(&db), ["a", "b", "c", "e"], "{mode:?}");
    }
    let fs = Arc::new(MemFs::new());
    two_logs(&fs, 5);
    let err = Db::open("/db", options(&fs, RecoveryMode::AbsoluteConsistency)).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    let fs = Arc::new(MemFs::new());
    two_logs(&fs, 5);
    let db = Db::open("/db", options(&fs, RecoveryMode::SkipAnyCorruptedRecords)).unwrap();
    assert_eq!(keys(&db), ["a", "b", "c", "d"]);
}

#[test]
fn a_log_whose_predecessor_is_missing_is_refused_not_skipped() {
    // The first log is gone; the second names it. Before issue 18 the open
    // silently replayed nothing; a WAL the MANIFEST still needs is missing,
    // so the open is refused, naming it, and only the salvage mode opens
    // (reporting what it could not have).
    let fs = Arc::new(MemFs::new());
    let first = fresh_db(&fs);
    fs.remove_file(Path::new(&format!("/db/{first:06}.log")))
        .unwrap();
    let note = Predecessor {
        log_number: first,
        last_sequence: 3,
    };
    write_log(&fs, first + 1, &[note.encode().to_vec(), batch(4, &["d"])]);
    for mode in [
        RecoveryMode::PointInTimeRecovery,
        RecoveryMode::TolerateCorruptedTailRecords,
        RecoveryMode::AbsoluteConsistency,
    ] {
        let err = Db::open("/db", options(&fs, mode)).unwrap_err();
        assert!(err.is_corruption(), "{mode:?}: {err}");
        assert!(
            err.to_string().contains(&format!("{first:06}.log")),
            "{mode:?}: {err}"
        );
    }
    let db = Db::open("/db", options(&fs, RecoveryMode::SkipAnyCorruptedRecords)).unwrap();
    assert_eq!(keys(&db), ["d"]);
    let report = db.recovery_report();
    assert_eq!(report.dropped.len(), 1, "{report:?}");
    assert!(
        report.dropped[0].reason.contains("missing"),
        "{:?}",
        report.dropped[0]
    );
}

#[test]
fn a_record_that_is_not_a_batch_stops_point_in_time_recovery() {
    let fs = Arc::new(MemFs::new());
    let first = fresh_db(&fs);
    let mut bad = batch(3, &["c"]);
    bad[0] = 0x7f; // unknown record type, valid WAL checksum
    write_log(&fs, first, &[batch(1, &["a", "b"]), bad, batch(4, &["d"])]);
    let db = Db::open("/db", options(&fs, RecoveryMode::PointInTimeRecovery)).unwrap();
    assert_eq!(keys(&db), ["a", "b"]);
    drop(db);
    let fs = Arc::new(MemFs::new());
    let first = fresh_db(&fs);
    let mut bad = batch(3, &["c"]);
    bad[0] = 0x7f;
    write_log(
        &fs,
        first,
        &[batch(1, &["a", "b"]), bad.clone(), batch(4, &["d"])],
    );
    let err = Db::open("/db", options(&fs, RecoveryMode::AbsoluteConsistency)).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    let fs = Arc::new(MemFs::new());
    let first = fresh_db(&fs);
    write_log(&fs, first, &[batch(1, &["a", "b"]), bad, batch(4, &["d"])]);
    let db = Db::open("/db", options(&fs, RecoveryMode::SkipAnyCorruptedRecords)).unwrap();
    assert_eq!(keys(&db), ["a", "b", "d"]);
}

#[test]
fn orphans_of_a_crashed_job_are_removed_and_the_lock_is_exclusive() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(&fs, RecoveryMode::PointInTimeRecovery)).unwrap();
    db.put("k", "v").unwrap();
    let second = Db::open("/db", options(&fs, RecoveryMode::PointInTimeRecovery));
    assert!(
        second.is_err(),
        "a second open of a live database must fail"
    );
    db.flush().unwrap();
    drop(db);
    // A table no MANIFEST names, as a crashed compaction leaves it.
    let orphan = Path::new("/db/009999.sst");
    let mut f = fs.create(orphan).unwrap();
    f.append(b"half a table").unwrap();
    drop(f);
    let db = Db::open("/db", options(&fs, RecoveryMode::PointInTimeRecovery)).unwrap();
    assert!(!fs.exists(orphan), "the orphan table was not deleted");
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"v"[..]));
    let opts = options(&fs, RecoveryMode::PointInTimeRecovery).error_if_exists(true);
    drop(db);
    assert!(Db::open("/db", opts).is_err());
    let opts = options(&fs, RecoveryMode::PointInTimeRecovery).create_if_missing(false);
    assert!(Db::open("/nothing", opts).is_err());
}

#[test]
fn batches_with_impossible_sequence_numbers_are_damage() {
    // Found by fuzzing: a checksummed record whose sequence numbers run
    // past MAX_SEQNO, or go backwards, must be treated as damage.
    for bad_seq in [lithify_base::MAX_SEQNO, u64::MAX, 1] {
        let fs = Arc::new(MemFs::new());
        let first = fresh_db(&fs);
        write_log(
            &fs,
            first,
            &[batch(1, &["a", "b"]), batch(bad_seq, &["x", "y"])],
        );
        let db = Db::open("/db", options(&fs, RecoveryMode::PointInTimeRecovery)).unwrap();
        assert_eq!(keys(&db), ["a", "b"], "sequence {bad_seq}");
        drop(db);
        let fs = Arc::new(MemFs::new());
        let first = fresh_db(&fs);
        write_log(
            &fs,
            first,
            &[batch(1, &["a", "b"]), batch(bad_seq, &["x", "y"])],
        );
        let err = Db::open("/db", options(&fs, RecoveryMode::AbsoluteConsistency)).unwrap_err();
        assert!(err.is_corruption(), "{err}");
    }
    // An empty range deletion in a checksummed record.
    let fs = Arc::new(MemFs::new());
    let first = fresh_db(&fs);
    let mut b = WriteBatch::new();
    b.delete_range("b", "a");
    let mut rep = b.encoded().to_vec();
    rep[1..9].copy_from_slice(&1u64.to_le_bytes());
    write_log(&fs, first, &[rep, batch(2, &["c"])]);
    let db = Db::open("/db", options(&fs, RecoveryMode::SkipAnyCorruptedRecords)).unwrap();
    assert_eq!(keys(&db), ["c"]);
}

/// WALs written LZ4-compressed are smaller and replay exactly, whichever
/// setting the next open has; a power loss keeps every synced write.
#[test]
fn compressed_wals_replay_under_either_setting() {
    use lithify_engine::{WalCompression, WriteOptions};
    let value = |i: u32| format!("value-{i:05}-{}", "z".repeat(100));
    let run = |compression: WalCompression| {
        let fs = Arc::new(MemFs::new());
        let opts = options(&fs, RecoveryMode::PointInTimeRecovery).wal_compression(compression);
        let db = Db::open("/db", opts.clone()).unwrap();
        let sync = WriteOptions::default().sync(true);
        for i in 0..500u32 {
            db.put_opt(format!("k{i:05}"), value(i), &sync).unwrap();
        }
        let wal_bytes = db.stats().wal_bytes;
        // No clean close: the writes live only in the WAL.
        drop(db);
        fs.crash();
        (fs, wal_bytes)
    };
    let (plain_fs, plain_bytes) = run(WalCompression::None);
    let (packed_fs, packed_bytes) = run(WalCompression::Lz4);
    assert!(
        packed_bytes * 2 < plain_bytes,
        "{packed_bytes} vs {plain_bytes} WAL bytes"
    );
    for (fs, reopen_with) in [
        (&packed_fs, WalCompression::None),
        (&plain_fs, WalCompression::Lz4),
    ] {
        let db = Db::open(
            "/db",
            options(fs, RecoveryMode::AbsoluteConsistency).wal_compression(reopen_with),
        )
        .unwrap();
        assert!(db.stats().recovery.dropped.is_empty());
        for i in 0..500u32 {
            let got = db.get(format!("k{i:05}")).unwrap();
            assert_eq!(got.as_deref(), Some(value(i).as_bytes()), "key {i}");
        }
        db.close().unwrap();
    }
}
