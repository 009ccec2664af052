//! The options of leveled compaction, with RocksDB's names and defaults.

use lithify_sstable::Compression;

use lithify_compaction::{CompactionPri, Error, Result};

/// 30 days, RocksDB's sanitized default `ttl` for block-based tables.
pub const DEFAULT_TTL_SECONDS: u64 = 30 * 24 * 60 * 60;

/// Options of one table's (column family's) leveled compaction. Names,
/// meanings and defaults are RocksDB's (`include/rocksdb/options.h`,
/// `advanced_options.h`); [`LeveledOptions::sanitize`] applies RocksDB's
/// corrections.
///
/// ```
/// use lithify_compaction_leveled::LeveledOptions;
///
/// let opts = LeveledOptions::default().sanitize().unwrap();
/// assert_eq!(opts.max_bytes_for_level_base, 256 << 20);
/// assert_eq!(opts.max_compaction_bytes, 25 * (64 << 20)); // 0 means 25 x target_file_size_base
/// assert!(opts.level_compaction_dynamic_level_bytes);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LeveledOptions {
    /// Number of levels, L0 included (default 7; at least 2). The
    /// `VersionSet` is created with it; pickers use the version's own
    /// number of levels.
    pub num_levels: usize,
    /// Number of L0 files that makes L0's score 1 (default 4; 0 becomes 1).
    pub level0_file_num_compaction_trigger: usize,
    /// Target size of the base level (default 256 MiB).
    pub max_bytes_for_level_base: u64,
    /// Growth factor between levels (default 10; `<= 0` becomes 1).
    pub max_bytes_for_level_multiplier: f64,
    /// Extra per-level factors (static targets only; missing entries are 1).
    pub max_bytes_for_level_multiplier_additional: Vec<f64>,
    /// Dynamic level targets derived from the last level's size (default
    /// true): see [`LevelTargets`](crate::LevelTargets).
    pub level_compaction_dynamic_level_bytes: bool,
    /// Target size of output files at the base level (default 64 MiB).
    pub target_file_size_base: u64,
    /// Growth factor of the target file size per level (default 1).
    pub target_file_size_multiplier: u64,
    /// Upper bound on a compaction's size and on an output file's overlap
    /// with the next level; 0 (the default) means 25 x
    /// `target_file_size_base`.
    pub max_compaction_bytes: u64,
    /// File order within a level (default `kMinOverlappingRatio`).
    pub compaction_pri: CompactionPri,
    /// Files of levels above the last whose oldest data is older than this
    /// many seconds are compacted down (0 off; default 30 days, as RocksDB
    /// sanitizes it for block-based tables).
    pub ttl: u64,
    /// Files whose data is older than this many seconds are rewritten (0
    /// off, the default; RocksDB turns it on at 30 days when a compaction
    /// filter is configured — the engine decides that).
    pub periodic_compaction_seconds: u64,
    /// Parallel key-range pieces of one compaction (default 1).
    pub max_subcompactions: usize,
    /// No automatic compaction is picked (manual compaction still works).
    pub disable_auto_compactions: bool,
    /// Compression of output files (default none).
    pub compression: Compression,
    /// Per-level compression, indexed 0 for L0 and `level - base_level + 1`
    /// above; non-empty disables L0 and multi-file trivial moves.
    pub compression_per_level: Vec<Compression>,
    /// Compression of files written to the last non-empty level.
    pub bottommost_compression: Option<Compression>,
    /// RocksDB's `level_compaction_dynamic_file_size` (default true): cut
    /// output files early at grandparent boundaries.
    pub level_compaction_dynamic_file_size: bool,
}

lithify_base::options_builder!(LeveledOptions {
    num_levels: usize,
    level0_file_num_compaction_trigger: usize,
    max_bytes_for_level_base: u64,
    max_bytes_for_level_multiplier: f64,
    max_bytes_for_level_multiplier_additional: Vec<f64>,
    level_compaction_dynamic_level_bytes: bool,
    target_file_size_base: u64,
    target_file_size_multiplier: u64,
    max_compaction_bytes: u64,
    compaction_pri: CompactionPri,
    ttl: u64,
    periodic_compaction_seconds: u64,
    max_subcompactions: usize,
    disable_auto_compactions: bool,
    compression: Compression,
    compression_per_level: Vec<Compression>,
    bottommost_compression: Option<Compression>,
    level_compaction_dynamic_file_size: bool,
});

impl Default for LeveledOptions {
    fn default() -> Self {
        LeveledOptions {
            num_levels: 7,
            level0_file_num_compaction_trigger: 4,
            max_bytes_for_level_base: 256 << 20,
            max_bytes_for_level_multiplier: 10.0,
            max_bytes_for_level_multiplier_additional: Vec::new(),
            level_compaction_dynamic_level_bytes: true,
            target_file_size_base: 64 << 20,
            target_file_size_multiplier: 1,
            max_compaction_bytes: 0,
            compaction_pri: CompactionPri::MinOverlappingRatio,
            ttl: DEFAULT_TTL_SECONDS,
            periodic_compaction_seconds: 0,
            max_subcompactions: 1,
            disable_auto_compactions: false,
            compression: Compression::None,
            compression_per_level: Vec::new(),
            bottommost_compression: None,
            level_compaction_dynamic_file_size: true,
        }
    }
}

