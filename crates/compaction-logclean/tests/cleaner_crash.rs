//! A fault at every file-system step of a cleaning round (writing the
//! cleaned segments, the `.cleaned` -> `.swap` -> `.deleted` swap, removing
//! the old files, writing `cleaner-offset-checkpoint`), then either power
//! loss (`MemFs::crash`) or the process dying with the page cache intact.
//! On reopen the log holds exactly the records from before the round or
//! exactly those after it, and a later round ends in the post-round state
//! with the checkpoint at the round's end. Each test runs on a plain log
//! and on a transactional one, whose `.txnindex` entries and
//! `read_committed` view are part of the state compared.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::*;
use lithify_compaction_logclean::checkpoint;
use lithify_compaction_logclean::{CleanerConfig, CleanerEvent, LogCleaner};
use lithify_kafka_log::TopicPartition;
use lithify_kafka_log::record::{SimpleRecord, TransactionResult};
use lithify_kafka_log::shared_log;
use lithify_kafka_log::txn_index::AbortedTxn;
use lithify_kafka_log::{Log, LogConfig, ManualClock, OpenOptions, Producer};
use lithify_vfs::{FaultFs, FaultRule, FileSystem, MemFs, OpKind};

const NOW: i64 = 50_000;

type Records = Vec<(i64, Option<String>, Option<String>)>;

/// What a round may change: every record, the `read_committed` view and
/// the aborted transactions of the `.txnindex` files.
type State = (Records, Vec<i64>, Vec<AbortedTxn>);

fn state(log: &Log) -> State {
    let committed = log
        .committed_records_from(log.log_start_offset())
        .unwrap()
        .map(|r| r.unwrap().offset)
        .collect();
    let aborted = log.collect_aborted_transactions(0, log.log_end_offset());
    (contents(log), committed, aborted)
}

fn config() -> LogConfig {
    compact(&[
        ("segment.bytes", "600"),
        // MemFs really allocates preallocated index files: keep them small.
        ("segment.index.bytes", "1024"),
        ("index.interval.bytes", "100"),
        ("delete.retention.ms", "1000"),
    ])
}

fn options() -> OpenOptions {
    OpenOptions::default()
        .recovery_point(None)
        .clock(Arc::new(ManualClock::at_ms(NOW)))
}

/// A durable log with several segments, duplicates and tombstones; with
/// `txn`, two transactional producers write every other record, in
/// transactions of three batches, one in three aborted.
fn build(txn: bool) -> MemFs {
    let mem = MemFs::new();
    let mut log = Log::open_with(
        Arc::new(mem.clone()),
        Path::new("/data/t-0"),
        config(),
        options(),
    )
    .unwrap();
    let mut batches = [0u32; 2];
    let mut ended = 0;
    for i in 0..48i64 {
        let key = format!("k{}", i % 9);
        let r = if i % 11 == 10 {
            SimpleRecord::tombstone(i, key)
        } else {
            rec(i, key, format!("value-{i}"))
        };
        if txn && i % 2 == 1 {
            let p = ((i / 2) % 2) as usize;
            let producer = Producer {
                producer_id: p as i64 + 1,
                producer_epoch: 0,
                base_sequence: i as i32,
                transactional: true,
            };
            log.append_as(&producer, &[r]).unwrap();
            batches[p] += 1;
            if batches[p] == 3 {
                batches[p] = 0;
                ended += 1;
                let result = if ended % 3 == 0 {
                    TransactionResult::Abort
                } else {
                    TransactionResult::Commit
                };
                log.append_end_txn_marker(p as i64 + 1, 0, result, 0)
                    .unwrap();
            }
        } else {
            log.append(&[r]).unwrap();
        }
    }
    for (p, open) in batches.into_iter().enumerate() {
        if open > 0 {
            log.append_end_txn_marker(p as i64 + 1, 0, TransactionResult::Abort, 0)
                .unwrap();
        }
    }
    if txn {
        assert!(
            !log.collect_aborted_transactions(0, log.log_end_offset())
                .is_empty()
        );
    }
    log.roll().unwrap();
    log.append(&[rec(100, "active", "x")]).unwrap();
    log.flush().unwrap();
    mem
}

