//! Range tombstones on the read path.
//!
//! * Point lookups ask each table probed for the newest tombstone covering
//!   the key at the read snapshot ([`covering_seq`]); a version found with
//!   a lower sequence number is deleted.
//! * Iterators collect every tombstone visible at their snapshot (from the
//!   memtables and the tables whose metadata counts any) into
//!   [`Fragments`]: the spans of `lithify_base::keyspan::fragment`, the
//!   one fragmenter of lithify. A version `k#s` is deleted when the span
//!   holding `k` has a tombstone newer than `s`.

use lithify_base::key::{trailer, unpack_trailer, user_key};
use lithify_base::keyspan::{self, RangeTombstone, Span};
use lithify_base::{InternalKeyComparator, SeqNo};
use lithify_sstable::RangeDelEntry;

/// The highest sequence number `<= snapshot` of the tombstones of one
/// table covering `key` (0 if none). `tombstones` are sorted by start
/// (`start#seq,RANGEDEL`), as tables return them.
pub(crate) fn covering_seq(
    icmp: &InternalKeyComparator,
    tombstones: &[RangeDelEntry],
    key: &[u8],
    snapshot: SeqNo,
) -> SeqNo {
    let stored = tombstones.iter().map(|t| {
        (
            user_key(&t.start),
            &t.end[..],
            unpack_trailer(trailer(&t.start)).0,
        )
    });
    keyspan::covering_seqno(icmp, stored, key, snapshot).unwrap_or(0)
}

/// The range tombstones an iterator sees, fragmented by
/// [`keyspan::fragment`]: non-overlapping user-key spans, each with the
/// highest tombstone sequence number covering it (the caller keeps only
/// tombstones visible at its snapshot).
#[derive(Debug, Clone, Default)]
pub(crate) struct Fragments {
    spans: Vec<Span>,
}

impl Fragments {
    /// Fragments `tombstones` (any order, any overlap). Only the newest
    /// sequence number of a span matters here, so adjacent spans with the
    /// same newest one are joined (fewer spans to search).
    pub(crate) fn new(icmp: &InternalKeyComparator, tombstones: Vec<RangeTombstone>) -> Fragments {
        let mut spans: Vec<Span> = Vec::new();
        for s in keyspan::fragment(icmp, tombstones) {
            let newest = s.newest();
            match spans.last_mut() {
                Some(last)
                    if last.newest() == newest
                        && icmp.compare_user(&last.end, &s.start).is_eq() =>
                {
                    last.end = s.end;
                }
                _ => spans.push(Span {
                    start: s.start,
                    end: s.end,
                    seqnos: vec![newest],
                }),
            }
        }
        Fragments { spans }
    }

    /// The highest tombstone sequence number covering `key` (0 if none).
    pub(crate) fn max_seq(&self, icmp: &InternalKeyComparator, key: &[u8]) -> SeqNo {
        keyspan::span_at(icmp, &self.spans, key).map_or(0, Span::newest)
    }

    /// Whether the version `key#seq` is deleted by a tombstone.
    #[inline]
    pub(crate) fn covers(&self, icmp: &InternalKeyComparator, key: &[u8], seq: SeqNo) -> bool {
        !self.spans.is_empty() && self.max_seq(icmp, key) > seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn t(start: &str, end: &str, seq: SeqNo) -> RangeTombstone {
        RangeTombstone::new(start.as_bytes().to_vec(), end.as_bytes().to_vec(), seq)
    }

    #[test]
    fn fragments_take_the_highest_seq() {
        let icmp = InternalKeyComparator::bytewise();
        let f = Fragments::new(&icmp, vec![t("a", "e", 5), t("c", "g", 9), t("d", "f", 7)]);
        let got: Vec<_> = f
            .spans
            .iter()
            .map(|s| {
                (
                    String::from_utf8_lossy(&s.start).into_owned(),
                    String::from_utf8_lossy(&s.end).into_owned(),
                    s.newest(),
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
            let tombs: Vec<RangeTombstone> = ts.iter().map(|&(a, b, s)| RangeTombstone::new(vec![a], vec![b], s)).collect();
            let f = Fragments::new(&icmp, tombs.clone());
            for p in probes {
                let expect = tombs.iter().filter(|t| t.start[0] <= p && p < t.end[0]).map(|t| t.seqno).max().unwrap_or(0);
                prop_assert_eq!(f.max_seq(&icmp, &[p]), expect);
            }
        }
    }
}
