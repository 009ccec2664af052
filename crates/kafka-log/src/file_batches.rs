//! Reading the batches of a `.log` file in order (Kafka's
//! `FileLogInputStream`).
//!
//! The file is read in chunks; each [`RecordBatch`] is a zero-copy slice of
//! a chunk. Iteration ends quietly where fewer bytes remain than a batch
//! prefix, or than the batch the prefix announces (a torn tail), and with a
//! corruption error on a batch whose header is impossible (length below 14,
//! a bad magic). [`FileBatches::position`] is then the end of the last
//! batch returned, which is what recovery truncates to, and
//! [`FileBatches::check_complete`] says whether the region ended with a
//! whole batch.
//!
//! Two checks of what the CRC does not cover go with it:
//! [`OffsetOrder`] (a batch's base offset follows the previous batch's and
//! stays below the next segment's base), and [`FileBatchHeaders`], a scan
//! of the batch headers alone (what the log cleaner reads to find
//! producers' last batches and delete horizons).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use lithify_vfs::RandomAccessFile;
use snafu::ResultExt as _;

use crate::error::{CorruptSnafu, IoSnafu, Result};
use crate::record::layout::{
    ATTRIBUTES_OFFSET, BASE_TIMESTAMP_OFFSET, HEADER_SIZE_UP_TO_MAGIC, LAST_OFFSET_DELTA_OFFSET,
    MAGIC_V2, MAX_TIMESTAMP_OFFSET, MIN_LENGTH, PRODUCER_ID_OFFSET, RECORD_BATCH_OVERHEAD,
};
use crate::record::{BatchOrigin, BatchPrefix, DELETE_HORIZON_FLAG_MASK, RecordBatch};

/// Bytes read from the file at a time (more when a batch is larger).
const CHUNK: usize = 256 * 1024;

/// Earlier chunks kept for their memory: those batches still use, and
/// free ones (the log cleaner's read-ahead queue keeps two or three
/// chunks' batches alive).
const SPARE_CHUNKS: usize = 6;

/// An iterator over the batches of a file region.
#[derive(Debug)]
pub struct FileBatches {
    file: Arc<dyn RandomAccessFile>,
    path: Arc<PathBuf>,
    position: u64,
    end: u64,
    chunk: Bytes,
    chunk_start: u64,
    /// Earlier chunks, oldest first: their memory is read into again
    /// once no batch uses it.
    spare: Vec<Bytes>,
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
            spare: Vec::new(),
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

    /// Whether iteration ended at the end of the region: an error naming
    /// the file and the byte offset of the bytes left when they are not a
    /// complete batch (a torn tail, or a segment cut short).
    pub fn check_complete(&self) -> Result<()> {
        if self.position < self.end {
            return CorruptSnafu {
                path: self.path.as_path(),
                offset: self.position,
                message: format!(
                    "the last {} bytes of the segment are not a complete batch",
                    self.end - self.position
                ),
            }
            .fail();
        }
        Ok(())
    }

    /// `len` bytes at the current position, from the chunk or the file.
    fn bytes_at(&mut self, len: usize) -> Result<Bytes> {
        let chunk_end = self.chunk_start + self.chunk.len() as u64;
        if self.position >= self.chunk_start && self.position + len as u64 <= chunk_end {
            let from = (self.position - self.chunk_start) as usize;
            return Ok(self.chunk.slice(from..from + len));
        }
        let want = (len.max(CHUNK) as u64).min(self.end - self.position) as usize;
        // Read into the memory of an earlier chunk none of whose batches
        // is alive any more (a reader that drops each batch before asking
        // for the next, as the log cleaner does, or one a few batches
        // behind, as the cleaner's read-ahead queue is): a fresh
        // allocation is fresh pages, and the kernel's copy into them
        // faults on every 4 KiB.
        let buf = match self.reclaim_chunk(want) {
            Some(mut b) => {
                // The read overwrites all `want` bytes: zero only what the
                // buffer did not hold before.
                if b.len() >= want {
                    b.truncate(want);
                } else {
                    b.resize(want, 0);
                }
                self.file
                    .read_exact_at(self.position, &mut b)
                    .context(IoSnafu {
                        action: "read",
                        path: self.path.as_path(),
                    })?;
                b.freeze()
            }
            None => Bytes::from(self.file.read_vec(self.position, want).context(IoSnafu {
                action: "read",
                path: self.path.as_path(),
            })?),
        };
        self.chunk = buf;
        self.chunk_start = self.position;
        Ok(self.chunk.slice(..len))
    }

