//! [`WorkloadRecorder`]: gathers a table's [`WorkloadStats`] from its
//! operations.

use lithify_base::InternalKeyComparator;

use super::{WorkloadStats, ratio};

/// Number of key ranges the recorder counts writes in.
const BUCKETS: usize = 16;

/// Gathers [`WorkloadStats`] from the operations of one table: every read,
/// scan and write is counted, the previous write's key gives the ordered share,
/// writes are bucketed by key range (boundaries supplied by the caller,
/// e.g. [`stripe_boundaries`](lithify_compaction_tiered::stripe_boundaries) of the
/// current version with 16 stripes) for the hot-range share, and the
/// caller reports, for the writes [`should_sample`](Self::should_sample)
/// picks, whether the key existed.
///
/// ```
/// use lithify_base::InternalKeyComparator;
/// use lithify_compaction_strategy::adaptive::WorkloadRecorder;
///
/// let mut rec = WorkloadRecorder::new(InternalKeyComparator::bytewise(), 1);
/// for k in [b"a", b"b", b"c", b"b"] {
///     rec.record_write(k, Some(false));
/// }
/// rec.record_read();
/// let w = rec.take_window();
/// assert_eq!((w.writes, w.ordered_writes, w.reads, w.inserts), (4, 3, 1, 4));
/// ```
#[derive(Debug, Clone)]
pub struct WorkloadRecorder {
    cmp: InternalKeyComparator,
    stats: WorkloadStats,
    last_key: Vec<u8>,
    has_last: bool,
    boundaries: Vec<Vec<u8>>,
    buckets: [u64; BUCKETS],
    sample_every: u64,
    writes_seen: u64,
}

impl WorkloadRecorder {
    /// A recorder sampling one write in `sample_every` for the
    /// update/insert share.
    pub fn new(cmp: InternalKeyComparator, sample_every: u64) -> Self {
        WorkloadRecorder {
            cmp,
            stats: WorkloadStats::default(),
            last_key: Vec::new(),
            has_last: false,
            boundaries: Vec::new(),
            buckets: [0; BUCKETS],
            sample_every: sample_every.max(1),
            writes_seen: 0,
        }
    }

    /// Sets the key-range boundaries (sorted; at most 15 are used).
    pub fn set_boundaries(&mut self, mut boundaries: Vec<Vec<u8>>) {
        boundaries.truncate(BUCKETS - 1);
        self.boundaries = boundaries;
    }

    /// Whether the next write should be sampled (its caller then looks up
    /// whether the key exists and passes it to
    /// [`record_write`](Self::record_write)).
    pub fn should_sample(&self) -> bool {
        self.writes_seen.is_multiple_of(self.sample_every)
    }

    /// Counts a point read.
    pub fn record_read(&mut self) {
        self.stats.reads += 1;
    }

    /// Counts a range scan (a read too).
    pub fn record_scan(&mut self) {
        self.stats.reads += 1;
        self.stats.scans += 1;
    }

    /// Counts a put or delete of `key`; `existed` is `Some` for sampled
    /// writes.
    pub fn record_write(&mut self, key: &[u8], existed: Option<bool>) {
        self.writes_seen += 1;
        self.stats.writes += 1;
        if !self.has_last || self.cmp.compare_user(key, &self.last_key).is_ge() {
            self.stats.ordered_writes += 1;
        }
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.has_last = true;
        match existed {
            Some(true) => self.stats.updates += 1,
            Some(false) => self.stats.inserts += 1,
            None => {}
        }
        if !self.boundaries.is_empty() {
            let i = self
                .boundaries
                .partition_point(|b| self.cmp.compare_user(b, key).is_le());
            self.buckets[i] += 1;
        }
    }

    /// Counts a range delete.
    pub fn record_range_delete(&mut self) {
        self.stats.range_deletes += 1;
    }

    /// Operations counted in the current window.
    pub fn window_ops(&self) -> u64 {
        self.stats.total_ops()
    }

    /// Ends the window: its statistics, with the hot-range share computed
    /// over the buckets in use (the busiest eighth of them, rounded up).
    pub fn take_window(&mut self) -> WorkloadStats {
        let mut stats = std::mem::take(&mut self.stats);
        let used = self.boundaries.len() + 1;
        if used > 1 {
            let mut counts: Vec<u64> = self.buckets[..used].to_vec();
            counts.sort_unstable_by(|a, b| b.cmp(a));
            let top = used.div_ceil(8);
            let hot: u64 = counts[..top].iter().sum();
            let all: u64 = counts.iter().sum();
            // Normalise to an eighth of the key space.
            let share = ratio(hot, all) * (used as f64 / 8.0) / top as f64;
            stats.hot_range_share = share.min(1.0);
        }
        self.buckets = [0; BUCKETS];
        stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorder_hot_share_and_sampling() {
        let cmp = InternalKeyComparator::bytewise();
        let mut rec = WorkloadRecorder::new(cmp, 4);
        let bounds: Vec<Vec<u8>> = (1..16u8).map(|b| vec![b * 16]).collect();
        rec.set_boundaries(bounds);
        // Uniform writes over 16 ranges: the busiest two hold 1/8.
        for i in 0..=255u8 {
            let sample = rec.should_sample();
            rec.record_write(&[i], sample.then_some(i % 2 == 0));
        }
        rec.record_scan();
        let w = rec.take_window();
        assert!(
            (w.hot_range_share - 0.125).abs() < 1e-9,
            "{}",
            w.hot_range_share
        );
        assert_eq!(w.updates + w.inserts, 64);
        assert_eq!(w.ordered_writes, 256);
        assert_eq!((w.reads, w.scans), (1, 1));
        // All writes in one range: the hottest eighth holds everything.
        for _ in 0..100 {
            rec.record_write(&[5], None);
        }
        let w = rec.take_window();
        assert!((w.hot_range_share - 1.0).abs() < 1e-9);
    }
}
