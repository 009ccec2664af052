//! Where to cut compaction outputs (RocksDB's
//! `CompactionOutputs::ShouldStopBefore`), as pure state over keys so the
//! job (byte keys) and the simulator (integer keys) share it.

use std::cmp::Ordering;

/// A grandparent file as the cutter sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grandparent<K> {
    /// Smallest user key.
    pub smallest: K,
    /// Largest user key.
    pub largest: K,
    /// Whether the largest key is a range-tombstone sentinel (the file holds
    /// nothing at `largest` itself).
    pub largest_is_sentinel: bool,
    /// File size.
    pub size: u64,
}

/// The limits a cutter enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutLimits {
    /// Target output file size.
    pub target_file_size: u64,
    /// Hard cut size.
    pub max_file_size: u64,
    /// Limit on a file's size plus its grandparent overlap.
    pub max_compaction_bytes: u64,
    /// Cut early at grandparent boundaries (skip a large grandparent,
    /// pre-cut from 50 % of the target).
    pub dynamic_file_size: bool,
    /// Never cut (outputs to L0).
    pub never_split: bool,
}

/// Decides, key by key, whether to close the current output file before
/// a key:
///
/// 1. the file reached the maximum size;
/// 2. the key reaches the round-robin split key (once), or one of the
///    boundaries (each once: the files a compaction leaves in place, stripe
///    boundaries);
/// 3. the file starts at or after an input file of the output level that
///    is old enough for TTL (`ttl_cuts`: `[smallest, largest]` ranges):
///    each such file's range gets its own output;
/// 4. when the key crosses a grandparent file boundary: the file plus the
///    grandparent bytes it overlaps would exceed `max_compaction_bytes`;
///    or (dynamic file size) including the key skips a whole grandparent
///    file larger than 1/8 of the target; or the file is already past
///    `50 % + 5 % x boundaries seen` (at most 90 %) of the target.
///
/// Grandparent bookkeeping is updated for every key, with or without an
/// open file.
#[derive(Debug, Clone)]
pub struct OutputCutter<K> {
    grandparents: Vec<Grandparent<K>>,
    limits: CutLimits,
    index: usize,
    in_gap: bool,
    seen_key: bool,
    overlapped_bytes: u64,
    boundaries_switched: u64,
    split_key: Option<K>,
    split_done: bool,
    boundaries: Vec<K>,
    next_boundary: usize,
    ttl_cuts: Vec<(K, K)>,
    ttl_current: Option<usize>,
    ttl_next: usize,
}

impl<K> OutputCutter<K> {
    /// A cutter over `grandparents` (sorted by key).
    pub fn new(grandparents: Vec<Grandparent<K>>, limits: CutLimits) -> Self {
        OutputCutter {
            grandparents,
            limits,
            index: 0,
            in_gap: true,
            seen_key: false,
            overlapped_bytes: 0,
            boundaries_switched: 0,
            split_key: None,
            split_done: false,
            boundaries: Vec::new(),
            next_boundary: 0,
            ttl_cuts: Vec::new(),
            ttl_current: None,
            ttl_next: 0,
        }
    }

    /// Adds a round-robin split key.
    pub fn with_split_key(mut self, key: Option<K>) -> Self {
        self.split_key = key;
        self
    }

    /// Adds boundaries (sorted ascending): a file open before a boundary
    /// is closed before the first key at or after it. Boundaries cut even
    /// when [`CutLimits::never_split`] is set (L0 outputs cut by stripe).
    pub fn with_boundaries(mut self, boundaries: Vec<K>) -> Self {
        self.boundaries = boundaries;
        self
    }

    /// The boundaries given to [`with_boundaries`](Self::with_boundaries).
    pub fn boundaries(&self) -> &[K] {
        &self.boundaries
    }

    /// Passes every boundary at or before `key`; returns whether any was
    /// passed.
    fn pass_boundaries<Q: ?Sized>(&mut self, key: &Q, cmp: &impl Fn(&Q, &K) -> Ordering) -> bool {
        let before = self.next_boundary;
        while let Some(b) = self.boundaries.get(self.next_boundary) {
            if cmp(key, b) == Ordering::Less {
                break;
            }
            self.next_boundary += 1;
        }
        self.next_boundary > before
    }

