//! Cleaning scenarios in the spirit of Kafka's `LogCleanerTest`, written
//! from the reference's semantics: one round at a time, driven directly
//! through [`Cleaner::clean`] with a chosen first dirty offset.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use common::*;
use lithify_base::sync::Mutex;
use lithify_kafka_log::naming::{FileKind, Suffix, file_name};
use lithify_kafka_log::record::DELETE_HORIZON_FLAG_MASK;
use lithify_kafka_log::record::{BatchBuilder, RecordBatch, SimpleRecord};

use lithify_compaction_logclean::LogToClean;
use lithify_vfs::{FileSystem, MemFs, read_file};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// The records a full clean below `upper` must leave: for every key its
/// last record below `upper`, plus everything at or above `upper`.
fn dedupe(
    all: &[(i64, String, Option<String>)],
    upper: i64,
) -> Vec<(i64, Option<String>, Option<String>)> {
    let mut last: BTreeMap<&str, i64> = BTreeMap::new();
    for (o, k, _) in all.iter().filter(|(o, _, _)| *o < upper) {
        last.insert(k, *o);
    }
    all.iter()
        .filter(|(o, k, _)| *o >= upper || last[k.as_str()] == *o)
        .map(|(o, k, v)| (*o, Some(k.clone()), v.clone()))
        .collect()
}

#[test]
fn dedupe_keeps_the_latest_record_per_key_with_its_original_offset() {
    let fs = Arc::new(MemFs::new());
    let mut log = open(fs, "/k/t-0", compact(&[("segment.bytes", "400")]), 0);
    let mut all = Vec::new();
    for i in 0..60i64 {
        let (k, v) = (format!("key-{}", i % 7), format!("v{i}"));
        log.append(&[rec(1000 + i, &k, &v)]).unwrap();
        all.push((i, k, Some(v)));
    }
    log.roll().unwrap();
    log.append(&[rec(2000, "key-1", "in the active segment")])
        .unwrap();
    all.push((60, "key-1".into(), Some("in the active segment".into())));
    let before = log.segments().count();
    assert!(before > 5, "{before} segments");
    let shared = Mutex::new(log);

    let out = clean(&mut cleaner(1 << 16, "0.75"), &shared, 0, 5000);
    let log = shared.lock();
    assert_eq!(contents(&log), dedupe(&all, 60));
    assert_eq!(out.report.end_offset, 60);
    assert_eq!(out.report.first_uncleanable_offset, 60);
    let s = &out.report.stats;
    assert_eq!(s.messages_read, 60);
    assert_eq!(s.messages_written, 7);
    assert_eq!(s.map_messages_read, 60);
    assert_eq!(s.invalid_messages_read, 0);
    assert!(!s.map_full);
    // Every record stayed in its own untouched batch: copied byte for byte.
    assert_eq!(s.batches_copied, 7);
    assert_eq!(s.batches_dropped, 53);
    // The log reopens to the same records (the swap is on disk).
    let fs = log.fs().clone();
    let config = log.config().clone();
    drop(log);
    // The log itself goes too: a log has one writer.
    drop(shared);
    let reopened = open(fs, "/k/t-0", config, 0);
    assert_eq!(contents(&reopened), dedupe(&all, 60));
}

#[test]
fn records_are_removed_from_inside_batches_keeping_offsets_and_last_offset() {
    let fs = Arc::new(MemFs::new());
    let mut log = open(fs, "/k/t-0", compact(&[]), 0);
    // One batch of 5: keys a b a c b.
    let batch: Vec<SimpleRecord> = ["a", "b", "a", "c", "b"]
        .iter()
        .enumerate()
        .map(|(i, k)| rec(100 + i as i64, k, format!("v{i}")))
        .collect();
    log.append(&batch).unwrap();
    log.append(&[rec(200, "c", "v5")]).unwrap();
    log.roll().unwrap();
    let log = Mutex::new(log);
    clean(&mut cleaner(4096, "0.9"), &log, 0, 1000);
    let log = log.lock();
    let b = batches(&log);
    assert_eq!(b.len(), 2);
    // The first batch keeps offsets 2 (a) and 4 (b) and its last offset 4.
    assert_eq!((b[0].base_offset(), b[0].last_offset()), (0, 4));
    assert_eq!(b[0].records_count(), 2);
    assert_eq!(
        b[0].base_timestamp(),
        102,
        "base timestamp = first kept record's"
    );
    b[0].ensure_valid().unwrap();
    let recs = b[0].records().unwrap();
    assert_eq!(
        recs.iter()
            .map(|r| (r.offset, r.timestamp))
            .collect::<Vec<_>>(),
        [(2, 102), (4, 104)]
    );
    assert_eq!(offsets(&log), [2, 4, 5]);
}

