//! [`SplitFs`]: a database's immutable files in a bucket, the rest on local
//! disk.

use std::io;
use std::path::Path;
use std::sync::Arc;

use lithify_version::filename::{FileKind, parse_file_name};
use lithify_vfs::{FileLock, FileSystem, RandomAccessFile, WritableFile};

use crate::fs::BucketFs;
use crate::grace::DeferredDeletes;
use crate::manifest::{BucketManifest, ManifestPosition};

/// One file system for a database whose SSTs and blob files live in a
/// bucket: files under the bucket's root whose names are SSTs
/// (`NNNNNN.sst`) or blob files (`NNNNNN.blob`) go to the [`BucketFs`];
/// every other file (the WAL, the MANIFEST, CURRENT, LOCK, the info log,
/// anything outside the root) goes to the local file system.
///
/// Those two kinds are written once, synced once and never changed, which
/// is what an object store does well; the engine syncs a table before a
/// MANIFEST record names it, so a table is in the bucket, whole, before
/// any version can refer to it. Acknowledged writes not yet flushed are in
/// the local WAL, as without a bucket.
///
/// A listing of the root merges both sides. A rename between the two
/// sides is a copy and a removal; a link between them fails with
/// `Unsupported` (callers that link fall back to a copy).
///
/// ```
/// use std::path::Path;
/// use std::sync::Arc;
/// use lithify_bucket::{Bucket, BucketFs, ReadOptions, SplitFs};
/// use lithify_vfs::{FileSystem, MemFs};
///
/// let bucket = Bucket::in_memory();
/// let local = Arc::new(MemFs::new());
/// let fs = SplitFs::new(local.clone(), BucketFs::new(bucket.clone(), "/db", "", ReadOptions::default()));
/// fs.create_dir_all(Path::new("/db")).unwrap();
/// for name in ["000004.log", "000005.sst"] {
///     let mut f = fs.create(&Path::new("/db").join(name)).unwrap();
///     f.append(b"bytes").unwrap();
///     f.sync_all().unwrap();
/// }
/// assert!(local.exists(Path::new("/db/000004.log")));
/// assert_eq!(bucket.list("").unwrap(), ["000005.sst"]);
/// assert_eq!(fs.list_dir(Path::new("/db")).unwrap(), ["000004.log", "000005.sst"]);
/// ```
#[derive(Debug, Clone)]
pub struct SplitFs {
    local: Arc<dyn FileSystem>,
    bucket: BucketFs,
    /// The MANIFEST and CURRENT, when they are in the bucket too.
    manifest: Option<Arc<BucketManifest>>,
    /// Deletes of bucket files waiting out the grace period, if any.
    deferred: Option<Arc<DeferredDeletes>>,
}

/// How long a table or blob file the writer removed stays in the bucket
/// when the MANIFEST is there too (replicas may still read it): see
/// [`SplitFs::with_delete_grace`].
pub const DEFAULT_DELETE_GRACE: std::time::Duration = std::time::Duration::from_secs(60);

/// Which of the database's metadata files a path is.
enum Meta<'a> {
    Current,
    CurrentTmp,
    Manifest(&'a str),
}

impl SplitFs {
    /// SSTs and blob files under `bucket`'s root in `bucket`, everything
    /// else in `local`.
    pub fn new(local: Arc<dyn FileSystem>, bucket: BucketFs) -> Self {
        SplitFs {
            local,
            bucket,
            manifest: None,
            deferred: None,
        }
    }

