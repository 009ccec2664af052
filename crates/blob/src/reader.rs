//! Reading a blob file: one value by its index, or every record in order.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use lithify_base::masked_xxh3_64;
use lithify_vfs::RandomAccessFile;
use snafu::IntoError as _;
use xxhash_rust::xxh3::Xxh3;

use crate::compression::{CODE_NONE, code_name, decompress};
use crate::error::{CorruptionSnafu, Error, IoSnafu, Result};
use crate::format::{
    BlobFileFooter, BlobFileHeader, BlobIndex, FOOTER_LEN, HEADER_LEN, MAX_BLOB_LEN,
    RECORD_HEADER_LEN, RecordHeader,
};

/// How much [`BlobFileReader::records`] reads ahead.
const READAHEAD: u64 = 256 << 10;

/// The first window [`BlobFileReader::get_sequential`] reads ahead (it
/// doubles up to [`READAHEAD_WINDOW`]).
const READAHEAD_MIN: u64 = 16 << 10;
/// The largest window of one file.
const READAHEAD_WINDOW: u64 = 128 << 10;
/// Reads of one file in a row that each follow the one before, before
/// [`BlobFileReader::get_sequential`] reads ahead. Short runs are common
/// where they cost most: a seek and ten nexts over 1 KiB values meets a
/// pair of values that a flush wrote side by side about twice, and
/// reading 16 KiB ahead at each pair made `seekrandom` 25% slower than
/// no readahead at all (36K against 47K seeks/s); from the fourth read in
/// a row it is as fast as none (46K), and long scans still get windows.
const READAHEAD_AFTER: u32 = 3;
/// Files a [`Readahead`] keeps a window of: a scan of a compacted table
/// goes through the blob files of several flushes at once, each in order.
const READAHEAD_FILES: usize = 8;

/// The readahead state of one reader of blob values (an iterator, a
/// compaction): per blob file it reads (the 8 used last), the window read
/// last and where the last record read starts and ends.
/// [`BlobFileReader::get_sequential`] keeps it.
#[derive(Debug, Clone)]
pub struct Readahead {
    windows: Vec<Window>,
    /// Reads of files made so far.
    file_reads: u64,
    /// The largest window (0: never read ahead).
    max_window: u64,
}

/// One file's window: `buf` holds the file's bytes from `start`.
#[derive(Debug, Clone, Default)]
struct Window {
    file: u64,
    start: u64,
    buf: Bytes,
    /// Where the last record read starts.
    last_at: u64,
    /// Where the last record read ends.
    next: u64,
    /// The current readahead size (0: reads are not in order).
    size: u64,
    /// Reads in a row so far that each followed the one before.
    streak: u32,
}

impl Default for Readahead {
    /// Windows of 16 KiB, doubling to 128 KiB (what iterators use).
    fn default() -> Self {
        Readahead::with_max_window(READAHEAD_WINDOW)
    }
}

impl Readahead {
    /// Windows that start at 16 KiB (or `max_window`, if smaller) and
    /// double up to `max_window` bytes; 0 never reads ahead (each value is
    /// one read, as [`BlobFileReader::get`]). Compaction uses it for
    /// RocksDB's `blob_compaction_readahead_size`.
    ///
    /// ```
    /// use lithify_blob::Readahead;
    ///
    /// let ahead = Readahead::with_max_window(2 << 20);
    /// assert_eq!(ahead.max_window(), 2 << 20);
    /// assert_eq!(Readahead::default().max_window(), 128 << 10);
    /// ```
    pub fn with_max_window(max_window: u64) -> Self {
        Readahead {
            windows: Vec::new(),
            file_reads: 0,
            max_window,
        }
    }

    /// The largest window read ahead, in bytes.
    pub fn max_window(&self) -> u64 {
        self.max_window
    }

    /// Reads of blob files made through this state (each miss of a
    /// window is one).
    pub fn file_reads(&self) -> u64 {
        self.file_reads
    }

