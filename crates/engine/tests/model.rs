//! Model-based test: random operation sequences against a `BTreeMap`
//! oracle — puts, deletes, range deletes, merges (u64 add or string
//! append, the oracle applying each operand in sequence order), single
//! deletes (only where `SingleDelete`'s contract allows: a key with at most
//! one put since its last single delete, never deleted, range-deleted or
//! merged), batches, snapshots, point reads, scans both ways, cursor walks,
//! flushes, compactions, reopens and live compaction-strategy switches —
//! with small memtables and levels so every level is reached. It runs once
//! per compaction strategy (each fixed one and `Adaptive`), each run
//! switching strategies mid-way too.

mod common;

use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;
use common::{
    Model, all_strategies, assert_equal, cases, model_delete_range, model_range, scan, scan_rev,
    small_options,
};
use std::collections::BTreeMap;

use lithify_engine::{
    BlobCompression, BlobOptions, CompactionPri, Db, MergeOperator, Options, ReadOptions, Snapshot,
    StringAppend, UInt64Add, WriteBatch,
};
use lithify_vfs::MemFs;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Put(u8, u16),
    Delete(u8),
    Merge(u8, u8),
    SingleDelete(u8),
    DeleteRange(u8, u8),
    Batch(Vec<(u8, u8, u8)>),
    Get(u8),
    TakeSnapshot,
    Release(usize),
    GetAt(usize, u8),
    Scan {
        snap: Option<usize>,
        lo: Option<u8>,
        hi: Option<u8>,
        reverse: bool,
    },
    Walk {
        snap: Option<usize>,
        start: u8,
        steps: Vec<bool>,
    },
    Flush,
    Compact(Option<u8>, Option<u8>),
    Reopen,
    /// Switches the live table to `all_strategies()[i % len]`.
    Switch(u8),
}

const KEYS: u8 = 120;

fn key(k: u8) -> Vec<u8> {
    format!("key{k:03}").into_bytes()
}

fn value(counter: u64, len: u16) -> Vec<u8> {
    let mut v = format!("v{counter}-").into_bytes();
    v.resize(v.len() + len as usize, b'x');
    v
}

/// The merge operator of option set `variant`: u64 add for odd ones (whose
/// puts are 8-byte counters), string append otherwise.
fn merge_operator(variant: u8) -> Arc<dyn MergeOperator> {
    if variant % 2 == 1 {
        Arc::new(UInt64Add)
    } else {
        Arc::new(StringAppend::default())
    }
}

/// Where a key stands with `SingleDelete`'s contract.
#[derive(Debug, Clone, Copy, Default)]
struct SingleDeleteState {
    /// Puts since the last single delete (or ever).
    puts: u32,
    /// A single delete was issued.
    single_deleted: bool,
    /// Deleted, range-deleted or merged at some point: no single delete.
    tainted: bool,
}

impl SingleDeleteState {
    /// Whether a single delete now keeps to the contract (at most one
    /// put since the last single delete, and never two in a row).
    fn allowed(&self) -> bool {
        !self.tainted && (self.puts == 1 || (self.puts == 0 && !self.single_deleted))
    }
}

fn op() -> impl Strategy<Value = Op> {
    let k = || 0..KEYS;
    prop_oneof![
        30 => (k(), 0u16..400).prop_map(|(k, l)| Op::Put(k, l)),
        6 => k().prop_map(Op::Delete),
        12 => (k(), any::<u8>()).prop_map(|(k, o)| Op::Merge(k, o)),
        4 => k().prop_map(Op::SingleDelete),
        3 => (k(), k()).prop_map(|(a, b)| Op::DeleteRange(a.min(b), a.max(b))),
        4 => proptest::collection::vec((0u8..4, k(), k()), 1..8).prop_map(Op::Batch),
        8 => k().prop_map(Op::Get),
        2 => Just(Op::TakeSnapshot),
        1 => (0usize..4).prop_map(Op::Release),
        4 => (0usize..4, k()).prop_map(|(s, k)| Op::GetAt(s, k)),
        2 => (proptest::option::of(0usize..4), proptest::option::of(k()), proptest::option::of(k()), any::<bool>())
            .prop_map(|(snap, lo, hi, reverse)| Op::Scan { snap, lo, hi, reverse }),
        2 => (proptest::option::of(0usize..4), k(), proptest::collection::vec(any::<bool>(), 1..12))
            .prop_map(|(snap, start, steps)| Op::Walk { snap, start, steps }),
        3 => Just(Op::Flush),
        2 => (proptest::option::of(k()), proptest::option::of(k())).prop_map(|(a, b)| Op::Compact(a, b)),
        1 => Just(Op::Reopen),
        1 => any::<u8>().prop_map(Op::Switch),
    ]
}

