//! What the cleaner knows of a log while it cleans it without holding the
//! log's lock: a [`LogSnapshot`] of its segments, plus cheap scans of batch
//! headers (producer state, delete horizons, first batch timestamps).
//!
//! Inactive segments never change until the cleaner itself replaces them
//! (one cleaner per log, enforced by the [manager](crate::LogCleanerManager)),
//! so the snapshot's file handles stay valid for the whole round; appends
//! only touch the active segment, which a round never cleans.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use lithify_vfs::{FileSystem, RandomAccessFile};
use snafu::ResultExt as _;

use crate::config::LogConfig;
use crate::error::{CorruptSnafu, IoSnafu, Result};
use crate::file_batches::FileBatches;
use crate::record::batch::{
    ATTRIBUTES_OFFSET, BASE_TIMESTAMP_OFFSET, BatchPrefix, DELETE_HORIZON_FLAG_MASK,
    LAST_OFFSET_DELTA_OFFSET, MAX_TIMESTAMP_OFFSET, PRODUCER_ID_OFFSET, RECORD_BATCH_OVERHEAD,
};

/// One segment as the cleaner sees it.
#[derive(Debug, Clone)]
pub struct SegmentView {
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
    /// Where a scan for the snapshot's lookup offset starts.
    pub lookup_position: u64,
    pub(crate) reader: Arc<dyn RandomAccessFile>,
    pub(crate) path: Arc<PathBuf>,
}

impl SegmentView {
    /// The batches from byte `position` to the end of the snapshot.
    pub(crate) fn batches_from(&self, position: u64) -> FileBatches {
        FileBatches::new(self.reader.clone(), self.path.clone(), position, self.size)
    }

    /// The `.log` file's path.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The max timestamp of the first batch (Kafka's
    /// `getFirstBatchTimestamp`), `None` when empty or without timestamp.
    pub fn first_batch_timestamp(&self) -> Result<Option<i64>> {
        if let Some(known) = self.known_first_batch_timestamp {
            return Ok(known);
        }
        let mut headers = BatchHeaders::new(self);
        match headers.next() {
            Some(Ok(h)) => Ok((h.max_timestamp >= 0).then_some(h.max_timestamp)),
            Some(Err(e)) => Err(e),
            None => Ok(None),
        }
    }
}

/// A log's segments at one moment; the last one is the active segment.
#[derive(Debug, Clone)]
pub struct LogSnapshot {
    pub(crate) fs: Arc<dyn FileSystem>,
    /// The log directory.
    pub dir: PathBuf,
    /// The log's settings.
    pub config: LogConfig,
    /// Every segment, in offset order.
    pub segments: Vec<SegmentView>,
    /// The log end offset.
    pub log_end_offset: i64,
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
    pub fn inactive(&self) -> &[SegmentView] {
        &self.segments[..self.segments.len().saturating_sub(1)]
    }

    /// Segments overlapping `[from, to)` (Kafka's `logSegments(from, to)`):
    /// from the one holding `from` (or the first) to the last with a base
    /// below `to`.
    pub fn overlapping(&self, from: i64, to: i64) -> &[SegmentView] {
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
    pub fn inactive_from(&self, from: i64) -> &[SegmentView] {
        if from > self.active_base_offset() {
            return &[];
        }
        self.overlapping(from, self.active_base_offset())
    }
}

/// The fields of a batch header the cleaner's scans need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    /// Byte position in the segment.
    pub position: u64,
    /// Bytes of the batch.
    pub size: u64,
    /// Last offset.
    pub last_offset: i64,
    /// Attributes.
    pub attributes: i16,
    /// Base timestamp (the delete horizon when bit 6 is set).
    pub base_timestamp: i64,
    /// Max timestamp.
    pub max_timestamp: i64,
    /// Producer id (-1: none).
    pub producer_id: i64,
}

impl BatchHeader {
    /// The delete horizon, when the batch has one.
    pub fn delete_horizon_ms(&self) -> Option<i64> {
        (self.attributes & DELETE_HORIZON_FLAG_MASK != 0).then_some(self.base_timestamp)
    }
}

/// Bytes read at a time by [`BatchHeaders`].
const HEADER_CHUNK: usize = 64 << 10;

/// The headers of a segment's batches, without reading their records:
/// the file is read in 64 KiB chunks and a batch larger than what remains
/// of the chunk is skipped over, not read.
#[derive(Debug)]
pub struct BatchHeaders<'a> {
    segment: &'a SegmentView,
    position: u64,
    chunk: Vec<u8>,
    chunk_start: u64,
    done: bool,
}

