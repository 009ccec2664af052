//! Range tombstones and their fragments, in one place (Pebble's `keyspan`
//! package): the memtable hands out [`RangeTombstone`]s, compactions and
//! the engine's iterators cut them into non-overlapping [`Span`]s with
//! [`fragment`], and tables store them in their own form (the start as the
//! internal key `start#seqno,RANGEDEL`, the end as a user key), which
//! [`RangeTombstone::from_stored`] reads back.
//!
//! ```
//! use lithify_base::InternalKeyComparator;
//! use lithify_base::keyspan::{RangeTombstone, fragment};
//!
//! let cmp = InternalKeyComparator::bytewise();
//! let spans = fragment(
//!     &cmp,
//!     vec![
//!         RangeTombstone::new(&b"a"[..], &b"e"[..], 5),
//!         RangeTombstone::new(&b"c"[..], &b"g"[..], 9),
//!     ],
//! );
//! let text: Vec<String> = spans.iter().map(|s| s.to_string()).collect();
//! assert_eq!(text, ["[a, c)#5", "[c, e)#9,5", "[e, g)#9"]);
//! ```

use std::fmt;

use bytes::Bytes;

use crate::comparator::InternalKeyComparator;
use crate::key::{InternalKey, ParsedInternalKey, SeqNo, ValueKind, escape};

/// A range tombstone: every version older than `seqno` of the user keys in
/// `[start, end)` is deleted.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RangeTombstone {
    /// The first deleted user key.
    pub start: Bytes,
    /// The first user key after the range (exclusive).
    pub end: Bytes,
    /// The tombstone's sequence number.
    pub seqno: SeqNo,
}

impl RangeTombstone {
    /// A tombstone over `[start, end)` at `seqno`.
    pub fn new(start: impl Into<Bytes>, end: impl Into<Bytes>, seqno: SeqNo) -> Self {
        RangeTombstone {
            start: start.into(),
            end: end.into(),
            seqno,
        }
    }

    /// Reads a tombstone back from its stored form: `start` the internal
    /// key `start#seqno,RANGEDEL`, `end` the end user key. `None` if
    /// `start` is not such a key.
    pub fn from_stored(start: &[u8], end: &[u8]) -> Option<Self> {
        let p = ParsedInternalKey::parse(start).ok()?;
        (p.kind == ValueKind::RangeDelete).then(|| {
            RangeTombstone::new(
                Bytes::copy_from_slice(p.user_key),
                Bytes::copy_from_slice(end),
                p.seqno,
            )
        })
    }

    /// The stored start key `start#seqno,RANGEDEL`.
    pub fn start_key(&self) -> InternalKey {
        InternalKey::new(&self.start, self.seqno, ValueKind::RangeDelete)
    }

    /// Whether the range is empty (`start >= end`): it deletes nothing.
    pub fn is_empty(&self, cmp: &InternalKeyComparator) -> bool {
        cmp.compare_user(&self.start, &self.end).is_ge()
    }
}

impl fmt::Display for RangeTombstone {
    /// `[start, end)#seqno`, keys escaped as in the internal-key text form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{}, {})#{}",
            escape(&self.start),
            escape(&self.end),
            self.seqno
        )
    }
}

impl fmt::Debug for RangeTombstone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// One fragment of a set of range tombstones: the user keys in
/// `[start, end)`, covered by the tombstones whose sequence numbers are
/// `seqnos` (distinct, newest first, never empty). Spans from one
/// [`fragment`] call never overlap and are sorted.
#[derive(Clone, PartialEq, Eq)]
pub struct Span {
    /// The first user key of the fragment.
    pub start: Bytes,
    /// The first user key after it (exclusive).
    pub end: Bytes,
    /// The covering tombstones' sequence numbers, newest first.
    pub seqnos: Vec<SeqNo>,
}

impl Span {
    /// The newest covering tombstone's sequence number.
    pub fn newest(&self) -> SeqNo {
        self.seqnos[0]
    }
}

impl fmt::Display for Span {
    /// `[start, end)#s1,s2,...`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}, {})#", escape(&self.start), escape(&self.end))?;
        for (i, s) in self.seqnos.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{s}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Cuts `tombstones` (any order, any overlap; empty ranges are ignored) at
/// every start and end key into non-overlapping, sorted [`Span`]s, each
/// with the sequence numbers of every tombstone covering it (Pebble's
/// `keyspan.Fragmenter`). Keys no tombstone covers get no span.
pub fn fragment(
    cmp: &InternalKeyComparator,
    tombstones: impl IntoIterator<Item = RangeTombstone>,
) -> Vec<Span> {
    let mut tombstones: Vec<RangeTombstone> = tombstones
        .into_iter()
        .filter(|t| !t.is_empty(cmp))
        .collect();
    if tombstones.is_empty() {
        return Vec::new();
    }
    tombstones.sort_by(|a, b| cmp.compare_user(&a.start, &b.start));
    let mut bounds: Vec<Bytes> = tombstones
        .iter()
        .flat_map(|t| [t.start.clone(), t.end.clone()])
        .collect();
    bounds.sort_by(|a, b| cmp.compare_user(a, b));
    bounds.dedup_by(|a, b| cmp.compare_user(a, b).is_eq());
    // Sweep: a tombstone is active from its start bound to its end bound.
    let mut spans = Vec::with_capacity(bounds.len() - 1);
    let mut active: Vec<&RangeTombstone> = Vec::new();
    let mut next = 0;
    for w in bounds.windows(2) {
        let (lo, hi) = (&w[0], &w[1]);
        active.retain(|t| cmp.compare_user(&t.end, lo).is_gt());
        while next < tombstones.len() && cmp.compare_user(&tombstones[next].start, lo).is_le() {
            active.push(&tombstones[next]);
            next += 1;
        }
        if active.is_empty() {
            continue;
        }
        let mut seqnos: Vec<SeqNo> = active.iter().map(|t| t.seqno).collect();
        seqnos.sort_unstable_by(|a, b| b.cmp(a));
        seqnos.dedup();
        spans.push(Span {
            start: lo.clone(),
            end: hi.clone(),
            seqnos,
        });
    }
    spans
}

/// The span of `spans` (sorted, non-overlapping, as [`fragment`] returns
/// them) holding `user_key`, if any.
pub fn span_at<'a>(
    cmp: &InternalKeyComparator,
    spans: &'a [Span],
    user_key: &[u8],
) -> Option<&'a Span> {
    span_at_by(cmp, spans, |s| s, user_key)
}

