//! One segment of a log: a `.log` of batches with its `.index`,
//! `.timeindex` and, when it holds aborted transactions, `.txnindex`
//! (Kafka's `LogSegment`).
//!
//! A segment is *active* (open for appends, index files preallocated) or
//! *inactive* (read-only, index files trimmed to their entries). The
//! cleaner also writes segments under the `.cleaned` suffix and renames
//! them through `.swap` ([`LogSegment::change_suffix`]).
//!
//! Index entries follow Kafka's rule on append: when more than
//! `index.interval.bytes` bytes were appended since the last entry, the
//! append adds `(largest offset of the appended chunk -> position where the
//! chunk starts)` and a time-index entry `(largest timestamp so far, its
//! offset)`. The first append never adds one. Recovery rebuilds the same
//! entries batch by batch.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lithify_vfs::{FileSystem, RandomAccessFile, WritableFile, lost};
use snafu::ResultExt as _;

use crate::config::LogConfig;
use crate::error::{DamagedBelowRecoveryPointSnafu, Error, InvalidArgumentSnafu, IoSnafu, Result};
use crate::file_batches::FileBatches;
use crate::index::{OffsetIndex, TimeIndex, TimestampOffset};
use crate::naming::{FileKind, Suffix, file_name};
use crate::record::BatchPrefix;
use crate::record::RecordBatch;
use crate::record::layout::{HEADER_SIZE_UP_TO_MAGIC, MAGIC_V2, NO_TIMESTAMP};
use crate::txn_index::{self, AbortedTxn, TransactionIndex, TxnSearch};

/// What recovering one segment found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentRecovery {
    /// The segment.
    pub base_offset: i64,
    /// Bytes of valid batches kept.
    pub valid_bytes: u64,
    /// Bytes cut off after the last valid batch.
    pub truncated_bytes: u64,
    /// Why the scan stopped before the end of the file, if it did: a torn
    /// tail or the corruption error of the first invalid batch.
    pub reason: Option<String>,
    /// The offset after the last valid batch: the first offset dropped
    /// when bytes were truncated.
    pub next_offset: i64,
    /// Where the truncated bytes were kept (under the partition's `lost/`).
    pub kept_at: Option<PathBuf>,
}

/// What [`LogSegment::open`] found wrong with a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SegmentProblem {
    /// An index is missing, malformed, or does not match the `.log`; the
    /// `.log` itself looked whole. Re-validating the `.log` rebuilds the
    /// indexes (and finds any damage in it).
    Index(String),
    /// The `.log` holds an invalid batch header after the last index
    /// entry, or does not end with a whole batch.
    Log(String),
    /// Both the `.log` ends and an index describes more: the `.log` was
    /// cut short at `size` (or the index is damaged in a way that looks
    /// the same). Re-validating cannot find what is gone.
    LogCutShort {
        /// The size of the `.log`.
        size: u64,
        /// What the indexes say that the `.log` does not hold.
        message: String,
    },
}

impl std::fmt::Display for SegmentProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SegmentProblem::Index(m) | SegmentProblem::Log(m) => f.write_str(m),
            SegmentProblem::LogCutShort { message, .. } => f.write_str(message),
        }
    }
}

/// One batch of a chunk given to [`LogSegment::append_batches`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendedBatch {
    /// Bytes of the batch.
    pub size: u32,
    /// Its last offset.
    pub last_offset: i64,
    /// Its max timestamp.
    pub max_timestamp: i64,
}

/// What decides whether the active segment rolls before an append
/// (Kafka's `RollParams`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RollParams {
    /// `segment.bytes`.
    pub(crate) max_segment_bytes: i32,
    /// `segment.ms`.
    pub(crate) max_segment_ms: i64,
    /// Bytes about to be appended.
    pub(crate) messages_size: u64,
    /// Largest timestamp about to be appended.
    pub(crate) max_timestamp_in_messages: i64,
    /// Largest offset about to be appended.
    pub(crate) max_offset_in_messages: i64,
    /// The clock's time.
    pub(crate) now_ms: i64,
}

/// A segment: its files, in-memory indexes and bookkeeping.
#[derive(Debug)]
pub struct LogSegment {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    base_offset: i64,
    suffix: Suffix,
    log_path: Arc<PathBuf>,
    reader: Arc<dyn RandomAccessFile>,
    writer: Option<Box<dyn WritableFile>>,
    size: u64,
    offset_index: OffsetIndex,
    time_index: TimeIndex,
    txn_index: TransactionIndex,
    /// Why the `.txnindex` found at open cannot be used (it is then
    /// rebuilt from the log by [`Log::open`](crate::Log::open)).
    txn_index_problem: Option<String>,
    index_interval_bytes: u64,
    max_index_size: u64,
    bytes_since_last_index_entry: u64,
    max_timestamp_so_far: TimestampOffset,
    rolling_based_timestamp: Option<i64>,
    created_ms: i64,
    next_offset: i64,
}

