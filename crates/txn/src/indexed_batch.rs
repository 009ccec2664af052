//! `WriteBatchWithIndex`: a write batch indexed by key, so that reads can
//! see the batch's writes over the database's (RocksDB's name and
//! semantics).
//!
//! The batch itself is an ordinary [`WriteBatch`] — what a commit writes,
//! as one WAL record. Beside it, each table written to has a sorted index,
//! in the table's key order, from key to what the batch's records so far
//! make of it:
//!
//! * a value (a put, possibly followed by merge operands),
//! * a deletion (a delete, a single delete, or a range deletion of the
//!   batch covering the key — again possibly followed by operands), or
//! * operands alone, to be applied to whatever the database holds.
//!
//! and the batch's range deletions, which hide the database's keys they
//! cover unless the batch wrote the key again afterwards. Rolling back to a
//! save point truncates the batch and rebuilds the index from it.

use std::cell::{Ref, RefCell};
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use bytes::Bytes;
use lithify_base::{Comparator, ValueKind};
use lithify_engine::{ReadOptions, Table, WriteBatch};

use crate::error::Result;
use crate::iter::BaseDeltaIterator;

/// A key ordered by its table's comparator.
#[derive(Clone)]
pub(crate) struct OrdKey {
    pub(crate) key: Bytes,
    cmp: Arc<dyn Comparator>,
}

impl OrdKey {
    pub(crate) fn new(key: Bytes, cmp: &Arc<dyn Comparator>) -> Self {
        OrdKey {
            key,
            cmp: Arc::clone(cmp),
        }
    }
}

impl PartialEq for OrdKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for OrdKey {}

impl PartialOrd for OrdKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OrdKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.cmp.compare(&self.key, &other.key)
    }
}

/// Where a value or operand lies in the batch's encoding (the index keeps
/// positions, not copies, as RocksDB's does).
pub(crate) type Span = std::ops::Range<usize>;

/// What lies under a key's merge operands in the batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Base {
    /// Whatever the database holds.
    Db,
    /// A value the batch put.
    Value(Span),
    /// Nothing: the batch deleted the key.
    Deleted,
}

/// What the batch makes of one key.
#[derive(Debug, Clone)]
pub(crate) struct KeyState {
    pub(crate) base: Base,
    /// Merge operands written after `base`, oldest first.
    pub(crate) operands: Vec<Span>,
}

/// The index of one table's records.
pub(crate) struct TableIndex {
    pub(crate) cmp: Arc<dyn Comparator>,
    pub(crate) keys: BTreeMap<OrdKey, KeyState>,
    /// The batch's range deletions, `[start, end)`, in batch order.
    pub(crate) range_dels: Vec<(Bytes, Bytes)>,
}

impl TableIndex {
    fn new(cmp: Arc<dyn Comparator>) -> Self {
        TableIndex {
            cmp,
            keys: BTreeMap::new(),
            range_dels: Vec::new(),
        }
    }

    /// Whether one of the batch's range deletions covers `key`.
    pub(crate) fn range_deleted(&self, key: &[u8]) -> bool {
        self.range_dels
            .iter()
            .any(|(s, e)| self.cmp.compare(s, key).is_le() && self.cmp.compare(key, e).is_lt())
    }

    pub(crate) fn lookup(&self, key: &[u8]) -> Option<&KeyState> {
        self.keys
            .get(&OrdKey::new(Bytes::copy_from_slice(key), &self.cmp))
    }

    /// Indexes a record; `at` is where its value lies in the batch.
    fn apply(&mut self, kind: ValueKind, key: &[u8], value: &[u8], at: Span) {
        match kind {
            ValueKind::Put => self.set(key, Base::Value(at)),
            ValueKind::Merge => {
                let ok = OrdKey::new(Bytes::copy_from_slice(key), &self.cmp);
                if let Some(state) = self.keys.get_mut(&ok) {
                    state.operands.push(at);
                } else {
                    let base = if self.range_deleted(key) {
                        Base::Deleted
                    } else {
                        Base::Db
                    };
                    self.keys.insert(
                        ok,
                        KeyState {
                            base,
                            operands: vec![at],
                        },
                    );
                }
            }
            ValueKind::RangeDelete => {
                let start = OrdKey::new(Bytes::copy_from_slice(key), &self.cmp);
                let end = OrdKey::new(Bytes::copy_from_slice(value), &self.cmp);
                if start < end {
                    for (_, state) in self
                        .keys
                        .range_mut((Bound::Included(start), Bound::Excluded(end)))
                    {
                        state.base = Base::Deleted;
                        state.operands.clear();
                    }
                }
                self.range_dels
                    .push((Bytes::copy_from_slice(key), Bytes::copy_from_slice(value)));
            }
            // Delete and SingleDelete (the batch reads either as "gone").
            _ => self.set(key, Base::Deleted),
        }
    }

