//! The compaction simulator: the real picker driven by synthetic flushes,
//! with file contents tracked as key sets instead of written.
//!
//! Keys are integers in `[0, key_space)`. A flush sorts and deduplicates
//! the memtable's keys (its size is counted per write, as a memtable holds
//! every version) into an L0 file; each level L1+ keeps one bitmap of the
//! keys it holds (its files are disjoint key ranges of it), so a
//! compaction is a union of bitmap ranges and L0 key lists, walked in key
//! order through the same [`OutputCutter`] the job uses. File sizes come
//! from a [`SizeModel`] measured on real tables. Metadata goes through a
//! real [`VersionSet`] on an in-memory file system, so versions, edits and
//! the picker are exactly the engine's.
//!
//! Compactions run to completion after each flush (an infinitely fast
//! compaction thread, one compaction at a time); the final memtable is
//! flushed and compactions drained at the end, like db_bench's
//! `fillrandom` followed by `waitforcompaction`.

mod size_model;
mod workload;

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use lithify_base::{InternalKey, InternalKeyComparator, ValueKind};
use lithify_sstable::TableOptions;
use lithify_version::{
    DEFAULT_TABLE, FileMetadata, Version, VersionEdit, VersionSet, VersionSetOptions,
};
use lithify_vfs::MemFs;
use snafu::ResultExt as _;

pub use size_model::{SizeModel, calibrate, db_bench_key};
pub use workload::{KeyDistribution, KeyGenerator, SplitMix64};

use crate::compaction::{Compaction, CompactionsInProgress};
use crate::error::{InvalidArgumentSnafu, Result, VersionSnafu};
use crate::job::{CutLimits, Grandparent, OutputCutter};
use crate::options::LeveledOptions;
use crate::picker::{CompactionPicker, LeveledPicker, PickContext};
use crate::stats::{CompactionStats, CompactionStatsTable, LevelShape, human_size};

/// What to simulate.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Number of writes.
    pub num_writes: u64,
    /// Number of distinct keys writes are drawn from (db_bench's `--num`).
    pub key_space: u64,
    /// User key size in bytes.
    pub key_size: usize,
    /// Value size in bytes.
    pub value_size: usize,
    /// How keys are drawn.
    pub distribution: KeyDistribution,
    /// Memtable size that triggers a flush (`write_buffer_size`).
    pub write_buffer_size: u64,
    /// Memtable bytes per entry beyond key, trailer and value (skiplist
    /// node header and links).
    pub memtable_entry_overhead: u64,
    /// Table options of the engine (block size, filter, compression).
    pub table_options: TableOptions<InternalKeyComparator>,
    /// Compaction options.
    pub options: LeveledOptions,
    /// Random seed.
    pub seed: u64,
}

impl SimConfig {
    /// db_bench-like defaults: `num_writes` writes over as many keys,
    /// 16-byte keys, 100-byte values, uniform keys, 64 MiB write buffer,
    /// default options.
    pub fn fillrandom(num_writes: u64) -> Self {
        SimConfig {
            num_writes,
            key_space: num_writes,
            key_size: 16,
            value_size: 100,
            distribution: KeyDistribution::Uniform,
            write_buffer_size: 64 << 20,
            memtable_entry_overhead: 32,
            table_options: TableOptions::for_internal_keys(InternalKeyComparator::bytewise()),
            options: LeveledOptions::default(),
            seed: 0x5eed,
        }
    }
}

/// Counts by kind of compaction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimCounts {
    /// Flushes.
    pub flushes: u64,
    /// Compactions that rewrote data, by reason.
    pub compactions: HashMap<&'static str, u64>,
    /// Trivial moves.
    pub trivial_moves: u64,
}

/// The simulator's result.
#[derive(Debug, Clone)]
pub struct SimReport {
    /// The configuration.
    pub config_summary: String,
    /// The final LSM shape.
    pub version: Arc<Version>,
    /// Cumulative stats per level.
    pub stats: CompactionStatsTable,
    /// The final scores per level.
    pub scores: Vec<f64>,
    /// Counts.
    pub counts: SimCounts,
    /// Distinct keys written.
    pub unique_keys: u64,
    /// Bytes the user wrote (`num_writes x (key + value)`).
    pub user_bytes: u64,
    /// Size of the live data compacted into one sorted run.
    pub logical_bytes: u64,
    /// The table size model used.
    pub size_model: SizeModel,
    /// Bytes of one user write (key + value).
    pub key_value_bytes: u64,
    /// Wall time of the simulation.
    pub elapsed_secs: f64,
}

