//! `VersionSet`: the current version of every table, made durable through
//! the MANIFEST.
//!
//! # Durability protocol
//!
//! [`VersionSet::log_and_apply`] takes an edit group and
//!
//! 1. builds the new versions from the current ones and checks them (a
//!    group that cannot apply — a missing file, a duplicate, overlapping
//!    L1+ files, an unknown table — is refused before anything is written);
//! 2. appends the group as one record to the MANIFEST and syncs it — or, if
//!    there is no MANIFEST to append to (just created or recovered, or the
//!    last write failed) or it has grown past
//!    [`VersionSetOptions::max_manifest_file_size`], writes a **new**
//!    MANIFEST holding a snapshot of the new state, syncs it and its
//!    directory, and switches `CURRENT` to it atomically;
//! 3. only then installs the new versions.
//!
//! If step 2 fails the installed state is unchanged and the error is
//! returned. The MANIFEST is not appended to again (it may end in a partial
//! record); the next call starts a new one. What the failed call wrote may
//! or may not survive a crash, so recovery yields the state before or the
//! state after it, never a mix.
//!
//! # Which files can be deleted
//!
//! Versions hold their files as `Arc<FileMetadata>`. The set keeps a weak
//! reference to every file it installed; a file **number** is obsolete once
//! every `Arc<FileMetadata>` carrying it is gone — no live [`Version`], no
//! iterator or compaction that cloned the metadata — and it is no longer in
//! any current version. (A trivial move re-adds the same number at another
//! level: the number stays live through the new `Arc`.)
//! [`VersionSet::obsolete_files`] returns such numbers once each, together
//! with MANIFESTs that CURRENT no longer names.
//!
//! Files added by a `log_and_apply` that failed are **quarantined**: the
//! failed record may still be durable and name them, so they count as live
//! until a later new MANIFEST (written from the in-memory state) is
//! installed; then they are reported obsolete. MANIFESTs whose creation
//! failed are reported only after that, too.
//!
//! Files the engine is still writing (flush and compaction outputs not yet
//! in an edit) are not known here: the engine must keep them out of its
//! orphan deletion itself, e.g. by ignoring numbers at or above the
//! smallest number it allocated for a job in progress.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use lithify_base::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use lithify_base::sync::{Mutex, RwLock};
use lithify_base::{BytewiseComparator, Comparator, Id, InternalKeyComparator, SeqNo};
use lithify_vfs::FileSystem;
use lithify_wal::format::Framing;
use lithify_wal::{Writer, WriterOptions};
use snafu::ResultExt;

use crate::blob_file::{BlobFileGarbage, BlobFileMetadata, BlobRef};
use crate::builder::VersionBuilder;
use crate::edit::{
    DEFAULT_TABLE, DEFAULT_TABLE_NAME, MANIFEST_FORMAT_VERSION, TableId, VersionEdit, WalAddition,
    encode_group,
};
use crate::error::{InvalidArgumentSnafu, InvalidEditSnafu, IoSnafu, Result};
use crate::file_metadata::FileMetadata;
use crate::filename::{CURRENT, manifest_file_name};
use crate::manifest::{read_current, replay, set_current};
use crate::version::{DEFAULT_NUM_LEVELS, Version};

/// Options of a [`VersionSet`].
#[derive(Clone)]
#[non_exhaustive]
pub struct VersionSetOptions {
    /// Levels per table (default 7: L0..L6).
    pub num_levels: usize,
    /// A MANIFEST larger than this is replaced by a new one holding a
    /// snapshot at the next `log_and_apply` (default 64 MiB).
    pub max_manifest_file_size: u64,
    /// The user comparators tables may use, found by name on recovery. The
    /// first is the default table's when a database is created. Default:
    /// the bytewise comparator.
    pub comparators: Vec<Arc<dyn Comparator>>,
}

lithify_base::options_builder!(VersionSetOptions {
    num_levels: usize,
    max_manifest_file_size: u64,
    comparators: Vec<Arc<dyn Comparator>>,
});

impl Default for VersionSetOptions {
    fn default() -> Self {
        VersionSetOptions {
            num_levels: DEFAULT_NUM_LEVELS,
            max_manifest_file_size: 64 << 20,
            comparators: vec![Arc::new(BytewiseComparator)],
        }
    }
}

impl fmt::Debug for VersionSetOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VersionSetOptions")
            .field("num_levels", &self.num_levels)
            .field("max_manifest_file_size", &self.max_manifest_file_size)
            .field(
                "comparators",
                &self
                    .comparators
                    .iter()
                    .map(|c| c.name().to_owned())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl VersionSetOptions {
    fn comparator(&self, name: &str) -> Option<Arc<dyn Comparator>> {
        self.comparators.iter().find(|c| c.name() == name).cloned()
    }
}

/// A table's identity and durable settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableInfo {
    /// The table id.
    pub id: TableId,
    /// The table name.
    pub name: String,
    /// The user comparator's name.
    pub comparator: String,
    /// The merge operator's name, once the table was opened with one.
    pub merge_operator: Option<String>,
    /// WALs with a smaller number hold nothing unflushed for this table.
    pub log_number: u64,
}

/// File numbers that nothing references any more, returned once each by
/// [`VersionSet::obsolete_files`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObsoleteFiles {
    /// SST files (`NNNNNN.sst`) to delete, ascending.
    pub tables: Vec<u64>,
    /// Blob files (`NNNNNN.blob`) to delete, ascending.
    pub blob_files: Vec<u64>,
    /// MANIFESTs to delete, ascending.
    pub manifests: Vec<u64>,
}

