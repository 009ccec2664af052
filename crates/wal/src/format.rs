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
//! | "LTHFYLOG"     | = 1           |                 | of bytes 0..20|
//! +----------------+---------------+-----------------+---------------+
//!
//! fragment (11-byte header, then the payload)
//! +---------------+-------------+---------+------------------+-----------+
//! | checksum u32  | length u16  | type u8 | log number u32   | payload   |
//! | of bytes 4..  | of payload  | 1..=4   | (low 32 bits)    | length B  |
//! +---------------+-------------+---------+------------------+-----------+
//! ```
//!
//! All integers are little-endian. Each checksum is the low 32 bits of the
//! masked xxh3-64 ([`lithify_base::masked_xxh3_64`]) of the bytes it covers:
//! the first 20 header bytes for the file header; for a fragment, the header
//! bytes after the checksum (length, type, log number) followed by the
//! payload, which are contiguous on disk.
//!
//! A record is written as one `Full` fragment, or as `First`, any number of
//! `Middle`, and `Last`. When fewer than [`FRAGMENT_HEADER_LEN`] bytes are
//! left in a block, the writer fills them with zeros (the **block trailer**)
//! and continues in the next block. A record of any size, including zero
//! bytes, is legal.
//!
//! Fragment types with bit 7 set are **safe to ignore**: a reader that does
//! not know one skips it (after checking its checksum). Type 0 is never
//! written: an all-zero header marks zero-filled space (preallocated, or
//! exposed by a crash) and is treated as damage.
//!
//! The per-fragment log number lets a reader tell stale bytes of another log
//! (a reused or recycled file) from records of this one.

use lithify_base::masked_xxh3_64;

/// Size of a block. Fragments never cross a block boundary. Frozen.
pub const BLOCK_SIZE: usize = 32 * 1024;

/// The first eight bytes of every log file. Frozen.
pub const MAGIC: [u8; 8] = *b"LTHFYLOG";

/// The format version this crate writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// Length of the file header at offset 0.
pub const FILE_HEADER_LEN: usize = 24;

/// Length of a fragment header.
pub const FRAGMENT_HEADER_LEN: usize = 11;

/// The largest payload one fragment can carry (a whole block minus a header).
pub const MAX_FRAGMENT_PAYLOAD: usize = BLOCK_SIZE - FRAGMENT_HEADER_LEN;

/// Fragment types with this bit set may be skipped by readers that do not
/// know them.
pub const SAFE_TO_IGNORE: u8 = 0x80;

/// The type of a fragment. The numbers are part of the format and frozen;
/// `0` is reserved (zero-filled space is never a valid fragment).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum FragmentType {
    /// A whole record in one fragment.
    Full = 1,
    /// The first fragment of a record that continues in later fragments.
    First = 2,
    /// A fragment in the middle of a record.
    Middle = 3,
    /// The last fragment of a record.
    Last = 4,
}

impl FragmentType {
    /// The fragment type with number `b`, if it is one.
    pub const fn from_u8(b: u8) -> Option<FragmentType> {
        match b {
            1 => Some(FragmentType::Full),
            2 => Some(FragmentType::First),
            3 => Some(FragmentType::Middle),
            4 => Some(FragmentType::Last),
            _ => None,
        }
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

/// Appends one fragment (header and payload) to `dst`.
pub fn put_fragment(dst: &mut Vec<u8>, ty: FragmentType, log_tag: u32, payload: &[u8]) {
    debug_assert!(payload.len() <= MAX_FRAGMENT_PAYLOAD);
    let start = dst.len();
    dst.extend_from_slice(&[0; 4]);
    dst.extend_from_slice(&(payload.len() as u16).to_le_bytes());
    dst.push(ty as u8);
    dst.extend_from_slice(&log_tag.to_le_bytes());
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
    /// The low 32 bits of the log number of the writer.
    pub log_tag: u32,
}

impl FragmentHeader {
    /// Decodes the 11 header bytes.
    pub fn decode(b: &[u8; FRAGMENT_HEADER_LEN]) -> Self {
        FragmentHeader {
            checksum: u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            length: u16::from_le_bytes([b[4], b[5]]),
            ty: b[6],
            log_tag: u32::from_le_bytes([b[7], b[8], b[9], b[10]]),
        }
    }

    /// Whether every byte of the header was zero.
    pub fn is_zero(&self) -> bool {
        self.checksum == 0 && self.length == 0 && self.ty == 0 && self.log_tag == 0
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

impl FileHeader {
    /// The header of log `log_number` in the current format version.
    pub fn new(log_number: u64) -> Self {
        FileHeader {
            version: FORMAT_VERSION,
            log_number,
        }
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
        if version != FORMAT_VERSION {
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
        put_fragment(&mut buf, FragmentType::Full, 7, b"hi");
        assert_eq!(buf.len(), FRAGMENT_HEADER_LEN + 2);
        // length 2, type Full, log tag 7, payload "hi".
        assert_eq!(&buf[4..], &[2, 0, 1, 7, 0, 0, 0, b'h', b'i']);
        let crc = fragment_checksum(&buf[4..]);
        assert_eq!(buf[..4], crc.to_le_bytes());
        let header = FragmentHeader::decode(buf[..FRAGMENT_HEADER_LEN].try_into().unwrap());
        assert_eq!(
            header,
            FragmentHeader {
                checksum: crc,
                length: 2,
                ty: 1,
                log_tag: 7
            }
        );
    }
}