    /// As [`new`](Self::new), with the MANIFEST and CURRENT in the bucket
    /// as well (`docs/FORMATS.md`, "The MANIFEST in a bucket"): what a
    /// process on another machine needs to open the database, read-only
    /// or as the next writer. Only the WAL, LOCK and the info log stay
    /// local.
    ///
    /// The writer is fenced: the process that takes the database's lock
    /// [claims](Self::claim) it in the bucket under the next writer epoch,
    /// and a writer it replaced (on another machine, where the local lock
    /// cannot reach) fails at its next MANIFEST write instead of changing
    /// anything. The claim comes with the lock, before the open looks any
    /// further: a read-write open that then fails (a wrong option, a
    /// missing file) still has fenced out the writer before it. Open
    /// read-only to look without taking over.
    ///
    /// The WAL stays local, so what a writer on another machine finds is
    /// what the previous writer flushed. Its MANIFEST still names the
    /// previous writer's WALs, which this machine does not have: the new
    /// writer opens with `wal_recovery_mode` set to
    /// `SkipAnyCorruptedRecords`, and its `RecoveryReport` lists those
    /// WALs as dropped (a restart on the same machine finds its WAL and
    /// needs nothing).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use lithify_bucket::{Bucket, BucketFs, ReadOptions, SplitFs};
    /// use lithify_engine::{Db, Options, RecoveryMode};
    /// use lithify_vfs::MemFs;
    ///
    /// let bucket = Bucket::in_memory();
    /// let machine = || {
    ///     let tables = BucketFs::new(bucket.clone(), "/db", "db", ReadOptions::default());
    ///     let mut o = Options::default();
    ///     o.fs = Arc::new(SplitFs::with_manifest_in_bucket(Arc::new(MemFs::new()), tables));
    ///     o.wal_recovery_mode = RecoveryMode::SkipAnyCorruptedRecords;
    ///     o
    /// };
    /// let a = Db::open("/db", machine()).unwrap();
    /// a.put(b"k", b"flushed").unwrap();
    /// a.flush().unwrap();
    /// // Another machine takes over; the first is fenced out.
    /// let b = Db::open("/db", machine()).unwrap();
    /// assert_eq!(b.get(b"k").unwrap().as_deref(), Some(&b"flushed"[..]));
    /// a.put(b"k", b"stale").unwrap();
    /// assert!(a.flush().unwrap_err().to_string().contains("fenced out"));
    /// assert_eq!(b.get(b"k").unwrap().as_deref(), Some(&b"flushed"[..]));
    /// ```
    pub fn with_manifest_in_bucket(local: Arc<dyn FileSystem>, bucket: BucketFs) -> Self {
        let prefix = bucket
            .key_of(bucket.root())
            .expect("the root is under itself");
        let manifest = Arc::new(BucketManifest::new(bucket.bucket().clone(), prefix));
        SplitFs {
            local,
            bucket: bucket.with_owner(manifest.clone()),
            manifest: Some(manifest),
            deferred: Some(Arc::new(DeferredDeletes::new(DEFAULT_DELETE_GRACE))),
        }
    }

    /// This file system, deleting the tables and blob files the database
    /// removes only `grace` after it removed them (`Duration::ZERO`: at
    /// once). The default is none with the MANIFEST on local disk, and
    /// [`DEFAULT_DELETE_GRACE`] (60 s) with it in the bucket, where read
    /// replicas may still be reading an older version: a replica that
    /// catches up at least once per grace period never finds a file of
    /// its version deleted (a read held longer fails with `NotFound`
    /// naming the file, never with other data).
    ///
    /// Deletes that came due are done at the next removal, or by
    /// [`delete_due`](Self::delete_due). Those still waiting when the
    /// process ends are orphans, which the next open removes (after the
    /// grace period again).
    pub fn with_delete_grace(mut self, grace: std::time::Duration) -> Self {
        self.deferred = (!grace.is_zero()).then(|| Arc::new(DeferredDeletes::new(grace)));
        self
    }

    /// The grace period of deletes in the bucket (zero: at once).
    pub fn delete_grace(&self) -> std::time::Duration {
        self.deferred
            .as_ref()
            .map_or(std::time::Duration::ZERO, |d| d.grace())
    }

    /// Removed files still waiting out the grace period.
    pub fn pending_deletes(&self) -> usize {
        self.deferred.as_ref().map_or(0, |d| d.pending())
    }

    /// Deletes the removed files whose grace period is over (every one
    /// with `all`, as at a writer's clean shutdown when no replica
    /// reads); returns how many.
    pub fn delete_due(&self, all: bool) -> io::Result<usize> {
        match &self.deferred {
            Some(d) => d.delete_due(&self.bucket, all),
            None => Ok(0),
        }
    }

