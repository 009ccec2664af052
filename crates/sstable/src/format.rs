//! The SST file layout: frozen constants, block handles, block trailers
//! and the footer.
//!
//! ```text
//! <start of file>
//! [data block 0 | trailer]
//! ...
//! [data block N-1 | trailer]
//! [filter block | trailer]          optional ("lithify.bloom" in the metaindex)
//! [range-deletion block | trailer]  optional ("lithify.range_del")
//! [index block | trailer]           (its handle is in the footer)
//! [properties block | trailer]      ("lithify.properties")
//! [metaindex block | trailer]       (its handle is in the footer)
//! [footer: 56 bytes]
//! <end of file>
//! ```
//!
//! Every block is followed by a 9-byte **trailer**: the block type (its
//! compression, 1 byte) and the masked xxh3-64 of the stored block bytes
//! followed by the type byte (8 bytes, little-endian). A **block handle** is
//! `varint64 offset, varint64 size`, where `size` excludes the trailer.
//!
//! The **footer** has a fixed size, so a reader finds it from the file size:
//!
//! ```text
//! offset  size  field
//!      0     8  metaindex block offset   (u64 LE)
//!      8     8  metaindex block size     (u64 LE, without trailer)
//!     16     8  index block offset       (u64 LE)
//!     24     8  index block size         (u64 LE, without trailer)
//!     32     4  format version           (u32 LE, currently 1)
//!     36     4  reserved, zero           (u32 LE)
//!     40     8  masked xxh3-64 of bytes 0..40 (u64 LE)
//!     48     8  magic "\x89LITHSST"      (bytes)
//! ```
//!
//! All constants here are **part of the file format** and must never change.

use lithify_base::coding::{Decoder, put_varint64};
use lithify_base::masked_xxh3_64;

/// The magic number closing every table: `\x89` (a non-ASCII byte, so text
/// transfers that mangle bytes are caught) then `LITHSST`.
pub const MAGIC: [u8; 8] = *b"\x89LITHSST";

/// The format version written by this code. Version 1 is the only one.
pub const FORMAT_VERSION: u32 = 1;

/// Length of the footer.
pub const FOOTER_LEN: usize = 56;

/// Length of the trailer after every block: type byte + masked xxh3-64.
pub const BLOCK_TRAILER_LEN: usize = 9;

/// Longest encoding of a block handle (two varint64s).
#[cfg(test)]
pub const MAX_HANDLE_LEN: usize = 20;

/// Block type 0: the block is stored as is.
pub const BLOCK_TYPE_RAW: u8 = 0;
/// Block type 1: the block is `varint32 uncompressed length ++ zstd frame`.
pub const BLOCK_TYPE_ZSTD: u8 = 1;

/// Metaindex name of the bloom filter block.
pub const META_FILTER: &[u8] = b"lithify.bloom";
/// Metaindex name of the properties block.
pub const META_PROPERTIES: &[u8] = b"lithify.properties";
/// Metaindex name of the range-deletion block.
pub const META_RANGE_DEL: &[u8] = b"lithify.range_del";

/// Where a block lives in the file: its offset and its stored size, trailer
/// excluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockHandle {
    /// Offset of the block's first byte.
    pub offset: u64,
    /// Stored size of the block, without its trailer.
    pub size: u64,
}

impl BlockHandle {
    /// Appends the handle as two varint64s.
    pub fn encode_to(&self, dst: &mut Vec<u8>) {
        put_varint64(dst, self.offset);
        put_varint64(dst, self.size);
    }

    /// Decodes a handle that must fill `src` exactly.
    pub fn decode_exact(src: &[u8]) -> Option<BlockHandle> {
        let mut d = Decoder::new(src);
        let offset = d.varint64().ok()?;
        let size = d.varint64().ok()?;
        d.is_empty().then_some(BlockHandle { offset, size })
    }

