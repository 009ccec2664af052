//! lithify: an LSM key-value database with RocksDB-style leveled
//! compaction, and a Kafka-style log cleaner — the one crate to depend on.
//!
//! * `Db` is the database (`lithify-engine`, feature `db`):
//!   group-committed writes through a write-ahead log, memtables flushed to
//!   sorted tables, background leveled compaction, snapshots, iterators in
//!   both directions, write stalls, and statistics that measure write, read
//!   and space amplification.
//! * `log` holds the Kafka-format segmented logs (`lithify-kafka-log`) and
//!   their cleaner (`lithify-compaction-logclean`), feature `log`.
//! * [`vfs`] is the file-system layer every file goes through (the real
//!   one, an in-memory one that simulates power loss, a fault injector).
//! * `txn` holds transactions (`lithify-txn`, feature `db`): optimistic
//!   and pessimistic, with read-your-own-writes, save points and a commit
//!   that is one WAL record.
//! * [`Error`] is the one error type: every fallible call of this crate's
//!   re-exports converts into it with `?`.
//!
//! A **merge operator** turns writes into read-modify-write without the
//! read: `merge` records an operand, and reads and compactions combine a
//! key's operands with its value. A counter:
//!
//! ```
//! # #[cfg(feature = "db")]
//! # fn main() -> lithify::Result<()> {
//! use std::sync::Arc;
//! use lithify::{Db, Options, UInt64Add, WriteBatch};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let options = Options::default()
//!     .merge_operator(Some(Arc::new(UInt64Add)));
//! let db = Db::open(dir.path(), options)?;
//! let count = |db: &Db| -> lithify::Result<u64> {
//!     let v = db.get(b"page/home")?.expect("counted");
//!     Ok(u64::from_le_bytes(v[..].try_into().unwrap()))
//! };
//! db.put(b"page/home", 10u64.to_le_bytes())?;
//! for _ in 0..5 {
//!     db.merge(b"page/home", 1u64.to_le_bytes())?; // no read
//! }
//! let mut batch = WriteBatch::new();
//! batch.merge(b"page/home", 100u64.to_le_bytes());
//! db.write(batch)?;
//! assert_eq!(count(&db)?, 115);
//! // Compaction folds the operands into one value; reads see the same.
//! db.flush()?;
//! db.compact_range(None, None)?;
//! assert_eq!(count(&db)?, 115);
//! db.close()?;
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "db"))]
//! # fn main() {}
//! ```
//!
//! Both features are on by default. A user who wants only the database
//! turns `log` off (`default-features = false, features = ["db"]`) and
//! builds none of the Kafka side (its codecs and checksum crates); one who
//! wants only the logs turns `db` off.
//!
//! ```
//! # #[cfg(feature = "db")]
//! use lithify::{Db, Options, ReadOptions, WriteBatch};
//!
//! # #[cfg(feature = "db")]
//! fn main() -> lithify::Result<()> {
//!     let dir = tempfile::tempdir().unwrap();
//!     let db = Db::open(dir.path(), Options::default())?;
//!
//!     // Write, one key or a batch applied atomically.
//!     db.put(b"apple", b"red")?;
//!     let mut batch = WriteBatch::new();
//!     batch.put(b"banana", b"yellow");
//!     batch.put(b"cherry", b"dark red");
//!     db.write(batch)?;
//!
//!     // Read.
//!     assert_eq!(db.get(b"apple")?.as_deref(), Some(&b"red"[..]));
//!
//!     // A snapshot keeps seeing the state it was taken in.
//!     let snapshot = db.snapshot();
//!     db.delete(b"apple")?;
//!     assert_eq!(db.get(b"apple")?, None);
//!     let then = ReadOptions::at(&snapshot);
//!     assert_eq!(db.get_opt(b"apple", &then)?.as_deref(), Some(&b"red"[..]));
//!
//!     // Iterate in key order, over everything or a range, both ways.
//!     let mut keys = Vec::new();
//!     for item in db.iter() {
//!         let (key, _value) = item?;
//!         keys.push(key);
//!     }
//!     assert_eq!(keys, [&b"banana"[..], &b"cherry"[..]]);
//!     let last = db.range(&b"a"[..]..&b"c"[..]).next_back().transpose()?;
//!     assert_eq!(last.map(|(k, _)| k), Some(bytes_of(b"banana")));
//!     let at_snapshot = db.iter_opt(&then).count();
//!     assert_eq!(at_snapshot, 3);
//!
//!     // The engine measures itself.
//!     println!("{}", db.property("lithify.stats").unwrap());
//!     db.close()?;
//!     Ok(())
//! }
//! # fn bytes_of(b: &'static [u8]) -> lithify::Bytes { lithify::Bytes::from_static(b) }
//! # #[cfg(not(feature = "db"))]
//! # fn main() {}
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]

