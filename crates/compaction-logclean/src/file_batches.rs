//! Reading the batches of a `.log` file in order (Kafka's
//! `FileLogInputStream`).
//!
//! The file is read in chunks; each [`RecordBatch`] is a zero-copy slice of
//! a chunk. Iteration ends quietly where fewer bytes remain than a batch
//! prefix, or than the batch the prefix announces (a torn tail), and with a
//! corruption error on a batch whose header is impossible (length below 14,
//! a bad magic). [`FileBatches::position`] is then the end of the last
//! batch returned, which is what recovery truncates to.

use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use lithify_vfs::RandomAccessFile;
use snafu::ResultExt as _;

use crate::error::{CorruptSnafu, IoSnafu, Result};
use crate::record::RecordBatch;
use crate::record::batch::{BatchOrigin, BatchPrefix, HEADER_SIZE_UP_TO_MAGIC, MIN_LENGTH};

/// Bytes read from the file at a time (more when a batch is larger).
const CHUNK: usize = 256 * 1024;

/// An iterator over the batches of a file region.
#[derive(Debug)]
pub struct FileBatches {
    file: Arc<dyn RandomAccessFile>,
    path: Arc<PathBuf>,
    position: u64,
    end: u64,
    chunk: Bytes,
    chunk_start: u64,
    done: bool,
}

impl FileBatches {
    /// Batches of `file` from byte `start` up to byte `end`.
    pub fn new(file: Arc<dyn RandomAccessFile>, path: Arc<PathBuf>, start: u64, end: u64) -> Self {
        FileBatches {
            file,
            path,
            position: start,
            end,
            chunk: Bytes::new(),
            chunk_start: start,
            done: false,
        }
    }

    /// Position after the last batch returned.
    pub fn position(&self) -> u64 {
        self.position
    }

    /// The end of the region read.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// `len` bytes at the current position, from the chunk or the file.
    fn bytes_at(&mut self, len: usize) -> Result<Bytes> {
        let chunk_end = self.chunk_start + self.chunk.len() as u64;
        if self.position >= self.chunk_start && self.position + len as u64 <= chunk_end {
            let from = (self.position - self.chunk_start) as usize;
            return Ok(self.chunk.slice(from..from + len));
        }
        let want = (len.max(CHUNK) as u64).min(self.end - self.position) as usize;
        let buf = self.file.read_vec(self.position, want).context(IoSnafu {
            action: "read",
            path: self.path.as_path(),
        })?;
        self.chunk = Bytes::from(buf);
        self.chunk_start = self.position;
        Ok(self.chunk.slice(..len))
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        if self.position + HEADER_SIZE_UP_TO_MAGIC as u64 > self.end {
            return Ok(None);
        }
        let prefix_bytes = self.bytes_at(HEADER_SIZE_UP_TO_MAGIC)?;
        let Some(prefix) = BatchPrefix::parse(&prefix_bytes) else {
            return Ok(None);
        };
        let Some(size) = prefix.batch_size() else {
            return CorruptSnafu {
                path: self.path.as_path(),
                offset: self.position + 8,
                message: format!(
                    "batch length {} is less than the minimum {MIN_LENGTH}",
                    prefix.length
                ),
            }
            .fail();
        };
        if self.position + size > self.end {
            return Ok(None);
        }
        let raw = self.bytes_at(size as usize)?;
        let origin = BatchOrigin {
            path: self.path.clone(),
            position: self.position,
        };
        let batch = RecordBatch::parse_at(raw, Some(origin))?;
        self.position += size;
        Ok(Some(batch))
    }
}

impl Iterator for FileBatches {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let step = self.next_batch();
        lithify_base::iter::fuse_step(&mut self.done, step)
    }
}
