//! What a transaction tracks: the keys it read or wrote (optimistic: with
//! the sequence number it read them at, validated at commit; pessimistic:
//! the keys it holds locks on) and, for a `serializable` optimistic
//! transaction, the key ranges its iterators covered.
//!
//! Keys are kept in the order they were first tracked, so that rolling
//! back to a save point forgets exactly the keys first tracked after it
//! (and a pessimistic transaction releases their locks), as RocksDB does.
//! Most transactions track a handful of keys: those are found by a linear
//! scan, and a hash index is built only past [`INDEX_FROM`] keys — a
//! one-key transaction allocates nothing but the key.

use std::collections::HashMap;
use std::ops::Bound;

use bytes::Bytes;
use lithify_base::SeqNo;
use lithify_engine::Snapshot;

/// Tracked keys past which lookups go through a hash index.
const INDEX_FROM: usize = 16;

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

/// One tracked key.
#[derive(Debug, Clone)]
pub(crate) struct TrackedKey {
    pub(crate) table: u32,
    pub(crate) key: Bytes,
    /// The lowest sequence number it was read at.
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
    /// Keys in the order first tracked.
    keys: Vec<TrackedKey>,
    /// Table -> key -> position in `keys`, once there are many.
    index: Option<HashMap<u32, HashMap<Bytes, usize>>>,
    pub(crate) ranges: Vec<TrackedRange>,
    /// Optimistic transactions: a snapshot at or below every tracked
    /// sequence number, so that compaction keeps the versions newer than
    /// them (validation must see those).
    pub(crate) guard: Option<Snapshot>,
    /// Optimistic transactions: a key was read with `get_for_update`, whose
    /// promise (the key is unchanged until the commit) holds only if the
    /// commit validates, even when it writes nothing.
    pub(crate) for_update: bool,
}

impl Tracker {
    fn position(&self, table: u32, key: &[u8]) -> Option<usize> {
        match &self.index {
            Some(index) => index.get(&table).and_then(|m| m.get(key)).copied(),
            None => self
                .keys
                .iter()
                .position(|k| k.table == table && k.key[..] == *key),
        }
    }

    /// Tracks `key` of `table` as read at `seq`; returns whether it is new.
    pub(crate) fn track(&mut self, table: u32, key: &[u8], seq: SeqNo) -> bool {
        if let Some(i) = self.position(table, key) {
            let k = &mut self.keys[i];
            k.seq = k.seq.min(seq);
            return false;
        }
        let key = Bytes::copy_from_slice(key);
        let at = self.keys.len();
        if let Some(index) = &mut self.index {
            index.entry(table).or_default().insert(key.clone(), at);
        }
        self.keys.push(TrackedKey { table, key, seq });
        if self.index.is_none() && self.keys.len() > INDEX_FROM {
            self.rebuild_index();
        }
        true
    }

    fn rebuild_index(&mut self) {
        let mut index: HashMap<u32, HashMap<Bytes, usize>> = HashMap::new();
        for (i, k) in self.keys.iter().enumerate() {
            index.entry(k.table).or_default().insert(k.key.clone(), i);
        }
        self.index = Some(index);
    }

    /// Whether `key` of `table` is tracked.
    pub(crate) fn contains(&self, table: u32, key: &[u8]) -> bool {
        self.position(table, key).is_some()
    }

    /// Forgets `key` of `table` if it was the last key tracked (a lock the
    /// transaction just took and gave back).
    pub(crate) fn untrack_last(&mut self, table: u32, key: &[u8]) {
        if self
            .keys
            .last()
            .is_some_and(|k| k.table == table && k.key[..] == *key)
        {
            self.rollback(TrackerMark {
                keys: self.keys.len() - 1,
                ranges: self.ranges.len(),
            });
        }
    }

    /// Records a range an iterator covered; returns its index in
    /// [`ranges`](Self::ranges).
    pub(crate) fn track_range(&mut self, table: u32, seq: SeqNo) -> usize {
        self.ranges.push(TrackedRange {
            table,
            covered: None,
            seq,
        });
        self.ranges.len() - 1
    }

    /// Moves the tracked keys out (a commit's validation takes them).
    pub(crate) fn take_keys(&mut self) -> Vec<TrackedKey> {
        self.index = None;
        std::mem::take(&mut self.keys)
    }

    pub(crate) fn mark(&self) -> TrackerMark {
        TrackerMark {
            keys: self.keys.len(),
            ranges: self.ranges.len(),
        }
    }

    /// Forgets what was tracked after `mark`; returns the forgotten keys.
    pub(crate) fn rollback(&mut self, mark: TrackerMark) -> Vec<(u32, Bytes)> {
        self.ranges.truncate(mark.ranges);
        let gone = self.keys.split_off(mark.keys.min(self.keys.len()));
        if let Some(index) = &mut self.index {
            for k in &gone {
                if let Some(m) = index.get_mut(&k.table) {
                    m.remove(&k.key);
                }
            }
        }
        gone.into_iter().map(|k| (k.table, k.key)).collect()
    }

    /// Forgets everything; returns the keys.
    pub(crate) fn clear(&mut self) -> Vec<(u32, Bytes)> {
        self.index = None;
        self.ranges.clear();
        self.guard = None;
        self.for_update = false;
        std::mem::take(&mut self.keys)
            .into_iter()
            .map(|k| (k.table, k.key))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracking_is_the_same_with_and_without_the_index() {
        let mut t = Tracker::default();
        let mut seen = std::collections::BTreeSet::new();
        for _round in 0..2 {
            for i in 0..40u32 {
                let key = format!("k{}", i % 25);
                let new = t.track(i % 2, key.as_bytes(), u64::from(100 - i));
                assert_eq!(new, seen.insert((i % 2, key)), "key {i}");
            }
        }
        // 25 keys spread over 2 tables by parity of i: (i % 2, i % 25).
        let distinct: std::collections::BTreeSet<(u32, String)> = (0..40u32)
            .map(|i| (i % 2, format!("k{}", i % 25)))
            .collect();
        assert_eq!(t.keys.len(), distinct.len());
        assert!(t.index.is_some());
        for (table, key) in &distinct {
            assert!(t.contains(*table, key.as_bytes()));
        }
        let mark = TrackerMark {
            keys: 10,
            ranges: 0,
        };
        let gone = t.rollback(mark);
        assert_eq!(gone.len(), distinct.len() - 10);
        for (table, key) in gone {
            assert!(!t.contains(table, &key));
        }
        assert_eq!(t.keys.len(), 10);
        // The lowest sequence number wins.
        assert!(t.keys.iter().all(|k| k.seq <= 100));
    }
}
