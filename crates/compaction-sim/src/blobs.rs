//! Key-value separation in the simulated table: which blob file holds the
//! value of each entry, what each blob file holds and how much of it is
//! garbage, and the relocations of garbage collection.
//!
//! The engine's rules, on key ids instead of records:
//!
//! * a flush writes the values of its entries (not its tombstones) to a
//!   new blob file;
//! * an entry a compaction drops (a newer version shadows it, or it is
//!   a tombstone's older value at the bottom) turns its value into garbage
//!   of its blob file; a blob file whose values are all garbage is
//!   deleted;
//! * with garbage collection on, an entry a compaction writes whose blob
//!   file is below [`relocate_below`] (the oldest `age_cutoff` of the blob
//!   files, by number) has its value copied to the compaction's own blob
//!   file, and the old copy becomes garbage.
//!
//! Blob files are cut at the blob file size, as the engine's writers are.

use std::collections::{BTreeMap, HashMap};

use lithify_compaction::relocate_below;

/// No blob: a tombstone, or no entry.
pub(crate) const NO_BLOB: u32 = u32::MAX;

/// A blob file's values: all it holds, and those still referenced.
#[derive(Debug, Clone, Copy)]
struct BlobCounts {
    values: u64,
    live: u64,
}

/// Key-value separation settings of a simulation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimBlobOptions {
    /// The oldest share of blob files compactions relocate values from
    /// (`blob_garbage_collection_age_cutoff`); `None`: garbage collection
    /// off.
    pub age_cutoff: Option<f64>,
    /// A blob file is closed at this size (`blob_file_size`).
    pub blob_file_size: u64,
}

impl Default for SimBlobOptions {
    /// Garbage collection on at RocksDB's cutoff (0.25), 256 MiB files.
    fn default() -> Self {
        SimBlobOptions {
            age_cutoff: Some(0.25),
            blob_file_size: 256 << 20,
        }
    }
}

/// The blob files of the simulated table and every entry's reference.
pub(crate) struct SimBlobs {
    options: SimBlobOptions,
    /// Bytes of one value's record in a blob file.
    record_bytes: u64,
    /// Per level (L1 and deeper), the blob file of each key's entry.
    levels: Vec<Vec<u32>>,
    /// Per L0 file, the blob file of each of its entries, in its order.
    l0: HashMap<u64, Vec<u32>>,
    files: BTreeMap<u32, BlobCounts>,
    next_file: u32,
    /// The blob file a flush or compaction is writing, and its values.
    writing: Option<(u32, u64)>,
    /// During a compaction: the blob file of each merged key (indexed
    /// from the compaction's first word), and the relocation cutoff.
    merged: Vec<u32>,
    relocate_below: u32,
    /// Bytes written to blob files (flushes and relocations).
    pub(crate) written_bytes: u64,
    /// Of those, bytes relocated by garbage collection.
    pub(crate) relocated_bytes: u64,
}

impl SimBlobs {
    pub(crate) fn new(
        options: SimBlobOptions,
        record_bytes: u64,
        key_ids: u64,
        num_levels: usize,
    ) -> Self {
        SimBlobs {
            options,
            record_bytes,
            levels: (0..num_levels)
                .map(|l| {
                    if l == 0 {
                        Vec::new()
                    } else {
                        vec![NO_BLOB; key_ids as usize]
                    }
                })
                .collect(),
            l0: HashMap::new(),
            files: BTreeMap::new(),
            next_file: 1,
            writing: None,
            merged: Vec::new(),
            relocate_below: 0,
            written_bytes: 0,
            relocated_bytes: 0,
        }
    }

    /// Forgets the byte counters (after a load phase).
    pub(crate) fn reset_counters(&mut self) {
        self.written_bytes = 0;
        self.relocated_bytes = 0;
    }

    /// Writes one value to the open blob file (opening one as needed) and
    /// returns its number.
    fn write_value(&mut self) -> u32 {
        let per_file = (self.options.blob_file_size / self.record_bytes.max(1)).max(1);
        let file = match self.writing {
            Some((file, n)) if n < per_file => {
                self.writing = Some((file, n + 1));
                file
            }
            _ => {
                let file = self.next_file;
                self.next_file += 1;
                self.writing = Some((file, 1));
                file
            }
        };
        let counts = self
            .files
            .entry(file)
            .or_insert(BlobCounts { values: 0, live: 0 });
        counts.values += 1;
        counts.live += 1;
        self.written_bytes += self.record_bytes;
        file
    }

