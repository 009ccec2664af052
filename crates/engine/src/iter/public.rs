//! The public iterators: a cursor ([`RawIterator`]) and a std
//! double-ended iterator ([`DbIterator`]).

use std::fmt;
use std::ops::Bound;
use std::sync::Arc;

use lithify_base::sync::Arc as SyncArc;

use bytes::Bytes;
use lithify_base::{InternalKeyComparator, SeqNo};
use lithify_compaction::ReadHeat;

use super::{DbCursor, build_merged};
use crate::error::Result;
use crate::merge::TableMerge;
use crate::snapshot::Snapshot;
use crate::sst_files::SstFiles;
use crate::super_version::SuperVersion;

/// Everything needed to build cursors over one pinned state.
#[derive(Clone)]
pub(crate) struct CursorSource {
    pub(crate) sv: SyncArc<SuperVersion>,
    pub(crate) opener: Arc<SstFiles>,
    pub(crate) icmp: InternalKeyComparator,
    pub(crate) snapshot: SeqNo,
    pub(crate) lower: Option<Bytes>,
    pub(crate) upper: Option<Bytes>,
    /// Resolves merge operands.
    pub(crate) merge: Arc<TableMerge>,
    /// The table's read heat, when this scan is sampled where it first
    /// seeks (it has no lower bound).
    pub(crate) heat_at_first_seek: Option<Arc<ReadHeat>>,
    /// Keeps an explicit snapshot registered while the iterator lives.
    pub(crate) _pin: Option<Snapshot>,
}

impl CursorSource {
    pub(crate) fn build(&self) -> Result<DbCursor> {
        let (merged, tombstones) = build_merged(
            &self.sv,
            &self.opener,
            &self.icmp,
            self.snapshot,
            self.lower.as_deref(),
            self.upper.as_deref(),
        )?;
        Ok(DbCursor::new(merged, tombstones, self))
    }
}

/// A cursor over the keys of a database at one snapshot, in both
/// directions (RocksDB's `Iterator`, rust-rocksdb's `DBRawIterator`).
///
/// Positioning methods return the error of the underlying reads; after an
/// error the cursor is invalid until it is positioned again. `key` and
/// `value` borrow from the cursor (no copy).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use lithify_engine::{Db, Options, ReadOptions};
///
/// let db = Db::open(dir.path(), Options::default()).unwrap();
/// for k in [b"a", b"b", b"c"] {
///     db.put(k, b"v").unwrap();
/// }
/// let mut it = db.raw_iterator(&ReadOptions::default()).unwrap();
/// it.seek(b"b").unwrap();
/// assert_eq!(it.key(), Some(&b"b"[..]));
/// it.next().unwrap();
/// assert_eq!(it.key(), Some(&b"c"[..]));
/// it.seek_for_prev(b"bb").unwrap();
/// assert_eq!(it.key(), Some(&b"b"[..]));
/// it.prev().unwrap();
/// assert_eq!(it.key(), Some(&b"a"[..]));
/// it.prev().unwrap();
/// assert!(!it.valid());
/// ```
pub struct RawIterator {
    cursor: DbCursor,
    heat_at_first_seek: Option<Arc<ReadHeat>>,
    _pin: Option<Snapshot>,
}

impl fmt::Debug for RawIterator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawIterator")
            .field("valid", &self.cursor.valid())
            .finish_non_exhaustive()
    }
}

impl RawIterator {
    pub(crate) fn new(source: CursorSource) -> Result<Self> {
        let cursor = source.build()?;
        Ok(RawIterator {
            cursor,
            heat_at_first_seek: source.heat_at_first_seek,
            _pin: source._pin,
        })
    }

    /// Gives the table's read heat the first key a sampled scan seeks.
    fn sample_first_seek(&mut self, target: &[u8]) {
        if let Some(heat) = self.heat_at_first_seek.take() {
            heat.record_read(0, target);
        }
    }

