//! Range tombstones of a memtable, kept apart from the point entries.
//!
//! A range tombstone `[start, end)#seqno` deletes every version of every
//! user key `k` with `start <= k < end` whose seqno is lower than `seqno`.
//! The memtable stores it in its own skiplist as the internal key
//! `start#seqno,RANGEDEL` with the end key as value, so the flush can write
//! them to the table's range-deletion block in order, and point lookups
//! only pay for them when there are some.
//!
//! Tombstones are kept as added (unfragmented): overlapping tombstones stay
//! separate entries, handed out as `lithify_base::keyspan::RangeTombstone`s
//! (readers and flushes fragment them with `keyspan::fragment`). A coverage query scans the tombstones that start at or
//! before the key, which is cheap for the few range deletions a memtable
//! usually holds.

use lithify_base::SeqNo;
use lithify_base::key::unpack_trailer;
use lithify_base::keyspan::{self, RangeTombstone};

use crate::memtable::MemTable;
use crate::skiplist::split_key;

impl MemTable {
    /// Every range tombstone, ordered by start key, then newest first.
    pub fn range_tombstones(&self) -> Vec<RangeTombstone> {
        let list = self.range_dels();
        let mut out = Vec::new();
        let mut node = list.first();
        while let Some(n) = node {
            let (start, trailer) = split_key(list.key(n));
            out.push(RangeTombstone::new(
                start.to_vec(),
                list.value(n).to_vec(),
                unpack_trailer(trailer).0,
            ));
            node = list.next(n);
        }
        out
    }

    /// The highest seqno `<= snapshot` of the range tombstones of this
    /// memtable that cover `user_key`, if any (RocksDB's
    /// `MaxCoveringTombstoneSeqnum`).
    ///
    /// A version of the key with a lower seqno, in this memtable or in any
    /// older layer, is deleted at `snapshot`.
    pub fn max_covering_tombstone_seq(&self, user_key: &[u8], snapshot: SeqNo) -> Option<SeqNo> {
        let list = self.range_dels();
        let tombstones = std::iter::successors(list.first(), |&n| list.next(n)).map(|n| {
            let (start, trailer) = split_key(list.key(n));
            (start, list.value(n), unpack_trailer(trailer).0)
        });
        keyspan::covering_seqno(self.comparator(), tombstones, user_key, snapshot)
    }
}
