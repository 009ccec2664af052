//! The simulated LSM: real versions and pickers, file contents as key sets.
//!
//! An L0 file holds a sorted list of key ids (tombstones flagged); each
//! level L1+ keeps two bitmaps, its keys and which of them are
//! tombstones, and its files are ranges of them. Running a compaction or
//! a flush plan merges the inputs newest first (the memtable, L0 in its
//! order, then deeper levels), so a key takes its newest operation; at the
//! bottom tombstones vanish. Outputs are cut by the job's
//! [`OutputCutter`], boundaries included, and sized by the [`SizeModel`].

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use lithify_base::{InternalKey, ValueKind};
use lithify_version::{
    DEFAULT_TABLE, FileMetadata, Version, VersionEdit, VersionSet, VersionSetOptions,
};
use lithify_vfs::MemFs;
use snafu::ResultExt as _;

use super::SimCounts;
use super::bitmap::{Bitmap, LevelBits, MemKeys, TOMB};
use super::blobs::SimBlobs;
use super::size_model::SizeModel;
use crate::error::{InvalidArgumentSnafu, Result, VersionSnafu};
use lithify_compaction::job::{CutLimits, Grandparent, OutputCutter};
use lithify_compaction::{
    Compaction, CompactionPicker, CompactionStats, CompactionStatsTable, CompactionsInProgress,
    PickContext,
};

/// Where a file's keys are.
#[derive(Debug, Clone)]
enum Contents {
    /// An L0 file's sorted keys (tombstones flagged with [`TOMB`]).
    List(Vec<u32>),
    /// An L1+ file: the keys of its level's bitmaps in `[lo, hi]`.
    Range { lo: u32, hi: u32 },
}

/// The key ids of the bits set in `bits`, word `word` of a bitmap.
fn bits(word: usize, mut bits: u64) -> impl Iterator<Item = u32> {
    std::iter::from_fn(move || {
        (bits != 0).then(|| {
            let b = bits.trailing_zeros();
            bits &= bits - 1;
            (word * 64) as u32 + b
        })
    })
}

pub(crate) fn id_of(key: &InternalKey) -> u32 {
    id_of_user_key(key.user_key())
}

fn id_of_user_key(uk: &[u8]) -> u32 {
    let mut be = [0u8; 8];
    let n = uk.len().min(8);
    be[8 - n..].copy_from_slice(&uk[..n]);
    u64::from_be_bytes(be) as u32
}

/// The user key of id `id` (8 bytes, big-endian, so ids sort as keys).
pub(crate) fn user_key_of(id: u32) -> [u8; 8] {
    (id as u64).to_be_bytes()
}

fn key_of(id: u32, seqno: u64) -> InternalKey {
    InternalKey::new(&user_key_of(id), seqno, ValueKind::Put)
}

/// The simulated table.
pub(crate) struct SimLsm {
    pub(crate) set: VersionSet,
    pub(crate) model: SizeModel,
    levels: Vec<LevelBits>,
    contents: HashMap<u64, Contents>,
    pub(crate) stats: CompactionStatsTable,
    pub(crate) counts: SimCounts,
    running: CompactionsInProgress,
    /// All bytes written by flushes and compactions.
    pub(crate) bytes_written: u64,
    /// The most bytes on disk at once (a job's outputs exist next to its
    /// inputs until it is installed).
    pub(crate) peak_bytes: u64,
    seen: Vec<u64>,
    tomb: Vec<u64>,
    /// Key-value separation: where each entry's value is.
    pub(crate) blobs: Option<SimBlobs>,
}

impl SimLsm {
    pub(crate) fn new(key_ids: u64, num_levels: usize, model: SizeModel) -> Result<Self> {
        let set = VersionSet::create(
            Arc::new(MemFs::new()),
            Path::new("/sim"),
            VersionSetOptions::default()
                .num_levels(num_levels)
                .max_manifest_file_size(16 << 20),
        )
        .context(VersionSnafu)?;
        Ok(SimLsm {
            set,
            model,
            levels: (0..num_levels).map(|_| LevelBits::new(key_ids)).collect(),
            contents: HashMap::new(),
            stats: CompactionStatsTable::new(num_levels),
            counts: SimCounts::default(),
            running: CompactionsInProgress::new(),
            bytes_written: 0,
            peak_bytes: 0,
            seen: Vec::new(),
            tomb: Vec::new(),
            blobs: None,
        })
    }

