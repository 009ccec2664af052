//! Tables (column families): `Db::create_table`, `drop_table`, `table`,
//! and the [`Table`] handle — each table with its own memtables, levels,
//! options and compaction strategy; one WAL and one sequence for all.

use std::collections::VecDeque;
use std::fmt;
use std::ops::{Bound, RangeBounds};
use std::sync::{Arc as StdArc, Weak};

use bytes::Bytes;
use lithify_base::ValueKind;
use lithify_base::sync::Arc;
use lithify_compaction::{CompactRangeOptions, CompactionStatsTable};
use lithify_compaction_strategy::CompactionStrategy;
use lithify_version::TableId;

use crate::batch::WriteBatch;
use crate::error::{ClosedSnafu, InvalidArgumentSnafu, Result};
use crate::iter::{DbIterator, RawIterator};
use crate::iter_source::cursor_source;
use crate::options::{ReadOptions, TableOptions, WriteOptions};
use crate::snapshot::Snapshot;
use crate::state::DbInner;
use crate::state::leader::MemSet;
use crate::state::table::{TableMut, TableState};
use crate::stats::TableStats;
use crate::super_version::SuperVersion;

/// A handle to one table of an open database (a column family).
///
/// Handles are cheap to clone. Like RocksDB's column family handles they
/// do not keep the database open: once the [`Db`](crate::Db) is closed or
/// dropped (which releases its `LOCK`), every operation through a handle
/// fails with [`Error::Closed`](crate::Error::Closed); once the table is
/// dropped, with an invalid-argument error. A handle to a dropped table
/// keeps the table's last files until the handle goes.
/// Writes to several tables commit atomically in one [`WriteBatch`]
/// ([`WriteBatch::put_cf`] and friends).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use lithify_engine::{CompactionStrategy, Db, Options, TableOptions, WriteBatch};
///
/// let db = Db::open(dir.path(), Options::default()).unwrap();
/// let events = db
///     .create_table(
///         "events",
///         TableOptions::default().compaction_strategy(CompactionStrategy::parse("major-only")),
///     )
///     .unwrap();
/// let mut batch = WriteBatch::new();
/// batch.put(b"user/1", b"alice"); // the default table
/// batch.put_cf(&events, b"0001", b"signed up"); // the events table
/// db.write(batch).unwrap(); // both or neither
/// assert_eq!(events.get(b"0001").unwrap().unwrap(), &b"signed up"[..]);
/// assert_eq!(db.get(b"0001").unwrap(), None);
/// assert_eq!(events.compaction_strategy().unwrap().0.kind_name(), "major-only");
///
/// // The handle does not keep the database open.
/// db.close().unwrap();
/// assert!(events.get(b"0001").is_err());
/// ```
#[derive(Clone)]
pub struct Table {
    pub(crate) inner: Weak<DbInner>,
    pub(crate) state: StdArc<TableState>,
}

impl fmt::Debug for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Table")
            .field("name", &self.state.name)
            .field("id", &self.state.id)
            .finish()
    }
}

fn bounds_of<K: AsRef<[u8]>>(range: &impl RangeBounds<K>) -> (Bound<Bytes>, Bound<Bytes>) {
    let map = |b: Bound<&K>| match b {
        Bound::Included(k) => Bound::Included(Bytes::copy_from_slice(k.as_ref())),
        Bound::Excluded(k) => Bound::Excluded(Bytes::copy_from_slice(k.as_ref())),
        Bound::Unbounded => Bound::Unbounded,
    };
    (map(range.start_bound()), map(range.end_bound()))
}

/// The smallest key above every key that starts with `prefix` (bytewise),
/// `None` when there is none (the prefix is all `0xff`).
pub(crate) fn prefix_successor(prefix: &[u8]) -> Option<Bytes> {
    let i = prefix.iter().rposition(|&b| b != 0xff)?;
    let mut s = prefix[..=i].to_vec();
    s[i] += 1;
    Some(Bytes::from(s))
}

