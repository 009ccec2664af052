//! Appending records to a new log.

use std::fmt;
use std::path::{Path, PathBuf};

use lithify_base::Id;
use lithify_vfs::WritableFile;
use snafu::ResultExt;

use crate::error::{InvalidArgumentSnafu, PoisonedSnafu, Result, SyncSnafu, WriteSnafu};
use crate::format::{
    BLOCK_SIZE, FileHeader, FragmentType, Framing, compress_record, log_number_tag, put_fragment,
};

/// How a [`Writer`] stores records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum RecordCompression {
    /// As they are (format version 1). The default.
    #[default]
    None,
    /// Each record of at least [`RecordCompression::MIN_LEN`] bytes is LZ4
    /// compressed on its own, and stored so when that is smaller (format
    /// version 2). Costs about a quarter of a microsecond per 150-byte
    /// record; saves what the records' redundancy allows.
    Lz4,
}

impl RecordCompression {
    /// Records shorter than this are never compressed: LZ4 has too little
    /// to work with.
    pub const MIN_LEN: usize = 32;
}

/// How a [`Writer`] buffers and syncs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriterOptions {
    /// Buffered bytes that trigger a write to the file inside
    /// [`Writer::add_record`]. Smaller records simply accumulate; nothing
    /// reaches the file before [`Writer::flush`]/[`Writer::sync`] or this
    /// threshold. Default 64 KiB.
    pub buffer_size: usize,
    /// When non-zero, every flush that leaves at least this many bytes
    /// written but not synced also syncs them (RocksDB's `bytes_per_sync`,
    /// done with `fdatasync`): it bounds how much a crash can lose and
    /// smooths the cost of a later [`Writer::sync`]. Default 0 (off).
    pub bytes_per_sync: u64,
    /// Whether records are compressed. Default none.
    pub compression: RecordCompression,
    /// The identity of the log's owner (the database), written in an
    /// `Identity` fragment after the header (format version 3, or 4 with
    /// compact framing), so a log copied in from another database is told
    /// apart. Default none.
    pub owner: Option<Id>,
    /// When non-zero, the file is sized up front to hold this many bytes
    /// (rounded up to whole blocks), and grown by as much again whenever
    /// the log reaches its end; records are written into that space. A
    /// sync then rarely changes the file's size, which makes it cheaper
    /// (fjall sizes its journals so; RocksDB preallocates its WALs). A
    /// `Preallocated` fragment after the header says so, and to a
    /// [`Reader`](crate::Reader) the zeros after the last record are then
    /// the log's clean end; [`Writer::close`] and [`Writer::trim`] cut
    /// them off. Best effort: a file system that cannot size the file
    /// gets plain writes (and a `tracing` warning). Default 0 (the file
    /// grows with each write).
    pub preallocate: u64,
    /// Which header the fragments have. [`Framing::Compact`] (format
    /// version 4) saves 4 bytes per fragment and needs an
    /// [`owner`](Self::owner); a log written over a recycled file
    /// ([`Writer::recycle`]) is always [`Framing::Tagged`], which is what
    /// tells its records from the older log's bytes. A writer that
    /// recycles files should keep every log tagged, since any of them may
    /// be recycled later. Default tagged.
    pub framing: Framing,
}

lithify_base::options_builder!(WriterOptions {
    buffer_size: usize,
    bytes_per_sync: u64,
    compression: RecordCompression,
    owner: Option<Id>,
    preallocate: u64,
    framing: Framing,
});

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            buffer_size: 64 * 1024,
            bytes_per_sync: 0,
            compression: RecordCompression::None,
            owner: None,
            preallocate: 0,
            framing: Framing::Tagged,
        }
    }
}