    /// Whether the cursor is on a key.
    pub fn valid(&self) -> bool {
        self.cursor.valid()
    }

    /// The current key.
    pub fn key(&self) -> Option<&[u8]> {
        self.valid().then(|| self.cursor.key())
    }

    /// The current value.
    pub fn value(&self) -> Option<&[u8]> {
        self.valid().then(|| self.cursor.value())
    }

    /// The current value as `Bytes` (zero-copy when it comes from a table).
    pub fn value_bytes(&self) -> Option<Bytes> {
        self.valid().then(|| self.cursor.value_bytes())
    }

    /// Moves to the first key (at or after the lower bound).
    pub fn seek_to_first(&mut self) -> Result<()> {
        Ok(self.cursor.seek_to_first()?)
    }

    /// Moves to the last key (before the upper bound).
    pub fn seek_to_last(&mut self) -> Result<()> {
        Ok(self.cursor.seek_to_last()?)
    }

    /// Moves to the first key `>= target`.
    pub fn seek(&mut self, target: impl AsRef<[u8]>) -> Result<()> {
        self.sample_first_seek(target.as_ref());
        Ok(self.cursor.seek(target.as_ref())?)
    }

    /// Moves to the last key `<= target`.
    pub fn seek_for_prev(&mut self, target: impl AsRef<[u8]>) -> Result<()> {
        self.sample_first_seek(target.as_ref());
        Ok(self.cursor.seek_for_prev(target.as_ref())?)
    }

    /// Moves to the next key. Does nothing on an invalid cursor.
    // The cursor API mirrors RocksDB's `Iterator::Next`; `DbIterator` is
    // the std iterator.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<()> {
        if self.cursor.valid() {
            self.cursor.next()?;
        }
        Ok(())
    }

    /// Moves to the previous key. Does nothing on an invalid cursor.
    pub fn prev(&mut self) -> Result<()> {
        if self.cursor.valid() {
            self.cursor.prev()?;
        }
        Ok(())
    }
}

/// An iterator over `(key, value)` pairs of a key range at one snapshot,
/// in key order from the front and in reverse from the back
/// ([`DoubleEndedIterator`]). Each item is a `Result`: a failed read yields
/// its error and ends the iteration.
///
/// Keys are copied into `Bytes`; values from tables are zero-copy slices of
/// cached blocks. For scans that do not need owned items, use
/// [`RawIterator`].
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use lithify_engine::{Db, Options};
///
/// let db = Db::open(dir.path(), Options::default()).unwrap();
/// for (k, v) in [("a", "1"), ("b", "2"), ("c", "3"), ("d", "4")] {
///     db.put(k, v).unwrap();
/// }
/// let keys: Vec<_> = db.range(&b"b"[..]..=&b"c"[..]).map(|kv| kv.unwrap().0).collect();
/// assert_eq!(keys, [&b"b"[..], &b"c"[..]]);
/// let last = db.iter().next_back().unwrap().unwrap();
/// assert_eq!((&last.0[..], &last.1[..]), (&b"d"[..], &b"4"[..]));
/// ```
pub struct DbIterator {
    source: CursorSource,
    start: Bound<Bytes>,
    end: Bound<Bytes>,
    prefix: Option<Bytes>,
    front: Option<DbCursor>,
    back: Option<DbCursor>,
    /// The last key yielded from each end: the ends must not cross.
    front_last: Option<Bytes>,
    back_last: Option<Bytes>,
    done: bool,
}