#[test]
fn the_active_segment_is_never_cleaned() {
    let mem = MemFs::new();
    let fs: Arc<dyn FileSystem> = Arc::new(mem.clone());
    let mut log = open(fs, "/k/t-0", compact(&[("segment.bytes", "300")]), 0);
    for i in 0..20 {
        log.append(&[rec(i, "same", format!("v{i}"))]).unwrap();
    }
    let active = log.active_segment().base_offset();
    let active_path = log.active_segment().log_path().to_path_buf();
    let before = read_file(&mem, &active_path).unwrap();
    assert!(log.active_segment().size() > 0);
    let log = Mutex::new(log);
    let out = clean(&mut cleaner(4096, "0.9"), &log, 0, 1000);
    assert_eq!(out.report.first_uncleanable_offset, active);
    assert_eq!(read_file(&mem, &active_path).unwrap(), before);
    let log = log.lock();
    // Below the active segment one record of "same" remains.
    let below: Vec<i64> = offsets(&log).into_iter().filter(|o| *o < active).collect();
    assert_eq!(below, [active - 1]);
}

#[test]
fn segments_younger_than_the_min_compaction_lag_stay_dirty() {
    let fs = Arc::new(MemFs::new());
    let config = compact(&[("segment.bytes", "300"), ("min.compaction.lag.ms", "1000")]);
    let mut log = open(fs, "/k/t-0", config, 0);
    // Old records (timestamps 0..9), then young ones (10_000..).
    for i in 0..10 {
        log.append(&[rec(i, "k", format!("old{i}"))]).unwrap();
    }
    log.roll().unwrap();
    let young_base = log.log_end_offset();
    for i in 0..10 {
        log.append(&[rec(10_000 + i, "k", format!("young{i}"))])
            .unwrap();
    }
    log.roll().unwrap();
    // now - lag = 9_500: the first segment holding timestamps > 9_500 is
    // the first young one.
    let ltc = LogToClean::from_log(&log, None, 10_500).unwrap();
    assert_eq!(ltc.first_uncleanable_offset, young_base);
    let log = Mutex::new(log);
    let out = clean(&mut cleaner(4096, "0.9"), &log, 0, 10_500);
    assert_eq!(out.report.end_offset, young_base);
    let offs = offsets(&log.lock());
    assert_eq!(offs[0], young_base - 1, "one old record left");
    assert_eq!(
        offs[1..],
        (young_base..young_base + 10).collect::<Vec<_>>()[..]
    );
    // Once the lag has passed, the young segments are cleanable too.
    let out = clean(&mut cleaner(4096, "0.9"), &log, young_base, 20_000);
    assert_eq!(out.report.first_uncleanable_offset, young_base + 10);
    assert_eq!(offsets(&log.lock()), [young_base + 9]);
}

#[test]
fn a_full_map_cleans_partially_and_later_rounds_continue() {
    // Kafka's testPartialSegmentClean: a map with 2 slots at load factor
    // 0.75 holds one key.
    let fs = Arc::new(MemFs::new());
    let mut log = open(fs, "/k/t-0", compact(&[]), 0);
    for (i, k) in [0, 1, 0, 1, 0].into_iter().enumerate() {
        log.append(&[rec(i as i64, k, k)]).unwrap();
    }
    log.roll().unwrap();
    let log = Mutex::new(log);
    let mut c = cleaner(48, "0.75");
    assert_eq!(c.offset_map().slots(), 2);

    let out = clean(&mut c, &log, 2, 0);
    assert!(out.report.stats.map_full);
    assert_eq!(out.report.end_offset, 3);
    assert_eq!(keys(&log.lock()), ["1", "0", "1", "0"]);
    assert_eq!(offsets(&log.lock()), [1, 2, 3, 4]);

    let out = clean(&mut c, &log, 3, 0);
    assert_eq!(out.report.end_offset, 4);
    assert_eq!(keys(&log.lock()), ["0", "1", "0"]);
    assert_eq!(offsets(&log.lock()), [2, 3, 4]);

    let out = clean(&mut c, &log, 4, 0);
    assert_eq!(out.report.end_offset, 5);
    assert_eq!(keys(&log.lock()), ["1", "0"]);
    assert_eq!(offsets(&log.lock()), [3, 4]);
}

