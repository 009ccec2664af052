//! Opening a partition's log, one step at a time (Kafka's `LogLoader`).
//!
//! [`Log::open_with`](crate::Log::open_with) runs these steps in order,
//! each a method of [`LogLoader`] that reads what the earlier ones left in
//! it:
//!
//! 1. [`create_dir`]: the partition directory, made durable in its parents
//!    when it is new (the `.lock` is taken next, by the caller);
//! 2. [`LogLoader::complete_swaps`]: leftover `.deleted`, `.cleaned` and
//!    `.swap` files, by Kafka's rules ([`crate::recovery`]);
//! 3. [`LogLoader::scan`]: the segments' base offsets, and index files
//!    whose `.log` is missing;
//! 4. [`LogLoader::choose_recovery_point`]: given, checkpointed, or the last
//!    segment's base offset;
//! 5. [`LogLoader::open_segments`]: every segment opened, its problems
//!    noted;
//! 6. [`LogLoader::remove_orphan_indexes`]: index files past the log's end
//!    removed, below it refused;
//! 7. [`LogLoader::rebuild_flushed_indexes`]: flushed segments with a
//!    problem get their indexes rebuilt, or the open is refused;
//! 8. [`LogLoader::recover_unflushed`]: the segments from the recovery
//!    point on re-validated batch by batch, a damaged tail truncated and
//!    kept in `lost/`, later segments removed and kept;
//! 9. [`LogLoader::ensure_a_segment`]: an empty log gets its first segment;
//! 10. [`LogLoader::load_producers`]: producer state from the snapshots and
//!     the log, transaction indexes rebuilt where needed; then the last
//!     segment is made active and the directory synced.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lithify_vfs::{FileSystem, lost, parent_dir};
use snafu::ResultExt as _;

use lithify_base::clock::Clock;

use crate::TopicPartition;
use crate::checkpoint;
use crate::config::LogConfig;
use crate::error::{
    DamagedBelowRecoveryPointSnafu, Error, IoSnafu, MissingFlushedRecordsSnafu,
    MissingSegmentSnafu, Result,
};
use crate::naming::{self, FileKind, Suffix};
use crate::producer_replay;
use crate::producer_state::{self, ProducerStateManager};
use crate::recovery::{self, LogRecoveryReport, RecoveryPointSource, Truncation};
use crate::segment::{LogSegment, SegmentProblem};

/// Creates `dir` if it is missing, syncing each new directory's parent so
/// that the directory survives a power cut. Returns whether it was created.
pub(crate) fn create_dir(fs: &dyn FileSystem, dir: &Path) -> Result<bool> {
    if fs.is_dir(dir) {
        return Ok(false);
    }
    let io = |action| IoSnafu { action, path: dir };
    let mut created = vec![dir];
    let mut d = parent_dir(dir);
    while !fs.is_dir(d) && created.len() < 64 {
        created.push(d);
        d = parent_dir(d);
    }
    fs.create_dir_all(dir).context(io("create"))?;
    for new_dir in created.into_iter().rev() {
        fs.sync_dir(parent_dir(new_dir))
            .context(io("sync the parent of"))?;
    }
    Ok(true)
}

/// What [`LogLoader::scan`] found in the partition directory.
pub(crate) struct DirScan {
    /// Base offsets of the `.log` files, ascending.
    pub(crate) bases: Vec<i64>,
    /// Index files without their `.log`: base offset, index file name,
    /// the missing `.log`'s path.
    pub(crate) orphans: Vec<(i64, String, PathBuf)>,
}

