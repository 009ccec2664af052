//! The memtable against two baselines on the same entries: a
//! `crossbeam_skiplist::SkipMap` and a `parking_lot::RwLock<BTreeMap>`.
//!
//! Entries are internal keys (16-byte user keys in scrambled order, one
//! version each, seqno 1..=N) with 100-byte values. Baselines key their maps
//! by the encoded internal key under the same order (user key ascending,
//! trailer descending), and answer a point lookup the way the memtable
//! does: the first entry at or after `user_key#snapshot,SEEK`.
//!
//! * `insert/1_thread`, `insert/2_threads`: fill an empty structure;
//! * `get`: point lookups of every key in another scrambled order;
//! * `scan`: a full forward iteration.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::ops::Bound;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use crossbeam_skiplist::SkipMap;
use lithify_base::key::{KIND_FOR_SEEK, append_internal_key, trailer, user_key};
use lithify_base::{InternalIterator, InternalKeyComparator, MAX_SEQNO, ValueKind};
use lithify_memtable::{MemTable, MemTableIter};
use parking_lot::RwLock;

const ENTRIES: usize = 100_000;

/// A user key and its seqno.
type Entry = ([u8; 16], u64);
const VALUE: [u8; 100] = [0x5a; 100];

/// An encoded internal key as a map key, in internal-key order.
#[derive(Clone, PartialEq, Eq)]
struct Ik(Box<[u8]>);

/// The unsized view of an [`Ik`], so lookups borrow instead of allocating.
#[derive(PartialEq, Eq)]
#[repr(transparent)]
struct IkSlice([u8]);

impl IkSlice {
    fn new(encoded: &[u8]) -> &IkSlice {
        // SAFETY: `IkSlice` is a `repr(transparent)` wrapper of `[u8]`.
        unsafe { &*(encoded as *const [u8] as *const IkSlice) }
    }
}

impl Ord for IkSlice {
    fn cmp(&self, other: &Self) -> Ordering {
        user_key(&self.0)
            .cmp(user_key(&other.0))
            .then_with(|| trailer(&other.0).cmp(&trailer(&self.0)))
    }
}