/// Appends records to a new log file.
///
/// The writer always starts a **new, empty** file: it writes the file
/// header first. Reopening an existing log to append after recovery is
/// deliberately not supported (RocksDB too starts a new WAL on open); a
/// recovered log is read, replayed and eventually deleted.
///
/// Records are framed into [`BLOCK_SIZE`] blocks and collected in a buffer;
/// [`add_record`](Writer::add_record) makes no system call until the buffer
/// passes [`WriterOptions::buffer_size`]. [`flush`](Writer::flush) hands the
/// buffer to the file (it survives a process crash, not a power loss);
/// [`sync`](Writer::sync) makes everything added so far durable.
///
/// After a failed write or sync the writer is **poisoned**: every later call
/// returns [`Error::Poisoned`](crate::Error::Poisoned). After a failed fsync
/// the kernel may already have dropped the dirty pages, so retrying could
/// report success for data that never reaches the disk; the only safe
/// continuation is a new log.
///
/// Dropping a writer discards bytes not yet flushed; call
/// [`close`](Writer::close) to make them durable first.
///
/// ```
/// use std::path::Path;
/// use lithify_vfs::{FileSystem, MemFs};
/// use lithify_wal::{Reader, Writer};
///
/// let fs = MemFs::new();
/// let path = Path::new("/000007.log");
/// let mut w = Writer::new(fs.create(path).unwrap(), path, 7).unwrap();
/// let first = w.add_record(b"first").unwrap();
/// w.add_record(b"second").unwrap();
/// w.sync().unwrap();
/// assert_eq!(first, 24); // right after the 24-byte file header
///
/// let mut r = Reader::new(fs.open(path).unwrap(), path, 7).unwrap();
/// assert_eq!(r.read_record().unwrap().unwrap().payload, b"first");
/// assert_eq!(r.read_record().unwrap().unwrap().payload, b"second");
/// assert!(r.read_record().unwrap().is_none());
/// ```
pub struct Writer {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    log_number: u64,
    log_tag: u32,
    /// The fragments' framing: the file header's.
    framing: Framing,
    /// Bytes of a fragment header (the framing's).
    header_len: usize,
    options: WriterOptions,
    /// Framed bytes not yet handed to the file.
    buf: Vec<u8>,
    /// File offset of `buf[0]`: everything before it was written.
    flushed: u64,
    /// Everything before this offset is durable.
    synced: u64,
    /// Position inside the current block of the end of `buf`.
    block_pos: usize,
    /// The first failure, once one happened.
    poisoned: Option<String>,
    /// A compressed record's bytes (kept for its capacity).
    compressed: Vec<u8>,
    /// Bytes of records given to `add_record`, before compression.
    record_bytes: u64,
    /// The file's size: past `flushed` it holds preallocated zeros (or a
    /// recycled file's stale bytes).
    allocated: u64,
    /// Records are written at their offsets (`write_at`), not appended:
    /// the file is preallocated or recycled.
    in_place: bool,
    /// The file held an older log: each write ends with an end marker.
    recycled: bool,
}

impl fmt::Debug for Writer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Writer")
            .field("path", &self.path)
            .field("log_number", &self.log_number)
            .field("bytes_written", &self.bytes_written())
            .field("synced", &self.synced)
            .field("poisoned", &self.poisoned)
            .finish()
    }
}

impl Writer {
    /// A writer for log `log_number` over the new, empty `file` at `path`,
    /// with default options.
    pub fn new(
        file: Box<dyn WritableFile>,
        path: impl AsRef<Path>,
        log_number: u64,
    ) -> Result<Writer> {
        Self::with_options(file, path, log_number, WriterOptions::default())
    }

    /// A writer with explicit options.
    pub fn with_options(
        file: Box<dyn WritableFile>,
        path: impl AsRef<Path>,
        log_number: u64,
        options: WriterOptions,
    ) -> Result<Writer> {
        let path = path.as_ref().to_path_buf();
        if !file.is_empty() {
            return InvalidArgumentSnafu {
                path,
                message: format!(
                    "a log writer needs an empty file, this one holds {} bytes",
                    file.len()
                ),
            }
            .fail();
        }
        if options.framing == Framing::Compact && options.owner.is_none() {
            return InvalidArgumentSnafu {
                path,
                message: "compact framing (format version 4) needs an owner".to_owned(),
            }
            .fail();
        }
        Ok(Self::start(file, path, log_number, None, options))
    }

