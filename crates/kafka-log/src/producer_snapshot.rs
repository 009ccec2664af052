//! Producer state snapshots (`<offset>.snapshot`): Kafka's
//! `ProducerStateManager` snapshot file, version 1.
//!
//! A snapshot holds every producer's state as of its offset (the log end
//! offset when it was taken; Kafka takes one whenever a segment rolls, so
//! most are named after a segment's base offset). Opening a log loads the
//! latest usable snapshot and replays the batches after it, instead of the
//! whole log. Big-endian, Kafka's `Struct` layout:
//!
//! ```text
//! off size field
//!   0  2  version            i16 = 1
//!   2  4  crc                u32  CRC-32C of bytes 6..end
//!   6  4  entry count        i32
//!  10 46  entry, count times:
//!           producerId               i64
//!           producerEpoch            i16
//!           lastSequence             i32  -1: no batch
//!           lastOffset               i64  last data offset, -1: no batch
//!           offsetDelta              i32  lastOffset - first offset of that batch
//!           timestamp                i64  the producer's last timestamp
//!           coordinatorEpoch         i32
//!           currentTxnFirstOffset    i64  -1: no transaction open
//! ```
//!
//! Kafka writes the entries in hash-map order; we write them by producer
//! id. The state is derived from the log, so a snapshot that fails to
//! decode is removed and an older one (or the log from its start) is
//! replayed instead, as Kafka's `loadFromSnapshot` does with a
//! `CorruptSnapshotException`.

use std::path::Path;

use crate::coding::Reader;
use crate::error::{CorruptSnafu, Result};
use crate::producer_state::{BatchMetadata, ProducerStateEntry};

/// The snapshot format version (Kafka's `PRODUCER_SNAPSHOT_VERSION`;
/// frozen by the format).
pub const SNAPSHOT_VERSION: i16 = 1;

/// Bytes before the first entry: version, CRC, entry count.
pub const HEADER_SIZE: usize = 10;

/// Bytes per entry.
pub const ENTRY_SIZE: usize = 46;

/// Where the CRC's coverage starts (the entry count).
const CRC_START: usize = 6;

/// The bytes of a snapshot holding `entries` (in the order given).
///
/// ```
/// use lithify_kafka_log::producer_snapshot;
/// use lithify_kafka_log::{BatchMetadata, ProducerStateEntry};
///
/// let e = ProducerStateEntry {
///     producer_id: 7,
///     producer_epoch: 0,
///     coordinator_epoch: 3,
///     last_timestamp: 1000,
///     current_txn_first_offset: Some(40),
///     last_batch: Some(BatchMetadata { last_sequence: 9, last_offset: 42, offset_delta: 2 }),
/// };
/// let bytes = producer_snapshot::encode(&[e]);
/// assert_eq!(bytes.len(), 10 + 46);
/// assert_eq!(&bytes[..2], &[0, 1], "version 1");
/// let path = std::path::Path::new("/d/t-0/00000000000000000043.snapshot");
/// assert_eq!(producer_snapshot::decode(path, &bytes).unwrap(), [e]);
/// ```
pub fn encode(entries: &[ProducerStateEntry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_SIZE + entries.len() * ENTRY_SIZE);
    out.extend_from_slice(&SNAPSHOT_VERSION.to_be_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&(entries.len() as i32).to_be_bytes());
    for e in entries {
        let (seq, offset, delta) = match e.last_batch {
            Some(b) => (b.last_sequence, b.last_offset, b.offset_delta),
            None => (-1, -1, 0),
        };
        out.extend_from_slice(&e.producer_id.to_be_bytes());
        out.extend_from_slice(&e.producer_epoch.to_be_bytes());
        out.extend_from_slice(&seq.to_be_bytes());
        out.extend_from_slice(&offset.to_be_bytes());
        out.extend_from_slice(&delta.to_be_bytes());
        out.extend_from_slice(&e.last_timestamp.to_be_bytes());
        out.extend_from_slice(&e.coordinator_epoch.to_be_bytes());
        out.extend_from_slice(&e.current_txn_first_offset.unwrap_or(-1).to_be_bytes());
    }
    let crc = crc32c::crc32c(&out[CRC_START..]);
    out[2..6].copy_from_slice(&crc.to_be_bytes());
    out
}

/// Decodes a snapshot file read from `path`: version 1, a CRC-32C that
/// matches, an entry count that is not negative and accounts for every
/// byte after it. Anything else is a corruption error naming `path` and
/// the byte offset (Kafka ignores bytes after the last entry; the CRC
/// covers them, so only a writer other than Kafka's or ours leaves any).
/// An entry with a negative last offset has no batch; a negative
/// `currentTxnFirstOffset` means no open transaction.
pub fn decode(path: &Path, bytes: &[u8]) -> Result<Vec<ProducerStateEntry>> {
    let corrupt = |offset: usize, message: String| {
        CorruptSnafu {
            path,
            offset: offset as u64,
            message,
        }
        .fail()
    };
    if bytes.len() < HEADER_SIZE {
        return corrupt(
            0,
            format!(
                "a producer snapshot of {} bytes is shorter than its {HEADER_SIZE}-byte header",
                bytes.len()
            ),
        );
    }
    let mut r = Reader::new(bytes);
    let (version, stored, count) = match (r.i16(), r.u32(), r.i32()) {
        (Ok(v), Ok(c), Ok(n)) => (v, c, n),
        _ => return corrupt(0, "the header cannot be read".to_string()),
    };
    if version != SNAPSHOT_VERSION {
        return corrupt(
            0,
            format!("producer snapshot version {version} (only {SNAPSHOT_VERSION} is known)"),
        );
    }
    let computed = crc32c::crc32c(&bytes[CRC_START..]);
    if stored != computed {
        return corrupt(
            2,
            format!(
                "producer snapshot CRC mismatch: stored {stored:#010x}, computed {computed:#010x}"
            ),
        );
    }
    let remaining = bytes.len() - HEADER_SIZE;
    if count < 0 || remaining != count as usize * ENTRY_SIZE {
        return corrupt(
            CRC_START,
            format!(
                "{count} producer entries do not fill the {remaining} bytes after the header ({ENTRY_SIZE} bytes each)"
            ),
        );
    }
    let mut out = Vec::with_capacity(count as usize);
    for i in 0..count as usize {
        let at = HEADER_SIZE + i * ENTRY_SIZE;
        let mut e = Reader::new(&bytes[at..at + ENTRY_SIZE]);
        let fields = (|| {
            Ok::<_, crate::coding::DecodeError>((
                e.i64()?,
                e.i16()?,
                e.i32()?,
                e.i64()?,
                e.i32()?,
                e.i64()?,
                e.i32()?,
                e.i64()?,
            ))
        })();
        let Ok((pid, epoch, seq, offset, delta, ts, coordinator_epoch, txn)) = fields else {
            return corrupt(at, "a producer entry cannot be read".to_string());
        };
        out.push(ProducerStateEntry {
            producer_id: pid,
            producer_epoch: epoch,
            coordinator_epoch,
            last_timestamp: ts,
            current_txn_first_offset: (txn >= 0).then_some(txn),
            last_batch: (offset >= 0).then_some(BatchMetadata {
                last_sequence: seq,
                last_offset: offset,
                offset_delta: delta,
            }),
        });
    }
    Ok(out)
}