    pub(crate) fn current(&self) -> Arc<Version> {
        self.set
            .current(DEFAULT_TABLE)
            .expect("the simulator's table exists")
    }

    /// Forgets the statistics (after a load phase).
    pub(crate) fn reset_stats(&mut self) {
        self.stats = CompactionStatsTable::new(self.levels.len());
        self.counts = SimCounts::default();
        self.bytes_written = 0;
        self.peak_bytes = self.current().total_bytes();
        if let Some(b) = &mut self.blobs {
            b.reset_counters();
        }
    }

    fn file(&self, number: u64, ids: (u32, u32), count: u64, seqnos: (u64, u64)) -> FileMetadata {
        let mut f = FileMetadata::new(
            number,
            self.model.file_size(count),
            key_of(ids.0, seqnos.1),
            key_of(ids.1, seqnos.1),
        );
        f.smallest_seqno = seqnos.0;
        f.largest_seqno = seqnos.1;
        f.num_entries = count;
        f
    }

    fn apply(&mut self, edit: VersionEdit, new_bytes: u64) -> Result<()> {
        let before = self.current().total_bytes();
        self.peak_bytes = self.peak_bytes.max(before + new_bytes);
        self.bytes_written += new_bytes;
        self.set.log_and_apply(vec![edit]).context(VersionSnafu)
    }

    /// Flushes the memtable (its operations span `seqnos`, `writes` of
    /// them): by the picker's flush plan, or as one L0 file.
    pub(crate) fn flush(
        &mut self,
        picker: &dyn CompactionPicker,
        mem: &mut MemKeys,
        seqnos: (u64, u64),
        writes: u64,
    ) -> Result<()> {
        let Some((lo, hi)) = mem.range() else {
            return Ok(());
        };
        let version = self.current();
        let plan = picker.pick_flush(
            &version,
            &PickContext::new(&self.running),
            &user_key_of(lo),
            &user_key_of(hi),
        );
        let entries = mem.drain_sorted();
        self.counts.flushes += 1;
        if let Some(c) = plan {
            self.counts.flush_plans += 1;
            return self.execute(&c, Some((&entries, seqnos, writes)));
        }
        let number = self.set.new_file_number();
        let meta = self.file(number, (lo, hi), entries.len() as u64, seqnos);
        self.stats.record_flush(&CompactionStats {
            bytes_written: meta.size,
            num_output_files: 1,
            num_input_records: writes,
            num_dropped_records: writes - entries.len() as u64,
            num_output_records: entries.len() as u64,
            count: 1,
            ..CompactionStats::default()
        });
        let size = meta.size;
        let mut edit = VersionEdit::new(DEFAULT_TABLE);
        edit.add_file(0, meta);
        if let Some(b) = &mut self.blobs {
            b.flush_to_l0(number, &entries, TOMB);
        }
        self.contents.insert(number, Contents::List(entries));
        self.apply(edit, size)
    }

    /// Runs automatic compactions until the picker finds none (one at a
    /// time, infinitely fast).
    pub(crate) fn compact_until_idle(&mut self, picker: &dyn CompactionPicker) -> Result<()> {
        for _ in 0..1_000_000 {
            let version = self.current();
            let Some(c) = picker.pick_auto(&version, &PickContext::new(&self.running)) else {
                return Ok(());
            };
            self.execute(&c, None)?;
        }
        InvalidArgumentSnafu {
            message: "the picker kept finding work after a million compactions".to_owned(),
        }
        .fail()
    }

