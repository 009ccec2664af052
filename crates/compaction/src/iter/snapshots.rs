//! Snapshot stripes.

use lithify_base::{MAX_SEQNO, SeqNo};

/// The sequence numbers of the live snapshots, sorted ascending.
///
/// Snapshots cut the sequence-number line into **stripes**: a version
/// with seqno `s` belongs to the stripe of the smallest snapshot `>= s`
/// (or the top stripe above every snapshot). Within a stripe only the
/// newest version of a key can be seen by anyone, which is RocksDB's rule
/// (A) for dropping versions.
///
/// ```
/// use lithify_compaction::iter::Snapshots;
///
/// let s = Snapshots::new(vec![20, 10]);
/// assert_eq!(s.earliest(), 10);
/// assert_eq!(s.stripe(5), (10, 0));    // visible to snapshot 10, nothing below
/// assert_eq!(s.stripe(10), (10, 0));
/// assert_eq!(s.stripe(15), (20, 10));
/// assert_eq!(s.stripe(25).1, 20);      // top stripe: no snapshot sees it
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshots {
    seqs: Vec<SeqNo>,
}

impl Snapshots {
    /// The snapshots `seqs` (any order; duplicates are merged).
    pub fn new(mut seqs: Vec<SeqNo>) -> Self {
        seqs.sort_unstable();
        seqs.dedup();
        Snapshots { seqs }
    }

    /// No snapshots: every version is visible only at the tip.
    pub fn none() -> Self {
        Snapshots::default()
    }

    /// The snapshots, ascending.
    pub fn as_slice(&self) -> &[SeqNo] {
        &self.seqs
    }

    /// The oldest snapshot, or [`MAX_SEQNO`] when there is none (then
    /// everything counts as visible to "the earliest snapshot").
    pub fn earliest(&self) -> SeqNo {
        self.seqs.first().copied().unwrap_or(MAX_SEQNO)
    }

    /// The newest snapshot, or 0 if there is none.
    pub fn latest(&self) -> SeqNo {
        self.seqs.last().copied().unwrap_or(0)
    }

    /// The stripe of `seqno`: (the smallest snapshot `>= seqno`, or
    /// [`MAX_SEQNO`]; the largest snapshot `< seqno`, or 0) — RocksDB's
    /// `findEarliestVisibleSnapshot`.
    pub fn stripe(&self, seqno: SeqNo) -> (SeqNo, SeqNo) {
        let i = self.seqs.partition_point(|&s| s < seqno);
        let visible = self.seqs.get(i).copied().unwrap_or(MAX_SEQNO);
        let prev = if i == 0 { 0 } else { self.seqs[i - 1] };
        (visible, prev)
    }

    /// The stripe index of `seqno` (number of snapshots below it).
    pub fn stripe_index(&self, seqno: SeqNo) -> usize {
        self.seqs.partition_point(|&s| s < seqno)
    }
}