/// The option sets the model runs under, with compaction strategy
/// `all_strategies()[strategy]`.
fn options(fs: Arc<MemFs>, variant: u8, strategy: usize) -> Options {
    let small = small_options(fs);
    // Under the other strategies, smaller memtables: more flushes, so
    // their flush plans and majors run within a few hundred ops.
    let write_buffer_size = if strategy == 0 {
        small.write_buffer_size
    } else {
        16 << 10
    };
    let mut base = small
        .compaction_strategy(all_strategies()[strategy].clone())
        .write_buffer_size(write_buffer_size)
        .merge_operator(Some(merge_operator(variant)));
    if variant >= 3 {
        // Key-value separation: every value of 8 bytes or more (counters
        // included, so merges meet separated base values) in small blob
        // files; garbage collection of the older half in variants 4 and 5,
        // forced in variant 5 once that half is 30% garbage.
        base = base.blob(
            BlobOptions::enabled(8)
                .blob_file_size(4 << 10)
                .enable_blob_garbage_collection(variant >= 4)
                .blob_garbage_collection_age_cutoff(0.5)
                .blob_garbage_collection_force_threshold(if variant == 5 { 0.3 } else { 1.0 })
                .blob_compression(if variant == 5 {
                    BlobCompression::Lz4
                } else {
                    BlobCompression::None
                }),
        );
    }
    match variant % 3 {
        0 => base,
        // Subcompactions, no filters anywhere, static level targets.
        1 => base
            .max_subcompactions(3)
            .max_background_jobs(4)
            .bloom_bits_per_key(0.0)
            .memtable_whole_key_filtering(false)
            .level_compaction_dynamic_level_bytes(false),
        // Round-robin file order, tiny blocks, a single background thread.
        _ => base
            .compaction_pri(CompactionPri::RoundRobin)
            .block_size(128)
            .block_restart_interval(2)
            .max_background_jobs(1),
    }
}

struct Harness {
    fs: Arc<MemFs>,
    variant: u8,
    strategy: usize,
    db: Option<Db>,
    model: Model,
    snapshots: Vec<(Snapshot, Model)>,
    counter: u64,
    merge: Arc<dyn MergeOperator>,
    single_delete: BTreeMap<Vec<u8>, SingleDeleteState>,
}

impl Harness {
    fn new(variant: u8, strategy: usize) -> Self {
        let fs = Arc::new(MemFs::new());
        let db = Db::open("/db", options(fs.clone(), variant, strategy)).unwrap();
        Harness {
            fs,
            variant,
            strategy,
            db: Some(db),
            model: Model::new(),
            snapshots: Vec::new(),
            counter: 0,
            merge: merge_operator(variant),
            single_delete: BTreeMap::new(),
        }
    }

    /// A put's value under this run's operator.
    fn put_value(&mut self, len: u16) -> Vec<u8> {
        self.counter += 1;
        if self.variant % 2 == 1 {
            self.counter.to_le_bytes().to_vec()
        } else {
            value(self.counter, len)
        }
    }

    /// A merge operand under this run's operator.
    fn operand(&self, o: u8) -> Vec<u8> {
        if self.variant % 2 == 1 {
            u64::from(o).to_le_bytes().to_vec()
        } else {
            vec![b'a' + o % 26]
        }
    }

    /// Applies a merge to the oracle: the operand on the current value.
    fn model_merge(&mut self, k: &[u8], operand: &[u8]) {
        let merged = self
            .merge
            .full_merge(k, self.model.get(k).map(|v| &v[..]), &[operand])
            .expect("the model's operands merge");
        self.model.insert(k.to_vec(), merged);
        self.single_delete.entry(k.to_vec()).or_default().tainted = true;
    }

    fn note_put(&mut self, k: &[u8]) {
        self.single_delete.entry(k.to_vec()).or_default().puts += 1;
    }

    fn note_deleted(&mut self, k: &[u8]) {
        self.single_delete.entry(k.to_vec()).or_default().tainted = true;
    }

    fn note_range_deleted(&mut self, start: &[u8], end: &[u8]) {
        for k in 0..KEYS {
            let kk = key(k);
            if start <= &kk[..] && &kk[..] < end {
                self.note_deleted(&kk);
            }
        }
    }

    fn db(&self) -> &Db {
        self.db.as_ref().unwrap()
    }

    fn snapshot(&self, i: Option<usize>) -> (ReadOptions, &Model) {
        match i.and_then(|i| self.snapshots.get(i % self.snapshots.len().max(1))) {
            Some((s, m)) => (ReadOptions::at(s), m),
            None => (ReadOptions::default(), &self.model),
        }
    }

