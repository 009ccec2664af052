//! A partition's log: ordered segments, the last one active (Kafka's
//! `UnifiedLog` + `LocalLog`, without replication).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lithify_vfs::{FileLock, FileSystem};
use snafu::ResultExt as _;

use crate::TopicPartition;
use crate::checkpoint;
use crate::config::LogConfig;
use crate::error::{
    BatchTooLargeSnafu, CorruptSnafu, Error, InvalidArgumentSnafu, IoSnafu, KeylessRecordSnafu,
    PoisonedSnafu, ProducerStateSnafu, Result,
};
use crate::file_batches::{FileBatches, OffsetOrder};
use crate::loader::{self, LogLoader, recovery_point_path};
use crate::naming::{self, Suffix};
use crate::producer_state::{self, ProducerBatch, ProducerStateEntry, ProducerStateManager};
use crate::read_committed::CommittedRecords;
use crate::record::layout::{ATTRIBUTES_OFFSET, CRC_OFFSET, MAX_TIMESTAMP_OFFSET};
use crate::record::{
    BatchBuilder, EndTransactionMarker, Record, RecordBatch, SimpleRecord, TimestampType,
    TransactionResult,
};
use crate::record::{TIMESTAMP_TYPE_MASK, compute_crc};
use crate::recovery::LogRecoveryReport;
use crate::segment::{LogSegment, RollParams};
use crate::snapshot::{LogSnapshot, SegmentSnapshot};
use crate::txn_index::AbortedTxn;
use lithify_base::clock::{Clock, SystemClock};

/// How [`Log::open_with`] opens a log.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct OpenOptions {
    /// Kafka's recovery point: every batch below it was flushed. Segments
    /// from the one holding it on are re-validated batch by batch; damage
    /// in batches below it is refused, damage above it is truncated (and
    /// the bytes kept). `None`: the log's line in the data directory's
    /// `recovery-point-offset-checkpoint` (which [`Log::flush`],
    /// [`Log::roll`] and [`Log::close`] write), or, without one, the last
    /// segment's base offset (a segment is synced when it rolls). `Some(0)`
    /// re-validates everything and lets recovery truncate anywhere, as
    /// Kafka does without a checkpoint.
    pub recovery_point: Option<i64>,
    /// The clock for `segment.ms` rolls and LogAppendTime.
    pub clock: Arc<dyn Clock>,
}

lithify_base::options_builder!(OpenOptions {
    recovery_point: Option<i64>,
    clock: Arc<dyn Clock>,
});

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            recovery_point: None,
            clock: Arc::new(SystemClock),
        }
    }
}

/// Where an append landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendInfo {
    /// Offset of the batch's first record slot.
    pub first_offset: i64,
    /// Offset of its last record slot.
    pub last_offset: i64,
    /// The batch's max timestamp.
    pub max_timestamp: i64,
    /// Bytes of the batch.
    pub size: usize,
    /// Base offset of the segment it went to.
    pub segment_base_offset: i64,
}

/// The producer fields of a batch appended with [`Log::append_as`]:
/// Kafka's idempotent and transactional producers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Producer {
    /// The producer id (at least 0).
    pub producer_id: i64,
    /// Its epoch.
    pub producer_epoch: i16,
    /// The sequence number of the batch's first record (-1 for none).
    pub base_sequence: i32,
    /// Whether the batch belongs to the producer's transaction (opening
    /// one if none is open); it ends with
    /// [`Log::append_end_txn_marker`].
    pub transactional: bool,
}

/// A summary of one segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentInfo {
    /// Base offset.
    pub base_offset: i64,
    /// Offset after its last batch.
    pub next_offset: i64,
    /// Bytes of its `.log`.
    pub size: u64,
    /// Largest record timestamp (-1 when none).
    pub largest_timestamp: i64,
    /// Offset-index entries.
    pub offset_index_entries: usize,
    /// Time-index entries.
    pub time_index_entries: usize,
    /// Whether it is the active segment.
    pub active: bool,
}

