//! Model-based test of the cleaner: random appends (overwrites,
//! tombstones, every codec), rolls, cleaning rounds with tiny offset maps
//! (partial rounds), clock jumps across delete horizons, reopens and power
//! loss, checked after every step against a model of what was appended:
//!
//! * every record in the log is one that was appended, at its offset, with
//!   its key, value and timestamp; offsets only grow;
//! * for every key, the last record the log holds is the last one appended
//!   (a tombstone may be gone entirely, never resurrect an older value);
//! * after a round whose map held the whole dirty section, no key appears
//!   twice below the round's end.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use common::*;
use lithify_compaction_logclean::{CleanerConfig, CleanerEvent, LogCleaner};
use lithify_kafka_log::codec::Compression;
use lithify_kafka_log::record::SimpleRecord;
use lithify_kafka_log::shared_log;
use lithify_kafka_log::{Log, LogConfig, ManualClock, OpenOptions};
use lithify_vfs::MemFs;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    /// Records (key index, tombstone?) appended as one batch.
    Append(Vec<(u8, bool)>, u8),
    Roll,
    /// A round with this much map memory, after advancing the clock.
    Clean {
        map_bytes: u16,
        advance_ms: u16,
    },
    Reopen,
    Crash,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (prop::collection::vec((0u8..12, prop::bool::weighted(0.2)), 1..6), 0u8..5)
            .prop_map(|(r, c)| Op::Append(r, c)),
        2 => Just(Op::Roll),
        3 => (48u16..1200, 0u16..120).prop_map(|(m, a)| Op::Clean { map_bytes: m, advance_ms: a }),
        1 => Just(Op::Reopen),
        1 => Just(Op::Crash),
    ]
}

type Rec = (i64, String, Option<String>, i64);

fn config(retention: u16) -> LogConfig {
    compact(&[
        ("segment.bytes", "400"),
        ("segment.index.bytes", "1024"),
        ("index.interval.bytes", "150"),
        ("min.cleanable.dirty.ratio", "0"),
        ("delete.retention.ms", &retention.to_string()),
    ])
}

fn open_log(mem: &MemFs, retention: u16, clock: &Arc<ManualClock>) -> Log {
    let options = OpenOptions::default()
        .recovery_point(None)
        .clock(clock.clone());
    Log::open_with(
        Arc::new(mem.clone()),
        Path::new("/data/m-0"),
        config(retention),
        options,
    )
    .unwrap()
}

fn records(log: &Log) -> Vec<Rec> {
    log.records_from(log.log_start_offset())
        .unwrap()
        .map(|r| {
            let r = r.unwrap();
            let s = |b: Option<bytes::Bytes>| b.map(|b| String::from_utf8(b.to_vec()).unwrap());
            (r.offset, s(r.key).unwrap(), s(r.value), r.timestamp)
        })
        .collect()
}

fn check(log: &Log, appended: &BTreeMap<i64, Rec>) -> Result<(), TestCaseError> {
    let got = records(log);
    let mut prev = -1;
    let mut last_in_log: HashMap<&str, &Rec> = HashMap::new();
    for r in &got {
        prop_assert!(r.0 > prev, "offsets must grow: {} after {prev}", r.0);
        prev = r.0;
        prop_assert_eq!(appended.get(&r.0), Some(r), "not an appended record");
        last_in_log.insert(&r.1, r);
    }
    let mut last_appended: HashMap<&str, &Rec> = HashMap::new();
    for r in appended.values() {
        last_appended.insert(&r.1, r);
    }
    for (key, want) in &last_appended {
        match last_in_log.get(key) {
            Some(have) => prop_assert_eq!(have, want, "key {}", key),
            None => prop_assert!(want.2.is_none(), "key {key} lost its value {want:?}"),
        }
    }
    Ok(())
}

