//! The cleaner manager and service: choosing logs, checkpoints, states,
//! failures, the threads.

mod common;

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use lithify_compaction_logclean::CleaningState;
use lithify_compaction_logclean::checkpoint;
use lithify_compaction_logclean::{
    CleanerConfig, CleanerEvent, CleaningReason, LogCleaner, LogToClean,
};
use lithify_kafka_log::TopicPartition;
use lithify_kafka_log::naming::{FileKind, Suffix, file_name};
use lithify_kafka_log::record::{SimpleRecord, TransactionResult};
use lithify_kafka_log::{LogConfig, ManualClock, SharedLog, shared_log};
use lithify_vfs::{FileSystem, MemFs, read_file, write_file_atomic};

fn tp(t: &str, p: i32) -> TopicPartition {
    TopicPartition::new(t, p)
}

fn service(fs: &MemFs, now: i64) -> (LogCleaner, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::at_ms(now));
    let config =
        CleanerConfig::from_properties([("log.cleaner.dedupe.buffer.size", "65536")]).unwrap();
    (
        LogCleaner::new(config, Arc::new(fs.clone()), clock.clone()),
        clock,
    )
}

/// A log at `/data/<name>` with `dups` records per key over `keys` keys,
/// rolled so all of it is cleanable.
fn dirty_log(fs: &MemFs, name: &str, keys: usize, dups: usize, config: LogConfig) -> SharedLog {
    let mut log = open(Arc::new(fs.clone()), &format!("/data/{name}"), config, 0);
    for d in 0..dups {
        for k in 0..keys {
            log.append(&[rec(
                1000 + (d * keys + k) as i64,
                format!("k{k}"),
                format!("v{d}"),
            )])
            .unwrap();
        }
    }
    log.roll().unwrap();
    shared_log(log)
}

