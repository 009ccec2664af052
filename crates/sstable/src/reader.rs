//! Reading a table.

use std::borrow::Borrow;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use lithify_base::{BytewiseComparator, Comparator};
use lithify_vfs::RandomAccessFile;
use snafu::IntoError as _;

use crate::block::{Block, BlockError, BlockIter};
use crate::cache::BlockCache;
use crate::compression::decompress_zstd;
use crate::error::{CorruptionSnafu, Error, IncompatibleSnafu, IoSnafu, Result};
use crate::filter::{BloomFilter, filter_hash};
use crate::format::{
    BLOCK_TRAILER_LEN, BLOCK_TYPE_RAW, BLOCK_TYPE_ZSTD, BlockHandle, FOOTER_LEN, Footer,
    META_FILTER, META_PROPERTIES, META_RANGE_DEL, verify_stored_block,
};
use crate::index_words::{IndexWords, WordSearch, seek_in_candidates};
use crate::iter::SstIter;
use crate::options::SstOptions;
use crate::properties::Properties;
use crate::schema::KeySchema;
use crate::stats::ReadStats;

/// An entry of the range-deletion block as stored: everything in
/// `[start, end)` is deleted. A table used alone stores plain keys; the
/// engine's tables store the internal key `start#seq,RANGEDEL` and an end
/// user key, which `lithify_base::keyspan::RangeTombstone::from_stored`
/// reads back as the one range-tombstone type of lithify.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeDelEntry {
    /// The start key (inclusive).
    pub start: Bytes,
    /// The end key (exclusive).
    pub end: Bytes,
}

/// An open table: immutable, `Send + Sync`, shared through an [`Arc`] by any
/// number of readers.
///
/// Opening reads the footer, metaindex, properties, index, filter and
/// range-deletion blocks and keeps them in memory; data blocks are read on
/// demand, through the [`BlockCache`] when there is one. Every block read
/// from the file has its checksum verified (unless
/// [`SstOptions::verify_checksums`] is off).
///
/// ```
/// use std::path::Path;
/// use std::sync::Arc;
/// use lithify_base::InternalIterator;
/// use lithify_sstable::{BlockCache, SstReader, SstBuilder, SstOptions};
/// use lithify_vfs::{FileSystem, MemFs};
///
/// let fs = MemFs::new();
/// let opts = SstOptions::default();
/// let mut b = SstBuilder::new(fs.create(Path::new("/1.sst")).unwrap(), "/1.sst", &opts).unwrap();
/// for (k, v) in [("apple", "red"), ("banana", "yellow"), ("cherry", "red")] {
///     b.add(k.as_bytes(), v.as_bytes()).unwrap();
/// }
/// let size = b.finish().unwrap().file_size;
///
/// let cache = Arc::new(BlockCache::new(8 << 20));
/// let file = fs.open(Path::new("/1.sst")).unwrap();
/// let table = Arc::new(SstReader::open(file, "/1.sst", size, &opts, Some(cache)).unwrap());
/// assert_eq!(table.get(b"banana").unwrap().unwrap(), &b"yellow"[..]);
/// assert!(table.get(b"blueberry").unwrap().is_none());
///
/// let mut it = table.iter();
/// it.seek_ge(b"b").unwrap();
/// assert_eq!(it.key(), b"banana");
/// it.next().unwrap();
/// assert_eq!(it.value(), b"red");
/// ```
pub struct SstReader<C = BytewiseComparator> {
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    file_size: u64,
    comparator: C,
    key_schema: Arc<dyn KeySchema>,
    verify_checksums: bool,
    cache: Option<Arc<BlockCache>>,
    cache_id: u64,
    footer: Footer,
    index: Block,
    /// A dense search aid for `index` (byte-ordered tables only).
    index_words: Option<IndexWords>,
    filter: Option<BloomFilter>,
    range_tombstones: Vec<RangeDelEntry>,
    properties: Properties,
}

