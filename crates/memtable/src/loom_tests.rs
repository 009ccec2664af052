//! Loom models of the memtable's own protocols: arena block switching,
//! concurrent skiplist linking, and publication of node contents to readers.
//!
//! Run with `cargo xtask loom` (`RUSTFLAGS="--cfg loom"`, release,
//! `LOOM_MAX_PREEMPTIONS=2`). A node's record is written inside the node's
//! `sync::UnsafeCell` marker, and its header and record are read after
//! touching it, so loom reports any read that does not happen after the
//! write: a torn entry would be a causality violation even where the bytes
//! happen to look right.
//!
//! The models keep towers short (at most 2 links) and blocks tiny, so loom
//! explores the interleavings of the linking and block-switch steps (up to
//! the preemption bound) in seconds. Each model was checked to fail when the
//! release CAS, the acquire loads or the block publication are weakened to
//! relaxed. Racing threads are spawned rather than run on the model's main
//! thread where that matters: loom's DPOR finds far fewer schedules for a
//! main thread that runs before the spawned ones get going.

use lithify_base::key::pack_trailer;
use lithify_base::sync::atomic::{AtomicUsize, Ordering};
use lithify_base::sync::{Arc, thread};
use lithify_base::{Comparator, InternalIterator, InternalKeyComparator, MAX_SEQNO, ValueKind};

use crate::arena::Arena;
use crate::skiplist::{SkipList, split_key};
use crate::{Error, Lookup, MemTable, MemTableIter};

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(2);
    }
    builder.check(f);
}

/// All user keys of a list, front to back, checking strict order.
fn keys_forward(list: &SkipList) -> Vec<Vec<u8>> {
    let cmp = list.comparator();
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut prev: Option<Vec<u8>> = None;
    let mut node = list.first();
    while let Some(n) = node {
        let key = list.key(n).to_vec();
        if let Some(p) = &prev {
            assert!(cmp.compare(p, &key).is_lt(), "list out of order");
        }
        out.push(split_key(&key).0.to_vec());
        prev = Some(key);
        node = list.next(n);
    }
    out
}

/// Two threads allocate from a full block: whoever seals it installs the
/// next block, the other either fails over to it through the mutex or finds
/// it fresh through `current` (and must then see it initialised); every
/// allocation is disjoint from the others.
#[test]
fn loom_arena_allocations_are_disjoint_across_block_switches() {
    model(|| {
        // 64-byte blocks and 16-byte allocations: the first block is full.
        let arena = Arc::new(Arena::new(64));
        let mut all: Vec<usize> = (0..4)
            .map(|_| arena.allocate(16).as_ptr() as usize)
            .collect();
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let arena = arena.clone();
                thread::spawn(move || arena.allocate(16).as_ptr() as usize)
            })
            .collect();
        all.extend(threads.into_iter().map(|t| t.join().unwrap()));
        all.sort_unstable();
        assert!(
            all.windows(2).all(|w| w[1] - w[0] >= 16),
            "overlap: {all:?}"
        );
        assert_eq!(arena.reserved_bytes(), 128);
        assert_eq!(arena.memory_usage(), 64 + 32);
    });
}

/// Two writers link tall nodes next to each other (contending at both
/// levels) while a reader walks the list: the reader sees a sorted list,
/// and every insert completed before its read; afterwards each key is
/// present exactly once and reachable from both ends.
#[test]
fn loom_two_writers_and_a_reader_keep_the_list_sorted() {
    two_writers_and_a_reader(b"");
}

/// The same race with keys that share their first eight bytes: equal key
/// words, so every comparison reads the records, which must be seen
/// initialised too.
#[test]
fn loom_two_writers_and_a_reader_keep_the_list_sorted_on_equal_key_words() {
    two_writers_and_a_reader(b"samewrd_");
}

fn two_writers_and_a_reader(prefix: &'static [u8]) {
    let key = move |k: u8| -> Vec<u8> { [prefix, &[k]].concat() };
    model(move || {
        let list = Arc::new(SkipList::new(InternalKeyComparator::bytewise(), 1024, 2));
        list.insert_with_height(2, &key(b'm'), pack_trailer(1, 1), b"m")
            .unwrap();
        let done = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);

        let writers: Vec<_> = [(b'c', b'q'), (b'h', b't')]
            .into_iter()
            .enumerate()
            .map(|(w, (k1, k2))| {
                let (list, done) = (list.clone(), done.clone());
                thread::spawn(move || {
                    list.insert_with_height(2, &key(k1), pack_trailer(2 + w as u64, 1), &[k1])
                        .unwrap();
                    done[w].store(1, Ordering::Release);
                    list.insert_with_height(1, &key(k2), pack_trailer(4 + w as u64, 1), &[k2])
                        .unwrap();
                    done[w].store(2, Ordering::Release);
                })
            })
            .collect();

        let reader = {
            let (list, done) = (list.clone(), done.clone());
            thread::spawn(move || {
                let completed: Vec<usize> =
                    done.iter().map(|d| d.load(Ordering::Acquire)).collect();
                let seen = keys_forward(&list);
                let must = [[b'c', b'q'], [b'h', b't']];
                for (w, &n) in completed.iter().enumerate() {
                    for &k in &must[w][..n] {
                        assert!(seen.contains(&key(k)), "completed insert missing");
                    }
                }
                assert!(seen.contains(&key(b'm')));
            })
        };

        for w in writers {
            w.join().unwrap();
        }
        reader.join().unwrap();
        let all = keys_forward(&list);
        let want: Vec<Vec<u8>> = [b'c', b'h', b'm', b'q', b't'].map(key).to_vec();
        assert_eq!(all, want);
        let last = list.last().unwrap();
        assert_eq!(split_key(list.key(last)).0, key(b't'));
        assert_eq!(list.value(last), b"t");
    });
}

