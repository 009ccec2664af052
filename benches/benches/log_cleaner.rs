//! The log cleaner's throughput on the reference workload — 1M records,
//! 100k keys (uniform, so 10 versions per key), 100-byte values, batches of
//! 100 — against a plain copy of the same bytes (read every segment, write
//! it to a new file, sync), the physical limit of a cleaner.
//!
//! Everything runs on `MemFs`, so the figures compare CPU work; `lithify
//! log bench` measures the same on the real file system.
//!
//! * `clean_round/kafka`: Kafka's settings: MD5 digests, a 128 MiB offset
//!   map (zeroed at the start of every round, as Kafka does);
//! * `clean_round/xxh3_4MiB`: xxh3-128 digests and a 4 MiB map (room for
//!   157k keys at load factor 0.9), the fast configuration;
//! * `copy`: the same segment bytes copied.
//!
//! Throughput is in bytes of log read.
//!
//! `cargo bench -p lithify-benches --bench log_cleaner`

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use lithify_base::sync::Mutex;
use lithify_compaction_logclean::{Cleaner, CleanerConfig, LogToClean, Throttler};
use lithify_kafka_log::{Log, LogConfig, ManualClock, OpenOptions, SimpleRecord};
use lithify_vfs::{FileSystem, MemFs};

const RECORDS: u64 = 1_000_000;
const KEYS: u64 = 100_000;
const VALUE: usize = 100;
const NOW: i64 = 1_700_000_000_000;
const DIR: &str = "/data/bench-0";

fn config() -> LogConfig {
    // One segment per 1 GiB (Kafka's default): the 119 MB log is one
    // segment. MemFs really allocates preallocated indexes: 1 MiB is
    // enough for this log's ~30k entries.
    LogConfig::from_properties([
        ("cleanup.policy", "compact"),
        ("segment.index.bytes", "1048576"),
    ])
    .unwrap()
}

fn options() -> OpenOptions {
    OpenOptions::default()
        .recovery_point(None)
        .clock(Arc::new(ManualClock::at_ms(NOW)))
}

/// The reference log, durable on a `MemFs`; its bytes.
fn build() -> (MemFs, u64) {
    let fs = MemFs::new();
    let mut log =
        Log::open_with(Arc::new(fs.clone()), Path::new(DIR), config(), options()).unwrap();
    let mut rng = lithify_base::rand::SplitMix64::new(7);
    let mut batch = Vec::with_capacity(100);
    for i in 0..RECORDS {
        let key = format!("key-{:010}", rng.below(KEYS));
        let value: Vec<u8> = (0..VALUE)
            .map(|j| b'a' + ((i as usize + j) % 26) as u8)
            .collect();
        batch.push(SimpleRecord::new(NOW - 3_600_000 + i as i64, key, value));
        if batch.len() == 100 {
            log.append(&batch).unwrap();
            batch.clear();
        }
    }
    log.roll().unwrap();
    log.flush().unwrap();
    let bytes = log.segment_infos().iter().map(|s| s.size).sum();
    (fs, bytes)
}

fn cleaner(settings: &[(&str, &str)]) -> Cleaner {
    let config = CleanerConfig::from_properties(settings.iter().copied()).unwrap();
    let throttler = Arc::new(Throttler::new(
        f64::MAX,
        Arc::new(lithify_kafka_log::SystemClock),
    ));
    Cleaner::new(0, &config, throttler).unwrap()
}

fn copy(fs: &MemFs) -> u64 {
    let dir = Path::new(DIR);
    let out = Path::new("/copy");
    fs.create_dir_all(out).unwrap();
    let mut total = 0;
    let mut names = fs.list_dir(dir).unwrap();
    names.sort();
    for name in names.iter().filter(|n| n.ends_with(".log")) {
        let src = fs.open(&dir.join(name)).unwrap();
        let size = src.size().unwrap();
        let mut dst = fs.create(&PathBuf::from(out).join(name)).unwrap();
        let mut pos = 0;
        let mut buf = vec![0u8; 256 << 10];
        while pos < size {
            let n = buf.len().min((size - pos) as usize);
            src.read_exact_at(pos, &mut buf[..n]).unwrap();
            dst.append(&buf[..n]).unwrap();
            pos += n as u64;
        }
        dst.sync_data().unwrap();
        total += size;
    }
    fs.sync_dir(out).unwrap();
    total
}

fn log_cleaner(c: &mut Criterion) {
    let (pristine, bytes) = build();
    let mut g = c.benchmark_group("log_cleaner");
    g.throughput(Throughput::Bytes(bytes));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));

    for (name, settings) in [
        ("clean_round/kafka", &[][..]),
        (
            "clean_round/xxh3_4MiB",
            &[
                ("log.cleaner.dedupe.buffer.size", "4194304"),
                ("lithify.cleaner.digest", "xxh3"),
            ][..],
        ),
    ] {
        let mut cleaner = cleaner(settings);
        g.bench_function(name, |b| {
            b.iter_batched(
                || {
                    let fs = pristine.crash_clone();
                    let log =
                        Log::open_with(Arc::new(fs), Path::new(DIR), config(), options()).unwrap();
                    let ltc = LogToClean::from_log(&log, None, NOW).unwrap();
                    (Mutex::new(log), ltc)
                },
                |(log, ltc)| {
                    let out = cleaner.clean(&log, &ltc, NOW, &|| Ok(())).unwrap();
                    assert_eq!(out.report.stats.messages_read, RECORDS);
                    log
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.bench_function("copy", |b| {
        b.iter_batched(
            || pristine.crash_clone(),
            |fs| {
                assert_eq!(copy(&fs), bytes);
                fs
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

criterion_group!(benches, log_cleaner);
criterion_main!(benches);