#[test]
fn map_full_rounds_converge_to_one_record_per_key() {
    let fs = Arc::new(MemFs::new());
    let mut log = open(fs, "/k/t-0", compact(&[("segment.bytes", "500")]), 0);
    let mut all = Vec::new();
    for i in 0..120i64 {
        let (k, v) = (format!("k{}", (i * 7) % 23), format!("v{i}"));
        log.append(&[rec(i, &k, &v)]).unwrap();
        all.push((i, k, Some(v)));
    }
    log.roll().unwrap();
    let log = Mutex::new(log);
    // 10 slots at 0.5: five keys per round.
    let mut c = cleaner(240, "0.5");
    let mut first_dirty = 0;
    let mut rounds = 0;
    while first_dirty < 120 {
        let out = clean(&mut c, &log, first_dirty, 0);
        assert!(
            out.report.end_offset > first_dirty,
            "a round always progresses"
        );
        first_dirty = out.report.end_offset;
        rounds += 1;
    }
    assert!(rounds > 5, "{rounds} rounds");
    assert_eq!(contents(&log.lock()), dedupe(&all, 120));
}

#[test]
fn a_tombstone_gets_a_delete_horizon_then_goes() {
    let fs = Arc::new(MemFs::new());
    let config = compact(&[("delete.retention.ms", "86400000")]);
    let mut log = open(fs, "/k/t-0", config, 0);
    for i in 0..10 {
        log.append(&[rec(500 + i, format!("other-{i}"), "x")])
            .unwrap();
    }
    // Reference vector D0: a tombstone for "k" at offset 10, ts 1000.
    let d0 = RecordBatch::parse(hex("000000000000000a000000390000000002b27ef30200000000000000000000000003e800000000000003e8ffffffffffffffffffffffffffff000000010e000000026b0100").into()).unwrap();
    log.append_batch(d0).unwrap();
    log.append(&[rec(2000, "after", "y")]).unwrap();
    log.roll().unwrap();
    let log = Mutex::new(log);
    let mut c = cleaner(4096, "0.9");

    // First round at 5000: kept, stamped: exactly vector D1.
    let out = clean(&mut c, &log, 0, 5000);
    assert_eq!(out.report.stats.delete_horizons_set, 1);
    let d1 = hex(
        "000000000000000a0000003c0000000002dca34eda0040000000000000000005266f8800000000000003e8ffffffffffffffffffffffffffff000000011400bfaeb35200026b0100",
    );
    let b = batches(&log.lock());
    let stamped = b.iter().find(|b| b.base_offset() == 10).unwrap();
    assert_eq!(stamped.raw().as_ref(), &d1[..]);
    assert_eq!(stamped.delete_horizon_ms(), Some(5000 + 86_400_000));
    assert_ne!(stamped.attributes() & DELETE_HORIZON_FLAG_MASK, 0);
    assert_eq!(stamped.records().unwrap()[0].timestamp, 1000);
    assert_eq!(out.clean_section.1, Some(86_405_000));

    // Rounds before the horizon keep it, unchanged.
    clean(&mut c, &log, 0, 86_404_999);
    let b = batches(&log.lock());
    assert_eq!(
        b.iter()
            .find(|b| b.base_offset() == 10)
            .unwrap()
            .raw()
            .as_ref(),
        &d1[..]
    );
    // The first round at the horizon removes it.
    let out = clean(&mut c, &log, 0, 86_405_000);
    assert_eq!(out.report.stats.tombstones_dropped, 1);
    assert!(
        contents(&log.lock())
            .iter()
            .all(|(_, k, _)| k.as_deref() != Some("k"))
    );
    assert_eq!(out.clean_section.1, None);
}

