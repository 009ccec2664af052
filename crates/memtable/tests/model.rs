//! Model test: random writes (inserted in a shuffled seqno order, as a
//! write group's members do) against a `BTreeMap` oracle, checking point
//! lookups and merge-operand collection at every snapshot, range-tombstone
//! coverage, iteration in both
//! directions and seeks.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use lithify_base::keyspan::RangeTombstone;
use lithify_base::sync::Arc;
use lithify_base::{InternalIterator, InternalKey, InternalKeyComparator, SeqNo, ValueKind};
use lithify_memtable::{DeletedBy, Lookup, MemTable, MemTableIter, MemTableOptions};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    SingleDelete(Vec<u8>),
    Merge(Vec<u8>, Vec<u8>),
    RangeDelete(Vec<u8>, Vec<u8>),
}

fn user_key() -> impl Strategy<Value = Vec<u8>> {
    // A small alphabet so versions, tombstones and ranges collide often;
    // zero bytes, and keys that share their first eight bytes (the
    // skiplist's key word) and differ after them or only in length, so
    // that equal words between distinct keys are common too.
    let tail = proptest::collection::vec(prop_oneof![Just(0u8), b'a'..b'e'], 0..3);
    (any::<bool>(), tail).prop_map(|(long, tail)| {
        let mut key = if long {
            b"prefix\0a".to_vec()
        } else {
            Vec::new()
        };
        key.extend(tail);
        key
    })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (user_key(), proptest::collection::vec(any::<u8>(), 0..12))
            .prop_map(|(k, v)| Op::Put(k, v)),
        2 => user_key().prop_map(Op::Delete),
        1 => user_key().prop_map(Op::SingleDelete),
        3 => (user_key(), proptest::collection::vec(any::<u8>(), 0..4))
            .prop_map(|(k, v)| Op::Merge(k, v)),
        1 => (user_key(), user_key())
            .prop_filter("non-empty range", |(a, b)| a != b)
            .prop_map(|(a, b)| if a < b { Op::RangeDelete(a, b) } else { Op::RangeDelete(b, a) }),
    ]
}

/// A point entry of the oracle, ordered as internal keys are: user key
/// ascending, newest first.
type VersionKey = (Vec<u8>, Reverse<SeqNo>);

fn decide(seqno: SeqNo, kind: ValueKind, value: &[u8]) -> Lookup<'_> {
    match kind {
        ValueKind::Put => Lookup::Found { value, seqno },
        ValueKind::Merge => Lookup::Merge {
            operand: value,
            seqno,
        },
        _ => Lookup::Deleted {
            seqno,
            by: DeletedBy::PointTombstone,
        },
    }
}

/// The oracle: point versions and range tombstones.
#[derive(Default)]
struct Oracle {
    points: BTreeMap<VersionKey, (ValueKind, Vec<u8>)>,
    ranges: Vec<RangeTombstone>,
}

impl Oracle {
    fn covering(&self, key: &[u8], snapshot: SeqNo) -> Option<SeqNo> {
        self.ranges
            .iter()
            .filter(|r| &r.start[..] <= key && key < &r.end[..] && r.seqno <= snapshot)
            .map(|r| r.seqno)
            .max()
    }

