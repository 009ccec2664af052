//! Writing output tables: creating files, cutting them, adding each
//! file's share of the range tombstones, and their metadata.

use lithify_base::Comparator as _;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use lithify_base::key::{TRAILER_LEN, escape};
use lithify_base::{Id, InternalKey, InternalKeyComparator, ValueKind};
use lithify_blob::{BlobCompression, BlobFileHeader, BlobFileWriter, BlobIndex, Readahead};
use lithify_sstable::{SstBuilder, SstOptions};
use lithify_version::filename::{blob_file_name, sst_file_name};
use lithify_version::{BlobFileMetadata, BlobRef, FileMetadata, VersionSet};
use lithify_vfs::FileSystem;
use snafu::ResultExt as _;

use super::WriteRateLimiter;
use super::cutter::OutputCutter;
use crate::bounds::sentinel;
use crate::error::{BlobReadSnafu, BlobWriteSnafu, IoSnafu, Result, SstSnafu};
use crate::iter::{BlobFetcher, RangeDelAggregator};

/// Hands out file numbers for outputs.
pub trait FileNumbers: Send + Sync {
    /// A fresh file number.
    fn new_file_number(&self) -> u64;
}

impl FileNumbers for VersionSet {
    fn new_file_number(&self) -> u64 {
        VersionSet::new_file_number(self)
    }
}

impl FileNumbers for AtomicU64 {
    fn new_file_number(&self) -> u64 {
        self.fetch_add(1, Ordering::Relaxed)
    }
}

/// How outputs keep values apart from the SSTs (key-value separation,
/// RocksDB's integrated BlobDB): a value of at least `min_blob_size`
/// bytes goes to a blob file and the SST holds a blob index to it.
#[derive(Clone, Copy)]
pub struct BlobSettings<'a> {
    /// Whether new values of at least `min_blob_size` bytes are written to
    /// blob files (RocksDB's `enable_blob_files`).
    pub enable_blob_files: bool,
    /// The smallest value separated (RocksDB's `min_blob_size`).
    pub min_blob_size: u64,
    /// A blob file is closed once it reaches this many bytes (RocksDB's
    /// `blob_file_size`).
    pub blob_file_size: u64,
    /// How each value is compressed in its blob file.
    pub compression: BlobCompression,
    /// The table the blob files belong to (recorded in their headers).
    pub table_id: u32,
    /// Values in blob files numbered below this are copied to the
    /// output's own blob file, or back into the SST when separation is off
    /// (garbage collection; 0 relocates nothing).
    pub relocate_below: u64,
    /// Reads the values to relocate.
    pub fetcher: Option<&'a dyn BlobFetcher>,
    /// The largest window each output writer reads old blob files ahead
    /// with while it relocates their values (RocksDB's
    /// `blob_compaction_readahead_size`; 0 reads each value alone).
    pub readahead_size: u64,
}

impl BlobSettings<'_> {
    /// No separation: every value stays in the SSTs.
    pub fn disabled() -> Self {
        BlobSettings {
            enable_blob_files: false,
            min_blob_size: 0,
            blob_file_size: 256 << 20,
            compression: BlobCompression::None,
            table_id: 0,
            relocate_below: 0,
            fetcher: None,
            readahead_size: 0,
        }
    }
}

impl std::fmt::Debug for BlobSettings<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobSettings")
            .field("enable_blob_files", &self.enable_blob_files)
            .field("min_blob_size", &self.min_blob_size)
            .field("blob_file_size", &self.blob_file_size)
            .field("compression", &self.compression)
            .field("table_id", &self.table_id)
            .field("relocate_below", &self.relocate_below)
            .field("readahead_size", &self.readahead_size)
            .finish_non_exhaustive()
    }
}

/// Where and how compaction and flush outputs are written: the file
/// system, the directory, file-number allocation, and table options (the
/// compaction's compression replaces `sst_options.compression`).
pub struct OutputFactory<'a> {
    /// The file system.
    pub fs: &'a dyn FileSystem,
    /// The directory of the SST files.
    pub dir: &'a Path,
    /// File numbers.
    pub numbers: &'a dyn FileNumbers,
    /// Block size, filter, restart interval; `comparator` orders the keys.
    pub sst_options: SstOptions<InternalKeyComparator>,
    /// Who writes the outputs: the database's identity and the open's
    /// (session) identity, recorded in each output's properties with its
    /// file number (its unique id). `None` records none.
    pub identity: Option<(Id, Id)>,
    /// Key-value separation.
    pub blobs: BlobSettings<'a>,
}

