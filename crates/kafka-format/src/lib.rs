//! Kafka's record format, with no I/O: what a Kafka log, a producer or a
//! tool needs to build, read and check record batches without opening a
//! file.
//!
//! * [`record`]: RecordBatch v2 ([`RecordBatch`](record::RecordBatch),
//!   built by [`BatchBuilder`](record::BatchBuilder), its CRC-32C checked),
//!   the records inside it and their headers, control records (COMMIT and
//!   ABORT markers), and the one record decoder, zero-copy
//!   ([`BatchRecords`](record::BatchRecords)); [`record::layout`] says
//!   where each header field lies;
//! * [`codec`]: every codec Kafka defines — gzip, snappy (snappy-java's
//!   xerial framing), lz4 (frames), zstd — with bounded decompression;
//! * [`coding`]: Kafka's big-endian integers and zigzag varints.
//!
//! Errors name where the bytes came from (a file path given by the caller,
//! or [`IN_MEMORY`]) and the byte offset of the damage. The segmented log
//! on top of this is `lithify-kafka-log`.
//!
//! ```
//! use lithify_kafka_format::codec::Compression;
//! use lithify_kafka_format::record::{BatchBuilder, RecordBatch};
//!
//! let mut b = BatchBuilder::new(100).compression(Compression::Zstd);
//! b.append(100, 5000, Some(b"user-1"), Some(b"alice"), &[]).unwrap();
//! let batch = RecordBatch::parse(b.build()).unwrap();
//! assert_eq!(batch.base_offset(), 100);
//! let records = batch.records().unwrap();
//! assert_eq!(records[0].key.as_deref(), Some(&b"user-1"[..]));
//!
//! // A changed byte fails the CRC-32C check, and the error says where.
//! let mut bytes = b.build().to_vec();
//! bytes[70] ^= 1;
//! let damaged = RecordBatch::parse(bytes.into()).unwrap();
//! let err = damaged.ensure_valid().unwrap_err();
//! assert!(err.is_corruption(), "{err}");
//! // (at the CRC field of the batch, byte 17)
//! let crc_at = lithify_kafka_format::record::layout::CRC_OFFSET as u64;
//! assert_eq!(err.file_offset().map(|(_, at)| at), Some(crc_at));
//! ```

pub mod codec;
pub mod coding;
mod error;
pub mod record;

pub use error::{Error, IN_MEMORY, Result};

/// The README's examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
