//! Writing a table.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use lithify_base::{BytewiseComparator, Comparator, Id, ValueKind};
use lithify_vfs::WritableFile;
use snafu::{IntoError as _, ResultExt as _};

use crate::block::BlockBuilder;
use crate::compression::{BlockCompressor, Compression};
use crate::error::{EntryTooLargeSnafu, IoSnafu, OutOfOrderSnafu, PoisonedSnafu, Result};
use crate::filter::{BloomBuilder, filter_hash};
use crate::format::{
    BLOCK_TRAILER_LEN, BLOCK_TYPE_RAW, BLOCK_TYPE_ZSTD, BlockHandle, FORMAT_VERSION, Footer,
    META_FILTER, META_PROPERTIES, META_RANGE_DEL, append_block_trailer,
};
use crate::options::SstOptions;
use crate::properties::Properties;
use crate::schema::KeySchema;

/// Largest key + value of one entry (2 GiB): with blocks cut at 1 GiB at
/// most, a block stays below the 4 GiB its u32 offsets can address.
pub const MAX_ENTRY_LEN: usize = 1 << 31;

/// Output is handed to the file in chunks of about this size.
const WRITE_CHUNK: usize = 256 << 10;

/// What [`SstBuilder::finish`] produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltSst {
    /// The recorded properties.
    pub properties: Properties,
    /// Size of the finished file in bytes.
    pub file_size: u64,
    /// The xxh3-64 of the whole file, computed as it was written (what the
    /// MANIFEST records as the file's checksum).
    pub file_checksum: u64,
}

/// Range tombstones, buffered until `finish` sorts and writes them.
#[derive(Debug, Default)]
struct RangeDelBuffer {
    bytes: Vec<u8>,
    /// (offset of start in `bytes`, start length, end length); end follows
    /// start.
    entries: Vec<(usize, usize, usize)>,
}

impl RangeDelBuffer {
    fn push(&mut self, start: &[u8], end: &[u8]) {
        self.entries
            .push((self.bytes.len(), start.len(), end.len()));
        self.bytes.extend_from_slice(start);
        self.bytes.extend_from_slice(end);
    }

    fn start(&self, e: (usize, usize, usize)) -> &[u8] {
        &self.bytes[e.0..e.0 + e.1]
    }

    fn end(&self, e: (usize, usize, usize)) -> &[u8] {
        &self.bytes[e.0 + e.1..e.0 + e.1 + e.2]
    }
}

/// Builds a table into a [`WritableFile`], entry by entry, in key order.
///
/// Buffers are reused across entries and blocks: adding an entry copies its
/// bytes into the current block and allocates nothing once the buffers have
/// grown. [`finish`](Self::finish) writes the meta blocks and the footer and
/// fsyncs the file; syncing the directory that names the file is the
/// caller's job. An I/O error poisons the builder: every later call fails.
///
/// ```
/// use std::path::Path;
/// use lithify_sstable::{SstBuilder, SstOptions};
/// use lithify_vfs::{FileSystem, MemFs};
///
/// let fs = MemFs::new();
/// let file = fs.create(Path::new("/t.sst")).unwrap();
/// let mut b = SstBuilder::new(file, "/t.sst", &SstOptions::default()).unwrap();
/// b.add(b"apple", b"red").unwrap();
/// b.add(b"banana", b"yellow").unwrap();
/// assert!(b.add(b"aardvark", b"").is_err()); // out of order
/// let built = b.finish().unwrap();
/// assert_eq!(built.properties.num_entries, 2);
/// assert_eq!(built.file_size, fs.file_size(Path::new("/t.sst")).unwrap());
/// ```
pub struct SstBuilder<C: Comparator = BytewiseComparator> {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    comparator: C,
    schema: Arc<dyn KeySchema>,
    block_size: usize,
    compression: Compression,
    compressor: Option<BlockCompressor>,
    /// Encoded output not yet handed to the file.
    out: Vec<u8>,
    /// Bytes already appended to the file.
    written: u64,
    data_block: BlockBuilder,
    index_block: BlockBuilder,
    /// Handle of the last data block, whose index entry waits for the next
    /// key (to pick a short separator).
    pending_index: Option<BlockHandle>,
    last_key: Vec<u8>,
    separator: Vec<u8>,
    handle_buf: Vec<u8>,
    filter: Option<BloomBuilder>,
    range_dels: RangeDelBuffer,
    props: Properties,
    min_seqno: u64,
    max_seqno: u64,
    poisoned: Option<String>,
    /// The xxh3-64 of every byte handed to the file.
    checksum: crate::FileChecksum,
}