    /// Makes this process the writer of the database in the bucket and
    /// returns its writer epoch: a writer it replaces fails at its next
    /// MANIFEST write. Taking the database's lock (what opening it as a
    /// writer does) claims it; claiming again is a no-op. `Unsupported`
    /// when the MANIFEST is local.
    pub fn claim(&self) -> io::Result<u64> {
        match &self.manifest {
            Some(m) => m.claim(),
            None => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the MANIFEST is on local disk: the local lock is the only writer fence",
            )),
        }
    }

    /// Where the database's metadata in the bucket stands (`None` before
    /// its first CURRENT). Three requests. `Unsupported` when the MANIFEST
    /// is local.
    pub fn manifest_position(&self) -> io::Result<Option<ManifestPosition>> {
        match &self.manifest {
            Some(m) => m.position(),
            None => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the MANIFEST is on local disk",
            )),
        }
    }

    /// The writer epoch this process holds, if it claimed the database.
    pub fn epoch(&self) -> Option<u64> {
        self.manifest.as_ref().and_then(|m| m.epoch())
    }

    /// A file of this name is written again: a delete of the old one
    /// still waiting out the grace period must not remove the new one.
    fn cancel_deferred(&self, path: &Path) {
        if let Some(d) = &self.deferred {
            d.cancel(path);
        }
    }

    /// Which metadata file `path` is, when the metadata is in the bucket.
    fn meta<'p>(&self, path: &'p Path) -> Option<(&Arc<BucketManifest>, Meta<'p>)> {
        let m = self.manifest.as_ref()?;
        if path.parent()? != self.bucket.root() {
            return None;
        }
        let name = path.file_name()?.to_str()?;
        let which = match parse_file_name(name)? {
            FileKind::Current => Meta::Current,
            FileKind::CurrentTmp => Meta::CurrentTmp,
            FileKind::Manifest(_) => Meta::Manifest(name),
            _ => return None,
        };
        Some((m, which))
    }

    /// The bucket side.
    pub fn bucket(&self) -> &BucketFs {
        &self.bucket
    }

    /// The local side.
    pub fn local(&self) -> &Arc<dyn FileSystem> {
        &self.local
    }

    /// Whether `path` is kept in the bucket.
    pub fn in_bucket(&self, path: &Path) -> bool {
        self.bucket.contains(path)
            && path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(parse_file_name)
                .is_some_and(|k| matches!(k, FileKind::Sst(_) | FileKind::Blob(_)))
    }

    fn side(&self, path: &Path) -> &dyn FileSystem {
        if self.in_bucket(path) {
            &self.bucket
        } else {
            &*self.local
        }
    }

    fn same_side(&self, from: &Path, to: &Path) -> io::Result<&dyn FileSystem> {
        if self.in_bucket(from) != self.in_bucket(to) {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "{} and {} are on different sides (bucket and local disk)",
                    from.display(),
                    to.display()
                ),
            ));
        }
        Ok(self.side(from))
    }
}

