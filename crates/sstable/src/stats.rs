//! Read statistics, for the engine's read-amplification figures.

use std::ops::AddAssign;

/// What reads cost: data blocks served by the cache or read from the file,
/// and what the bloom filter saved, for the engine's read-amplification
/// figures.
///
/// Counters are **per operation, owned by the caller**: a
/// [`SstIter`](crate::SstIter) accumulates its own
/// ([`read_stats`](crate::SstIter::read_stats)), and the engine's point
/// lookup ([`SstReader::point_lookup`](crate::SstReader::point_lookup)) adds to a
/// `ReadStats` the caller passes in. No counter is shared between threads,
/// so reading costs no contended atomics; the engine sums what it gets into
/// its own statistics. The block cache keeps its own hit/miss counters
/// ([`BlockCache::stats`](crate::BlockCache::stats)). Index, filter,
/// properties and range-deletion blocks are read once when a table is
/// opened and are not counted here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Data blocks found in the block cache.
    pub blocks_from_cache: u64,
    /// Data blocks read from the file (cache misses, or no cache).
    pub blocks_from_file: u64,
    /// Bytes read from the file for those blocks, trailers included.
    pub bytes_from_file: u64,
    /// Point lookups that consulted the bloom filter.
    pub filter_checks: u64,
    /// Point lookups the filter answered "absent" (no block read).
    pub filter_negatives: u64,
}

impl ReadStats {
    /// Data blocks touched, from either source.
    pub fn blocks_read(&self) -> u64 {
        self.blocks_from_cache + self.blocks_from_file
    }
}

impl AddAssign for ReadStats {
    fn add_assign(&mut self, o: ReadStats) {
        self.blocks_from_cache += o.blocks_from_cache;
        self.blocks_from_file += o.blocks_from_file;
        self.bytes_from_file += o.bytes_from_file;
        self.filter_checks += o.filter_checks;
        self.filter_negatives += o.filter_negatives;
    }
}