fn run(ops: Vec<Op>, retention: u16) -> Result<(), TestCaseError> {
    let mem = MemFs::new();
    let clock = Arc::new(ManualClock::at_ms(1_000));
    let mut log = Some(open_log(&mem, retention, &clock));
    let mut appended: BTreeMap<i64, Rec> = BTreeMap::new();
    let mut ts = 0i64;
    for op in ops {
        match op {
            Op::Append(recs, codec) => {
                let l = log.as_mut().unwrap();
                let batch: Vec<SimpleRecord> = recs
                    .iter()
                    .map(|(k, tomb)| {
                        ts += 1;
                        let key = format!("key-{k}");
                        if *tomb {
                            SimpleRecord::tombstone(ts, key)
                        } else {
                            SimpleRecord::new(ts, key, format!("value-{ts}"))
                        }
                    })
                    .collect();
                // A producer-built batch in the chosen codec.
                let codec = Compression::ALL[codec as usize];
                let base = l.log_end_offset();
                let mut b = lithify_kafka_log::record::BatchBuilder::new(base).compression(codec);
                for (i, r) in batch.iter().enumerate() {
                    b.append(
                        base + i as i64,
                        r.timestamp,
                        r.key.as_deref(),
                        r.value.as_deref(),
                        &[],
                    )
                    .unwrap();
                }
                let batch_bytes = lithify_kafka_log::record::RecordBatch::parse(b.build()).unwrap();
                l.append_batch(batch_bytes).unwrap();
                l.flush().unwrap();
                for (i, r) in batch.iter().enumerate() {
                    let key = String::from_utf8(r.key.clone().unwrap().to_vec()).unwrap();
                    let value = r
                        .value
                        .clone()
                        .map(|v| String::from_utf8(v.to_vec()).unwrap());
                    appended.insert(base + i as i64, (base + i as i64, key, value, r.timestamp));
                }
            }
            Op::Roll => log.as_mut().unwrap().roll().unwrap(),
            Op::Clean {
                map_bytes,
                advance_ms,
            } => {
                clock.advance_ms(i64::from(advance_ms));
                let config = CleanerConfig::from_properties([
                    (
                        "log.cleaner.dedupe.buffer.size",
                        map_bytes.to_string().as_str(),
                    ),
                    ("log.cleaner.io.buffer.load.factor", "0.75"),
                    ("log.cleaner.io.buffer.size", "512"),
                ])
                .unwrap();
                let svc = LogCleaner::new(config, Arc::new(mem.clone()), clock.clone());
                let shared = shared_log(log.take().unwrap());
                svc.add_log(shared.clone()).unwrap();
                let events = svc.clean_eligible_once().unwrap();
                if std::env::var_os("MODEL_DEBUG").is_some() {
                    eprintln!("{events:?}");
                }
                for e in &events {
                    prop_assert!(!e.is_failure(), "{e}");
                    if let CleanerEvent::Cleaned(r) = e
                        && !r.stats.map_full
                        && r.reason.is_some()
                    {
                        // Below the round's end every key is unique.
                        let l = shared.lock();
                        let mut seen = HashMap::new();
                        for rec in records(&l).into_iter().filter(|r2| r2.0 < r.end_offset) {
                            prop_assert!(
                                seen.insert(rec.1.clone(), rec.0).is_none(),
                                "key {} twice below {}",
                                rec.1,
                                r.end_offset
                            );
                        }
                    }
                }
                // Dropping the service hands the log back (its checkpoint
                // entry stays for the next round).
                drop(svc);
                let l = Arc::try_unwrap(shared).unwrap().into_inner();
                log = Some(l);
            }
            Op::Reopen => {
                drop(log.take());
                log = Some(open_log(&mem, retention, &clock));
            }
            Op::Crash => {
                drop(log.take());
                mem.crash();
                log = Some(open_log(&mem, retention, &clock));
            }
        }
        check(log.as_ref().unwrap(), &appended)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn cleaning_never_loses_the_latest_value_of_a_key(
        ops in prop::collection::vec(op(), 1..40),
        retention in 0u16..200,
    ) {
        run(ops, retention)?;
    }
}