impl<C> std::fmt::Debug for SstReader<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("path", &self.path)
            .field("file_size", &self.file_size)
            .field("entries", &self.properties.num_entries)
            .finish_non_exhaustive()
    }
}

/// Everything of a table but its data blocks, read without a comparator:
/// the footer and the meta blocks, each checked (what opening a table and
/// [`verify_file`](crate::verify_file) share).
pub(crate) struct Layout {
    pub(crate) footer: Footer,
    /// Where the footer starts: every block ends at or before it.
    pub(crate) footer_at: u64,
    pub(crate) index: Block,
    pub(crate) filter: Option<BloomFilter>,
    pub(crate) range_tombstones: Vec<RangeDelEntry>,
    pub(crate) properties: Properties,
}

/// The footer and what the metaindex names: where every meta block is.
struct MetaHandles {
    footer: Footer,
    footer_at: u64,
    filter: Option<BlockHandle>,
    properties: BlockHandle,
    range_del: Option<BlockHandle>,
}

impl MetaHandles {
    /// Reads the footer and the metaindex of the table in `file` of
    /// `file_size` bytes, checking the size first.
    fn read(reader: &mut MetaReader<'_>, file_size: u64) -> Result<MetaHandles> {
        let path = reader.path;
        // The size the caller expects (the MANIFEST's, for the engine)
        // against the file's: a table cut short is not "not a table".
        if let Ok(actual) = reader.file.size()
            && actual != file_size
        {
            let message = if actual < file_size {
                format!(
                    "the SST is truncated: it should have {file_size} bytes but the file ends at offset {actual}"
                )
            } else {
                format!(
                    "the SST should have {file_size} bytes but the file has {actual} (bytes were added at offset {file_size})"
                )
            };
            return CorruptionSnafu {
                path,
                offset: actual.min(file_size),
                message,
            }
            .fail();
        }
        let footer_at = match file_size.checked_sub(FOOTER_LEN as u64) {
            Some(at) => at,
            None => {
                return CorruptionSnafu {
                    path,
                    offset: 0u64,
                    message: format!(
                        "file of {file_size} bytes is too short to be an SST (footer is {FOOTER_LEN} bytes)"
                    ),
                }
                .fail();
            }
        };
        let mut raw = [0u8; FOOTER_LEN];
        reader.read_exact(footer_at, &mut raw)?;
        let footer = Footer::decode(&raw).map_err(|message| reader.corrupt(footer_at, message))?;
        reader.limit = footer_at;

        // Metaindex: names of the meta blocks.
        let metaindex = reader.read_block(footer.metaindex)?;
        let (mut filter_h, mut props_h, mut range_h) = (None, None, None);
        {
            let block =
                Block::new(metaindex).map_err(|e| reader.block_corrupt(footer.metaindex, e))?;
            let mut it = BlockIter::new(block, Vec::new());
            it.first()
                .map_err(|e| reader.block_corrupt(footer.metaindex, e))?;
            while it.valid() {
                let slot = match it.key() {
                    META_FILTER => Some(&mut filter_h),
                    META_PROPERTIES => Some(&mut props_h),
                    META_RANGE_DEL => Some(&mut range_h),
                    _ => None,
                };
                if let Some(slot) = slot {
                    let handle = BlockHandle::decode_exact(it.value()).ok_or_else(|| {
                        reader.corrupt(footer.metaindex.offset, "bad block handle in the metaindex")
                    })?;
                    if slot.replace(handle).is_some() {
                        return Err(reader.corrupt(
                            footer.metaindex.offset,
                            "a meta block is named twice in the metaindex",
                        ));
                    }
                }
                it.next()
                    .map_err(|e| reader.block_corrupt(footer.metaindex, e))?;
            }
        }
        let properties = props_h.ok_or_else(|| {
            reader.corrupt(
                footer.metaindex.offset,
                "the metaindex names no properties block",
            )
        })?;
        Ok(MetaHandles {
            footer,
            footer_at,
            filter: filter_h,
            properties,
            range_del: range_h,
        })
    }

