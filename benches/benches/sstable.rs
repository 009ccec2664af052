//! Benchmarks of `lithify-sstable`: building tables (MB/s), point lookups
//! of present and absent keys (the bloom filter), and full scans (MB/s),
//! each without and with zstd. Tables live in a `MemFs`, so the figures
//! measure the format code, not a device.

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use lithify_base::InternalIterator;
use lithify_sstable::{BlockCache, Compression, SstBuilder, SstOptions, SstReader};
use lithify_vfs::{FileSystem, MemFs};

const ENTRIES: u64 = 50_000;
const VALUE_LEN: usize = 100;
const LOOKUPS: u64 = 1_000;

fn key(i: u64) -> Vec<u8> {
    format!("user{:012}", i.wrapping_mul(2)).into_bytes()
}

/// An absent key inside the table's key range (odd numbers are never added).
fn absent_key(i: u64) -> Vec<u8> {
    format!("user{:012}", i.wrapping_mul(2) + 1).into_bytes()
}

/// Values that compress about 2:1, like db_bench's `--compression_ratio=0.5`:
/// half random bytes, then the same bytes again.
fn value(i: u64, out: &mut Vec<u8>) {
    out.clear();
    let mut x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    while out.len() < VALUE_LEN / 2 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.push(x as u8);
    }
    out.extend_from_within(..);
    out.resize(VALUE_LEN, 0);
}

fn options(compression: Compression) -> SstOptions {
    SstOptions::default()
        .compression(compression)
        .creation_time(Some(0))
}

fn build(fs: &MemFs, path: &str, opts: &SstOptions) -> u64 {
    let file = fs.create(Path::new(path)).unwrap();
    let mut b = SstBuilder::new(file, path, opts).unwrap();
    let mut v = Vec::with_capacity(VALUE_LEN);
    for i in 0..ENTRIES {
        value(i, &mut v);
        b.add(&key(i), &v).unwrap();
    }
    b.finish().unwrap().file_size
}

fn raw_bytes() -> u64 {
    ENTRIES * (key(0).len() + VALUE_LEN) as u64
}

const COMPRESSIONS: [(&str, Compression); 2] = [
    ("none", Compression::None),
    ("zstd", Compression::Zstd { level: 3 }),
];

fn bench_build(c: &mut Criterion) {
    for (name, compression) in COMPRESSIONS {
        let size = build(&MemFs::new(), "/b.sst", &options(compression));
        println!(
            "table with {name}: {ENTRIES} entries, {} raw bytes, {size} bytes on disk",
            raw_bytes()
        );
    }
    let mut g = c.benchmark_group("sstable_build");
    g.throughput(Throughput::Bytes(raw_bytes()));
    for (name, compression) in COMPRESSIONS {
        let opts = options(compression);
        g.bench_function(name, |b| {
            let fs = MemFs::new();
            b.iter(|| black_box(build(&fs, "/b.sst", &opts)));
        });
    }
    g.finish();
}

fn open(
    fs: &MemFs,
    path: &str,
    opts: &SstOptions,
    cache: Option<Arc<BlockCache>>,
) -> Arc<SstReader> {
    let size = fs.file_size(Path::new(path)).unwrap();
    let file = fs.open(Path::new(path)).unwrap();
    Arc::new(SstReader::open(file, path, size, opts, cache).unwrap())
}

fn bench_get(c: &mut Criterion) {
    let mut g = c.benchmark_group("sstable_get");
    g.throughput(Throughput::Elements(LOOKUPS));
    for (name, compression) in COMPRESSIONS {
        let fs = MemFs::new();
        let opts = options(compression);
        build(&fs, "/g.sst", &opts);
        // A cache holding the whole table: lookups measure the read path,
        // not the decompression of every block.
        let cached = open(
            &fs,
            "/g.sst",
            &opts,
            Some(Arc::new(BlockCache::new(64 << 20))),
        );
        let uncached = open(&fs, "/g.sst", &opts, None);
        let present: Vec<Vec<u8>> = (0..LOOKUPS)
            .map(|i| key(i.wrapping_mul(7919) % ENTRIES))
            .collect();
        let absent: Vec<Vec<u8>> = (0..LOOKUPS)
            .map(|i| absent_key(i.wrapping_mul(7919) % ENTRIES))
            .collect();
        for (kind, keys, table) in [
            ("present/cached", &present, &cached),
            ("present/uncached", &present, &uncached),
            ("absent/filtered", &absent, &cached),
        ] {
            g.bench_function(BenchmarkId::new(kind, name), |b| {
                b.iter(|| {
                    let mut found = 0;
                    for k in keys {
                        found += usize::from(table.get(k).unwrap().is_some());
                    }
                    black_box(found)
                })
            });
        }
    }
    g.finish();
}

fn bench_scan(c: &mut Criterion) {
    let mut g = c.benchmark_group("sstable_scan");
    g.throughput(Throughput::Bytes(raw_bytes()));
    for (name, compression) in COMPRESSIONS {
        let fs = MemFs::new();
        let opts = options(compression);
        build(&fs, "/s.sst", &opts);
        let table = open(&fs, "/s.sst", &opts, None);
        g.bench_function(BenchmarkId::new("uncached", name), |b| {
            b.iter(|| {
                let mut it = table.iter();
                it.first().unwrap();
                let mut bytes = 0;
                while it.valid() {
                    bytes += it.key().len() + it.value().len();
                    it.next().unwrap();
                }
                black_box(bytes)
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = bench_build, bench_get, bench_scan
}
criterion_main!(benches);
