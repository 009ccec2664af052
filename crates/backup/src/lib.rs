//! Incremental backups of a lithify database, as RocksDB's `BackupEngine`
//! makes them.
//!
//! A backup directory holds:
//!
//! ```text
//! LOCK                                   one BackupEngine at a time
//! shared/<number>_<xxh3>_<size>.sst      SST and blob (`.blob`) files, shared between backups
//! private/<id>/MANIFEST-…, <n>.log       each backup's MANIFEST prefix and WALs
//! meta/<id>                              each backup's metadata (see `meta`)
//! ```
//!
//! * **Create** takes a consistent set of files from the database
//!   ([`Db::live_file_set`]: deletions pinned, memtables flushed unless the
//!   WALs are small, the MANIFEST and WAL cuts). Each SST file is hashed
//!   (xxh3-64) and copied into `shared/` only if no earlier backup holds
//!   the same name, checksum and size — an unchanged table costs one read;
//!   the MANIFEST and the WALs are copied into `private/<id>/`. Every file
//!   is written under a temporary name, synced and renamed. The backup
//!   exists once its metadata file is: written last, atomically.
//! * A crash or error mid-backup leaves files no metadata names; they are
//!   ignored, and deleted the next time the engine opens, creates or
//!   purges. Earlier backups are never touched.
//! * **Create** refuses to back up damage: every table it copies is read
//!   back block by block, checksums verified
//!   ([`lithify_sstable::verify_file`]), before the copy takes its name.
//! * **Verify** re-reads every file of a backup and compares sizes and
//!   checksums (and each table's block checksums), naming the first file
//!   that differs.
//! * **Restore** copies a backup into a new directory, checking every
//!   file's size and checksum as it goes, and writes `CURRENT` last: a
//!   damaged backup is refused, and what the refused restore had copied
//!   is removed again.
//! * **Purge** keeps the newest N backups and deletes the shared files no
//!   remaining backup uses.
//! * **Each backup stands alone**: a metadata file that cannot be read
//!   (cut, changed, garbage) makes that one backup damaged — listed by
//!   [`BackupEngine::corrupt_backups`], refused by `verify` and `restore`
//!   by id, deletable — while [`list`](BackupEngine::list), `restore` of
//!   the newest and the other backups go on as RocksDB's do. Its files are
//!   kept until it is deleted: nothing tells which shared tables it used.
//! * [`BackupEngine::open_read_only`] (list, verify, restore) creates
//!   nothing, takes no lock and deletes nothing, as RocksDB's
//!   `BackupEngineReadOnly`; the directory must exist.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use lithify_backup::BackupEngine;
//! use lithify_engine::{Db, Options};
//!
//! let tmp = tempfile::tempdir()?;
//! let db = Db::open(tmp.path().join("db"), Options::default())?;
//! let backups = BackupEngine::open_os(tmp.path().join("backups"))?;
//! db.put(b"k", b"v1")?;
//! let first = backups.create_backup(&db)?;
//! db.put(b"k", b"v2")?;
//! let second = backups.create_backup(&db)?;
//! assert_eq!(backups.list()?.len(), 2);
//! backups.verify(second.id)?;
//!
//! backups.restore(Some(first.id), tmp.path().join("restored"))?;
//! let restored = Db::open(tmp.path().join("restored"), Options::default())?;
//! assert_eq!(restored.get(b"k")?.as_deref(), Some(&b"v1"[..]));
//! # Ok(())
//! # }
//! ```

mod error;
pub mod meta;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lithify_engine::{CheckpointOptions, Db, LiveFileKind, SeqNo, copy_file_prefix};
use lithify_vfs::{FileLock, FileSystem, OsFs};
use snafu::ResultExt;

use error::{
    CorruptSnafu, DamagedSourceBlobSnafu, DamagedSourceSnafu, EngineSnafu, InvalidArgumentSnafu,
    IoSnafu, NoSuchBackupSnafu, TableSnafu,
};
pub use error::{Error, Result};
use meta::{BackupFile, Meta};

/// One backup, as [`BackupEngine::list`] shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupInfo {
    /// Its id (1, 2, …; never reused while the backup directory lives).
    pub id: u32,
    /// Seconds since the Unix epoch when it was made.
    pub timestamp: u64,
    /// It holds exactly the writes up to this sequence number.
    pub sequence: SeqNo,
    /// Its files.
    pub files: usize,
    /// Bytes of its files (shared ones counted in every backup using them).
    pub size: u64,
}

