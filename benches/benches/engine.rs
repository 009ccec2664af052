//! Engine throughput: random puts (16-byte keys, 100-byte values, WAL
//! without fsync), random point lookups and seek + 10 nexts over 200 000
//! keys on the real file system. The full-size comparison (2M keys) is the
//! `lithify` command's db_bench: `cargo run --release --bin lithify --
//! bench --num 2000000 --cache-size 67108864`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lithify_benches::{key, scramble};
use lithify_engine::{Db, Options, ReadOptions};

const KEYS: u64 = 200_000;

fn engine(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let value = [b'v'; 100];
    let mut g = c.benchmark_group("engine");
    g.throughput(Throughput::Elements(1));
    let mut i = 0u64;
    g.bench_function("put (random key, no sync)", |b| {
        b.iter(|| {
            i += 1;
            db.put(key(scramble(i, KEYS)), value).unwrap();
        })
    });
    for n in 0..KEYS {
        db.put(key(n), value).unwrap();
    }
    db.flush().unwrap();
    let mut j = 0u64;
    g.bench_function("get (present key)", |b| {
        b.iter(|| {
            j += 1;
            black_box(db.get(key(scramble(j, KEYS))).unwrap());
        })
    });
    let mut it = db.raw_iterator(&ReadOptions::default()).unwrap();
    let mut s = 0u64;
    g.bench_function("seek + 10 nexts", |b| {
        b.iter(|| {
            s += 1;
            it.seek(key(scramble(s, KEYS))).unwrap();
            for _ in 0..10 {
                if !it.valid() {
                    break;
                }
                black_box(it.value());
                it.next().unwrap();
            }
        })
    });
    g.finish();
}

criterion_group!(benches, engine);
criterion_main!(benches);