impl SimReport {
    /// All bytes written (flushes and compactions) per byte flushed
    /// (RocksDB's `Sum W-Amp`).
    pub fn write_amplification(&self) -> f64 {
        self.stats.write_amplification()
    }

    /// All bytes written per byte the user wrote (key + value).
    pub fn write_amplification_vs_user(&self) -> f64 {
        self.stats.sum().bytes_written as f64 / self.user_bytes.max(1) as f64
    }

    /// Bytes on disk per byte of live data (one version of each key in one
    /// sorted run).
    pub fn space_amplification(&self) -> f64 {
        self.version.total_bytes() as f64 / self.logical_bytes.max(1) as f64
    }
}

impl fmt::Display for SimReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.config_summary)?;
        writeln!(
            f,
            "size model: {:.1} bytes/entry + {} bytes/file (measured on lithify-sstable tables)",
            self.size_model.per_entry, self.size_model.fixed
        )?;
        writeln!(f)?;
        writeln!(f, "Level  Files        Size    Score")?;
        for level in 0..self.version.num_levels() {
            let n = self.version.num_files(level);
            if n == 0 {
                continue;
            }
            writeln!(
                f,
                "L{level:<5} {n:>5} {:>11} {:>8.2}",
                human_size(self.version.level_bytes(level)),
                self.scores.get(level).copied().unwrap_or(0.0)
            )?;
        }
        writeln!(
            f,
            "total  {:>5} {:>11}",
            self.version.total_files(),
            human_size(self.version.total_bytes())
        )?;
        writeln!(f)?;
        let shapes =
            LevelShape::of_version(&self.version, &CompactionsInProgress::new(), &self.scores);
        write!(f, "{}", self.stats.format("sim", &shapes))?;
        writeln!(f)?;
        let mut reasons: Vec<_> = self.counts.compactions.iter().collect();
        reasons.sort();
        writeln!(
            f,
            "flushes {}, trivial moves {}, compactions {}",
            self.counts.flushes,
            self.counts.trivial_moves,
            reasons
                .iter()
                .map(|(r, n)| format!("{r}={n}"))
                .collect::<Vec<_>>()
                .join(" ")
        )?;
        writeln!(
            f,
            "unique keys {} of {} writes; user data {}, live data {}",
            self.unique_keys,
            self.user_bytes / self.key_value_bytes.max(1),
            human_size(self.user_bytes),
            human_size(self.logical_bytes)
        )?;
        writeln!(
            f,
            "write amplification {:.2} (bytes written / bytes flushed; {:.2} per user byte)",
            self.write_amplification(),
            self.write_amplification_vs_user()
        )?;
        writeln!(
            f,
            "space amplification {:.3} (bytes on disk / live data)",
            self.space_amplification()
        )?;
        write!(f, "simulated in {:.2} s", self.elapsed_secs)
    }
}

/// Where a file's keys are.
#[derive(Debug, Clone)]
enum Contents {
    /// An L0 file's sorted keys.
    List(Vec<u32>),
    /// An L1+ file: the keys of its level's bitmap in `[lo, hi]`.
    Range { lo: u32, hi: u32 },
}

/// One bit per key of the key space.
#[derive(Debug, Clone)]
struct Bitmap {
    words: Vec<u64>,
}

impl Bitmap {
    fn new(bits: u64) -> Self {
        Bitmap {
            words: vec![0; bits.div_ceil(64) as usize],
        }
    }

    fn set(&mut self, i: u32) {
        self.words[(i / 64) as usize] |= 1 << (i % 64);
    }

    /// Masks of words `lo / 64 ..= hi / 64` selecting `[lo, hi]`.
    fn range_masks(lo: u32, hi: u32) -> impl Iterator<Item = (usize, u64)> {
        let (lw, hw) = ((lo / 64) as usize, (hi / 64) as usize);
        (lw..=hw).map(move |w| {
            let mut m = u64::MAX;
            if w == lw {
                m &= u64::MAX << (lo % 64);
            }
            if w == hw {
                m &= u64::MAX >> (63 - hi % 64);
            }
            (w, m)
        })
    }

    /// ORs `[lo, hi]` of `self` into `dst` (indexed from word `base`) and
    /// clears it here; returns the number of keys moved.
    fn take_range(&mut self, lo: u32, hi: u32, dst: &mut [u64], base: usize) -> u64 {
        let mut n = 0;
        for (w, m) in Self::range_masks(lo, hi) {
            let bits = self.words[w] & m;
            n += bits.count_ones() as u64;
            dst[w - base] |= bits;
            self.words[w] &= !m;
        }
        n
    }