    fn set(&mut self, key: &[u8], base: Base) {
        let ok = OrdKey::new(Bytes::copy_from_slice(key), &self.cmp);
        match self.keys.get_mut(&ok) {
            Some(state) => {
                state.base = base;
                state.operands.clear();
            }
            None => {
                self.keys.insert(
                    ok,
                    KeyState {
                        base,
                        operands: Vec::new(),
                    },
                );
            }
        }
    }
}

/// What the batch alone says about a key ([`WriteBatchWithIndex::get_from_batch`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BatchLookup {
    /// The batch decides the value.
    Found(Bytes),
    /// The batch deleted the key.
    Deleted,
    /// The batch holds merge operands for the key but no value below them:
    /// the database's value is needed.
    MergeInProgress,
    /// The batch does not touch the key.
    NotFound,
}

/// A [`WriteBatch`] with an index by key: reads through
/// [`get_from_batch_and_db`](WriteBatchWithIndex::get_from_batch_and_db)
/// and [`iter`](WriteBatchWithIndex::iter) see the database with the
/// batch's writes applied — puts, deletes, range deletions and merges.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use lithify_engine::{Db, Options, ReadOptions};
/// use lithify_txn::WriteBatchWithIndex;
///
/// let db = Db::open(dir.path(), Options::default()).unwrap();
/// db.put(b"a", b"db").unwrap();
/// db.put(b"b", b"db").unwrap();
/// let t = db.default_table();
/// let mut batch = WriteBatchWithIndex::new();
/// batch.put(&t, b"c", b"batch");
/// batch.delete(&t, b"a");
/// let read = ReadOptions::default();
/// assert_eq!(batch.get_from_batch_and_db(&t, b"a", &read).unwrap(), None);
/// let mut it = batch.iter(&t, &read).unwrap();
/// it.seek_to_first().unwrap();
/// let mut seen = Vec::new();
/// while let Some((k, v)) = it.entry() {
///     seen.push((k.to_vec(), v.to_vec()));
///     it.next().unwrap();
/// }
/// assert_eq!(seen, [(b"b".to_vec(), b"db".to_vec()), (b"c".to_vec(), b"batch".to_vec())]);
/// drop(it); // a cursor borrows the batch's index
/// db.write(batch.into_batch()).unwrap();
/// assert_eq!(db.get(b"a").unwrap(), None);
/// ```
pub struct WriteBatchWithIndex {
    batch: WriteBatch,
    /// The comparator of each table written to (few: a linear search).
    /// The first table written to, kept inline (most batches write one
    /// table), and the others.
    first_table: Option<(u32, Arc<dyn Comparator>)>,
    other_tables: Vec<(u32, Arc<dyn Comparator>)>,
    /// The index, brought up to date with the batch by the first read
    /// after a write: a transaction that only writes never builds it.
    /// Writes take `&mut self`, so no reader's borrow of the index can
    /// outlive the records it covers.
    index: RefCell<Index>,
}

/// The index of the records up to a point of the batch.
#[derive(Default)]
struct Index {
    /// The index of each table written to.
    tables: Vec<(u32, TableIndex)>,
    /// Records indexed.
    records: usize,
    /// Where the records not yet indexed start in the batch's encoding.
    bytes: usize,
}

impl Index {
    fn table(&self, id: u32) -> Option<&TableIndex> {
        self.tables.iter().find(|(t, _)| *t == id).map(|(_, i)| i)
    }
}

impl Default for WriteBatchWithIndex {
    fn default() -> Self {
        WriteBatchWithIndex {
            // Room for a few records: a small transaction grows it once.
            batch: WriteBatch::with_capacity(256),
            first_table: None,
            other_tables: Vec::new(),
            index: RefCell::new(Index::default()),
        }
    }
}