    /// The window of `file`, moved to the front (the most recently used
    /// first; the least recently used is dropped past
    /// [`READAHEAD_FILES`]).
    fn window(&mut self, file: u64) -> &mut Window {
        match self.windows.iter().position(|w| w.file == file) {
            Some(0) => {}
            Some(i) => {
                let w = self.windows.remove(i);
                self.windows.insert(0, w);
            }
            None => {
                self.windows.truncate(READAHEAD_FILES - 1);
                self.windows.insert(
                    0,
                    Window {
                        file,
                        ..Window::default()
                    },
                );
            }
        }
        &mut self.windows[0]
    }
}

/// One record of a blob file, as [`BlobFileReader::records`] returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobRecord {
    /// The index that finds the record's value.
    pub index: BlobIndex,
    /// The user key stored with it.
    pub key: Vec<u8>,
    /// The value, decompressed.
    pub value: Vec<u8>,
}

/// What [`BlobFileReader::verify`] found in an intact file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobFileSummary {
    /// Number of records (equal to the footer's).
    pub blob_count: u64,
    /// Sum of their stored value lengths (equal to the footer's).
    pub blob_bytes: u64,
    /// The xxh3-64 of the whole file (unmasked), as
    /// [`BuiltBlobFile::file_checksum`](crate::BuiltBlobFile::file_checksum).
    pub file_checksum: u64,
}

/// An open blob file.
///
/// [`open`](Self::open) reads and checks the header and the footer; values
/// are read on demand with [`get`](Self::get), one read each, and are
/// checked every time. The reader holds no mutable state: it is `Send` and
/// `Sync`, and any number of threads may read through one.
#[derive(Debug)]
pub struct BlobFileReader {
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    header: BlobFileHeader,
    footer: BlobFileFooter,
    file_size: u64,
    header_raw: [u8; HEADER_LEN],
    footer_raw: [u8; FOOTER_LEN],
}

impl BlobFileReader {
    /// Opens the blob file `file`; `path` names it in errors. Checks that it
    /// holds a header and a footer, their magic, checksums, version and
    /// reserved bytes, and that the footer's counts fit the file.
    pub fn open(file: Arc<dyn RandomAccessFile>, path: &Path) -> Result<Self> {
        let file_size = file
            .size()
            .map_err(|e| IoSnafu { path, offset: 0u64 }.into_error(e))?;
        let min = (HEADER_LEN + FOOTER_LEN) as u64;
        if file_size < min {
            return CorruptionSnafu {
                path,
                offset: 0u64,
                message: format!(
                    "a file of {file_size} bytes is shorter than a blob file's header and footer ({min} bytes)"
                ),
            }
            .fail();
        }
        let mut header_raw = [0u8; HEADER_LEN];
        file.read_exact_at(0, &mut header_raw)
            .map_err(|e| IoSnafu { path, offset: 0u64 }.into_error(e))?;
        let header = BlobFileHeader::decode(&header_raw).map_err(|message| {
            CorruptionSnafu {
                path,
                offset: 0u64,
                message,
            }
            .build()
        })?;
        let footer_at = file_size - FOOTER_LEN as u64;
        let mut footer_raw = [0u8; FOOTER_LEN];
        file.read_exact_at(footer_at, &mut footer_raw)
            .map_err(|e| {
                IoSnafu {
                    path,
                    offset: footer_at,
                }
                .into_error(e)
            })?;
        let footer = BlobFileFooter::decode(&footer_raw).map_err(|message| {
            CorruptionSnafu {
                path,
                offset: footer_at,
                message,
            }
            .build()
        })?;
        let room = file_size - min;
        let needed = footer
            .blob_count
            .checked_mul(RECORD_HEADER_LEN as u64)
            .and_then(|n| n.checked_add(footer.blob_bytes));
        if needed.is_none_or(|n| n > room) {
            return CorruptionSnafu {
                path,
                offset: footer_at,
                message: format!(
                    "the footer claims {} records of {} value bytes, more than the {room} bytes between header and footer hold",
                    footer.blob_count, footer.blob_bytes
                ),
            }
            .fail();
        }
        Ok(BlobFileReader {
            file,
            path: path.to_path_buf(),
            header,
            footer,
            file_size,
            header_raw,
            footer_raw,
        })
    }