    /// Reads and decodes the properties block.
    fn properties(&self, reader: &MetaReader<'_>) -> Result<Properties> {
        let h = self.properties;
        let properties =
            Properties::decode(reader.read_block(h)?).map_err(|m| reader.corrupt(h.offset, m))?;
        if properties.data_size > self.footer_at {
            return Err(reader.corrupt(h.offset, "data size property exceeds the file"));
        }
        Ok(properties)
    }
}

/// Reads only the properties of the table in `file` of `size` bytes
/// (`path` names it in errors): the footer, the metaindex and the
/// properties block, each checksum verified. What checking a table's
/// identity against the MANIFEST needs, without opening it.
///
/// ```
/// use std::path::Path;
/// use lithify_sstable::{SstBuilder, SstOptions, read_properties};
/// use lithify_vfs::{FileSystem, MemFs};
///
/// let fs = MemFs::new();
/// let path = Path::new("/t.sst");
/// let mut b = SstBuilder::new(fs.create(path).unwrap(), path, &SstOptions::default()).unwrap();
/// b.add(b"k", b"v").unwrap();
/// let size = b.finish().unwrap().file_size;
/// let props = read_properties(&*fs.open(path).unwrap(), path, size).unwrap();
/// assert_eq!(props.num_entries, 1);
/// ```
pub fn read_properties(file: &dyn RandomAccessFile, path: &Path, size: u64) -> Result<Properties> {
    let mut reader = MetaReader {
        file,
        path,
        verify: true,
        limit: 0,
    };
    let handles = MetaHandles::read(&mut reader, size)?;
    handles.properties(&reader)
}

impl Layout {
    /// Reads the layout of the table in `file` of `file_size` bytes
    /// (`path` names it in errors), verifying block checksums when
    /// `verify`.
    pub(crate) fn read(
        file: &dyn RandomAccessFile,
        path: &Path,
        file_size: u64,
        verify: bool,
    ) -> Result<Layout> {
        let mut reader = MetaReader {
            file,
            path,
            verify,
            limit: 0,
        };
        let handles = MetaHandles::read(&mut reader, file_size)?;
        let properties = handles.properties(&reader)?;
        let (footer, footer_at) = (handles.footer, handles.footer_at);
        let (filter_h, range_h) = (handles.filter, handles.range_del);

        let index = Block::new(reader.read_block(footer.index)?)
            .map_err(|e| reader.block_corrupt(footer.index, e))?;

        let filter = match filter_h {
            Some(h) => Some(
                BloomFilter::decode(reader.read_block(h)?)
                    .map_err(|m| reader.corrupt(h.offset, m))?,
            ),
            None => None,
        };

        let mut range_tombstones = Vec::new();
        if let Some(h) = range_h {
            let block =
                Block::new(reader.read_block(h)?).map_err(|e| reader.block_corrupt(h, e))?;
            let mut it = BlockIter::new(block, Vec::new());
            it.first().map_err(|e| reader.block_corrupt(h, e))?;
            while it.valid() {
                range_tombstones.push(RangeDelEntry {
                    start: it.key_bytes(),
                    end: it.value_bytes(),
                });
                it.next().map_err(|e| reader.block_corrupt(h, e))?;
            }
            if range_tombstones.len() as u64 != properties.num_range_deletions {
                return Err(reader.corrupt(
                    h.offset,
                    format!(
                        "range-deletion block holds {} tombstones, the properties say {}",
                        range_tombstones.len(),
                        properties.num_range_deletions
                    ),
                ));
            }
        } else if properties.num_range_deletions != 0 {
            return Err(reader.corrupt(
                footer.metaindex.offset,
                "the properties count range tombstones but there is no range-deletion block",
            ));
        }
        Ok(Layout {
            footer,
            footer_at,
            index,
            filter,
            range_tombstones,
            properties,
        })
    }
}