    /// Adds the TTL cut ranges (sorted `[smallest, largest]` user keys).
    pub fn with_ttl_cuts(mut self, ranges: Vec<(K, K)>) -> Self {
        self.ttl_cuts = ranges;
        self
    }

    /// Grandparent bytes the current file overlaps.
    pub fn overlapped_bytes(&self) -> u64 {
        self.overlapped_bytes
    }

    fn sst_cmp_largest<Q: ?Sized>(
        &self,
        key: &Q,
        i: usize,
        cmp: &impl Fn(&Q, &K) -> Ordering,
    ) -> Ordering {
        let g = &self.grandparents[i];
        match cmp(key, &g.largest) {
            Ordering::Equal if g.largest_is_sentinel => Ordering::Greater,
            o => o,
        }
    }

    fn update_grandparents<Q: ?Sized>(
        &mut self,
        key: &Q,
        cmp: &impl Fn(&Q, &K) -> Ordering,
    ) -> u64 {
        let mut crossed = 0;
        if self.grandparents.is_empty() {
            return 0;
        }
        while self.index < self.grandparents.len() {
            if self.in_gap {
                if cmp(key, &self.grandparents[self.index].smallest) == Ordering::Less {
                    break;
                }
                if self.seen_key {
                    crossed += 1;
                    self.overlapped_bytes += self.grandparents[self.index].size;
                    self.boundaries_switched += 1;
                }
                self.in_gap = false;
            } else {
                let c = self.sst_cmp_largest(key, self.index, cmp);
                let last = self.index + 1 == self.grandparents.len();
                if c == Ordering::Less
                    || (c == Ordering::Equal
                        && (last
                            || cmp(key, &self.grandparents[self.index + 1].smallest)
                                == Ordering::Less))
                {
                    break;
                }
                if self.seen_key {
                    crossed += 1;
                    self.boundaries_switched += 1;
                }
                self.in_gap = true;
                self.index += 1;
            }
        }
        if !self.seen_key && !self.in_gap {
            self.overlapped_bytes = self.key_overlapped_bytes(key, cmp);
        }
        self.seen_key = true;
        crossed
    }

    fn key_overlapped_bytes<Q: ?Sized>(&self, key: &Q, cmp: &impl Fn(&Q, &K) -> Ordering) -> u64 {
        if self.in_gap || self.index >= self.grandparents.len() {
            return 0;
        }
        let mut bytes = self.grandparents[self.index].size;
        let mut i = self.index;
        while i > 0 && self.sst_cmp_largest(key, i - 1, cmp) == Ordering::Equal {
            bytes += self.grandparents[i - 1].size;
            i -= 1;
        }
        bytes
    }

    /// Whether to close the current file (of `current_size` bytes, if
    /// `has_file`) before `key`. Call for every key, in order; `cmp`
    /// compares a key with a stored one (grandparent bound, split key).
    pub fn should_stop_before<Q: ?Sized>(
        &mut self,
        key: &Q,
        current_size: u64,
        has_file: bool,
        cmp: impl Fn(&Q, &K) -> Ordering,
    ) -> bool {
        let previous_overlap = self.overlapped_bytes;
        let crossed = self.update_grandparents(key, &cmp);
        let boundary = self.pass_boundaries(key, &cmp);
        if !has_file {
            return false;
        }
        if boundary {
            return true;
        }
        if self.limits.never_split {
            return false;
        }
        if current_size >= self.limits.max_file_size {
            return true;
        }
        if !self.split_done
            && let Some(split) = &self.split_key
            && cmp(key, split) != Ordering::Less
        {
            self.split_done = true;
            return true;
        }
        if crossed > 0 {
            if self.overlapped_bytes.saturating_add(current_size) > self.limits.max_compaction_bytes
            {
                return true;
            }
            if self.limits.dynamic_file_size {
                let skippable = if self.in_gap { 2 } else { 3 };
                if crossed >= skippable
                    && self.overlapped_bytes - previous_overlap > self.limits.target_file_size / 8
                {
                    return true;
                }
                let step = self.limits.target_file_size.div_ceil(100);
                let pct = 50 + (self.boundaries_switched * 5).min(40);
                if current_size >= step.saturating_mul(pct) {
                    return true;
                }
            }
        }
        self.ttl_should_cut(key, &cmp)
    }