    /// The file's header.
    pub fn header(&self) -> &BlobFileHeader {
        &self.header
    }

    /// The file's footer.
    pub fn footer(&self) -> &BlobFileFooter {
        &self.footer
    }

    /// The file's size in bytes (when it was opened).
    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// The file's path, as given to [`open`](Self::open).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Offset of the footer: where the records end.
    fn footer_offset(&self) -> u64 {
        self.file_size - FOOTER_LEN as u64
    }

    fn corruption(&self, offset: u64, message: impl Into<String>) -> Error {
        CorruptionSnafu {
            path: self.path.clone(),
            offset,
            message: message.into(),
        }
        .build()
    }

    /// Reads the value `index` points at, stored under `user_key`.
    ///
    /// One read covers the record (`index.offset - RECORD_HEADER_LEN -
    /// user_key.len()` up to `index.offset + index.size`). The record
    /// header's checksum is checked, then that its key length, stored
    /// length and compression are the index's, then the record checksum
    /// over key and stored value, then that the key is `user_key`; then the
    /// value is decompressed. Every failure, an index pointing outside the
    /// records included, is [`Error::Corruption`] naming the file and the
    /// record's offset. `index.file_number` is not checked: the caller
    /// chose this file by it.
    ///
    /// ```
    /// use std::path::Path;
    /// use lithify_base::Id;
    /// use lithify_blob::{BlobCompression, BlobFileHeader, BlobFileReader, BlobFileWriter};
    /// use lithify_vfs::{FileSystem, MemFs};
    ///
    /// let fs = MemFs::new();
    /// let path = Path::new("/000005.blob");
    /// let header = BlobFileHeader {
    ///     table_id: 0,
    ///     compression: BlobCompression::zstd(),
    ///     db_id: Id::random(),
    ///     session_id: Id::random(),
    ///     file_number: 5,
    /// };
    /// let mut w = BlobFileWriter::new(fs.create(path).unwrap(), path, header).unwrap();
    /// let big = vec![b'x'; 10_000];
    /// let index = w.add(b"big", &big).unwrap();
    /// assert_eq!(index.compression, BlobCompression::zstd().code());
    /// w.finish().unwrap();
    ///
    /// let reader = BlobFileReader::open(fs.open(path).unwrap(), path).unwrap();
    /// assert_eq!(reader.get(b"big", &index).unwrap(), big);
    /// // Another key, or an index that points elsewhere, is corruption.
    /// assert!(reader.get(b"bag", &index).unwrap_err().is_corruption());
    /// let wrong = lithify_blob::BlobIndex { offset: index.offset + 1, ..index };
    /// assert!(reader.get(b"big", &wrong).unwrap_err().is_corruption());
    /// ```
    pub fn get(&self, user_key: &[u8], index: &BlobIndex) -> Result<Bytes> {
        let (record_at, len) = self.locate(user_key, index)?;
        let buf = self.read(record_at, len)?;
        self.check_record(Bytes::from(buf), record_at, user_key, index)
    }

