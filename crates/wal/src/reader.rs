//! Reading a log back, with RocksDB's four recovery modes (see the crate
//! documentation for what each does with damage).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lithify_base::Id;
use lithify_vfs::RandomAccessFile;
use snafu::ResultExt;

use crate::error::{CorruptionSnafu, Error, NotALogSnafu, ReadSnafu, Result};
use crate::format::{
    BLOCK_SIZE, DecompressError, FILE_HEADER_LEN, FRAGMENT_HEADER_LEN, FileHeader, FileHeaderError,
    FragmentHeader, FragmentType, Framing, OWNER_LEN, RECYCLED_LEN, SAFE_TO_IGNORE,
    decompress_record, fragment_checksum, log_number_tag,
};

/// What the reader does with damaged records (RocksDB's `WALRecoveryMode`).
/// See the [crate documentation](crate#damage-and-recovery-modes) for the
/// full table.
///
/// Exhaustive on purpose: RocksDB's four modes, each of which the engine
/// names and applies; a new one must stop its build until it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RecoveryMode {
    /// A damaged or incomplete tail is dropped; damage followed by valid
    /// records is an error. For logs that should have been closed cleanly
    /// but may have been cut by a crash during the last write.
    TolerateCorruptedTailRecords,
    /// Any damage, even a torn tail, is an error.
    AbsoluteConsistency,
    /// Stop at the first damage and return everything before it: the log
    /// as it was at some point in time. The default.
    #[default]
    PointInTimeRecovery,
    /// Drop every damaged record and keep reading: salvage as much as
    /// possible, accepting holes.
    SkipAnyCorruptedRecords,
}

/// Why bytes were dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DropReason {
    /// The file ends inside the file header or a fragment header.
    TruncatedHeader,
    /// The file ends inside a fragment's payload.
    TruncatedFragment,
    /// The file ends after the first fragments of a record, before its last.
    IncompleteRecord,
    /// A fragment's length runs past the end of its block.
    BadLength,
    /// A fragment's (or the file header's) checksum does not match.
    ChecksumMismatch,
    /// A zero-filled header: space that was never written (preallocated, or
    /// exposed by a crash).
    Zeroed,
    /// A valid fragment, or file header, of another log: stale bytes of a
    /// reused file. Holds the low 32 bits of the other log's number.
    OtherLog(u32),
    /// A middle or last fragment without the first fragment of its record.
    MissingStart,
    /// A record's first fragment followed by the start of another record
    /// instead of its remaining fragments.
    PartialRecord,
    /// A fragment of a type this reader does not know and may not skip.
    UnknownType(u8),
    /// A compressed record whose fragments are intact but whose bytes do
    /// not decompress (format version 2).
    Undecodable(DecompressError),
}

impl DropReason {
    /// Whether a crash in the middle of an append can leave this behind:
    /// the file ends early (inside a header, a fragment or a record), or it
    /// holds zeros where the unwritten bytes would be. Anything else —
    /// a checksum mismatch, a bad length, another log's bytes, an unknown
    /// type — means bytes that were written have changed.
    ///
    /// ```
    /// use lithify_wal::DropReason;
    /// assert!(DropReason::TruncatedFragment.is_torn_write());
    /// assert!(!DropReason::ChecksumMismatch.is_torn_write());
    /// ```
    pub fn is_torn_write(&self) -> bool {
        matches!(
            self,
            DropReason::TruncatedHeader
                | DropReason::TruncatedFragment
                | DropReason::IncompleteRecord
                | DropReason::Zeroed
        )
    }
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DropReason::TruncatedHeader => write!(f, "the file ends inside a header"),
            DropReason::TruncatedFragment => write!(f, "the file ends inside a fragment"),
            DropReason::IncompleteRecord => {
                write!(f, "the file ends before the last fragment of a record")
            }
            DropReason::BadLength => write!(
                f,
                "a fragment length runs past its block (or past the end of a fragment that is whole)"
            ),
            DropReason::ChecksumMismatch => write!(f, "checksum mismatch"),
            DropReason::Zeroed => write!(f, "zero-filled bytes where a header should be"),
            DropReason::OtherLog(tag) => write!(
                f,
                "bytes of another log (number ending in {tag:#010x}): stale data of a reused file"
            ),
            DropReason::MissingStart => {
                write!(
                    f,
                    "a middle or last fragment without the start of its record"
                )
            }
            DropReason::PartialRecord => {
                write!(f, "a record's first fragment without its last")
            }
            DropReason::UnknownType(t) => write!(f, "unknown fragment type {t}"),
            DropReason::Undecodable(e) => {
                let what = match e {
                    DecompressError::BadLength => "its length is malformed",
                    DecompressError::ImpossibleLength => {
                        "its stated length is impossible for its size"
                    }
                    DecompressError::BadBlock => "its LZ4 block is malformed",
                };
                write!(f, "a compressed record does not decompress: {what}")
            }
        }
    }
}

/// A range of the file the reader dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DroppedRange {
    /// File offset of the first dropped byte.
    pub offset: u64,
    /// Number of dropped bytes.
    pub len: u64,
    /// Why (the first problem found in the range).
    pub reason: DropReason,
}

impl DroppedRange {
    /// One past the last dropped byte.
    pub fn end(&self) -> u64 {
        self.offset + self.len
    }
}

impl fmt::Display for DroppedRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "dropped {} bytes at offset {}: {}",
            self.len, self.offset, self.reason
        )
    }
}

/// Receives every range a [`Reader`] drops. Closures
/// `FnMut(&DroppedRange) + Send` are reporters.
pub trait Reporter: Send {
    /// Called once per dropped range, in file order.
    fn dropped(&mut self, range: &DroppedRange);
}

impl<F: FnMut(&DroppedRange) + Send> Reporter for F {
    fn dropped(&mut self, range: &DroppedRange) {
        self(range)
    }
}