impl<C: Comparator + Clone> SstReader<C> {
    /// Opens the table in `file` of `file_size` bytes; `path` names it in
    /// errors. Verifies the footer and loads the meta blocks; fails with
    /// [`Error::Incompatible`] when the table was built with another
    /// comparator or key schema than `options` name.
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        path: impl Into<PathBuf>,
        file_size: u64,
        options: &SstOptions<C>,
        cache: Option<Arc<BlockCache>>,
    ) -> Result<Self> {
        let path = path.into();
        let layout = Layout::read(&*file, &path, file_size, options.verify_checksums)?;
        check_name(
            &path,
            "comparator",
            &layout.properties.comparator,
            options.comparator.name(),
        )?;
        check_name(
            &path,
            "key schema",
            &layout.properties.key_schema,
            options.key_schema.name(),
        )?;
        let index_words = IndexWords::build(&layout.index, options.comparator.name());
        let cache_id = cache.as_ref().map_or(0, |c| c.new_table_id());
        Ok(SstReader {
            file,
            path,
            file_size,
            comparator: options.comparator.clone(),
            key_schema: options.key_schema.clone(),
            verify_checksums: options.verify_checksums,
            cache,
            cache_id,
            footer: layout.footer,
            index: layout.index,
            index_words,
            filter: layout.filter,
            range_tombstones: layout.range_tombstones,
            properties: layout.properties,
        })
    }
}

fn check_name(path: &Path, what: &'static str, found: &str, expected: &str) -> Result<()> {
    if found == expected {
        Ok(())
    } else {
        IncompatibleSnafu {
            path: path.to_path_buf(),
            what,
            found: found.to_string(),
            expected: expected.to_string(),
        }
        .fail()
    }
}

/// Reads and verifies blocks of a file being opened.
struct MetaReader<'a> {
    file: &'a dyn RandomAccessFile,
    path: &'a Path,
    verify: bool,
    /// Blocks must end at or before this offset (the footer).
    limit: u64,
}

impl MetaReader<'_> {
    fn corrupt(&self, offset: u64, message: impl Into<String>) -> Error {
        CorruptionSnafu {
            path: self.path.to_path_buf(),
            offset,
            message: message.into(),
        }
        .build()
    }

    fn block_corrupt(&self, handle: BlockHandle, e: BlockError) -> Error {
        self.corrupt(handle.offset, e.to_string())
    }

    fn read_exact(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.file
            .read_exact_at(offset, buf)
            .map_err(|e| io_error(self.path, offset, buf.len(), e))
    }

    fn read_block(&self, handle: BlockHandle) -> Result<Bytes> {
        read_block(self.file, self.path, self.limit, self.verify, handle).map(|(b, _, _)| b)
    }
}

/// Turns a read failure into an error: a read past the end of the file
/// means the file is shorter than its size says, which is corruption.
fn io_error(path: &Path, offset: u64, len: usize, e: io::Error) -> Error {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        CorruptionSnafu {
            path: path.to_path_buf(),
            offset,
            message: format!("file ends inside the {len} bytes read here"),
        }
        .build()
    } else {
        IoSnafu {
            path: path.to_path_buf(),
            offset,
        }
        .into_error(e)
    }
}

/// Reads the block at `handle` (which must end by `limit`), verifies its
/// trailer when `verify`, and decompresses it. Returns the block, the
/// bytes read from the file and the stored block type.
pub(crate) fn read_block(
    file: &dyn RandomAccessFile,
    path: &Path,
    limit: u64,
    verify: bool,
    handle: BlockHandle,
) -> Result<(Bytes, u64, u8)> {
    read_block_into(file, path, limit, verify, handle, None)
}