    fn apply(&mut self, op: &Op) {
        match op {
            Op::Put(k, len) => {
                let v = self.put_value(*len);
                self.db().put(key(*k), &v).unwrap();
                self.model.insert(key(*k), v);
                self.note_put(&key(*k));
            }
            Op::Delete(k) => {
                self.db().delete(key(*k)).unwrap();
                self.model.remove(&key(*k));
                self.note_deleted(&key(*k));
            }
            Op::Merge(k, o) => {
                let operand = self.operand(*o);
                self.db().merge(key(*k), &operand).unwrap();
                self.model_merge(&key(*k), &operand);
            }
            Op::SingleDelete(k) => {
                let state = self.single_delete.entry(key(*k)).or_default();
                if state.allowed() {
                    state.puts = 0;
                    state.single_deleted = true;
                    self.db().single_delete(key(*k)).unwrap();
                    self.model.remove(&key(*k));
                }
            }
            Op::DeleteRange(a, b) => {
                let (s, e) = (key(*a), key(*b));
                let r = self.db().delete_range(&s, &e);
                if a < b {
                    r.unwrap();
                    model_delete_range(&mut self.model, &s, &e);
                    self.note_range_deleted(&s, &e);
                } else {
                    assert!(r.is_err(), "an empty range must be refused");
                }
            }
            Op::Batch(entries) => {
                let mut b = WriteBatch::new();
                for &(kind, k1, k2) in entries {
                    match kind {
                        0 => {
                            let v = self.put_value(k2 as u16);
                            b.put(key(k1), &v);
                            self.model.insert(key(k1), v);
                            self.note_put(&key(k1));
                        }
                        1 => {
                            b.delete(key(k1));
                            self.model.remove(&key(k1));
                            self.note_deleted(&key(k1));
                        }
                        2 => {
                            let operand = self.operand(k2);
                            b.merge(key(k1), &operand);
                            self.model_merge(&key(k1), &operand);
                        }
                        _ => {
                            let (lo, hi) = (k1.min(k2), k1.max(k2).saturating_add(1));
                            b.delete_range(key(lo), key(hi));
                            model_delete_range(&mut self.model, &key(lo), &key(hi));
                            self.note_range_deleted(&key(lo), &key(hi));
                        }
                    }
                }
                self.db().write(b).unwrap();
            }
            Op::Get(k) => {
                let got = self.db().get(key(*k)).unwrap();
                assert_eq!(
                    got.as_deref(),
                    self.model.get(&key(*k)).map(|v| &v[..]),
                    "get {k}"
                );
            }
            Op::TakeSnapshot => {
                if self.snapshots.len() < 4 {
                    self.snapshots
                        .push((self.db().snapshot(), self.model.clone()));
                }
            }
            Op::Release(i) => {
                if !self.snapshots.is_empty() {
                    let i = i % self.snapshots.len();
                    self.snapshots.remove(i);
                }
            }
            Op::GetAt(i, k) => {
                let (opts, m) = self.snapshot(Some(*i));
                let got = self.db().get_opt(key(*k), &opts).unwrap();
                assert_eq!(
                    got.as_deref(),
                    m.get(&key(*k)).map(|v| &v[..]),
                    "get {k} at snapshot"
                );
            }
            Op::Scan {
                snap,
                lo,
                hi,
                reverse,
            } => {
                let (mut opts, m) = self.snapshot(*snap);
                opts.lower_bound = lo.map(|k| Bytes::from(key(k)));
                opts.upper_bound = hi.map(|k| Bytes::from(key(k)));
                let lo_b = lo.map_or(Bound::Unbounded, |k| Bound::Included(key(k)));
                let hi_b = hi.map_or(Bound::Unbounded, |k| Bound::Excluded(key(k)));
                let expect = if matches!((lo, hi), (Some(a), Some(b)) if a >= b) {
                    Vec::new()
                } else {
                    model_range(m, lo_b, hi_b)
                };
                let mut got = if *reverse {
                    scan_rev(self.db(), &opts)
                } else {
                    scan(self.db(), &opts)
                };
                if *reverse {
                    got.reverse();
                }
                assert_eq!(got, expect, "scan {lo:?}..{hi:?} reverse={reverse}");
            }
            Op::Walk { snap, start, steps } => {
                let (opts, m) = self.snapshot(*snap);
                let entries: Vec<(&Vec<u8>, &Vec<u8>)> = m.iter().collect();
                let mut it = self.db().raw_iterator(&opts).unwrap();
                it.seek(key(*start)).unwrap();
                let mut pos = Some(entries.partition_point(|(k, _)| **k < key(*start)))
                    .filter(|&p| p < entries.len());
                for &forward in steps {
                    match pos {
                        Some(p) => {
                            assert_eq!(it.key(), Some(&entries[p].0[..]));
                            assert_eq!(it.value(), Some(&entries[p].1[..]));
                        }
                        None => assert!(!it.valid()),
                    }
                    if forward {
                        it.next().unwrap();
                        pos = pos.and_then(|p| (p + 1 < entries.len()).then_some(p + 1));
                    } else {
                        it.prev().unwrap();
                        pos = pos.and_then(|p| p.checked_sub(1));
                    }
                }
                match pos {
                    Some(p) => assert_eq!(it.key(), Some(&entries[p].0[..])),
                    None => assert!(!it.valid()),
                }
            }
            Op::Flush => self.db().flush().unwrap(),
            Op::Compact(a, b) => {
                let (a, b) = (a.map(key), b.map(key));
                self.db().compact_range(a.as_deref(), b.as_deref()).unwrap();
            }
            Op::Reopen => {
                self.snapshots.clear();
                self.db.take().unwrap().close().unwrap();
                self.db = Some(
                    Db::open("/db", options(self.fs.clone(), self.variant, self.strategy)).unwrap(),
                );
            }
            Op::Switch(i) => {
                let all = all_strategies();
                let to = all[*i as usize % all.len()].clone();
                self.db()
                    .default_table()
                    .set_compaction_strategy(to)
                    .unwrap();
            }
        }
    }
}

