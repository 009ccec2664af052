//! Integer coding shared by every file format.
//!
//! All multi-byte fixed-width integers are **little-endian**. Varints are
//! LEB128 as LevelDB writes them: seven bits per byte, least significant
//! group first, the high bit set on every byte but the last.
//!
//! Decoding is strict, so that a decoder never silently accepts bytes that an
//! encoder could not have produced:
//!
//! * a varint that runs off the end of the input is [`DecodeError::Truncated`];
//! * a varint longer than its type allows (6+ bytes for a `u32`, 11+ for a
//!   `u64`), one whose value does not fit the type, or a non-minimal one
//!   (a trailing zero group, such as `80 00`) is [`DecodeError::Overlong`].
//!
//! Every error carries the position in the input where the bad value starts,
//! so that a caller can name the file and absolute offset.
//!
//! ```
//! use lithify_base::coding::{put_varint64, Decoder};
//!
//! let mut buf = Vec::new();
//! put_varint64(&mut buf, 300);
//! assert_eq!(buf, [0xac, 0x02]);
//! let mut d = Decoder::new(&buf);
//! assert_eq!(d.varint64().unwrap(), 300);
//! assert!(d.is_empty());
//! ```

use std::fmt;

/// Maximum encoded length of a varint32.
pub const MAX_VARINT32_LEN: usize = 5;
/// Maximum encoded length of a varint64.
pub const MAX_VARINT64_LEN: usize = 10;

/// Why bytes could not be decoded. `at` is the position in the decoded
/// buffer where the offending value starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input ended inside a value.
    Truncated {
        /// Position of the value that was cut off.
        at: usize,
        /// What was being decoded.
        what: &'static str,
    },
    /// A varint too long, too large for its type, or not minimally encoded.
    Overlong {
        /// Position of the varint.
        at: usize,
    },
    /// A structurally invalid value (bad kind byte, impossible length, ...).
    Invalid {
        /// Position of the value.
        at: usize,
        /// What is wrong, as a phrase ("unknown value kind 0x42").
        what: &'static str,
    },
}

impl DecodeError {
    /// Position in the decoded buffer where the bad value starts.
    pub fn position(&self) -> usize {
        match *self {
            DecodeError::Truncated { at, .. }
            | DecodeError::Overlong { at }
            | DecodeError::Invalid { at, .. } => at,
        }
    }