#[derive(Clone)]
struct Table {
    name: String,
    comparator: String,
    merge_operator: Option<String>,
    log_number: u64,
}

impl Table {
    fn info(&self, id: TableId) -> TableInfo {
        TableInfo {
            id,
            name: self.name.clone(),
            comparator: self.comparator.clone(),
            merge_operator: self.merge_operator.clone(),
            log_number: self.log_number,
        }
    }
}

struct Inner {
    tables: BTreeMap<TableId, Table>,
    versions: BTreeMap<TableId, Arc<Version>>,
    max_table_id: TableId,
    /// WALs known synced through a size (number -> size), at or above
    /// every table's log number.
    wals: BTreeMap<u64, u64>,
    /// The torn record recovery dropped from the end of the MANIFEST.
    torn_tail: Option<lithify_wal::DroppedRange>,
    /// The bytes of the recovered MANIFEST that describe `versions`, until
    /// the first write (which starts a new MANIFEST).
    recovered_size: Option<u64>,
    /// The MANIFEST being appended to; `None` means the next write starts a
    /// new one.
    manifest: Option<Writer>,
    /// The MANIFEST CURRENT names (or last named successfully).
    manifest_number: u64,
    /// Weak references to every installed file, by number.
    registry: HashMap<u64, Vec<Weak<FileMetadata>>>,
    /// Numbers that left a current version and may become obsolete.
    candidates: BTreeSet<u64>,
    /// Weak references to every installed blob file, by number.
    blob_registry: HashMap<u64, Vec<Weak<BlobFileMetadata>>>,
    /// Blob files that left a current version and may become obsolete.
    blob_candidates: BTreeSet<u64>,
    /// Numbers added by failed writes: live until a new MANIFEST is in.
    quarantine: BTreeSet<u64>,
    obsolete_manifests: BTreeSet<u64>,
    /// MANIFESTs whose creation failed: obsolete after the next success.
    failed_manifests: Vec<u64>,
}

fn check_num_levels(options: &VersionSetOptions) -> Result<()> {
    if options.num_levels < 2 || options.num_levels > crate::edit::MAX_LEVELS {
        return InvalidArgumentSnafu {
            message: format!(
                "num_levels must be in 2..={}, not {}",
                crate::edit::MAX_LEVELS,
                options.num_levels
            ),
        }
        .fail();
    }
    Ok(())
}

/// The state a set starts from (new or recovered).
struct Initial {
    tables: BTreeMap<TableId, Table>,
    versions: BTreeMap<TableId, Arc<Version>>,
    max_table_id: TableId,
    wals: BTreeMap<u64, u64>,
    torn_tail: Option<lithify_wal::DroppedRange>,
    recovered_size: Option<u64>,
    next_file_number: u64,
    last_sequence: SeqNo,
    manifest_number: u64,
    /// The recorded identity, if any (a new one is made otherwise).
    db_id: Option<Id>,
}

/// The state a group produces, before it is durable.
struct Plan {
    tables: BTreeMap<TableId, Table>,
    versions: BTreeMap<TableId, Arc<Version>>,
    max_table_id: TableId,
    wals: BTreeMap<u64, u64>,
    created: Vec<Arc<FileMetadata>>,
    removed: Vec<u64>,
    created_blobs: Vec<Arc<BlobFileMetadata>>,
    removed_blobs: Vec<u64>,
    next_file_number: u64,
    last_sequence: SeqNo,
}

/// The current versions of all tables, the file-number counter, the last
/// sequence number, and the MANIFEST that makes them durable. See the
/// [module documentation](crate::version_set) for the protocol.
///
/// ```
/// use std::path::Path;
/// use std::sync::Arc;
/// use lithify_base::InternalKey;
/// use lithify_vfs::MemFs;
/// use lithify_version::{FileMetadata, VersionEdit, VersionSet, VersionSetOptions, DEFAULT_TABLE};
///
/// let fs = Arc::new(MemFs::new());
/// let dir = Path::new("/db");
/// let set = VersionSet::create(fs.clone(), dir, VersionSetOptions::default()).unwrap();
///
/// // A flush: allocate a number, write the table (not shown), log the edit.
/// let number = set.new_file_number();
/// let mut edit = VersionEdit::new(DEFAULT_TABLE);
/// edit.add_file(0, FileMetadata::new(
///     number, 4096,
///     InternalKey::from_text("a#1,SET").unwrap(),
///     InternalKey::from_text("z#9,SET").unwrap(),
/// ));
/// edit.log_number = Some(7);
/// set.set_last_sequence(9);
/// set.log_and_apply(vec![edit]).unwrap();
/// assert_eq!(set.current(DEFAULT_TABLE).unwrap().num_files(0), 1);
///
/// // Power loss, then recovery: the same state.
/// fs.crash();
/// let recovered = VersionSet::recover(fs.clone(), dir, VersionSetOptions::default()).unwrap();
/// assert_eq!(*recovered.current(DEFAULT_TABLE).unwrap(), *set.current(DEFAULT_TABLE).unwrap());
/// assert_eq!(recovered.last_sequence(), 9);
/// assert_eq!(recovered.min_log_number_to_keep(), 7);
/// ```
pub struct VersionSet {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    options: VersionSetOptions,
    next_file_number: AtomicU64,
    last_sequence: AtomicU64,
    current: RwLock<BTreeMap<TableId, Arc<Version>>>,
    inner: Mutex<Inner>,
    /// The database's identity: recorded in the MANIFEST (made at creation,
    /// or at the first write after recovering a database that had none).
    db_id: Id,
    /// Whether a MANIFEST this set reads or wrote records `db_id`.
    db_id_recorded: AtomicBool,
}