/// A log being opened: what the steps so far found and decided.
pub(crate) struct LogLoader<'a> {
    fs: Arc<dyn FileSystem>,
    dir: &'a Path,
    config: &'a LogConfig,
    /// The open's clock, read once after the swaps are resolved.
    clock: &'a dyn Clock,
    /// The clock's time at the open (ms), for segments' time-based rolls.
    now: i64,
    /// Whether the open created the directory.
    created: bool,
    pub(crate) report: LogRecoveryReport,
    /// The log's line of the recovery point checkpoint, if it had one.
    pub(crate) checkpointed: Option<i64>,
    pub(crate) recovery_point: i64,
    source: RecoveryPointSource,
    pub(crate) segments: BTreeMap<i64, LogSegment>,
    problems: BTreeMap<i64, SegmentProblem>,
}

impl<'a> LogLoader<'a> {
    pub(crate) fn new(
        fs: Arc<dyn FileSystem>,
        dir: &'a Path,
        config: &'a LogConfig,
        clock: &'a dyn Clock,
        created: bool,
    ) -> Self {
        LogLoader {
            fs,
            dir,
            config,
            clock,
            now: 0,
            created,
            report: LogRecoveryReport::default(),
            checkpointed: None,
            recovery_point: 0,
            source: RecoveryPointSource::LastSegment,
            segments: BTreeMap::new(),
            problems: BTreeMap::new(),
        }
    }

    /// Step 2: resolves leftovers of an interrupted segment replacement.
    pub(crate) fn complete_swaps(&mut self) -> Result<()> {
        recovery::complete_or_roll_back_swaps(&*self.fs, self.dir, &mut self.report)?;
        self.now = self.clock.now_ms();
        Ok(())
    }

    /// Step 3: lists the segments and the index files without a `.log`.
    pub(crate) fn scan(&self) -> Result<DirScan> {
        let names = self.fs.list_dir(self.dir).context(IoSnafu {
            action: "list",
            path: self.dir,
        })?;
        let files = naming::live_files(&names);
        let orphans = files
            .indexes
            .into_iter()
            .filter_map(|(base, name)| {
                let log = self
                    .dir
                    .join(naming::file_name(base, FileKind::Log, Suffix::None));
                (!self.fs.exists(&log)).then_some((base, name, log))
            })
            .collect();
        let bases = files.logs;
        Ok(DirScan { bases, orphans })
    }

    /// Step 4: the recovery point: `given`, else the checkpoint's line,
    /// else the last segment's base offset (only it is re-validated).
    pub(crate) fn choose_recovery_point(&mut self, given: Option<i64>, scan: &DirScan) {
        // A directory just created has no flushed records, whatever an old
        // checkpoint entry of a removed directory of that name says.
        self.checkpointed = if self.created {
            None
        } else {
            read_recovery_point(&*self.fs, self.dir, &mut self.report)
        };
        let (recovery_point, source) = match (given, self.checkpointed) {
            (Some(p), _) => (p, RecoveryPointSource::Given),
            (None, Some(p)) => (p, RecoveryPointSource::Checkpoint),
            (None, None) => (
                scan.bases.last().copied().unwrap_or(0),
                RecoveryPointSource::LastSegment,
            ),
        };
        self.recovery_point = recovery_point;
        self.source = source;
        self.report.recovery_point = recovery_point;
        self.report.recovery_point_source = source;
    }

    /// Step 5: opens every segment, noting the problems found.
    pub(crate) fn open_segments(&mut self, bases: &[i64]) -> Result<()> {
        for &base in bases {
            let (seg, problem) = LogSegment::open(
                self.fs.clone(),
                self.dir,
                base,
                Suffix::None,
                self.config,
                self.now,
            )?;
            if let Some(problem) = problem {
                self.problems.insert(base, problem);
            }
            self.segments.insert(base, seg);
        }
        Ok(())
    }