/// An append-only log of Kafka RecordBatch v2 batches in a partition
/// directory.
///
/// ```
/// use std::sync::Arc;
/// use std::path::Path;
/// use lithify_vfs::MemFs;
/// use lithify_kafka_log::{Log, LogConfig, SimpleRecord};
///
/// let fs = Arc::new(MemFs::new());
/// let config = LogConfig::from_properties([("cleanup.policy", "compact")]).unwrap();
/// let mut log = Log::open(fs.clone(), Path::new("/data/orders-0"), config.clone()).unwrap();
/// let info = log.append(&[
///     SimpleRecord::new(1000, "k1", "v1"),
///     SimpleRecord::tombstone(1001, "k2"),
/// ]).unwrap();
/// assert_eq!((info.first_offset, info.last_offset), (0, 1));
/// log.flush().unwrap();
/// drop(log);
///
/// fs.crash(); // power loss: flushed data survives
/// let log = Log::open(fs, Path::new("/data/orders-0"), config).unwrap();
/// assert_eq!(log.log_end_offset(), 2);
/// let records: Vec<_> = log.records_from(0).unwrap().collect::<Result<_, _>>().unwrap();
/// assert_eq!(records[1].key.as_deref(), Some(&b"k2"[..]));
/// assert!(records[1].is_tombstone());
/// ```
#[derive(Debug)]
pub struct Log {
    fs: Arc<dyn FileSystem>,
    dir: PathBuf,
    config: LogConfig,
    clock: Arc<dyn Clock>,
    /// Segments by base offset; the last one is active. The cleaner replaces
    /// entries here when it swaps segments in.
    pub(crate) segments: BTreeMap<i64, LogSegment>,
    next_offset: i64,
    poisoned: Option<String>,
    report: LogRecoveryReport,
    /// Every batch below this offset is durable.
    recovery_point: i64,
    /// The value of this log's line in `recovery-point-offset-checkpoint`,
    /// when known.
    checkpointed: Option<i64>,
    /// Set by [`Log::close`]: nothing is left to do on drop.
    closed: bool,
    /// Every producer's state and the open transactions.
    producer_state: ProducerStateManager,
    /// Offsets of the producer snapshots on disk.
    snapshots: BTreeSet<i64>,
    /// The partition directory's `.lock`, held exclusively while the log
    /// is open (see [`crate::lock`]); dropped last.
    _lock: FileLock,
}

impl Log {
    /// Opens (creating if needed) the log in `dir`, running recovery.
    pub fn open(fs: Arc<dyn FileSystem>, dir: &Path, config: LogConfig) -> Result<Log> {
        Self::open_with(fs, dir, config, OpenOptions::default())
    }

    /// Opens the log in `dir` with explicit [`OpenOptions`]:
    ///
    /// 0. the directory's `.lock` ([`LOCK_FILE_NAME`](crate::LOCK_FILE_NAME))
    ///    is locked exclusively for the `Log`'s lifetime: while this `Log`
    ///    lives, another open of `dir` (in any process) is refused with
    ///    [`Error::InUse`], before anything is read or changed;
    /// 1. leftover `.deleted`, `.cleaned` and `.swap` files are resolved
    ///    (Kafka's `LogLoader` rules);
    /// 2. index files without a `.log` are removed when they lie beyond the
    ///    log's end (what a removal interrupted by a crash leaves), and
    ///    refused ([`Error::MissingSegment`]) when they lie below it: a
    ///    `.log` is missing from the middle of the log;
    /// 3. the recovery point is found: [`OpenOptions::recovery_point`] if
    ///    given, else the log's entry in the data directory's
    ///    `recovery-point-offset-checkpoint` (written by [`Log::flush`],
    ///    [`Log::roll`] and [`Log::close`]), else the last segment's base
    ///    offset (segments are synced when they roll);
    /// 4. every segment is opened; a segment below the one holding the
    ///    recovery point whose indexes are missing or corrupt, or whose
    ///    `.log` does not end with a whole batch, is re-validated: its
    ///    indexes are rebuilt if its batches are all valid, and the open
    ///    fails with [`Error::DamagedBelowRecoveryPoint`] (file and byte
    ///    offset) if they are not: flushed data is never truncated;
    /// 5. the segments from the one holding the recovery point on (at
    ///    least the last one) are re-validated batch by batch; the first
    ///    invalid batch is refused the same way if the batches before it
    ///    end below the recovery point, and otherwise (bytes never flushed)
    ///    the segment is truncated there and every later segment removed,
    ///    as in Kafka, after the dropped bytes were copied to the
    ///    partition's `lost/` directory ([`LOST_DIR`](crate::LOST_DIR)); each such
    ///    truncation is in [`LogRecoveryReport::truncations`] and a `tracing`
    ///    warning;
    /// 6. a log that ends below its recovery point is refused
    ///    ([`Error::MissingFlushedRecords`]);
    /// 7. the last segment becomes the active one (an empty segment at
    ///    offset 0 is created in an empty directory).
    pub fn open_with(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        config: LogConfig,
        options: OpenOptions,
    ) -> Result<Log> {
        config.validate()?;
        let created = loader::create_dir(&*fs, dir)?;
        let lock = crate::lock::lock_exclusive(&*fs, dir, "log directory")?;
        let mut load = LogLoader::new(fs.clone(), dir, &config, &*options.clock, created);
        load.complete_swaps()?;
        let scan = load.scan()?;
        load.choose_recovery_point(options.recovery_point, &scan);
        load.open_segments(&scan.bases)?;
        load.remove_orphan_indexes(scan.orphans)?;
        load.rebuild_flushed_indexes()?;
        load.recover_unflushed()?;
        load.ensure_a_segment()?;
        let (producer_state, snapshots) = load.load_producers()?;
        load.activate()?;
        let next_offset = load.next_offset();
        let flushed = load.recovery_point.min(next_offset);
        let LogLoader {
            report,
            checkpointed,
            segments,
            ..
        } = load;
        Ok(Log {
            fs,
            dir: dir.to_path_buf(),
            config,
            clock: options.clock,
            segments,
            next_offset,
            poisoned: None,
            report,
            recovery_point: flushed,
            checkpointed: checkpointed.filter(|p| *p == flushed),
            closed: false,
            producer_state,
            snapshots,
            _lock: lock,
        })
    }

