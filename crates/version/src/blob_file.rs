//! What the LSM knows about blob files: the files that hold a table's
//! separated values (key-value separation, RocksDB's integrated BlobDB).
//!
//! A blob file is written by a flush or a compaction beside the SSTs it
//! serves, and is added to a table's version by a
//! [`BlobFileAddition`](crate::edit::tag::BLOB_FILE_ADDITION) field in
//! the same edit as those SSTs. Each SST's [`FileMetadata::blob_refs`]
//! counts the values it points at in each blob file. A value stops being
//! referenced when a compaction drops the version that pointed at it, or
//! copies it to a newer blob file (garbage collection); the version set
//! then records it as **garbage** of its blob file
//! ([`BlobFileGarbage`]). A blob file is live while any SST of the version
//! refers to it; the edit that removes the last reference leaves it with
//! every value garbage, and the version drops it.
//!
//! [`FileMetadata::blob_refs`]: crate::FileMetadata::blob_refs

use std::fmt;
use std::sync::Arc;

use lithify_base::Id;

/// The metadata of one blob file, as its addition records it in the
/// MANIFEST. It never changes once the file is added; what changes is
/// its garbage, kept in [`BlobFile`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BlobFileMetadata {
    /// The file number (`NNNNNN.blob`).
    pub number: u64,
    /// File size in bytes.
    pub file_size: u64,
    /// Number of values (records) in the file.
    pub blob_count: u64,
    /// Bytes of the values as stored (after compression).
    pub blob_bytes: u64,
    /// The xxh3-64 of the whole file, when it was computed while writing.
    pub file_checksum: Option<u64>,
    /// The file's unique id (derived from the database's and the writing
    /// session's identities and the file number, as an SST's is): the file
    /// found under this number must carry it.
    pub unique_id: Option<Id>,
}

/// Values of a blob file that no SST refers to any more, recorded in the
/// MANIFEST by the edit that stopped referring to them (RocksDB's
/// `BlobFileGarbage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlobFileGarbage {
    /// The blob file.
    pub number: u64,
    /// Values that became garbage.
    pub count: u64,
    /// Their stored bytes.
    pub bytes: u64,
}

/// An SST's references into one blob file: how many of its entries are
/// blob indexes into the file, and the stored bytes they point at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct BlobRef {
    /// The blob file.
    pub file_number: u64,
    /// Blob indexes of the SST that point into it.
    pub count: u64,
    /// The stored bytes of the values they point at.
    pub bytes: u64,
}

/// A blob file in a version: its metadata and how much of it is garbage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobFile {
    /// What the MANIFEST recorded when the file was added.
    pub meta: Arc<BlobFileMetadata>,
    /// Values no SST of the version refers to any more.
    pub garbage_count: u64,
    /// Their stored bytes.
    pub garbage_bytes: u64,
}

impl BlobFile {
    /// A blob file with no garbage.
    pub fn new(meta: BlobFileMetadata) -> Self {
        BlobFile {
            meta: Arc::new(meta),
            garbage_count: 0,
            garbage_bytes: 0,
        }
    }

    /// The file number.
    pub fn number(&self) -> u64 {
        self.meta.number
    }

    /// Values some SST still refers to.
    pub fn live_count(&self) -> u64 {
        self.meta.blob_count.saturating_sub(self.garbage_count)
    }

    /// Stored bytes of the values some SST still refers to.
    pub fn live_bytes(&self) -> u64 {
        self.meta.blob_bytes.saturating_sub(self.garbage_bytes)
    }

    /// The share of the file's stored value bytes that is garbage, in
    /// `[0, 1]` (0 for a file without values).
    pub fn garbage_ratio(&self) -> f64 {
        if self.meta.blob_bytes == 0 {
            0.0
        } else {
            self.garbage_bytes as f64 / self.meta.blob_bytes as f64
        }
    }
}

impl fmt::Display for BlobFile {
    /// `000012.blob values=100 bytes=102400 size=104000 garbage=10/10240`
    /// (the text form of [`crate::text`]; `size` and `garbage` only when
    /// not 0).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:06}.blob values={} bytes={}",
            self.meta.number, self.meta.blob_count, self.meta.blob_bytes,
        )?;
        if self.meta.file_size != 0 {
            write!(f, " size={}", self.meta.file_size)?;
        }
        if self.garbage_count != 0 || self.garbage_bytes != 0 {
            write!(f, " garbage={}/{}", self.garbage_count, self.garbage_bytes)?;
        }
        Ok(())
    }
}