/// [`read_block`], reading into `spare` (a buffer whose contents do not
/// matter) when it is large enough instead of a new allocation.
fn read_block_into(
    file: &dyn RandomAccessFile,
    path: &Path,
    limit: u64,
    verify: bool,
    handle: BlockHandle,
    spare: Option<BytesMut>,
) -> Result<(Bytes, u64, u8)> {
    let corrupt = |message: String| {
        CorruptionSnafu {
            path: path.to_path_buf(),
            offset: handle.offset,
            message,
        }
        .build()
    };
    match handle.end_with_trailer() {
        Some(end) if end <= limit => {}
        _ => {
            return Err(corrupt(format!(
                "block handle (offset {}, size {}) points past the SST's blocks, which end at {limit}",
                handle.offset, handle.size
            )));
        }
    }
    // `end <= limit <= file size` and the file is in memory or addressable.
    let len = handle.size as usize + BLOCK_TRAILER_LEN;
    // Either way the buffer becomes `Bytes` without copying the block. A
    // spare is used only if it fits and wastes at most an eighth: the cache
    // charges a block its length, not its buffer's.
    let buf = match spare {
        Some(mut buf) if (len..=len + len / 8).contains(&buf.capacity()) => {
            // Cut or extend to `len`; every byte is then read over.
            buf.resize(len, 0);
            file.read_exact_at(handle.offset, &mut buf)
                .map(|()| buf.freeze())
        }
        _ => file.read_vec(handle.offset, len).map(Bytes::from),
    }
    .map_err(|e| io_error(path, handle.offset, len, e))?;
    // The stored bytes and the type byte are adjacent: one hashing pass.
    let block_type = if verify {
        verify_stored_block(&buf).map_err(corrupt)?
    } else {
        buf[len - BLOCK_TRAILER_LEN]
    };
    let contents_len = handle.size as usize;
    let block = match block_type {
        // The trailer stays in the buffer, out of the block's view.
        BLOCK_TYPE_RAW => buf.slice(..contents_len),
        BLOCK_TYPE_ZSTD => Bytes::from(decompress_zstd(&buf[..contents_len]).map_err(corrupt)?),
        other => return Err(corrupt(format!("unknown block type {other}"))),
    };
    Ok((block, len as u64, block_type))
}

impl<C: Comparator> SstReader<C> {
    /// The file the table is read from.
    pub(crate) fn file(&self) -> &Arc<dyn RandomAccessFile> {
        &self.file
    }

    /// The footer.
    pub(crate) fn footer(&self) -> &Footer {
        &self.footer
    }

    /// Where the footer starts: every block ends at or before it.
    pub(crate) fn footer_at(&self) -> u64 {
        self.file_size - FOOTER_LEN as u64
    }

    /// The file's name, as given to [`open`](Self::open).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's size.
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// The recorded properties.
    pub fn properties(&self) -> &Properties {
        &self.properties
    }

    /// Every range tombstone, sorted by start key.
    pub fn range_tombstones(&self) -> &[RangeDelEntry] {
        &self.range_tombstones
    }

    /// The comparator.
    pub fn comparator(&self) -> &C {
        &self.comparator
    }

    /// The key schema.
    pub fn key_schema(&self) -> &Arc<dyn KeySchema> {
        &self.key_schema
    }

    /// This table's id in its block cache (0 without a cache).
    pub fn cache_id(&self) -> u64 {
        self.cache_id
    }

    /// The index words, if the table has them (tests check which tables
    /// get them).
    #[cfg(test)]
    pub(crate) fn index_words(&self) -> Option<&IndexWords> {
        self.index_words.as_ref()
    }

    /// Whether the table has a bloom filter.
    pub fn has_filter(&self) -> bool {
        self.filter.is_some()
    }

    /// Bytes of the index (with its in-memory search aid) and filter held
    /// in memory while the table is open.
    pub fn pinned_bytes(&self) -> usize {
        self.index.data().len()
            + self.index_words.as_ref().map_or(0, IndexWords::size)
            + self.filter.as_ref().map_or(0, BloomFilter::size)
    }

    /// Whether a key whose filter key is `filter_key` may be in the table:
    /// `false` means certainly absent. Always `true` without a filter.
    #[inline]
    pub fn may_contain(&self, filter_key: &[u8]) -> bool {
        self.filter
            .as_ref()
            .is_none_or(|f| f.may_contain(filter_key))
    }

    pub(crate) fn corrupt(&self, offset: u64, message: impl Into<String>) -> Error {
        CorruptionSnafu {
            path: self.path.clone(),
            offset,
            message: message.into(),
        }
        .build()
    }