    /// The same error with its position shifted by `base` (for a decoder over
    /// a sub-slice of a larger buffer).
    pub fn shifted(self, base: usize) -> Self {
        match self {
            DecodeError::Truncated { at, what } => DecodeError::Truncated {
                at: at + base,
                what,
            },
            DecodeError::Overlong { at } => DecodeError::Overlong { at: at + base },
            DecodeError::Invalid { at, what } => DecodeError::Invalid {
                at: at + base,
                what,
            },
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Truncated { at, what } => write!(f, "truncated {what} at byte {at}"),
            DecodeError::Overlong { at } => write!(f, "overlong or oversized varint at byte {at}"),
            DecodeError::Invalid { at, what } => write!(f, "{what} at byte {at}"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// Appends `v` as a varint32.
#[inline]
pub fn put_varint32(dst: &mut Vec<u8>, v: u32) {
    put_varint64(dst, u64::from(v));
}

/// Appends `v` as a varint64.
#[inline]
pub fn put_varint64(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

/// Number of bytes `v` takes as a varint.
#[inline]
pub fn varint_len(v: u64) -> usize {
    // 1 byte per started group of 7 bits, at least one byte.
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// Appends `v` as 4 little-endian bytes.
#[inline]
pub fn put_fixed32(dst: &mut Vec<u8>, v: u32) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` as 8 little-endian bytes.
#[inline]
pub fn put_fixed64(dst: &mut Vec<u8>, v: u64) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Appends `data` preceded by its length as a varint32.
///
/// # Panics
/// If `data` is 4 GiB or longer, which no lithify format allows.
#[inline]
pub fn put_length_prefixed(dst: &mut Vec<u8>, data: &[u8]) {
    let len = u32::try_from(data.len()).expect("length-prefixed slices are shorter than 4 GiB");
    put_varint32(dst, len);
    dst.extend_from_slice(data);
}

/// Decodes a varint64 at the start of `src`: the value and its length.
#[inline]
pub fn decode_varint64(src: &[u8]) -> Result<(u64, usize), DecodeError> {
    decode_varint(src, MAX_VARINT64_LEN, 64)
}

/// Decodes a varint32 at the start of `src`: the value and its length.
#[inline]
pub fn decode_varint32(src: &[u8]) -> Result<(u32, usize), DecodeError> {
    let (v, n) = decode_varint(src, MAX_VARINT32_LEN, 32)?;
    Ok((v as u32, n))
}

#[inline]
fn decode_varint(src: &[u8], max_len: usize, bits: u32) -> Result<(u64, usize), DecodeError> {
    // Fast path: one byte.
    if let Some(&b) = src.first()
        && b < 0x80
    {
        return Ok((u64::from(b), 1));
    }
    let mut value: u64 = 0;
    for (i, &byte) in src.iter().enumerate().take(max_len) {
        let group = u64::from(byte & 0x7f);
        let shift = 7 * i as u32;
        // The last allowed byte may only carry the bits left in the type.
        if shift + 7 > bits && group >> (bits - shift) != 0 {
            return Err(DecodeError::Overlong { at: 0 });
        }
        value |= group << shift;
        if byte & 0x80 == 0 {
            if i > 0 && byte == 0 {
                // A zero final group means a shorter encoding existed.
                return Err(DecodeError::Overlong { at: 0 });
            }
            return Ok((value, i + 1));
        }
    }
    if src.len() >= max_len {
        Err(DecodeError::Overlong { at: 0 })
    } else {
        Err(DecodeError::Truncated {
            at: 0,
            what: "varint",
        })
    }
}

/// Reads 4 little-endian bytes at the start of `src`.
#[inline]
pub fn decode_fixed32(src: &[u8]) -> Result<u32, DecodeError> {
    match src.first_chunk::<4>() {
        Some(b) => Ok(u32::from_le_bytes(*b)),
        None => Err(DecodeError::Truncated {
            at: 0,
            what: "fixed32",
        }),
    }
}

/// Reads 8 little-endian bytes at the start of `src`.
#[inline]
pub fn decode_fixed64(src: &[u8]) -> Result<u64, DecodeError> {
    match src.first_chunk::<8>() {
        Some(b) => Ok(u64::from_le_bytes(*b)),
        None => Err(DecodeError::Truncated {
            at: 0,
            what: "fixed64",
        }),
    }
}

/// A cursor that decodes values from a byte slice front to back.
///
/// Errors report the position of the bad value relative to the start of the
/// slice the decoder was created with.
#[derive(Debug, Clone)]
pub struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    /// A decoder positioned at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Decoder { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The bytes not yet consumed.
    pub fn remaining(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    /// Whether every byte has been consumed.
    pub fn is_empty(&self) -> bool {
        self.pos == self.buf.len()
    }

    /// Decodes a varint32.
    pub fn varint32(&mut self) -> Result<u32, DecodeError> {
        let (v, n) = decode_varint32(self.remaining()).map_err(|e| e.shifted(self.pos))?;
        self.pos += n;
        Ok(v)
    }

    /// Decodes a varint64.
    pub fn varint64(&mut self) -> Result<u64, DecodeError> {
        let (v, n) = decode_varint64(self.remaining()).map_err(|e| e.shifted(self.pos))?;
        self.pos += n;
        Ok(v)
    }

    /// Decodes a little-endian u32.
    pub fn fixed32(&mut self) -> Result<u32, DecodeError> {
        let v = decode_fixed32(self.remaining()).map_err(|e| e.shifted(self.pos))?;
        self.pos += 4;
        Ok(v)
    }

    /// Decodes a little-endian u64.
    pub fn fixed64(&mut self) -> Result<u64, DecodeError> {
        let v = decode_fixed64(self.remaining()).map_err(|e| e.shifted(self.pos))?;
        self.pos += 8;
        Ok(v)
    }

    /// Decodes one byte.
    pub fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.bytes(1, "byte")?[0])
    }

    /// Takes the next `n` bytes; `what` names them in the error.
    pub fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let rest = self.remaining();
        if rest.len() < n {
            return Err(DecodeError::Truncated { at: self.pos, what });
        }
        self.pos += n;
        Ok(&rest[..n])
    }

    /// Decodes a varint32 length followed by that many bytes.
    pub fn length_prefixed(&mut self) -> Result<&'a [u8], DecodeError> {
        let start = self.pos;
        let len = self.varint32()? as usize;
        self.bytes(len, "length-prefixed bytes").map_err(|_| {
            // Report the start of the whole value, not of its payload.
            DecodeError::Truncated {
                at: start,
                what: "length-prefixed bytes",
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn varint_known_encodings() {
        let cases: &[(u64, &[u8])] = &[
            (0, &[0]),
            (1, &[1]),
            (127, &[0x7f]),
            (128, &[0x80, 0x01]),
            (300, &[0xac, 0x02]),
            (u64::from(u32::MAX), &[0xff, 0xff, 0xff, 0xff, 0x0f]),
            (
                u64::MAX,
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            ),
        ];
        for &(v, bytes) in cases {
            let mut buf = Vec::new();
            put_varint64(&mut buf, v);
            assert_eq!(buf, bytes, "encoding {v}");
            assert_eq!(varint_len(v), bytes.len());
            assert_eq!(decode_varint64(bytes), Ok((v, bytes.len())));
        }
    }

    #[test]
    fn varint_rejects_truncated() {
        assert_eq!(
            decode_varint64(&[]),
            Err(DecodeError::Truncated {
                at: 0,
                what: "varint"
            })
        );
        assert_eq!(
            decode_varint64(&[0x80, 0x80]),
            Err(DecodeError::Truncated {
                at: 0,
                what: "varint"
            })
        );
        assert!(matches!(
            decode_varint32(&[0xff, 0xff, 0xff, 0xff]),
            Err(DecodeError::Truncated { .. })
        ));
    }

    #[test]
    fn varint_rejects_overlong() {
        // Too many bytes.
        assert_eq!(
            decode_varint32(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01]),
            Err(DecodeError::Overlong { at: 0 })
        );
        // Five bytes but the value needs 33 bits.
        assert_eq!(
            decode_varint32(&[0xff, 0xff, 0xff, 0xff, 0x1f]),
            Err(DecodeError::Overlong { at: 0 })
        );
        // 65 bits.
        assert_eq!(
            decode_varint64(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x03]),
            Err(DecodeError::Overlong { at: 0 })
        );
        // Non-minimal: a trailing zero group.
        assert_eq!(
            decode_varint64(&[0x81, 0x00]),
            Err(DecodeError::Overlong { at: 0 })
        );
    }

    #[test]
    fn decoder_reports_positions() {
        let mut buf = Vec::new();
        put_fixed32(&mut buf, 7);
        put_varint32(&mut buf, 1000);
        buf.push(0x80); // truncated varint at position 6
        let mut d = Decoder::new(&buf);
        assert_eq!(d.fixed32().unwrap(), 7);
        assert_eq!(d.varint32().unwrap(), 1000);
        assert_eq!(
            d.varint64(),
            Err(DecodeError::Truncated {
                at: 6,
                what: "varint"
            })
        );
        let mut d = Decoder::new(&[3, b'a']);
        assert_eq!(
            d.length_prefixed(),
            Err(DecodeError::Truncated {
                at: 0,
                what: "length-prefixed bytes"
            })
        );
    }

    proptest! {
        #[test]
        fn varint64_round_trip(v: u64) {
            let mut buf = Vec::new();
            put_varint64(&mut buf, v);
            prop_assert_eq!(buf.len(), varint_len(v));
            prop_assert_eq!(decode_varint64(&buf), Ok((v, buf.len())));
            // Every strict prefix is truncated.
            for cut in 0..buf.len() {
                let truncated = matches!(decode_varint64(&buf[..cut]), Err(DecodeError::Truncated { .. }));
                prop_assert!(truncated);
            }
        }

        #[test]
        fn varint32_round_trip(v: u32) {
            let mut buf = Vec::new();
            put_varint32(&mut buf, v);
            prop_assert_eq!(decode_varint32(&buf), Ok((v, buf.len())));
        }

        #[test]
        fn decode_is_injective(bytes in proptest::collection::vec(any::<u8>(), 0..12)) {
            // Whatever decodes re-encodes to exactly the bytes consumed.
            if let Ok((v, n)) = decode_varint64(&bytes) {
                let mut buf = Vec::new();
                put_varint64(&mut buf, v);
                prop_assert_eq!(&buf[..], &bytes[..n]);
            }
        }

        #[test]
        fn fixed_round_trip(a: u32, b: u64, s in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut buf = Vec::new();
            put_fixed32(&mut buf, a);
            put_fixed64(&mut buf, b);
            put_length_prefixed(&mut buf, &s);
            let mut d = Decoder::new(&buf);
            prop_assert_eq!(d.fixed32(), Ok(a));
            prop_assert_eq!(d.fixed64(), Ok(b));
            prop_assert_eq!(d.length_prefixed(), Ok(&s[..]));
            prop_assert!(d.is_empty());
            for cut in 0..buf.len() {
                let mut d = Decoder::new(&buf[..cut]);
                let ok = d.fixed32().and_then(|_| d.fixed64()).and_then(|_| d.length_prefixed());
                prop_assert!(ok.is_err());
            }
        }
    }
}
