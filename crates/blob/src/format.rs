//! The byte layout of a blob file: header, record header, footer, and the
//! blob index the sorted tables store. See `docs/FORMATS.md`, section
//! "Blob files".

use std::fmt;

use lithify_base::coding::{Decoder, put_varint64};
use lithify_base::{DecodeError, Id, mask_checksum, xxh3_64};

use crate::compression::{BlobCompression, code_name};

/// The magic number at the start and at the end of every blob file: the
/// bytes `89 4c 49 54 48 42 4c 42` ("\x89LITHBLB") read as a little-endian
/// `u64`. The high first byte catches transfers that strip the eighth bit,
/// as in the sorted tables' magic "\x89LITHSST".
pub const BLOB_MAGIC: u64 = u64::from_le_bytes(*b"\x89LITHBLB");

/// The format version this crate writes and the only one it reads.
pub const BLOB_FORMAT_VERSION: u32 = 1;

/// Length of the file header.
pub const HEADER_LEN: usize = 64;

/// Length of the file footer.
pub const FOOTER_LEN: usize = 32;

/// Length of a record's fixed part, before its key and value.
pub const RECORD_HEADER_LEN: usize = 21;

/// The largest value a blob file holds (256 MiB), and the largest
/// uncompressed length a reader believes: what a reader allocates for one
/// value is bounded by it.
pub const MAX_BLOB_LEN: usize = 256 << 20;

/// The low 32 bits of the masked xxh3-64 of `bytes`: the short checksum of
/// the file header and of record headers.
pub(crate) fn short_checksum(bytes: &[u8]) -> u32 {
    mask_checksum(xxh3_64(bytes)) as u32
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

fn id_at(b: &[u8], at: usize) -> Id {
    let mut a = [0u8; 16];
    a.copy_from_slice(&b[at..at + 16]);
    Id::from_bytes(a)
}

/// The first [`HEADER_LEN`] bytes of a blob file: who wrote it and how.
///
/// ```
/// use lithify_base::Id;
/// use lithify_blob::{BlobCompression, BlobFileHeader};
///
/// let header = BlobFileHeader {
///     table_id: 0,
///     compression: BlobCompression::Lz4,
///     db_id: Id::from_bytes([1; 16]),
///     session_id: Id::from_bytes([2; 16]),
///     file_number: 12,
/// };
/// let bytes = header.encode();
/// assert_eq!(BlobFileHeader::decode(&bytes), Ok(header));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlobFileHeader {
    /// The table (column family) whose values the file holds.
    pub table_id: u32,
    /// The file's configured compression. Only its code is stored: a
    /// decoded header's zstd is `Zstd { level: 3 }`.
    pub compression: BlobCompression,
    /// The identity of the database that wrote the file.
    pub db_id: Id,
    /// The identity of the open (session) that wrote it.
    pub session_id: Id,
    /// The number the file was written under.
    pub file_number: u64,
}

impl BlobFileHeader {
    /// The header's bytes.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..8].copy_from_slice(&BLOB_MAGIC.to_le_bytes());
        b[8..12].copy_from_slice(&BLOB_FORMAT_VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&self.table_id.to_le_bytes());
        b[16] = self.compression.code();
        // 17..20 reserved, zero.
        b[20..36].copy_from_slice(self.db_id.as_bytes());
        b[36..52].copy_from_slice(self.session_id.as_bytes());
        b[52..60].copy_from_slice(&self.file_number.to_le_bytes());
        let checksum = short_checksum(&b[..60]);
        b[60..64].copy_from_slice(&checksum.to_le_bytes());
        b
    }

    /// Decodes a header of exactly [`HEADER_LEN`] bytes, checking, in this
    /// order, the magic, the checksum, the version, the reserved bytes and
    /// the compression code. The error is a phrase.
    pub fn decode(bytes: &[u8]) -> Result<Self, String> {
        if bytes.len() != HEADER_LEN {
            return Err(format!(
                "a blob file header is {HEADER_LEN} bytes, not {}",
                bytes.len()
            ));
        }
        let magic = le_u64(bytes, 0);
        if magic != BLOB_MAGIC {
            return Err(format!(
                "bad magic {magic:#018x} in the file header: not a blob file"
            ));
        }
        let stored = le_u32(bytes, 60);
        let computed = short_checksum(&bytes[..60]);
        if stored != computed {
            return Err(format!(
                "file header checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
            ));
        }
        let version = le_u32(bytes, 8);
        if version != BLOB_FORMAT_VERSION {
            return Err(format!(
                "format version {version} is not supported (this reader knows {BLOB_FORMAT_VERSION})"
            ));
        }
        if bytes[17..20] != [0, 0, 0] {
            return Err(format!(
                "reserved header bytes {:02x?} are not zero",
                &bytes[17..20]
            ));
        }
        let Some(compression) = BlobCompression::from_code(bytes[16]) else {
            return Err(format!(
                "unknown compression code {} in the file header",
                bytes[16]
            ));
        };
        Ok(BlobFileHeader {
            table_id: le_u32(bytes, 12),
            compression,
            db_id: id_at(bytes, 20),
            session_id: id_at(bytes, 36),
            file_number: le_u64(bytes, 52),
        })
    }

    /// The file's unique id: derived from the database and session
    /// identities and the file number exactly as a sorted table's
    /// (`lithify_sstable::Properties::unique_id`), so it survives copies and
    /// links of the file.
    pub fn unique_id(&self) -> Id {
        Id::derive(&[
            self.db_id.as_bytes(),
            self.session_id.as_bytes(),
            &self.file_number.to_le_bytes(),
        ])
    }
}