/// How a log ended, once [`Reader::read_record`] has returned `Ok(None)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LogEnd {
    /// Every byte was part of an intact record (or block padding).
    Clean,
    /// The bytes from `offset` to the end of the file were dropped, and no
    /// valid fragment of this log follows them: a crash cut the last write.
    TornTail {
        /// Start of the dropped tail.
        offset: u64,
        /// The first problem found there.
        reason: DropReason,
    },
    /// Point-in-time recovery stopped at damage followed by valid data: the
    /// records after `offset` exist but were not returned.
    Corruption {
        /// Where the reader stopped (start of the damaged record).
        offset: u64,
        /// The problem found there.
        reason: DropReason,
    },
}

/// Counters of what a [`Reader`] returned and dropped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Records returned.
    pub records: u64,
    /// Payload bytes returned.
    pub record_bytes: u64,
    /// Dropped ranges reported.
    pub dropped_ranges: u64,
    /// Bytes in dropped ranges.
    pub dropped_bytes: u64,
}

/// A record returned by [`Reader::read_record`], borrowed from the reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// File offset of the record's first fragment (what
    /// [`Writer::add_record`](crate::Writer::add_record) returned).
    pub offset: u64,
    /// The record's bytes.
    pub payload: &'a [u8],
}

/// An owned record, yielded by [`Reader::into_records`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedRecord {
    /// File offset of the record's first fragment.
    pub offset: u64,
    /// The record's bytes.
    pub payload: Vec<u8>,
}

/// Whether a problem can be followed by valid data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tail {
    /// The problem runs to the end of the file by construction.
    Yes,
    /// Valid data follows (the fragment that revealed the problem).
    No,
    /// Scan the rest of the file from the resume point to find out.
    Scan,
    /// Scan the rest of the file from this offset.
    ScanFrom(u64),
}

/// One step of walking the file.
enum Physical {
    /// No more bytes.
    End,
    /// An intact fragment of this log; its payload is
    /// `block[start..start + len]`.
    Fragment {
        ty: u8,
        offset: u64,
        start: usize,
        len: usize,
    },
    /// A damaged spot; skip mode resumes at `resume`. The tail scan starts
    /// at `scan_from` (where the next fragment would be if the length were
    /// right; at most `resume`).
    Damaged {
        offset: u64,
        reason: DropReason,
        resume: u64,
        scan_from: u64,
        tail: Tail,
    },
}

/// Where the last returned record's payload lives.
enum Payload {
    Block {
        start: usize,
        len: usize,
    },
    Scratch,
    /// Decompressed into `plain`.
    Plain,
}

/// Reads the records of one log in order.
///
/// [`read_record`](Reader::read_record) returns records borrowed from the
/// reader's buffers (no allocation per record);
/// [`into_records`](Reader::into_records) is a std iterator of owned
/// records.
///
/// ```
/// use std::path::Path;
/// use std::sync::{Arc, Mutex};
/// use lithify_vfs::{FileSystem, MemFs};
/// use lithify_wal::{DropReason, LogEnd, Reader, RecoveryMode, Writer};
///
/// let fs = MemFs::new();
/// let path = Path::new("/000003.log");
/// let mut w = Writer::new(fs.create(path).unwrap(), path, 3).unwrap();
/// w.add_record(b"kept").unwrap();
/// w.sync().unwrap();
/// w.add_record(&[7; 100]).unwrap();
/// w.flush().unwrap();
/// drop(w);
///
/// // Cut the file in the middle of the second record, as a crash might.
/// let data = lithify_vfs::read_file(&fs, path).unwrap();
/// let mut f = fs.create(path).unwrap();
/// f.append(&data[..data.len() - 50]).unwrap();
///
/// let dropped = Arc::new(Mutex::new(Vec::new()));
/// let sink = dropped.clone();
/// let mut r = Reader::new(fs.open(path).unwrap(), path, 3)
///     .unwrap()
///     .with_mode(RecoveryMode::PointInTimeRecovery)
///     .with_reporter(move |range: &lithify_wal::DroppedRange| sink.lock().unwrap().push(*range));
/// assert_eq!(r.read_record().unwrap().unwrap().payload, b"kept");
/// assert!(r.read_record().unwrap().is_none());
/// assert!(matches!(r.end(), Some(LogEnd::TornTail { reason: DropReason::TruncatedFragment, .. })));
/// assert_eq!(dropped.lock().unwrap()[0].len, 111 - 50);
/// ```
pub struct Reader {
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    log_number: u64,
    log_tag: u32,
    /// The framing of the log's fragments: the header's, once it is read.
    framing: Framing,
    mode: RecoveryMode,
    reporter: Option<Box<dyn Reporter>>,
    /// Size of the file when the reader was created.
    file_len: u64,
    /// Where the zeros that run from after the last record to the end of
    /// the file begin, once reading met them.
    zero_tail: Option<u64>,
    /// The current block's bytes.
    block: Vec<u8>,
    /// File offset of `block[0]`.
    block_offset: u64,
    /// Next unread position in `block`.
    pos: usize,
    /// Whether the file header was checked.
    started: bool,
    /// Payload of the fragmented record being assembled.
    scratch: Vec<u8>,
    /// Offset of the record being assembled, if one is.
    record_start: Option<u64>,
    /// Whether the record being assembled is compressed.
    record_compressed: bool,
    /// The last compressed record, decompressed.
    plain: Vec<u8>,
    /// In skip mode, a dropped range not yet reported (merged with the next
    /// one if adjacent).
    pending: Option<DroppedRange>,
    /// The last dropped range (to tell a torn tail in skip mode).
    last_dropped: Option<DroppedRange>,
    end: Option<LogEnd>,
    failed: bool,
    stats: ReadStats,
    /// Buffer of the tail scan.
    scan_buf: Vec<u8>,
    /// The owner an `Identity` fragment right after the header names
    /// (format version 3).
    owner: Option<Id>,
    /// The format version of an intact file header.
    version: Option<u32>,
    /// The older log's number a `Recycled` fragment right after the
    /// header names: the file may end in that log's stale bytes.
    recycled: Option<u64>,
    /// A `Preallocated` fragment right after the header says the file
    /// may end in zeros not written yet.
    preallocated: bool,
    /// Where the stale tail of a recycled file begins, once reading met
    /// it.
    stale_tail: Option<u64>,
}

