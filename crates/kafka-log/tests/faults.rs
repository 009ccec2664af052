//! A fault at every file-system operation of a workload (append, roll,
//! flush), then power loss: the log reports the error, refuses further
//! writes, and reopens with a prefix of what was appended that keeps
//! everything acknowledged as flushed.

use std::path::Path;
use std::sync::Arc;

use lithify_kafka_log::record::SimpleRecord;
use lithify_kafka_log::{Error, Log, LogConfig, ManualClock, OpenOptions};
use lithify_vfs::{FaultFs, FaultRule, FileSystem, MemFs, OpKind};

fn config() -> LogConfig {
    LogConfig::from_properties([
        ("segment.bytes", "400"),
        ("index.interval.bytes", "60"),
        ("segment.index.bytes", "96"),
        ("compression.type", "snappy"),
    ])
    .unwrap()
}

fn options() -> OpenOptions {
    OpenOptions::default()
        .recovery_point(None)
        .clock(Arc::new(ManualClock::at_ms(0)))
}

fn rec(i: i64) -> SimpleRecord {
    SimpleRecord::new(
        i,
        format!("key-{i}"),
        format!("value-{i}-{}", "x".repeat(i as usize % 40)),
    )
}

/// Runs the workload; returns how many records were acknowledged durable
/// (flushed) and how many appends succeeded.
fn workload(fs: Arc<dyn FileSystem>) -> Result<(usize, usize), (Error, usize, usize)> {
    let mut durable = 0;
    let mut appended = 0;
    let mut log =
        Log::open_with(fs, Path::new("/data/w-0"), config(), options()).map_err(|e| (e, 0, 0))?;
    for n in 0..12i64 {
        let batch = [rec(2 * n), rec(2 * n + 1)];
        if let Err(e) = log.append(&batch) {
            // Once a write failed, the log refuses more.
            if matches!(e, Error::Io { .. }) {
                let again = log.append(&batch).unwrap_err();
                assert!(matches!(again, Error::Poisoned { .. }), "{again}");
            }
            return Err((e, durable, appended));
        }
        appended += 2;
        if n % 3 == 2 {
            log.flush().map_err(|e| (e, durable, appended))?;
            durable = appended;
        }
    }
    // Closing trims the active segment's indexes; its faults are reported
    // too (a dropped log trims them best effort, silently).
    log.close().map_err(|e| (e, durable, appended))?;
    Ok((appended, appended))
}

fn keys(log: &Log) -> Vec<Vec<u8>> {
    log.records_from(log.log_start_offset())
        .unwrap()
        .map(|r| r.unwrap().key.unwrap().to_vec())
        .collect()
}

#[test]
fn a_fault_at_every_step_loses_nothing_acknowledged() {
    let counting = FaultFs::new(MemFs::new());
    let (all, _) = workload(Arc::new(counting.clone())).unwrap();
    let steps = counting.counts().mutations();
    assert!(steps > 50, "the workload has {steps} steps");
    let want: Vec<Vec<u8>> = (0..all as i64)
        .map(|i| format!("key-{i}").into_bytes())
        .collect();
    // `mutations()` also counts opens for reading, which a Mutation rule
    // skips: go on until a run sees no fault.
    let mut faulted = 0;
    for n in 1..=steps {
        let mem = MemFs::new();
        let faulty = FaultFs::new(mem.clone());
        faulty.add_rule(FaultRule::fail_nth(OpKind::Mutation, n));
        let result = workload(Arc::new(faulty.clone()));
        if faulty.counts().injected == 0 {
            assert!(result.is_ok());
            break;
        }
        faulted += 1;
        let (durable, appended) = match result {
            Ok(_) => panic!("step {n}: the fault was not reported"),
            Err((e, durable, appended)) => {
                assert!(
                    e.to_string().contains("injected") || e.to_string().contains("I/O"),
                    "step {n}: {e}"
                );
                (durable, appended)
            }
        };
        mem.crash();
        let log = Log::open_with(
            Arc::new(mem.clone()),
            Path::new("/data/w-0"),
            config(),
            options(),
        )
        .unwrap();
        let got = keys(&log);
        assert!(
            got.len() >= durable,
            "step {n}: {} records, {durable} were flushed",
            got.len()
        );
        assert!(
            got.len() <= appended + 2,
            "step {n}: more records than appended"
        );
        assert_eq!(got, want[..got.len()], "step {n}");
    }
    assert!(faulted > 50, "only {faulted} steps were faulted");
}

#[test]
fn running_out_of_space_or_a_short_write_is_reported_and_recovered() {
    use lithify_base::{Classify, ErrorKind};
    let counting = FaultFs::new(MemFs::new());
    let (all, _) = workload(Arc::new(counting.clone())).unwrap();
    let total = counting.counts().bytes_written;
    let writes = counting.counts().writes;
    let want: Vec<Vec<u8>> = (0..all as i64)
        .map(|i| format!("key-{i}").into_bytes())
        .collect();
    let rules = (0..total)
        .step_by(29)
        .map(|b| (FaultRule::no_space_after(b), true))
        .chain((1..=writes).map(|n| (FaultRule::short_write_nth(n), false)));
    for (rule, no_space) in rules {
        let mem = MemFs::new();
        let faulty = FaultFs::new(mem.clone());
        faulty.add_rule(rule.clone());
        let (durable, appended) = match workload(Arc::new(faulty)) {
            Ok(_) => continue, // the rule did not trigger (e.g. a write of 0 bytes)
            Err((e, d, a)) => {
                if no_space {
                    assert_eq!(e.kind(), ErrorKind::NoSpace, "{rule:?}: {e}");
                }
                (d, a)
            }
        };
        mem.crash();
        let log = Log::open_with(
            Arc::new(mem.clone()),
            Path::new("/data/w-0"),
            config(),
            options(),
        )
        .unwrap();
        let got = keys(&log);
        assert!(
            got.len() >= durable && got.len() <= appended + 2,
            "{rule:?}"
        );
        assert_eq!(got, want[..got.len()], "{rule:?}");
    }
}
