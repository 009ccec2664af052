//! The cost of a transaction over a plain write: one put (16-byte random
//! key, 100-byte value, WAL without fsync) written plainly, as an
//! optimistic transaction (snapshot, tracked key, validation in the write
//! group) and as a pessimistic one (lock, write, unlock); and a
//! read-modify-write of one key as each kind of transaction. The issue's
//! goal: an optimistic one-put transaction at most 1.5 times a plain put.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lithify_engine::{Db, Options};
use lithify_txn::{OptimisticDb, TransactionDb, TransactionDbOptions};

const KEYS: u64 = 200_000;

fn key(n: u64) -> [u8; 16] {
    let mut k = [b'0'; 16];
    let mut n = n;
    for b in k.iter_mut().rev() {
        *b = b'0' + (n % 10) as u8;
        n /= 10;
    }
    k
}

/// A cheap deterministic key order.
fn scramble(i: u64) -> u64 {
    i.wrapping_mul(0x9e37_79b9_7f4a_7c15) % KEYS
}

fn txn(c: &mut Criterion) {
    let value = [b'v'; 100];
    let mut g = c.benchmark_group("txn");
    g.throughput(Throughput::Elements(1));

    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let mut i = 0u64;
    g.bench_function("plain put", |b| {
        b.iter(|| {
            i += 1;
            db.put(key(scramble(i)), value).unwrap();
        })
    });
    let opt = OptimisticDb::new(&db);
    g.bench_function("optimistic transaction: one put", |b| {
        b.iter(|| {
            i += 1;
            let mut t = opt.transaction();
            t.put(key(scramble(i)), value).unwrap();
            t.commit().unwrap();
        })
    });
    g.bench_function("optimistic transaction: read-modify-write", |b| {
        b.iter(|| {
            i += 1;
            let k = key(scramble(i));
            let mut t = opt.transaction();
            let n = t.get(k).unwrap().map_or(0, |v| v.len());
            t.put(k, &value[..(n % 100) + 1]).unwrap();
            t.commit().unwrap();
        })
    });
    let pes = TransactionDb::new(&db, TransactionDbOptions::default());
    g.bench_function("pessimistic transaction: one put", |b| {
        b.iter(|| {
            i += 1;
            let mut t = pes.transaction();
            t.put(key(scramble(i)), value).unwrap();
            t.commit().unwrap();
        })
    });
    g.bench_function("pessimistic transaction: read-modify-write", |b| {
        b.iter(|| {
            i += 1;
            let k = key(scramble(i));
            let mut t = pes.transaction();
            let n = t.get_for_update(k).unwrap().map_or(0, |v| v.len());
            t.put(k, &value[..(n % 100) + 1]).unwrap();
            t.commit().unwrap();
        })
    });
    g.finish();
}

criterion_group!(benches, txn);
criterion_main!(benches);