    /// Offset just past the block's trailer, if it does not overflow.
    pub fn end_with_trailer(&self) -> Option<u64> {
        self.offset
            .checked_add(self.size)?
            .checked_add(BLOCK_TRAILER_LEN as u64)
    }
}

/// Computes the trailer of a block whose stored bytes are `contents`.
#[cfg(any(test, feature = "testing"))]
pub fn block_trailer(contents: &[u8], block_type: u8) -> [u8; BLOCK_TRAILER_LEN] {
    let checksum = masked_xxh3_64(&[contents, &[block_type]]);
    let mut trailer = [0u8; BLOCK_TRAILER_LEN];
    trailer[0] = block_type;
    trailer[1..].copy_from_slice(&checksum.to_le_bytes());
    trailer
}

/// Checks a trailer against the stored block bytes; returns the block type.
#[cfg(any(test, feature = "testing"))]
pub fn verify_trailer(contents: &[u8], trailer: &[u8; BLOCK_TRAILER_LEN]) -> Result<u8, String> {
    let block_type = trailer[0];
    let mut stored = [0u8; 8];
    stored.copy_from_slice(&trailer[1..]);
    let stored = u64::from_le_bytes(stored);
    let actual = masked_xxh3_64(&[contents, &[block_type]]);
    if stored == actual {
        Ok(block_type)
    } else {
        Err(format!(
            "block checksum mismatch: stored {stored:#018x}, computed {actual:#018x}"
        ))
    }
}

/// Checks the trailer of a block read in one piece: `stored` is the stored
/// block bytes followed by their trailer. Returns the block type. The same
/// check as `verify_trailer`, but the stored bytes and the type byte are
/// adjacent here, so they are hashed in one pass.
pub fn verify_stored_block(stored: &[u8]) -> Result<u8, String> {
    let Some(contents_len) = stored.len().checked_sub(BLOCK_TRAILER_LEN) else {
        return Err("block shorter than its trailer".to_string());
    };
    let (hashed, checksum) = stored.split_at(contents_len + 1);
    let block_type = hashed[contents_len];
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(checksum);
    let stored_sum = u64::from_le_bytes(bytes);
    let actual = masked_xxh3_64(&[hashed]);
    if stored_sum == actual {
        Ok(block_type)
    } else {
        Err(format!(
            "block checksum mismatch: stored {stored_sum:#018x}, computed {actual:#018x}"
        ))
    }
}

/// Appends the trailer of the block that `out[contents_at..]` holds to
/// `out`: the same bytes as [`block_trailer`], hashing the block and its
/// type byte in one pass.
pub fn append_block_trailer(out: &mut Vec<u8>, contents_at: usize, block_type: u8) {
    out.push(block_type);
    let checksum = masked_xxh3_64(&[&out[contents_at..]]);
    out.extend_from_slice(&checksum.to_le_bytes());
}

/// The decoded footer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// Handle of the metaindex block.
    pub metaindex: BlockHandle,
    /// Handle of the index block.
    pub index: BlockHandle,
    /// The format version.
    pub format_version: u32,
}

impl Footer {
    /// Encodes the footer.
    pub fn encode(&self) -> [u8; FOOTER_LEN] {
        let mut out = [0u8; FOOTER_LEN];
        out[0..8].copy_from_slice(&self.metaindex.offset.to_le_bytes());
        out[8..16].copy_from_slice(&self.metaindex.size.to_le_bytes());
        out[16..24].copy_from_slice(&self.index.offset.to_le_bytes());
        out[24..32].copy_from_slice(&self.index.size.to_le_bytes());
        out[32..36].copy_from_slice(&self.format_version.to_le_bytes());
        // 36..40 reserved, zero.
        let checksum = masked_xxh3_64(&[&out[..40]]);
        out[40..48].copy_from_slice(&checksum.to_le_bytes());
        out[48..56].copy_from_slice(&MAGIC);
        out
    }

