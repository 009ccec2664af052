//! Which part of a log a round may clean, and how dirty the log is
//! (Kafka's `LogCleanerManager.cleanableOffsets`,
//! `calculateCleanableBytes`, `maxCompactionDelay` and `LogToClean`).
//!
//! A log is split into three sections:
//!
//! ```text
//!  log start          F (first dirty)       U (first uncleanable)     LEO
//!  |---- clean --------|----- cleanable ------|---- uncleanable ---------|
//!                                              (always holds the active segment)
//! ```
//!
//! * `F` is the checkpointed offset; one below the log start or beyond the
//!   log end is invalid and resets to the log start (and the checkpoint is
//!   rewritten, [`OffsetsToClean::force_update_checkpoint`]).
//! * `U` is the smallest of the active segment's base offset, the log's
//!   last stable offset (the first offset of the earliest undecided
//!   transaction, or the log end offset: without replication the high
//!   watermark is the log end offset) and, when `min.compaction.lag.ms >
//!   0`, the base of the first inactive segment at or after `F` whose
//!   largest timestamp is within the lag of now; at least `F`. So an
//!   undecided transaction is never cleaned. [`LogToClean`] then
//!   rounds it down to the base of the segment holding it.
//! * The dirty ratio is `cleanable bytes / (clean bytes + cleanable bytes)`:
//!   clean bytes are the segments below `F`, cleanable bytes the segments
//!   from the one holding `F` up to `U` (a segment holding `F` in its middle
//!   counts in both). Uncleanable bytes are not in the denominator.
//! * A log is eligible when its ratio is **strictly** above
//!   `min.cleanable.dirty.ratio`, or when `max.compaction.lag.ms` has passed
//!   since the first batch of its oldest dirty inactive segment and it has
//!   cleanable bytes.

use std::fmt;

use crate::error::Result;
use lithify_kafka_log::LogSnapshot;
use lithify_kafka_log::TopicPartition;

/// The dirty range of a log and whether its checkpoint must be rewritten.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OffsetsToClean {
    /// `F`: where the dirty section starts.
    pub(crate) first_dirty_offset: i64,
    /// `U` before rounding down to a segment base.
    pub(crate) first_uncleanable_dirty_offset: i64,
    /// The checkpoint was invalid and is reset to `F`.
    pub(crate) force_update_checkpoint: bool,
}

/// Kafka's `cleanableOffsets`: `F` and `U` for a log whose checkpoint is
/// `checkpoint` (`None`: no entry), at time `now`.
pub(crate) fn cleanable_offsets(
    snap: &LogSnapshot,
    checkpoint: Option<i64>,
    now: i64,
) -> OffsetsToClean {
    let log_start = snap.log_start_offset();
    let checkpointed = checkpoint.unwrap_or(log_start);
    let (first_dirty, force) = if checkpointed < log_start || checkpointed > snap.log_end_offset {
        (log_start, true)
    } else {
        (checkpointed, false)
    };
    let min_lag = snap.config.min_compaction_lag_ms.max(0);
    let mut uncleanable = snap
        .last_stable_offset
        .min(snap.log_end_offset)
        .min(snap.active_base_offset());
    if min_lag > 0 {
        let horizon = now.saturating_sub(min_lag);
        if let Some(seg) = snap
            .inactive_from(first_dirty)
            .iter()
            .find(|s| s.largest_timestamp > horizon)
        {
            uncleanable = uncleanable.min(seg.base_offset);
        }
    }
    OffsetsToClean {
        first_dirty_offset: first_dirty,
        first_uncleanable_dirty_offset: uncleanable.max(first_dirty),
        force_update_checkpoint: force,
    }
}

/// Kafka's `calculateCleanableBytes`: the base of the segment holding
/// `uncleanable` (or of the active segment) and the bytes of the segments
/// from the one holding `first_dirty` up to it.
pub(crate) fn calculate_cleanable_bytes(
    snap: &LogSnapshot,
    first_dirty: i64,
    uncleanable: i64,
) -> (i64, u64) {
    let first_uncleanable = snap
        .inactive_from(uncleanable)
        .first()
        .map_or(snap.active_base_offset(), |s| s.base_offset);
    let bytes = snap
        .overlapping(first_dirty.min(first_uncleanable), first_uncleanable)
        .iter()
        .map(|s| s.size)
        .sum();
    (first_uncleanable, bytes)
}

/// Kafka's `maxCompactionDelay`: how long ago the oldest dirty inactive
/// segment passed `max.compaction.lag.ms` (0 if none did).
pub(crate) fn max_compaction_delay(snap: &LogSnapshot, first_dirty: i64, now: i64) -> Result<i64> {
    let max_lag = snap.config.max_compaction_lag_ms.max(0);
    let clean_until = now.saturating_sub(max_lag);
    let mut earliest = i64::MAX;
    for seg in snap.inactive_from(first_dirty) {
        if let Some(ts) = seg.first_batch_timestamp()?.filter(|ts| *ts > 0) {
            earliest = earliest.min(ts);
        }
    }
    Ok(if earliest < clean_until {
        clean_until - earliest
    } else {
        0
    })
}

