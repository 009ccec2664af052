//! Drives a memtable with operations decoded from arbitrary bytes (adds of
//! every kind, in any seqno order, duplicates included, and lookups) and
//! checks every answer against a `BTreeMap` model; ends with full scans in
//! both directions. The memtable has no on-disk format: this target hunts
//! for ordering and lookup bugs the proptest may not reach.
#![no_main]

use std::cmp::Reverse;
use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use lithify_base::sync::Arc;
use lithify_base::{InternalIterator, InternalKey, InternalKeyComparator, SeqNo, ValueKind};
use lithify_memtable::{DeletedBy, Error, Lookup, MemTable, MemTableIter, MemTableOptions};

type Points = BTreeMap<(Vec<u8>, Reverse<SeqNo>, Reverse<u8>), Vec<u8>>;

/// A byte cursor that yields zeros once the input runs out.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    /// A user key of 0..=2 bytes from a small alphabet, so keys collide.
    fn key(&mut self) -> Vec<u8> {
        let len = self.byte() % 3;
        (0..len).map(|_| b'a' + self.byte() % 4).collect()
    }
}

/// The answer `MemTable::get` must give, from the model.
fn model_get<'a>(
    points: &'a Points,
    ranges: &[(Vec<u8>, Vec<u8>, SeqNo)],
    key: &[u8],
    snap: SeqNo,
) -> Lookup<'a> {
    let newest = points
        .range((key.to_vec(), Reverse(snap), Reverse(u8::MAX))..)
        .next()
        .filter(|((k, _, _), _)| k == key);
    let covering = ranges
        .iter()
        .filter(|(s, e, q)| s.as_slice() <= key && key < e.as_slice() && *q <= snap)
        .map(|r| r.2)
        .max();
    let point_seq = newest.map(|((_, Reverse(s), _), _)| *s);
    if let Some(r) = covering
        && point_seq.is_none_or(|p| r > p)
    {
        return Lookup::Deleted {
            seqno: r,
            by: DeletedBy::RangeTombstone,
        };
    }
    match newest {
        None => Lookup::NotFound,
        Some(((_, Reverse(seqno), Reverse(kind)), value)) if *kind == ValueKind::Put as u8 => {
            Lookup::Found {
                value,
                seqno: *seqno,
            }
        }
        Some(((_, Reverse(seqno), _), _)) => Lookup::Deleted {
            seqno: *seqno,
            by: DeletedBy::PointTombstone,
        },
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let mem = Arc::new(MemTable::with_options(
        InternalKeyComparator::bytewise(),
        &MemTableOptions::default()
            .arena_block_size(1024)
            // Inputs with an odd first byte run with a whole-key filter:
            // it must never change an answer.
            .whole_key_filter_bits(if data.first().is_some_and(|b| b & 1 == 1) {
                4096
            } else {
                0
            }),
    ));
    let mut points = Points::new();
    let mut ranges: Vec<(Vec<u8>, Vec<u8>, SeqNo)> = Vec::new();
    let mut added = 0usize;
    for _ in 0..200 {
        if input.0.is_empty() {
            break;
        }
        let op = input.byte();
        // Seqnos in 0..64: collisions make duplicates, any order is allowed.
        let seqno = SeqNo::from(input.byte() % 64);
        let key = input.key();
        match op % 4 {
            0 | 1 => {
                let kind = if op % 4 == 0 {
                    ValueKind::Put
                } else {
                    ValueKind::Delete
                };
                let value: Vec<u8> = (0..input.byte() % 40).map(|_| input.byte()).collect();
                let slot = (key.clone(), Reverse(seqno), Reverse(kind as u8));
                match mem.add(seqno, kind, &key, &value) {
                    Ok(()) => {
                        assert!(points.insert(slot, value).is_none(), "duplicate accepted");
                        added += 1;
                    }
                    Err(Error::DuplicateEntry { .. }) => assert!(points.contains_key(&slot)),
                    Err(e) => panic!("unexpected error {e}"),
                }
            }
            2 => {
                let end = input.key();
                let dup = ranges.iter().any(|(s, _, q)| *s == key && *q == seqno);
                match mem.add(seqno, ValueKind::RangeDelete, &key, &end) {
                    Ok(()) => {
                        assert!(key < end && !dup);
                        ranges.push((key, end, seqno));
                        added += 1;
                    }
                    Err(Error::EmptyRange { .. }) => assert!(key >= end),
                    Err(Error::DuplicateEntry { .. }) => assert!(dup),
                    Err(e) => panic!("unexpected error {e}"),
                }
            }
            _ => {
                let want = model_get(&points, &ranges, &key, seqno);
                assert_eq!(mem.get(&key, seqno), want, "get {key:?} at {seqno}");
            }
        }
    }
    assert_eq!(mem.len(), added);

    let want: Vec<(Vec<u8>, Vec<u8>)> = points
        .iter()
        .map(|((k, Reverse(s), Reverse(kind)), v)| {
            let kind = ValueKind::from_u8(*kind).expect("model holds real kinds");
            (InternalKey::new(k, *s, kind).into_encoded(), v.clone())
        })
        .collect();
    let mut it = MemTableIter::new(mem.clone());
    let mut forward = Vec::new();
    it.first().unwrap();
    while it.valid() {
        forward.push((it.key().to_vec(), it.value().to_vec()));
        it.next().unwrap();
    }
    assert_eq!(forward, want);
    let mut backward = Vec::new();
    it.last().unwrap();
    while it.valid() {
        backward.push((it.key().to_vec(), it.value().to_vec()));
        it.prev().unwrap();
    }
    backward.reverse();
    assert_eq!(backward, want);
});