    /// [`get`](Self::get) for reads that go through the file in order (a
    /// scan of keys whose values a flush wrote together), forwards or
    /// backwards: once four reads in a row each follow the one before in a
    /// file, each miss of that file's window reads ahead in the same
    /// direction (16 KiB, doubling to 128 KiB by default, see
    /// [`Readahead::with_max_window`]), and the next values come from
    /// memory; `ahead` keeps a window for each of the last 8 files read.
    /// Reads out of order fall back to one read each. The checks are
    /// [`get`](Self::get)'s.
    ///
    /// ```
    /// use std::path::Path;
    /// use lithify_base::Id;
    /// use lithify_blob::{BlobCompression, BlobFileHeader, BlobFileReader, BlobFileWriter, Readahead};
    /// use lithify_vfs::{FileSystem, MemFs};
    ///
    /// let fs = MemFs::new();
    /// let path = Path::new("/000007.blob");
    /// let header = BlobFileHeader {
    ///     table_id: 0,
    ///     compression: BlobCompression::None,
    ///     db_id: Id::random(),
    ///     session_id: Id::random(),
    ///     file_number: 7,
    /// };
    /// let mut w = BlobFileWriter::new(fs.create(path).unwrap(), path, header).unwrap();
    /// let indexes: Vec<_> = (0..100u32)
    ///     .map(|i| w.add(format!("k{i:03}").as_bytes(), &[i as u8; 500]).unwrap())
    ///     .collect();
    /// w.finish().unwrap();
    ///
    /// let reader = BlobFileReader::open(fs.open(path).unwrap(), path).unwrap();
    /// let mut ahead = Readahead::default();
    /// for (i, index) in indexes.iter().enumerate() {
    ///     let key = format!("k{i:03}");
    ///     let value = reader.get_sequential(key.as_bytes(), index, &mut ahead).unwrap();
    ///     assert_eq!(value, vec![i as u8; 500]);
    /// }
    /// // 100 values in a handful of reads.
    /// assert!(ahead.file_reads() < 10, "{}", ahead.file_reads());
    /// ```
    pub fn get_sequential(
        &self,
        user_key: &[u8],
        index: &BlobIndex,
        ahead: &mut Readahead,
    ) -> Result<Bytes> {
        let (record_at, len) = self.locate(user_key, index)?;
        let end = record_at + len as u64;
        let max_window = ahead.max_window;
        let w = ahead.window(self.header.file_number);
        if record_at >= w.start && end <= w.start + w.buf.len() as u64 {
            let from = (record_at - w.start) as usize;
            let record = w.buf.slice(from..from + len);
            (w.last_at, w.next) = (record_at, end);
            return self.check_record(record, record_at, user_key, index);
        }
        // In order: this record starts where the last one read ended
        // (forwards), or ends where it started (backwards).
        let in_order = w.next != 0 && (record_at == w.next || end == w.last_at);
        w.streak = if in_order {
            w.streak.saturating_add(1)
        } else {
            0
        };
        w.size = if w.streak >= READAHEAD_AFTER {
            (w.size * 2).clamp(READAHEAD_MIN.min(max_window), max_window)
        } else {
            0
        };
        let (read_at, read_len) = if w.size == 0 {
            (record_at, len as u64)
        } else if record_at == w.next {
            (
                record_at,
                (len as u64)
                    .max(w.size)
                    .min(self.footer_offset() - record_at),
            )
        } else {
            // Backwards: the window ends with this record.
            let from = end
                .saturating_sub(w.size)
                .clamp(HEADER_LEN as u64, record_at);
            (from, end - from)
        };
        (w.last_at, w.next) = (record_at, end);
        let Ok(read_len) = usize::try_from(read_len) else {
            return Err(self.corruption(record_at, format!("{index} is too large to read")));
        };
        let buf = Bytes::from(self.read(read_at, read_len)?);
        if w.size > 0 {
            w.start = read_at;
            w.buf = buf.clone();
        } else {
            w.buf = Bytes::new();
        }
        ahead.file_reads += 1;
        let from = (record_at - read_at) as usize;
        self.check_record(buf.slice(from..from + len), record_at, user_key, index)
    }

    /// Where the record `index` points at starts, and its length: an
    /// index pointing outside the records is corruption.
    fn locate(&self, user_key: &[u8], index: &BlobIndex) -> Result<(u64, usize)> {
        let key_len = user_key.len();
        let prefix = RECORD_HEADER_LEN as u64 + key_len as u64;
        let footer_at = self.footer_offset();
        let Some(record_at) = index
            .offset
            .checked_sub(prefix)
            .filter(|&at| at >= HEADER_LEN as u64)
        else {
            return Err(self.corruption(
                index.offset,
                format!(
                    "{index} with a {key_len}-byte key points before the first record (offset {HEADER_LEN})"
                ),
            ));
        };
        if index.size > MAX_BLOB_LEN as u64 {
            return Err(self.corruption(
                record_at,
                format!("{index} claims more than the {MAX_BLOB_LEN} bytes a blob may hold"),
            ));
        }
        if index
            .offset
            .checked_add(index.size)
            .is_none_or(|end| end > footer_at)
        {
            return Err(self.corruption(
                record_at,
                format!("{index} runs past the last record (the footer is at {footer_at})"),
            ));
        }
        // Both fit in the file, hence in memory's address range only if the
        // file does; a 32-bit reader of a huge file refuses here.
        let Ok(len) = usize::try_from(prefix + index.size) else {
            return Err(self.corruption(record_at, format!("{index} is too large to read")));
        };
        Ok((record_at, len))
    }