/// The last [`FOOTER_LEN`] bytes of a blob file: what its records add up to.
///
/// ```
/// use lithify_blob::BlobFileFooter;
///
/// let footer = BlobFileFooter { blob_count: 2, blob_bytes: 300 };
/// assert_eq!(BlobFileFooter::decode(&footer.encode()), Ok(footer));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlobFileFooter {
    /// Number of records.
    pub blob_count: u64,
    /// Sum of the records' stored (possibly compressed) value lengths.
    pub blob_bytes: u64,
}

impl BlobFileFooter {
    /// The footer's bytes.
    pub fn encode(&self) -> [u8; FOOTER_LEN] {
        let mut b = [0u8; FOOTER_LEN];
        b[0..8].copy_from_slice(&self.blob_count.to_le_bytes());
        b[8..16].copy_from_slice(&self.blob_bytes.to_le_bytes());
        let checksum = mask_checksum(xxh3_64(&b[..16]));
        b[16..24].copy_from_slice(&checksum.to_le_bytes());
        b[24..32].copy_from_slice(&BLOB_MAGIC.to_le_bytes());
        b
    }

    /// Decodes a footer of exactly [`FOOTER_LEN`] bytes, checking the magic
    /// and then the checksum. The error is a phrase.
    pub fn decode(bytes: &[u8]) -> Result<Self, String> {
        if bytes.len() != FOOTER_LEN {
            return Err(format!(
                "a blob file footer is {FOOTER_LEN} bytes, not {}",
                bytes.len()
            ));
        }
        let magic = le_u64(bytes, 24);
        if magic != BLOB_MAGIC {
            return Err(format!(
                "bad magic {magic:#018x} in the footer: the file is truncated or not a blob file"
            ));
        }
        let stored = le_u64(bytes, 16);
        let computed = mask_checksum(xxh3_64(&bytes[..16]));
        if stored != computed {
            return Err(format!(
                "footer checksum mismatch (stored {stored:#018x}, computed {computed:#018x})"
            ));
        }
        Ok(BlobFileFooter {
            blob_count: le_u64(bytes, 0),
            blob_bytes: le_u64(bytes, 8),
        })
    }
}

/// The fixed part of a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RecordHeader {
    pub(crate) key_len: u32,
    pub(crate) stored_len: u32,
    pub(crate) compression: u8,
    pub(crate) record_checksum: u64,
}

impl RecordHeader {
    /// Appends the record header to `out`.
    pub(crate) fn encode_to(&self, out: &mut Vec<u8>) {
        let at = out.len();
        out.extend_from_slice(&self.key_len.to_le_bytes());
        out.extend_from_slice(&self.stored_len.to_le_bytes());
        out.push(self.compression);
        let checksum = short_checksum(&out[at..at + 9]);
        out.extend_from_slice(&checksum.to_le_bytes());
        out.extend_from_slice(&self.record_checksum.to_le_bytes());
    }

    /// Decodes the first [`RECORD_HEADER_LEN`] bytes of `bytes` (which must
    /// hold them), checking the header checksum only.
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, String> {
        let Some(b) = bytes.get(..RECORD_HEADER_LEN) else {
            return Err(format!(
                "{} bytes cannot hold a {RECORD_HEADER_LEN}-byte record header",
                bytes.len()
            ));
        };
        let stored = le_u32(b, 9);
        let computed = short_checksum(&b[..9]);
        if stored != computed {
            return Err(format!(
                "record header checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
            ));
        }
        Ok(RecordHeader {
            key_len: le_u32(b, 0),
            stored_len: le_u32(b, 4),
            compression: b[8],
            record_checksum: le_u64(b, 13),
        })
    }
}

