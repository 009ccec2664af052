//! The crate's error: every variant about stored bytes names the file and
//! the byte offset of the damage.

use std::io;
use std::path::{Path, PathBuf};

use lithify_base::{Classify, ErrorKind};
use snafu::{Location, Snafu};

use crate::codec::Compression;

pub use lithify_kafka_format::IN_MEMORY;

/// Everything that can go wrong reading or writing a Kafka-format log.
#[derive(Debug, Snafu)]
#[snafu(visibility(pub(crate)), context(suffix(Snafu)))]
#[non_exhaustive]
pub enum Error {
    /// An I/O operation on `path` failed.
    #[snafu(display("I/O error while trying to {action} {}: {source}", path.display()))]
    Io {
        /// What we were doing ("read", "append to", "rename", ...).
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// Another writer holds the directory: a second process (or another
    /// open [`Log`](crate::Log) in this one) writing the same log, or a
    /// second cleaner of the same data directory. Nothing was read or
    /// changed.
    #[snafu(display(
        "{what} {} is in use by another process (or another handle in this one): {} is locked{}; wait for it to finish, or stop it",
        dir.display(),
        path.display(),
        if *writer { "" } else { " by a writer" }
    ))]
    InUse {
        /// "log directory" or "data directory".
        what: &'static str,
        /// The directory.
        dir: PathBuf,
        /// Its lock file.
        path: PathBuf,
        /// Whether a writer was refused (false: a reader was refused
        /// because a writer holds the lock).
        writer: bool,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// Stored bytes are not a valid batch, record or index.
    #[snafu(display("corruption in {} at byte offset {offset}: {message}", path.display()))]
    Corrupt {
        /// The damaged file ([`IN_MEMORY`] for bytes that came from memory).
        path: PathBuf,
        /// Byte offset of the damage within the file.
        offset: u64,
        /// What is wrong.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// Recovery found damage (an invalid batch, a batch cut short) in
    /// bytes below the recovery point, which were flushed: it refuses to
    /// truncate them.
    #[snafu(display(
        "{} is damaged at byte offset {offset} (where offset {next_offset} or a later one should start), below the recovery point {recovery_point} (bytes that were flushed), so it is refused rather than truncated: {reason}",
        path.display()
    ))]
    DamagedBelowRecoveryPoint {
        /// The segment file.
        path: PathBuf,
        /// Byte offset of the first byte that is not a valid batch.
        offset: u64,
        /// The log's recovery point.
        recovery_point: i64,
        /// The offset after the last valid batch before the damage.
        next_offset: i64,
        /// What is wrong there.
        reason: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// A log ends below its recovery point: records that were flushed are
    /// missing (segment files removed or cut at a batch boundary).
    #[snafu(display(
        "log {} ends at offset {log_end_offset}, below its recovery point {recovery_point} in {}: the records flushed at offsets {log_end_offset}..{recovery_point} are missing (the last segment, {}, holds {size} bytes); if they were removed on purpose, remove the log's line from that file",
        dir.display(),
        checkpoint.display(),
        segment.display()
    ))]
    MissingFlushedRecords {
        /// The log directory.
        dir: PathBuf,
        /// The last segment's `.log`.
        segment: PathBuf,
        /// Its size: where the missing records should have been.
        size: u64,
        /// Where the recovery point was read.
        checkpoint: PathBuf,
        /// The log end offset found.
        log_end_offset: i64,
        /// The recovery point.
        recovery_point: i64,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// A segment's `.log` is missing while its index is there and later
    /// segments hold later offsets: its records are gone.
    #[snafu(display(
        "{} is missing: its index {} is still there and the log goes on to offset {log_end_offset}, so the records of that segment are gone (remove the index file if the segment was removed on purpose)",
        path.display(),
        index.display()
    ))]
    MissingSegment {
        /// The missing `.log`.
        path: PathBuf,
        /// The index file found without it.
        index: PathBuf,
        /// The log end offset of the segments that are there.
        log_end_offset: i64,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// A batch names a compression codec Kafka does not define.
    #[snafu(display(
        "the batch in {} at byte offset {offset} names compression codec id {id}, which is not one of Kafka's codecs (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)",
        path.display()
    ))]
    UnknownCodec {
        /// The file holding the batch.
        path: PathBuf,
        /// Byte offset of the batch.
        offset: u64,
        /// The codec id found in the attributes.
        id: u8,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// Compressed records of a batch could not be decompressed.
    #[snafu(display(
        "the {codec} records of the batch in {} at byte offset {offset} could not be decompressed: {message}",
        path.display()
    ))]
    Decompress {
        /// The file holding the batch.
        path: PathBuf,
        /// Byte offset of the batch.
        offset: u64,
        /// The batch's codec.
        codec: Compression,
        /// What the decompressor said.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// A batch in an old message format (magic 0 or 1) that this crate does
    /// not read. It is valid Kafka data, so it is never truncated as
    /// corruption.
    #[snafu(display(
        "the message set in {} at byte offset {offset} has magic {magic}; only RecordBatch v2 (magic 2) is supported",
        path.display()
    ))]
    UnsupportedMagic {
        /// The file holding the batch.
        path: PathBuf,
        /// Byte offset of the batch.
        offset: u64,
        /// The magic byte found.
        magic: i8,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// A compacted log was asked to store a record without a key.
    #[snafu(display(
        "compacted log {} cannot accept record {index} of the batch: it has no key",
        dir.display()
    ))]
    KeylessRecord {
        /// The log directory.
        dir: PathBuf,
        /// Index of the record within the appended batch.
        index: usize,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// A batch is larger than `max.message.bytes`.
    #[snafu(display(
        "the batch of {size} bytes for log {} is larger than max.message.bytes ({max})",
        dir.display()
    ))]
    BatchTooLarge {
        /// The log directory.
        dir: PathBuf,
        /// Size of the batch in bytes.
        size: usize,
        /// The configured limit.
        max: i32,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// The caller asked for something invalid (a bad config value, an empty
    /// append, offsets out of range).
    #[snafu(display("invalid argument: {message}"))]
    InvalidArgument {
        /// What is wrong.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// An offset checkpoint file (`cleaner-offset-checkpoint`,
    /// `recovery-point-offset-checkpoint`) is not in Kafka's format.
    #[snafu(display(
        "offset checkpoint {} is malformed at line {line} (byte offset {offset}): {message}",
        path.display()
    ))]
    CheckpointMalformed {
        /// The checkpoint file.
        path: PathBuf,
        /// The 1-based line number of the problem.
        line: usize,
        /// Byte offset of that line (the file's size when an entry is
        /// missing at the end).
        offset: u64,
        /// What is wrong.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// A producer's batch breaks its state: an epoch older than the
    /// producer's (fenced), a non-transactional batch while its
    /// transaction is open, a marker from a coordinator older than the
    /// last one.
    #[snafu(display("log {} refuses the batch: {message}", dir.display()))]
    ProducerState {
        /// The log directory.
        dir: PathBuf,
        /// What is wrong.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// The log refuses writes after a failed write or sync left its state
    /// unknown.
    #[snafu(display("log {} refuses writes after an earlier failure: {message}", dir.display()))]
    Poisoned {
        /// The log directory.
        dir: PathBuf,
        /// What failed first.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Whether another writer holds the directory ([`Error::InUse`]).
    pub fn is_in_use(&self) -> bool {
        matches!(self, Error::InUse { .. })
    }

    /// Whether stored data is damaged.
    pub fn is_corruption(&self) -> bool {
        self.kind() == ErrorKind::Corruption
    }

    /// The file and byte offset this error is about, when it is about
    /// stored bytes.
    pub fn file_offset(&self) -> Option<(&Path, u64)> {
        match self {
            Error::Corrupt { path, offset, .. }
            | Error::UnknownCodec { path, offset, .. }
            | Error::Decompress { path, offset, .. }
            | Error::UnsupportedMagic { path, offset, .. }
            | Error::CheckpointMalformed { path, offset, .. }
            | Error::DamagedBelowRecoveryPoint { path, offset, .. } => Some((path, *offset)),
            Error::MissingFlushedRecords { segment, size, .. } => Some((segment, *size)),
            Error::MissingSegment { path, .. } => Some((path, 0)),
            _ => None,
        }
    }
}

impl Classify for Error {
    fn kind(&self) -> ErrorKind {
        match self {
            Error::Io { source, .. } => lithify_base::error::io_error_kind(source),
            Error::Corrupt { .. }
            | Error::UnknownCodec { .. }
            | Error::Decompress { .. }
            | Error::CheckpointMalformed { .. }
            | Error::DamagedBelowRecoveryPoint { .. }
            | Error::MissingFlushedRecords { .. }
            | Error::MissingSegment { .. } => ErrorKind::Corruption,
            Error::UnsupportedMagic { .. }
            | Error::KeylessRecord { .. }
            | Error::BatchTooLarge { .. }
            | Error::ProducerState { .. }
            | Error::InUse { .. }
            | Error::InvalidArgument { .. } => ErrorKind::InvalidArgument,
            Error::Poisoned { .. } => ErrorKind::Poisoned,
        }
    }
}

impl From<Error> for lithify_base::Error {
    fn from(err: Error) -> Self {
        lithify_base::Error::external(err)
    }
}

/// A format error becomes the log's variant of the same name, fields and
/// message, so callers of the log match one error type.
impl From<lithify_kafka_format::Error> for Error {
    fn from(err: lithify_kafka_format::Error) -> Self {
        use lithify_kafka_format::Error as F;
        match err {
            F::Corrupt {
                path,
                offset,
                message,
                location,
            } => Error::Corrupt {
                path,
                offset,
                message,
                location,
            },
            F::UnknownCodec {
                path,
                offset,
                id,
                location,
            } => Error::UnknownCodec {
                path,
                offset,
                id,
                location,
            },
            F::Decompress {
                path,
                offset,
                codec,
                message,
                location,
            } => Error::Decompress {
                path,
                offset,
                codec,
                message,
                location,
            },
            F::UnsupportedMagic {
                path,
                offset,
                magic,
                location,
            } => Error::UnsupportedMagic {
                path,
                offset,
                magic,
                location,
            },
            F::InvalidArgument { message, location } => {
                Error::InvalidArgument { message, location }
            }
            // A variant added to the format later: damage stays damage,
            // at its file and offset; anything else is the caller's.
            other => match (other.is_corruption(), other.file_offset()) {
                (true, Some((path, offset))) => Error::Corrupt {
                    path: path.to_path_buf(),
                    offset,
                    message: other.to_string(),
                    location: snafu::location!(),
                },
                _ => Error::InvalidArgument {
                    message: other.to_string(),
                    location: snafu::location!(),
                },
            },
        }
    }
}