    /// ORs `src` (indexed from word `base`) into `self`.
    fn or_from(&mut self, src: &[u64], base: usize) {
        for (i, w) in src.iter().enumerate() {
            self.words[base + i] |= w;
        }
    }
}

/// The distinct keys of the memtable (it holds every version, but a
/// flush keeps only the newest of each key when no snapshot exists).
struct MemKeys {
    bits: Bitmap,
    lo: u32,
    hi: u32,
    any: bool,
    distinct: usize,
}

impl MemKeys {
    fn new(key_space: u64) -> Self {
        MemKeys {
            bits: Bitmap::new(key_space),
            lo: u32::MAX,
            hi: 0,
            any: false,
            distinct: 0,
        }
    }

    fn insert(&mut self, id: u32) {
        let word = &mut self.bits.words[(id / 64) as usize];
        let bit = 1u64 << (id % 64);
        self.distinct += usize::from(*word & bit == 0);
        *word |= bit;
        self.lo = self.lo.min(id);
        self.hi = self.hi.max(id);
        self.any = true;
    }

    fn is_empty(&self) -> bool {
        !self.any
    }

    /// The keys in order; empties the set.
    fn drain_sorted(&mut self) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.distinct);
        if self.any {
            for w in (self.lo / 64) as usize..=(self.hi / 64) as usize {
                let mut bits = std::mem::take(&mut self.bits.words[w]);
                while bits != 0 {
                    out.push((w * 64 + bits.trailing_zeros() as usize) as u32);
                    bits &= bits - 1;
                }
            }
        }
        self.lo = u32::MAX;
        self.hi = 0;
        self.any = false;
        self.distinct = 0;
        out
    }
}

fn id_of(key: &InternalKey) -> u32 {
    let uk = key.user_key();
    let mut be = [0u8; 8];
    let n = uk.len().min(8);
    be[8 - n..].copy_from_slice(&uk[..n]);
    u64::from_be_bytes(be) as u32
}

fn key_of(id: u32, seqno: u64) -> InternalKey {
    InternalKey::new(&(id as u64).to_be_bytes(), seqno, ValueKind::Put)
}

struct Sim {
    config: SimConfig,
    picker: LeveledPicker,
    set: VersionSet,
    model: SizeModel,
    levels: Vec<Bitmap>,
    contents: HashMap<u64, Contents>,
    stats: CompactionStatsTable,
    counts: SimCounts,
    scratch: Vec<u64>,
}

