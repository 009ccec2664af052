//! [`ReadHeat`]: where a table's recent reads went, sampled cheaply, so
//! that a picker can merge first where reads are.

use lithify_base::InternalKeyComparator;
use lithify_base::sync::Mutex;
use lithify_base::sync::atomic::{AtomicU64, Ordering};

/// One read in this many keeps its key in the sample.
pub const READ_HEAT_SAMPLE_EVERY: u64 = 64;

/// Sampled keys kept: the newest replace the oldest, so the heat follows
/// a hot spot that moves (512 samples cover the last 32 768 reads).
pub const READ_HEAT_SAMPLES: usize = 512;

/// Where a table's recent reads went: one point lookup or scan in
/// [`READ_HEAT_SAMPLE_EVERY`] keeps its key (the engine gives a scan's
/// lower bound, else the first key it seeks) in a
/// ring of the newest [`READ_HEAT_SAMPLES`], and writes are counted, so
/// that [`stripe_heat`](Self::stripe_heat) can say what share of the
/// reads each key range drew and whether reads or writes were the load
/// over the span the samples cover.
///
/// The caller passes each read's running number (the table's read
/// counter, which it keeps anyway): sampling costs no atomic of its own,
/// and the samples are the same in every run of the same operations.
///
/// ```
/// use lithify_base::InternalKeyComparator;
/// use lithify_compaction::ReadHeat;
///
/// let heat = ReadHeat::new();
/// for n in 0..64 * 100 {
///     // Nine reads in ten go to keys below "m".
///     let key: &[u8] = if n % 640 < 576 { b"c" } else { b"x" };
///     heat.record_read(n, key);
/// }
/// heat.record_writes(100);
/// let cmp = InternalKeyComparator::bytewise();
/// let h = heat.stripe_heat(&cmp, &[b"m".to_vec()]).unwrap();
/// assert_eq!(h.samples, 100);
/// assert!((h.shares[0] - 0.9).abs() < 1e-9 && (h.shares[1] - 0.1).abs() < 1e-9);
/// // 6 400 reads against 100 writes.
/// assert!(h.read_share > 0.98);
/// ```
#[derive(Debug)]
pub struct ReadHeat {
    ring: Mutex<Ring>,
    writes: AtomicU64,
}

#[derive(Debug, Default)]
struct Ring {
    /// The sampled keys, `next` the slot the next one replaces.
    keys: Vec<Vec<u8>>,
    /// The write count when each key was sampled.
    writes_at: Vec<u64>,
    next: usize,
}

/// What [`ReadHeat::stripe_heat`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct StripeHeat {
    /// Share of the sampled reads in each stripe (`boundaries.len() + 1`
    /// of them, summing to 1).
    pub shares: Vec<f64>,
    /// Samples the shares come from.
    pub samples: usize,
    /// Reads over reads and writes since the oldest sample (the reads
    /// estimated from the samples).
    pub read_share: f64,
}

impl Default for ReadHeat {
    fn default() -> Self {
        ReadHeat::new()
    }
}

impl ReadHeat {
    /// No samples yet.
    pub fn new() -> Self {
        ReadHeat {
            ring: Mutex::new(Ring::default()),
            writes: AtomicU64::new(0),
        }
    }

    /// Counts read number `n` (its caller's running count, from 0) of
    /// `key`; every [`READ_HEAT_SAMPLE_EVERY`]th is kept.
    #[inline]
    pub fn record_read(&self, n: u64, key: &[u8]) {
        if n.is_multiple_of(READ_HEAT_SAMPLE_EVERY) {
            self.keep(key);
        }
    }