impl fmt::Debug for Reader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reader")
            .field("path", &self.path)
            .field("log_number", &self.log_number)
            .field("mode", &self.mode)
            .field("file_len", &self.file_len)
            .field("position", &(self.block_offset + self.pos as u64))
            .field("end", &self.end)
            .finish()
    }
}

impl Reader {
    /// A reader of log `log_number` in `file` (at `path`, for errors), in
    /// the default [`RecoveryMode::PointInTimeRecovery`] and without a
    /// reporter. Fragments of another log number are stale bytes.
    pub fn new(
        file: Arc<dyn RandomAccessFile>,
        path: impl AsRef<Path>,
        log_number: u64,
    ) -> Result<Reader> {
        let path = path.as_ref().to_path_buf();
        let file_len = file.size().context(ReadSnafu {
            path: path.clone(),
            offset: 0u64,
        })?;
        Ok(Reader {
            file,
            path,
            log_number,
            log_tag: log_number_tag(log_number),
            framing: Framing::Tagged,
            mode: RecoveryMode::default(),
            reporter: None,
            file_len,
            zero_tail: None,
            block: Vec::with_capacity(BLOCK_SIZE),
            block_offset: 0,
            pos: 0,
            started: false,
            scratch: Vec::new(),
            record_start: None,
            record_compressed: false,
            plain: Vec::new(),
            pending: None,
            last_dropped: None,
            end: None,
            failed: false,
            stats: ReadStats::default(),
            scan_buf: Vec::new(),
            owner: None,
            version: None,
            recycled: None,
            preallocated: false,
            stale_tail: None,
        })
    }

    /// The size of the file when the reader was made: it reads no further.
    pub fn file_len(&self) -> u64 {
        self.file_len
    }

    /// Where the log's **zero tail** begins, if reading ended at one:
    /// zeros that run from where the next fragment would start to the end
    /// of the file. That is the space a preallocating writer
    /// ([`WriterOptions::preallocate`](crate::WriterOptions::preallocate))
    /// had not written yet, or an unsynced write a crash left unwritten,
    /// and the log's clean end in every recovery mode; nothing there is
    /// reported as dropped. `None` when the log ended otherwise, or before
    /// the end.
    ///
    /// ```
    /// use std::path::Path;
    /// use lithify_vfs::{FileSystem, MemFs};
    /// use lithify_wal::{LogEnd, Reader, RecoveryMode, Writer, WriterOptions};
    ///
    /// let fs = MemFs::new();
    /// let path = Path::new("/000004.log");
    /// let options = WriterOptions::default().preallocate(1 << 20);
    /// let mut w = Writer::with_options(fs.create(path).unwrap(), path, 4, options).unwrap();
    /// w.add_record(b"only").unwrap();
    /// w.sync().unwrap();
    ///
    /// let file = fs.open(path).unwrap();
    /// let mut r = Reader::new(file, path, 4).unwrap().with_mode(RecoveryMode::AbsoluteConsistency);
    /// assert_eq!(r.read_record().unwrap().unwrap().payload, b"only");
    /// assert!(r.read_record().unwrap().is_none());
    /// assert_eq!(r.end(), Some(LogEnd::Clean));
    /// assert_eq!(r.zero_tail(), Some(w.bytes_written()));
    /// ```
    pub fn zero_tail(&self) -> Option<u64> {
        self.zero_tail
    }

    /// The number of the older log whose file this log was written over
    /// (a `Recycled` fragment right after the header names it), if it
    /// was. Reads the file header if no record was read yet.
    pub fn recycled_from(&mut self) -> Result<Option<u64>> {
        self.start()?;
        Ok(self.recycled)
    }

    /// Where a recycled log's **stale tail** begins, if reading ended at
    /// one: the older log's bytes after this log's last record (see
    /// [`recycled_from`](Reader::recycled_from)). The zeros of the
    /// writer's end marker, or an intact fragment of the older log, met
    /// where a record would start, after which no intact fragment of this
    /// log follows, are that tail: the log's clean end in every recovery
    /// mode, and nothing there is reported as dropped. Anything else there
    /// (a cut or changed record) is damage, as in any log. A recycled log
    /// that ends at the end of its file, or in zeros through it, has none.
    ///
    /// ```
    /// use std::path::Path;
    /// use lithify_vfs::{FileSystem, MemFs};
    /// use lithify_wal::{LogEnd, Reader, Writer, WriterOptions};
    ///
    /// let fs = MemFs::new();
    /// let old = Path::new("/000003.log");
    /// let mut w = Writer::new(fs.create(old).unwrap(), old, 3).unwrap();
    /// for i in 0..100u32 {
    ///     w.add_record(&i.to_le_bytes().repeat(20)).unwrap();
    /// }
    /// w.close().unwrap();
    ///
    /// // Log 3 is obsolete: log 8 is written over its file.
    /// let new = Path::new("/000008.log");
    /// fs.rename(old, new).unwrap();
    /// let file = fs.open_append(new).unwrap();
    /// let mut w = Writer::recycle(file, new, 8, 3, WriterOptions::default()).unwrap();
    /// let end = {
    ///     w.add_record(b"fresh").unwrap();
    ///     w.sync().unwrap();
    ///     w.bytes_written()
    /// };
    ///
    /// let mut r = Reader::new(fs.open(new).unwrap(), new, 8).unwrap();
    /// assert_eq!(r.recycled_from().unwrap(), Some(3));
    /// assert_eq!(r.read_record().unwrap().unwrap().payload, b"fresh");
    /// assert!(r.read_record().unwrap().is_none());
    /// assert_eq!(r.end(), Some(LogEnd::Clean));
    /// assert_eq!(r.stale_tail(), Some(end));
    /// ```
    pub fn stale_tail(&self) -> Option<u64> {
        self.stale_tail
    }

