//! `DbCursor`: user keys at a snapshot over the merged internal cursor.
//!
//! The internal cursor yields every version of every key (newest first per
//! user key). The cursor shows, for each user key, the newest version with
//! a sequence number at or below the snapshot — unless that version is a
//! point tombstone or a range tombstone with a higher sequence number (and
//! at or below the snapshot) covers it — within `[lower, upper)`.
//!
//! Moving forward, the internal cursor sits on the version shown, and
//! `key`/`value` borrow from it. Moving backward, the versions of a user
//! key arrive oldest first, so the cursor scans past them and keeps a copy
//! of the newest visible one (LevelDB's `DBIter`).

use lithify_base::sync::Arc;

use bytes::Bytes;
use lithify_base::key::{KIND_FOR_SEEK, append_internal_key, trailer, unpack_trailer, user_key};
use lithify_base::{InternalIterator, InternalKeyComparator, MAX_SEQNO, Result, SeqNo, ValueKind};

use super::Merged;
use crate::range_del::Fragments;
use crate::super_version::SuperVersion;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

/// A cursor over the user keys visible at one snapshot.
pub(crate) struct DbCursor {
    iter: Merged,
    icmp: InternalKeyComparator,
    snapshot: SeqNo,
    tombstones: Fragments,
    lower: Option<Bytes>,
    upper: Option<Bytes>,
    direction: Direction,
    valid: bool,
    /// Reverse: the current key. Forward: scratch for the key to skip.
    saved_key: Vec<u8>,
    /// Reverse: the current value.
    saved_value: Bytes,
    /// Scratch for seek keys.
    seek_buf: Vec<u8>,
    /// Keeps the memtables and files alive.
    _sv: Arc<SuperVersion>,
}

impl DbCursor {
    pub(crate) fn new(
        iter: Merged,
        icmp: InternalKeyComparator,
        snapshot: SeqNo,
        tombstones: Fragments,
        lower: Option<Bytes>,
        upper: Option<Bytes>,
        sv: Arc<SuperVersion>,
    ) -> Self {
        DbCursor {
            iter,
            icmp,
            snapshot,
            tombstones,
            lower,
            upper,
            direction: Direction::Forward,
            valid: false,
            saved_key: Vec::new(),
            saved_value: Bytes::new(),
            seek_buf: Vec::new(),
            _sv: sv,
        }
    }

    pub(crate) fn valid(&self) -> bool {
        self.valid
    }

    /// The current user key.
    pub(crate) fn key(&self) -> &[u8] {
        debug_assert!(self.valid);
        match self.direction {
            Direction::Forward => user_key(self.iter.key()),
            Direction::Reverse => &self.saved_key,
        }
    }

    /// The current value.
    pub(crate) fn value(&self) -> &[u8] {
        debug_assert!(self.valid);
        match self.direction {
            Direction::Forward => self.iter.value(),
            Direction::Reverse => &self.saved_value,
        }
    }

    /// The current value as `Bytes` (zero-copy from a table block).
    pub(crate) fn value_bytes(&self) -> Bytes {
        match self.direction {
            Direction::Forward => self.iter.value_bytes(),
            Direction::Reverse => self.saved_value.clone(),
        }
    }

    fn below_lower(&self, ukey: &[u8]) -> bool {
        self.lower
            .as_ref()
            .is_some_and(|l| self.icmp.compare_user(ukey, l).is_lt())
    }

    fn at_or_above_upper(&self, ukey: &[u8]) -> bool {
        self.upper
            .as_ref()
            .is_some_and(|u| self.icmp.compare_user(ukey, u).is_ge())
    }

    fn fail<T>(&mut self, e: lithify_base::Error) -> Result<T> {
        self.valid = false;
        Err(e)
    }

    pub(crate) fn seek_to_first(&mut self) -> Result<()> {
        if let Some(l) = self.lower.clone() {
            return self.seek(&l);
        }
        self.direction = Direction::Forward;
        if let Err(e) = self.iter.first() {
            return self.fail(e);
        }
        self.find_next_user_entry(false)
    }

    pub(crate) fn seek_to_last(&mut self) -> Result<()> {
        if let Some(u) = self.upper.clone() {
            // The last key below `upper`: everything before `upper`'s
            // smallest internal key.
            self.seek_buf.clear();
            append_internal_key(&mut self.seek_buf, &u, MAX_SEQNO, KIND_FOR_SEEK);
            if let Err(e) = self.iter.seek_lt(&self.seek_buf) {
                return self.fail(e);
            }
        } else if let Err(e) = self.iter.last() {
            return self.fail(e);
        }
        self.find_prev_user_entry()
    }

    /// The first key `>= target` (and `>= lower`).
    pub(crate) fn seek(&mut self, target: &[u8]) -> Result<()> {
        let target = match &self.lower {
            Some(l) if self.icmp.compare_user(target, l).is_lt() => l.clone(),
            _ => Bytes::copy_from_slice(target),
        };
        self.direction = Direction::Forward;
        self.seek_buf.clear();
        append_internal_key(&mut self.seek_buf, &target, self.snapshot, KIND_FOR_SEEK);
        if let Err(e) = self.iter.seek_ge(&self.seek_buf) {
            return self.fail(e);
        }
        self.find_next_user_entry(false)
    }