/// Why a log was chosen for a round.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum CleaningReason {
    /// Its dirty ratio is above `min.cleanable.dirty.ratio`.
    DirtyRatio(f64),
    /// `max.compaction.lag.ms` passed this many milliseconds ago.
    MaxCompactionLag {
        /// How late the compaction is.
        delay_ms: i64,
    },
    /// Not dirty enough, but tombstones (or other batches with a delete
    /// horizon) below the first dirty offset are past their horizon: a
    /// round removes them (beyond Kafka, which waits for new dirty bytes).
    ExpiredTombstones {
        /// The earliest delete horizon found.
        horizon_ms: i64,
    },
}

impl fmt::Display for CleaningReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CleaningReason::DirtyRatio(r) => write!(f, "dirty ratio {r:.3}"),
            CleaningReason::MaxCompactionLag { delay_ms } => {
                write!(f, "max.compaction.lag.ms exceeded by {delay_ms} ms")
            }
            CleaningReason::ExpiredTombstones { horizon_ms } => {
                write!(f, "tombstones past their delete horizon {horizon_ms}")
            }
        }
    }
}

/// A log and the sections a round would clean (Kafka's `LogToClean`).
#[derive(Debug, Clone, PartialEq)]
pub struct LogToClean {
    /// The partition.
    pub topic_partition: TopicPartition,
    /// `F`.
    pub first_dirty_offset: i64,
    /// `U`, rounded down to a segment base: the round's upper bound.
    pub first_uncleanable_offset: i64,
    /// Bytes of the segments below `F`.
    pub clean_bytes: u64,
    /// Bytes of the segments from the one holding `F` up to `U`.
    pub cleanable_bytes: u64,
    /// `clean_bytes + cleanable_bytes`.
    pub total_bytes: u64,
    /// `cleanable_bytes / total_bytes`.
    pub cleanable_ratio: f64,
    /// How late `max.compaction.lag.ms` is (0: not late).
    pub compaction_delay_ms: i64,
    /// Why it is eligible, if it is.
    pub reason: Option<CleaningReason>,
}

impl LogToClean {
    /// The sections of `snap` for the dirty range `offsets`, eligibility
    /// judged with the log's settings; `expired_horizon` is the earliest
    /// delete horizon of the clean section if it is at or before now.
    pub(crate) fn new(
        topic_partition: TopicPartition,
        snap: &LogSnapshot,
        offsets: OffsetsToClean,
        compaction_delay_ms: i64,
        expired_horizon: Option<i64>,
    ) -> Self {
        let first_dirty = offsets.first_dirty_offset;
        let clean_bytes = snap
            .overlapping(-1, first_dirty)
            .iter()
            .map(|s| s.size)
            .sum::<u64>();
        let (first_uncleanable, cleanable_bytes) =
            calculate_cleanable_bytes(snap, first_dirty, offsets.first_uncleanable_dirty_offset);
        let total_bytes = clean_bytes + cleanable_bytes;
        let cleanable_ratio = if total_bytes == 0 {
            0.0
        } else {
            cleanable_bytes as f64 / total_bytes as f64
        };
        let reason = if total_bytes == 0 {
            None
        } else if cleanable_ratio > snap.config.min_cleanable_dirty_ratio {
            Some(CleaningReason::DirtyRatio(cleanable_ratio))
        } else if compaction_delay_ms > 0 && cleanable_bytes > 0 {
            Some(CleaningReason::MaxCompactionLag {
                delay_ms: compaction_delay_ms,
            })
        } else {
            expired_horizon.map(|horizon_ms| CleaningReason::ExpiredTombstones { horizon_ms })
        };
        LogToClean {
            topic_partition,
            first_dirty_offset: first_dirty,
            first_uncleanable_offset: first_uncleanable,
            clean_bytes,
            cleanable_bytes,
            total_bytes,
            cleanable_ratio,
            compaction_delay_ms,
            reason,
        }
    }

    /// The sections of `log` when its checkpoint is `checkpoint` (`None`:
    /// no entry), judged at time `now`, without the tombstone check (that
    /// needs the manager's cache). What a test or a tool calls to clean a
    /// log directly with [`Cleaner::clean`](crate::Cleaner::clean).
    pub fn from_log(
        log: &lithify_kafka_log::Log,
        checkpoint: Option<i64>,
        now: i64,
    ) -> Result<Self> {
        let snap = log.snapshot(0);
        let tp = log
            .topic_partition()
            .map(|(t, p)| TopicPartition::new(t, p))
            .unwrap_or_else(|| TopicPartition::new("", 0));
        let offsets = cleanable_offsets(&snap, checkpoint, now);
        let delay = max_compaction_delay(&snap, offsets.first_dirty_offset, now)?;
        Ok(LogToClean::new(tp, &snap, offsets, delay, None))
    }

    /// Whether a round should clean this log now.
    pub fn is_eligible(&self) -> bool {
        self.reason.is_some()
    }
}
