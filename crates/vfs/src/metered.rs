//! [`MeteredFs`]: a file system that measures the disk space of the files
//! it is told to count, now and at its peak.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::{FileLock, FileSystem, RandomAccessFile, WritableFile};

/// Which files a [`MeteredFs`] counts, by path.
type Counted = dyn Fn(&Path) -> bool + Send + Sync;

/// The space of the counted files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpaceUsage {
    /// Bytes of the counted files now.
    pub bytes: u64,
    /// The most they held at once since the file system was wrapped (or
    /// since [`MeteredFs::reset_peak`]).
    pub peak: u64,
}

struct Meter {
    counted: Box<Counted>,
    state: Mutex<MeterState>,
}

#[derive(Default)]
struct MeterState {
    sizes: HashMap<PathBuf, u64>,
    usage: SpaceUsage,
}

impl MeterState {
    /// Sets the size of `path`, a counted file, to `len`.
    fn set(&mut self, path: &Path, len: u64) {
        let old = self.sizes.insert(path.to_path_buf(), len).unwrap_or(0);
        self.count(old, len);
    }

    /// Sets the size of `path` to `len` if it is still counted (its
    /// writer's view: a file removed or renamed away meanwhile is not).
    fn resize(&mut self, path: &Path, len: u64) {
        if let Some(size) = self.sizes.get_mut(path) {
            let old = std::mem::replace(size, len);
            self.count(old, len);
        }
    }

    fn count(&mut self, old: u64, len: u64) {
        self.usage.bytes = self.usage.bytes - old + len;
        self.usage.peak = self.usage.peak.max(self.usage.bytes);
    }

    /// Forgets `path`; returns its size.
    fn forget(&mut self, path: &Path) -> Option<u64> {
        let old = self.sizes.remove(path)?;
        self.usage.bytes -= old;
        Some(old)
    }
}

/// Wraps a file system and measures the bytes of the files `counted`
/// accepts: every byte appended or written to them, released when one is
/// removed, renamed away or truncated. The peak is what a job that
/// writes its outputs before deleting its inputs (a compaction) needs on
/// disk at its worst, live and not-yet-deleted files together. Cloning
/// shares the meter.
///
/// Files that existed before the wrap count from their first write,
/// create or rename; a hard link counts under its first counted name only
/// (the bytes are shared). Files are known by path: a writer keeps
/// counting its file under the name it was created with, so appends after
/// the file was renamed away are not counted (lithify renames no table
/// file while writing it). Everything else passes through unchanged.
///
/// ```
/// use std::path::Path;
/// use lithify_vfs::{FileSystem, MemFs, MeteredFs, SpaceUsage};
///
/// let fs = MeteredFs::new(MemFs::new(), |p: &Path| p.extension().is_some_and(|e| e == "sst"));
/// fs.create_dir_all(Path::new("/db")).unwrap();
/// let mut input = fs.create(Path::new("/db/1.sst")).unwrap();
/// input.append(&[0; 100]).unwrap();
/// let mut output = fs.create(Path::new("/db/2.sst")).unwrap();
/// output.append(&[0; 60]).unwrap();
/// fs.create(Path::new("/db/3.log")).unwrap().append(&[0; 1000]).unwrap(); // not counted
/// fs.remove_file(Path::new("/db/1.sst")).unwrap();
/// assert_eq!(fs.space(), SpaceUsage { bytes: 60, peak: 160 });
/// ```
#[derive(Clone)]
pub struct MeteredFs<F> {
    inner: F,
    meter: Arc<Meter>,
}

impl<F: fmt::Debug> fmt::Debug for MeteredFs<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MeteredFs")
            .field("inner", &self.inner)
            .field("space", &self.meter.state.lock().usage)
            .finish()
    }
}

impl<F: FileSystem> MeteredFs<F> {
    /// Wraps `inner`, counting the files whose path `counted` accepts.
    pub fn new(inner: F, counted: impl Fn(&Path) -> bool + Send + Sync + 'static) -> Self {
        MeteredFs {
            inner,
            meter: Arc::new(Meter {
                counted: Box::new(counted),
                state: Mutex::new(MeterState::default()),
            }),
        }
    }

    /// The wrapped file system.
    pub fn inner(&self) -> &F {
        &self.inner
    }

    /// The counted files' bytes now and at their peak.
    pub fn space(&self) -> SpaceUsage {
        self.meter.state.lock().usage
    }

    /// Starts a new peak from the bytes counted now.
    pub fn reset_peak(&self) {
        let mut st = self.meter.state.lock();
        st.usage.peak = st.usage.bytes;
    }

    fn counts(&self, path: &Path) -> bool {
        (self.meter.counted)(path)
    }

    /// Wraps a writer of `path`, counted at its current length.
    fn metered(&self, path: &Path, file: Box<dyn WritableFile>) -> Box<dyn WritableFile> {
        if !self.counts(path) {
            return file;
        }
        self.meter.state.lock().set(path, file.len());
        Box::new(MeteredFile {
            inner: file,
            path: path.to_path_buf(),
            meter: Arc::clone(&self.meter),
        })
    }
}

