//! How a record's value is stored: raw, zstd or lz4.

use std::io;

use lithify_base::coding::{Decoder, put_varint32};

use crate::MAX_BLOB_LEN;

/// Code of a value stored as it is.
pub(crate) const CODE_NONE: u8 = 0;
/// Code of a value stored as `varint32 length ++ zstd frame`.
pub(crate) const CODE_ZSTD: u8 = 1;
/// Code of a value stored as `u32 LE length ++ lz4 block`.
pub(crate) const CODE_LZ4: u8 = 2;

/// How a blob file compresses its values.
///
/// Each value is compressed on its own and stored compressed only when that
/// saves at least an eighth of it (and at least one byte); otherwise it is
/// stored raw, and its record says so (code 0). A file's records may
/// therefore mix raw values with values of the file's configured
/// compression.
///
/// ```
/// use lithify_blob::BlobCompression;
///
/// assert_eq!(BlobCompression::zstd(), BlobCompression::Zstd { level: 3 });
/// assert_eq!(BlobCompression::Lz4.code(), 2);
/// assert_eq!(BlobCompression::from_name("lz4"), Some(BlobCompression::Lz4));
/// assert_eq!(BlobCompression::from_name("snappy"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum BlobCompression {
    /// Values are stored as they are (code 0).
    #[default]
    None,
    /// Values are zstd-compressed at `level` (code 1). The level is not
    /// stored: a decoded header says level 3.
    Zstd {
        /// The zstd level (1..=22; negative levels are zstd's fast modes).
        level: i32,
    },
    /// Values are lz4-compressed, block format (code 2).
    Lz4,
}

impl BlobCompression {
    /// zstd at its default level (3).
    pub const fn zstd() -> Self {
        BlobCompression::Zstd { level: 3 }
    }

    /// The code stored in file headers and records: 0 none, 1 zstd, 2 lz4.
    pub fn code(&self) -> u8 {
        match self {
            BlobCompression::None => CODE_NONE,
            BlobCompression::Zstd { .. } => CODE_ZSTD,
            BlobCompression::Lz4 => CODE_LZ4,
        }
    }

    /// The compression of a stored code (zstd at level 3), `None` for an
    /// unknown code.
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            CODE_NONE => Some(BlobCompression::None),
            CODE_ZSTD => Some(BlobCompression::zstd()),
            CODE_LZ4 => Some(BlobCompression::Lz4),
            _ => None,
        }
    }

    /// Its name: `none`, `zstd` or `lz4`.
    pub fn name(&self) -> &'static str {
        match self {
            BlobCompression::None => "none",
            BlobCompression::Zstd { .. } => "zstd",
            BlobCompression::Lz4 => "lz4",
        }
    }

    /// The compression named `name` (as [`name`](Self::name) spells it;
    /// zstd at level 3).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "none" => Some(BlobCompression::None),
            "zstd" => Some(BlobCompression::zstd()),
            "lz4" => Some(BlobCompression::Lz4),
            _ => None,
        }
    }
}

/// The name of a stored compression code, for messages.
pub(crate) fn code_name(code: u8) -> &'static str {
    BlobCompression::from_code(code).map_or("unknown", |c| c.name())
}

/// Compresses values with reusable contexts and buffers.
pub(crate) struct ValueCompressor {
    kind: Kind,
    out: Vec<u8>,
}

enum Kind {
    None,
    Zstd {
        inner: Box<zstd::bulk::Compressor<'static>>,
        frame: Vec<u8>,
    },
    Lz4,
}

impl std::fmt::Debug for ValueCompressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self.kind {
            Kind::None => "none",
            Kind::Zstd { .. } => "zstd",
            Kind::Lz4 => "lz4",
        };
        f.debug_struct("ValueCompressor")
            .field("kind", &name)
            .finish_non_exhaustive()
    }
}

impl ValueCompressor {
    /// A compressor for `compression`.
    pub(crate) fn new(compression: BlobCompression) -> io::Result<Self> {
        let kind = match compression {
            BlobCompression::None => Kind::None,
            BlobCompression::Zstd { level } => Kind::Zstd {
                inner: Box::new(zstd::bulk::Compressor::new(level)?),
                frame: Vec::new(),
            },
            BlobCompression::Lz4 => Kind::Lz4,
        };
        Ok(ValueCompressor {
            kind,
            out: Vec::new(),
        })
    }