    fn trivial_move(&mut self, c: &Compaction) -> Result<()> {
        let mut edit = c.input_deletion_edit();
        for (level, f) in c.input_files() {
            let (lo, hi) = (id_of(&f.smallest), id_of(&f.largest));
            match self.contents.remove(&f.number) {
                Some(Contents::List(ids)) => {
                    if let Some(b) = &mut self.blobs {
                        b.move_l0(f.number, &ids, TOMB, c.output_level);
                    }
                    let out = &mut self.levels[c.output_level];
                    for e in ids {
                        out.keys.set(e & !TOMB);
                        if e & TOMB != 0 {
                            out.tombs.set(e & !TOMB);
                        }
                    }
                }
                Some(Contents::Range { .. }) => {
                    for (w, m) in Bitmap::range_masks(lo, hi) {
                        let (k, t) = {
                            let src = &mut self.levels[level];
                            let k = src.keys.words[w] & m;
                            let t = src.tombs.words[w] & m;
                            src.keys.words[w] &= !m;
                            src.tombs.words[w] &= !m;
                            (k, t)
                        };
                        if let Some(b) = &mut self.blobs {
                            for id in bits(w, k) {
                                b.move_key(level, c.output_level, id);
                            }
                        }
                        let dst = &mut self.levels[c.output_level];
                        dst.keys.words[w] |= k;
                        dst.tombs.words[w] |= t;
                    }
                }
                None => {}
            }
            self.contents.insert(f.number, Contents::Range { lo, hi });
            edit.add_file(c.output_level, (**f).clone());
        }
        self.stats.record_compaction(
            c.output_level,
            &CompactionStats {
                bytes_moved: c.input_bytes(),
                count: 1,
                ..CompactionStats::default()
            },
        );
        self.counts.trivial_moves += 1;
        self.apply(edit, 0)
    }

    /// Merges one input into the scratch sets: keys not seen in a newer
    /// input take this one's operation.
    fn absorb(&mut self, level: usize, f: &FileMetadata, base: usize) {
        match self.contents.remove(&f.number) {
            Some(Contents::List(ids)) => {
                for (i, e) in ids.into_iter().enumerate() {
                    let id = e & !TOMB;
                    let (w, bit) = (id as usize / 64 - base, 1u64 << (id % 64));
                    let fresh = self.seen[w] & bit == 0;
                    if fresh {
                        self.seen[w] |= bit;
                        if e & TOMB != 0 {
                            self.tomb[w] |= bit;
                        }
                    }
                    if let Some(b) = &mut self.blobs {
                        b.merge_l0(f.number, i, id as usize - base * 64, fresh);
                    }
                }
                if let Some(b) = &mut self.blobs {
                    b.forget_l0(f.number);
                }
            }
            Some(Contents::Range { lo, hi }) => {
                let src = &mut self.levels[level];
                for (w, m) in Bitmap::range_masks(lo, hi) {
                    let k = src.keys.words[w] & m;
                    let t = src.tombs.words[w] & m;
                    src.keys.words[w] &= !m;
                    src.tombs.words[w] &= !m;
                    let fresh = k & !self.seen[w - base];
                    if let Some(b) = &mut self.blobs {
                        for id in bits(w, k) {
                            let slot = id as usize - base * 64;
                            b.merge_level(level, id, slot, fresh & (1 << (id % 64)) != 0);
                        }
                    }
                    self.seen[w - base] |= k;
                    self.tomb[w - base] |= t & fresh;
                }
            }
            None => {}
        }
    }

