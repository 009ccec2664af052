//! The log format, byte by byte.
//!
//! A log file is a sequence of **blocks** of [`BLOCK_SIZE`] bytes (the last
//! one may be shorter). The file starts with a 24-byte **file header**; the
//! rest of block 0 and every later block hold **fragments**. A fragment never
//! crosses a block boundary, so every block start is a place where a reader
//! can pick up again after damage.
//!
//! ```text
//! file header (offset 0, 24 bytes)
//! +----------------+---------------+-----------------+---------------+
//! | magic (8 B)    | version u32   | log number u64  | checksum u32  |
//! | "LTHFYLOG"     | = 1 to 4      |                 | of bytes 0..20|
//! +----------------+---------------+-----------------+---------------+
//!
//! tagged fragment (versions 1 to 3: 11-byte header, then the payload)
//! +---------------+-------------+---------+------------------+-----------+
//! | checksum u32  | length u16  | type u8 | log number u32   | payload   |
//! | of bytes 4..  | of payload  | 1..=6   | (low 32 bits)    | length B  |
//! +---------------+-------------+---------+------------------+-----------+
//!
//! compact fragment (version 4: 7-byte header, then the payload)
//! +---------------+-------------+---------+-----------+
//! | checksum u32  | length u16  | type u8 | payload   |
//! | of bytes 4..  | of payload  | 1..=6   | length B  |
//! +---------------+-------------+---------+-----------+
//! ```
//!
//! All integers are little-endian. Each checksum is the low 32 bits of the
//! masked xxh3-64 ([`lithify_base::masked_xxh3_64`]) of the bytes it covers:
//! the first 20 header bytes for the file header; for a fragment, the header
//! bytes after the checksum (length, type, and in a tagged fragment the log
//! number) followed by the payload, which are contiguous on disk. The
//! **framing** ([`Framing`]) says which header a log's fragments have; the
//! file header's version decides it.
//!
//! A record is written as one `Full` fragment, or as `First`, any number of
//! `Middle`, and `Last`. When fewer bytes than a fragment header's are
//! left in a block, the writer fills them with zeros (the **block trailer**)
//! and continues in the next block. A record of any size, including zero
//! bytes, is legal.
//!
//! **Compressed records** (version 2 only). A record may be stored LZ4
//! compressed: its first fragment is then `Lz4Full` or `Lz4First` instead of
//! `Full` or `First` (`Middle` and `Last` are shared), and the bytes of its
//! fragments joined are a varint32 of the record's length followed by one
//! LZ4 block (the raw block format, no frame) that decodes to exactly that
//! many bytes. Each record is compressed on its own, so damage to one never
//! reaches another. A writer stores a record compressed only when that is
//! smaller. Writers put version 2 in the header only when they may
//! compress, so readers that know only version 1 refuse such a file by its
//! version instead of reporting its compressed records as damage; this
//! reader accepts compressed records in either version (a damaged header
//! must not cost the records after it).
//!
//! **Owned logs** (version 3). The file header is followed, at offset 24,
//! by one `Identity` fragment (type `0x81`) whose 16-byte payload is the
//! **owner**: the identity of the database the log belongs to (a WAL's
//! or a MANIFEST's). Version 3 logs may hold compressed records as
//! version 2 ones do. The owner lets a reader tell a log copied in from
//! another database from its own, whatever its name and number; the
//! fragment is checksummed like any other, and its type has bit 7 set.
//! Readers that know only versions 1 and 2 refuse a version 3 log by its
//! header: a database whose logs name their owner cannot be opened by
//! them, which is what protects the identity checks from a downgrade.
//!
//! **Compact logs** (version 4). Version 3 with 7-byte fragment headers:
//! the log number is left out of every fragment, 4 bytes saved per
//! fragment (RocksDB's legacy WAL header is 7 bytes too). The `Identity`
//! fragment follows the file header as in version 3, and records may be
//! compressed. A compact log cannot tell another log's fragments from its
//! own, so it must always be written into a new file: a recycled log is
//! always tagged (versions 1 to 3), and so is every log of a writer that
//! recycles files, whose old bytes may then be recycled in turn (RocksDB
//! uses its recyclable, numbered header for every WAL once
//! `recycle_log_file_num` is set, for the same reason). Readers that know
//! only versions 1 to 3 refuse a version 4 log by its header.
//!
//! **Recycled logs** (any tagged version). A log written over the file of an
//! older log (RocksDB's `recycle_log_file_num`) has, right after the file
//! header and the `Identity` fragment if there is one, a `Recycled`
//! fragment (type `0x82`) whose 8-byte payload is the older log's number
//! (u64, little-endian). Its file still holds the older log's bytes after
//! the new log's last record: the **stale tail**. Each write ends with an
//! **end marker**, zeros through the next fragment header's bytes (past
//! a block trailer if one comes first), which the next write overwrites.
//! To a reader that saw the `Recycled` fragment, a zero-filled header or
//! an intact fragment of the older log met where a record would start,
//! after which no intact fragment of this log follows, is the stale tail
//! and the log's clean end, in every recovery mode; any other problem
//! there is damage as usual. The fragment is safe to ignore, so no version
//! changes: a reader that does not know it takes the stale tail for damage
//! at the end of the log.
//!
//! **Preallocated logs** (any version). A log whose writer sizes the file
//! ahead of its records has, after the header and the `Identity` and
//! `Recycled` fragments it has, a `Preallocated` fragment (type `0x83`,
//! no payload). To a reader that saw it, zeros from where the next
//! fragment would start to the end of the file are the log's **zero
//! tail**: space not written yet, its clean end in every recovery mode.
//! In a log without it (a MANIFEST, say), such zeros are a torn tail, as
//! they always were. A file of zeros only, header included, is an empty
//! log whatever it holds: nothing of it was written.
//!
//! Fragment types with bit 7 set are **safe to ignore**: a reader that does
//! not know one skips it (after checking its checksum). Type 0 is never
//! written: an all-zero header marks zero-filled space, damage unless it
//! is a preallocated log's zero tail or a recycled log's end marker.
//!
//! The per-fragment log number lets a reader tell stale bytes of another log
//! (a reused or recycled file) from records of this one.