impl std::fmt::Debug for WriteBatchWithIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBatchWithIndex")
            .field("batch", &self.batch)
            .field(
                "tables",
                &(usize::from(self.first_table.is_some()) + self.other_tables.len()),
            )
            .finish()
    }
}

impl WriteBatchWithIndex {
    /// An empty batch.
    pub fn new() -> Self {
        WriteBatchWithIndex::default()
    }

    /// Sets `key` of `table` to `value`.
    pub fn put(&mut self, table: &Table, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        let (key, value) = (key.as_ref(), value.as_ref());
        self.batch.put_cf(table, key, value);
        self.note_table(table);
    }

    /// Deletes `key` of `table`.
    pub fn delete(&mut self, table: &Table, key: impl AsRef<[u8]>) {
        let key = key.as_ref();
        self.batch.delete_cf(table, key);
        self.note_table(table);
    }

    /// Single-deletes `key` of `table` (see
    /// [`Db::single_delete`](lithify_engine::Db::single_delete)); the batch
    /// reads it as deleted.
    pub fn single_delete(&mut self, table: &Table, key: impl AsRef<[u8]>) {
        let key = key.as_ref();
        self.batch.single_delete_cf(table, key);
        self.note_table(table);
    }

    /// Adds a merge operand to `key` of `table`.
    pub fn merge(&mut self, table: &Table, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) {
        let (key, operand) = (key.as_ref(), operand.as_ref());
        self.batch.merge_cf(table, key, operand);
        self.note_table(table);
    }

    /// Deletes the keys of `table` in `[start, end)`.
    pub fn delete_range(&mut self, table: &Table, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) {
        let (start, end) = (start.as_ref(), end.as_ref());
        self.batch.delete_range_cf(table, start, end);
        self.note_table(table);
    }

    /// The number of records.
    pub fn len(&self) -> usize {
        self.batch.len()
    }

    /// Whether the batch holds no record.
    pub fn is_empty(&self) -> bool {
        self.batch.is_empty()
    }

    /// The records, as they will be written.
    pub fn batch(&self) -> &WriteBatch {
        &self.batch
    }

    /// The records, for [`Db::write`](lithify_engine::Db::write).
    pub fn into_batch(self) -> WriteBatch {
        self.batch
    }

    /// Moves the records out, leaving the batch empty (a commit's write).
    pub(crate) fn take_batch(&mut self) -> WriteBatch {
        *self.index.get_mut() = Index::default();
        std::mem::replace(&mut self.batch, WriteBatch::new())
    }

    /// Removes every record.
    pub fn clear(&mut self) {
        self.batch.clear();
        *self.index.get_mut() = Index::default();
    }

    /// Marks the current end of the batch (save points nest).
    pub fn set_save_point(&mut self) {
        self.batch.set_save_point();
    }

    /// Removes every record added since the newest save point, and that
    /// save point; `false` if there is none.
    pub fn rollback_to_save_point(&mut self) -> bool {
        if !self.batch.rollback_to_save_point() {
            return false;
        }
        // The next read indexes the remaining records afresh.
        *self.index.get_mut() = Index::default();
        true
    }

    /// Forgets the newest save point; `false` if there is none.
    pub fn pop_save_point(&mut self) -> bool {
        self.batch.pop_save_point()
    }

    /// What the batch alone says about `key` of `table`.
    pub fn get_from_batch(&self, table: &Table, key: &[u8]) -> Result<BatchLookup> {
        let index = self.indexed();
        let Some(index) = index.table(table.id()) else {
            return Ok(BatchLookup::NotFound);
        };
        let Some(state) = index.lookup(key) else {
            return Ok(if index.range_deleted(key) {
                BatchLookup::Deleted
            } else {
                BatchLookup::NotFound
            });
        };
        Ok(match &state.base {
            Base::Db => BatchLookup::MergeInProgress,
            _ => match resolve(table, key, state, self.batch.encoded(), None)? {
                Some(v) => BatchLookup::Found(v),
                None => BatchLookup::Deleted,
            },
        })
    }

