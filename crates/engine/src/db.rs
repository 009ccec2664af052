//! `Db`: the public handle.

use std::fmt;
use std::ops::{Bound, RangeBounds};
use std::path::Path;
use std::sync::Arc as StdArc;
use std::thread::JoinHandle;

use bytes::Bytes;
use lithify_base::SeqNo;
use lithify_base::sync::Mutex;
use lithify_compaction::CompactRangeOptions;
use lithify_version::DEFAULT_TABLE;

use crate::batch::WriteBatch;
use crate::error::{Error, ReadOnlySnafu, Result};
use crate::iter::{DbIterator, RawIterator};
use crate::iter_source::cursor_source;
use crate::options::{Options, ReadOptions, TableOptions, WriteOptions};
use crate::snapshot::Snapshot;
use crate::state::DbInner;
use crate::stats::DbStats;
use crate::table::Table;

/// An open database.
///
/// `Db` is `Send + Sync`: share it between threads by reference or in an
/// `Arc`. Concurrent writers are committed together in write groups;
/// readers never wait for writers. Dropping the database (or calling
/// [`close`](Db::close)) stops the background threads after their current
/// job; every acknowledged write survives (non-`sync` writes as far as the
/// operating system keeps them).
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use lithify_engine::{Db, Options, WriteBatch};
///
/// let db = Db::open(dir.path(), Options::default()).unwrap();
/// db.put(b"apple", b"red").unwrap();
/// let mut batch = WriteBatch::new();
/// batch.put(b"banana", b"yellow");
/// batch.delete(b"apple");
/// db.write(batch).unwrap();
/// assert_eq!(db.get(b"apple").unwrap(), None);
/// assert_eq!(db.get(b"banana").unwrap().unwrap(), &b"yellow"[..]);
/// db.close().unwrap();
///
/// let db = Db::open(dir.path(), Options::default()).unwrap();
/// assert_eq!(db.get(b"banana").unwrap().unwrap(), &b"yellow"[..]);
/// ```
pub struct Db {
    inner: StdArc<DbInner>,
    workers: Mutex<Vec<JoinHandle<()>>>,
}

impl fmt::Debug for Db {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Db")
            .field("dir", &self.inner.dir)
            .field("sequence", &self.inner.visible())
            .finish_non_exhaustive()
    }
}

