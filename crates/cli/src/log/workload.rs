//! The synthetic keyed workload of `log produce` and `log bench`: uniform
//! random keys (so most keys are overwritten many times), a share of
//! tombstones, printable values; deterministic for a seed.

use lithify_compaction_logclean::record::SimpleRecord;

/// splitmix64: small, fast, good enough for workloads.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (`n > 0`).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}

/// What to generate.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Workload {
    /// Distinct keys.
    pub keys: u64,
    /// Bytes per value.
    pub value_size: usize,
    /// Percent of records that are tombstones.
    pub tombstone_percent: u8,
}

impl Workload {
    /// The next record, stamped `timestamp`.
    pub(crate) fn record(&self, rng: &mut Rng, timestamp: i64) -> SimpleRecord {
        let key = format!("key-{:010}", rng.below(self.keys));
        if rng.below(100) < u64::from(self.tombstone_percent) {
            return SimpleRecord::tombstone(timestamp, key);
        }
        let mut value = Vec::with_capacity(self.value_size);
        while value.len() < self.value_size {
            let r = rng.next_u64();
            for b in r.to_le_bytes() {
                if value.len() < self.value_size {
                    value.push(b'a' + b % 26);
                }
            }
        }
        SimpleRecord::new(timestamp, key, value)
    }
}