use lithify_base::masked_xxh3_64;

/// Size of a block. Fragments never cross a block boundary. Frozen.
pub const BLOCK_SIZE: usize = 32 * 1024;

/// The first eight bytes of every log file. Frozen.
pub const MAGIC: [u8; 8] = *b"LTHFYLOG";

/// The format version of logs without compressed records.
pub const FORMAT_VERSION: u32 = 1;

/// The format version of logs that may hold LZ4-compressed records.
pub const FORMAT_VERSION_COMPRESSED: u32 = 2;

/// The format version of logs whose header is followed by an `Identity`
/// fragment naming their owner (they may hold compressed records too).
pub const FORMAT_VERSION_OWNED: u32 = 3;

/// The format version of owned logs (an `Identity` fragment follows the
/// header) whose fragments have compact, 7-byte headers.
pub const FORMAT_VERSION_COMPACT: u32 = 4;

/// Length of a `Recycled` fragment's payload (the older log's number).
pub const RECYCLED_LEN: usize = 8;

/// Length of an owner identity (the `Identity` fragment's payload).
pub const OWNER_LEN: usize = 16;

/// Length of the file header at offset 0.
pub const FILE_HEADER_LEN: usize = 24;

/// Length of a tagged fragment header (versions 1 to 3).
pub const FRAGMENT_HEADER_LEN: usize = 11;

/// Length of a compact fragment header (version 4).
pub const COMPACT_FRAGMENT_HEADER_LEN: usize = 7;

/// The largest payload one fragment can carry (a whole block minus a
/// tagged header; a compact fragment can carry 4 bytes more).
pub const MAX_FRAGMENT_PAYLOAD: usize = BLOCK_SIZE - FRAGMENT_HEADER_LEN;