/// Where a value lives: what a sorted table stores in place of a value kept
/// in a blob file.
///
/// Encoded as `varint64 file_number | varint64 offset | varint64 size | u8
/// compression` (at most 31 bytes), where `offset` is the position of the
/// record's **value** bytes in the file and `size` their stored length.
///
/// ```
/// use lithify_blob::BlobIndex;
///
/// let index = BlobIndex { file_number: 12, offset: 64, size: 1024, compression: 1 };
/// let bytes = index.encode();
/// assert_eq!(bytes, [12, 64, 0x80, 0x08, 1]);
/// assert_eq!(BlobIndex::decode(&bytes), Ok(index));
/// assert_eq!(index.to_string(), "blob 000012 @ 64 +1024 zstd");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlobIndex {
    /// Number of the blob file.
    pub file_number: u64,
    /// Byte offset of the value in the file (its record starts
    /// [`RECORD_HEADER_LEN`] + key length bytes before).
    pub offset: u64,
    /// Length of the value as stored (compressed length if compressed).
    pub size: u64,
    /// How the value is stored: 0 none, 1 zstd, 2 lz4.
    pub compression: u8,
}

impl BlobIndex {
    /// Largest encoded length.
    pub const MAX_ENCODED_LEN: usize = 31;

    /// Appends the encoded index to `out`.
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        put_varint64(out, self.file_number);
        put_varint64(out, self.offset);
        put_varint64(out, self.size);
        out.push(self.compression);
    }

    /// The encoded index.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(Self::MAX_ENCODED_LEN);
        self.encode_to(&mut out);
        out
    }

    /// Decodes an index that fills `bytes` exactly. Refuses malformed
    /// varints, trailing bytes, an unknown compression code and a size over
    /// [`MAX_BLOB_LEN`](crate::MAX_BLOB_LEN).
    pub fn decode(bytes: &[u8]) -> Result<BlobIndex, DecodeError> {
        let mut d = Decoder::new(bytes);
        let file_number = d.varint64()?;
        let offset = d.varint64()?;
        let size_at = d.position();
        let size = d.varint64()?;
        if size > MAX_BLOB_LEN as u64 {
            return Err(DecodeError::Invalid {
                at: size_at,
                what: "blob size over the largest a blob file holds",
            });
        }
        let code_at = d.position();
        let compression = d.u8().map_err(|_| DecodeError::Truncated {
            at: code_at,
            what: "blob compression code",
        })?;
        if BlobCompression::from_code(compression).is_none() {
            return Err(DecodeError::Invalid {
                at: code_at,
                what: "unknown blob compression code",
            });
        }
        if !d.is_empty() {
            return Err(DecodeError::Invalid {
                at: d.position(),
                what: "trailing bytes after a blob index",
            });
        }
        Ok(BlobIndex {
            file_number,
            offset,
            size,
            compression,
        })
    }
}

