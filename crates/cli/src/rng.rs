//! splitmix64: the small, fast, seedable generator behind every synthetic
//! workload of the command line (`bench` keys, `log produce` records).

/// splitmix64 (Steele, Lea and Flood): one 64-bit state, full period,
/// good enough statistically for workloads; deterministic for a seed.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator starting from `seed`.
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    #[inline]
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n` by modulo (`0` when `n` is 0). The log workloads
    /// are pinned to this mapping: their outputs must not change.
    #[inline]
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// A value in `0..n` by the multiply-shift mapping (Lemire), which has
    /// no division on the hot path (`0` when `n` is 0).
    #[inline]
    pub(crate) fn uniform(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_sequence_and_ranges() {
        // splitmix64's published first output for seed 0.
        assert_eq!(Rng::new(0).next_u64(), 0xE220_A839_7B1D_CDAF);
        let mut r = Rng::new(7);
        for n in [1u64, 2, 3, 10, 1_000_003] {
            for _ in 0..1000 {
                assert!(r.below(n) < n);
                assert!(r.uniform(n) < n);
            }
        }
        assert_eq!(r.below(0), 0);
        assert_eq!(r.uniform(0), 0);
    }
}