impl OutputFactory<'_> {
    /// The path of table `number`.
    pub fn path_of(&self, number: u64) -> PathBuf {
        self.dir.join(sst_file_name(number))
    }
}

struct OpenOutput {
    builder: SstBuilder<InternalKeyComparator>,
    number: u64,
    path: PathBuf,
    smallest: Vec<u8>,
    largest: Vec<u8>,
    /// Blob indexes added, per blob file: (count, stored bytes).
    blob_refs: BTreeMap<u64, (u64, u64)>,
}

/// What a writer produced.
pub(crate) struct Written {
    pub(crate) files: Vec<FileMetadata>,
    pub(crate) blob_files: Vec<BlobFileMetadata>,
    /// SST bytes.
    pub(crate) bytes: u64,
    /// Blob file bytes.
    pub(crate) blob_bytes: u64,
}

/// Writes one (sub)compaction's output files.
pub(crate) struct OutputWriter<'a> {
    factory: &'a OutputFactory<'a>,
    options: SstOptions<InternalKeyComparator>,
    cmp: InternalKeyComparator,
    range_dels: &'a RangeDelAggregator,
    bottommost: bool,
    oldest_ancestor_time: u64,
    current: Option<OpenOutput>,
    /// Lower bound of the next file's tombstones (the previous cut).
    lower: Option<Vec<u8>>,
    /// Upper bound of the whole (sub)compaction.
    upper: Option<Vec<u8>>,
    cutter: OutputCutter<Vec<u8>>,
    pending_cut: bool,
    last_user_key: Vec<u8>,
    pub(crate) outputs: Vec<FileMetadata>,
    pub(crate) created: Vec<PathBuf>,
    pub(crate) bytes_written: u64,
    limiter: Option<&'a dyn WriteRateLimiter>,
    /// Bytes of the current file already charged to the limiter.
    charged: u64,
    /// The blob file being written, if any.
    blob: Option<BlobFileWriter>,
    /// Blob files finished.
    blob_files: Vec<BlobFileMetadata>,
    blob_bytes_written: u64,
    /// Readahead through the old blob files values are relocated from.
    relocation_readahead: Readahead,
    /// The entry as added to the SST when its value was separated.
    scratch_key: Vec<u8>,
    scratch_value: Vec<u8>,
}

/// Bytes a writer lets accumulate before asking the rate limiter.
const RATE_LIMIT_CHUNK: u64 = 64 << 10;

