//! The offset index (`.index`) and time index (`.timeindex`) of a segment.
//!
//! Both are arrays of fixed-size big-endian entries with no header and no
//! checksum: Kafka rebuilds them from the `.log` whenever they look wrong,
//! and so do we. While a segment is active its index files are
//! preallocated to `segment.index.bytes` (rounded down to whole entries) of
//! zeros; when it rolls they are trimmed to their entries. An index is held
//! in memory as well (a lookup is a binary search, no I/O).
//!
//! * [`OffsetIndex`]: 8-byte entries `int32 relativeOffset, int32 position`.
//! * [`TimeIndex`]: 12-byte entries `int64 timestamp, int32 relativeOffset`.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lithify_vfs::{FileSystem, WritableFile};
use snafu::ResultExt as _;

use crate::error::{IoSnafu, Result};

mod offset;
mod time;

pub use offset::{OffsetIndex, OffsetPosition};
pub use time::{TimeIndex, TimestampOffset};

/// Reads an index file, `None` if it does not exist.
pub(crate) fn read_index_file(fs: &dyn FileSystem, path: &Path) -> Result<Option<Vec<u8>>> {
    match lithify_vfs::read_file(fs, path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).context(IoSnafu {
            action: "read",
            path,
        }),
    }
}

/// The file behind an index: its path and, while writable, its writer.
#[derive(Debug)]
pub(crate) struct IndexFile {
    fs: Arc<dyn FileSystem>,
    path: PathBuf,
    writer: Option<Box<dyn WritableFile>>,
}

impl IndexFile {
    pub(crate) fn new(fs: Arc<dyn FileSystem>, path: PathBuf) -> Self {
        IndexFile {
            fs,
            path,
            writer: None,
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces the file with `bytes`, zero-extended to `preallocate` bytes
    /// when given (the file then stays open for entry writes).
    pub(crate) fn rewrite(&mut self, bytes: &[u8], preallocate: Option<u64>) -> Result<()> {
        let path = self.path.clone();
        let ctx = |action| IoSnafu {
            action,
            path: path.clone(),
        };
        self.writer = None;
        let mut f = self.fs.create(&path).context(ctx("create"))?;
        f.append(bytes).context(ctx("write"))?;
        if let Some(len) = preallocate {
            f.set_len(len.max(bytes.len() as u64))
                .context(ctx("preallocate"))?;
            self.writer = Some(f);
        } else {
            f.sync_data().context(ctx("sync"))?;
        }
        Ok(())
    }

    /// Writes an entry at `pos` if the file is open for writing.
    pub(crate) fn write_at(&mut self, pos: u64, bytes: &[u8]) -> Result<()> {
        if let Some(w) = &mut self.writer {
            w.write_at(pos, bytes).context(IoSnafu {
                action: "write",
                path: &self.path,
            })?;
        }
        Ok(())
    }

    /// Trims the file to `len` bytes, syncs it and closes the writer.
    pub(crate) fn trim(&mut self, len: u64) -> Result<()> {
        if let Some(mut w) = self.writer.take() {
            let ctx = |action| IoSnafu {
                action,
                path: self.path.clone(),
            };
            w.set_len(len).context(ctx("trim"))?;
            w.sync_data().context(ctx("sync"))?;
        }
        Ok(())
    }

    pub(crate) fn sync(&mut self) -> Result<()> {
        if let Some(w) = &mut self.writer {
            w.sync_data().context(IoSnafu {
                action: "sync",
                path: &self.path,
            })?;
        }
        Ok(())
    }

    /// Renames the file (if it exists) to `to`.
    pub(crate) fn rename(&mut self, to: PathBuf) -> Result<()> {
        if self.fs.exists(&self.path) {
            self.fs.rename(&self.path, &to).context(IoSnafu {
                action: "rename",
                path: &self.path,
            })?;
        }
        self.path = to;
        Ok(())
    }

    pub(crate) fn delete(&mut self) -> Result<()> {
        self.writer = None;
        match self.fs.remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e).context(IoSnafu {
                action: "remove",
                path: &self.path,
            }),
        }
    }
}