    /// The value of `key` of `table` in the database as `read` sees it,
    /// with the batch applied.
    pub fn get_from_batch_and_db(
        &self,
        table: &Table,
        key: &[u8],
        read: &ReadOptions,
    ) -> Result<Option<Bytes>> {
        let index = self.indexed();
        let state = index.table(table.id()).and_then(|index| {
            index
                .lookup(key)
                .map(Some)
                .or_else(|| index.range_deleted(key).then_some(None))
        });
        match state {
            None => Ok(table.get_opt(key, read)?),
            Some(None) => Ok(None),
            Some(Some(state)) => {
                let db_value = match state.base {
                    Base::Db => table.get_opt(key, read)?,
                    Base::Value(_) | Base::Deleted => None,
                };
                resolve(table, key, state, self.batch.encoded(), db_value.as_deref())
            }
        }
    }

    /// A cursor over `table` as `read` sees it (its snapshot and bounds)
    /// with the batch applied.
    pub fn iter(&self, table: &Table, read: &ReadOptions) -> Result<BaseDeltaIterator<'_>> {
        let id = table.id();
        let delta = Ref::filter_map(self.indexed(), |i| i.table(id)).ok();
        BaseDeltaIterator::new(table, read, delta, self.batch.encoded())
    }

    /// The keys of `table` the batch writes (puts, deletes, merges), in key
    /// order.
    pub fn keys(&self, table: &Table) -> Vec<Bytes> {
        self.indexed()
            .table(table.id())
            .map(|i| i.keys.keys().map(|k| k.key.clone()).collect())
            .unwrap_or_default()
    }

    /// Remembers `table`'s comparator (the index orders its keys by it).
    fn note_table(&mut self, table: &Table) {
        let id = table.id();
        if self.comparator(id).is_some() {
            return;
        }
        let entry = (id, Arc::clone(table.comparator()));
        if self.first_table.is_none() {
            self.first_table = Some(entry);
        } else {
            self.other_tables.push(entry);
        }
    }

    /// The comparator of table `id`, if the batch wrote to it.
    fn comparator(&self, id: u32) -> Option<&Arc<dyn Comparator>> {
        self.first_table
            .iter()
            .chain(self.other_tables.iter())
            .find(|(t, _)| *t == id)
            .map(|(_, c)| c)
    }

    /// The index, brought up to date with the batch first.
    fn indexed(&self) -> Ref<'_, Index> {
        let records = self.batch.len();
        if self.index.borrow().records != records {
            let mut index = self.index.borrow_mut();
            let rep = self.batch.encoded();
            let base = rep.as_ptr() as usize;
            for e in self.batch.iter_from(index.bytes, index.records).flatten() {
                let at = match index.tables.iter().position(|(t, _)| *t == e.table) {
                    Some(at) => at,
                    None => {
                        let Some(cmp) = self.comparator(e.table) else {
                            continue;
                        };
                        index
                            .tables
                            .push((e.table, TableIndex::new(Arc::clone(cmp))));
                        index.tables.len() - 1
                    }
                };
                // A tombstone's empty value does not point into the batch.
                let start = if e.value.is_empty() {
                    0
                } else {
                    e.value.as_ptr() as usize - base
                };
                index.tables[at]
                    .1
                    .apply(e.kind, e.key, e.value, start..start + e.value.len());
            }
            index.records = records;
            index.bytes = self.batch.size_in_bytes();
        }
        self.index.borrow()
    }
}

/// The value `state` makes of `key`; `rep` is the batch's encoding (its
/// spans point there), `db_value` the database's value of the key (used
/// only when the batch's operands apply to it).
pub(crate) fn resolve(
    table: &Table,
    key: &[u8],
    state: &KeyState,
    rep: &[u8],
    db_value: Option<&[u8]>,
) -> Result<Option<Bytes>> {
    let below = match &state.base {
        Base::Value(v) => Some(&rep[v.clone()]),
        Base::Deleted => None,
        Base::Db => db_value,
    };
    if state.operands.is_empty() {
        return Ok(below.map(Bytes::copy_from_slice));
    }
    let newest_first: Vec<Bytes> = state
        .operands
        .iter()
        .rev()
        .map(|o| Bytes::copy_from_slice(&rep[o.clone()]))
        .collect();
    Ok(Some(table.full_merge(key, below, &newest_first)?))
}