    /// Step 6: index files without their `.log`. Beyond the log's end they
    /// are what a removal interrupted by a crash leaves (recovery removing
    /// the segments after a truncation), and are removed, as Kafka does.
    /// Below it, a `.log` went missing from the middle of the log: its
    /// records are gone, and that is refused.
    pub(crate) fn remove_orphan_indexes(
        &mut self,
        orphans: Vec<(i64, String, PathBuf)>,
    ) -> Result<()> {
        let mut end_hint = self
            .segments
            .values()
            .map(LogSegment::next_offset)
            .max()
            .unwrap_or(0);
        if self.source != RecoveryPointSource::LastSegment {
            end_hint = end_hint.max(self.recovery_point);
        }
        for (base, name, log) in &orphans {
            if *base < end_hint {
                return MissingSegmentSnafu {
                    path: log,
                    index: self.dir.join(name),
                    log_end_offset: end_hint,
                }
                .fail();
            }
        }
        for (_, name, _) in orphans {
            let path = self.dir.join(&name);
            self.fs.remove_file(&path).context(IoSnafu {
                action: "remove",
                path: &path,
            })?;
            self.report.deleted_files.push(name);
        }
        Ok(())
    }

    /// The first segment to re-validate: the one holding the recovery
    /// point, and at least the last one (its indexes are preallocated zeros
    /// while active, never "valid"). `None` for a log without segments.
    fn first_unflushed(&self) -> Option<i64> {
        let last = *self.segments.keys().next_back()?;
        Some(
            self.segments
                .range(..=self.recovery_point)
                .next_back()
                .map_or(i64::MIN, |(b, _)| *b)
                .min(last),
        )
    }

    /// Step 7: flushed segments with a problem get their indexes rebuilt
    /// from the `.log`; a `.log` cut short, or any damage found while
    /// rebuilding, is below the recovery point and refused.
    pub(crate) fn rebuild_flushed_indexes(&mut self) -> Result<()> {
        let first_unflushed = self.first_unflushed();
        let recovery_point = self.recovery_point;
        for (base, problem) in &self.problems {
            if first_unflushed.is_some_and(|f| *base >= f) {
                continue;
            }
            let Some(seg) = self.segments.get_mut(base) else {
                continue;
            };
            if let SegmentProblem::LogCutShort { size, message } = problem {
                return DamagedBelowRecoveryPointSnafu {
                    path: seg.log_path(),
                    offset: *size,
                    recovery_point,
                    next_offset: seg.next_offset(),
                    reason: format!(
                        "{message} (if the .log is intact and an index is damaged instead, remove the segment's .index and .timeindex to have them rebuilt)"
                    ),
                }
                .fail();
            }
            // Any damage found is below the recovery point: refused, and
            // reported with the log's recovery point.
            let rec = seg.recover(false, i64::MAX).map_err(|e| match e {
                Error::DamagedBelowRecoveryPoint {
                    path,
                    offset,
                    next_offset,
                    reason,
                    location,
                    ..
                } => Error::DamagedBelowRecoveryPoint {
                    path,
                    offset,
                    recovery_point,
                    next_offset,
                    reason,
                    location,
                },
                e => e,
            })?;
            tracing::info!(
                log = %self.dir.display(),
                segment = *base,
                problem = %problem,
                "rebuilt the indexes of a segment from its .log"
            );
            self.report
                .rebuilt_indexes
                .push((*base, problem.to_string()));
            self.report.recovered.push(rec);
        }
        Ok(())
    }

