//! The synthetic keyed workload of `log produce` and `log bench`: uniform
//! random keys (so most keys are overwritten many times), a share of
//! tombstones, printable values; deterministic for a seed.

use lithify::log::record::SimpleRecord;

pub(crate) use crate::rng::Rng;

/// The largest `--value-size`: 16 MiB (Kafka's default largest batch,
/// `max.message.bytes`, is 1 MiB).
pub(crate) const MAX_VALUE_SIZE: usize = 16 << 20;

/// The largest `--batch-size`, in records.
pub(crate) const MAX_BATCH_RECORDS: usize = 1_000_000;

/// Fails when a batch of `batch_size` records of `value_size` bytes would
/// pass 1 GiB: the batch is built in memory before it is appended.
pub(crate) fn check_batch_bytes(batch_size: usize, value_size: usize) -> crate::error::Result<()> {
    crate::numbers::check_product(
        ("--batch-size", batch_size as u64),
        ("--value-size", value_size as u64),
        crate::numbers::MAX_BATCH_BYTES,
        "bytes in one batch",
    )
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