    fn ttl_should_cut<Q: ?Sized>(&mut self, key: &Q, cmp: &impl Fn(&Q, &K) -> Ordering) -> bool {
        if self.ttl_cuts.is_empty() {
            return false;
        }
        if let Some(cur) = self.ttl_current {
            if cmp(key, &self.ttl_cuts[cur].1) == Ordering::Greater {
                self.ttl_next = cur + 1;
                self.ttl_current = None;
                return true;
            }
            return false;
        }
        while self.ttl_next < self.ttl_cuts.len() {
            let (lo, hi) = &self.ttl_cuts[self.ttl_next];
            if cmp(key, lo) == Ordering::Less {
                break;
            }
            if cmp(key, hi) != Ordering::Greater {
                self.ttl_current = Some(self.ttl_next);
                return true;
            }
            self.ttl_next += 1;
        }
        false
    }

    /// Whether feeding any key after the last one fed and up to `key`
    /// would leave the cutter's state unchanged and could only cut for the
    /// maximum size: lets a caller add runs of keys in bulk.
    pub fn is_quiet_through<Q: ?Sized>(&self, key: &Q, cmp: impl Fn(&Q, &K) -> Ordering) -> bool {
        if !self.seen_key {
            return false;
        }
        if let Some(b) = self.boundaries.get(self.next_boundary)
            && cmp(key, b) != Ordering::Less
        {
            return false;
        }
        if !self.split_done
            && let Some(split) = &self.split_key
            && cmp(key, split) != Ordering::Less
        {
            return false;
        }
        if let Some(cur) = self.ttl_current {
            if cmp(key, &self.ttl_cuts[cur].1) == Ordering::Greater {
                return false;
            }
        } else if let Some((lo, _)) = self.ttl_cuts.get(self.ttl_next)
            && cmp(key, lo) != Ordering::Less
        {
            return false;
        }
        match self.grandparents.get(self.index) {
            None => true,
            Some(g) if self.in_gap => cmp(key, &g.smallest) == Ordering::Less,
            Some(g) => cmp(key, &g.largest) == Ordering::Less,
        }
    }