    /// Step 8: re-validates the segments from the recovery point on. The
    /// last one must reach the recovery point (checked before its recovery
    /// writes anything). A truncated segment's later segments are removed,
    /// their bytes kept in `lost/`.
    pub(crate) fn recover_unflushed(&mut self) -> Result<()> {
        let Some(from) = self.first_unflushed() else {
            return Ok(());
        };
        let to_recover: Vec<i64> = self.segments.range(from..).map(|(b, _)| *b).collect();
        for base in to_recover {
            let is_last = Some(&base) == self.segments.keys().next_back();
            let Some(seg) = self.segments.get_mut(&base) else {
                continue;
            };
            let log_path = seg.log_path().to_path_buf();
            let (dir, source, recovery_point) = (self.dir, self.source, self.recovery_point);
            let must_reach = |next_offset: i64, size: u64| {
                if !is_last
                    || source == RecoveryPointSource::LastSegment
                    || next_offset >= recovery_point
                {
                    return Ok(());
                }
                Err(missing_flushed_records(
                    dir,
                    source,
                    recovery_point,
                    log_path.clone(),
                    size,
                    next_offset,
                ))
            };
            let rec = seg.recover_checked(is_last, recovery_point, &must_reach)?;
            if let Some(problem) = self.problems.get(&base)
                && !is_last
            {
                self.report
                    .rebuilt_indexes
                    .push((base, problem.to_string()));
            }
            let truncated = rec.truncated_bytes > 0;
            if let Some(kept_at) = &rec.kept_at {
                self.report.truncations.push(Truncation {
                    file: log_path.clone(),
                    position: rec.valid_bytes,
                    bytes: rec.truncated_bytes,
                    first_offset_dropped: rec.next_offset,
                    reason: rec.reason.clone().unwrap_or_default(),
                    kept_at: kept_at.clone(),
                });
            }
            let (next_offset, valid_bytes) = (rec.next_offset, rec.valid_bytes);
            self.report.recovered.push(rec);
            if truncated && !is_last {
                self.remove_after_truncation(base, &log_path, next_offset, valid_bytes)?;
                break;
            }
        }
        for t in &self.report.truncations {
            tracing::warn!(
                log = %self.dir.display(),
                file = %t.file.display(),
                position = t.position,
                bytes = t.bytes,
                first_offset_dropped = t.first_offset_dropped,
                kept_at = %t.kept_at.display(),
                reason = %t.reason,
                "recovery truncated bytes above the recovery point"
            );
        }
        Ok(())
    }

    /// Removes every segment after `base`, which recovery truncated at byte
    /// `valid_bytes` of `log_path` (its records end at `next_offset`),
    /// keeping each one's bytes in `lost/`.
    fn remove_after_truncation(
        &mut self,
        base: i64,
        log_path: &Path,
        next_offset: i64,
        valid_bytes: u64,
    ) -> Result<()> {
        let later: Vec<i64> = self.segments.range(base + 1..).map(|(b, _)| *b).collect();
        for b in later {
            let Some(s) = self.segments.remove(&b) else {
                continue;
            };
            let (reader, path) = s.file();
            let size = s.size();
            let kept_at = lost::keep_range(&*self.fs, self.dir, &path, &*reader, 0, size).context(
                IoSnafu {
                    action: "keep in lost/",
                    path: path.as_path(),
                },
            )?;
            s.delete()?;
            self.report.removed_after_corruption.push(b);
            self.report.truncations.push(Truncation {
                file: (*path).clone(),
                position: 0,
                bytes: size,
                first_offset_dropped: next_offset,
                reason: format!(
                    "the segment follows {}, which recovery truncated at byte offset {valid_bytes}",
                    log_path.display(),
                ),
                kept_at,
            });
        }
        Ok(())
    }

    /// Step 9: a log without segments gets its first one, unless it should
    /// reach a recovery point above 0. (A last segment was checked against
    /// the recovery point before its recovery wrote anything.)
    pub(crate) fn ensure_a_segment(&mut self) -> Result<()> {
        if !self.segments.is_empty() {
            return Ok(());
        }
        if self.source != RecoveryPointSource::LastSegment && self.recovery_point > 0 {
            let segment = self
                .dir
                .join(naming::file_name(0, FileKind::Log, Suffix::None));
            return Err(missing_flushed_records(
                self.dir,
                self.source,
                self.recovery_point,
                segment,
                0,
                0,
            ));
        }
        let seg = LogSegment::create(
            self.fs.clone(),
            self.dir,
            0,
            Suffix::None,
            self.config,
            self.now,
        )?;
        self.segments.insert(0, seg);
        Ok(())
    }

    /// The offset after the last batch.
    pub(crate) fn next_offset(&self) -> i64 {
        self.segments
            .values()
            .next_back()
            .map_or(0, LogSegment::next_offset)
    }