/// What [`BackupEngine::create_backup_opt`] did beyond the backup itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CreateStats {
    /// SST files copied into `shared/`.
    pub tables_copied: usize,
    /// SST files an earlier backup already held.
    pub tables_shared: usize,
    /// Bytes written into the backup directory.
    pub bytes_copied: u64,
}

/// A backup whose metadata cannot be read (see
/// [`BackupEngine::corrupt_backups`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CorruptBackup {
    /// Its id (the metadata file's name).
    pub id: u32,
    /// Its metadata file.
    pub path: PathBuf,
    /// Why it cannot be read, as a sentence.
    pub message: String,
}

/// A backup directory; see the [crate documentation](crate).
#[derive(Debug)]
pub struct BackupEngine {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    /// `None` for a read-only engine.
    _lock: Option<FileLock>,
    /// Held by every operation that writes or deletes in the directory
    /// (create, delete, purge, garbage collection), so that two threads
    /// sharing the engine never collect each other's files in flight.
    writing: std::sync::Mutex<()>,
}

const SHARED: &str = "shared";
const PRIVATE: &str = "private";
const META: &str = "meta";
const TMP: &str = ".tmp";

fn io(op: &'static str, path: &Path) -> IoSnafu<&'static str, PathBuf> {
    IoSnafu {
        op,
        path: path.to_path_buf(),
    }
}

/// The xxh3-64 of everything fed to it.
struct Hasher(xxhash_rust::xxh3::Xxh3);

impl Hasher {
    fn new() -> Self {
        Hasher(xxhash_rust::xxh3::Xxh3::new())
    }
}

impl BackupEngine {
    /// Opens (creating) the backup directory `dir` on the real file system.
    pub fn open_os(dir: impl AsRef<Path>) -> Result<Self> {
        Self::open(Arc::new(OsFs), dir)
    }

    /// Opens (creating) the backup directory `dir` on `fs`, takes its lock
    /// and deletes what an interrupted backup left.
    pub fn open(fs: Arc<dyn FileSystem>, dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        if !fs.is_dir(&dir) {
            lithify_vfs::create_dir_durable(&*fs, &dir).context(io("creating", &dir))?;
        }
        for sub in [SHARED, PRIVATE, META] {
            let d = dir.join(sub);
            if !fs.is_dir(&d) {
                lithify_vfs::create_dir_durable(&*fs, &d).context(io("creating", &d))?;
            }
        }
        let lock_path = dir.join("LOCK");
        let lock = fs.lock(&lock_path).context(io("locking", &lock_path))?;
        let engine = BackupEngine {
            fs,
            dir,
            _lock: Some(lock),
            writing: std::sync::Mutex::new(()),
        };
        engine.collect_garbage()?;
        Ok(engine)
    }

    /// Opens the existing backup directory `dir` on `fs` to list, verify
    /// and restore (RocksDB's `BackupEngineReadOnly`): nothing is created,
    /// locked or deleted, and creating, deleting or purging backups is
    /// refused. A directory that is missing or holds no backup directory
    /// is refused, naming it.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use lithify_backup::BackupEngine;
    /// use lithify_vfs::OsFs;
    ///
    /// let tmp = tempfile::tempdir()?;
    /// let missing = tmp.path().join("nowhere");
    /// assert!(BackupEngine::open_read_only(std::sync::Arc::new(OsFs), &missing).is_err());
    /// assert!(!lithify_vfs::FileSystem::exists(&OsFs, &missing), "nothing was created");
    /// # Ok(())
    /// # }
    /// ```
    pub fn open_read_only(fs: Arc<dyn FileSystem>, dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        check_backup_dir(&*fs, &dir)?;
        Ok(BackupEngine {
            fs,
            dir,
            _lock: None,
            writing: std::sync::Mutex::new(()),
        })
    }

    /// [`open`](Self::open) for a backup directory that must exist already
    /// (to delete or purge backups): a missing one is refused, not created.
    pub fn open_existing(fs: Arc<dyn FileSystem>, dir: impl AsRef<Path>) -> Result<Self> {
        check_backup_dir(&*fs, dir.as_ref())?;
        Self::open(fs, dir)
    }

    fn check_writable(&self) -> Result<()> {
        if self._lock.is_none() {
            return InvalidArgumentSnafu {
                message: format!(
                    "backup directory {} was opened read-only",
                    self.dir.display()
                ),
            }
            .fail();
        }
        Ok(())
    }

    /// Backs up `db` (memtables flushed first).
    pub fn create_backup(&self, db: &Db) -> Result<BackupInfo> {
        self.create_backup_opt(db, &CheckpointOptions::default())
            .map(|(info, _)| info)
    }

    /// Backs up `db`; with `log_size_for_flush` above 0 the memtables are
    /// flushed only when the WALs hold that many bytes (the WALs are
    /// backed up instead).
    pub fn create_backup_opt(
        &self,
        db: &Db,
        options: &CheckpointOptions,
    ) -> Result<(BackupInfo, CreateStats)> {
        self.check_writable()?;
        // (Paths that cannot be resolved here are on another file system.)
        let within = |a: &Path, b: &Path| lithify_vfs::is_within(&*self.fs, a, b).unwrap_or(false);
        if within(&self.dir, db.path()) || within(db.path(), &self.dir) {
            return InvalidArgumentSnafu {
                message: format!(
                    "the backup directory {} and the database {} must not lie inside one another",
                    self.dir.display(),
                    db.path().display()
                ),
            }
            .fail();
        }
        let _writing = self.writing.lock().unwrap_or_else(|p| p.into_inner());
        // Ids are never reused, a damaged backup's included.
        let Some(id) = self.meta_ids()?.last().copied().unwrap_or(0).checked_add(1) else {
            return InvalidArgumentSnafu {
                message: format!("{} has used every backup id", self.dir.display()),
            }
            .fail();
        };
        let set = db.live_file_set(options).context(EngineSnafu)?;
        let src = &**set.file_system();
        let mut stats = CreateStats::default();
        let private = self.dir.join(PRIVATE).join(id.to_string());
        lithify_vfs::create_dir_durable(&*self.fs, &private).context(io("creating", &private))?;
        let mut files = Vec::with_capacity(set.files().len());
        for f in set.files() {
            let (stored, checksum) = if matches!(f.kind, LiveFileKind::Sst | LiveFileKind::Blob) {
                // Immutable files are shared between backups by name,
                // checksum and size (RocksDB's `share_files_with_checksum`).
                let checksum = checksum_of(src, &f.path, f.size)?;
                let (stem, ext) = f.name.rsplit_once('.').unwrap_or((&f.name, "sst"));
                let stored = format!("{SHARED}/{stem}_{checksum:016x}_{}.{ext}", f.size);
                let path = self.dir.join(&stored);
                if self.fs.exists(&path) {
                    stats.tables_shared += 1;
                } else {
                    self.copy_in(src, &f.path, &path, f.size, Some(checksum), Some(f.kind))?;
                    stats.tables_copied += 1;
                    stats.bytes_copied += f.size;
                }
                (stored, checksum)
            } else {
                let stored = format!("{PRIVATE}/{id}/{}", f.name);
                let checksum =
                    self.copy_in(src, &f.path, &self.dir.join(&stored), f.size, None, None)?;
                stats.bytes_copied += f.size;
                (stored, checksum)
            };
            let file = BackupFile {
                kind: f.kind,
                name: f.name.clone(),
                size: f.size,
                checksum,
                stored,
            };
            files.push(file);
        }
        let shared = self.dir.join(SHARED);
        self.fs
            .sync_dir(&shared)
            .context(io("syncing directory", &shared))?;
        self.fs
            .sync_dir(&private)
            .context(io("syncing directory", &private))?;
        let current = String::from_utf8_lossy(set.current()).trim_end().to_owned();
        let meta = Meta {
            id,
            timestamp: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            sequence: set.sequence(),
            current,
            files,
        };
        // The commit point: the backup exists once this file does.
        let meta_path = self.dir.join(META).join(id.to_string());
        lithify_vfs::write_file_atomic(&*self.fs, &meta_path, &meta.encode())
            .context(io("writing", &meta_path))?;
        drop(set);
        let info = info_of(&meta);
        tracing::info!(
            target: "lithify::backup",
            id,
            sequence = info.sequence,
            files = info.files,
            tables_copied = stats.tables_copied,
            tables_shared = stats.tables_shared,
            bytes_copied = stats.bytes_copied,
            "backup created"
        );
        Ok((info, stats))
    }

    /// Every backup that can be read, oldest first; damaged ones are in
    /// [`corrupt_backups`](Self::corrupt_backups).
    pub fn list(&self) -> Result<Vec<BackupInfo>> {
        Ok(self.read_metas()?.0.iter().map(info_of).collect())
    }

    /// The backups whose metadata cannot be read (RocksDB's
    /// `GetCorruptedBackups`): each stays until deleted
    /// ([`delete_backup`](Self::delete_backup)), and keeps the files it
    /// may use.
    pub fn corrupt_backups(&self) -> Result<Vec<CorruptBackup>> {
        Ok(self.read_metas()?.1)
    }

    /// Re-reads every file of backup `id` and checks its size and
    /// checksum; the error names the first file that differs.
    pub fn verify(&self, id: u32) -> Result<BackupInfo> {
        let meta = self.read_meta(id)?;
        for f in &meta.files {
            let path = self.dir.join(&f.stored);
            let size = self
                .fs
                .file_size(&path)
                .context(io("reading the size of", &path))?;
            if size != f.size {
                return CorruptSnafu {
                    path,
                    message: format!("size {size}, recorded {}", f.size),
                }
                .fail();
            }
            let sum = checksum_of(&*self.fs, &path, f.size)?;
            if sum != f.checksum {
                return CorruptSnafu {
                    path,
                    message: format!("checksum {sum:016x}, recorded {:016x}", f.checksum),
                }
                .fail();
            }
            match f.kind {
                LiveFileKind::Sst => self.verify_table(&path, f.size)?,
                LiveFileKind::Blob => self.verify_blob_file(&path)?,
                LiveFileKind::Manifest | LiveFileKind::Wal => {}
            }
        }
        Ok(info_of(&meta))
    }

    /// Every value of the blob file at `path` (in the backup directory)
    /// reads back with its checksum, and the footer's counts match.
    fn verify_blob_file(&self, path: &Path) -> Result<()> {
        let file = self.fs.open(path).context(io("opening", path))?;
        lithify_blob::BlobFileReader::open(file, path)
            .and_then(|r| r.verify())
            .map_err(|e| {
                CorruptSnafu {
                    path: path.to_path_buf(),
                    message: e.to_string(),
                }
                .build()
            })?;
        Ok(())
    }

    /// Every block of the table at `path` (in the backup directory) reads
    /// back with its checksum.
    fn verify_table(&self, path: &Path, size: u64) -> Result<()> {
        let file = self.fs.open(path).context(io("opening", path))?;
        lithify_sstable::verify_file(&*file, path, size).context(TableSnafu)?;
        Ok(())
    }

    /// Restores backup `id` (`None`: the newest) into the new directory
    /// `dest` on this engine's file system, checking every file as it is
    /// copied; `CURRENT` is written last, so a refused restore leaves a
    /// directory that does not open.
    pub fn restore(&self, id: Option<u32>, dest: impl AsRef<Path>) -> Result<BackupInfo> {
        let dest = dest.as_ref();
        let meta = match id {
            Some(id) => self.read_meta(id)?,
            None => self.read_metas()?.0.pop().ok_or_else(|| {
                InvalidArgumentSnafu {
                    message: format!("{} holds no backup that can be read", self.dir.display()),
                }
                .build()
            })?,
        };
        if lithify_vfs::is_within(&*self.fs, dest, &self.dir).context(io("resolving", dest))? {
            return InvalidArgumentSnafu {
                message: format!(
                    "restore target {} is inside the backup directory {}",
                    dest.display(),
                    self.dir.display()
                ),
            }
            .fail();
        }
        let existed = self.fs.exists(dest);
        // The directories this restore creates: `dest` and its missing
        // parents, innermost first.
        let created: Vec<&Path> = dest
            .ancestors()
            .take_while(|d| !d.as_os_str().is_empty() && !self.fs.exists(d))
            .collect();
        if existed && !self.fs.list_dir(dest).is_ok_and(|e| e.is_empty()) {
            return InvalidArgumentSnafu {
                message: format!("restore target {} exists and is not empty", dest.display()),
            }
            .fail();
        }
        let mut written = Vec::with_capacity(meta.files.len());
        let result = self.restore_into(&meta, dest, &mut written);
        if result.is_err() {
            // A refused restore leaves nothing behind.
            for p in &written {
                let _ = self.fs.remove_file(p);
            }
            for dir in &created {
                let _ = self.fs.remove_dir(dir);
            }
            if let Some(top) = created.last() {
                let _ = self.fs.sync_dir(lithify_vfs::parent_dir(top));
            }
        }
        result?;
        tracing::info!(target: "lithify::backup", id = meta.id, dest = %dest.display(), "backup restored");
        Ok(info_of(&meta))
    }

    fn restore_into(&self, meta: &Meta, dest: &Path, written: &mut Vec<PathBuf>) -> Result<()> {
        lithify_vfs::create_dir_durable(&*self.fs, dest).context(io("creating", dest))?;
        for f in &meta.files {
            let from = self.dir.join(&f.stored);
            let size = self
                .fs
                .file_size(&from)
                .context(io("reading the size of", &from))?;
            if size != f.size {
                return CorruptSnafu {
                    path: from,
                    message: format!("size {size}, recorded {}", f.size),
                }
                .fail();
            }
            let mut h = Hasher::new();
            let to = dest.join(&f.name);
            written.push(to.clone());
            copy_file_prefix(&*self.fs, &from, &*self.fs, &to, f.size, |b| h.0.update(b))
                .context(EngineSnafu)?;
            let sum = h.0.digest();
            if sum != f.checksum {
                return CorruptSnafu {
                    path: from,
                    message: format!("checksum {sum:016x}, recorded {:016x}", f.checksum),
                }
                .fail();
            }
        }
        self.fs
            .sync_dir(dest)
            .context(io("syncing directory", dest))?;
        let current = dest.join("CURRENT");
        written.push(current.clone());
        written.push(dest.join("CURRENT.tmp"));
        lithify_vfs::write_file_atomic(
            &*self.fs,
            &current,
            format!("{}\n", meta.current).as_bytes(),
        )
        .context(io("writing", &current))
    }

    /// Deletes backup `id` and the shared files no other backup uses.
    pub fn delete_backup(&self, id: u32) -> Result<()> {
        self.check_writable()?;
        let _writing = self.writing.lock().unwrap_or_else(|p| p.into_inner());
        let path = self.dir.join(META).join(id.to_string());
        if !self.fs.exists(&path) {
            return NoSuchBackupSnafu {
                id,
                dir: self.dir.clone(),
            }
            .fail();
        }
        self.fs.remove_file(&path).context(io("removing", &path))?;
        let meta_dir = self.dir.join(META);
        self.fs
            .sync_dir(&meta_dir)
            .context(io("syncing directory", &meta_dir))?;
        self.collect_garbage()
    }

    /// Keeps the newest `keep` backups, deletes the others (oldest first)
    /// and the shared files only they used; returns the deleted ids.
    pub fn purge_old_backups(&self, keep: usize) -> Result<Vec<u32>> {
        self.check_writable()?;
        let _writing = self.writing.lock().unwrap_or_else(|p| p.into_inner());
        let (metas, _) = self.read_metas()?;
        let excess = metas.len().saturating_sub(keep);
        let ids: Vec<u32> = metas[..excess].iter().map(|m| m.id).collect();
        for id in &ids {
            let path = self.dir.join(META).join(id.to_string());
            self.fs.remove_file(&path).context(io("removing", &path))?;
        }
        if !ids.is_empty() {
            let meta_dir = self.dir.join(META);
            self.fs
                .sync_dir(&meta_dir)
                .context(io("syncing directory", &meta_dir))?;
        }
        self.collect_garbage()?;
        Ok(ids)
    }

    /// Copies `len` bytes of `from` (on `src`) to `to` here, through a
    /// temporary name, synced; returns their checksum. With `expected`, a
    /// copy whose checksum differs (the source changed or was misread
    /// between two reads) is refused and never takes the final name; with
    /// `check` an SST or a blob file, so is a copy whose blocks or records
    /// do not read back intact (the source file is damaged).
    fn copy_in(
        &self,
        src: &dyn FileSystem,
        from: &Path,
        to: &Path,
        len: u64,
        expected: Option<u64>,
        check: Option<LiveFileKind>,
    ) -> Result<u64> {
        let tmp = PathBuf::from(format!("{}{TMP}", to.display()));
        if self.fs.exists(&tmp) {
            self.fs.remove_file(&tmp).context(io("removing", &tmp))?;
        }
        let mut h = Hasher::new();
        copy_file_prefix(src, from, &*self.fs, &tmp, len, |b| h.0.update(b))
            .context(EngineSnafu)?;
        let sum = h.0.digest();
        if let Some(expected) = expected
            && sum != expected
        {
            let _ = self.fs.remove_file(&tmp);
            return CorruptSnafu {
                path: from.to_path_buf(),
                message: format!(
                    "changed while it was copied: checksum {expected:016x}, then {sum:016x}"
                ),
            }
            .fail();
        }
        if matches!(check, Some(LiveFileKind::Sst | LiveFileKind::Blob)) {
            let file = self.fs.open(&tmp).context(io("opening", &tmp))?;
            // The error names the source file: the copy is byte for byte.
            let damage = if check == Some(LiveFileKind::Sst) {
                lithify_sstable::verify_file(&*file, from, len)
                    .map(drop)
                    .context(DamagedSourceSnafu { path: from })
            } else {
                lithify_blob::BlobFileReader::open(file, from)
                    .and_then(|r| r.verify())
                    .map(drop)
                    .context(DamagedSourceBlobSnafu { path: from })
            };
            if let Err(e) = damage {
                let _ = self.fs.remove_file(&tmp);
                return Err(e);
            }
        }
        self.fs.rename(&tmp, to).context(io("renaming", &tmp))?;
        Ok(sum)
    }

    /// The ids of every metadata file, damaged or not, ascending.
    fn meta_ids(&self) -> Result<Vec<u32>> {
        let meta_dir = self.dir.join(META);
        let names = self
            .fs
            .list_dir(&meta_dir)
            .context(io("listing", &meta_dir))?;
        let mut ids: Vec<u32> = names.iter().filter_map(|n| n.parse().ok()).collect();
        ids.sort_unstable();
        Ok(ids)
    }

    /// Every backup's metadata, oldest first, and the backups whose
    /// metadata cannot be read: one damaged file never hides the others.
    fn read_metas(&self) -> Result<(Vec<Meta>, Vec<CorruptBackup>)> {
        let mut good = Vec::new();
        let mut damaged = Vec::new();
        for id in self.meta_ids()? {
            match self.read_meta(id) {
                Ok(m) => good.push(m),
                // A read that failed (not a file that reads wrong) is
                // not damage: it is the caller's to see.
                Err(e)
                    if lithify_base::Classify::kind(&e) != lithify_base::ErrorKind::Corruption =>
                {
                    return Err(e);
                }
                Err(e) => {
                    let path = self.dir.join(META).join(id.to_string());
                    tracing::warn!(target: "lithify::backup", id, path = %path.display(), "backup {id} is damaged and left out: {e}");
                    damaged.push(CorruptBackup {
                        id,
                        path,
                        message: e.to_string(),
                    });
                }
            }
        }
        Ok((good, damaged))
    }

    fn read_meta(&self, id: u32) -> Result<Meta> {
        let path = self.dir.join(META).join(id.to_string());
        if !self.fs.exists(&path) {
            return NoSuchBackupSnafu {
                id,
                dir: self.dir.clone(),
            }
            .fail();
        }
        let bytes = lithify_vfs::read_file(&*self.fs, &path).context(io("reading", &path))?;
        let meta = Meta::decode(&bytes, &path)?;
        if meta.id != id {
            return CorruptSnafu {
                path,
                message: format!("names backup {}", meta.id),
            }
            .fail();
        }
        Ok(meta)
    }

    /// Deletes what no backup's metadata names: shared files of purged or
    /// interrupted backups, private directories without metadata, and
    /// temporary files. Callers hold `writing` (or are `open`, before the
    /// engine is shared).
    fn collect_garbage(&self) -> Result<()> {
        let (metas, damaged) = self.read_metas()?;
        let used: BTreeSet<&str> = metas
            .iter()
            .flat_map(|m| m.files.iter().map(|f| f.stored.as_str()))
            .collect();
        // A damaged backup's private directory stays, and while one exists
        // no shared file goes: which of them it uses cannot be read.
        let ids: BTreeSet<String> = metas
            .iter()
            .map(|m| m.id)
            .chain(damaged.iter().map(|d| d.id))
            .map(|id| id.to_string())
            .collect();
        if !damaged.is_empty() {
            tracing::warn!(
                target: "lithify::backup",
                damaged = damaged.len(),
                "shared files are kept while a damaged backup may use them; delete the damaged backups to free them"
            );
        }
        let shared = self.dir.join(SHARED);
        let mut removed = 0usize;
        let mut dirs_removed = 0usize;
        let mut remove = |p: &Path| -> Result<()> {
            self.fs.remove_file(p).context(io("removing", p))?;
            removed += 1;
            Ok(())
        };
        for name in self.fs.list_dir(&shared).context(io("listing", &shared))? {
            let temporary = name.ends_with(TMP);
            if (damaged.is_empty() || temporary)
                && !used.contains(format!("{SHARED}/{name}").as_str())
            {
                remove(&shared.join(&name))?;
            }
        }
        let private = self.dir.join(PRIVATE);
        for name in self
            .fs
            .list_dir(&private)
            .context(io("listing", &private))?
        {
            if ids.contains(&name) {
                continue;
            }
            let d = private.join(&name);
            for f in self.fs.list_dir(&d).context(io("listing", &d))? {
                remove(&d.join(f))?;
            }
            self.fs.remove_dir(&d).context(io("removing", &d))?;
            dirs_removed += 1;
        }
        let meta_dir = self.dir.join(META);
        for name in self
            .fs
            .list_dir(&meta_dir)
            .context(io("listing", &meta_dir))?
        {
            if name.parse::<u32>().is_err() {
                remove(&meta_dir.join(&name))?;
            }
        }
        let removed = removed + dirs_removed;
        if removed > 0 {
            for d in [&shared, &private, &meta_dir] {
                self.fs.sync_dir(d).context(io("syncing directory", d))?;
            }
            tracing::info!(target: "lithify::backup", removed, "unused backup files deleted");
        }
        Ok(())
    }
}

/// Whether `dir` is a backup directory (it has the `meta` and `shared`
/// directories a [`BackupEngine`] keeps). Tools use it to refuse writing
/// their outputs into one.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use lithify_backup::{BackupEngine, holds_backups};
/// use lithify_vfs::OsFs;
///
/// let tmp = tempfile::tempdir()?;
/// assert!(!holds_backups(&OsFs, tmp.path()));
/// BackupEngine::open_os(tmp.path())?;
/// assert!(holds_backups(&OsFs, tmp.path()));
/// # Ok(())
/// # }
/// ```
pub fn holds_backups(fs: &dyn FileSystem, dir: &Path) -> bool {
    fs.is_dir(&dir.join(META)) && fs.is_dir(&dir.join(SHARED))
}

/// Refuses `dir` unless it is a backup directory, naming what it is.
fn check_backup_dir(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    if fs.is_dir(&dir.join(META)) {
        return Ok(());
    }
    let what = if fs.is_dir(dir) {
        "holds no backups (no meta directory)"
    } else if fs.exists(dir) {
        "is not a directory"
    } else {
        "does not exist"
    };
    InvalidArgumentSnafu {
        message: format!("backup directory {} {what}", dir.display()),
    }
    .fail()
}

/// The xxh3-64 of the first `len` bytes of `path`.
fn checksum_of(fs: &dyn FileSystem, path: &Path, len: u64) -> Result<u64> {
    const CHUNK: u64 = 1 << 20;
    let file = fs.open(path).context(io("opening", path))?;
    let mut h = Hasher::new();
    let mut offset = 0;
    while offset < len {
        let n = CHUNK.min(len - offset) as usize;
        let bytes = file.read_vec(offset, n).context(io("reading", path))?;
        h.0.update(&bytes);
        offset += n as u64;
    }
    Ok(h.0.digest())
}

fn info_of(m: &Meta) -> BackupInfo {
    BackupInfo {
        id: m.id,
        timestamp: m.timestamp,
        sequence: m.sequence,
        files: m.files.len(),
        size: m.files.iter().map(|f| f.size).sum(),
    }
}

/// The README's example, run as a doctest so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

// The thread-safety the documentation promises, checked at compile time.
const _: () = {
    const fn send_and_sync<T: Send + Sync>() {}
    send_and_sync::<BackupEngine>();
    send_and_sync::<Error>();
};
