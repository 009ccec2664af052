//! RecordBatch v2 (magic 2), Kafka's `DefaultRecordBatch`.
//!
//! ```text
//! off size field                  covered by CRC
//!   0  8  baseOffset      i64     no
//!   8  4  length          i32     no   bytes after this field (batch size - 12)
//!  12  4  partitionLeaderEpoch    no
//!  16  1  magic           i8 = 2  no
//!  17  4  crc             u32          CRC-32C of bytes 21..end
//!  21  2  attributes      i16     yes  bits 0-2 codec, 3 LogAppendTime,
//!                                      4 transactional, 5 control, 6 delete horizon
//!  23  4  lastOffsetDelta i32     yes
//!  27  8  baseTimestamp   i64     yes  the delete horizon when bit 6 is set
//!  35  8  maxTimestamp    i64     yes
//!  43  8  producerId      i64     yes
//!  51  2  producerEpoch   i16     yes
//!  53  4  baseSequence    i32     yes
//!  57  4  recordsCount    i32     yes
//!  61  …  records (compressed as a whole when the codec is not none)
//! ```
//!
//! All integers are big-endian. A [`RecordBatch`] owns its raw bytes (a
//! [`Bytes`] slice of the segment it was read from), so a cleaner can copy
//! an untouched batch byte for byte, and decodes records on demand.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use crate::codec::{self, Compression, MAX_DECOMPRESSED_BYTES};
use crate::error::{
    CorruptSnafu, DecompressSnafu, IN_MEMORY, Result, UnknownCodecSnafu, UnsupportedMagicSnafu,
};
use crate::record::control::ControlRecordType;
use crate::record::layout::*;
use crate::record::record::Record;
use crate::record::view::BatchRecords;

/// Attribute bits 0..2: the codec.
pub const COMPRESSION_CODEC_MASK: i16 = 0x07;
/// Attribute bit 3: LogAppendTime.
pub const TIMESTAMP_TYPE_MASK: i16 = 0x08;
/// Attribute bit 4: transactional.
pub const TRANSACTIONAL_FLAG_MASK: i16 = 0x10;
/// Attribute bit 5: control batch.
pub const CONTROL_FLAG_MASK: i16 = 0x20;
/// Attribute bit 6: baseTimestamp holds the delete horizon (KIP-534).
pub const DELETE_HORIZON_FLAG_MASK: i16 = 0x40;

/// Whose clock a batch's timestamps come from (attribute bit 3).
///
/// Exhaustive on purpose: it is one attribute bit, so there are two.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TimestampType {
    /// The producer's create time, per record.
    #[default]
    CreateTime,
    /// The broker's append time: `maxTimestamp`, for every record.
    LogAppendTime,
}

/// Where a batch was read from: named in every error about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchOrigin {
    /// The segment file.
    pub path: Arc<PathBuf>,
    /// Byte position of the batch in the file.
    pub position: u64,
}

/// Kafka's CRC-32C of a batch: over bytes 21 (attributes) to the end.
pub fn compute_crc(batch: &[u8]) -> u32 {
    crc32c::crc32c(&batch[ATTRIBUTES_OFFSET.min(batch.len())..])
}

/// The first `HEADER_SIZE_UP_TO_MAGIC` bytes of a batch, enough to know its
/// size before reading it whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchPrefix {
    /// `baseOffset`.
    pub base_offset: i64,
    /// `length`: bytes after the length field.
    pub length: i32,
    /// `magic`.
    pub magic: i8,
}

impl BatchPrefix {
    /// Parses the prefix; `bytes` must hold at least 17 bytes.
    pub fn parse(bytes: &[u8]) -> Option<BatchPrefix> {
        let b = bytes.get(..HEADER_SIZE_UP_TO_MAGIC)?;
        Some(BatchPrefix {
            base_offset: i64::from_be_bytes(b[0..8].try_into().ok()?),
            length: i32::from_be_bytes(b[8..12].try_into().ok()?),
            magic: b[MAGIC_OFFSET] as i8,
        })
    }

