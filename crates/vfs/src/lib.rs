//! The file-system layer every lithify crate goes through.
//!
//! No lithify crate but this one touches `std::fs` (clippy enforces it):
//! every file is created, written, synced, renamed and read through a
//! [`FileSystem`]. That makes crash and fault tests deterministic:
//!
//! * [`OsFs`] is the real file system;
//! * [`MemFs`] keeps everything in memory and **simulates power loss**:
//!   [`MemFs::crash`] forgets every byte not covered by a completed sync and
//!   undoes every create, rename and remove whose directory was not synced
//!   afterwards (optionally keeping a torn prefix of unsynced appends);
//! * [`FaultFs`] wraps any file system and injects errors by rule: fail the
//!   Nth write, sync, rename, open or remove; run out of space after N
//!   bytes; tear the Nth write short;
//! * [`MeteredFs`] wraps any file system and measures the space of the
//!   files it is told to count, now and at its peak.
//!
//! Files are append-only writers ([`WritableFile`], with positional writes
//! for preallocated index files) and positional readers
//! ([`RandomAccessFile`]). Buffering is the caller's business: a write here
//! reaches the OS (or the simulated page cache) at once.
//!
//! ```
//! use std::path::Path;
//! use lithify_vfs::{FileSystem, MemFs, read_file};
//!
//! let fs = MemFs::new();
//! fs.create_dir_all(Path::new("/db")).unwrap();
//! fs.sync_dir(Path::new("/")).unwrap();
//! let mut f = fs.create(Path::new("/db/000001.log")).unwrap();
//! f.append(b"acknowledged").unwrap();
//! f.sync_data().unwrap();
//! f.append(b" and lost").unwrap();
//! fs.sync_dir(Path::new("/db")).unwrap();
//! drop(f);
//!
//! fs.crash(); // power loss: only synced bytes and synced directory entries survive
//! assert_eq!(read_file(&fs, Path::new("/db/000001.log")).unwrap(), b"acknowledged");
//! ```

mod fault;
pub mod lost;
mod mem;
mod metered;
mod os;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use fault::{FaultFs, FaultRule, OpCounts, OpKind};
pub use mem::MemFs;
pub use metered::{MeteredFs, SpaceUsage};
pub use os::OsFs;

/// A file system: the only way lithify crates reach files.
///
/// Paths are ordinary [`Path`]s. Implementations must be usable from many
/// threads at once.
pub trait FileSystem: Send + Sync + fmt::Debug {
    /// Creates `path` for writing, truncating it if it exists.
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>>;

    /// Creates `path` for writing; fails with `AlreadyExists` if it exists.
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WritableFile>>;

    /// Opens the existing file `path` for writing at its end.
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WritableFile>>;