impl PartialOrd for IkSlice {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Borrow<IkSlice> for Ik {
    fn borrow(&self) -> &IkSlice {
        IkSlice::new(&self.0)
    }
}

impl Ord for Ik {
    fn cmp(&self, other: &Self) -> Ordering {
        IkSlice::new(&self.0).cmp(IkSlice::new(&other.0))
    }
}

impl PartialOrd for Ik {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// 16-byte user keys in a scrambled order, with seqnos 1..=N.
fn entries() -> Vec<Entry> {
    entries_of(ENTRIES)
}

/// `n` entries with scrambled keys (the first 8 bytes spread the order).
fn entries_of(n: usize) -> Vec<Entry> {
    (0..n as u64)
        .map(|i| {
            let mut key = [0u8; 16];
            key[..8].copy_from_slice(&i.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes());
            key[8..].copy_from_slice(&i.to_be_bytes());
            (key, i + 1)
        })
        .collect()
}

fn internal_key(user: &[u8], seqno: u64, kind: u8) -> Vec<u8> {
    let mut out = Vec::with_capacity(user.len() + 8);
    append_internal_key(&mut out, user, seqno, kind);
    out
}

/// The keys of `all` in another scrambled order, for lookups.
fn probe_order(all: &[Entry]) -> Vec<[u8; 16]> {
    let mut probes: Vec<[u8; 16]> = all.iter().map(|(k, _)| *k).collect();
    probes.sort_by_key(|k| {
        u64::from_be_bytes(k[8..].try_into().unwrap()).wrapping_mul(0x2545_f491_4f6c_dd1d)
    });
    probes
}

/// Looks every probe up at the latest snapshot; the bytes found.
fn get_all(mem: &MemTable, probes: &[[u8; 16]]) -> usize {
    let mut found = 0usize;
    for k in probes {
        found += mem.get(k, MAX_SEQNO).value().map_or(0, <[u8]>::len);
    }
    found
}

/// Scans the memtable reading a byte of every key and value, so the scan
/// touches each entry's memory.
fn scan_all(mem: &Arc<MemTable>) -> usize {
    let mut it = MemTableIter::new(mem.clone());
    let mut sum = 0usize;
    it.first().unwrap();
    while it.valid() {
        sum += usize::from(it.key()[0]) + usize::from(it.value()[99]);
        it.next().unwrap();
    }
    sum
}

fn new_memtable() -> Arc<MemTable> {
    Arc::new(MemTable::new(InternalKeyComparator::bytewise()))
}

fn fill_memtable(mem: &MemTable, part: &[Entry]) {
    for (k, s) in part {
        mem.add(*s, ValueKind::Put, k, &VALUE).unwrap();
    }
}

fn fill_skipmap(map: &SkipMap<Ik, Box<[u8]>>, part: &[Entry]) {
    for (k, s) in part {
        let key = Ik(internal_key(k, *s, ValueKind::Put as u8).into_boxed_slice());
        map.insert(key, VALUE.to_vec().into_boxed_slice());
    }
}

fn fill_btree(map: &RwLock<BTreeMap<Ik, Box<[u8]>>>, part: &[Entry]) {
    for (k, s) in part {
        let key = Ik(internal_key(k, *s, ValueKind::Put as u8).into_boxed_slice());
        map.write().insert(key, VALUE.to_vec().into_boxed_slice());
    }
}

fn configure(c: &mut Criterion) -> criterion::BenchmarkGroup<'_, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group("memtable");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .throughput(Throughput::Elements(ENTRIES as u64));
    g
}

fn inserts(c: &mut Criterion) {
    let all = entries();
    let mut g = configure(c);
    g.bench_function("insert/1_thread/lithify", |b| {
        b.iter_batched(
            new_memtable,
            |m| {
                fill_memtable(&m, &all);
                m
            },
            BatchSize::PerIteration,
        )
    });
    g.bench_function("insert/1_thread/crossbeam_skiplist", |b| {
        b.iter_batched(
            SkipMap::new,
            |m| {
                fill_skipmap(&m, &all);
                m
            },
            BatchSize::PerIteration,
        )
    });
    g.bench_function("insert/1_thread/rwlock_btreemap", |b| {
        b.iter_batched(
            || RwLock::new(BTreeMap::new()),
            |m| {
                fill_btree(&m, &all);
                m
            },
            BatchSize::PerIteration,
        )
    });
    // Split before timing: only the inserts (and two thread spawns) count.
    let even: Vec<_> = all.iter().step_by(2).copied().collect();
    let odd: Vec<_> = all.iter().skip(1).step_by(2).copied().collect();
    let two = |fill_one: &(dyn Fn(&[Entry]) + Sync)| {
        std::thread::scope(|s| {
            s.spawn(|| fill_one(&even));
            s.spawn(|| fill_one(&odd));
        });
    };
    g.bench_function("insert/2_threads/lithify", |b| {
        b.iter_batched(
            new_memtable,
            |m| {
                two(&|part| fill_memtable(&m, part));
                m
            },
            BatchSize::PerIteration,
        )
    });
    g.bench_function("insert/2_threads/crossbeam_skiplist", |b| {
        b.iter_batched(
            SkipMap::new,
            |m| {
                two(&|part| fill_skipmap(&m, part));
                m
            },
            BatchSize::PerIteration,
        )
    });
    g.bench_function("insert/2_threads/rwlock_btreemap", |b| {
        b.iter_batched(
            || RwLock::new(BTreeMap::new()),
            |m| {
                two(&|part| fill_btree(&m, part));
                m
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
    // The two halves add up to every entry.
    let m = new_memtable();
    two(&|part| fill_memtable(&m, part));
    assert_eq!(m.len(), ENTRIES);
}

fn reads(c: &mut Criterion) {
    let all = entries();
    let mem = new_memtable();
    fill_memtable(&mem, &all);
    let skip = SkipMap::new();
    fill_skipmap(&skip, &all);
    let btree = RwLock::new(BTreeMap::new());
    fill_btree(&btree, &all);
    let probes = probe_order(&all);
    let seeks: Vec<Vec<u8>> = probes
        .iter()
        .map(|k| internal_key(k, MAX_SEQNO, KIND_FOR_SEEK))
        .collect();

    let mut g = configure(c);
    g.bench_function("get/lithify", |b| {
        b.iter(|| black_box(get_all(&mem, &probes)))
    });
    g.bench_function("get/crossbeam_skiplist", |b| {
        b.iter(|| {
            let mut found = 0usize;
            for (k, seek) in probes.iter().zip(&seeks) {
                let lower = Bound::Included(IkSlice::new(seek));
                if let Some(e) = skip.range::<IkSlice, _>((lower, Bound::Unbounded)).next()
                    && user_key(&e.key().0) == k
                {
                    found += e.value().len();
                }
            }
            black_box(found)
        })
    });
    g.bench_function("get/rwlock_btreemap", |b| {
        b.iter(|| {
            let mut found = 0usize;
            for (k, seek) in probes.iter().zip(&seeks) {
                let map = btree.read();
                let lower = Bound::Included(IkSlice::new(seek));
                if let Some((key, v)) = map.range::<IkSlice, _>((lower, Bound::Unbounded)).next()
                    && user_key(&key.0) == k
                {
                    found += v.len();
                }
            }
            black_box(found)
        })
    });
    // Scans read a byte of every key and value, so each structure touches
    // the entry's memory (the boxed baselines would otherwise only read
    // lengths stored in their nodes).
    g.bench_function("scan/lithify", |b| b.iter(|| black_box(scan_all(&mem))));
    g.bench_function("scan/crossbeam_skiplist", |b| {
        b.iter(|| {
            let sum: usize = skip
                .iter()
                .map(|e| usize::from(e.key().0[0]) + usize::from(e.value()[99]))
                .sum();
            black_box(sum)
        })
    });
    g.bench_function("scan/rwlock_btreemap", |b| {
        b.iter(|| {
            let map = btree.read();
            let sum: usize = map
                .iter()
                .map(|(k, v)| usize::from(k.0[0]) + usize::from(v[99]))
                .sum();
            black_box(sum)
        })
    });
    g.finish();
}

/// Entries of a full 64 MiB memtable (the engine's default write buffer)
/// of 16-byte keys and 100-byte values.
const FULL_ENTRIES: usize = 450_000;

/// One thread inserting, looking up and scanning a memtable as large as
/// the engine's default write buffer: far larger than the processor's
/// caches, where each node a search visits can be a miss to memory (the
/// 100K-entry groups above mostly stay in cache).
fn full_memtable(c: &mut Criterion) {
    let all = entries_of(FULL_ENTRIES);
    let mem = new_memtable();
    fill_memtable(&mem, &all);
    let probes = probe_order(&all);
    let seeks: Vec<Vec<u8>> = probes
        .iter()
        .take(FULL_ENTRIES / 10)
        .map(|k| internal_key(k, MAX_SEQNO, KIND_FOR_SEEK))
        .collect();

    let mut g = c.benchmark_group("memtable_64mib");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(10))
        .throughput(Throughput::Elements(FULL_ENTRIES as u64));
    g.bench_function("insert", |b| {
        b.iter_batched(
            new_memtable,
            |m| {
                fill_memtable(&m, &all);
                m
            },
            BatchSize::PerIteration,
        )
    });
    g.bench_function("get", |b| b.iter(|| black_box(get_all(&mem, &probes))));
    g.bench_function("scan", |b| b.iter(|| black_box(scan_all(&mem))));
    // A seek then 10 nexts, as seekrandom does (a tenth of the keys, so
    // one iteration counts FULL_ENTRIES steps).
    g.bench_function("seek_and_10_nexts", |b| {
        b.iter(|| {
            let mut it = MemTableIter::new(mem.clone());
            let mut sum = 0usize;
            for seek in &seeks {
                it.seek_ge(seek).unwrap();
                for _ in 0..10 {
                    if !it.valid() {
                        break;
                    }
                    sum += usize::from(it.value()[99]);
                    it.next().unwrap();
                }
            }
            black_box(sum)
        })
    });
    g.finish();
}

criterion_group!(benches, inserts, reads, full_memtable);
criterion_main!(benches);
