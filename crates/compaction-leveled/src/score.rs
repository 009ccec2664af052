//! Compaction scores (RocksDB's `VersionStorageInfo::ComputeCompactionScore`),
//! compensated file sizes and the pending-compaction-bytes estimate.

use std::collections::HashMap;

use lithify_version::{FileMetadata, Version};

use crate::options::LeveledOptions;
use crate::targets::LevelTargets;
use lithify_compaction::{CompactionsInProgress, LevelScore};

/// RocksDB's `kScoreScale`: scores above 1 in dynamic mode are multiplied
/// by it, so that "must compact" levels sort well above the rest.
pub const SCORE_SCALE: f64 = 10.0;

/// RocksDB's `kDeletionWeightOnCompaction`.
const DELETION_WEIGHT: u64 = 2;

/// File sizes with deletions weighted up (RocksDB's
/// `ComputeCompensatedSizes`): a file whose point tombstones are at least
/// half its entries counts `(2 x deletions - entries) x 2 x average value
/// size` bytes more, so that compacting it (and dropping what it deletes)
/// comes sooner.
///
/// RocksDB computes the average value size from the raw key and value
/// sizes in table properties; file metadata does not carry them, so here
/// it is the total size of the version's files divided by their non-deletion
/// entries (the compressed bytes per live entry, key included): a slightly
/// larger weight than RocksDB's.
#[derive(Debug, Clone, Default)]
pub struct CompensatedSizes {
    sizes: HashMap<u64, u64>,
}

impl CompensatedSizes {
    /// Compensated sizes of every file of `version`.
    pub fn compute(version: &Version) -> CompensatedSizes {
        let (mut bytes, mut non_deletions) = (0u64, 0u64);
        for (_, f) in version.all_files() {
            if f.num_entries > 0 {
                bytes += f.size;
                non_deletions += f
                    .num_entries
                    .saturating_sub(f.num_deletions + f.num_range_deletions);
            }
        }
        let average_value_size = bytes.checked_div(non_deletions).unwrap_or(0);
        let sizes = version
            .all_files()
            .map(|(_, f)| (f.number, compensated_size(f, average_value_size)))
            .collect();
        CompensatedSizes { sizes }
    }

    /// The compensated size of `f` (its size if it is not in the version
    /// the sizes were computed for).
    pub fn get(&self, f: &FileMetadata) -> u64 {
        self.sizes.get(&f.number).copied().unwrap_or(f.size)
    }
}

fn compensated_size(f: &FileMetadata, average_value_size: u64) -> u64 {
    let mut size = f.size;
    let deletions = f.num_deletions;
    if deletions * 2 >= f.num_entries {
        size = size.saturating_add(
            (deletions * 2 - f.num_entries)
                .saturating_mul(average_value_size)
                .saturating_mul(DELETION_WEIGHT),
        );
    }
    size
}

/// The scores of levels 0..num_levels-2, in RocksDB's order (highest
/// first).
#[derive(Debug, Clone, PartialEq)]
pub struct Scores {
    sorted: Vec<LevelScore>,
    by_level: Vec<f64>,
}

impl Scores {
    /// Scores of `version` given its `targets`; files being compacted (per
    /// `in_progress`) do not count.
    ///
    /// * **L0**: non-compacting files / `level0_file_num_compaction_trigger`;
    ///   static targets raise it to L0's compensated bytes /
    ///   `max_bytes_for_level_base`. Dynamic targets raise it to 1.01 once L0
    ///   holds `max_bytes_for_level_base`, to L0 bytes / max(base level
    ///   bytes, base target) once L0 exceeds the base target, and multiply
    ///   it by 10 when above 1.
    /// * **Ln**: non-compacting compensated bytes / target. Dynamic targets
    ///   divide an over-full level by (target + the bytes about to be
    ///   compacted down into it) and multiply by 10, and give non-empty
    ///   unnecessary levels at least `10 x (1.001 + 0.001 x distance)`.
    ///
    /// Levels are ordered by RocksDB's exchange sort, which on ties puts
    /// the deeper level first (scores L0 = 1, L1 = 1, L2 = 2 come out L2,
    /// L1, L0); reproducing it keeps picks identical.
    pub fn compute(
        version: &Version,
        opts: &LeveledOptions,
        targets: &LevelTargets,
        in_progress: &CompactionsInProgress,
        compensated: &CompensatedSizes,
    ) -> Scores {
        let num_levels = version.num_levels();
        let max_input_level = num_levels.saturating_sub(2);
        let dynamic = opts.level_compaction_dynamic_level_bytes;
        let mut downcompact: f64 = 0.0;
        let mut by_level = vec![0.0; num_levels];
        for (level, slot) in by_level.iter_mut().enumerate().take(max_input_level + 1) {
            let files = version.files(level);
            let score = if level == 0 {
                let mut runs = 0usize;
                let mut total = 0u64;
                for f in files {
                    downcompact += f.size as f64;
                    if !in_progress.is_being_compacted(f.number) {
                        total += compensated.get(f);
                        runs += 1;
                    }
                }
                let mut score = runs as f64 / opts.level0_file_num_compaction_trigger as f64;
                if !dynamic {
                    score = score.max(total as f64 / opts.max_bytes_for_level_base as f64);
                } else {
                    if total >= opts.max_bytes_for_level_base {
                        score = score.max(1.01);
                    }
                    let base = targets.base_level();
                    let base_target = targets.target(base);
                    if total > base_target {
                        let base_bytes: u64 =
                            version.files(base).iter().map(|f| compensated.get(f)).sum();
                        score = score.max(total as f64 / base_bytes.max(base_target) as f64);
                    }
                    if score > 1.0 {
                        score *= SCORE_SCALE;
                    }
                }
                score
            } else {
                let mut not_compacting = 0u64;
                let mut total = 0u64;
                for f in files {
                    total += f.size;
                    if !in_progress.is_being_compacted(f.number) {
                        not_compacting += compensated.get(f);
                    }
                }
                let target = targets.target(level);
                let unnecessary = targets
                    .lowest_unnecessary_level()
                    .is_some_and(|lowest| level <= lowest);
                let mut score;
                if !dynamic || not_compacting < target {
                    score = not_compacting as f64 / target as f64;
                } else {
                    score = not_compacting as f64 / (target as f64 + downcompact) * SCORE_SCALE;
                }
                if dynamic && not_compacting > 0 && unnecessary {
                    let lowest = targets.lowest_unnecessary_level().unwrap_or(level);
                    score = score.max(SCORE_SCALE * (1.001 + 0.001 * (lowest - level) as f64));
                }
                if unnecessary {
                    downcompact += total as f64;
                } else if total > target {
                    downcompact += (total - target) as f64;
                }
                score
            };
            *slot = score;
        }
        let mut sorted: Vec<LevelScore> = (0..=max_input_level)
            .map(|level| LevelScore {
                level,
                score: by_level[level],
            })
            .collect();
        // RocksDB's exchange sort (not a stable sort): see the doc comment.
        for i in 0..sorted.len() {
            for j in i + 1..sorted.len() {
                if sorted[i].score < sorted[j].score {
                    sorted.swap(i, j);
                }
            }
        }
        Scores { sorted, by_level }
    }