    /// Where this log's records end, if reading ended cleanly before the
    /// end of the file: at its [zero tail](Reader::zero_tail) or its
    /// [stale tail](Reader::stale_tail).
    pub fn records_end(&self) -> Option<u64> {
        self.zero_tail.or(self.stale_tail)
    }

    /// Sets the recovery mode.
    pub fn with_mode(mut self, mode: RecoveryMode) -> Self {
        self.mode = mode;
        self
    }

    /// Sets the reporter that receives every dropped range.
    pub fn with_reporter(mut self, reporter: impl Reporter + 'static) -> Self {
        self.reporter = Some(Box::new(reporter));
        self
    }

    /// The recovery mode.
    pub fn mode(&self) -> RecoveryMode {
        self.mode
    }

    /// The log number this reader expects.
    pub fn log_number(&self) -> u64 {
        self.log_number
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How the log ended, once `read_record` returned `Ok(None)`; `None`
    /// before that or after an error.
    pub fn end(&self) -> Option<LogEnd> {
        self.end
    }

    /// The log's owner: the identity in the `Identity` fragment right
    /// after a version 3 or 4 header; `None` for versions 1 and 2, or when that
    /// fragment is damaged (then reading reports it like any damage). Reads
    /// the file header if no record was read yet.
    pub fn owner(&mut self) -> Result<Option<Id>> {
        self.start()?;
        Ok(self.owner)
    }

    /// The format version of the log's file header (1 to 4); `None`
    /// when the header is damaged, missing or another log's (reading
    /// reports that like any damage). Reads the file header if no record
    /// was read yet.
    pub fn format_version(&mut self) -> Result<Option<u32>> {
        self.start()?;
        Ok(self.version)
    }

    /// Reads the file header, once, before the first record.
    fn start(&mut self) -> Result<()> {
        if !self.started && self.end.is_none() && !self.failed {
            self.started = true;
            if let Err(e) = self.check_file_header() {
                self.failed = true;
                return Err(e);
            }
        }
        Ok(())
    }

    /// What was returned and dropped so far.
    pub fn stats(&self) -> ReadStats {
        self.stats
    }

    /// The next record, `Ok(None)` at the end of the log, or an error the
    /// recovery mode does not tolerate. After an error or the end, further
    /// calls return `Ok(None)`.
    pub fn read_record(&mut self) -> Result<Option<Record<'_>>> {
        match self.next_payload() {
            Ok(Some((offset, payload))) => {
                let payload = match payload {
                    Payload::Block { start, len } => &self.block[start..start + len],
                    Payload::Scratch => &self.scratch[..],
                    Payload::Plain => &self.plain[..],
                };
                self.stats.records += 1;
                self.stats.record_bytes += payload.len() as u64;
                Ok(Some(Record { offset, payload }))
            }
            Ok(None) => Ok(None),
            Err(err) => {
                self.failed = true;
                Err(err)
            }
        }
    }

    /// The records as a std iterator of owned records; iteration ends after
    /// the first error.
    pub fn into_records(self) -> Records {
        Records {
            reader: self,
            done: false,
        }
    }

    fn next_payload(&mut self) -> Result<Option<(u64, Payload)>> {
        if self.end.is_some() || self.failed {
            return Ok(None);
        }
        if !self.started {
            self.started = true;
            if !self.check_file_header()? {
                return Ok(None);
            }
        }
        loop {
            let (ty, offset, start, len) = match self.next_physical()? {
                Physical::End => {
                    if let Some(record) = self.record_start {
                        let eof = self.file_len;
                        if self.problem(
                            record,
                            eof,
                            DropReason::IncompleteRecord,
                            eof,
                            Tail::Yes,
                        )? {
                            continue;
                        }
                        return Ok(None);
                    }
                    self.finish_clean();
                    return Ok(None);
                }
                Physical::Damaged {
                    offset,
                    reason,
                    resume,
                    scan_from,
                    tail,
                } => {
                    let start = self.record_start.unwrap_or(offset);
                    let tail = match tail {
                        Tail::Scan => Tail::ScanFrom(scan_from),
                        other => other,
                    };
                    if self.problem(start, offset, reason, resume, tail)? {
                        continue;
                    }
                    return Ok(None);
                }
                Physical::Fragment {
                    ty,
                    offset,
                    start,
                    len,
                } => (ty, offset, start, len),
            };
            let fragment_end = offset + (self.framing.header_len() + len) as u64;
            // A record this fragment completes: where it starts, where its
            // stored bytes are, and whether they are compressed.
            let (record, stored, compressed) = match FragmentType::from_u8(ty) {
                Some(t @ (FragmentType::Full | FragmentType::Lz4Full)) => {
                    if !self.close_partial(offset)? {
                        return Ok(None);
                    }
                    let stored = Payload::Block { start, len };
                    (offset, stored, t == FragmentType::Lz4Full)
                }
                Some(t @ (FragmentType::First | FragmentType::Lz4First)) => {
                    if !self.close_partial(offset)? {
                        return Ok(None);
                    }
                    self.record_start = Some(offset);
                    self.record_compressed = t == FragmentType::Lz4First;
                    self.scratch.clear();
                    self.scratch
                        .extend_from_slice(&self.block[start..start + len]);
                    continue;
                }
                Some(FragmentType::Middle) | Some(FragmentType::Last) => {
                    let Some(record) = self.record_start else {
                        if self.problem(
                            offset,
                            offset,
                            DropReason::MissingStart,
                            fragment_end,
                            Tail::Scan,
                        )? {
                            continue;
                        }
                        return Ok(None);
                    };
                    self.scratch
                        .extend_from_slice(&self.block[start..start + len]);
                    if ty != FragmentType::Last as u8 {
                        continue;
                    }
                    self.record_start = None;
                    (record, Payload::Scratch, self.record_compressed)
                }
                // Not records: taken with the header.
                Some(
                    FragmentType::Identity | FragmentType::Recycled | FragmentType::Preallocated,
                ) => continue,
                None if ty & SAFE_TO_IGNORE != 0 => continue,
                None => {
                    let start = self.record_start.unwrap_or(offset);
                    if self.problem(
                        start,
                        offset,
                        DropReason::UnknownType(ty),
                        fragment_end,
                        Tail::Scan,
                    )? {
                        continue;
                    }
                    return Ok(None);
                }
            };
            let payload = if compressed {
                let bytes = match stored {
                    Payload::Block { start, len } => &self.block[start..start + len],
                    _ => &self.scratch[..],
                };
                if let Err(e) = decompress_record(bytes, &mut self.plain) {
                    // Intact fragments that do not decompress: dropped like
                    // damage (valid data may follow).
                    let reason = DropReason::Undecodable(e);
                    if self.problem(record, record, reason, fragment_end, Tail::Scan)? {
                        continue;
                    }
                    return Ok(None);
                }
                Payload::Plain
            } else {
                stored
            };
            self.flush_pending();
            return Ok(Some((record, payload)));
        }
    }