impl Db {
    /// Opens the database in `path`, creating it if missing (unless
    /// `create_if_missing` is off). Recovery replays every WAL not yet
    /// flushed and writes it to L0. A second open of the same directory
    /// fails while this one lives (the `LOCK` file).
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        let (inner, workers) =
            crate::open::open(path.as_ref(), options, crate::open::OpenMode::ReadWrite)?;
        Ok(Db {
            inner,
            workers: Mutex::new(workers),
        })
    }

    /// Opens the database in `path` for reading only (RocksDB's
    /// `OpenForReadOnly`): the WALs are replayed into memory, and nothing
    /// in the directory is written, created, moved or deleted — no `LOCK`,
    /// no `LOG`, no new MANIFEST, no flush. No background work runs;
    /// writes, flushes and compactions fail with
    /// [`Error::OpenedReadOnly`]. Recovery refuses and reports damage as
    /// [`open`](Db::open) does, but leaves damaged files in place.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use lithify_engine::{Db, Options};
    ///
    /// let db = Db::open(dir.path(), Options::default()).unwrap();
    /// db.put(b"k", b"v").unwrap();
    /// drop(db); // the write is only in the WAL
    ///
    /// let ro = Db::open_read_only(dir.path(), Options::default()).unwrap();
    /// assert_eq!(ro.get(b"k").unwrap().unwrap(), &b"v"[..]);
    /// assert!(ro.put(b"k", b"w").unwrap_err().is_read_only());
    /// assert!(ro.recovery_report().is_clean());
    /// ```
    pub fn open_read_only(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        let (inner, workers) =
            crate::open::open(path.as_ref(), options, crate::open::OpenMode::ReadOnly)?;
        Ok(Db {
            inner,
            workers: Mutex::new(workers),
        })
    }

    /// What the open recovered and what it dropped (and where it kept the
    /// damaged files).
    pub fn recovery_report(&self) -> &crate::RecoveryReport {
        &self.inner.recovery
    }

    /// The database's identity (RocksDB's `GetDbIdentity`): recorded in
    /// its MANIFEST, in every WAL and SST file it writes, and kept by
    /// its checkpoints and restored backups, which are copies of it. A
    /// database written before identities gets one at its next
    /// read-write open; until then (a read-only open) this is a new one
    /// at every open.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = lithify_engine::Db::open(dir.path(), lithify_engine::Options::default()).unwrap();
    /// let id = db.db_id();
    /// drop(db);
    /// let db = lithify_engine::Db::open(dir.path(), lithify_engine::Options::default()).unwrap();
    /// assert_eq!(db.db_id(), id);
    /// assert_ne!(db.session_id(), id);
    /// ```
    pub fn db_id(&self) -> lithify_base::Id {
        self.inner.versions.db_id()
    }

    /// This open's identity (RocksDB's `GetDbSessionId`): new at every
    /// open, recorded in the SST files the open writes.
    pub fn session_id(&self) -> lithify_base::Id {
        self.inner.session_id
    }

    /// Whether the database was opened with
    /// [`open_read_only`](Db::open_read_only).
    pub fn is_read_only(&self) -> bool {
        self.inner.opened_read_only
    }

    /// The database directory.
    pub fn path(&self) -> &Path {
        &self.inner.dir
    }

    /// The options the database runs with (sanitised).
    pub fn options(&self) -> &Options {
        &self.inner.options
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
        let (key, value) = (key.as_ref(), value.as_ref());
        let mut b = crate::batch::spare(key.len() + value.len() + 11);
        b.put(key, value);
        self.write_opt(b, options)
    }

    /// Deletes `key`.
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.delete_opt(key, &WriteOptions::default())
    }

    /// Deletes `key` with explicit write options.
    pub fn delete_opt(&self, key: impl AsRef<[u8]>, options: &WriteOptions) -> Result<()> {
        let key = key.as_ref();
        let mut b = crate::batch::spare(key.len() + 6);
        b.delete(key);
        self.write_opt(b, options)
    }

    /// Adds a merge operand to `key`: the value becomes the merge
    /// operator's result of applying it to the current value, computed
    /// when the key is read or compacted, without reading it now (RocksDB's
    /// `Merge`). Fails with `InvalidArgument` when the table has no merge
    /// operator ([`Options::merge_operator`](crate::Options::merge_operator)).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use lithify_engine::{Db, Options, UInt64Add};
    ///
    /// let dir = std::env::temp_dir().join(format!("lithify-doc-merge-{}", std::process::id()));
    /// # let _ = std::fs::remove_dir_all(&dir);
    /// let db = Db::open(&dir, Options::default()
    ///     .merge_operator(Some(Arc::new(UInt64Add))))?;
    /// db.merge(b"hits", 1u64.to_le_bytes())?;
    /// db.merge(b"hits", 2u64.to_le_bytes())?;
    /// assert_eq!(db.get(b"hits")?.unwrap()[..], 3u64.to_le_bytes());
    /// # drop(db);
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), lithify_engine::Error>(())
    /// ```
    pub fn merge(&self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) -> Result<()> {
        self.merge_opt(key, operand, &WriteOptions::default())
    }

    /// [`merge`](Db::merge) with explicit write options.
    pub fn merge_opt(
        &self,
        key: impl AsRef<[u8]>,
        operand: impl AsRef<[u8]>,
        options: &WriteOptions,
    ) -> Result<()> {
        let (key, operand) = (key.as_ref(), operand.as_ref());
        let mut b = WriteBatch::with_capacity(key.len() + operand.len() + 11);
        b.merge(key, operand);
        self.write_opt(b, options)
    }

    /// Deletes `key`, a key put at most once since it was last deleted and
    /// never merged: in compaction the deletion and that put vanish
    /// together, where a `delete` would linger down to the last level
    /// (RocksDB's `SingleDelete`). Used on a key put twice, merged, or
    /// deleted with [`delete`](Db::delete), the result is undefined, as in
    /// RocksDB: an older put may come back. Compactions count such uses in
    /// [`MergeStats::single_delete_mismatches`](crate::MergeStats), and a
    /// single delete meeting a delete fails the compaction unless
    /// [`Options::enforce_single_delete_contracts`](crate::Options) is off.
    pub fn single_delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        self.single_delete_opt(key, &WriteOptions::default())
    }

    /// [`single_delete`](Db::single_delete) with explicit write options.
    pub fn single_delete_opt(&self, key: impl AsRef<[u8]>, options: &WriteOptions) -> Result<()> {
        let mut b = WriteBatch::new();
        b.single_delete(key);
        self.write_opt(b, options)
    }

    /// Deletes every key in `[start, end)`; `start < end` is required.
    pub fn delete_range(&self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Result<()> {
        self.delete_range_opt(start, end, &WriteOptions::default())
    }

    /// [`delete_range`](Db::delete_range) with explicit write options.
    pub fn delete_range_opt(
        &self,
        start: impl AsRef<[u8]>,
        end: impl AsRef<[u8]>,
        options: &WriteOptions,
    ) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete_range(start, end);
        self.write_opt(b, options)
    }

    /// Applies `batch` atomically.
    pub fn write(&self, batch: WriteBatch) -> Result<()> {
        self.write_opt(batch, &WriteOptions::default())
    }

    /// Applies `batch` atomically with explicit write options.
    pub fn write_opt(&self, batch: WriteBatch, options: &WriteOptions) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        crate::write::write_batch(&self.inner, batch, options, None)
    }

    /// Applies `batch` atomically if `check` allows it when the batch
    /// commits: the check runs in the write group, after every earlier
    /// write is in place and before this one takes its sequence numbers,
    /// so nothing commits in between (the validation of optimistic
    /// transactions; see [`CommitView`](crate::CommitView)).
    ///
    /// The outer `Result` is the write's; the inner one is the check's
    /// verdict: `Err(r)` means the batch was not written. An error the
    /// check returns fails this write alone.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use lithify_engine::{Db, Options, WriteBatch, WriteOptions};
    ///
    /// let db = Db::open(dir.path(), Options::default()).unwrap();
    /// let table = db.default_table().id();
    /// let seen = db.latest_sequence_number();
    /// db.put(b"k", b"written by someone else").unwrap();
    /// let mut batch = WriteBatch::new();
    /// batch.put(b"k", b"mine");
    /// let verdict = db
    ///     .write_checked(batch, &WriteOptions::default(), move |view| {
    ///         Ok(if view.key_changed_since(table, b"k", seen)? { Err("k changed") } else { Ok(()) })
    ///     })
    ///     .unwrap();
    /// assert_eq!(verdict, Err("k changed"));
    /// assert_eq!(db.get(b"k").unwrap().unwrap(), &b"written by someone else"[..]);
    /// ```
    pub fn write_checked<R, F>(
        &self,
        batch: WriteBatch,
        options: &WriteOptions,
        check: F,
    ) -> Result<std::result::Result<(), R>>
    where
        R: Send + 'static,
        F: FnOnce(&crate::CommitView<'_>) -> Result<std::result::Result<(), R>> + Send + 'static,
    {
        crate::commit_check::write_checked(&self.inner, batch, options, check)
    }

    /// Whether `key` of table `table` (a [`Table::id`](crate::Table::id))
    /// was written after sequence number `since`: put, deleted, merged or
    /// covered by a range deletion. The answer is exact only while a
    /// snapshot at or below `since` is held (compaction may drop versions
    /// no snapshot needs); a pessimistic transaction asks it under the
    /// key's lock.
    pub fn key_changed_since(&self, table: u32, key: &[u8], since: SeqNo) -> Result<bool> {
        crate::commit_check::key_changed_since(&self.inner, table, key, since)
    }

    /// Whether any key of table `table` between `start` and `end` was
    /// written after sequence number `since` (a range deletion overlapping
    /// the range counts); exact while a snapshot at or below `since` is
    /// held, as for [`key_changed_since`](Db::key_changed_since).
    pub fn range_changed_since(
        &self,
        table: u32,
        start: std::ops::Bound<&[u8]>,
        end: std::ops::Bound<&[u8]>,
        since: SeqNo,
    ) -> Result<bool> {
        crate::commit_check::range_changed_since(&self.inner, table, start, end, since)
    }

    /// The shared state, for the crate's own tests.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn inner(&self) -> &DbInner {
        &self.inner
    }

    /// The value of `key`, if any.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Bytes>> {
        crate::get::get_in(&self.inner, &self.inner.default_table, key.as_ref(), None)
    }

    /// The value of `key` with explicit read options (a snapshot).
    pub fn get_opt(&self, key: impl AsRef<[u8]>, options: &ReadOptions) -> Result<Option<Bytes>> {
        let snap = options.snapshot.as_ref().map(Snapshot::sequence_number);
        crate::get::get_in(&self.inner, &self.inner.default_table, key.as_ref(), snap)
    }

    /// The values of `keys`, all read at the same snapshot.
    pub fn multi_get<K: AsRef<[u8]>>(
        &self,
        keys: impl IntoIterator<Item = K>,
    ) -> Vec<Result<Option<Bytes>>> {
        self.multi_get_opt(keys, &ReadOptions::default())
    }

    /// [`multi_get`](Db::multi_get) with explicit read options.
    pub fn multi_get_opt<K: AsRef<[u8]>>(
        &self,
        keys: impl IntoIterator<Item = K>,
        options: &ReadOptions,
    ) -> Vec<Result<Option<Bytes>>> {
        let table = &self.inner.default_table;
        let sv = table.sv.get();
        let snap = options
            .snapshot
            .as_ref()
            .map_or_else(|| self.inner.visible(), Snapshot::sequence_number);
        keys.into_iter()
            .map(|k| crate::get::get_at(&self.inner, table, &sv, k.as_ref(), snap))
            .collect()
    }

    /// A snapshot of the current state.
    pub fn snapshot(&self) -> Snapshot {
        self.inner.snapshots.acquire(self.inner.visible())
    }

    /// The sequence number of the last write readers can see.
    pub fn latest_sequence_number(&self) -> SeqNo {
        self.inner.visible()
    }

    /// Every key in order (see [`DbIterator`]).
    pub fn iter(&self) -> DbIterator {
        self.iter_opt(&ReadOptions::default())
    }

    /// Every key within the read options' bounds, at their snapshot.
    pub fn iter_opt(&self, options: &ReadOptions) -> DbIterator {
        DbIterator::new(
            cursor_source(&self.inner, &self.inner.default_table, options),
            Bound::Unbounded,
            Bound::Unbounded,
            None,
        )
    }

    /// The keys in `range`.
    pub fn range<K: AsRef<[u8]>>(&self, range: impl RangeBounds<K>) -> DbIterator {
        self.range_opt(range, &ReadOptions::default())
    }

    /// The keys in `range` at the read options' snapshot.
    pub fn range_opt<K: AsRef<[u8]>>(
        &self,
        range: impl RangeBounds<K>,
        options: &ReadOptions,
    ) -> DbIterator {
        crate::table::range_in(&self.inner, &self.inner.default_table, range, options)
    }

    /// The keys starting with `prefix` (in the bytewise order).
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> DbIterator {
        crate::table::prefix_in(&self.inner, &self.inner.default_table, prefix.as_ref())
    }

    /// A cursor (see [`RawIterator`]); not positioned yet.
    pub fn raw_iterator(&self, options: &ReadOptions) -> Result<RawIterator> {
        RawIterator::new(cursor_source(
            &self.inner,
            &self.inner.default_table,
            options,
        ))
    }

    /// Switches the memtable (if it holds anything) and waits until every
    /// immutable memtable is flushed to L0.
    pub fn flush(&self) -> Result<()> {
        crate::flush::flush_table(&self.inner, DEFAULT_TABLE)
    }

    /// Waits until background work is done for now: every immutable
    /// memtable flushed, and no flush or compaction running (a manual
    /// one's included) or left to pick (RocksDB's `WaitForCompact`).
    /// The memtable being written is not flushed; call
    /// [`flush`](Db::flush) first for that. Returns the background error
    /// if one stops the work, and refuses to wait from an event listener
    /// (which runs inside the job it hears of).
    ///
    /// With `max_background_jobs = 1` and one writer that calls this
    /// whenever a write may have switched the memtable, every flush and
    /// compaction happens at the same point of the write stream in every
    /// run: the strategies report's deterministic mode.
    ///
    /// ```
    /// # use lithify_engine::{Db, Options};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = Db::open(dir.path(), Options::default().write_buffer_size(64 << 10)).unwrap();
    /// for i in 0..20_000u32 {
    ///     db.put(i.to_be_bytes(), [7u8; 32]).unwrap();
    /// }
    /// db.wait_for_compact().unwrap();
    /// assert_eq!(db.property("lithify.num-immutable-mem-table").as_deref(), Some("0"));
    /// assert_eq!(db.property("lithify.num-running-compactions").as_deref(), Some("0"));
    /// ```
    pub fn wait_for_compact(&self) -> Result<()> {
        crate::compaction::wait_for_compact(&self.inner)
    }

    /// Compacts the keys in `[begin, end]` (`None`: unbounded) down to the
    /// last level, after flushing the memtable, and returns when done
    /// (RocksDB's `CompactRange` with default options).
    pub fn compact_range(&self, begin: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.compact_range_opt(begin, end, &CompactRangeOptions::default())
    }

    /// [`compact_range`](Db::compact_range) with RocksDB's
    /// `CompactRangeOptions` (exclusive, bottommost-level policy,
    /// `change_level`/`target_level`, subcompactions).
    pub fn compact_range_opt(
        &self,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
        options: &CompactRangeOptions,
    ) -> Result<()> {
        crate::compaction::compact_range(&self.inner, DEFAULT_TABLE, begin, end, options)
    }

    /// Creates table `name` (a column family) with the database's options
    /// and `options`' overrides — its own memtables, levels and compaction
    /// strategy — and returns its handle. Its creation is durable when this
    /// returns; `Options::table_options` gives its options when the
    /// database is opened again.
    pub fn create_table(&self, name: &str, options: TableOptions) -> Result<Table> {
        let state = crate::table::create_table(&self.inner, name, &options)?;
        Ok(Table {
            inner: StdArc::downgrade(&self.inner),
            state,
        })
    }

    /// Drops table `name` (not the default table): unflushed writes to it
    /// are discarded, its files deleted once no reader holds them, and
    /// every handle to it fails from now on.
    pub fn drop_table(&self, name: &str) -> Result<()> {
        crate::table::drop_table(&self.inner, name)
    }

    /// A handle to table `name`, if it exists.
    pub fn table(&self, name: &str) -> Option<Table> {
        crate::table::table_named(&self.inner, name).map(|state| Table {
            inner: StdArc::downgrade(&self.inner),
            state,
        })
    }

    /// A handle to the default table (the one `Db`'s own methods use).
    pub fn default_table(&self) -> Table {
        Table {
            inner: StdArc::downgrade(&self.inner),
            state: StdArc::clone(&self.inner.default_table),
        }
    }

    /// [`Table::set_options`] on the default table (RocksDB's `SetOptions`
    /// without a column family).
    ///
    /// ```
    /// use lithify_engine::{Db, Options};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let db = Db::open(dir.path(), Options::default()).unwrap();
    /// db.set_options(&[("enable_blob_files", "true"), ("blob_compression_type", "kLZ4Compression")])
    ///     .unwrap();
    /// assert!(db.default_table().blob_options().unwrap().enable_blob_files);
    /// ```
    pub fn set_options(&self, changes: &[(&str, &str)]) -> Result<()> {
        self.default_table().set_options(changes)
    }

    /// The names of the tables, the default table first.
    pub fn table_names(&self) -> Vec<String> {
        crate::table::table_names(&self.inner)
    }

    /// Hands buffered WAL records to the OS; with `sync`, makes every WAL
    /// record durable.
    pub fn flush_wal(&self, sync: bool) -> Result<()> {
        if sync {
            crate::write::sync_wal(&self.inner)
        } else {
            crate::write::flush_wal(&self.inner)
        }
    }

    /// Every live SST file of every table: name, size, level, key and
    /// sequence-number range (RocksDB's `GetLiveFilesMetaData`). With file
    /// deletions disabled, an external tool can copy exactly these files.
    pub fn live_files(&self) -> Vec<crate::LiveFileMetaData> {
        crate::live_set::live_files(&self.inner)
    }

    /// Every live blob file of every table (RocksDB's `BlobMetaData`s of
    /// `GetColumnFamilyMetaData`): empty without key-value separation.
    ///
    /// ```
    /// use lithify_engine::{BlobOptions, Db, Options};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let options = Options::default().blob(BlobOptions::enabled(64));
    /// let db = Db::open(dir.path(), options).unwrap();
    /// db.put(b"small", b"inline").unwrap();
    /// db.put(b"large", vec![7u8; 1000]).unwrap();
    /// db.flush().unwrap();
    /// let blobs = db.live_blob_files();
    /// assert_eq!(blobs.len(), 1);
    /// assert_eq!((blobs[0].blob_count, blobs[0].garbage_count), (1, 0));
    /// assert_eq!(db.get(b"large").unwrap().unwrap().len(), 1000);
    /// ```
    pub fn live_blob_files(&self) -> Vec<crate::LiveBlobFileMetaData> {
        crate::live_set::live_blob_files(&self.inner)
    }

    /// Stops deleting obsolete files (tables, MANIFESTs, WALs) until a
    /// matching [`enable_file_deletions`](Db::enable_file_deletions): calls
    /// nest, as RocksDB's do.
    pub fn disable_file_deletions(&self) {
        crate::purge::disable_file_deletions(&self.inner);
    }

    /// Undoes one [`disable_file_deletions`](Db::disable_file_deletions);
    /// when none remains, deletes what became obsolete meanwhile. Returns
    /// how many disables remain.
    pub fn enable_file_deletions(&self) -> usize {
        crate::purge::enable_file_deletions(&self.inner)
    }

    /// Ingests SST files written by [`SstFileWriter`](crate::SstFileWriter)
    /// into the default table (RocksDB's `IngestExternalFile`), copying or
    /// moving them as [`IngestOptions`](crate::IngestOptions) says.
    pub fn ingest_external_file(
        &self,
        paths: &[impl AsRef<Path>],
        options: &crate::IngestOptions,
    ) -> Result<Vec<crate::IngestedFile>> {
        let paths: Vec<std::path::PathBuf> =
            paths.iter().map(|p| p.as_ref().to_path_buf()).collect();
        crate::ingest::ingest_external_files(&self.inner, DEFAULT_TABLE, &paths, options)
    }

    /// A consistent set of files to copy (RocksDB's
    /// `GetLiveFilesStorageInfo`): the live tables, the MANIFEST and the
    /// WALs with the sizes to copy, what `CURRENT` must hold, and the
    /// sequence number a copy holds exactly. File deletions stay disabled
    /// until the set is dropped. Checkpoints and backups are made from it.
    pub fn live_file_set(
        &self,
        options: &crate::CheckpointOptions,
    ) -> Result<crate::LiveFileSet<'_>> {
        crate::live_set::live_file_set(&self.inner, options)
    }

    /// Writes an openable copy of the database into the new directory
    /// `dest` (RocksDB's `Checkpoint::CreateCheckpoint`): SST files
    /// hard-linked where the file system can, the MANIFEST and the WALs
    /// copied, after flushing the memtables. See
    /// [`create_checkpoint_opt`](Db::create_checkpoint_opt).
    ///
    /// ```
    /// # fn main() -> lithify_engine::Result<()> {
    /// use lithify_engine::{Db, Options};
    ///
    /// let dir = tempfile::tempdir().unwrap();
    /// let db = Db::open(dir.path().join("db"), Options::default())?;
    /// db.put(b"k", b"v1")?;
    /// let info = db.create_checkpoint(dir.path().join("copy"))?;
    /// db.put(b"k", b"v2")?;
    /// assert_eq!(info.sequence, 1);
    ///
    /// let copy = Db::open(dir.path().join("copy"), Options::default())?;
    /// assert_eq!(copy.get(b"k")?.as_deref(), Some(&b"v1"[..]));
    /// # Ok(())
    /// # }
    /// ```
    pub fn create_checkpoint(&self, dest: impl AsRef<Path>) -> Result<crate::CheckpointInfo> {
        self.create_checkpoint_opt(dest, &crate::CheckpointOptions::default())
    }

    /// [`create_checkpoint`](Db::create_checkpoint) with options: with
    /// `log_size_for_flush` above 0, the memtables are flushed only when
    /// the live WALs hold that many bytes, and the copy replays the WALs
    /// instead. Writes may go on meanwhile; the copy holds exactly the
    /// writes up to the returned [`CheckpointInfo::sequence`](crate::CheckpointInfo::sequence). `dest` must
    /// not exist; after a failure or a crash it may hold a partial copy
    /// without `CURRENT`, which open refuses: delete it and retry.
    pub fn create_checkpoint_opt(
        &self,
        dest: impl AsRef<Path>,
        options: &crate::CheckpointOptions,
    ) -> Result<crate::CheckpointInfo> {
        crate::checkpoint::create_checkpoint(&self.inner, dest.as_ref(), options)
    }

    /// A named property, as RocksDB's `GetProperty` (see
    /// [`property_names`](Db::property_names)); `None` for an unknown name.
    pub fn property(&self, name: &str) -> Option<String> {
        crate::properties::property(&self.inner, &self.inner.default_table, name)
    }

    /// The names [`property`](Db::property) knows.
    pub fn property_names() -> &'static [&'static str] {
        crate::properties::NAMES
    }

    /// The statistics, machine-readable.
    pub fn stats(&self) -> DbStats {
        crate::properties::collect_stats(&self.inner)
    }

    /// The background error that made the database read-only, if any.
    pub fn background_error(&self) -> Option<Error> {
        self.inner.lock_state().bg_error().map(|cause| {
            ReadOnlySnafu {
                cause: cause.clone(),
            }
            .build()
        })
    }

    /// Waits for the background threads to finish their current job, stops
    /// them and hands buffered WAL records to the OS. Returns the
    /// background error, if one happened.
    pub fn close(self) -> Result<()> {
        self.shutdown()
    }

    fn shutdown(&self) -> Result<()> {
        // Writes that skipped the WAL live only in memtables: flush them
        // (RocksDB does unless `avoid_flush_during_shutdown`).
        if self
            .inner
            .unpersisted
            .swap(false, std::sync::atomic::Ordering::AcqRel)
            && self.background_error().is_none()
        {
            let _ = self.flush();
        }
        if !self.inner.lock_state().begin_shutdown() {
            return Ok(());
        }
        self.inner.bg_cv.notify_all();
        self.inner.done_cv.notify_all();
        let workers = std::mem::take(&mut *self.workers.lock());
        for w in workers {
            let _ = w.join();
        }
        if self.inner.opened_read_only {
            return Ok(());
        }
        // RocksDB syncs the WALs at close (unless
        // `avoid_sync_during_shutdown`); the MANIFEST records how far, so
        // the next open refuses a WAL damaged below that.
        let closed = if self.background_error().is_none() {
            crate::write::close_wals(&self.inner)
        } else {
            crate::write::flush_wal(&self.inner)
        };
        crate::purge::purge_obsolete_files(&self.inner);
        crate::purge::remove_recyclable_wals(&self.inner);
        self.inner.events.deliver();
        self.inner.events.emit(
            crate::events::Level::Info,
            "close",
            format_args!("closed at sequence {}", self.inner.visible()),
        );
        if let Some(e) = self.background_error() {
            return Err(e);
        }
        closed
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// What lithify database files directory `dir` holds, described in a few
/// words; `None` when it holds none. A database is a `CURRENT` naming a
/// MANIFEST that exists, a MANIFEST, or SST files (WAL names alone are
/// too common to count: a Kafka segment's `.log` reads as one). Tools use
/// it to refuse writing their outputs into a database.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use lithify_engine::{Db, Options, holds_database};
/// use lithify_vfs::OsFs;
///
/// assert_eq!(holds_database(&OsFs, dir.path()), None);
/// Db::open(dir.path(), Options::default()).unwrap().close().unwrap();
/// assert!(holds_database(&OsFs, dir.path()).unwrap().contains("CURRENT"));
/// ```
pub fn holds_database(fs: &dyn lithify_vfs::FileSystem, dir: &Path) -> Option<String> {
    use lithify_version::filename::{FileKind, manifest_file_name, parse_file_name};
    let names = fs.list_dir(dir).ok()?;
    let current = lithify_version::manifest::read_current(fs, dir)
        .ok()
        .filter(|&n| fs.exists(&dir.join(manifest_file_name(n))));
    let (mut manifests, mut tables, mut blobs, mut wals) = (0, 0, 0, 0);
    for name in &names {
        match parse_file_name(name) {
            Some(FileKind::Manifest(_)) => manifests += 1,
            Some(FileKind::Sst(_)) => tables += 1,
            Some(FileKind::Blob(_)) => blobs += 1,
            Some(FileKind::Log(_)) => wals += 1,
            _ => {}
        }
    }
    if current.is_none() && manifests == 0 && tables == 0 && blobs == 0 {
        return None;
    }
    let mut found = Vec::new();
    if let Some(n) = current {
        found.push(format!("CURRENT naming {}", manifest_file_name(n)));
    }
    let blobs = if blobs > 0 {
        format!(", {blobs} blob file(s)")
    } else {
        String::new()
    };
    found.push(format!(
        "{manifests} MANIFEST(s), {tables} SST file(s){blobs}, {wals} WAL(s)"
    ));
    Some(found.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::prefix_successor;

    #[test]
    fn prefix_successors() {
        assert_eq!(prefix_successor(b"ab"), Some(Bytes::from_static(b"ac")));
        assert_eq!(prefix_successor(b"a\xff"), Some(Bytes::from_static(b"b")));
        assert_eq!(prefix_successor(b"\xff\xff"), None);
        assert_eq!(prefix_successor(b""), None);
    }

    /// Lookups, and iterators where they start, feed the table's read heat
    /// (one in 64 of each); writes are counted beside them.
    #[test]
    fn reads_feed_the_tables_read_heat() {
        let fs = StdArc::new(lithify_vfs::MemFs::new());
        let db = Db::open("/db", Options::default().fs(fs)).unwrap();
        for k in ["a", "m", "z"] {
            db.put(k, "v").unwrap();
        }
        let every = lithify_compaction::READ_HEAT_SAMPLE_EVERY;
        for _ in 0..every * 3 {
            db.get("a").unwrap();
        }
        // Iterators: by their first seek, by their lower bound, and by
        // the start of a range.
        for _ in 0..every {
            let mut it = db.raw_iterator(&ReadOptions::default()).unwrap();
            it.seek("m").unwrap();
            it.seek("z").unwrap();
        }
        for _ in 0..every {
            let o = ReadOptions {
                lower_bound: Some(Bytes::from_static(b"z")),
                ..ReadOptions::default()
            };
            let _it = db.raw_iterator(&o).unwrap();
        }
        for _ in 0..every {
            assert_eq!(db.range(&b"m"[..]..).count(), 2);
        }
        let heat = &db.inner.default_table.read_heat;
        let cmp = lithify_base::InternalKeyComparator::bytewise();
        let h = heat
            .stripe_heat(&cmp, &[b"b".to_vec(), b"y".to_vec()])
            .unwrap();
        assert_eq!(h.samples, 6);
        assert_eq!(h.shares, vec![3.0 / 6.0, 2.0 / 6.0, 1.0 / 6.0]);
        // Three writes before the first sample count for nothing.
        assert_eq!(h.read_share, 1.0);
        db.put("b", "v").unwrap();
        let h = heat.stripe_heat(&cmp, &[]).unwrap();
        assert!(h.read_share < 1.0, "{h:?}");
    }

    /// While an ingestion holds writes back, a write that may not wait
    /// fails, a listener's write goes through (its thread may be the one
    /// the ingestion waits for), and writes flow again once it lets go.
    #[test]
    fn an_ingestion_write_stop_holds_writes_but_not_listeners() {
        let fs = StdArc::new(lithify_vfs::MemFs::new());
        let db = Db::open("/db", Options::default().fs(fs)).unwrap();
        let hurried = WriteOptions::default().no_slowdown(true);
        let put = |k: &str| {
            let mut b = WriteBatch::new();
            b.put(k, "v");
            db.write_opt(b, &hurried)
        };
        let stop = db.inner.stop_writes_for_ingestion();
        let err = put("a").unwrap_err();
        assert!(err.to_string().contains("held back"), "{err}");
        crate::events::as_listener(|| put("b")).unwrap();
        // Waiting writers are woken when the stop ends.
        std::thread::scope(|s| {
            let waiter = s.spawn(|| db.put("c", "v"));
            drop(stop);
            waiter.join().unwrap().unwrap();
        });
        put("d").unwrap();
        assert_eq!(db.get("a").unwrap(), None);
        for k in ["b", "c", "d"] {
            assert!(db.get(k).unwrap().is_some(), "{k}");
        }
    }
}
