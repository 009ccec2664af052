//! Crash recovery of a partition directory's temporary files: the rules of
//! Kafka's `LogLoader` for files left by an interrupted segment replacement
//! (the cleaner's `.cleaned` -> `.swap` -> `.deleted` protocol).
//!
//! 1. Every `*.deleted` file is removed, with a warning naming it and
//!    the offsets it held ([`LogRecoveryReport::deleted_leftovers`]) — except
//!    a `.log.deleted` holding batches whose offsets no live segment holds
//!    any more ([`deleted_leftovers`] says how that is told): it may be a
//!    live segment renamed by mistake, or the last file of a crashed
//!    cleaning's replaced group (the others already gone), which cannot be
//!    told apart; it is moved into `lost/` (kept, with the warning saying
//!    so) rather than deleted. Kafka deletes every `.deleted` file.
//! 2. `minCleaned` is the smallest base offset among `*.cleaned` files.
//! 3. Every `*.swap` file with base offset >= `minCleaned` is removed (it
//!    belongs to an operation that had not finished writing), then every
//!    `*.cleaned` file is removed.
//! 4. For the remaining `*.log.swap` files: `minSwap` is the smallest base
//!    offset, `maxSwap` the largest offset after a swap segment's last
//!    batch. Every file without the `.swap` suffix whose name's offset is
//!    in `[minSwap, maxSwap)` is removed: those are the segments the swap
//!    replaces, not yet renamed to `.deleted`.
//! 5. Every remaining `*.swap` file is renamed without its suffix.
//!
//! The directory is synced afterwards, so the outcome is durable before
//! segments are loaded. Per crash point of the replacement: before any
//! `.swap` exists the old segments stay and the cleaning is lost; once all
//! new files are `.swap` the replacement completes; a mix of `.swap` and
//! `.cleaned` is rolled back.
//!
//! # Where dropped bytes are kept
//!
//! What recovery drops (a `.log.deleted` it cannot place, a segment tail
//! above the recovery point) is kept in `lost/` inside the partition
//! directory, named by [`lithify_vfs::lost`]'s rule, before the original
//! is truncated or forgotten. The place is chosen so that Kafka never
//! misreads what is kept:
//!
//! * Kafka's `LogLoader` lists a partition directory with
//!   `listFiles(File::isFile)` (its passes over `.deleted`, `.cleaned`,
//!   `.swap` files and `loadSegmentFiles`), so a **subdirectory** of the
//!   partition directory is never taken for a segment, an index or a swap
//!   leftover, whatever its files are named; this module skips
//!   directories too;
//! * a directory in the *data* directory would not do: Kafka's
//!   `LogManager.loadLogs` parses every subdirectory of a data directory as
//!   a `<topic>-<partition>` log directory, and a broker does not start
//!   with any other name there ("'lost+found' is not in the form of
//!   topic-partition");
//! * `lost` does not start with a digit, so no code that reads an offset
//!   from the text before the first `.` of a name takes it for a segment;
//! * when Kafka deletes the partition it deletes the directory with
//!   everything in it, `lost/` included.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lithify_vfs::{FileSystem, lost};
use snafu::ResultExt as _;

use crate::error::{IoSnafu, Result};
use crate::file_batches::FileBatches;
use crate::naming::{self, FileKind, Suffix};
use crate::segment::SegmentRecovery;

/// Where [`Log::open`](crate::Log::open) learnt its recovery point.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecoveryPointSource {
    /// [`OpenOptions::recovery_point`](crate::OpenOptions::recovery_point).
    Given,
    /// The log's entry in the data directory's
    /// `recovery-point-offset-checkpoint`.
    Checkpoint,
    /// No entry (a directory not named `<topic>-<partition>`, a log never
    /// flushed, a checkpoint file that cannot be read): the last segment's
    /// base offset, since a segment is synced when it rolls.
    #[default]
    LastSegment,
}

/// Bytes that recovery cut from a segment (above the recovery point only),
/// and where it kept them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncation {
    /// The segment file that lost the bytes.
    pub file: PathBuf,
    /// Byte offset in that file where the dropped bytes began (0 for a
    /// segment removed whole because an earlier one was truncated).
    pub position: u64,
    /// How many bytes were dropped.
    pub bytes: u64,
    /// The first offset not kept: the log end offset after the truncation.
    pub first_offset_dropped: i64,
    /// Why: the damage found at `position`, or the earlier truncation that
    /// made this segment unreachable.
    pub reason: String,
    /// The copy of the dropped bytes, under the partition's `lost/`.
    pub kept_at: PathBuf,
}

