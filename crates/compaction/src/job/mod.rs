//! Running a compaction or a flush: a function of (description, inputs,
//! snapshots, filter, output factory) to (output files, `VersionEdit`,
//! stats), runnable on any thread.

mod cutter;
mod output;
mod subcompaction;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use lithify_base::{InternalIterator, InternalKeyComparator, MergeOperator, MergingIterator};
use lithify_sstable::{SstIter, SstReader};
use lithify_version::{BlobFileMetadata, FileMetadata, VersionEdit};
use snafu::ResultExt as _;

pub use cutter::{CutLimits, Grandparent, OutputCutter};
pub use output::{BlobSettings, FileNumbers, OutputFactory, file_metadata};
use subcompaction::subcompaction_boundaries;

use crate::bounds::is_sentinel;
use crate::compaction::Compaction;
use crate::compaction_pri::CompactionPri;
use crate::error::{CorruptKeySnafu, InputSnafu, IoSnafu, RecordCountSnafu, Result};
use crate::iter::{
    CompactionFilter, CompactionIterOptions, CompactionIterator, IterStats, RangeDelAggregator,
    Snapshots,
};
use crate::stats::CompactionStats;
use lithify_base::keyspan::RangeTombstone;
use output::{OutputWriter, Written};

/// A subcompaction's `[lower, upper)` user keys (`None`: unbounded).
type UserKeyRange = (Option<Vec<u8>>, Option<Vec<u8>>);

/// Opens the input tables of a compaction (the engine's table cache).
pub trait SstOpener: Send + Sync {
    /// The open table of `file`.
    fn open_sst(
        &self,
        file: &FileMetadata,
    ) -> lithify_base::Result<Arc<SstReader<InternalKeyComparator>>>;
}

/// Paces the bytes a compaction writes: the job asks before it writes
/// each stretch of output (the engine's token-bucket rate limiter
/// implements it; flushes are never paced).
pub trait WriteRateLimiter: Send + Sync {
    /// Returns once `bytes` more may be written.
    fn request(&self, bytes: u64);
}

/// Knobs of a job beyond the compaction description.
#[derive(Clone)]
#[non_exhaustive]
pub struct JobOptions {
    /// Check that every input record is read and accounted for (RocksDB's
    /// `compaction_verify_record_count`, default true).
    pub verify_record_count: bool,
    /// Creation time recorded in outputs; `None` reads the system clock.
    pub now: Option<u64>,
    /// The picker's file order (round robin changes subcompaction
    /// planning).
    pub compaction_pri: CompactionPri,
    /// Limits the bytes the job writes per second (compactions; the engine
    /// leaves flushes unlimited so they never hold up writes).
    pub rate_limiter: Option<Arc<dyn WriteRateLimiter>>,
    /// Resolves merge operands (RocksDB's `merge_operator`); without one
    /// they pass through.
    pub merge_operator: Option<Arc<dyn MergeOperator>>,
    /// See [`CompactionIterOptions::enforce_single_delete_contracts`]
    /// (default true).
    pub enforce_single_delete_contracts: bool,
}

lithify_base::options_builder!(JobOptions {
    verify_record_count: bool,
    now: Option<u64>,
    compaction_pri: CompactionPri,
    rate_limiter: Option<Arc<dyn WriteRateLimiter>>,
    merge_operator: Option<Arc<dyn MergeOperator>>,
    enforce_single_delete_contracts: bool,
});

impl std::fmt::Debug for JobOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobOptions")
            .field("verify_record_count", &self.verify_record_count)
            .field("now", &self.now)
            .field("compaction_pri", &self.compaction_pri)
            .field("rate_limited", &self.rate_limiter.is_some())
            .field(
                "merge_operator",
                &self.merge_operator.as_ref().map(|m| m.name().to_owned()),
            )
            .field(
                "enforce_single_delete_contracts",
                &self.enforce_single_delete_contracts,
            )
            .finish()
    }
}

impl Default for JobOptions {
    fn default() -> Self {
        JobOptions {
            verify_record_count: true,
            now: None,
            compaction_pri: CompactionPri::MinOverlappingRatio,
            rate_limiter: None,
            merge_operator: None,
            enforce_single_delete_contracts: true,
        }
    }
}

