//! [`MemTableIter`]: an [`InternalIterator`] over a memtable it co-owns.

use std::fmt;

use lithify_base::sync::Arc;
use lithify_base::{InternalIterator, Result};

use crate::memtable::MemTable;
use crate::skiplist::{NodePtr, SearchKey, SkipList};

/// Which list of the memtable an iterator walks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Points,
    RangeDeletions,
}

/// A cursor over a memtable's encoded internal keys, in comparator order
/// (user key ascending, newest version first).
///
/// It holds an `Arc` of the memtable, so it can outlive the reference it
/// was made from (the engine's user iterators and the flush do), and the
/// memtable's memory lives until the iterator is dropped too. Keys and
/// values are borrowed from the memtable's arena without copying.
///
/// The iterator sees entries added while it is open if they land ahead of
/// it; it never sees a partially written entry. Moving never fails: every
/// method returns `Ok`.
///
/// ```
/// use lithify_base::{InternalIterator, InternalKey, InternalKeyComparator, ValueKind};
/// use lithify_base::sync::Arc;
/// use lithify_memtable::{MemTable, MemTableIter};
///
/// let mem = Arc::new(MemTable::new(InternalKeyComparator::bytewise()));
/// mem.add(1, ValueKind::Put, b"a", b"1").unwrap();
/// mem.add(2, ValueKind::Put, b"b", b"2").unwrap();
/// mem.add(3, ValueKind::Delete, b"a", b"").unwrap();
///
/// let mut it = MemTableIter::new(mem.clone());
/// let mut seen = Vec::new();
/// it.first().unwrap();
/// while it.valid() {
///     seen.push(InternalKey::from_encoded(it.key().to_vec()).unwrap().to_string());
///     it.next().unwrap();
/// }
/// assert_eq!(seen, ["a#3,DEL", "a#1,SET", "b#2,SET"]);
///
/// it.seek_lt(InternalKey::new(b"b", 2, ValueKind::Put).encoded()).unwrap();
/// assert_eq!(it.value(), b"1");
/// ```
pub struct MemTableIter {
    mem: Arc<MemTable>,
    source: Source,
    node: Option<NodePtr>,
}

// SAFETY: `node` points into the arena of `mem`, which this iterator keeps
// alive; published nodes are immutable except for their atomic links, and
// the memtable itself is `Send + Sync`.
unsafe impl Send for MemTableIter {}
// SAFETY: `&MemTableIter` only reads immutable node bytes (see `Send`).
unsafe impl Sync for MemTableIter {}

impl MemTableIter {
    /// A cursor over the point entries (`Put`, `Delete`) of `mem`, not yet
    /// positioned.
    pub fn new(mem: Arc<MemTable>) -> Self {
        MemTableIter {
            mem,
            source: Source::Points,
            node: None,
        }
    }

    /// A cursor over the range tombstones of `mem`: keys
    /// `start#seqno,RANGEDEL`, values the end keys. The flush writes these
    /// to the table's range-deletion block.
    pub fn range_deletions(mem: Arc<MemTable>) -> Self {
        MemTableIter {
            mem,
            source: Source::RangeDeletions,
            node: None,
        }
    }

    /// The memtable this iterator walks.
    pub fn memtable(&self) -> &Arc<MemTable> {
        &self.mem
    }

    fn list(&self) -> &SkipList {
        match self.source {
            Source::Points => self.mem.points(),
            Source::RangeDeletions => self.mem.range_dels(),
        }
    }

    fn current(&self) -> NodePtr {
        match self.node {
            Some(node) => node,
            None => panic!("MemTableIter::key/value called on an invalid iterator"),
        }
    }
}

impl InternalIterator for MemTableIter {
    fn seek_ge(&mut self, target: &[u8]) -> Result<()> {
        let list = self.list();
        let node = list.find_greater_or_equal(&SearchKey::from_encoded(target));
        if let Some(node) = node {
            list.prefetch_record_and_next(node);
        }
        self.node = node;
        Ok(())
    }

    fn seek_lt(&mut self, target: &[u8]) -> Result<()> {
        self.node = self.list().find_less_than(&SearchKey::from_encoded(target));
        Ok(())
    }

    fn first(&mut self) -> Result<()> {
        let list = self.list();
        let node = list.first();
        if let Some(node) = node {
            list.prefetch_record_and_next(node);
        }
        self.node = node;
        Ok(())
    }

    fn last(&mut self) -> Result<()> {
        self.node = self.list().last();
        Ok(())
    }

    #[inline]
    fn next(&mut self) -> Result<()> {
        if let Some(node) = self.node {
            let list = self.list();
            let next = list.next(node);
            // Entries sit in the arenas in insertion order, so each step
            // is a cache miss for the node and one for the record: start
            // the ones ahead now (the flush and scans then overlap them
            // with their work on this entry).
            if let Some(next) = next {
                list.prefetch_successor(next);
            }
            self.node = next;
        }
        Ok(())
    }

    fn prev(&mut self) -> Result<()> {
        // No back links: find the last entry before the current key, as
        // RocksDB's skiplist iterator does (O(log n)).
        if let Some(node) = self.node {
            let list = self.list();
            self.node = list.find_less_than(&SearchKey::from_encoded(list.key(node)));
        }
        Ok(())
    }

    #[inline]
    fn valid(&self) -> bool {
        self.node.is_some()
    }

    #[inline]
    fn key(&self) -> &[u8] {
        self.list().key(self.current())
    }

    #[inline]
    fn value(&self) -> &[u8] {
        self.list().value(self.current())
    }
}

impl fmt::Debug for MemTableIter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("MemTableIter");
        d.field("source", &self.source);
        match self.node {
            Some(node) => d.field("key", &lithify_base::key::escape(self.list().key(node))),
            None => d.field("key", &"<invalid>"),
        };
        d.finish()
    }
}
