//! Range tombstones during compaction: which keys they delete, per
//! snapshot stripe, and what is written to each output file (RocksDB's
//! `CompactionRangeDelAggregator` and `CompactionOutputs::AddRangeDels`).

use std::collections::BTreeMap;

use bytes::Bytes;
use lithify_base::keyspan::{self, RangeTombstone, Span, fragment};
use lithify_base::{InternalKeyComparator, SeqNo};

use super::snapshots::Snapshots;

/// One fragment of the tombstones and the newest tombstone seqno covering
/// it in each snapshot stripe (descending).
#[derive(Debug, Clone)]
struct Fragment {
    span: Span,
    /// (stripe index, newest seqno in that stripe), stripe descending.
    seqs: Vec<(usize, SeqNo)>,
}

/// All range tombstones of a compaction's inputs, fragmented at every
/// start and end key ([`lithify_base::keyspan::fragment`]), with one
/// tombstone kept per fragment and snapshot stripe (the newest: within a
/// stripe it covers everything the older ones do, for every reader).
///
/// ```
/// use lithify_base::InternalKeyComparator;
/// use lithify_base::keyspan::RangeTombstone;
/// use lithify_compaction::iter::{RangeDelAggregator, Snapshots};
///
/// let agg = RangeDelAggregator::new(
///     InternalKeyComparator::bytewise(),
///     vec![RangeTombstone::new(&b"b"[..], &b"f"[..], 10)],
///     Snapshots::new(vec![5]),
/// );
/// assert!(agg.should_delete(b"c", 7));   // same stripe (above snapshot 5)
/// assert!(!agg.should_delete(b"c", 4));  // snapshot 5 still sees it
/// assert!(!agg.should_delete(b"f", 7));  // end is exclusive
/// ```
#[derive(Debug, Clone)]
pub struct RangeDelAggregator {
    cmp: InternalKeyComparator,
    snapshots: Snapshots,
    fragments: Vec<Fragment>,
    count: usize,
}

impl RangeDelAggregator {
    /// Aggregates `tombstones` (any order; empty ranges are ignored).
    pub fn new(
        cmp: InternalKeyComparator,
        tombstones: Vec<RangeTombstone>,
        snapshots: Snapshots,
    ) -> Self {
        let count = tombstones.iter().filter(|t| !t.is_empty(&cmp)).count();
        let fragments = fragment(&cmp, tombstones)
            .into_iter()
            .map(|span| {
                let mut per_stripe: BTreeMap<usize, SeqNo> = BTreeMap::new();
                for &seqno in &span.seqnos {
                    let e = per_stripe.entry(snapshots.stripe_index(seqno)).or_insert(0);
                    *e = (*e).max(seqno);
                }
                Fragment {
                    span,
                    seqs: per_stripe.into_iter().rev().collect(),
                }
            })
            .collect();
        RangeDelAggregator {
            cmp,
            snapshots,
            fragments,
            count,
        }
    }

    /// Whether there are no tombstones.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Number of tombstones aggregated.
    pub fn len(&self) -> usize {
        self.count
    }

    /// The fragment holding `user_key`, if any.
    fn fragment_of(&self, user_key: &[u8]) -> Option<&Fragment> {
        keyspan::span_at_by(&self.cmp, &self.fragments, |f| &f.span, user_key)
    }

    /// Whether the version `user_key@seqno` is deleted by a newer tombstone
    /// in its own snapshot stripe (a tombstone in a newer stripe does not
    /// hide it from the snapshot between them).
    pub fn should_delete(&self, user_key: &[u8], seqno: SeqNo) -> bool {
        if self.count == 0 {
            return false;
        }
        let Some(frag) = self.fragment_of(user_key) else {
            return false;
        };
        let stripe = self.snapshots.stripe_index(seqno);
        frag.seqs.iter().any(|&(s, t)| s == stripe && t > seqno)
    }

