//! A latency histogram with fixed memory: log-linear buckets, as
//! HdrHistogram lays them out, so recording is a few instructions and
//! percentiles are exact to within 1/[`SUB_BUCKETS`] of the value.
//!
//! Values below [`SUB_BUCKETS`] nanoseconds get one bucket each; above,
//! each power of two `[2^e, 2^(e+1))` is split into [`SUB_BUCKETS`]
//! equal buckets. 64 powers × 32 sub-buckets = 2048 counters (16 KiB),
//! whatever the number of samples.

/// Buckets per power of two (a power of two itself).
pub(crate) const SUB_BUCKETS: u64 = 32;
const SUB_BITS: u32 = SUB_BUCKETS.trailing_zeros();
const BUCKETS: usize = (64 - SUB_BITS as usize + 1) * SUB_BUCKETS as usize;

/// Counts of latencies in nanoseconds.
#[derive(Clone)]
pub(crate) struct Histogram {
    counts: Box<[u64; BUCKETS]>,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram")
            .field("count", &self.count)
            .field("min", &self.min)
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: Box::new([0; BUCKETS]),
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }
}

/// The bucket of `v`.
#[inline]
fn bucket_of(v: u64) -> usize {
    if v < SUB_BUCKETS {
        return v as usize;
    }
    // The top bit's position decides the power; the next SUB_BITS bits the
    // sub-bucket.
    let top = 63 - v.leading_zeros();
    let shift = top - SUB_BITS;
    let sub = (v >> shift) & (SUB_BUCKETS - 1);
    ((shift as usize + 1) << SUB_BITS) + sub as usize
}

/// The smallest and largest values of bucket `b`.
fn bucket_range(b: usize) -> (u64, u64) {
    let sub_buckets = SUB_BUCKETS as usize;
    if b < sub_buckets {
        return (b as u64, b as u64);
    }
    let shift = (b >> SUB_BITS) - 1;
    let sub = (b & (sub_buckets - 1)) as u64;
    let low = (SUB_BUCKETS + sub) << shift;
    let high = low + ((1u64 << shift) - 1);
    (low, high)
}

impl Histogram {
    /// Records one value.
    #[inline]
    pub(crate) fn record(&mut self, v: u64) {
        self.counts[bucket_of(v)] += 1;
        self.count += 1;
        self.sum += u128::from(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Adds every sample of `other`.
    pub(crate) fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
        self.count += other.count;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Number of samples.
    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// The largest sample (0 when empty).
    pub(crate) fn max(&self) -> u64 {
        self.max
    }

    /// The mean (0 when empty).
    pub(crate) fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// The value at or below which `q` (0..=1) of the samples fall: the
    /// top of the bucket holding that rank, capped to the largest sample,
    /// so it overstates by less than 1/[`SUB_BUCKETS`] (0 when empty).
    pub(crate) fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        // The rank (1-based) of the sample asked for.
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return bucket_range(b).1.clamp(self.min, self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_tile_the_range_in_order() {
        let mut expected_low = 0u64;
        for b in 0..BUCKETS {
            let (low, high) = bucket_range(b);
            assert_eq!(low, expected_low, "bucket {b}");
            assert!(high >= low);
            assert_eq!(bucket_of(low), b);
            assert_eq!(bucket_of(high), b);
            // Width at most low / SUB_BUCKETS: the relative error bound.
            assert!(
                high - low <= low / SUB_BUCKETS,
                "bucket {b}: {low}..={high}"
            );
            if high == u64::MAX {
                assert_eq!(b, BUCKETS - 1);
                return;
            }
            expected_low = high + 1;
        }
        panic!("the buckets do not reach u64::MAX");
    }

    #[test]
    fn quantiles_against_sorted_samples() {
        let mut rng = crate::rng::Rng::new(3);
        let mut h = Histogram::default();
        let mut all = Vec::new();
        for _ in 0..100_000 {
            // A long-tailed mix: mostly microseconds, some milliseconds.
            let v = if rng.below(100) == 0 {
                1_000_000 + rng.below(50_000_000)
            } else {
                500 + rng.below(20_000)
            };
            h.record(v);
            all.push(v);
        }
        all.sort_unstable();
        for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
            let rank = ((q * all.len() as f64).ceil() as usize).max(1);
            let exact = all[rank - 1];
            let got = h.quantile(q);
            assert!(got >= exact, "q={q}: {got} < {exact}");
            assert!(
                got - exact <= exact / SUB_BUCKETS,
                "q={q}: {got} too far above {exact}"
            );
        }
        assert_eq!(h.quantile(1.0), *all.last().unwrap());
        assert_eq!(h.max(), *all.last().unwrap());
        assert_eq!(h.count(), 100_000);
        let mean = all.iter().map(|&v| v as f64).sum::<f64>() / all.len() as f64;
        assert!((h.mean() - mean).abs() < 1e-6 * mean);
    }

    #[test]
    fn merge_equals_recording_everything_in_one() {
        let (mut a, mut b, mut both) = (
            Histogram::default(),
            Histogram::default(),
            Histogram::default(),
        );
        for v in 0..5000u64 {
            let v = v * v;
            if v % 3 == 0 { &mut a } else { &mut b }.record(v);
            both.record(v);
        }
        a.merge(&b);
        for q in [0.1, 0.5, 0.99, 0.999] {
            assert_eq!(a.quantile(q), both.quantile(q));
        }
        assert_eq!((a.count(), a.max()), (both.count(), both.max()));
        assert_eq!(Histogram::default().quantile(0.5), 0);
        assert_eq!(Histogram::default().mean(), 0.0);
    }
}