impl fmt::Debug for VersionSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VersionSet")
            .field("dir", &self.dir)
            .field("next_file_number", &self.next_file_number())
            .field("last_sequence", &self.last_sequence())
            .field("manifest_number", &self.manifest_number())
            .field("db_id", &self.db_id)
            .finish()
    }
}

impl VersionSet {
    /// Creates a new database's metadata in `dir` (created if missing): the
    /// default table, `MANIFEST-000001` and `CURRENT`. Fails if `CURRENT`
    /// already exists.
    pub fn create(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        options: VersionSetOptions,
    ) -> Result<VersionSet> {
        check_num_levels(&options)?;
        let Some(cmp) = options.comparators.first().cloned() else {
            return InvalidArgumentSnafu {
                message: "no comparator registered".to_owned(),
            }
            .fail();
        };
        let current = dir.join(CURRENT);
        if fs.try_exists(&current).context(IoSnafu {
            op: "looking for",
            path: current.clone(),
        })? {
            return InvalidArgumentSnafu {
                message: format!("a database already exists in {}", dir.display()),
            }
            .fail();
        }
        lithify_vfs::create_dir_durable(&*fs, dir).context(IoSnafu {
            op: "creating directory",
            path: dir.to_path_buf(),
        })?;
        let table = Table {
            name: DEFAULT_TABLE_NAME.to_owned(),
            comparator: cmp.name().to_owned(),
            merge_operator: None,
            log_number: 0,
        };
        let version = Version::new(
            DEFAULT_TABLE,
            InternalKeyComparator::new(cmp),
            options.num_levels,
        );
        let set = Self::assemble(
            fs,
            dir,
            options,
            Initial {
                tables: BTreeMap::from([(DEFAULT_TABLE, table)]),
                versions: BTreeMap::from([(DEFAULT_TABLE, Arc::new(version))]),
                max_table_id: 0,
                wals: BTreeMap::new(),
                torn_tail: None,
                recovered_size: None,
                next_file_number: 1,
                last_sequence: 0,
                manifest_number: 0,
                db_id: None,
            },
        );
        set.roll_manifest()?;
        Ok(set)
    }

    /// Recovers the metadata of the database in `dir`: reads `CURRENT`,
    /// replays the MANIFEST it names and checks the result. The first write
    /// afterwards starts a new MANIFEST (the old one may end in a torn
    /// record), as RocksDB does.
    pub fn recover(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        options: VersionSetOptions,
    ) -> Result<VersionSet> {
        check_num_levels(&options)?;
        let number = read_current(&*fs, dir)?;
        let manifest = dir.join(manifest_file_name(number));
        // A store that does not answer is an error, not a missing file.
        if !fs.try_exists(&manifest).context(IoSnafu {
            op: "looking for",
            path: manifest.clone(),
        })? {
            return crate::error::CorruptionSnafu {
                path: dir.join(CURRENT),
                offset: 0u64,
                message: format!(
                    "CURRENT names {}, which does not exist",
                    manifest_file_name(number)
                ),
            }
            .fail();
        }
        let resolve = |name: &str| options.comparator(name);
        let replayed = replay(&*fs, dir, number, options.num_levels, &resolve)?;
        let mut tables = BTreeMap::new();
        let mut versions = BTreeMap::new();
        for (id, t) in replayed.tables {
            tables.insert(
                id,
                Table {
                    name: t.name,
                    comparator: t.comparator,
                    merge_operator: t.merge_operator,
                    log_number: t.log_number,
                },
            );
            versions.insert(id, Arc::new(t.version));
        }
        let set = Self::assemble(
            fs,
            dir,
            options,
            Initial {
                tables,
                versions,
                max_table_id: replayed.max_table_id,
                wals: replayed.wals,
                torn_tail: replayed.torn_tail,
                recovered_size: Some(replayed.size),
                next_file_number: replayed.next_file_number,
                last_sequence: replayed.last_sequence,
                manifest_number: number,
                db_id: replayed.db_id,
            },
        );
        {
            let mut inner = set.inner.lock();
            let inner = &mut *inner;
            for version in inner.versions.values() {
                for (_, f) in version.all_files() {
                    inner
                        .registry
                        .entry(f.number)
                        .or_default()
                        .push(Arc::downgrade(f));
                }
                for blob in version.blob_files().values() {
                    inner
                        .blob_registry
                        .entry(blob.meta.number)
                        .or_default()
                        .push(Arc::downgrade(&blob.meta));
                }
            }
        }
        Ok(set)
    }

    fn assemble(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        options: VersionSetOptions,
        initial: Initial,
    ) -> VersionSet {
        VersionSet {
            db_id: initial.db_id.unwrap_or_else(Id::random),
            db_id_recorded: AtomicBool::new(initial.db_id.is_some()),
            fs,
            dir: dir.to_path_buf(),
            options,
            next_file_number: AtomicU64::new(initial.next_file_number),
            last_sequence: AtomicU64::new(initial.last_sequence),
            current: RwLock::new(initial.versions.clone()),
            inner: Mutex::new(Inner {
                tables: initial.tables,
                versions: initial.versions,
                max_table_id: initial.max_table_id,
                wals: initial.wals,
                torn_tail: initial.torn_tail,
                recovered_size: initial.recovered_size,
                manifest: None,
                manifest_number: initial.manifest_number,
                registry: HashMap::new(),
                candidates: BTreeSet::new(),
                blob_registry: HashMap::new(),
                blob_candidates: BTreeSet::new(),
                quarantine: BTreeSet::new(),
                obsolete_manifests: BTreeSet::new(),
                failed_manifests: Vec::new(),
            }),
        }
    }

