//! `Mem`: a memtable with an optional whole-key bloom filter (RocksDB's
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

use std::ops::Deref;

use lithify_base::sync::Arc;
use lithify_base::sync::atomic::{AtomicU64, Ordering};
use lithify_base::{InternalKeyComparator, SeqNo, ValueKind};
use lithify_memtable::{Lookup, MemTable, MemTableOptions};

use crate::options::Options;

/// Bits per 64-byte block.
const BLOCK_BITS: u64 = 512;
/// Probes per key (within one block).
const PROBES: u32 = 6;

/// A concurrent blocked bloom filter over user keys.
pub(crate) struct MemBloom {
    words: Box<[AtomicU64]>,
    blocks: u64,
}

impl MemBloom {
    /// A filter of about `bits` bits (rounded up to whole 512-bit blocks).
    pub(crate) fn new(bits: u64) -> Self {
        let blocks = bits.div_ceil(BLOCK_BITS).max(1);
        let words = (0..blocks * 8).map(|_| AtomicU64::new(0)).collect();
        MemBloom { words, blocks }
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

#[inline]
fn key_hash(user_key: &[u8]) -> u64 {
    lithify_base::xxh3_64(user_key)
}

/// A memtable and its optional whole-key filter. Derefs to the
/// [`MemTable`] for everything but `add` and `get`.
pub(crate) struct Mem {
    table: Arc<MemTable>,
    bloom: Option<MemBloom>,
}

impl Deref for Mem {
    type Target = MemTable;

    fn deref(&self) -> &MemTable {
        &self.table
    }
}

impl Mem {
    /// An empty memtable sized by `options`.
    pub(crate) fn new(icmp: &InternalKeyComparator, options: &Options) -> Mem {
        let table = Arc::new(MemTable::with_options(
            icmp.clone(),
            &MemTableOptions {
                arena_block_size: options.arena_block_size.max(1024),
            },
        ));
        // Ten bits per key for keys of 64 bytes of memtable (RocksDB's
        // memtable_prefix_bloom_size_ratio of about 0.02).
        let bloom = options
            .memtable_whole_key_filtering
            .then(|| MemBloom::new(options.write_buffer_size as u64 * 10 / 64));
        Mem { table, bloom }
    }

    /// The memtable, for iterators that co-own it.
    pub(crate) fn table(&self) -> &Arc<MemTable> {
        &self.table
    }

    /// Adds an entry (see [`MemTable::add`]) and records point keys in the
    /// filter.
    #[inline]
    pub(crate) fn add(
        &self,
        seqno: SeqNo,
        kind: ValueKind,
        user_key: &[u8],
        value: &[u8],
    ) -> lithify_memtable::Result<()> {
        match &self.bloom {
            // The filter's block is a cache miss of its own: fetch it while
            // the skiplist insert walks its nodes, and set the bits after.
            // Readers only consult the filter for keys whose seqno is
            // published, which happens after this call returns.
            Some(b) if kind != ValueKind::RangeDelete => {
                let hash = key_hash(user_key);
                b.prefetch(hash);
                self.table.add(seqno, kind, user_key, value)?;
                b.add(hash);
                Ok(())
            }
            _ => self.table.add(seqno, kind, user_key, value),
        }
    }

    /// Looks `user_key` up (see [`MemTable::get`]); a filter miss answers
    /// `NotFound` without touching the skiplist unless range tombstones
    /// exist.
    #[inline]
    pub(crate) fn get(&self, user_key: &[u8], snapshot: SeqNo) -> Lookup<'_> {
        if let Some(b) = &self.bloom
            && !b.may_contain(key_hash(user_key))
            && self.table.num_range_deletes() == 0
        {
            return Lookup::NotFound;
        }
        self.table.get(user_key, snapshot)
    }

    /// Bytes of the filter.
    pub(crate) fn filter_size(&self) -> usize {
        self.bloom.as_ref().map_or(0, MemBloom::size)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        let b = MemBloom::new(10_000 * 10);
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

    #[test]
    fn the_filter_never_hides_a_key_or_a_range_tombstone() {
        let opts = Options {
            write_buffer_size: 1 << 20,
            ..Options::default()
        };
        let m = Mem::new(&InternalKeyComparator::bytewise(), &opts);
        assert!(m.bloom.is_some());
        m.add(1, ValueKind::Put, b"a", b"1").unwrap();
        assert_eq!(
            m.get(b"a", 5),
            Lookup::Found {
                value: b"1",
                seqno: 1
            }
        );
        assert_eq!(m.get(b"zz", 5), Lookup::NotFound);
        m.add(2, ValueKind::RangeDelete, b"m", b"p").unwrap();
        assert!(matches!(m.get(b"n", 5), Lookup::Deleted { .. }));
    }
}
