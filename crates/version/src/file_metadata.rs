//! What the LSM knows about one SST file.

use std::cmp::Ordering;
use std::fmt;

use lithify_base::{Id, InternalKey, InternalKeyComparator, SeqNo};

use crate::blob_file::BlobRef;

/// The metadata of one sstable file, as recorded in the MANIFEST.
///
/// Versions hold files as `Arc<FileMetadata>`; the metadata never changes
/// once a file is added (moving a file to another level adds a new
/// `FileMetadata` with the same number). Whether a file is being compacted
/// is **not** recorded here: compaction pickers receive the set of
/// compactions in progress separately.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct FileMetadata {
    /// The file number (`NNNNNN.sst`).
    pub number: u64,
    /// File size in bytes.
    pub size: u64,
    /// The smallest internal key in the file (including range tombstone
    /// starts).
    pub smallest: InternalKey,
    /// The largest internal key in the file (including range tombstone
    /// ends, as RocksDB's sentinel keys).
    pub largest: InternalKey,
    /// The smallest sequence number of any entry.
    pub smallest_seqno: SeqNo,
    /// The largest sequence number of any entry.
    pub largest_seqno: SeqNo,
    /// Number of entries (point entries and range tombstones).
    pub num_entries: u64,
    /// Number of point tombstones.
    pub num_deletions: u64,
    /// Number of range tombstones.
    pub num_range_deletions: u64,
    /// When the file was written, in seconds since the Unix epoch (0 if
    /// unknown).
    pub creation_time: u64,
    /// The creation time of the oldest data in the file, in seconds since
    /// the Unix epoch: the minimum over a compaction's inputs, the flush time
    /// for a flush (0 if unknown). Drives periodic and TTL compaction.
    pub oldest_ancestor_time: u64,
    /// The xxh3-64 of the whole file, if it was computed when writing.
    pub file_checksum: Option<u64>,
    /// The table's unique id, derived from its properties when it was
    /// added (`None` for files added before ids existed): the file found
    /// under this number must carry it.
    pub unique_id: Option<Id>,
    /// The file's references into blob files, ascending by blob file
    /// number: each counts the entries that are blob indexes into that
    /// file (empty for a table without separated values).
    pub blob_refs: Vec<BlobRef>,
}

impl FileMetadata {
    /// Metadata with the required fields; sequence numbers default to the
    /// range spanned by the two keys, counts and times to 0.
    pub fn new(number: u64, size: u64, smallest: InternalKey, largest: InternalKey) -> Self {
        let (a, b) = (smallest.seqno(), largest.seqno());
        FileMetadata {
            number,
            size,
            smallest_seqno: a.min(b),
            largest_seqno: a.max(b),
            smallest,
            largest,
            num_entries: 0,
            num_deletions: 0,
            num_range_deletions: 0,
            creation_time: 0,
            oldest_ancestor_time: 0,
            file_checksum: None,
            unique_id: None,
            blob_refs: Vec::new(),
        }
    }

    /// The oldest (smallest-numbered) blob file the table refers to.
    pub fn oldest_blob_file(&self) -> Option<u64> {
        self.blob_refs.first().map(|r| r.file_number)
    }

    /// The smallest user key.
    #[inline]
    pub fn smallest_user_key(&self) -> &[u8] {
        self.smallest.user_key()
    }

    /// The largest user key.
    #[inline]
    pub fn largest_user_key(&self) -> &[u8] {
        self.largest.user_key()
    }

    /// Whether the file's user-key range intersects `[begin, end]` (both
    /// inclusive; `None` is unbounded).
    pub fn overlaps_user_range(
        &self,
        cmp: &InternalKeyComparator,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> bool {
        let before = end.is_some_and(|e| cmp.compare_user(self.smallest_user_key(), e).is_gt());
        let after = begin.is_some_and(|b| cmp.compare_user(self.largest_user_key(), b).is_lt());
        !before && !after
    }

    /// Whether `user_key` lies within the file's user-key range.
    pub fn contains_user_key(&self, cmp: &InternalKeyComparator, user_key: &[u8]) -> bool {
        self.overlaps_user_range(cmp, Some(user_key), Some(user_key))
    }

    /// The L0 order: newest first (largest seqno descending, then smallest
    /// seqno descending, then file number descending).
    pub fn l0_order(a: &FileMetadata, b: &FileMetadata) -> Ordering {
        b.largest_seqno
            .cmp(&a.largest_seqno)
            .then(b.smallest_seqno.cmp(&a.smallest_seqno))
            .then(b.number.cmp(&a.number))
    }
}

impl fmt::Display for FileMetadata {
    /// The text form `000012:[a#5,SET-c#3,SET] size=1024 ...` (see
    /// [`crate::text`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::text::write_file(f, self)
    }
}

impl fmt::Debug for FileMetadata {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