impl<'a> OutputWriter<'a> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        factory: &'a OutputFactory<'a>,
        options: SstOptions<InternalKeyComparator>,
        range_dels: &'a RangeDelAggregator,
        bottommost: bool,
        oldest_ancestor_time: u64,
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
        cutter: OutputCutter<Vec<u8>>,
    ) -> Self {
        let cmp = options.comparator.clone();
        OutputWriter {
            factory,
            options,
            cmp,
            range_dels,
            bottommost,
            oldest_ancestor_time,
            current: None,
            lower,
            upper,
            cutter,
            pending_cut: false,
            last_user_key: Vec::new(),
            outputs: Vec::new(),
            created: Vec::new(),
            bytes_written: 0,
            limiter: None,
            charged: 0,
            blob: None,
            blob_files: Vec::new(),
            blob_bytes_written: 0,
            relocation_readahead: Readahead::with_max_window(factory.blobs.readahead_size),
            scratch_key: Vec::new(),
            scratch_value: Vec::new(),
        }
    }

    /// Charges the bytes written to `limiter` (waiting as it says).
    pub(crate) fn with_rate_limiter(mut self, limiter: Option<&'a dyn WriteRateLimiter>) -> Self {
        self.limiter = limiter;
        self
    }

    /// Adds a point entry (keys in order). A value the blob settings
    /// separate goes to a blob file and the SST gets a blob index; a blob
    /// index into a file being collected has its value relocated.
    pub(crate) fn add(&mut self, key: &[u8], user_key: &[u8], value: &[u8]) -> Result<()> {
        let kind = key.len().checked_sub(TRAILER_LEN).map_or(0, |n| key[n]);
        let blobs = self.factory.blobs;
        if kind == ValueKind::BlobIndex as u8 {
            let index = BlobIndex::decode(value)
                .map_err(|e| {
                    Box::new(lithify_base::Error::invalid_argument(format!(
                        "malformed blob index: {e}"
                    )))
                })
                .context(BlobReadSnafu {
                    key: escape(user_key),
                    origin: "compaction output".to_owned(),
                })?;
            if index.file_number >= blobs.relocate_below {
                return self.add_entry(key, user_key, value, Some(&index));
            }
            let fetched = match blobs.fetcher {
                Some(f) => f.fetch_sequential(user_key, value, &mut self.relocation_readahead),
                None => Err(lithify_base::Error::invalid_argument(
                    "the compaction was given no blob reader to relocate values",
                )),
            }
            .map_err(Box::new)
            .context(BlobReadSnafu {
                key: escape(user_key),
                origin: "compaction output".to_owned(),
            })?;
            if blobs.enable_blob_files && fetched.len() as u64 >= blobs.min_blob_size {
                return self.separate(key, user_key, &fetched);
            }
            // Back into the SST as a plain value.
            let mut put = std::mem::take(&mut self.scratch_key);
            put.clear();
            put.extend_from_slice(key);
            let n = put.len() - TRAILER_LEN;
            put[n] = ValueKind::Put as u8;
            let result = self.add_entry(&put, user_key, &fetched, None);
            self.scratch_key = put;
            return result;
        }
        if kind == ValueKind::Put as u8
            && blobs.enable_blob_files
            && value.len() as u64 >= blobs.min_blob_size
        {
            return self.separate(key, user_key, value);
        }
        self.add_entry(key, user_key, value, None)
    }

    /// Writes `value` to the blob file and adds the entry with its blob
    /// index.
    fn separate(&mut self, key: &[u8], user_key: &[u8], value: &[u8]) -> Result<()> {
        if self.blob.is_none() {
            self.open_blob_file()?;
        }
        let blob = self.blob.as_mut().expect("opened above");
        let index = blob.add(user_key, value).context(BlobWriteSnafu)?;
        let full = blob.file_size() >= self.factory.blobs.blob_file_size;
        let (mut k, mut v) = (
            std::mem::take(&mut self.scratch_key),
            std::mem::take(&mut self.scratch_value),
        );
        k.clear();
        k.extend_from_slice(key);
        let n = k.len() - TRAILER_LEN;
        k[n] = ValueKind::BlobIndex as u8;
        v.clear();
        index.encode_to(&mut v);
        let result = self.add_entry(&k, user_key, &v, Some(&index));
        (self.scratch_key, self.scratch_value) = (k, v);
        result?;
        if full {
            self.finish_blob_file()?;
        }
        Ok(())
    }

    fn open_blob_file(&mut self) -> Result<()> {
        let number = self.factory.numbers.new_file_number();
        let path = self.factory.dir.join(blob_file_name(number));
        let file = self.factory.fs.create(&path).context(IoSnafu {
            op: "creating",
            path: path.clone(),
        })?;
        self.created.push(path.clone());
        let (db_id, session_id) = self
            .factory
            .identity
            .unwrap_or((Id::from_bytes([0; 16]), Id::from_bytes([0; 16])));
        let header = BlobFileHeader {
            table_id: self.factory.blobs.table_id,
            compression: self.factory.blobs.compression,
            db_id,
            session_id,
            file_number: number,
        };
        self.blob = Some(BlobFileWriter::new(file, &path, header).context(BlobWriteSnafu)?);
        Ok(())
    }

    /// Finishes (and syncs) the blob file being written, if any.
    fn finish_blob_file(&mut self) -> Result<()> {
        let Some(blob) = self.blob.take() else {
            return Ok(());
        };
        let built = blob.finish().context(BlobWriteSnafu)?;
        self.blob_bytes_written += built.file_size;
        if let Some(limiter) = self.limiter {
            limiter.request(built.file_size);
        }
        self.blob_files.push(BlobFileMetadata {
            number: built.file_number,
            file_size: built.file_size,
            blob_count: built.blob_count,
            blob_bytes: built.blob_bytes,
            file_checksum: Some(built.file_checksum),
            unique_id: Some(built.unique_id),
        });
        Ok(())
    }

    /// Adds an entry to the SST being written (`index` is the entry's
    /// blob index, counted in the file's blob references).
    fn add_entry(
        &mut self,
        key: &[u8],
        user_key: &[u8],
        value: &[u8],
        index: Option<&BlobIndex>,
    ) -> Result<()> {
        let cmp = self.cmp.clone();
        let size = self
            .current
            .as_ref()
            .map_or(0, |o| o.builder.estimated_size());
        let stop =
            self.cutter
                .should_stop_before(user_key, size, self.current.is_some(), |q, k| {
                    cmp.compare_user(q, k)
                });
        if self.current.is_some() && (stop || self.pending_cut) {
            if cmp.compare_user(user_key, &self.last_user_key).is_eq() {
                // Never split one user key's versions across files.
                self.pending_cut = true;
            } else {
                self.pending_cut = false;
                if self.next_boundary_through(Some(user_key)).is_some() {
                    // Boundaries lie between the last key and this one:
                    // the file ends at the first, and the tombstones of
                    // each gap between them get their own file.
                    self.close_segments_through(Some(user_key))?;
                } else {
                    self.finish_file(Some(user_key))?;
                    self.lower = Some(user_key.to_vec());
                }
                self.cutter
                    .file_started(user_key, |q, k| cmp.compare_user(q, k));
            }
        }
        if self.current.is_none() {
            // Tombstones before the first key may span boundaries too.
            self.close_segments_through(Some(user_key))?;
            self.open_file()?;
        }
        let out = self.current.as_mut().expect("opened above");
        out.builder.add(key, value).context(SstSnafu)?;
        if let Some(index) = index {
            let r = out.blob_refs.entry(index.file_number).or_default();
            r.0 += 1;
            r.1 += index.size;
        }
        if out.smallest.is_empty() {
            out.smallest = key.to_vec();
        }
        out.largest.clear();
        out.largest.extend_from_slice(key);
        self.last_user_key.clear();
        self.last_user_key.extend_from_slice(user_key);
        if let Some(limiter) = self.limiter {
            let size = out.builder.estimated_size();
            if size >= self.charged + RATE_LIMIT_CHUNK {
                limiter.request(size - self.charged);
                self.charged = size;
            }
        }
        Ok(())
    }

    /// The first boundary after the current file's lower bound and at or
    /// before `upto` (every later one when `upto` is `None`).
    fn next_boundary_through(&self, upto: Option<&[u8]>) -> Option<Vec<u8>> {
        let cmp = &self.cmp;
        self.cutter
            .boundaries()
            .iter()
            .find(|b| {
                self.lower
                    .as_deref()
                    .is_none_or(|l| cmp.compare_user(b, l).is_gt())
            })
            .filter(|b| upto.is_none_or(|u| cmp.compare_user(b, u).is_le()))
            .cloned()
    }

    /// Closes the output at every boundary after the lower bound and at or
    /// before `upto`: the open file (if any) ends at the first, and each
    /// gap between two boundaries that holds range tombstones becomes a
    /// tombstone-only file. A boundary is where a major-level file that
    /// stays in place starts, or a stripe starts; tombstones written past
    /// it would give an output a range overlapping that file or stripe.
    /// Afterwards the lower bound is the last boundary passed.
    fn close_segments_through(&mut self, upto: Option<&[u8]>) -> Result<()> {
        while let Some(b) = self.next_boundary_through(upto) {
            if self.current.is_none()
                && !self
                    .range_dels
                    .tombstones_in(self.lower.as_deref(), Some(&b), self.bottommost)
                    .is_empty()
            {
                self.open_file()?;
            }
            self.finish_file(Some(&b))?;
            self.lower = Some(b);
        }
        Ok(())
    }

    fn open_file(&mut self) -> Result<()> {
        let number = self.factory.numbers.new_file_number();
        let path = self.factory.path_of(number);
        let file = self.factory.fs.create(&path).context(IoSnafu {
            op: "creating",
            path: path.clone(),
        })?;
        self.created.push(path.clone());
        let mut builder = SstBuilder::new(file, &path, &self.options).context(SstSnafu)?;
        if let Some((db, session)) = self.factory.identity {
            builder.set_identity(db, session, number);
        }
        self.current = Some(OpenOutput {
            builder,
            number,
            path,
            smallest: Vec::new(),
            largest: Vec::new(),
            blob_refs: BTreeMap::new(),
        });
        Ok(())
    }

    /// Writes the current file's tombstones (user keys in `[lower,
    /// upper)`), finishes and fsyncs it, and records its metadata.
    fn finish_file(&mut self, upper: Option<&[u8]>) -> Result<()> {
        let tombstones =
            self.range_dels
                .tombstones_in(self.lower.as_deref(), upper, self.bottommost);
        let Some(mut out) = self.current.take() else {
            return Ok(());
        };
        let mut smallest = (!out.smallest.is_empty())
            .then(|| InternalKey::from_encoded(out.smallest.clone()).ok())
            .flatten();
        let mut largest = (!out.largest.is_empty())
            .then(|| InternalKey::from_encoded(out.largest.clone()).ok())
            .flatten();
        for t in &tombstones {
            let start = t.start_key();
            out.builder
                .add_range_tombstone(start.encoded(), &t.end)
                .context(SstSnafu)?;
            if smallest
                .as_ref()
                .is_none_or(|s| self.cmp.compare(start.encoded(), s.encoded()).is_lt())
            {
                smallest = Some(start);
            }
            let end = sentinel(&t.end);
            if largest
                .as_ref()
                .is_none_or(|l| self.cmp.compare(end.encoded(), l.encoded()).is_gt())
            {
                largest = Some(end);
            }
        }
        let (Some(smallest), Some(largest)) = (smallest, largest) else {
            // Nothing at all was added: leave no file behind.
            drop(out.builder);
            let _ = self.factory.fs.remove_file(&out.path);
            self.created.retain(|p| p != &out.path);
            return Ok(());
        };
        let built = out.builder.finish().context(SstSnafu)?;
        let mut meta = file_metadata(
            out.number,
            built.file_size,
            smallest,
            largest,
            &built.properties,
        );
        meta.oldest_ancestor_time = self.oldest_ancestor_time;
        meta.file_checksum = Some(built.file_checksum);
        meta.blob_refs = out
            .blob_refs
            .iter()
            .map(|(&file_number, &(count, bytes))| BlobRef {
                file_number,
                count,
                bytes,
            })
            .collect();
        self.bytes_written += built.file_size;
        if let Some(limiter) = self.limiter {
            limiter.request(built.file_size.saturating_sub(self.charged));
        }
        self.charged = 0;
        self.outputs.push(meta);
        Ok(())
    }

    /// Finishes the last file and blob file; writes a tombstone-only file
    /// when tombstones remain in the range and no file is open.
    pub(crate) fn finish(mut self) -> (Vec<PathBuf>, Result<Written>) {
        let upper = self.upper.clone();
        let result = (|| {
            self.close_segments_through(upper.as_deref())?;
            if self.current.is_none()
                && !self
                    .range_dels
                    .tombstones_in(self.lower.as_deref(), upper.as_deref(), self.bottommost)
                    .is_empty()
            {
                self.open_file()?;
            }
            self.finish_file(upper.as_deref())?;
            self.finish_blob_file()
        })();
        let created = std::mem::take(&mut self.created);
        match result {
            Ok(()) => (
                created,
                Ok(Written {
                    files: std::mem::take(&mut self.outputs),
                    blob_files: std::mem::take(&mut self.blob_files),
                    bytes: self.bytes_written,
                    blob_bytes: self.blob_bytes_written,
                }),
            ),
            Err(e) => (created, Err(e)),
        }
    }

    /// The files created so far (for cleanup after an error).
    pub(crate) fn into_created(self) -> Vec<PathBuf> {
        self.created
    }
}

/// The MANIFEST metadata of a finished table: its number, size and key
/// bounds, with the sequence numbers, counts and creation time its
/// properties record (`oldest_ancestor_time` is the caller's: the
/// creation time here).
pub fn file_metadata(
    number: u64,
    file_size: u64,
    smallest: InternalKey,
    largest: InternalKey,
    props: &lithify_sstable::Properties,
) -> FileMetadata {
    let mut meta = FileMetadata::new(number, file_size, smallest, largest);
    meta.smallest_seqno = props.min_seqno;
    meta.largest_seqno = props.max_seqno;
    meta.num_entries = props.num_entries + props.num_range_deletions;
    meta.num_deletions = props.num_deletions;
    meta.num_range_deletions = props.num_range_deletions;
    meta.creation_time = props.creation_time;
    meta.oldest_ancestor_time = props.creation_time;
    meta.unique_id = props.unique_id();
    meta
}