    /// A `Full` or `First` fragment at `offset` while a record is open: the
    /// open record is dropped. Returns whether reading goes on.
    fn close_partial(&mut self, offset: u64) -> Result<bool> {
        let Some(record) = self.record_start else {
            return Ok(true);
        };
        if self.mode == RecoveryMode::SkipAnyCorruptedRecords {
            // The fragment at `offset` is intact and already consumed: drop
            // the open record and let the caller go on with this fragment.
            self.record_start = None;
            self.scratch.clear();
            self.drop_range(record, offset, DropReason::PartialRecord);
            return Ok(true);
        }
        self.problem(record, offset, DropReason::PartialRecord, offset, Tail::No)
    }

    /// Checks the file header. Returns whether reading goes on.
    fn check_file_header(&mut self) -> Result<bool> {
        if self.file_len == 0 {
            // Nothing was ever made durable: an empty log.
            self.finish_clean();
            return Ok(false);
        }
        self.load_block(0)?;
        if self.block.len() < FILE_HEADER_LEN {
            if self.zeros_to_end(0)? {
                // Zeros only: nothing of the log was written.
                self.finish_clean();
                return Ok(false);
            }
            let eof = self.file_len;
            return self.problem(0, 0, DropReason::TruncatedHeader, eof, Tail::Yes);
        }
        let mut bytes = [0u8; FILE_HEADER_LEN];
        bytes.copy_from_slice(&self.block[..FILE_HEADER_LEN]);
        // Fragments start right after the fixed-size header, damaged or not.
        let after = FILE_HEADER_LEN as u64;
        match FileHeader::decode(&bytes) {
            Ok(header) if header.log_number == self.log_number => {
                self.pos = FILE_HEADER_LEN;
                self.version = Some(header.version);
                self.framing = header.framing();
                self.take_metadata(header.is_owned());
                Ok(true)
            }
            Ok(header) => self.problem(
                0,
                0,
                DropReason::OtherLog(log_number_tag(header.log_number)),
                after,
                Tail::Scan,
            ),
            Err(FileHeaderError::Zeroed) => {
                if self.zeros_to_end(0)? {
                    // Zeros only: nothing of the log was written (a file
                    // sized before a power cut let its header reach the
                    // disk), an empty log like an empty file.
                    self.finish_clean();
                    return Ok(false);
                }
                self.after_damaged_header()?;
                self.problem(0, 0, DropReason::Zeroed, after, Tail::Scan)
            }
            Err(FileHeaderError::ChecksumMismatch) => {
                self.after_damaged_header()?;
                self.problem(0, 0, DropReason::ChecksumMismatch, after, Tail::Scan)
            }
            Err(FileHeaderError::BadMagic) => NotALogSnafu {
                path: self.path.clone(),
                message: format!(
                    "its first bytes are {:02x?}, not the log magic",
                    &bytes[..8]
                ),
            }
            .fail(),
            Err(e @ FileHeaderError::UnsupportedVersion(_)) => NotALogSnafu {
                path: self.path.clone(),
                message: e.to_string(),
            }
            .fail(),
        }
    }

    /// Takes the metadata fragments that follow the file header, each
    /// only if it is intact: the `Identity` fragment of an owned log, the
    /// `Recycled` fragment (tagged logs only: only they can tell the older
    /// log's bytes from their own; a compact log's is skipped like any
    /// unknown fragment), the `Preallocated` fragment. Leaves the position
    /// after the last one taken.
    fn take_metadata(&mut self, owned: bool) {
        if owned {
            self.owner = self
                .take_fragment(FragmentType::Identity, OWNER_LEN)
                .map(|p| Id::from_bytes(p.try_into().expect("OWNER_LEN bytes")));
        }
        if self.framing == Framing::Tagged {
            self.recycled = self
                .take_fragment(FragmentType::Recycled, RECYCLED_LEN)
                .map(|p| u64::from_le_bytes(p.try_into().expect("RECYCLED_LEN bytes")));
        }
        self.preallocated = self.take_fragment(FragmentType::Preallocated, 0).is_some();
    }