impl LeveledOptions {
    /// Applies RocksDB's corrections (`SanitizeCfOptions`) and checks what
    /// cannot be corrected.
    pub fn sanitize(mut self) -> Result<Self> {
        if self.num_levels < 2 {
            self.num_levels = 2;
        }
        if self.num_levels > lithify_version::edit::MAX_LEVELS {
            return Err(Error::invalid_argument(format!(
                "num_levels {} exceeds the {} levels a MANIFEST can hold",
                self.num_levels,
                lithify_version::edit::MAX_LEVELS
            )));
        }
        if self.level0_file_num_compaction_trigger == 0 {
            self.level0_file_num_compaction_trigger = 1;
        }
        let mult = self.max_bytes_for_level_multiplier;
        if mult.is_nan() || mult <= 0.0 || !mult.is_finite() {
            self.max_bytes_for_level_multiplier = 1.0;
        }
        if self.target_file_size_base == 0 {
            return Err(Error::invalid_argument(
                "target_file_size_base must be positive".to_owned(),
            ));
        }
        if self.target_file_size_multiplier == 0 {
            return Err(Error::invalid_argument(
                "target_file_size_multiplier must be positive".to_owned(),
            ));
        }
        if self.max_bytes_for_level_base == 0 {
            return Err(Error::invalid_argument(
                "max_bytes_for_level_base must be positive".to_owned(),
            ));
        }
        if self.max_compaction_bytes == 0 {
            self.max_compaction_bytes = self.target_file_size_base.saturating_mul(25);
        }
        if self.max_subcompactions == 0 {
            self.max_subcompactions = 1;
        }
        Ok(self)
    }

    /// The effective `max_compaction_bytes` (25 x `target_file_size_base`
    /// when unset).
    pub fn effective_max_compaction_bytes(&self) -> u64 {
        if self.max_compaction_bytes == 0 {
            self.target_file_size_base.saturating_mul(25)
        } else {
            self.max_compaction_bytes
        }
    }

    /// `max_bytes_for_level_multiplier_additional[level]`, 1 when missing.
    pub fn multiplier_additional(&self, level: usize) -> f64 {
        self.max_bytes_for_level_multiplier_additional
            .get(level)
            .copied()
            .unwrap_or(1.0)
    }

    /// The compression of files written to `level` (RocksDB's
    /// `GetCompressionType`): `bottommost_compression` for the last
    /// non-empty level, else `compression_per_level` indexed 0 for L0 and
    /// `level - base_level + 1` above (clamped), else `compression`.
    pub fn compression_for_level(
        &self,
        level: usize,
        base_level: usize,
        num_non_empty_levels: usize,
    ) -> Compression {
        if let Some(c) = self.bottommost_compression
            && level + 1 >= num_non_empty_levels
        {
            return c;
        }
        if self.compression_per_level.is_empty() {
            return self.compression;
        }
        let idx = if level == 0 {
            0
        } else {
            (level + 1).saturating_sub(base_level)
        };
        let last = self.compression_per_level.len() - 1;
        self.compression_per_level[idx.min(last)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_corrects_like_rocksdb() {
        let opts = LeveledOptions::default()
            .num_levels(1)
            .level0_file_num_compaction_trigger(0)
            .max_bytes_for_level_multiplier(-3.0)
            .max_subcompactions(0)
            .sanitize()
            .unwrap();
        assert_eq!(opts.num_levels, 2);
        assert_eq!(opts.level0_file_num_compaction_trigger, 1);
        assert_eq!(opts.max_bytes_for_level_multiplier, 1.0);
        assert_eq!(opts.max_subcompactions, 1);
        let err = LeveledOptions::default()
            .target_file_size_base(0)
            .sanitize()
            .unwrap_err();
        assert!(err.to_string().contains("target_file_size_base"));
    }

    #[test]
    fn compression_per_level_index() {
        let z = Compression::zstd();
        let opts = LeveledOptions::default().compression_per_level(vec![
            Compression::None,
            Compression::None,
            z,
        ]);
        // base level 4: L0 -> idx 0, L4 -> idx 1, L5 -> idx 2, L6 -> clamped 2.
        assert_eq!(opts.compression_for_level(0, 4, 7), Compression::None);
        assert_eq!(opts.compression_for_level(4, 4, 7), Compression::None);
        assert_eq!(opts.compression_for_level(5, 4, 7), z);
        assert_eq!(opts.compression_for_level(6, 4, 7), z);
        let bottom = LeveledOptions::default().bottommost_compression(Some(z));
        assert_eq!(bottom.compression_for_level(6, 1, 7), z);
        assert_eq!(bottom.compression_for_level(5, 1, 7), Compression::None);
        for pri in [
            CompactionPri::ByCompensatedSize,
            CompactionPri::OldestLargestSeqFirst,
            CompactionPri::OldestSmallestSeqFirst,
            CompactionPri::MinOverlappingRatio,
            CompactionPri::RoundRobin,
        ] {
            assert_eq!(CompactionPri::from_name(pri.name()), Some(pri));
        }
    }
}