    pub(crate) fn index_corrupt(&self, e: BlockError) -> Error {
        self.corrupt(self.footer.index.offset, format!("index block: {e}"))
    }

    pub(crate) fn index_block(&self) -> &Block {
        &self.index
    }

    /// Positions `index`, a cursor over this table's index block, at the
    /// first entry `>= target`: through the index words when the table has
    /// them, else by the block's own binary search.
    pub(crate) fn index_seek_ge<B: Borrow<Block>>(
        &self,
        index: &mut BlockIter<B>,
        target: &[u8],
    ) -> Result<()> {
        let positioned = match &self.index_words {
            Some(words) => {
                let (lo, hi) = words.candidates(target);
                seek_in_candidates(index, lo, hi, target, |a, b| self.comparator.compare(a, b))
            }
            None => index.seek_ge(target, &self.comparator),
        };
        positioned.map_err(|e| self.index_corrupt(e))
    }

    /// Decodes the block handle at the index cursor.
    pub(crate) fn index_handle<B: Borrow<Block>>(
        &self,
        index: &BlockIter<B>,
    ) -> Result<BlockHandle> {
        BlockHandle::decode_exact(index.value()).ok_or_else(|| {
            self.corrupt(
                self.footer.index.offset,
                format!(
                    "bad data block handle in the index entry at byte {}",
                    index.entry_offset()
                ),
            )
        })
    }

    /// The data block at `handle`, from the cache or the file.
    pub(crate) fn data_block(&self, handle: BlockHandle, stats: &mut ReadStats) -> Result<Block> {
        let mut spare = None;
        if let Some(cache) = &self.cache {
            match cache.get_block_or_spare(self.cache_id, handle.offset) {
                Ok(block) => {
                    stats.blocks_from_cache += 1;
                    return Ok(block);
                }
                Err(buffer) => spare = buffer,
            }
        }
        let limit = self.footer_at();
        let (bytes, read, _) = read_block_into(
            &*self.file,
            &self.path,
            limit,
            self.verify_checksums,
            handle,
            spare,
        )?;
        stats.blocks_from_file += 1;
        stats.bytes_from_file += read;
        let block = Block::new(bytes).map_err(|e| self.data_corrupt(handle, e))?;
        if let Some(cache) = &self.cache {
            cache.insert_block(self.cache_id, handle.offset, block.clone());
        }
        Ok(block)
    }

    pub(crate) fn data_corrupt(&self, handle: BlockHandle, e: BlockError) -> Error {
        self.corrupt(handle.offset, format!("data block: {e}"))
    }

    /// The engine's point lookup: if `filter_key` is given and the filter
    /// rules it out, `None` without reading a block; otherwise the first
    /// entry with key `>= target`, its key written into `key_out` (a buffer
    /// the caller reuses, so a lookup allocates nothing once it has grown)
    /// and its value returned as a zero-copy slice of the block. Costs are
    /// added to `stats`.
    ///
    /// For internal keys, pass the user key as `filter_key` and the seek key
    /// `user_key#snapshot,SEEK` as `target`; the returned entry is the newest
    /// visible version if its user key matches.
    pub fn point_lookup(
        &self,
        filter_key: Option<&[u8]>,
        target: &[u8],
        key_out: &mut Vec<u8>,
        stats: &mut ReadStats,
    ) -> Result<Option<Bytes>> {
        // The filter's line and the index words' bucket are both likely
        // cache misses: start both loads before waiting on either. When the
        // filter says no, the words' loads were only a hint.
        let filter = match (&self.filter, filter_key) {
            (Some(filter), Some(fk)) => {
                let hash = filter_hash(fk);
                filter.prefetch_hash(hash);
                Some((filter, hash))
            }
            _ => None,
        };
        let words = self
            .index_words
            .as_ref()
            .filter(|w| w.has_handles())
            .map(|w| (w, w.start_search(target)));
        if let Some((filter, hash)) = filter {
            stats.filter_checks += 1;
            if !filter.may_contain_hash(hash) {
                stats.filter_negatives += 1;
                return Ok(None);
            }
        }
        let mut index = self.point_index_cursor(target, words)?;
        let mut buf = std::mem::take(key_out);
        let mut first_block = true;
        while let Some(handle) = index.handle(self)? {
            let block = match self.data_block(handle, stats) {
                Ok(block) => block,
                Err(e) => {
                    *key_out = buf;
                    return Err(e);
                }
            };
            let mut it = BlockIter::new(block, buf);
            let positioned = if first_block {
                it.seek_ge(target, &self.comparator)
            } else {
                it.first()
            };
            if let Err(e) = positioned {
                *key_out = it.into_key_buf();
                return Err(self.data_corrupt(handle, e));
            }
            if it.valid() {
                let value = it.value_bytes();
                *key_out = it.into_current_key();
                return Ok(Some(value));
            }
            // The separator was above every key of that block: the answer
            // is the first entry of the next one.
            buf = it.into_key_buf();
            first_block = false;
            index.next(self)?;
        }
        *key_out = buf;
        Ok(None)
    }

