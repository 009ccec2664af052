//! Keys and values of the engine stress run: a value names the write it
//! came from, so anything read back can be checked byte for byte.
//!
//! * Key `k` is `k` and ten decimal digits (`k0000000042`): printable, and
//!   ordered as the numbers.
//! * The value of base `b` for key `k` is `b` as eight hex digits, `|`,
//!   then letters drawn from a generator seeded by `(k, b)`; its length
//!   (between [`MIN_VALUE_SIZE`] and the run's maximum) comes from the same
//!   generator. Nothing else goes into it, so a later process regenerates
//!   it exactly.

use lithify_base::rand::SplitMix64 as Rng;

/// The shortest value: the base, its separator and seven letters, so
/// values of different keys differ.
pub const MIN_VALUE_SIZE: usize = 16;

/// The largest value a run may be given as its maximum: 1 MiB.
pub const MAX_VALUE_SIZE: u32 = 1 << 20;

/// Refuses a largest value size outside
/// [`MIN_VALUE_SIZE`]`..=`[`MAX_VALUE_SIZE`].
pub(crate) fn check_max_value_size(max_value_size: u32) -> crate::Result<()> {
    if (MIN_VALUE_SIZE as u32..=MAX_VALUE_SIZE).contains(&max_value_size) {
        return Ok(());
    }
    crate::error::UsageSnafu {
        message: format!(
            "--max-value-size must be between {MIN_VALUE_SIZE} and {MAX_VALUE_SIZE}, not \
             {max_value_size}"
        ),
    }
    .fail()
}

/// Bytes of the base and its separator at the start of a value.
const HEAD: usize = 9;

/// The bytes of key `k`.
pub(crate) fn key(k: u64) -> Vec<u8> {
    format!("k{k:010}").into_bytes()
}

/// The key number of `bytes`, if they are a key of this form.
pub(crate) fn parse_key(bytes: &[u8]) -> Option<u64> {
    let digits = bytes.strip_prefix(b"k")?;
    if digits.len() != 10 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// Makes and checks values for one run's maximum size.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Values {
    max_size: usize,
}

impl Values {
    /// Values of at most `max_size` bytes (at least [`MIN_VALUE_SIZE`]).
    pub(crate) fn new(max_size: usize) -> Self {
        Values {
            max_size: max_size.max(MIN_VALUE_SIZE),
        }
    }

    /// The value of base `base` for key `k`.
    pub(crate) fn value(&self, k: u64, base: u32) -> Vec<u8> {
        let mut rng = Rng::new((k << 32) ^ u64::from(base) ^ 0x5DEE_CE66_D1CE_4E5B);
        let len = MIN_VALUE_SIZE + rng.below((self.max_size - MIN_VALUE_SIZE + 1) as u64) as usize;
        let mut v = Vec::with_capacity(len);
        v.extend_from_slice(format!("{base:08x}|").as_bytes());
        while v.len() < len {
            let r = rng.next_u64();
            for byte in r.to_le_bytes() {
                if v.len() < len {
                    v.push(b'a' + byte % 26);
                }
            }
        }
        v
    }

    /// The base of `value` if it is exactly the value of that base for key
    /// `k`; `None` for bytes no write of `k` produces.
    pub(crate) fn base_of(&self, k: u64, value: &[u8]) -> Option<u32> {
        let head = value.get(..HEAD)?;
        if head[8] != b'|' {
            return None;
        }
        let base = u32::from_str_radix(std::str::from_utf8(&head[..8]).ok()?, 16).ok()?;
        (base != 0 && self.value(k, base) == value).then_some(base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_largest_value_size_outside_its_range_is_a_usage_error() {
        for (max, ok) in [
            (15, false),
            (16, true),
            (1 << 20, true),
            ((1 << 20) + 1, false),
        ] {
            let r = check_max_value_size(max);
            assert_eq!(r.is_ok(), ok, "{max}");
            if let Err(e) = r {
                assert!(e.to_string().contains("--max-value-size"), "{e}");
            }
        }
    }

    #[test]
    fn keys_round_trip_and_sort_as_numbers() {
        assert_eq!(key(42), b"k0000000042");
        assert_eq!(parse_key(&key(42)), Some(42));
        assert_eq!(parse_key(b"k42"), None);
        assert_eq!(parse_key(b"x0000000042"), None);
        assert_eq!(parse_key(b"k00000000a2"), None);
        assert!(key(9) < key(10) && key(99_999) < key(100_000));
    }

    #[test]
    fn values_name_their_write() {
        let v = Values::new(64);
        for k in [0u64, 7, 1 << 30] {
            for base in [1u32, 2, 0xffff_ffff] {
                let bytes = v.value(k, base);
                assert!((MIN_VALUE_SIZE..=64).contains(&bytes.len()));
                assert_eq!(v.base_of(k, &bytes), Some(base));
                // Another key's value, or one byte changed, is no value.
                assert_eq!(v.base_of(k + 1, &bytes), None);
                let mut bad = bytes.clone();
                let last = bad.len() - 1;
                bad[last] ^= 1;
                assert_eq!(v.base_of(k, &bad), None);
                assert_eq!(v.base_of(k, &bytes[..bytes.len() - 1]), None);
            }
        }
        assert_eq!(v.base_of(1, b""), None);
        assert_eq!(v.base_of(1, b"00000000|abcdefg"), None);
        // Deterministic: the same write gives the same bytes.
        assert_eq!(v.value(3, 5), Values::new(64).value(3, 5));
    }
}