/// [`span_at`] over items that each carry a span (`span_of` finds it):
/// the item whose span holds `user_key`, if any.
pub fn span_at_by<'a, T>(
    cmp: &InternalKeyComparator,
    items: &'a [T],
    span_of: impl Fn(&T) -> &Span,
    user_key: &[u8],
) -> Option<&'a T> {
    let i = items.partition_point(|t| cmp.compare_user(&span_of(t).start, user_key).is_le());
    let t = items.get(i.checked_sub(1)?)?;
    cmp.compare_user(user_key, &span_of(t).end)
        .is_lt()
        .then_some(t)
}

/// The newest sequence number at or below `snapshot` of the tombstones
/// covering `user_key` (RocksDB's `MaxCoveringTombstoneSeqnum`), over
/// unfragmented tombstones given as `(start, end, seqno)` in start order
/// (a memtable's, or a table's range-deletion block): the walk stops at
/// the first tombstone that starts after `user_key`.
///
/// ```
/// use lithify_base::InternalKeyComparator;
/// use lithify_base::keyspan::covering_seqno;
///
/// let cmp = InternalKeyComparator::bytewise();
/// let tombstones = [(&b"a"[..], &b"m"[..], 5), (&b"c"[..], &b"e"[..], 9)];
/// assert_eq!(covering_seqno(&cmp, tombstones, b"d", 100), Some(9));
/// assert_eq!(covering_seqno(&cmp, tombstones, b"d", 8), Some(5)); // 9 is not visible
/// assert_eq!(covering_seqno(&cmp, tombstones, b"m", 100), None); // end is exclusive
/// ```
pub fn covering_seqno<'a>(
    cmp: &InternalKeyComparator,
    tombstones: impl IntoIterator<Item = (&'a [u8], &'a [u8], SeqNo)>,
    user_key: &[u8],
    snapshot: SeqNo,
) -> Option<SeqNo> {
    let mut best = None;
    for (start, end, seqno) in tombstones {
        if cmp.compare_user(start, user_key).is_gt() {
            break;
        }
        if seqno <= snapshot
            && best.is_none_or(|b| seqno > b)
            && cmp.compare_user(user_key, end).is_lt()
        {
            best = Some(seqno);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn t(s: &str, e: &str, seq: SeqNo) -> RangeTombstone {
        RangeTombstone::new(
            Bytes::copy_from_slice(s.as_bytes()),
            Bytes::copy_from_slice(e.as_bytes()),
            seq,
        )
    }

    #[test]
    fn stored_form_round_trips() {
        let rt = t("b", "f", 7);
        let start = rt.start_key();
        assert_eq!(start.to_string(), "b#7,RANGEDEL");
        assert_eq!(RangeTombstone::from_stored(start.encoded(), b"f"), Some(rt));
        let put = InternalKey::new(b"b", 7, ValueKind::Put);
        assert_eq!(RangeTombstone::from_stored(put.encoded(), b"f"), None);
        assert_eq!(RangeTombstone::from_stored(b"x", b"f"), None);
    }

    #[test]
    fn spans_split_at_every_bound_and_skip_gaps() {
        let cmp = InternalKeyComparator::bytewise();
        let spans = fragment(
            &cmp,
            vec![
                t("a", "c", 3),
                t("e", "g", 4),
                t("b", "f", 4),
                t("x", "x", 9),
            ],
        );
        let text: Vec<String> = spans.iter().map(|s| s.to_string()).collect();
        assert_eq!(
            text,
            ["[a, b)#3", "[b, c)#4,3", "[c, e)#4", "[e, f)#4", "[f, g)#4"]
        );
        assert_eq!(span_at(&cmp, &spans, b"b").map(Span::newest), Some(4));
        assert_eq!(span_at(&cmp, &spans, b"g"), None);
        assert!(fragment(&cmp, Vec::new()).is_empty());
    }

    proptest! {
        #[test]
        fn spans_match_brute_force(
            ts in proptest::collection::vec((0u8..10, 0u8..10, 1u64..20), 0..8),
            probes in proptest::collection::vec(0u8..11, 1..20),
        ) {
            let cmp = InternalKeyComparator::bytewise();
            let tombs: Vec<RangeTombstone> =
                ts.iter().map(|&(a, b, s)| RangeTombstone::new(vec![a], vec![b], s)).collect();
            let spans = fragment(&cmp, tombs.clone());
            for w in spans.windows(2) {
                prop_assert!(w[0].end <= w[1].start);
            }
            for p in probes {
                let mut expect: Vec<SeqNo> = tombs
                    .iter()
                    .filter(|t| t.start[0] <= p && p < t.end[0])
                    .map(|t| t.seqno)
                    .collect();
                expect.sort_unstable_by(|a, b| b.cmp(a));
                expect.dedup();
                let got = span_at(&cmp, &spans, &[p]).map(|s| s.seqnos.clone()).unwrap_or_default();
                prop_assert_eq!(got, expect);
            }
        }
    }
}