    /// Memory of at least `want` bytes from the current chunk or a spare
    /// one that no batch uses any more. The other chunks stay spares,
    /// free or still in use (the [`SPARE_CHUNKS`] newest): dropping a free
    /// one would give its pages back to the system, which costs every
    /// other core of the process a TLB flush, and the next chunk would
    /// fault its pages in again.
    fn reclaim_chunk(&mut self, want: usize) -> Option<BytesMut> {
        let current = std::mem::take(&mut self.chunk);
        if !current.is_empty() {
            self.spare.push(current);
        }
        let mut found = None;
        let mut kept = Vec::with_capacity(self.spare.len());
        for chunk in self.spare.drain(..) {
            match chunk.try_into_mut() {
                Ok(b) if found.is_none() && b.capacity() >= want => found = Some(b),
                Ok(b) => kept.push(b.freeze()),
                Err(chunk) => kept.push(chunk),
            }
        }
        let excess = kept.len().saturating_sub(SPARE_CHUNKS);
        kept.drain(..excess);
        self.spare = kept;
        found
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        if self.position + HEADER_SIZE_UP_TO_MAGIC as u64 > self.end {
            return Ok(None);
        }
        // The prefix is copied out, so that no slice of the chunk is alive
        // when reading the batch needs the next chunk.
        let Some(prefix) = BatchPrefix::parse(&self.bytes_at(HEADER_SIZE_UP_TO_MAGIC)?) else {
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

/// The order of the batches of one segment, which their CRCs do not
/// cover: each base offset at or after the previous batch's next offset,
/// each last offset below the next segment's base. A reader that finds
/// otherwise has met damage, not data.
#[derive(Debug, Clone, Copy)]
pub struct OffsetOrder {
    prev_next: i64,
    limit: i64,
}

impl OffsetOrder {
    /// The order of a segment at `base_offset` whose batches all end below
    /// `next_segment_base` (`i64::MAX` for the last segment).
    pub fn new(base_offset: i64, next_segment_base: i64) -> Self {
        OffsetOrder {
            prev_next: base_offset,
            limit: next_segment_base,
        }
    }

    /// Checks that `batch` follows the batches seen so far, and takes it
    /// as the last one; a corruption error names its file and byte offset.
    pub fn check(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.base_offset() < self.prev_next || batch.last_offset() >= self.limit {
            return CorruptSnafu {
                path: batch.path().map(Path::to_path_buf).unwrap_or_default(),
                offset: batch.position(),
                message: format!(
                    "batch offsets {}..={} do not follow the previous batch's next offset {} within the segment (next segment at {})",
                    batch.base_offset(),
                    batch.last_offset(),
                    self.prev_next,
                    self.limit
                ),
            }
            .fail();
        }
        self.prev_next = batch.next_offset();
        Ok(())
    }
}

/// The fields of a batch header that scans without the records need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    /// Byte position in the segment.
    pub position: u64,
    /// Bytes of the batch.
    pub size: u64,
    /// Last offset.
    pub last_offset: i64,
    /// Attributes.
    pub attributes: i16,
    /// Base timestamp (the delete horizon when bit 6 is set).
    pub base_timestamp: i64,
    /// Max timestamp.
    pub max_timestamp: i64,
    /// Producer id (-1: none).
    pub producer_id: i64,
}

impl BatchHeader {
    /// The delete horizon, when the batch has one.
    pub fn delete_horizon_ms(&self) -> Option<i64> {
        (self.attributes & DELETE_HORIZON_FLAG_MASK != 0).then_some(self.base_timestamp)
    }
}

/// Bytes read at a time by [`FileBatchHeaders`].
const HEADER_CHUNK: usize = 64 << 10;

/// The headers of a `.log` file's batches, without reading their
/// records: the file is read in 64 KiB chunks and a batch larger than what
/// remains of the chunk is skipped over, not read. Unlike
/// [`FileBatches`], a region that does not end with a whole batch ends
/// the iteration with an error.
#[derive(Debug)]
pub struct FileBatchHeaders {
    file: Arc<dyn RandomAccessFile>,
    path: Arc<PathBuf>,
    size: u64,
    position: u64,
    chunk: Vec<u8>,
    chunk_start: u64,
    done: bool,
}

impl FileBatchHeaders {
    /// Headers of every batch of `file`'s first `size` bytes.
    pub fn new(file: Arc<dyn RandomAccessFile>, path: Arc<PathBuf>, size: u64) -> Self {
        FileBatchHeaders {
            file,
            path,
            size,
            position: 0,
            chunk: Vec::new(),
            chunk_start: 0,
            done: false,
        }
    }

    fn header_bytes(&mut self) -> Result<Option<[u8; RECORD_BATCH_OVERHEAD]>> {
        let need = RECORD_BATCH_OVERHEAD as u64;
        if self.position + need > self.size {
            return Ok(None);
        }
        let chunk_end = self.chunk_start + self.chunk.len() as u64;
        if self.position < self.chunk_start || self.position + need > chunk_end {
            let len = (HEADER_CHUNK as u64).min(self.size - self.position) as usize;
            self.chunk = self.file.read_vec(self.position, len).context(IoSnafu {
                action: "read",
                path: self.path.as_path(),
            })?;
            self.chunk_start = self.position;
        }
        let from = (self.position - self.chunk_start) as usize;
        let mut out = [0u8; RECORD_BATCH_OVERHEAD];
        out.copy_from_slice(&self.chunk[from..from + RECORD_BATCH_OVERHEAD]);
        Ok(Some(out))
    }

    fn next_header(&mut self) -> Result<Option<BatchHeader>> {
        let Some(h) = self.header_bytes()? else {
            if self.position != self.size {
                return self.corrupt("the segment ends inside a batch header");
            }
            return Ok(None);
        };
        let prefix = BatchPrefix::parse(&h).filter(|p| p.magic == MAGIC_V2);
        let size = prefix.and_then(|p| p.batch_size());
        let Some(size) = size.filter(|s| *s >= RECORD_BATCH_OVERHEAD as u64) else {
            return self.corrupt("a batch header has an invalid length or magic");
        };
        if self.position + size > self.size {
            return self.corrupt("the last batch is cut short");
        }
        let be64 = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&h[at..at + 8]);
            i64::from_be_bytes(b)
        };
        let base_offset = be64(0);
        let last_delta = i32::from_be_bytes([
            h[LAST_OFFSET_DELTA_OFFSET],
            h[LAST_OFFSET_DELTA_OFFSET + 1],
            h[LAST_OFFSET_DELTA_OFFSET + 2],
            h[LAST_OFFSET_DELTA_OFFSET + 3],
        ]);
        let header = BatchHeader {
            position: self.position,
            size,
            last_offset: base_offset.wrapping_add(i64::from(last_delta)),
            attributes: i16::from_be_bytes([h[ATTRIBUTES_OFFSET], h[ATTRIBUTES_OFFSET + 1]]),
            base_timestamp: be64(BASE_TIMESTAMP_OFFSET),
            max_timestamp: be64(MAX_TIMESTAMP_OFFSET),
            producer_id: be64(PRODUCER_ID_OFFSET),
        };
        self.position += size;
        Ok(Some(header))
    }