    /// An index cursor at the first entry `>= target`, for a point lookup:
    /// positions in the index words' handle array when no word ties with
    /// the target's (the index block is not read at all), else a cursor
    /// over the index block.
    /// `words` is the table's index words with a search for `target`
    /// started, when they keep the blocks' handles.
    fn point_index_cursor<'a>(
        &'a self,
        target: &[u8],
        words: Option<(&'a IndexWords, WordSearch)>,
    ) -> Result<PointIndexCursor<'a>> {
        if let Some((words, search)) = words {
            let (lo, hi) = words.finish_search(search);
            if lo == hi {
                return Ok(PointIndexCursor::Words { words, pos: lo });
            }
            let mut index = BlockIter::new(&self.index, Vec::new());
            seek_in_candidates(&mut index, lo, hi, target, |a, b| {
                self.comparator.compare(a, b)
            })
            .map_err(|e| self.index_corrupt(e))?;
            return Ok(PointIndexCursor::Block(index));
        }
        // Index keys are restart entries, kept in the block: the cursor
        // borrows the pinned index and allocates nothing.
        let mut index = BlockIter::new(&self.index, Vec::new());
        self.index_seek_ge(&mut index, target)?;
        Ok(PointIndexCursor::Block(index))
    }

    /// The value stored under exactly `key`, consulting the filter first
    /// (for tables used on their own; the engine uses
    /// [`point_lookup`](Self::point_lookup)).
    pub fn get(&self, key: &[u8]) -> Result<Option<Bytes>> {
        let mut found = Vec::new();
        let mut stats = ReadStats::default();
        let filter_key = self.key_schema.filter_key(key);
        match self.point_lookup(Some(filter_key), key, &mut found, &mut stats)? {
            Some(value) if self.comparator.equal(&found, key) => Ok(Some(value)),
            _ => Ok(None),
        }
    }

    /// About where in the file the entries for `key` start: the offset of
    /// the data block that would hold `key`, or the end of the data blocks
    /// for keys past the last one. For splitting key ranges by size.
    pub fn approximate_offset_of(&self, key: &[u8]) -> Result<u64> {
        let mut index = BlockIter::new(&self.index, Vec::new());
        self.index_seek_ge(&mut index, key)?;
        if index.valid() {
            let offset = self.index_handle(&index)?.offset;
            if offset > self.properties.data_size {
                return Err(self.corrupt(
                    self.footer.index.offset,
                    format!(
                        "index points at offset {offset}, past the data blocks ending at {}",
                        self.properties.data_size
                    ),
                ));
            }
            Ok(offset)
        } else {
            Ok(self.properties.data_size)
        }
    }
}