    /// A writer for log `log_number` over `file`, which holds the older
    /// log `previous` (RocksDB's recycled WAL files): the new log is
    /// written from offset 0 over the old bytes, without truncating the
    /// file first, so a sync does not change the file's size until the
    /// new log outgrows the old one. A `Recycled` fragment after the
    /// header names `previous`, which tells a [`Reader`](crate::Reader)
    /// that the old bytes after the new log's last record are its stale
    /// tail (a clean end), not damage; each fragment's log number tells
    /// them apart from the new log's records, so the new log is always
    /// [`Framing::Tagged`], whatever the options say. See
    /// [`Reader::stale_tail`](crate::Reader::stale_tail) for an example.
    pub fn recycle(
        file: Box<dyn WritableFile>,
        path: impl AsRef<Path>,
        log_number: u64,
        previous: u64,
        options: WriterOptions,
    ) -> Result<Writer> {
        let path = path.as_ref().to_path_buf();
        if log_number_tag(previous) == log_number_tag(log_number) {
            return InvalidArgumentSnafu {
                path,
                message: format!(
                    "log {log_number} cannot be written over log {previous}: their fragments carry the same number"
                ),
            }
            .fail();
        }
        let options = WriterOptions {
            framing: Framing::Tagged,
            ..options
        };
        let mut writer = Self::start(file, path, log_number, Some(previous), options);
        writer.allocated = writer.file.len();
        writer.in_place = true;
        writer.recycled = true;
        Ok(writer)
    }

    /// A writer whose buffer holds the file header, then the `Identity`,
    /// `Recycled` and `Preallocated` fragments the options and `previous`
    /// ask for.
    fn start(
        file: Box<dyn WritableFile>,
        path: PathBuf,
        log_number: u64,
        previous: Option<u64>,
        options: WriterOptions,
    ) -> Writer {
        let mut buf = Vec::with_capacity(options.buffer_size.clamp(4096, 1 << 20));
        let header = match (options.owner, options.framing, options.compression) {
            (Some(_), Framing::Compact, _) => FileHeader::compact(log_number),
            (Some(_), _, _) => FileHeader::owned(log_number),
            (None, _, RecordCompression::None) => FileHeader::new(log_number),
            (None, _, RecordCompression::Lz4) => FileHeader::compressed(log_number),
        };
        let (framing, tag) = (header.framing(), log_number_tag(log_number));
        buf.extend_from_slice(&header.encode());
        if let Some(owner) = options.owner {
            put_fragment(
                &mut buf,
                framing,
                FragmentType::Identity,
                tag,
                owner.as_bytes(),
            );
        }
        if let Some(previous) = previous {
            put_fragment(
                &mut buf,
                framing,
                FragmentType::Recycled,
                tag,
                &previous.to_le_bytes(),
            );
        }
        if options.preallocate > 0 {
            put_fragment(&mut buf, framing, FragmentType::Preallocated, tag, &[]);
        }
        let block_pos = buf.len();
        Writer {
            file,
            path,
            log_number,
            log_tag: tag,
            framing,
            header_len: framing.header_len(),
            options,
            buf,
            flushed: 0,
            synced: 0,
            block_pos,
            poisoned: None,
            compressed: Vec::new(),
            record_bytes: 0,
            allocated: 0,
            in_place: options.preallocate > 0,
            recycled: false,
        }
    }

    /// Appends one record and returns the file offset of its first fragment.
    ///
    /// The record is only buffered unless the buffer passes
    /// [`WriterOptions::buffer_size`]; it is durable after the next
    /// successful [`sync`](Writer::sync).
    pub fn add_record(&mut self, payload: &[u8]) -> Result<u64> {
        self.check_poisoned()?;
        self.record_bytes += payload.len() as u64;
        if self.options.compression == RecordCompression::Lz4
            && payload.len() >= RecordCompression::MIN_LEN
        {
            let mut stored = std::mem::take(&mut self.compressed);
            let result = if compress_record(payload, &mut stored) {
                self.append_fragments(&stored, FragmentType::Lz4Full, FragmentType::Lz4First)
            } else {
                self.append_fragments(payload, FragmentType::Full, FragmentType::First)
            };
            self.compressed = stored;
            return result;
        }
        self.append_fragments(payload, FragmentType::Full, FragmentType::First)
    }