fn path_of(dir: &Path, base: i64, kind: FileKind, suffix: Suffix) -> PathBuf {
    dir.join(file_name(base, kind, suffix))
}

impl LogSegment {
    /// Creates an empty, active segment at `base_offset` (its `.log`
    /// truncated if it exists, its indexes preallocated). The caller syncs
    /// the directory.
    pub fn create(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        base_offset: i64,
        suffix: Suffix,
        config: &LogConfig,
        now_ms: i64,
    ) -> Result<LogSegment> {
        let log_path = path_of(dir, base_offset, FileKind::Log, suffix);
        let writer = fs.create(&log_path).context(IoSnafu {
            action: "create",
            path: &log_path,
        })?;
        let reader = fs.open(&log_path).context(IoSnafu {
            action: "open",
            path: &log_path,
        })?;
        let max_index_size = config.segment_index_bytes as u64;
        let mut offset_index = OffsetIndex::new(
            fs.clone(),
            path_of(dir, base_offset, FileKind::Index, suffix),
            base_offset,
            max_index_size,
        );
        let mut time_index = TimeIndex::new(
            fs.clone(),
            path_of(dir, base_offset, FileKind::TimeIndex, suffix),
            base_offset,
            max_index_size,
        );
        offset_index.write_file(true)?;
        time_index.write_file(true)?;
        // A stale `.txnindex` of the same name (an earlier segment there)
        // must not be appended to.
        let mut txn_index = TransactionIndex::new(
            fs.clone(),
            path_of(dir, base_offset, FileKind::TxnIndex, suffix),
        );
        txn_index.delete()?;
        Ok(LogSegment {
            fs,
            dir: dir.to_path_buf(),
            base_offset,
            suffix,
            log_path: Arc::new(log_path),
            reader,
            writer: Some(writer),
            size: 0,
            offset_index,
            time_index,
            txn_index,
            txn_index_problem: None,
            index_interval_bytes: config.index_interval_bytes as u64,
            max_index_size,
            bytes_since_last_index_entry: 0,
            max_timestamp_so_far: TimestampOffset {
                timestamp: NO_TIMESTAMP,
                offset: base_offset,
            },
            rolling_based_timestamp: None,
            created_ms: now_ms,
            next_offset: base_offset,
        })
    }

