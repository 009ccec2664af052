//! Checking a log directory, or a data directory of them, without changing
//! anything: what [`Log::open`](crate::Log::open) and the log cleaner would
//! refuse, and what they would repair or accept with a warning.
//!
//! [`verify`] reads every file and sorts what it finds into
//!
//! * **problems**, which open or the cleaner refuse (a problem makes
//!   `lithify log check` exit non-zero): a batch failing its CRC, magic or
//!   header checks below the recovery point; batch base offsets that go
//!   backwards or repeat within a segment; segments whose offsets overlap
//!   (a batch at or past the next segment's base offset); a `.log`
//!   whose indexes describe bytes it no longer holds (cut short); index
//!   files whose `.log` is missing from the middle of the log; a recovery
//!   point beyond the log end (flushed
//!   records missing); a `cleaner-offset-checkpoint` the cleaner cannot
//!   read; an ABORT marker after transactional data that no `.txnindex`
//!   entry lists (the cleaner refuses it);
//! * **warnings**, which open repairs or accepts, each naming the files
//!   and offsets: damage above the recovery point (open truncates it,
//!   keeping the bytes in `lost/`), indexes open rebuilds, the leftovers of
//!   an interrupted cleaning (`.cleaned`, `.swap`, and the `.deleted` files
//!   open deletes, with the offsets they held — or keeps in `lost/`, when
//!   no live segment holds them), an offset gap between two
//!   segments, unreadable producer snapshots (open removes them and
//!   replays), an unreadable `recovery-point-offset-checkpoint`.
//!
//! **Gaps.** Cleaning removes records and keeps segment base offsets, so
//! a gap between one segment's last offset and the next segment's base is
//! normal in a compacted log; a missing middle segment looks the same when
//! its index files went with it. Both are warnings naming the two files and
//! the missing offsets; a producer snapshot inside the gap (snapshots are
//! taken at segment bases) is named as the trace of a segment that started
//! there.
//!
//! The check holds a shared lock on each directory's `.lock` while it reads
//! ([`lock_shared`](crate::lock_shared)): while a writer (a `Log`, a
//! cleaner) holds one, it is refused with [`Error::InUse`](crate::Error),
//! instead of reporting a live append or a swap in progress as damage.
//!
//! ```
//! use std::path::Path;
//! use std::sync::Arc;
//! use lithify_vfs::{FileSystem, MemFs};
//! use lithify_kafka_log::{Log, LogConfig, SimpleRecord, verify};
//!
//! let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
//! let dir = Path::new("/data/orders-0");
//! let mut log = Log::open(fs.clone(), dir, LogConfig::default()).unwrap();
//! log.append(&[SimpleRecord::new(1, "k", "v")]).unwrap();
//! log.close().unwrap();
//! let report = verify(&fs, Path::new("/data")).unwrap();
//! assert!(report.problems.is_empty(), "{report}");
//! assert_eq!((report.logs, report.batches), (1, 1));
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lithify_vfs::{FileSystem, parent_dir};
use snafu::ResultExt as _;

use crate::TopicPartition;
use crate::checkpoint;
use crate::config::LogConfig;
use crate::error::{Error, InvalidArgumentSnafu, IoSnafu, Result};
use crate::file_batches::OffsetOrder;
use crate::naming::{self, FileKind, Suffix};
use crate::producer_snapshot;
use crate::recovery;
use crate::segment::{LogSegment, SegmentProblem};
use crate::txn_check;

/// One thing [`verify`] found: the file, the byte offset when the finding
/// has one, and a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The file (or directory) it is about.
    pub file: PathBuf,
    /// The byte offset in that file, when it has one.
    pub offset: Option<u64>,
    /// What was found, and what open or the cleaner does with it.
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(o) => write!(
                f,
                "{} at byte offset {o}: {}",
                self.file.display(),
                self.message
            ),
            None => write!(f, "{}: {}", self.file.display(), self.message),
        }
    }
}