    /// The database directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The database's identity. A database whose MANIFEST records none
    /// (written before identities existed) gets a new one, recorded by the
    /// next MANIFEST write; [`db_id_recorded`](Self::db_id_recorded) says
    /// whether that happened.
    pub fn db_id(&self) -> Id {
        self.db_id
    }

    /// Whether the MANIFEST records [`db_id`](Self::db_id): files of the
    /// database are checked against it only then.
    pub fn db_id_recorded(&self) -> bool {
        self.db_id_recorded.load(Ordering::Acquire)
    }

    /// The current version of `table`, if the table exists.
    pub fn current(&self, table: TableId) -> Option<Arc<Version>> {
        self.current.read().get(&table).cloned()
    }

    /// The current version of every table.
    pub fn current_all(&self) -> BTreeMap<TableId, Arc<Version>> {
        self.current.read().clone()
    }

    /// Every table.
    pub fn tables(&self) -> Vec<TableInfo> {
        let inner = self.inner.lock();
        inner.tables.iter().map(|(id, t)| t.info(*id)).collect()
    }

    /// The table called `name`.
    pub fn table_by_name(&self, name: &str) -> Option<TableInfo> {
        let inner = self.inner.lock();
        inner
            .tables
            .iter()
            .find(|(_, t)| t.name == name)
            .map(|(id, t)| t.info(*id))
    }

    /// The table with id `table`.
    pub fn table(&self, table: TableId) -> Option<TableInfo> {
        let inner = self.inner.lock();
        inner.tables.get(&table).map(|t| t.info(table))
    }

    /// The smallest log number any table still needs: WALs below it can be
    /// deleted.
    pub fn min_log_number_to_keep(&self) -> u64 {
        let inner = self.inner.lock();
        inner
            .tables
            .values()
            .map(|t| t.log_number)
            .min()
            .unwrap_or(0)
    }

    /// The WALs known synced through a size (log number -> synced size),
    /// as the edits' [`WalAddition`]s recorded them; WALs below every
    /// table's log number are forgotten.
    pub fn synced_wals(&self) -> BTreeMap<u64, u64> {
        self.inner.lock().wals.clone()
    }

    /// The torn last record that recovery dropped from the end of the
    /// MANIFEST (a crash during its append: it was never acknowledged), if
    /// there was one. The file is no longer appended to, so the engine can
    /// keep it aside once a new MANIFEST is current.
    pub fn recovered_torn_tail(&self) -> Option<lithify_wal::DroppedRange> {
        self.inner.lock().torn_tail
    }

    /// Allocates a new file number (for a table, a WAL or a MANIFEST).
    pub fn new_file_number(&self) -> u64 {
        self.next_file_number.fetch_add(1, Ordering::SeqCst)
    }

    /// `n` consecutive fresh file numbers (a remote compaction's outputs).
    pub fn reserve_file_numbers(&self, n: u64) -> std::ops::Range<u64> {
        let first = self.next_file_number.fetch_add(n, Ordering::SeqCst);
        first..first + n
    }

    /// The number the next allocation returns.
    pub fn next_file_number(&self) -> u64 {
        self.next_file_number.load(Ordering::SeqCst)
    }

    /// Makes sure future allocations are above `number` (for files found on
    /// disk at open, such as WALs, that the MANIFEST does not know).
    pub fn mark_file_number_used(&self, number: u64) {
        self.next_file_number
            .fetch_max(number.saturating_add(1), Ordering::SeqCst);
    }

    /// The last sequence number published.
    pub fn last_sequence(&self) -> SeqNo {
        self.last_sequence.load(Ordering::SeqCst)
    }

    /// Publishes `seqno` as used (never moves backwards). It is recorded in
    /// the next MANIFEST write, and is not undone if that write fails; to
    /// make a sequence number durable together with an edit (a flush), set
    /// [`VersionEdit::last_sequence`] instead: it is installed only if the
    /// edit is.
    pub fn set_last_sequence(&self, seqno: SeqNo) {
        self.last_sequence.fetch_max(seqno, Ordering::SeqCst);
    }

    /// The number of the MANIFEST that CURRENT names.
    pub fn manifest_number(&self) -> u64 {
        self.inner.lock().manifest_number
    }

    /// Bytes written to the live MANIFEST (0 before the first write after
    /// recovery).
    pub fn manifest_size(&self) -> u64 {
        self.inner
            .lock()
            .manifest
            .as_ref()
            .map_or(0, Writer::bytes_written)
    }

    /// The state a checkpoint copies, read at one instant: the live
    /// MANIFEST's number and size (every edit up to that size is synced),
    /// the current version of every table and the smallest log number any
    /// table needs. The MANIFEST's first `manifest_size` bytes describe
    /// exactly `versions`; `None` when no MANIFEST is open for writing (a
    /// read-only open, or after a failed MANIFEST write).
    pub fn manifest_cut(&self) -> Option<ManifestCut> {
        let inner = self.inner.lock();
        let manifest_size = inner.manifest.as_ref()?.bytes_written();
        Some(Self::cut(&inner, manifest_size))
    }

