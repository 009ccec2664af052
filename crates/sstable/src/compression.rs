//! Per-block compression.

use std::io;

use lithify_base::coding::{Decoder, put_varint32};

/// Largest uncompressed block stored compressed (16 MiB).
pub const MAX_COMPRESSED_BLOCK_LEN: usize = 16 << 20;

/// How data blocks are compressed.
///
/// A data block is stored zstd-compressed only when that saves at least an
/// eighth of its size; otherwise it is stored raw, so the reader never pays
/// for decompression that bought little. A compressed block is stored as
/// `varint32 uncompressed_length ++ zstd frame`. Blocks larger than
/// [`MAX_COMPRESSED_BLOCK_LEN`] (possible only with huge values) are always
/// stored raw, which bounds what a reader allocates for a damaged block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Compression {
    /// Blocks are stored as they are.
    #[default]
    None,
    /// Blocks are zstd-compressed at `level` (1..=22; negative levels are
    /// zstd's fast modes) when that saves at least 1/8.
    Zstd {
        /// The zstd level.
        level: i32,
    },
}

impl Compression {
    /// zstd at its default level (3).
    pub const fn zstd() -> Self {
        Compression::Zstd { level: 3 }
    }

    /// The name recorded in the properties block: `none` or `zstd`.
    pub fn name(&self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Zstd { .. } => "zstd",
        }
    }
}

/// Compresses blocks with one reusable zstd context.
pub(crate) struct BlockCompressor {
    inner: zstd::bulk::Compressor<'static>,
    frame: Vec<u8>,
    out: Vec<u8>,
}

impl std::fmt::Debug for BlockCompressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCompressor").finish_non_exhaustive()
    }
}

impl BlockCompressor {
    /// A compressor at `level`.
    pub(crate) fn new(level: i32) -> io::Result<Self> {
        Ok(BlockCompressor {
            inner: zstd::bulk::Compressor::new(level)?,
            frame: Vec::new(),
            out: Vec::new(),
        })
    }

    /// The stored form of `raw` if compressing saves at least 1/8, else
    /// `None` (store raw).
    pub(crate) fn compress(&mut self, raw: &[u8]) -> io::Result<Option<&[u8]>> {
        if raw.len() > MAX_COMPRESSED_BLOCK_LEN || raw.len() < 8 {
            return Ok(None);
        }
        self.frame.clear();
        self.frame.reserve(zstd::compress_bound(raw.len()));
        self.inner.compress_to_buffer(raw, &mut self.frame)?;
        self.out.clear();
        put_varint32(&mut self.out, raw.len() as u32);
        self.out.extend_from_slice(&self.frame);
        if self.out.len() > raw.len() - raw.len() / 8 {
            return Ok(None);
        }
        Ok(Some(&self.out))
    }
}

/// Decompresses a stored zstd block (`varint32 length ++ frame`). The
/// error is a phrase; the caller adds file and offset.
pub(crate) fn decompress_zstd(stored: &[u8]) -> Result<Vec<u8>, String> {
    let mut d = Decoder::new(stored);
    let raw_len =
        d.varint32()
            .map_err(|e| format!("bad uncompressed length of a zstd block: {e}"))? as usize;
    if raw_len > MAX_COMPRESSED_BLOCK_LEN {
        return Err(format!(
            "zstd block claims {raw_len} uncompressed bytes, more than the {MAX_COMPRESSED_BLOCK_LEN} a writer compresses"
        ));
    }
    let frame = d.remaining();
    lithify_base::zstd::decompress_exact(frame, raw_len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressible_blocks_round_trip() {
        let raw: Vec<u8> = (0..4096u32).map(|i| (i % 7) as u8).collect();
        let mut c = BlockCompressor::new(3).unwrap();
        let stored = c
            .compress(&raw)
            .unwrap()
            .expect("repetitive data compresses")
            .to_vec();
        assert!(stored.len() < raw.len() / 8);
        assert_eq!(decompress_zstd(&stored).unwrap(), raw);
    }

    #[test]
    fn incompressible_blocks_stay_raw() {
        // xorshift noise does not compress by 1/8.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let raw: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let mut c = BlockCompressor::new(3).unwrap();
        assert!(c.compress(&raw).unwrap().is_none());
    }

    #[test]
    fn bad_frames_are_errors() {
        assert!(decompress_zstd(&[]).is_err());
        assert!(decompress_zstd(&[0x80]).is_err());
        assert!(decompress_zstd(&[10, 1, 2, 3]).is_err());
        // A length above the cap is refused before allocating.
        let mut big = Vec::new();
        put_varint32(&mut big, u32::MAX);
        assert!(decompress_zstd(&big).unwrap_err().contains("claims"));
        // A valid frame whose length prefix lies.
        let mut c = BlockCompressor::new(1).unwrap();
        let raw = vec![7u8; 1000];
        let mut stored = c.compress(&raw).unwrap().unwrap().to_vec();
        stored[0] ^= 1; // 1000 = e8 07 -> e9 07
        assert!(decompress_zstd(&stored).is_err());
    }
}