    /// The value in `file` is garbage now.
    fn drop_value(&mut self, file: u32) {
        if file == NO_BLOB {
            return;
        }
        if let Some(c) = self.files.get_mut(&file) {
            c.live = c.live.saturating_sub(1);
            if c.live == 0 {
                self.files.remove(&file);
            }
        }
    }

    /// A flush of `entries` (sorted key ids, tombstones flagged with
    /// `tomb`) to L0 file `number`: their values go to new blob files.
    pub(crate) fn flush_to_l0(&mut self, number: u64, entries: &[u32], tomb: u32) {
        self.writing = None;
        let blobs = entries
            .iter()
            .map(|&e| {
                if e & tomb != 0 {
                    NO_BLOB
                } else {
                    self.write_value()
                }
            })
            .collect();
        self.writing = None;
        self.l0.insert(number, blobs);
    }

    /// Starts a compaction (or a flush merged into files) over `words`
    /// words of key ids.
    pub(crate) fn begin(&mut self, words: usize) {
        self.writing = None;
        self.merged.clear();
        self.merged.resize(words * 64, NO_BLOB);
        self.relocate_below = match self.options.age_cutoff {
            Some(cutoff) => {
                let numbers: Vec<u64> = self.files.keys().map(|&f| u64::from(f)).collect();
                relocate_below(&numbers, cutoff).min(u64::from(NO_BLOB)) as u32
            }
            None => 0,
        };
    }

    /// A memtable entry merged at `slot` (its key id less the
    /// compaction's first id): a new value, written as a flush writes it.
    pub(crate) fn merge_new(&mut self, slot: usize, tombstone: bool) {
        self.merged[slot] = if tombstone {
            NO_BLOB
        } else {
            self.write_value()
        };
    }

    /// Entry `index` of L0 file `number` merged at `slot`: the newest
    /// version when `fresh`, else shadowed (its value is garbage).
    pub(crate) fn merge_l0(&mut self, number: u64, index: usize, slot: usize, fresh: bool) {
        let file = self
            .l0
            .get(&number)
            .and_then(|b| b.get(index))
            .copied()
            .unwrap_or(NO_BLOB);
        if fresh {
            self.merged[slot] = file;
        } else {
            self.drop_value(file);
        }
    }

    /// The entry of key `id` on `level` merged at `slot`, as
    /// [`merge_l0`](Self::merge_l0).
    pub(crate) fn merge_level(&mut self, level: usize, id: u32, slot: usize, fresh: bool) {
        let file = std::mem::replace(&mut self.levels[level][id as usize], NO_BLOB);
        if fresh {
            self.merged[slot] = file;
        } else {
            self.drop_value(file);
        }
    }

    /// An L0 file a compaction read: its entries are all merged now.
    pub(crate) fn forget_l0(&mut self, number: u64) {
        self.l0.remove(&number);
    }

    /// The blob file of the merged key at `slot` as the compaction writes
    /// it: relocated when it is below the cutoff.
    fn written(&mut self, slot: usize) -> u32 {
        let file = self.merged[slot];
        if file != NO_BLOB && file < self.relocate_below {
            self.drop_value(file);
            self.relocated_bytes += self.record_bytes;
            return self.write_value();
        }
        file
    }

    /// The merged key `id` at `slot` written to `level` (1 and deeper).
    pub(crate) fn write_level(&mut self, level: usize, id: u32, slot: usize) {
        let file = self.written(slot);
        self.levels[level][id as usize] = file;
    }

    /// The merged keys at `slots` written to L0 file `number`, in order.
    pub(crate) fn write_l0(&mut self, number: u64, slots: impl Iterator<Item = usize>) {
        let blobs = slots.map(|slot| self.written(slot)).collect();
        self.l0.insert(number, blobs);
    }

    /// L0 file `number` moved whole to `level`: its keys `ids` keep their
    /// blob files.
    pub(crate) fn move_l0(&mut self, number: u64, ids: &[u32], tomb: u32, level: usize) {
        let blobs = self.l0.remove(&number).unwrap_or_default();
        for (i, &e) in ids.iter().enumerate() {
            self.levels[level][(e & !tomb) as usize] = blobs.get(i).copied().unwrap_or(NO_BLOB);
        }
    }

