//! Tables of internal keys, as the engine writes and reads them: the filter
//! on user keys, the point-lookup path at a snapshot, range tombstones,
//! seqno and deletion properties, and merging table iterators.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use lithify_base::key::MAX_SEQNO;
use lithify_base::{
    Comparator, InternalIterator, InternalKey, InternalKeyComparator, MergingIterator,
    ParsedInternalKey, ValueKind,
};
use lithify_sstable::{BlockCache, Compression, InternalKeys, KeySchema, ReadStats, SstOptions};
use lithify_vfs::MemFs;
use proptest::prelude::*;

use common::{build, open, scan_forward};

/// The model: user key -> versions (seqno -> (kind, value)).
type Model = BTreeMap<Vec<u8>, BTreeMap<u64, (ValueKind, Vec<u8>)>>;

fn model() -> impl Strategy<Value = Model> {
    proptest::collection::btree_map(
        proptest::collection::vec(b'a'..b'e', 1..6),
        proptest::collection::btree_map(
            1u64..1000,
            (
                prop_oneof![3 => Just(ValueKind::Put), 1 => Just(ValueKind::Delete)],
                proptest::collection::vec(any::<u8>(), 0..30),
            ),
            1..5,
        ),
        0..60,
    )
}

/// Entries in internal-key order: user key ascending, seqno descending.
fn entries(model: &Model) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    for (user, versions) in model {
        for (&seq, (kind, value)) in versions.iter().rev() {
            let value = if *kind == ValueKind::Delete {
                Vec::new()
            } else {
                value.clone()
            };
            out.push((InternalKey::new(user, seq, *kind).encoded().to_vec(), value));
        }
    }
    out
}

fn opts(block_size: usize, zstd: bool) -> SstOptions<InternalKeyComparator> {
    SstOptions::for_internal_keys(InternalKeyComparator::bytewise())
        .block_size(block_size)
        .block_restart_interval(3)
        .compression(if zstd {
            Compression::zstd()
        } else {
            Compression::None
        })
        .creation_time(Some(1))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn point_lookups_at_snapshots_agree_with_the_model(
        model in model(),
        block_size in 24usize..400,
        zstd: bool,
        probes in proptest::collection::vec((proptest::collection::vec(b'a'..b'f', 1..6), 0u64..1100), 1..40),
    ) {
        let fs = MemFs::new();
        let opts = opts(block_size, zstd);
        let entries = entries(&model);
        let built = build(&fs, "/i.sst", &opts, &entries, &[]);
        let deletions = model.values().flat_map(|v| v.values()).filter(|(k, _)| *k == ValueKind::Delete).count();
        prop_assert_eq!(built.properties.num_deletions, deletions as u64);
        let seqs: Vec<u64> = model.values().flat_map(|v| v.keys().copied()).collect();
        prop_assert_eq!(built.properties.min_seqno, seqs.iter().copied().min().unwrap_or(0));
        prop_assert_eq!(built.properties.max_seqno, seqs.iter().copied().max().unwrap_or(0));
        prop_assert_eq!(&built.properties.key_schema, InternalKeys::NAME);

        let cache = Arc::new(BlockCache::with_shard_bits(64 << 10, 2));
        let table = open(&fs, "/i.sst", &opts, Some(cache)).unwrap();
        let mut stats = ReadStats::default();
        let mut key_buf = Vec::new();
        for (user, snapshot) in &probes {
            let seek = InternalKey::seek(user, *snapshot);
            let found = table
                .point_lookup(Some(user), seek.encoded(), &mut key_buf, &mut stats)
                .unwrap();
            // The newest version visible at the snapshot, if any.
            let want = model
                .get(user)
                .and_then(|v| v.range(..=*snapshot).next_back())
                .map(|(&seq, (kind, value))| (seq, *kind, value.clone()));
            let got = found.and_then(|value| {
                let parsed = ParsedInternalKey::parse(&key_buf).unwrap();
                (parsed.user_key == &user[..]).then(|| {
                    let v = if parsed.kind == ValueKind::Delete { Vec::new() } else { value.to_vec() };
                    (parsed.seqno, parsed.kind, v)
                })
            });
            let want = want.map(|(s, k, v)| (s, k, if k == ValueKind::Delete { Vec::new() } else { v }));
            prop_assert_eq!(got, want, "user {:?} at {}", user, snapshot);
        }
        // Keys present always pass the filter; the filter is on user keys.
        for user in model.keys() {
            prop_assert!(table.may_contain(user));
            prop_assert!(table.may_contain(InternalKeys.filter_key(InternalKey::new(user, 5, ValueKind::Put).encoded())));
        }
        prop_assert_eq!(stats.filter_checks, probes.len() as u64);
        prop_assert!(stats.filter_negatives <= stats.filter_checks);

        let mut it = table.iter();
        prop_assert_eq!(scan_forward(&mut it).unwrap(), entries);
    }
}