fn reopen(fs: &MemFs) -> Log {
    Log::open_with(
        Arc::new(fs.clone()),
        Path::new("/data/t-0"),
        config(),
        options(),
    )
    .unwrap()
}

fn cleaner_on(fs: Arc<dyn FileSystem>) -> LogCleaner {
    let config =
        CleanerConfig::from_properties([("log.cleaner.dedupe.buffer.size", "65536")]).unwrap();
    LogCleaner::new(config, fs, Arc::new(ManualClock::at_ms(NOW)))
}

/// Runs one round on `fs` (the log opened on it too); true if it succeeded.
fn round(fs: Arc<dyn FileSystem>) -> bool {
    let log = match Log::open_with(fs.clone(), Path::new("/data/t-0"), config(), options()) {
        Ok(l) => l,
        Err(_) => return false,
    };
    let svc = cleaner_on(fs);
    svc.add_log(shared_log(log)).unwrap();
    let events = svc.clean_eligible_once().unwrap();
    matches!(events.as_slice(), [CleanerEvent::Cleaned(_)])
}

fn checkpointed(fs: &MemFs) -> Option<i64> {
    checkpoint::read(fs, Path::new("/data"))
        .unwrap()
        .get(&TopicPartition::new("t", 0))
        .copied()
}

/// The state after a second round on the post-round state: what a later
/// round leaves when a crash kept the swap but not the checkpoint. The
/// same for a plain log; for a transactional one, the `.txnindex` entries
/// of transactions whose data the first round removed are gone (Kafka's
/// rule: an ABORT marker's entry stays only while the round sees data).
fn after_another_round(txn: bool, post: &State) -> State {
    let twice = build(txn);
    assert!(round(Arc::new(twice.clone())));
    // A round from the log start again (the checkpoint forgotten).
    checkpoint::write(&twice, Path::new("/data"), &Default::default()).unwrap();
    assert!(round(Arc::new(twice.clone())), "the second round runs");
    let again = state(&reopen(&twice));
    assert_eq!(
        (&again.0, &again.1),
        (&post.0, &post.1),
        "records unchanged"
    );
    again
}

#[test]
fn a_fault_at_every_step_of_a_round_leaves_the_log_before_or_after_it() {
    fault_at_every_step(false);
}

#[test]
fn a_fault_at_every_step_of_a_transactional_round_leaves_it_before_or_after() {
    fault_at_every_step(true);
}

