//! Keys and values as db_bench makes them.
//!
//! * A key is its number as 8 big-endian bytes (the low `key_size` bytes
//!   when keys are shorter), padded with `'0'` to `key_size`: numeric order
//!   is key order, so `fillseq` writes in key order.
//! * Values come from one buffer of about 1 MiB built from 100-byte pieces
//!   in which the first `compression_ratio` share is random printable
//!   bytes and the rest repeats it, so a compressor halves them at the
//!   default ratio 0.5 (db_bench's `RandomGenerator` and
//!   `CompressibleString`). Each value is the next slice of the buffer:
//!   generating one copies nothing.

use lithify_base::rand::SplitMix64 as Rng;

/// Bytes of the value buffer (at least the value size).
const VALUE_BUFFER: usize = 1 << 20;

/// Bytes of one compressible piece of the value buffer.
const PIECE: usize = 100;

/// Writes key number `n` into `out` (whose length is the key size).
#[inline]
pub fn make_key(n: u64, out: &mut [u8]) {
    let be = n.to_be_bytes();
    let take = out.len().min(8);
    out[..take].copy_from_slice(&be[8 - take..]);
    out[take..].fill(b'0');
}

/// The largest number of distinct keys of `key_size` bytes.
pub fn distinct_keys(key_size: usize) -> u64 {
    if key_size >= 8 {
        u64::MAX
    } else {
        1u64 << (8 * key_size)
    }
}

/// A source of half-compressible values.
#[derive(Debug, Clone)]
pub struct Values {
    data: Vec<u8>,
    pos: usize,
    len: usize,
}

impl Values {
    /// Values of `len` bytes whose random share is `compression_ratio`
    /// (clamped to 0..=1), generated from `seed`.
    pub fn new(len: usize, compression_ratio: f64, seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let size = VALUE_BUFFER.max(len);
        let mut data = Vec::with_capacity(size + PIECE);
        let ratio = compression_ratio.clamp(0.0, 1.0);
        let random_len = ((PIECE as f64 * ratio) as usize).max(1);
        let mut piece = Vec::with_capacity(PIECE);
        while data.len() < size {
            piece.clear();
            for _ in 0..random_len {
                piece.push(b' ' + rng.below(95) as u8);
            }
            while piece.len() < PIECE {
                let copy = random_len.min(PIECE - piece.len());
                piece.extend_from_within(..copy);
            }
            data.extend_from_slice(&piece);
        }
        data.truncate(size);
        Values { data, pos: 0, len }
    }

    /// The next value.
    #[inline]
    pub fn next_value(&mut self) -> &[u8] {
        if self.pos + self.len > self.data.len() {
            self.pos = 0;
        }
        let at = self.pos;
        self.pos += self.len;
        &self.data[at..at + self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_like_their_numbers() {
        let mut a = [0u8; 16];
        let mut b = [0u8; 16];
        make_key(0x0102, &mut a);
        assert_eq!(&a, b"\0\0\0\0\0\0\x01\x0200000000");
        for (x, y) in [(0u64, 1u64), (255, 256), (1 << 40, (1 << 40) + 1)] {
            make_key(x, &mut a);
            make_key(y, &mut b);
            assert!(a < b, "{x} {y}");
        }
        let mut short = [0u8; 2];
        make_key(0x0102_0304, &mut short);
        assert_eq!(short, [3, 4]);
        assert_eq!(distinct_keys(2), 65536);
        assert_eq!(distinct_keys(16), u64::MAX);
    }

    #[test]
    fn values_are_half_compressible_printable_slices() {
        let mut v = Values::new(100, 0.5, 1);
        let first = v.next_value().to_vec();
        assert_eq!(first.len(), 100);
        assert!(first.iter().all(|b| (b' '..=b'~').contains(b)));
        // Half random, then the random half again.
        assert_eq!(first[..50], first[50..]);
        let compressed = zstd::bulk::compress(&v.data, 3).unwrap();
        let ratio = compressed.len() as f64 / v.data.len() as f64;
        assert!((0.3..0.7).contains(&ratio), "ratio {ratio}");
        // The buffer wraps around without a short value.
        for _ in 0..30_000 {
            assert_eq!(v.next_value().len(), 100);
        }
        let mut big = Values::new(3 << 20, 0.5, 1);
        assert_eq!(big.next_value().len(), 3 << 20);
        assert_eq!(big.next_value().len(), 3 << 20);
    }
}