    /// Opens the existing segment at `base_offset`, read-only. Returns with
    /// it what is wrong with it, if anything (then call
    /// [`LogSegment::recover`], or refuse the segment; see
    /// [`SegmentProblem`]).
    ///
    /// Besides loading both indexes (missing or malformed: an index
    /// problem), it reads the batches after the last offset-index entry, as
    /// Kafka's `readNextOffset` does, and checks what it can without
    /// reading more: the entry points at a batch boundary at or before its
    /// offset, the file ends with a whole batch, the time index's last
    /// entry matches its batch, and neither index describes bytes the
    /// `.log` does not hold (a `.log` cut short).
    pub(crate) fn open(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        base_offset: i64,
        suffix: Suffix,
        config: &LogConfig,
        now_ms: i64,
    ) -> Result<(LogSegment, Option<SegmentProblem>)> {
        let log_path = path_of(dir, base_offset, FileKind::Log, suffix);
        let reader = fs.open(&log_path).context(IoSnafu {
            action: "open",
            path: &log_path,
        })?;
        let size = reader.size().context(IoSnafu {
            action: "stat",
            path: &log_path,
        })?;
        let max_index_size = config.segment_index_bytes as u64;
        let index_path = path_of(dir, base_offset, FileKind::Index, suffix);
        let time_path = path_of(dir, base_offset, FileKind::TimeIndex, suffix);
        let mut problem = None;
        let mut offset_index_loaded = true;
        let offset_index = match OffsetIndex::load(fs.clone(), index_path.clone(), base_offset) {
            Ok(Some(i)) => i,
            Ok(None) => {
                offset_index_loaded = false;
                problem = Some(SegmentProblem::Index(format!(
                    "offset index {} is missing",
                    index_path.display()
                )));
                OffsetIndex::new(fs.clone(), index_path, base_offset, max_index_size)
            }
            Err(e) if e.is_corruption() => {
                offset_index_loaded = false;
                problem = Some(SegmentProblem::Index(e.to_string()));
                OffsetIndex::new(fs.clone(), index_path, base_offset, max_index_size)
            }
            Err(e) => return Err(e),
        };
        let time_index = match TimeIndex::load(fs.clone(), time_path.clone(), base_offset) {
            Ok(Some(i)) => i,
            Ok(None) => {
                problem.get_or_insert(SegmentProblem::Index(format!(
                    "time index {} is missing",
                    time_path.display()
                )));
                TimeIndex::new(fs.clone(), time_path, base_offset, max_index_size)
            }
            Err(e) if e.is_corruption() => {
                problem.get_or_insert(SegmentProblem::Index(e.to_string()));
                TimeIndex::new(fs.clone(), time_path, base_offset, max_index_size)
            }
            Err(e) => return Err(e),
        };
        let txn_path = path_of(dir, base_offset, FileKind::TxnIndex, suffix);
        let (txn_index, mut txn_index_problem) =
            match TransactionIndex::load(fs.clone(), txn_path.clone(), base_offset) {
                Ok(i) => (i, None),
                Err(e) if e.is_corruption() => (
                    TransactionIndex::new(fs.clone(), txn_path),
                    Some(e.to_string()),
                ),
                Err(e) => return Err(e),
            };
        let mut segment = LogSegment {
            fs,
            dir: dir.to_path_buf(),
            base_offset,
            suffix,
            log_path: Arc::new(log_path),
            reader,
            writer: None,
            size,
            max_timestamp_so_far: time_index.last_entry(),
            offset_index,
            time_index,
            txn_index,
            txn_index_problem: None,
            index_interval_bytes: config.index_interval_bytes as u64,
            max_index_size,
            bytes_since_last_index_entry: 0,
            rolling_based_timestamp: None,
            created_ms: now_ms,
            next_offset: base_offset,
        };
        if offset_index_loaded {
            let tail_problem = segment.check_tail()?;
            problem = match (problem, tail_problem) {
                (_, Some(cut @ SegmentProblem::LogCutShort { .. })) => Some(cut),
                (Some(p), _) => Some(p),
                (None, t) => t,
            };
            // An aborted transaction whose marker is past the `.log`'s end.
            if let Some(last) = segment.txn_index.entries().last()
                && txn_index_problem.is_none()
                && last.last_offset >= segment.next_offset
            {
                txn_index_problem = Some(format!(
                    "transaction index {} has an aborted transaction ending at offset {}, past the end of its segment (offset {})",
                    segment.txn_index.path().display(),
                    last.last_offset,
                    segment.next_offset
                ));
            }
        }
        segment.txn_index_problem = txn_index_problem;
        Ok((segment, problem))
    }

    /// Reads the batches after the last offset-index entry (finding the
    /// next offset and any larger timestamp) and checks them against both
    /// indexes; see [`LogSegment::open`].
    fn check_tail(&mut self) -> Result<Option<SegmentProblem>> {
        let size = self.size;
        let path = self.log_path.display().to_string();
        let entry = self.offset_index.last_entry();
        let time_entry = self.time_index.last_entry();
        // An offset-index entry past the end of the `.log`: the `.log` lost
        // its end, or the entry is damaged. Read the whole segment and let
        // the time index (a file of its own) tell which.
        let beyond = !self.offset_index.is_empty() && u64::from(entry.position) >= size;
        let start = if beyond { 0 } else { u64::from(entry.position) };
        let mut tail_max_timestamp = NO_TIMESTAMP;
        let mut time_entry_matches = false;
        let mut time_entry_checked = self.time_index.is_empty();
        let mut first = !beyond;
        let mut problem = None;
        let mut batches = FileBatches::new(self.reader.clone(), self.log_path.clone(), start, size);
        for batch in &mut batches {
            let b = match batch {
                Ok(b) => b,
                Err(e) if e.is_corruption() => {
                    problem = Some(SegmentProblem::Log(e.to_string()));
                    break;
                }
                Err(e) => return Err(e),
            };
            // An entry names a batch boundary at or before its offset (we
            // write the batch's last offset; Kafka's append writes the last
            // offset of a chunk of batches, so a follower's entry may lie
            // past the first batch at its position).
            if first && !self.offset_index.is_empty() && b.base_offset() > entry.offset {
                problem = Some(SegmentProblem::Index(format!(
                    "the last entry of offset index {} says offset {} is in the batch at byte offset {}, but that batch starts at offset {}",
                    self.offset_index.path().display(),
                    entry.offset,
                    entry.position,
                    b.base_offset()
                )));
            }
            first = false;
            if !self.time_index.is_empty() && b.last_offset() == time_entry.offset {
                time_entry_checked = true;
                time_entry_matches = b.max_timestamp() == time_entry.timestamp;
                if !time_entry_matches {
                    problem.get_or_insert(SegmentProblem::Index(format!(
                        "the last entry of time index {} says timestamp {} at offset {}, but that batch's max timestamp is {}",
                        self.time_index.path().display(),
                        time_entry.timestamp,
                        time_entry.offset,
                        b.max_timestamp()
                    )));
                }
            }
            tail_max_timestamp = tail_max_timestamp.max(b.max_timestamp());
            self.observe_batch(&b);
        }
        if problem.is_none() && batches.position() < size {
            problem = Some(SegmentProblem::Log(format!(
                "corruption in {path} at byte offset {}: the last {} bytes are not a complete batch",
                batches.position(),
                size - batches.position()
            )));
        }
        if let Some(p @ SegmentProblem::Log(_)) = problem {
            return Ok(Some(p));
        }
        // The time index knows offsets the `.log` does not hold, with a
        // timestamp later than any left: the `.log` lost its end.
        let cut_by_time = !self.time_index.is_empty()
            && time_entry.offset >= self.next_offset
            && time_entry.timestamp > tail_max_timestamp;
        if beyond {
            if time_entry_matches && !cut_by_time {
                return Ok(Some(SegmentProblem::Index(format!(
                    "offset index {} has an entry for offset {} at byte offset {}, past the end of the log ({size} bytes), which its time index agrees with",
                    self.offset_index.path().display(),
                    entry.offset,
                    entry.position
                ))));
            }
            return Ok(Some(SegmentProblem::LogCutShort {
                size,
                message: format!(
                    "{path} ends at byte offset {size}, but its offset index has an entry for offset {} at byte offset {}",
                    entry.offset, entry.position
                ),
            }));
        }
        if cut_by_time {
            return Ok(Some(SegmentProblem::LogCutShort {
                size,
                message: format!(
                    "{path} ends at byte offset {size} with offset {}, but its time index has an entry for offset {} (timestamp {}, later than any left)",
                    self.next_offset - 1,
                    time_entry.offset,
                    time_entry.timestamp
                ),
            }));
        }
        if problem.is_some() {
            return Ok(problem);
        }
        if !time_entry_checked && time_entry.offset >= entry.offset {
            return Ok(Some(SegmentProblem::Index(format!(
                "the last entry of time index {} names offset {}, which ends no batch of the log",
                self.time_index.path().display(),
                time_entry.offset
            ))));
        }
        Ok(None)
    }