    /// Frames `payload` as one record whose first fragment is `full` or
    /// `first`.
    fn append_fragments(
        &mut self,
        payload: &[u8],
        full: FragmentType,
        first_type: FragmentType,
    ) -> Result<u64> {
        let mut left = payload;
        let mut first = true;
        let mut record_offset = 0;
        loop {
            let room = BLOCK_SIZE - self.block_pos;
            if room < self.header_len {
                // Block trailer: too short for a header, zero-filled.
                self.buf.resize(self.buf.len() + room, 0);
                self.block_pos = 0;
            }
            if first {
                record_offset = self.bytes_written();
            }
            let avail = BLOCK_SIZE - self.block_pos - self.header_len;
            let n = left.len().min(avail);
            let last = n == left.len();
            let ty = match (first, last) {
                (true, true) => full,
                (true, false) => first_type,
                (false, true) => FragmentType::Last,
                (false, false) => FragmentType::Middle,
            };
            put_fragment(&mut self.buf, self.framing, ty, self.log_tag, &left[..n]);
            self.block_pos += self.header_len + n;
            left = &left[n..];
            first = false;
            if self.buf.len() >= self.options.buffer_size {
                self.flush()?;
            }
            if last {
                return Ok(record_offset);
            }
        }
    }

    /// Hands every buffered byte to the file (one write call). The bytes
    /// survive a process crash; they are durable only after a sync.
    pub fn flush(&mut self) -> Result<()> {
        self.check_poisoned()?;
        if !self.buf.is_empty() {
            let offset = self.flushed;
            let len = self.buf.len();
            let written = if !self.in_place {
                self.file.append(&self.buf)
            } else {
                // A recycled file's write ends with zeros where the next
                // fragment header would go (the end marker): what follows
                // the log's last record then reads as its end, not as the
                // older log's bytes. The next write overwrites it.
                let marker = if self.recycled {
                    self.end_marker_len()
                } else {
                    0
                };
                self.buf.resize(len + marker, 0);
                let end = offset + self.buf.len() as u64;
                self.grow_to(end);
                let written = self.file.write_at(offset, &self.buf);
                self.buf.truncate(len);
                written
            };
            if let Err(err) = written {
                self.poisoned = Some(format!("write at offset {offset} failed: {err}"));
                return Err(err).context(WriteSnafu {
                    path: self.path.clone(),
                    offset,
                });
            }
            self.flushed += self.buf.len() as u64;
            self.buf.clear();
        }
        if self.options.bytes_per_sync > 0
            && self.flushed - self.synced >= self.options.bytes_per_sync
        {
            self.sync_file()?;
        }
        Ok(())
    }

    /// Flushes and then syncs the file: every record added so far is
    /// durable when this returns `Ok`.
    pub fn sync(&mut self) -> Result<()> {
        self.flush()?;
        if self.synced < self.flushed {
            self.sync_file()?;
        }
        Ok(())
    }

    /// Syncs and closes the log, cutting off its preallocated space.
    pub fn close(mut self) -> Result<()> {
        self.sync()?;
        self.trim()
    }

