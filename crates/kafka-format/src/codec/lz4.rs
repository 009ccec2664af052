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

/// The input of a thread's reused frame decoder: a copy of the frames
/// being decoded.
#[derive(Debug, Default)]
struct Input {
    bytes: Vec<u8>,
    at: usize,
}

impl std::io::Read for Input {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let rest = &self.bytes[self.at..];
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        self.at += n;
        Ok(n)
    }
}

thread_local! {
    /// Each thread's frame decoder, reused from batch to batch: a fresh
    /// one allocates its two block buffers (64 KiB or more each) for every
    /// batch, and freeing them makes the allocator give pages back to the
    /// system, which with another thread of the process running costs a
    /// TLB flush on its core each time (the log cleaner's read-ahead
    /// thread made that visible: a third of a round of an LZ4 log).
    static DECODER: std::cell::RefCell<Option<FrameDecoder<Input>>> =
        const { std::cell::RefCell::new(None) };
}

/// Decodes LZ4 frames, producing at most `limit` bytes.
pub(crate) fn decompress(input: &[u8], limit: usize) -> Result<Vec<u8>, String> {
    if !is_kafka_frame(input) {
        // Any other frame (legacy, linked blocks, other block sizes,
        // checksums, several frames) gets a decoder of its own, so the
        // reused one only ever sees one layout and ends each input
        // between frames.
        return super::read_bounded(FrameDecoder::new(input), limit);
    }
    DECODER.with(|cell| {
        let mut slot = cell.borrow_mut();
        let mut decoder = slot
            .take()
            .unwrap_or_else(|| FrameDecoder::new(Input::default()));
        let source = decoder.get_mut();
        source.bytes.clear();
        source.bytes.extend_from_slice(input);
        source.at = 0;
        let out = super::read_bounded(&mut decoder, limit);
        // A decoder stopped by an error or by the limit may be in the
        // middle of a frame: only one that read the whole frame is kept.
        if out.is_ok() {
            *slot = Some(decoder);
        }
        out
    })
}

/// Whether `input` is exactly one frame as Kafka writes it (the header
/// [`compress`] writes: FLG `0x60`, BD `0x40`), whose block sizes lead,
/// within 64 KiB each, to the end mark as the input's last four bytes.
/// Only the structure is checked; the decoder checks the rest.
fn is_kafka_frame(input: &[u8]) -> bool {
    const HEADER: usize = 7;
    const MAX_BLOCK: usize = 64 << 10;
    if input.len() < HEADER + 4 || input[..6] != [0x04, 0x22, 0x4d, 0x18, 0x60, 0x40] {
        return false;
    }
    let mut at = HEADER;
    while let Some(word) = input.get(at..at + 4) {
        let size = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
        if size == 0 {
            return at + 4 == input.len();
        }
        let len = (size & 0x7fff_ffff) as usize;
        if len > MAX_BLOCK {
            return false;
        }
        at += 4 + len;
    }
    false
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

    /// A thread's reused decoder gives what a fresh one gives, also after
    /// a frame that failed or stopped at the limit mid-way.
    #[test]
    fn reused_decoders_match_fresh_ones() {
        for i in 0..20usize {
            let data: Vec<u8> = (0..i * 9_973).map(|j| (j % 251) as u8 ^ i as u8).collect();
            let mut packed = Vec::new();
            compress(&data, &mut packed);
            let fresh =
                |input: &[u8], limit| super::super::read_bounded(FrameDecoder::new(input), limit);
            assert!(decompress(&packed, 1 << 20) == fresh(&packed, 1 << 20));
            assert!(fresh(&packed, 1 << 20).as_deref() == Ok(&data[..]));
            // Interrupted uses in between.
            assert!(decompress(&packed[..packed.len() / 2], 1 << 20).is_err() || i == 0);
            if data.len() > 10 {
                assert!(decompress(&packed, 10).is_err());
            }
            // Two frames back to back.
            let mut twice = packed.clone();
            twice.extend_from_slice(&packed);
            assert!(decompress(&twice, 1 << 21) == fresh(&twice, 1 << 21));
        }
    }

    /// Frames of another layout, or inputs that are not exactly one frame,
    /// never reach (or leave their state in) the reused decoder: a legacy
    /// frame or one without its end mark would leave it mid-frame, and
    /// larger blocks would grow its buffers.
    #[test]
    fn only_kafkas_single_frames_use_the_reused_decoder() {
        let data: Vec<u8> = (0..200_000u32).map(|j| (j % 253) as u8).collect();
        let mut kafka = Vec::new();
        compress(&data, &mut kafka);
        assert!(is_kafka_frame(&kafka));
        let no_end_mark = &kafka[..kafka.len() - 4];
        assert!(!is_kafka_frame(no_end_mark));
        let mut twice = kafka.clone();
        twice.extend_from_slice(&kafka);
        assert!(!is_kafka_frame(&twice));
        let mut other = Vec::new();
        let info = FrameInfo::new()
            .block_size(BlockSize::Max256KB)
            .block_mode(BlockMode::Linked)
            .content_checksum(true);
        let mut enc = FrameEncoder::with_frame_info(info, &mut other);
        enc.write_all(&data).unwrap();
        enc.finish().unwrap();
        assert!(!is_kafka_frame(&other));
        let legacy_magic = [0x02, 0x21, 0x4c, 0x18];
        assert!(!is_kafka_frame(&legacy_magic));
        // Each of them, in any order, decodes as a fresh decoder does,
        // and leaves the next Kafka frame decoding right.
        let fresh = |input: &[u8]| super::super::read_bounded(FrameDecoder::new(input), 1 << 20);
        for input in [
            no_end_mark,
            &twice[..],
            &other[..],
            &legacy_magic[..],
            &kafka[..],
        ] {
            assert!(decompress(input, 1 << 20) == fresh(input));
            assert!(decompress(&kafka, 1 << 20).as_deref() == Ok(&data[..]));
        }
    }

    #[test]
    fn a_wrong_header_checksum_is_rejected() {
        let mut out = Vec::new();
        compress(b"payload", &mut out);
        out[6] ^= 0xff;
        assert!(decompress(&out, 100).is_err());
    }
}
