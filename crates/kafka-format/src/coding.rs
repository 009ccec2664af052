//! Kafka's integer encodings: big-endian fixed-width integers and zigzag
//! varints.
//!
//! Kafka's formats are big-endian, unlike the rest of lithify (whose
//! little-endian helpers live in `lithify_base::coding`), so they get their
//! own small codec here. Varints follow Kafka's `ByteUtils`: a signed value
//! is zigzag-mapped (`(v << 1) ^ (v >> 31)`, `>> 63` for 64-bit) and written
//! as unsigned LEB128, seven bits per byte, low group first, high bit set on
//! every byte but the last. A 32-bit varint takes at most 5 bytes, a 64-bit
//! one at most 10; like Kafka, a longer one is an error and surplus high
//! bits in the last byte are dropped.
//!
//! For example 300 is written `d8 04` and -1 is written `01` (the unit
//! tests hold the reference's vectors).

use std::fmt;

/// A decoding failure: what went wrong and where, relative to the start of
/// the decoded buffer. Callers add the file and the buffer's position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// Byte position of the bad value within the buffer.
    pub pos: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}", self.message, self.pos)
    }
}

impl std::error::Error for DecodeError {}

/// Appends `v` as a zigzag varint (at most 5 bytes).
pub fn put_varint(buf: &mut Vec<u8>, v: i32) {
    put_unsigned_varint(buf, ((v << 1) ^ (v >> 31)) as u32 as u64);
}

/// Appends `v` as a zigzag varlong (at most 10 bytes).
pub fn put_varlong(buf: &mut Vec<u8>, v: i64) {
    put_unsigned_varint(buf, ((v << 1) ^ (v >> 63)) as u64);
}

fn put_unsigned_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

/// Bytes [`put_varint`] writes for `v`.
pub fn varint_len(v: i32) -> usize {
    unsigned_len(((v << 1) ^ (v >> 31)) as u32 as u64)
}

/// Bytes [`put_varlong`] writes for `v`.
pub fn varlong_len(v: i64) -> usize {
    unsigned_len(((v << 1) ^ (v >> 63)) as u64)
}

fn unsigned_len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// A cursor over a byte slice reading Kafka's encodings. Every read checks
/// the remaining length and reports the position of a bad value.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Whether every byte was consumed.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// An error at the current position.
    pub fn error(&self, message: impl Into<String>) -> DecodeError {
        DecodeError {
            pos: self.pos,
            message: message.into(),
        }
    }

    /// The next `n` bytes.
    pub fn bytes(&mut self, n: usize, what: &str) -> Result<&'a [u8], DecodeError> {
        if n > self.remaining() {
            return Err(self.error(format!(
                "{what} needs {n} bytes but only {} remain",
                self.remaining()
            )));
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], DecodeError> {
        let bytes = self.bytes(N, what)?;
        let mut out = [0; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    /// A signed byte.
    pub fn i8(&mut self) -> Result<i8, DecodeError> {
        Ok(i8::from_be_bytes(self.array("an int8")?))
    }

    /// A big-endian i16.
    pub fn i16(&mut self) -> Result<i16, DecodeError> {
        Ok(i16::from_be_bytes(self.array("an int16")?))
    }

    /// A big-endian i32.
    pub fn i32(&mut self) -> Result<i32, DecodeError> {
        Ok(i32::from_be_bytes(self.array("an int32")?))
    }

    /// A big-endian u32.
    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        Ok(u32::from_be_bytes(self.array("a uint32")?))
    }

    /// A big-endian i64.
    pub fn i64(&mut self) -> Result<i64, DecodeError> {
        Ok(i64::from_be_bytes(self.array("an int64")?))
    }

    fn unsigned_varint(&mut self, max_bytes: usize, what: &str) -> Result<u64, DecodeError> {
        let start = self.pos;
        let mut value = 0u64;
        for i in 0..max_bytes {
            let Some(&b) = self.buf.get(self.pos) else {
                self.pos = start;
                return Err(self.error(format!("truncated {what}")));
            };
            self.pos += 1;
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        self.pos = start;
        Err(self.error(format!("{what} longer than {max_bytes} bytes")))
    }

    /// A zigzag varint (Kafka's `readVarint`).
    pub fn varint(&mut self) -> Result<i32, DecodeError> {
        let raw = self.unsigned_varint(5, "varint")? as u32;
        Ok(((raw >> 1) as i32) ^ -((raw & 1) as i32))
    }

    /// A zigzag varlong (Kafka's `readVarlong`).
    pub fn varlong(&mut self) -> Result<i64, DecodeError> {
        let raw = self.unsigned_varint(10, "varlong")?;
        Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(v: i32) -> String {
        let mut b = Vec::new();
        put_varint(&mut b, v);
        assert_eq!(b.len(), varint_len(v));
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn varint_vectors_from_the_reference() {
        for (v, want) in [
            (0, "00"),
            (-1, "01"),
            (1, "02"),
            (63, "7e"),
            (-64, "7f"),
            (64, "8001"),
            (300, "d804"),
            (-300, "d704"),
            (i32::MAX, "feffffff0f"),
            (i32::MIN, "ffffffff0f"),
        ] {
            assert_eq!(hex(v), want, "varint {v}");
        }
    }

    #[test]
    fn varlong_extremes_round_trip() {
        for v in [0, -1, 1, i64::MAX, i64::MIN, -86_404_000, 1 << 40] {
            let mut b = Vec::new();
            put_varlong(&mut b, v);
            assert_eq!(b.len(), varlong_len(v));
            let mut r = Reader::new(&b);
            assert_eq!(r.varlong().unwrap(), v);
            assert!(r.is_empty());
        }
        let mut b = Vec::new();
        put_varlong(&mut b, i64::MIN);
        assert_eq!(b.len(), 10);
    }

    #[test]
    fn bad_varints_are_errors_with_positions() {
        let mut r = Reader::new(&[0x00, 0x80, 0x80]);
        assert_eq!(r.varint().unwrap(), 0);
        let e = r.varint().unwrap_err();
        assert_eq!(e.pos, 1);
        assert!(e.message.contains("truncated"));
        let mut r = Reader::new(&[0xff; 6]);
        assert!(r.varint().unwrap_err().message.contains("longer than 5"));
        let mut r = Reader::new(&[0xff; 11]);
        assert!(r.varlong().unwrap_err().message.contains("longer than 10"));
    }

    #[test]
    fn fixed_width_reads_are_big_endian_and_bounded() {
        let mut r = Reader::new(&[0x01, 0x02, 0x03, 0x04, 0x05]);
        assert_eq!(r.i32().unwrap(), 0x01020304);
        let e = r.i16().unwrap_err();
        assert_eq!(e.pos, 4);
    }

    proptest::proptest! {
        #[test]
        fn varints_round_trip(v: i32, w: i64) {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            put_varlong(&mut b, w);
            let mut r = Reader::new(&b);
            proptest::prop_assert_eq!(r.varint().unwrap(), v);
            proptest::prop_assert_eq!(r.varlong().unwrap(), w);
            proptest::prop_assert!(r.is_empty());
        }
    }
}
