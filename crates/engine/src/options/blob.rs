//! Key-value separation options (RocksDB's integrated BlobDB options, with
//! its names and defaults).

use lithify_blob::BlobCompression;

use crate::error::{InvalidArgumentSnafu, Result};

/// Whether and how a table keeps large values in blob files instead of
/// its SSTs (RocksDB's `enable_blob_files` and the settings beside it).
///
/// A value of at least [`min_blob_size`](Self::min_blob_size) bytes is
/// written to a blob file when its memtable is flushed, or when a
/// compaction meets it after separation was turned on; the SST holds a
/// small blob index in its place. Reads resolve the index, so nothing
/// changes for the application. New values apply to new files: turning
/// separation off leaves separated values where they are until garbage
/// collection relocates them.
///
/// ```
/// use lithify_engine::{BlobOptions, Options};
///
/// let opts = Options::default().blob(BlobOptions::enabled(1024));
/// assert!(opts.blob.enable_blob_files);
/// assert_eq!(opts.blob.min_blob_size, 1024);
/// assert_eq!(opts.blob.blob_garbage_collection_age_cutoff, 0.25);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct BlobOptions {
    /// Write values of at least `min_blob_size` bytes to blob files
    /// (default false).
    pub enable_blob_files: bool,
    /// The smallest value kept in a blob file (default 0: every value).
    pub min_blob_size: u64,
    /// A blob file is closed when it reaches this size (default 256 MiB).
    pub blob_file_size: u64,
    /// How each value is compressed in its blob file (default none).
    pub blob_compression: BlobCompression,
    /// Relocate values out of the oldest blob files when compaction meets
    /// them, so those files become garbage and are deleted (default
    /// false).
    pub enable_blob_garbage_collection: bool,
    /// The oldest fraction of blob files (by number) whose values
    /// compaction relocates when garbage collection is on (default 0.25).
    pub blob_garbage_collection_age_cutoff: f64,
    /// When the garbage share of the blob files the age cutoff selects
    /// reaches this ratio, the SSTs that refer to the oldest of them are
    /// compacted so its values are relocated and it is deleted (default
    /// 1.0: never; only with garbage collection on). The leveled strategy
    /// rewrites each at its level, as RocksDB does; the two-tier
    /// strategies rewrite those of the major level and leave L0 to their
    /// minor and major compactions.
    pub blob_garbage_collection_force_threshold: f64,
    /// While garbage collection relocates values, each compaction reads
    /// the old blob files ahead in windows of up to this many bytes
    /// (default 64 KiB; 0 reads each value alone, RocksDB's default). With
    /// the files in the page cache, windows of 16–64 KiB made a
    /// relocating compaction 9–13% faster than reading each value alone,
    /// and windows of 128 KiB and more slower (they read garbage values
    /// too, into larger buffers).
    pub blob_compaction_readahead_size: u64,
}

lithify_base::options_builder!(BlobOptions {
    enable_blob_files: bool,
    min_blob_size: u64,
    blob_file_size: u64,
    blob_compression: BlobCompression,
    enable_blob_garbage_collection: bool,
    blob_garbage_collection_age_cutoff: f64,
    blob_garbage_collection_force_threshold: f64,
    blob_compaction_readahead_size: u64,
});

/// [`BlobOptions::blob_compaction_readahead_size`]'s default.
const DEFAULT_COMPACTION_READAHEAD: u64 = 64 << 10;

impl Default for BlobOptions {
    fn default() -> Self {
        BlobOptions {
            enable_blob_files: false,
            min_blob_size: 0,
            blob_file_size: 256 << 20,
            blob_compression: BlobCompression::None,
            enable_blob_garbage_collection: false,
            blob_garbage_collection_age_cutoff: 0.25,
            blob_garbage_collection_force_threshold: 1.0,
            blob_compaction_readahead_size: DEFAULT_COMPACTION_READAHEAD,
        }
    }
}

impl BlobOptions {
    /// Separation on for values of at least `min_blob_size` bytes, the
    /// other settings at their defaults.
    pub fn enabled(min_blob_size: u64) -> Self {
        BlobOptions {
            enable_blob_files: true,
            min_blob_size,
            ..BlobOptions::default()
        }
    }

    /// Checks the settings.
    pub(crate) fn validate(&self) -> Result<()> {
        let ratio = |v: f64| (0.0..=1.0).contains(&v);
        if !ratio(self.blob_garbage_collection_age_cutoff)
            || !ratio(self.blob_garbage_collection_force_threshold)
        {
            return InvalidArgumentSnafu {
                message: format!(
                    "blob_garbage_collection_age_cutoff ({}) and blob_garbage_collection_force_threshold ({}) must be in [0, 1]",
                    self.blob_garbage_collection_age_cutoff,
                    self.blob_garbage_collection_force_threshold
                ),
            }
            .fail();
        }
        if self.blob_file_size == 0 {
            return InvalidArgumentSnafu {
                message: "blob_file_size must be above 0".to_owned(),
            }
            .fail();
        }
        Ok(())
    }

    /// Forced garbage collection's settings, when it is on.
    pub(crate) fn forced_gc_policy(&self) -> Option<lithify_compaction::BlobGcPolicy> {
        if !self.enable_blob_garbage_collection {
            return None;
        }
        lithify_compaction::BlobGcPolicy::new(
            self.blob_garbage_collection_age_cutoff,
            self.blob_garbage_collection_force_threshold,
        )
    }

    /// The blob file number below which compaction relocates values:
    /// the file at the age cutoff among `numbers` (the table's blob files,
    /// ascending), or 0 (relocate nothing) without garbage collection.
    pub(crate) fn relocate_below(&self, numbers: &[u64]) -> u64 {
        if !self.enable_blob_garbage_collection {
            return 0;
        }
        lithify_compaction::relocate_below(numbers, self.blob_garbage_collection_age_cutoff)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn age_cutoff_picks_the_oldest_fraction() {
        let gc = BlobOptions::enabled(0).enable_blob_garbage_collection(true);
        let files = [3, 7, 9, 12];
        // The oldest quarter (the default cutoff): file 3.
        assert_eq!(gc.relocate_below(&files), 7);
        assert_eq!(
            gc.blob_garbage_collection_age_cutoff(0.0)
                .relocate_below(&files),
            3
        );
        assert_eq!(
            gc.blob_garbage_collection_age_cutoff(1.0)
                .relocate_below(&files),
            13
        );
        assert_eq!(BlobOptions::enabled(0).relocate_below(&files), 0);
        assert_eq!(gc.relocate_below(&[]), 0);
    }

    #[test]
    fn ratios_are_checked() {
        assert!(BlobOptions::default().validate().is_ok());
        let bad = BlobOptions::default().blob_garbage_collection_age_cutoff(1.5);
        assert!(bad.validate().is_err());
    }
}