    fn read(&self, at: u64, len: usize) -> Result<Vec<u8>> {
        self.file.read_vec(at, len).map_err(|e| {
            IoSnafu {
                path: self.path.clone(),
                offset: at,
            }
            .into_error(e)
        })
    }

    /// Checks the record at `record_at` (its bytes `buf`, exactly the
    /// record) against `index` and `user_key`, and returns its value.
    fn check_record(
        &self,
        buf: Bytes,
        record_at: u64,
        user_key: &[u8],
        index: &BlobIndex,
    ) -> Result<Bytes> {
        let key_len = user_key.len();
        let record =
            RecordHeader::decode(&buf).map_err(|message| self.corruption(record_at, message))?;
        if record.key_len as usize != key_len
            || u64::from(record.stored_len) != index.size
            || record.compression != index.compression
        {
            return Err(self.corruption(
                record_at,
                format!(
                    "the record holds a {}-byte key and a {}-byte {} value, {index} with a {key_len}-byte key does not point at it",
                    record.key_len,
                    record.stored_len,
                    code_name(record.compression),
                ),
            ));
        }
        let (key, stored) = buf[RECORD_HEADER_LEN..].split_at(key_len);
        if masked_xxh3_64(&[key, stored]) != record.record_checksum {
            return Err(self.corruption(record_at, "record checksum mismatch"));
        }
        if key != user_key {
            return Err(self.corruption(
                record_at,
                format!("the record holds another key than the one looked up with {index}"),
            ));
        }
        if record.compression == CODE_NONE {
            return Ok(buf.slice(RECORD_HEADER_LEN + key_len..));
        }
        decompress(record.compression, stored)
            .map(Bytes::from)
            .map_err(|message| self.corruption(record_at, message))
    }

    /// Every record in file order, each checked and decompressed; the
    /// iterator ends after the first error. Reads the file front to back
    /// with a 256 KiB readahead.
    pub fn records(&self) -> BlobRecords<'_> {
        BlobRecords::new(self, None)
    }

    /// Reads and checks every record, then checks the count and the value
    /// bytes against the footer, and computes the whole file's xxh3-64 on
    /// the way. The first damage found is the error.
    pub fn verify(&self) -> Result<BlobFileSummary> {
        let mut hasher = Box::new(Xxh3::new());
        hasher.update(&self.header_raw);
        let mut records = BlobRecords::new(self, Some(hasher));
        let (mut blob_count, mut blob_bytes) = (0u64, 0u64);
        for record in &mut records {
            let record = record?;
            blob_count += 1;
            blob_bytes += record.index.size;
        }
        let mut hasher = records
            .hasher
            .take()
            .unwrap_or_else(|| Box::new(Xxh3::new()));
        hasher.update(&self.footer_raw);
        if blob_count != self.footer.blob_count || blob_bytes != self.footer.blob_bytes {
            return Err(self.corruption(
                self.footer_offset(),
                format!(
                    "the footer says {} records of {} value bytes, the file holds {blob_count} of {blob_bytes}",
                    self.footer.blob_count, self.footer.blob_bytes
                ),
            ));
        }
        Ok(BlobFileSummary {
            blob_count,
            blob_bytes,
            file_checksum: hasher.digest(),
        })
    }
}

/// The records of a blob file in order: [`BlobFileReader::records`].
pub struct BlobRecords<'a> {
    reader: &'a BlobFileReader,
    /// File bytes from `buf_start` on.
    buf: Vec<u8>,
    buf_start: u64,
    /// Offset of the next record.
    pos: u64,
    /// Where the records end (the footer's offset).
    end: u64,
    /// Fed every byte read, in file order (for `verify`).
    hasher: Option<Box<Xxh3>>,
    done: bool,
}

