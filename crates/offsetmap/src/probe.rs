//! Kafka's probe sequence: where the `attempt`-th probe for a digest lands.
//!
//! Attempt `a` reads the big-endian signed 32-bit integer at byte
//! `min(a, 12)` of the digest, adds `max(0, a - 12)` with 32-bit wrapping
//! arithmetic, takes the absolute value (with Kafka's `Utils.abs`, for which
//! the absolute value of `i32::MIN` is 0) and reduces it modulo the number of
//! slots:
//!
//! ```text
//! attempt  0      1      2     ...   12      13         14        ...
//! window   d[0..4] d[1..5] d[2..6] ... d[12..16] d[12..16]+1 d[12..16]+2 ...
//! slot     |window + max(0, attempt - 12)| mod slots
//! ```
//!
//! The first 13 attempts therefore jump around the table (the 13 overlapping
//! windows of the digest); from then on the sequence is linear, moving up
//! through the slots when the last window is non-negative and down when it
//! is negative (the absolute value of an increasing negative number
//! decreases). A downward walk bounces at slot 0 and a walk that reaches
//! `i32::MAX` wraps to `i32::MIN`, so the linear phase may visit a few slots
//! twice before it has visited all of them: see
//! [`OffsetMap::get`](crate::OffsetMap::get) for why that matters.
//!
//! ```
//! use std::num::NonZeroU32;
//! use lithify_offsetmap::{DigestKind, KeyDigest, probe_sequence};
//!
//! // Kafka's vector: memory 4096 -> 170 slots; MD5("0") starts at slot 20.
//! let slots = NonZeroU32::new(170).unwrap();
//! let d = KeyDigest::compute(DigestKind::Md5, b"0");
//! let first: Vec<u32> = probe_sequence(d, slots).take(16).collect();
//! assert_eq!(first, [20, 163, 101, 1, 149, 26, 163, 141, 125, 69, 165, 118, 64, 63, 62, 61]);
//! ```

use std::num::NonZeroU32;

use crate::digest::KeyDigest;

/// The byte offset of the last digest window (digest length 16 minus 4).
pub(crate) const LAST_WINDOW: u64 = 12;

/// The slot Kafka's `attempt`-th probe for `digest` lands on, in a map of
/// `slots` slots.
///
/// Attempts are counted from 0. Kafka counts them in a Java `int`; here they
/// are a `u64` whose low 32 bits enter the wrapping addition, which is the
/// same arithmetic for every attempt Kafka can make.
#[inline]
pub fn probe_slot(digest: &KeyDigest, attempt: u64, slots: NonZeroU32) -> u32 {
    let window = digest.window(attempt.min(LAST_WINDOW) as usize);
    // Truncation to 32 bits is intended: Java adds two `int`s.
    let step = attempt.saturating_sub(LAST_WINDOW) as u32 as i32;
    let probe = window.wrapping_add(step);
    kafka_abs(probe) % slots
}

/// All of Kafka's probes for `digest`, attempt 0 first (an endless iterator).
pub fn probe_sequence(digest: KeyDigest, slots: NonZeroU32) -> impl Iterator<Item = u32> {
    (0u64..).map(move |attempt| probe_slot(&digest, attempt, slots))
}

/// Kafka's `Utils.abs`: the absolute value, except that `i32::MIN` (which
/// has none) maps to 0.
#[inline]
fn kafka_abs(n: i32) -> u32 {
    if n == i32::MIN { 0 } else { n.unsigned_abs() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DigestKind;

    fn slots(n: u32) -> NonZeroU32 {
        NonZeroU32::new(n).expect("test slot counts are non-zero")
    }

    fn seq(key: &[u8], n: u32, len: usize) -> Vec<u32> {
        probe_sequence(KeyDigest::compute(DigestKind::Md5, key), slots(n))
            .take(len)
            .collect()
    }

    #[test]
    fn kafka_abs_maps_min_to_zero() {
        assert_eq!(kafka_abs(i32::MIN), 0);
        assert_eq!(kafka_abs(i32::MIN + 1), i32::MAX as u32);
        assert_eq!(kafka_abs(-1), 1);
        assert_eq!(kafka_abs(0), 0);
        assert_eq!(kafka_abs(i32::MAX), i32::MAX as u32);
    }

    #[test]
    fn kafka_vectors_first_slots() {
        // kafka-log-cleaner.md 3.7, memory 4096 -> 170 slots.
        assert_eq!(seq(b"0", 170, 1), [20]);
        assert_eq!(seq(b"1", 170, 1), [76]);
        assert_eq!(seq(b"2", 170, 1), [111]);
        assert_eq!(seq(b"hello", 170, 1), [94]);
        assert_eq!(seq(b"key", 170, 1), [64]);
    }

    #[test]
    fn kafka_vectors_full_sequences() {
        assert_eq!(
            seq(b"0", 170, 16),
            [
                20, 163, 101, 1, 149, 26, 163, 141, 125, 69, 165, 118, 64, 63, 62, 61
            ]
        );
        assert_eq!(
            seq(b"5", 170, 16),
            [
                49, 5, 154, 45, 99, 71, 13, 21, 128, 114, 73, 54, 91, 92, 93, 94
            ]
        );
        assert_eq!(
            seq(b"26", 170, 16),
            [
                49, 108, 7, 0, 43, 130, 108, 94, 165, 122, 133, 108, 135, 134, 133, 132
            ]
        );
    }

    #[test]
    fn linear_phase_bounces_at_zero_and_wraps_at_i32_max() {
        let mut bytes = [0x11u8; 16];
        bytes[12..].copy_from_slice(&(-2i32).to_be_bytes());
        let down = probe_sequence(KeyDigest::from_bytes(bytes), slots(1000));
        assert_eq!(
            down.skip(12).take(6).collect::<Vec<_>>(),
            [2, 1, 0, 1, 2, 3]
        );

        bytes[12..].copy_from_slice(&(i32::MAX - 1).to_be_bytes());
        let n = slots(1 << 30);
        let up = probe_sequence(KeyDigest::from_bytes(bytes), n);
        let top = (i32::MAX as u32) % n;
        assert_eq!(
            up.skip(12).take(5).collect::<Vec<_>>(),
            [top - 1, top, 0, top, top - 1]
        );
    }

    #[test]
    fn attempts_beyond_u32_wrap_like_java_ints() {
        let d = KeyDigest::compute(DigestKind::Md5, b"wrap");
        let n = slots(12_345);
        // 2^32 more steps is a full turn of the 32-bit counter.
        assert_eq!(probe_slot(&d, 20, n), probe_slot(&d, 20 + (1 << 32), n));
    }
}
