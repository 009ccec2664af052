//! The order in which a level's files are tried (RocksDB's
//! `UpdateFilesByCompactionPri` and `file_pri.h`).

use lithify_base::Comparator as _;
use std::cmp::Ordering;
use std::collections::HashSet;

use lithify_version::{FileMetadata, Version};

use crate::score::CompensatedSizes;
use lithify_compaction::CompactionPri;

/// The TTL boost of `kMinOverlappingRatio` (RocksDB's `FileTtlBooster`):
/// files of a middle level older than a level-dependent age get their
/// overlap ratio divided by a growing factor, so old data moves down
/// before `ttl` forces it.
struct TtlBooster {
    enabled: bool,
    now: u64,
    start_age: u64,
    step: u64,
}

impl TtlBooster {
    fn new(now: u64, ttl: u64, num_non_empty_levels: usize, level: usize) -> Self {
        if ttl == 0 || level == 0 || level + 1 >= num_non_empty_levels {
            return TtlBooster {
                enabled: false,
                now,
                start_age: 0,
                step: 1,
            };
        }
        let all_start = ttl / 2;
        let all_range = (ttl / 32) * 31 - all_start;
        let shift = (num_non_empty_levels - level - 1) as u32;
        let range = all_range.checked_shr(shift).unwrap_or(0);
        TtlBooster {
            enabled: true,
            now,
            start_age: all_start + range,
            step: (range / 16).max(1),
        }
    }

    fn boost(&self, f: &FileMetadata) -> u64 {
        if !self.enabled {
            return 1;
        }
        let born = if f.oldest_ancestor_time != 0 {
            f.oldest_ancestor_time
        } else {
            f.creation_time
        };
        if born >= self.now {
            return 1;
        }
        let age = self.now - born;
        if age > self.start_age {
            (age - self.start_age) / self.step + 1
        } else {
            1
        }
    }
}

/// The indices of `level`'s files in the order a size-triggered
/// compaction tries them:
///
/// * `kByCompensatedSize`: compensated size descending;
/// * `kOldestLargestSeqFirst` / `kOldestSmallestSeqFirst`: largest /
///   smallest seqno ascending;
/// * `kMinOverlappingRatio`: files marked for compaction first, then
///   `overlapping bytes in level + 1 x 1024 / compensated size / TTL
///   boost` ascending, ties by smallest key (the overlap sweep uses level
///   `level + 1` even for L0, as RocksDB does);
/// * `kRoundRobin`: from the first file at or after the level's compaction
///   cursor, wrapping around; L0 by smallest seqno.
///
/// Ties keep level order (RocksDB's sorts are not stable, so its order may
/// differ on exact ties of size or seqno). RocksDB partially sorts only the
/// first 50 positions (`kNumberFilesToSort`) of the size and overlap
/// orders; the whole level is sorted here, which fixes those positions the
/// same way.
pub fn files_by_compaction_pri(
    version: &Version,
    level: usize,
    pri: CompactionPri,
    compensated: &CompensatedSizes,
    marked: &HashSet<u64>,
    now: u64,
    ttl: u64,
) -> Vec<usize> {
    let files = version.files(level);
    let cmp = version.comparator();
    let mut order: Vec<usize> = (0..files.len()).collect();
    match pri {
        CompactionPri::ByCompensatedSize => {
            order.sort_by(|&a, &b| compensated.get(&files[b]).cmp(&compensated.get(&files[a])));
        }
        CompactionPri::OldestLargestSeqFirst => {
            order.sort_by_key(|&i| files[i].largest_seqno);
        }
        CompactionPri::OldestSmallestSeqFirst => {
            order.sort_by_key(|&i| files[i].smallest_seqno);
        }
        CompactionPri::MinOverlappingRatio => {
            let num_non_empty = version.bottommost_level().map_or(0, |l| l + 1);
            let booster = TtlBooster::new(now, ttl, num_non_empty, level);
            let next = if level + 1 < version.num_levels() {
                version.files(level + 1)
            } else {
                &[]
            };
            let mut next_i = 0;
            let mut ratio = vec![0u64; files.len()];
            for (i, f) in files.iter().enumerate() {
                let mut overlap = 0u64;
                while next_i < next.len()
                    && cmp
                        .compare(next[next_i].largest.encoded(), f.smallest.encoded())
                        .is_lt()
                {
                    next_i += 1;
                }
                while next_i < next.len()
                    && cmp
                        .compare(next[next_i].smallest.encoded(), f.largest.encoded())
                        .is_lt()
                {
                    overlap += next[next_i].size;
                    if cmp
                        .compare(next[next_i].largest.encoded(), f.largest.encoded())
                        .is_gt()
                    {
                        break;
                    }
                    next_i += 1;
                }
                let size = compensated.get(f).max(1);
                ratio[i] = (overlap.saturating_mul(1024) / size) / booster.boost(f);
            }
            order.sort_by(|&a, &b| {
                let (fa, fb) = (&files[a], &files[b]);
                let (ma, mb) = (marked.contains(&fa.number), marked.contains(&fb.number));
                mb.cmp(&ma)
                    .then(ratio[a].cmp(&ratio[b]))
                    .then_with(|| cmp.compare(fa.smallest.encoded(), fb.smallest.encoded()))
            });
        }
        CompactionPri::RoundRobin => {
            if level == 0 {
                order.sort_by_key(|&i| files[i].smallest_seqno);
            } else if let Some(cursor) = version.compact_cursor(level)
                && files.len() > 1
            {
                let at = files.partition_point(|f| {
                    cmp.compare(cursor.encoded(), f.smallest.encoded()) == Ordering::Greater
                });
                if at > 0 && at < files.len() {
                    order.rotate_left(at);
                }
            }
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_boost_grows_with_age() {
        // ttl 3200 s, 5 non-empty levels, level 2: all_start 1600,
        // all_range 3100 - 1600 = 1500, range 1500 >> 2 = 375, start 1975,
        // step 23.
        let b = TtlBooster::new(10_000, 3200, 5, 2);
        let mut f = FileMetadata::new(
            1,
            1,
            lithify_base::InternalKey::from_text("a#1,SET").unwrap(),
            lithify_base::InternalKey::from_text("b#1,SET").unwrap(),
        );
        f.oldest_ancestor_time = 10_000 - 1975;
        assert_eq!(b.boost(&f), 1);
        f.oldest_ancestor_time = 10_000 - 1975 - 46;
        assert_eq!(b.boost(&f), 3);
        assert_eq!(TtlBooster::new(10_000, 3200, 5, 4).boost(&f), 1);
        assert_eq!(TtlBooster::new(10_000, 0, 5, 2).boost(&f), 1);
    }
}