    /// The last key `<= target` (and `< upper`).
    pub(crate) fn seek_for_prev(&mut self, target: &[u8]) -> Result<()> {
        if let Some(u) = &self.upper
            && self.icmp.compare_user(target, u).is_ge()
        {
            return self.seek_to_last();
        }
        // Position on the oldest version of `target` (or the entry before
        // it), then scan backward.
        self.seek_buf.clear();
        append_internal_key(&mut self.seek_buf, target, 0, ValueKind::Delete as u8);
        let r = self.iter.seek_ge(&self.seek_buf).and_then(|()| {
            if !self.iter.valid() {
                self.iter.last()
            } else if self.iter.key() != self.seek_buf.as_slice() {
                self.iter.prev()
            } else {
                Ok(())
            }
        });
        if let Err(e) = r {
            return self.fail(e);
        }
        self.find_prev_user_entry()
    }

    pub(crate) fn next(&mut self) -> Result<()> {
        debug_assert!(self.valid);
        if self.direction == Direction::Reverse {
            self.direction = Direction::Forward;
            // The internal cursor is just before the versions of the
            // current key: step into them and skip them below.
            let r = if self.iter.valid() {
                self.iter.next()
            } else {
                self.iter.first()
            };
            if let Err(e) = r {
                return self.fail(e);
            }
            if !self.iter.valid() {
                self.valid = false;
                return Ok(());
            }
        } else {
            self.saved_key.clear();
            self.saved_key.extend_from_slice(user_key(self.iter.key()));
            if let Err(e) = self.iter.next() {
                return self.fail(e);
            }
        }
        self.find_next_user_entry(true)
    }

    pub(crate) fn prev(&mut self) -> Result<()> {
        debug_assert!(self.valid);
        if self.direction == Direction::Forward {
            // Step back over every version of the current key.
            self.saved_key.clear();
            self.saved_key.extend_from_slice(user_key(self.iter.key()));
            loop {
                if let Err(e) = self.iter.prev() {
                    return self.fail(e);
                }
                if !self.iter.valid() {
                    self.valid = false;
                    self.saved_key.clear();
                    self.direction = Direction::Forward;
                    return Ok(());
                }
                if self
                    .icmp
                    .compare_user(user_key(self.iter.key()), &self.saved_key)
                    .is_lt()
                {
                    break;
                }
            }
        }
        self.find_prev_user_entry()
    }

    /// Forward: stops on the newest visible live version of the next user
    /// key; with `skipping`, first passes every version of `saved_key`.
    fn find_next_user_entry(&mut self, mut skipping: bool) -> Result<()> {
        self.direction = Direction::Forward;
        while self.iter.valid() {
            let ikey = self.iter.key();
            let ukey = user_key(ikey);
            if self.at_or_above_upper(ukey) {
                break;
            }
            let (seq, kind) = unpack_trailer(trailer(ikey));
            if seq <= self.snapshot
                && !(skipping && self.icmp.compare_user(ukey, &self.saved_key).is_le())
            {
                if kind == ValueKind::Put as u8 && !self.tombstones.covers(&self.icmp, ukey, seq) {
                    self.valid = true;
                    return Ok(());
                }
                // A deletion (or a covered value) hides every older version.
                self.saved_key.clear();
                self.saved_key.extend_from_slice(ukey);
                skipping = true;
            }
            if let Err(e) = self.iter.next() {
                return self.fail(e);
            }
        }
        self.valid = false;
        Ok(())
    }

    /// Backward: scans the versions of each user key (oldest first) and
    /// stops once it passed the key whose newest visible version is live.
    fn find_prev_user_entry(&mut self) -> Result<()> {
        self.direction = Direction::Reverse;
        let mut found = false;
        self.saved_key.clear();
        while self.iter.valid() {
            let ikey = self.iter.key();
            let ukey = user_key(ikey);
            if self.below_lower(ukey) {
                break;
            }
            let (seq, kind) = unpack_trailer(trailer(ikey));
            if seq <= self.snapshot {
                if found && self.icmp.compare_user(ukey, &self.saved_key).is_lt() {
                    break;
                }
                if kind == ValueKind::Put as u8 && !self.tombstones.covers(&self.icmp, ukey, seq) {
                    found = true;
                    self.saved_key.clear();
                    self.saved_key.extend_from_slice(ukey);
                    self.saved_value = self.iter.value_bytes();
                } else {
                    found = false;
                    self.saved_key.clear();
                    self.saved_value = Bytes::new();
                }
            }
            if let Err(e) = self.iter.prev() {
                return self.fail(e);
            }
        }
        if found && !self.at_or_above_upper(&self.saved_key) {
            self.valid = true;
        } else {
            self.valid = false;
            self.saved_key.clear();
            self.saved_value = Bytes::new();
            self.direction = Direction::Forward;
        }
        Ok(())
    }
}