impl fmt::Display for Truncation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "recovery dropped {} bytes of {} from byte offset {} (offsets from {} on, above the recovery point: never flushed): {}; the bytes are kept in {}",
            self.bytes,
            self.file.display(),
            self.position,
            self.first_offset_dropped,
            self.reason,
            self.kept_at.display()
        )
    }
}

/// A `.deleted` file that recovery removed: what a cleaner's swap left
/// behind (or Kafka's retention or truncation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletedLeftover {
    /// The file name.
    pub file: String,
    /// The offset in its name.
    pub base_offset: i64,
    /// For a `.log.deleted`: the offset after its last valid batch (its
    /// base offset when it holds none). `None` for index and snapshot
    /// files.
    pub next_offset: Option<i64>,
    /// Why it may go: the live segment (or swap) that holds its offsets
    /// now, or where its offsets lie.
    pub covered_by: String,
    /// Where it was kept instead of deleted (in `lost/`), when no live
    /// segment holds its offsets.
    pub kept: Option<PathBuf>,
}

impl fmt::Display for DeletedLeftover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.next_offset {
            Some(next) if next > self.base_offset => write!(
                f,
                "{} (offsets {}..{}, {})",
                self.file, self.base_offset, next, self.covered_by
            )?,
            Some(_) => write!(f, "{} (no batches)", self.file)?,
            None => write!(f, "{} ({})", self.file, self.covered_by)?,
        }
        if let Some(kept) = &self.kept {
            write!(
                f,
                ": kept in {} (move it back without the .deleted suffix if it was a live segment)",
                kept.display()
            )?;
        }
        Ok(())
    }
}

/// What opening a log found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogRecoveryReport {
    /// The `.deleted` files removed (each also in `deleted_files`) or kept
    /// in `lost/` (`kept`), with
    /// the offsets they held; each is a `tracing` warning.
    pub deleted_leftovers: Vec<DeletedLeftover>,
    /// Files removed: `.deleted`, `.cleaned`, unfinished `.swap`, segments
    /// replaced by a swap, index files without a `.log`.
    pub deleted_files: Vec<String>,
    /// `.swap` files renamed into place.
    pub swapped_in: Vec<String>,
    /// Segments whose indexes were missing or corrupt, and why; each was
    /// rebuilt from its `.log`, losing nothing.
    pub rebuilt_indexes: Vec<(i64, String)>,
    /// Segments re-validated batch by batch.
    pub recovered: Vec<SegmentRecovery>,
    /// Segments removed because an earlier segment was truncated (the log
    /// ends at the first invalid batch, as in Kafka); their bytes are kept
    /// (see `truncations`).
    pub removed_after_corruption: Vec<i64>,
    /// Every byte range dropped, with where it was kept. Empty unless
    /// bytes above the recovery point were damaged or torn.
    pub truncations: Vec<Truncation>,
    /// The recovery point used: damage in batches below it is refused,
    /// damage above it is truncated (and kept).
    pub recovery_point: i64,
    /// Where the recovery point came from.
    pub recovery_point_source: RecoveryPointSource,
    /// Why `recovery-point-offset-checkpoint` could not be read, if it
    /// could not (the last segment's base was used instead).
    pub recovery_point_unreadable: Option<String>,
    /// Producer snapshots removed because they could not be read, and
    /// why (producer state was replayed from an earlier snapshot or from
    /// the log start instead, losing nothing).
    pub dropped_snapshots: Vec<String>,
    /// The offset producer state was replayed from: the snapshot used, or
    /// the log start.
    pub producer_state_replayed_from: i64,
}

impl LogRecoveryReport {
    /// Total bytes truncated from segments (removed segments included).
    pub fn truncated_bytes(&self) -> u64 {
        self.truncations.iter().map(|t| t.bytes).sum()
    }
}

fn remove(
    fs: &dyn FileSystem,
    dir: &Path,
    name: &str,
    report: &mut LogRecoveryReport,
) -> Result<()> {
    let path = dir.join(name);
    match fs.remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(e).context(IoSnafu {
                action: "remove",
                path,
            });
        }
    }
    report.deleted_files.push(name.to_string());
    Ok(())
}