    fn check_writable(&self) -> Result<()> {
        if let Some(message) = &self.poisoned {
            return PoisonedSnafu {
                dir: &self.dir,
                message: message.clone(),
            }
            .fail();
        }
        Ok(())
    }

    /// Runs a write step; an I/O failure leaves the files in an unknown
    /// state, so the log refuses further writes (reopen to recover).
    fn guarded<T>(&mut self, step: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let out = step(self);
        if let Err(e @ Error::Io { .. }) = &out {
            self.poisoned = Some(e.to_string());
        }
        out
    }

    /// Appends `records` as one batch: offsets from the log end offset,
    /// compressed with `compression.type` (`producer` means none here),
    /// stamped with the clock for LogAppendTime. A compacted log rejects a
    /// record without a key.
    pub fn append(&mut self, records: &[SimpleRecord]) -> Result<AppendInfo> {
        self.check_writable()?;
        if records.is_empty() {
            return InvalidArgumentSnafu {
                message: "an append needs at least one record".to_string(),
            }
            .fail();
        }
        self.check_keys(records.iter().position(|r| r.key.is_none()))?;
        let now = self.clock.now_ms();
        let mut builder =
            BatchBuilder::new(self.next_offset).compression(self.config.append_codec());
        if self.config.message_timestamp_type == TimestampType::LogAppendTime {
            builder = builder.log_append_time(now);
        }
        for (i, r) in records.iter().enumerate() {
            builder.append(
                self.next_offset + i as i64,
                r.timestamp,
                r.key.as_deref(),
                r.value.as_deref(),
                &r.headers,
            )?;
        }
        let batch = RecordBatch::parse(builder.build())?;
        self.append_checked(batch, now, None)
    }

    /// Appends `records` as one batch of `producer` (Kafka's idempotent or
    /// transactional producer): offsets from the log end offset, the
    /// codec of `compression.type`. A transactional batch opens the
    /// producer's transaction if none is open; until its
    /// [`append_end_txn_marker`](Log::append_end_txn_marker), a
    /// `read_committed` reader ([`Log::committed_records_from`]) and the
    /// log cleaner stop at the transaction's first offset. Refused
    /// ([`Error::ProducerState`]): an epoch older than the producer's, a
    /// non-transactional batch while its transaction is open. Sequence
    /// numbers are stored, not checked.
    ///
    /// ```
    /// use std::path::Path;
    /// use std::sync::Arc;
    /// use lithify_vfs::MemFs;
    /// use lithify_kafka_log::{Log, LogConfig, Producer, SimpleRecord};
    /// use lithify_kafka_log::record::TransactionResult;
    ///
    /// let mut log = Log::open(Arc::new(MemFs::new()), Path::new("/k/t-0"), LogConfig::default()).unwrap();
    /// let p = Producer { producer_id: 7, producer_epoch: 0, base_sequence: 0, transactional: true };
    /// log.append_as(&p, &[SimpleRecord::new(1, "k", "aborted")]).unwrap();
    /// assert_eq!(log.last_stable_offset(), 0, "an undecided transaction");
    /// log.append_end_txn_marker(7, 0, TransactionResult::Abort, 0).unwrap();
    /// log.append(&[SimpleRecord::new(2, "k", "v")]).unwrap();
    /// let committed: Vec<_> = log.committed_records_from(0).unwrap().map(Result::unwrap).collect();
    /// assert_eq!(committed.len(), 1);
    /// assert_eq!(committed[0].offset, 2);
    /// // The segment holding the ABORT marker lists the transaction.
    /// let aborted = log.collect_aborted_transactions(0, log.log_end_offset());
    /// assert_eq!((aborted[0].first_offset, aborted[0].last_offset), (0, 1));
    /// ```
    pub fn append_as(
        &mut self,
        producer: &Producer,
        records: &[SimpleRecord],
    ) -> Result<AppendInfo> {
        self.check_writable()?;
        if records.is_empty() || producer.producer_id < 0 {
            return InvalidArgumentSnafu {
                message: "an append needs at least one record and a producer id of at least 0"
                    .to_string(),
            }
            .fail();
        }
        self.check_keys(records.iter().position(|r| r.key.is_none()))?;
        let now = self.clock.now_ms();
        let mut builder = BatchBuilder::new(self.next_offset)
            .compression(self.config.append_codec())
            .producer(
                producer.producer_id,
                producer.producer_epoch,
                producer.base_sequence,
            )
            .transactional(producer.transactional);
        if self.config.message_timestamp_type == TimestampType::LogAppendTime {
            builder = builder.log_append_time(now);
        }
        for (i, r) in records.iter().enumerate() {
            builder.append(
                self.next_offset + i as i64,
                r.timestamp,
                r.key.as_deref(),
                r.value.as_deref(),
                &r.headers,
            )?;
        }
        let batch = RecordBatch::parse(builder.build())?;
        let pb = ProducerBatch::of(&batch)?;
        self.append_checked(batch, now, pb)
    }

