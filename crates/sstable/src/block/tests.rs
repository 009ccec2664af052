use std::collections::BTreeMap;

use bytes::Bytes;
use lithify_base::BytewiseComparator;
use proptest::prelude::*;

use super::*;

fn build(entries: &[(&[u8], &[u8])], interval: usize) -> Block {
    let mut b = BlockBuilder::new(interval);
    for (k, v) in entries {
        b.add(k, v);
    }
    Block::new(Bytes::copy_from_slice(b.finish())).unwrap()
}

#[test]
fn golden_bytes_with_prefix_compression() {
    let mut b = BlockBuilder::new(2);
    b.add(b"tweedledee", b"x");
    b.add(b"tweedledum", b"socks");
    b.add(b"two", b"");
    let got = b.finish().to_vec();
    let mut want = Vec::new();
    want.extend_from_slice(b"\x00\x0a\x01tweedledeex"); // restart 0 at offset 0
    want.extend_from_slice(b"\x08\x02\x05umsocks"); // shares "tweedled"
    want.extend_from_slice(b"\x00\x03\x00two"); // restart 1 at offset 24
    want.extend_from_slice(&[0, 0, 0, 0, 24, 0, 0, 0, 2, 0, 0, 0]);
    assert_eq!(got, want);
}

#[test]
fn empty_block_has_no_entries() {
    let mut b = BlockBuilder::new(16);
    assert_eq!(b.finish(), &[0, 0, 0, 0]);
    let block = Block::new(Bytes::from_static(&[0, 0, 0, 0])).unwrap();
    let mut it = BlockIter::new(block, Vec::new());
    it.first().unwrap();
    assert!(!it.valid());
    it.last().unwrap();
    assert!(!it.valid());
    it.seek_ge(b"a", &BytewiseComparator).unwrap();
    assert!(!it.valid());
}

#[test]
fn bad_restart_arrays_are_rejected() {
    assert!(Block::new(Bytes::from_static(&[1, 0, 0])).is_err());
    // Claims 5 restart points in an 8-byte block.
    assert!(Block::new(Bytes::from_static(&[0, 0, 0, 0, 5, 0, 0, 0])).is_err());
    // Entries but no restart point.
    assert!(Block::new(Bytes::from_static(&[9, 9, 0, 0, 0, 0])).is_err());
    // Restart offset past the entries.
    let block = Block::new(Bytes::from_static(&[0, 1, 0, b'a', 9, 0, 0, 0, 1, 0, 0, 0])).unwrap();
    let mut it = BlockIter::new(block, Vec::new());
    assert!(it.first().is_err());
    assert!(!it.valid());
}

#[test]
fn restart_entry_sharing_a_prefix_is_corruption() {
    // One entry claiming to share 1 byte with a nonexistent previous key.
    let block = Block::new(Bytes::from_static(&[1, 1, 0, b'a', 0, 0, 0, 0, 1, 0, 0, 0])).unwrap();
    let mut it = BlockIter::new(block.clone(), Vec::new());
    assert!(it.first().is_err());
    let mut it = BlockIter::new(block, Vec::new());
    assert!(it.seek_ge(b"a", &BytewiseComparator).is_err());
}

fn walk_forward(it: &mut BlockIter) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.first().unwrap();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next().unwrap();
    }
    out
}

fn walk_backward(it: &mut BlockIter) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.last().unwrap();
    while it.valid() {
        out.push((it.key().to_vec(), it.value_bytes().to_vec()));
        it.prev().unwrap();
    }
    out.reverse();
    out
}

proptest! {
    #[test]
    fn block_agrees_with_btreemap(
        map in proptest::collection::btree_map(
            proptest::collection::vec(0u8..4, 0..12),
            proptest::collection::vec(any::<u8>(), 0..20),
            0..80),
        interval in 1usize..20,
        targets in proptest::collection::vec(proptest::collection::vec(0u8..4, 0..12), 0..20),
    ) {
        let entries: Vec<(&[u8], &[u8])> = map.iter().map(|(k, v)| (&k[..], &v[..])).collect();
        let block = build(&entries, interval);
        let mut it = BlockIter::new(block, Vec::new());
        let want: Vec<(Vec<u8>, Vec<u8>)> = map.clone().into_iter().collect();
        prop_assert_eq!(walk_forward(&mut it), want.clone());
        prop_assert_eq!(walk_backward(&mut it), want);
        let model: &BTreeMap<Vec<u8>, Vec<u8>> = &map;
        for t in &targets {
            it.seek_ge(t, &BytewiseComparator).unwrap();
            let want = model.range(t.clone()..).next();
            prop_assert_eq!(it.valid(), want.is_some());
            if let Some((k, v)) = want {
                prop_assert_eq!(it.key(), &k[..]);
                prop_assert_eq!(it.value(), &v[..]);
            }
            it.seek_lt(t, &BytewiseComparator).unwrap();
            let want = model.range(..t.clone()).next_back();
            prop_assert_eq!(it.valid(), want.is_some());
            if let Some((k, v)) = want {
                prop_assert_eq!(it.key(), &k[..]);
                prop_assert_eq!(it.value(), &v[..]);
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..64),
                                   target in proptest::collection::vec(any::<u8>(), 0..4)) {
        if let Ok(block) = Block::new(Bytes::from(data)) {
            let mut it = BlockIter::new(block, Vec::new());
            let mut steps = 0;
            if it.first().is_ok() {
                while it.valid() && steps < 100 {
                    let _ = (it.key(), it.value());
                    if it.next().is_err() { break; }
                    steps += 1;
                }
            }
            if it.last().is_ok() {
                while it.valid() && steps < 200 {
                    if it.prev().is_err() { break; }
                    steps += 1;
                }
            }
            let _ = it.seek_ge(&target, &BytewiseComparator);
            let _ = it.seek_lt(&target, &BytewiseComparator);
        }
    }
}
