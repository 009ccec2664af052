//! Block-level entry points for fuzz targets and tests (feature `testing`).
//! Not a stable API.

use bytes::Bytes;

pub use crate::block::{Block, BlockIter};
pub use crate::format::{FOOTER_LEN, Footer};

use crate::block::BlockBuilder;
use crate::compression::{BlockCompressor, decompress_zstd};
use crate::format::{
    BLOCK_TRAILER_LEN, BLOCK_TYPE_RAW, BLOCK_TYPE_ZSTD, block_trailer, verify_trailer,
};

/// Encodes sorted `entries` as a stored block with its trailer, as the
/// table builder writes data blocks (zstd when `zstd_level` is given and it
/// saves 1/8).
pub fn encode_block(
    entries: &[(Vec<u8>, Vec<u8>)],
    restart_interval: usize,
    zstd_level: Option<i32>,
) -> Vec<u8> {
    let mut b = BlockBuilder::new(restart_interval);
    for (k, v) in entries {
        b.add(k, v);
    }
    let raw = b.finish();
    let mut out = Vec::new();
    let compressed = zstd_level.and_then(|level| {
        BlockCompressor::new(level)
            .ok()
            .and_then(|mut c| c.compress(raw).ok().flatten().map(<[u8]>::to_vec))
    });
    match compressed {
        Some(c) => {
            out.extend_from_slice(&c);
            out.extend_from_slice(&block_trailer(&c, BLOCK_TYPE_ZSTD));
        }
        None => {
            out.extend_from_slice(raw);
            out.extend_from_slice(&block_trailer(raw, BLOCK_TYPE_RAW));
        }
    }
    out
}

/// Decodes a stored block (contents followed by its 9-byte trailer) the way
/// a table read does: checks the trailer when `verify`, decompresses, and
/// checks the restart array.
pub fn decode_block(stored: &[u8], verify: bool) -> Result<Block, String> {
    let Some(contents_len) = stored.len().checked_sub(BLOCK_TRAILER_LEN) else {
        return Err("shorter than a block trailer".into());
    };
    let (contents, trailer) = stored.split_at(contents_len);
    let mut t = [0u8; BLOCK_TRAILER_LEN];
    t.copy_from_slice(trailer);
    let block_type = if verify {
        verify_trailer(contents, &t)?
    } else {
        t[0]
    };
    let data = match block_type {
        BLOCK_TYPE_RAW => Bytes::copy_from_slice(contents),
        BLOCK_TYPE_ZSTD => Bytes::from(decompress_zstd(contents)?),
        other => return Err(format!("unknown block type {other}")),
    };
    Block::new(data).map_err(|e| e.to_string())
}