/// A batch's records addressed to a table (RocksDB's `_cf` calls); the
/// batch format and the default table's calls are in `batch.rs`.
impl WriteBatch {
    /// Sets `key` to `value` in `table`.
    pub fn put_cf(&mut self, table: &Table, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.add(table.id(), ValueKind::Put, key.as_ref(), value.as_ref());
    }

    /// Deletes `key` in `table`.
    pub fn delete_cf(&mut self, table: &Table, key: impl AsRef<[u8]>) {
        self.add(table.id(), ValueKind::Delete, key.as_ref(), &[]);
    }

    /// Adds a merge operand to `key` in `table`.
    pub fn merge_cf(&mut self, table: &Table, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) {
        self.add(table.id(), ValueKind::Merge, key.as_ref(), operand.as_ref());
    }

    /// Single-deletes `key` in `table` (see [`single_delete`](Self::single_delete)).
    pub fn single_delete_cf(&mut self, table: &Table, key: impl AsRef<[u8]>) {
        self.add(table.id(), ValueKind::SingleDelete, key.as_ref(), &[]);
    }

    /// Deletes every key of `table` in `[start, end)` (a range marker).
    pub fn delete_range_cf(
        &mut self,
        table: &Table,
        start: impl AsRef<[u8]>,
        end: impl AsRef<[u8]>,
    ) {
        self.add(
            table.id(),
            ValueKind::RangeDelete,
            start.as_ref(),
            end.as_ref(),
        );
    }
}

impl Table {
    /// The table's name.
    pub fn name(&self) -> &str {
        &self.state.name
    }

    /// The table's id (as recorded in the WAL and the MANIFEST).
    pub fn id(&self) -> u32 {
        self.state.id
    }

    /// The comparator that orders the table's keys.
    pub fn comparator(&self) -> &std::sync::Arc<dyn lithify_base::Comparator> {
        self.state.icmp.user_comparator()
    }

    /// Applies the table's merge operator: the value of `key` made of
    /// `operands` (newest first) over `base` (`None`: no value below them).
    /// Fails as a read would: no operator, or the operator refused.
    pub fn full_merge(&self, key: &[u8], base: Option<&[u8]>, operands: &[Bytes]) -> Result<Bytes> {
        self.state.merge.full_merge(key, base, operands)
    }

    /// The database, if it is still open and the table not dropped.
    pub(crate) fn db(&self) -> Result<StdArc<DbInner>> {
        let Some(inner) = self.inner.upgrade() else {
            return ClosedSnafu {
                table: self.state.name.clone(),
            }
            .fail();
        };
        if self.state.is_dropped() {
            return InvalidArgumentSnafu {
                message: format!("table {} was dropped", self.state.name),
            }
            .fail();
        }
        Ok(inner)
    }

