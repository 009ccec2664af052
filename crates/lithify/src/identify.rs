//! What a file is, judged by its bytes: so a tool handed the wrong kind of
//! file can say what it looks like (`dump-wal` given a Kafka segment,
//! `log dump` given a lithify WAL) instead of reporting it damaged.

use std::path::Path;

use lithify_vfs::FileSystem;

/// The formats [`identify_file`] tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileFormat {
    /// A file of no bytes.
    Empty,
    /// A lithify record log: a write-ahead log or a MANIFEST (its first
    /// bytes are the record log's magic).
    RecordLog,
    /// A lithify SST (its last bytes are the table footer's magic).
    Table,
    /// A lithify blob file (its first bytes are the blob format's magic).
    Blob,
    /// A Kafka log segment (`.log`): it starts with a record batch of
    /// format v2 whose CRC-32C matches.
    KafkaSegment,
    /// None of these.
    Unknown,
}

impl FileFormat {
    /// The format in a few words, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            FileFormat::Empty => "an empty file",
            FileFormat::RecordLog => "a lithify write-ahead log or MANIFEST",
            FileFormat::Table => "a lithify SST",
            FileFormat::Blob => "a lithify blob file",
            FileFormat::KafkaSegment => "a Kafka log segment",
            FileFormat::Unknown => "no format lithify knows",
        }
    }
}

/// The largest first batch read to check a Kafka segment's checksum
/// (Kafka's default `max.message.bytes` is 1 MiB).
#[cfg(feature = "log")]
const MAX_FIRST_BATCH: u64 = 64 << 20;

/// Reads as little of `path` as it takes to tell its [`FileFormat`]: the
/// first 8 bytes, the last 8, and for a Kafka segment its first batch
/// (one larger than 64 MiB is not read: the file reads as unknown).
/// Only intact magic numbers (and the Kafka batch's checksum) count, so
/// a damaged file of a known format may read as [`FileFormat::Unknown`].
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// use lithify::vfs::{MemFs, write_file_atomic};
/// use lithify::{FileFormat, identify_file};
///
/// let fs = MemFs::new();
/// write_file_atomic(&fs, "notes.txt".as_ref(), b"hello")?;
/// assert_eq!(identify_file(&fs, "notes.txt".as_ref())?, FileFormat::Unknown);
/// # Ok(())
/// # }
/// ```
pub fn identify_file(fs: &dyn FileSystem, path: &Path) -> std::io::Result<FileFormat> {
    let file = fs.open(path)?;
    let size = file.size()?;
    if size == 0 {
        return Ok(FileFormat::Empty);
    }
    #[cfg(feature = "db")]
    {
        let mut head = [0u8; 8];
        if size >= lithify_wal::format::FILE_HEADER_LEN as u64 {
            file.read_exact_at(0, &mut head)?;
            if head == lithify_wal::format::MAGIC {
                return Ok(FileFormat::RecordLog);
            }
        }
        if size >= lithify_blob::HEADER_LEN as u64 {
            file.read_exact_at(0, &mut head)?;
            if head == lithify_blob::BLOB_MAGIC.to_le_bytes() {
                return Ok(FileFormat::Blob);
            }
        }
        let mut tail = [0u8; 8];
        if size >= lithify_sstable::FOOTER_LEN as u64 {
            file.read_exact_at(size - 8, &mut tail)?;
            if tail == lithify_sstable::MAGIC {
                return Ok(FileFormat::Table);
            }
        }
    }
    #[cfg(feature = "log")]
    {
        use lithify_kafka_format::record::{BatchPrefix, RecordBatch};
        let mut prefix = [0u8; 17];
        if size >= prefix.len() as u64 {
            file.read_exact_at(0, &mut prefix)?;
            let batch_size = BatchPrefix::parse(&prefix)
                .filter(|p| p.magic == 2)
                .and_then(|p| p.batch_size())
                .filter(|&n| n <= size.min(MAX_FIRST_BATCH));
            if let Some(n) = batch_size {
                let mut raw = vec![0u8; n as usize];
                file.read_exact_at(0, &mut raw)?;
                if RecordBatch::parse(bytes::Bytes::from(raw)).is_ok_and(|b| b.is_valid()) {
                    return Ok(FileFormat::KafkaSegment);
                }
            }
        }
    }
    Ok(FileFormat::Unknown)
}

#[cfg(all(test, feature = "db", feature = "log"))]
mod tests {
    use lithify_vfs::{MemFs, write_file_atomic};
    use proptest::prelude::*;

    use super::*;

    fn identify(bytes: &[u8]) -> FileFormat {
        let fs = MemFs::new();
        write_file_atomic(&fs, "f".as_ref(), bytes).unwrap();
        identify_file(&fs, "f".as_ref()).unwrap()
    }

    #[test]
    fn each_format_by_its_magic() {
        assert_eq!(identify(b""), FileFormat::Empty);
        let mut wal = lithify_wal::format::MAGIC.to_vec();
        wal.resize(lithify_wal::format::FILE_HEADER_LEN, 0);
        assert_eq!(identify(&wal), FileFormat::RecordLog);
        let mut sst = vec![0u8; lithify_sstable::FOOTER_LEN - 8];
        sst.extend_from_slice(&lithify_sstable::MAGIC);
        assert_eq!(identify(&sst), FileFormat::Table);
        let mut blob = lithify_blob::BLOB_MAGIC.to_le_bytes().to_vec();
        blob.resize(lithify_blob::HEADER_LEN, 0);
        assert_eq!(identify(&blob), FileFormat::Blob);
        let mut builder = lithify_kafka_format::record::BatchBuilder::new(0);
        builder.append(0, 1, Some(b"k"), Some(b"v"), &[]).unwrap();
        let mut segment = builder.build().to_vec();
        assert_eq!(identify(&segment), FileFormat::KafkaSegment);
        // One changed byte: the batch's checksum no longer matches.
        let last = segment.len() - 1;
        segment[last] ^= 1;
        assert_eq!(identify(&segment), FileFormat::Unknown);
    }

    proptest! {
        /// Garbage is told apart without a panic or a large allocation.
        #[test]
        fn garbage_is_unknown_or_a_format(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let found = identify(&bytes);
            prop_assert!(!found.describe().is_empty());
        }
    }
}
