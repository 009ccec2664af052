//! The optional whole-key filter of a memtable (RocksDB's
//! `memtable_whole_key_filtering`).
//!
//! A point lookup of a key the memtable does not hold usually walks twenty
//! or more skiplist nodes, each a likely cache miss; with the filter it
//! costs one hash and one cache line. The filter is a blocked bloom filter
//! of atomic words: inserts set bits with relaxed `fetch_or`, lookups read
//! with relaxed loads. That is enough: a reader only relies on a key being
//! in the filter once the key's sequence number is published, and
//! publication (release) happens after the insert, which set the bits
//! first.

use lithify_base::sync::atomic::{AtomicU64, Ordering};

/// Bits per 64-byte block.
const BLOCK_BITS: u64 = 512;
/// Probes per key (within one block).
const PROBES: u32 = 6;

/// A concurrent blocked bloom filter over user keys.
pub(crate) struct WholeKeyFilter {
    words: Box<[AtomicU64]>,
    blocks: u64,
}

/// The hash the filter is addressed by.
#[inline]
pub(crate) fn key_hash(user_key: &[u8]) -> u64 {
    lithify_base::xxh3_64(user_key)
}

impl WholeKeyFilter {
    /// A filter of about `bits` bits (rounded up to whole 512-bit blocks).
    pub(crate) fn new(bits: u64) -> Self {
        let blocks = bits.div_ceil(BLOCK_BITS).max(1);
        let words = (0..blocks * 8).map(|_| AtomicU64::new(0)).collect();
        WholeKeyFilter { words, blocks }
    }

    /// The block of `hash` and the 9-bit probe positions in it.
    #[inline]
    fn probes(&self, hash: u64) -> (usize, impl Iterator<Item = u64>) {
        let block = ((hash as u128 * self.blocks as u128) >> 64) as usize * 8;
        let mut h = (hash >> 32) as u32 | 1;
        let positions = (0..PROBES).map(move |_| {
            h = h.wrapping_mul(0x9e37_79b9);
            u64::from(h >> 23)
        });
        (block, positions)
    }

    #[inline]
    pub(crate) fn add(&self, hash: u64) {
        let (block, positions) = self.probes(hash);
        for p in positions {
            let w = &self.words[block + (p / 64) as usize];
            let bit = 1u64 << (p % 64);
            if w.load(Ordering::Relaxed) & bit == 0 {
                w.fetch_or(bit, Ordering::Relaxed);
            }
        }
    }

    /// Starts loading the block of `hash`, so that an [`add`](Self::add)
    /// after other work finds it in cache.
    #[inline]
    pub(crate) fn prefetch(&self, hash: u64) {
        let (block, _) = self.probes(hash);
        lithify_base::hint::prefetch_read(&self.words[block]);
    }

    #[inline]
    pub(crate) fn may_contain(&self, hash: u64) -> bool {
        let (block, mut positions) = self.probes(hash);
        positions.all(|p| {
            self.words[block + (p / 64) as usize].load(Ordering::Relaxed) & (1 << (p % 64)) != 0
        })
    }

    /// Bytes held.
    pub(crate) fn size(&self) -> usize {
        self.words.len() * 8
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        let b = WholeKeyFilter::new(10_000 * 10);
        for i in 0..10_000u64 {
            b.add(key_hash(&i.to_le_bytes()));
        }
        for i in 0..10_000u64 {
            assert!(b.may_contain(key_hash(&i.to_le_bytes())));
        }
        let fp = (10_000..110_000u64)
            .filter(|i| b.may_contain(key_hash(&i.to_le_bytes())))
            .count();
        // About 1 % at 10 bits per key; allow 3 %.
        assert!(fp < 3_000, "{fp} false positives in 100000");
    }
}