use snafu::Snafu;

mod identify;
mod output;

pub use bytes::Bytes;
pub use identify::{FileFormat, identify_file};
/// The identity of a database, of an open (session), or of a file.
#[cfg(feature = "db")]
pub use lithify_base::Id;
#[cfg(feature = "db")]
pub use lithify_base::ValueKind;
/// Time as the database, the logs and the cleaner go by.
pub use lithify_base::clock::{Clock, ManualClock, SystemClock};
/// Types the database's signatures use: the batch iterator, the commit
/// view transactions validate against, the live file set backups copy, the
/// block cache's counters, the key order, the leveled strategy's options
/// and the strategy trait, and the cost model's inputs.
#[cfg(feature = "db")]
pub use lithify_base::comparator::Comparator;
pub use lithify_base::{Classify, ErrorKind};
/// The compaction crates' error (a strategy's options that do not hold).
#[cfg(feature = "db")]
pub use lithify_compaction::Error as CompactionError;
#[cfg(feature = "db")]
pub use lithify_compaction_leveled::LeveledOptions;
#[cfg(feature = "db")]
pub use lithify_compaction_strategy::adaptive::WorkloadStats;
#[cfg(feature = "db")]
pub use lithify_compaction_strategy::cost_model::{Mix, TableSize};
/// The database's own error (the engine's); [`Error::Db`] wraps it.
#[cfg(feature = "db")]
pub use lithify_engine::Error as DbError;
#[cfg(feature = "db")]
pub use lithify_engine::{
    AdaptiveLimits, AdaptiveObjective, AdaptiveOptions, AdaptiveThresholds, BlobCompression,
    BlobOptions, BlockCache, BottommostLevelCompaction, CheckpointInfo, CheckpointOptions,
    CompactRangeOptions, CompactionFilter, CompactionJobInfo, CompactionPri, CompactionService,
    CompactionStrategy, Compression, CpuCosts, Db, DbIterator, DbStats, DroppedBytes,
    EventListener, ExternalSstInfo, FilterDecision, FlushJobInfo, INFO_LOG_FILE, IngestOptions,
    IngestedFile, LevelStats, LiveFileMetaData, MajorOnlyOptions, Max, MergeFailure,
    MergeFailureScope, MergeOperator, MergeStats, MinorPolicy, OffpeakWindow, Options, Prediction,
    RawIterator, ReadOptions, RecoveryMode, RecoveryReport, SeqNo, Snapshot, SstFileWriter,
    StallCause, StallCondition, StallStats, StrategySwitchInfo, StringAppend, Table, TableOptions,
    TableStats, TwoTierOptions, UInt64Add, WalCompression, WriteBatch, WriteOptions,
    WriteStallInfo, check_sst_checksum, check_sst_identity,
};
#[cfg(feature = "db")]
pub use lithify_engine::{
    BatchEntry, BatchIter, CommitView, LiveBlobFileMetaData, LiveFile, LiveFileKind, LiveFileSet,
};
#[cfg(feature = "db")]
pub use lithify_engine::{
    FileProblem, SstFilesCheck, VerifyProgress, verify_sst_files, verify_sst_files_with,
};
#[cfg(feature = "db")]
pub use lithify_sstable::CacheStats;
pub use output::{StoredData, check_output_path, stored_data_at_or_above};

/// The short ids of the built-in merge operators (`uint64add`,
/// `stringappend`, `max`), as db_bench's `--merge_operator` spells them.
#[cfg(feature = "db")]
pub use lithify_base::merge::BUILT_IN as BUILT_IN_MERGE_OPERATORS;
/// The built-in merge operator with a short id of
/// [`BUILT_IN_MERGE_OPERATORS`] or its name.
#[cfg(feature = "db")]
pub use lithify_base::merge::built_in as merge_operator_by_name;