impl fmt::Debug for DbIterator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DbIterator")
            .field("start", &self.start)
            .field("end", &self.end)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl DbIterator {
    pub(crate) fn new(
        source: CursorSource,
        start: Bound<Bytes>,
        end: Bound<Bytes>,
        prefix: Option<Bytes>,
    ) -> Self {
        let mut source = source;
        // A sampled range without a lower bound in its read options
        // starts where its start bound says (a whole-table range says
        // nothing and is not sampled).
        if let Some(heat) = source.heat_at_first_seek.take()
            && let Bound::Included(k) | Bound::Excluded(k) = &start
        {
            heat.record_read(0, k);
        }
        DbIterator {
            source,
            start,
            end,
            prefix,
            front: None,
            back: None,
            front_last: None,
            back_last: None,
            done: false,
        }
    }

    fn cmp_user(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        self.source.icmp.compare_user(a, b)
    }

    /// Whether `key` lies past the end bound (or outside the prefix).
    fn after_end(&self, key: &[u8]) -> bool {
        let past = match &self.end {
            Bound::Included(e) => self.cmp_user(key, e).is_gt(),
            Bound::Excluded(e) => self.cmp_user(key, e).is_ge(),
            Bound::Unbounded => false,
        };
        past || self.prefix.as_ref().is_some_and(|p| !key.starts_with(p))
    }

    fn before_start(&self, key: &[u8]) -> bool {
        let before = match &self.start {
            Bound::Included(s) => self.cmp_user(key, s).is_lt(),
            Bound::Excluded(s) => self.cmp_user(key, s).is_le(),
            Bound::Unbounded => false,
        };
        before || self.prefix.as_ref().is_some_and(|p| !key.starts_with(p))
    }

    fn step_front(&mut self) -> Result<Option<(Bytes, Bytes)>> {
        let cursor = match &mut self.front {
            Some(c) => {
                c.next()?;
                c
            }
            None => {
                let mut c = self.source.build()?;
                match &self.start {
                    Bound::Included(s) | Bound::Excluded(s) => c.seek(s)?,
                    Bound::Unbounded => c.seek_to_first()?,
                }
                if let Bound::Excluded(s) = &self.start
                    && c.valid()
                    && self.source.icmp.compare_user(c.key(), s).is_eq()
                {
                    c.next()?;
                }
                self.front.insert(c)
            }
        };
        if !cursor.valid() {
            return Ok(None);
        }
        let key = Bytes::copy_from_slice(cursor.key());
        let value = cursor.value_bytes();
        if self.after_end(&key)
            || self
                .back_last
                .as_ref()
                .is_some_and(|b| self.cmp_user(&key, b).is_ge())
        {
            return Ok(None);
        }
        self.front_last = Some(key.clone());
        Ok(Some((key, value)))
    }

    fn step_back(&mut self) -> Result<Option<(Bytes, Bytes)>> {
        let cursor = match &mut self.back {
            Some(c) => {
                c.prev()?;
                c
            }
            None => {
                let mut c = self.source.build()?;
                match &self.end {
                    Bound::Included(e) | Bound::Excluded(e) => c.seek_for_prev(e)?,
                    Bound::Unbounded => c.seek_to_last()?,
                }
                if let Bound::Excluded(e) = &self.end
                    && c.valid()
                    && self.source.icmp.compare_user(c.key(), e).is_eq()
                {
                    c.prev()?;
                }
                self.back.insert(c)
            }
        };
        if !cursor.valid() {
            return Ok(None);
        }
        let key = Bytes::copy_from_slice(cursor.key());
        let value = cursor.value_bytes();
        if self.before_start(&key)
            || self
                .front_last
                .as_ref()
                .is_some_and(|f| self.cmp_user(&key, f).is_le())
        {
            return Ok(None);
        }
        self.back_last = Some(key.clone());
        Ok(Some((key, value)))
    }
}

impl Iterator for DbIterator {
    type Item = Result<(Bytes, Bytes)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let step = self.step_front();
        lithify_base::iter::fuse_step(&mut self.done, step)
    }
}

impl DoubleEndedIterator for DbIterator {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let step = self.step_back();
        lithify_base::iter::fuse_step(&mut self.done, step)
    }
}

impl std::iter::FusedIterator for DbIterator {}
