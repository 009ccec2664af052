//! Metamorphic test, after Pebble's `metamorphic` package: one generated
//! sequence of operations — writes, batches, range deletions, snapshots,
//! point reads, scans, cursor walks, flushes, manual compactions, clean
//! reopens and power cuts — runs on the engine under several option sets
//! (block size, restart interval, memtable size, compression, filters,
//! level shapes, background jobs, compaction order, and every compaction
//! strategy: leveled, major-only, two-tier with striped majors and with
//! merged flushes, adaptive) and on a `BTreeMap`
//! model, in lockstep. Every read must return the same thing everywhere:
//! options change how data is laid out, never what a read returns.
//!
//! A power cut syncs the WAL first (`flush_wal(true)`), so every
//! acknowledged write must survive whatever flushes and compactions were
//! running, and every run stays comparable (Pebble syncs its writes for the
//! same reason). Snapshots do not survive a reopen.
//!
//! `PROPTEST_CASES` sets the number of sequences (default 24).

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use lithify::vfs::{FileSystem, MemFs};
use lithify::{
    Bytes, CompactionPri, CompactionStrategy, Compression, Db, Options, ReadOptions, Snapshot,
    WriteBatch,
};
use proptest::prelude::*;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const KEYS: u8 = 120;
const SNAPSHOT_SLOTS: usize = 4;

#[derive(Debug, Clone)]
enum Op {
    Put(u8, u16),
    Delete(u8),
    DeleteRange(u8, u8),
    /// (kind: 0 put, 1 delete, 2 range deletion; key; length or end key)
    Batch(Vec<(u8, u8, u16)>),
    Get(u8),
    NewSnapshot,
    ReleaseSnapshot(usize),
    GetAt(usize, u8),
    Scan {
        snap: Option<usize>,
        lo: Option<u8>,
        hi: Option<u8>,
        reverse: bool,
    },
    Walk {
        snap: Option<usize>,
        start: Option<u8>,
        steps: Vec<bool>,
    },
    Flush,
    Compact(Option<u8>, Option<u8>),
    Reopen,
    PowerCut,
}

/// What an operation returned.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Out {
    Done,
    Value(Option<Vec<u8>>),
    Entries(Vec<(Vec<u8>, Vec<u8>)>),
    Positions(Vec<Option<Vec<u8>>>),
}

fn key(k: u8) -> Vec<u8> {
    format!("key{k:03}").into_bytes()
}

fn value(counter: u64, len: u16) -> Vec<u8> {
    let mut v = format!("v{counter}-").into_bytes();
    v.resize(v.len() + len as usize, b'a' + (counter % 26) as u8);
    v
}

fn op() -> impl Strategy<Value = Op> {
    let k = || 0..KEYS;
    let snap = || proptest::option::of(0..SNAPSHOT_SLOTS);
    prop_oneof![
        30 => (k(), 0u16..600).prop_map(|(k, l)| Op::Put(k, l)),
        6 => k().prop_map(Op::Delete),
        3 => (k(), k()).prop_map(|(a, b)| Op::DeleteRange(a.min(b), a.max(b).saturating_add(1))),
        5 => proptest::collection::vec((0u8..3, k(), 0u16..300), 1..8).prop_map(Op::Batch),
        8 => k().prop_map(Op::Get),
        2 => Just(Op::NewSnapshot),
        1 => (0..SNAPSHOT_SLOTS).prop_map(Op::ReleaseSnapshot),
        4 => (0..SNAPSHOT_SLOTS, k()).prop_map(|(s, k)| Op::GetAt(s, k)),
        3 => (snap(), proptest::option::of(k()), proptest::option::of(k()), any::<bool>())
            .prop_map(|(snap, lo, hi, reverse)| Op::Scan { snap, lo, hi, reverse }),
        3 => (snap(), proptest::option::of(k()), proptest::collection::vec(any::<bool>(), 1..16))
            .prop_map(|(snap, start, steps)| Op::Walk { snap, start, steps }),
        3 => Just(Op::Flush),
        2 => (proptest::option::of(k()), proptest::option::of(k())).prop_map(|(a, b)| Op::Compact(a, b)),
        1 => Just(Op::Reopen),
        1 => Just(Op::PowerCut),
    ]
}

