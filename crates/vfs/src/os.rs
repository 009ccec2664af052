//! The real file system.
//!
//! This is the one module of lithify allowed to use `std::fs`.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::{FileLock, FileSystem, RandomAccessFile, WritableFile};

/// The operating system's file system.
///
/// Writes go straight to the OS (no user-space buffer) at explicit offsets
/// (`pwrite`/`pread` on Unix, `seek_write`/`seek_read` on Windows).
/// `sync_data` is `fdatasync`, `sync_all` is `fsync` (`FlushFileBuffers` on
/// Windows). On Unix a directory is synced by opening it and calling `fsync`
/// on it; Windows has no directory sync, and NTFS journals the metadata of a
/// create or rename itself, so there [`FileSystem::sync_dir`] does nothing
/// (as RocksDB's and Pebble's Windows ports do). Locks are exclusive and
/// shared locks through `File::try_lock` and `File::try_lock_shared`
/// (`flock` on Unix, `LockFileEx` on Windows), so a second process gets a
/// clear error.
///
/// ```
/// use lithify_vfs::{FileSystem, OsFs, read_file};
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("hello.txt");
/// let fs = OsFs;
/// let mut f = fs.create(&path).unwrap();
/// f.append(b"hello").unwrap();
/// f.sync_all().unwrap();
/// assert_eq!(read_file(&fs, &path).unwrap(), b"hello");
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct OsFs;

#[derive(Debug)]
struct OsWritable {
    file: File,
    len: u64,
}

impl WritableFile for OsWritable {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        platform::write_all_at(&self.file, data, self.len)?;
        self.len += data.len() as u64;
        Ok(())
    }

    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        platform::write_all_at(&self.file, data, offset)?;
        self.len = self.len.max(offset + data.len() as u64);
        Ok(())
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.file.set_len(len)?;
        self.len = len;
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn sync_all(&mut self) -> io::Result<()> {
        self.file.sync_all()
    }
}

#[derive(Debug)]
struct OsReadable {
    file: File,
}

impl RandomAccessFile for OsReadable {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            match platform::read_at(&self.file, &mut buf[done..], position(offset, done)?) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }

    fn size(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn read_vec(&self, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        platform::read_vec(&self.file, offset, len)
    }
}

/// `offset + done`, or an error for a position past the largest one.
fn position(offset: u64, done: usize) -> io::Result<u64> {
    offset.checked_add(done as u64).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("offset {offset} + {done} is past the largest file offset"),
        )
    })
}

struct OsLock {
    file: File,
}

impl Drop for OsLock {
    fn drop(&mut self) {
        // Closing the file releases the lock too; unlocking first makes the
        // release independent of when the descriptor is closed.
        let _ = self.file.unlock();
    }
}

fn writable(file: File) -> io::Result<Box<dyn WritableFile>> {
    let len = file.metadata()?.len();
    Ok(Box::new(OsWritable { file, len }))
}

impl FileSystem for OsFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        writable(file)
    }

    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new().write(true).create_new(true).open(path)?;
        writable(file)
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new().write(true).open(path)?;
        writable(file)
    }

    fn open(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        let file = File::open(path)?;
        if file.metadata()?.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                format!("{} is a directory", path.display()),
            ));
        }
        Ok(Arc::new(OsReadable { file }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(path)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::hard_link(from, to)
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        fs::remove_dir(path)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir)? {
            let name = entry?.file_name();
            names.push(name.to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(dir)
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn try_exists(&self, path: &Path) -> io::Result<bool> {
        path.try_exists()
    }

    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }

    fn file_size(&self, path: &Path) -> io::Result<u64> {
        Ok(fs::metadata(path)?.len())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        platform::sync_dir(dir)
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        fs::canonicalize(path)
    }

    fn lock(&self, path: &Path) -> io::Result<FileLock> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        match file.try_lock() {
            Ok(()) => Ok(FileLock::new(path, Box::new(OsLock { file }))),
            Err(fs::TryLockError::WouldBlock) => Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!(
                    "{} is locked by another process (or another handle in this one)",
                    path.display()
                ),
            )),
            Err(fs::TryLockError::Error(e)) => Err(e),
        }
    }

    fn lock_shared(&self, path: &Path) -> io::Result<FileLock> {
        // Read-only and never created: a reader changes nothing on disk.
        let file = File::open(path)?;
        match file.try_lock_shared() {
            Ok(()) => Ok(FileLock::new(path, Box::new(OsLock { file }))),
            Err(fs::TryLockError::WouldBlock) => Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!(
                    "{} is locked exclusively by another process (or another handle in this one)",
                    path.display()
                ),
            )),
            Err(fs::TryLockError::Error(e)) => Err(e),
        }
    }
}