/// The Kafka-style log: segmented logs of keyed records in Kafka's on-disk
/// format, and the cleaner that compacts them by key.
#[cfg(feature = "log")]
pub mod log {
    /// The lock a [`SharedLog`] is behind, and its guard.
    pub use lithify_base::sync::{Mutex, MutexGuard};
    /// The cleaner's error; the log's is [`Error`].
    pub use lithify_compaction_logclean::Error as CleanerError;
    /// The cleaner's `cleaner-offset-checkpoint` file of a data directory.
    pub use lithify_compaction_logclean::checkpoint as cleaner_checkpoint;
    pub use lithify_compaction_logclean::{
        CleanerConfig, CleanerEvent, CleanerStats, CleaningReason, CleaningState, Grab, LogCleaner,
        LogCleanerManager, LogToClean, RoundReport, Throttler,
    };
    pub use lithify_kafka_log::{
        AppendInfo, AppendedBatch, BatchHeader, BatchMetadata, CleanupPolicy, CommittedRecords,
        CompressionType, DecodeError, DeletedLeftover, Error, FileBatchHeaders, FileBatches,
        Finding, LOCK_FILE_NAME, Log, LogBatches, LogConfig, LogDir, LogRecords, LogRecoveryReport,
        LogSegment, LogSnapshot, OffsetOrder, OpenFailure, OpenOptions, Producer,
        ProducerStateEntry, RecoveryPointSource, Result, SegmentInfo, SegmentRecovery,
        SegmentSnapshot, SharedLog, TopicPartition, Truncation, VerifyReport, lock_data_dir,
        lock_shared, partition_dirs, shared_log, verify,
    };
    /// Kafka's checkpoint files, producer snapshots and transaction
    /// indexes: their formats, and the `.txnindex` check.
    pub use lithify_kafka_log::{checkpoint, producer_snapshot, txn_check, txn_index};
    /// Kafka's record format and codecs (`lithify-kafka-format`, no I/O).
    pub use lithify_kafka_log::{codec, record};
    /// A segment's indexes, and its files' names.
    pub use lithify_kafka_log::{index, naming};
    pub use lithify_offsetmap::{DigestKind, LoadFactor};
}

/// Incremental backups of a database (RocksDB's `BackupEngine`): see
/// [`lithify_backup`].
#[cfg(feature = "db")]
pub mod backup {
    pub use lithify_backup::{
        BackupEngine, BackupInfo, CorruptBackup, CreateStats, Error, Result, holds_backups,
    };
}

/// A database's table and blob files in an S3-compatible bucket
/// (`lithify-bucket`, feature `bucket`): open the database with a
/// [`SplitFs`](bucket::SplitFs) as its file system, and its SSTs and blob
/// files go to the bucket while the WAL stays on local disk; the MANIFEST
/// stays local too, or goes to the bucket with writer fencing
/// ([`SplitFs::with_manifest_in_bucket`](bucket::SplitFs::with_manifest_in_bucket)).
#[cfg(feature = "bucket")]
pub mod bucket {
    pub use lithify_bucket::{
        Bucket, BucketFs, BucketStats, DEFAULT_DELETE_GRACE, FaultStore, ManifestPosition,
        PageCache, ReadOptions, RetryPolicy, S3Config, SplitFs, object_store,
    };
}

/// Read replicas that follow a writer's MANIFEST in a bucket, and
/// compaction workers that take the writer's jobs through it
/// (`lithify-cluster`, feature `cluster`).
#[cfg(feature = "cluster")]
pub mod cluster {
    pub use lithify_cluster::{
        BucketCompactionService, CatchUp, CompactionWorker, Error, Follower, JOBS_DIR, JobReport,
        Replica, Result, ServiceOptions,
    };
}

