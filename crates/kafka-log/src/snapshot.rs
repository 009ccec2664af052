//! A log's segments at one moment, readable without the log: what
//! [`Log::snapshot`](crate::Log::snapshot) hands out (Kafka's
//! `LocalLog.logSegments(from, to)` over a copy of the segment list).
//!
//! Inactive segments never change until they are replaced (by
//! [`Log::replace_segments`](crate::Log::replace_segments)), so the
//! snapshot's file handles stay valid for as long as its owner keeps the
//! replacement away: the log cleaner takes one under the log's lock and
//! reads the inactive segments for a whole round without the lock, while
//! appends go on in the active segment.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lithify_vfs::{FileSystem, RandomAccessFile};

use std::collections::BTreeMap;

use crate::config::LogConfig;
use crate::error::Result;
use crate::file_batches::{FileBatchHeaders, FileBatches};
use crate::producer_state::ProducerStateEntry;
use crate::txn_index::{self, AbortedTxn};

/// One segment at the moment of the snapshot.
#[derive(Debug, Clone)]
pub struct SegmentSnapshot {
    /// Base offset.
    pub base_offset: i64,
    /// Bytes of its `.log`.
    pub size: u64,
    /// Offset after its last batch.
    pub next_offset: i64,
    /// Largest record timestamp (-1 when none).
    pub largest_timestamp: i64,
    /// The first batch's max timestamp when the segment knows it without
    /// I/O (`Some(None)`: known to have none).
    pub known_first_batch_timestamp: Option<Option<i64>>,
    /// Bytes of its offset index (entries x 8).
    pub offset_index_bytes: u64,
    /// Bytes of its time index (entries x 12).
    pub time_index_bytes: u64,
    /// Where a scan for the snapshot's lookup offset starts (a checked
    /// offset-index lookup; see [`Log::snapshot`](crate::Log::snapshot)).
    pub lookup_position: u64,
    /// The aborted transactions of its `.txnindex`.
    pub aborted_txns: Vec<AbortedTxn>,
    pub(crate) reader: Arc<dyn RandomAccessFile>,
    pub(crate) path: Arc<PathBuf>,
}

impl SegmentSnapshot {
    /// The batches from byte `position` (a batch boundary) to the end of
    /// the segment as it was.
    pub fn batches_from(&self, position: u64) -> FileBatches {
        FileBatches::new(self.reader.clone(), self.path.clone(), position, self.size)
    }

    /// The headers of every batch, without reading records.
    pub fn headers(&self) -> FileBatchHeaders {
        FileBatchHeaders::new(self.reader.clone(), self.path.clone(), self.size)
    }

    /// The `.log` file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The max timestamp of the first batch (Kafka's
    /// `getFirstBatchTimestamp`), `None` when empty or without timestamp.
    pub fn first_batch_timestamp(&self) -> Result<Option<i64>> {
        if let Some(known) = self.known_first_batch_timestamp {
            return Ok(known);
        }
        match self.headers().next() {
            Some(Ok(h)) => Ok((h.max_timestamp >= 0).then_some(h.max_timestamp)),
            Some(Err(e)) => Err(e),
            None => Ok(None),
        }
    }
}

/// A log's segments at one moment; the last one is the active segment.
#[derive(Debug, Clone)]
pub struct LogSnapshot {
    /// The file system of the log.
    pub fs: Arc<dyn FileSystem>,
    /// The log directory.
    pub dir: PathBuf,
    /// The log's settings.
    pub config: LogConfig,
    /// Every segment, in offset order.
    pub segments: Vec<SegmentSnapshot>,
    /// The log end offset.
    pub log_end_offset: i64,
    /// The last stable offset ([`Log::last_stable_offset`](crate::Log::last_stable_offset)).
    pub last_stable_offset: i64,
    /// Every producer's state, by producer id.
    pub producers: BTreeMap<i64, ProducerStateEntry>,
}

impl LogSnapshot {
    /// The log start offset: the first segment's base.
    pub fn log_start_offset(&self) -> i64 {
        self.segments.first().map_or(0, |s| s.base_offset)
    }

    /// The active segment's base offset.
    pub fn active_base_offset(&self) -> i64 {
        self.segments
            .last()
            .map_or(self.log_end_offset, |s| s.base_offset)
    }

    /// The inactive segments.
    pub fn inactive(&self) -> &[SegmentSnapshot] {
        &self.segments[..self.segments.len().saturating_sub(1)]
    }

    /// Segments overlapping `[from, to)` (Kafka's `logSegments(from, to)`):
    /// from the one holding `from` (or the first) to the last with a base
    /// below `to`.
    pub fn overlapping(&self, from: i64, to: i64) -> &[SegmentSnapshot] {
        if from >= to {
            return &[];
        }
        let first = self
            .segments
            .iter()
            .rposition(|s| s.base_offset <= from)
            .unwrap_or(0);
        let end = self.segments.partition_point(|s| s.base_offset < to);
        if first >= end {
            return &[];
        }
        &self.segments[first..end]
    }

    /// The inactive segments from the one holding `from` (Kafka's
    /// `nonActiveLogSegmentsFrom`); empty when `from` is in the active one.
    pub fn inactive_from(&self, from: i64) -> &[SegmentSnapshot] {
        if from > self.active_base_offset() {
            return &[];
        }
        self.overlapping(from, self.active_base_offset())
    }

    /// The aborted transactions that may hold records in `[start,
    /// upper_bound)`, as Kafka's cleaner collects them
    /// (`collectAbortedTransactions(startOffset, upperBoundOffset)`): from
    /// the segment holding `start` on, every transaction index entry ending
    /// at or after the log start and starting below `upper_bound`, until
    /// an entry's last stable offset reaches `upper_bound`.
    pub fn collect_aborted_transactions(&self, start: i64, upper_bound: i64) -> Vec<AbortedTxn> {
        let first = self
            .segments
            .iter()
            .rposition(|s| s.base_offset <= start)
            .unwrap_or(0);
        let mut out = Vec::new();
        for seg in &self.segments[first..] {
            let found = txn_index::collect(&seg.aborted_txns, self.log_start_offset(), upper_bound);
            out.extend(found.found);
            if found.complete {
                break;
            }
        }
        out
    }

    /// The base offset of the segment after the one at `base_offset`
    /// (`i64::MAX` for the last): every batch of that segment ends below it.
    pub fn next_base_after(&self, base_offset: i64) -> i64 {
        self.segments
            .iter()
            .find(|s| s.base_offset > base_offset)
            .map_or(i64::MAX, |s| s.base_offset)
    }
}