    fn corrupt<T>(&self, message: &str) -> Result<T> {
        CorruptSnafu {
            path: self.path.as_path(),
            offset: self.position,
            message: message.to_string(),
        }
        .fail()
    }
}

impl Iterator for FileBatchHeaders {
    type Item = Result<BatchHeader>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let step = self.next_header();
        lithify_base::iter::fuse_step(&mut self.done, step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::BatchBuilder;
    use lithify_vfs::{FileSystem as _, MemFs};

    /// Batches of uneven sizes over several chunks, so that batches
    /// straddle chunk ends.
    fn file_of_batches() -> (Arc<dyn RandomAccessFile>, Vec<Bytes>) {
        let fs = MemFs::new();
        let path = Path::new("/f.log");
        let mut w = fs.create(path).expect("create");
        let mut batches = Vec::new();
        let mut offset = 0i64;
        for b in 0..400usize {
            let mut builder = BatchBuilder::new(offset);
            for _ in 0..(b % 7 + 1) {
                let value = vec![b as u8; 300 + (b * 37) % 900];
                builder
                    .append(offset, 1_000, Some(b"k"), Some(&value), &[])
                    .expect("append");
                offset += 1;
            }
            let bytes = builder.build();
            w.append(&bytes).expect("append");
            batches.push(bytes);
        }
        w.sync_data().expect("sync");
        let total: usize = batches.iter().map(Bytes::len).sum();
        assert!(total > 3 * CHUNK, "{total} bytes");
        (fs.open(path).expect("open"), batches)
    }

    /// A reader that drops each batch (the chunk's memory is reused) and
    /// one that keeps them all (it cannot be) read the same batches.
    #[test]
    fn reused_and_fresh_chunks_read_the_same_batches() {
        let (file, written) = file_of_batches();
        let size = file.size().expect("size");
        let path = Arc::new(PathBuf::from("/f.log"));
        let mut one_by_one = FileBatches::new(file.clone(), path.clone(), 0, size);
        let mut n = 0;
        for batch in &mut one_by_one {
            assert_eq!(batch.expect("batch").raw(), &written[n], "batch {n}");
            n += 1;
        }
        one_by_one.check_complete().expect("complete");
        assert_eq!(n, written.len());

        let kept: Vec<RecordBatch> = FileBatches::new(file, path, 0, size)
            .collect::<Result<_>>()
            .expect("batches");
        let kept: Vec<&Bytes> = kept.iter().map(RecordBatch::raw).collect();
        assert_eq!(kept, written.iter().collect::<Vec<_>>());
    }
}
