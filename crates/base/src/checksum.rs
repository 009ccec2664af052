//! Checksums: xxh3-64, and the masking step stored checksums go through.
//!
//! A checksum stored inside data that is itself checksummed (a block that
//! embeds another block's checksum, a WAL record carrying a table) would
//! otherwise make "checksum of checksum" patterns that can look valid by
//! accident. LevelDB masks its CRCs for this reason; we do the same for
//! xxh3: rotate right by 17 bits and add a constant. Every format stores the
//! **masked** value and compares against [`masked_xxh3_64`] of what it reads.
//!
//! ```
//! use lithify_base::checksum::{masked_xxh3_64, mask_checksum, unmask_checksum, xxh3_64};
//!
//! let raw = xxh3_64(b"hello");
//! let masked = mask_checksum(raw);
//! assert_ne!(raw, masked);
//! assert_eq!(unmask_checksum(masked), raw);
//! assert_eq!(masked_xxh3_64(&[b"hel", b"lo"]), masked);
//! ```

use xxhash_rust::xxh3::Xxh3;

/// Added after the rotation when masking (an arbitrary odd constant; frozen:
/// part of every file format).
pub const MASK_DELTA: u64 = 0xa282_ead8_a282_ead8;

/// The xxh3-64 hash of `data` (seed 0).
#[inline]
pub fn xxh3_64(data: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(data)
}

/// Masks a checksum for storage.
#[inline]
pub fn mask_checksum(raw: u64) -> u64 {
    raw.rotate_right(17).wrapping_add(MASK_DELTA)
}

/// Inverts [`mask_checksum`].
#[inline]
pub fn unmask_checksum(masked: u64) -> u64 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(17)
}

/// The masked xxh3-64 of the concatenation of `parts`, without copying them
/// into one buffer.
#[inline]
pub fn masked_xxh3_64(parts: &[&[u8]]) -> u64 {
    match parts {
        [one] => mask_checksum(xxh3_64(one)),
        _ => {
            let mut hasher = Xxh3::new();
            for part in parts {
                hasher.update(part);
            }
            mask_checksum(hasher.digest())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn golden_values() {
        // Pin the algorithm: these values are part of every file format.
        assert_eq!(xxh3_64(b""), 0x2d06_8005_38d3_94c2);
        assert_eq!(masked_xxh3_64(&[b""]), mask_checksum(0x2d06_8005_38d3_94c2));
    }

    proptest! {
        #[test]
        fn mask_round_trips(v: u64) {
            prop_assert_eq!(unmask_checksum(mask_checksum(v)), v);
        }

        #[test]
        fn parts_equal_whole(a in proptest::collection::vec(any::<u8>(), 0..300),
                             b in proptest::collection::vec(any::<u8>(), 0..300)) {
            let whole: Vec<u8> = a.iter().chain(&b).copied().collect();
            prop_assert_eq!(masked_xxh3_64(&[&a, &b]), masked_xxh3_64(&[&whole]));
        }
    }
}
