//! Where each field of a RecordBatch v2 header lies (Kafka's
//! `DefaultRecordBatch` constants), and the values meaning "none".
//!
//! ```text
//! baseOffset: int64            @0
//! length: int32                @8   (bytes after this field)
//! partitionLeaderEpoch: int32  @12
//! magic: int8                  @16  (2)
//! crc: uint32                  @17  (CRC-32C of attributes..end)
//! attributes: int16            @21
//! lastOffsetDelta: int32       @23
//! baseTimestamp: int64         @27
//! maxTimestamp: int64          @35
//! producerId: int64            @43
//! producerEpoch: int16         @51
//! baseSequence: int32          @53
//! recordsCount: int32          @57
//! records                      @61
//! ```

/// Byte offset of `baseOffset`.
pub const BASE_OFFSET_OFFSET: usize = 0;
/// Byte offset of `length`.
pub const LENGTH_OFFSET: usize = 8;
/// Byte offset of `partitionLeaderEpoch`.
pub const PARTITION_LEADER_EPOCH_OFFSET: usize = 12;
/// Byte offset of `magic`.
pub const MAGIC_OFFSET: usize = 16;
/// Byte offset of `crc`.
pub const CRC_OFFSET: usize = 17;
/// Byte offset of `attributes`, where the CRC's coverage starts.
pub const ATTRIBUTES_OFFSET: usize = 21;
/// Byte offset of `lastOffsetDelta`.
pub const LAST_OFFSET_DELTA_OFFSET: usize = 23;
/// Byte offset of `baseTimestamp`.
pub const BASE_TIMESTAMP_OFFSET: usize = 27;
/// Byte offset of `maxTimestamp`.
pub const MAX_TIMESTAMP_OFFSET: usize = 35;
/// Byte offset of `producerId`.
pub const PRODUCER_ID_OFFSET: usize = 43;
/// Byte offset of `producerEpoch`.
pub const PRODUCER_EPOCH_OFFSET: usize = 51;
/// Byte offset of `baseSequence`.
pub const BASE_SEQUENCE_OFFSET: usize = 53;
/// Byte offset of `recordsCount`.
pub const RECORDS_COUNT_OFFSET: usize = 57;
/// Size of the batch header; the records start here (`RECORD_BATCH_OVERHEAD`).
pub const RECORD_BATCH_OVERHEAD: usize = 61;
/// `baseOffset` + `length`: the bytes not counted by `length` (`LOG_OVERHEAD`).
pub const LOG_OVERHEAD: usize = 12;
/// Bytes up to and including `magic`: enough to size and classify a batch.
pub const HEADER_SIZE_UP_TO_MAGIC: usize = 17;
/// Smallest `length` Kafka's file reader accepts (`RECORD_OVERHEAD_V0`).
pub const MIN_LENGTH: i32 = 14;
/// The only magic this crate reads and writes.
pub const MAGIC_V2: i8 = 2;

/// `producerId` / `producerEpoch` / `baseSequence` / timestamps meaning "none".
pub const NO_PRODUCER_ID: i64 = -1;
/// No producer epoch.
pub const NO_PRODUCER_EPOCH: i16 = -1;
/// No sequence.
pub const NO_SEQUENCE: i32 = -1;
/// No timestamp.
pub const NO_TIMESTAMP: i64 = -1;
/// No partition leader epoch.
pub const NO_PARTITION_LEADER_EPOCH: i32 = -1;