    fn observe_batch(&mut self, b: &RecordBatch) {
        self.observe_max_timestamp(b.max_timestamp(), b.last_offset());
        self.next_offset = self.next_offset.max(b.next_offset());
    }

    /// Re-validates every batch (size, magic, CRC, codec, offsets within the
    /// segment's range) and rebuilds both indexes (Kafka's
    /// `LogSegment.recover`). With `active`, the segment is left open for
    /// appends with preallocated indexes; otherwise its indexes are
    /// trimmed. Everything is synced.
    ///
    /// Where the first invalid batch (or a batch cut short) is found,
    /// `recovery_point` decides:
    ///
    /// * if the valid batches before it end below `recovery_point`, the
    ///   damage is in bytes that were flushed: nothing is changed and the
    ///   result is [`Error::DamagedBelowRecoveryPoint`], naming the file and
    ///   the byte offset (pass `i64::MAX` to refuse any damage);
    /// * otherwise the bytes from there to the end were never flushed:
    ///   they are copied to the partition's `lost/` directory (see
    ///   [`lithify_vfs::lost`]), then the `.log` is truncated after the last valid
    ///   batch, and [`SegmentRecovery`] says what was dropped and where it
    ///   was kept (pass `i64::MIN` to allow any truncation).
    ///
    /// A batch in an old message format (magic 0 or 1) is an error, not a
    /// truncation point: it is valid data we cannot read.
    pub(crate) fn recover(&mut self, active: bool, recovery_point: i64) -> Result<SegmentRecovery> {
        self.recover_checked(active, recovery_point, &|_, _| Ok(()))
    }

