//! Internal iteration: the cursor trait every layer implements.
//!
//! [`InternalIterator`] is a positioned cursor over `(key, value)` entries in
//! comparator order, modelled on Pebble's `InternalIterator` and LevelDB's
//! `Iterator`. Memtables, sstable blocks, whole tables, levels and merges of
//! them all implement it, so they compose. The public, `std::iter`-style
//! iterators of the engine are adapters over it.
//!
//! # Contract
//!
//! * Positioning calls (`seek_ge`, `seek_lt`, `first`, `last`) may be made
//!   at any time; `next` and `prev` only while [`valid`](InternalIterator::valid).
//!   On an invalid iterator they are no-ops that return `Ok(())`.
//! * After a call returns `Ok`, `valid()` says whether the cursor is on an
//!   entry; `key()` and `value()` may then be called (they may panic when
//!   the iterator is not valid).
//! * After a call returns `Err`, the iterator is not valid; it can be
//!   repositioned, which retries the failed read.
//! * Slices returned by `key()`/`value()` stay valid until the next call
//!   that moves the cursor.
//! * Keys within one iterator are strictly increasing in its comparator.

mod merging;
mod vec;

pub use merging::MergingIterator;
pub use vec::VecIterator;

use bytes::Bytes;

use crate::error::Result;

/// One step of a `std::iter::Iterator` over a fallible source that ends
/// for good at its end or at its first error: passes an item through,
/// and sets `done` (after which the caller returns `None` without reading)
/// when the step found the end or failed.
///
/// ```
/// use lithify_base::iter::fuse_step;
///
/// let mut done = false;
/// assert_eq!(fuse_step(&mut done, Ok::<_, &str>(Some(1))), Some(Ok(1)));
/// assert!(!done);
/// assert_eq!(fuse_step(&mut done, Err::<Option<i32>, _>("bad block")), Some(Err("bad block")));
/// assert!(done);
/// ```
pub fn fuse_step<T, E>(
    done: &mut bool,
    step: std::result::Result<Option<T>, E>,
) -> Option<std::result::Result<T, E>> {
    match step {
        Ok(Some(item)) => Some(Ok(item)),
        Ok(None) => {
            *done = true;
            None
        }
        Err(e) => {
            *done = true;
            Some(Err(e))
        }
    }
}

/// A positioned cursor over sorted `(key, value)` entries. See the module
/// documentation for the contract.
pub trait InternalIterator {
    /// Positions at the first entry with key `>= target`.
    fn seek_ge(&mut self, target: &[u8]) -> Result<()>;
    /// Positions at the last entry with key `< target`.
    fn seek_lt(&mut self, target: &[u8]) -> Result<()>;
    /// Positions at the first entry.
    fn first(&mut self) -> Result<()>;
    /// Positions at the last entry.
    fn last(&mut self) -> Result<()>;
    /// Moves to the next entry.
    fn next(&mut self) -> Result<()>;
    /// Moves to the previous entry.
    fn prev(&mut self) -> Result<()>;
    /// Whether the cursor is on an entry.
    fn valid(&self) -> bool;
    /// The current key. Requires `valid()`.
    fn key(&self) -> &[u8];
    /// The current value. Requires `valid()`.
    fn value(&self) -> &[u8];
    /// The current value as shared bytes. Implementations whose values live
    /// in `Bytes` (sstable blocks) return a slice of them without copying.
    fn value_bytes(&self) -> Bytes {
        Bytes::copy_from_slice(self.value())
    }
}

impl<I: InternalIterator + ?Sized> InternalIterator for Box<I> {
    fn seek_ge(&mut self, target: &[u8]) -> Result<()> {
        (**self).seek_ge(target)
    }
    fn seek_lt(&mut self, target: &[u8]) -> Result<()> {
        (**self).seek_lt(target)
    }
    fn first(&mut self) -> Result<()> {
        (**self).first()
    }
    fn last(&mut self) -> Result<()> {
        (**self).last()
    }
    #[inline]
    fn next(&mut self) -> Result<()> {
        (**self).next()
    }
    #[inline]
    fn prev(&mut self) -> Result<()> {
        (**self).prev()
    }
    #[inline]
    fn valid(&self) -> bool {
        (**self).valid()
    }
    #[inline]
    fn key(&self) -> &[u8] {
        (**self).key()
    }
    #[inline]
    fn value(&self) -> &[u8] {
        (**self).value()
    }
    fn value_bytes(&self) -> Bytes {
        (**self).value_bytes()
    }
}