/// Transactions (`lithify-txn`): optimistic ([`OptimisticDb`](txn::OptimisticDb),
/// validated at commit) and pessimistic ([`TransactionDb`](txn::TransactionDb),
/// per-key locks with deadlock detection), both reading their own writes
/// through a [`WriteBatchWithIndex`](txn::WriteBatchWithIndex).
///
/// A transfer between two accounts, retried while another transaction
/// gets in the way:
///
/// ```
/// # fn main() -> lithify::Result<()> {
/// use lithify::Options;
/// use lithify::txn::OptimisticDb;
///
/// let dir = tempfile::tempdir().unwrap();
/// let db = OptimisticDb::open(dir.path(), Options::default())?;
/// db.put(b"alice", 100u64.to_le_bytes())?;
/// db.put(b"bob", 20u64.to_le_bytes())?;
/// let balance = |v: Option<lithify::Bytes>| v.map_or(0, |v| u64::from_le_bytes(v[..].try_into().unwrap()));
///
/// let transfer = |from: &str, to: &str, amount: u64| -> lithify::Result<bool> {
///     loop {
///         let mut t = db.transaction();
///         let a = balance(t.get(from)?);
///         if a < amount {
///             return Ok(false);
///         }
///         let b = balance(t.get(to)?);
///         t.put(from, (a - amount).to_le_bytes())?;
///         t.put(to, (b + amount).to_le_bytes())?;
///         match t.commit() {
///             Ok(()) => return Ok(true),
///             Err(e) if e.is_busy() => continue, // someone else wrote first: retry
///             Err(e) => return Err(e.into()),
///         }
///     }
/// };
/// assert!(transfer("alice", "bob", 30)?);
/// assert!(!transfer("bob", "alice", 500)?);
/// assert_eq!(balance(db.get(b"alice")?), 70);
/// assert_eq!(balance(db.get(b"bob")?), 50);
/// # Ok(())
/// # }
/// ```
#[cfg(feature = "db")]
pub mod txn {
    pub use lithify_txn::{
        BaseDeltaIterator, BatchLookup, DEFAULT_LOCK_TIMEOUT, Error, OptimisticDb,
        OptimisticTransactionOptions, Result, Transaction, TransactionDb, TransactionDbOptions,
        TransactionOptions, TxnIterator, WriteBatchWithIndex,
    };
}

/// The names of a database directory's files (`CURRENT`, `MANIFEST-000005`,
/// `000012.sst`, `000011.log`), as RocksDB names them.
///
/// ```
/// use lithify::files::{FileKind, parse_file_name, sst_file_name};
/// assert_eq!(sst_file_name(12), "000012.sst");
/// assert!(matches!(parse_file_name("000012.sst"), Some(FileKind::Sst(12))));
/// ```
#[cfg(feature = "db")]
pub mod files {
    pub use lithify_version::filename::{
        CURRENT, FileKind, blob_file_name, log_file_name, manifest_file_name, parse_file_name,
        sst_file_name,
    };
}