/// What [`verify`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// What open or the cleaner refuses.
    pub problems: Vec<Finding>,
    /// What open repairs or accepts, and normal but notable states (gaps,
    /// leftovers).
    pub warnings: Vec<Finding>,
    /// Log directories checked.
    pub logs: usize,
    /// Segments checked.
    pub segments: usize,
    /// Batches read and checked.
    pub batches: u64,
}

impl VerifyReport {
    /// Whether nothing would be refused.
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }

    fn problem(&mut self, file: &Path, offset: Option<u64>, message: impl Into<String>) {
        self.problems.push(Finding {
            file: file.to_path_buf(),
            offset,
            message: message.into(),
        });
    }

    fn warning(&mut self, file: &Path, offset: Option<u64>, message: impl Into<String>) {
        self.warnings.push(Finding {
            file: file.to_path_buf(),
            offset,
            message: message.into(),
        });
    }
}

impl fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for p in &self.problems {
            writeln!(f, "problem: {p}")?;
        }
        for w in &self.warnings {
            writeln!(f, "warning: {w}")?;
        }
        write!(
            f,
            "{} logs, {} segments, {} batches checked: {} problems, {} warnings",
            self.logs,
            self.segments,
            self.batches,
            self.problems.len(),
            self.warnings.len()
        )
    }
}

/// Checks `path`, a log directory (`<topic>-<partition>`, or any
/// directory holding `.log` files) or a data directory (its checkpoint
/// files and every `<topic>-<partition>` subdirectory; Kafka's `-delete`
/// directories are skipped), reading only. Damage is in the report; an
/// `Err` is an I/O failure, a directory a writer holds
/// ([`Error::InUse`]), or a path that is neither.
pub fn verify(fs: &Arc<dyn FileSystem>, path: &Path) -> Result<VerifyReport> {
    if !fs.is_dir(path) {
        return InvalidArgumentSnafu {
            message: format!("{} is not a directory", path.display()),
        }
        .fail();
    }
    let mut report = VerifyReport::default();
    let names = fs.list_dir(path).context(IoSnafu {
        action: "list",
        path,
    })?;
    let is_log_dir = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(naming::parse_partition_dir)
        .is_some()
        || names
            .iter()
            .any(|n| naming::parse(n).is_some_and(|p| p.kind == FileKind::Log));
    if is_log_dir {
        let recovery_points = read_recovery_points(&**fs, parent_dir(path), &mut report)?;
        verify_log(fs, path, &recovery_points, &mut report)?;
        return Ok(report);
    }
    let _lock = crate::lock::lock_shared(&**fs, path, "data directory")?;
    let cleaner = path.join(checkpoint::CLEANER_OFFSET_FILE_NAME);
    if fs.exists(&cleaner)
        && let Err(e) = checkpoint::read_file(&**fs, &cleaner)
    {
        if e.is_corruption() {
            let offset = e.file_offset().map(|(_, o)| o);
            report.problem(
                &cleaner,
                offset,
                format!("the cleaner cannot read it, and takes the data directory offline: {e}"),
            );
        } else {
            return Err(e);
        }
    }
    let recovery_points = read_recovery_points(&**fs, path, &mut report)?;
    let mut found = false;
    for (_, sub) in crate::log_dir::partition_dirs(&**fs, path)? {
        found = true;
        verify_log(fs, &sub, &recovery_points, &mut report)?;
    }
    let has_checkpoints =
        fs.exists(&cleaner) || fs.exists(&path.join(checkpoint::RECOVERY_POINT_FILE_NAME));
    if !found && !has_checkpoints {
        return InvalidArgumentSnafu {
            message: format!(
                "{} holds no .log files and no <topic>-<partition> log directories",
                path.display()
            ),
        }
        .fail();
    }
    Ok(report)
}

