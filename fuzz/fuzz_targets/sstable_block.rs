//! Decodes a single block. Even first byte: the rest is a stored block
//! (contents + 9-byte trailer), decoded with or without its checksum and
//! walked in every direction without panicking. Odd first byte: the rest
//! describes entries, which are encoded (maybe zstd-compressed), decoded
//! and must come back exactly.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use lithify_base::BytewiseComparator;
use lithify_sstable::testing::BlockIter;
use lithify_sstable::testing::{decode_block, encode_block};

const MAX_STEPS: usize = 20_000;

fn walk_arbitrary(stored: &[u8], verify: bool, targets: &[&[u8]]) {
    let Ok(block) = decode_block(stored, verify) else {
        return;
    };
    let mut it = BlockIter::new(block, Vec::new());
    let mut steps = 0;
    let mut res = it.first();
    while res.is_ok() && it.valid() && steps < MAX_STEPS {
        let _ = (it.key(), it.value(), it.value_bytes(), it.key_bytes());
        res = it.next();
        steps += 1;
    }
    let mut steps = 0;
    let mut res = it.last();
    while res.is_ok() && it.valid() && steps < MAX_STEPS {
        res = it.prev();
        steps += 1;
    }
    for t in targets {
        let _ = it.seek_ge(t, &BytewiseComparator);
        let _ = it.seek_lt(t, &BytewiseComparator);
    }
}

fn round_trip(spec: &[u8]) {
    let Some((&params, mut rest)) = spec.split_first() else {
        return;
    };
    // Entries: [key_len, key..., value_len, value...] repeated.
    let mut model = BTreeMap::new();
    while let Some((&klen, r)) = rest.split_first() {
        let klen = (klen as usize % 24).min(r.len());
        let (key, r) = r.split_at(klen);
        let Some((&vlen, r)) = r.split_first() else {
            break;
        };
        let vlen = (vlen as usize).min(r.len());
        let (value, r) = r.split_at(vlen);
        model.insert(key.to_vec(), value.to_vec());
        rest = r;
    }
    let entries: Vec<(Vec<u8>, Vec<u8>)> = model.into_iter().collect();
    let interval = 1 + (params as usize & 0x1f);
    let zstd = (params & 0x20 != 0).then_some(1);
    let stored = encode_block(&entries, interval, zstd);
    let block = decode_block(&stored, true).expect("a block we encoded decodes");
    let mut it = BlockIter::new(block, Vec::new());
    let mut got = Vec::new();
    it.first().expect("first");
    while it.valid() {
        got.push((it.key().to_vec(), it.value().to_vec()));
        it.next().expect("next");
    }
    assert_eq!(got, entries);
    let mut back = Vec::new();
    it.last().expect("last");
    while it.valid() {
        back.push((it.key().to_vec(), it.value_bytes().to_vec()));
        it.prev().expect("prev");
    }
    back.reverse();
    assert_eq!(back, entries);
    for (k, v) in &entries {
        it.seek_ge(k, &BytewiseComparator).expect("seek");
        assert!(it.valid());
        assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        let targets: Vec<&[u8]> = rest.chunks(5).take(4).collect();
        walk_arbitrary(rest, mode & 2 == 2, &targets);
    } else {
        round_trip(rest);
    }
});