    fn get(&self, key: &[u8], snapshot: SeqNo) -> Lookup<'_> {
        let newest = self
            .points
            .range((key.to_vec(), Reverse(snapshot))..=(key.to_vec(), Reverse(0)))
            .next();
        let point_seq = newest.map(|((_, Reverse(s)), _)| *s);
        if let Some(r) = self.covering(key, snapshot)
            && point_seq.is_none_or(|p| r > p)
        {
            return Lookup::Deleted {
                seqno: r,
                by: DeletedBy::RangeTombstone,
            };
        }
        match newest {
            None => Lookup::NotFound,
            Some(((_, Reverse(seqno)), (kind, value))) => decide(*seqno, *kind, value),
        }
    }

    /// Operands newest first down to the deciding version, as
    /// `MemTable::collect_operands`.
    fn collect_operands(&self, key: &[u8], snapshot: SeqNo) -> (Lookup<'_>, Vec<&[u8]>) {
        let covering = self.covering(key, snapshot);
        let mut operands = Vec::new();
        for ((_, Reverse(seqno)), (kind, value)) in self
            .points
            .range((key.to_vec(), Reverse(snapshot))..=(key.to_vec(), Reverse(0)))
        {
            if let Some(r) = covering
                && r > *seqno
            {
                let deleted = Lookup::Deleted {
                    seqno: r,
                    by: DeletedBy::RangeTombstone,
                };
                return (deleted, operands);
            }
            match decide(*seqno, *kind, value) {
                Lookup::Merge { operand, .. } => operands.push(operand),
                decided => return (decided, operands),
            }
        }
        let end = match covering {
            Some(seqno) => Lookup::Deleted {
                seqno,
                by: DeletedBy::RangeTombstone,
            },
            None => Lookup::NotFound,
        };
        (end, operands)
    }

    /// Encoded internal keys and values of the point entries, in order.
    fn entries(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        self.points
            .iter()
            .map(|((k, Reverse(s)), (kind, v))| {
                (InternalKey::new(k, *s, *kind).into_encoded(), v.clone())
            })
            .collect()
    }
}

fn collect(it: &mut MemTableIter, forward: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    if forward {
        it.first().unwrap();
    } else {
        it.last().unwrap();
    }
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        if forward {
            it.next().unwrap();
        } else {
            it.prev().unwrap();
        }
    }
    out
}

fn kind() -> impl Strategy<Value = ValueKind> {
    proptest::sample::select(ValueKind::ALL.to_vec())
}