/// Where a point lookup is in the index: a position among the index words'
/// handles, or a cursor over the index block.
enum PointIndexCursor<'a> {
    Words { words: &'a IndexWords, pos: usize },
    Block(BlockIter<&'a Block>),
}

impl PointIndexCursor<'_> {
    /// The data block handle of the current entry; `None` past the last.
    #[inline]
    fn handle<C: Comparator>(&self, table: &SstReader<C>) -> Result<Option<BlockHandle>> {
        match self {
            PointIndexCursor::Words { words, pos } => Ok(words.handle(*pos)),
            PointIndexCursor::Block(index) if index.valid() => table.index_handle(index).map(Some),
            PointIndexCursor::Block(_) => Ok(None),
        }
    }

    /// Steps to the next entry.
    fn next<C: Comparator>(&mut self, table: &SstReader<C>) -> Result<()> {
        match self {
            PointIndexCursor::Words { words, pos } => {
                *pos = (*pos + 1).min(words.len());
                Ok(())
            }
            PointIndexCursor::Block(index) => index.next().map_err(|e| table.index_corrupt(e)),
        }
    }
}

impl<C: Comparator> SstReader<C> {
    /// A cursor over the point entries, owning a reference to the table so
    /// it can outlive the caller's borrow.
    pub fn iter(self: &Arc<Self>) -> SstIter<C> {
        SstIter::new(Arc::clone(self))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use lithify_vfs::{FileSystem, MemFs};

    use crate::{BlockCache, SstBuilder, SstOptions, SstReader};

    const ENTRIES: u32 = 20_000;

    fn key(i: u32) -> Vec<u8> {
        format!("key{i:08}").into_bytes()
    }

    fn value(tag: u8, i: u32) -> Vec<u8> {
        let mut v = format!("{}{i:08}", tag as char).into_bytes();
        v.resize(100, tag);
        v
    }

    fn table(fs: &MemFs, name: &str, tag: u8, verify: bool, cache: &Arc<BlockCache>) -> SstReader {
        let path = Path::new(name);
        let opts = SstOptions {
            verify_checksums: verify,
            ..SstOptions::default()
        };
        let mut b = SstBuilder::new(fs.create(path).unwrap(), path, &opts).unwrap();
        for i in 0..ENTRIES {
            b.add(&key(i), &value(tag, i)).unwrap();
        }
        let size = b.finish().unwrap().file_size;
        SstReader::open(
            fs.open(path).unwrap(),
            path,
            size,
            &opts,
            Some(cache.clone()),
        )
        .unwrap()
    }

    /// Two tables sharing a cache far smaller than they are: nearly every
    /// lookup misses, evicts a block and reads into an evicted block's
    /// buffer. Every answer is exact (with and without checksums), the
    /// tables' bytes never mix, and values held across the evictions stay
    /// intact.
    #[test]
    fn reads_into_evicted_buffers_return_exact_blocks() {
        for verify in [true, false] {
            let fs = MemFs::new();
            // One shard of 512 KiB: spares up to 8 KiB, 4 KiB blocks.
            let cache = Arc::new(BlockCache::with_shard_bits(512 * 1024, 0));
            let a = table(&fs, "/a.sst", b'a', verify, &cache);
            let b = table(&fs, "/b.sst", b'b', verify, &cache);
            let mut held = Vec::new();
            for round in 0..2u32 {
                for j in 0..ENTRIES {
                    let i = (j * 7919 + round) % ENTRIES;
                    for (t, tag) in [(&a, b'a'), (&b, b'b')] {
                        let got = t.get(&key(i)).unwrap();
                        assert_eq!(got.as_deref(), Some(&value(tag, i)[..]), "{i}");
                        if j % 1000 == 0 {
                            held.push((got.unwrap(), value(tag, i)));
                        }
                    }
                    assert_eq!(a.get(format!("key{i:08}x").as_bytes()).unwrap(), None);
                }
            }
            for (got, expected) in &held {
                assert_eq!(&got[..], &expected[..]);
            }
            let (reused, _) = cache.spare_counts();
            let evictions = cache.stats().evictions;
            assert!(reused > evictions / 2, "{reused} of {evictions}");
        }
    }
}