impl FileSystem for SplitFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        match self.meta(path) {
            Some((m, Meta::CurrentTmp)) => m.create_current_tmp(),
            Some((m, Meta::Manifest(name))) => m.manifest_writer(name, false),
            Some((_, Meta::Current)) => Err(unsupported(path, "is replaced through CURRENT.tmp")),
            None => {
                self.cancel_deferred(path);
                self.side(path).create(path)
            }
        }
    }

    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        if self.meta(path).is_some() {
            if self.try_exists(path)? {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists", path.display()),
                ));
            }
            return self.create(path);
        }
        self.cancel_deferred(path);
        self.side(path).create_new(path)
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        match self.meta(path) {
            Some((m, Meta::Manifest(name))) => m.manifest_writer(name, true),
            Some(_) => Err(unsupported(path, "cannot be appended to")),
            None => self.side(path).open_append(path),
        }
    }

    fn open(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        match self.meta(path) {
            Some((m, Meta::Current)) => m.read_current(),
            Some((m, Meta::Manifest(name))) => m.read_manifest(name),
            Some((_, Meta::CurrentTmp)) => Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{} is never stored", path.display()),
            )),
            None => self.side(path).open(path),
        }
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        match (self.meta(from), self.meta(to)) {
            (Some((m, Meta::CurrentTmp)), Some((_, Meta::Current))) => m.switch_current(),
            (None, None) if self.in_bucket(from) == self.in_bucket(to) => {
                self.side(from).rename(from, to)
            }
            // Across the sides (a table moved to `lost/` under a name that
            // is no table's, say): a copy, then the removal.
            (None, None) => {
                let data = lithify_vfs::read_file(self.side(from), from)?;
                let mut out = self.side(to).create(to)?;
                out.append(&data)?;
                out.sync_all()?;
                drop(out);
                self.side(from).remove_file(from)
            }
            _ => Err(unsupported(from, "cannot be renamed in the bucket")),
        }
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        match self.meta(path) {
            Some((m, Meta::Manifest(name))) => m.remove_manifest(name),
            Some((m, Meta::CurrentTmp)) => {
                m.drop_current_tmp();
                Ok(())
            }
            Some((_, Meta::Current)) => Err(unsupported(path, "is never removed")),
            None => match &self.deferred {
                Some(d) if self.in_bucket(path) => {
                    if let Some(m) = &self.manifest {
                        // Refused now, not after the grace period: a
                        // fenced-out writer must learn it.
                        m.check_owner(&format!("removing {}", path.display()))?;
                    }
                    d.defer(path.to_path_buf());
                    // Errors of earlier deletes are logged and retried.
                    let _ = d.delete_due(&self.bucket, false);
                    Ok(())
                }
                _ => self.side(path).remove_file(path),
            },
        }
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.same_side(from, to)?.hard_link(from, to)
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        if self.bucket.contains(dir) && !self.bucket.list_dir(dir)?.is_empty() {
            return self.bucket.remove_dir(dir);
        }
        self.local.remove_dir(dir)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = match self.local.list_dir(dir) {
            // A machine opening a database it has never held: everything it
            // needs is in the bucket.
            Err(e)
                if e.kind() == io::ErrorKind::NotFound
                    && self.manifest.is_some()
                    && dir == self.bucket.root() =>
            {
                Vec::new()
            }
            other => other?,
        };
        if let Some(m) = self.manifest.as_ref().filter(|_| dir == self.bucket.root()) {
            if m.current_exists()? {
                names.push("CURRENT".to_owned());
            }
            names.extend(m.manifest_names()?);
        }
        if self.bucket.contains(dir) {
            names.extend(
                self.bucket
                    .list_dir(dir)?
                    .into_iter()
                    .filter(|n| self.in_bucket(&dir.join(n))),
            );
            names.sort();
            names.dedup();
        }
        Ok(names)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.local.create_dir_all(dir)
    }

    fn exists(&self, path: &Path) -> bool {
        self.try_exists(path).unwrap_or(false)
    }

    fn try_exists(&self, path: &Path) -> io::Result<bool> {
        match self.meta(path) {
            Some((m, Meta::Current)) => m.current_exists(),
            Some((m, Meta::Manifest(name))) => m.manifest_exists(name),
            Some((_, Meta::CurrentTmp)) => Ok(false),
            None => self.side(path).try_exists(path),
        }
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.local.is_dir(path)
            || (path == self.bucket.root()
                && self
                    .manifest
                    .as_ref()
                    .is_some_and(|m| m.current_exists().unwrap_or(false)))
    }

    fn file_size(&self, path: &Path) -> io::Result<u64> {
        match self.meta(path) {
            Some((m, Meta::Manifest(name))) => m.manifest_size(name),
            Some((m, Meta::Current)) => m.read_current()?.size(),
            Some((_, Meta::CurrentTmp)) => Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{} is never stored", path.display()),
            )),
            None => self.side(path).file_size(path),
        }
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.local.sync_dir(dir)
    }

    fn canonicalize(&self, path: &Path) -> io::Result<std::path::PathBuf> {
        if self.in_bucket(path) || self.meta(path).is_some() {
            let parent = path.parent().unwrap_or(path);
            let name = path.file_name().unwrap_or_default();
            if !self.exists(path) {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("{} does not exist", path.display()),
                ));
            }
            return Ok(self.local.canonicalize(parent)?.join(name));
        }
        self.local.canonicalize(path)
    }

    fn lock(&self, path: &Path) -> io::Result<FileLock> {
        let root = self.bucket.root();
        if self.manifest.is_some() && path.parent() == Some(root) && !self.local.is_dir(root) {
            // A machine taking over a database it has never held: its
            // local side (the WAL, LOCK) starts here.
            lithify_vfs::create_dir_durable(&*self.local, root)?;
        }
        let lock = self.local.lock(path)?;
        if let Some(m) = &self.manifest
            && path.parent() == Some(self.bucket.root())
        {
            // The writer's lock: the local one keeps out processes on this
            // machine, the claim fences out a writer on another.
            m.claim().map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("claiming the database in the bucket: {e}"),
                )
            })?;
        }
        Ok(lock)
    }

    fn lock_shared(&self, path: &Path) -> io::Result<FileLock> {
        self.local.lock_shared(path)
    }
}

fn unsupported(path: &Path, why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("{} {why} when the MANIFEST is in a bucket", path.display()),
    )
}