#[test]
fn a_superseded_tombstone_goes_at_once() {
    let fs = Arc::new(MemFs::new());
    let mut log = open(fs, "/k/t-0", compact(&[]), 0);
    log.append(&[SimpleRecord::tombstone(1, "k")]).unwrap();
    log.append(&[rec(2, "k", "back")]).unwrap();
    log.roll().unwrap();
    let log = Mutex::new(log);
    let out = clean(&mut cleaner(4096, "0.9"), &log, 0, 10);
    assert_eq!(
        contents(&log.lock()),
        [(1, Some("k".into()), Some("back".into()))]
    );
    assert_eq!(out.report.stats.tombstones_dropped, 1);
    assert_eq!(out.report.stats.delete_horizons_set, 0);
}

#[test]
fn groups_respect_the_segment_and_index_size_caps() {
    // segment.bytes caps the bytes of a group's sources.
    let fs = Arc::new(MemFs::new());
    let config = compact(&[("segment.bytes", "400"), ("index.interval.bytes", "1")]);
    let mut log = open(fs.clone(), "/k/a-0", config, 0);
    for i in 0..40 {
        log.append(&[rec(i, format!("k{i}"), "v")]).unwrap();
    }
    log.roll().unwrap();
    let sizes: Vec<u64> = log.segment_infos().iter().map(|s| s.size).collect();
    let log = Mutex::new(log);
    let out = clean(&mut cleaner(4096, "0.9"), &log, 0, 0);
    // Unique keys: nothing shrinks, so each group is exactly what fits in
    // 400 bytes of sources; with ~5 batches per segment that is one
    // segment per group.
    assert!(sizes.iter().all(|s| *s <= 400));
    assert_eq!(out.report.segments_out, out.report.segments_in);

    // With a roomier segment.bytes, segment.index.bytes caps instead: each
    // source segment has several index entries (index.interval.bytes 1).
    let config = compact(&[
        ("segment.bytes", "100000"),
        ("index.interval.bytes", "1"),
        ("segment.index.bytes", "100"),
    ]);
    let mut log = open(fs.clone(), "/k/b-0", config, 0);
    for i in 0..40 {
        log.append(&[rec(i, format!("k{i}"), "v")]).unwrap();
        if i % 4 == 3 {
            log.roll().unwrap();
        }
    }
    log.roll().unwrap();
    let infos = log.segment_infos();
    // 4 batches per segment: entries for batches 2..4 = 3 offset entries
    // (24 bytes) and 3 time entries (36 bytes); 100 bytes of time index
    // take 2 segments (72), not 3 (108).
    assert!(
        infos[..infos.len() - 1]
            .iter()
            .all(|s| s.time_index_entries == 3)
    );
    let log = Mutex::new(log);
    let out = clean(&mut cleaner(4096, "0.9"), &log, 0, 0);
    assert_eq!(out.report.segments_in, 10);
    assert_eq!(out.report.segments_out, 5);
    let bases: Vec<i64> = log
        .lock()
        .segment_infos()
        .iter()
        .map(|s| s.base_offset)
        .collect();
    assert_eq!(bases, [0, 8, 16, 24, 32, 40]);
    assert_eq!(offsets(&log.lock()), (0..40).collect::<Vec<_>>());
}

#[test]
fn keyless_records_in_range_are_dropped_and_counted() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    // A log written without compaction may hold keyless records.
    let mut log = open(fs.clone(), "/k/t-0", LogConfig::default(), 0);
    log.append(&[rec(1, "a", "1")]).unwrap();
    log.append(&[SimpleRecord {
        timestamp: 2,
        key: None,
        value: Some("no key".into()),
        headers: vec![],
    }])
    .unwrap();
    log.append(&[rec(3, "b", "3")]).unwrap();
    log.roll().unwrap();
    log.append(&[SimpleRecord {
        timestamp: 4,
        key: None,
        value: Some("beyond the round".into()),
        headers: vec![],
    }])
    .unwrap();
    drop(log);
    let log = Mutex::new(open(fs, "/k/t-0", compact(&[]), 0));
    let out = clean(&mut cleaner(4096, "0.9"), &log, 0, 10);
    assert_eq!(out.report.stats.invalid_messages_read, 1);
    assert_eq!(
        offsets(&log.lock()),
        [0, 2, 3],
        "the active segment's keyless record stays"
    );
}

use lithify_kafka_log::LogConfig;

