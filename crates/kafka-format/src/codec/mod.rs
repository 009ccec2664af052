//! Kafka's compression codecs, read and write.
//!
//! A batch's attributes (bits 0..2) name the codec of its records section:
//!
//! | id | codec  | framing written here (and by Kafka)                         |
//! |----|--------|-------------------------------------------------------------|
//! | 0  | none   | records as they are                                         |
//! | 1  | gzip   | one gzip member (RFC 1952); concatenated members are read   |
//! | 2  | snappy | snappy-java's "xerial" stream (`codec/snappy.rs`)          |
//! | 3  | lz4    | LZ4 frame, 64 KiB independent blocks, no checksums (`codec/lz4.rs`) |
//! | 4  | zstd   | one zstd frame; concatenated frames are read                |
//!
//! Ids 5..7 are not codecs: reading one is [`Error::UnknownCodec`](crate::Error::UnknownCodec),
//! never a misread.
//!
//! Decompression is bounded: output beyond a caller-given limit is an
//! error, so a small corrupt or hostile batch cannot make us allocate
//! without bound.
//!
//! ```
//! use lithify_kafka_format::codec::{Compression, compress, decompress};
//!
//! let data = b"keyed records, keyed records, keyed records".repeat(10);
//! for codec in Compression::ALL {
//!     let mut packed = Vec::new();
//!     compress(codec, &data, &mut packed);
//!     assert_eq!(decompress(codec, &packed, 1 << 20).unwrap(), data);
//! }
//! ```

use std::fmt;
use std::io::Read;
use std::str::FromStr;

mod lz4;
mod snappy;

/// The largest decompressed records section [`crate::record::RecordBatch::records`]
/// accepts (128 MiB). Kafka sets no such limit; real batches are far
/// smaller (producers cap a batch at `batch.size`, 16 KiB by default).
pub const MAX_DECOMPRESSED_BYTES: usize = 128 << 20;

/// A compression codec of a record batch (attribute bits 0..2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Compression {
    /// Records are stored as they are (id 0).
    #[default]
    None,
    /// gzip (id 1).
    Gzip,
    /// Snappy in snappy-java's framing (id 2).
    Snappy,
    /// LZ4 frame format (id 3).
    Lz4,
    /// Zstandard (id 4).
    Zstd,
}

impl Compression {
    /// Every codec, in id order.
    pub const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    /// The codec's id in batch attributes (frozen by Kafka's format).
    pub fn id(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 1,
            Compression::Snappy => 2,
            Compression::Lz4 => 3,
            Compression::Zstd => 4,
        }
    }

    /// The codec with attribute id `id`, if Kafka defines one.
    pub fn from_id(id: u8) -> Option<Compression> {
        Compression::ALL.into_iter().find(|c| c.id() == id)
    }

    /// Kafka's name of the codec (`compression.type` values).
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Compression {
    type Err = String;

    /// Parses Kafka's names; `uncompressed` is a synonym of `none`.
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "none" | "uncompressed" => Ok(Compression::None),
            "gzip" => Ok(Compression::Gzip),
            "snappy" => Ok(Compression::Snappy),
            "lz4" => Ok(Compression::Lz4),
            "zstd" => Ok(Compression::Zstd),
            other => Err(format!(
                "unknown compression codec {other:?} (expected none, gzip, snappy, lz4 or zstd)"
            )),
        }
    }
}

/// Kafka's default zstd level (`compression.zstd.level`).
const ZSTD_LEVEL: i32 = 3;

