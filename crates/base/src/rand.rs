//! splitmix64, the one seedable generator of lithify: simulated power
//! loss in `MemFs`, the simulator's and the command line's workloads, the
//! crash loops. Not for anything that must be unpredictable.

/// splitmix64 (Steele, Lea and Flood): one 64-bit state, full period,
/// good enough statistically for workloads; deterministic for a seed.
///
/// ```
/// use lithify_base::rand::SplitMix64;
///
/// let mut a = SplitMix64::new(7);
/// let mut b = SplitMix64::new(7);
/// assert_eq!(a.next_u64(), b.next_u64()); // the same seed, the same sequence
/// assert!(a.below(10) < 10 && a.uniform(10) < 10);
/// assert!((0.0..1.0).contains(&a.next_f64()));
/// ```
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n` by modulo (`0` when `n` is 0). Workloads whose
    /// outputs are pinned (the Kafka log workloads, the crash loops) use
    /// this mapping.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// A value in `0..n` by the multiply-shift mapping (Lemire), with no
    /// division on the hot path (`0` when `n` is 0).
    #[inline]
    pub fn uniform(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A uniform value in `[0, 1)`.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// One of `choices`, uniformly (by [`below`](Self::below)).
    ///
    /// # Panics
    ///
    /// If `choices` is empty.
    pub fn pick<'a, T>(&mut self, choices: &'a [T]) -> &'a T {
        &choices[self.below(choices.len() as u64) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_sequence_and_ranges() {
        // splitmix64's published first output for seed 0.
        assert_eq!(SplitMix64::new(0).next_u64(), 0xE220_A839_7B1D_CDAF);
        let mut r = SplitMix64::new(7);
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