/// Which header a log's fragments have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Framing {
    /// 11 bytes, the last 4 the low 32 bits of the log number (versions 1
    /// to 3). Tells another log's stale bytes from this log's records, which
    /// a recycled file needs. The default.
    #[default]
    Tagged,
    /// 7 bytes, no log number (version 4).
    Compact,
}

impl Framing {
    /// The framing of a log whose file header has `version`.
    pub const fn of_version(version: u32) -> Framing {
        if version == FORMAT_VERSION_COMPACT {
            Framing::Compact
        } else {
            Framing::Tagged
        }
    }

    /// Bytes of one fragment header.
    #[inline]
    pub const fn header_len(self) -> usize {
        match self {
            Framing::Tagged => FRAGMENT_HEADER_LEN,
            Framing::Compact => COMPACT_FRAGMENT_HEADER_LEN,
        }
    }
}

/// Fragment types with this bit set may be skipped by readers that do not
/// know them.
pub const SAFE_TO_IGNORE: u8 = 0x80;

/// The type of a fragment. The numbers are part of the format and frozen;
/// `0` is reserved (zero-filled space is never a valid fragment).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
#[non_exhaustive]
pub enum FragmentType {
    /// A whole record in one fragment.
    Full = 1,
    /// The first fragment of a record that continues in later fragments.
    First = 2,
    /// A fragment in the middle of a record.
    Middle = 3,
    /// The last fragment of a record.
    Last = 4,
    /// A whole LZ4-compressed record in one fragment (version 2).
    Lz4Full = 5,
    /// The first fragment of an LZ4-compressed record (version 2).
    Lz4First = 6,
    /// The log's owner, right after the file header (version 3): a
    /// 16-byte identity, not a record. Safe to ignore (bit 7).
    Identity = 0x81,
    /// The file held an older log before this one (any version): an
    /// 8-byte payload, the older log's number. Safe to ignore (bit 7).
    Recycled = 0x82,
    /// The file is sized ahead of its records (any version): zeros after
    /// the last record are space not written yet. No payload. Safe to
    /// ignore (bit 7).
    Preallocated = 0x83,
}

impl FragmentType {
    /// The fragment type with number `b`, if it is one.
    pub const fn from_u8(b: u8) -> Option<FragmentType> {
        match b {
            1 => Some(FragmentType::Full),
            2 => Some(FragmentType::First),
            3 => Some(FragmentType::Middle),
            4 => Some(FragmentType::Last),
            5 => Some(FragmentType::Lz4Full),
            6 => Some(FragmentType::Lz4First),
            0x81 => Some(FragmentType::Identity),
            0x82 => Some(FragmentType::Recycled),
            0x83 => Some(FragmentType::Preallocated),
            _ => None,
        }
    }
}

/// Encodes a compressed record's bytes into `dst` (cleared first): the
/// varint32 of `raw.len()` then `raw` as one LZ4 block. Returns `false`,
/// leaving `dst` unspecified, when that is not smaller than `raw`, or
/// `raw` is too long for a varint32 length.
pub fn compress_record(raw: &[u8], dst: &mut Vec<u8>) -> bool {
    let Ok(len) = u32::try_from(raw.len()) else {
        return false;
    };
    dst.clear();
    lithify_base::coding::put_varint32(dst, len);
    let header = dst.len();
    dst.resize(
        header + lz4_flex::block::get_maximum_output_size(raw.len()),
        0,
    );
    match lz4_flex::block::compress_into(raw, &mut dst[header..]) {
        Ok(n) if header + n < raw.len() => {
            dst.truncate(header + n);
            true
        }
        _ => false,
    }
}

/// Why a compressed record's bytes do not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DecompressError {
    /// The length varint is cut short or malformed.
    BadLength,
    /// The stated length is more than LZ4 can expand the block to (255
    /// bytes per byte), or zero.
    ImpossibleLength,
    /// The LZ4 block is malformed or decodes to another length.
    BadBlock,
}