    /// Sets `key` to `value`.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.put_opt(key, value, &WriteOptions::default())
    }

    /// Sets `key` to `value` with explicit write options.
    pub fn put_opt(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        options: &WriteOptions,
    ) -> Result<()> {
        let mut b = WriteBatch::new();
        b.put_cf(self, key, value);
        self.write_opt(b, options)
    }

    /// Deletes `key`.
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete_cf(self, key);
        self.write_opt(b, &WriteOptions::default())
    }

    /// Adds a merge operand to `key` (see [`Db::merge`](crate::Db::merge)).
    pub fn merge(&self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.merge_cf(self, key, operand);
        self.write_opt(b, &WriteOptions::default())
    }

    /// Single-deletes `key` (see [`Db::single_delete`](crate::Db::single_delete)).
    pub fn single_delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.single_delete_cf(self, key);
        self.write_opt(b, &WriteOptions::default())
    }

    /// Deletes every key in `[start, end)` (a range marker; `start < end`).
    pub fn delete_range(&self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete_range_cf(self, start, end);
        self.write_opt(b, &WriteOptions::default())
    }

    fn write_opt(&self, batch: WriteBatch, options: &WriteOptions) -> Result<()> {
        crate::write::write_batch(&*self.db()?, batch, options, None)
    }

    /// The value of `key`, if any.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Bytes>> {
        crate::get::get_in(&*self.db()?, &self.state, key.as_ref(), None)
    }

    /// The value of `key` at the read options' snapshot.
    pub fn get_opt(&self, key: impl AsRef<[u8]>, options: &ReadOptions) -> Result<Option<Bytes>> {
        let snap = options.snapshot.as_ref().map(Snapshot::sequence_number);
        crate::get::get_in(&*self.db()?, &self.state, key.as_ref(), snap)
    }

    /// Every key of the table in order (an iterator pins what it reads
    /// and works on after the database closes).
    pub fn iter(&self) -> Result<DbIterator> {
        self.iter_opt(&ReadOptions::default())
    }

    /// Every key within the read options' bounds, at their snapshot.
    pub fn iter_opt(&self, options: &ReadOptions) -> Result<DbIterator> {
        Ok(DbIterator::new(
            cursor_source(&*self.db()?, &self.state, options),
            Bound::Unbounded,
            Bound::Unbounded,
            None,
        ))
    }

    /// The keys in `range`.
    pub fn range<K: AsRef<[u8]>>(&self, range: impl RangeBounds<K>) -> Result<DbIterator> {
        self.range_opt(range, &ReadOptions::default())
    }

    /// The keys in `range` at the read options' snapshot.
    pub fn range_opt<K: AsRef<[u8]>>(
        &self,
        range: impl RangeBounds<K>,
        options: &ReadOptions,
    ) -> Result<DbIterator> {
        Ok(range_in(&*self.db()?, &self.state, range, options))
    }

    /// The keys starting with `prefix`.
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> Result<DbIterator> {
        Ok(prefix_in(&*self.db()?, &self.state, prefix.as_ref()))
    }

    /// A cursor over the table (see [`RawIterator`]).
    pub fn raw_iterator(&self, options: &ReadOptions) -> Result<RawIterator> {
        RawIterator::new(cursor_source(&*self.db()?, &self.state, options))
    }

    /// Switches the table's memtable (if it holds anything) and waits until
    /// it is flushed.
    pub fn flush(&self) -> Result<()> {
        crate::flush::flush_table(&*self.db()?, self.state.id)
    }

    /// Compacts `[begin, end]` as [`Db::compact_range`](crate::Db::compact_range)
    /// does, with the table's strategy (a major compaction of the range for
    /// the two-tier strategies).
    pub fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.compact_range_opt(begin, end, &CompactRangeOptions::default())
    }

    /// [`compact_range`](Table::compact_range) with RocksDB's
    /// `CompactRangeOptions`, as [`Db::compact_range_opt`](crate::Db::compact_range_opt).
    pub fn compact_range_opt(
        &self,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
        options: &CompactRangeOptions,
    ) -> Result<()> {
        crate::compaction::compact_range(&*self.db()?, self.state.id, begin, end, options)
    }

    /// A named property of this table, as RocksDB's `GetProperty` on a
    /// column family (see [`Db::property_names`](crate::Db::property_names)):
    /// the level-shaped ones (`lithify.num-files-at-level<N>`,
    /// `lithify.levelstats`, memtable and size figures) describe this
    /// table, the database-wide ones (`lithify.stats`, write stalls,
    /// running jobs) the whole database. `None` for an unknown name.
    ///
    /// ```
    /// # fn main() -> lithify_engine::Result<()> {
    /// use lithify_engine::{CompactRangeOptions, Db, Options, TableOptions};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let db = Db::open(dir.path(), Options::default())?;
    /// let users = db.create_table("users", TableOptions::default())?;
    /// users.put(b"alice", b"1")?;
    /// users.compact_range_opt(None, None, &CompactRangeOptions::default())?;
    /// let files = |t: &lithify_engine::Table| -> lithify_engine::Result<usize> {
    ///     Ok((0..7)
    ///         .filter_map(|l| t.property(&format!("lithify.num-files-at-level{l}")).ok().flatten())
    ///         .map(|n| n.parse::<usize>().unwrap())
    ///         .sum())
    /// };
    /// assert_eq!(files(&users)?, 1);
    /// assert_eq!(files(&db.default_table())?, 0);
    /// assert_eq!(users.property("lithify.no-such-property")?, None);
    /// # Ok(())
    /// # }
    /// ```
    pub fn property(&self, name: &str) -> Result<Option<String>> {
        Ok(crate::properties::property(&*self.db()?, &self.state, name))
    }

    /// Ingests SST files written by [`SstFileWriter`](crate::SstFileWriter)
    /// into this table (see [`Db::ingest_external_file`](crate::Db::ingest_external_file)).
    pub fn ingest_external_file(
        &self,
        paths: &[impl AsRef<std::path::Path>],
        options: &crate::IngestOptions,
    ) -> Result<Vec<crate::IngestedFile>> {
        let paths: Vec<std::path::PathBuf> =
            paths.iter().map(|p| p.as_ref().to_path_buf()).collect();
        crate::ingest::ingest_external_files(&*self.db()?, self.state.id, &paths, options)
    }

    /// Runs the table's major compaction now (what its scheduled major
    /// compaction runs): the whole table merged down and the bottom level
    /// rewritten. Returns when done; memtables are not flushed first.
    pub fn major_compact(&self) -> Result<()> {
        crate::compaction::major_compact(&*self.db()?, self.state.id)
    }

    /// Sets the table's compaction strategy on the live table. The new
    /// strategy's next compaction reshapes what the old one left (see
    /// `lithify-compaction-leveled`'s README); `Adaptive` starts observing.
    /// The choice lasts until the database closes; set
    /// [`TableOptions::compaction_strategy`] to keep it across opens.
    pub fn set_compaction_strategy(&self, strategy: CompactionStrategy) -> Result<()> {
        crate::strategy::set_strategy(&*self.db()?, self.state.id, strategy)
    }

    /// Changes the table's options while it is open (RocksDB's
    /// `SetOptions`), by RocksDB's names and value spellings: today the
    /// key-value separation settings of [`BlobOptions`](crate::BlobOptions)
    /// (`enable_blob_files`, `min_blob_size`, `blob_file_size`,
    /// `blob_compression_type`, `enable_blob_garbage_collection`,
    /// `blob_garbage_collection_age_cutoff`,
    /// `blob_garbage_collection_force_threshold`,
    /// `blob_compaction_readahead_size`).
    ///
    /// All changes apply together or none does (an unknown name, a value
    /// that does not parse, or settings that do not hold together are an
    /// invalid argument). They apply to the flushes and compactions that
    /// start afterwards: files written before keep what they hold. Like
    /// RocksDB's, the change is not stored: the next open takes the
    /// options it is given.
    ///
    /// ```
    /// use lithify_engine::{Db, Options};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = Db::open(dir.path(), Options::default()).unwrap();
    /// let table = db.default_table();
    /// db.put(b"before", vec![1u8; 500]).unwrap();
    /// db.flush().unwrap();
    /// assert!(db.live_blob_files().is_empty());
    ///
    /// table
    ///     .set_options(&[("enable_blob_files", "true"), ("min_blob_size", "100")])
    ///     .unwrap();
    /// db.put(b"after", vec![2u8; 500]).unwrap();
    /// db.flush().unwrap();
    /// assert_eq!(db.live_blob_files()[0].blob_count, 1);
    /// assert_eq!(table.blob_options().unwrap().min_blob_size, 100);
    ///
    /// let err = table.set_options(&[("min_blob_size", "many")]).unwrap_err();
    /// assert!(err.to_string().contains("min_blob_size"));
    /// ```
    pub fn set_options(&self, changes: &[(&str, &str)]) -> Result<()> {
        let db = self.db()?;
        let blob = crate::options::set::apply(self.state.blob_options(), changes)?;
        self.state.set_blob_options(blob);
        tracing::info!(
            target: "lithify::engine",
            table = %self.state.name,
            changes = ?changes,
            "options changed"
        );
        // A changed garbage collection rule may make compactions due.
        db.wake_background();
        Ok(())
    }

    /// The table's key-value separation settings in force (its options'
    /// [`blob`](crate::Options::blob), or what
    /// [`set_options`](Self::set_options) changed them to).
    pub fn blob_options(&self) -> Result<crate::BlobOptions> {
        self.db()?;
        Ok(self.state.blob_options())
    }

    /// The strategy in force and why (for `Adaptive`: its latest choice and
    /// the workload figures behind it).
    pub fn compaction_strategy(&self) -> Result<(CompactionStrategy, String)> {
        Ok(crate::strategy::strategy_of(&*self.db()?, self.state.id))
    }

    /// The table's statistics (levels, amplification, strategy).
    pub fn stats(&self) -> Result<TableStats> {
        let db = self.db()?;
        let stats = crate::properties::collect_stats(&db);
        match stats.tables.into_iter().find(|t| t.name == self.state.name) {
            Some(t) => Ok(t),
            None => InvalidArgumentSnafu {
                message: format!("table {} was dropped", self.state.name),
            }
            .fail(),
        }
    }
}