impl std::fmt::Debug for BlobRecords<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobRecords")
            .field("path", &self.reader.path)
            .field("pos", &self.pos)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl<'a> BlobRecords<'a> {
    fn new(reader: &'a BlobFileReader, hasher: Option<Box<Xxh3>>) -> Self {
        BlobRecords {
            reader,
            buf: Vec::new(),
            buf_start: HEADER_LEN as u64,
            pos: HEADER_LEN as u64,
            end: reader.footer_offset(),
            hasher,
            done: false,
        }
    }

    /// Makes the buffer cover `[pos, pos + need)`, which lies before `end`,
    /// reading at least the readahead. Every byte is read once, in order.
    fn fill(&mut self, need: u64) -> Result<()> {
        let have_end = self.buf_start + self.buf.len() as u64;
        let want_end = self.pos + need;
        if want_end <= have_end {
            return Ok(());
        }
        let consumed = (self.pos - self.buf_start) as usize;
        self.buf.drain(..consumed);
        self.buf_start = self.pos;
        let read_end = want_end.max(have_end + READAHEAD).min(self.end);
        let old = self.buf.len();
        let n = usize::try_from(read_end - have_end).map_err(|_| {
            self.reader
                .corruption(self.pos, "a record too large to read into memory")
        })?;
        self.buf.resize(old + n, 0);
        if let Err(e) = self
            .reader
            .file
            .read_exact_at(have_end, &mut self.buf[old..])
        {
            self.buf.truncate(old);
            return Err(IoSnafu {
                path: self.reader.path.clone(),
                offset: have_end,
            }
            .into_error(e));
        }
        if let Some(hasher) = &mut self.hasher {
            hasher.update(&self.buf[old..]);
        }
        Ok(())
    }

    fn read_record(&mut self) -> Result<BlobRecord> {
        let at = self.pos;
        let left = self.end - at;
        if left < RECORD_HEADER_LEN as u64 {
            return Err(self.reader.corruption(
                at,
                format!(
                    "the {left} bytes between the last record and the footer do not make a record"
                ),
            ));
        }
        self.fill(RECORD_HEADER_LEN as u64)?;
        let off = (at - self.buf_start) as usize;
        let record = RecordHeader::decode(&self.buf[off..])
            .map_err(|message| self.reader.corruption(at, message))?;
        if record.stored_len as usize > MAX_BLOB_LEN {
            return Err(self.reader.corruption(
                at,
                format!(
                    "the record claims a {}-byte value, more than the {MAX_BLOB_LEN} a blob may hold",
                    record.stored_len
                ),
            ));
        }
        let key_len = record.key_len as usize;
        let total =
            RECORD_HEADER_LEN as u64 + u64::from(record.key_len) + u64::from(record.stored_len);
        if total > left {
            return Err(self.reader.corruption(
                at,
                format!(
                    "the record of {total} bytes runs past the footer at {}",
                    self.end
                ),
            ));
        }
        self.fill(total)?;
        let off = (at - self.buf_start) as usize;
        let body = &self.buf[off + RECORD_HEADER_LEN..off + total as usize];
        let (key, stored) = body.split_at(key_len);
        if masked_xxh3_64(&[key, stored]) != record.record_checksum {
            return Err(self.reader.corruption(at, "record checksum mismatch"));
        }
        let value = decompress(record.compression, stored)
            .map_err(|message| self.reader.corruption(at, message))?;
        let key = key.to_vec();
        self.pos = at + total;
        Ok(BlobRecord {
            index: BlobIndex {
                file_number: self.reader.header.file_number,
                offset: at + (RECORD_HEADER_LEN + key_len) as u64,
                size: u64::from(record.stored_len),
                compression: record.compression,
            },
            key,
            value,
        })
    }
}

impl Iterator for BlobRecords<'_> {
    type Item = Result<BlobRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.pos >= self.end {
            self.done = true;
            return None;
        }
        let record = self.read_record();
        if record.is_err() {
            self.done = true;
        }
        Some(record)
    }
}

impl std::iter::FusedIterator for BlobRecords<'_> {}
