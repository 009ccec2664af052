//! Building RecordBatch v2 bytes (Kafka's `MemoryRecordsBuilder` for magic
//! 2, and `writeEmptyHeader`).

use bytes::Bytes;

use crate::codec::{self, Compression};
use crate::error::{InvalidArgumentSnafu, Result};
use crate::record::batch::*;
use crate::record::layout::*;
use crate::record::record::{Header, HeaderSection, encode_record};
use crate::record::view::RecordView;

/// Largest records section a batch can describe (its `length` is an i32).
const MAX_RECORDS_BYTES: usize = i32::MAX as usize - RECORD_BATCH_OVERHEAD;

/// Builds one batch: set the header fields, append records in offset
/// order, then [`build`](BatchBuilder::build).
///
/// * `baseTimestamp` is the first record's timestamp, or the delete horizon
///   when one is set (then bit 6 is set and record deltas are relative to
///   the horizon, possibly negative);
/// * `maxTimestamp` is the largest record timestamp (CreateTime) or the
///   append time (LogAppendTime);
/// * `lastOffsetDelta` is the last record's offset minus the base, unless
///   [`last_offset`](BatchBuilder::last_offset) forces a later one (a
///   cleaned batch keeps its original last offset);
/// * a batch without records is Kafka's 61-byte empty header: codec none,
///   `baseTimestamp` -1, the delete-horizon bit cleared, `maxTimestamp` as
///   given by [`max_timestamp`](BatchBuilder::max_timestamp).
///
/// ```
/// use lithify_kafka_format::codec::Compression;
/// use lithify_kafka_format::record::{BatchBuilder, RecordBatch};
///
/// let mut b = BatchBuilder::new(100).compression(Compression::Zstd);
/// b.append(100, 5000, Some(b"user-1"), Some(b"alice"), &[]).unwrap();
/// b.append(101, 5001, Some(b"user-2"), None, &[]).unwrap(); // tombstone
/// let batch = RecordBatch::parse(b.build()).unwrap();
/// assert_eq!(batch.records_count(), 2);
/// assert_eq!(batch.max_timestamp(), 5001);
/// assert!(batch.records().unwrap()[1].is_tombstone());
/// ```
#[derive(Debug, Clone)]
pub struct BatchBuilder {
    base_offset: i64,
    partition_leader_epoch: i32,
    compression: Compression,
    log_append_time: Option<i64>,
    transactional: bool,
    control: bool,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    delete_horizon_ms: Option<i64>,
    forced_last_offset: Option<i64>,
    forced_max_timestamp: Option<i64>,
    records: Vec<u8>,
    count: i32,
    base_timestamp: Option<i64>,
    max_timestamp: i64,
    last_offset: Option<i64>,
}

impl BatchBuilder {
    /// A builder for a batch at `base_offset`, CreateTime, no codec, no
    /// producer, partition leader epoch -1.
    pub fn new(base_offset: i64) -> Self {
        BatchBuilder {
            base_offset,
            partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
            compression: Compression::None,
            log_append_time: None,
            transactional: false,
            control: false,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            base_sequence: NO_SEQUENCE,
            delete_horizon_ms: None,
            forced_last_offset: None,
            forced_max_timestamp: None,
            records: Vec::new(),
            count: 0,
            base_timestamp: None,
            max_timestamp: NO_TIMESTAMP,
            last_offset: None,
        }
    }

    /// Sets the codec of the records section.
    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// Sets `partitionLeaderEpoch`.
    pub fn partition_leader_epoch(mut self, epoch: i32) -> Self {
        self.partition_leader_epoch = epoch;
        self
    }

    /// Makes the batch LogAppendTime with `maxTimestamp = append_time_ms`.
    pub fn log_append_time(mut self, append_time_ms: i64) -> Self {
        self.log_append_time = Some(append_time_ms);
        self
    }

    /// Sets the producer fields.
    pub fn producer(mut self, producer_id: i64, producer_epoch: i16, base_sequence: i32) -> Self {
        self.producer_id = producer_id;
        self.producer_epoch = producer_epoch;
        self.base_sequence = base_sequence;
        self
    }

    /// Sets the transactional flag (bit 4).
    pub fn transactional(mut self, transactional: bool) -> Self {
        self.transactional = transactional;
        self
    }

    /// Sets the control flag (bit 5).
    pub fn control(mut self, control: bool) -> Self {
        self.control = control;
        self
    }

    /// Sets the delete horizon (bit 6): `baseTimestamp` becomes
    /// `horizon_ms`. Must be called before the first append.
    pub fn delete_horizon_ms(mut self, horizon_ms: i64) -> Self {
        self.delete_horizon_ms = Some(horizon_ms);
        self
    }

    /// Forces the batch's last offset (at least the last record's).
    pub fn last_offset(mut self, last_offset: i64) -> Self {
        self.forced_last_offset = Some(last_offset);
        self
    }

    /// Sets `maxTimestamp` of a batch without records (an empty header).
    pub fn max_timestamp(mut self, max_timestamp: i64) -> Self {
        self.forced_max_timestamp = Some(max_timestamp);
        self
    }

    /// Records appended so far.
    pub fn records_count(&self) -> i32 {
        self.count
    }

    /// Uncompressed bytes of the records appended so far.
    pub fn records_bytes(&self) -> usize {
        self.records.len()
    }