/// Reading a database's files without opening it: what `sst_dump`,
/// `ldb dump_wal` and `ldb manifest_dump` do for RocksDB, and what
/// `lithify dump-sst`, `dump-wal`, `dump-manifest` and `lsm` do with these.
///
/// * an SST: [`sst::open_recorded`](inspect::sst::open_recorded) learns
///   the comparator and key schema the file records, then
///   [`RecordedSst::walk`](inspect::sst::RecordedSst::walk) visits every
///   block and entry, reporting damage and going on;
/// * a WAL: [`wal::Reader`](inspect::wal::Reader) in a [`RecoveryMode`],
///   each record's payload decoded by
///   [`WalRecord`](inspect::wal::WalRecord);
/// * the MANIFEST: [`manifest::dump`](inspect::manifest::dump) prints it,
///   [`read_history`](inspect::manifest::read_history) replays it into one
///   step per flush, compaction or trivial move.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use lithify::inspect::manifest::{dump, read_current};
/// use lithify::vfs::OsFs;
/// use lithify::{Db, Options};
///
/// let dir = tempfile::tempdir().unwrap();
/// let db = Db::open(dir.path(), Options::default())?;
/// db.put(b"k", b"v")?;
/// db.flush()?;
/// db.close()?;
/// let manifest = dir.path().join(lithify::files::manifest_file_name(read_current(&OsFs, dir.path())?));
/// let mut text = String::new();
/// dump(&OsFs, &manifest, &mut text)?;
/// assert!(text.contains("000") && text.contains("L0"));
/// # Ok(())
/// # }
/// ```
#[cfg(feature = "db")]
pub mod inspect {
    /// SSTs.
    pub mod sst {
        pub use lithify_sstable::{
            Damage, DataBlockInfo, Properties, RangeDelEntry, RecordedSst, SstCheck, SstVisitor,
            open_recorded,
        };
    }
    /// Write-ahead logs: the record log's reader, and the engine's payloads.
    pub mod wal {
        pub use lithify_engine::{DecodedBatch, Predecessor, WalRecord};
        pub use lithify_wal::format::{FILE_HEADER_LEN, FileHeader, FileHeaderError, Framing};
        pub use lithify_wal::{
            DroppedRange, LogEnd, OwnedRecord, ReadStats, Reader, Record, Records, Reporter,
        };
    }
    /// Blob files (the values key-value separation keeps out of the SSTs):
    /// [`BlobFileReader::records`](crate::inspect::blob::BlobFileReader::records)
    /// walks one, [`verify`](crate::inspect::blob::BlobFileReader::verify) checks
    /// every record.
    pub mod blob {
        pub use lithify_blob::{
            BlobFileFooter, BlobFileHeader, BlobFileReader, BlobFileSummary, BlobIndex, BlobRecord,
            BlobRecords, Readahead,
        };
    }
    /// `CURRENT` and the MANIFEST.
    pub mod manifest {
        pub use lithify_version::history::{
            HistoryStep, ManifestHistory, StepKind, TableTree, read_history,
        };
        pub use lithify_version::manifest::{dump, read_current, recorded_sst_size};
        pub use lithify_version::{DEFAULT_TABLE, DEFAULT_TABLE_NAME, TableId};
    }
}

/// The escaped text form of keys: internal keys written as text
/// (`InternalKey::from_text`, the MANIFEST dump) and the keys the tools read
/// from the command line. Printable ASCII stands for itself, any other
/// byte (and `\`, `#`, `,`) is `\xNN`.
///
/// ```
/// use lithify::text::{escape, unescape};
/// assert_eq!(escape(b"k\x01"), "k\\x01");
/// assert_eq!(unescape("k\\x01").unwrap(), b"k\x01");
/// assert_eq!(unescape("k\\x0"), None);
/// ```
pub mod text {
    pub use lithify_base::key::{escape, unescape};
}

/// The file systems every lithify file goes through.
pub mod vfs {
    pub use lithify_vfs::{
        FaultFs, FaultRule, FileLock, FileSystem, MemFs, MeteredFs, OpCounts, OpKind, OsFs,
        RandomAccessFile, SpaceUsage, WritableFile, lost, parent_dir, read_file, write_file_atomic,
    };
}

/// The errors of the crates below the database and the log, which their
/// errors carry as sources, or return themselves (the record format's, from
/// `log::record` and `log::codec`, which also converts into the facade's
/// `Error` with `?`).
pub mod error {
    pub use lithify_base::Error as BaseError;
    #[cfg(feature = "db")]
    pub use lithify_blob::Error as BlobError;
    #[cfg(feature = "log")]
    pub use lithify_kafka_format::Error as FormatError;
    #[cfg(feature = "db")]
    pub use lithify_memtable::Error as MemTableError;
    #[cfg(feature = "log")]
    pub use lithify_offsetmap::Error as OffsetMapError;
    #[cfg(feature = "db")]
    pub use lithify_sstable::Error as SstError;
    #[cfg(feature = "db")]
    pub use lithify_version::Error as VersionError;
    /// Why a WAL reader dropped bytes ([`WalError`] names it).
    #[cfg(feature = "db")]
    pub use lithify_wal::DropReason;
    #[cfg(feature = "db")]
    pub use lithify_wal::Error as WalError;
    /// Why a compressed WAL record does not decode ([`DropReason`] names it).
    #[cfg(feature = "db")]
    pub use lithify_wal::format::DecompressError;
}

