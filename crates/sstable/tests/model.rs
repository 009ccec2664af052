//! Model-based tests: tables built from random sorted sets, under random
//! block sizes, restart intervals, compression, filter and cache settings,
//! must answer every read exactly as a `BTreeMap` does.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use lithify_base::InternalIterator;
use lithify_sstable::{BlockCache, Compression, SstOptions};
use lithify_vfs::MemFs;
use proptest::prelude::*;

use common::{build, open, scan_backward, scan_forward};

/// Keys over a small alphabet, so neighbours share prefixes.
fn key() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(
        prop_oneof![Just(b'a'), Just(b'b'), Just(b'c'), any::<u8>()],
        0..16,
    )
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => proptest::collection::vec(any::<u8>(), 0..24),
        // Repetitive values compress; long ones span blocks.
        1 => (any::<u8>(), 0usize..600).prop_map(|(b, n)| vec![b; n]),
    ]
}

#[derive(Debug, Clone)]
struct Config {
    block_size: usize,
    restart_interval: usize,
    zstd: bool,
    bloom_bits: f64,
    cache: Option<usize>,
}

fn config() -> impl Strategy<Value = Config> {
    (
        prop_oneof![16usize..200, 200usize..5000],
        1usize..24,
        any::<bool>(),
        prop_oneof![Just(0.0), Just(10.0), 1.0f64..20.0],
        prop_oneof![Just(None), Just(Some(1usize << 20)), Just(Some(600usize))],
    )
        .prop_map(
            |(block_size, restart_interval, zstd, bloom_bits, cache)| Config {
                block_size,
                restart_interval,
                zstd,
                bloom_bits,
                cache,
            },
        )
}

fn options(c: &Config) -> SstOptions {
    SstOptions::default()
        .block_size(c.block_size)
        .block_restart_interval(c.restart_interval)
        .compression(if c.zstd {
            Compression::Zstd { level: 1 }
        } else {
            Compression::None
        })
        .bloom_bits_per_key(c.bloom_bits)
        .creation_time(Some(0))
}

