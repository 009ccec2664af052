//! Writing output tables: creating files, cutting them, adding each
//! file's share of the range tombstones, and their metadata.

use lithify_base::Comparator as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use lithify_base::{Id, InternalKey, InternalKeyComparator};
use lithify_sstable::{SstBuilder, SstOptions};
use lithify_version::filename::sst_file_name;
use lithify_version::{FileMetadata, VersionSet};
use lithify_vfs::FileSystem;
use snafu::ResultExt as _;

use super::WriteRateLimiter;
use super::cutter::OutputCutter;
use crate::bounds::sentinel;
use crate::error::{IoSnafu, Result, SstSnafu};
use crate::iter::RangeDelAggregator;

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
        }
    }

    /// Charges the bytes written to `limiter` (waiting as it says).
    pub(crate) fn with_rate_limiter(mut self, limiter: Option<&'a dyn WriteRateLimiter>) -> Self {
        self.limiter = limiter;
        self
    }

    /// Adds a point entry (keys in order).
    pub(crate) fn add(&mut self, key: &[u8], user_key: &[u8], value: &[u8]) -> Result<()> {
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
        self.bytes_written += built.file_size;
        if let Some(limiter) = self.limiter {
            limiter.request(built.file_size.saturating_sub(self.charged));
        }
        self.charged = 0;
        self.outputs.push(meta);
        Ok(())
    }

    /// Finishes the last file; writes a tombstone-only file when
    /// tombstones remain in the range and no file is open.
    pub(crate) fn finish(mut self) -> (Vec<PathBuf>, Result<(Vec<FileMetadata>, u64)>) {
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
            self.finish_file(upper.as_deref())
        })();
        let created = std::mem::take(&mut self.created);
        match result {
            Ok(()) => (
                created,
                Ok((std::mem::take(&mut self.outputs), self.bytes_written)),
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