pub(crate) fn range_in<K: AsRef<[u8]>>(
    inner: &DbInner,
    table: &TableState,
    range: impl RangeBounds<K>,
    options: &ReadOptions,
) -> DbIterator {
    let (start, end) = bounds_of(&range);
    let mut opts = options.clone();
    if let Bound::Included(s) = &start
        && opts.lower_bound.is_none()
    {
        opts.lower_bound = Some(s.clone());
    }
    if let Bound::Excluded(e) = &end
        && opts.upper_bound.is_none()
    {
        opts.upper_bound = Some(e.clone());
    }
    DbIterator::new(cursor_source(inner, table, &opts), start, end, None)
}

pub(crate) fn prefix_in(inner: &DbInner, table: &TableState, prefix: &[u8]) -> DbIterator {
    let prefix = Bytes::copy_from_slice(prefix);
    let mut opts = ReadOptions::default().lower_bound(Some(prefix.clone()));
    let end = match prefix_successor(&prefix) {
        Some(s) => {
            opts.upper_bound = Some(s.clone());
            Bound::Excluded(s)
        }
        None => Bound::Unbounded,
    };
    DbIterator::new(
        cursor_source(inner, table, &opts),
        Bound::Included(prefix.clone()),
        end,
        Some(prefix),
    )
}