    /// [`LogSegment::recover`], calling `check_end(next offset, valid
    /// bytes)` once the batches are validated and before anything is
    /// written: an error from it leaves the files as they were.
    pub(crate) fn recover_checked(
        &mut self,
        active: bool,
        recovery_point: i64,
        check_end: &dyn Fn(i64, u64) -> Result<()>,
    ) -> Result<SegmentRecovery> {
        self.writer = None;
        self.offset_index.reset(self.max_index_size);
        self.time_index.reset(self.max_index_size);
        self.max_timestamp_so_far = TimestampOffset {
            timestamp: NO_TIMESTAMP,
            offset: self.base_offset,
        };
        self.next_offset = self.base_offset;
        self.rolling_based_timestamp = None;
        let size = self.reader.size().context(IoSnafu {
            action: "stat",
            path: self.log_path.as_path(),
        })?;
        let mut valid: u64 = 0;
        self.bytes_since_last_index_entry = 0;
        let mut reason = None;
        let mut batches = FileBatches::new(self.reader.clone(), self.log_path.clone(), 0, size);
        for item in &mut batches {
            let checked = item.and_then(|b| {
                b.ensure_valid()?;
                self.check_offset_range(&b)?;
                Ok(b)
            });
            // Offsets only grow from batch to batch (the cleaner leaves gaps,
            // never reorders): a base offset below the previous batch's next
            // offset is a damaged, CRC-less header field.
            let checked = checked.and_then(|b| {
                if b.base_offset() < self.next_offset {
                    return crate::error::CorruptSnafu {
                        path: b.path().map(Path::to_path_buf).unwrap_or_default(),
                        offset: b.position(),
                        message: format!(
                            "batch base offset {} is below the previous batch's next offset {}",
                            b.base_offset(),
                            self.next_offset
                        ),
                    }
                    .fail();
                }
                Ok(b)
            });
            let batch = match checked {
                Ok(b) => b,
                Err(e @ Error::UnsupportedMagic { .. }) => return Err(e),
                Err(e) if e.is_corruption() => {
                    reason = Some(e.to_string());
                    break;
                }
                Err(e) => return Err(e),
            };
            if self.rolling_based_timestamp.is_none() {
                self.rolling_based_timestamp = Some(batch.max_timestamp());
            }
            self.observe_batch(&batch);
            // Like Kafka, but a rebuild never fails on an index that a
            // smaller `segment.index.bytes` made too small: it skips entries.
            self.index_batch(
                batch.last_offset(),
                valid,
                batch.size_in_bytes() as u64,
                true,
            )?;
            valid += batch.size_in_bytes() as u64;
        }
        if reason.is_none() && valid < size {
            reason = Some(format!(
                "the last {} bytes at byte offset {valid} are not a complete batch",
                size - valid
            ));
        }
        let truncated = size - valid;
        let mut kept_at = None;
        if truncated == 0 || self.next_offset >= recovery_point {
            check_end(self.next_offset, valid)?;
        }
        if truncated > 0 {
            if self.next_offset < recovery_point {
                return DamagedBelowRecoveryPointSnafu {
                    path: (*self.log_path).clone(),
                    offset: valid,
                    recovery_point,
                    next_offset: self.next_offset,
                    reason: reason.clone().unwrap_or_default(),
                }
                .fail();
            }
            kept_at = Some(
                lost::keep_range(
                    &*self.fs,
                    &self.dir,
                    &self.log_path,
                    &*self.reader,
                    valid,
                    size,
                )
                .context(IoSnafu {
                    action: "keep in lost/",
                    path: self.log_path.as_path(),
                })?,
            );
        }
        let mut writer = self.fs.open_append(&self.log_path).context(IoSnafu {
            action: "open",
            path: self.log_path.as_path(),
        })?;
        if truncated > 0 {
            writer.set_len(valid).context(IoSnafu {
                action: "truncate",
                path: self.log_path.as_path(),
            })?;
            writer.sync_data().context(IoSnafu {
                action: "sync",
                path: self.log_path.as_path(),
            })?;
        }
        self.size = valid;
        let m = self.max_timestamp_so_far;
        self.time_index.maybe_append(m.timestamp, m.offset, true)?;
        self.offset_index.write_file(active)?;
        self.time_index.write_file(active)?;
        if active {
            self.offset_index.sync()?;
            self.time_index.sync()?;
            self.writer = Some(writer);
        }
        Ok(SegmentRecovery {
            base_offset: self.base_offset,
            valid_bytes: valid,
            truncated_bytes: truncated,
            reason,
            next_offset: self.next_offset,
            kept_at,
        })
    }

    fn check_offset_range(&self, b: &RecordBatch) -> Result<()> {
        let rel_last = b.last_offset().checked_sub(self.base_offset);
        if b.base_offset() < self.base_offset || rel_last.is_none_or(|r| r > i64::from(i32::MAX)) {
            let path = (*self.log_path).clone();
            return Err(crate::error::CorruptSnafu {
                path,
                offset: b.position(),
                message: format!(
                    "batch offsets {}..={} are outside the range of segment {}",
                    b.base_offset(),
                    b.last_offset(),
                    self.base_offset
                ),
            }
            .build());
        }
        Ok(())
    }

    /// Opens an inactive segment for appends again (it becomes the active
    /// segment): the `.log` is opened at its end and the indexes are
    /// preallocated to `segment.index.bytes`.
    pub(crate) fn make_active(&mut self) -> Result<()> {
        if self.writer.is_some() {
            return Ok(());
        }
        let writer = self.fs.open_append(&self.log_path).context(IoSnafu {
            action: "open",
            path: self.log_path.as_path(),
        })?;
        self.offset_index.resize(self.max_index_size)?;
        self.time_index.resize(self.max_index_size)?;
        self.writer = Some(writer);
        Ok(())
    }