    /// Total bytes of the batch: `length + 12`, when `length` is sane.
    pub fn batch_size(&self) -> Option<u64> {
        (self.length >= MIN_LENGTH).then(|| self.length as u64 + LOG_OVERHEAD as u64)
    }
}

/// A RecordBatch v2: its raw bytes and where they came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordBatch {
    raw: Bytes,
    origin: Option<BatchOrigin>,
}

macro_rules! be {
    ($raw:expr, $ty:ty, $off:expr) => {{
        const N: usize = std::mem::size_of::<$ty>();
        let mut b = [0u8; N];
        b.copy_from_slice(&$raw[$off..$off + N]);
        <$ty>::from_be_bytes(b)
    }};
}

impl RecordBatch {
    /// Checks the structure of the header of the batch in `raw` (exactly
    /// one batch): its length field, magic 2 and size. Does not check the
    /// CRC; see [`RecordBatch::ensure_valid`].
    ///
    /// ```
    /// use bytes::Bytes;
    /// use lithify_kafka_format::record::{BatchBuilder, RecordBatch};
    ///
    /// let mut b = BatchBuilder::new(42);
    /// b.append(42, 1000, Some(b"k"), Some(b"v"), &[]).unwrap();
    /// let batch = RecordBatch::parse(b.build()).unwrap();
    /// batch.ensure_valid().unwrap();
    /// assert_eq!((batch.base_offset(), batch.last_offset()), (42, 42));
    /// let records = batch.records().unwrap();
    /// assert_eq!(records[0].key.as_deref(), Some(&b"k"[..]));
    /// ```
    pub fn parse(raw: Bytes) -> Result<RecordBatch> {
        Self::parse_at(raw, None)
    }

    /// Like [`RecordBatch::parse`], for a batch read at `origin`.
    pub fn parse_at(raw: Bytes, origin: Option<BatchOrigin>) -> Result<RecordBatch> {
        let batch = RecordBatch { raw, origin };
        let Some(prefix) = BatchPrefix::parse(&batch.raw) else {
            return batch.corrupt(
                0,
                format!(
                    "a batch of {} bytes is shorter than its 17-byte prefix",
                    batch.raw.len()
                ),
            );
        };
        if prefix.magic != MAGIC_V2 {
            if (0..MAGIC_V2).contains(&prefix.magic) {
                let (path, offset) = batch.place(MAGIC_OFFSET);
                return UnsupportedMagicSnafu {
                    path,
                    offset,
                    magic: prefix.magic,
                }
                .fail();
            }
            return batch.corrupt(MAGIC_OFFSET, format!("invalid magic {}", prefix.magic));
        }
        if batch.raw.len() < RECORD_BATCH_OVERHEAD {
            return batch.corrupt(
                LENGTH_OFFSET,
                format!(
                    "the batch is {} bytes, less than the {RECORD_BATCH_OVERHEAD}-byte header",
                    batch.raw.len()
                ),
            );
        }
        if prefix.batch_size() != Some(batch.raw.len() as u64) {
            return batch.corrupt(
                LENGTH_OFFSET,
                format!(
                    "the length field {} does not match the batch's {} bytes",
                    prefix.length,
                    batch.raw.len()
                ),
            );
        }
        Ok(batch)
    }

    fn place(&self, within: usize) -> (PathBuf, u64) {
        match &self.origin {
            Some(o) => ((*o.path).clone(), o.position + within as u64),
            None => (PathBuf::from(IN_MEMORY), within as u64),
        }
    }

    fn corrupt<T>(&self, within: usize, message: String) -> Result<T> {
        let (path, offset) = self.place(within);
        CorruptSnafu {
            path,
            offset,
            message,
        }
        .fail()
    }

    /// The batch's bytes, exactly as stored.
    pub fn raw(&self) -> &Bytes {
        &self.raw
    }

    /// Where the batch was read from, if from a file.
    pub fn origin(&self) -> Option<&BatchOrigin> {
        self.origin.as_ref()
    }