    /// Ends `producer_id`'s transaction with a COMMIT or ABORT marker, as a
    /// transaction coordinator of epoch `coordinator_epoch` does: a control
    /// batch holding one record, key `(0, type)` and value `(0,
    /// coordinator_epoch)`, stamped with the clock. An ABORT marker adds
    /// the transaction to the segment's `.txnindex`. A producer without an
    /// open transaction may get a marker too (Kafka writes them); it closes
    /// nothing. Refused ([`Error::ProducerState`]): an epoch older than the
    /// producer's, or a coordinator epoch older than its last marker's.
    pub fn append_end_txn_marker(
        &mut self,
        producer_id: i64,
        producer_epoch: i16,
        result: TransactionResult,
        coordinator_epoch: i32,
    ) -> Result<AppendInfo> {
        self.check_writable()?;
        if producer_id < 0 {
            return InvalidArgumentSnafu {
                message: format!("a transaction marker needs a producer id, not {producer_id}"),
            }
            .fail();
        }
        let now = self.clock.now_ms();
        let mut builder = BatchBuilder::new(self.next_offset)
            .producer(producer_id, producer_epoch, -1)
            .transactional(true)
            .control(true);
        if self.config.message_timestamp_type == TimestampType::LogAppendTime {
            builder = builder.log_append_time(now);
        }
        let value = EndTransactionMarker { coordinator_epoch }.value();
        builder.append(
            self.next_offset,
            now,
            Some(&result.control_type().key()),
            Some(&value),
            &[],
        )?;
        let batch = RecordBatch::parse(builder.build())?;
        let pb = ProducerBatch::of(&batch)?;
        self.append_checked(batch, now, pb)
    }

    /// Appends a batch built elsewhere (a producer's, or kafka-python's),
    /// as a broker does: its CRC and records are checked, its base offset
    /// is set to the log end offset (the CRC does not cover it), and for a
    /// LogAppendTime log its timestamp type and max timestamp are set. A
    /// compacted log rejects a data batch with a keyless record. Control and
    /// transactional batches are kept as they are.
    pub fn append_batch(&mut self, batch: RecordBatch) -> Result<AppendInfo> {
        self.check_writable()?;
        batch.ensure_valid()?;
        let records = batch.records()?;
        let base = batch.base_offset();
        let mut prev = None;
        for r in &records {
            if r.offset < base
                || r.offset > batch.last_offset()
                || prev.is_some_and(|p| r.offset <= p)
            {
                return CorruptSnafu {
                    path: crate::error::IN_MEMORY,
                    offset: 0u64,
                    message: format!(
                        "record offset {} is out of order or outside the batch's range {base}..={}",
                        r.offset,
                        batch.last_offset()
                    ),
                }
                .fail();
            }
            prev = Some(r.offset);
        }
        if !batch.is_control() {
            self.check_keys(records.iter().position(|r| r.key.is_none()))?;
        }
        let now = self.clock.now_ms();
        let mut batch = batch.with_base_offset(self.next_offset);
        if self.config.message_timestamp_type == TimestampType::LogAppendTime {
            let mut raw = batch.raw().to_vec();
            let attrs = i16::from_be_bytes([raw[ATTRIBUTES_OFFSET], raw[ATTRIBUTES_OFFSET + 1]])
                | TIMESTAMP_TYPE_MASK;
            raw[ATTRIBUTES_OFFSET..ATTRIBUTES_OFFSET + 2].copy_from_slice(&attrs.to_be_bytes());
            raw[MAX_TIMESTAMP_OFFSET..MAX_TIMESTAMP_OFFSET + 8].copy_from_slice(&now.to_be_bytes());
            let crc = compute_crc(&raw);
            raw[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_be_bytes());
            batch = RecordBatch::parse(raw.into())?;
        }
        let pb = ProducerBatch::of(&batch)?;
        self.append_checked(batch, now, pb)
    }

    /// A compacted log refuses a record without a key: `keyless` is the
    /// index of the first one in the appended batch, if any.
    fn check_keys(&self, keyless: Option<usize>) -> Result<()> {
        match keyless {
            Some(index) if self.config.cleanup_policy.compact => KeylessRecordSnafu {
                dir: &self.dir,
                index,
            }
            .fail(),
            _ => Ok(()),
        }
    }

