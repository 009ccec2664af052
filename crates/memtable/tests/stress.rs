//! Stress test: 4 writer threads add 1M entries in total, in a scrambled key
//! order, while a reader checks order, values and the visibility of
//! completed writes; the final contents are then checked exactly.
//!
//! Too slow for Miri (the loom models and unit tests cover the protocol
//! there).
#![cfg(not(miri))]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use lithify_base::key::{trailer, unpack_trailer, user_key};
use lithify_base::sync::Arc;
use lithify_base::{InternalIterator, InternalKey, InternalKeyComparator, MAX_SEQNO, ValueKind};
use lithify_memtable::{Lookup, MemTable, MemTableIter};

const WRITERS: u64 = 4;
const TOTAL: u64 = 1_000_000;

/// A bijection on u64 that scrambles insertion order across the key space.
fn key_of(i: u64) -> [u8; 8] {
    i.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes()
}

fn index_of(key: &[u8]) -> u64 {
    // The multiplicative inverse of the odd constant above, mod 2^64.
    const INVERSE: u64 = 0xf1de_83e1_9937_733d;
    let k = u64::from_be_bytes(key.try_into().expect("8-byte user key"));
    k.wrapping_mul(INVERSE)
}

#[test]
fn four_writers_one_million_keys() {
    assert_eq!(index_of(&key_of(123_456_789)), 123_456_789);
    let mem = Arc::new(MemTable::new(InternalKeyComparator::bytewise()));
    // progress[t]: how many of its entries writer t has completed.
    let progress: Arc<Vec<AtomicU64>> = Arc::new((0..WRITERS).map(|_| AtomicU64::new(0)).collect());
    let stop = Arc::new(AtomicBool::new(false));

    let writers: Vec<_> = (0..WRITERS)
        .map(|t| {
            let (mem, progress) = (mem.clone(), progress.clone());
            std::thread::spawn(move || {
                let mut done = 0;
                for i in (t..TOTAL).step_by(WRITERS as usize) {
                    // Entry i: seqno i + 1, value i (little-endian).
                    mem.add(i + 1, ValueKind::Put, &key_of(i), &i.to_le_bytes())
                        .unwrap();
                    done += 1;
                    if done % 1024 == 0 {
                        progress[t as usize].store(done, Ordering::Release);
                    }
                }
                progress[t as usize].store(done, Ordering::Release);
            })
        })
        .collect();

    let reader = {
        let (mem, progress, stop) = (mem.clone(), progress.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut it = MemTableIter::new(mem.clone());
            let mut rounds = 0u64;
            while !stop.load(Ordering::Acquire) {
                // Every completed write of each writer is visible to `get`.
                for t in 0..WRITERS {
                    let done = progress[t as usize].load(Ordering::Acquire);
                    if done > 0 {
                        let i = t + (done - 1 - rounds % done) * WRITERS;
                        let found = mem.get(&key_of(i), MAX_SEQNO);
                        assert_eq!(
                            found,
                            Lookup::Found {
                                value: &i.to_le_bytes(),
                                seqno: i + 1
                            }
                        );
                    }
                }
                // A window of the list is sorted and consistent.
                let start = InternalKey::seek(&key_of(rounds * 7919), MAX_SEQNO);
                it.seek_ge(start.encoded()).unwrap();
                let mut prev: Option<Vec<u8>> = None;
                for _ in 0..256 {
                    if !it.valid() {
                        break;
                    }
                    let key = it.key();
                    let i = index_of(user_key(key));
                    assert_eq!(it.value(), i.to_le_bytes());
                    assert_eq!(unpack_trailer(trailer(key)).0, i + 1);
                    if let Some(p) = &prev {
                        assert!(p.as_slice() < user_key(key), "reader saw keys out of order");
                    }
                    prev = Some(user_key(key).to_vec());
                    it.next().unwrap();
                }
                rounds += 1;
            }
            rounds
        })
    };

    for w in writers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::Release);
    let rounds = reader.join().unwrap();
    assert!(rounds > 0);

    // Exact final contents: TOTAL distinct keys in order, each with its
    // own value and seqno.
    assert_eq!(mem.len() as u64, TOTAL);
    assert_eq!(
        (mem.first_seqno(), mem.last_seqno()),
        (Some(1), Some(TOTAL))
    );
    let mut seen = vec![false; TOTAL as usize];
    let mut it = MemTableIter::new(mem.clone());
    it.first().unwrap();
    let mut count = 0u64;
    let mut prev: Option<[u8; 8]> = None;
    while it.valid() {
        let key = it.key();
        let uk: [u8; 8] = user_key(key).try_into().unwrap();
        let i = index_of(&uk);
        assert!(i < TOTAL, "unknown key");
        assert!(!seen[i as usize], "entry {i} twice");
        seen[i as usize] = true;
        assert_eq!(it.value(), i.to_le_bytes());
        assert_eq!(unpack_trailer(trailer(key)), (i + 1, ValueKind::Put as u8));
        if let Some(p) = prev {
            assert!(p < uk);
        }
        prev = Some(uk);
        count += 1;
        it.next().unwrap();
    }
    assert_eq!(count, TOTAL);
    // Spot-check point lookups and backward iteration.
    for i in (0..TOTAL).step_by(997) {
        assert_eq!(
            mem.get(&key_of(i), i).value(),
            None,
            "invisible below its seqno"
        );
        assert_eq!(
            mem.get(&key_of(i), i + 1).value(),
            Some(&i.to_le_bytes()[..])
        );
    }
    it.last().unwrap();
    let mut back = 0;
    while it.valid() && back < 10_000 {
        it.prev().unwrap();
        back += 1;
    }
    assert_eq!(back, 10_000);
}
