//! Exact behaviour of the public API: lookups at snapshots, range
//! tombstones, iteration in both directions, counters, errors.

use lithify_base::keyspan::RangeTombstone;
use lithify_base::sync::Arc;
use lithify_base::{
    BytewiseComparator, Classify, Comparator, ErrorKind, InternalIterator, InternalKey,
    InternalKeyComparator, MAX_SEQNO, ValueKind,
};
use lithify_memtable::{DeletedBy, Error, Lookup, MemTable, MemTableIter, MemTableOptions};

fn mem() -> Arc<MemTable> {
    Arc::new(MemTable::new(InternalKeyComparator::bytewise()))
}

/// Adds entries written as `key#seq,KIND=value` (`value` is the end key of
/// a RANGEDEL).
fn add_all(mem: &MemTable, entries: &[&str]) {
    for e in entries {
        let (key, value) = e.split_once('=').unwrap_or((e, ""));
        let key = InternalKey::from_text(key).unwrap();
        let parsed = key.parsed().unwrap();
        mem.add(parsed.seqno, parsed.kind, parsed.user_key, value.as_bytes())
            .unwrap();
    }
}

fn dump(it: &mut MemTableIter, forward: bool) -> Vec<String> {
    let mut out = Vec::new();
    if forward {
        it.first().unwrap();
    } else {
        it.last().unwrap();
    }
    while it.valid() {
        let key = InternalKey::from_encoded(it.key().to_vec()).unwrap();
        out.push(format!("{key}={}", String::from_utf8_lossy(it.value())));
        if forward {
            it.next().unwrap();
        } else {
            it.prev().unwrap();
        }
    }
    out
}

