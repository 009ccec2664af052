//! Criterion benchmarks of the lithify crates; run them with `cargo xtask bench`.
//!
//! What several benchmarks share: db_bench's 16-byte decimal keys and a
//! cheap deterministic key order over a fixed key space.

/// Key `n` as 16 decimal digits (db_bench's key format).
pub fn key(n: u64) -> [u8; 16] {
    let mut k = [b'0'; 16];
    let mut n = n;
    for b in k.iter_mut().rev() {
        *b = b'0' + (n % 10) as u8;
        n /= 10;
    }
    k
}

/// The `i`-th key number of a scrambled walk over `0..keys` (a cheap
/// deterministic random order).
pub fn scramble(i: u64, keys: u64) -> u64 {
    i.wrapping_mul(0x9e37_79b9_7f4a_7c15) % keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_fixed_width_decimal() {
        assert_eq!(&key(42), b"0000000000000042");
        assert!(key(7) < key(10));
        assert!((0..1000).all(|i| scramble(i, 100) < 100));
    }
}
