//! A fault at every file-system step of a cleaning round (writing the
//! cleaned segments, the `.cleaned` -> `.swap` -> `.deleted` swap, removing
//! the old files, writing `cleaner-offset-checkpoint`), then either power
//! loss (`MemFs::crash`) or the process dying with the page cache intact.
//! On reopen the log holds exactly the records from before the round or
//! exactly those after it, and a later round ends in the post-round state
//! with the checkpoint at the round's end.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::*;
use lithify_compaction_logclean::checkpoint;
use lithify_compaction_logclean::{CleanerConfig, CleanerEvent, LogCleaner, shared_log};
use lithify_kafka_log::TopicPartition;
use lithify_kafka_log::record::SimpleRecord;
use lithify_kafka_log::{Log, LogConfig, ManualClock, OpenOptions};
use lithify_vfs::{FaultFs, FaultRule, FileSystem, MemFs, OpKind};

const NOW: i64 = 50_000;

type Records = Vec<(i64, Option<String>, Option<String>)>;

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
    OpenOptions {
        recovery_point: None,
        clock: Arc::new(ManualClock::new(NOW)),
    }
}

/// A durable log with several segments, duplicates and tombstones.
fn build() -> MemFs {
    let mem = MemFs::new();
    let mut log = Log::open_with(
        Arc::new(mem.clone()),
        Path::new("/data/t-0"),
        config(),
        options(),
    )
    .unwrap();
    for i in 0..48i64 {
        let key = format!("k{}", i % 9);
        let r = if i % 11 == 10 {
            SimpleRecord::tombstone(i, key)
        } else {
            rec(i, key, format!("value-{i}"))
        };
        log.append(&[r]).unwrap();
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
    LogCleaner::new(config, fs, Arc::new(ManualClock::new(NOW)))
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

#[test]
fn a_fault_at_every_step_of_a_round_leaves_the_log_before_or_after_it() {
    let pre: Records = contents(&reopen(&build()));
    // The post-round state, and how many mutations a round makes.
    let done = build();
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
    let post: Records = contents(&reopen(&done));
    let end = checkpointed(&done).unwrap();
    assert_ne!(pre, post);

    let mut outcomes = [0usize; 2];
    // `OpCounts::mutations` also counts opens for reading, which a
    // mutation rule skips: go on until a run sees no fault.
    let mut last = 0;
    'steps: for n in 1..=steps {
        for power_loss in [true, false] {
            let mem = build();
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
            let got = contents(&reopen(&mem));
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
            assert_eq!(
                contents(&reopen(&mem)),
                post,
                "step {n} (power loss {power_loss})"
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
    // No fault: power is lost after each step of a round that would have
    // succeeded (FaultFs counts, MemFs::crash_clone snapshots).
    let pre: Records = contents(&reopen(&build()));
    let done = build();
    assert!(round(Arc::new(done.clone())));
    let post: Records = contents(&reopen(&done));
    let end = checkpointed(&done).unwrap();

    let steps = {
        let probe = build();
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
        let mem = build();
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
        let got = contents(&reopen(&after_crash));
        assert!(
            got == pre || got == post,
            "crash after step {}: {got:?}",
            n - 1
        );
        faulty.clear_rules();
        assert!(round(Arc::new(after_crash.clone())) || checkpointed(&after_crash) == Some(end));
        assert_eq!(contents(&reopen(&after_crash)), post);
    }
}