    /// The file header is damaged (block 0 is loaded): which framing the
    /// log has and what its intact metadata fragments say are found from
    /// the fragments themselves, so that a damaged header costs only its
    /// own bytes, not every record or the zero tail after it. The
    /// position is left at the header, for the damage to be reported.
    fn after_damaged_header(&mut self) -> Result<()> {
        self.framing = self.guess_framing()?;
        self.pos = FILE_HEADER_LEN;
        self.take_metadata(true);
        self.pos = 0;
        Ok(())
    }

    /// The framing of a log whose header is damaged: the first fragment
    /// found intact under one framing and not the other decides, looking
    /// right after the header (a version 4 log's `Identity` fragment is
    /// there) and then at each block start. Tagged if nothing decides.
    fn guess_framing(&mut self) -> Result<Framing> {
        let block = BLOCK_SIZE as u64;
        let mut at = FILE_HEADER_LEN as u64;
        while at < self.file_len {
            let tagged = self.intact_fragment_at(at, Framing::Tagged)?;
            let compact = self.intact_fragment_at(at, Framing::Compact)?;
            if tagged != compact {
                return Ok(if compact {
                    Framing::Compact
                } else {
                    Framing::Tagged
                });
            }
            at = at - at % block + block;
        }
        Ok(Framing::Tagged)
    }

    /// Whether an intact fragment of this log framed as `framing` starts
    /// at file offset `at` (and ends in its block).
    fn intact_fragment_at(&mut self, at: u64, framing: Framing) -> Result<bool> {
        let block = BLOCK_SIZE as u64;
        let block_end = (at - at % block + block).min(self.file_len);
        let header_len = framing.header_len() as u64;
        if at + header_len > block_end {
            return Ok(false);
        }
        let mut raw = [0u8; FRAGMENT_HEADER_LEN];
        let raw = &mut raw[..header_len as usize];
        self.file.read_exact_at(at, raw).context(ReadSnafu {
            path: self.path.clone(),
            offset: at,
        })?;
        let header = FragmentHeader::decode(raw, framing);
        let end = at + header_len + u64::from(header.length);
        if header.is_zero() || !header.is_of(self.log_tag) || end > block_end {
            return Ok(false);
        }
        self.scan_buf.resize((end - at - 4) as usize, 0);
        self.scan_buf[..raw.len() - 4].copy_from_slice(&raw[4..]);
        let payload_at = at + header_len;
        self.file
            .read_exact_at(payload_at, &mut self.scan_buf[raw.len() - 4..])
            .context(ReadSnafu {
                path: self.path.clone(),
                offset: payload_at,
            })?;
        Ok(fragment_checksum(&self.scan_buf) == header.checksum)
    }

    /// Takes an intact fragment of this log of type `ty` with a
    /// `len`-byte payload at the current position (the header's metadata
    /// fragments: `Identity`, `Recycled`, `Preallocated`), and returns its
    /// payload; otherwise leaves the position to the fragment loop, which
    /// reports whatever is wrong there.
    fn take_fragment(&mut self, ty: FragmentType, len: usize) -> Option<Vec<u8>> {
        let start = self.pos;
        let header_len = self.framing.header_len();
        let end = start + header_len + len;
        let bytes = self.block.get(start..end)?;
        let header = FragmentHeader::decode(bytes, self.framing);
        let intact = header.ty == ty as u8
            && usize::from(header.length) == len
            && header.is_of(self.log_tag)
            && fragment_checksum(&bytes[4..]) == header.checksum;
        if !intact {
            return None;
        }
        self.pos = end;
        Some(bytes[header_len..].to_vec())
    }

    /// Reads the block starting at `offset` (a multiple of `BLOCK_SIZE`)
    /// into `self.block`; short only at the end of the file.
    fn load_block(&mut self, offset: u64) -> Result<()> {
        let len = (self.file_len.saturating_sub(offset)).min(BLOCK_SIZE as u64) as usize;
        self.block.resize(len, 0);
        self.file
            .read_exact_at(offset, &mut self.block)
            .context(ReadSnafu {
                path: self.path.clone(),
                offset,
            })?;
        self.block_offset = offset;
        self.pos = 0;
        Ok(())
    }

    /// Moves to file offset `to`, loading its block if needed.
    fn seek(&mut self, to: u64) -> Result<()> {
        let block = to - to % BLOCK_SIZE as u64;
        if block != self.block_offset || self.block.is_empty() {
            self.load_block(block)?;
        }
        self.pos = (to - block) as usize;
        if block == 0 {
            self.pos = self.pos.max(FILE_HEADER_LEN);
        }
        Ok(())
    }

