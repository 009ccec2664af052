//! The in-memory write buffer of lithify: a concurrent arena skiplist of
//! internal keys.
//!
//! A [`MemTable`] holds the newest writes of the engine until they are
//! flushed to an sstable:
//!
//! * **writes** ([`MemTable::add`]) may come from several threads at once:
//!   nodes are linked with compare-and-swap, as RocksDB's `InlineSkipList`
//!   does with `allow_concurrent_memtable_write`;
//! * **reads** never lock: [`MemTable::get`] answers a point lookup at a
//!   snapshot, including whether a range tombstone of this memtable covers
//!   the key, and [`MemTableIter`] walks the entries as a
//!   [`lithify_base::InternalIterator`];
//! * **memory** comes from two arenas of large blocks, one for the
//!   skiplist's nodes and one for the keys and values (no per-entry
//!   `Box`), is reported by
//!   [`MemTable::approximate_memory_usage`], and is released only when the
//!   last `Arc` to the memtable, iterators included, is dropped.
//!
//! Every atomic, `UnsafeCell` and thread comes from [`lithify_base::sync`],
//! so the same code runs under loom (`cargo xtask loom`).
//!
//! ```
//! use lithify_base::{InternalKeyComparator, ValueKind};
//! use lithify_memtable::{DeletedBy, Lookup, MemTable};
//!
//! let mem = MemTable::new(InternalKeyComparator::bytewise());
//! mem.add(1, ValueKind::Put, b"apple", b"red").unwrap();
//! mem.add(2, ValueKind::Put, b"apple", b"green").unwrap();
//! mem.add(3, ValueKind::RangeDelete, b"a", b"b").unwrap();
//!
//! // Each snapshot sees the newest version with a seqno at or below it.
//! assert_eq!(mem.get(b"apple", 1), Lookup::Found { value: b"red", seqno: 1 });
//! assert_eq!(mem.get(b"apple", 2), Lookup::Found { value: b"green", seqno: 2 });
//! // At seqno 3 the range tombstone [a, b) deletes it.
//! assert_eq!(
//!     mem.get(b"apple", 3),
//!     Lookup::Deleted { seqno: 3, by: DeletedBy::RangeTombstone }
//! );
//! // Not decided here: the engine looks in older layers.
//! assert_eq!(mem.get(b"cherry", 3), Lookup::NotFound);
//! assert_eq!(mem.len(), 3);
//! assert_eq!((mem.first_seqno(), mem.last_seqno()), (Some(1), Some(3)));
//! ```

mod arena;
mod error;
mod filter;
mod iter;
mod lookup;
mod memtable;
mod range_del;
mod skiplist;

#[cfg(all(test, loom))]
mod loom_tests;

pub use arena::DEFAULT_BLOCK_SIZE;
pub use error::{Error, Result};
pub use iter::MemTableIter;
pub use lookup::{DeletedBy, Lookup};
pub use memtable::{MAX_ENTRY_PART_LEN, MemTable, MemTableOptions};

/// The engine shares memtables and iterators across threads: keep them
/// `Send + Sync` (a compile-time check).
const _: () = {
    const fn shareable<T: Send + Sync>() {}
    shareable::<MemTable>();
    shareable::<MemTableIter>();
};

/// The README's examples, run as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