impl JobOptions {
    fn current_time(&self) -> u64 {
        self.now.unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        })
    }
}

/// What a compaction produced.
#[derive(Debug, Clone)]
pub struct CompactionResult {
    /// The edit to apply: inputs deleted, outputs added at the output level
    /// (and the round-robin cursor). Every output is fsynced and its
    /// directory synced before the result is returned.
    pub edit: VersionEdit,
    /// The output files, in key order.
    pub outputs: Vec<FileMetadata>,
    /// The blob files written (separated or relocated values); the edit
    /// adds them.
    pub blob_files: Vec<BlobFileMetadata>,
    /// Statistics for the "Compaction Stats" table (record them at the
    /// output level).
    pub stats: CompactionStats,
    /// The compaction iterator's counts.
    pub iter_stats: IterStats,
    /// Number of subcompactions run.
    pub subcompactions: usize,
}

/// Runs compaction `c`:
///
/// * a trivial move returns its metadata-only edit without I/O;
/// * otherwise the inputs are opened through `opener` and merged; the
///   key space is split into subcompactions (at most
///   `c.max_subcompactions`, from input anchors) that run in parallel on
///   scoped threads; each applies [`CompactionIterator`] with `snapshots`
///   and `filter`, and writes outputs cut by size and grandparent overlap
///   (never inside one user key's versions; never at all for L0 outputs),
///   each with its share of the range tombstones;
/// * every output is fsynced when finished, then the directory is fsynced;
/// * the record count is verified (every input table entry read, every
///   record read written or dropped);
/// * the edit deletes the inputs and adds the outputs.
///
/// On any error no edit is returned and the job removes the files it
/// created (best effort). Files it could not remove are unreferenced by
/// any version: the engine's obsolete-file scan deletes them, provided it
/// skips file numbers allocated to running jobs (RocksDB's
/// `pending_outputs`). The inputs are never touched.
pub fn run_compaction(
    c: &Compaction,
    opener: &dyn SstOpener,
    snapshots: &Snapshots,
    filter: Option<&dyn CompactionFilter>,
    factory: &OutputFactory<'_>,
    opts: &JobOptions,
) -> Result<CompactionResult> {
    run_job(c, None, opener, snapshots, filter, factory, opts)
}

/// The frozen memtables a flush merges with files
/// ([`run_flush`]): a way to open their merged point entries (called once
/// per subcompaction, on its thread), their range tombstones, and their
/// number of point entries (for the record-count check).
pub struct MemtableInput<'a> {
    /// Opens an iterator over the memtables' point entries (internal keys
    /// in order, newest memtable winning on equal keys, as a
    /// `MergingIterator` over them gives).
    pub open: &'a (dyn Fn() -> Box<dyn InternalIterator + Send + 'a> + Sync),
    /// Their range tombstones.
    pub range_tombstones: Vec<RangeTombstone>,
    /// Number of point entries the iterator yields.
    pub num_entries: u64,
    /// The flush time, recorded as the oldest ancestor time when it is
    /// older than every input file's.
    pub flush_time: u64,
}

/// Runs a flush that merges frozen memtables with existing files, as a
/// flush plan from [`CompactionPicker::pick_flush`](crate::CompactionPicker::pick_flush)
/// describes it: a **major flush** (Memtable + L1: the memtables, every
/// delta file and the major-level files they touch become major-level
/// files; with `reuse_untouched_files` the major-level files that receive
/// nothing stay in place), or a flush **merged with the previous L0
/// table**. Everything else is as in [`run_compaction`]: the same
/// iterator, cutting, subcompactions, syncing, cleanup on error and
/// record-count check (input tables plus `mem.num_entries`). The edit
/// deletes the input files and adds the outputs; the caller adds the log
/// number.
pub fn run_flush(
    c: &Compaction,
    mem: &MemtableInput<'_>,
    opener: &dyn SstOpener,
    snapshots: &Snapshots,
    filter: Option<&dyn CompactionFilter>,
    factory: &OutputFactory<'_>,
    opts: &JobOptions,
) -> Result<CompactionResult> {
    run_job(c, Some(mem), opener, snapshots, filter, factory, opts)
}