    /// Runs compaction (or flush plan) `c`; `mem` is a flush plan's
    /// memtable: its sorted entries, seqnos and number of writes.
    pub(crate) fn execute(
        &mut self,
        c: &Compaction,
        mem: Option<(&[u32], (u64, u64), u64)>,
    ) -> Result<()> {
        if c.trivial_move && mem.is_none() {
            return self.trivial_move(c);
        }
        let mut stats = CompactionStats {
            count: 1,
            ..CompactionStats::default()
        };
        let mut lo = u32::MAX;
        let mut hi = 0u32;
        let mut seq = (u64::MAX, 0u64);
        let mut records_in = 0u64;
        if let Some((entries, s, writes)) = mem {
            if let (Some(a), Some(b)) = (entries.first(), entries.last()) {
                lo = lo.min(a & !TOMB);
                hi = hi.max(b & !TOMB);
            }
            seq = (seq.0.min(s.0), seq.1.max(s.1));
            records_in += writes;
        }
        for (_, f) in c.input_files() {
            lo = lo.min(id_of(&f.smallest));
            hi = hi.max(id_of(&f.largest));
            seq = (seq.0.min(f.smallest_seqno), seq.1.max(f.largest_seqno));
        }
        if lo > hi {
            // Nothing at all (an empty flush plan).
            return Ok(());
        }
        let base = (lo / 64) as usize;
        let words = (hi / 64) as usize - base + 1;
        let mut seen = std::mem::take(&mut self.seen);
        let mut tomb = std::mem::take(&mut self.tomb);
        seen.clear();
        seen.resize(words, 0);
        tomb.clear();
        tomb.resize(words, 0);
        self.seen = seen;
        self.tomb = tomb;
        if let Some(b) = &mut self.blobs {
            b.begin(words);
        }
        if let Some((entries, _, _)) = mem {
            for &e in entries {
                let id = e & !TOMB;
                let (w, bit) = (id as usize / 64 - base, 1u64 << (id % 64));
                self.seen[w] |= bit;
                if e & TOMB != 0 {
                    self.tomb[w] |= bit;
                }
                if let Some(b) = &mut self.blobs {
                    b.merge_new(id as usize - base * 64, e & TOMB != 0);
                }
            }
        }
        // Newest first: L0 in its order, then deeper levels; the output
        // level last, where incremental majors may leave files in place.
        let mut boundaries: Vec<u32> = c
            .output_boundaries
            .iter()
            .map(|k| id_of_user_key(k))
            .collect();
        let mut reused: HashSet<u64> = HashSet::new();
        let mut order: Vec<(usize, Arc<FileMetadata>)> = c
            .input_files()
            .filter(|(l, _)| *l != c.output_level || c.output_level == 0)
            .map(|(l, f)| (l, f.clone()))
            .collect();
        order.sort_by_key(|(l, _)| *l);
        for (level, f) in &order {
            records_in += f.num_entries;
            if *level == c.output_level {
                stats.bytes_read_output_level += f.size;
                stats.num_input_files_output_level += 1;
            } else {
                stats.bytes_read_non_output_levels += f.size;
                stats.num_input_files_non_output_levels += 1;
            }
            self.absorb(*level, f, base);
        }
        if c.output_level > 0 {
            let outs: Vec<Arc<FileMetadata>> = c
                .input_files()
                .filter(|(l, _)| *l == c.output_level)
                .map(|(_, f)| f.clone())
                .collect();
            for f in outs {
                let (a, b) = (id_of(&f.smallest), id_of(&f.largest));
                if c.reuse_untouched_files && !Bitmap::any_in(&self.seen, base, a, b) {
                    reused.insert(f.number);
                    boundaries.push(a);
                    stats.bytes_reused += f.size;
                    continue;
                }
                records_in += f.num_entries;
                stats.bytes_read_output_level += f.size;
                stats.num_input_files_output_level += 1;
                self.absorb(c.output_level, &f, base);
            }
        }
        boundaries.sort_unstable();
        boundaries.dedup();
        if c.bottommost {
            for (s, t) in self.seen.iter_mut().zip(self.tomb.iter_mut()) {
                *s &= !*t;
                *t = 0;
            }
        }
        let mut edit = c.input_deletion_edit();
        edit.deleted_files.retain(|(_, n)| !reused.contains(n));
        let mut new_bytes = 0u64;
        let mut outputs = 0u64;
        let mut records_out = 0u64;
        if c.output_level == 0 {
            let mut lists: Vec<Vec<u32>> = vec![Vec::new()];
            let mut next_boundary = 0;
            for (i, (&w, &t)) in self.seen.iter().zip(self.tomb.iter()).enumerate() {
                let mut w = w;
                while w != 0 {
                    let b = w.trailing_zeros();
                    let id = ((base + i) * 64 + b as usize) as u32;
                    w &= w - 1;
                    let mut crossed = false;
                    while next_boundary < boundaries.len() && id >= boundaries[next_boundary] {
                        next_boundary += 1;
                        crossed = true;
                    }
                    if crossed && lists.last().is_some_and(|l| !l.is_empty()) {
                        lists.push(Vec::new());
                    }
                    let flagged = if t & (1 << b) != 0 { id | TOMB } else { id };
                    lists.last_mut().expect("one list").push(flagged);
                }
            }
            for ids in lists.into_iter().filter(|l| !l.is_empty()) {
                let (a, b) = (ids[0] & !TOMB, ids[ids.len() - 1] & !TOMB);
                let number = self.set.new_file_number();
                let meta = self.file(number, (a, b), ids.len() as u64, seq);
                new_bytes += meta.size;
                records_out += ids.len() as u64;
                outputs += 1;
                edit.add_file(0, meta);
                if let Some(blobs) = &mut self.blobs {
                    blobs.write_l0(number, ids.iter().map(|e| (e & !TOMB) as usize - base * 64));
                }
                self.contents.insert(number, Contents::List(ids));
            }
        } else {
            let ranges = self.cut(c, base, boundaries);
            let out = &mut self.levels[c.output_level];
            for (i, (&w, &t)) in self.seen.iter().zip(self.tomb.iter()).enumerate() {
                out.keys.words[base + i] |= w;
                out.tombs.words[base + i] |= t;
            }
            if let Some(b) = &mut self.blobs {
                for (i, &w) in self.seen.iter().enumerate() {
                    for id in bits(base + i, w) {
                        b.write_level(c.output_level, id, id as usize - base * 64);
                    }
                }
            }
            for (a, b, n) in ranges {
                let number = self.set.new_file_number();
                let meta = self.file(number, (a, b), n, seq);
                new_bytes += meta.size;
                records_out += n;
                outputs += 1;
                edit.add_file(c.output_level, meta);
                self.contents
                    .insert(number, Contents::Range { lo: a, hi: b });
            }
        }
        stats.bytes_written = new_bytes;
        stats.num_output_files = outputs;
        stats.num_input_records = records_in;
        stats.num_output_records = records_out;
        stats.num_dropped_records = records_in.saturating_sub(records_out);
        self.stats.record_compaction(c.output_level, &stats);
        if mem.is_none() {
            *self.counts.compactions.entry(c.reason.name()).or_insert(0) += 1;
        }
        self.counts.bytes_reused += stats.bytes_reused;
        self.apply(edit, new_bytes)
    }