/// Decodes a compressed record's bytes (see [`compress_record`]) into
/// `dst` (cleared first).
pub fn decompress_record(stored: &[u8], dst: &mut Vec<u8>) -> Result<(), DecompressError> {
    let (len, n) =
        lithify_base::coding::decode_varint32(stored).map_err(|_| DecompressError::BadLength)?;
    let (len, block) = (len as usize, &stored[n..]);
    if len == 0 || len > block.len().saturating_mul(255) {
        return Err(DecompressError::ImpossibleLength);
    }
    dst.clear();
    dst.resize(len, 0);
    match lz4_flex::block::decompress_into(block, dst) {
        Ok(n) if n == len => Ok(()),
        _ => Err(DecompressError::BadBlock),
    }
}

/// The low 32 bits of a log number, as fragments store it.
#[inline]
pub const fn log_number_tag(log_number: u64) -> u32 {
    log_number as u32
}

/// The checksum of a fragment: `bytes` are the header bytes after the
/// checksum field followed by the payload.
#[inline]
pub fn fragment_checksum(bytes: &[u8]) -> u32 {
    masked_xxh3_64(&[bytes]) as u32
}

/// Appends one fragment (header and payload) to `dst`, framed as
/// `framing` says (a compact fragment leaves `log_tag` out).
pub fn put_fragment(
    dst: &mut Vec<u8>,
    framing: Framing,
    ty: FragmentType,
    log_tag: u32,
    payload: &[u8],
) {
    debug_assert!(payload.len() <= BLOCK_SIZE - framing.header_len());
    let start = dst.len();
    dst.extend_from_slice(&[0; 4]);
    dst.extend_from_slice(&(payload.len() as u16).to_le_bytes());
    dst.push(ty as u8);
    if framing == Framing::Tagged {
        dst.extend_from_slice(&log_tag.to_le_bytes());
    }
    dst.extend_from_slice(payload);
    let crc = fragment_checksum(&dst[start + 4..]);
    dst[start..start + 4].copy_from_slice(&crc.to_le_bytes());
}

/// A decoded fragment header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragmentHeader {
    /// The stored checksum.
    pub checksum: u32,
    /// Payload length.
    pub length: u16,
    /// The raw type byte.
    pub ty: u8,
    /// The low 32 bits of the log number of the writer; `None` in a
    /// compact fragment, which does not say.
    pub log_tag: Option<u32>,
}

impl FragmentHeader {
    /// Decodes the first `framing.header_len()` bytes of `b`.
    ///
    /// # Panics
    ///
    /// If `b` is shorter than `framing.header_len()`.
    #[inline]
    pub fn decode(b: &[u8], framing: Framing) -> Self {
        FragmentHeader {
            checksum: u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            length: u16::from_le_bytes([b[4], b[5]]),
            ty: b[6],
            log_tag: match framing {
                Framing::Tagged => Some(u32::from_le_bytes([b[7], b[8], b[9], b[10]])),
                Framing::Compact => None,
            },
        }
    }

    /// Whether every byte of the header was zero.
    pub fn is_zero(&self) -> bool {
        self.checksum == 0 && self.length == 0 && self.ty == 0 && self.log_tag.unwrap_or(0) == 0
    }

    /// Whether the fragment may belong to the log whose number has the
    /// low 32 bits `log_tag`: its tag is that, or it has none (compact).
    #[inline]
    pub fn is_of(&self, log_tag: u32) -> bool {
        self.log_tag.is_none_or(|t| t == log_tag)
    }
}

/// The file header: which log this file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileHeader {
    /// The format version.
    pub version: u32,
    /// The log number (the WAL or MANIFEST file number).
    pub log_number: u64,
}