    fn cut(inner: &Inner, manifest_size: u64) -> ManifestCut {
        ManifestCut {
            manifest_number: inner.manifest_number,
            manifest_size,
            versions: inner.versions.clone(),
            min_log_number: inner
                .tables
                .values()
                .map(|t| t.log_number)
                .min()
                .unwrap_or(0),
        }
    }

    /// [`manifest_cut`](Self::manifest_cut) of a set nothing was written to
    /// since it was recovered (a read-only open): the recovered MANIFEST's
    /// number and the bytes of it that were replayed (every whole record;
    /// a torn tail is left out). `None` once anything was written.
    pub fn recovered_cut(&self) -> Option<ManifestCut> {
        let inner = self.inner.lock();
        let manifest_size = inner.recovered_size?;
        Some(Self::cut(&inner, manifest_size))
    }

    /// Creates a table called `name` with the registered comparator
    /// `comparator` (`None`: the first registered); WALs below `log_number`
    /// are not replayed into it. Returns its id.
    pub fn create_table(
        &self,
        name: &str,
        comparator: Option<&str>,
        log_number: u64,
    ) -> Result<TableId> {
        let mut inner = self.inner.lock();
        let id = inner.max_table_id + 1;
        let mut edit = VersionEdit::new(id);
        edit.table_add = Some(name.to_owned());
        edit.comparator = Some(match comparator {
            Some(c) => c.to_owned(),
            None => self.options.comparators[0].name().to_owned(),
        });
        edit.log_number = Some(log_number);
        edit.max_table_id = Some(id);
        self.apply_locked(&mut inner, vec![edit], false)?;
        Ok(id)
    }

    /// Drops table `table` (not the default table); its files become
    /// obsolete once no version holds them.
    pub fn drop_table(&self, table: TableId) -> Result<()> {
        let mut edit = VersionEdit::new(table);
        edit.table_drop = true;
        self.log_and_apply(vec![edit])
    }

    /// Makes an edit group durable, then installs the versions it produces.
    /// See the [module documentation](crate::version_set).
    ///
    /// The group's first record carries the set's next file number and last
    /// sequence (raised to any larger value the edits carry).
    ///
    /// An edit that deletes files whose blob references its added files do
    /// not carry on gets the garbage that makes of the blob files
    /// ([`VersionEdit::blob_file_garbage`]), computed here.
    pub fn log_and_apply(&self, mut edits: Vec<VersionEdit>) -> Result<()> {
        let mut inner = self.inner.lock();
        account_blob_garbage(&inner.versions, &mut edits)?;
        self.apply_locked(&mut inner, edits, false)
    }

    /// Starts a new MANIFEST holding a snapshot of the current state and
    /// points CURRENT at it.
    pub fn roll_manifest(&self) -> Result<()> {
        let mut inner = self.inner.lock();
        self.apply_locked(&mut inner, Vec::new(), true)
    }

    fn apply_locked(
        &self,
        inner: &mut Inner,
        edits: Vec<VersionEdit>,
        force_new: bool,
    ) -> Result<()> {
        let mut plan = self.prepare(inner, &edits)?;
        // From here the recovered MANIFEST no longer describes the state.
        inner.recovered_size = None;
        let new_manifest = force_new
            || match &inner.manifest {
                None => true,
                Some(w) => w.bytes_written() >= self.options.max_manifest_file_size,
            };
        let written = if new_manifest {
            self.write_new_manifest(inner, &mut plan)
        } else if edits.is_empty() {
            Ok(())
        } else {
            let mut edits = edits;
            edits[0].next_file_number = Some(plan.next_file_number);
            edits[0].last_sequence = Some(plan.last_sequence);
            let record = encode_group(&edits);
            let writer = inner.manifest.as_mut().ok_or_else(|| {
                InvalidArgumentSnafu {
                    message: "no MANIFEST to append to".to_owned(),
                }
                .build()
            })?;
            writer
                .add_record(&record)
                .and_then(|_| writer.sync())
                .map_err(crate::Error::from)
        };
        if let Err(e) = written {
            inner.manifest = None;
            inner
                .quarantine
                .extend(plan.created.iter().map(|f| f.number));
            inner
                .quarantine
                .extend(plan.created_blobs.iter().map(|b| b.number));
            return Err(e);
        }
        self.install(inner, plan);
        Ok(())
    }

