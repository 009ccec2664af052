//! Snapshots: sequence numbers pinned so that compactions keep what they
//! can see.

use std::collections::BTreeMap;
use std::fmt;

use lithify_base::SeqNo;
use std::sync::Arc;

use lithify_base::sync::Mutex;
use lithify_base::sync::atomic::{AtomicU64, Ordering};

/// The live snapshots of a database, as a multiset of sequence numbers.
#[derive(Debug, Default)]
pub(crate) struct SnapshotList {
    live: Mutex<BTreeMap<SeqNo, usize>>,
    /// RocksDB's `oldest_snapshot_seqnum` as of the last release: the
    /// oldest live snapshot then, or the released one when none was left.
    /// Bottommost files older than this are recompacted so that their
    /// tombstones go and their sequence numbers become 0.
    threshold: AtomicU64,
}

impl SnapshotList {
    pub(crate) fn new() -> Self {
        SnapshotList::default()
    }

    /// Registers a snapshot at `seqno`.
    pub(crate) fn acquire(self: &Arc<Self>, seqno: SeqNo) -> Snapshot {
        *self.live.lock().entry(seqno).or_insert(0) += 1;
        Snapshot {
            inner: Arc::new(SnapshotInner {
                seqno,
                list: Arc::clone(self),
            }),
        }
    }

    fn release(&self, seqno: SeqNo) {
        let mut live = self.live.lock();
        if let Some(n) = live.get_mut(&seqno) {
            *n -= 1;
            if *n == 0 {
                live.remove(&seqno);
            }
        }
        let oldest = live.keys().next().copied().unwrap_or(seqno);
        self.threshold.fetch_max(oldest, Ordering::Relaxed);
    }

    /// The bottommost-files threshold (0 until a snapshot is released).
    pub(crate) fn bottommost_threshold(&self) -> SeqNo {
        let t = self.threshold.load(Ordering::Relaxed);
        match self.oldest() {
            Some(oldest) => t.min(oldest),
            None => t,
        }
    }

    /// The distinct live snapshot sequence numbers, ascending (what a
    /// flush or compaction must preserve).
    pub(crate) fn sequences(&self) -> Vec<SeqNo> {
        self.live.lock().keys().copied().collect()
    }

    /// The oldest live snapshot.
    pub(crate) fn oldest(&self) -> Option<SeqNo> {
        self.live.lock().keys().next().copied()
    }

    /// Runs `f` (told whether any snapshot is live) while no snapshot can
    /// be taken or released.
    pub(crate) fn with_no_new<R>(&self, f: impl FnOnce(bool) -> R) -> R {
        let live = self.live.lock();
        f(!live.is_empty())
    }

    /// The number of live snapshots (counting duplicates).
    pub(crate) fn count(&self) -> usize {
        self.live.lock().values().sum()
    }
}

struct SnapshotInner {
    seqno: SeqNo,
    list: Arc<SnapshotList>,
}

impl Drop for SnapshotInner {
    fn drop(&mut self) {
        self.list.release(self.seqno);
    }
}

/// A consistent view of the database as of one moment: reads through it
/// see every write acknowledged before it was taken and none after.
/// Compactions keep the versions it can see until it (and its clones) are
/// dropped. Cheap to clone.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use lithify_engine::{Db, Options, ReadOptions};
///
/// let db = Db::open(dir.path(), Options::default()).unwrap();
/// db.put(b"k", b"old").unwrap();
/// let snap = db.snapshot();
/// db.put(b"k", b"new").unwrap();
/// assert_eq!(db.get_opt(b"k", &ReadOptions::at(&snap)).unwrap().unwrap(), &b"old"[..]);
/// assert_eq!(db.get(b"k").unwrap().unwrap(), &b"new"[..]);
/// ```
#[derive(Clone)]
pub struct Snapshot {
    inner: Arc<SnapshotInner>,
}

impl Snapshot {
    /// The sequence number the snapshot reads at.
    pub fn sequence_number(&self) -> SeqNo {
        self.inner.seqno
    }
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snapshot")
            .field("seqno", &self.inner.seqno)
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn multiset_release() {
        let list = Arc::new(SnapshotList::new());
        let a = list.acquire(5);
        let b = list.acquire(5);
        let c = list.acquire(9);
        assert_eq!(list.sequences(), [5, 9]);
        assert_eq!(list.count(), 3);
        drop(a);
        assert_eq!(list.sequences(), [5, 9]);
        let b2 = b.clone();
        drop(b);
        assert_eq!(list.oldest(), Some(5));
        drop(b2);
        assert_eq!(list.sequences(), [9]);
        drop(c);
        assert!(list.sequences().is_empty());
    }
}
