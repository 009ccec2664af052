//! The description of one compaction: what a picker returns and a job runs.

use std::fmt;
use std::sync::Arc;

use crate::stats::exact_size;
use lithify_base::{InternalKey, InternalKeyComparator};
use lithify_sstable::Compression;
use lithify_version::{FileMetadata, TableId, VersionEdit};

/// Why a compaction was picked (RocksDB's `CompactionReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CompactionReason {
    /// L0 has too many files (its score is at least 1), or an intra-L0
    /// compaction to relieve it.
    LevelL0FilesNum,
    /// A level L1+ is above its target size.
    LevelMaxLevelSize,
    /// A file was marked for compaction (e.g. it holds many deletions).
    FilesMarkedForCompaction,
    /// A bottommost file holds sequence numbers or tombstones that no
    /// snapshot needs any more.
    BottommostFiles,
    /// A file's data is older than `ttl`.
    Ttl,
    /// A file's data is older than `ttl`, compacted in round-robin order.
    RoundRobinTtl,
    /// A file is older than `periodic_compaction_seconds`.
    PeriodicCompaction,
    /// `compact_range`.
    ManualCompaction,
    /// `compact_files`.
    CompactFiles,
    /// A `change_level` refit after `compact_range`.
    RefitLevel,
    /// Two-tier strategies: L0 tables merged into fewer L0 tables (a
    /// minor compaction).
    Minor,
    /// Two-tier strategies: L0 (all of it, or one stripe of the key space)
    /// merged into the major level (a major compaction).
    Major,
    /// A strategy switch: every level between L0 and the major level is
    /// merged into the major level so the shape fits the new strategy.
    Reshape,
    /// A flush that merges the frozen memtables with existing files (a
    /// major flush into the major level, or a flush merged with the
    /// previous L0 table).
    Flush,
    /// SSTs that pin the oldest blob file, rewritten so its values are
    /// relocated when the oldest blob files are mostly garbage
    /// ([`forced_blob_gc_files`](crate::forced_blob_gc_files)).
    ForcedBlobGc,
}

impl CompactionReason {
    /// RocksDB's name, e.g. `LevelL0FilesNum`.
    pub fn name(self) -> &'static str {
        match self {
            CompactionReason::LevelL0FilesNum => "LevelL0FilesNum",
            CompactionReason::LevelMaxLevelSize => "LevelMaxLevelSize",
            CompactionReason::FilesMarkedForCompaction => "FilesMarkedForCompaction",
            CompactionReason::BottommostFiles => "BottommostFiles",
            CompactionReason::Ttl => "Ttl",
            CompactionReason::RoundRobinTtl => "RoundRobinTtl",
            CompactionReason::PeriodicCompaction => "PeriodicCompaction",
            CompactionReason::ManualCompaction => "ManualCompaction",
            CompactionReason::CompactFiles => "CompactFiles",
            CompactionReason::RefitLevel => "RefitLevel",
            CompactionReason::Minor => "Minor",
            CompactionReason::Major => "Major",
            CompactionReason::Reshape => "Reshape",
            CompactionReason::Flush => "Flush",
            CompactionReason::ForcedBlobGc => "ForcedBlobGC",
        }
    }
}

/// The input files of one level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionInputs {
    /// The level.
    pub level: usize,
    /// Its files, in level order (L0 newest first; L1+ by key).
    pub files: Vec<Arc<FileMetadata>>,
}

impl CompactionInputs {
    /// Total size of the files.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }
}