/// Through the public API: two writers add interleaved keys with
/// `MemTable::add` while a reader iterates with `MemTableIter`; completed
/// adds are visible to `get`, iteration is sorted, and the final contents,
/// counters and seqno bounds are exact.
#[test]
fn loom_memtable_adds_are_visible_once_complete() {
    model(|| {
        let mem = Arc::new(MemTable::build(InternalKeyComparator::bytewise(), 1024, 2));
        let done = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
        let writers: Vec<_> = [(b"a", 1u64), (b"b", 2u64)]
            .into_iter()
            .enumerate()
            .map(|(w, (key, seqno))| {
                let (mem, done) = (mem.clone(), done.clone());
                thread::spawn(move || {
                    mem.add(seqno, ValueKind::Put, key, key).unwrap();
                    done[w].store(1, Ordering::Release);
                })
            })
            .collect();

        let completed: Vec<usize> = done.iter().map(|d| d.load(Ordering::Acquire)).collect();
        let mut it = MemTableIter::new(mem.clone());
        it.first().unwrap();
        let mut seen = Vec::new();
        while it.valid() {
            let (uk, _) = split_key(it.key());
            assert_eq!(it.value(), uk, "value does not belong to its key");
            seen.push(uk.to_vec());
            it.next().unwrap();
        }
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "unsorted: {seen:?}");
        for (w, key) in [b"a", b"b"].iter().enumerate() {
            if completed[w] == 1 {
                assert_eq!(mem.get(*key, MAX_SEQNO).value(), Some(&key[..]));
            }
        }

        for w in writers {
            w.join().unwrap();
        }
        assert_eq!(mem.len(), 2);
        assert_eq!((mem.first_seqno(), mem.last_seqno()), (Some(1), Some(2)));
        it.last().unwrap();
        assert_eq!(it.key()[0], b'b');
        it.prev().unwrap();
        assert_eq!(it.key()[0], b'a');
        it.prev().unwrap();
        assert!(!it.valid());
    });
}

/// A reader racing a writer of a newer version sees either the old or the
/// new version of the key, each with its own value, never a mix; the writer
/// also fills an arena block, so the new node may sit in a fresh block.
#[test]
fn loom_reader_sees_old_or_new_version_never_torn() {
    model(|| {
        // 256-byte record blocks holding the head's 8-byte record and
        // 64-byte records: after "a", "b" and the first "k", the new
        // version's record does not fit and goes to a fresh block. (Nodes
        // are larger than a quarter of the node arena's 64-byte blocks, so
        // each gets a block of its own.)
        let mem = Arc::new(MemTable::build(InternalKeyComparator::bytewise(), 256, 2));
        mem.add(1, ValueKind::Put, b"a", &[9u8; 40]).unwrap();
        mem.add(1, ValueKind::Put, b"b", &[9u8; 40]).unwrap();
        mem.add(1, ValueKind::Put, b"k", &[1u8; 40]).unwrap();
        let blocks_before = mem.allocated_memory();
        let writer = {
            let mem = mem.clone();
            thread::spawn(move || mem.add(2, ValueKind::Put, b"k", &[2u8; 40]).unwrap())
        };
        let reader = {
            let mem = mem.clone();
            thread::spawn(move || {
                match mem.get(b"k", MAX_SEQNO) {
                    Lookup::Found { value, seqno } => {
                        assert!(seqno == 1 || seqno == 2);
                        assert_eq!(value, &[seqno as u8; 40][..], "torn value");
                    }
                    other => panic!("unexpected {other:?}"),
                }
                // A snapshot below the new version never sees it.
                assert_eq!(mem.get(b"k", 1).value(), Some(&[1u8; 40][..]));
            })
        };
        writer.join().unwrap();
        reader.join().unwrap();
        assert_eq!(mem.get(b"k", 2).value(), Some(&[2u8; 40][..]));
        // The record arena took a second block, the node one of its own.
        assert!(mem.allocated_memory() > blocks_before + 256);
    });
}

/// Two writers racing to add the same entry: exactly one wins, the other
/// gets `DuplicateEntry`, and the list holds it once.
#[test]
fn loom_duplicate_adds_insert_once() {
    model(|| {
        let mem = Arc::new(MemTable::build(InternalKeyComparator::bytewise(), 1024, 2));
        let other = {
            let mem = mem.clone();
            thread::spawn(move || mem.add(5, ValueKind::Delete, b"x", b"").is_ok())
        };
        let mine = mem.add(5, ValueKind::Delete, b"x", b"");
        let theirs = other.join().unwrap();
        match mine {
            Ok(()) => assert!(!theirs),
            Err(Error::DuplicateEntry { .. }) => assert!(theirs),
            Err(e) => panic!("unexpected {e}"),
        }
        assert_eq!(keys_forward(mem.points()), vec![b"x".to_vec()]);
    });
}