/// Runs `ops` under option set `variant` and strategy `strategy`, then
/// checks the end state, the snapshots, a full compaction and a reopen.
fn run_model(ops: &[Op], variant: u8, strategy: usize) -> Result<(), TestCaseError> {
    let mut h = Harness::new(variant, strategy);
    for op in ops {
        h.apply(op);
    }
    assert_equal(h.db(), &h.model, "end");
    for (snap, m) in &h.snapshots {
        let got = scan(h.db(), &ReadOptions::at(snap));
        prop_assert_eq!(got, common::model_pairs(m));
    }
    h.db().compact_range(None, None).unwrap();
    assert_equal(h.db(), &h.model, "after a full compaction");
    for (k, v) in &h.model {
        let got = h.db().get(k).unwrap();
        prop_assert_eq!(got.as_deref(), Some(&v[..]));
    }
    // Every single delete kept to its contract.
    prop_assert_eq!(h.db().stats().merges.single_delete_mismatches, 0);
    h.snapshots.clear();
    h.db.take().unwrap().close().unwrap();
    let db = Db::open("/db", options(h.fs.clone(), variant, strategy)).unwrap();
    assert_equal(&db, &h.model, "after reopen");
    Ok(())
}

/// One model proptest per strategy (an index into `all_strategies()`).
macro_rules! model_under {
    ($($name:ident: $strategy:expr, $cases:expr;)*) => {
        $(
            proptest! {
                #![proptest_config(ProptestConfig {
                    cases: cases($cases),
                    ..ProptestConfig::default()
                })]
                #[test]
                fn $name(ops in proptest::collection::vec(op(), 1..300), variant in 0u8..6) {
                    run_model(&ops, variant, $strategy)?;
                }
            }
        )*
    };
}

model_under! {
    engine_matches_btreemap_leveled: 0, 96;
    engine_matches_btreemap_major_only: 1, 64;
    engine_matches_btreemap_two_tier_write_only: 2, 64;
    engine_matches_btreemap_two_tier_write_mostly: 3, 64;
    engine_matches_btreemap_two_tier_read_mostly_few_updates: 4, 64;
    engine_matches_btreemap_two_tier_read_mostly_many_updates: 5, 64;
    engine_matches_btreemap_adaptive: 6, 96;
}

/// Enough data that levels below L1 fill, checked level by level.
#[test]
fn every_level_is_reached() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", small_options(fs.clone())).unwrap();
    let mut model = Model::new();
    for round in 0..12u64 {
        for i in 0..400u64 {
            let k = format!("key{:05}", (i * 7919 + round * 13) % 3000).into_bytes();
            let v = value(round * 1000 + i, 200);
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        db.flush().unwrap();
    }
    assert_equal(&db, &model, "before the manual compaction");
    db.compact_range(None, None).unwrap();
    let stats = db.stats();
    // Compactions wrote or moved data into every level below L0. (Which
    // of the two depends on when background compactions ran: under Wine
    // every compaction into L3 was a trivial move.)
    let written: Vec<usize> = stats.tables[0]
        .levels
        .iter()
        .filter(|l| l.write_bytes > 0 || l.moved_bytes > 0)
        .map(|l| l.level.unwrap())
        .collect();
    assert_eq!(written, [0, 1, 2, 3, 4], "\n{stats}");
    // After compact_range everything sits in the last level.
    let populated: Vec<usize> = stats.tables[0]
        .levels
        .iter()
        .filter(|l| l.files > 0)
        .map(|l| l.level.unwrap())
        .collect();
    assert_eq!(populated, [4], "\n{stats}");
    assert_equal(&db, &model, "many levels");
}
