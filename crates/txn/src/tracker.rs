//! What a transaction tracks: the keys it read or wrote (optimistic: with
//! the sequence number it read them at, validated at commit; pessimistic:
//! the keys it holds locks on) and, for a `serializable` optimistic
//! transaction, the key ranges its iterators covered.
//!
//! Keys are kept in the order they were first tracked, so that rolling
//! back to a save point forgets exactly the keys first tracked after it
//! (and a pessimistic transaction releases their locks), as RocksDB does.

use std::collections::HashMap;
use std::ops::Bound;

use bytes::Bytes;
use lithify_base::SeqNo;
use lithify_engine::Snapshot;

/// A key range an iterator covered.
#[derive(Debug, Clone)]
pub(crate) struct TrackedRange {
    pub(crate) table: u32,
    /// The bounds of the keys covered so far (`None`: the cursor has not
    /// moved yet).
    pub(crate) covered: Option<(Bound<Bytes>, Bound<Bytes>)>,
    /// The sequence number the iterator read at.
    pub(crate) seq: SeqNo,
}

/// Where a save point leaves the tracker.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TrackerMark {
    keys: usize,
    ranges: usize,
}

#[derive(Default)]
pub(crate) struct Tracker {
    /// Key -> the lowest sequence number it was read at.
    seqs: HashMap<(u32, Bytes), SeqNo>,
    /// Keys in the order first tracked.
    order: Vec<(u32, Bytes)>,
    pub(crate) ranges: Vec<TrackedRange>,
    /// Table names, for errors.
    names: HashMap<u32, String>,
    /// Optimistic transactions: a snapshot at or below every tracked
    /// sequence number, so that compaction keeps the versions newer than
    /// them (validation must see those).
    pub(crate) guard: Option<Snapshot>,
}

impl Tracker {
    /// Tracks `key` of `table` as read at `seq`; returns whether it is new.
    pub(crate) fn track(&mut self, table: u32, name: &str, key: &[u8], seq: SeqNo) -> bool {
        if let Some(s) = self.seqs.get_mut(&(table, Bytes::copy_from_slice(key))) {
            *s = (*s).min(seq);
            return false;
        }
        let k = (table, Bytes::copy_from_slice(key));
        self.seqs.insert(k.clone(), seq);
        self.order.push(k);
        self.names.entry(table).or_insert_with(|| name.to_owned());
        true
    }

    /// Whether `key` of `table` is tracked.
    pub(crate) fn contains(&self, table: u32, key: &[u8]) -> bool {
        self.seqs
            .contains_key(&(table, Bytes::copy_from_slice(key)))
    }

    /// Forgets `key` of `table` if it was the last key tracked (a lock the
    /// transaction just took and gave back).
    pub(crate) fn untrack_last(&mut self, table: u32, key: &[u8]) {
        if self
            .order
            .last()
            .is_some_and(|(t, k)| *t == table && k[..] == *key)
            && let Some(k) = self.order.pop()
        {
            self.seqs.remove(&k);
        }
    }

    /// Records a range an iterator covered; returns its index for
    /// [`extend_range`](Self::extend_range).
    pub(crate) fn track_range(&mut self, table: u32, name: &str, seq: SeqNo) -> usize {
        self.names.entry(table).or_insert_with(|| name.to_owned());
        self.ranges.push(TrackedRange {
            table,
            covered: None,
            seq,
        });
        self.ranges.len() - 1
    }

    pub(crate) fn name(&self, table: u32) -> String {
        self.names
            .get(&table)
            .cloned()
            .unwrap_or_else(|| format!("#{table}"))
    }

    /// Every tracked key with its sequence number, in tracking order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = (u32, &Bytes, SeqNo)> {
        self.order
            .iter()
            .map(|k| (k.0, &k.1, self.seqs.get(k).copied().unwrap_or(0)))
    }

    pub(crate) fn mark(&self) -> TrackerMark {
        TrackerMark {
            keys: self.order.len(),
            ranges: self.ranges.len(),
        }
    }

    /// Forgets what was tracked after `mark`; returns the forgotten keys.
    pub(crate) fn rollback(&mut self, mark: TrackerMark) -> Vec<(u32, Bytes)> {
        self.ranges.truncate(mark.ranges);
        let gone = self.order.split_off(mark.keys.min(self.order.len()));
        for k in &gone {
            self.seqs.remove(k);
        }
        gone
    }

    /// Forgets everything; returns the keys.
    pub(crate) fn clear(&mut self) -> Vec<(u32, Bytes)> {
        self.seqs.clear();
        self.ranges.clear();
        self.guard = None;
        std::mem::take(&mut self.order)
    }
}