#[test]
fn get_sees_the_newest_version_at_each_snapshot() {
    let m = mem();
    add_all(
        &m,
        &[
            "a#1,SET=a1",
            "a#3,SET=a3",
            "a#5,DEL",
            "a#7,SET=a7",
            "b#2,SET=b2",
        ],
    );
    let cases: &[(&[u8], u64, Lookup<'_>)] = &[
        (b"a", 0, Lookup::NotFound),
        (
            b"a",
            1,
            Lookup::Found {
                value: b"a1",
                seqno: 1,
            },
        ),
        (
            b"a",
            2,
            Lookup::Found {
                value: b"a1",
                seqno: 1,
            },
        ),
        (
            b"a",
            4,
            Lookup::Found {
                value: b"a3",
                seqno: 3,
            },
        ),
        (
            b"a",
            5,
            Lookup::Deleted {
                seqno: 5,
                by: DeletedBy::PointTombstone,
            },
        ),
        (
            b"a",
            6,
            Lookup::Deleted {
                seqno: 5,
                by: DeletedBy::PointTombstone,
            },
        ),
        (
            b"a",
            MAX_SEQNO,
            Lookup::Found {
                value: b"a7",
                seqno: 7,
            },
        ),
        (
            b"a",
            u64::MAX,
            Lookup::Found {
                value: b"a7",
                seqno: 7,
            },
        ),
        (b"b", 1, Lookup::NotFound),
        (
            b"b",
            2,
            Lookup::Found {
                value: b"b2",
                seqno: 2,
            },
        ),
        (b"", 9, Lookup::NotFound),
        (b"aa", 9, Lookup::NotFound),
        (b"c", 9, Lookup::NotFound),
    ];
    for (key, snap, want) in cases {
        assert_eq!(
            m.get(key, *snap),
            *want,
            "{:?} at {snap}",
            String::from_utf8_lossy(key)
        );
    }
    assert!(m.get(b"a", 5).is_decided());
    assert!(!m.get(b"c", 5).is_decided());
    assert_eq!(m.get(b"b", 5).value(), Some(&b"b2"[..]));
}

#[test]
fn range_tombstones_decide_only_when_newer_than_the_version_found() {
    let m = mem();
    add_all(
        &m,
        &[
            "b#2,SET=b2",
            "b#6,SET=b6",
            "c#1,SET=c1",
            "a#4,RANGEDEL=c",
            "x#9,RANGEDEL=z",
        ],
    );
    let range = |seqno| Lookup::Deleted {
        seqno,
        by: DeletedBy::RangeTombstone,
    };
    // b: version 2 < tombstone 4 <= snapshot.
    assert_eq!(
        m.get(b"b", 3),
        Lookup::Found {
            value: b"b2",
            seqno: 2
        }
    );
    assert_eq!(m.get(b"b", 4), range(4));
    assert_eq!(m.get(b"b", 5), range(4));
    // The newer version 6 beats the tombstone.
    assert_eq!(
        m.get(b"b", 6),
        Lookup::Found {
            value: b"b6",
            seqno: 6
        }
    );
    // A key with no version here, covered: decided (older layers are older).
    assert_eq!(m.get(b"a", 3), Lookup::NotFound);
    assert_eq!(m.get(b"a", 4), range(4));
    assert_eq!(m.get(b"bzz", 100), range(4));
    // The end is exclusive.
    assert_eq!(
        m.get(b"c", 100),
        Lookup::Found {
            value: b"c1",
            seqno: 1
        }
    );
    assert_eq!(m.get(b"y", 8), Lookup::NotFound);
    assert_eq!(m.get(b"y", 9), range(9));
    assert_eq!(m.get(b"z", 9), Lookup::NotFound);

    assert_eq!(m.max_covering_tombstone_seq(b"b", 100), Some(4));
    assert_eq!(m.max_covering_tombstone_seq(b"b", 3), None);
    assert_eq!(m.max_covering_tombstone_seq(b"c", 100), None);
    let listed: Vec<String> = m
        .range_tombstones()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(listed, ["[a, c)#4", "[x, z)#9"]);
    assert_eq!(
        m.range_tombstones()[0],
        RangeTombstone::new(&b"a"[..], &b"c"[..], 4)
    );
}

#[test]
fn overlapping_range_tombstones_take_the_newest_visible() {
    let m = mem();
    add_all(
        &m,
        &[
            "a#3,RANGEDEL=m",
            "c#8,RANGEDEL=e",
            "b#5,RANGEDEL=z",
            "d#1,SET=d1",
            "d#6,SET=d6",
        ],
    );
    assert_eq!(m.max_covering_tombstone_seq(b"d", 100), Some(8));
    assert_eq!(m.max_covering_tombstone_seq(b"d", 7), Some(5));
    assert_eq!(m.max_covering_tombstone_seq(b"d", 4), Some(3));
    assert_eq!(m.max_covering_tombstone_seq(b"d", 2), None);
    assert_eq!(m.max_covering_tombstone_seq(b"n", 100), Some(5));
    assert_eq!(
        m.get(b"d", 7),
        Lookup::Found {
            value: b"d6",
            seqno: 6
        }
    );
    assert_eq!(
        m.get(b"d", 8),
        Lookup::Deleted {
            seqno: 8,
            by: DeletedBy::RangeTombstone
        }
    );
    assert_eq!(
        m.get(b"d", 5),
        Lookup::Deleted {
            seqno: 5,
            by: DeletedBy::RangeTombstone
        }
    );
    let mut it = MemTableIter::range_deletions(m.clone());
    assert_eq!(
        dump(&mut it, true),
        ["a#3,RANGEDEL=m", "b#5,RANGEDEL=z", "c#8,RANGEDEL=e"]
    );
    assert_eq!(
        dump(&mut it, false),
        ["c#8,RANGEDEL=e", "b#5,RANGEDEL=z", "a#3,RANGEDEL=m"]
    );
}

#[test]
fn iterator_walks_and_seeks_both_ways() {
    let m = mem();
    add_all(
        &m,
        &[
            "b#2,SET=b2",
            "a#1,SET=a1",
            "b#5,DEL",
            "d#4,SET=d4",
            "c#3,SET=c3",
            "q#9,RANGEDEL=r",
        ],
    );
    let mut it = MemTableIter::new(m.clone());
    assert!(!it.valid());
    let all = [
        "a#1,SET=a1",
        "b#5,DEL=",
        "b#2,SET=b2",
        "c#3,SET=c3",
        "d#4,SET=d4",
    ];
    assert_eq!(dump(&mut it, true), all);
    let mut rev = all.to_vec();
    rev.reverse();
    assert_eq!(dump(&mut it, false), rev);

    let at = |it: &MemTableIter| {
        it.valid().then(|| {
            InternalKey::from_encoded(it.key().to_vec())
                .unwrap()
                .to_string()
        })
    };
    let seek = |t: &str| InternalKey::from_text(t).unwrap().into_encoded();
    it.seek_ge(&seek("b#MAX,SET")).unwrap();
    assert_eq!(at(&it).as_deref(), Some("b#5,DEL"));
    it.seek_ge(&seek("b#4,SET")).unwrap();
    assert_eq!(at(&it).as_deref(), Some("b#2,SET"));
    it.seek_ge(&InternalKey::seek(b"b", 5).into_encoded())
        .unwrap();
    assert_eq!(at(&it).as_deref(), Some("b#5,DEL"));
    it.seek_ge(&seek("e#1,SET")).unwrap();
    assert_eq!(at(&it), None);
    it.seek_lt(&seek("b#2,SET")).unwrap();
    assert_eq!(at(&it).as_deref(), Some("b#5,DEL"));
    it.seek_lt(&seek("a#1,SET")).unwrap();
    assert_eq!(at(&it), None);
    it.seek_lt(&seek("zz#1,SET")).unwrap();
    assert_eq!(at(&it).as_deref(), Some("d#4,SET"));
    // Switching direction.
    it.seek_ge(&seek("c#9,SET")).unwrap();
    it.prev().unwrap();
    assert_eq!(at(&it).as_deref(), Some("b#2,SET"));
    it.next().unwrap();
    it.next().unwrap();
    assert_eq!(at(&it).as_deref(), Some("d#4,SET"));
    it.next().unwrap();
    assert!(!it.valid());
    // Moving an invalid iterator is a no-op.
    it.next().unwrap();
    it.prev().unwrap();
    assert!(!it.valid());
}

#[test]
fn iterator_outlives_the_handle_it_came_from() {
    let m = mem();
    add_all(&m, &["k#1,SET=v"]);
    let mut it = MemTableIter::new(m.clone());
    drop(m);
    it.first().unwrap();
    assert_eq!(it.value(), b"v");
    assert_eq!(it.memtable().len(), 1);
    // The iterator can move to another thread with its memtable.
    let v = std::thread::spawn(move || it.value_bytes()).join().unwrap();
    assert_eq!(&v[..], b"v");
}

#[test]
fn counters_bounds_and_memory() {
    let m = MemTable::with_options(
        InternalKeyComparator::bytewise(),
        &MemTableOptions::default()
            .arena_block_size(4096)
            .whole_key_filter_bits(0),
    );
    assert!(m.is_empty());
    assert_eq!((m.len(), m.first_seqno(), m.last_seqno()), (0, None, None));
    let empty_usage = m.approximate_memory_usage();
    add_all(
        &m,
        &["a#10,SET=x", "b#7,DEL", "c#12,RANGEDEL=d", "d#9,SET=y"],
    );
    assert!(!m.is_empty());
    assert_eq!(m.len(), 4);
    assert_eq!(m.num_deletes(), 1);
    assert_eq!(m.num_range_deletes(), 1);
    assert_eq!((m.first_seqno(), m.last_seqno()), (Some(7), Some(12)));
    let usage = m.approximate_memory_usage();
    assert!(usage > empty_usage + 4 * 9, "{usage} vs {empty_usage}");
    for i in 0..200u32 {
        m.add(
            100 + u64::from(i),
            ValueKind::Put,
            &i.to_be_bytes(),
            &[0; 100],
        )
        .unwrap();
    }
    assert!(m.approximate_memory_usage() >= usage + 200 * 112);
    assert!(m.allocated_memory() >= m.approximate_memory_usage());
    assert!(format!("{m:?}").contains("len: 204"));
}

#[test]
fn a_range_tombstone_alone_makes_the_memtable_non_empty() {
    let m = mem();
    m.add(3, ValueKind::RangeDelete, b"a", b"b").unwrap();
    assert!(!m.is_empty());
    let mut it = MemTableIter::new(m.clone());
    it.first().unwrap();
    assert!(!it.valid(), "point iterator skips range tombstones");
    // A get does not take the memtable for empty: the tombstone decides.
    assert_eq!(
        m.get(b"a", 5),
        Lookup::Deleted {
            seqno: 3,
            by: DeletedBy::RangeTombstone
        }
    );
    assert_eq!(m.get(b"b", 5), Lookup::NotFound);
}

#[test]
fn refused_writes_are_invalid_arguments() {
    let m = mem();
    m.add(4, ValueKind::Put, b"k", b"v").unwrap();
    let dup = m.add(4, ValueKind::Put, b"k", b"other").unwrap_err();
    assert!(matches!(dup, Error::DuplicateEntry { .. }));
    assert_eq!(dup.to_string(), "entry k#4,SET is already in the memtable");
    // Same seqno, another kind: a different internal key.
    m.add(4, ValueKind::Delete, b"k", b"").unwrap();

    let empty = m.add(5, ValueKind::RangeDelete, b"m", b"m").unwrap_err();
    assert_eq!(
        empty.to_string(),
        "range tombstone [m, m) at seqno 5 is empty: its end must sort after its start"
    );
    assert!(m.add(5, ValueKind::RangeDelete, b"n", b"m").is_err());

    let seq = m.add(MAX_SEQNO + 1, ValueKind::Put, b"k", b"").unwrap_err();
    assert!(matches!(seq, Error::SeqnoOutOfRange { .. }));

    m.mark_immutable();
    assert!(m.is_immutable());
    let imm = m.add(6, ValueKind::Put, b"z", b"").unwrap_err();
    assert_eq!(
        imm.to_string(),
        "memtable is immutable and accepts no more writes (entry at seqno 6)"
    );
    for e in [dup, empty, seq, imm] {
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        let shared: lithify_base::Error = e.into();
        assert_eq!(shared.kind(), ErrorKind::InvalidArgument);
    }
    assert_eq!(m.len(), 2, "refused writes are not counted");
    // Reads still work on an immutable memtable. (At equal seqnos the
    // higher kind sorts first: SET before DEL. The engine never does this.)
    assert_eq!(
        m.get(b"k", 4),
        Lookup::Found {
            value: b"v",
            seqno: 4
        }
    );
}

/// A user comparator that orders keys in reverse.
struct Reverse;

impl Comparator for Reverse {
    fn name(&self) -> &str {
        "test.Reverse"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        BytewiseComparator.compare(b, a)
    }
}

#[test]
fn custom_user_comparator_orders_entries_and_ranges() {
    let m = Arc::new(MemTable::new(InternalKeyComparator::new(
        std::sync::Arc::new(Reverse),
    )));
    add_all(&m, &["a#1,SET=a", "c#2,SET=c", "b#3,SET=b"]);
    let mut it = MemTableIter::new(m.clone());
    assert_eq!(dump(&mut it, true), ["c#2,SET=c", "b#3,SET=b", "a#1,SET=a"]);
    // Under the reverse order, [c, a) is non-empty and covers c and b.
    m.add(4, ValueKind::RangeDelete, b"c", b"a").unwrap();
    assert!(m.add(5, ValueKind::RangeDelete, b"a", b"c").is_err());
    assert_eq!(
        m.get(b"b", 9),
        Lookup::Deleted {
            seqno: 4,
            by: DeletedBy::RangeTombstone
        }
    );
    assert_eq!(
        m.get(b"a", 9),
        Lookup::Found {
            value: b"a",
            seqno: 1
        }
    );
}

#[test]
fn empty_keys_and_values_and_large_entries() {
    let m = mem();
    m.add(1, ValueKind::Put, b"", b"").unwrap();
    m.add(0, ValueKind::Delete, b"", b"").unwrap();
    assert_eq!(
        m.get(b"", 0),
        Lookup::Deleted {
            seqno: 0,
            by: DeletedBy::PointTombstone
        }
    );
    assert_eq!(
        m.get(b"", 1),
        Lookup::Found {
            value: b"",
            seqno: 1
        }
    );
    let big = vec![7u8; 3 << 20];
    m.add(2, ValueKind::Put, b"big", &big).unwrap();
    assert_eq!(m.get(b"big", 2).value().map(<[u8]>::len), Some(3 << 20));
    assert!(m.approximate_memory_usage() > 3 << 20);
}

#[test]
fn the_whole_key_filter_never_hides_a_key_or_a_range_tombstone() {
    let mem = MemTable::with_options(
        InternalKeyComparator::bytewise(),
        &MemTableOptions::default().whole_key_filter_bits(1 << 17),
    );
    assert_eq!(mem.filter_size(), (1 << 17) / 8);
    mem.add(1, ValueKind::Put, b"a", b"1").unwrap();
    assert_eq!(
        mem.get(b"a", 5),
        Lookup::Found {
            value: b"1",
            seqno: 1
        }
    );
    assert_eq!(mem.get(b"zz", 5), Lookup::NotFound);
    // A refused entry is not in the filter, and does not break it.
    assert!(mem.add(1, ValueKind::Put, b"a", b"again").is_err());
    mem.add(2, ValueKind::RangeDelete, b"m", b"p").unwrap();
    assert!(matches!(mem.get(b"n", 5), Lookup::Deleted { .. }));
    assert_eq!(
        MemTable::new(InternalKeyComparator::bytewise()).filter_size(),
        0
    );
}