fn idempotent(base: i64, pid: i64, seq: i32, ts: i64, key: &str) -> RecordBatch {
    let mut b = BatchBuilder::new(base).producer(pid, 0, seq);
    b.append(base, ts, Some(key.as_bytes()), Some(b"v"), &[])
        .unwrap();
    RecordBatch::parse(b.build()).unwrap()
}

#[test]
fn an_active_producers_last_batch_survives_as_an_empty_header() {
    // Kafka's testLogCleanerRetainsProducerLastSequence.
    let fs = Arc::new(MemFs::new());
    let mut log = open(fs, "/k/t-0", compact(&[]), 0);
    log.append(&[rec(1000, "0", "v")]).unwrap(); // 0
    log.append_batch(idempotent(0, 1, 0, 1000, "0")).unwrap(); // 1
    log.append_batch(idempotent(0, 2, 0, 1000, "0")).unwrap(); // 2
    log.append_batch(idempotent(0, 3, 0, 1000, "0")).unwrap(); // 3
    log.append_batch(idempotent(0, 2, 1, 1000, "1")).unwrap(); // 4
    log.roll().unwrap();
    let log = Mutex::new(log);
    let out = clean(&mut cleaner(4096, "0.9"), &log, 0, 2000);
    let log = log.lock();
    let b = batches(&log);
    assert_eq!(
        b.iter().map(|b| b.last_offset()).collect::<Vec<_>>(),
        [1, 3, 4]
    );
    let last_seq: BTreeMap<i64, i32> = b
        .iter()
        .map(|b| (b.producer_id(), b.base_sequence() + b.last_offset_delta()))
        .collect();
    assert_eq!(last_seq, BTreeMap::from([(1, 0), (2, 1), (3, 0)]));
    assert_eq!(keys(&log), ["0", "1"]);
    assert_eq!(offsets(&log), [3, 4]);
    assert_eq!(
        b[0].records_count(),
        0,
        "producer 1's batch is an empty header"
    );
    assert_eq!(b[0].size_in_bytes(), 61);
    assert_eq!(out.report.stats.empty_headers, 1);
}

#[test]
fn an_expired_producers_empty_batch_goes() {
    let fs = Arc::new(MemFs::new());
    let mut log = open(fs, "/k/t-0", compact(&[]), 0);
    log.append_batch(idempotent(0, 1, 0, 1000, "a")).unwrap();
    log.append(&[rec(1001, "a", "newer")]).unwrap();
    log.append(&[rec(1002, "b", "last")]).unwrap();
    log.roll().unwrap();
    let log = Mutex::new(log);
    let mut c = cleaner(4096, "0.9");
    clean(&mut c, &log, 0, 2000);
    assert_eq!(
        batches(&log.lock()).len(),
        3,
        "the active producer's batch stays, empty"
    );
    clean(&mut c, &log, 0, 1000 + 86_400_000);
    assert_eq!(
        batches(&log.lock()).len(),
        2,
        "an expired producer's batch goes"
    );
}

#[test]
fn offset_gaps_left_by_cleaning_do_not_stall_later_rounds() {
    // KAFKA-8764: after a clean, offsets have gaps; the map's latest offset
    // jumps to the next segment's base so rounds still reach U.
    let fs = Arc::new(MemFs::new());
    let mut log = open(fs, "/k/t-0", compact(&[("segment.bytes", "300")]), 0);
    for i in 0..30 {
        log.append(&[rec(i, "same", format!("v{i}"))]).unwrap();
    }
    log.roll().unwrap();
    let log = Mutex::new(log);
    let mut c = cleaner(4096, "0.9");
    let out = clean(&mut c, &log, 0, 0);
    assert_eq!(out.report.end_offset, 30);
    for i in 30..60 {
        log.lock()
            .append(&[rec(i, "same", format!("v{i}"))])
            .unwrap();
    }
    log.lock().roll().unwrap();
    let out = clean(&mut c, &log, 30, 0);
    assert_eq!(out.report.end_offset, 60);
    assert_eq!(offsets(&log.lock()), [59]);
}