/// The data directory's recovery points; `None` (with a warning) when
/// the file cannot be read, as open reads it.
fn read_recovery_points(
    fs: &dyn FileSystem,
    data_dir: &Path,
    report: &mut VerifyReport,
) -> Result<Option<BTreeMap<TopicPartition, i64>>> {
    let path = data_dir.join(checkpoint::RECOVERY_POINT_FILE_NAME);
    if !fs.exists(&path) {
        return Ok(None);
    }
    match checkpoint::read_file(fs, &path) {
        Ok(entries) => Ok(Some(entries)),
        Err(e) if e.is_corruption() => {
            report.warning(
                &path,
                e.file_offset().map(|(_, o)| o),
                format!(
                    "open reads it as no line (only each log's last segment is re-validated) and the next flush rewrites it: {e}"
                ),
            );
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Where the damage in a segment's batches is, and what open does there.
struct Damage {
    position: u64,
    /// The offset after the last valid batch before it.
    next_offset: i64,
    message: String,
    /// Open truncates there when the log above is unflushed; `false` for
    /// damage nothing truncates (an old message format, an overlap with
    /// the next segment, which only reads and the cleaner find).
    truncatable: bool,
}

/// What a full scan of one segment found.
struct Scan {
    next_offset: i64,
    batches: u64,
    damage: Option<Damage>,
}

/// Reads every batch of `seg` as recovery and the cleaner check it: size,
/// magic, CRC, codec, records, offsets within the segment's range,
/// following each other and below `next_base`.
fn scan_segment(seg: &LogSegment, next_base: i64) -> Scan {
    let base = seg.base_offset();
    let size = seg.size();
    let mut order = OffsetOrder::new(base, next_base);
    let mut next_offset = base;
    let mut count = 0;
    let mut batches = seg.batches();
    let mut damage = None;
    for item in &mut batches {
        let checked = item.and_then(|b| {
            b.ensure_valid()?;
            let rel_last = b.last_offset().checked_sub(base);
            if b.base_offset() < base || rel_last.is_none_or(|r| r > i64::from(i32::MAX)) {
                return crate::error::CorruptSnafu {
                    path: seg.log_path(),
                    offset: b.position(),
                    message: format!(
                        "batch offsets {}..={} are outside the range of segment {base}",
                        b.base_offset(),
                        b.last_offset()
                    ),
                }
                .fail();
            }
            if b.base_offset() < next_offset {
                return crate::error::CorruptSnafu {
                    path: seg.log_path(),
                    offset: b.position(),
                    message: format!(
                        "batch base offset {} is below the previous batch's next offset {next_offset} (offsets go backwards or repeat)",
                        b.base_offset()
                    ),
                }
                .fail();
            }
            b.records()?;
            Ok(b)
        });
        let batch = match checked {
            Ok(b) => b,
            Err(e) => {
                let position = e.file_offset().map_or(batches.position(), |(_, o)| o);
                let truncatable = !matches!(e, Error::UnsupportedMagic { .. });
                damage = Some(Damage {
                    position,
                    next_offset,
                    message: e.to_string(),
                    truncatable,
                });
                break;
            }
        };
        if let Err(e) = order.check(&batch) {
            damage = Some(Damage {
                position: batch.position(),
                next_offset,
                message: format!(
                    "{e}: the segment overlaps the next one, which reads and the cleaner refuse"
                ),
                truncatable: false,
            });
            break;
        }
        count += 1;
        next_offset = batch.next_offset();
    }
    if damage.is_none() && batches.position() < size {
        damage = Some(Damage {
            position: batches.position(),
            next_offset,
            message: format!(
                "the last {} bytes, from byte offset {}, are not a complete batch",
                size - batches.position(),
                batches.position()
            ),
            truncatable: true,
        });
    }
    Scan {
        next_offset,
        batches: count,
        damage,
    }
}

fn verify_log(
    fs: &Arc<dyn FileSystem>,
    dir: &Path,
    recovery_points: &Option<BTreeMap<TopicPartition, i64>>,
    report: &mut VerifyReport,
) -> Result<()> {
    let _lock = crate::lock::lock_shared(&**fs, dir, "log directory")?;
    report.logs += 1;
    let problems_before = report.problems.len();
    let names: Vec<String> = fs
        .list_dir(dir)
        .context(IoSnafu {
            action: "list",
            path: dir,
        })?
        .into_iter()
        .filter(|n| !fs.is_dir(&dir.join(n)))
        .collect();

    // Leftovers of an interrupted segment replacement.
    for l in recovery::deleted_leftovers(&**fs, dir, &names)? {
        let path = dir.join(&l.file);
        let held = match l.next_offset {
            Some(n) if n > l.base_offset => format!("offsets {}..{n}", l.base_offset),
            Some(_) => "no batches".to_string(),
            None => "an index or snapshot".to_string(),
        };
        match l.covered_by {
            Some(why) => report.warning(
                &path,
                None,
                format!("a .deleted leftover ({held}; {why}): open deletes it"),
            ),
            None => report.warning(
                &path,
                None,
                format!(
                    "a .deleted segment holding {held}, which no live segment holds: a crashed cleaning's last leftover, or a live segment renamed by mistake; open keeps it in lost/ rather than deleting it (remove the .deleted suffix if it was renamed by mistake)"
                ),
            ),
        }
    }
    let mut swaps = false;
    for name in &names {
        if name.ends_with(Suffix::Cleaned.as_str()) {
            report.warning(
                &dir.join(name),
                None,
                "the output of a cleaning that did not finish: open removes it",
            );
        } else if name.ends_with(Suffix::Swap.as_str()) {
            swaps = true;
            report.warning(
                &dir.join(name),
                None,
                "a segment replacement that did not finish: open completes it (or rolls it back while .cleaned files remain); the checks below are of the segments as they are named now",
            );
        }
    }

    let naming::LiveFiles {
        logs: bases,
        indexes: index_files,
        snapshots,
    } = naming::live_files(&names);

    // The recovery point, as open finds it.
    let line = dir
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(TopicPartition::from_dir_name)
        .and_then(|tp| recovery_points.as_ref()?.get(&tp).copied());
    let last_base = bases.last().copied().unwrap_or(0);
    let recovery_point = line.unwrap_or(last_base);
    // The first segment open re-validates: the one holding the recovery
    // point, at least the last one.
    let first_unflushed = bases
        .iter()
        .copied()
        .filter(|b| *b <= recovery_point)
        .max()
        .unwrap_or(i64::MIN)
        .min(last_base);

    let config = LogConfig::default();
    let mut ends: Vec<(i64, i64, PathBuf)> = Vec::new();
    let mut truncated_at: Option<PathBuf> = None;
    for (i, &base) in bases.iter().enumerate() {
        let next_base = bases.get(i + 1).copied().unwrap_or(i64::MAX);
        let (seg, problem) = LogSegment::open(fs.clone(), dir, base, Suffix::None, &config, 0)?;
        report.segments += 1;
        let path = seg.log_path().to_path_buf();
        if let Some(earlier) = &truncated_at {
            report.warning(
                &path,
                None,
                format!(
                    "open removes this segment (keeping it in lost/): it follows {}, which it truncates",
                    earlier.display()
                ),
            );
            continue;
        }
        let scan = scan_segment(&seg, next_base);
        report.batches += scan.batches;
        let unflushed = base >= first_unflushed;
        match &problem {
            Some(SegmentProblem::LogCutShort { size, message }) if !unflushed => {
                report.problem(
                    &path,
                    Some(*size),
                    format!(
                        "the .log was cut short below the recovery point {recovery_point}: {message}; open refuses it"
                    ),
                );
            }
            Some(SegmentProblem::LogCutShort { message, .. })
            | Some(SegmentProblem::Index(message))
                if scan.damage.is_none() =>
            {
                report.warning(
                    &path,
                    None,
                    format!("open rebuilds this segment's indexes from its .log: {message}"),
                );
            }
            _ => {}
        }
        if let Some(problem) = seg.txn_index_problem() {
            report.warning(
                &path,
                None,
                format!("open rebuilds its .txnindex from the log: {problem}"),
            );
        }
        if let Some(d) = &scan.damage {
            if d.truncatable && unflushed && d.next_offset >= recovery_point {
                report.warning(
                    &path,
                    Some(d.position),
                    format!(
                        "open truncates the segment here, above the recovery point {recovery_point} (bytes never flushed), keeping the {} bytes dropped in lost/: {}",
                        seg.size() - d.position,
                        d.message
                    ),
                );
                truncated_at = Some(path.clone());
            } else {
                let verdict = if unflushed || !d.truncatable {
                    "refused by open, reads and the cleaner"
                } else {
                    "refused by reads and the cleaner (open checks only a segment's tail)"
                };
                report.problem(
                    &path,
                    Some(d.position),
                    format!(
                        "damage below the recovery point {recovery_point} (offset {} or a later one should start here), {verdict}: {}",
                        d.next_offset, d.message
                    ),
                );
            }
        }
        ends.push((base, scan.next_offset, path));
    }

    // Offset gaps between segments.
    for pair in ends.windows(2) {
        let ((_, end, this), (next_base, _, next)) = (&pair[0], &pair[1]);
        if end < next_base {
            let inside: Vec<&str> = snapshots
                .iter()
                .filter(|(o, _)| o > end && o < next_base)
                .map(|(_, n)| n.as_str())
                .collect();
            let trace = if inside.is_empty() {
                "normal after cleaning, which removes records and keeps segment base offsets; a segment removed from the middle with its index files looks the same".to_string()
            } else {
                format!(
                    "the producer snapshot {} lies in the gap, and snapshots are taken at segment bases: a segment that started there is probably missing",
                    inside.join(", ")
                )
            };
            report.warning(
                this,
                None,
                format!(
                    "offsets {end}..{next_base} are in no segment: this segment ends at offset {}, the next one, {}, starts at {next_base} ({trace})",
                    end - 1,
                    next.display()
                ),
            );
        }
    }

    // The log end, against the recovery point and stray index files.
    let log_end = ends.last().map_or(0, |(_, end, _)| *end);
    if truncated_at.is_none()
        && let Some(line) = line
        && line > log_end
        && !swaps
    {
        let last = ends
            .last()
            .map_or_else(|| dir.to_path_buf(), |(_, _, p)| p.clone());
        report.problem(
            &last,
            None,
            format!(
                "the log ends at offset {log_end}, below its recovery point {line} in {}: flushed records are missing, and open refuses the log (remove the log's line from that file if they were removed on purpose)",
                parent_dir(dir)
                    .join(checkpoint::RECOVERY_POINT_FILE_NAME)
                    .display()
            ),
        );
    }
    for (base, name) in &index_files {
        if bases.binary_search(base).is_ok() {
            continue;
        }
        let path = dir.join(name);
        if *base < log_end.max(line.unwrap_or(0)) {
            report.problem(
                &path,
                None,
                format!(
                    "its .log is missing from the middle of the log (which goes on to offset {log_end}): the records of that segment are gone, and open refuses the log (remove the index file if the segment was removed on purpose)"
                ),
            );
        } else {
            report.warning(
                &path,
                None,
                "an index file without its .log beyond the log's end (what an interrupted removal leaves): open removes it",
            );
        }
    }

    // Producer snapshots.
    for (offset, name) in &snapshots {
        let path = dir.join(name);
        let bytes = lithify_vfs::read_file(&**fs, &path).context(IoSnafu {
            action: "read",
            path: &path,
        })?;
        if let Err(e) = producer_snapshot::decode(&path, &bytes) {
            report.warning(
                &path,
                e.file_offset().map(|(_, o)| o),
                format!(
                    "open removes this unreadable producer snapshot and replays producer state from an earlier one or the log start, losing nothing: {e}"
                ),
            );
        } else if *offset > log_end {
            report.warning(
                &path,
                None,
                format!("beyond the log end {log_end}: open removes it"),
            );
        }
    }

    // Transaction indexes against the markers, as the cleaner reads them
    // (of a log whose batches all read; an unreadable `.txnindex` is one
    // open rebuilds, reported above).
    if truncated_at.is_none() && report.problems.len() == problems_before {
        match txn_check::check_dir(&**fs, dir) {
            Ok(check) => report.problems.extend(check.problems.into_iter().map(|mut p| {
                p.message = format!(
                    "{}; the cleaner refuses a round that meets it (reopen with recovery point 0 to rebuild the indexes)",
                    p.message
                );
                p
            })),
            Err(e) if e.is_corruption() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
