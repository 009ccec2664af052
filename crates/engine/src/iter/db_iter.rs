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
//!
//! A newest visible version that is a merge operand is merged with the
//! older versions below it (RocksDB's `DBIter::MergeValuesNewToOld`
//! forward; backward, the operands are gathered oldest first as they
//! arrive). The merged value is kept in the cursor, which then moves on
//! from past the versions it read.
//!
//! A version that is a blob index shows the value it points at: read from
//! its blob file (or the block cache) when the cursor stops on it, and
//! kept in the cursor like a merge result.

use std::sync::Arc as StdArc;

use lithify_base::sync::Arc;

use bytes::Bytes;
use lithify_base::key::{KIND_FOR_SEEK, append_internal_key, trailer, unpack_trailer, user_key};
use lithify_base::{InternalIterator, InternalKeyComparator, MAX_SEQNO, Result, SeqNo, ValueKind};

use super::{CursorSource, Merged};
use crate::merge::TableMerge;
use crate::range_del::Fragments;
use crate::sst_files::SstFiles;
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
    /// Forward: the current entry is a merge result in `saved_key` /
    /// `saved_value`, and the internal cursor is past the versions read.
    merged: bool,
    /// Merge operands being gathered (newest first forward, oldest first
    /// backward).
    operands: Vec<Bytes>,
    /// Resolves merge operands.
    merge: StdArc<TableMerge>,
    /// Reads separated values.
    opener: StdArc<SstFiles>,
    /// The readahead of separated values read in file order (a scan of
    /// keys a flush wrote together).
    blob_ahead: lithify_blob::Readahead,
    /// Keeps the memtables and files alive.
    _sv: Arc<SuperVersion>,
}

impl DbCursor {
    /// A cursor over `iter` (built from `source`'s pinned state) with the
    /// range tombstones `tombstones`.
    pub(crate) fn new(iter: Merged, tombstones: Fragments, source: &CursorSource) -> Self {
        DbCursor {
            iter,
            icmp: source.icmp.clone(),
            snapshot: source.snapshot,
            tombstones,
            lower: source.lower.clone(),
            upper: source.upper.clone(),
            direction: Direction::Forward,
            valid: false,
            saved_key: Vec::new(),
            saved_value: Bytes::new(),
            seek_buf: Vec::new(),
            merged: false,
            operands: Vec::new(),
            merge: StdArc::clone(&source.merge),
            opener: StdArc::clone(&source.opener),
            blob_ahead: lithify_blob::Readahead::default(),
            _sv: Arc::clone(&source.sv),
        }
    }

    pub(crate) fn valid(&self) -> bool {
        self.valid
    }

    /// The current user key.
    pub(crate) fn key(&self) -> &[u8] {
        debug_assert!(self.valid);
        match self.direction {
            Direction::Forward if !self.merged => user_key(self.iter.key()),
            _ => &self.saved_key,
        }
    }

    /// The current value.
    pub(crate) fn value(&self) -> &[u8] {
        debug_assert!(self.valid);
        match self.direction {
            Direction::Forward if !self.merged => self.iter.value(),
            _ => &self.saved_value,
        }
    }