/// Why 24 bytes are not a valid file header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileHeaderError {
    /// Every byte is zero (never written, or zero-filled by a crash).
    Zeroed,
    /// The checksum does not match: the header is damaged.
    ChecksumMismatch,
    /// The checksum matches but the magic is not [`MAGIC`]: another format.
    BadMagic,
    /// A version this crate cannot read.
    UnsupportedVersion(u32),
}

impl std::fmt::Display for FileHeaderError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FileHeaderError::Zeroed => f.write_str("the log header is all zeros"),
            FileHeaderError::ChecksumMismatch => {
                f.write_str("the log header's checksum does not match")
            }
            FileHeaderError::BadMagic => f.write_str("bad magic number: not a lithify record log"),
            FileHeaderError::UnsupportedVersion(v) => write!(
                f,
                "format version {v} is not supported (this reader knows 1 to 4)"
            ),
        }
    }
}

impl FileHeader {
    /// The header of log `log_number` in format version 1 (no compressed
    /// records).
    pub fn new(log_number: u64) -> Self {
        FileHeader {
            version: FORMAT_VERSION,
            log_number,
        }
    }

    /// The header of log `log_number` in format version 2 (records may be
    /// compressed).
    pub fn compressed(log_number: u64) -> Self {
        FileHeader {
            version: FORMAT_VERSION_COMPRESSED,
            log_number,
        }
    }

    /// The header of log `log_number` in format version 3: an `Identity`
    /// fragment follows it (records may be compressed).
    pub fn owned(log_number: u64) -> Self {
        FileHeader {
            version: FORMAT_VERSION_OWNED,
            log_number,
        }
    }

    /// The header of log `log_number` in format version 4: an `Identity`
    /// fragment follows it, fragments have compact headers, records may be
    /// compressed.
    pub fn compact(log_number: u64) -> Self {
        FileHeader {
            version: FORMAT_VERSION_COMPACT,
            log_number,
        }
    }

    /// The framing of the log's fragments.
    pub fn framing(&self) -> Framing {
        Framing::of_version(self.version)
    }

    /// Whether an `Identity` fragment follows the header (versions 3 and 4).
    pub fn is_owned(&self) -> bool {
        matches!(self.version, FORMAT_VERSION_OWNED | FORMAT_VERSION_COMPACT)
    }