fn list(fs: &dyn FileSystem, dir: &Path) -> Result<Vec<String>> {
    let names = fs.list_dir(dir).context(IoSnafu {
        action: "list",
        path: dir,
    })?;
    Ok(names
        .into_iter()
        .filter(|n| !fs.is_dir(&dir.join(n)))
        .collect())
}

/// The offset after the last valid batch of a `.log` file (its base
/// offset when it holds none).
fn next_offset_of(fs: &dyn FileSystem, path: &Path, base_offset: i64) -> Result<i64> {
    let file = fs.open(path).context(IoSnafu {
        action: "open",
        path,
    })?;
    let size = file.size().context(IoSnafu {
        action: "stat",
        path,
    })?;
    let mut next = base_offset;
    for batch in FileBatches::new(file, Arc::new(path.to_path_buf()), 0, size) {
        match batch {
            Ok(b) => next = next.max(b.next_offset()),
            Err(e) if e.is_corruption() => break,
            Err(e) => return Err(e),
        }
    }
    Ok(next)
}

/// Applies steps 1 to 5 to `dir`, then syncs it.
pub(crate) fn complete_or_roll_back_swaps(
    fs: &dyn FileSystem,
    dir: &Path,
    report: &mut LogRecoveryReport,
) -> Result<()> {
    let mut swaps = Vec::new();
    let mut cleaned = Vec::new();
    let mut min_cleaned = i64::MAX;
    let names = list(fs, dir)?;
    for l in deleted_leftovers(fs, dir, &names)? {
        let mut leftover = DeletedLeftover {
            file: l.file,
            base_offset: l.base_offset,
            next_offset: l.next_offset,
            covered_by: l
                .covered_by
                .clone()
                .unwrap_or_else(|| "no live segment holds its offsets".to_string()),
            kept: None,
        };
        if l.covered_by.is_some() {
            tracing::warn!(
                log = %dir.display(),
                file = %leftover.file,
                base_offset = leftover.base_offset,
                next_offset = leftover.next_offset,
                covered_by = %leftover.covered_by,
                "removing a .deleted leftover"
            );
            remove(fs, dir, &leftover.file, report)?;
        } else {
            let kept = lost::keep_file(fs, dir, &leftover.file).context(IoSnafu {
                action: "keep in lost/",
                path: dir.join(&leftover.file),
            })?;
            tracing::warn!(
                log = %dir.display(),
                file = %leftover.file,
                base_offset = leftover.base_offset,
                next_offset = leftover.next_offset,
                kept = %kept.display(),
                "a .deleted segment whose offsets no live segment holds is kept, not deleted: \
                 if it is a live segment renamed by mistake, move it back without the suffix"
            );
            leftover.kept = Some(kept);
        }
        report.deleted_leftovers.push(leftover);
    }
    for name in names {
        if name.ends_with(Suffix::Deleted.as_str()) {
            continue;
        } else if name.ends_with(Suffix::Cleaned.as_str()) {
            if let Some(off) = naming::offset_from_file_name(&name) {
                min_cleaned = min_cleaned.min(off);
            }
            cleaned.push(name);
        } else if name.ends_with(Suffix::Swap.as_str()) {
            swaps.push(name);
        }
    }
    let mut valid_swaps = Vec::new();
    for name in swaps {
        match naming::offset_from_file_name(&name) {
            Some(off) if off >= min_cleaned => remove(fs, dir, &name, report)?,
            _ => valid_swaps.push(name),
        }
    }
    for name in cleaned {
        remove(fs, dir, &name, report)?;
    }
    let mut min_swap = i64::MAX;
    let mut max_swap = i64::MIN;
    for name in &valid_swaps {
        let Some(p) = naming::parse(name) else {
            continue;
        };
        if p.kind != FileKind::Log {
            continue;
        }
        min_swap = min_swap.min(p.base_offset);
        max_swap = max_swap.max(next_offset_of(fs, &dir.join(name), p.base_offset)?);
    }
    if min_swap < max_swap {
        for name in list(fs, dir)? {
            if name.ends_with(Suffix::Swap.as_str()) {
                continue;
            }
            if naming::offset_from_file_name(&name).is_some_and(|o| o >= min_swap && o < max_swap) {
                remove(fs, dir, &name, report)?;
            }
        }
    }
    for name in list(fs, dir)? {
        if let Some(target) = name.strip_suffix(Suffix::Swap.as_str()) {
            let from = dir.join(&name);
            fs.rename(&from, &dir.join(target)).context(IoSnafu {
                action: "rename",
                path: from,
            })?;
            report.swapped_in.push(name);
        }
    }
    fs.sync_dir(dir).context(IoSnafu {
        action: "sync",
        path: dir,
    })
}