/// One compaction: input files per level, the output level, and everything
/// the job needs to run it without looking at the version again (so it can
/// run on any thread, or in another process).
///
/// Pickers build it; [`CompactionsInProgress::register`] records it as
/// running; [`run_compaction`](crate::run_compaction) executes it, or
/// [`Compaction::trivial_move_edit`] when it is a trivial move.
#[derive(Clone)]
pub struct Compaction {
    /// The table (column family).
    pub table: TableId,
    /// Why it was picked.
    pub reason: CompactionReason,
    /// Input files per level: the start level first, then the output level
    /// when it differs and has overlapping files (`compact_files` and the
    /// two-tier strategies may list more levels). No entry is empty; only
    /// a flush plan ([`CompactionPicker::pick_flush`](crate::CompactionPicker::pick_flush))
    /// may have no input files at all.
    pub inputs: Vec<CompactionInputs>,
    /// Where the outputs go.
    pub output_level: usize,
    /// Files of the first non-empty level below the output level that
    /// overlap the compaction: outputs are cut to limit their overlap.
    pub grandparents: Vec<Arc<FileMetadata>>,
    /// Target size of an output file.
    pub target_output_file_size: u64,
    /// An output file is cut once it reaches this size (twice the target
    /// when grandparents exist and the output is not the bottommost level).
    pub max_output_file_size: u64,
    /// Limit on an output file's size plus its grandparent overlap.
    pub max_compaction_bytes: u64,
    /// Compression of the outputs.
    pub compression: Compression,
    /// The start level's score when picked (0 for manual compactions).
    pub score: f64,
    /// Whether this is a manual compaction (`compact_range`,
    /// `compact_files`).
    pub manual: bool,
    /// Whether nothing below the output level (and no older L0 file, for
    /// an intra-L0 compaction) overlaps the compaction's key range: deletes
    /// can then be dropped and sequence numbers zeroed.
    pub bottommost: bool,
    /// Whether the job is a metadata-only move of the input files to the
    /// output level ([`Compaction::trivial_move_edit`]).
    pub trivial_move: bool,
    /// Parallel key-range pieces the job may split into.
    pub max_subcompactions: usize,
    /// Cut outputs early at grandparent boundaries (RocksDB's
    /// `level_compaction_dynamic_file_size`).
    pub dynamic_file_size: bool,
    /// For each level below the output level, its files overlapping the
    /// compaction's key range: what "may this key exist below?" asks.
    pub deeper_files: Vec<Vec<Arc<FileMetadata>>>,
    /// Round robin: the start level's new compaction cursor, recorded in the
    /// edit.
    pub new_compact_cursor: Option<(usize, InternalKey)>,
    /// Round robin: outputs are cut before this key (the output level's own
    /// cursor, when it falls inside the compaction).
    pub output_split_key: Option<InternalKey>,
    /// Output-level inputs whose data is older than half the TTL: each gets
    /// output files of its own, so old data moves on together
    /// (`kMinOverlappingRatio` with a TTL, not bottommost).
    pub ttl_cut_files: Vec<Arc<FileMetadata>>,
    /// Outputs are cut before the first key at or after each of these user
    /// keys (sorted ascending): the smallest keys of output-level files the
    /// compaction leaves in place between its inputs, and stripe
    /// boundaries. With boundaries an L0 output is cut at them (and only
    /// at them).
    pub output_boundaries: Vec<Vec<u8>>,
    /// Incremental major compaction: before merging, the job checks every
    /// output-level input file for new data (a key or range tombstone of
    /// the other inputs within its range); files without any stay where
    /// they are, unread and unrewritten, and outputs are cut around them.
    pub reuse_untouched_files: bool,
    /// A flush plan's memtable range: the smallest and largest user keys
    /// of the memtables the flush merges with its input files (part of the
    /// output range, so it counts in [`Compaction::user_key_range`]).
    pub memtable_range: Option<(Vec<u8>, Vec<u8>)>,
}

impl Compaction {
    /// The level the inputs start at (the output level for a flush plan
    /// without input files).
    pub fn start_level(&self) -> usize {
        self.inputs.first().map_or(self.output_level, |i| i.level)
    }

    /// Every input file with its level.
    pub fn input_files(&self) -> impl Iterator<Item = (usize, &Arc<FileMetadata>)> {
        self.inputs
            .iter()
            .flat_map(|i| i.files.iter().map(move |f| (i.level, f)))
    }

    /// Number of input files.
    pub fn num_input_files(&self) -> usize {
        self.inputs.iter().map(|i| i.files.len()).sum()
    }

    /// Total size of the input files.
    pub fn input_bytes(&self) -> u64 {
        self.inputs.iter().map(CompactionInputs::bytes).sum()
    }

    /// The smallest and largest user keys of all inputs (and of the
    /// memtables of a flush plan).
    pub fn user_key_range(&self, cmp: &InternalKeyComparator) -> (Vec<u8>, Vec<u8>) {
        let mut lo: Option<&[u8]> = None;
        let mut hi: Option<&[u8]> = None;
        if let Some((a, b)) = &self.memtable_range {
            lo = Some(a);
            hi = Some(b);
        }
        for (_, f) in self.input_files() {
            if lo.is_none_or(|l| cmp.compare_user(f.smallest_user_key(), l).is_lt()) {
                lo = Some(f.smallest_user_key());
            }
            if hi.is_none_or(|h| cmp.compare_user(f.largest_user_key(), h).is_gt()) {
                hi = Some(f.largest_user_key());
            }
        }
        (
            lo.unwrap_or_default().to_vec(),
            hi.unwrap_or_default().to_vec(),
        )
    }

    /// The edit that deletes every input file (to be completed with the
    /// outputs by the job).
    pub fn input_deletion_edit(&self) -> VersionEdit {
        let mut edit = VersionEdit::new(self.table);
        for (level, f) in self.input_files() {
            edit.delete_file(level, f.number);
        }
        if let Some((level, key)) = &self.new_compact_cursor {
            edit.compact_cursors.push((*level, key.clone()));
        }
        edit
    }