#[derive(Debug, Clone)]
enum Op {
    SeekGe(Vec<u8>),
    SeekLt(Vec<u8>),
    First,
    Last,
    Next,
    Prev,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => key().prop_map(Op::SeekGe),
        1 => key().prop_map(Op::SeekLt),
        1 => Just(Op::First),
        1 => Just(Op::Last),
        4 => Just(Op::Next),
        4 => Just(Op::Prev),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn table_agrees_with_btreemap(
        model in proptest::collection::btree_map(key(), value(), 0..250),
        cfg in config(),
        probes in proptest::collection::vec(key(), 0..40),
    ) {
        let fs = MemFs::new();
        let opts = options(&cfg);
        let entries: Vec<(Vec<u8>, Vec<u8>)> = model.clone().into_iter().collect();
        let built = build(&fs, "/t.sst", &opts, &entries, &[]);
        prop_assert_eq!(built.properties.num_entries, entries.len() as u64);
        let cache = cfg.cache.map(|c| Arc::new(BlockCache::with_shard_bits(c, 1)));
        let table = open(&fs, "/t.sst", &opts, cache).unwrap();
        prop_assert_eq!(table.properties(), &built.properties);

        // Point lookups of every present key, and of probe keys.
        for (k, v) in &model {
            prop_assert!(table.may_contain(k));
            let got = table.get(k).unwrap();
            prop_assert_eq!(got.as_deref(), Some(&v[..]));
        }
        for p in &probes {
            let got = table.get(p).unwrap();
            prop_assert_eq!(got.as_deref(), model.get(p).map(|v| &v[..]));
        }

        // Full scans both ways.
        let mut it = table.iter();
        prop_assert_eq!(&scan_forward(&mut it).unwrap(), &entries);
        prop_assert_eq!(&scan_backward(&mut it).unwrap(), &entries);

        // Seeks.
        for p in &probes {
            it.seek_ge(p).unwrap();
            let want = model.range(p.clone()..).next();
            prop_assert_eq!(it.valid(), want.is_some());
            if let Some((k, v)) = want {
                prop_assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
            }
            it.seek_lt(p).unwrap();
            let want = model.range(..p.clone()).next_back();
            prop_assert_eq!(it.valid(), want.is_some());
            if let Some((k, v)) = want {
                prop_assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
            }
        }

        // Offsets grow with the key and stay inside the data blocks.
        let mut last = 0;
        for k in model.keys() {
            let off = table.approximate_offset_of(k).unwrap();
            prop_assert!(off >= last && off <= built.properties.data_size);
            last = off;
        }
        prop_assert_eq!(
            table.approximate_offset_of(b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff").unwrap(),
            built.properties.data_size
        );
    }

    #[test]
    fn random_navigation_agrees_with_btreemap(
        model in proptest::collection::btree_map(key(), value(), 0..120),
        cfg in config(),
        ops in proptest::collection::vec(op(), 1..60),
    ) {
        let fs = MemFs::new();
        let opts = options(&cfg);
        let entries: Vec<(Vec<u8>, Vec<u8>)> = model.into_iter().collect();
        build(&fs, "/t.sst", &opts, &entries, &[]);
        let cache = cfg.cache.map(|c| Arc::new(BlockCache::with_shard_bits(c, 1)));
        let table = open(&fs, "/t.sst", &opts, cache).unwrap();
        let mut it = table.iter();
        // The model cursor: an index into `entries`, or None.
        let mut pos: Option<usize> = None;
        for op in &ops {
            match op {
                Op::SeekGe(t) => {
                    it.seek_ge(t).unwrap();
                    let i = entries.partition_point(|(k, _)| k < t);
                    pos = (i < entries.len()).then_some(i);
                }
                Op::SeekLt(t) => {
                    it.seek_lt(t).unwrap();
                    pos = entries.partition_point(|(k, _)| k < t).checked_sub(1);
                }
                Op::First => {
                    it.first().unwrap();
                    pos = (!entries.is_empty()).then_some(0);
                }
                Op::Last => {
                    it.last().unwrap();
                    pos = entries.len().checked_sub(1);
                }
                Op::Next => {
                    it.next().unwrap();
                    pos = pos.map(|p| p + 1).filter(|&p| p < entries.len());
                }
                Op::Prev => {
                    it.prev().unwrap();
                    pos = pos.and_then(|p| p.checked_sub(1));
                }
            }
            prop_assert_eq!(it.valid(), pos.is_some(), "after {:?}", op);
            if let Some(p) = pos {
                prop_assert_eq!(it.key(), &entries[p].0[..]);
                prop_assert_eq!(&it.value_bytes()[..], &entries[p].1[..]);
            }
        }
    }

    #[test]
    fn range_tombstones_round_trip_sorted(
        tombstones in proptest::collection::vec((key(), key()), 0..40),
        entries in proptest::collection::btree_map(key(), value(), 0..20),
    ) {
        let fs = MemFs::new();
        let opts = SstOptions::default()
            .creation_time(Some(0));
        let entries: Vec<(Vec<u8>, Vec<u8>)> = entries.into_iter().collect();
        let built = build(&fs, "/t.sst", &opts, &entries, &tombstones);
        prop_assert_eq!(built.properties.num_range_deletions, tombstones.len() as u64);
        let table = open(&fs, "/t.sst", &opts, None).unwrap();
        // Sorted by start; equal starts keep insertion order (stable sort).
        let mut want = tombstones.clone();
        want.sort_by(|a, b| a.0.cmp(&b.0));
        let got: Vec<(Vec<u8>, Vec<u8>)> = table
            .range_tombstones()
            .iter()
            .map(|t| (t.start.to_vec(), t.end.to_vec()))
            .collect();
        prop_assert_eq!(got, want);
        // Tombstones never show up among point entries.
        let mut it = table.iter();
        prop_assert_eq!(scan_forward(&mut it).unwrap(), entries);
    }
}

#[test]
fn out_of_order_keys_are_refused_and_the_builder_continues() {
    use lithify_sstable::{Error, SstBuilder};
    use lithify_vfs::FileSystem;
    let fs = MemFs::new();
    let opts = SstOptions::default();
    let file = fs.create(std::path::Path::new("/o.sst")).unwrap();
    let mut b = SstBuilder::new(file, "/o.sst", &opts).unwrap();
    b.add(b"b", b"1").unwrap();
    assert!(matches!(b.add(b"a", b"0"), Err(Error::OutOfOrder { .. })));
    assert!(matches!(b.add(b"b", b"dup"), Err(Error::OutOfOrder { .. })));
    b.add(b"c", b"2").unwrap();
    let built = b.finish().unwrap();
    assert_eq!(built.properties.num_entries, 2);
    let table = open(&fs, "/o.sst", &opts, None).unwrap();
    let mut it = table.iter();
    let model: BTreeMap<Vec<u8>, Vec<u8>> = [
        (b"b".to_vec(), b"1".to_vec()),
        (b"c".to_vec(), b"2".to_vec()),
    ]
    .into();
    assert_eq!(
        scan_forward(&mut it).unwrap(),
        model.into_iter().collect::<Vec<_>>()
    );
}

#[test]
fn empty_table_reads_as_empty() {
    let fs = MemFs::new();
    let opts = SstOptions::default();
    let built = build(&fs, "/e.sst", &opts, &[], &[]);
    assert_eq!(built.properties.num_entries, 0);
    let table = open(&fs, "/e.sst", &opts, None).unwrap();
    assert!(table.get(b"x").unwrap().is_none());
    assert!(!table.may_contain(b"x"));
    let mut it = table.iter();
    assert!(scan_forward(&mut it).unwrap().is_empty());
    it.seek_lt(b"z").unwrap();
    assert!(!it.valid());
    assert_eq!(table.approximate_offset_of(b"a").unwrap(), 0);
}
