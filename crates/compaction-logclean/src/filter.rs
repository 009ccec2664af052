//! Pass 2 on one batch: which records stay, and the bytes that represent
//! them (Kafka's `MemoryRecords.filterTo` with the cleaner's
//! `RecordFilter`).
//!
//! First the batch as a whole ([`BatchDecision`], from the round: Kafka's
//! `checkBatchRetention`): a batch is **kept even if empty** when it is
//! an active producer's last batch or the round's last batch, **dropped
//! unread** when its records may all go (aborted data; a marker that may
//! go and whose delete horizon has passed), and otherwise **dropped only
//! if no record stays**.
//!
//! Then each record: none stays in a batch whose records may all go; every
//! record of a control batch stays; a data record stays when its offset is
//! beyond what the offset map covers (`offset > latest_offset`), or when it
//! has a key, its offset is at least the map's offset for that key (a key
//! absent from the map counts as -1), and it has a value or its tombstone
//! must still be kept: the batch has no delete horizon yet, or now is
//! before it. A keyless data record within the mapped range is dropped and
//! counted as invalid.
//!
//! The kept records are written as:
//!
//! * the **original bytes**, when every record stays and no delete horizon
//!   needs setting (or dropping). Pass 1's marks decide it without
//!   decoding the batch when they cover all of its records; they also
//!   drop a batch none of whose records stays without decoding it
//!   ([`marked_fate`]);
//! * a **rebuilt batch** otherwise: same base offset, last offset (so the
//!   last sequence survives), producer fields, partition leader epoch,
//!   flags and codec; base timestamp = the first kept record's timestamp,
//!   or the delete horizon when there is one (set to `now +
//!   delete.retention.ms` the first time kept records include a tombstone,
//!   or the batch is a marker that may go: KIP-534 covers both, attribute
//!   bit 6); record timestamps stay absolute;
//! * a 61-byte **empty header** when nothing stays but the batch must;
//! * nothing.

use lithify_offsetmap::OffsetMap;

use crate::error::Result;
use crate::latest_marks::{LatestMarks, MarkedBatch};
use crate::read_ahead::FedBatch;
use lithify_kafka_log::record::{BatchBuilder, RecordBatch, RecordView, TimestampType};

/// What a round knows when it filters a batch.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FilterContext<'a> {
    /// The round's offset map.
    pub map: &'a OffsetMap,
    /// What pass 1 learned of the records it mapped (the map answers for
    /// the others).
    pub marks: &'a LatestMarks,
    /// The last offset the map covers (-1: none).
    pub latest_offset: i64,
    /// The round's time.
    pub now: i64,
    /// The log's `delete.retention.ms`.
    pub delete_retention_ms: i64,
}

/// How a batch is kept (Kafka's `BatchRetention`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BatchRetention {
    /// Dropped without reading its records.
    Delete,
    /// Kept, as an empty header if no record stays.
    RetainEmpty,
    /// Dropped if no record stays.
    DeleteEmpty,
}

/// What the round decided about a batch before its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchDecision {
    pub(crate) retention: BatchRetention,
    /// No record of the batch stays (aborted data, a marker past its
    /// horizon that may go).
    pub(crate) discard_records: bool,
    /// A marker that may go: it gets a delete horizon if it has none.
    pub(crate) marker_for_empty_txn: bool,
}

/// What becomes of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BatchFate {
    /// Written as it is.
    Copied,
    /// Written as this new batch (kept records, or an empty header).
    Rewritten(RecordBatch),
    /// Not written.
    Dropped,
}

/// The outcome of filtering one batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Filtered {
    /// What to write.
    pub fate: BatchFate,
    /// Records in the batch.
    pub records_read: u64,
    /// Records kept.
    pub records_kept: u64,
    /// Keyless records dropped.
    pub invalid: u64,
    /// Tombstones dropped (past their horizon, or superseded).
    pub tombstones_dropped: u64,
    /// Whether this round stamped the delete horizon.
    pub horizon_set: bool,
    /// The delete horizon of the written batch, if any.
    pub delete_horizon_ms: Option<i64>,
    /// Whether the written batch is an empty header.
    pub empty_header: bool,
}

impl Filtered {
    /// The batch to write for `batch`.
    pub(crate) fn written<'b>(&'b self, batch: &'b RecordBatch) -> Option<&'b RecordBatch> {
        match &self.fate {
            BatchFate::Copied => Some(batch),
            BatchFate::Rewritten(b) => Some(b),
            BatchFate::Dropped => None,
        }
    }
}

fn should_retain(ctx: &FilterContext<'_>, batch_horizon: Option<i64>, r: &RecordView<'_>) -> Keep {
    if r.offset > ctx.latest_offset {
        return Keep::Yes;
    }
    let Some(key) = r.key else {
        return Keep::Invalid;
    };
    let latest_for_key = ctx.marks.is_latest(r.offset).unwrap_or_else(|| {
        let found = ctx.map.get(key).map_or(-1, |o| o as i64);
        r.offset >= found
    });
    let retain_deletes = batch_horizon.is_none_or(|h| ctx.now < h);
    if latest_for_key && (r.value.is_some() || retain_deletes) {
        Keep::Yes
    } else {
        Keep::No
    }
}

enum Keep {
    Yes,
    No,
    Invalid,
}

/// What pass 1's marks alone decide of a data batch all of whose records
/// they cover: see [`marked_fate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MarkedFate {
    /// No record stays (each was replaced by a later put of its key).
    Dropped {
        /// Tombstones among them.
        tombstones: u64,
    },
    /// Every record stays and the batch needs no change: written as its
    /// original bytes.
    Copied,
}

