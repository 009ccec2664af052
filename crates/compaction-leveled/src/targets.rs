//! Level size targets and output file sizes (RocksDB's
//! `VersionStorageInfo::CalculateBaseBytes` and `MaxFileSizeForLevel`).

use crate::options::LeveledOptions;

/// The target size of every level and the base level L0 compacts into.
///
/// **Static** targets (`level_compaction_dynamic_level_bytes = false`):
/// the base level is L1, `target[1] = max_bytes_for_level_base`, and each
/// deeper level is `multiplier x multiplier_additional[i-1]` times the one
/// above.
///
/// **Dynamic** targets (the default) are derived from the largest level:
/// divide its size by the multiplier once per level going up until the
/// result drops to `max_bytes_for_level_base`; the level where that happens
/// is the base level, levels above it stay empty (target `u64::MAX`), and
/// no target is below `max_bytes_for_level_base`. Levels that hold data but
/// would not be needed for the current size are *unnecessary*
/// ([`lowest_unnecessary_level`](Self::lowest_unnecessary_level)) and are
/// drained by the scores.
///
/// ```
/// use lithify_compaction_leveled::{LeveledOptions, LevelTargets};
///
/// let opts = LeveledOptions::default()
///     .level_compaction_dynamic_level_bytes(false)
///     .max_bytes_for_level_base(10)
///     .max_bytes_for_level_multiplier(5.0)
///     .num_levels(5);
/// let t = LevelTargets::compute(&[0, 0, 0, 0, 0], &opts);
/// assert_eq!(t.targets()[1..], [10, 50, 250, 1250]);
/// assert_eq!(t.base_level(), 1);
///
/// // Dynamic: 276 GB in L6 with a 1 GB base: L5 = 27.6 GB, L4 = 2.76 GB,
/// // and L3 (0.276 GB, raised to the 1 GB floor) is the base level.
/// let gb = 1_000_000_000u64;
/// let opts = LeveledOptions::default()
///     .max_bytes_for_level_base(gb);
/// let t = LevelTargets::compute(&[0, 0, 0, 0, 0, 0, 276 * gb], &opts);
/// assert_eq!(t.base_level(), 3);
/// assert_eq!(t.target(3), gb);
/// assert_eq!(t.target(4), 2_760_000_000);
/// assert_eq!(t.target(2), u64::MAX);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LevelTargets {
    base_level: usize,
    targets: Vec<u64>,
    lowest_unnecessary_level: Option<usize>,
    dynamic: bool,
    target_file_size_base: u64,
    target_file_size_multiplier: u64,
}

/// `a * b` rounded down, saturating at `u64::MAX` (RocksDB's
/// `MultiplyCheckOverflow`).
fn mul_saturating(a: u64, b: f64) -> u64 {
    let r = a as f64 * b;
    if r >= u64::MAX as f64 {
        u64::MAX
    } else {
        r as u64
    }
}

impl LevelTargets {
    /// Targets for levels whose sizes (sum of file sizes) are `level_bytes`
    /// (index = level; its length is the number of levels).
    pub fn compute(level_bytes: &[u64], opts: &LeveledOptions) -> LevelTargets {
        let num_levels = level_bytes.len().max(2);
        let mut t = LevelTargets {
            base_level: 1,
            targets: vec![0; num_levels],
            lowest_unnecessary_level: None,
            dynamic: opts.level_compaction_dynamic_level_bytes,
            target_file_size_base: opts.target_file_size_base,
            target_file_size_multiplier: opts.target_file_size_multiplier.max(1),
        };
        let mult = opts.max_bytes_for_level_multiplier;
        let base = opts.max_bytes_for_level_base;
        if !opts.level_compaction_dynamic_level_bytes {
            for i in 0..num_levels {
                t.targets[i] = if i <= 1 {
                    base
                } else {
                    mul_saturating(t.targets[i - 1], mult * opts.multiplier_additional(i - 1))
                };
            }
            return t;
        }

        t.targets.fill(u64::MAX);
        let size = |i: usize| level_bytes.get(i).copied().unwrap_or(0);
        let max_level_size = (1..num_levels).map(size).max().unwrap_or(0);
        if max_level_size == 0 {
            // Nothing below L0: L0 compacts straight into the last level.
            t.base_level = num_levels - 1;
        } else {
            let first_non_empty = (1..num_levels)
                .find(|&i| size(i) > 0)
                .unwrap_or(num_levels - 1);
            let base_max = base;
            let base_min = (base as f64 / mult) as u64;
            let mut cur = max_level_size;
            let mut i = num_levels - 2;
            while i >= first_non_empty {
                cur = (cur as f64 / mult) as u64;
                if t.lowest_unnecessary_level.is_none() && cur <= base_min {
                    t.lowest_unnecessary_level = Some(i);
                }
                if i == 0 {
                    break;
                }
                i -= 1;
            }
            let base_level_size;
            if cur <= base_min {
                // More non-empty levels than the data needs.
                base_level_size = base_min + 1;
                t.base_level = first_non_empty;
            } else {
                t.base_level = first_non_empty;
                while t.base_level > 1 && cur > base_max {
                    t.base_level -= 1;
                    cur = (cur as f64 / mult) as u64;
                }
                base_level_size = if cur > base_max { base_max } else { cur.max(1) };
            }
            let mut level_size = base_level_size;
            for i in t.base_level..num_levels {
                if i > t.base_level {
                    level_size = mul_saturating(level_size, mult);
                }
                t.targets[i] = level_size.max(base_max);
            }
        }
        t
    }

