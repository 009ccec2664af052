//! Snapshots: sequence numbers pinned so that compactions keep what they
//! can see.

use std::fmt;

use lithify_base::SeqNo;
use std::sync::Arc;

use lithify_base::sync::Mutex;
use lithify_base::sync::atomic::{AtomicU64, Ordering};

/// The live snapshots of a database, as a multiset of sequence numbers.
#[derive(Debug, Default)]
pub(crate) struct SnapshotList {
    /// `(sequence number, snapshots at it)`, ascending. A sorted vector:
    /// snapshots are mostly taken at the newest sequence number (a push)
    /// and few are live at once, and unlike a map it keeps its allocation
    /// when the last snapshot goes (a transaction takes and drops one).
    live: Mutex<Vec<(SeqNo, usize)>>,
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
        {
            let mut live = self.live.lock();
            match live.binary_search_by_key(&seqno, |e| e.0) {
                Ok(i) => live[i].1 += 1,
                Err(i) => live.insert(i, (seqno, 1)),
            }
        }
        Snapshot {
            inner: Arc::new(SnapshotInner {
                seqno,
                list: Arc::clone(self),
            }),
        }
    }

    fn release(&self, seqno: SeqNo) {
        let mut live = self.live.lock();
        if let Ok(i) = live.binary_search_by_key(&seqno, |e| e.0) {
            live[i].1 -= 1;
            if live[i].1 == 0 {
                live.remove(i);
            }
        }
        let oldest = live.first().map_or(seqno, |e| e.0);
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
        self.live.lock().iter().map(|e| e.0).collect()
    }

    /// The oldest live snapshot.
    pub(crate) fn oldest(&self) -> Option<SeqNo> {
        self.live.lock().first().map(|e| e.0)
    }

    /// Runs `f` (told whether any snapshot is live) while no snapshot can
    /// be taken or released.
    pub(crate) fn with_no_new<R>(&self, f: impl FnOnce(bool) -> R) -> R {
        let live = self.live.lock();
        f(!live.is_empty())
    }

    /// The number of live snapshots (counting duplicates).
    pub(crate) fn count(&self) -> usize {
        self.live.lock().iter().map(|e| e.1).sum()
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