/// Positional I/O and directory sync on Unix: `pread`/`pwrite`, and `fsync`
/// on an open directory.
#[cfg(unix)]
mod platform {
    use std::fs::File;
    use std::io;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileExt;
    use std::path::Path;

    use crate::short_read;

    pub(super) fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        file.read_at(buf, offset)
    }

    pub(super) fn write_all_at(file: &File, data: &[u8], offset: u64) -> io::Result<()> {
        file.write_all_at(data, offset)
    }

    /// `pread` into the vector's spare capacity: a block read from a table
    /// is about to be overwritten by the kernel, so zeroing it first (the
    /// default) only costs time on every block-cache miss.
    pub(super) fn read_vec(file: &File, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let mut buf = Vec::<u8>::with_capacity(len);
        let fd = file.as_raw_fd();
        let mut done = 0;
        while done < len {
            let at = offset
                .checked_add(done as u64)
                .and_then(|at| libc::off_t::try_from(at).ok())
                .ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("read at offset {offset} past the largest file offset"),
                    )
                })?;
            // SAFETY: the destination is the vector's spare capacity
            // `done..len`, writable and owned by `buf`; pread writes at most
            // `len - done` bytes there and reads nothing from it.
            let n = unsafe { libc::pread(fd, buf.as_mut_ptr().add(done).cast(), len - done, at) };
            match n {
                0 => return Err(short_read(offset, len, done)),
                n if n > 0 => done += n.unsigned_abs(),
                _ => {
                    let e = io::Error::last_os_error();
                    if e.kind() != io::ErrorKind::Interrupted {
                        return Err(e);
                    }
                }
            }
        }
        // SAFETY: the loop initialised all `len` bytes (it only ends with
        // `done == len`), and `len` is the capacity.
        unsafe { buf.set_len(len) };
        Ok(buf)
    }

    pub(super) fn sync_dir(dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }
}

/// Positional I/O on Windows: `seek_read`/`seek_write` (they move the file
/// cursor, which lithify never uses). Windows cannot sync a directory: a
/// directory opens only with backup semantics, and `FlushFileBuffers` on it
/// is refused. NTFS journals the metadata of creates and renames, so
/// `sync_dir` only checks that the directory exists, as RocksDB's
/// `WinDirectory::Fsync` and Pebble's Windows `Sync` do nothing.
#[cfg(windows)]
mod platform {
    use std::fs::File;
    use std::io;
    use std::os::windows::fs::FileExt;
    use std::path::Path;

    use super::position;
    use crate::short_read;

    pub(super) fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        file.seek_read(buf, offset)
    }

    pub(super) fn write_all_at(file: &File, mut data: &[u8], mut offset: u64) -> io::Result<()> {
        while !data.is_empty() {
            match file.seek_write(data, offset) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        format!("wrote nothing at offset {offset}"),
                    ));
                }
                Ok(n) => {
                    data = &data[n..];
                    offset = position(offset, n)?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    pub(super) fn read_vec(file: &File, offset: u64, len: usize) -> io::Result<Vec<u8>> {
        let mut buf = vec![0; len];
        let mut done = 0;
        while done < len {
            match file.seek_read(&mut buf[done..], position(offset, done)?) {
                Ok(0) => return Err(short_read(offset, len, done)),
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(buf)
    }

    pub(super) fn sync_dir(dir: &Path) -> io::Result<()> {
        let meta = std::fs::metadata(dir)?;
        if meta.is_dir() {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{} is not a directory", dir.display()),
            ))
        }
    }
}

#[cfg(not(any(unix, windows)))]
compile_error!("lithify-vfs's OsFs supports Unix (Linux, macOS, the BSDs) and Windows");