    /// The stored form of `raw` and its code: compressed when that saves at
    /// least 1/8 of it (and a byte), else `raw` itself with code 0.
    pub(crate) fn compress<'a>(&'a mut self, raw: &'a [u8]) -> io::Result<(&'a [u8], u8)> {
        if raw.is_empty() || raw.len() > MAX_BLOB_LEN {
            return Ok((raw, CODE_NONE));
        }
        let code = match &mut self.kind {
            Kind::None => return Ok((raw, CODE_NONE)),
            Kind::Zstd { inner, frame } => {
                frame.clear();
                frame.reserve(zstd::compress_bound(raw.len()));
                inner.compress_to_buffer(raw, frame)?;
                self.out.clear();
                put_varint32(&mut self.out, raw.len() as u32);
                self.out.extend_from_slice(frame);
                CODE_ZSTD
            }
            Kind::Lz4 => {
                // The stored form of `lz4_flex::block::compress_prepend_size`,
                // into a reused buffer.
                let bound = lz4_flex::block::get_maximum_output_size(raw.len());
                self.out.clear();
                self.out.resize(4 + bound, 0);
                self.out[..4].copy_from_slice(&(raw.len() as u32).to_le_bytes());
                let n = lz4_flex::block::compress_into(raw, &mut self.out[4..])
                    .map_err(io::Error::other)?;
                self.out.truncate(4 + n);
                CODE_LZ4
            }
        };
        if self.out.len() >= raw.len() || self.out.len() > raw.len() - raw.len() / 8 {
            return Ok((raw, CODE_NONE));
        }
        Ok((&self.out, code))
    }
}

/// The value stored as `stored` under compression `code`. The error is a
/// phrase; the caller adds file and offset. Never allocates more than
/// [`MAX_BLOB_LEN`] bytes, nor more than an lz4 block of that size could
/// decompress to.
pub(crate) fn decompress(code: u8, stored: &[u8]) -> Result<Vec<u8>, String> {
    match code {
        CODE_NONE => Ok(stored.to_vec()),
        CODE_ZSTD => decompress_zstd(stored),
        CODE_LZ4 => decompress_lz4(stored),
        other => Err(format!("unknown compression code {other}")),
    }
}

fn decompress_zstd(stored: &[u8]) -> Result<Vec<u8>, String> {
    let mut d = Decoder::new(stored);
    let raw_len =
        d.varint32()
            .map_err(|e| format!("bad uncompressed length of a zstd value: {e}"))? as usize;
    if raw_len > MAX_BLOB_LEN {
        return Err(format!(
            "zstd value claims {raw_len} uncompressed bytes, more than the {MAX_BLOB_LEN} a blob may hold"
        ));
    }
    let frame = d.remaining();
    // A frame that records its content size must agree before anything
    // is allocated.
    if let Ok(Some(content)) = zstd::zstd_safe::get_frame_content_size(frame)
        && content != raw_len as u64
    {
        return Err(format!(
            "zstd frame holds {content} bytes, its length prefix says {raw_len}"
        ));
    }
    lithify_base::zstd::decompress_exact(frame, raw_len)
}

/// The most an lz4 block of `len` bytes can decompress to: every input
/// byte yields at most 255 output bytes.
fn lz4_max_output(len: usize) -> usize {
    len.saturating_mul(255).saturating_add(16)
}