    /// The output files of the merged keys: `(first, last, entries)`.
    fn cut(&self, c: &Compaction, base: usize, boundaries: Vec<u32>) -> Vec<(u32, u32, u64)> {
        let grandparents = c
            .grandparents
            .iter()
            .map(|g| Grandparent {
                smallest: id_of(&g.smallest),
                largest: id_of(&g.largest),
                largest_is_sentinel: false,
                size: g.size,
            })
            .collect();
        let mut cutter = OutputCutter::new(
            grandparents,
            CutLimits {
                target_file_size: c.target_output_file_size,
                max_file_size: c.max_output_file_size,
                max_compaction_bytes: c.max_compaction_bytes,
                dynamic_file_size: c.dynamic_file_size,
                never_split: false,
            },
        )
        .with_split_key(c.output_split_key.as_ref().map(id_of))
        .with_boundaries(boundaries);
        let per_entry = self.model.per_entry;
        let mut outputs = Vec::new();
        let mut open: Option<(u32, u32, u64)> = None;
        let cmp = |a: &u32, b: &u32| a.cmp(b);
        let max_entries = (c.max_output_file_size as f64 / per_entry).ceil() as u64;
        for (i, &w) in self.seen.iter().enumerate() {
            if w == 0 {
                continue;
            }
            // Bulk path: a whole word of keys that crosses no grandparent
            // or boundary and cannot reach the maximum size.
            if let Some((_, last, n)) = &mut open {
                let pop = w.count_ones() as u64;
                let top = ((base + i) * 64 + 63 - w.leading_zeros() as usize) as u32;
                if *n + pop < max_entries && cutter.is_quiet_through(&top, cmp) {
                    *n += pop;
                    *last = top;
                    continue;
                }
            }
            let mut w = w;
            while w != 0 {
                let id = ((base + i) * 64 + w.trailing_zeros() as usize) as u32;
                w &= w - 1;
                let size = open.map_or(0, |(_, _, n)| (n as f64 * per_entry) as u64);
                if cutter.should_stop_before(&id, size, open.is_some(), cmp) {
                    outputs.extend(open.take());
                    cutter.file_started(&id, cmp);
                }
                match &mut open {
                    Some((_, last, n)) => {
                        *last = id;
                        *n += 1;
                    }
                    None => open = Some((id, id, 1)),
                }
            }
        }
        outputs.extend(open.take());
        outputs
    }

