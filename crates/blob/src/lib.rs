//! Blob files: large values kept out of the sorted tables (key-value
//! separation, as RocksDB's integrated BlobDB does it).
//!
//! An LSM tree rewrites every value each time compaction moves it down a
//! level. Large values make that expensive, so a writer can put them in a
//! **blob file** instead and store in the sorted table only a small
//! [`BlobIndex`]: the blob file's number, the value's offset and stored
//! length, and how it is compressed. Compaction then moves indexes, not
//! values.
//!
//! A blob file is a 64-byte header (magic, version, table id, configured
//! compression, the writer's database and session identities, the file
//! number), a sequence of records, and a 32-byte footer (record count,
//! value bytes, magic). Each record holds the user key and the value,
//! compressed on its own with zstd or lz4 when that saves at least an
//! eighth; its header has a checksum of its own and the record a masked
//! xxh3-64 over key and value. The byte layout is in `docs/FORMATS.md`,
//! section "Blob files".
//!
//! * [`BlobFileWriter`] appends values and returns their [`BlobIndex`]es;
//!   [`BlobFileWriter::finish`] writes the footer and syncs the file, and
//!   returns a [`BuiltBlobFile`] (size, counts, whole-file checksum, unique
//!   id).
//! * [`BlobFileReader`] opens a file (checking header and footer) and reads
//!   one value with [`BlobFileReader::get`] (one read, every check), every
//!   record with [`BlobFileReader::records`], or checks the whole file with
//!   [`BlobFileReader::verify`].
//! * Damage is [`Error::Corruption`], naming the file and the offset of the
//!   damaged header, record or footer; no decoder panics on bad bytes, and
//!   a reader never allocates more for one value than [`MAX_BLOB_LEN`].
//!
//! Used alone:
//!
//! ```
//! use std::path::Path;
//! use lithify_base::Id;
//! use lithify_blob::{BlobCompression, BlobFileHeader, BlobFileReader, BlobFileWriter, BlobIndex};
//! use lithify_vfs::{FileSystem, MemFs};
//!
//! let fs = MemFs::new();
//! let path = Path::new("/000012.blob");
//! let header = BlobFileHeader {
//!     table_id: 0,
//!     compression: BlobCompression::Lz4,
//!     db_id: Id::random(),
//!     session_id: Id::random(),
//!     file_number: 12,
//! };
//! let mut writer = BlobFileWriter::new(fs.create(path).unwrap(), path, header).unwrap();
//! let photo = vec![0xab; 64 << 10];
//! let index = writer.add(b"photo", &photo).unwrap();
//! let built = writer.finish().unwrap(); // footer written, data synced
//! assert_eq!(built.blob_count, 1);
//!
//! // The sorted table keeps the encoded index in place of the value.
//! let stored_in_table = index.encode();
//! let index = BlobIndex::decode(&stored_in_table).unwrap();
//!
//! let reader = BlobFileReader::open(fs.open(path).unwrap(), path).unwrap();
//! assert_eq!(reader.get(b"photo", &index).unwrap(), photo);
//! let records: Vec<_> = reader.records().collect::<Result<_, _>>().unwrap();
//! assert_eq!(records[0].key, b"photo");
//! assert_eq!(reader.verify().unwrap().file_checksum, built.file_checksum);
//! ```

mod compression;
mod error;
mod format;
mod reader;
mod writer;

pub use compression::BlobCompression;
pub use error::{Error, Result};
pub use format::{
    BLOB_FORMAT_VERSION, BLOB_MAGIC, BlobFileFooter, BlobFileHeader, BlobIndex, FOOTER_LEN,
    HEADER_LEN, MAX_BLOB_LEN, RECORD_HEADER_LEN,
};
pub use reader::{BlobFileReader, BlobFileSummary, BlobRecord, BlobRecords, Readahead};
pub use writer::{BlobFileWriter, BuiltBlobFile};

/// The README's example, run as a doctest so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

#[cfg(test)]
mod tests;