impl<F: FileSystem> FileSystem for MeteredFs<F> {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let file = self.inner.create(path)?;
        Ok(self.metered(path, file))
    }

    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let file = self.inner.create_new(path)?;
        Ok(self.metered(path, file))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let file = self.inner.open_append(path)?;
        Ok(self.metered(path, file))
    }

    fn open(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        self.inner.open(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)?;
        let mut st = self.meter.state.lock();
        let moved = st.forget(from);
        st.forget(to);
        if self.counts(to) {
            let len = match moved {
                Some(len) => len,
                None => self.inner.file_size(to).unwrap_or(0),
            };
            st.set(to, len);
        }
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_file(path)?;
        self.meter.state.lock().forget(path);
        Ok(())
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.hard_link(from, to)?;
        // The bytes are shared: counted under the first counted name.
        if self.counts(to) && !self.counts(from) {
            let len = self.inner.file_size(to).unwrap_or(0);
            self.meter.state.lock().set(to, len);
        }
        Ok(())
    }

    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_dir(path)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.inner.list_dir(dir)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }

    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }

    fn try_exists(&self, path: &Path) -> io::Result<bool> {
        self.inner.try_exists(path)
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.inner.is_dir(path)
    }

    fn file_size(&self, path: &Path) -> io::Result<u64> {
        self.inner.file_size(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        self.inner.canonicalize(path)
    }

    fn lock(&self, path: &Path) -> io::Result<FileLock> {
        self.inner.lock(path)
    }

    fn lock_shared(&self, path: &Path) -> io::Result<FileLock> {
        self.inner.lock_shared(path)
    }
}

/// A writer of a counted file: each change of its length is counted.
struct MeteredFile {
    inner: Box<dyn WritableFile>,
    path: PathBuf,
    meter: Arc<Meter>,
}

impl fmt::Debug for MeteredFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MeteredFile")
            .field("path", &self.path)
            .field("len", &self.inner.len())
            .finish()
    }
}

impl MeteredFile {
    /// Counts the file's new length, unless it was removed or renamed
    /// away meanwhile.
    fn recount(&self) {
        self.meter.state.lock().resize(&self.path, self.inner.len());
    }
}

impl WritableFile for MeteredFile {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        let r = self.inner.append(data);
        self.recount();
        r
    }

    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        let r = self.inner.write_at(offset, data);
        self.recount();
        r
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        let r = self.inner.set_len(len);
        self.recount();
        r
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.inner.sync_data()
    }

    fn sync_all(&mut self) -> io::Result<()> {
        self.inner.sync_all()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemFs;

    fn sst(p: &Path) -> bool {
        p.extension().is_some_and(|e| e == "sst")
    }

    #[test]
    fn counts_writes_truncations_renames_and_removes_of_counted_files_only() {
        let fs = MeteredFs::new(MemFs::new(), sst);
        let d = Path::new("/db");
        fs.create_dir_all(d).unwrap();
        let a = d.join("1.sst");
        let mut f = fs.create(&a).unwrap();
        f.append(&[1; 300]).unwrap();
        f.write_at(400, &[2; 100]).unwrap(); // extends to 500
        assert_eq!(
            fs.space(),
            SpaceUsage {
                bytes: 500,
                peak: 500
            }
        );
        f.set_len(200).unwrap();
        assert_eq!(
            fs.space(),
            SpaceUsage {
                bytes: 200,
                peak: 500
            }
        );
        drop(f);
        // Reopened for appends: counted from its length.
        fs.open_append(&a).unwrap().append(&[3; 50]).unwrap();
        assert_eq!(fs.space().bytes, 250);
        // Not counted: another extension, and a temp file renamed in.
        let log = d.join("2.log");
        fs.create(&log).unwrap().append(&[0; 999]).unwrap();
        assert_eq!(fs.space().bytes, 250);
        fs.rename(&log, &d.join("3.sst")).unwrap();
        assert_eq!(fs.space().bytes, 1249);
        // A rename away and one over a counted file.
        fs.rename(&d.join("3.sst"), &d.join("3.old")).unwrap();
        assert_eq!(fs.space().bytes, 250);
        let b = d.join("4.sst");
        fs.create(&b).unwrap().append(&[0; 10]).unwrap();
        fs.rename(&b, &a).unwrap();
        assert_eq!(fs.space().bytes, 10);
        // Truncated by create, then removed.
        fs.create(&a).unwrap();
        assert_eq!(fs.space().bytes, 0);
        fs.remove_file(&a).unwrap();
        assert_eq!(
            fs.space(),
            SpaceUsage {
                bytes: 0,
                peak: 1249
            }
        );
        fs.reset_peak();
        assert_eq!(fs.space().peak, 0);
    }

    #[test]
    fn a_writer_of_a_removed_file_stops_counting() {
        let fs = MeteredFs::new(MemFs::new(), sst);
        fs.create_dir_all(Path::new("/d")).unwrap();
        let p = Path::new("/d/9.sst");
        let mut f = fs.create(p).unwrap();
        f.append(&[0; 10]).unwrap();
        fs.remove_file(p).unwrap();
        let _ = f.append(&[0; 10]);
        assert_eq!(fs.space(), SpaceUsage { bytes: 0, peak: 10 });
        // A failed operation changes nothing.
        assert!(fs.remove_file(p).is_err());
        assert!(fs.rename(p, Path::new("/d/10.sst")).is_err());
        assert_eq!(fs.space().bytes, 0);
    }
}