thread_local! {
    /// Each thread's zstd contexts, made at its first zstd batch and reused:
    /// creating one costs more than decompressing a 100-record batch (a
    /// quarter of a cleaning round of a zstd log went to `ZSTD_createDCtx`).
    /// The output does not depend on a context's history (each use starts a
    /// new frame or session).
    static ZSTD_DCTX: std::cell::RefCell<Option<zstd::zstd_safe::DCtx<'static>>> =
        const { std::cell::RefCell::new(None) };
    static ZSTD_COMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

/// Appends `input` compressed with `codec` to `out`.
pub fn compress(codec: Compression, input: &[u8], out: &mut Vec<u8>) {
    match codec {
        Compression::None => out.extend_from_slice(input),
        Compression::Gzip => {
            use std::io::Write as _;
            let mut enc = flate2::write::GzEncoder::new(out, flate2::Compression::default());
            // Writing into a Vec cannot fail.
            let _ = enc.write_all(input);
            let _ = enc.finish();
        }
        Compression::Snappy => snappy::compress(input, out),
        Compression::Lz4 => lz4::compress(input, out),
        Compression::Zstd => {
            let packed = ZSTD_COMPRESSOR.with(|cell| {
                let mut slot = cell.borrow_mut();
                let compressor = match &mut *slot {
                    Some(c) => c,
                    None => slot.insert(
                        zstd::bulk::Compressor::new(ZSTD_LEVEL)
                            .expect("zstd accepts its default level"),
                    ),
                };
                compressor
                    .compress(input)
                    .expect("zstd compresses any input at a valid level")
            });
            out.extend_from_slice(&packed);
        }
    }
}

/// Decompresses `input`, which `codec` produced, refusing to produce more
/// than `limit` bytes. The error is a sentence saying what is wrong.
pub fn decompress(codec: Compression, input: &[u8], limit: usize) -> Result<Vec<u8>, String> {
    match codec {
        Compression::None => {
            if input.len() > limit {
                return Err(too_large(limit));
            }
            Ok(input.to_vec())
        }
        Compression::Gzip => read_bounded(flate2::read::MultiGzDecoder::new(input), limit),
        Compression::Snappy => snappy::decompress(input, limit),
        Compression::Lz4 => lz4::decompress(input, limit),
        Compression::Zstd => {
            ZSTD_DCTX.with(|cell| {
                let mut slot = cell.borrow_mut();
                let dctx = slot.get_or_insert_with(zstd::zstd_safe::DCtx::create);
                // In one call when the frame states its size and that is
                // within the limit (our own batches, and Kafka's Java
                // producer's); the stream below otherwise, or when that
                // fails (more frames, damage), so its errors stay the ones
                // reported.
                if let Ok(Some(size)) = zstd::zstd_safe::get_frame_content_size(input)
                    && size <= limit as u64
                {
                    let mut out = Vec::with_capacity(size as usize);
                    if dctx.decompress(&mut out, input).is_ok() && out.len() as u64 == size {
                        return Ok(out);
                    }
                }
                // `with_context` resets the context's session first.
                read_bounded(
                    zstd::stream::read::Decoder::with_context(input, dctx),
                    limit,
                )
            })
        }
    }
}

pub(crate) fn too_large(limit: usize) -> String {
    format!("the decompressed records exceed the limit of {limit} bytes")
}

/// Reads all of `reader` unless it yields more than `limit` bytes.
pub(crate) fn read_bounded(reader: impl Read, limit: usize) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    reader
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| e.to_string())?;
    if out.len() > limit {
        return Err(too_large(limit));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread's reused zstd contexts give what fresh ones give, also
    /// after a frame that failed or stopped at the limit mid-way.
    #[test]
    fn reused_zstd_contexts_match_fresh_ones() {
        let inputs: Vec<Vec<u8>> = (0..20u8)
            .map(|i| {
                (0..(i as usize * 997))
                    .map(|j| (j % 251) as u8 ^ i)
                    .collect()
            })
            .collect();
        for data in &inputs {
            let mut packed = Vec::new();
            compress(Compression::Zstd, data, &mut packed);
            let fresh = zstd::bulk::compress(data, ZSTD_LEVEL).unwrap();
            assert_eq!(packed, fresh, "{} bytes", data.len());
            // Interrupted uses of the decompression context in between.
            let _ = decompress(Compression::Zstd, &packed[..packed.len() / 2], 1 << 20);
            if data.len() > 10 {
                assert!(decompress(Compression::Zstd, &packed, 10).is_err());
            }
            assert_eq!(
                &decompress(Compression::Zstd, &packed, 1 << 20).unwrap(),
                data
            );
        }
    }

    /// Frames that do not state their size, several frames, and a stated
    /// size beyond the limit take the streaming path; all decode as before.
    #[test]
    fn zstd_frames_without_a_size_or_in_several_parts_decode_too() {
        let (a, b) = (vec![7u8; 5_000], vec![9u8; 3_000]);
        let mut two = zstd::bulk::compress(&a, ZSTD_LEVEL).unwrap();
        two.extend(zstd::bulk::compress(&b, ZSTD_LEVEL).unwrap());
        assert_eq!(
            decompress(Compression::Zstd, &two, 1 << 20).unwrap(),
            [a.as_slice(), b.as_slice()].concat()
        );
        assert!(decompress(Compression::Zstd, &two, 6_000).is_err());

        let mut unsized_frame = Vec::new();
        let mut enc = zstd::stream::write::Encoder::new(&mut unsized_frame, ZSTD_LEVEL).unwrap();
        enc.include_contentsize(false).unwrap();
        std::io::Write::write_all(&mut enc, &a).unwrap();
        enc.finish().unwrap();
        assert_eq!(
            zstd::zstd_safe::get_frame_content_size(&unsized_frame).ok(),
            Some(None)
        );
        assert_eq!(
            decompress(Compression::Zstd, &unsized_frame, 1 << 20).unwrap(),
            a
        );
        assert!(decompress(Compression::Zstd, &unsized_frame, 4_999).is_err());
    }

    #[test]
    fn ids_and_names_are_kafkas() {
        let names: Vec<_> = Compression::ALL
            .iter()
            .map(|c| (c.id(), c.name()))
            .collect();
        assert_eq!(
            names,
            [
                (0, "none"),
                (1, "gzip"),
                (2, "snappy"),
                (3, "lz4"),
                (4, "zstd")
            ]
        );
        for id in 5..8 {
            assert_eq!(Compression::from_id(id), None);
        }
        assert_eq!("uncompressed".parse::<Compression>(), Ok(Compression::None));
        assert!(
            "brotli"
                .parse::<Compression>()
                .unwrap_err()
                .contains("brotli")
        );
    }

    #[test]
    fn empty_and_large_inputs_round_trip() {
        let big: Vec<u8> = (0..300_000u32)
            .map(|i| (i % 251) as u8 ^ (i >> 9) as u8)
            .collect();
        for codec in Compression::ALL {
            for data in [&[][..], &b"x"[..], &big[..]] {
                let mut packed = vec![0xee];
                compress(codec, data, &mut packed);
                assert_eq!(packed[0], 0xee, "compress appends");
                let got = decompress(codec, &packed[1..], big.len()).unwrap();
                assert_eq!(got, data, "{codec}");
            }
        }
    }

    #[test]
    fn decompression_is_bounded() {
        let data = vec![0u8; 1 << 20];
        for codec in Compression::ALL {
            let mut packed = Vec::new();
            compress(codec, &data, &mut packed);
            let err = decompress(codec, &packed, 1000).unwrap_err();
            assert!(
                err.contains("exceed the limit of 1000 bytes"),
                "{codec}: {err}"
            );
        }
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for codec in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            for junk in [&b""[..], b"\x00", b"garbage that is not compressed at all"] {
                // Snappy without the xerial header is raw snappy and an
                // empty input decodes to nothing, as in snappy-java.
                let _ = decompress(codec, junk, 1 << 20);
            }
            assert!(
                decompress(
                    codec,
                    b"\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8\xf7\xf6\xf5\xf4\xf3\xf2\xf1\xf0\xef",
                    1 << 20
                )
                .is_err(),
                "{codec}"
            );
        }
    }
}