    /// Tables a range scan from `id` opens: every L0 file whose range
    /// reaches `id` or beyond, and on each deeper level the file holding
    /// `id` or the next one (a scan merges all of them).
    pub(crate) fn scan_probe(&self, id: u32) -> u32 {
        let v = self.current();
        let l0 = v
            .files(0)
            .iter()
            .filter(|f| id_of(&f.largest) >= id)
            .count() as u32;
        let deeper = (1..v.num_levels())
            .filter(|&level| {
                let files = v.files(level);
                files.partition_point(|f| id_of(&f.largest) < id) < files.len()
            })
            .count() as u32;
        l0 + deeper
    }

    /// Tables a point read of `id` consults below the memtable: every L0
    /// file whose range holds it, newest first, then one file per level,
    /// stopping at the first that holds the key (bloom filters aside).
    pub(crate) fn probe(&self, id: u32) -> u32 {
        let v = self.current();
        let mut probes = 0;
        for f in v.files(0) {
            if id < id_of(&f.smallest) || id > id_of(&f.largest) {
                continue;
            }
            probes += 1;
            if let Some(Contents::List(ids)) = self.contents.get(&f.number)
                && ids.binary_search_by(|e| (e & !TOMB).cmp(&id)).is_ok()
            {
                return probes;
            }
        }
        for level in 1..v.num_levels() {
            let files = v.files(level);
            let i = files.partition_point(|f| id_of(&f.largest) < id);
            if files.get(i).is_some_and(|f| id_of(&f.smallest) <= id) {
                probes += 1;
                if self.levels[level].keys.get(id) {
                    return probes;
                }
            }
        }
        probes
    }

    /// Entries that are not tombstones, over all files.
    #[cfg(test)]
    pub(crate) fn values_held(&self) -> u64 {
        let levels: u64 = self.levels[1..]
            .iter()
            .map(|l| {
                l.keys
                    .words
                    .iter()
                    .zip(&l.tombs.words)
                    .map(|(k, t)| (k & !t).count_ones() as u64)
                    .sum::<u64>()
            })
            .sum();
        let l0: u64 = self
            .contents
            .values()
            .map(|c| match c {
                Contents::List(ids) => ids.iter().filter(|&&e| e & TOMB == 0).count() as u64,
                Contents::Range { .. } => 0,
            })
            .sum();
        levels + l0
    }

    /// Keys held anywhere, tombstones included.
    pub(crate) fn distinct_entries(&self, key_ids: u64) -> u64 {
        let mut all = Bitmap::new(key_ids);
        for level in &self.levels {
            for (a, w) in all.words.iter_mut().zip(&level.keys.words) {
                *a |= w;
            }
        }
        for c in self.contents.values() {
            if let Contents::List(ids) = c {
                for &e in ids {
                    all.set(e & !TOMB);
                }
            }
        }
        all.count()
    }
}