    /// The 24 encoded bytes.
    pub fn encode(&self) -> [u8; FILE_HEADER_LEN] {
        let mut out = [0u8; FILE_HEADER_LEN];
        out[..8].copy_from_slice(&MAGIC);
        out[8..12].copy_from_slice(&self.version.to_le_bytes());
        out[12..20].copy_from_slice(&self.log_number.to_le_bytes());
        let crc = masked_xxh3_64(&[&out[..20]]) as u32;
        out[20..24].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// Decodes and checks 24 header bytes.
    pub fn decode(b: &[u8; FILE_HEADER_LEN]) -> Result<Self, FileHeaderError> {
        if b.iter().all(|&x| x == 0) {
            return Err(FileHeaderError::Zeroed);
        }
        let stored = u32::from_le_bytes([b[20], b[21], b[22], b[23]]);
        if masked_xxh3_64(&[&b[..20]]) as u32 != stored {
            return Err(FileHeaderError::ChecksumMismatch);
        }
        if b[..8] != MAGIC {
            return Err(FileHeaderError::BadMagic);
        }
        let version = u32::from_le_bytes([b[8], b[9], b[10], b[11]]);
        if !matches!(
            version,
            FORMAT_VERSION
                | FORMAT_VERSION_COMPRESSED
                | FORMAT_VERSION_OWNED
                | FORMAT_VERSION_COMPACT
        ) {
            return Err(FileHeaderError::UnsupportedVersion(version));
        }
        let mut n = [0u8; 8];
        n.copy_from_slice(&b[12..20]);
        Ok(FileHeader {
            version,
            log_number: u64::from_le_bytes(n),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_file_header() {
        let h = FileHeader::new(7).encode();
        assert_eq!(&h[..8], b"LTHFYLOG");
        assert_eq!(&h[8..20], &[1, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0]);
        let crc = masked_xxh3_64(&[&h[..20]]) as u32;
        assert_eq!(h[20..24], crc.to_le_bytes());
        assert_eq!(FileHeader::decode(&h), Ok(FileHeader::new(7)));
        assert_eq!(
            FileHeader::decode(&[0; FILE_HEADER_LEN]),
            Err(FileHeaderError::Zeroed)
        );
        let mut bad = h;
        bad[13] ^= 1;
        assert_eq!(
            FileHeader::decode(&bad),
            Err(FileHeaderError::ChecksumMismatch)
        );
    }

    #[test]
    fn golden_fragment() {
        let mut buf = Vec::new();
        put_fragment(&mut buf, Framing::Tagged, FragmentType::Full, 7, b"hi");
        assert_eq!(buf.len(), FRAGMENT_HEADER_LEN + 2);
        // length 2, type Full, log tag 7, payload "hi".
        assert_eq!(&buf[4..], &[2, 0, 1, 7, 0, 0, 0, b'h', b'i']);
        let crc = fragment_checksum(&buf[4..]);
        assert_eq!(buf[..4], crc.to_le_bytes());
        let header = FragmentHeader::decode(&buf, Framing::Tagged);
        assert_eq!(
            header,
            FragmentHeader {
                checksum: crc,
                length: 2,
                ty: 1,
                log_tag: Some(7)
            }
        );
        assert!(header.is_of(7) && !header.is_of(8));
    }

    #[test]
    fn golden_compact_fragment() {
        let mut buf = Vec::new();
        put_fragment(&mut buf, Framing::Compact, FragmentType::Full, 7, b"hi");
        assert_eq!(buf.len(), COMPACT_FRAGMENT_HEADER_LEN + 2);
        // length 2, type Full, payload "hi": no log tag.
        assert_eq!(&buf[4..], &[2, 0, 1, b'h', b'i']);
        let crc = fragment_checksum(&buf[4..]);
        assert_eq!(buf[..4], crc.to_le_bytes());
        let header = FragmentHeader::decode(&buf, Framing::Compact);
        assert_eq!(
            header,
            FragmentHeader {
                checksum: crc,
                length: 2,
                ty: 1,
                log_tag: None
            }
        );
        assert!(header.is_of(7) && header.is_of(8));
        assert!(FragmentHeader::decode(&[0; 7], Framing::Compact).is_zero());
        let h = FileHeader::compact(9);
        assert_eq!(FileHeader::decode(&h.encode()), Ok(h));
        assert_eq!(h.framing(), Framing::Compact);
        assert!(h.is_owned() && FileHeader::owned(9).is_owned() && !FileHeader::new(9).is_owned());
    }

    #[test]
    fn golden_compressed_record() {
        let mut raw = vec![b'a'; 32];
        raw.extend_from_slice(&[b'b'; 32]);
        let mut stored = Vec::new();
        assert!(compress_record(&raw, &mut stored));
        // Length 64; 'a' + 31 more from 1 back; 'b' + 25 more from 1 back;
        // six literal 'b's (LZ4 ends with literals).
        assert_eq!(
            stored,
            [
                0x40, 0x1f, b'a', 1, 0, 0x0c, 0x1f, b'b', 1, 0, 0x06, 0x60, b'b', b'b', b'b', b'b',
                b'b', b'b'
            ]
        );
        let mut back = Vec::new();
        decompress_record(&stored, &mut back).unwrap();
        assert_eq!(back, raw);
        // Too short to gain: not compressed.
        assert!(!compress_record(b"abcdefgh", &mut stored));
        assert_eq!(
            decompress_record(&[0], &mut back),
            Err(DecompressError::ImpossibleLength)
        );
        assert_eq!(
            decompress_record(&[0x80], &mut back),
            Err(DecompressError::BadLength)
        );
    }
}