/// What the marks decide of `batch` before the round's decision about it
/// as a whole ([`BatchDecision`]), if they decide it: every record was
/// put in pass 1 (so each has a key and lies within the map's range),
/// and either all were replaced, or none was and no delete horizon needs
/// setting or dropping (no tombstone under a batch without a horizon;
/// tombstones, still before the horizon, under one that has it). `None`:
/// the records must be read.
/// `marks`, `latest_offset` and `now` are the [`FilterContext`]'s.
pub(crate) fn marked_fate(
    batch: &RecordBatch,
    marks: &LatestMarks,
    latest_offset: i64,
    now: i64,
) -> Option<MarkedFate> {
    if batch.is_control() || batch.last_offset() > latest_offset {
        return None;
    }
    let records = batch.records_count().max(0) as u64;
    match marks.batch(batch.base_offset(), batch.last_offset(), records)? {
        MarkedBatch::Superseded { tombstones } => Some(MarkedFate::Dropped { tombstones }),
        MarkedBatch::Latest { tombstones } => {
            let unchanged = match batch.delete_horizon_ms() {
                None => tombstones == 0,
                Some(h) => tombstones > 0 && now < h,
            };
            unchanged.then_some(MarkedFate::Copied)
        }
    }
}

/// Filters a batch as `decision` says.
pub(crate) fn filter_batch(
    fed: &FedBatch,
    ctx: &FilterContext<'_>,
    decision: BatchDecision,
) -> Result<Filtered> {
    let batch = fed.batch();
    let horizon = batch.delete_horizon_ms();
    let mut out = Filtered {
        fate: BatchFate::Dropped,
        records_read: 0,
        records_kept: 0,
        invalid: 0,
        tombstones_dropped: 0,
        horizon_set: false,
        delete_horizon_ms: None,
        empty_header: false,
    };
    if decision.retention == BatchRetention::Delete {
        out.records_read = batch.records_count().max(0) as u64;
        return Ok(out);
    }
    // What pass 1's marks decide of the whole batch, without decoding
    // it again; the loop below would decide the same.
    if decision.retention != BatchRetention::Delete && !decision.discard_records {
        match marked_fate(batch, ctx.marks, ctx.latest_offset, ctx.now) {
            Some(MarkedFate::Dropped { tombstones })
                if decision.retention == BatchRetention::DeleteEmpty =>
            {
                out.records_read = batch.records_count().max(0) as u64;
                out.tombstones_dropped = tombstones;
                return Ok(out);
            }
            Some(MarkedFate::Copied) => {
                out.records_read = batch.records_count().max(0) as u64;
                out.records_kept = out.records_read;
                out.fate = BatchFate::Copied;
                out.delete_horizon_ms = horizon;
                return Ok(out);
            }
            _ => {}
        }
    }
    let records = fed.records()?;
    let control = batch.is_control();
    let mut kept_tombstone = false;
    let mut kept: Vec<RecordView<'_>> = Vec::new();
    for r in records.iter() {
        let r = r?;
        out.records_read += 1;
        let keep = if decision.discard_records {
            Keep::No
        } else if control {
            Keep::Yes
        } else {
            should_retain(ctx, horizon, &r)
        };
        match keep {
            Keep::Yes => {
                kept_tombstone |= !control && r.is_tombstone();
                kept.push(r);
            }
            Keep::Invalid => out.invalid += 1,
            Keep::No => out.tombstones_dropped += u64::from(!control && r.is_tombstone()),
        }
    }
    out.records_kept = kept.len() as u64;
    let all_kept = out.records_kept == out.records_read;
    if !kept.is_empty() {
        let need_horizon = (kept_tombstone || decision.marker_for_empty_txn) && horizon.is_none();
        // Beyond Kafka: a data batch whose tombstones are all gone loses its
        // horizon, so that an expired horizon always means a record to
        // remove (see `CleaningReason::ExpiredTombstones`). A marker keeps
        // its horizon, as in Kafka.
        let drop_horizon = horizon.is_some() && !kept_tombstone && !control;
        if all_kept && !need_horizon && !drop_horizon {
            out.fate = BatchFate::Copied;
            out.delete_horizon_ms = horizon;
            return Ok(out);
        }
        let new_horizon = if need_horizon {
            Some(ctx.now.saturating_add(ctx.delete_retention_ms))
        } else if drop_horizon {
            None
        } else {
            horizon
        };
        let mut b = header_builder(batch).compression(batch.compression()?);
        if let Some(h) = new_horizon {
            b = b.delete_horizon_ms(h);
        }
        for r in &kept {
            b.append_view(r)?;
        }
        out.fate = BatchFate::Rewritten(RecordBatch::parse(b.build())?);
        out.horizon_set = need_horizon;
        out.delete_horizon_ms = new_horizon;
    } else if decision.retention == BatchRetention::RetainEmpty {
        let b = header_builder(batch).max_timestamp(batch.max_timestamp());
        out.fate = BatchFate::Rewritten(RecordBatch::parse(b.build())?);
        out.empty_header = true;
    }
    Ok(out)
}

/// A builder keeping `batch`'s base offset, last offset, producer fields,
/// leader epoch, flags and timestamp type.
fn header_builder(batch: &RecordBatch) -> BatchBuilder {
    let mut b = BatchBuilder::new(batch.base_offset())
        .partition_leader_epoch(batch.partition_leader_epoch())
        .producer(
            batch.producer_id(),
            batch.producer_epoch(),
            batch.base_sequence(),
        )
        .transactional(batch.is_transactional())
        .control(batch.is_control())
        .last_offset(batch.last_offset());
    if batch.timestamp_type() == TimestampType::LogAppendTime {
        b = b.log_append_time(batch.max_timestamp());
    }
    b
}