    /// Records that a new file starts at `key` (after a cut).
    pub fn file_started<Q: ?Sized>(&mut self, key: &Q, cmp: impl Fn(&Q, &K) -> Ordering) {
        self.boundaries_switched = 0;
        self.overlapped_bytes = self.key_overlapped_bytes(key, &cmp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gp(lo: u32, hi: u32, size: u64) -> Grandparent<u32> {
        Grandparent {
            smallest: lo,
            largest: hi,
            largest_is_sentinel: false,
            size,
        }
    }

    fn limits(target: u64, max_compaction: u64) -> CutLimits {
        CutLimits {
            target_file_size: target,
            max_file_size: 2 * target,
            max_compaction_bytes: max_compaction,
            dynamic_file_size: true,
            never_split: false,
        }
    }

    /// Feeds keys 0..n of `size` bytes each; returns the first key of each
    /// output file.
    fn cuts(
        cutter: &mut OutputCutter<u32>,
        keys: impl Iterator<Item = u32>,
        size: u64,
    ) -> Vec<u32> {
        let mut starts = Vec::new();
        let mut current = 0u64;
        let mut open = false;
        for k in keys {
            if cutter.should_stop_before(&k, current, open, u32::cmp) {
                open = false;
                cutter.file_started(&k, u32::cmp);
            }
            if !open {
                starts.push(k);
                current = 0;
                open = true;
            }
            current += size;
        }
        starts
    }

    #[test]
    fn cuts_at_max_size_without_grandparents() {
        let mut c = OutputCutter::new(
            Vec::new(),
            CutLimits {
                max_file_size: 100,
                ..limits(100, 10_000)
            },
        );
        assert_eq!(cuts(&mut c, 0..35, 10), [0, 10, 20, 30]);
    }

    #[test]
    fn skips_a_large_grandparent() {
        // Keys 0..10 and 30..40; a 500-byte grandparent [12, 28] lies in
        // the gap between them: crossing it entirely means the output
        // would overlap it for nothing, so the file is cut.
        let mut c = OutputCutter::new(
            vec![gp(0, 9, 10), gp(12, 28, 500), gp(30, 40, 10)],
            limits(1000, 100_000),
        );
        assert_eq!(cuts(&mut c, (0..10).chain(30..40), 1), [0, 30]);
        // A small grandparent in the gap is not worth a cut.
        let mut c = OutputCutter::new(
            vec![gp(0, 9, 10), gp(12, 28, 50), gp(30, 40, 10)],
            limits(1000, 100_000),
        );
        assert_eq!(cuts(&mut c, (0..10).chain(30..40), 1), [0]);
    }

    #[test]
    fn pre_cuts_on_boundaries_and_caps_overlap() {
        // Grandparents every 10 keys: each grandparent boundary crossed
        // (leaving one file, entering the next: two switches) raises the
        // pre-cut threshold by 5 % from 50 % up to 90 % of the 1000-byte
        // target; with 10-byte keys the file reaches 90 % at key 90.
        let gps: Vec<_> = (0..20).map(|i| gp(i * 10, i * 10 + 9, 100)).collect();
        let mut c = OutputCutter::new(gps.clone(), limits(1000, 1_000_000));
        let starts = cuts(&mut c, 0..200, 10);
        assert_eq!(starts, [0, 90, 180]);
        // A tight max_compaction_bytes cuts as soon as overlap + size
        // exceeds it at a boundary.
        let mut c = OutputCutter::new(gps, limits(1000, 350));
        let starts = cuts(&mut c, 0..60, 10);
        assert_eq!(starts, [0, 20, 40]);
    }

    #[test]
    fn never_split_and_split_key() {
        let mut c = OutputCutter::new(
            Vec::new(),
            CutLimits {
                never_split: true,
                max_file_size: 1,
                ..limits(1, 1)
            },
        );
        assert_eq!(cuts(&mut c, 0..10, 10), [0]);
        let mut c = OutputCutter::new(Vec::new(), limits(1000, 100_000)).with_split_key(Some(5));
        assert_eq!(cuts(&mut c, 0..10, 1), [0, 5]);
        let mut c = OutputCutter::new(Vec::new(), limits(1000, 100_000))
            .with_ttl_cuts(vec![(3, 5), (8, 8)]);
        assert_eq!(cuts(&mut c, 0..10, 1), [0, 3, 6, 8, 9]);
    }

    #[test]
    fn boundaries_cut_once_each_even_when_never_splitting() {
        // Keys 0..4 and 10..14 with boundaries at 2, 5 and 7: the boundary
        // at 2 cuts before 2; 5 and 7 both lie in the gap and give one cut
        // before 10.
        let keys = || (0..4).chain(10..14);
        let mut c =
            OutputCutter::new(Vec::new(), limits(1000, 100_000)).with_boundaries(vec![2, 5, 7]);
        assert_eq!(cuts(&mut c, keys(), 1), [0, 2, 10]);
        let mut c = OutputCutter::new(
            Vec::new(),
            CutLimits {
                never_split: true,
                ..limits(1, 1)
            },
        )
        .with_boundaries(vec![2, 5, 7]);
        assert_eq!(cuts(&mut c, keys(), 10), [0, 2, 10]);
        // A boundary before the first key cuts nothing.
        let mut c = OutputCutter::new(Vec::new(), limits(1000, 100_000)).with_boundaries(vec![0]);
        assert_eq!(cuts(&mut c, keys(), 1), [0]);
        // Bulk adding stops at a boundary.
        let mut c =
            OutputCutter::new(vec![gp(0, 100, 10)], limits(1000, 100_000)).with_boundaries(vec![5]);
        c.should_stop_before(&1, 0, false, u32::cmp);
        assert!(c.is_quiet_through(&4, u32::cmp));
        assert!(!c.is_quiet_through(&5, u32::cmp));
    }
}