impl<C: Comparator> std::fmt::Debug for SstBuilder<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SstBuilder")
            .field("path", &self.path)
            .field("entries", &self.props.num_entries)
            .field("estimated_size", &self.estimated_size())
            .finish_non_exhaustive()
    }
}

impl<C: Comparator + Clone> SstBuilder<C> {
    /// A builder writing to `file` (empty, freshly created); `path` names it
    /// in errors.
    pub fn new(
        file: Box<dyn WritableFile>,
        path: impl Into<PathBuf>,
        options: &SstOptions<C>,
    ) -> Result<Self> {
        options.validate()?;
        let path = path.into();
        let compressor = match options.compression {
            Compression::None => None,
            Compression::Zstd { level } => Some(BlockCompressor::new(level).context(IoSnafu {
                path: path.clone(),
                offset: 0u64,
            })?),
        };
        let millibits = options.bloom_millibits();
        let creation_time = options.creation_time.unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        });
        let props = Properties {
            format_version: FORMAT_VERSION,
            comparator: options.comparator.name().to_string(),
            key_schema: options.key_schema.name().to_string(),
            compression: options.compression.name().to_string(),
            creation_time,
            ..Properties::default()
        };
        Ok(SstBuilder {
            written: file.len(),
            file,
            path,
            comparator: options.comparator.clone(),
            schema: options.key_schema.clone(),
            block_size: options.block_size,
            compression: options.compression,
            compressor,
            out: Vec::with_capacity(WRITE_CHUNK + options.block_size * 2),
            data_block: BlockBuilder::new(options.block_restart_interval),
            index_block: BlockBuilder::new(1),
            pending_index: None,
            last_key: Vec::new(),
            separator: Vec::new(),
            handle_buf: Vec::new(),
            filter: (millibits > 0).then(|| BloomBuilder::new(millibits)),
            range_dels: RangeDelBuffer::default(),
            props,
            min_seqno: u64::MAX,
            max_seqno: 0,
            poisoned: None,
            checksum: crate::FileChecksum::new(),
        })
    }
}