    /// Appends `records` (whole batches, `largest_offset` the last offset
    /// among them, `largest_timestamp` their max timestamp reached at
    /// `offset_of_max_timestamp`), adding index entries by Kafka's rule.
    pub fn append(
        &mut self,
        largest_offset: i64,
        largest_timestamp: i64,
        offset_of_max_timestamp: i64,
        records: &[u8],
    ) -> Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        if !self.can_convert_to_relative_offset(largest_offset) {
            return InvalidArgumentSnafu {
                message: format!(
                    "offset {largest_offset} does not fit segment {} (more than 2^31 - 1 above its base)",
                    self.base_offset
                ),
            }
            .fail();
        }
        self.write(records)?;
        let position = self.size;
        if position == 0 {
            self.rolling_based_timestamp = Some(largest_timestamp);
        }
        self.size += records.len() as u64;
        self.observe_max_timestamp(largest_timestamp, offset_of_max_timestamp);
        self.index_batch(largest_offset, position, records.len() as u64, false)?;
        self.next_offset = self.next_offset.max(largest_offset + 1);
        Ok(())
    }

    /// Writes `bytes` at the end of the `.log`; an error for a segment not
    /// open for appends.
    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        let Some(writer) = self.writer.as_mut() else {
            return InvalidArgumentSnafu {
                message: format!(
                    "segment {} is not open for appends",
                    self.log_path.display()
                ),
            }
            .fail();
        };
        writer.append(bytes).context(IoSnafu {
            action: "append to",
            path: self.log_path.as_path(),
        })
    }

    fn observe_max_timestamp(&mut self, timestamp: i64, offset: i64) {
        if timestamp > self.max_timestamp_so_far.timestamp {
            self.max_timestamp_so_far = TimestampOffset { timestamp, offset };
        }
    }

    /// Kafka's index rule for `size` bytes at `position` ending at offset
    /// `last_offset`: when more than `index.interval.bytes` bytes precede
    /// them since the last entry, the offset index gets `(last_offset ->
    /// position)` and the time index the largest timestamp so far. With
    /// `lenient` (a rebuild, or the cleaner's output), an entry is skipped
    /// rather than refused when an index is full or the position does not
    /// fit an i32 (a rare cleaned segment grown past 2 GiB).
    fn index_batch(
        &mut self,
        last_offset: i64,
        position: u64,
        size: u64,
        lenient: bool,
    ) -> Result<()> {
        let room = !self.offset_index.is_full()
            && !self.time_index.is_full()
            && position <= i32::MAX as u64;
        if self.bytes_since_last_index_entry > self.index_interval_bytes && (room || !lenient) {
            self.offset_index.append(last_offset, position as u32)?;
            let m = self.max_timestamp_so_far;
            self.time_index.maybe_append(m.timestamp, m.offset, false)?;
            self.bytes_since_last_index_entry = 0;
        }
        self.bytes_since_last_index_entry += size;
        Ok(())
    }

    /// Appends whole batches with one write (the cleaner's output), adding
    /// index entries batch by batch exactly as recovery (on
    /// [`Log::open`](crate::Log::open)) rebuilds them: an entry `(batch last offset -> batch position)`
    /// whenever more than `index.interval.bytes` bytes precede the batch
    /// since the last entry, skipped when an index is full. A cleaned
    /// segment's indexes are therefore the ones recovery would build.
    /// `batches` describes the batches of `bytes`, in order.
    pub fn append_batches(&mut self, bytes: &[u8], batches: &[AppendedBatch]) -> Result<()> {
        let (Some(first), Some(last)) = (batches.first(), batches.last()) else {
            return Ok(());
        };
        let total: u64 = batches.iter().map(|b| u64::from(b.size)).sum();
        if total != bytes.len() as u64
            || !self.can_convert_to_relative_offset(first.last_offset)
            || !self.can_convert_to_relative_offset(last.last_offset)
        {
            return InvalidArgumentSnafu {
                message: format!(
                    "batches ending at offsets {}..={} ({total} bytes described, {} given) do not fit segment {}",
                    first.last_offset,
                    last.last_offset,
                    bytes.len(),
                    self.base_offset
                ),
            }
            .fail();
        }
        self.write(bytes)?;
        for b in batches {
            let position = self.size;
            if position == 0 {
                self.rolling_based_timestamp = Some(b.max_timestamp);
            }
            self.observe_max_timestamp(b.max_timestamp, b.last_offset);
            self.index_batch(b.last_offset, position, u64::from(b.size), true)?;
            self.size += u64::from(b.size);
            self.next_offset = self.next_offset.max(b.last_offset + 1);
        }
        Ok(())
    }

    /// The `.log` file's reader and path, to read the segment without
    /// borrowing it (the cleaner reads inactive segments outside the log's
    /// lock; they never change until the cleaner itself replaces them).
    pub(crate) fn file(&self) -> (Arc<dyn RandomAccessFile>, Arc<PathBuf>) {
        (self.reader.clone(), self.log_path.clone())
    }

    /// The max timestamp of the first batch, if known without I/O.
    pub(crate) fn known_first_batch_timestamp(&self) -> Option<Option<i64>> {
        self.rolling_based_timestamp
            .map(|ts| (ts >= 0).then_some(ts))
    }

    /// Whether `offset` can be stored relative to the base offset (i32).
    pub(crate) fn can_convert_to_relative_offset(&self, offset: i64) -> bool {
        offset
            .checked_sub(self.base_offset)
            .is_some_and(|r| (0..=i64::from(i32::MAX)).contains(&r))
    }

    /// Kafka's `shouldRoll`: the append would overflow `segment.bytes`, the
    /// segment is older than `segment.ms` (measured in record time when the
    /// first batch has a timestamp, else wall-clock since creation), an
    /// index is full, or the offsets would not fit.
    pub(crate) fn should_roll(&self, p: &RollParams) -> bool {
        let reached_roll_ms =
            self.time_waited_for_roll(p.now_ms, p.max_timestamp_in_messages) > p.max_segment_ms;
        self.size > (p.max_segment_bytes as u64).saturating_sub(p.messages_size)
            || (self.size > 0 && reached_roll_ms)
            || self.offset_index.is_full()
            || self.time_index.is_full()
            || !self.can_convert_to_relative_offset(p.max_offset_in_messages)
    }

    fn time_waited_for_roll(&self, now_ms: i64, message_timestamp: i64) -> i64 {
        match self.rolling_based_timestamp {
            Some(ts) if ts >= 0 => message_timestamp.saturating_sub(ts),
            _ => now_ms.saturating_sub(self.created_ms),
        }
    }

    /// The segment stops being active: the time index gets the largest
    /// timestamp as its last entry, both indexes are trimmed and every
    /// file is synced.
    pub fn on_become_inactive(&mut self) -> Result<()> {
        let m = self.max_timestamp_so_far;
        self.time_index.maybe_append(m.timestamp, m.offset, true)?;
        self.flush()?;
        self.offset_index.trim()?;
        self.time_index.trim()?;
        self.txn_index.close()?;
        self.writer = None;
        Ok(())
    }

    /// Trims both index files to their entries, best effort (what a
    /// dropped [`Log`](crate::Log) does for its active segment; the index
    /// files stay writable in memory only until then).
    pub(crate) fn trim_indexes_best_effort(&mut self) {
        let _ = self.offset_index.trim();
        let _ = self.time_index.trim();
    }

    /// Makes the `.log` and index writes so far durable.
    pub fn flush(&mut self) -> Result<()> {
        if let Some(w) = &mut self.writer {
            w.sync_data().context(IoSnafu {
                action: "sync",
                path: self.log_path.as_path(),
            })?;
        }
        self.offset_index.sync()?;
        self.time_index.sync()?;
        self.txn_index.sync()
    }

    /// Renames every file of the segment to carry `suffix` (in Kafka's
    /// order: log, index, time index, transaction index). The caller syncs
    /// the directory.
    pub(crate) fn change_suffix(&mut self, suffix: Suffix) -> Result<()> {
        let new_log = path_of(&self.dir, self.base_offset, FileKind::Log, suffix);
        self.fs.rename(&self.log_path, &new_log).context(IoSnafu {
            action: "rename",
            path: self.log_path.as_path(),
        })?;
        self.log_path = Arc::new(new_log);
        self.offset_index.rename(path_of(
            &self.dir,
            self.base_offset,
            FileKind::Index,
            suffix,
        ))?;
        self.time_index.rename(path_of(
            &self.dir,
            self.base_offset,
            FileKind::TimeIndex,
            suffix,
        ))?;
        self.txn_index.rename(path_of(
            &self.dir,
            self.base_offset,
            FileKind::TxnIndex,
            suffix,
        ))?;
        self.suffix = suffix;
        Ok(())
    }

    /// Removes every file of the segment. The caller syncs the directory.
    pub fn delete(mut self) -> Result<()> {
        self.writer = None;
        match self.fs.remove_file(&self.log_path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(e).context(IoSnafu {
                    action: "remove",
                    path: self.log_path.as_path(),
                });
            }
        }
        self.offset_index.delete()?;
        self.time_index.delete()?;
        self.txn_index.delete()
    }

    /// Batches of the whole segment, in order.
    pub fn batches(&self) -> FileBatches {
        self.batches_from_position(0)
    }

    /// Batches starting at byte `position` (a batch boundary).
    pub(crate) fn batches_from_position(&self, position: u64) -> FileBatches {
        FileBatches::new(
            self.reader.clone(),
            self.log_path.clone(),
            position,
            self.size,
        )
    }

    /// Batches that may hold `offset` or later ones: from the offset index's
    /// entry for `offset`; the caller skips batches ending below `offset`.
    pub(crate) fn batches_from_offset(&self, offset: i64) -> FileBatches {
        self.batches_from_position(self.checked_lookup(offset))
    }

    /// Where a scan for `offset` starts: the position of the offset index's
    /// entry for it, once checked against the `.log`: a whole batch must
    /// start there, at or before the entry's offset (so no batch the scan
    /// needs lies before it: ours end at the entry's offset, Kafka's may
    /// begin a chunk ending there). An entry that fails the check (an index
    /// damaged in a way that kept it well-formed) is not trusted: the scan
    /// starts at the beginning of the segment, which loses nothing, and a
    /// warning says so.
    pub(crate) fn checked_lookup(&self, offset: i64) -> u64 {
        let entry = self.offset_index.lookup(offset);
        let position = u64::from(entry.position);
        if position == 0 {
            return 0;
        }
        let ok = position + HEADER_SIZE_UP_TO_MAGIC as u64 <= self.size
            && self
                .reader
                .read_vec(position, HEADER_SIZE_UP_TO_MAGIC)
                .is_ok_and(|h| {
                    BatchPrefix::parse(&h).is_some_and(|p| {
                        p.magic == MAGIC_V2
                            && p.batch_size().is_some_and(|s| position + s <= self.size)
                            && p.base_offset <= entry.offset
                    })
                });
        if ok {
            return position;
        }
        tracing::warn!(
            index = %self.offset_index.path().display(),
            offset = entry.offset,
            position,
            "an offset index entry does not point at a batch holding its offset; scanning the segment from its start instead"
        );
        0
    }

    /// The segment's base offset.
    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }

    /// Bytes of its `.log`.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The offset after its last batch (its base offset when empty).
    pub fn next_offset(&self) -> i64 {
        self.next_offset
    }

    /// The largest record timestamp (-1 when none): what the cleaner's
    /// `min.compaction.lag.ms` test reads.
    pub fn largest_timestamp(&self) -> i64 {
        self.max_timestamp_so_far.timestamp
    }

    /// The max timestamp of the first batch (Kafka's
    /// `getFirstBatchTimestamp`), `None` when the segment is empty or the
    /// first batch has no timestamp.
    pub fn first_batch_timestamp(&self) -> Result<Option<i64>> {
        if let Some(ts) = self.rolling_based_timestamp {
            return Ok((ts >= 0).then_some(ts));
        }
        match self.batches().next() {
            Some(Ok(b)) => Ok((b.max_timestamp() >= 0).then_some(b.max_timestamp())),
            Some(Err(e)) => Err(e),
            None => Ok(None),
        }
    }

    /// Its offset index.
    pub fn offset_index(&self) -> &OffsetIndex {
        &self.offset_index
    }

    /// Its time index.
    pub fn time_index(&self) -> &TimeIndex {
        &self.time_index
    }

    /// The aborted transactions of its transaction index (`.txnindex`):
    /// those whose ABORT marker it holds.
    pub fn aborted_txns(&self) -> &[AbortedTxn] {
        self.txn_index.entries()
    }

    /// Records an aborted transaction whose ABORT marker this segment
    /// holds (Kafka's `updateTxnIndex`); a cleaner calls it for the
    /// markers it keeps. The entry is durable once the segment is flushed
    /// or made inactive.
    pub fn append_aborted_txn(&mut self, txn: AbortedTxn) -> Result<()> {
        self.txn_index.append(txn)
    }

    /// Replaces the transaction index with `entries` (a rebuild from the
    /// log), synced; no file when there are none.
    pub(crate) fn rewrite_txn_index(&mut self, entries: Vec<AbortedTxn>) -> Result<()> {
        self.txn_index.rewrite(entries)?;
        self.txn_index_problem = None;
        Ok(())
    }

    /// Why the `.txnindex` found when the segment was opened is not
    /// usable, if it is not.
    pub(crate) fn txn_index_problem(&self) -> Option<&str> {
        self.txn_index_problem.as_deref()
    }

    /// Kafka's `collectAbortedTxns` over this segment's index.
    pub(crate) fn collect_aborted_txns(&self, fetch_offset: i64, upper_bound: i64) -> TxnSearch {
        txn_index::collect(self.txn_index.entries(), fetch_offset, upper_bound)
    }

    /// The path of its `.log`.
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// Whether it is open for appends.
    pub fn is_active(&self) -> bool {
        self.writer.is_some()
    }
}