    /// Builds and checks the state after `edits` without changing anything.
    fn prepare(&self, inner: &Inner, edits: &[VersionEdit]) -> Result<Plan> {
        let invalid = |message: String| InvalidEditSnafu { message }.build();
        let next_file = self.next_file_number();
        let mut tables = inner.tables.clone();
        let mut builders: BTreeMap<TableId, VersionBuilder> = BTreeMap::new();
        let mut removed = Vec::new();
        let mut removed_blobs = Vec::new();
        let mut max_table_id = inner.max_table_id;
        let mut wals = inner.wals.clone();
        let mut next_file_number = next_file;
        let mut last_sequence = self.last_sequence();
        for edit in edits {
            let id = edit.table;
            if edit.manifest_format.is_some() {
                return Err(invalid(
                    "the MANIFEST format is set by the version set only".to_owned(),
                ));
            }
            if let Some(n) = edit.next_file_number {
                next_file_number = next_file_number.max(n);
            }
            if let Some(s) = edit.last_sequence {
                last_sequence = last_sequence.max(s);
            }
            if let Some(t) = edit.max_table_id {
                max_table_id = max_table_id.max(t);
            }
            add_wals(&mut wals, &edit.wal_additions);
            if let Some(name) = &edit.table_add {
                if tables.contains_key(&id) || builders.contains_key(&id) {
                    return Err(invalid(format!("table {id} already exists")));
                }
                if tables.values().any(|t| t.name == *name) {
                    return Err(invalid(format!("a table called {name:?} already exists")));
                }
                let comparator = edit
                    .comparator
                    .clone()
                    .unwrap_or_else(|| self.options.comparators[0].name().to_owned());
                let user_cmp = self
                    .options
                    .comparator(&comparator)
                    .ok_or_else(|| invalid(format!("comparator {comparator} is not registered")))?;
                tables.insert(
                    id,
                    Table {
                        name: name.clone(),
                        comparator,
                        merge_operator: None,
                        log_number: 0,
                    },
                );
                max_table_id = max_table_id.max(id);
                let empty = Version::new(
                    id,
                    InternalKeyComparator::new(user_cmp),
                    self.options.num_levels,
                );
                builders.insert(id, VersionBuilder::new(Arc::new(empty)));
            }
            let Some(table) = tables.get_mut(&id) else {
                return Err(invalid(format!("table {id} does not exist")));
            };
            if let Some(c) = &edit.comparator
                && *c != table.comparator
            {
                return Err(invalid(format!(
                    "table {id} uses comparator {}, the edit names {c}",
                    table.comparator
                )));
            }
            set_merge_operator(
                id,
                &mut table.merge_operator,
                edit.merge_operator.as_deref(),
            )
            .map_err(invalid)?;
            if let Some(n) = edit.log_number {
                if n < table.log_number {
                    return Err(invalid(format!(
                        "table {id}'s log number would go back from {} to {n}",
                        table.log_number
                    )));
                }
                table.log_number = n;
            }
            let numbers = edit
                .new_files
                .iter()
                .map(|(_, f)| f.number)
                .chain(edit.blob_file_additions.iter().map(|b| b.number));
            for number in numbers {
                if number >= next_file {
                    return Err(invalid(format!(
                        "file {number:06} was never allocated (next file number is {next_file})"
                    )));
                }
            }
            let builder = match builders.entry(id) {
                std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::btree_map::Entry::Vacant(e) => {
                    let base = inner
                        .versions
                        .get(&id)
                        .cloned()
                        .ok_or_else(|| invalid(format!("table {id} has no version")))?;
                    e.insert(VersionBuilder::new(base))
                }
            };
            builder
                .apply(edit)
                .map_err(|m| invalid(format!("table {id}: {m}")))?;
            removed.extend(edit.deleted_files.iter().map(|&(_, n)| n));
            if edit.table_drop {
                if id == DEFAULT_TABLE {
                    return Err(invalid("the default table cannot be dropped".to_owned()));
                }
                tables.remove(&id);
                builders.remove(&id);
                if let Some(v) = inner.versions.get(&id) {
                    removed.extend(v.all_files().map(|(_, f)| f.number));
                    removed_blobs.extend(v.blob_files().keys().copied());
                }
                // Files added to it in this group were never installed.
                removed.extend(
                    edits
                        .iter()
                        .filter(|e| e.table == id)
                        .flat_map(|e| e.new_files.iter().map(|(_, f)| f.number)),
                );
                removed_blobs.extend(
                    edits
                        .iter()
                        .filter(|e| e.table == id)
                        .flat_map(|e| e.blob_file_additions.iter().map(|b| b.number)),
                );
            }
        }
        let min_log = tables.values().map(|t| t.log_number).min().unwrap_or(0);
        wals.retain(|n, _| *n >= min_log);
        let mut versions = inner.versions.clone();
        versions.retain(|id, _| tables.contains_key(id));
        let mut created = Vec::new();
        let mut created_blobs = Vec::new();
        for (id, builder) in builders {
            let built = builder
                .build()
                .map_err(|m| invalid(format!("table {id}: {m}")))?;
            created.extend(built.created);
            created_blobs.extend(built.created_blobs);
            removed_blobs.extend(built.removed_blobs);
            versions.insert(id, Arc::new(built.version));
        }
        Ok(Plan {
            tables,
            versions,
            max_table_id,
            wals,
            created,
            removed,
            created_blobs,
            removed_blobs,
            next_file_number,
            last_sequence,
        })
    }

    /// The edits that recreate `plan`'s state from nothing.
    fn snapshot(plan: &Plan, db_id: Id) -> Vec<VersionEdit> {
        let mut edits = Vec::with_capacity(plan.tables.len());
        for (id, table) in &plan.tables {
            let mut edit = VersionEdit::new(*id);
            if edits.is_empty() {
                edit.manifest_format = Some(MANIFEST_FORMAT_VERSION);
                edit.db_id = Some(db_id);
                edit.next_file_number = Some(plan.next_file_number);
                edit.last_sequence = Some(plan.last_sequence);
                edit.max_table_id = Some(plan.max_table_id);
                edit.wal_additions = plan
                    .wals
                    .iter()
                    .map(|(&number, &synced_size)| WalAddition {
                        number,
                        synced_size,
                    })
                    .collect();
            }
            edit.table_add = Some(table.name.clone());
            edit.comparator = Some(table.comparator.clone());
            edit.merge_operator = table.merge_operator.clone();
            edit.log_number = Some(table.log_number);
            if let Some(version) = plan.versions.get(id) {
                for (level, f) in version.all_files() {
                    edit.add_file(level, (**f).clone());
                }
                for level in 0..version.num_levels() {
                    if let Some(c) = version.compact_cursor(level) {
                        edit.compact_cursors.push((level, c.clone()));
                    }
                }
                for blob in version.blob_files().values() {
                    edit.blob_file_additions.push((*blob.meta).clone());
                    if blob.garbage_count != 0 || blob.garbage_bytes != 0 {
                        edit.blob_file_garbage.push(BlobFileGarbage {
                            number: blob.meta.number,
                            count: blob.garbage_count,
                            bytes: blob.garbage_bytes,
                        });
                    }
                }
            }
            edits.push(edit);
        }
        edits
    }