    /// Appends `batch` (whose producer fields, if it has a producer, are
    /// `producer`): checked against producer state, written, then applied
    /// to it (an ABORT marker goes to the segment's `.txnindex`).
    fn append_checked(
        &mut self,
        batch: RecordBatch,
        now: i64,
        producer: Option<ProducerBatch>,
    ) -> Result<AppendInfo> {
        let size = batch.size_in_bytes();
        if size > self.config.max_message_bytes.max(0) as usize {
            return BatchTooLargeSnafu {
                dir: &self.dir,
                size,
                max: self.config.max_message_bytes,
            }
            .fail();
        }
        if let Some(pb) = &producer
            && let Err(message) = self.producer_state.check_append(pb)
        {
            return ProducerStateSnafu {
                dir: &self.dir,
                message,
            }
            .fail();
        }
        self.guarded(|log| {
            log.maybe_roll(size as u64, batch.max_timestamp(), batch.last_offset(), now)?;
            let active = log.active_segment_mut();
            active.append(
                batch.last_offset(),
                batch.max_timestamp(),
                batch.last_offset(),
                batch.raw(),
            )?;
            let segment_base_offset = active.base_offset();
            log.next_offset = batch.next_offset();
            match &producer {
                None => log.producer_state.skip(log.next_offset),
                Some(pb) => match log.producer_state.apply(pb) {
                    Ok(None) => {}
                    Ok(Some(aborted)) => log.active_segment_mut().append_aborted_txn(aborted)?,
                    Err(message) => {
                        // `check_append` refused this before anything was
                        // written; the state no longer matches the log.
                        let message =
                            format!("producer state went wrong after an append: {message}");
                        log.poisoned = Some(message.clone());
                        return ProducerStateSnafu {
                            dir: &log.dir,
                            message,
                        }
                        .fail();
                    }
                },
            }
            Ok(AppendInfo {
                first_offset: batch.base_offset(),
                last_offset: batch.last_offset(),
                max_timestamp: batch.max_timestamp(),
                size,
                segment_base_offset,
            })
        })
    }

    fn active_segment_mut(&mut self) -> &mut LogSegment {
        self.segments
            .values_mut()
            .next_back()
            .expect("a log has at least one segment")
    }

    fn maybe_roll(
        &mut self,
        size: u64,
        max_timestamp: i64,
        last_offset: i64,
        now: i64,
    ) -> Result<()> {
        let params = RollParams {
            max_segment_bytes: self.config.segment_bytes,
            max_segment_ms: self.config.segment_ms,
            messages_size: size,
            max_timestamp_in_messages: max_timestamp,
            max_offset_in_messages: last_offset,
            now_ms: now,
        };
        if self.active_segment().should_roll(&params) {
            self.roll_at(now)?;
        }
        Ok(())
    }

    /// Starts a new active segment at the log end offset (no-op when the
    /// active segment is empty). The old one is trimmed and synced.
    pub fn roll(&mut self) -> Result<()> {
        self.check_writable()?;
        let now = self.clock.now_ms();
        self.guarded(|log| log.roll_at(now))
    }

    fn roll_at(&mut self, now: i64) -> Result<()> {
        let new_base = self.next_offset;
        let active = self.active_segment_mut();
        if active.base_offset() == new_base && active.size() == 0 {
            return Ok(());
        }
        active.on_become_inactive()?;
        let seg = LogSegment::create(
            self.fs.clone(),
            &self.dir,
            new_base,
            Suffix::None,
            &self.config,
            now,
        )?;
        // Kafka's roll: a producer snapshot at the new segment's base, so
        // that recovering it starts from there.
        self.take_snapshot(new_base)?;
        self.fs.sync_dir(&self.dir).context(IoSnafu {
            action: "sync",
            path: &self.dir,
        })?;
        self.segments.insert(new_base, seg);
        // The old segment is synced: everything below the new one is durable.
        self.advance_recovery_point(new_base)
    }

    /// Makes every append so far durable, then records the log end offset
    /// as the log's recovery point in the data directory's
    /// `recovery-point-offset-checkpoint` (when the log directory is named
    /// `<topic>-<partition>`): after a crash, [`Log::open`] refuses damage
    /// below it instead of truncating it.
    pub fn flush(&mut self) -> Result<()> {
        self.check_writable()?;
        self.guarded(|log| {
            log.active_segment_mut().flush()?;
            log.advance_recovery_point(log.next_offset)
        })
    }

    /// Closes the log as Kafka does at a clean shutdown: the active
    /// segment's time index gets its final entry, both of its indexes are
    /// trimmed to their entries (no preallocated zeros are left behind),
    /// everything is synced and the recovery point is checkpointed. A
    /// dropped log only trims the indexes, best effort.
    pub fn close(mut self) -> Result<()> {
        self.check_writable()?;
        let out = self.guarded(|log| {
            log.active_segment_mut().on_become_inactive()?;
            // Kafka's close: a producer snapshot at the log end, so that
            // the next open replays nothing.
            if log.take_snapshot(log.next_offset)? {
                log.fs.sync_dir(&log.dir).context(IoSnafu {
                    action: "sync",
                    path: &log.dir,
                })?;
            }
            log.advance_recovery_point(log.next_offset)
        });
        self.closed = out.is_ok();
        out
    }