    /// Flushes, then cuts the file off after the last record: the
    /// preallocated space (see [`WriterOptions::preallocate`]), or a
    /// recycled file's older bytes. For a log that will take no more
    /// records; records added later grow the file again. The cut needs no
    /// sync: a crash that undoes it leaves what was there after the last
    /// record (zeros, or the end marker and the older log's bytes), which
    /// a reader takes as the log's clean end.
    ///
    /// ```
    /// use std::path::Path;
    /// use lithify_vfs::{FileSystem, MemFs};
    /// use lithify_wal::{Reader, Writer, WriterOptions};
    ///
    /// let fs = MemFs::new();
    /// let path = Path::new("/000009.log");
    /// let options = WriterOptions::default().preallocate(1 << 20);
    /// let mut w = Writer::with_options(fs.create(path).unwrap(), path, 9, options).unwrap();
    /// w.add_record(b"record").unwrap();
    /// w.sync().unwrap();
    /// assert_eq!(fs.file_size(path).unwrap(), 1 << 20);
    /// w.trim().unwrap();
    /// assert_eq!(fs.file_size(path).unwrap(), w.bytes_written());
    /// ```
    ///
    /// A failed cut is not an error (it is reported as a `tracing`
    /// warning): what stays after the records still reads as their end.
    pub fn trim(&mut self) -> Result<()> {
        self.flush()?;
        if self.allocated > self.flushed {
            let offset = self.flushed;
            match self.file.set_len(offset) {
                Ok(()) => self.allocated = offset,
                Err(err) => tracing::warn!(
                    target: "lithify::wal",
                    path = %self.path.display(),
                    offset,
                    "cannot cut the log's unused space off at offset {offset}: {err}"
                ),
            }
        }
        Ok(())
    }

    /// Zeros from the end of the buffer through the header of the next
    /// fragment (past a block trailer, if one comes first).
    fn end_marker_len(&self) -> usize {
        let left = BLOCK_SIZE - self.block_pos;
        if left >= self.header_len {
            self.header_len
        } else {
            left + self.header_len
        }
    }

    /// Sizes the file to hold at least `end` bytes, a whole preallocation
    /// step at a time. Best effort, as RocksDB's preallocation is: a file
    /// system that cannot size the file (no space to reserve, no sparse
    /// files, no growing `ftruncate`) gets the writes alone, which extend
    /// it, and a `tracing` warning; preallocation stops for this log.
    fn grow_to(&mut self, end: u64) {
        if end <= self.allocated {
            return;
        }
        if self.options.preallocate == 0 {
            // A recycled file outgrown, or preallocation given up: the
            // write extends it.
            self.allocated = end;
            return;
        }
        let block = BLOCK_SIZE as u64;
        let step = self.options.preallocate.div_ceil(block) * block;
        let size = (self.allocated + step).max(end.div_ceil(block) * block);
        match self.file.set_len(size) {
            Ok(()) => self.allocated = size,
            Err(err) => {
                tracing::warn!(
                    target: "lithify::wal",
                    path = %self.path.display(),
                    size,
                    "cannot size the log to {size} bytes ahead of its records ({err}); it grows with its writes"
                );
                self.options.preallocate = 0;
                self.allocated = end;
            }
        }
    }

    fn sync_file(&mut self) -> Result<()> {
        if let Err(err) = self.file.sync_data() {
            self.poisoned = Some(format!("sync failed: {err}"));
            return Err(err).context(SyncSnafu {
                path: self.path.clone(),
            });
        }
        self.synced = self.flushed;
        Ok(())
    }

    fn check_poisoned(&self) -> Result<()> {
        match &self.poisoned {
            None => Ok(()),
            Some(cause) => PoisonedSnafu {
                path: self.path.clone(),
                cause: cause.clone(),
            }
            .fail(),
        }
    }

    /// Size of the log including buffered bytes: the offset the next
    /// record's bytes start at (after any block trailer).
    #[inline]
    pub fn bytes_written(&self) -> u64 {
        self.flushed + self.buf.len() as u64
    }

    /// Bytes of the records added so far as given, before compression and
    /// framing.
    #[inline]
    pub fn record_bytes(&self) -> u64 {
        self.record_bytes
    }

    /// Bytes handed to the file so far.
    #[inline]
    pub fn flushed_len(&self) -> u64 {
        self.flushed
    }

    /// Bytes known to be durable: a record whose end offset is at most this
    /// survives power loss.
    #[inline]
    pub fn synced_len(&self) -> u64 {
        self.synced
    }

    /// Whether an earlier failure poisoned the writer.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.is_some()
    }

    /// The log number written in the header (and in every fragment of a
    /// tagged log).
    pub fn log_number(&self) -> u64 {
        self.log_number
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}