/// The option sets every sequence runs under.
fn option_sets() -> Vec<(&'static str, Options)> {
    let small = common::small_levels();
    vec![
        ("small levels, 4 KiB blocks", small.clone()),
        (
            "128-byte blocks, restart every key, zstd, no filters",
            small
                .clone()
                .block_size(128)
                .block_restart_interval(1)
                .compression(Compression::Zstd { level: 1 })
                .bloom_bits_per_key(0.0)
                .memtable_whole_key_filtering(false),
        ),
        (
            "4 MiB memtable, 1 KiB blocks, subcompactions",
            small
                .clone()
                .write_buffer_size(4 << 20)
                .block_size(1024)
                .block_restart_interval(4)
                .max_subcompactions(3)
                .max_background_jobs(4),
        ),
        (
            "3 static levels, round robin, one background thread",
            small
                .clone()
                .num_levels(3)
                .level_compaction_dynamic_level_bytes(false)
                .compaction_pri(CompactionPri::RoundRobin)
                .block_size(256)
                .block_restart_interval(2)
                .max_background_jobs(1),
        ),
        (
            "Memtable + L1 (major-only)",
            with_strategy(small.clone(), "major-only"),
        ),
        (
            "Memtable + L0 + L1, striped progressive majors",
            with_strategy(small.clone(), "two-tier:write-mostly"),
        ),
        (
            "Memtable + L0 + L1, each flush merged with the previous L0 table",
            with_strategy(small.clone(), "two-tier:read-mostly-few"),
        ),
        ("Adaptive", with_strategy(small.clone(), "adaptive")),
        (
            "manual compactions only, zstd level 3, tiny files",
            cache_less(small)
                .disable_auto_compactions(true)
                .compression(Compression::Zstd { level: 3 })
                .target_file_size_base(4 << 10),
        ),
    ]
}

/// `o` with the compaction strategy named `name` (its `parse` form).
fn with_strategy(o: Options, name: &str) -> Options {
    o.compaction_strategy(
        CompactionStrategy::parse(name).unwrap_or_else(|| panic!("{name} is a strategy name")),
    )
}

/// `o` with no block cache, so every read goes to the files.
fn cache_less(o: Options) -> Options {
    o.block_cache_size(0)
}

/// Snapshot slots: filled in order, the oldest replaced when all are
/// taken; the same choice on every target since it depends only on the
/// slots.
fn free_slot<T>(slots: &[Option<T>]) -> usize {
    slots.iter().position(Option::is_none).unwrap_or(0)
}

trait Target {
    fn apply(&mut self, op: &Op, counter: &mut u64) -> Out;
}

struct ModelTarget {
    now: Model,
    snapshots: Vec<Option<Model>>,
}