    /// Opens the existing file `path` for positional reads.
    fn open(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>>;

    /// Renames the file `from` to `to`, atomically replacing `to` if it
    /// exists. Durable once the directories of both are synced.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;

    /// Removes the file `path`. Durable once its directory is synced.
    /// Handles already open keep reading it. On Windows the name stays
    /// taken until the last of them is closed, so creating a file of that
    /// name fails until then.
    fn remove_file(&self, path: &Path) -> io::Result<()>;

    /// Makes `to` a second name of the existing file `from` (a hard link);
    /// fails with `AlreadyExists` if `to` exists. Durable once the
    /// directory of `to` is synced. A file system without links (or a link
    /// across devices) fails, and the caller copies instead; the default
    /// has no links (`Unsupported`).
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        let _ = to;
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("this file system cannot link {}", from.display()),
        ))
    }

    /// Removes the empty directory `path`.
    fn remove_dir(&self, path: &Path) -> io::Result<()>;

    /// Names of the entries of directory `dir`, sorted.
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>>;

    /// Creates `dir` and any missing parents. Each new entry is durable once
    /// its parent directory is synced.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;

    /// Whether a file or directory exists at `path`.
    fn exists(&self, path: &Path) -> bool;

    /// Whether a file or directory exists at `path`, or the error that kept
    /// this from being known: an object store that did not answer, a
    /// directory that may not be searched. [`exists`](Self::exists) says
    /// `false` for both; a caller that decides something lasting on the
    /// answer (whether to create a database) asks this instead. The
    /// default answers with `exists`, for file systems that cannot fail
    /// to tell.
    fn try_exists(&self, path: &Path) -> io::Result<bool> {
        Ok(self.exists(path))
    }

    /// Whether `path` is a directory.
    fn is_dir(&self, path: &Path) -> bool;

    /// Size of the file `path` in bytes.
    fn file_size(&self, path: &Path) -> io::Result<u64>;

    /// Makes the entries of directory `dir` (creates, renames, removes)
    /// durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;

    /// The absolute form of the existing `path`, with `.`, `..` and
    /// symbolic links resolved: two paths name the same entry exactly when
    /// their canonical forms are equal. The default (a file system without
    /// links or a current directory) is `path` with `.` dropped, relative
    /// paths taken from the root.
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        if !self.exists(path) {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{} does not exist", path.display()),
            ));
        }
        let mut out = PathBuf::from("/");
        for c in path.components() {
            match c {
                std::path::Component::Normal(n) => out.push(n),
                std::path::Component::ParentDir => {
                    out.pop();
                }
                _ => {}
            }
        }
        Ok(out)
    }

    /// Takes an exclusive lock on `path` (created if missing), held until
    /// the returned [`FileLock`] is dropped. Fails with `WouldBlock` if held
    /// (exclusively or shared), by another process or another handle in
    /// this one.
    fn lock(&self, path: &Path) -> io::Result<FileLock>;

    /// Takes a shared lock on the existing file `path`, held until the
    /// returned [`FileLock`] is dropped: any number of shared locks go
    /// together, and exclude an exclusive [`lock`](FileSystem::lock).
    /// Fails with `WouldBlock` while an exclusive lock is held, and with
    /// `NotFound` if the file does not exist: a shared lock creates
    /// nothing, so a reader that takes one changes nothing on disk.
    ///
    /// The default, for file systems without shared locks, takes the
    /// exclusive lock of an existing file instead: stricter (two readers
    /// exclude each other), never weaker.
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// use std::path::Path;
    /// use lithify_vfs::{FileSystem, MemFs};
    ///
    /// let fs = MemFs::new();
    /// fs.create_dir_all(Path::new("/d")).unwrap();
    /// let lock = Path::new("/d/.lock");
    /// assert_eq!(fs.lock_shared(lock).unwrap_err().kind(), ErrorKind::NotFound);
    /// let writer = fs.lock(lock).unwrap();
    /// assert_eq!(fs.lock_shared(lock).unwrap_err().kind(), ErrorKind::WouldBlock);
    /// drop(writer);
    /// let (a, b) = (fs.lock_shared(lock).unwrap(), fs.lock_shared(lock).unwrap());
    /// assert_eq!(fs.lock(lock).unwrap_err().kind(), ErrorKind::WouldBlock);
    /// drop((a, b));
    /// drop(fs.lock(lock).unwrap());
    /// ```
    fn lock_shared(&self, path: &Path) -> io::Result<FileLock> {
        if !self.exists(path) {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{} does not exist", path.display()),
            ));
        }
        self.lock(path)
    }
}

/// A file open for writing.
pub trait WritableFile: Send + fmt::Debug {
    /// Appends `data` at the end of the file.
    fn append(&mut self, data: &[u8]) -> io::Result<()>;

    /// Writes `data` at `offset`, extending the file with zeros if needed.
    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()>;

    /// Truncates or zero-extends the file to `len` bytes.
    fn set_len(&mut self, len: u64) -> io::Result<()>;

    /// Current size in bytes (what later appends go after).
    fn len(&self) -> u64;

    /// Whether the file is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Makes the file's data durable (fdatasync).
    fn sync_data(&mut self) -> io::Result<()>;

    /// Makes the file's data and metadata durable (fsync).
    fn sync_all(&mut self) -> io::Result<()>;
}

/// A file open for positional reads.
pub trait RandomAccessFile: Send + Sync + fmt::Debug {
    /// Reads up to `buf.len()` bytes at `offset`; returns fewer only at the
    /// end of the file.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize>;

    /// Current size of the file in bytes.
    fn size(&self) -> io::Result<u64>;

    /// Reads exactly `buf.len()` bytes at `offset`, or fails with
    /// `UnexpectedEof`.
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let mut done = 0;
        while done < buf.len() {
            let n = self.read_at(offset + done as u64, &mut buf[done..])?;
            if n == 0 {
                return Err(short_read(offset, buf.len(), done));
            }
            done += n;
        }
        Ok(())
    }

    /// Reads exactly `len` bytes at `offset` into a new vector, or fails
    /// with `UnexpectedEof`. [`OsFs`] on Unix reads straight into the
    /// fresh allocation, without zeroing it first.
    fn read_vec(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let mut buf = vec![0; len];
        self.read_exact_at(offset, &mut buf)?;
        Ok(buf)
    }
}

/// The error of a read of `len` bytes at `offset` that met the end of the
/// file after `done` bytes.
pub(crate) fn short_read(offset: u64, len: usize, done: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("read of {len} bytes at offset {offset} ended after {done} bytes"),
    )
}

/// A lock on a file (exclusive from [`FileSystem::lock`], shared from
/// [`FileSystem::lock_shared`]), released on drop.
pub struct FileLock {
    _held: Box<dyn Send + Sync>,
    path: PathBuf,
}