fn fault_at_every_step(txn: bool) {
    let pre: State = state(&reopen(&build(txn)));
    // The post-round state, and how many mutations a round makes.
    let done = build(txn);
    let counting = FaultFs::new(done.clone());
    let log = Log::open_with(
        Arc::new(counting.clone()),
        Path::new("/data/t-0"),
        config(),
        options(),
    )
    .unwrap();
    let svc = cleaner_on(Arc::new(counting.clone()));
    svc.add_log(shared_log(log)).unwrap();
    counting.reset_counts();
    let events = svc.clean_eligible_once().unwrap();
    let [CleanerEvent::Cleaned(report)] = events.as_slice() else {
        panic!("{events:?}")
    };
    assert!(
        report.segments_in >= 4 && report.segments_out >= 2,
        "{report}"
    );
    let steps = counting.counts().mutations();
    // The round's handle on the log goes first: a log has one writer.
    drop(svc);
    let post: State = state(&reopen(&done));
    let again = after_another_round(txn, &post);
    let end = checkpointed(&done).unwrap();
    assert_ne!(pre, post);

    let mut outcomes = [0usize; 2];
    // `OpCounts::mutations` also counts opens for reading, which a
    // mutation rule skips: go on until a run sees no fault.
    let mut last = 0;
    'steps: for n in 1..=steps {
        for power_loss in [true, false] {
            let mem = build(txn);
            let faulty = FaultFs::new(mem.clone());
            // Count only the round's steps (opening the log is not one).
            let log = Log::open_with(
                Arc::new(faulty.clone()),
                Path::new("/data/t-0"),
                config(),
                options(),
            )
            .unwrap();
            let svc = cleaner_on(Arc::new(faulty.clone()));
            svc.add_log(shared_log(log)).unwrap();
            faulty.reset_counts();
            faulty.add_rule(FaultRule::fail_nth(OpKind::Mutation, n));
            let events = svc.clean_eligible_once().unwrap();
            if faulty.counts().injected == 0 {
                assert!(matches!(events.as_slice(), [CleanerEvent::Cleaned(_)]));
                break 'steps;
            }
            last = n;
            assert!(
                events.iter().any(|e| e.is_failure()),
                "step {n}: the fault went unnoticed: {events:?}"
            );
            drop(svc);
            if power_loss {
                mem.crash();
            }
            let got = state(&reopen(&mem));
            let which = if got == pre {
                0
            } else if got == post {
                1
            } else {
                panic!(
                    "step {n} (power loss {power_loss}): neither before nor after the round:\n{got:?}"
                )
            };
            outcomes[which] += 1;
            // A later round finishes the work.
            assert!(
                round(Arc::new(mem.clone())) || checkpointed(&mem) == Some(end),
                "step {n}: the later round failed"
            );
            let finished = state(&reopen(&mem));
            assert!(
                finished == post || finished == again,
                "step {n} (power loss {power_loss}): {finished:?}"
            );
            assert_eq!(
                checkpointed(&mem),
                Some(end),
                "step {n} (power loss {power_loss})"
            );
        }
    }
    assert!(last > 40, "the round has {last} mutating steps");
    // Both outcomes happen: faults before the swap's directory sync roll
    // back, faults after it (removing old files, the checkpoint) keep it.
    assert!(outcomes[0] > 0 && outcomes[1] > 0, "{outcomes:?}");
}

#[test]
fn a_crash_at_every_step_of_a_good_round_recovers_before_or_after_it() {
    crash_at_every_step(false);
}

#[test]
fn a_crash_at_every_step_of_a_transactional_round_recovers_before_or_after_it() {
    crash_at_every_step(true);
}

fn crash_at_every_step(txn: bool) {
    // No fault: power is lost after each step of a round that would have
    // succeeded (FaultFs counts, MemFs::crash_clone snapshots).
    let pre: State = state(&reopen(&build(txn)));
    let done = build(txn);
    assert!(round(Arc::new(done.clone())));
    let post: State = state(&reopen(&done));
    let again = after_another_round(txn, &post);
    let end = checkpointed(&done).unwrap();

    let steps = {
        let probe = build(txn);
        let f = FaultFs::new(probe);
        let log = Log::open_with(
            Arc::new(f.clone()),
            Path::new("/data/t-0"),
            config(),
            options(),
        )
        .unwrap();
        let svc = cleaner_on(Arc::new(f.clone()));
        svc.add_log(shared_log(log)).unwrap();
        f.reset_counts();
        svc.clean_eligible_once().unwrap();
        f.counts().mutations()
    };
    // Fail every step from n on: what is on "disk" after power loss is the
    // state after step n - 1.
    for n in 1..=steps + 1 {
        let mem = build(txn);
        let faulty = FaultFs::new(mem.clone());
        let log = Log::open_with(
            Arc::new(faulty.clone()),
            Path::new("/data/t-0"),
            config(),
            options(),
        )
        .unwrap();
        let svc = cleaner_on(Arc::new(faulty.clone()));
        svc.add_log(shared_log(log)).unwrap();
        faulty.reset_counts();
        faulty.add_rule(FaultRule::fail_from(OpKind::Mutation, n));
        svc.clean_eligible_once().unwrap();
        drop(svc);
        if faulty.counts().injected == 0 {
            break;
        }
        let after_crash = mem.crash_clone();
        let got = state(&reopen(&after_crash));
        assert!(
            got == pre || got == post,
            "crash after step {}: {got:?}",
            n - 1
        );
        faulty.clear_rules();
        assert!(round(Arc::new(after_crash.clone())) || checkpointed(&after_crash) == Some(end));
        let finished = state(&reopen(&after_crash));
        assert!(finished == post || finished == again, "{finished:?}");
    }
}