/// Creates table `name` with the database's options and `overrides`.
pub(crate) fn create_table(
    db: &DbInner,
    name: &str,
    overrides: &TableOptions,
) -> Result<StdArc<TableState>> {
    db.check_writable()?;
    if name.is_empty() {
        return InvalidArgumentSnafu {
            message: "a table needs a name".to_owned(),
        }
        .fail();
    }
    let base = crate::options::translate::table_effective_options(&db.options, name);
    let topts = StdArc::new(overrides.apply(&base).sanitized()?);
    let (picker, strategy) = crate::state::table::StrategyState::from_options(&topts)?;
    // The leader lock keeps writes out while the table appears: its log
    // number is the live WAL, which every write to it will follow.
    let mut leader = db.leader.lock();
    if db.versions.table_by_name(name).is_some() {
        return InvalidArgumentSnafu {
            message: format!("table {name} exists"),
        }
        .fail();
    }
    let log_number = leader.log.as_ref().map_or(0, |l| l.number);
    // The MANIFEST will name this WAL as the table's log number: its
    // directory entry must be durable first (an open refuses a log
    // number whose WAL is missing).
    if let Some(log) = leader.log.as_mut()
        && !log.dir_synced
    {
        snafu::ResultExt::context(
            db.fs.sync_dir(&db.dir),
            crate::error::IoSnafu {
                op: "syncing directory",
                path: db.dir.clone(),
            },
        )?;
        log.dir_synced = true;
    }
    let merge_operator = topts.merge_operator.as_ref().map(|m| m.name().to_owned());
    let id = db.record_table_created(name, log_number, merge_operator.as_deref())?;
    let version = db
        .versions
        .current(id)
        .expect("a created table has a version");
    let mem = Arc::new(crate::state::table::new_memtable(
        &db.default_table.icmp,
        &topts,
    ));
    let state = StdArc::new(TableState::new(
        id,
        name.to_owned(),
        StdArc::clone(&topts),
        db.default_table.icmp.clone(),
        SuperVersion::new(Arc::clone(&mem), Vec::new(), StdArc::clone(&version), None),
        merge_operator.clone(),
    ));
    state
        .mem_first_log
        .store(log_number, std::sync::atomic::Ordering::Relaxed);
    state.workload.configure(&strategy);
    if state.workload.is_enabled() {
        db.adaptive_seen
            .store(true, std::sync::atomic::Ordering::Release);
    }
    let table = TableMut::new(
        StdArc::clone(&state),
        Arc::clone(&mem),
        VecDeque::new(),
        version,
        CompactionStatsTable::new(topts.num_levels),
        picker,
        strategy,
    );
    db.add_table(&mut db.lock_state(), table);
    let mut entries: Vec<_> = leader
        .mems
        .entries
        .iter()
        .map(|(i, s, m)| (*i, StdArc::clone(s), Arc::clone(m)))
        .collect();
    entries.push((id, StdArc::clone(&state), mem));
    leader.mems = Arc::new(MemSet { entries });
    Ok(state)
}