impl<'a> BatchHeaders<'a> {
    /// Headers of every batch of `segment`.
    pub fn new(segment: &'a SegmentView) -> Self {
        BatchHeaders {
            segment,
            position: 0,
            chunk: Vec::new(),
            chunk_start: 0,
            done: false,
        }
    }

    fn header_bytes(&mut self) -> Result<Option<[u8; RECORD_BATCH_OVERHEAD]>> {
        let need = RECORD_BATCH_OVERHEAD as u64;
        if self.position + need > self.segment.size {
            return Ok(None);
        }
        let chunk_end = self.chunk_start + self.chunk.len() as u64;
        if self.position < self.chunk_start || self.position + need > chunk_end {
            let len = (HEADER_CHUNK as u64).min(self.segment.size - self.position) as usize;
            self.chunk = self
                .segment
                .reader
                .read_vec(self.position, len)
                .context(IoSnafu {
                    action: "read",
                    path: self.segment.path.as_path(),
                })?;
            self.chunk_start = self.position;
        }
        let from = (self.position - self.chunk_start) as usize;
        let mut out = [0u8; RECORD_BATCH_OVERHEAD];
        out.copy_from_slice(&self.chunk[from..from + RECORD_BATCH_OVERHEAD]);
        Ok(Some(out))
    }

    fn next_header(&mut self) -> Result<Option<BatchHeader>> {
        let Some(h) = self.header_bytes()? else {
            if self.position != self.segment.size {
                return self.corrupt("the segment ends inside a batch header");
            }
            return Ok(None);
        };
        let prefix = BatchPrefix::parse(&h).filter(|p| p.magic == 2);
        let size = prefix.and_then(|p| p.batch_size());
        let Some(size) = size.filter(|s| *s >= RECORD_BATCH_OVERHEAD as u64) else {
            return self.corrupt("a batch header has an invalid length or magic");
        };
        if self.position + size > self.segment.size {
            return self.corrupt("the last batch is cut short");
        }
        let be64 = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&h[at..at + 8]);
            i64::from_be_bytes(b)
        };
        let base_offset = be64(0);
        let last_delta = i32::from_be_bytes([
            h[LAST_OFFSET_DELTA_OFFSET],
            h[LAST_OFFSET_DELTA_OFFSET + 1],
            h[LAST_OFFSET_DELTA_OFFSET + 2],
            h[LAST_OFFSET_DELTA_OFFSET + 3],
        ]);
        let header = BatchHeader {
            position: self.position,
            size,
            last_offset: base_offset.wrapping_add(i64::from(last_delta)),
            attributes: i16::from_be_bytes([h[ATTRIBUTES_OFFSET], h[ATTRIBUTES_OFFSET + 1]]),
            base_timestamp: be64(BASE_TIMESTAMP_OFFSET),
            max_timestamp: be64(MAX_TIMESTAMP_OFFSET),
            producer_id: be64(PRODUCER_ID_OFFSET),
        };
        self.position += size;
        Ok(Some(header))
    }

    fn corrupt<T>(&self, message: &str) -> Result<T> {
        CorruptSnafu {
            path: self.segment.path.as_path(),
            offset: self.position,
            message: message.to_string(),
        }
        .fail()
    }
}

impl Iterator for BatchHeaders<'_> {
    type Item = Result<BatchHeader>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let step = self.next_header();
        lithify_base::iter::fuse_step(&mut self.done, step)
    }
}

/// The last batch of each idempotent producer in the log: producer id ->
/// (last offset of its last batch, that batch's max timestamp).
pub(crate) type ProducerLastBatches = HashMap<i64, (i64, i64)>;

/// Scans every segment's headers for each producer's last batch (Kafka's
/// producer state, reduced to what the cleaner needs).
pub(crate) fn producer_last_batches(segments: &[SegmentView]) -> Result<ProducerLastBatches> {
    let mut out = HashMap::new();
    for seg in segments {
        for h in BatchHeaders::new(seg) {
            let h = h?;
            if h.producer_id >= 0 {
                out.insert(h.producer_id, (h.last_offset, h.max_timestamp));
            }
        }
    }
    Ok(out)
}

/// The earliest delete horizon among the batches of `segments`.
pub(crate) fn earliest_delete_horizon(segments: &[SegmentView]) -> Result<Option<i64>> {
    let mut earliest: Option<i64> = None;
    for seg in segments {
        for h in BatchHeaders::new(seg) {
            if let Some(horizon) = h?.delete_horizon_ms() {
                earliest = Some(earliest.map_or(horizon, |e| e.min(horizon)));
            }
        }
    }
    Ok(earliest)
}
