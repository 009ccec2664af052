//! lithify's LSM database.
//!
//! * **Write path**: [`Db::put`], [`Db::delete`], [`Db::delete_range`] and
//!   [`Db::write`] of a [`WriteBatch`] are committed in write groups: one
//!   WAL record and at most one sync per group, sequence numbers in order,
//!   memtable inserts in parallel, and the group made visible only once
//!   every insert is done. A full memtable becomes immutable, a new WAL
//!   starts and a flush is scheduled.
//! * **Read path**: [`Db::get`] looks at the memtables, then the L0 files
//!   newest first, then one file per level; [`Db::iter`], [`Db::range`],
//!   [`Db::prefix`] and [`Db::raw_iterator`] merge all of them, in both
//!   directions, at a [`Snapshot`] if asked. Range deletions are respected
//!   everywhere.
//! * **Background work**: flushes and leveled compactions on a pool of
//!   `max_background_jobs` threads, write stalls with RocksDB's triggers,
//!   read-only mode after a background I/O error.
//! * **Statistics**: [`Db::property`]`("lithify.stats")` prints RocksDB's
//!   "Compaction Stats" table and the write, read and space amplification;
//!   [`Db::stats`] returns them as a [`DbStats`].
//! * **Damage is never silent**: the open verifies every live SST file,
//!   refuses WALs damaged below their synced size, and reports whatever a
//!   recovery mode drops ([`RecoveryReport`]), keeping the damaged file in
//!   `lost/`. [`Db::open_read_only`] reads without writing anything.
//! * **Events**: `tracing` events (target `lithify::engine`), an optional
//!   `LOG` file, and [`EventListener`] callbacks.
//!
//! ```
//! # let dir = tempfile::tempdir().unwrap();
//! use lithify_engine::{Db, Options, ReadOptions};
//!
//! let db = Db::open(dir.path(), Options::default()).unwrap();
//! db.put(b"k1", b"v1").unwrap();
//! db.put(b"k2", b"v2").unwrap();
//! let snap = db.snapshot();
//! db.delete(b"k1").unwrap();
//! assert_eq!(db.get(b"k1").unwrap(), None);
//! assert_eq!(db.get_opt(b"k1", &ReadOptions::at(&snap)).unwrap().unwrap(), &b"v1"[..]);
//! let keys: Vec<_> = db.iter().map(|kv| kv.unwrap().0).collect();
//! assert_eq!(keys, [&b"k2"[..]]);
//! ```

mod background;
mod batch;
mod blob_files;
mod checkpoint;
mod commit_check;
mod compaction;
mod db;
mod error;
mod events;
mod flush;
mod get;
mod heap;
mod ingest;
mod iter;
mod iter_source;
mod l0_index;
mod live_set;
mod merge;
mod open;
mod options;
mod properties;
mod purge;
mod range_del;
mod recovery;
mod remote_compaction;
mod resource;
mod snapshot;
mod sst_check;
mod sst_file_writer;
mod sst_files;
mod stall;
mod state;
mod stats;
mod strategy;
mod super_version;
mod table;

mod verify;
mod wal;
mod write;
mod write_controller;
mod write_thread;

#[cfg(all(test, loom))]
mod loom_tests;

pub use batch::{BatchEntry, BatchIter, DecodedBatch, Predecessor, WalRecord, WriteBatch};
pub use checkpoint::CheckpointInfo;
pub use commit_check::CommitView;
pub use db::{Db, holds_database};
pub use error::{Error, Result};
pub use events::{
    CompactionJobInfo, EventListener, FlushJobInfo, INFO_LOG_FILE, StrategySwitchInfo,
    WriteStallInfo,
};
pub use ingest::{IngestOptions, IngestedFile};
pub use iter::{DbIterator, RawIterator};
pub use lithify_base::SeqNo;
pub use lithify_base::clock::{Clock, ManualClock, SystemClock};
pub use lithify_base::merge::{Max, MergeFailureScope, MergeOperator, StringAppend, UInt64Add};
pub use lithify_blob::BlobCompression;
pub use lithify_compaction::iter::{CompactionFilter, FilterDecision};
pub use lithify_compaction::{BottommostLevelCompaction, CompactRangeOptions, CompactionPri};
pub use lithify_compaction_strategy::CompactionStrategy;
pub use lithify_compaction_strategy::adaptive::{AdaptiveOptions, AdaptiveThresholds};
pub use lithify_compaction_strategy::cost_model::{
    CpuCosts, Limits as AdaptiveLimits, Objective as AdaptiveObjective, Prediction,
};
pub use lithify_compaction_tiered::{MajorOnlyOptions, MinorPolicy, TwoTierOptions};
pub use lithify_sstable::{BlockCache, Compression};
pub use lithify_wal::{RecordCompression as WalCompression, RecoveryMode};
pub use live_set::{
    CheckpointOptions, LiveBlobFileMetaData, LiveFile, LiveFileKind, LiveFileMetaData, LiveFileSet,
    copy_file_prefix,
};
pub use options::{BlobOptions, Options, ReadOptions, TableOptions, WriteOptions};
pub use recovery::{DroppedBytes, LOST_DIR, RecoveryReport};
pub use remote_compaction::CompactionService;
pub use resource::{DailyTime, OffpeakWindow, RateLimiter, RateLimiterOptions};
pub use snapshot::Snapshot;
pub use sst_check::{
    FileProblem, SstFilesCheck, VerifyProgress, check_sst_checksum, check_sst_identity,
    verify_sst_files, verify_sst_files_with,
};
pub use sst_file_writer::{ExternalSstInfo, SstFileWriter};
pub use stall::{StallCause, StallCondition};
pub use stats::{DbStats, LevelStats, MergeStats, StallStats, TableStats};
pub use table::Table;
pub use verify::MergeFailure;

/// The README's example, run as a doctest so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

// The thread-safety the documentation promises, checked at compile time: a
// change that made one of these types lose `Send` or `Sync` stops the build.
const _: () = {
    const fn send_and_sync<T: Send + Sync>() {}
    const fn send<T: Send>() {}
    send_and_sync::<Db>();
    send_and_sync::<Table>();
    send_and_sync::<Snapshot>();
    send_and_sync::<Error>();
    send::<DbIterator>();
    send::<RawIterator>();
    send::<WriteBatch>();
};