/// What a compaction strategy is made of, for writing one: the picker
/// trait a [`CompactionStrategy`] hands the engine, and what a picker sees
/// (the LSM's current [`Version`](compaction::Version)) and returns (a
/// [`Compaction`](compaction::Compaction) and its edit).
#[cfg(feature = "db")]
pub mod compaction {
    pub use lithify_base::key::TextKeyError;
    pub use lithify_base::{DecodeError, InternalKey, InternalKeyComparator, ParsedInternalKey};
    pub use lithify_compaction::{
        BlobGcPolicy, Compaction, CompactionInputs, CompactionPicker, CompactionReason,
        CompactionsInProgress, DeeperLevels, LevelScore, ManualOutput, ManualPick, ManualRequest,
        PickContext, READ_HEAT_SAMPLE_EVERY, READ_HEAT_SAMPLES, ReadHeat, RunningCompaction,
        StripeHeat, forced_blob_gc_files,
    };
    pub use lithify_version::{
        BlobFile, BlobFileGarbage, BlobFileMetadata, BlobRef, FileMetadata, Version, VersionEdit,
        WalAddition,
    };

    /// Compaction run by another process (RocksDB's `CompactionService`):
    /// the job a [`CompactionService`](crate::CompactionService) hands
    /// over, the worker's run of it, and the outcome it sends back.
    pub mod remote {
        pub use lithify_compaction::remote::{
            RemoteJob, RemoteOutcome, RemoteResult, SstSettings, WorkerEnv, run_remote_job,
        };
        pub use lithify_compaction::{CompactionStats, iter::IterStats};
    }
}

/// Any error of lithify: the database's, the log's or the log cleaner's.
/// Each converts into it with `?`; [`kind`](Error::kind) classifies it
/// (I/O, corruption, invalid argument, no space, refused after an earlier
/// failure).
#[derive(Debug, Snafu)]
#[snafu(visibility(pub(crate)))]
#[non_exhaustive]
pub enum Error {
    /// The database failed.
    #[cfg(feature = "db")]
    #[snafu(display("{source}"), context(false))]
    Db {
        /// The engine's error.
        source: lithify_engine::Error,
    },
    /// A backup failed.
    #[cfg(feature = "db")]
    #[snafu(display("{source}"), context(false))]
    Backup {
        /// The backup engine's error.
        source: lithify_backup::Error,
    },
    /// A transaction failed (see
    /// [`txn::Error::is_busy`](lithify_txn::Error::is_busy) for the ones to
    /// retry).
    #[cfg(feature = "db")]
    #[snafu(display("{source}"), context(false))]
    Txn {
        /// The transaction's error.
        source: lithify_txn::Error,
    },
    /// A log failed.
    #[cfg(feature = "log")]
    #[snafu(display("{source}"), context(false))]
    Log {
        /// The log's error.
        source: lithify_kafka_log::Error,
    },
    /// The log cleaner failed.
    #[cfg(feature = "log")]
    #[snafu(display("{source}"), context(false))]
    Cleaner {
        /// The cleaner's error.
        source: lithify_compaction_logclean::Error,
    },
    /// An output path lies among stored data ([`check_output_path`]).
    #[snafu(display(
        "{} is in {}, which holds {what}: an output there could overwrite its files or be taken for one; write it elsewhere",
        output.display(),
        dir.display()
    ))]
    OutputInStoredData {
        /// The output path, as given.
        output: std::path::PathBuf,
        /// The directory holding stored data.
        dir: std::path::PathBuf,
        /// What it holds.
        what: String,
    },
    /// A file-system operation failed.
    #[snafu(display("{op} {} failed: {source}", path.display()))]
    Io {
        /// What was being done.
        op: &'static str,
        /// The path.
        path: std::path::PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
}

/// A record batch's format error (from [`log::record`] or [`log::codec`]) is
/// a log error, as if the log had read the batch.
#[cfg(feature = "log")]
impl From<lithify_kafka_format::Error> for Error {
    fn from(err: lithify_kafka_format::Error) -> Self {
        Error::Log {
            source: lithify_kafka_log::Error::from(err),
        }
    }
}

/// `Result` with lithify's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Classify for Error {
    fn kind(&self) -> ErrorKind {
        match self {
            #[cfg(feature = "db")]
            Error::Db { source } => source.kind(),
            #[cfg(feature = "db")]
            Error::Backup { source } => source.kind(),
            #[cfg(feature = "db")]
            Error::Txn { source } => source.kind(),
            #[cfg(feature = "log")]
            Error::Log { source } => source.kind(),
            #[cfg(feature = "log")]
            Error::Cleaner { source } => source.kind(),
            Error::OutputInStoredData { .. } => ErrorKind::InvalidArgument,
            Error::Io { source, .. } => lithify_base::error::io_error_kind(source),
        }
    }
}