    #[cold]
    fn keep(&self, key: &[u8]) {
        let writes = self.writes.load(Ordering::Relaxed);
        let mut ring = self.ring.lock();
        let slot = ring.next;
        if ring.keys.len() < READ_HEAT_SAMPLES {
            ring.keys.push(key.to_vec());
            ring.writes_at.push(writes);
        } else {
            let k = &mut ring.keys[slot];
            k.clear();
            k.extend_from_slice(key);
            ring.writes_at[slot] = writes;
        }
        ring.next = (slot + 1) % READ_HEAT_SAMPLES;
    }

    /// Counts `n` writes (puts, deletes, merges) to the table.
    #[inline]
    pub fn record_writes(&self, n: u64) {
        self.writes.fetch_add(n, Ordering::Relaxed);
    }

    /// The share of the sampled reads in each stripe of `boundaries`
    /// (stripe `i` holds the user keys from `boundaries[i - 1]`, inclusive,
    /// to `boundaries[i]`), or `None` before the first sample.
    pub fn stripe_heat(
        &self,
        cmp: &InternalKeyComparator,
        boundaries: &[Vec<u8>],
    ) -> Option<StripeHeat> {
        let writes_now = self.writes.load(Ordering::Relaxed);
        let ring = self.ring.lock();
        let samples = ring.keys.len();
        if samples == 0 {
            return None;
        }
        let mut counts = vec![0u64; boundaries.len() + 1];
        for key in &ring.keys {
            let i = boundaries.partition_point(|b| cmp.compare_user(b, key).is_le());
            counts[i] += 1;
        }
        // The oldest sample: the slot the next one replaces once the ring
        // is full, else the first.
        let oldest = if samples < READ_HEAT_SAMPLES {
            0
        } else {
            ring.next
        };
        let writes = writes_now.saturating_sub(ring.writes_at[oldest]) as f64;
        let reads = samples as f64 * READ_HEAT_SAMPLE_EVERY as f64;
        Some(StripeHeat {
            shares: counts.iter().map(|&c| c as f64 / samples as f64).collect(),
            samples,
            read_share: reads / (reads + writes),
        })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_the_newest_samples() {
        let heat = ReadHeat::new();
        let cmp = InternalKeyComparator::bytewise();
        assert!(heat.stripe_heat(&cmp, &[]).is_none());
        let every = READ_HEAT_SAMPLE_EVERY;
        // A full ring of reads at "a", then half a ring at "z": the
        // newest samples replace the oldest.
        for n in 0..READ_HEAT_SAMPLES as u64 * every {
            heat.record_read(n, b"a");
        }
        let start = READ_HEAT_SAMPLES as u64 * every;
        for n in start..start + READ_HEAT_SAMPLES as u64 / 2 * every {
            heat.record_read(n, b"z");
        }
        let h = heat.stripe_heat(&cmp, &[b"m".to_vec()]).unwrap();
        assert_eq!(h.samples, READ_HEAT_SAMPLES);
        assert_eq!(h.shares, vec![0.5, 0.5]);
        assert_eq!(h.read_share, 1.0);
        // Reads not on the sampled count are not kept.
        heat.record_read(1, b"z");
        assert_eq!(heat.stripe_heat(&cmp, &[b"m".to_vec()]).unwrap(), h);
    }

    #[test]
    fn the_read_share_counts_writes_since_the_oldest_sample() {
        let heat = ReadHeat::new();
        let cmp = InternalKeyComparator::bytewise();
        heat.record_writes(1_000);
        // Writes before the first sample do not count.
        heat.record_read(0, b"k");
        heat.record_writes(3 * READ_HEAT_SAMPLE_EVERY);
        let h = heat.stripe_heat(&cmp, &[]).unwrap();
        assert_eq!((h.samples, h.shares.clone()), (1, vec![1.0]));
        assert!((h.read_share - 0.25).abs() < 1e-12, "{}", h.read_share);
        // Boundaries are inclusive at their start.
        let h = heat
            .stripe_heat(&cmp, &[b"a".to_vec(), b"k".to_vec()])
            .unwrap();
        assert_eq!(h.shares, vec![0.0, 0.0, 1.0]);
    }
}