    /// The file the batch came from, if any.
    pub fn path(&self) -> Option<&Path> {
        self.origin.as_ref().map(|o| o.path.as_path())
    }

    /// Byte position of the batch in its file (0 for an in-memory batch).
    pub fn position(&self) -> u64 {
        self.origin.as_ref().map_or(0, |o| o.position)
    }

    /// Total bytes of the batch.
    pub fn size_in_bytes(&self) -> usize {
        self.raw.len()
    }

    /// `baseOffset`.
    pub fn base_offset(&self) -> i64 {
        be!(self.raw, i64, BASE_OFFSET_OFFSET)
    }

    /// `partitionLeaderEpoch`.
    pub fn partition_leader_epoch(&self) -> i32 {
        be!(self.raw, i32, PARTITION_LEADER_EPOCH_OFFSET)
    }

    /// `magic` (always 2 for a parsed batch).
    pub fn magic(&self) -> i8 {
        self.raw[MAGIC_OFFSET] as i8
    }

    /// The stored CRC.
    pub fn checksum(&self) -> u32 {
        be!(self.raw, u32, CRC_OFFSET)
    }

    /// `attributes`.
    pub fn attributes(&self) -> i16 {
        be!(self.raw, i16, ATTRIBUTES_OFFSET)
    }

    /// The codec id in the attributes (0..7).
    pub fn compression_id(&self) -> u8 {
        (self.attributes() & COMPRESSION_CODEC_MASK) as u8
    }

    /// The codec; an id Kafka does not define is an error naming it.
    pub fn compression(&self) -> Result<Compression> {
        let id = self.compression_id();
        match Compression::from_id(id) {
            Some(c) => Ok(c),
            None => {
                let (path, offset) = self.place(ATTRIBUTES_OFFSET);
                UnknownCodecSnafu { path, offset, id }.fail()
            }
        }
    }

    /// The timestamp type (attribute bit 3).
    pub fn timestamp_type(&self) -> TimestampType {
        if self.attributes() & TIMESTAMP_TYPE_MASK != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    /// Whether the batch belongs to a transaction (bit 4).
    pub fn is_transactional(&self) -> bool {
        self.attributes() & TRANSACTIONAL_FLAG_MASK != 0
    }

    /// Whether this is a control batch (bit 5).
    pub fn is_control(&self) -> bool {
        self.attributes() & CONTROL_FLAG_MASK != 0
    }

    /// The delete horizon (KIP-534): `baseTimestamp` when bit 6 is set.
    pub fn delete_horizon_ms(&self) -> Option<i64> {
        (self.attributes() & DELETE_HORIZON_FLAG_MASK != 0).then(|| self.base_timestamp())
    }

    /// `lastOffsetDelta`.
    pub fn last_offset_delta(&self) -> i32 {
        be!(self.raw, i32, LAST_OFFSET_DELTA_OFFSET)
    }

    /// Offset of the batch's last record slot.
    pub fn last_offset(&self) -> i64 {
        self.base_offset()
            .wrapping_add(i64::from(self.last_offset_delta()))
    }

    /// The offset after the batch.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().wrapping_add(1)
    }

    /// `baseTimestamp`.
    pub fn base_timestamp(&self) -> i64 {
        be!(self.raw, i64, BASE_TIMESTAMP_OFFSET)
    }

    /// `maxTimestamp`.
    pub fn max_timestamp(&self) -> i64 {
        be!(self.raw, i64, MAX_TIMESTAMP_OFFSET)
    }

    /// `producerId` (-1 for none).
    pub fn producer_id(&self) -> i64 {
        be!(self.raw, i64, PRODUCER_ID_OFFSET)
    }

    /// Whether the batch has a producer id.
    pub fn has_producer_id(&self) -> bool {
        self.producer_id() != NO_PRODUCER_ID
    }

    /// `producerEpoch`.
    pub fn producer_epoch(&self) -> i16 {
        be!(self.raw, i16, PRODUCER_EPOCH_OFFSET)
    }