    /// The level L0 compacts into.
    pub fn base_level(&self) -> usize {
        self.base_level
    }

    /// The target size of every level (`u64::MAX` for levels that should
    /// stay empty; L0's entry is unused by leveled compaction).
    pub fn targets(&self) -> &[u64] {
        &self.targets
    }

    /// The target size of `level` (RocksDB's `MaxBytesForLevel`).
    pub fn target(&self, level: usize) -> u64 {
        self.targets.get(level).copied().unwrap_or(u64::MAX)
    }

    /// The deepest level that holds data it should not (dynamic targets
    /// only): it and every non-empty level above it are drained.
    pub fn lowest_unnecessary_level(&self) -> Option<usize> {
        self.lowest_unnecessary_level
    }

    /// Whether the targets are dynamic.
    pub fn is_dynamic(&self) -> bool {
        self.dynamic
    }

    /// The target size of an output file written to `level` (RocksDB's
    /// `MaxFileSizeForLevel`): `target_file_size_base` for L0 and L1 (or the
    /// base level and the one below it, with dynamic targets), multiplied by
    /// `target_file_size_multiplier` per level below that.
    pub fn target_file_size(&self, level: usize) -> u64 {
        let steps = if self.dynamic {
            level.saturating_sub(self.base_level)
        } else {
            level.saturating_sub(1)
        };
        let mut size = self.target_file_size_base;
        for _ in 0..steps {
            size = size.saturating_mul(self.target_file_size_multiplier);
        }
        size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dynamic(base: u64, mult: f64, levels: usize) -> LeveledOptions {
        LeveledOptions::default()
            .max_bytes_for_level_base(base)
            .max_bytes_for_level_multiplier(mult)
            .num_levels(levels)
    }

    #[test]
    fn dynamic_empty_db_compacts_l0_into_last_level() {
        let t = LevelTargets::compute(&[100, 0, 0, 0, 0, 0, 0], &dynamic(256, 10.0, 7));
        assert_eq!(t.base_level(), 6);
        assert!(t.targets().iter().all(|&x| x == u64::MAX));
    }

    #[test]
    fn dynamic_small_last_level_is_base() {
        // 200 bytes in L6 with base 256: L6 is the base level, target 256.
        let t = LevelTargets::compute(&[0, 0, 0, 0, 0, 0, 200], &dynamic(256, 10.0, 7));
        assert_eq!(t.base_level(), 6);
        assert_eq!(t.target(6), 256);
        assert_eq!(t.target(5), u64::MAX);
        assert_eq!(t.lowest_unnecessary_level(), None);
    }

    #[test]
    fn dynamic_unnecessary_levels() {
        // L1 holds data, L6 is small: dividing 1000 by 10 per level reaches
        // base_min (25) at L4, so L4 and above are unnecessary; L1 stays the
        // base level because it is non-empty, sized base_min + 1 = 26
        // (raised to the 256 floor) and growing 10x per level below.
        let t = LevelTargets::compute(&[0, 50, 0, 0, 0, 0, 1000], &dynamic(256, 10.0, 7));
        assert_eq!(t.lowest_unnecessary_level(), Some(4));
        assert_eq!(t.base_level(), 1);
        assert_eq!(
            t.targets()[1..],
            [256, 260, 2600, 26_000, 260_000, 2_600_000]
        );
    }

    #[test]
    fn file_sizes_grow_below_the_base_level() {
        let opts = dynamic(256, 10.0, 7)
            .target_file_size_base(2)
            .target_file_size_multiplier(3);
        let t = LevelTargets::compute(&[0, 0, 0, 0, 0, 0, 1_000_000], &opts);
        assert_eq!(t.base_level(), 2);
        assert_eq!(
            (0..7).map(|l| t.target_file_size(l)).collect::<Vec<_>>(),
            [2, 2, 2, 6, 18, 54, 162]
        );
        let stat =
            LevelTargets::compute(&[0; 7], &opts.level_compaction_dynamic_level_bytes(false));
        assert_eq!(
            (0..7).map(|l| stat.target_file_size(l)).collect::<Vec<_>>(),
            [2, 2, 6, 18, 54, 162, 486]
        );
    }
}