impl FileLock {
    pub(crate) fn new(path: &Path, held: Box<dyn Send + Sync>) -> Self {
        FileLock {
            _held: held,
            path: path.to_path_buf(),
        }
    }

    /// The locked file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl fmt::Debug for FileLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileLock")
            .field("path", &self.path)
            .finish()
    }
}

/// `path` made absolute and canonical as far as it exists: its longest
/// existing ancestor (or itself) through [`FileSystem::canonicalize`], then
/// the components that do not exist yet. Compares output paths with the
/// directories they must stay out of, before the output is created.
///
/// ```
/// use std::path::Path;
/// use lithify_vfs::{FileSystem, MemFs, resolve};
///
/// let fs = MemFs::new();
/// fs.create_dir_all(Path::new("/db/sub")).unwrap();
/// assert_eq!(resolve(&fs, Path::new("/db/./sub/new.html")).unwrap(), Path::new("/db/sub/new.html"));
/// ```
pub fn resolve(fs: &dyn FileSystem, path: &Path) -> io::Result<PathBuf> {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        if existing.as_os_str().is_empty() {
            existing = Path::new(".");
        }
        if fs.exists(existing) {
            break;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("no part of {} exists", path.display()),
                ));
            }
        }
    }
    let mut out = fs.canonicalize(existing)?;
    for name in rest.into_iter().rev() {
        out.push(name);
    }
    Ok(out)
}

/// Whether `inner` is `outer` or lies inside it, both made absolute and
/// canonical as far as they exist ([`resolve`]).
///
/// ```
/// use std::path::Path;
/// use lithify_vfs::{FileSystem, MemFs, is_within};
///
/// let fs = MemFs::new();
/// fs.create_dir_all(Path::new("/db")).unwrap();
/// assert!(is_within(&fs, Path::new("/db/./copy"), Path::new("/db")).unwrap());
/// assert!(!is_within(&fs, Path::new("/db-copy"), Path::new("/db")).unwrap());
/// ```
pub fn is_within(fs: &dyn FileSystem, inner: &Path, outer: &Path) -> io::Result<bool> {
    Ok(resolve(fs, inner)?.starts_with(resolve(fs, outer)?))
}

/// Reads the whole file `path`.
pub fn read_file(fs: &dyn FileSystem, path: &Path) -> io::Result<Vec<u8>> {
    let file = fs.open(path)?;
    let size = file.size()?;
    let len = usize::try_from(size)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "file too large for memory"))?;
    file.read_vec(0, len)
}

/// The directory holding `path` (`.` for a bare file name).
pub fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Creates directory `dir` (and missing parents) so that it survives power
/// loss: create, then fsync its parent, which makes the new entry durable.
pub fn create_dir_durable(fs: &dyn FileSystem, dir: &Path) -> io::Result<()> {
    fs.create_dir_all(dir)?;
    fs.sync_dir(parent_dir(dir))
}

/// Replaces the contents of `path` with `data` so that a crash at any moment
/// leaves either the old or the new contents: write `<path>.tmp`, fsync it,
/// rename it over `path`, fsync the directory. A failure before the rename
/// removes `<path>.tmp` again (a crash may leave it).
pub fn write_file_atomic(fs: &dyn FileSystem, path: &Path, data: &[u8]) -> io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut file = fs.create(&tmp)?;
    let written = file
        .append(data)
        .and_then(|()| file.sync_all())
        .and_then(|()| {
            drop(file);
            fs.rename(&tmp, path)
        });
    if let Err(e) = written {
        let _ = fs.remove_file(&tmp);
        return Err(e);
    }
    fs.sync_dir(parent_dir(path))
}

impl<F: FileSystem + ?Sized> FileSystem for Arc<F> {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        (**self).create(path)
    }
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        (**self).create_new(path)
    }
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        (**self).open_append(path)
    }
    fn open(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        (**self).open(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        (**self).rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        (**self).remove_file(path)
    }
    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        (**self).remove_dir(path)
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        (**self).list_dir(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        (**self).create_dir_all(dir)
    }
    fn exists(&self, path: &Path) -> bool {
        (**self).exists(path)
    }
    fn try_exists(&self, path: &Path) -> io::Result<bool> {
        (**self).try_exists(path)
    }
    fn is_dir(&self, path: &Path) -> bool {
        (**self).is_dir(path)
    }
    fn file_size(&self, path: &Path) -> io::Result<u64> {
        (**self).file_size(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        (**self).sync_dir(dir)
    }
    fn lock(&self, path: &Path) -> io::Result<FileLock> {
        (**self).lock(path)
    }
    fn lock_shared(&self, path: &Path) -> io::Result<FileLock> {
        (**self).lock_shared(path)
    }
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        (**self).canonicalize(path)
    }
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        (**self).hard_link(from, to)
    }
}
