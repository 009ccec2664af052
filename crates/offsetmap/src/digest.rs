//! Key digests: the 16 bytes an offset map stores instead of the key.
//!
//! The map never keeps keys, only a 128-bit digest of each, and treats keys
//! with equal digests as the same key. Kafka uses MD5 (its only choice in
//! `CleanerConfig.HASH_ALGORITHM`); [`DigestKind::Xxh3_128`] is a much faster
//! non-cryptographic alternative for logs that need no parity with Kafka.
//! Both produce 16 bytes, so both fit every [`Layout`](crate::Layout) and
//! follow the same probe sequence.

use md5::{Digest as _, Md5};

use crate::md5_lanes;

/// Which function turns a key into its 16-byte digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum DigestKind {
    /// MD5 of the raw key bytes, as Kafka computes it (no length prefix, no
    /// salt). The default.
    #[default]
    Md5,
    /// XXH3-128 (seed 0) of the raw key bytes, in the canonical big-endian
    /// byte order (high 64 bits first). Several times faster than MD5.
    Xxh3_128,
}

/// The 16-byte digest of a key.
///
/// ```
/// use lithify_offsetmap::{DigestKind, KeyDigest};
///
/// let d = KeyDigest::compute(DigestKind::Md5, b"0");
/// assert_eq!(d.as_bytes()[..4], [0xcf, 0xcd, 0x20, 0x84]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyDigest([u8; 16]);

impl KeyDigest {
    /// Digests `key` with `kind`.
    #[inline]
    pub fn compute(kind: DigestKind, key: &[u8]) -> Self {
        match kind {
            DigestKind::Md5 => KeyDigest(Md5::digest(key).into()),
            DigestKind::Xxh3_128 => KeyDigest(xxhash_rust::xxh3::xxh3_128(key).to_be_bytes()),
        }
    }

    /// Digests every key of `keys` with `kind` into `out` (`out[i]` is
    /// `compute(kind, keys[i])`).
    ///
    /// With MD5, keys of up to 55 bytes are digested eight at a time,
    /// side by side in SIMD lanes (MD5 bit for bit; several times the
    /// throughput of one at a time); longer keys one by one.
    ///
    /// ```
    /// use lithify_offsetmap::{DigestKind, KeyDigest};
    ///
    /// let keys: Vec<&[u8]> = vec![b"0", b"user-42", &[7u8; 80]];
    /// let mut out = [KeyDigest::from_bytes([0; 16]); 3];
    /// KeyDigest::compute_many(DigestKind::Md5, &keys, &mut out);
    /// for (key, digest) in keys.iter().zip(out) {
    ///     assert_eq!(digest, KeyDigest::compute(DigestKind::Md5, key));
    /// }
    /// ```
    ///
    /// # Panics
    ///
    /// If `out` is shorter than `keys`.
    pub fn compute_many(kind: DigestKind, keys: &[&[u8]], out: &mut [KeyDigest]) {
        assert!(out.len() >= keys.len(), "room for every digest");
        if kind != DigestKind::Md5 {
            for (key, digest) in keys.iter().zip(out.iter_mut()) {
                *digest = KeyDigest::compute(kind, key);
            }
            return;
        }
        // Short keys gather in groups of `LANES`, remembering where each
        // digest goes.
        let mut group: [&[u8]; md5_lanes::LANES] = [&[]; md5_lanes::LANES];
        let mut slots = [0usize; md5_lanes::LANES];
        let mut n = 0;
        let mut digests = [[0u8; 16]; md5_lanes::LANES];
        let mut flush = |group: &[&[u8]], slots: &[usize], out: &mut [KeyDigest]| {
            md5_lanes::md5_one_block(group, &mut digests);
            for (&slot, digest) in slots.iter().zip(digests) {
                out[slot] = KeyDigest(digest);
            }
        };
        for (i, key) in keys.iter().enumerate() {
            if key.len() > md5_lanes::MAX_ONE_BLOCK_KEY {
                out[i] = KeyDigest::compute(kind, key);
                continue;
            }
            group[n] = key;
            slots[n] = i;
            n += 1;
            if n == md5_lanes::LANES {
                flush(&group, &slots, out);
                n = 0;
            }
        }
        if n > 0 {
            flush(&group[..n], &slots[..n], out);
        }
    }

    /// A digest given as bytes (for tests and tools that study the probe
    /// sequence).
    pub const fn from_bytes(bytes: [u8; 16]) -> Self {
        KeyDigest(bytes)
    }

    /// The digest's bytes.
    pub const fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// The big-endian signed 32-bit integer at byte `start` (0..=12): the
    /// "window" Kafka's probe sequence reads.
    #[inline]
    pub(crate) fn window(&self, start: usize) -> i32 {
        let b = &self.0;
        i32::from_be_bytes([b[start], b[start + 1], b[start + 2], b[start + 3]])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(d: &KeyDigest) -> String {
        d.as_bytes().iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn md5_matches_rfc_1321_and_kafka_vectors() {
        // RFC 1321 appendix A.5.
        assert_eq!(
            hex(&KeyDigest::compute(DigestKind::Md5, b"")),
            "d41d8cd98f00b204e9800998ecf8427e"
        );
        assert_eq!(
            hex(&KeyDigest::compute(DigestKind::Md5, b"abc")),
            "900150983cd24fb0d6963f7d28e17f72"
        );
        // The keys of Kafka's offset-map vectors.
        assert_eq!(
            hex(&KeyDigest::compute(DigestKind::Md5, b"0")),
            "cfcd208495d565ef66e7dff9f98764da"
        );
        assert_eq!(
            hex(&KeyDigest::compute(DigestKind::Md5, b"5")),
            "e4da3b7fbbce2345d7772b0674a318d5"
        );
        assert_eq!(
            hex(&KeyDigest::compute(DigestKind::Md5, b"26")),
            "4e732ced3463d06de0ca9a15b6153677"
        );
    }

    #[test]
    fn xxh3_128_is_canonical_big_endian() {
        // XXH3_128bits("") = 99aa06d3014798d86001c324468d497f (canonical form,
        // as printed by `xxhsum -H2`).
        assert_eq!(
            hex(&KeyDigest::compute(DigestKind::Xxh3_128, b"")),
            "99aa06d3014798d86001c324468d497f"
        );
    }

    #[test]
    fn windows_are_big_endian_and_overlap() {
        let d = KeyDigest::from_bytes([
            0x80, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0xff, 0xff, 0xff, 0xfd,
        ]);
        assert_eq!(d.window(0), i32::MIN);
        assert_eq!(d.window(1), 1);
        assert_eq!(d.window(4), 0x0102_0304);
        assert_eq!(d.window(12), -3);
    }
}