    /// The metadata-only edit of a trivial move: each input file leaves its
    /// level and is added, unchanged, to the output level.
    pub fn trivial_move_edit(&self) -> VersionEdit {
        let mut edit = self.input_deletion_edit();
        for (_, f) in self.input_files() {
            edit.add_file(self.output_level, (**f).clone());
        }
        edit
    }

    /// A cursor answering RocksDB's `KeyNotExistsBeyondOutputLevel` for
    /// ascending user keys.
    pub fn deeper_levels(&self) -> DeeperLevels {
        if self.bottommost {
            DeeperLevels::bottommost()
        } else if self.output_level == 0 {
            DeeperLevels::unknown()
        } else {
            DeeperLevels::files(self.deeper_files.clone())
        }
    }
}

impl fmt::Display for Compaction {
    /// A summary in the style of the picker test data:
    ///
    /// ```text
    /// L0 -> L1 LevelL0FilesNum score=1.25
    ///   L0: 000012 000011
    ///   L1: 000007
    ///   grandparents: 000003
    ///   target=64M max=128M trivial-move bottommost
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "L{} -> L{} {}",
            self.start_level(),
            self.output_level,
            self.reason.name()
        )?;
        if self.score > 0.0 {
            write!(f, " score={:.2}", self.score)?;
        }
        if self.manual {
            write!(f, " manual")?;
        }
        writeln!(f)?;
        let nums = |files: &[Arc<FileMetadata>]| {
            files
                .iter()
                .map(|f| format!("{:06}", f.number))
                .collect::<Vec<_>>()
                .join(" ")
        };
        for input in &self.inputs {
            writeln!(f, "  L{}: {}", input.level, nums(&input.files))?;
        }
        if !self.grandparents.is_empty() {
            writeln!(f, "  grandparents: {}", nums(&self.grandparents))?;
        }
        write!(
            f,
            "  target={} max={}",
            exact_size(self.target_output_file_size),
            exact_size(self.max_output_file_size)
        )?;
        if self.trivial_move {
            write!(f, " trivial-move")?;
        }
        if self.bottommost {
            write!(f, " bottommost")?;
        }
        if let Some((level, key)) = &self.new_compact_cursor {
            write!(f, " cursor=L{level}:{key}")?;
        }
        if self.reuse_untouched_files {
            write!(f, " reuse-untouched")?;
        }
        if let Some((lo, hi)) = &self.memtable_range {
            write!(
                f,
                " memtable=[{}-{}]",
                lithify_base::key::escape(lo),
                lithify_base::key::escape(hi)
            )?;
        }
        if !self.output_boundaries.is_empty() {
            let keys: Vec<String> = self
                .output_boundaries
                .iter()
                .map(|k| lithify_base::key::escape(k))
                .collect();
            write!(f, "\n  boundaries: {}", keys.join(" "))?;
        }
        Ok(())
    }
}

impl fmt::Debug for Compaction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Answers "may `user_key` exist in a level below the output level?"
/// (RocksDB's `KeyNotExistsBeyondOutputLevel`) for keys asked in ascending
/// order, with one cursor per deeper level.
#[derive(Debug, Clone)]
pub struct DeeperLevels {
    knowledge: Knowledge,
    cursors: Vec<usize>,
}

#[derive(Debug, Clone)]
enum Knowledge {
    /// Nothing below the output level overlaps the compaction.
    Bottommost,
    /// The deeper levels' files overlapping the compaction.
    Files(Vec<Vec<Arc<FileMetadata>>>),
    /// Unknown (a flush, an intra-L0 compaction): anything may exist below.
    Unknown,
}

impl DeeperLevels {
    /// Nothing exists below the output level.
    pub fn bottommost() -> Self {
        DeeperLevels {
            knowledge: Knowledge::Bottommost,
            cursors: Vec::new(),
        }
    }

    /// The files of each deeper level (each sorted by key) that overlap
    /// the compaction.
    pub fn files(levels: Vec<Vec<Arc<FileMetadata>>>) -> Self {
        DeeperLevels {
            cursors: vec![0; levels.len()],
            knowledge: Knowledge::Files(levels),
        }
    }

    /// No knowledge of deeper levels: every key may exist below.
    pub fn unknown() -> Self {
        DeeperLevels {
            knowledge: Knowledge::Unknown,
            cursors: Vec::new(),
        }
    }

    /// Whether the output is the bottommost level.
    pub fn is_bottommost(&self) -> bool {
        matches!(self.knowledge, Knowledge::Bottommost)
    }

