//! Snappy as Kafka stores it: snappy-java's "xerial" stream framing.
//!
//! ```text
//! header (16 bytes)
//!   0  8  magic: 0x82 'S' 'N' 'A' 'P' 'P' 'Y' 0x00
//!   8  4  version, big-endian i32 = 1
//!  12  4  minimum compatible version, big-endian i32 = 1
//! then chunks, until the end of the records section:
//!   0  4  compressed length n, big-endian i32
//!   4  n  one raw snappy block of at most 32 KiB of input
//! ```
//!
//! Like snappy-java's `SnappyInputStream`, a reader that does not find the
//! magic treats the whole input as one raw snappy block, and a magic found
//! at a chunk boundary starts a concatenated stream. The version fields are
//! not checked (some producers write them little-endian).

/// The 8-byte magic that opens a xerial stream.
pub(crate) const MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];

/// Bytes of the stream header.
pub(crate) const HEADER_LEN: usize = 16;

/// Uncompressed bytes per chunk (snappy-java's default block size).
pub(crate) const BLOCK_SIZE: usize = 32 * 1024;

/// Appends `input` as a xerial snappy stream to `out`.
pub(crate) fn compress(input: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&1i32.to_be_bytes());
    out.extend_from_slice(&1i32.to_be_bytes());
    let mut enc = snap::raw::Encoder::new();
    for chunk in input.chunks(BLOCK_SIZE) {
        let len_at = out.len();
        out.extend_from_slice(&[0; 4]);
        let start = out.len();
        out.resize(start + snap::raw::max_compress_len(chunk.len()), 0);
        let n = enc
            .compress(chunk, &mut out[start..])
            .expect("max_compress_len bytes suffice for a 32 KiB chunk");
        out.truncate(start + n);
        out[len_at..start].copy_from_slice(&(n as i32).to_be_bytes());
    }
}

/// Decodes a xerial stream (or a raw snappy block), producing at most
/// `limit` bytes.
pub(crate) fn decompress(input: &[u8], limit: usize) -> Result<Vec<u8>, String> {
    let mut dec = snap::raw::Decoder::new();
    if input.len() < HEADER_LEN || input[..8] != MAGIC {
        return raw_block(&mut dec, input, limit, Vec::new());
    }
    let mut out = Vec::new();
    let mut pos = HEADER_LEN;
    while pos < input.len() {
        if input.len() - pos >= HEADER_LEN && input[pos..pos + 8] == MAGIC {
            pos += HEADER_LEN;
            continue;
        }
        let Some(len) = input.get(pos..pos + 4) else {
            return Err(format!("truncated snappy chunk length at byte {pos}"));
        };
        let len = i32::from_be_bytes([len[0], len[1], len[2], len[3]]);
        pos += 4;
        let Some(chunk) = usize::try_from(len)
            .ok()
            .and_then(|n| input.get(pos..pos + n))
        else {
            return Err(format!(
                "snappy chunk at byte {} claims {len} bytes but {} remain",
                pos - 4,
                input.len() - pos
            ));
        };
        pos += chunk.len();
        out = raw_block(&mut dec, chunk, limit, out)?;
    }
    Ok(out)
}

/// Appends one raw snappy block to `out`.
fn raw_block(
    dec: &mut snap::raw::Decoder,
    block: &[u8],
    limit: usize,
    mut out: Vec<u8>,
) -> Result<Vec<u8>, String> {
    let n = snap::raw::decompress_len(block).map_err(|e| e.to_string())?;
    if out.len() + n > limit {
        return Err(super::too_large(limit));
    }
    let start = out.len();
    out.resize(start + n, 0);
    let written = dec
        .decompress(block, &mut out[start..])
        .map_err(|e| e.to_string())?;
    out.truncate(start + written);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_layout_is_xerial() {
        let mut out = Vec::new();
        compress(b"hello hello hello", &mut out);
        assert_eq!(
            &out[..16],
            b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01"
        );
        let n = i32::from_be_bytes(out[16..20].try_into().unwrap()) as usize;
        assert_eq!(out.len(), 20 + n);
        assert_eq!(decompress(&out, 100).unwrap(), b"hello hello hello");
    }

    #[test]
    fn chunks_are_32k_and_concatenated_streams_read() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 253) as u8).collect();
        let mut out = Vec::new();
        compress(&data, &mut out);
        let mut chunks = 0;
        let mut pos = 16;
        while pos < out.len() {
            let n = i32::from_be_bytes(out[pos..pos + 4].try_into().unwrap()) as usize;
            pos += 4 + n;
            chunks += 1;
        }
        assert_eq!(chunks, 4);
        let mut twice = out.clone();
        compress(b"tail", &mut twice);
        let mut want = data.clone();
        want.extend_from_slice(b"tail");
        assert_eq!(decompress(&twice, 1 << 20).unwrap(), want);
    }

    #[test]
    fn raw_snappy_without_header_is_read() {
        let raw = snap::raw::Encoder::new()
            .compress_vec(b"raw block")
            .unwrap();
        assert_eq!(decompress(&raw, 100).unwrap(), b"raw block");
    }

    #[test]
    fn bad_chunk_lengths_are_errors() {
        let mut out = Vec::new();
        compress(b"abc", &mut out);
        out[19] = 0x7f;
        assert!(decompress(&out, 100).unwrap_err().contains("claims"));
        out.truncate(18);
        assert!(decompress(&out, 100).unwrap_err().contains("truncated"));
    }
}