impl<C: Comparator> SstBuilder<C> {
    /// Records who writes the table: the database's identity, the open's
    /// (session) identity and the file number it is written under (see
    /// [`Properties::unique_id`]).
    pub fn set_identity(&mut self, db_id: Id, session_id: Id, file_number: u64) {
        self.props.db_id = Some(db_id);
        self.props.db_session_id = Some(session_id);
        self.props.orig_file_number = file_number;
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The configured compression.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// Point entries added so far.
    pub fn num_entries(&self) -> u64 {
        self.props.num_entries
    }

    /// Whether nothing (no entry, no range tombstone) was added.
    pub fn is_empty(&self) -> bool {
        self.props.num_entries == 0 && self.range_dels.entries.is_empty()
    }

    fn check_poisoned(&self) -> Result<()> {
        match &self.poisoned {
            Some(cause) => PoisonedSnafu {
                path: self.path.clone(),
                cause: cause.clone(),
            }
            .fail(),
            None => Ok(()),
        }
    }

    fn note_seqno(&mut self, key: &[u8]) -> Option<ValueKind> {
        let (seqno, kind) = self.schema.seqno_and_kind(key)?;
        self.min_seqno = self.min_seqno.min(seqno);
        self.max_seqno = self.max_seqno.max(seqno);
        Some(kind)
    }

    /// Adds a point entry. Keys must be strictly increasing under the
    /// comparator; an out-of-order key is refused (and the builder stays
    /// usable).
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_poisoned()?;
        if key.len() + value.len() > MAX_ENTRY_LEN {
            return EntryTooLargeSnafu {
                path: self.path.clone(),
                key_len: key.len(),
                value_len: value.len(),
                max: MAX_ENTRY_LEN,
            }
            .fail();
        }
        if self.props.num_entries > 0
            && self.comparator.compare(key, &self.last_key) != Ordering::Greater
        {
            return OutOfOrderSnafu {
                path: self.path.clone(),
                key: key.to_vec(),
                previous: self.last_key.clone(),
            }
            .fail();
        }
        if let Some(handle) = self.pending_index.take() {
            self.comparator
                .separator(&self.last_key, key, &mut self.separator);
            self.handle_buf.clear();
            handle.encode_to(&mut self.handle_buf);
            self.index_block.add(&self.separator, &self.handle_buf);
        }
        if let Some(filter) = &mut self.filter {
            filter.add_hash(filter_hash(self.schema.filter_key(key)));
        }
        if self
            .note_seqno(key)
            .is_some_and(ValueKind::is_point_tombstone)
        {
            self.props.num_deletions += 1;
        }
        if self.props.num_entries == 0 {
            self.props.smallest_key = key.to_vec();
        }
        self.props.num_entries += 1;
        self.props.raw_key_bytes += key.len() as u64;
        self.props.raw_value_bytes += value.len() as u64;
        self.data_block.add(key, value);
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        if self.data_block.estimated_size() >= self.block_size {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Adds a range tombstone deleting `[start, end)`. Tombstones go to the
    /// range-deletion block, never to data blocks, and may be added in any
    /// order and interleaved with [`add`](Self::add): they are sorted by
    /// `start` under the comparator when the table is finished (ties keep
    /// insertion order). The engine passes `start#seq,RANGEDEL` as `start`
    /// and the end user key as `end`.
    pub fn add_range_tombstone(&mut self, start: &[u8], end: &[u8]) -> Result<()> {
        self.check_poisoned()?;
        if start.len() + end.len() > MAX_ENTRY_LEN {
            return EntryTooLargeSnafu {
                path: self.path.clone(),
                key_len: start.len(),
                value_len: end.len(),
                max: MAX_ENTRY_LEN,
            }
            .fail();
        }
        self.note_seqno(start);
        self.range_dels.push(start, end);
        self.props.num_range_deletions += 1;
        Ok(())
    }

    /// The size the file would have if finished now (what compaction cuts
    /// output files on): bytes written, the open data block, and the index
    /// and filter built so far.
    pub fn estimated_size(&self) -> u64 {
        let mut size = self.offset() + self.index_block.estimated_size() as u64;
        if !self.data_block.is_empty() {
            size += (self.data_block.estimated_size() + BLOCK_TRAILER_LEN) as u64;
        }
        if let Some(f) = &self.filter {
            size += f.estimated_size() as u64;
        }
        size + self.range_dels.bytes.len() as u64
    }

    /// Offset the next block will be written at.
    fn offset(&self) -> u64 {
        self.written + self.out.len() as u64
    }

    fn flush_data_block(&mut self) -> Result<()> {
        let raw = self.data_block.finish();
        let stored = match &mut self.compressor {
            // A failing compressor only costs the compression.
            Some(c) => c.compress(raw).ok().flatten(),
            None => None,
        };
        let handle = match stored {
            Some(compressed) => emit(&mut self.out, self.written, compressed, BLOCK_TYPE_ZSTD),
            None => emit(&mut self.out, self.written, raw, BLOCK_TYPE_RAW),
        };
        self.data_block.reset();
        self.pending_index = Some(handle);
        self.props.num_data_blocks += 1;
        if self.out.len() >= WRITE_CHUNK {
            self.write_out()?;
        }
        Ok(())
    }

    /// Hands the buffered output to the file.
    fn write_out(&mut self) -> Result<()> {
        if self.out.is_empty() {
            return Ok(());
        }
        if let Err(e) = self.file.append(&self.out) {
            self.poisoned = Some(format!("append at offset {} failed: {e}", self.written));
            return Err(IoSnafu {
                path: self.path.clone(),
                offset: self.written,
            }
            .into_error(e));
        }
        self.written += self.out.len() as u64;
        self.checksum.update(&self.out);
        self.out.clear();
        Ok(())
    }

    /// Writes the remaining data, the filter, range-deletion, index,
    /// properties and metaindex blocks and the footer, then fsyncs the file.
    pub fn finish(mut self) -> Result<BuiltSst> {
        self.check_poisoned()?;
        if !self.data_block.is_empty() {
            self.flush_data_block()?;
        }
        self.props.data_size = self.offset();
        if let Some(handle) = self.pending_index.take() {
            self.comparator
                .successor(&self.last_key, &mut self.separator);
            self.handle_buf.clear();
            handle.encode_to(&mut self.handle_buf);
            self.index_block.add(&self.separator, &self.handle_buf);
        }
        self.props.largest_key = self.last_key.clone();
        if self.min_seqno <= self.max_seqno {
            self.props.min_seqno = self.min_seqno;
            self.props.max_seqno = self.max_seqno;
        }

        let mut meta = BlockBuilder::new(1);
        let mut scratch = Vec::new();
        let mut meta_handles: Vec<(&[u8], BlockHandle)> = Vec::with_capacity(3);

        if let Some(filter) = &self.filter {
            filter.finish_into(&mut scratch);
            let h = emit(&mut self.out, self.written, &scratch, BLOCK_TYPE_RAW);
            self.props.filter_size = h.size + BLOCK_TRAILER_LEN as u64;
            meta_handles.push((META_FILTER, h));
        }

        if !self.range_dels.entries.is_empty() {
            let mut order = std::mem::take(&mut self.range_dels.entries);
            let rd = &self.range_dels;
            order.sort_by(|&a, &b| self.comparator.compare(rd.start(a), rd.start(b)));
            for &e in &order {
                meta.add(rd.start(e), rd.end(e));
            }
            let h = emit(&mut self.out, self.written, meta.finish(), BLOCK_TYPE_RAW);
            meta_handles.push((META_RANGE_DEL, h));
        }

        let index = emit(
            &mut self.out,
            self.written,
            self.index_block.finish(),
            BLOCK_TYPE_RAW,
        );
        self.props.index_size = index.size + BLOCK_TRAILER_LEN as u64;

        self.props.encode_into(&mut meta);
        let h = emit(&mut self.out, self.written, meta.finish(), BLOCK_TYPE_RAW);
        meta_handles.push((META_PROPERTIES, h));

        meta_handles.sort_by(|a, b| a.0.cmp(b.0));
        meta.reset();
        for (name, handle) in &meta_handles {
            scratch.clear();
            handle.encode_to(&mut scratch);
            meta.add(name, &scratch);
        }
        let metaindex = emit(&mut self.out, self.written, meta.finish(), BLOCK_TYPE_RAW);

        let footer = Footer {
            metaindex,
            index,
            format_version: FORMAT_VERSION,
        };
        self.out.extend_from_slice(&footer.encode());
        self.write_out()?;
        let file_size = self.written;
        if let Err(e) = self.file.sync_all() {
            return Err(IoSnafu {
                path: self.path.clone(),
                offset: file_size,
            }
            .into_error(e));
        }
        Ok(BuiltSst {
            properties: self.props,
            file_size,
            file_checksum: self.checksum.digest(),
        })
    }
}

/// Appends a block and its trailer to `out`, whose first byte will land at
/// file offset `base`; returns the block's handle.
fn emit(out: &mut Vec<u8>, base: u64, contents: &[u8], block_type: u8) -> BlockHandle {
    let at = out.len();
    let offset = base + at as u64;
    out.extend_from_slice(contents);
    append_block_trailer(out, at, block_type);
    BlockHandle {
        offset,
        size: contents.len() as u64,
    }
}
