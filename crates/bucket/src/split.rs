//! [`SplitFs`]: a database's immutable files in a bucket, the rest on local
//! disk.

use std::io;
use std::path::Path;
use std::sync::Arc;

use lithify_version::filename::{FileKind, parse_file_name};
use lithify_vfs::{FileLock, FileSystem, RandomAccessFile, WritableFile};

use crate::fs::BucketFs;

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
/// A listing of the root merges both sides. A rename or link between the
/// two sides fails with `Unsupported` (callers that link fall back to a
/// copy).
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
}

impl SplitFs {
    /// SSTs and blob files under `bucket`'s root in `bucket`, everything
    /// else in `local`.
    pub fn new(local: Arc<dyn FileSystem>, bucket: BucketFs) -> Self {
        SplitFs { local, bucket }
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
        self.side(path).create(path)
    }

    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.side(path).create_new(path)
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.side(path).open_append(path)
    }

    fn open(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        self.side(path).open(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.same_side(from, to)?.rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.side(path).remove_file(path)
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
        let mut names = self.local.list_dir(dir)?;
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
        self.side(path).exists(path)
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.local.is_dir(path)
    }

    fn file_size(&self, path: &Path) -> io::Result<u64> {
        self.side(path).file_size(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.local.sync_dir(dir)
    }

    fn canonicalize(&self, path: &Path) -> io::Result<std::path::PathBuf> {
        if self.in_bucket(path) {
            let parent = path.parent().unwrap_or(path);
            let name = path.file_name().unwrap_or_default();
            if !self.bucket.exists(path) {
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
        self.local.lock(path)
    }

    fn lock_shared(&self, path: &Path) -> io::Result<FileLock> {
        self.local.lock_shared(path)
    }
}