impl Error {
    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        Classify::kind(self)
    }

    /// Whether stored data is damaged.
    pub fn is_corruption(&self) -> bool {
        self.kind() == ErrorKind::Corruption
    }
}

// The one error type crosses threads, as the crates' errors it wraps do.
const _: () = {
    const fn send_and_sync<T: Send + Sync>() {}
    send_and_sync::<Error>();
};

/// The README's example, run as a doctest so it stays true.
#[cfg(all(doctest, feature = "db"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The workspace README's first-screen example, likewise. (Only in
/// doctests: the file is outside this crate's package.)
#[cfg(all(doctest, feature = "db"))]
#[doc = include_str!("../../../README.md")]
pub struct WorkspaceReadmeDoctests;

#[cfg(all(test, feature = "db", feature = "log"))]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use super::*;

    fn use_both() -> Result<usize> {
        let fs = Arc::new(vfs::MemFs::new());
        let db = Db::open("/db", Options::default().fs(fs.clone()))?;
        db.put("k", "v")?;
        let mut l = log::Log::open(fs, Path::new("/log/t-0"), log::LogConfig::default())?;
        l.append(&[log::record::SimpleRecord::new(1, "k", "v")])?;
        Ok(db.iter().count())
    }

    #[test]
    fn both_errors_convert_with_question_mark() {
        assert_eq!(use_both().unwrap(), 1);
        let err: Error = lithify_engine::Db::open(
            "/missing",
            Options::default()
                .create_if_missing(false)
                .fs(Arc::new(vfs::MemFs::new())),
        )
        .unwrap_err()
        .into();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.to_string().contains("does not exist"), "{err}");
    }
}

#[cfg(all(test, feature = "log"))]
mod log_tests {
    use std::path::Path;
    use std::sync::Arc;

    use super::*;

    fn open_and_clean() -> Result<usize> {
        let fs = Arc::new(vfs::MemFs::new());
        let config = log::LogConfig::default().cleanup_policy(log::CleanupPolicy {
            compact: true,
            delete: false,
        });
        let mut l = log::Log::open(fs.clone(), Path::new("/kafka/t-0"), config)?;
        l.append(&[log::record::SimpleRecord::new(1, "k", "v")])?;
        let clock = Arc::new(ManualClock::at_ms(0));
        let cleaner = log::LogCleaner::new(log::CleanerConfig::default(), fs, clock);
        cleaner.add_log(log::shared_log(l))?;
        Ok(cleaner.clean_eligible_once()?.len())
    }

    #[test]
    fn log_and_cleaner_errors_convert_with_question_mark() {
        assert_eq!(
            open_and_clean().unwrap(),
            0,
            "the active segment is never cleaned"
        );
        let err: Error = log::Log::open(
            Arc::new(vfs::MemFs::new()),
            Path::new("/kafka/t-0"),
            log::LogConfig::default().segment_bytes(1),
        )
        .unwrap_err()
        .into();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.to_string().contains("segment.bytes"), "{err}");
    }

    fn first_record_key(raw: Bytes) -> Result<Option<Bytes>> {
        let batch = log::record::RecordBatch::parse(raw)?;
        batch.ensure_valid()?;
        Ok(batch.records()?.into_iter().next().and_then(|r| r.key))
    }

    #[test]
    fn record_format_errors_convert_with_question_mark() {
        let mut b = log::record::BatchBuilder::new(0);
        b.append(0, 1, Some(b"k"), Some(b"v"), &[]).unwrap();
        let raw = b.build();
        assert_eq!(
            first_record_key(raw.clone()).unwrap().as_deref(),
            Some(&b"k"[..])
        );
        let mut damaged = raw.to_vec();
        *damaged.last_mut().unwrap() ^= 1;
        let err = first_record_key(damaged.into()).unwrap_err();
        assert!(matches!(err, Error::Log { .. }), "{err}");
        assert_eq!(err.kind(), ErrorKind::Corruption);
    }
}