/// 256 cases; under Miri a handful, and no failure file (Miri isolates the
/// test from the file system).
fn config() -> ProptestConfig {
    let mut config = ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 256 });
    if cfg!(miri) {
        config.failure_persistence = None;
    }
    config
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn memtable_matches_btreemap_oracle(
        ops in proptest::collection::vec(op(), 0..60),
        order_keys in proptest::collection::vec(any::<u32>(), 60),
        seeks in proptest::collection::vec((user_key(), 0u64..70, kind()), 0..20),
        block in prop_oneof![Just(1024usize), Just(1 << 20)],
        // No filter, one that says "maybe" to nearly everything, and one
        // that answers most misses itself.
        filter_bits in prop_oneof![Just(0u64), Just(64), Just(1 << 14)],
    ) {
        let mem = Arc::new(MemTable::with_options(
            InternalKeyComparator::bytewise(),
            &MemTableOptions::default()
                .arena_block_size(block)
                .whole_key_filter_bits(filter_bits),
        ));
        let mut oracle = Oracle::default();
        // Seqno i + 1 for op i, inserted in a shuffled order.
        let mut order: Vec<usize> = (0..ops.len()).collect();
        order.sort_by_key(|&i| order_keys[i]);
        for i in order {
            let seqno = i as u64 + 1;
            match &ops[i] {
                Op::Put(k, v) => {
                    mem.add(seqno, ValueKind::Put, k, v).unwrap();
                    oracle.points.insert((k.clone(), Reverse(seqno)), (ValueKind::Put, v.clone()));
                }
                Op::Delete(k) => {
                    mem.add(seqno, ValueKind::Delete, k, b"").unwrap();
                    oracle.points.insert((k.clone(), Reverse(seqno)), (ValueKind::Delete, Vec::new()));
                }
                Op::SingleDelete(k) => {
                    mem.add(seqno, ValueKind::SingleDelete, k, b"").unwrap();
                    oracle.points.insert((k.clone(), Reverse(seqno)), (ValueKind::SingleDelete, Vec::new()));
                }
                Op::Merge(k, v) => {
                    mem.add(seqno, ValueKind::Merge, k, v).unwrap();
                    oracle.points.insert((k.clone(), Reverse(seqno)), (ValueKind::Merge, v.clone()));
                }
                Op::RangeDelete(s, e) => {
                    mem.add(seqno, ValueKind::RangeDelete, s, e).unwrap();
                    oracle.ranges.push(RangeTombstone::new(s.clone(), e.clone(), seqno));
                }
            }
        }

        // Counters.
        prop_assert_eq!(mem.len(), ops.len());
        prop_assert_eq!(mem.is_empty(), ops.is_empty());
        prop_assert_eq!(mem.num_range_deletes(), oracle.ranges.len());
        prop_assert_eq!(mem.num_deletes(), ops.iter().filter(|o| matches!(o, Op::Delete(_) | Op::SingleDelete(_))).count());
        prop_assert_eq!(mem.num_merges(), ops.iter().filter(|o| matches!(o, Op::Merge(..))).count());
        prop_assert_eq!(mem.first_seqno(), (!ops.is_empty()).then_some(1));
        prop_assert_eq!(mem.last_seqno(), (!ops.is_empty()).then_some(ops.len() as u64));

        // Point lookups of every key of the alphabet, at every snapshot.
        let mut keys: Vec<Vec<u8>> = vec![Vec::new()];
        for a in b'a'..b'e' {
            keys.push(vec![a]);
            for b in b'a'..b'e' {
                keys.push(vec![a, b]);
            }
        }
        for key in &keys {
            for snapshot in 0..=ops.len() as u64 + 1 {
                prop_assert_eq!(mem.get(key, snapshot), oracle.get(key, snapshot),
                    "key {:?} at {}", key, snapshot);
                prop_assert_eq!(mem.max_covering_tombstone_seq(key, snapshot), oracle.covering(key, snapshot));
                let mut operands = Vec::new();
                let end = mem.collect_operands(key, snapshot, &mut operands);
                prop_assert_eq!((end, operands), oracle.collect_operands(key, snapshot),
                    "operands of {:?} at {}", key, snapshot);
            }
        }

        // Full scans, both directions.
        let want = oracle.entries();
        let mut it = MemTableIter::new(mem.clone());
        prop_assert_eq!(collect(&mut it, true), want.clone());
        let mut rev = want.clone();
        rev.reverse();
        prop_assert_eq!(collect(&mut it, false), rev);

        // Range tombstones, listed and iterated in order.
        let mut ranges = oracle.ranges.clone();
        ranges.sort_by(|a, b| a.start.cmp(&b.start).then(b.seqno.cmp(&a.seqno)));
        prop_assert_eq!(mem.range_tombstones(), ranges.clone());
        let mut rit = MemTableIter::range_deletions(mem.clone());
        let listed: Vec<(Vec<u8>, Vec<u8>)> = collect(&mut rit, true);
        let want_ranges: Vec<(Vec<u8>, Vec<u8>)> = ranges
            .iter()
            .map(|r| (InternalKey::new(&r.start, r.seqno, ValueKind::RangeDelete).into_encoded(), r.end.to_vec()))
            .collect();
        prop_assert_eq!(listed, want_ranges);

        // Seeks, then one step each way.
        for (k, s, kd) in seeks {
            let target = InternalKey::new(&k, s, kd).into_encoded();
            let cmp = InternalKeyComparator::bytewise();
            use lithify_base::Comparator;
            let ge = want.iter().position(|(key, _)| cmp.compare(key, &target).is_ge());
            it.seek_ge(&target).unwrap();
            prop_assert_eq!(it.valid().then(|| it.key().to_vec()), ge.map(|i| want[i].0.clone()));
            if let Some(i) = ge {
                it.prev().unwrap();
                prop_assert_eq!(it.valid().then(|| it.key().to_vec()), i.checked_sub(1).map(|j| want[j].0.clone()));
            }
            let lt = want.iter().rposition(|(key, _)| cmp.compare(key, &target).is_lt());
            it.seek_lt(&target).unwrap();
            prop_assert_eq!(it.valid().then(|| it.key().to_vec()), lt.map(|i| want[i].0.clone()));
            if let Some(i) = lt {
                it.next().unwrap();
                prop_assert_eq!(it.valid().then(|| it.key().to_vec()), want.get(i + 1).map(|e| e.0.clone()));
            }
        }
    }
}
