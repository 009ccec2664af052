//! [`L0Index`]: which L0 files may hold a user key, found by binary
//! search instead of a walk over every L0 file's key range.
//!
//! A lookup must ask the L0 files whose range holds its key, newest
//! first. Walking all of them costs two comparisons per file, which is
//! nothing under leveled compaction (a handful of L0 files) but grows
//! with the tiered shapes, whose L0 holds tens of tables by design. The
//! index cuts the key space at every L0 file's smallest and largest user
//! key into slots — each cut key itself, and the open gap between two —
//! and lists, per slot, the files covering it in L0 order. A lookup then
//! costs one binary search over the cut keys.

use lithify_base::InternalKeyComparator;

use crate::super_version::FileHandle;

/// Which L0 files cover each slot of the key space.
pub(crate) struct L0Index {
    /// The distinct smallest and largest user keys of the L0 files,
    /// sorted.
    cuts: Vec<Vec<u8>>,
    /// Slot `s` covers `files[starts[s]..starts[s + 1]]`. Slot `2i + 1`
    /// is the key `cuts[i]`; slot `2i` the keys strictly between
    /// `cuts[i - 1]` and `cuts[i]` (before the first, after the last).
    starts: Vec<u32>,
    /// Positions in L0 (its order: newest first).
    files: Vec<u32>,
}

impl L0Index {
    /// Below this many L0 files the walk is as cheap: no index.
    pub(crate) const MIN_FILES: usize = 8;

    /// Above this many L0 files (an L0 left to grow, such as a bulk load
    /// with compactions off) the index, whose size grows with the square
    /// of the files in the worst case, is not built: lookups walk.
    pub(crate) const MAX_FILES: usize = 256;

    /// The index of `l0` (the L0 files in L0 order), or `None` when it
    /// holds fewer than [`MIN_FILES`](Self::MIN_FILES) or more than
    /// [`MAX_FILES`](Self::MAX_FILES).
    pub(crate) fn build(
        icmp: &InternalKeyComparator,
        l0: &[std::sync::Arc<FileHandle>],
    ) -> Option<L0Index> {
        if !(Self::MIN_FILES..=Self::MAX_FILES).contains(&l0.len()) {
            return None;
        }
        let mut cuts: Vec<Vec<u8>> = l0
            .iter()
            .flat_map(|h| {
                [
                    h.meta.smallest_user_key().to_vec(),
                    h.meta.largest_user_key().to_vec(),
                ]
            })
            .collect();
        cuts.sort_by(|a, b| icmp.compare_user(a, b));
        cuts.dedup_by(|a, b| icmp.compare_user(a, b).is_eq());
        let cut_of = |key: &[u8]| cuts.partition_point(|c| icmp.compare_user(c, key).is_lt());
        // Each file covers the slots of its two cut keys and everything
        // between.
        let spans: Vec<(usize, usize)> = l0
            .iter()
            .map(|h| {
                let first = 2 * cut_of(h.meta.smallest_user_key()) + 1;
                let last = 2 * cut_of(h.meta.largest_user_key()) + 1;
                (first, last.max(first))
            })
            .collect();
        let slots = 2 * cuts.len() + 1;
        let mut counts = vec![0u32; slots + 1];
        for &(first, last) in &spans {
            for c in &mut counts[first..=last] {
                *c += 1;
            }
        }
        let mut starts = Vec::with_capacity(slots + 1);
        let mut total = 0u32;
        for c in &counts[..slots] {
            starts.push(total);
            total += c;
        }
        starts.push(total);
        let mut fill: Vec<u32> = starts[..slots].to_vec();
        let mut files = vec![0u32; total as usize];
        // Files in L0 order, so each slot lists them newest first.
        for (pos, &(first, last)) in spans.iter().enumerate() {
            for slot in first..=last {
                files[fill[slot] as usize] = pos as u32;
                fill[slot] += 1;
            }
        }
        Some(L0Index {
            cuts,
            starts,
            files,
        })
    }

    /// Positions in L0 of the files whose key range holds `key`, newest
    /// first.
    pub(crate) fn covering(&self, icmp: &InternalKeyComparator, key: &[u8]) -> &[u32] {
        let i = self
            .cuts
            .partition_point(|c| icmp.compare_user(c, key).is_lt());
        let on_cut = self
            .cuts
            .get(i)
            .is_some_and(|c| icmp.compare_user(c, key).is_eq());
        let slot = 2 * i + usize::from(on_cut);
        &self.files[self.starts[slot] as usize..self.starts[slot + 1] as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lithify_version::Version;

    /// The index against the walk it replaces, on every key around the
    /// files' cuts.
    #[test]
    fn the_index_finds_what_the_walk_finds_in_l0_order() {
        let v = Version::from_text(
            "
L0:
  000020:[c#90,SET-f#95,SET] size=1K
  000019:[a#80,SET-z#85,SET] size=1K
  000018:[g#75,SET-g#70,SET] size=1K
  000017:[b#60,SET-d#65,SET] size=1K
  000016:[m#50,SET-p#55,SET] size=1K
  000015:[d#40,SET-m#45,SET] size=1K
  000014:[x#30,SET-y#35,SET] size=1K
  000013:[c#25,SET-c#20,SET] size=1K
  000012:[e#10,SET-q#15,SET] size=1K
",
        )
        .unwrap();
        let icmp = v.comparator().clone();
        let l0: Vec<std::sync::Arc<FileHandle>> = v
            .files(0)
            .iter()
            .map(|f| std::sync::Arc::new(FileHandle::new(std::sync::Arc::clone(f))))
            .collect();
        let index = L0Index::build(&icmp, &l0).unwrap();
        let keys: Vec<&[u8]> = vec![
            b"", b"0", b"a", b"aa", b"b", b"bb", b"c", b"cc", b"d", b"dd", b"e", b"f", b"ff", b"g",
            b"gg", b"m", b"mm", b"p", b"q", b"qq", b"x", b"y", b"yy", b"z", b"zz",
        ];
        for key in keys {
            let walk: Vec<u32> = l0
                .iter()
                .enumerate()
                .filter(|(_, h)| h.meta.contains_user_key(&icmp, key))
                .map(|(i, _)| i as u32)
                .collect();
            assert_eq!(index.covering(&icmp, key), walk, "{key:?}");
        }
        assert!(L0Index::build(&icmp, &l0[..L0Index::MIN_FILES - 1]).is_none());
        let many: Vec<_> = (0..=L0Index::MAX_FILES)
            .map(|i| l0[i % l0.len()].clone())
            .collect();
        assert!(L0Index::build(&icmp, &many).is_none());
    }
}