#[test]
fn a_corrupt_batch_stops_the_round_and_names_the_file() {
    let mem = MemFs::new();
    let fs: Arc<dyn FileSystem> = Arc::new(mem.clone());
    let mut log = open(
        fs.clone(),
        "/k/t-0",
        compact(&[("segment.bytes", "300")]),
        0,
    );
    for i in 0..20 {
        log.append(&[rec(i, "k", format!("value-{i}"))]).unwrap();
    }
    log.roll().unwrap();
    let path = std::path::Path::new("/k/t-0").join(file_name(0, FileKind::Log, Suffix::None));
    let mut bytes = read_file(&mem, &path).unwrap();
    let last = bytes.len() - 2;
    bytes[last] ^= 0x55; // inside the first segment's last record
    lithify_vfs::write_file_atomic(&mem, &path, &bytes).unwrap();
    drop(log);
    let log = Mutex::new(open(fs, "/k/t-0", compact(&[("segment.bytes", "300")]), 0));
    // Reads refuse the damaged batch too, naming the file.
    let read = log
        .lock()
        .records_from(0)
        .unwrap()
        .find_map(Result::err)
        .unwrap();
    assert!(
        read.to_string().contains("00000000000000000000.log"),
        "{read}"
    );
    let before = read_file(&mem, &path).unwrap();
    let ltc = LogToClean::from_log(&log.lock(), None, 10).unwrap();
    let err = cleaner(4096, "0.9")
        .clean(&log, &ltc, 10, &|| Ok(()))
        .unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(
        err.to_string().contains("00000000000000000000.log"),
        "{err}"
    );
    assert_eq!(
        read_file(&mem, &path).unwrap(),
        before,
        "nothing was swapped in"
    );
    // No `.cleaned` file is left behind.
    let names = mem.list_dir(std::path::Path::new("/k/t-0")).unwrap();
    assert!(names.iter().all(|n| !n.contains(".cleaned")), "{names:?}");
}

/// A round's map starts small and grows toward the configured memory; the
/// round must stop where a map of the configured memory reaches its load
/// factor, and keep what that map would keep.
#[test]
fn a_growing_map_stops_where_the_configured_map_fills() {
    let fs = Arc::new(MemFs::new());
    let mut log = open(fs, "/k/t-0", compact(&[("segment.bytes", "4194304")]), 0);
    // 60,200 distinct keys, in batches of 700 (the map fills mid-batch).
    for b in 0..86i64 {
        let batch: Vec<_> = (0..700)
            .map(|i| rec(b * 700 + i, b * 700 + i, "v"))
            .collect();
        log.append(&batch).unwrap();
    }
    log.roll().unwrap();
    let log = Mutex::new(log);
    // 50,000 slots at 0.9 hold 45,000 keys: more than the map a round
    // starts with, fewer than the section's keys.
    let mut c = cleaner(50_000 * 24, "0.9");
    let out = clean(&mut c, &log, 0, 0);
    assert!(out.report.stats.map_full);
    assert_eq!(out.report.end_offset, 45_000);
    assert_eq!(out.report.stats.map_messages_read, 45_000);
    assert_eq!(c.offset_map().size(), 45_000);
    // Every key is its only record: all stay.
    assert_eq!(contents(&log.lock()).len(), 60_200);
}

/// With more memory than the section needs, a round's decisions are the
/// latest record of every key, whether its map grew or not.
#[test]
fn a_sized_map_keeps_the_latest_record_of_every_key() {
    for memory in [64 << 20, 1 << 20, 40_000 * 24] {
        let fs = Arc::new(MemFs::new());
        let mut log = open(fs, "/k/t-0", compact(&[("segment.bytes", "1048576")]), 0);
        let mut all = Vec::new();
        for b in 0..200i64 {
            let mut batch = Vec::new();
            for i in 0..250 {
                let o = b * 250 + i;
                let k = format!("k{}", (o * 7_919) % 35_000);
                batch.push(rec(o, &k, "v"));
                all.push((o, k, Some("v".to_string())));
            }
            log.append(&batch).unwrap();
        }
        log.roll().unwrap();
        let log = Mutex::new(log);
        let out = clean(&mut cleaner(memory, "0.9"), &log, 0, 0);
        assert!(!out.report.stats.map_full, "{memory}");
        assert_eq!(out.report.end_offset, 50_000);
        assert_eq!(contents(&log.lock()), dedupe(&all, 50_000), "{memory}");
    }
}