    /// Whether `user_key` certainly does not exist below the output level.
    /// Keys must be asked in ascending order.
    pub fn key_not_exists_beyond(&mut self, cmp: &InternalKeyComparator, user_key: &[u8]) -> bool {
        let levels = match &self.knowledge {
            Knowledge::Bottommost => return true,
            Knowledge::Unknown => return false,
            Knowledge::Files(levels) => levels,
        };
        for (files, cursor) in levels.iter().zip(&mut self.cursors) {
            while let Some(f) = files.get(*cursor) {
                if cmp.compare_user(user_key, f.largest_user_key()).is_le() {
                    if cmp.compare_user(user_key, f.smallest_user_key()).is_ge() {
                        return false;
                    }
                    break;
                }
                *cursor += 1;
            }
        }
        true
    }
}

/// One running compaction, as the pickers see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningCompaction {
    /// Id given by [`CompactionsInProgress::register`].
    pub id: u64,
    /// Its start level.
    pub start_level: usize,
    /// Its output level.
    pub output_level: usize,
    /// Its input file numbers.
    pub files: Vec<u64>,
    /// Smallest user key of its inputs.
    pub smallest_user_key: Vec<u8>,
    /// Largest user key of its inputs.
    pub largest_user_key: Vec<u8>,
}

/// The compactions currently running on one table: which files are being
/// compacted, whether an L0 compaction runs, and which output ranges are
/// being written. Pickers only read it; the engine registers a compaction
/// when it starts one and unregisters it when it finishes (whatever the
/// outcome).
#[derive(Debug, Clone, Default)]
pub struct CompactionsInProgress {
    running: Vec<RunningCompaction>,
    busy: std::collections::HashSet<u64>,
    next_id: u64,
}

impl CompactionsInProgress {
    /// None running.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records `c` as running; returns its id.
    pub fn register(&mut self, c: &Compaction, cmp: &InternalKeyComparator) -> u64 {
        let (lo, hi) = c.user_key_range(cmp);
        self.register_raw(
            c.start_level(),
            c.output_level,
            c.input_files().map(|(_, f)| f.number).collect(),
            lo,
            hi,
        )
    }

    /// Records a running compaction given by its parts (tests, other
    /// strategies).
    pub fn register_raw(
        &mut self,
        start_level: usize,
        output_level: usize,
        files: Vec<u64>,
        smallest_user_key: Vec<u8>,
        largest_user_key: Vec<u8>,
    ) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.busy.extend(files.iter().copied());
        self.running.push(RunningCompaction {
            id,
            start_level,
            output_level,
            files,
            smallest_user_key,
            largest_user_key,
        });
        id
    }

    /// Forgets the compaction `id`; returns whether it was running.
    pub fn unregister(&mut self, id: u64) -> bool {
        let Some(pos) = self.running.iter().position(|r| r.id == id) else {
            return false;
        };
        let r = self.running.remove(pos);
        for n in r.files {
            self.busy.remove(&n);
        }
        true
    }

    /// Whether file `number` is an input of a running compaction.
    pub fn is_being_compacted(&self, number: u64) -> bool {
        self.busy.contains(&number)
    }

    /// Whether any of `files` is being compacted.
    pub fn any_being_compacted(&self, files: &[Arc<FileMetadata>]) -> bool {
        files.iter().any(|f| self.is_being_compacted(f.number))
    }

    /// Whether a compaction starting at L0 runs (only one may).
    pub fn level0_in_progress(&self) -> bool {
        self.running.iter().any(|r| r.start_level == 0)
    }

    /// Whether a running compaction writing to `output_level` covers user
    /// keys in `[lo, hi]` (RocksDB's `RangeOverlapWithCompaction`).
    pub fn output_range_conflicts(
        &self,
        cmp: &InternalKeyComparator,
        output_level: usize,
        lo: &[u8],
        hi: &[u8],
    ) -> bool {
        self.running.iter().any(|r| {
            r.output_level == output_level
                && cmp.compare_user(lo, &r.largest_user_key).is_le()
                && cmp.compare_user(hi, &r.smallest_user_key).is_ge()
        })
    }

    /// The running compactions.
    pub fn running(&self) -> &[RunningCompaction] {
        &self.running
    }

    /// Whether nothing runs.
    pub fn is_empty(&self) -> bool {
        self.running.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_progress_registry() {
        let cmp = InternalKeyComparator::bytewise();
        let mut ip = CompactionsInProgress::new();
        let id = ip.register_raw(1, 2, vec![7, 8], b"c".to_vec(), b"f".to_vec());
        assert!(ip.is_being_compacted(7));
        assert!(!ip.level0_in_progress());
        assert!(ip.output_range_conflicts(&cmp, 2, b"a", b"c"));
        assert!(!ip.output_range_conflicts(&cmp, 2, b"g", b"h"));
        assert!(!ip.output_range_conflicts(&cmp, 3, b"a", b"z"));
        assert!(ip.unregister(id));
        assert!(!ip.is_being_compacted(7));
        assert!(!ip.unregister(id));
    }
}
