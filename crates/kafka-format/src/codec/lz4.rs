//! LZ4 as Kafka stores it: the LZ4 frame format, written the way Kafka's
//! `Lz4BlockOutputStream` writes it.
//!
//! ```text
//!  0  4  magic 0x184D2204, little-endian
//!  4  1  FLG = 0x60: version 01, blocks independent, no block checksums,
//!        no content size, no content checksum
//!  5  1  BD  = 0x40: 64 KiB maximum block size
//!  6  1  HC  = (xxh32(FLG, BD; seed 0) >> 8) & 0xff
//! then blocks: u32 LE size (high bit set = stored uncompressed), data;
//! then the end mark: u32 0.
//! ```
//!
//! Kafka's reader accepts content sizes, block and content checksums but
//! rejects linked blocks; we write exactly Kafka's subset and read any LZ4
//! frame. Kafka's old header-checksum bug (HC computed over the magic too)
//! concerns only magic-0 message sets (`Lz4Compression` passes
//! `messageVersion == MAGIC_VALUE_V0`), so a RecordBatch v2 always carries
//! the correct HC and is checked.

use std::io::Write as _;

use lz4_flex::frame::{BlockMode, BlockSize, FrameDecoder, FrameEncoder, FrameInfo};

/// Appends `input` as one LZ4 frame to `out`.
pub(crate) fn compress(input: &[u8], out: &mut Vec<u8>) {
    let info = FrameInfo::new()
        .block_size(BlockSize::Max64KB)
        .block_mode(BlockMode::Independent)
        .block_checksums(false)
        .content_checksum(false)
        .content_size(None);
    let mut enc = FrameEncoder::with_frame_info(info, out);
    // Writing into a Vec cannot fail.
    let _ = enc.write_all(input);
    let _ = enc.finish();
}

/// Decodes LZ4 frames, producing at most `limit` bytes.
pub(crate) fn decompress(input: &[u8], limit: usize) -> Result<Vec<u8>, String> {
    super::read_bounded(FrameDecoder::new(input), limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_header_is_kafkas() {
        let mut out = Vec::new();
        compress(b"kafka kafka kafka kafka", &mut out);
        assert_eq!(&out[..6], &[0x04, 0x22, 0x4d, 0x18, 0x60, 0x40]);
        assert_eq!(&out[out.len() - 4..], &[0, 0, 0, 0], "end mark");
        assert_eq!(decompress(&out, 100).unwrap(), b"kafka kafka kafka kafka");
    }

    #[test]
    fn a_wrong_header_checksum_is_rejected() {
        let mut out = Vec::new();
        compress(b"payload", &mut out);
        out[6] ^= 0xff;
        assert!(decompress(&out, 100).is_err());
    }
}
