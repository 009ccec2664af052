//! Writing a blob file.

use std::path::{Path, PathBuf};

use lithify_base::{Id, masked_xxh3_64};
use lithify_vfs::WritableFile;
use snafu::IntoError as _;
use xxhash_rust::xxh3::Xxh3;

use crate::compression::ValueCompressor;
use crate::error::{IoSnafu, NotEmptySnafu, PoisonedSnafu, Result, ValueTooLargeSnafu};
use crate::format::{
    BlobFileFooter, BlobFileHeader, BlobIndex, MAX_BLOB_LEN, RECORD_HEADER_LEN, RecordHeader,
};

/// Output is handed to the file in chunks of about this size: a
/// [`WritableFile`] does not buffer, and values may be small.
const WRITE_CHUNK: usize = 64 << 10;

/// What a finished blob file is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltBlobFile {
    /// The number the file was written under (from its header).
    pub file_number: u64,
    /// Its size in bytes.
    pub file_size: u64,
    /// Number of records.
    pub blob_count: u64,
    /// Sum of the records' stored value lengths.
    pub blob_bytes: u64,
    /// The xxh3-64 of the whole file (unmasked), computed while writing.
    pub file_checksum: u64,
    /// The file's unique id ([`BlobFileHeader::unique_id`]).
    pub unique_id: Id,
}

/// Writes a blob file into a [`WritableFile`], value by value.
///
/// Each [`add`](Self::add) compresses the value (when the file's
/// compression saves at least an eighth of it), appends one record and
/// returns the [`BlobIndex`] that finds it again. Records are buffered and
/// handed to the file in chunks of 64 KiB. [`finish`](Self::finish) writes
/// the footer and syncs the file's data; syncing the directory that names
/// the file is the caller's job. An I/O error poisons the writer: every
/// later call fails.
///
/// ```
/// use std::path::Path;
/// use lithify_base::Id;
/// use lithify_blob::{BlobCompression, BlobFileHeader, BlobFileWriter, HEADER_LEN, RECORD_HEADER_LEN};
/// use lithify_vfs::{FileSystem, MemFs};
///
/// let fs = MemFs::new();
/// let path = Path::new("/000012.blob");
/// let header = BlobFileHeader {
///     table_id: 0,
///     compression: BlobCompression::None,
///     db_id: Id::random(),
///     session_id: Id::random(),
///     file_number: 12,
/// };
/// let mut w = BlobFileWriter::new(fs.create(path).unwrap(), path, header).unwrap();
/// let index = w.add(b"key", b"value").unwrap();
/// assert_eq!(index.offset, (HEADER_LEN + RECORD_HEADER_LEN + 3) as u64);
/// assert_eq!(index.size, 5);
/// let built = w.finish().unwrap();
/// assert_eq!(built.blob_count, 1);
/// assert_eq!(built.file_size, fs.file_size(path).unwrap());
/// ```
pub struct BlobFileWriter {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    header: BlobFileHeader,
    compressor: ValueCompressor,
    /// Output not yet handed to the file.
    out: Vec<u8>,
    /// Bytes already handed to the file.
    written: u64,
    blob_count: u64,
    blob_bytes: u64,
    /// The xxh3-64 of every byte handed to the file.
    checksum: Box<Xxh3>,
    poisoned: Option<String>,
}

impl std::fmt::Debug for BlobFileWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobFileWriter")
            .field("path", &self.path)
            .field("header", &self.header)
            .field("blob_count", &self.blob_count)
            .field("file_size", &self.file_size())
            .finish_non_exhaustive()
    }
}

impl BlobFileWriter {
    /// A writer into `file`, which must be empty (freshly created); `path`
    /// names it in errors. Writes the header.
    pub fn new(file: Box<dyn WritableFile>, path: &Path, header: BlobFileHeader) -> Result<Self> {
        let len = file.len();
        if len != 0 {
            return NotEmptySnafu { path, len }.fail();
        }
        let compressor = ValueCompressor::new(header.compression)
            .map_err(|e| IoSnafu { path, offset: 0u64 }.into_error(e))?;
        let mut out = Vec::with_capacity(WRITE_CHUNK + WRITE_CHUNK / 2);
        out.extend_from_slice(&header.encode());
        let mut writer = BlobFileWriter {
            file,
            path: path.to_path_buf(),
            header,
            compressor,
            out,
            written: 0,
            blob_count: 0,
            blob_bytes: 0,
            checksum: Box::new(Xxh3::new()),
            poisoned: None,
        };
        // Hand the header over at once, so that a file that cannot be
        // written fails here rather than at the first value.
        writer.write_out()?;
        Ok(writer)
    }

