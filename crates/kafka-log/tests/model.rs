//! Model-based test: random appends in every codec, rolls, flushes,
//! reopens and power losses, checked against a `Vec` of the records.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use lithify_kafka_log::codec::Compression;
use lithify_kafka_log::record::{BatchBuilder, Header, RecordBatch, SimpleRecord};
use lithify_kafka_log::{Log, LogConfig, ManualClock, OpenOptions};
use lithify_vfs::MemFs;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    /// Records as (key id, value length or tombstone), in one batch.
    Append {
        records: Vec<(u8, Option<u8>)>,
        codec: usize,
        via_builder: bool,
    },
    Roll,
    Flush,
    Reopen,
    Crash,
    Read(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (prop::collection::vec((any::<u8>(), prop::option::weighted(0.8, 0u8..120)), 1..12), 0..5usize, any::<bool>())
            .prop_map(|(records, codec, via_builder)| Op::Append { records, codec, via_builder }),
        1 => Just(Op::Roll),
        1 => Just(Op::Flush),
        1 => Just(Op::Reopen),
        1 => Just(Op::Crash),
        2 => any::<u8>().prop_map(Op::Read),
    ]
}

type Model = Vec<(i64, i64, Vec<u8>, Option<Vec<u8>>)>;

fn check_read(log: &Log, model: &Model, from: usize) {
    let start = model.get(from).map_or(log.log_end_offset(), |r| r.0);
    let got: Model = log
        .records_from(start)
        .unwrap()
        .map(|r| {
            let r = r.unwrap();
            assert_eq!(r.headers.len(), 1);
            (
                r.offset,
                r.timestamp,
                r.key.unwrap().to_vec(),
                r.value.map(|v| v.to_vec()),
            )
        })
        .collect();
    assert_eq!(&got[..], &model[from.min(model.len())..]);
}

fn open(fs: &MemFs, config: &LogConfig) -> Log {
    let options = OpenOptions::default()
        .recovery_point(None)
        .clock(Arc::new(ManualClock::at_ms(1_000_000)));
    Log::open_with(
        Arc::new(fs.clone()),
        Path::new("/d/p-0"),
        config.clone(),
        options,
    )
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn appends_read_back_across_rolls_codecs_and_crashes(
        ops in prop::collection::vec(op(), 1..40),
        segment_bytes in 200i32..3000,
        interval in 0i32..300,
        config_codec in 0..5usize,
    ) {
        let config = LogConfig::from_properties([
            ("segment.bytes", segment_bytes.to_string().as_str()),
            ("index.interval.bytes", interval.to_string().as_str()),
            ("segment.index.bytes", "120"),
            ("compression.type", Compression::ALL[config_codec].name()),
        ]).unwrap();
        let fs = MemFs::new();
        let mut log = open(&fs, &config);
        let mut model: Model = Vec::new();
        let mut durable = 0usize;
        let mut ts = 0i64;
        for op in ops {
            match op {
                Op::Append { records, codec, via_builder } => {
                    let base = log.log_end_offset();
                    let segments = log.segments().count();
                    let simple: Vec<SimpleRecord> = records.iter().map(|&(k, v)| {
                        ts += 1;
                        SimpleRecord {
                            timestamp: ts,
                            key: Some(Bytes::from(format!("k{k}"))),
                            value: v.map(|n| Bytes::from(vec![b'a' + n % 26; n as usize])),
                            headers: vec![Header::new("h", None)],
                        }
                    }).collect();
                    if via_builder {
                        let mut b = BatchBuilder::new(0).compression(Compression::ALL[codec]);
                        for (i, r) in simple.iter().enumerate() {
                            b.append(i as i64, r.timestamp, r.key.as_deref(), r.value.as_deref(), &r.headers).unwrap();
                        }
                        log.append_batch(RecordBatch::parse(b.build()).unwrap()).unwrap();
                    } else {
                        log.append(&simple).unwrap();
                    }
                    if log.segments().count() > segments {
                        // The roll synced everything before this batch.
                        durable = model.len();
                    }
                    for (i, r) in simple.into_iter().enumerate() {
                        model.push((base + i as i64, r.timestamp, r.key.unwrap().to_vec(), r.value.map(|v| v.to_vec())));
                    }
                }
                Op::Roll => {
                    log.roll().unwrap();
                    durable = model.len();
                }
                Op::Flush => {
                    log.flush().unwrap();
                    durable = model.len();
                }
                Op::Reopen => {
                    drop(log);
                    log = open(&fs, &config);
                }
                Op::Crash => {
                    drop(log);
                    fs.crash();
                    model.truncate(durable);
                    log = open(&fs, &config);
                }
                Op::Read(at) => {
                    let from = if model.is_empty() { 0 } else { at as usize % (model.len() + 1) };
                    check_read(&log, &model, from);
                }
            }
            prop_assert_eq!(log.log_end_offset() as usize, model.len());
        }
        check_read(&log, &model, 0);
        for seg in log.segments() {
            for b in seg.batches() {
                b.unwrap().ensure_valid().unwrap();
            }
        }
    }
}