fn run_job(
    c: &Compaction,
    mem: Option<&MemtableInput<'_>>,
    opener: &dyn SstOpener,
    snapshots: &Snapshots,
    filter: Option<&dyn CompactionFilter>,
    factory: &OutputFactory<'_>,
    opts: &JobOptions,
) -> Result<CompactionResult> {
    let started = Instant::now();
    let mut stats = CompactionStats {
        count: 1,
        ..CompactionStats::default()
    };
    let reduced;
    let c = if c.reuse_untouched_files && !c.trivial_move {
        let cmp = &factory.sst_options.comparator;
        let (kept, reused) = split_untouched(c, mem, opener, cmp)?;
        stats.bytes_reused = reused;
        reduced = kept;
        &reduced
    } else {
        c
    };
    for (level, f) in c.input_files() {
        if level == c.output_level {
            stats.num_input_files_output_level += 1;
            stats.bytes_read_output_level += f.size;
        } else {
            stats.num_input_files_non_output_levels += 1;
            stats.bytes_read_non_output_levels += f.size;
        }
    }
    if c.trivial_move && mem.is_none() {
        let moved = CompactionStats {
            bytes_moved: c.input_bytes(),
            count: 1,
            micros: started.elapsed().as_micros() as u64,
            ..CompactionStats::default()
        };
        return Ok(CompactionResult {
            edit: c.trivial_move_edit(),
            outputs: c.input_files().map(|(_, f)| (**f).clone()).collect(),
            blob_files: Vec::new(),
            stats: moved,
            iter_stats: IterStats::default(),
            subcompactions: 0,
        });
    }

    let cmp = factory.sst_options.comparator.clone();
    let mut tables = Vec::with_capacity(c.num_input_files());
    let mut tombstones = Vec::new();
    let mut expected_records = mem.map_or(0, |m| m.num_entries);
    let mut oldest_ancestor = match mem {
        Some(m) if m.flush_time != 0 => m.flush_time,
        _ => u64::MAX,
    };
    if let Some(m) = mem {
        tombstones.extend(m.range_tombstones.iter().cloned());
    }
    for (_, f) in c.input_files() {
        let table = opener.open_sst(f).context(InputSnafu)?;
        expected_records += table.properties().num_entries;
        for t in table.range_tombstones() {
            let Some(rt) = RangeTombstone::from_stored(&t.start, &t.end) else {
                return CorruptKeySnafu {
                    key: lithify_base::key::escape(&t.start),
                    origin: format!("range tombstone of table {:06}", f.number),
                }
                .fail();
            };
            tombstones.push(rt);
        }
        if f.oldest_ancestor_time != 0 {
            oldest_ancestor = oldest_ancestor.min(f.oldest_ancestor_time);
        }
        tables.push(table);
    }
    let now = opts.current_time();
    let oldest_ancestor = if oldest_ancestor == u64::MAX {
        now
    } else {
        oldest_ancestor.min(now)
    };
    let range_dels = RangeDelAggregator::new(cmp.clone(), tombstones, snapshots.clone());
    let boundaries = subcompaction_boundaries(c, opts.compaction_pri, &tables, &cmp)?;
    let mut ranges: Vec<UserKeyRange> = Vec::with_capacity(boundaries.len() + 1);
    let mut lower = None;
    for b in boundaries {
        ranges.push((lower, Some(b.clone())));
        lower = Some(b);
    }
    ranges.push((lower, None));

    let mut sst_options = factory.sst_options.clone();
    sst_options.compression = c.compression;
    sst_options.creation_time = Some(now);
    let origin = format!(
        "compaction of {}",
        c.input_files()
            .map(|(l, f)| format!("L{l}:{:06}", f.number))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let job = SubJob {
        c,
        limiter: opts.rate_limiter.as_deref(),
        merge_operator: opts.merge_operator.as_deref(),
        enforce_single_delete_contracts: opts.enforce_single_delete_contracts,
        mem,
        tables: &tables,
        cmp: &cmp,
        range_dels: &range_dels,
        snapshots,
        filter,
        factory,
        sst_options: &sst_options,
        oldest_ancestor,
        origin: &origin,
    };
    let outcomes: Vec<SubOutcome> = if ranges.len() == 1 {
        let (lo, hi) = ranges.pop().expect("one range");
        vec![job.run(lo, hi)]
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = ranges
                .into_iter()
                .map(|(lo, hi)| {
                    let job = &job;
                    scope.spawn(move || job.run(lo, hi))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| match h.join() {
                    Ok(outcome) => outcome,
                    Err(panic) => std::panic::resume_unwind(panic),
                })
                .collect()
        })
    };
    let subcompactions = outcomes.len();
    let mut created: Vec<PathBuf> = Vec::new();
    let mut first_error = None;
    let mut outputs = Vec::new();
    let mut blob_files = Vec::new();
    let mut iter_stats = IterStats::default();
    for o in outcomes {
        created.extend(o.created);
        match o.result {
            Ok((written, s)) => {
                outputs.extend(written.files);
                blob_files.extend(written.blob_files);
                stats.bytes_written += written.bytes;
                stats.bytes_written_blob += written.blob_bytes;
                iter_stats.add(&s);
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    let cleanup = |created: &[PathBuf]| {
        for p in created {
            let _ = factory.fs.remove_file(p);
        }
    };
    if let Some(e) = first_error {
        cleanup(&created);
        return Err(e);
    }
    if let Err(e) = factory.fs.sync_dir(factory.dir) {
        cleanup(&created);
        return Err(e).context(IoSnafu {
            op: "syncing the directory",
            path: factory.dir.to_path_buf(),
        });
    }
    if opts.verify_record_count {
        let check = if iter_stats.records_in != expected_records {
            Some(RecordCountSnafu {
                what: "records read vs input table entries",
                expected: expected_records,
                actual: iter_stats.records_in,
            })
        } else if iter_stats.records_in != iter_stats.records_out + iter_stats.dropped() {
            Some(RecordCountSnafu {
                what: "records read vs records written and dropped",
                expected: iter_stats.records_in,
                actual: iter_stats.records_out + iter_stats.dropped(),
            })
        } else {
            None
        };
        if let Some(err) = check {
            cleanup(&created);
            return err.fail();
        }
    }
    let mut edit = c.input_deletion_edit();
    for f in &outputs {
        edit.add_file(c.output_level, f.clone());
    }
    edit.blob_file_additions.extend(blob_files.iter().cloned());
    stats.num_output_files = outputs.len() as u64;
    stats.num_input_records = iter_stats.records_in;
    stats.num_dropped_records = iter_stats.dropped();
    stats.num_output_records = iter_stats.records_out;
    stats.micros = started.elapsed().as_micros() as u64;
    Ok(CompactionResult {
        edit,
        outputs,
        blob_files,
        stats,
        iter_stats,
        subcompactions,
    })
}

/// One input of the merge: a table, or the memtables of a flush.
// A job holds a handful of these; boxing the table iterator would add a
// pointer chase to every key of the hot merge loop.
#[allow(clippy::large_enum_variant)]
enum Input<'a> {
    Table(SstIter<InternalKeyComparator>),
    Mem(Box<dyn InternalIterator + Send + 'a>),
}

impl InternalIterator for Input<'_> {
    fn seek_ge(&mut self, target: &[u8]) -> lithify_base::Result<()> {
        match self {
            Input::Table(t) => t.seek_ge(target),
            Input::Mem(m) => m.seek_ge(target),
        }
    }
    fn seek_lt(&mut self, target: &[u8]) -> lithify_base::Result<()> {
        match self {
            Input::Table(t) => t.seek_lt(target),
            Input::Mem(m) => m.seek_lt(target),
        }
    }
    fn first(&mut self) -> lithify_base::Result<()> {
        match self {
            Input::Table(t) => t.first(),
            Input::Mem(m) => m.first(),
        }
    }
    fn last(&mut self) -> lithify_base::Result<()> {
        match self {
            Input::Table(t) => t.last(),
            Input::Mem(m) => m.last(),
        }
    }
    #[inline]
    fn next(&mut self) -> lithify_base::Result<()> {
        match self {
            Input::Table(t) => t.next(),
            Input::Mem(m) => m.next(),
        }
    }
    fn prev(&mut self) -> lithify_base::Result<()> {
        match self {
            Input::Table(t) => t.prev(),
            Input::Mem(m) => m.prev(),
        }
    }
    #[inline]
    fn valid(&self) -> bool {
        match self {
            Input::Table(t) => t.valid(),
            Input::Mem(m) => m.valid(),
        }
    }
    #[inline]
    fn key(&self) -> &[u8] {
        match self {
            Input::Table(t) => t.key(),
            Input::Mem(m) => m.key(),
        }
    }
    #[inline]
    fn value(&self) -> &[u8] {
        match self {
            Input::Table(t) => t.value(),
            Input::Mem(m) => m.value(),
        }
    }
}

/// Incremental major compaction: splits the output-level inputs of `c`
/// into those that receive new data — a point key or a range tombstone of
/// the other inputs (or of the memtables) within their user-key range —
/// and those that do not. Returns `c` without the untouched files, whose
/// smallest keys become output boundaries (so no output spans them), and
/// the bytes left in place.
///
/// Each output-level file costs one seek of the merged delta iterator, in
/// key order; the files themselves are not read.
fn split_untouched(
    c: &Compaction,
    mem: Option<&MemtableInput<'_>>,
    opener: &dyn SstOpener,
    cmp: &InternalKeyComparator,
) -> Result<(Compaction, u64)> {
    let Some(out_idx) = c.inputs.iter().position(|i| i.level == c.output_level) else {
        return Ok((c.clone(), 0));
    };
    let mut children: Vec<Input<'_>> = Vec::new();
    let mut tombstones: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    if let Some(m) = mem {
        children.push(Input::Mem((m.open)()));
        for t in &m.range_tombstones {
            tombstones.push((t.start.to_vec(), t.end.to_vec()));
        }
    }
    for input in &c.inputs {
        if input.level == c.output_level {
            continue;
        }
        for f in &input.files {
            let table = opener.open_sst(f).context(InputSnafu)?;
            for t in table.range_tombstones() {
                let Some(rt) = RangeTombstone::from_stored(&t.start, &t.end) else {
                    return CorruptKeySnafu {
                        key: lithify_base::key::escape(&t.start),
                        origin: format!("range tombstone of table {:06}", f.number),
                    }
                    .fail();
                };
                tombstones.push((rt.start.to_vec(), rt.end.to_vec()));
            }
            children.push(Input::Table(table.iter()));
        }
    }
    let mut delta = MergingIterator::new(cmp.clone(), children);
    let mut kept = Vec::new();
    let mut boundaries = c.output_boundaries.clone();
    let mut reused = 0u64;
    for f in &c.inputs[out_idx].files {
        let (lo, hi) = (f.smallest_user_key(), f.largest_user_key());
        let seek = lithify_base::InternalKey::seek(lo, lithify_base::MAX_SEQNO);
        delta.seek_ge(seek.encoded()).context(InputSnafu)?;
        let point_inside = delta.valid()
            && cmp
                .compare_user(lithify_base::key::user_key(delta.key()), hi)
                .is_le();
        let tombstone_inside = tombstones
            .iter()
            .any(|(s, e)| cmp.compare_user(s, hi).is_le() && cmp.compare_user(e, lo).is_gt());
        if point_inside || tombstone_inside {
            kept.push(f.clone());
        } else {
            reused += f.size;
            boundaries.push(lo.to_vec());
        }
    }
    let mut reduced = c.clone();
    boundaries.sort_by(|a, b| cmp.compare_user(a, b));
    boundaries.dedup_by(|a, b| cmp.compare_user(a, b).is_eq());
    reduced.output_boundaries = boundaries;
    if kept.is_empty() {
        reduced.inputs.remove(out_idx);
    } else {
        reduced.inputs[out_idx].files = kept;
    }
    Ok((reduced, reused))
}

struct SubOutcome {
    created: Vec<PathBuf>,
    result: Result<(Written, IterStats)>,
}

/// What every subcompaction of one job shares.
struct SubJob<'a, 'm> {
    c: &'a Compaction,
    limiter: Option<&'a dyn WriteRateLimiter>,
    merge_operator: Option<&'a dyn MergeOperator>,
    enforce_single_delete_contracts: bool,
    mem: Option<&'a MemtableInput<'m>>,
    tables: &'a [Arc<SstReader<InternalKeyComparator>>],
    cmp: &'a InternalKeyComparator,
    range_dels: &'a RangeDelAggregator,
    snapshots: &'a Snapshots,
    filter: Option<&'a dyn CompactionFilter>,
    factory: &'a OutputFactory<'a>,
    sst_options: &'a lithify_sstable::SstOptions<InternalKeyComparator>,
    oldest_ancestor: u64,
    origin: &'a str,
}

impl SubJob<'_, '_> {
    fn cutter(&self) -> OutputCutter<Vec<u8>> {
        let c = self.c;
        let grandparents = c
            .grandparents
            .iter()
            .map(|g| Grandparent {
                smallest: g.smallest_user_key().to_vec(),
                largest: g.largest_user_key().to_vec(),
                largest_is_sentinel: is_sentinel(&g.largest),
                size: g.size,
            })
            .collect();
        OutputCutter::new(
            grandparents,
            CutLimits {
                target_file_size: c.target_output_file_size,
                max_file_size: c.max_output_file_size,
                max_compaction_bytes: c.max_compaction_bytes,
                dynamic_file_size: c.dynamic_file_size,
                never_split: c.output_level == 0,
            },
        )
        .with_split_key(c.output_split_key.as_ref().map(|k| k.user_key().to_vec()))
        .with_boundaries(c.output_boundaries.clone())
        .with_ttl_cuts(
            c.ttl_cut_files
                .iter()
                .map(|f| {
                    (
                        f.smallest_user_key().to_vec(),
                        f.largest_user_key().to_vec(),
                    )
                })
                .collect(),
        )
    }

    fn run(&self, lower: Option<Vec<u8>>, upper: Option<Vec<u8>>) -> SubOutcome {
        let mut children: Vec<Input<'_>> = Vec::with_capacity(self.tables.len() + 1);
        if let Some(m) = self.mem {
            children.push(Input::Mem((m.open)()));
        }
        children.extend(self.tables.iter().map(|t| Input::Table(t.iter())));
        let input = MergingIterator::new(self.cmp.clone(), children);
        let mut it = CompactionIterator::new(
            input,
            self.cmp.clone(),
            CompactionIterOptions {
                snapshots: self.snapshots.clone(),
                range_dels: Some(self.range_dels),
                deeper: self.c.deeper_levels(),
                filter: self.filter,
                filter_level: self.c.start_level(),
                upper_bound: upper.clone(),
                origin: self.origin.to_owned(),
                merge_operator: self.merge_operator,
                enforce_single_delete_contracts: self.enforce_single_delete_contracts,
                blobs: self.factory.blobs.fetcher,
            },
        );
        let mut writer = OutputWriter::new(
            self.factory,
            self.sst_options.clone(),
            self.range_dels,
            self.c.bottommost,
            self.oldest_ancestor,
            lower.clone(),
            upper,
            self.cutter(),
        )
        .with_rate_limiter(self.limiter);
        let drained = (|| {
            match &lower {
                Some(l) => it.seek(l)?,
                None => it.seek_to_first()?,
            }
            while it.valid() {
                writer.add(it.key(), it.user_key(), it.value())?;
                it.next()?;
            }
            Ok(())
        })();
        if let Err(e) = drained {
            return SubOutcome {
                created: writer.into_created(),
                result: Err(e),
            };
        }
        let stats = it.stats();
        let (created, result) = writer.finish();
        SubOutcome {
            created,
            result: result.map(|written| (written, stats)),
        }
    }
}

/// What a flush produced.
#[derive(Debug, Clone)]
pub struct FlushResult {
    /// The L0 file, or `None` when nothing survived (nothing to add).
    pub file: Option<FileMetadata>,
    /// The blob files its separated values went to (added with it).
    pub blob_files: Vec<BlobFileMetadata>,
    /// Statistics to record at L0 ([`CompactionStatsTable::record_flush`](crate::CompactionStatsTable::record_flush)).
    pub stats: CompactionStats,
    /// The compaction iterator's counts.
    pub iter_stats: IterStats,
}

/// Writes a memtable (any iterator of internal keys, plus its range
/// tombstones) as one L0 table, with the compaction iterator's snapshot
/// rules — versions hidden in their stripe and tombstones' stripes are
/// dropped, nothing deeper is known, so deletes stay — then fsyncs the file
/// and its directory. The caller adds the file to L0 with a `VersionEdit`
/// (and its log number).
///
/// `oldest_ancestor_time` is recorded in the file (the flush time, for
/// TTL and periodic compaction). On error the file is removed (best
/// effort).
pub fn flush_to_level0(
    input: impl InternalIterator,
    range_tombstones: Vec<RangeTombstone>,
    snapshots: &Snapshots,
    factory: &OutputFactory<'_>,
    opts: &JobOptions,
    oldest_ancestor_time: u64,
) -> Result<FlushResult> {
    let started = Instant::now();
    let cmp = factory.sst_options.comparator.clone();
    let range_dels = RangeDelAggregator::new(cmp.clone(), range_tombstones, snapshots.clone());
    let mut sst_options = factory.sst_options.clone();
    sst_options.creation_time = Some(opts.current_time());
    let cutter = OutputCutter::new(
        Vec::new(),
        CutLimits {
            target_file_size: u64::MAX,
            max_file_size: u64::MAX,
            max_compaction_bytes: u64::MAX,
            dynamic_file_size: false,
            never_split: true,
        },
    );
    let mut it = CompactionIterator::new(
        input,
        cmp,
        CompactionIterOptions {
            enforce_single_delete_contracts: opts.enforce_single_delete_contracts,
            ..CompactionIterOptions::for_flush(snapshots.clone(), Some(&range_dels))
                .merge_operator(opts.merge_operator.as_deref())
                .blobs(factory.blobs.fetcher)
        },
    );
    let mut writer = OutputWriter::new(
        factory,
        sst_options,
        &range_dels,
        false,
        oldest_ancestor_time,
        None,
        None,
        cutter,
    );
    let drained = (|| {
        it.seek_to_first()?;
        while it.valid() {
            writer.add(it.key(), it.user_key(), it.value())?;
            it.next()?;
        }
        Ok(())
    })();
    let cleanup = |created: &[PathBuf]| {
        for p in created {
            let _ = factory.fs.remove_file(p);
        }
    };
    if let Err(e) = drained {
        cleanup(&writer.into_created());
        return Err(e);
    }
    let (created, result) = writer.finish();
    let Written {
        mut files,
        blob_files,
        bytes,
        blob_bytes,
    } = match result {
        Ok(r) => r,
        Err(e) => {
            cleanup(&created);
            return Err(e);
        }
    };
    if (!files.is_empty() || !blob_files.is_empty())
        && let Err(e) = factory.fs.sync_dir(factory.dir)
    {
        cleanup(&created);
        return Err(e).context(IoSnafu {
            op: "syncing the directory",
            path: factory.dir.to_path_buf(),
        });
    }
    let iter_stats = it.stats();
    let stats = CompactionStats {
        micros: started.elapsed().as_micros() as u64,
        bytes_written: bytes,
        bytes_written_blob: blob_bytes,
        num_output_files: files.len() as u64,
        num_input_records: iter_stats.records_in,
        num_dropped_records: iter_stats.dropped(),
        num_output_records: iter_stats.records_out,
        count: 1,
        ..CompactionStats::default()
    };
    Ok(FlushResult {
        file: files.pop(),
        blob_files,
        stats,
        iter_stats,
    })
}