    /// Decodes and verifies a footer. The error says what is wrong; the
    /// caller adds the file and offset.
    pub fn decode(src: &[u8; FOOTER_LEN]) -> Result<Footer, String> {
        if src[48..56] != MAGIC {
            return Err(format!(
                "bad magic number {:02x?}: not a lithify SST, or an SST cut short (its footer is not at the end of the file)",
                &src[48..56]
            ));
        }
        let u64_at = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&src[at..at + 8]);
            u64::from_le_bytes(b)
        };
        let stored = u64_at(40);
        let actual = masked_xxh3_64(&[&src[..40]]);
        if stored != actual {
            return Err(format!(
                "footer checksum mismatch: stored {stored:#018x}, computed {actual:#018x}"
            ));
        }
        let mut v = [0u8; 4];
        v.copy_from_slice(&src[32..36]);
        let format_version = u32::from_le_bytes(v);
        if format_version != FORMAT_VERSION {
            return Err(format!(
                "unsupported SST format version {format_version} (this build reads {FORMAT_VERSION})"
            ));
        }
        if src[36..40] != [0; 4] {
            return Err("reserved footer bytes are not zero".to_string());
        }
        Ok(Footer {
            metaindex: BlockHandle {
                offset: u64_at(0),
                size: u64_at(8),
            },
            index: BlockHandle {
                offset: u64_at(16),
                size: u64_at(24),
            },
            format_version,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn footer_golden_bytes() {
        let footer = Footer {
            metaindex: BlockHandle {
                offset: 0x0102,
                size: 0x30,
            },
            index: BlockHandle {
                offset: 0x80,
                size: 0x15,
            },
            format_version: 1,
        };
        let bytes = footer.encode();
        assert_eq!(&bytes[0..8], &[0x02, 0x01, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&bytes[8..16], &[0x30, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&bytes[16..24], &[0x80, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&bytes[24..32], &[0x15, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&bytes[32..40], &[1, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&bytes[48..56], b"\x89LITHSST");
        assert_eq!(Footer::decode(&bytes), Ok(footer));
        // Every single-byte change is rejected.
        for i in 0..FOOTER_LEN {
            let mut bad = bytes;
            bad[i] ^= 0x01;
            assert!(Footer::decode(&bad).is_err(), "flip at {i} accepted");
        }
    }

    #[test]
    fn one_pass_trailers_match_block_trailer() {
        for contents in [&b""[..], b"x", &[7u8; 5000][..]] {
            for block_type in [BLOCK_TYPE_RAW, BLOCK_TYPE_ZSTD] {
                let mut out = b"prefix".to_vec();
                out.extend_from_slice(contents);
                append_block_trailer(&mut out, 6, block_type);
                assert_eq!(
                    &out[6 + contents.len()..],
                    block_trailer(contents, block_type)
                );
                assert_eq!(verify_stored_block(&out[6..]), Ok(block_type));
                let last = out.len() - 1;
                out[last] ^= 1;
                assert!(verify_stored_block(&out[6..]).is_err());
            }
        }
        assert!(verify_stored_block(&[0; 8]).is_err());
    }

    #[test]
    fn trailer_detects_type_and_content_changes() {
        let t = block_trailer(b"abc", BLOCK_TYPE_RAW);
        assert_eq!(verify_trailer(b"abc", &t), Ok(BLOCK_TYPE_RAW));
        assert!(verify_trailer(b"abd", &t).is_err());
        let mut t2 = t;
        t2[0] = BLOCK_TYPE_ZSTD;
        assert!(verify_trailer(b"abc", &t2).is_err());
    }

    proptest! {
        #[test]
        fn handle_round_trip(offset: u64, size: u64) {
            let h = BlockHandle { offset, size };
            let mut buf = Vec::new();
            h.encode_to(&mut buf);
            prop_assert!(buf.len() <= MAX_HANDLE_LEN);
            prop_assert_eq!(BlockHandle::decode_exact(&buf), Some(h));
            buf.push(0);
            prop_assert_eq!(BlockHandle::decode_exact(&buf), None);
        }
    }
}