    fn next_physical(&mut self) -> Result<Physical> {
        if self.zero_tail.is_some() {
            return Ok(Physical::End);
        }
        let header_len = self.framing.header_len();
        loop {
            let here = self.block_offset + self.pos as u64;
            let left = self.block.len().saturating_sub(self.pos);
            if left > 0
                && left < header_len
                && self.block.len() < BLOCK_SIZE
                && self.may_end_in_zeros()
                && self.zeros_to_end(here)?
            {
                // Zeros where a header would start, through the end of
                // the file: the space after the last record.
                return Ok(Physical::End);
            }
            if left < header_len {
                if self.block.len() == BLOCK_SIZE {
                    // Block trailer (or exactly the block end): next block.
                    let next = self.block_offset + BLOCK_SIZE as u64;
                    if next >= self.file_len {
                        self.pos = self.block.len();
                        return Ok(Physical::End);
                    }
                    self.load_block(next)?;
                    continue;
                }
                // The last, partial block.
                if left == 0 {
                    return Ok(Physical::End);
                }
                let in_trailer = self.pos > BLOCK_SIZE - header_len;
                if in_trailer && self.block[self.pos..].iter().all(|&b| b == 0) {
                    // Padding the writer put before a fragment that never
                    // made it to disk: nothing of a record is lost here.
                    self.pos = self.block.len();
                    return Ok(Physical::End);
                }
                self.pos = self.block.len();
                return Ok(Physical::Damaged {
                    offset: here,
                    reason: DropReason::TruncatedHeader,
                    resume: self.file_len,
                    scan_from: self.file_len,
                    tail: Tail::Yes,
                });
            }
            let next_block = (self.block_offset + BLOCK_SIZE as u64).min(self.file_len);
            let header = FragmentHeader::decode(&self.block[self.pos..], self.framing);
            let damaged = |reason, resume, tail| Physical::Damaged {
                offset: here,
                reason,
                resume,
                scan_from: resume,
                tail,
            };
            if header.is_zero() {
                if self.may_end_in_zeros() && self.zeros_to_end(here)? {
                    return Ok(Physical::End);
                }
                return Ok(damaged(DropReason::Zeroed, next_block, Tail::Scan));
            }
            let len = usize::from(header.length);
            let start = self.pos + header_len;
            if start + len > self.block.len() {
                return Ok(if self.block.len() < BLOCK_SIZE {
                    // The file ends inside the fragment: a write a crash
                    // cut short — unless the bytes that are there verify
                    // as a whole fragment once the length says so, which
                    // means the length field changed, not that bytes are
                    // missing.
                    let mut fixed = self.block[self.pos + 4..].to_vec();
                    let have = self.block.len() - start;
                    fixed[..2].copy_from_slice(&(have as u16).to_le_bytes());
                    if fragment_checksum(&fixed) == header.checksum {
                        damaged(DropReason::BadLength, self.file_len, Tail::Yes)
                    } else {
                        damaged(DropReason::TruncatedFragment, self.file_len, Tail::Yes)
                    }
                } else {
                    damaged(DropReason::BadLength, next_block, Tail::Scan)
                });
            }
            if fragment_checksum(&self.block[self.pos + 4..start + len]) != header.checksum {
                // The length may be damaged too, so skip mode drops the rest
                // of the block; the tail scan still looks right after the
                // fragment, where the next one is if the length is intact.
                return Ok(Physical::Damaged {
                    offset: here,
                    reason: DropReason::ChecksumMismatch,
                    resume: next_block,
                    scan_from: here + (header_len + len) as u64,
                    tail: Tail::Scan,
                });
            }
            let fragment_end = here + (header_len + len) as u64;
            if let Some(tag) = header.log_tag.filter(|&t| t != self.log_tag) {
                return Ok(damaged(DropReason::OtherLog(tag), fragment_end, Tail::Scan));
            }
            self.pos = start + len;
            return Ok(Physical::Fragment {
                ty: header.ty,
                offset: here,
                start,
                len,
            });
        }
    }

    /// Handles a problem found at `at`, whose damaged record starts at
    /// `start`; in skip mode reading resumes at `resume`. Returns whether
    /// reading goes on, or the error the mode demands.
    fn problem(
        &mut self,
        start: u64,
        at: u64,
        reason: DropReason,
        resume: u64,
        tail: Tail,
    ) -> Result<bool> {
        self.record_start = None;
        self.scratch.clear();
        let eof = self.file_len;
        if self.is_stale_tail(start, at, reason)
            && !self.valid_fragment_in_block(at + 1)?
            && self.is_tail(tail, resume)?
        {
            // Where a record would start, the writer's end marker or an
            // intact fragment of the older log, and nothing of this log
            // follows: the stale tail, a clean end.
            self.stale_tail = Some(start);
            self.finish_clean();
            return Ok(false);
        }
        if self.mode == RecoveryMode::SkipAnyCorruptedRecords {
            let resume = resume.max(start).min(eof);
            self.drop_range(start, resume, reason);
            if resume >= eof {
                self.flush_pending();
                self.finish_at_eof();
                return Ok(false);
            }
            self.seek(resume)?;
            return Ok(true);
        }
        self.report(DroppedRange {
            offset: start,
            len: eof - start,
            reason,
        });
        let is_tail = self.is_tail(tail, resume)?;
        let corruption = || -> Error {
            CorruptionSnafu {
                path: self.path.clone(),
                offset: at,
                record_offset: start,
                reason,
            }
            .build()
        };
        match self.mode {
            RecoveryMode::AbsoluteConsistency => Err(corruption()),
            RecoveryMode::TolerateCorruptedTailRecords if !is_tail => Err(corruption()),
            RecoveryMode::TolerateCorruptedTailRecords => {
                self.end = Some(LogEnd::TornTail {
                    offset: start,
                    reason,
                });
                Ok(false)
            }
            _ => {
                self.end = Some(if is_tail {
                    LogEnd::TornTail {
                        offset: start,
                        reason,
                    }
                } else {
                    LogEnd::Corruption {
                        offset: start,
                        reason,
                    }
                });
                Ok(false)
            }
        }
    }

    /// Whether a problem found at `at`, in a record starting at `start`,
    /// may begin a recycled log's stale tail: it is where a record would
    /// start, and it is the zeros of the writer's end marker or an intact
    /// fragment of the log the file held before.
    fn is_stale_tail(&self, start: u64, at: u64, reason: DropReason) -> bool {
        let Some(previous) = self.recycled else {
            return false;
        };
        start == at
            && match reason {
                DropReason::Zeroed => true,
                DropReason::OtherLog(tag) => tag == log_number_tag(previous),
                _ => false,
            }
    }

    /// Whether a problem is at the tail: no intact fragment of this log
    /// follows it.
    fn is_tail(&mut self, tail: Tail, resume: u64) -> Result<bool> {
        Ok(match tail {
            Tail::Yes => true,
            Tail::No => false,
            Tail::Scan => !self.valid_fragment_from(resume)?,
            Tail::ScanFrom(from) => !self.valid_fragment_from(from.min(resume))?,
        })
    }

