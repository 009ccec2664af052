//! An [`InternalIterator`] over entries held in memory.

use bytes::Bytes;

use super::InternalIterator;
use crate::comparator::Comparator;
use crate::error::Result;

/// An iterator over an in-memory list of entries, sorted on construction.
///
/// Useful as a child of a [`MergingIterator`](super::MergingIterator) for
/// small in-memory sets (test inputs, pending range tombstones).
///
/// ```
/// use lithify_base::{BytewiseComparator, InternalIterator, VecIterator};
///
/// let mut it = VecIterator::new(BytewiseComparator, vec![
///     (b"b".to_vec(), b"2".to_vec()),
///     (b"a".to_vec(), b"1".to_vec()),
/// ]);
/// it.seek_ge(b"aa").unwrap();
/// assert_eq!(it.key(), b"b");
/// it.prev().unwrap();
/// assert_eq!(it.value(), b"1");
/// ```
#[derive(Debug, Clone)]
pub struct VecIterator<C> {
    cmp: C,
    entries: Vec<(Bytes, Bytes)>,
    pos: Option<usize>,
}

impl<C: Comparator> VecIterator<C> {
    /// An iterator over `entries`, which are sorted by `cmp` (and must not
    /// hold equal keys).
    pub fn new<K: Into<Bytes>, V: Into<Bytes>>(cmp: C, entries: Vec<(K, V)>) -> Self {
        let mut entries: Vec<(Bytes, Bytes)> = entries
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        entries.sort_by(|a, b| cmp.compare(&a.0, &b.0));
        VecIterator {
            cmp,
            entries,
            pos: None,
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn lower_bound(&self, target: &[u8]) -> usize {
        self.entries
            .partition_point(|(k, _)| self.cmp.compare(k, target).is_lt())
    }
}

impl<C: Comparator> InternalIterator for VecIterator<C> {
    fn seek_ge(&mut self, target: &[u8]) -> Result<()> {
        let i = self.lower_bound(target);
        self.pos = (i < self.entries.len()).then_some(i);
        Ok(())
    }

    fn seek_lt(&mut self, target: &[u8]) -> Result<()> {
        self.pos = self.lower_bound(target).checked_sub(1);
        Ok(())
    }

    fn first(&mut self) -> Result<()> {
        self.pos = (!self.entries.is_empty()).then_some(0);
        Ok(())
    }

    fn last(&mut self) -> Result<()> {
        self.pos = self.entries.len().checked_sub(1);
        Ok(())
    }

    fn next(&mut self) -> Result<()> {
        self.pos = self.pos.map(|p| p + 1).filter(|&p| p < self.entries.len());
        Ok(())
    }

    fn prev(&mut self) -> Result<()> {
        self.pos = self.pos.and_then(|p| p.checked_sub(1));
        Ok(())
    }

    fn valid(&self) -> bool {
        self.pos.is_some()
    }

    fn key(&self) -> &[u8] {
        &self.entries[self.pos.expect("key() on an invalid iterator")].0
    }

    fn value(&self) -> &[u8] {
        &self.entries[self.pos.expect("value() on an invalid iterator")].1
    }

    fn value_bytes(&self) -> Bytes {
        self.entries[self.pos.expect("value_bytes() on an invalid iterator")]
            .1
            .clone()
    }
}