    /// The offset below which every batch is known to be durable.
    pub fn recovery_point(&self) -> i64 {
        self.recovery_point
    }

    /// Writes a producer snapshot at `offset` (the log end offset) unless
    /// one is there; says whether it wrote one. The caller syncs the
    /// directory.
    fn take_snapshot(&mut self, offset: i64) -> Result<bool> {
        if self.snapshots.contains(&offset) {
            return Ok(false);
        }
        producer_state::write_snapshot(&*self.fs, &self.dir, offset, &self.producer_state)?;
        self.snapshots.insert(offset);
        Ok(true)
    }

    /// The first offset of the earliest undecided transaction (Kafka's
    /// `firstUnstableOffset`), if a transaction is open.
    pub fn first_unstable_offset(&self) -> Option<i64> {
        self.producer_state.first_unstable_offset()
    }

    /// Kafka's last stable offset: the first unstable offset, or the log
    /// end offset when no transaction is open (without replication the
    /// high watermark is the log end offset). A `read_committed` reader
    /// reads below it, and the log cleaner never cleans at or above it.
    pub fn last_stable_offset(&self) -> i64 {
        self.first_unstable_offset()
            .map_or(self.next_offset, |f| f.min(self.next_offset))
    }

    /// Every producer's state (Kafka's `activeProducers`, without expiry),
    /// by producer id.
    pub fn producers(&self) -> impl Iterator<Item = &ProducerStateEntry> + '_ {
        self.producer_state.producers().values()
    }

    /// The aborted transactions that may hold records in `[start,
    /// upper_bound)`: from the segment holding `start` on, the transaction
    /// index entries ending at or after `start` and starting below
    /// `upper_bound`, until an entry's last stable offset reaches
    /// `upper_bound` (Kafka's `collectAbortedTransactions`).
    pub fn collect_aborted_transactions(&self, start: i64, upper_bound: i64) -> Vec<AbortedTxn> {
        let first = self
            .segments
            .range(..=start)
            .next_back()
            .map_or(self.log_start_offset(), |(b, _)| *b);
        let mut out = Vec::new();
        for seg in self.segments.range(first..).map(|(_, s)| s) {
            let found = seg.collect_aborted_txns(start, upper_bound);
            out.extend(found.found);
            if found.complete {
                break;
            }
        }
        out
    }

    /// Sets the recovery point to `point` (everything below it is synced)
    /// and writes it to the data directory's checkpoint if it changed.
    fn advance_recovery_point(&mut self, point: i64) -> Result<()> {
        self.recovery_point = self.recovery_point.max(point);
        if self.checkpointed == Some(self.recovery_point) {
            return Ok(());
        }
        let Some(tp) = self
            .topic_partition()
            .map(|(t, p)| TopicPartition::new(t, p))
        else {
            return Ok(());
        };
        let path = recovery_point_path(&self.dir);
        // Logs of one data directory share the file: one writer at a time.
        let _guard = RECOVERY_POINT_LOCK
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut entries = match checkpoint::read_file(&*self.fs, &path) {
            Ok(entries) => entries,
            Err(e) if e.is_corruption() => {
                tracing::warn!(
                    file = %path.display(),
                    error = %e,
                    "replacing an unreadable recovery point checkpoint; logs without a line in it are re-validated from their last segment"
                );
                BTreeMap::new()
            }
            Err(e) => return Err(e),
        };
        entries.insert(tp, self.recovery_point);
        checkpoint::write_file(&*self.fs, &path, &entries)?;
        self.checkpointed = Some(self.recovery_point);
        Ok(())
    }

    /// The segments as they are now, readable without the log (see
    /// [`LogSnapshot`]): what the log cleaner reads a round from without
    /// holding the log's lock. Each segment's
    /// [`lookup_position`](SegmentSnapshot::lookup_position) is where a
    /// scan for `lookup_offset` starts (its checked offset-index entry).
    pub fn snapshot(&self, lookup_offset: i64) -> LogSnapshot {
        let segments = self
            .segments
            .values()
            .map(|s| {
                let (reader, path) = s.file();
                SegmentSnapshot {
                    base_offset: s.base_offset(),
                    size: s.size(),
                    next_offset: s.next_offset(),
                    largest_timestamp: s.largest_timestamp(),
                    known_first_batch_timestamp: s.known_first_batch_timestamp(),
                    offset_index_bytes: s.offset_index().size_in_bytes(),
                    time_index_bytes: s.time_index().size_in_bytes(),
                    lookup_position: s.checked_lookup(lookup_offset),
                    aborted_txns: s.aborted_txns().to_vec(),
                    reader,
                    path,
                }
            })
            .collect();
        LogSnapshot {
            fs: self.fs.clone(),
            dir: self.dir.clone(),
            config: self.config.clone(),
            segments,
            log_end_offset: self.next_offset,
            last_stable_offset: self.last_stable_offset(),
            producers: self.producer_state.producers().clone(),
        }
    }

    /// Swaps cleaned segments in for the inactive segments at `old_bases`
    /// (Kafka's `replaceSegments`, for a whole cleaning round at once; the
    /// new segments come from [`LogSegment::create`] with
    /// [`Suffix::Cleaned`], filled and made inactive by the caller):
    ///
    /// 1. every new segment (already complete, synced, `.cleaned`) is
    ///    renamed `.cleaned` -> `.swap`, in descending base offset order;
    /// 2. every old segment is renamed to `.deleted`, in ascending order;
    /// 3. every new segment is renamed `.swap` -> its final name, in
    ///    ascending order, and the directory is synced;
    /// 4. the `.deleted` files are removed.
    ///
    /// The in-memory segment map is updated with step 2. Recovery
    /// (on [`Log::open`]) completes the swap if it crashed after step 1
    /// and rolls it back before, so the log holds either every old segment
    /// or every new one. An I/O failure poisons the log.
    pub fn replace_segments(
        &mut self,
        mut new_segments: Vec<LogSegment>,
        old_bases: &[i64],
    ) -> Result<()> {
        self.check_writable()?;
        let active = self.active_segment().base_offset();
        for base in old_bases {
            if *base >= active || !self.segments.contains_key(base) {
                return InvalidArgumentSnafu {
                    message: format!(
                        "segment {base} of log {} is not an inactive segment any more",
                        self.dir.display()
                    ),
                }
                .fail();
            }
        }
        new_segments.sort_by_key(LogSegment::base_offset);
        self.guarded(|log| {
            for seg in new_segments.iter_mut().rev() {
                seg.change_suffix(Suffix::Swap)?;
            }
            let mut old = Vec::with_capacity(old_bases.len());
            for base in old_bases {
                if let Some(seg) = log.segments.remove(base) {
                    old.push(seg);
                }
            }
            old.sort_by_key(LogSegment::base_offset);
            let new_bases: Vec<i64> = new_segments.iter().map(LogSegment::base_offset).collect();
            for seg in new_segments {
                log.segments.insert(seg.base_offset(), seg);
            }
            for seg in &mut old {
                seg.change_suffix(Suffix::Deleted)?;
            }
            for base in &new_bases {
                if let Some(seg) = log.segments.get_mut(base) {
                    seg.change_suffix(Suffix::None)?;
                }
            }
            log.fs.sync_dir(&log.dir).context(IoSnafu {
                action: "sync",
                path: &log.dir,
            })?;
            for seg in old {
                let base = seg.base_offset();
                seg.delete()?;
                // Kafka's `deleteProducerSnapshots` for the segments that
                // went (a snapshot left behind is stray, and removed by
                // the next open).
                if !new_bases.contains(&base) && log.snapshots.remove(&base) {
                    producer_state::delete_snapshot(&*log.fs, &log.dir, base)?;
                }
            }
            Ok(())
        })
    }

    /// Batches whose last offset is >= `start_offset`, from that one on,
    /// until more than `max_bytes` were collected (at least one batch when
    /// there is one). `start_offset` must be within
    /// `[log_start_offset, log_end_offset]`.
    pub fn read(&self, start_offset: i64, max_bytes: usize) -> Result<Vec<RecordBatch>> {
        let mut out = Vec::new();
        let mut total = 0;
        for batch in self.batches_from(start_offset)? {
            let batch = batch?;
            if !out.is_empty() && total + batch.size_in_bytes() > max_bytes {
                break;
            }
            total += batch.size_in_bytes();
            out.push(batch);
        }
        Ok(out)
    }

    /// Every batch whose last offset is >= `start_offset`, in order across
    /// segments (an offset-index lookup, then a scan).
    pub fn batches_from(&self, start_offset: i64) -> Result<LogBatches<'_>> {
        if start_offset < self.log_start_offset() || start_offset > self.next_offset {
            return InvalidArgumentSnafu {
                message: format!(
                    "offset {start_offset} is outside the log's range [{}, {}]",
                    self.log_start_offset(),
                    self.next_offset
                ),
            }
            .fail();
        }
        let first = self
            .segments
            .range(..=start_offset)
            .next_back()
            .map_or(self.log_start_offset(), |(b, _)| *b);
        Ok(LogBatches {
            segments: self.segments.range(first..).map(|(_, s)| s).collect(),
            current: None,
            start_offset,
            order: OffsetOrder::new(i64::MIN, i64::MAX),
        })
    }

    /// Every data record with offset >= `start_offset`, as a
    /// `read_uncommitted` consumer sees them (control batches are skipped;
    /// aborted and undecided transactions are not; see
    /// [`Log::committed_records_from`]).
    pub fn records_from(&self, start_offset: i64) -> Result<LogRecords<'_>> {
        Ok(LogRecords {
            batches: self.batches_from(start_offset)?,
            pending: VecDeque::new(),
            start_offset,
        })
    }

    /// Every committed data record with offset >= `start_offset`, as a
    /// `read_committed` Kafka consumer sees them: nothing at or after the
    /// last stable offset (undecided transactions), nothing of an aborted
    /// transaction (as the `.txnindex` entries say), no control batch.
    pub fn committed_records_from(&self, start_offset: i64) -> Result<CommittedRecords<'_>> {
        let stable_end = self.last_stable_offset();
        let aborted = self.collect_aborted_transactions(start_offset, stable_end);
        Ok(CommittedRecords::new(
            self.batches_from(start_offset)?,
            start_offset,
            stable_end,
            aborted,
        ))
    }

    /// The first offset of the log: the base offset of its first segment.
    pub fn log_start_offset(&self) -> i64 {
        self.segments.keys().next().copied().unwrap_or(0)
    }

    /// The offset the next append gets.
    pub fn log_end_offset(&self) -> i64 {
        self.next_offset
    }

    /// The segments, in offset order; the last is active.
    pub fn segments(&self) -> impl DoubleEndedIterator<Item = &LogSegment> + '_ {
        self.segments.values()
    }

    /// A summary of every segment.
    pub fn segment_infos(&self) -> Vec<SegmentInfo> {
        self.segments
            .values()
            .map(|s| SegmentInfo {
                base_offset: s.base_offset(),
                next_offset: s.next_offset(),
                size: s.size(),
                largest_timestamp: s.largest_timestamp(),
                offset_index_entries: s.offset_index().len(),
                time_index_entries: s.time_index().len(),
                active: s.is_active(),
            })
            .collect()
    }

    /// The active segment.
    pub fn active_segment(&self) -> &LogSegment {
        self.segments
            .values()
            .next_back()
            .expect("a log has at least one segment")
    }

    /// What opening the log found and did.
    pub fn recovery_report(&self) -> &LogRecoveryReport {
        &self.report
    }

    /// The partition directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file system.
    pub fn fs(&self) -> &Arc<dyn FileSystem> {
        &self.fs
    }

    /// The settings.
    pub fn config(&self) -> &LogConfig {
        &self.config
    }

    /// The clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Topic and partition, from a directory named `<topic>-<partition>`.
    pub fn topic_partition(&self) -> Option<(String, i32)> {
        naming::parse_partition_dir(self.dir.file_name()?.to_str()?)
    }
}