    /// Skip mode: drops `[start, end)`, merging with a pending adjacent range.
    fn drop_range(&mut self, start: u64, end: u64, reason: DropReason) {
        match &mut self.pending {
            Some(p) if p.end() == start => p.len = end - p.offset,
            _ => {
                self.flush_pending();
                self.pending = Some(DroppedRange {
                    offset: start,
                    len: end - start,
                    reason,
                });
            }
        }
    }

    fn flush_pending(&mut self) {
        if let Some(range) = self.pending.take() {
            self.report(range);
        }
    }

    fn report(&mut self, range: DroppedRange) {
        if range.len == 0 {
            return;
        }
        self.stats.dropped_ranges += 1;
        self.stats.dropped_bytes += range.len;
        self.last_dropped = Some(range);
        if let Some(reporter) = &mut self.reporter {
            reporter.dropped(&range);
        }
    }

    fn finish_clean(&mut self) {
        self.flush_pending();
        self.finish_at_eof();
    }

    fn finish_at_eof(&mut self) {
        self.end = Some(match self.last_dropped {
            Some(range) if range.end() >= self.file_len => LogEnd::TornTail {
                offset: range.offset,
                reason: range.reason,
            },
            _ => LogEnd::Clean,
        });
    }

    /// Whether an intact fragment of this log starts at `from` or at any
    /// later block start.
    /// Whether every byte from `from` (inside the current block) to the
    /// end of the file is zero; if so, reading ends there (`zero_tail`).
    fn zeros_to_end(&mut self, from: u64) -> Result<bool> {
        let in_block = (from - self.block_offset) as usize;
        if !all_zero(&self.block[in_block.min(self.block.len())..]) {
            return Ok(false);
        }
        const CHUNK: u64 = 1 << 20;
        let mut at = self.block_offset + self.block.len() as u64;
        while at < self.file_len {
            let len = (self.file_len - at).min(CHUNK) as usize;
            self.scan_buf.resize(len, 0);
            self.file
                .read_exact_at(at, &mut self.scan_buf)
                .context(ReadSnafu {
                    path: self.path.clone(),
                    offset: at,
                })?;
            if !all_zero(&self.scan_buf) {
                return Ok(false);
            }
            at += len as u64;
        }
        // A record whose first fragments came before the zeros ends
        // the records where it starts (it is dropped as incomplete).
        self.zero_tail = Some(self.record_start.unwrap_or(from));
        self.pos = self.block.len();
        Ok(true)
    }

    /// Whether the file may end in zeros not written yet: the log says it
    /// is preallocated, or recycled (whose writer's end marker is zeros).
    fn may_end_in_zeros(&self) -> bool {
        self.preallocated || self.recycled.is_some()
    }

    /// Whether an intact fragment of this log starts at any offset from
    /// `from` to the end of `from`'s block (a stricter look than the tail
    /// scan's block starts, for a recycled log's stale tail: damage inside
    /// the last block must not pass for one).
    fn valid_fragment_in_block(&mut self, from: u64) -> Result<bool> {
        let block = BLOCK_SIZE as u64;
        let block_start = from - from % block;
        let first =
            ((from - block_start) as usize).max(if block_start == 0 { FILE_HEADER_LEN } else { 0 });
        let block_len = (self.file_len - block_start).min(block) as usize;
        let tag = self.log_tag.to_le_bytes();
        let mut bytes = vec![0u8; block_len];
        self.file
            .read_exact_at(block_start, &mut bytes)
            .context(ReadSnafu {
                path: self.path.clone(),
                offset: block_start,
            })?;
        // Only recycled logs, which are tagged, ask.
        debug_assert_eq!(self.framing, Framing::Tagged);
        for pos in first..block_len.saturating_sub(FRAGMENT_HEADER_LEN - 1) {
            // The log number tag first: a cheap filter.
            if bytes[pos + 7..pos + 11] != tag {
                continue;
            }
            let header = FragmentHeader::decode(&bytes[pos..], Framing::Tagged);
            let end = pos + FRAGMENT_HEADER_LEN + usize::from(header.length);
            if !header.is_zero()
                && end <= block_len
                && fragment_checksum(&bytes[pos + 4..end]) == header.checksum
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    fn valid_fragment_from(&mut self, from: u64) -> Result<bool> {
        let block = BLOCK_SIZE as u64;
        let mut at = from;
        while at < self.file_len {
            let block_start = at - at % block;
            let pos = ((at - block_start) as usize).max(if block_start == 0 {
                FILE_HEADER_LEN
            } else {
                0
            });
            if pos + self.framing.header_len() <= BLOCK_SIZE
                && self.intact_fragment_at(block_start + pos as u64, self.framing)?
            {
                return Ok(true);
            }
            at = block_start + block;
        }
        Ok(false)
    }
}

/// Whether `bytes` are all zero (a branch per 4 KiB, so it vectorizes).
fn all_zero(bytes: &[u8]) -> bool {
    bytes
        .chunks(4096)
        .all(|c| c.iter().fold(0u8, |acc, &b| acc | b) == 0)
}

/// The records of a [`Reader`] as owned values; see
/// [`Reader::into_records`].
#[derive(Debug)]
pub struct Records {
    reader: Reader,
    done: bool,
}

impl Records {
    /// The reader, e.g. to ask how the log ended.
    pub fn reader(&self) -> &Reader {
        &self.reader
    }
}

impl Iterator for Records {
    type Item = Result<OwnedRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let step = self.reader.read_record().map(|r| {
            r.map(|r| OwnedRecord {
                offset: r.offset,
                payload: r.payload.to_vec(),
            })
        });
        lithify_base::iter::fuse_step(&mut self.done, step)
    }
}