fn range_of(m: &Model, lo: Option<u8>, hi: Option<u8>) -> Vec<(Vec<u8>, Vec<u8>)> {
    if matches!((lo, hi), (Some(a), Some(b)) if a >= b) {
        return Vec::new();
    }
    let lo = lo.map_or(Bound::Unbounded, |k| Bound::Included(key(k)));
    let hi = hi.map_or(Bound::Unbounded, |k| Bound::Excluded(key(k)));
    m.range((lo, hi))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn delete_range(m: &mut Model, a: &[u8], b: &[u8]) {
    let doomed: Vec<_> = m
        .range(a.to_vec()..b.to_vec())
        .map(|(k, _)| k.clone())
        .collect();
    for k in doomed {
        m.remove(&k);
    }
}

impl Target for ModelTarget {
    fn apply(&mut self, op: &Op, counter: &mut u64) -> Out {
        let read = |s: &Self, snap: Option<usize>| -> Model {
            snap.and_then(|i| s.snapshots[i].clone())
                .unwrap_or_else(|| s.now.clone())
        };
        match op {
            Op::Put(k, len) => {
                *counter += 1;
                self.now.insert(key(*k), value(*counter, *len));
            }
            Op::Delete(k) => {
                self.now.remove(&key(*k));
            }
            Op::DeleteRange(a, b) => delete_range(&mut self.now, &key(*a), &key(*b)),
            Op::Batch(entries) => {
                for &(kind, k, x) in entries {
                    match kind {
                        0 => {
                            *counter += 1;
                            self.now.insert(key(k), value(*counter, x));
                        }
                        1 => {
                            self.now.remove(&key(k));
                        }
                        _ => {
                            let end = (x % u16::from(KEYS)) as u8;
                            let (a, b) = (k.min(end), k.max(end).saturating_add(1));
                            delete_range(&mut self.now, &key(a), &key(b));
                        }
                    }
                }
            }
            Op::Get(k) => return Out::Value(self.now.get(&key(*k)).cloned()),
            Op::NewSnapshot => {
                let i = free_slot(&self.snapshots);
                self.snapshots[i] = Some(self.now.clone());
            }
            Op::ReleaseSnapshot(i) => self.snapshots[*i] = None,
            Op::GetAt(i, k) => return Out::Value(read(self, Some(*i)).get(&key(*k)).cloned()),
            Op::Scan {
                snap,
                lo,
                hi,
                reverse,
            } => {
                let mut entries = range_of(&read(self, *snap), *lo, *hi);
                if *reverse {
                    entries.reverse();
                }
                return Out::Entries(entries);
            }
            Op::Walk { snap, start, steps } => {
                let m = read(self, *snap);
                let keys: Vec<&Vec<u8>> = m.keys().collect();
                let mut pos = match start {
                    Some(s) => {
                        let p = keys.partition_point(|k| **k < key(*s));
                        (p < keys.len()).then_some(p)
                    }
                    None => keys.len().checked_sub(1),
                };
                let mut out = vec![pos.map(|p| keys[p].clone())];
                for &forward in steps {
                    pos = pos.and_then(|p| {
                        if forward {
                            (p + 1 < keys.len()).then_some(p + 1)
                        } else {
                            p.checked_sub(1)
                        }
                    });
                    out.push(pos.map(|p| keys[p].clone()));
                }
                return Out::Positions(out);
            }
            Op::Flush | Op::Compact(..) => {}
            Op::Reopen | Op::PowerCut => self.snapshots.iter_mut().for_each(|s| *s = None),
        }
        Out::Done
    }
}

struct EngineTarget {
    name: &'static str,
    options: Options,
    fs: Arc<MemFs>,
    db: Option<Db>,
    snapshots: Vec<Option<Snapshot>>,
}

impl EngineTarget {
    fn new(name: &'static str, options: Options) -> Self {
        let fs = Arc::new(MemFs::new());
        let mut t = EngineTarget {
            name,
            options,
            fs,
            db: None,
            snapshots: vec![None; SNAPSHOT_SLOTS],
        };
        t.open();
        t
    }

    fn open(&mut self) {
        let fs: Arc<dyn FileSystem> = self.fs.clone();
        let opts = self.options.clone().fs(fs);
        self.db = Some(
            Db::open("/db", opts)
                .unwrap_or_else(|e| panic!("[{}] the database does not open: {e}", self.name)),
        );
    }

    fn db(&self) -> &Db {
        self.db.as_ref().expect("open")
    }

    fn read_options(&self, snap: Option<usize>) -> ReadOptions {
        match snap.and_then(|i| self.snapshots[i].as_ref()) {
            Some(s) => ReadOptions::at(s),
            None => ReadOptions::default(),
        }
    }

    fn check<T>(&self, what: &str, r: lithify::Result<T>) -> T {
        r.unwrap_or_else(|e| panic!("[{}] {what} failed: {e}", self.name))
    }
}

impl Target for EngineTarget {
    fn apply(&mut self, op: &Op, counter: &mut u64) -> Out {
        match op {
            Op::Put(k, len) => {
                *counter += 1;
                let r = self.db().put(key(*k), value(*counter, *len));
                self.check("put", r.map_err(Into::into));
            }
            Op::Delete(k) => {
                let r = self.db().delete(key(*k));
                self.check("delete", r.map_err(Into::into));
            }
            Op::DeleteRange(a, b) => {
                let r = self.db().delete_range(key(*a), key(*b));
                self.check("delete_range", r.map_err(Into::into));
            }
            Op::Batch(entries) => {
                let mut b = WriteBatch::new();
                for &(kind, k, x) in entries {
                    match kind {
                        0 => {
                            *counter += 1;
                            b.put(key(k), value(*counter, x));
                        }
                        1 => b.delete(key(k)),
                        _ => {
                            let end = (x % u16::from(KEYS)) as u8;
                            let (a, c) = (k.min(end), k.max(end).saturating_add(1));
                            b.delete_range(key(a), key(c));
                        }
                    }
                }
                let r = self.db().write(b);
                self.check("write", r.map_err(Into::into));
            }
            Op::Get(k) => {
                let r = self.db().get(key(*k));
                let v = self.check("get", r.map_err(Into::into));
                return Out::Value(v.map(|b| b.to_vec()));
            }
            Op::NewSnapshot => {
                let i = free_slot(&self.snapshots);
                self.snapshots[i] = Some(self.db().snapshot());
            }
            Op::ReleaseSnapshot(i) => self.snapshots[*i] = None,
            Op::GetAt(i, k) => {
                let r = self.db().get_opt(key(*k), &self.read_options(Some(*i)));
                let v = self.check("get at a snapshot", r.map_err(Into::into));
                return Out::Value(v.map(|b| b.to_vec()));
            }
            Op::Scan {
                snap,
                lo,
                hi,
                reverse,
            } => {
                let mut opts = self.read_options(*snap);
                opts.lower_bound = lo.map(|k| Bytes::from(key(k)));
                opts.upper_bound = hi.map(|k| Bytes::from(key(k)));
                let iter = self.db().iter_opt(&opts);
                let items: Vec<_> = if *reverse {
                    iter.rev().collect()
                } else {
                    iter.collect()
                };
                let entries = items
                    .into_iter()
                    .map(|kv| {
                        let (k, v) = self.check("scan", kv.map_err(Into::into));
                        (k.to_vec(), v.to_vec())
                    })
                    .collect();
                return Out::Entries(entries);
            }
            Op::Walk { snap, start, steps } => {
                let opts = self.read_options(*snap);
                let mut it = self.check(
                    "raw_iterator",
                    self.db().raw_iterator(&opts).map_err(Into::into),
                );
                let r = match start {
                    Some(s) => it.seek(key(*s)),
                    None => it.seek_to_last(),
                };
                self.check("seek", r.map_err(Into::into));
                let mut out = vec![it.key().map(<[u8]>::to_vec)];
                for &forward in steps {
                    let r = if forward { it.next() } else { it.prev() };
                    self.check("step", r.map_err(Into::into));
                    out.push(it.key().map(<[u8]>::to_vec));
                }
                return Out::Positions(out);
            }
            Op::Flush => {
                let r = self.db().flush();
                self.check("flush", r.map_err(Into::into));
            }
            Op::Compact(a, b) => {
                let (a, b) = (a.map(key), b.map(key));
                let r = self.db().compact_range(a.as_deref(), b.as_deref());
                self.check("compact_range", r.map_err(Into::into));
            }
            Op::Reopen => {
                self.snapshots.iter_mut().for_each(|s| *s = None);
                let db = self.db.take().expect("open");
                self.check("close", db.close().map_err(Into::into));
                self.open();
            }
            Op::PowerCut => {
                self.snapshots.iter_mut().for_each(|s| *s = None);
                let r = self.db().flush_wal(true);
                self.check("flush_wal", r.map_err(Into::into));
                // Power fails now, while flushes and compactions may be
                // writing; the old instance then goes away.
                let crashed = self.fs.crash_clone();
                drop(self.db.take());
                self.fs = Arc::new(crashed);
                self.open();
            }
        }
        Out::Done
    }
}

fn run(ops: &[Op]) -> Result<(), TestCaseError> {
    let mut model = ModelTarget {
        now: Model::new(),
        snapshots: vec![None; SNAPSHOT_SLOTS],
    };
    let mut engines: Vec<EngineTarget> = option_sets()
        .into_iter()
        .map(|(name, o)| EngineTarget::new(name, o))
        .collect();
    // Puts so far: every target numbers its values from the same count.
    let mut counter = 0;
    for (i, op) in ops.iter().enumerate() {
        let start = counter;
        let expected = model.apply(op, &mut counter);
        for e in &mut engines {
            let mut c = start;
            let got = e.apply(op, &mut c);
            prop_assert_eq!(
                &got,
                &expected,
                "operation {} ({:?}) under options \"{}\" differs from the model",
                i,
                op,
                e.name
            );
        }
    }
    // In the end every run holds the model's data, after a full compaction
    // too.
    let all = Op::Scan {
        snap: None,
        lo: None,
        hi: None,
        reverse: false,
    };
    let expected = model.apply(&all, &mut 0);
    for e in &mut engines {
        prop_assert_eq!(
            &e.apply(&all, &mut 0),
            &expected,
            "final scan under \"{}\"",
            e.name
        );
        e.apply(&Op::Compact(None, None), &mut 0);
        prop_assert_eq!(
            &e.apply(&all, &mut 0),
            &expected,
            "final scan after a full compaction under \"{}\"",
            e.name
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(24),
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_option_set_reads_like_the_model(ops in proptest::collection::vec(op(), 1..250)) {
        run(&ops)?;
    }
}

/// A sequence that reaches every level shape: enough data for several
/// flushes and compactions, reopens and power cuts between them.
#[test]
fn a_long_fixed_sequence_agrees_everywhere() {
    let mut ops = Vec::new();
    for round in 0..6u16 {
        for i in 0..150u16 {
            let k = ((i * 37 + round * 11) % u16::from(KEYS)) as u8;
            ops.push(Op::Put(k, 200 + (i % 7) * 50));
            if i % 25 == 0 {
                ops.push(Op::NewSnapshot);
                ops.push(Op::DeleteRange(k, k.saturating_add(5)));
            }
            if i % 40 == 0 {
                ops.push(Op::GetAt(i as usize % SNAPSHOT_SLOTS, k));
                ops.push(Op::Walk {
                    snap: Some(round as usize % SNAPSHOT_SLOTS),
                    start: Some(k),
                    steps: vec![true, true, false, true, false, false, false],
                });
            }
        }
        ops.push(Op::Scan {
            snap: None,
            lo: Some(10),
            hi: Some(90),
            reverse: round % 2 == 0,
        });
        ops.push(match round % 3 {
            0 => Op::Flush,
            1 => Op::Reopen,
            _ => Op::PowerCut,
        });
    }
    run(&ops).unwrap();
}