/// Drops table `name`: waits for its running flush and compactions,
/// forgets its memtables (unflushed writes to it are discarded) and
/// records the drop; its files are deleted once nothing reads them.
pub(crate) fn drop_table(db: &DbInner, name: &str) -> Result<()> {
    db.check_writable()?;
    let Some(info) = db.versions.table_by_name(name) else {
        return InvalidArgumentSnafu {
            message: format!("no table {name}"),
        }
        .fail();
    };
    if info.id == lithify_version::DEFAULT_TABLE {
        return InvalidArgumentSnafu {
            message: "the default table cannot be dropped".to_owned(),
        }
        .fail();
    }
    let id: TableId = info.id;
    {
        // No new job starts on a dropped table; running ones finish.
        let mut st = db.lock_state();
        let Some(t) = st.table(id) else {
            return Ok(());
        };
        t.state().mark_dropped();
        while st.table(id).is_some_and(TableMut::has_running_jobs)
            && st.bg_error().is_none()
            && !st.is_shutting_down()
        {
            st = db.done_cv.wait(st);
        }
    }
    let mut leader = db.leader.lock();
    let mut st = db.lock_state();
    if st.table(id).is_none() {
        return Ok(());
    }
    db.remove_table(&mut st, id)?;
    drop(st);
    let entries = leader
        .mems
        .entries
        .iter()
        .filter(|(i, _, _)| *i != id)
        .map(|(i, s, m)| (*i, StdArc::clone(s), Arc::clone(m)))
        .collect();
    leader.mems = Arc::new(MemSet { entries });
    drop(leader);
    crate::purge::purge_obsolete_files(db);
    Ok(())
}

/// The shared state of table `name`.
pub(crate) fn table_named(db: &DbInner, name: &str) -> Option<StdArc<TableState>> {
    let st = db.lock_state();
    st.tables()
        .find(|(_, t)| t.state().name == name)
        .map(|(_, t)| StdArc::clone(t.state()))
}

/// The table names, default table first.
pub(crate) fn table_names(db: &DbInner) -> Vec<String> {
    let st = db.lock_state();
    st.tables().map(|(_, t)| t.state().name.clone()).collect()
}