fn decompress_lz4(stored: &[u8]) -> Result<Vec<u8>, String> {
    let Some((prefix, block)) = stored.split_first_chunk::<4>() else {
        return Err(format!(
            "lz4 value of {} bytes is shorter than its length prefix",
            stored.len()
        ));
    };
    let raw_len = u32::from_le_bytes(*prefix) as usize;
    if raw_len > MAX_BLOB_LEN {
        return Err(format!(
            "lz4 value claims {raw_len} uncompressed bytes, more than the {MAX_BLOB_LEN} a blob may hold"
        ));
    }
    if raw_len > lz4_max_output(block.len()) {
        return Err(format!(
            "lz4 value claims {raw_len} uncompressed bytes, more than its {}-byte block can hold",
            block.len()
        ));
    }
    let mut out = vec![0u8; raw_len];
    let n = lz4_flex::block::decompress_into(block, &mut out)
        .map_err(|e| format!("lz4 decompression failed: {e}"))?;
    if n != raw_len {
        return Err(format!(
            "lz4 value decompressed to {n} bytes, its length prefix says {raw_len}"
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noise(len: usize) -> Vec<u8> {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    #[test]
    fn names_and_codes_round_trip() {
        for c in [
            BlobCompression::None,
            BlobCompression::zstd(),
            BlobCompression::Lz4,
        ] {
            assert_eq!(BlobCompression::from_name(c.name()), Some(c));
            assert_eq!(BlobCompression::from_code(c.code()), Some(c));
        }
        assert_eq!(BlobCompression::from_code(3), None);
        assert_eq!(code_name(9), "unknown");
        assert_eq!(BlobCompression::default(), BlobCompression::None);
    }

    #[test]
    fn compressible_values_round_trip() {
        let raw: Vec<u8> = (0..4096u32).map(|i| (i % 7) as u8).collect();
        for c in [BlobCompression::zstd(), BlobCompression::Lz4] {
            let mut comp = ValueCompressor::new(c).unwrap();
            let (stored, code) = comp.compress(&raw).unwrap();
            assert_eq!(code, c.code());
            assert!(stored.len() < raw.len() / 8, "{}", c.name());
            let stored = stored.to_vec();
            assert_eq!(decompress(code, &stored).unwrap(), raw);
        }
        // lz4's stored form is lz4_flex's size-prepended block.
        let mut comp = ValueCompressor::new(BlobCompression::Lz4).unwrap();
        let (stored, _) = comp.compress(&raw).unwrap();
        assert_eq!(
            lz4_flex::block::decompress_size_prepended(stored).unwrap(),
            raw
        );
    }

    #[test]
    fn incompressible_and_tiny_values_stay_raw() {
        let raw = noise(4096);
        for c in [
            BlobCompression::None,
            BlobCompression::zstd(),
            BlobCompression::Lz4,
        ] {
            let mut comp = ValueCompressor::new(c).unwrap();
            for value in [&raw[..], b"", b"v", b"aaaaaaa"] {
                let (stored, code) = comp.compress(value).unwrap();
                assert_eq!((stored, code), (value, CODE_NONE), "{}", c.name());
            }
        }
    }

    #[test]
    fn bad_stored_values_are_errors() {
        assert!(decompress(7, b"x").unwrap_err().contains("unknown"));
        assert!(decompress(CODE_ZSTD, &[]).is_err());
        assert!(decompress(CODE_ZSTD, &[0x80]).is_err());
        assert!(decompress(CODE_ZSTD, &[10, 1, 2, 3]).is_err());
        assert!(decompress(CODE_LZ4, &[1, 0]).is_err());
        // Lengths above the cap are refused before allocating.
        let mut big = Vec::new();
        put_varint32(&mut big, u32::MAX);
        assert!(decompress(CODE_ZSTD, &big).unwrap_err().contains("claims"));
        let big = u32::MAX.to_le_bytes();
        assert!(decompress(CODE_LZ4, &big).unwrap_err().contains("claims"));
        // More than the block could decompress to.
        let mut small = (1u32 << 20).to_le_bytes().to_vec();
        small.extend_from_slice(&[0x10, b'a']);
        assert!(
            decompress(CODE_LZ4, &small)
                .unwrap_err()
                .contains("can hold")
        );
        // Valid streams whose length prefix lies.
        let raw = vec![7u8; 1000];
        let mut comp = ValueCompressor::new(BlobCompression::zstd()).unwrap();
        let mut stored = comp.compress(&raw).unwrap().0.to_vec();
        stored[0] ^= 1; // 1000 = e8 07 -> e9 07
        assert!(decompress(CODE_ZSTD, &stored).is_err());
        let mut comp = ValueCompressor::new(BlobCompression::Lz4).unwrap();
        let mut stored = comp.compress(&raw).unwrap().0.to_vec();
        stored[0] ^= 1;
        assert!(decompress(CODE_LZ4, &stored).is_err());
        stored[0] ^= 3; // shorter than the block decodes to
        assert!(decompress(CODE_LZ4, &stored).is_err());
    }
}
