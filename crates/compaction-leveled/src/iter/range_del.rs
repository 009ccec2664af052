//! Range tombstones during compaction: which keys they delete, per
//! snapshot stripe, and what is written to each output file (RocksDB's
//! `CompactionRangeDelAggregator` and `CompactionOutputs::AddRangeDels`).

use std::collections::BTreeMap;
use std::fmt;

use bytes::Bytes;
use lithify_base::key::escape;
use lithify_base::{InternalKey, InternalKeyComparator, ParsedInternalKey, SeqNo, ValueKind};

use super::snapshots::Snapshots;

/// A range tombstone: every version older than `seqno` of the user keys in
/// `[start, end)` is deleted.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RangeTombstone {
    /// First deleted user key.
    pub start: Bytes,
    /// First user key after the range.
    pub end: Bytes,
    /// Sequence number of the tombstone.
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

    /// Decodes a tombstone as stored in a table's range-deletion block:
    /// `start#seqno,RANGEDEL` and the end user key. `None` if `start` is not
    /// such a key.
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
}

impl fmt::Display for RangeTombstone {
    /// `[start, end)#seqno`.
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

/// One fragment `[bounds[i], bounds[i + 1])` and the newest tombstone
/// seqno covering it in each snapshot stripe (descending).
#[derive(Debug, Clone)]
struct Fragment {
    /// (stripe index, newest seqno in that stripe), stripe descending.
    seqs: Vec<(usize, SeqNo)>,
}

/// All range tombstones of a compaction's inputs, fragmented at every
/// start and end key, with one tombstone kept per fragment and snapshot
/// stripe (the newest: within a stripe it covers everything the older
/// ones do, for every reader).
///
/// ```
/// use lithify_base::InternalKeyComparator;
/// use lithify_compaction_leveled::iter::{RangeDelAggregator, RangeTombstone, Snapshots};
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
    bounds: Vec<Bytes>,
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
        let mut tombstones: Vec<RangeTombstone> = tombstones
            .into_iter()
            .filter(|t| cmp.compare_user(&t.start, &t.end).is_lt())
            .collect();
        let count = tombstones.len();
        let mut bounds: Vec<Bytes> = tombstones
            .iter()
            .flat_map(|t| [t.start.clone(), t.end.clone()])
            .collect();
        bounds.sort_by(|a, b| cmp.compare_user(a, b));
        bounds.dedup_by(|a, b| cmp.compare_user(a, b).is_eq());
        tombstones.sort_by(|a, b| cmp.compare_user(&a.start, &b.start));

        // Sweep: tombstones become active at their start bound and leave
        // at their end bound.
        let mut fragments = Vec::with_capacity(bounds.len().saturating_sub(1));
        let mut active: Vec<&RangeTombstone> = Vec::new();
        let mut next = 0;
        for lo in bounds.iter().take(bounds.len().saturating_sub(1)) {
            active.retain(|t| cmp.compare_user(&t.end, lo).is_gt());
            while next < tombstones.len() && cmp.compare_user(&tombstones[next].start, lo).is_le() {
                active.push(&tombstones[next]);
                next += 1;
            }
            let mut per_stripe: BTreeMap<usize, SeqNo> = BTreeMap::new();
            for t in &active {
                let e = per_stripe
                    .entry(snapshots.stripe_index(t.seqno))
                    .or_insert(0);
                *e = (*e).max(t.seqno);
            }
            fragments.push(Fragment {
                seqs: per_stripe.into_iter().rev().collect(),
            });
        }
        RangeDelAggregator {
            cmp,
            snapshots,
            bounds,
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
        let i = self
            .bounds
            .partition_point(|b| self.cmp.compare_user(b, user_key).is_le());
        if i == 0 || i >= self.bounds.len() {
            return None;
        }
        self.fragments.get(i - 1)
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
        for (i, frag) in self.fragments.iter().enumerate() {
            let mut lo = self.bounds[i].clone();
            let mut hi = self.bounds[i + 1].clone();
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