/// A `.deleted` file as [`deleted_leftovers`] judged it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Leftover {
    pub(crate) file: String,
    pub(crate) base_offset: i64,
    pub(crate) next_offset: Option<i64>,
    /// Why it may be removed; `None`: its offsets are covered by nothing.
    pub(crate) covered_by: Option<String>,
}

/// Judges every `.deleted` file among `names` (the files of `dir`),
/// reading only. A `.log.deleted` holding batches (offsets `B..N`) may be
/// removed when its offsets are accounted for:
///
/// * a live segment or a `.swap` starts at `B` (it replaced this one), or
///   the segment holding `B` starts at `S` and `S.log.deleted` exists too
///   (a cleaning replaced a group of segments by one with the group's
///   first base offset, as Kafka's cleaner and ours name their output);
/// * a live segment or `.swap` holds offsets inside `B..N` (the cleaned
///   segment that replaced it kept some of its records);
/// * it lies wholly below the log start (Kafka's retention deletes whole
///   segments from the start).
///
/// Otherwise its records are in no other file (`covered_by` is `None`):
/// a live segment renamed by mistake, or the last file of a crashed
/// cleaning's group whose first segment's `.deleted` is already gone. Index, time index, transaction
/// index and snapshot `.deleted` files go with their segment and are
/// always removable.
pub(crate) fn deleted_leftovers(
    fs: &dyn FileSystem,
    dir: &Path,
    names: &[String],
) -> Result<Vec<Leftover>> {
    // Live and swap segments by base offset.
    let mut holders: Vec<(i64, String)> = names
        .iter()
        .filter_map(|n| naming::parse(n).map(|p| (p, n)))
        .filter(|(p, _)| p.kind == FileKind::Log && matches!(p.suffix, Suffix::None | Suffix::Swap))
        .map(|(p, n)| (p.base_offset, n.clone()))
        .collect();
    holders.sort();
    let deleted_logs: Vec<i64> = names
        .iter()
        .filter_map(|n| naming::parse(n))
        .filter(|p| p.kind == FileKind::Log && p.suffix == Suffix::Deleted)
        .map(|p| p.base_offset)
        .collect();
    let mut out = Vec::new();
    for name in names {
        if !name.ends_with(Suffix::Deleted.as_str()) {
            continue;
        }
        let parsed = naming::parse(name);
        let base = parsed.map_or(-1, |p| p.base_offset);
        let is_log = parsed.is_some_and(|p| p.kind == FileKind::Log);
        if !is_log {
            out.push(Leftover {
                file: name.clone(),
                base_offset: base,
                next_offset: None,
                covered_by: Some("it goes with its segment".to_string()),
            });
            continue;
        }
        let path = dir.join(name);
        let next = next_offset_of(fs, &path, base)?;
        // No readable batch in a file that holds bytes: damage, whose
        // offsets cannot be told; kept like an uncovered one.
        let empty = fs.file_size(&path).context(IoSnafu {
            action: "stat",
            path: &path,
        })? == 0;
        let covered_by = if next <= base && empty {
            Some("no batches".to_string())
        } else if next <= base {
            None
        } else if let Some((_, n)) = holders.iter().find(|(b, _)| *b == base) {
            Some(format!("replaced by {n}"))
        } else if let Some((s, n)) = holders.iter().rev().find(|(b, _)| *b < base)
            && deleted_logs.contains(s)
        {
            Some(format!("replaced, with the segment at offset {s}, by {n}"))
        } else if let Some((_, n)) = holders.iter().find(|(b, _)| *b > base && *b < next) {
            Some(format!("its offsets are now held by {n}"))
        } else if holders.first().is_some_and(|(first, _)| next <= *first) {
            Some("below the log start offset: removed by retention".to_string())
        } else {
            // The segment before it may still hold offsets of its range.
            let mut held = None;
            if let Some((s, n)) = holders.iter().rev().find(|(b, _)| *b < base) {
                let end = next_offset_of(fs, &dir.join(n), *s)?;
                if end > base {
                    held = Some(format!("its offsets are now held by {n}"));
                }
            }
            held
        };
        out.push(Leftover {
            file: name.clone(),
            base_offset: base,
            next_offset: Some(next),
            covered_by,
        });
    }
    Ok(out)
}
