//! Transactions in a log: the `.txnindex` and producer snapshot formats
//! (golden bytes, round trips), appends of transactional batches and
//! markers, the last stable offset, `read_committed` reads, and what a
//! crash or damage does to the derived files (rebuilt from the log).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lithify_kafka_log::naming::{FileKind, Suffix, file_name};
use lithify_kafka_log::record::{BatchBuilder, ControlRecordType, RecordBatch, TransactionResult};
use lithify_kafka_log::txn_index::{self, AbortedTxn};
use lithify_kafka_log::{
    BatchMetadata, Error, Log, LogConfig, ManualClock, OpenOptions, Producer, ProducerStateEntry,
    SimpleRecord, producer_snapshot,
};
use lithify_vfs::{FileSystem, MemFs, read_file, write_file_atomic};
use proptest::prelude::*;

const DIR: &str = "/kafka/t-0";

fn dir() -> &'static Path {
    Path::new(DIR)
}

fn path(base: i64, kind: FileKind) -> PathBuf {
    dir().join(file_name(base, kind, Suffix::None))
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn config(props: &[(&str, &str)]) -> LogConfig {
    let mut c = LogConfig::from_properties([("segment.index.bytes", "1024")]).unwrap();
    for (k, v) in props {
        c.set(k, v).unwrap();
    }
    c
}

/// Opens with a manual clock at 1000 (so markers are stamped 1000).
fn open(fs: &MemFs, c: &LogConfig) -> Log {
    open_with(fs, c, None).unwrap()
}

fn open_with(fs: &MemFs, c: &LogConfig, recovery_point: Option<i64>) -> Result<Log, Error> {
    let options = OpenOptions::default()
        .recovery_point(recovery_point)
        .clock(Arc::new(ManualClock::at_ms(1000)));
    Log::open_with(Arc::new(fs.clone()), dir(), c.clone(), options)
}

fn txn_producer(id: i64) -> Producer {
    Producer {
        producer_id: id,
        producer_epoch: 0,
        base_sequence: 0,
        transactional: true,
    }
}

fn rec(key: i64) -> SimpleRecord {
    SimpleRecord::new(1000, format!("k{key}"), format!("v{key}"))
}

fn append_txn(log: &mut Log, pid: i64, keys: &[i64]) {
    let recs: Vec<_> = keys.iter().map(|k| rec(*k)).collect();
    log.append_as(&txn_producer(pid), &recs).unwrap();
}

fn end(log: &mut Log, pid: i64, result: TransactionResult) {
    log.append_end_txn_marker(pid, 0, result, 0).unwrap();
}

fn txn(p: i64, first: i64, last: i64, lso: i64) -> AbortedTxn {
    AbortedTxn {
        producer_id: p,
        first_offset: first,
        last_offset: last,
        last_stable_offset: lso,
    }
}

/// Kafka's testMultiPassSegmentCleaningWithAbortedTransactions log:
/// offsets 0..20, two aborted transactions.
fn two_producer_log(log: &mut Log) {
    use TransactionResult::{Abort, Commit};
    append_txn(log, 1, &[1, 2]); // 0, 1
    append_txn(log, 2, &[2, 3]); // 2, 3
    append_txn(log, 1, &[3, 4]); // 4, 5
    end(log, 1, Commit); // 6
    end(log, 2, Commit); // 7
    append_txn(log, 1, &[2, 3]); // 8, 9
    end(log, 1, Abort); // 10
    append_txn(log, 2, &[4, 5]); // 11, 12
    append_txn(log, 1, &[5, 6]); // 13, 14
    end(log, 1, Commit); // 15
    end(log, 2, Abort); // 16
    append_txn(log, 2, &[6, 7]); // 17, 18
    end(log, 2, Commit); // 19
}

fn committed(log: &Log) -> Vec<(i64, String)> {
    log.committed_records_from(log.log_start_offset())
        .unwrap()
        .map(|r| {
            let r = r.unwrap();
            (
                r.offset,
                String::from_utf8(r.key.unwrap().to_vec()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn golden_txnindex_entry() {
    // AbortedTxn(producer 1, first 8, last 10, LSO 11), version 0.
    let want = unhex(concat!(
        "0000",
        "0000000000000001",
        "0000000000000008",
        "000000000000000a",
        "000000000000000b"
    ));
    assert_eq!(txn(1, 8, 10, 11).encode().to_vec(), want);
    let p = Path::new("/x/00000000000000000000.txnindex");
    assert_eq!(txn_index::decode(p, 0, &want).unwrap(), [txn(1, 8, 10, 11)]);
}

#[test]
fn golden_producer_snapshot() {
    // Two entries: producer 7 (epoch 0, last sequence 9, last offset 42,
    // delta 2, timestamp 1000, coordinator epoch 3, open transaction at
    // 40), and producer 12 with nothing (what an empty control batch
    // leaves). CRC-32C 0x2ae9140a over bytes 6.. (computed independently).
    let want = unhex(concat!(
        "0001",
        "2ae9140a",
        "00000002",
        "0000000000000007",
        "0000",
        "00000009",
        "000000000000002a",
        "00000002",
        "00000000000003e8",
        "00000003",
        "0000000000000028",
        "000000000000000c",
        "ffff",
        "ffffffff",
        "ffffffffffffffff",
        "00000000",
        "ffffffffffffffff",
        "ffffffff",
        "ffffffffffffffff"
    ));
    let entries = [
        ProducerStateEntry {
            producer_id: 7,
            producer_epoch: 0,
            coordinator_epoch: 3,
            last_timestamp: 1000,
            current_txn_first_offset: Some(40),
            last_batch: Some(BatchMetadata {
                last_sequence: 9,
                last_offset: 42,
                offset_delta: 2,
            }),
        },
        ProducerStateEntry {
            producer_id: 12,
            producer_epoch: -1,
            coordinator_epoch: -1,
            last_timestamp: -1,
            current_txn_first_offset: None,
            last_batch: None,
        },
    ];
    assert_eq!(producer_snapshot::encode(&entries), want);
    let p = Path::new("/x/00000000000000000043.snapshot");
    assert_eq!(producer_snapshot::decode(p, &want).unwrap(), entries);
    // Damage: a flipped bit fails the CRC, a cut fails the count, another
    // version is refused; each names the file and a byte offset.
    let mut flipped = want.clone();
    flipped[20] ^= 1;
    let cut = &want[..want.len() - 1];
    let mut v2 = want.clone();
    v2[1] = 2;
    for (bytes, message, offset) in [
        (flipped, "CRC mismatch", 2),
        (cut.to_vec(), "CRC mismatch", 2),
        (v2, "version 2", 0),
        (want[..9].to_vec(), "shorter than its 10-byte header", 0),
    ] {
        let err = producer_snapshot::decode(p, &bytes).unwrap_err();
        assert!(
            err.is_corruption() && err.to_string().contains(message),
            "{err}"
        );
        assert_eq!(err.file_offset(), Some((p, offset)));
    }
}

fn entry_strategy() -> impl Strategy<Value = ProducerStateEntry> {
    (
        0..i64::MAX,
        any::<i16>(),
        any::<i32>(),
        any::<i64>(),
        proptest::option::of(0..i64::MAX),
        proptest::option::of((any::<i32>(), 0..i64::MAX, any::<i32>())),
    )
        .prop_map(|(pid, epoch, coord, ts, txn, batch)| ProducerStateEntry {
            producer_id: pid,
            producer_epoch: epoch,
            coordinator_epoch: coord,
            last_timestamp: ts,
            current_txn_first_offset: txn,
            last_batch: batch.map(|(s, o, d)| BatchMetadata {
                last_sequence: s,
                last_offset: o,
                offset_delta: d,
            }),
        })
}

proptest! {
    #[test]
    fn producer_snapshots_round_trip(entries in proptest::collection::vec(entry_strategy(), 0..20)) {
        let bytes = producer_snapshot::encode(&entries);
        prop_assert_eq!(bytes.len(), 10 + 46 * entries.len());
        let p = Path::new("/x/1.snapshot");
        prop_assert_eq!(producer_snapshot::decode(p, &bytes).unwrap(), entries);
    }

    #[test]
    fn txn_indexes_round_trip(
        steps in proptest::collection::vec((0..1000i64, 0..50i64, 1..50i64, 0..60i64), 0..20),
        base in 0..1000i64,
    ) {
        let mut last = base;
        let entries: Vec<AbortedTxn> = steps
            .into_iter()
            .map(|(pid, back, gap, lso)| {
                last += gap;
                txn(pid, (last - back).max(0), last, (last + 1 - lso).max(0))
            })
            .collect();
        let bytes = txn_index::encode(&entries);
        prop_assert_eq!(bytes.len(), 34 * entries.len());
        let p = Path::new("/x/1.txnindex");
        prop_assert_eq!(txn_index::decode(p, base, &bytes).unwrap(), entries);
    }
}

#[test]
fn aborted_transactions_are_indexed_with_kafkas_last_stable_offsets() {
    let fs = MemFs::new();
    let mut log = open(&fs, &config(&[]));
    two_producer_log(&mut log);
    let want = [txn(1, 8, 10, 11), txn(2, 11, 16, 17)];
    assert_eq!(log.collect_aborted_transactions(0, 20), want);
    assert_eq!(log.last_stable_offset(), 20);
    log.flush().unwrap();
    // The .txnindex is Kafka's: two 34-byte entries.
    let bytes = read_file(&fs, &path(0, FileKind::TxnIndex)).unwrap();
    assert_eq!(bytes, txn_index::encode(&want));
    // read_committed: the committed transactions' records, no markers.
    let keys: Vec<i64> = committed(&log).iter().map(|(o, _)| *o).collect();
    assert_eq!(keys, [0, 1, 2, 3, 4, 5, 13, 14, 17, 18]);
    // read_uncommitted sees the aborted records too.
    assert_eq!(log.records_from(0).unwrap().count(), 14);
}

#[test]
fn an_open_transaction_holds_the_last_stable_offset() {
    let fs = MemFs::new();
    let mut log = open(&fs, &config(&[]));
    log.append(&[rec(0)]).unwrap();
    append_txn(&mut log, 5, &[1]); // 1
    log.append(&[rec(2)]).unwrap(); // 2
    assert_eq!(log.first_unstable_offset(), Some(1));
    assert_eq!(log.last_stable_offset(), 1);
    assert_eq!(committed(&log), [(0, "k0".to_string())]);
    // The state survives a reopen (replayed from the log: no snapshot).
    drop(log);
    let mut log = open(&fs, &config(&[]));
    assert_eq!(log.last_stable_offset(), 1);
    end(&mut log, 5, TransactionResult::Commit); // 3
    assert_eq!(log.first_unstable_offset(), None);
    assert_eq!(
        committed(&log).iter().map(|(o, _)| *o).collect::<Vec<_>>(),
        [0, 1, 2]
    );
}

#[test]
fn producer_state_breaks_are_refused() {
    let fs = MemFs::new();
    let mut log = open(&fs, &config(&[]));
    append_txn(&mut log, 3, &[0]);
    // A non-transactional batch of a producer in a transaction.
    let plain = Producer {
        transactional: false,
        ..txn_producer(3)
    };
    let err = log.append_as(&plain, &[rec(1)]).unwrap_err();
    assert!(matches!(err, Error::ProducerState { .. }), "{err}");
    assert!(err.to_string().contains("while its transaction"), "{err}");
    // A fenced epoch.
    end(&mut log, 3, TransactionResult::Commit);
    log.append_as(
        &Producer {
            producer_epoch: 2,
            ..txn_producer(3)
        },
        &[rec(2)],
    )
    .unwrap();
    let err = log.append_as(&txn_producer(3), &[rec(3)]).unwrap_err();
    assert!(err.to_string().contains("fenced"), "{err}");
    // A zombie coordinator.
    log.append_end_txn_marker(3, 2, TransactionResult::Abort, 5)
        .unwrap();
    let err = log
        .append_end_txn_marker(3, 2, TransactionResult::Abort, 4)
        .unwrap_err();
    assert!(err.to_string().contains("zombie"), "{err}");
    // Nothing refused was written; the log is still writable.
    assert_eq!(log.log_end_offset(), 4);
    log.append(&[rec(9)]).unwrap();
}

#[test]
fn control_batches_from_elsewhere_update_producer_state() {
    // A marker built as a broker writes it, appended with append_batch.
    let fs = MemFs::new();
    let mut log = open(&fs, &config(&[]));
    let mut b = BatchBuilder::new(0).producer(9, 1, 0).transactional(true);
    b.append(0, 1000, Some(b"k"), Some(b"v"), &[]).unwrap();
    log.append_batch(RecordBatch::parse(b.build()).unwrap())
        .unwrap();
    assert_eq!(log.last_stable_offset(), 0);
    let mut m = BatchBuilder::new(0)
        .producer(9, 1, -1)
        .transactional(true)
        .control(true);
    m.append(
        0,
        1000,
        Some(&ControlRecordType::Abort.key()),
        Some(&[0, 0, 0, 0, 0, 0]),
        &[],
    )
    .unwrap();
    log.append_batch(RecordBatch::parse(m.build()).unwrap())
        .unwrap();
    assert_eq!(log.last_stable_offset(), 2);
    assert_eq!(log.collect_aborted_transactions(0, 2), [txn(9, 0, 1, 2)]);
    assert!(committed(&log).is_empty());
}

#[test]
fn rolls_and_close_take_producer_snapshots() {
    let fs = MemFs::new();
    let c = config(&[("segment.bytes", "200")]);
    let mut log = open(&fs, &c);
    for i in 0..12 {
        append_txn(&mut log, 1, &[i]);
        end(&mut log, 1, TransactionResult::Commit);
    }
    let bases: Vec<i64> = log.segments().map(|s| s.base_offset()).collect();
    assert!(bases.len() > 3, "{bases:?}");
    for b in &bases[1..] {
        assert!(fs.exists(&path(*b, FileKind::Snapshot)), "snapshot at {b}");
    }
    let end_offset = log.log_end_offset();
    log.close().unwrap();
    assert!(fs.exists(&path(end_offset, FileKind::Snapshot)));
    // The next open replays nothing: the snapshot at the log end.
    let log = open(&fs, &c);
    assert_eq!(
        log.recovery_report().producer_state_replayed_from,
        end_offset
    );
    let p = log.producers().next().copied().unwrap();
    assert_eq!(p.last_data_offset(), Some(end_offset - 2));
}

#[test]
fn a_crash_before_the_flush_rebuilds_the_txnindex_from_the_log() {
    let fs = MemFs::new();
    let c = config(&[]);
    let mut log = open(&fs, &c);
    append_txn(&mut log, 1, &[0]);
    log.flush().unwrap();
    end(&mut log, 1, TransactionResult::Abort);
    append_txn(&mut log, 2, &[2]);
    drop(log);
    // The marker's bytes reached the .log but its entry did not reach the
    // .txnindex (a torn write of the index alone).
    fs.remove_file(&path(0, FileKind::TxnIndex)).unwrap();
    let log = open(&fs, &c);
    assert_eq!(log.collect_aborted_transactions(0, 3), [txn(1, 0, 1, 2)]);
    assert_eq!(log.last_stable_offset(), 2, "producer 2 is still open");
    assert_eq!(
        read_file(&fs, &path(0, FileKind::TxnIndex)).unwrap(),
        txn_index::encode(&[txn(1, 0, 1, 2)])
    );
    drop(log);
    // Power loss after the flush keeps the entry; before it, the marker
    // goes with the entry.
    fs.crash();
    let log = open(&fs, &c);
    assert_eq!(log.log_end_offset(), 1);
    assert_eq!(log.collect_aborted_transactions(0, 1), []);
    assert_eq!(log.last_stable_offset(), 0);
    assert!(!fs.exists(&path(0, FileKind::TxnIndex)));
}

#[test]
fn a_flushed_txnindex_survives_power_loss() {
    let fs = MemFs::new();
    let c = config(&[]);
    let mut log = open(&fs, &c);
    append_txn(&mut log, 1, &[0]);
    end(&mut log, 1, TransactionResult::Abort);
    log.flush().unwrap();
    drop(log);
    fs.crash();
    let log = open(&fs, &c);
    assert_eq!(log.collect_aborted_transactions(0, 2), [txn(1, 0, 1, 2)]);
    assert!(committed(&log).is_empty());
}

#[test]
fn a_malformed_txnindex_of_a_flushed_segment_is_rebuilt() {
    let fs = MemFs::new();
    let c = config(&[("segment.bytes", "150")]);
    let mut log = open(&fs, &c);
    two_producer_log(&mut log);
    log.close().unwrap();
    let holder = |log: &Log| {
        log.segments()
            .find(|s| !s.aborted_txns().is_empty())
            .map(|s| s.base_offset())
            .unwrap()
    };
    let log = open(&fs, &c);
    let base = holder(&log);
    let want = log.collect_aborted_transactions(0, 20);
    drop(log);
    let p = path(base, FileKind::TxnIndex);
    let good = read_file(&fs, &p).unwrap();
    for bad in [
        good[..good.len() - 3].to_vec(),
        [good.clone(), good.clone()].concat(),
        vec![0xff; 34],
    ] {
        write_file_atomic(&fs, &p, &bad).unwrap();
        let log = open(&fs, &c);
        assert!(
            log.recovery_report()
                .rebuilt_indexes
                .iter()
                .any(|(b, why)| *b == base && why.contains(".txnindex")),
            "{:?}",
            log.recovery_report()
        );
        assert_eq!(log.collect_aborted_transactions(0, 20), want);
        drop(log);
        assert_eq!(read_file(&fs, &p).unwrap(), good, "rebuilt byte for byte");
    }
}

#[test]
fn a_damaged_snapshot_is_dropped_and_the_log_replayed() {
    let fs = MemFs::new();
    let c = config(&[("segment.bytes", "150")]);
    let mut log = open(&fs, &c);
    two_producer_log(&mut log);
    append_txn(&mut log, 3, &[9]); // open at 20
    log.roll().unwrap();
    let end_offset = log.log_end_offset();
    drop(log);
    let snap = path(end_offset, FileKind::Snapshot);
    let mut bytes = read_file(&fs, &snap).unwrap();
    bytes[12] ^= 0x40;
    write_file_atomic(&fs, &snap, &bytes).unwrap();
    let log = open(&fs, &c);
    assert_eq!(log.recovery_report().dropped_snapshots.len(), 1);
    assert!(
        log.recovery_report().dropped_snapshots[0].contains("CRC mismatch"),
        "{:?}",
        log.recovery_report()
    );
    assert!(log.recovery_report().producer_state_replayed_from < end_offset);
    assert_eq!(log.first_unstable_offset(), Some(20));
    assert_eq!(log.producers().count(), 3);
    drop(log);
    // Every snapshot gone: replayed from the log start.
    for name in fs.list_dir(dir()).unwrap() {
        if name.ends_with(".snapshot") {
            fs.remove_file(&dir().join(name)).unwrap();
        }
    }
    let log = open(&fs, &c);
    assert_eq!(log.recovery_report().producer_state_replayed_from, 0);
    assert_eq!(log.first_unstable_offset(), Some(20));
    assert_eq!(log.collect_aborted_transactions(0, 20).len(), 2);
}

#[test]
fn snapshots_beyond_the_log_end_are_removed() {
    let fs = MemFs::new();
    let c = config(&[]);
    let mut log = open(&fs, &c);
    append_txn(&mut log, 1, &[0]);
    log.flush().unwrap();
    drop(log);
    // A snapshot of records a crash took away.
    let stale = path(50, FileKind::Snapshot);
    write_file_atomic(&fs, &stale, &producer_snapshot::encode(&[])).unwrap();
    let log = open(&fs, &c);
    assert!(!fs.exists(&stale));
    assert_eq!(log.first_unstable_offset(), Some(0));
}