    /// Levels by descending score (RocksDB's `CompactionScoreLevel(i)`).
    pub fn sorted(&self) -> &[LevelScore] {
        &self.sorted
    }

    /// The score of `level` (0 for the last level, which has none).
    pub fn of_level(&self, level: usize) -> f64 {
        self.by_level.get(level).copied().unwrap_or(0.0)
    }

    /// Whether some level has a score of at least 1.
    pub fn any_at_least_one(&self) -> bool {
        self.sorted.first().is_some_and(|s| s.score >= 1.0)
    }
}

/// RocksDB's `EstimateCompactionBytesNeeded` (leveled): how many bytes
/// compactions would have to rewrite to bring every level within its
/// target, assuming each level's excess is merged with the proportional
/// share of the level below. The engine's write stalls
/// (`soft/hard_pending_compaction_bytes_limit`) compare against it.
pub fn estimated_compaction_needed_bytes(
    version: &Version,
    opts: &LeveledOptions,
    targets: &LevelTargets,
) -> u64 {
    let num_levels = version.num_levels();
    let mut needed: u64 = 0;
    let mut carry: u64 = 0;
    let l0 = version.level_bytes(0);
    let mut l0_triggered = false;
    if version.num_files(0) >= opts.level0_file_num_compaction_trigger
        || l0 >= opts.max_bytes_for_level_base
    {
        needed = l0;
        carry = l0;
        l0_triggered = true;
    }
    let base = targets.base_level();
    let mut next_size: Option<u64> = None;
    for level in base..num_levels.saturating_sub(1) {
        let mut size = next_size
            .take()
            .unwrap_or_else(|| version.level_bytes(level));
        if level == base && l0_triggered {
            needed = needed.saturating_add(size);
        }
        size = size.saturating_add(carry);
        carry = 0;
        let target = targets.target(level);
        if size > target {
            carry = size - target;
            let next = version.level_bytes(level + 1);
            next_size = Some(next);
            if next > 0 {
                let fanout = next as f64 / size as f64 + 1.0;
                needed = needed.saturating_add((carry as f64 * fanout) as u64);
            }
        }
    }
    needed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scores(text: &str, opts: &LeveledOptions) -> Scores {
        let v = Version::from_text(text).unwrap();
        let t = LevelTargets::compute(v.all_level_bytes(), opts);
        Scores::compute(
            &v,
            opts,
            &t,
            &CompactionsInProgress::new(),
            &CompensatedSizes::compute(&v),
        )
    }

    #[test]
    fn rocksdb_tie_order() {
        // Static targets: L1 target 100, L2 target 1000.
        let opts = LeveledOptions::default()
            .level_compaction_dynamic_level_bytes(false)
            .max_bytes_for_level_base(100)
            .level0_file_num_compaction_trigger(2)
            .num_levels(4);
        let s = scores(
            "
L0:
  000001:[a#10,SET-b#10,SET] size=10
  000002:[a#11,SET-b#11,SET] size=10
L1:
  000003:[a#5,SET-b#5,SET] size=100
L2:
  000004:[a#1,SET-b#1,SET] size=2000
",
            &opts,
        );
        let order: Vec<(usize, f64)> = s
            .sorted()
            .iter()
            .take(3)
            .map(|s| (s.level, s.score))
            .collect();
        assert_eq!(order, [(2, 2.0), (1, 1.0), (0, 1.0)]);
    }

    #[test]
    fn deletions_weigh_more() {
        let v = Version::from_text(
            "
L1:
  000001:[a#5,SET-b#5,SET] size=1000 entries=10
  000002:[c#5,SET-d#5,SET] size=1000 entries=10 deletions=8
",
        )
        .unwrap();
        let c = CompensatedSizes::compute(&v);
        // 12 non-deletion entries over 2000 bytes: 166 bytes each.
        assert_eq!(c.get(&v.files(1)[0]), 1000);
        assert_eq!(c.get(&v.files(1)[1]), 1000 + (16 - 10) * 166 * 2);
    }
}