impl Drop for Log {
    /// Trims the active segment's preallocated indexes to their entries,
    /// best effort (what [`Log::close`] does fully).
    fn drop(&mut self) {
        if self.closed || self.poisoned.is_some() {
            return;
        }
        if let Some(active) = self.segments.values_mut().next_back() {
            active.trim_indexes_best_effort();
        }
    }
}

/// Serialises the read-modify-write of `recovery-point-offset-checkpoint`
/// files by the logs of this process.
static RECOVERY_POINT_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Batches of a log from an offset; see [`Log::batches_from`].
#[derive(Debug)]
pub struct LogBatches<'a> {
    segments: VecDeque<&'a LogSegment>,
    current: Option<FileBatches>,
    start_offset: i64,
    /// The order the current segment's batches must keep.
    order: OffsetOrder,
}

impl Iterator for LogBatches<'_> {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.current.is_none() {
                let seg = self.segments.pop_front()?;
                self.current = Some(seg.batches_from_offset(self.start_offset));
                let limit = self.segments.front().map_or(i64::MAX, |s| s.base_offset());
                self.order = OffsetOrder::new(seg.base_offset(), limit);
            }
            // A base offset is outside the CRC: one that goes backwards or
            // past the next segment is damage, not data.
            let item = match self.current.as_mut()?.next() {
                None => {
                    self.current = None;
                    continue;
                }
                Some(item) => item.and_then(|b| self.order.check(&b).map(|()| b)),
            };
            match item {
                Err(e) => {
                    self.segments.clear();
                    self.current = None;
                    return Some(Err(e));
                }
                Ok(b) => {
                    if b.last_offset() >= self.start_offset {
                        return Some(Ok(b));
                    }
                }
            }
        }
    }
}

/// Records of a log from an offset; see [`Log::records_from`].
#[derive(Debug)]
pub struct LogRecords<'a> {
    batches: LogBatches<'a>,
    pending: VecDeque<Record>,
    start_offset: i64,
}

impl Iterator for LogRecords<'_> {
    type Item = Result<Record>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = self.pending.pop_front() {
                return Some(Ok(r));
            }
            let batch = match self.batches.next()? {
                Ok(b) => b,
                Err(e) => return Some(Err(e)),
            };
            if batch.is_control() {
                continue;
            }
            // Records are only handed out from a batch whose CRC holds, so
            // a damaged batch is an error naming its file and byte offset,
            // never wrong records.
            if let Err(e) = batch.ensure_valid() {
                return Some(Err(e.into()));
            }
            match batch.records() {
                Ok(records) => self.pending.extend(
                    records
                        .into_iter()
                        .filter(|r| r.offset >= self.start_offset),
                ),
                Err(e) => return Some(Err(e.into())),
            }
        }
    }
}