    /// Appends a record of `user_key` and `value` (compressed if that pays)
    /// and returns the index that finds it. A value over
    /// [`MAX_BLOB_LEN`] or a key of 4 GiB or more is refused
    /// ([`Error::ValueTooLarge`](crate::Error::ValueTooLarge)) and leaves
    /// the writer usable.
    pub fn add(&mut self, user_key: &[u8], value: &[u8]) -> Result<BlobIndex> {
        self.check_poisoned()?;
        let Ok(key_len) = u32::try_from(user_key.len()) else {
            return self.too_large(user_key, value);
        };
        if value.len() > MAX_BLOB_LEN {
            return self.too_large(user_key, value);
        }
        let (stored, compression) = match self.compressor.compress(value) {
            Ok(s) => s,
            Err(e) => {
                // The compressor's state is unknown after a failure.
                self.poisoned = Some(format!("compression failed: {e}"));
                return Err(IoSnafu {
                    path: self.path.clone(),
                    offset: self.file_size(),
                }
                .into_error(e));
            }
        };
        let stored_len = stored.len() as u32; // <= value.len() <= MAX_BLOB_LEN
        let record = RecordHeader {
            key_len,
            stored_len,
            compression,
            record_checksum: masked_xxh3_64(&[user_key, stored]),
        };
        let record_offset = self.written + self.out.len() as u64;
        let offset = record_offset + (RECORD_HEADER_LEN + user_key.len()) as u64;
        record.encode_to(&mut self.out);
        self.out.extend_from_slice(user_key);
        if stored.len() >= WRITE_CHUNK {
            // A large value goes to the file straight from where it is,
            // after what is buffered before it.
            Self::hand_over(
                &mut *self.file,
                &self.path,
                &mut self.written,
                &mut self.checksum,
                &mut self.poisoned,
                &self.out,
            )?;
            self.out.clear();
            Self::hand_over(
                &mut *self.file,
                &self.path,
                &mut self.written,
                &mut self.checksum,
                &mut self.poisoned,
                stored,
            )?;
        } else {
            self.out.extend_from_slice(stored);
        }
        let index = BlobIndex {
            file_number: self.header.file_number,
            offset,
            size: u64::from(stored_len),
            compression,
        };
        self.blob_count += 1;
        self.blob_bytes += u64::from(stored_len);
        if self.out.len() >= WRITE_CHUNK {
            self.write_out()?;
        }
        Ok(index)
    }

    fn too_large<T>(&self, user_key: &[u8], value: &[u8]) -> Result<T> {
        ValueTooLargeSnafu {
            path: self.path.clone(),
            key_len: user_key.len(),
            value_len: value.len(),
            max_value_len: MAX_BLOB_LEN,
        }
        .fail()
    }

    /// Size of the file so far, buffered bytes included (what the file
    /// will be without its footer).
    pub fn file_size(&self) -> u64 {
        self.written + self.out.len() as u64
    }

    /// Number of records added.
    pub fn blob_count(&self) -> u64 {
        self.blob_count
    }

    /// Sum of the stored lengths of the values added.
    pub fn blob_bytes(&self) -> u64 {
        self.blob_bytes
    }

    /// The file's header.
    pub fn header(&self) -> &BlobFileHeader {
        &self.header
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the footer and syncs the file's data: once this returns, the
    /// file's bytes are durable (its directory entry is the caller's).
    pub fn finish(mut self) -> Result<BuiltBlobFile> {
        self.check_poisoned()?;
        let footer = BlobFileFooter {
            blob_count: self.blob_count,
            blob_bytes: self.blob_bytes,
        };
        self.out.extend_from_slice(&footer.encode());
        self.write_out()?;
        let file_size = self.written;
        if let Err(e) = self.file.sync_data() {
            return Err(IoSnafu {
                path: self.path.clone(),
                offset: file_size,
            }
            .into_error(e));
        }
        Ok(BuiltBlobFile {
            file_number: self.header.file_number,
            file_size,
            blob_count: self.blob_count,
            blob_bytes: self.blob_bytes,
            file_checksum: self.checksum.digest(),
            unique_id: self.header.unique_id(),
        })
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

    /// Hands the buffered output to the file.
    fn write_out(&mut self) -> Result<()> {
        Self::hand_over(
            &mut *self.file,
            &self.path,
            &mut self.written,
            &mut self.checksum,
            &mut self.poisoned,
            &self.out,
        )?;
        self.out.clear();
        Ok(())
    }

    /// Appends `data` to the file, keeping count and checksum; a failure
    /// poisons the writer.
    fn hand_over(
        file: &mut dyn WritableFile,
        path: &Path,
        written: &mut u64,
        checksum: &mut Xxh3,
        poisoned: &mut Option<String>,
        data: &[u8],
    ) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        if let Err(e) = file.append(data) {
            *poisoned = Some(format!("append at offset {written} failed: {e}"));
            return Err(IoSnafu {
                path,
                offset: *written,
            }
            .into_error(e));
        }
        *written += data.len() as u64;
        checksum.update(data);
        Ok(())
    }
}