    /// Key `id` moved from level `from` to level `to` unchanged.
    pub(crate) fn move_key(&mut self, from: usize, to: usize, id: u32) {
        let file = std::mem::replace(&mut self.levels[from][id as usize], NO_BLOB);
        self.levels[to][id as usize] = file;
    }

    /// Blob files on disk.
    pub(crate) fn files(&self) -> usize {
        self.files.len()
    }

    /// Bytes of the blob files on disk.
    pub(crate) fn disk_bytes(&self) -> u64 {
        self.files.values().map(|c| c.values).sum::<u64>() * self.record_bytes
    }

    /// Bytes of the values still referenced.
    #[cfg(test)]
    pub(crate) fn live_bytes(&self) -> u64 {
        self.files.values().map(|c| c.live).sum::<u64>() * self.record_bytes
    }
}

#[cfg(test)]
impl SimBlobs {
    /// Values still referenced, over all blob files.
    pub(crate) fn referenced(&self) -> u64 {
        self.files.values().map(|c| c.live).sum()
    }

    /// Entries of the levels (L1 and deeper) and of the L0 files that
    /// refer to a blob value.
    pub(crate) fn references(&self) -> u64 {
        let levels = self.levels.iter().flatten().filter(|&&b| b != NO_BLOB);
        let l0 = self.l0.values().flatten().filter(|&&b| b != NO_BLOB);
        (levels.count() + l0.count()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOMB: u32 = 1 << 31;

    fn blobs(age_cutoff: Option<f64>) -> SimBlobs {
        SimBlobs::new(
            SimBlobOptions {
                age_cutoff,
                blob_file_size: 1000,
            },
            100,
            64,
            3,
        )
    }

    #[test]
    fn flushes_write_values_and_compactions_count_garbage_and_relocate() {
        let mut b = blobs(Some(0.5));
        // Two flushes of keys 0..8 (the second overwrites 0..4 and
        // deletes 4): 8 + 4 values, files of 10 values.
        b.flush_to_l0(1, &[0, 1, 2, 3, 4, 5, 6, 7], TOMB);
        b.flush_to_l0(2, &[0, 1, 2, 3, 4 | TOMB], TOMB);
        assert_eq!(b.files(), 2);
        assert_eq!(b.written_bytes, 1200);
        // Merge both into L1, newest first: file 2's entries are fresh,
        // file 1's first five are shadowed (garbage). The blob files are
        // 1 (8 values) and 2 (4 values): below the cutoff is file 1.
        b.begin(1);
        for (i, e) in [0u32, 1, 2, 3, 4 | TOMB].iter().enumerate() {
            b.merge_l0(2, i, (e & !TOMB) as usize, true);
        }
        for i in 0..8 {
            b.merge_l0(1, i, i, i >= 5);
        }
        b.forget_l0(1);
        b.forget_l0(2);
        assert_eq!(b.live_bytes(), 700); // 3 left in file 1, 4 in file 2
        // The bottom drops the tombstone (it has no value); 5, 6, 7 are
        // relocated from file 1, which is then all garbage and deleted.
        for id in [0u32, 1, 2, 3, 5, 6, 7] {
            b.write_level(1, id, id as usize);
        }
        assert_eq!(b.relocated_bytes, 300);
        assert_eq!(b.written_bytes, 1500);
        assert_eq!(b.files(), 2); // file 2 and the relocation's file 3
        assert_eq!(b.disk_bytes(), 700);
        assert_eq!(b.live_bytes(), 700);
        assert_eq!(b.levels[1][5], 3);
        assert_eq!(b.levels[1][0], 2);
        // Moved down, the keys keep their files.
        b.move_key(1, 2, 5);
        assert_eq!((b.levels[1][5], b.levels[2][5]), (NO_BLOB, 3));
    }

    #[test]
    fn without_garbage_collection_nothing_is_relocated() {
        let mut b = blobs(None);
        b.flush_to_l0(1, &[0, 1], TOMB);
        b.flush_to_l0(2, &[0], TOMB);
        b.begin(1);
        b.merge_l0(2, 0, 0, true);
        b.merge_l0(1, 0, 0, false);
        b.merge_l0(1, 1, 1, true);
        b.write_level(1, 0, 0);
        b.write_level(1, 1, 1);
        assert_eq!(b.relocated_bytes, 0);
        // File 1 keeps its garbage: one value of two.
        assert_eq!((b.disk_bytes(), b.live_bytes()), (300, 200));
    }
}
