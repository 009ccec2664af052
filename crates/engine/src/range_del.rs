//! Range tombstones on the read path.
//!
//! * Point lookups ask each table probed for the newest tombstone covering
//!   the key at the read snapshot ([`covering_seq`]); a version found with
//!   a lower sequence number is deleted.
//! * Iterators collect every tombstone visible at their snapshot (from the
//!   memtables and the tables whose metadata counts any) into
//!   [`Fragments`]: non-overlapping user-key intervals, each with the
//!   highest tombstone sequence number covering it. A version `k#s` is
//!   deleted when the fragment holding `k` has a sequence number above `s`.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use lithify_base::key::{trailer, unpack_trailer, user_key};
use lithify_base::{InternalKeyComparator, SeqNo};
use lithify_sstable::RangeTombstone;

/// The highest sequence number `<= snapshot` of the tombstones of one
/// table covering `key` (0 if none). `tombstones` are sorted by start
/// (`start#seq,RANGEDEL`), as tables return them.
pub(crate) fn covering_seq(
    icmp: &InternalKeyComparator,
    tombstones: &[RangeTombstone],
    key: &[u8],
    snapshot: SeqNo,
) -> SeqNo {
    let n = tombstones.partition_point(|t| icmp.compare_user(user_key(&t.start), key).is_le());
    let mut best = 0;
    for t in &tombstones[..n] {
        let seq = unpack_trailer(trailer(&t.start)).0;
        if seq <= snapshot && seq > best && icmp.compare_user(key, &t.end).is_lt() {
            best = seq;
        }
    }
    best
}

/// One tombstone in user-key terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tombstone {
    pub(crate) start: Vec<u8>,
    pub(crate) end: Vec<u8>,
    pub(crate) seq: SeqNo,
}

/// Non-overlapping intervals of tombstone coverage, sorted.
#[derive(Debug, Clone, Default)]
pub(crate) struct Fragments {
    /// `(start, end, seq)`: keys in `[start, end)` are deleted below `seq`.
    frags: Vec<(Vec<u8>, Vec<u8>, SeqNo)>,
}

#[derive(PartialEq, Eq)]
struct Active<'a> {
    seq: SeqNo,
    end: &'a [u8],
}

impl Ord for Active<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.seq.cmp(&other.seq)
    }
}

impl PartialOrd for Active<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Fragments {
    /// Fragments `tombstones` (any order, any overlap).
    pub(crate) fn new(icmp: &InternalKeyComparator, mut tombstones: Vec<Tombstone>) -> Fragments {
        tombstones.retain(|t| icmp.compare_user(&t.start, &t.end).is_lt());
        if tombstones.is_empty() {
            return Fragments::default();
        }
        tombstones.sort_by(|a, b| icmp.compare_user(&a.start, &b.start));
        let mut bounds: Vec<&[u8]> = tombstones
            .iter()
            .flat_map(|t| [&t.start[..], &t.end[..]])
            .collect();
        bounds.sort_by(|a, b| icmp.compare_user(a, b));
        bounds.dedup_by(|a, b| icmp.compare_user(a, b).is_eq());
        let mut frags: Vec<(Vec<u8>, Vec<u8>, SeqNo)> = Vec::new();
        let mut heap: BinaryHeap<Active<'_>> = BinaryHeap::new();
        let mut next = 0;
        for w in bounds.windows(2) {
            let (lo, hi) = (w[0], w[1]);
            while next < tombstones.len() && icmp.compare_user(&tombstones[next].start, lo).is_le()
            {
                heap.push(Active {
                    seq: tombstones[next].seq,
                    end: &tombstones[next].end,
                });
                next += 1;
            }
            while heap
                .peek()
                .is_some_and(|a| icmp.compare_user(a.end, lo).is_le())
            {
                heap.pop();
            }
            // Ended tombstones below the top stay in the heap until they
            // surface; the top is the highest live one once the loop above
            // removed ended tops.
            let Some(top) = heap.peek() else { continue };
            let seq = top.seq;
            match frags.last_mut() {
                Some(last) if last.2 == seq && icmp.compare_user(&last.1, lo).is_eq() => {
                    last.1 = hi.to_vec();
                }
                _ => frags.push((lo.to_vec(), hi.to_vec(), seq)),
            }
        }
        Fragments { frags }
    }

    /// The highest tombstone sequence number covering `key` (0 if none).
    pub(crate) fn max_seq(&self, icmp: &InternalKeyComparator, key: &[u8]) -> SeqNo {
        let i = self
            .frags
            .partition_point(|f| icmp.compare_user(&f.0, key).is_le());
        match i.checked_sub(1).map(|i| &self.frags[i]) {
            Some(f) if icmp.compare_user(key, &f.1).is_lt() => f.2,
            _ => 0,
        }
    }

    /// Whether the version `key#seq` is deleted by a tombstone.
    #[inline]
    pub(crate) fn covers(&self, icmp: &InternalKeyComparator, key: &[u8], seq: SeqNo) -> bool {
        !self.frags.is_empty() && self.max_seq(icmp, key) > seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn t(start: &str, end: &str, seq: SeqNo) -> Tombstone {
        Tombstone {
            start: start.as_bytes().to_vec(),
            end: end.as_bytes().to_vec(),
            seq,
        }
    }

    #[test]
    fn fragments_take_the_highest_seq() {
        let icmp = InternalKeyComparator::bytewise();
        let f = Fragments::new(&icmp, vec![t("a", "e", 5), t("c", "g", 9), t("d", "f", 7)]);
        let got: Vec<_> = f
            .frags
            .iter()
            .map(|(s, e, q)| {
                (
                    String::from_utf8_lossy(s).into_owned(),
                    String::from_utf8_lossy(e).into_owned(),
                    *q,
                )
            })
            .collect();
        assert_eq!(
            got,
            [("a".into(), "c".into(), 5), ("c".into(), "g".into(), 9)]
        );
        assert_eq!(f.max_seq(&icmp, b"b"), 5);
        assert_eq!(f.max_seq(&icmp, b"f"), 9);
        assert_eq!(f.max_seq(&icmp, b"g"), 0);
        assert!(f.covers(&icmp, b"c", 8));
        assert!(!f.covers(&icmp, b"c", 9));
    }

    proptest! {
        #[test]
        fn matches_brute_force(
            ts in proptest::collection::vec((0u8..10, 0u8..10, 1u64..20), 0..8),
            probes in proptest::collection::vec(0u8..11, 1..20),
        ) {
            let icmp = InternalKeyComparator::bytewise();
            let tombs: Vec<Tombstone> = ts.iter().map(|&(a, b, s)| Tombstone { start: vec![a], end: vec![b], seq: s }).collect();
            let f = Fragments::new(&icmp, tombs.clone());
            for p in probes {
                let expect = tombs.iter().filter(|t| t.start[0] <= p && p < t.end[0]).map(|t| t.seq).max().unwrap_or(0);
                prop_assert_eq!(f.max_seq(&icmp, &[p]), expect);
            }
        }
    }
}