fn cleaned(events: &[CleanerEvent]) -> Vec<TopicPartition> {
    events
        .iter()
        .filter_map(|e| match e {
            CleanerEvent::Cleaned(r) => Some(r.topic_partition.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn the_dirtiest_eligible_log_wins_and_the_ratio_must_exceed_the_minimum() {
    let fs = MemFs::new();
    let (svc, _) = service(&fs, 10_000);
    let c = compact(&[("segment.bytes", "1000")]);
    svc.add_log(dirty_log(&fs, "a-0", 10, 2, c.clone()))
        .unwrap();
    svc.add_log(dirty_log(&fs, "b-0", 10, 4, c.clone()))
        .unwrap();
    // Not compacted: never chosen.
    let mut plain = open(Arc::new(fs.clone()), "/data/c-0", LogConfig::default(), 0);
    plain.append(&[rec(1, "k", "v")]).unwrap();
    plain.roll().unwrap();
    svc.add_log(shared_log(plain)).unwrap();

    let m = svc.manager();
    // First round of a log: everything is dirty (ratio 1), ties go to the
    // first log in order; both are eligible.
    let grab = m.grab_filthiest_log(&HashSet::new());
    let (ltc, _) = grab.chosen.unwrap();
    assert_eq!(ltc.cleanable_ratio, 1.0);
    assert_eq!(
        m.cleaning_state(&ltc.topic_partition),
        Some(CleaningState::InProgress)
    );
    // In progress: the other log is chosen next.
    let (other, _) = m.grab_filthiest_log(&HashSet::new()).chosen.unwrap();
    assert_ne!(other.topic_partition, ltc.topic_partition);
    assert!(m.grab_filthiest_log(&HashSet::new()).chosen.is_none());
    m.done_cleaning(&ltc.topic_partition, 0, None).unwrap();
    m.done_cleaning(&other.topic_partition, 0, None).unwrap();

    // Clean both, then dirty b more than a: b wins.
    let events = svc.clean_eligible_once().unwrap();
    assert_eq!(cleaned(&events).len(), 2, "{events:?}");
    for (name, extra) in [("a-0", 1), ("b-0", 30)] {
        let log = m.log(&tp(name.split('-').next().unwrap(), 0)).unwrap();
        let mut log = log.lock();
        for i in 0..extra {
            log.append(&[rec(5000 + i, format!("k{}", i % 10), "new")])
                .unwrap();
        }
        log.roll().unwrap();
    }
    let (ltc, _) = m.grab_filthiest_log(&HashSet::new()).chosen.unwrap();
    assert_eq!(ltc.topic_partition, tp("b", 0));
    assert!(matches!(ltc.reason, Some(CleaningReason::DirtyRatio(_))));
    m.done_cleaning(&ltc.topic_partition, ltc.first_dirty_offset, None)
        .unwrap();

    // a's ratio is below 0.5: not eligible. A minimum exactly at the
    // ratio still excludes it (strictly greater), a hair below admits it.
    let checkpointed = m.all_cleaner_checkpoints().0.get(&tp("a", 0)).copied();
    let a = m.remove_log(&tp("a", 0)).unwrap().unwrap();
    let ltc_a =
        lithify_compaction_logclean::LogToClean::from_log(&a.lock(), checkpointed, 10_000).unwrap();
    assert!(ltc_a.cleanable_ratio > 0.0 && ltc_a.cleanable_ratio < 0.5);
    assert!(!ltc_a.is_eligible());
    let ratio = ltc_a.cleanable_ratio;
    drop(a);
    for (min, eligible) in [(ratio, false), (ratio - 1e-9, true)] {
        let mut config = c.clone();
        config.min_cleanable_dirty_ratio = min;
        let log = open(Arc::new(fs.clone()), "/data/a-0", config, 0);
        let ltc = lithify_compaction_logclean::LogToClean::from_log(
            &log,
            Some(ltc_a.first_dirty_offset),
            10_000,
        )
        .unwrap();
        assert_eq!(ltc.cleanable_ratio, ratio);
        assert_eq!(ltc.is_eligible(), eligible, "min {min}");
    }
}

#[test]
fn the_checkpoint_advances_after_each_round_and_names_every_log() {
    let fs = MemFs::new();
    let (svc, _) = service(&fs, 10_000);
    let c = compact(&[("segment.bytes", "1000")]);
    svc.add_log(dirty_log(&fs, "orders-0", 5, 3, c.clone()))
        .unwrap();
    svc.add_log(dirty_log(&fs, "orders-1", 5, 2, c.clone()))
        .unwrap();
    assert!(
        checkpoint::read(&fs, Path::new("/data"))
            .unwrap()
            .is_empty()
    );
    let events = svc.clean_eligible_once().unwrap();
    assert_eq!(cleaned(&events).len(), 2);
    let text =
        String::from_utf8(read_file(&fs, Path::new("/data/cleaner-offset-checkpoint")).unwrap())
            .unwrap();
    assert_eq!(text, "0\n2\norders 0 15\norders 1 10\n");
    // A second pass finds nothing dirty.
    assert!(svc.clean_eligible_once().unwrap().is_empty());
    // New data in one log: only it moves.
    {
        let log = svc.manager().log(&tp("orders", 1)).unwrap();
        let mut log = log.lock();
        for i in 0..10 {
            log.append(&[rec(i, "k0", "x")]).unwrap();
        }
        log.roll().unwrap();
    }
    let events = svc.clean_eligible_once().unwrap();
    assert_eq!(cleaned(&events), [tp("orders", 1)]);
    let cp = checkpoint::read(&fs, Path::new("/data")).unwrap();
    assert_eq!(
        cp,
        BTreeMap::from([(tp("orders", 0), 15), (tp("orders", 1), 20)])
    );
    // Removing a log drops its entry.
    svc.remove_log(&tp("orders", 0)).unwrap();
    let cp = checkpoint::read(&fs, Path::new("/data")).unwrap();
    assert_eq!(cp, BTreeMap::from([(tp("orders", 1), 20)]));
}

#[test]
fn an_invalid_checkpoint_is_reset_to_the_log_start_even_when_not_chosen() {
    let fs = MemFs::new();
    let (svc, _) = service(&fs, 10_000);
    let c = compact(&[("segment.bytes", "1000")]);
    svc.add_log(dirty_log(&fs, "a-0", 5, 2, c.clone())).unwrap();
    svc.add_log(dirty_log(&fs, "z-0", 5, 2, c)).unwrap();
    // z's checkpoint is beyond its log end (15).
    let entries = BTreeMap::from([(tp("z", 0), 999)]);
    checkpoint::write(&fs, Path::new("/data"), &entries).unwrap();
    // Both have ratio 1; a comes first and is chosen.
    let (ltc, _) = svc
        .manager()
        .grab_filthiest_log(&HashSet::new())
        .chosen
        .unwrap();
    assert_eq!(ltc.topic_partition, tp("a", 0));
    // z was reset to its log start and the file rewritten anyway.
    let cp = checkpoint::read(&fs, Path::new("/data")).unwrap();
    assert_eq!(cp, BTreeMap::from([(tp("z", 0), 0)]));
    svc.manager()
        .done_cleaning(&ltc.topic_partition, 0, None)
        .unwrap();
    // Below the log start works the same way once the log starts later:
    // a negative checkpoint is invalid too.
    let entries = BTreeMap::from([(tp("z", 0), -5)]);
    checkpoint::write(&fs, Path::new("/data"), &entries).unwrap();
    let (ltc, _) = svc
        .manager()
        .grab_filthiest_log(&HashSet::from([tp("a", 0)]))
        .chosen
        .unwrap();
    assert_eq!(
        (ltc.topic_partition.clone(), ltc.first_dirty_offset),
        (tp("z", 0), 0)
    );
    svc.manager()
        .done_cleaning(&ltc.topic_partition, 0, None)
        .unwrap();
}

#[test]
fn a_malformed_checkpoint_takes_its_data_directory_offline_and_is_kept() {
    let fs = MemFs::new();
    let (svc, _) = service(&fs, 10_000);
    let c = compact(&[("segment.bytes", "1000")]);
    svc.add_log(dirty_log(&fs, "t-0", 5, 3, c.clone())).unwrap();
    svc.add_log(dirty_log(&fs, "t-1", 5, 3, c.clone())).unwrap();
    // A log in another data directory is cleaned all the same.
    let mut other = open(Arc::new(fs.clone()), "/other/u-0", c, 0);
    for i in 0..15 {
        other
            .append(&[rec(1000 + i, format!("k{}", i % 5), "v")])
            .unwrap();
    }
    other.roll().unwrap();
    svc.add_log(shared_log(other)).unwrap();
    let garbage = b"0\n2\nt 0 x\n";
    let path = Path::new("/data/cleaner-offset-checkpoint");
    write_file_atomic(&fs, path, garbage).unwrap();
    let events = svc.clean_eligible_once().unwrap();
    let problems: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            CleanerEvent::Problem(p) => Some(p.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains(
            &Path::new("/data")
                .join("cleaner-offset-checkpoint")
                .display()
                .to_string()
        ) && problems[0].contains("line 3")
            && problems[0].contains("byte offset 4"),
        "{problems:?}"
    );
    // As in Kafka, the directory is offline: none of its logs is cleaned,
    // and the file is kept as it was.
    assert_eq!(cleaned(&events), [tp("u", 0)]);
    assert_eq!(read_file(&fs, path).unwrap(), garbage);
    assert!(
        svc.manager()
            .offline_dirs()
            .contains_key(Path::new("/data"))
    );
    assert!(svc.clean_eligible_once().unwrap().is_empty());
    // Removing the file loses nothing: the logs are cleaned from their start.
    fs.remove_file(path).unwrap();
    assert!(
        svc.manager()
            .clear_offline_dir(Path::new("/data"))
            .is_some()
    );
    let events = svc.clean_eligible_once().unwrap();
    let mut got = cleaned(&events);
    got.sort();
    assert_eq!(got, [tp("t", 0), tp("t", 1)]);
    let cp = checkpoint::read(&fs, Path::new("/data")).unwrap();
    assert_eq!(cp.len(), 2);
}

#[test]
fn an_unexpected_error_marks_only_that_log_uncleanable() {
    let fs = MemFs::new();
    let (svc, _) = service(&fs, 10_000);
    let c = compact(&[("segment.bytes", "1000")]);
    svc.add_log(dirty_log(&fs, "bad-0", 5, 3, c.clone()))
        .unwrap();
    svc.add_log(dirty_log(&fs, "good-0", 5, 3, c.clone()))
        .unwrap();
    // Flip a byte inside the bad log's first segment.
    let path = Path::new("/data/bad-0").join(file_name(0, FileKind::Log, Suffix::None));
    // In place: the log's open file handle sees the change.
    let byte = read_file(&fs, &path).unwrap()[70];
    let mut f = fs.open_append(&path).unwrap();
    f.write_at(70, &[byte ^ 1]).unwrap();
    drop(f);
    let events = svc.clean_eligible_once().unwrap();
    assert_eq!(cleaned(&events), [tp("good", 0)]);
    let failure = events.iter().find(|e| e.is_failure()).unwrap().to_string();
    assert!(
        failure.contains("bad-0") && failure.contains("00000000000000000000.log"),
        "{failure}"
    );
    let unclean = svc.manager().uncleanable_partitions();
    assert_eq!(unclean.keys().collect::<Vec<_>>(), [&tp("bad", 0)]);
    assert!(unclean[&tp("bad", 0)].contains("CRC"), "{unclean:?}");
    // It is skipped from then on; clearing lets it be tried again.
    assert!(svc.clean_eligible_once().unwrap().is_empty());
    assert!(svc.manager().clear_uncleanable(&tp("bad", 0)).is_some());
    assert!(
        svc.clean_eligible_once()
            .unwrap()
            .iter()
            .any(|e| e.is_failure())
    );
}

#[test]
fn an_undecided_transaction_is_not_cleaned_until_its_marker() {
    // Kafka's LogCleanerManagerTest.testUndecidedTransactionalDataNotCleanable:
    // the first uncleanable offset stops at the transaction's first offset.
    let fs = MemFs::new();
    let (svc, _) = service(&fs, 10_000);
    let mut log = open(Arc::new(fs.clone()), "/data/txn-0", compact(&[]), 0);
    let p = lithify_kafka_log::Producer {
        producer_id: 15,
        producer_epoch: 0,
        base_sequence: 0,
        transactional: true,
    };
    log.append_as(&p, &[rec(1, "1", "a"), rec(1, "2", "b")])
        .unwrap();
    log.append_as(&p, &[rec(1, "3", "c")]).unwrap();
    log.roll().unwrap();
    let log = shared_log(log);
    svc.add_log(log.clone()).unwrap();
    let ltc = LogToClean::from_log(&log.lock(), None, 10_000).unwrap();
    assert_eq!(
        (ltc.first_dirty_offset, ltc.first_uncleanable_offset),
        (0, 0)
    );
    assert!(
        svc.clean_eligible_once().unwrap().is_empty(),
        "nothing to clean"
    );
    log.lock()
        .append_end_txn_marker(15, 0, TransactionResult::Commit, 0)
        .unwrap();
    log.lock().roll().unwrap();
    let ltc = LogToClean::from_log(&log.lock(), None, 10_000).unwrap();
    assert_eq!(ltc.first_uncleanable_offset, 4);
    let events = svc.clean_eligible_once().unwrap();
    assert_eq!(cleaned(&events), [tp("txn", 0)], "{events:?}");
}

#[test]
fn max_compaction_lag_forces_a_round_below_the_dirty_ratio() {
    let fs = MemFs::new();
    let (svc, clock) = service(&fs, 10_000);
    let c = compact(&[("segment.bytes", "1000"), ("max.compaction.lag.ms", "5000")]);
    let log = dirty_log(&fs, "t-0", 20, 1, c);
    svc.add_log(log.clone()).unwrap();
    svc.clean_eligible_once().unwrap();
    // A little new dirty data: ratio far below 0.5.
    {
        let mut l = log.lock();
        l.append(&[rec(20_000, "k0", "new")]).unwrap();
        l.roll().unwrap();
    }
    clock.set_ms(20_000 + 5_000);
    assert!(
        svc.clean_eligible_once().unwrap().is_empty(),
        "not late yet"
    );
    clock.set_ms(20_000 + 5_001);
    let events = svc.clean_eligible_once().unwrap();
    let CleanerEvent::Cleaned(r) = &events[0] else {
        panic!("{events:?}")
    };
    assert_eq!(
        r.reason,
        Some(CleaningReason::MaxCompactionLag { delay_ms: 1 })
    );
}

#[test]
fn a_quiet_log_loses_its_expired_tombstones() {
    // Beyond Kafka: no new data, yet the tombstone goes once its horizon
    // passes.
    let fs = MemFs::new();
    let (svc, clock) = service(&fs, 10_000);
    let mut log = open(
        Arc::new(fs.clone()),
        "/data/quiet-0",
        compact(&[("delete.retention.ms", "1000")]),
        0,
    );
    for i in 0..10 {
        log.append(&[rec(i, format!("k{i}"), "v")]).unwrap();
    }
    log.append(&[SimpleRecord::tombstone(20, "k3")]).unwrap();
    log.append(&[rec(21, "last", "v")]).unwrap();
    log.roll().unwrap();
    let log = shared_log(log);
    svc.add_log(log.clone()).unwrap();
    let events = svc.clean_eligible_once().unwrap();
    let CleanerEvent::Cleaned(r) = &events[0] else {
        panic!("{events:?}")
    };
    assert_eq!(r.stats.delete_horizons_set, 1);
    assert!(keys(&log.lock()).contains(&"k3".to_string()));
    clock.set_ms(10_999);
    assert!(svc.clean_eligible_once().unwrap().is_empty());
    clock.set_ms(11_000);
    let events = svc.clean_eligible_once().unwrap();
    let CleanerEvent::Cleaned(r) = &events[0] else {
        panic!("{events:?}")
    };
    assert_eq!(
        r.reason,
        Some(CleaningReason::ExpiredTombstones { horizon_ms: 11_000 })
    );
    assert_eq!(r.stats.tombstones_dropped, 1);
    assert_eq!(keys(&log.lock()).len(), 10, "the tombstone and k3 are gone");
    assert!(!keys(&log.lock()).contains(&"k3".to_string()));
    // Nothing left to do: not picked again.
    clock.set_ms(1_000_000);
    assert!(svc.clean_eligible_once().unwrap().is_empty());
}

#[test]
fn threads_clean_in_the_background_and_stop_cleanly() {
    let fs = MemFs::new();
    let clock = Arc::new(ManualClock::at_ms(10_000));
    let config = CleanerConfig::from_properties([
        ("log.cleaner.threads", "2"),
        ("log.cleaner.dedupe.buffer.size", "65536"),
        ("log.cleaner.backoff.ms", "5"),
    ])
    .unwrap();
    let svc = LogCleaner::new(config, Arc::new(fs.clone()), clock);
    let c = compact(&[("segment.bytes", "1000")]);
    for p in 0..4 {
        svc.add_log(dirty_log(&fs, &format!("t-{p}"), 5, 4, c.clone()))
            .unwrap();
    }
    let events = svc.events();
    svc.startup().unwrap();
    let mut done = HashSet::new();
    while done.len() < 4 {
        match events.recv_timeout(Duration::from_secs(30)).unwrap() {
            CleanerEvent::Cleaned(r) => {
                assert!(done.insert(r.topic_partition.clone()), "cleaned twice: {r}");
            }
            other => panic!("{other}"),
        }
    }
    svc.shutdown();
    for p in 0..4 {
        let log = svc.manager().log(&tp("t", p)).unwrap();
        assert_eq!(keys(&log.lock()).len(), 5);
        assert_eq!(svc.manager().cleaning_state(&tp("t", p)), None);
    }
}

#[test]
fn pausing_a_log_keeps_the_cleaner_away_until_resumed() {
    let fs = MemFs::new();
    let (svc, _) = service(&fs, 10_000);
    svc.add_log(dirty_log(&fs, "t-0", 5, 3, compact(&[])))
        .unwrap();
    let m = svc.manager();
    m.abort_and_pause(&tp("t", 0));
    m.abort_and_pause(&tp("t", 0));
    assert!(svc.clean_eligible_once().unwrap().is_empty());
    m.resume(&tp("t", 0)).unwrap();
    assert!(svc.clean_eligible_once().unwrap().is_empty());
    m.resume(&tp("t", 0)).unwrap();
    assert_eq!(cleaned(&svc.clean_eligible_once().unwrap()).len(), 1);
    assert!(m.resume(&tp("t", 0)).is_err());
}