    /// The current value as `Bytes` (zero-copy from a table block).
    pub(crate) fn value_bytes(&self) -> Bytes {
        match self.direction {
            Direction::Forward if !self.merged => self.iter.value_bytes(),
            _ => self.saved_value.clone(),
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
        self.merged = false;
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
        } else if self.merged {
            // `saved_key` is the current key and the internal cursor is
            // already past the versions the merge read.
            self.merged = false;
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
        if self.direction == Direction::Forward && self.merged {
            // The internal cursor is past some versions of the current key
            // (`saved_key`), or exhausted: step back before all of them.
            self.merged = false;
            let r = if self.iter.valid() {
                Ok(())
            } else {
                self.iter.last()
            };
            if let Err(e) = r {
                return self.fail(e);
            }
            while self.iter.valid()
                && self
                    .icmp
                    .compare_user(user_key(self.iter.key()), &self.saved_key)
                    .is_ge()
            {
                if let Err(e) = self.iter.prev() {
                    return self.fail(e);
                }
            }
            if !self.iter.valid() {
                self.valid = false;
                self.saved_key.clear();
                return Ok(());
            }
        } else if self.direction == Direction::Forward {
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
    /// key (merging it with older versions if it is a merge operand); with
    /// `skipping`, first passes every version of `saved_key`.
    fn find_next_user_entry(&mut self, mut skipping: bool) -> Result<()> {
        self.direction = Direction::Forward;
        self.merged = false;
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
                let covered = self.tombstones.covers(&self.icmp, ukey, seq);
                if kind == ValueKind::Put as u8 && !covered {
                    self.valid = true;
                    return Ok(());
                }
                // A deletion (or a covered version) hides every older
                // version; a merge result replaces them.
                self.saved_key.clear();
                self.saved_key.extend_from_slice(ukey);
                skipping = true;
                if kind == ValueKind::BlobIndex as u8 && !covered {
                    // Shown like a merge result: the value is kept, and
                    // moving on skips the older versions of the key.
                    let read = self.opener.blobs.get_sequential(
                        &self.saved_key,
                        self.iter.value(),
                        &mut self.blob_ahead,
                    );
                    return match read {
                        Ok(v) => {
                            self.saved_value = v;
                            self.merged = true;
                            self.valid = true;
                            Ok(())
                        }
                        Err(e) => self.fail(e),
                    };
                }
                if kind == ValueKind::Merge as u8 && !covered {
                    return self.merge_forward();
                }
            }
            if let Err(e) = self.iter.next() {
                return self.fail(e);
            }
        }
        self.valid = false;
        Ok(())
    }

    /// Forward, on the newest visible operand of `saved_key`: gathers the
    /// operands down to the version they apply to and merges them.
    fn merge_forward(&mut self) -> Result<()> {
        self.operands.clear();
        self.operands.push(self.iter.value_bytes());
        let mut base = None;
        loop {
            if let Err(e) = self.iter.next() {
                return self.fail(e);
            }
            if !self.iter.valid() {
                break;
            }
            let ikey = self.iter.key();
            if !self
                .icmp
                .compare_user(user_key(ikey), &self.saved_key)
                .is_eq()
            {
                break;
            }
            let (seq, kind) = unpack_trailer(trailer(ikey));
            if self.tombstones.covers(&self.icmp, &self.saved_key, seq) {
                break;
            }
            if kind == ValueKind::Merge as u8 {
                self.operands.push(self.iter.value_bytes());
                continue;
            }
            if kind == ValueKind::Put as u8 {
                base = Some(self.iter.value_bytes());
            } else if kind == ValueKind::BlobIndex as u8 {
                let read = self.opener.blobs.get_sequential(
                    &self.saved_key,
                    self.iter.value(),
                    &mut self.blob_ahead,
                );
                match read {
                    Ok(v) => base = Some(v),
                    Err(e) => return self.fail(e),
                }
            }
            break;
        }
        match self
            .merge
            .full_merge(&self.saved_key, base.as_deref(), &self.operands)
        {
            Ok(v) => {
                self.saved_value = v;
                self.merged = true;
                self.valid = true;
                Ok(())
            }
            Err(e) => self.fail(e.into()),
        }
    }

    /// Backward: scans the versions of each user key (oldest first) and
    /// stops once it passed the key whose newest visible version is live,
    /// merging the operands gathered on the way.
    fn find_prev_user_entry(&mut self) -> Result<()> {
        self.direction = Direction::Reverse;
        self.merged = false;
        let mut found = false;
        // The value the gathered operands apply to (a blob index when
        // `base_is_blob`, read once the key is decided).
        let mut base: Option<Bytes> = None;
        let mut base_is_blob = false;
        self.saved_key.clear();
        self.operands.clear();
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
                let covered = self.tombstones.covers(&self.icmp, ukey, seq);
                if (kind == ValueKind::Put as u8 || kind == ValueKind::BlobIndex as u8) && !covered
                {
                    found = true;
                    self.saved_key.clear();
                    self.saved_key.extend_from_slice(ukey);
                    base = Some(self.iter.value_bytes());
                    base_is_blob = kind == ValueKind::BlobIndex as u8;
                    self.operands.clear();
                } else if kind == ValueKind::Merge as u8 && !covered {
                    if !found {
                        // The first live version of this key: the operands
                        // apply to nothing older.
                        found = true;
                        self.saved_key.clear();
                        self.saved_key.extend_from_slice(ukey);
                        base = None;
                        base_is_blob = false;
                    }
                    self.operands.push(self.iter.value_bytes());
                } else {
                    found = false;
                    self.saved_key.clear();
                    base = None;
                    base_is_blob = false;
                    self.operands.clear();
                }
            }
            if let Err(e) = self.iter.prev() {
                return self.fail(e);
            }
        }
        if found && !self.at_or_above_upper(&self.saved_key) {
            if base_is_blob && let Some(index) = base.take() {
                let read =
                    self.opener
                        .blobs
                        .get_sequential(&self.saved_key, &index, &mut self.blob_ahead);
                match read {
                    Ok(v) => base = Some(v),
                    Err(e) => return self.fail(e),
                }
            }
            if self.operands.is_empty() {
                self.saved_value = base.unwrap_or_default();
            } else {
                // Gathered oldest first; the merge takes newest first.
                self.operands.reverse();
                match self
                    .merge
                    .full_merge(&self.saved_key, base.as_deref(), &self.operands)
                {
                    Ok(v) => self.saved_value = v,
                    Err(e) => return self.fail(e.into()),
                }
            }
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