/// Batches whose records were all replaced later (tombstones among them)
/// are dropped, with every record and tombstone counted, and a batch with
/// one kept record is rewritten: pass 2 drops the first from pass 1's
/// marks alone and must read the records of the second.
#[test]
fn superseded_batches_are_dropped_and_counted() {
    let fs = Arc::new(MemFs::new());
    let mut log = open(fs, "/k/t-0", compact(&[]), 0);
    // Offsets 0-3: a, b (tombstone), c, d (tombstone) — all replaced.
    log.append(&[
        rec(0, "a", "1"),
        SimpleRecord::tombstone(0, "b"),
        rec(0, "c", "1"),
        SimpleRecord::tombstone(0, "d"),
    ])
    .unwrap();
    // 4-5: e, f replaced.
    log.append(&[rec(0, "e", "1"), rec(0, "f", "1")]).unwrap();
    // 6-7: g kept, b (tombstone) replaced.
    log.append(&[rec(0, "g", "1"), SimpleRecord::tombstone(0, "b")])
        .unwrap();
    // 8-13: the replacements.
    let latest: Vec<_> = ["a", "b", "c", "d", "e", "f"]
        .iter()
        .map(|k| rec(0, k, "2"))
        .collect();
    log.append(&latest).unwrap();
    log.roll().unwrap();
    let log = Mutex::new(log);
    let out = clean(&mut cleaner(1 << 16, "0.9"), &log, 0, 0);
    let s = &out.report.stats;
    assert_eq!(s.messages_read, 14);
    assert_eq!(s.messages_written, 7);
    assert_eq!(s.tombstones_dropped, 3);
    assert_eq!(s.batches_dropped, 2);
    assert_eq!(s.batches_rewritten, 1);
    assert_eq!(s.batches_copied, 1);
    assert_eq!(offsets(&log.lock()), [6, 8, 9, 10, 11, 12, 13]);
}

#[test]
fn a_round_hands_the_replaced_segments_to_its_closer() {
    let fs = Arc::new(MemFs::new());
    let mut log = open(fs, "/k/close-0", compact(&[("segment.bytes", "400")]), 0);
    for i in 0..40i64 {
        log.append(&[rec(1000 + i, format!("key-{}", i % 5), format!("v{i}"))])
            .unwrap();
    }
    log.roll().unwrap();
    let old: Vec<i64> = log
        .segments()
        .map(|s| s.base_offset())
        .filter(|&b| b < 40)
        .collect();
    let log = Mutex::new(log);
    let (closer, retired) = crossbeam_channel::unbounded();
    let mut cleaner = cleaner(1 << 16, "0.75");
    cleaner.close_elsewhere(closer);

    // An aborted round replaced nothing: nothing to close elsewhere.
    let ltc = LogToClean::from_log(&log.lock(), Some(0), 5000).unwrap();
    let stop = || -> lithify_compaction_logclean::Result<()> {
        let refused = lithify_kafka_log::LogConfig::from_properties([("segment.bytes", "x")]);
        Err(refused.unwrap_err().into())
    };
    let aborted = cleaner.clean(&log, &ltc, 5000, &stop);
    assert!(aborted.is_err());
    assert!(retired.try_recv().is_err());

    let out = clean(&mut cleaner, &log, 0, 5000);
    assert_eq!(out.report.segments_in, old.len());
    let snapshot = retired.try_recv().expect("the round's snapshot");
    let held: Vec<i64> = snapshot
        .segments
        .iter()
        .map(|s| s.base_offset)
        .filter(|&b| b < 40)
        .collect();
    assert_eq!(held, old, "the snapshot holds every replaced segment");
    assert!(retired.try_recv().is_err(), "one snapshot per round");
    assert_eq!(keys(&log.lock()).len(), 5);

    // A closer that cannot take the snapshot at once (no room) does not
    // hold the round up: the snapshot is dropped on the cleaner's thread.
    let mut log = log.into_inner();
    for i in 40..80i64 {
        log.append(&[rec(1000 + i, format!("key-{}", i % 5), format!("v{i}"))])
            .unwrap();
    }
    log.roll().unwrap();
    let log = Mutex::new(log);
    let (closer, retired) = crossbeam_channel::bounded(0);
    cleaner.close_elsewhere(closer);
    let out = clean(&mut cleaner, &log, 40, 5000);
    assert!(out.report.segments_in > 0);
    assert!(retired.try_recv().is_err());
    assert_eq!(keys(&log.lock()).len(), 5);
}
