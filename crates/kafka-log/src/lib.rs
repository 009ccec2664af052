//! Kafka's segmented logs in Kafka's own on-disk format: the storage the
//! lithify log cleaner (`lithify-compaction-logclean`) works on, usable
//! alone.
//!
//! A [`Log`] is a partition directory (`<topic>-<partition>`) of segments
//! in **Kafka's own on-disk format**, so a Kafka partition directory can be
//! opened and what we write can be read by Kafka's tools:
//!
//! * `<base offset, 20 digits>.log`: RecordBatch v2 batches ([`record`]),
//!   CRC-32C, big-endian headers, zigzag varints, records compressed with
//!   any Kafka codec ([`codec`]): none, gzip, snappy (xerial framing), lz4
//!   (frame format), zstd; one zero-copy record decoder
//!   ([`record::RecordViews`]);
//! * `.index` and `.timeindex` ([`index`]): one [`index::Index`] with two
//!   entry types, preallocated while active and trimmed when the segment
//!   rolls;
//! * `.txnindex` ([`txn_index`]): the transactions aborted in a segment,
//!   Kafka's 34-byte `AbortedTxn` entries, written with each ABORT marker
//!   and rebuilt from the log when a crash or damage may have left it
//!   behind;
//! * producer state (Kafka's `ProducerStateManager`): each producer's
//!   last batch and open transaction, snapshotted to `<offset>.snapshot`
//!   files ([`producer_snapshot`]) when segments roll; it gives the **last
//!   stable offset** ([`Log::last_stable_offset`]), below which a
//!   `read_committed` reader ([`Log::committed_records_from`]) reads and
//!   the cleaner cleans;
//! * [`LogSegment`] is one segment: its `.log`, its indexes, Kafka's
//!   append and index rules (what a cleaner writes its output with);
//! * [`Log::open`] runs Kafka's recovery (its `LogLoader` rules): leftover
//!   `.deleted`/`.cleaned`/`.swap` files of an interrupted segment
//!   replacement are completed or rolled back, missing or corrupt indexes
//!   are rebuilt from their `.log`, and the segments from the recovery
//!   point on are re-validated batch by batch. Damage below the recovery
//!   point (bytes that were flushed, as `recovery-point-offset-checkpoint`
//!   records) is refused with the file and byte offset; only bytes above
//!   it are truncated, and those are kept under the partition's `lost/`
//!   ([`LOST_DIR`]) and listed in the [`LogRecoveryReport`];
//! * [`Log::close`] leaves the directory as Kafka leaves one after a clean
//!   shutdown: indexes trimmed to their entries, everything synced;
//! * settings use Kafka's names and defaults ([`LogConfig`]);
//! * the data directory's offset checkpoint files are in Kafka's format
//!   ([`checkpoint`]): `recovery-point-offset-checkpoint`, written here,
//!   and the cleaner's `cleaner-offset-checkpoint`;
//! * [`verify`] checks a log directory or a data directory without
//!   changing it: what open and the cleaner would refuse (problems) and
//!   what they would repair or accept (warnings), each naming the file
//!   and byte offset;
//! * a `Log` holds its directory's `.lock` ([`LOCK_FILE_NAME`]) while it
//!   is open, so a second writer, in any process, is refused
//!   ([`Error::InUse`]); the cleaner locks the data directory's `.lock`
//!   too ([`lock_data_dir`]);
//! * [`Log::snapshot`] hands out the segments as they are, readable
//!   without the log (what a cleaner reads a round from), and
//!   [`Log::replace_segments`] swaps segments in crash-safely (`.cleaned`
//!   -> `.swap` -> `.deleted`, completed or rolled back by recovery).
//!
//! Every file goes through a [`lithify_vfs::FileSystem`], so crash tests
//! run on `MemFs`. Errors ([`Error`]) name the file and byte offset of any
//! bad input; corruption is an error value, never a panic.
//!
//! ```
//! use std::sync::Arc;
//! use std::path::Path;
//! use lithify_vfs::MemFs;
//! use lithify_kafka_log::{Log, LogConfig, SimpleRecord};
//!
//! let fs = Arc::new(MemFs::new());
//! let config = LogConfig::from_properties([("segment.bytes", "200"), ("compression.type", "gzip")]).unwrap();
//! let mut log = Log::open(fs, Path::new("/kafka/events-0"), config).unwrap();
//! for i in 0..10 {
//!     log.append(&[SimpleRecord::new(i, format!("key-{i}"), "value")]).unwrap();
//! }
//! assert!(log.segments().count() > 1, "small segments rolled");
//! let batches = log.read(4, 1).unwrap();
//! assert_eq!(batches[0].base_offset(), 4);
//! ```

pub mod checkpoint;
mod config;
mod error;
mod file_batches;
pub mod index;
mod loader;
mod lock;
mod log;
mod log_dir;
pub mod naming;
mod producer_replay;
pub mod producer_snapshot;
mod producer_state;
mod read_committed;
mod recovery;
mod segment;
mod snapshot;
mod topic_partition;
pub mod txn_check;
pub mod txn_index;
mod verify;

/// The README's examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub use config::{CleanupPolicy, CompressionType, LogConfig};
pub use error::{Error, IN_MEMORY, Result};
pub use file_batches::{BatchHeader, FileBatchHeaders, FileBatches, OffsetOrder};
pub use lithify_base::clock::{Clock, ManualClock, SystemClock};
use lithify_kafka_format::coding;
pub use lithify_kafka_format::coding::DecodeError;
/// Kafka's codecs and record format, from `lithify-kafka-format` (no I/O).
pub use lithify_kafka_format::{codec, record};
pub use lithify_vfs::lost::LOST_DIR;
pub use lock::{LOCK_FILE_NAME, lock_data_dir, lock_shared};
pub use log::{AppendInfo, Log, LogBatches, LogRecords, OpenOptions, Producer, SegmentInfo};
pub use log_dir::{LogDir, OpenFailure, SharedLog, partition_dirs, shared_log};
pub use producer_state::{BatchMetadata, ProducerStateEntry};
pub use read_committed::CommittedRecords;
pub use record::SimpleRecord;
pub use recovery::{DeletedLeftover, LogRecoveryReport, RecoveryPointSource, Truncation};
pub use segment::{AppendedBatch, LogSegment, SegmentRecovery};
pub use snapshot::{LogSnapshot, SegmentSnapshot};
pub use topic_partition::TopicPartition;
pub use verify::{Finding, VerifyReport, verify};

// The thread-safety the documentation promises, checked at compile time: a
// log moves between threads (it is `Send`, not `Sync`), and is shared
// behind a lock (`SharedLog`).
const _: () = {
    const fn send_and_sync<T: Send + Sync>() {}
    const fn send<T: Send>() {}
    send::<Log>();
    send_and_sync::<SharedLog>();
    send_and_sync::<Error>();
};