    /// Writes a new MANIFEST holding the state of `plan`, then switches
    /// CURRENT to it.
    fn write_new_manifest(&self, inner: &mut Inner, plan: &mut Plan) -> Result<()> {
        let number = self.new_file_number();
        plan.next_file_number = plan.next_file_number.max(self.next_file_number());
        let path = self.dir.join(manifest_file_name(number));
        // From here on the file may exist: report it obsolete after the next
        // success if this attempt fails.
        let result = (|| -> Result<Writer> {
            let file = self.fs.create(&path).context(IoSnafu {
                op: "creating",
                path: path.clone(),
            })?;
            let mut writer = Writer::with_options(
                file,
                &path,
                number,
                WriterOptions::default()
                    .buffer_size(1 << 20)
                    .framing(Framing::Compact)
                    .owner(Some(self.db_id)),
            )?;
            writer.add_record(&encode_group(&Self::snapshot(plan, self.db_id)))?;
            writer.sync()?;
            self.fs.sync_dir(&self.dir).context(IoSnafu {
                op: "syncing directory",
                path: self.dir.clone(),
            })?;
            set_current(&*self.fs, &self.dir, number)?;
            Ok(writer)
        })();
        match result {
            Ok(writer) => {
                self.db_id_recorded.store(true, Ordering::Release);
                let old = inner.manifest_number;
                inner.manifest = Some(writer);
                inner.manifest_number = number;
                if old != 0 && old != number {
                    inner.obsolete_manifests.insert(old);
                }
                let failed: Vec<u64> = inner.failed_manifests.drain(..).collect();
                inner.obsolete_manifests.extend(failed);
                // The new MANIFEST describes the in-memory state only:
                // nothing a failed write named can come back.
                let released = std::mem::take(&mut inner.quarantine);
                inner.candidates.extend(released);
                Ok(())
            }
            Err(e) => {
                inner.failed_manifests.push(number);
                Err(e)
            }
        }
    }

    fn install(&self, inner: &mut Inner, plan: Plan) {
        for f in &plan.created {
            inner
                .registry
                .entry(f.number)
                .or_default()
                .push(Arc::downgrade(f));
        }
        inner.candidates.extend(plan.removed);
        for b in &plan.created_blobs {
            inner
                .blob_registry
                .entry(b.number)
                .or_default()
                .push(Arc::downgrade(b));
        }
        inner.blob_candidates.extend(plan.removed_blobs);
        inner.tables = plan.tables;
        inner.max_table_id = plan.max_table_id;
        inner.wals = plan.wals;
        inner.versions = plan.versions;
        self.next_file_number
            .fetch_max(plan.next_file_number, Ordering::SeqCst);
        self.last_sequence
            .fetch_max(plan.last_sequence, Ordering::SeqCst);
        *self.current.write() = inner.versions.clone();
    }

    /// SST files and MANIFESTs that nothing references any more; each is
    /// returned once. See the [module documentation](crate::version_set).
    pub fn obsolete_files(&self) -> ObsoleteFiles {
        let mut inner = self.inner.lock();
        let inner = &mut *inner;
        let mut tables = Vec::new();
        let candidates = std::mem::take(&mut inner.candidates);
        for number in candidates {
            if inner.quarantine.contains(&number) {
                inner.candidates.insert(number);
                continue;
            }
            let live = match inner.registry.get_mut(&number) {
                None => false,
                Some(weaks) => {
                    weaks.retain(|w| w.strong_count() > 0);
                    !weaks.is_empty()
                }
            };
            if live {
                inner.candidates.insert(number);
            } else {
                inner.registry.remove(&number);
                tables.push(number);
            }
        }
        let mut blob_files = Vec::new();
        for number in std::mem::take(&mut inner.blob_candidates) {
            let live = inner.quarantine.contains(&number)
                || inner.blob_registry.get_mut(&number).is_some_and(|weaks| {
                    weaks.retain(|w| w.strong_count() > 0);
                    !weaks.is_empty()
                });
            if live {
                inner.blob_candidates.insert(number);
            } else {
                inner.blob_registry.remove(&number);
                blob_files.push(number);
            }
        }
        ObsoleteFiles {
            tables,
            blob_files,
            manifests: std::mem::take(&mut inner.obsolete_manifests)
                .into_iter()
                .collect(),
        }
    }

    /// SST files that left every current version but are not deleted
    /// yet, ascending: something still holds a version naming them (a
    /// reader, a running job), or [`obsolete_files`](Self::obsolete_files)
    /// has not been asked since they left.
    pub fn pending_obsolete(&self) -> Vec<u64> {
        let inner = self.inner.lock();
        let mut pending: Vec<u64> = inner
            .candidates
            .iter()
            .chain(&inner.blob_candidates)
            .copied()
            .collect();
        pending.sort_unstable();
        pending
    }