impl Sim {
    fn current(&self) -> Arc<Version> {
        self.set
            .current(DEFAULT_TABLE)
            .expect("the simulator's table exists")
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

    fn flush(&mut self, keys: Vec<u32>, seqnos: (u64, u64)) -> Result<()> {
        // Every write of the memtable is a record in; overwritten versions
        // are dropped by the flush.
        let writes = seqnos.1 + 1 - seqnos.0;
        let (Some(&lo), Some(&hi)) = (keys.first(), keys.last()) else {
            return Ok(());
        };
        let number = self.set.new_file_number();
        let meta = self.file(number, (lo, hi), keys.len() as u64, seqnos);
        let mut edit = VersionEdit::new(DEFAULT_TABLE);
        self.stats.record_flush(&CompactionStats {
            bytes_written: meta.size,
            num_output_files: 1,
            num_input_records: writes,
            num_dropped_records: writes - keys.len() as u64,
            num_output_records: keys.len() as u64,
            count: 1,
            ..CompactionStats::default()
        });
        edit.add_file(0, meta);
        self.contents.insert(number, Contents::List(keys));
        self.set.log_and_apply(vec![edit]).context(VersionSnafu)?;
        self.counts.flushes += 1;
        self.compact_until_idle()
    }

    fn compact_until_idle(&mut self) -> Result<()> {
        let in_progress = CompactionsInProgress::new();
        for _ in 0..1_000_000 {
            let version = self.current();
            let ctx = PickContext::new(&in_progress);
            let Some(c) = self.picker.pick_auto(&version, &ctx) else {
                return Ok(());
            };
            self.run(&c)?;
        }
        InvalidArgumentSnafu {
            message: "the picker kept finding work after a million compactions".to_owned(),
        }
        .fail()
    }

    /// Keys held anywhere (there are no deletes: every key written is).
    fn distinct_keys(&self) -> u64 {
        let mut all = Bitmap::new(self.config.key_space);
        for level in &self.levels {
            all.or_from(&level.words, 0);
        }
        for c in self.contents.values() {
            if let Contents::List(ids) = c {
                for &id in ids {
                    all.set(id);
                }
            }
        }
        all.words.iter().map(|w| w.count_ones() as u64).sum()
    }

    /// Moves an input's keys into `dst`; returns how many.
    fn take_input(&mut self, level: usize, f: &FileMetadata, dst: &mut [u64], base: usize) -> u64 {
        match self.contents.remove(&f.number) {
            Some(Contents::List(ids)) => {
                for &id in &ids {
                    dst[id as usize / 64 - base] |= 1 << (id % 64);
                }
                ids.len() as u64
            }
            Some(Contents::Range { lo, hi }) => self.levels[level].take_range(lo, hi, dst, base),
            None => 0,
        }
    }

    fn run(&mut self, c: &Compaction) -> Result<()> {
        let mut edit = c.input_deletion_edit();
        let mut stats = CompactionStats {
            count: 1,
            ..CompactionStats::default()
        };
        if c.trivial_move {
            for (level, f) in c.input_files() {
                let contents = self.contents.remove(&f.number);
                let (lo, hi) = (id_of(&f.smallest), id_of(&f.largest));
                match contents {
                    Some(Contents::List(ids)) => {
                        for id in ids {
                            self.levels[c.output_level].set(id);
                        }
                    }
                    Some(Contents::Range { .. }) => {
                        let base = (lo / 64) as usize;
                        let mut tmp = vec![0u64; (hi / 64) as usize - base + 1];
                        self.levels[level].take_range(lo, hi, &mut tmp, base);
                        self.levels[c.output_level].or_from(&tmp, base);
                    }
                    None => {}
                }
                self.contents.insert(f.number, Contents::Range { lo, hi });
                edit.add_file(c.output_level, (**f).clone());
            }
            stats.bytes_moved = c.input_bytes();
            self.counts.trivial_moves += 1;
            self.stats.record_compaction(c.output_level, &stats);
            return self.set.log_and_apply(vec![edit]).context(VersionSnafu);
        }

        let mut lo = u32::MAX;
        let mut hi = 0u32;
        let mut seq_lo = u64::MAX;
        let mut seq_hi = 0u64;
        let mut records_in = 0u64;
        for (level, f) in c.input_files() {
            lo = lo.min(id_of(&f.smallest));
            hi = hi.max(id_of(&f.largest));
            seq_lo = seq_lo.min(f.smallest_seqno);
            seq_hi = seq_hi.max(f.largest_seqno);
            records_in += f.num_entries;
            if level == c.output_level {
                stats.bytes_read_output_level += f.size;
                stats.num_input_files_output_level += 1;
            } else {
                stats.bytes_read_non_output_levels += f.size;
                stats.num_input_files_non_output_levels += 1;
            }
        }
        let base = (lo / 64) as usize;
        let words = (hi / 64) as usize - base + 1;
        let mut merged = std::mem::take(&mut self.scratch);
        merged.clear();
        merged.resize(words, 0);
        let inputs: Vec<(usize, Arc<FileMetadata>)> =
            c.input_files().map(|(l, f)| (l, f.clone())).collect();
        for (level, f) in &inputs {
            self.take_input(*level, f, &mut merged, base);
        }

        let mut outputs: Vec<(u32, u32, u64)> = Vec::new();
        if c.output_level == 0 {
            let mut ids = Vec::new();
            for (i, &w) in merged.iter().enumerate() {
                let mut w = w;
                while w != 0 {
                    ids.push(((base + i) * 64 + w.trailing_zeros() as usize) as u32);
                    w &= w - 1;
                }
            }
            if let (Some(&a), Some(&b)) = (ids.first(), ids.last()) {
                let number = self.set.new_file_number();
                let meta = self.file(number, (a, b), ids.len() as u64, (seq_lo, seq_hi));
                stats.bytes_written += meta.size;
                stats.num_output_records += ids.len() as u64;
                edit.add_file(0, meta);
                self.contents.insert(number, Contents::List(ids));
            }
        } else {
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
            .with_split_key(c.output_split_key.as_ref().map(id_of));
            let per_entry = self.model.per_entry;
            let mut open: Option<(u32, u32, u64)> = None;
            let cmp = |a: &u32, b: &u32| a.cmp(b);
            let max_entries = (c.max_output_file_size as f64 / per_entry).ceil() as u64;
            for (i, &w) in merged.iter().enumerate() {
                if w == 0 {
                    continue;
                }
                // Bulk path: a whole word of keys that crosses no
                // grandparent boundary and cannot reach the maximum size.
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
            self.levels[c.output_level].or_from(&merged, base);
            for (a, b, n) in &outputs {
                let number = self.set.new_file_number();
                let meta = self.file(number, (*a, *b), *n, (seq_lo, seq_hi));
                stats.bytes_written += meta.size;
                stats.num_output_records += n;
                edit.add_file(c.output_level, meta);
                self.contents
                    .insert(number, Contents::Range { lo: *a, hi: *b });
            }
        }
        self.scratch = merged;
        stats.num_output_files = edit.new_files.len() as u64;
        stats.num_input_records = records_in;
        stats.num_dropped_records = records_in.saturating_sub(stats.num_output_records);
        self.stats.record_compaction(c.output_level, &stats);
        *self.counts.compactions.entry(c.reason.name()).or_insert(0) += 1;
        self.set.log_and_apply(vec![edit]).context(VersionSnafu)
    }
}

/// Runs the simulation described by `config`.
///
/// ```
/// use lithify_compaction_leveled::sim::{SimConfig, simulate};
///
/// let mut config = SimConfig::fillrandom(200_000);
/// config.write_buffer_size = 1 << 20;
/// config.options.max_bytes_for_level_base = 4 << 20;
/// config.options.target_file_size_base = 1 << 20;
/// let report = simulate(&config).unwrap();
/// assert!(report.write_amplification() > 1.0);
/// assert!(report.space_amplification() >= 1.0);
/// assert!(report.version.num_files(0) < 4);
/// ```
pub fn simulate(config: &SimConfig) -> Result<SimReport> {
    let started = Instant::now();
    if config.key_space == 0 || config.key_space > u32::MAX as u64 {
        return InvalidArgumentSnafu {
            message: format!("key space must be in 1..=2^32-1, not {}", config.key_space),
        }
        .fail();
    }
    let options = config.options.clone().sanitize()?;
    let picker = LeveledPicker::new(options.clone())?;
    let fs = Arc::new(MemFs::new());
    let set = VersionSet::create(
        fs,
        Path::new("/sim"),
        VersionSetOptions {
            num_levels: options.num_levels,
            max_manifest_file_size: 16 << 20,
            ..VersionSetOptions::default()
        },
    )
    .context(VersionSnafu)?;
    let stride = if config.distribution == KeyDistribution::Sequential {
        1
    } else {
        2
    };
    let model = calibrate(
        &config.table_options,
        config.key_size,
        config.value_size,
        stride,
    )?;
    let mut sim = Sim {
        config: config.clone(),
        picker,
        set,
        model,
        levels: (0..options.num_levels)
            .map(|_| Bitmap::new(config.key_space))
            .collect(),
        contents: HashMap::new(),
        stats: CompactionStatsTable::new(options.num_levels),
        counts: SimCounts::default(),
        scratch: Vec::new(),
    };

    let entry_bytes =
        (config.key_size + 8 + config.value_size) as u64 + config.memtable_entry_overhead;
    let mut keys = KeyGenerator::new(config.distribution, config.key_space, config.seed);
    let mut memtable = MemKeys::new(config.key_space);
    let mut mem_bytes = 0u64;
    let mut first_seq = 1u64;
    for seq in 1..=config.num_writes {
        let key = keys.next_key() as u32;
        memtable.insert(key);
        mem_bytes += entry_bytes;
        if mem_bytes >= sim.config.write_buffer_size {
            let keys = memtable.drain_sorted();
            sim.flush(keys, (first_seq, seq))?;
            mem_bytes = 0;
            first_seq = seq + 1;
        }
    }
    if !memtable.is_empty() {
        sim.flush(memtable.drain_sorted(), (first_seq, config.num_writes))?;
    }
    sim.compact_until_idle()?;

    let unique_keys = sim.distinct_keys();
    let version = sim.current();
    let in_progress = CompactionsInProgress::new();
    let scores = sim
        .picker
        .level_scores(&version, &PickContext::new(&in_progress))
        .iter()
        .map(|s| s.score)
        .collect();
    let kv = (config.key_size + config.value_size) as u64;
    Ok(SimReport {
        config_summary: format!(
            "{} writes of {}-byte keys and {}-byte values over {} keys ({}), write_buffer_size {}, max_bytes_for_level_base {}, target_file_size_base {}, dynamic levels {}",
            config.num_writes,
            config.key_size,
            config.value_size,
            config.key_space,
            config.distribution.name(),
            human_size(config.write_buffer_size),
            human_size(options.max_bytes_for_level_base),
            human_size(options.target_file_size_base),
            options.level_compaction_dynamic_level_bytes,
        ),
        version,
        stats: sim.stats,
        scores,
        counts: sim.counts,
        unique_keys,
        user_bytes: config.num_writes * kv,
        logical_bytes: model.file_size(unique_keys),
        size_model: model,
        key_value_bytes: kv,
        elapsed_secs: started.elapsed().as_secs_f64(),
    })
}