impl fmt::Display for BlobIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "blob {:06} @ {} +{} {}",
            self.file_number,
            self.offset,
            self.size,
            code_name(self.compression)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn header() -> BlobFileHeader {
        BlobFileHeader {
            table_id: 7,
            compression: BlobCompression::zstd(),
            db_id: Id::from_bytes([0x11; 16]),
            session_id: Id::from_bytes([0x22; 16]),
            file_number: 42,
        }
    }

    #[test]
    fn magic_reads_as_text_on_disk() {
        assert_eq!(&BLOB_MAGIC.to_le_bytes(), b"\x89LITHBLB");
        assert_eq!(BLOB_MAGIC, 0x424c_4248_5449_4c89);
    }

    #[test]
    fn header_round_trips_and_refuses_damage() {
        let h = header();
        let bytes = h.encode();
        assert_eq!(BlobFileHeader::decode(&bytes), Ok(h));
        // zstd's level is not stored.
        let h5 = BlobFileHeader {
            compression: BlobCompression::Zstd { level: 5 },
            ..h
        };
        assert_eq!(BlobFileHeader::decode(&h5.encode()), Ok(h));
        // Every flipped bit is caught.
        for i in 0..HEADER_LEN * 8 {
            let mut b = bytes;
            b[i / 8] ^= 1 << (i % 8);
            assert!(BlobFileHeader::decode(&b).is_err(), "bit {i}");
        }
        assert!(BlobFileHeader::decode(&bytes[..63]).is_err());
        // A valid checksum over a newer version, reserved bytes or an
        // unknown code.
        let reseal = |mut b: [u8; HEADER_LEN]| {
            let c = short_checksum(&b[..60]);
            b[60..].copy_from_slice(&c.to_le_bytes());
            b
        };
        let mut b = bytes;
        b[8] = 2;
        let err = BlobFileHeader::decode(&reseal(b)).unwrap_err();
        assert!(err.contains("format version 2 is not supported"), "{err}");
        let mut b = bytes;
        b[18] = 1;
        assert!(
            BlobFileHeader::decode(&reseal(b))
                .unwrap_err()
                .contains("reserved")
        );
        let mut b = bytes;
        b[16] = 3;
        assert!(
            BlobFileHeader::decode(&reseal(b))
                .unwrap_err()
                .contains("compression code 3")
        );
    }

    #[test]
    fn unique_id_matches_the_sstable_derivation() {
        let h = header();
        assert_eq!(
            h.unique_id(),
            Id::derive(&[&[0x11; 16], &[0x22; 16], &42u64.to_le_bytes()])
        );
        assert_ne!(
            h.unique_id(),
            BlobFileHeader {
                file_number: 43,
                ..h
            }
            .unique_id()
        );
    }

    #[test]
    fn footer_round_trips_and_refuses_damage() {
        let f = BlobFileFooter {
            blob_count: 3,
            blob_bytes: 1 << 40,
        };
        let bytes = f.encode();
        assert_eq!(BlobFileFooter::decode(&bytes), Ok(f));
        for i in 0..FOOTER_LEN * 8 {
            let mut b = bytes;
            b[i / 8] ^= 1 << (i % 8);
            assert!(BlobFileFooter::decode(&b).is_err(), "bit {i}");
        }
        assert!(BlobFileFooter::decode(&bytes[1..]).is_err());
    }

    #[test]
    fn record_header_round_trips() {
        let r = RecordHeader {
            key_len: 3,
            stored_len: 1000,
            compression: 2,
            record_checksum: 0x0123_4567_89ab_cdef,
        };
        let mut out = vec![0xee];
        r.encode_to(&mut out);
        assert_eq!(out.len(), 1 + RECORD_HEADER_LEN);
        assert_eq!(RecordHeader::decode(&out[1..]), Ok(r));
        for i in 0..9 * 8 + 32 {
            let mut b = out[1..].to_vec();
            b[i / 8] ^= 1 << (i % 8);
            assert!(RecordHeader::decode(&b).is_err(), "bit {i}");
        }
        assert!(RecordHeader::decode(&out[1..20]).is_err());
    }

    #[test]
    fn index_decode_is_strict() {
        let i = BlobIndex {
            file_number: 1,
            offset: 2,
            size: 3,
            compression: 0,
        };
        let mut b = i.encode();
        b.push(0);
        assert!(matches!(
            BlobIndex::decode(&b),
            Err(DecodeError::Invalid { at: 4, .. })
        ));
        b.truncate(3);
        assert!(matches!(
            BlobIndex::decode(&b),
            Err(DecodeError::Truncated { at: 3, .. })
        ));
        assert!(matches!(
            BlobIndex::decode(&[1, 2, 3, 9]),
            Err(DecodeError::Invalid { at: 3, .. })
        ));
        assert!(BlobIndex::decode(&[1, 0x80, 0, 3, 0]).is_err(), "overlong");
        let mut big = Vec::new();
        BlobIndex {
            size: MAX_BLOB_LEN as u64 + 1,
            ..i
        }
        .encode_to(&mut big);
        assert!(BlobIndex::decode(&big).is_err());
        assert_eq!(
            BlobIndex {
                compression: 9,
                ..i
            }
            .to_string(),
            "blob 000001 @ 2 +3 unknown"
        );
    }

    proptest! {
        #[test]
        fn index_round_trips(file_number: u64, offset: u64, size in 0..=MAX_BLOB_LEN as u64, compression in 0u8..3) {
            let i = BlobIndex { file_number, offset, size, compression };
            let b = i.encode();
            prop_assert!(b.len() <= BlobIndex::MAX_ENCODED_LEN);
            prop_assert_eq!(BlobIndex::decode(&b), Ok(i));
        }

        #[test]
        fn index_decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            if let Ok(i) = BlobIndex::decode(&bytes) {
                prop_assert_eq!(i.encode(), bytes);
            }
        }
    }
}
