//! Benchmarks of `lithify-kafka-log`: building and decoding
//! Kafka batches in every codec, rewriting a batch as the log cleaner's
//! second pass does (`rewrite_*`: check the CRC, decompress, keep every
//! third record, build and compress the new batch), appending to a log,
//! and recovering a segment (the CRC-32C scan).
//!
//! `cargo bench -p lithify-benches --bench kafka_log`

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lithify_kafka_log::codec::Compression;
use lithify_kafka_log::record::{BatchBuilder, BatchRecords, RecordBatch, SimpleRecord};
use lithify_kafka_log::{Log, LogConfig, ManualClock, OpenOptions};
use lithify_vfs::MemFs;

/// 100 records of a 16-byte key and a 100-byte value, like the cleaner's
/// reference workload.
fn records() -> Vec<SimpleRecord> {
    (0..100)
        .map(|i| {
            let value = format!("{i:04}-{}", "payload-".repeat(12));
            SimpleRecord::new(
                1_700_000_000_000 + i,
                format!("key-{:012}", i * 7919 % 100_000),
                value[..100].to_string(),
            )
        })
        .collect()
}

fn build(codec: Compression, records: &[SimpleRecord]) -> RecordBatch {
    let mut b = BatchBuilder::new(0).compression(codec);
    for (i, r) in records.iter().enumerate() {
        b.append(
            i as i64,
            r.timestamp,
            r.key.as_deref(),
            r.value.as_deref(),
            &r.headers,
        )
        .unwrap();
    }
    RecordBatch::parse(b.build()).unwrap()
}

fn batches(c: &mut Criterion) {
    let records = records();
    // Key and value bytes plus the 8-byte timestamp each record carries.
    let raw_bytes: u64 = records
        .iter()
        .map(|r| {
            let key = r.key.as_ref().map_or(0, |k| k.len());
            let value = r.value.as_ref().map_or(0, |v| v.len());
            (key + value + 8) as u64
        })
        .sum();
    let mut g = c.benchmark_group("logclean_batch");
    g.throughput(Throughput::Bytes(raw_bytes));
    for codec in Compression::ALL {
        g.bench_function(format!("build_{codec}"), |b| {
            b.iter(|| black_box(build(codec, &records)))
        });
        let batch = build(codec, &records);
        g.bench_function(format!("decode_{codec}"), |b| {
            b.iter(|| {
                batch.ensure_valid().unwrap();
                black_box(batch.records().unwrap().len())
            })
        });
        g.bench_function(format!("rewrite_{codec}"), |b| {
            b.iter(|| black_box(rewrite_keeping_every_third(&batch)))
        });
    }
    g.finish();
}

/// The cleaner's rewrite of a batch some of whose records were replaced:
/// the same header fields and codec, the kept records re-encoded from
/// borrowed views.
fn rewrite_keeping_every_third(batch: &RecordBatch) -> RecordBatch {
    batch.ensure_valid().unwrap();
    let records = BatchRecords::decompress(batch).unwrap();
    let mut b = BatchBuilder::new(batch.base_offset())
        .compression(batch.compression().unwrap())
        .last_offset(batch.last_offset());
    for (i, r) in records.iter().enumerate() {
        let r = r.unwrap();
        if i % 3 == 0 {
            b.append_view(&r).unwrap();
        }
    }
    RecordBatch::parse(b.build()).unwrap()
}

fn log_append_and_recover(c: &mut Criterion) {
    let records = records();
    let config = LogConfig::from_properties([
        ("segment.bytes", "4194304"),
        ("segment.index.bytes", "65536"),
    ])
    .unwrap();
    let options = || {
        OpenOptions::default()
            .recovery_point(None)
            .clock(Arc::new(ManualClock::at_ms(0)))
    };
    let mut g = c.benchmark_group("logclean_log");
    let batch_size = build(Compression::None, &records).size_in_bytes() as u64;
    g.throughput(Throughput::Bytes(batch_size * 200));
    g.bench_function("append_200_batches", |b| {
        b.iter(|| {
            let fs = Arc::new(MemFs::new());
            let mut log =
                Log::open_with(fs, Path::new("/b/t-0"), config.clone(), options()).unwrap();
            for _ in 0..200 {
                log.append(&records).unwrap();
            }
            black_box(log.log_end_offset())
        })
    });
    let fs = MemFs::new();
    let mut log = Log::open_with(
        Arc::new(fs.clone()),
        Path::new("/b/t-0"),
        config.clone(),
        options(),
    )
    .unwrap();
    for _ in 0..200 {
        log.append(&records).unwrap();
    }
    log.flush().unwrap();
    drop(log);
    g.bench_function("recover_segment_of_200_batches", |b| {
        b.iter(|| {
            let log = Log::open_with(
                Arc::new(fs.clone()),
                Path::new("/b/t-0"),
                config.clone(),
                options(),
            )
            .unwrap();
            black_box(log.log_end_offset())
        })
    });
    g.finish();
}

criterion_group!(benches, batches, log_append_and_recover);
criterion_main!(benches);