    /// Appends a record at absolute `offset` (greater than the previous
    /// one's, within 2^31 - 1 of the base offset).
    pub fn append(
        &mut self,
        offset: i64,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[Header],
    ) -> Result<()> {
        let record_bytes = key.map_or(0, <[u8]>::len)
            + value.map_or(0, <[u8]>::len)
            + headers
                .iter()
                .map(|h| h.key.len() + h.value.as_ref().map_or(0, Bytes::len) + 10)
                .sum::<usize>()
            + 64;
        let (delta, timestamp_delta) = self.prepare(offset, timestamp, record_bytes)?;
        encode_record(
            &mut self.records,
            delta,
            timestamp_delta,
            key,
            value,
            HeaderSection::Headers(headers),
        );
        self.count += 1;
        Ok(())
    }

    /// Appends a record seen through a [`RecordView`] (the cleaner keeping
    /// a record of a batch it rewrites): same offset, timestamp, key, value
    /// and header bytes; the timestamp delta is recomputed against this
    /// batch's base timestamp, the record attributes are written as 0.
    pub fn append_view(&mut self, record: &RecordView<'_>) -> Result<()> {
        let record_bytes = record.key.map_or(0, <[u8]>::len)
            + record.value.map_or(0, <[u8]>::len)
            + record.headers_raw.len()
            + 64;
        let (delta, timestamp_delta) =
            self.prepare(record.offset, record.timestamp, record_bytes)?;
        encode_record(
            &mut self.records,
            delta,
            timestamp_delta,
            record.key,
            record.value,
            HeaderSection::Raw(record.headers_raw),
        );
        self.count += 1;
        Ok(())
    }

    /// Checks that a record at `offset` can follow, and accounts for it:
    /// returns its offset delta and timestamp delta.
    fn prepare(&mut self, offset: i64, timestamp: i64, record_bytes: usize) -> Result<(i32, i64)> {
        let delta = offset.checked_sub(self.base_offset);
        let Some(delta) = delta
            .and_then(|d| i32::try_from(d).ok())
            .filter(|d| *d >= 0)
        else {
            return InvalidArgumentSnafu {
                message: format!(
                    "offset {offset} is not within 2^31 - 1 after the base offset {}",
                    self.base_offset
                ),
            }
            .fail();
        };
        if self.last_offset.is_some_and(|last| offset <= last) {
            return InvalidArgumentSnafu {
                message: format!("offset {offset} does not follow the previous record's offset"),
            }
            .fail();
        }
        if record_bytes + self.records.len() > MAX_RECORDS_BYTES {
            return InvalidArgumentSnafu {
                message: format!(
                    "a batch's records must stay under {MAX_RECORDS_BYTES} bytes (Kafka's sizes are i32)"
                ),
            }
            .fail();
        }
        if self.count == i32::MAX {
            return InvalidArgumentSnafu {
                message: "a batch holds at most 2^31 - 1 records".to_string(),
            }
            .fail();
        }
        let base_ts = *self
            .base_timestamp
            .get_or_insert(self.delete_horizon_ms.unwrap_or(timestamp));
        self.max_timestamp = self.max_timestamp.max(timestamp);
        self.last_offset = Some(offset);
        Ok((delta, timestamp.wrapping_sub(base_ts)))
    }

    /// The batch's bytes, CRC included.
    pub fn build(&self) -> Bytes {
        let mut out = Vec::with_capacity(RECORD_BATCH_OVERHEAD + self.records.len());
        out.resize(RECORD_BATCH_OVERHEAD, 0);
        let empty = self.count == 0;
        let codec = if empty {
            Compression::None
        } else {
            self.compression
        };
        if codec == Compression::None {
            out.extend_from_slice(&self.records);
        } else {
            codec::compress(codec, &self.records, &mut out);
        }
        let mut attributes = i16::from(codec.id());
        if self.log_append_time.is_some() {
            attributes |= TIMESTAMP_TYPE_MASK;
        }
        if self.transactional {
            attributes |= TRANSACTIONAL_FLAG_MASK;
        }
        if self.control {
            attributes |= CONTROL_FLAG_MASK;
        }
        if self.delete_horizon_ms.is_some() && !empty {
            attributes |= DELETE_HORIZON_FLAG_MASK;
        }
        let last = match (self.last_offset, self.forced_last_offset) {
            (Some(l), Some(f)) => l.max(f),
            (l, f) => l.or(f).unwrap_or(self.base_offset),
        };
        let last_delta = i32::try_from(last.saturating_sub(self.base_offset)).unwrap_or(i32::MAX);
        let (base_ts, max_ts) = if empty {
            (
                NO_TIMESTAMP,
                self.forced_max_timestamp.unwrap_or(NO_TIMESTAMP),
            )
        } else {
            let base = self.base_timestamp.unwrap_or(NO_TIMESTAMP);
            (base, self.log_append_time.unwrap_or(self.max_timestamp))
        };
        let length = (out.len() - LOG_OVERHEAD) as i32;
        out[0..8].copy_from_slice(&self.base_offset.to_be_bytes());
        out[8..12].copy_from_slice(&length.to_be_bytes());
        out[12..16].copy_from_slice(&self.partition_leader_epoch.to_be_bytes());
        out[16] = MAGIC_V2 as u8;
        out[21..23].copy_from_slice(&attributes.to_be_bytes());
        out[23..27].copy_from_slice(&last_delta.to_be_bytes());
        out[27..35].copy_from_slice(&base_ts.to_be_bytes());
        out[35..43].copy_from_slice(&max_ts.to_be_bytes());
        out[43..51].copy_from_slice(&self.producer_id.to_be_bytes());
        out[51..53].copy_from_slice(&self.producer_epoch.to_be_bytes());
        out[53..57].copy_from_slice(&self.base_sequence.to_be_bytes());
        out[57..61].copy_from_slice(&self.count.to_be_bytes());
        let crc = compute_crc(&out);
        out[17..21].copy_from_slice(&crc.to_be_bytes());
        Bytes::from(out)
    }
}
