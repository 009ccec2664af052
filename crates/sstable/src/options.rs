//! Options for building and reading tables.

use std::sync::Arc;

use lithify_base::{BytewiseComparator, Comparator, InternalKeyComparator};

use crate::compression::Compression;
use crate::error::{InvalidOptionSnafu, Result};
use crate::schema::{InternalKeys, KeySchema, PlainKeys};

/// Largest accepted `block_size` (1 GiB).
pub const MAX_BLOCK_SIZE: usize = 1 << 30;

/// How a table is built and read. The same comparator and key schema must
/// be used to read a table as to build it (both names are recorded in the
/// table and checked on open); the other fields only matter when building,
/// except `verify_checksums`.
///
/// ```
/// use lithify_sstable::{Compression, SstOptions};
///
/// let opts = SstOptions::default()
///     .block_size(16 << 10)
///     .compression(Compression::zstd());
/// assert_eq!(opts.block_restart_interval, 16);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SstOptions<C = BytewiseComparator> {
    /// The key order.
    pub comparator: C,
    /// Filter-key extraction and seqno/kind decoding.
    pub key_schema: Arc<dyn KeySchema>,
    /// Target uncompressed size of a data block (default 4 KiB). A block is
    /// cut once it reaches this size, so blocks hold at least one entry.
    pub block_size: usize,
    /// Entries between restart points in data blocks (default 16).
    pub block_restart_interval: usize,
    /// Bloom filter bits per key (default 10, about 1 % false positives);
    /// 0 builds no filter.
    pub bloom_bits_per_key: f64,
    /// Data-block compression (default none).
    pub compression: Compression,
    /// Verify block checksums on every read from the file (default true).
    /// Turn off for benchmarks only: damaged blocks may then decode as
    /// wrong data.
    pub verify_checksums: bool,
    /// Creation time to record, in seconds since the Unix epoch; `None`
    /// reads the system clock when the builder is created.
    pub creation_time: Option<u64>,
}

lithify_base::options_builder!(SstOptions<C> {
    comparator: C,
    key_schema: Arc<dyn KeySchema>,
    block_size: usize,
    block_restart_interval: usize,
    bloom_bits_per_key: f64,
    compression: Compression,
    verify_checksums: bool,
    creation_time: Option<u64>,
});

impl Default for SstOptions<BytewiseComparator> {
    fn default() -> Self {
        SstOptions::with_comparator(BytewiseComparator, Arc::new(PlainKeys))
    }
}

impl SstOptions<InternalKeyComparator> {
    /// Options for tables of internal keys ordered by `comparator`, with the
    /// bloom filter on user keys: what the engine uses.
    pub fn for_internal_keys(comparator: InternalKeyComparator) -> Self {
        SstOptions::with_comparator(comparator, Arc::new(InternalKeys))
    }
}

impl<C: Comparator> SstOptions<C> {
    /// Default settings with the given comparator and key schema.
    pub fn with_comparator(comparator: C, key_schema: Arc<dyn KeySchema>) -> Self {
        SstOptions {
            comparator,
            key_schema,
            block_size: 4096,
            block_restart_interval: 16,
            bloom_bits_per_key: 10.0,
            compression: Compression::None,
            verify_checksums: true,
            creation_time: None,
        }
    }

    /// Checks that every field is in range.
    pub fn validate(&self) -> Result<()> {
        let fail = |message: String| InvalidOptionSnafu { message }.fail();
        if self.block_size == 0 || self.block_size > MAX_BLOCK_SIZE {
            return fail(format!(
                "block_size must be in 1..={MAX_BLOCK_SIZE}, not {}",
                self.block_size
            ));
        }
        if self.block_restart_interval == 0 || self.block_restart_interval > 1 << 16 {
            return fail(format!(
                "block_restart_interval must be in 1..=65536, not {}",
                self.block_restart_interval
            ));
        }
        if !(self.bloom_bits_per_key.is_finite()
            && (0.0..=100.0).contains(&self.bloom_bits_per_key))
        {
            return fail(format!(
                "bloom_bits_per_key must be in 0..=100, not {}",
                self.bloom_bits_per_key
            ));
        }
        if let Compression::Zstd { level } = self.compression {
            let range = zstd::compression_level_range();
            if !range.contains(&level) {
                return fail(format!(
                    "zstd level must be in {}..={}, not {level}",
                    range.start(),
                    range.end()
                ));
            }
        }
        Ok(())
    }

    /// Bits per key in thousandths, as the filter stores it (0: no filter).
    pub(crate) fn bloom_millibits(&self) -> u32 {
        (self.bloom_bits_per_key * 1000.0).round() as u32
    }
}