    /// Every SST file number something may still read: files of live
    /// versions (current or pinned) and quarantined files. An SST file in
    /// the directory that is neither here nor being written by the engine is
    /// an orphan.
    pub fn live_files(&self) -> BTreeSet<u64> {
        let mut inner = self.inner.lock();
        let inner = &mut *inner;
        let mut live: BTreeSet<u64> = inner.quarantine.iter().copied().collect();
        for (number, weaks) in inner.registry.iter_mut() {
            weaks.retain(|w| w.strong_count() > 0);
            if !weaks.is_empty() {
                live.insert(*number);
            }
        }
        for (number, weaks) in inner.blob_registry.iter_mut() {
            weaks.retain(|w| w.strong_count() > 0);
            if !weaks.is_empty() {
                live.insert(*number);
            }
        }
        live
    }
}

/// What [`VersionSet::manifest_cut`] returns.
#[derive(Debug, Clone)]
pub struct ManifestCut {
    /// The live MANIFEST's file number.
    pub manifest_number: u64,
    /// Its synced bytes that describe `versions`.
    pub manifest_size: u64,
    /// The current version of every table.
    pub versions: BTreeMap<TableId, Arc<Version>>,
    /// WALs below this number hold nothing any table needs.
    pub min_log_number: u64,
}

/// Records `additions` in `wals`: a WAL's synced size only grows (two syncs
/// of one WAL may reach the MANIFEST out of order, as in RocksDB).
pub(crate) fn add_wals(wals: &mut BTreeMap<u64, u64>, additions: &[WalAddition]) {
    for a in additions {
        let size = wals.entry(a.number).or_insert(0);
        *size = (*size).max(a.synced_size);
    }
}

/// Records a table's merge operator name from an edit: the first name
/// sticks, a different one later is an error (message only).
pub(crate) fn set_merge_operator(
    table: TableId,
    current: &mut Option<String>,
    named: Option<&str>,
) -> std::result::Result<(), String> {
    match (current.as_deref(), named) {
        (_, None) => Ok(()),
        (None, Some(n)) => {
            *current = Some(n.to_owned());
            Ok(())
        }
        (Some(c), Some(n)) if c == n => Ok(()),
        (Some(c), Some(n)) => Err(format!(
            "table {table} uses merge operator {c}, an edit names {n}"
        )),
    }
}

/// Adds to each edit the garbage it makes of its table's blob files: the
/// blob references of the files it deletes (found in `versions`, or among
/// the files an earlier edit of the group adds) that the files it adds do
/// not carry on. An edit that moves a file deletes and adds the same
/// references, so it makes none. Edits given to `log_and_apply` carry no
/// garbage of their own, and an edit whose added files refer to more of an
/// existing blob file than its deleted files did is refused.
fn account_blob_garbage(
    versions: &BTreeMap<TableId, Arc<Version>>,
    edits: &mut [VersionEdit],
) -> Result<()> {
    let invalid = |message: String| InvalidEditSnafu { message }.build();
    for i in 0..edits.len() {
        let (earlier, rest) = edits.split_at_mut(i);
        let edit = &mut rest[0];
        if !edit.blob_file_garbage.is_empty() {
            return Err(invalid(
                "blob file garbage is computed by the version set, not given with an edit"
                    .to_owned(),
            ));
        }
        if edit.deleted_files.is_empty() || edit.table_drop {
            continue;
        }
        let version = versions.get(&edit.table);
        let same_table = |e: &&VersionEdit| e.table == edit.table;
        let has_blobs = version.is_some_and(|v| !v.blob_files().is_empty())
            || earlier
                .iter()
                .filter(same_table)
                .any(|e| !e.blob_file_additions.is_empty());
        if !has_blobs {
            continue;
        }
        // The deleted files' references: from the newest place each file
        // was added (a number the table does not have is refused when the
        // edit is applied).
        let deleted: BTreeSet<u64> = edit.deleted_files.iter().map(|&(_, n)| n).collect();
        let mut refs: BTreeMap<u64, Vec<BlobRef>> = BTreeMap::new();
        if let Some(v) = version {
            for (_, f) in v.all_files().filter(|(_, f)| deleted.contains(&f.number)) {
                refs.insert(f.number, f.blob_refs.clone());
            }
        }
        for e in earlier.iter().filter(same_table) {
            for (_, f) in e
                .new_files
                .iter()
                .filter(|(_, f)| deleted.contains(&f.number))
            {
                refs.insert(f.number, f.blob_refs.clone());
            }
        }
        let mut delta: BTreeMap<u64, (i128, i128)> = BTreeMap::new();
        for &(_, number) in &edit.deleted_files {
            for r in refs.get(&number).into_iter().flatten() {
                let d = delta.entry(r.file_number).or_default();
                d.0 += i128::from(r.count);
                d.1 += i128::from(r.bytes);
            }
        }
        let added_here: BTreeSet<u64> = edit.blob_file_additions.iter().map(|b| b.number).collect();
        for (_, f) in &edit.new_files {
            for r in f
                .blob_refs
                .iter()
                .filter(|r| !added_here.contains(&r.file_number))
            {
                let d = delta.entry(r.file_number).or_default();
                d.0 -= i128::from(r.count);
                d.1 -= i128::from(r.bytes);
            }
        }
        for (number, (count, bytes)) in delta {
            if count < 0 || bytes < 0 {
                return Err(invalid(format!(
                    "table {}: the files added refer to more of blob file {number:06} than the files deleted did",
                    edit.table
                )));
            }
            if count > 0 || bytes > 0 {
                edit.blob_file_garbage.push(BlobFileGarbage {
                    number,
                    count: count as u64,
                    bytes: bytes as u64,
                });
            }
        }
    }
    Ok(())
}