    /// The tombstones to write into an output file covering the user keys
    /// `[lower, upper)` (`None` unbounded): each kept fragment clipped to
    /// the range, adjacent pieces of one seqno merged; at the bottommost
    /// level, tombstones visible to the earliest snapshot are dropped (no
    /// older data remains for them to delete). Sorted by start, then newest
    /// first.
    pub fn tombstones_in(
        &self,
        lower: Option<&[u8]>,
        upper: Option<&[u8]>,
        bottommost: bool,
    ) -> Vec<RangeTombstone> {
        let earliest = self.snapshots.earliest();
        let mut done: Vec<RangeTombstone> = Vec::new();
        // seqno -> (start, end) of the piece being extended.
        let mut open: BTreeMap<SeqNo, (Bytes, Bytes)> = BTreeMap::new();
        for frag in &self.fragments {
            let mut lo = frag.span.start.clone();
            let mut hi = frag.span.end.clone();
            if let Some(l) = lower {
                if self.cmp.compare_user(&hi, l).is_le() {
                    continue;
                }
                if self.cmp.compare_user(&lo, l).is_lt() {
                    lo = Bytes::copy_from_slice(l);
                }
            }
            if let Some(u) = upper {
                if self.cmp.compare_user(&lo, u).is_ge() {
                    break;
                }
                if self.cmp.compare_user(&hi, u).is_gt() {
                    hi = Bytes::copy_from_slice(u);
                }
            }
            let keep: Vec<SeqNo> = frag
                .seqs
                .iter()
                .map(|&(_, t)| t)
                .filter(|&t| !(bottommost && t <= earliest))
                .collect();
            // Close pieces that do not continue into this fragment.
            let stale: Vec<SeqNo> = open
                .iter()
                .filter(|(t, (_, end))| {
                    !keep.contains(t) || !self.cmp.compare_user(end, &lo).is_eq()
                })
                .map(|(t, _)| *t)
                .collect();
            for t in stale {
                if let Some((s, e)) = open.remove(&t) {
                    done.push(RangeTombstone::new(s, e, t));
                }
            }
            for t in keep {
                match open.get_mut(&t) {
                    Some(piece) => piece.1 = hi.clone(),
                    None => {
                        open.insert(t, (lo.clone(), hi.clone()));
                    }
                }
            }
        }
        for (t, (s, e)) in open {
            done.push(RangeTombstone::new(s, e, t));
        }
        done.sort_by(|a, b| {
            self.cmp
                .compare_user(&a.start, &b.start)
                .then(b.seqno.cmp(&a.seqno))
        });
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str, e: &str, seq: SeqNo) -> RangeTombstone {
        RangeTombstone::new(
            Bytes::copy_from_slice(s.as_bytes()),
            Bytes::copy_from_slice(e.as_bytes()),
            seq,
        )
    }

    fn show(ts: &[RangeTombstone]) -> String {
        ts.iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn fragments_merge_and_clip() {
        let agg = RangeDelAggregator::new(
            InternalKeyComparator::bytewise(),
            vec![t("a", "m", 10), t("c", "f", 20), t("e", "h", 5)],
            Snapshots::none(),
        );
        // One stripe: per fragment only the newest survives.
        assert_eq!(
            show(&agg.tombstones_in(None, None, false)),
            "[a, c)#10 [c, f)#20 [f, m)#10"
        );
        assert_eq!(
            show(&agg.tombstones_in(Some(b"d"), Some(b"g"), false)),
            "[d, f)#20 [f, g)#10"
        );
        // At the bottom with no snapshot every tombstone goes.
        assert_eq!(show(&agg.tombstones_in(None, None, true)), "");
        assert!(agg.should_delete(b"d", 15));
        assert!(!agg.should_delete(b"d", 25));
        assert!(!agg.should_delete(b"m", 1));
    }

    #[test]
    fn stripes_keep_older_tombstones() {
        let agg = RangeDelAggregator::new(
            InternalKeyComparator::bytewise(),
            vec![t("a", "m", 10), t("c", "f", 20)],
            Snapshots::new(vec![15]),
        );
        assert_eq!(
            show(&agg.tombstones_in(None, None, false)),
            "[a, m)#10 [c, f)#20"
        );
        // Bottommost: #10 is visible to the earliest snapshot (15) and goes.
        assert_eq!(show(&agg.tombstones_in(None, None, true)), "[c, f)#20");
        assert!(!agg.should_delete(b"d", 12));
        assert!(agg.should_delete(b"d", 9));
        assert!(agg.should_delete(b"d", 16));
    }
}