    /// Step 10: producer state, and the transaction indexes that a crash
    /// may have left behind their `.log` rebuilt. Returns the state and the
    /// offsets of the producer snapshots on disk.
    pub(crate) fn load_producers(&mut self) -> Result<(ProducerStateManager, BTreeSet<i64>)> {
        let next_offset = self.next_offset();
        let mut rebuild = BTreeSet::new();
        for (base, seg) in &self.segments {
            if let Some(problem) = seg.txn_index_problem() {
                tracing::info!(
                    log = %self.dir.display(),
                    segment = *base,
                    problem,
                    "rebuilding a malformed transaction index from the log"
                );
                self.report
                    .rebuilt_indexes
                    .push((*base, problem.to_string()));
                rebuild.insert(*base);
            } else if seg.next_offset() > self.recovery_point
                || self.report.rebuilt_indexes.iter().any(|(b, _)| b == base)
            {
                rebuild.insert(*base);
            }
        }
        let loaded = producer_replay::load(
            &*self.fs,
            self.dir,
            &mut self.segments,
            next_offset,
            &rebuild,
            &mut self.report,
        )?;
        self.report.producer_state_replayed_from = loaded.replayed_from;
        let mut snapshots = loaded.snapshots;
        let last_base = self.segments.keys().next_back().copied().unwrap_or(0);
        if loaded.replayed_from < last_base && !snapshots.contains(&next_offset) {
            // The next open replays from here, not from as far back.
            producer_state::write_snapshot(&*self.fs, self.dir, next_offset, &loaded.state)?;
            snapshots.insert(next_offset);
        }
        Ok((loaded.state, snapshots))
    }

    /// Last: the last segment becomes the active one, and the directory's
    /// changes are made durable.
    pub(crate) fn activate(&mut self) -> Result<()> {
        let active = self
            .segments
            .values_mut()
            .next_back()
            .expect("a log has at least one segment");
        active.make_active()?;
        self.fs.sync_dir(self.dir).context(IoSnafu {
            action: "sync",
            path: self.dir,
        })
    }
}

/// The error of a log in `dir` that does not reach its `recovery_point`
/// (taken from `source`): its last segment `segment`, of `size` bytes, ends
/// at `log_end_offset`.
#[track_caller]
fn missing_flushed_records(
    dir: &Path,
    source: RecoveryPointSource,
    recovery_point: i64,
    segment: PathBuf,
    size: u64,
    log_end_offset: i64,
) -> Error {
    MissingFlushedRecordsSnafu {
        dir,
        segment,
        size,
        checkpoint: match source {
            RecoveryPointSource::Given => PathBuf::from("the given OpenOptions"),
            _ => recovery_point_path(dir),
        },
        log_end_offset,
        recovery_point,
    }
    .build()
}

/// The `recovery-point-offset-checkpoint` of the data directory holding
/// the log directory `dir`.
pub(crate) fn recovery_point_path(dir: &Path) -> PathBuf {
    parent_dir(dir).join(checkpoint::RECOVERY_POINT_FILE_NAME)
}

/// The log's line of its data directory's recovery point checkpoint, if
/// it has one; a file that cannot be read counts as no line (Kafka reads
/// it as empty too), with a warning and a note in the report.
fn read_recovery_point(
    fs: &dyn FileSystem,
    dir: &Path,
    report: &mut LogRecoveryReport,
) -> Option<i64> {
    let (topic, partition) = naming::parse_partition_dir(dir.file_name()?.to_str()?)?;
    let path = recovery_point_path(dir);
    match checkpoint::read_file(fs, &path) {
        Ok(entries) => entries.get(&TopicPartition::new(topic, partition)).copied(),
        Err(e) => {
            tracing::warn!(
                log = %dir.display(),
                error = %e,
                "the recovery point checkpoint cannot be read; only the last segment is re-validated"
            );
            report.recovery_point_unreadable = Some(e.to_string());
            None
        }
    }
}