#[test]
fn range_tombstones_and_their_seqnos() {
    let fs = MemFs::new();
    let opts = opts(4096, false);
    let point = vec![(
        InternalKey::new(b"m", 5, ValueKind::Put).encoded().to_vec(),
        b"v".to_vec(),
    )];
    let tombstones = vec![
        (
            InternalKey::new(b"c", 9, ValueKind::RangeDelete)
                .encoded()
                .to_vec(),
            b"f".to_vec(),
        ),
        (
            InternalKey::new(b"a", 2, ValueKind::RangeDelete)
                .encoded()
                .to_vec(),
            b"d".to_vec(),
        ),
        (
            InternalKey::new(b"c", 12, ValueKind::RangeDelete)
                .encoded()
                .to_vec(),
            b"e".to_vec(),
        ),
    ];
    let built = build(&fs, "/r.sst", &opts, &point, &tombstones);
    assert_eq!(built.properties.num_range_deletions, 3);
    assert_eq!(
        (built.properties.min_seqno, built.properties.max_seqno),
        (2, 12)
    );
    let table = open(&fs, "/r.sst", &opts, None).unwrap();
    let got: Vec<String> = table
        .range_tombstones()
        .iter()
        .map(|t| {
            let start = ParsedInternalKey::parse(&t.start).unwrap();
            format!("{start}-{}", String::from_utf8_lossy(&t.end))
        })
        .collect();
    // Sorted by internal key: user key ascending, newest first.
    assert_eq!(got, ["a#2,RANGEDEL-d", "c#12,RANGEDEL-e", "c#9,RANGEDEL-f"]);
    // Tombstones are not point entries.
    let mut it = table.iter();
    assert_eq!(scan_forward(&mut it).unwrap(), point);
}

#[test]
fn index_separators_are_short_internal_keys() {
    // Long user keys that differ early: separators shorten them, and seeks
    // between blocks still land right.
    let fs = MemFs::new();
    let opts = opts(64, false);
    let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..50u32)
        .map(|i| {
            let user = format!("{:03}{}", 2 * i, "x".repeat(40));
            (
                InternalKey::new(user.as_bytes(), 100, ValueKind::Put)
                    .encoded()
                    .to_vec(),
                vec![1; 10],
            )
        })
        .collect();
    let built = build(&fs, "/s.sst", &opts, &entries, &[]);
    // One entry per block. Most separators are a 3-byte user key + trailer
    // (`000xx..` / `002xx..` -> `001`); where the bump would reach the next
    // key (`008xx..` / `010xx..`) the full key stays. Full keys everywhere
    // would take over 50 * (51 + 6) bytes.
    assert_eq!(built.properties.num_data_blocks, 50);
    assert!(
        built.properties.index_size < 50 * (51 + 6) / 2,
        "{}",
        built.properties.index_size
    );
    let table = open(&fs, "/s.sst", &opts, None).unwrap();
    let cmp = InternalKeyComparator::bytewise();
    let mut it = table.iter();
    for (i, (k, _)) in entries.iter().enumerate() {
        let user = format!("{:03}", 2 * i);
        it.seek_ge(InternalKey::seek(user.as_bytes(), MAX_SEQNO).encoded())
            .unwrap();
        assert!(cmp.equal(it.key(), k));
    }
}

#[test]
fn table_iterators_merge() {
    let fs = MemFs::new();
    let opts = opts(128, true);
    let older: Vec<(Vec<u8>, Vec<u8>)> = (0..100u32)
        .map(|i| {
            (
                InternalKey::new(format!("k{i:03}").as_bytes(), 1, ValueKind::Put)
                    .encoded()
                    .to_vec(),
                b"old".to_vec(),
            )
        })
        .collect();
    let newer: Vec<(Vec<u8>, Vec<u8>)> = (0..100u32)
        .step_by(3)
        .map(|i| {
            (
                InternalKey::new(format!("k{i:03}").as_bytes(), 2, ValueKind::Put)
                    .encoded()
                    .to_vec(),
                b"new".to_vec(),
            )
        })
        .collect();
    build(&fs, "/1.sst", &opts, &older, &[]);
    build(&fs, "/2.sst", &opts, &newer, &[]);
    let a = open(&fs, "/1.sst", &opts, None).unwrap();
    let b = open(&fs, "/2.sst", &opts, None).unwrap();
    let cmp = InternalKeyComparator::bytewise();
    let mut merged = MergingIterator::new(cmp.clone(), vec![b.iter(), a.iter()]);
    let got = scan_forward(&mut merged).unwrap();
    let mut want: Vec<(Vec<u8>, Vec<u8>)> = older.into_iter().chain(newer).collect();
    want.sort_by(|x, y| cmp.compare(&x.0, &y.0));
    assert_eq!(got, want);
}