    /// `baseSequence`.
    pub fn base_sequence(&self) -> i32 {
        be!(self.raw, i32, BASE_SEQUENCE_OFFSET)
    }

    /// `recordsCount`.
    pub fn records_count(&self) -> i32 {
        be!(self.raw, i32, RECORDS_COUNT_OFFSET)
    }

    /// The records section as stored (compressed when the codec is not
    /// none).
    pub fn records_section(&self) -> Bytes {
        self.raw.slice(RECORD_BATCH_OVERHEAD..)
    }

    /// The CRC the batch's bytes have.
    pub fn compute_checksum(&self) -> u32 {
        compute_crc(&self.raw)
    }

    /// Whether the stored CRC matches the bytes.
    pub fn is_valid(&self) -> bool {
        self.checksum() == self.compute_checksum()
    }

    /// Kafka's `ensureValid`: the CRC must match. Also checks what every
    /// later step relies on: a known codec, a non-negative records count and
    /// last offset delta.
    pub fn ensure_valid(&self) -> Result<()> {
        let (stored, computed) = (self.checksum(), self.compute_checksum());
        if stored != computed {
            return self.corrupt(
                CRC_OFFSET,
                format!("batch CRC mismatch: stored {stored:#010x}, computed {computed:#010x}"),
            );
        }
        self.compression()?;
        if self.records_count() < 0 {
            return self.corrupt(
                RECORDS_COUNT_OFFSET,
                format!("negative records count {}", self.records_count()),
            );
        }
        if self.last_offset_delta() < 0 {
            return self.corrupt(
                LAST_OFFSET_DELTA_OFFSET,
                format!("negative last offset delta {}", self.last_offset_delta()),
            );
        }
        Ok(())
    }

    /// The records section, decompressed (at most `limit` bytes).
    pub fn uncompressed_records(&self, limit: usize) -> Result<Bytes> {
        let codec = self.compression()?;
        let section = self.records_section();
        if codec == Compression::None {
            return Ok(section);
        }
        match codec::decompress(codec, &section, limit) {
            Ok(v) => Ok(Bytes::from(v)),
            Err(message) => {
                let (path, offset) = self.place(0);
                DecompressSnafu {
                    path,
                    offset,
                    codec,
                    message,
                }
                .fail()
            }
        }
    }

    /// Decodes every record (decompressing first). Keys and values share
    /// the batch's (or the decompressed) buffer.
    pub fn records(&self) -> Result<Vec<Record>> {
        self.records_with_limit(MAX_DECOMPRESSED_BYTES)
    }

    /// Like [`RecordBatch::records`], decompressing at most `limit` bytes.
    pub fn records_with_limit(&self, limit: usize) -> Result<Vec<Record>> {
        let count = self.records_count();
        if count < 0 {
            return self.corrupt(
                RECORDS_COUNT_OFFSET,
                format!("negative records count {count}"),
            );
        }
        BatchRecords::decompress_with_limit(self, limit)?.records()
    }

    /// The type of a control batch's record, `None` for a data batch or an
    /// empty control batch.
    pub fn control_type(&self) -> Result<Option<ControlRecordType>> {
        if !self.is_control() {
            return Ok(None);
        }
        let records = self.records()?;
        let Some(first) = records.first() else {
            return Ok(None);
        };
        let key = first.key.as_deref().unwrap_or_default();
        match ControlRecordType::parse_key(key) {
            Ok(t) => Ok(Some(t)),
            Err(e) => self.corrupt(
                RECORD_BATCH_OVERHEAD,
                format!("bad control record key: {e}"),
            ),
        }
    }

    /// A copy of this batch with `baseOffset` set to `base_offset`. The CRC
    /// does not cover the base offset, so it stays valid.
    pub fn with_base_offset(&self, base_offset: i64) -> RecordBatch {
        let mut v = self.raw.to_vec();
        v[..8].copy_from_slice(&base_offset.to_be_bytes());
        RecordBatch {
            raw: Bytes::from(v),
            origin: None,
        }
    }
}
