//! The cleaner's error. Whatever went wrong in a log, a segment or a
//! checkpoint file is the log crate's error, kept as the source (and shown
//! as it is: it names the file and byte offset of any damage); the other
//! variants are the cleaner's own refusals.

use std::io;
use std::path::{Path, PathBuf};

use lithify_base::{Classify, ErrorKind};
use snafu::{Location, Snafu};

/// Everything that can go wrong choosing, cleaning or checkpointing logs.
#[derive(Debug, Snafu)]
#[snafu(visibility(pub(crate)), context(suffix(Snafu)))]
#[non_exhaustive]
pub enum Error {
    /// Reading or writing a log, a segment or a checkpoint file failed.
    #[snafu(display("{source}"), context(false))]
    Log {
        /// The log crate's error (file and byte offset of any damage),
        /// boxed so that the cleaner's results stay small.
        #[snafu(source(from(lithify_kafka_log::Error, Box::new)))]
        source: Box<lithify_kafka_log::Error>,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// The caller asked for something invalid (a bad setting, a log
    /// directory not named `<topic>-<partition>`, a state change that does
    /// not apply).
    #[snafu(display("invalid argument: {message}"))]
    InvalidArgument {
        /// What is wrong.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// A COMMIT or ABORT marker disagrees with the transaction indexes: an
    /// ABORT after transactional data no `.txnindex` entry lists as
    /// aborted (an index lost entries), or a COMMIT of a transaction an
    /// entry lists as aborted. The round stops before anything changes.
    #[snafu(display(
        "corruption in {} at byte offset {offset}: {message}; reopen the log with OpenOptions::recovery_point = Some(0) to rebuild every .txnindex from the log",
        path.display()
    ))]
    TransactionIndexMismatch {
        /// The segment holding the marker.
        path: PathBuf,
        /// Byte offset of the marker.
        offset: u64,
        /// What disagrees.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// A cleaning round stopped early: its log was paused or removed, or
    /// the cleaner is shutting down. Nothing was swapped in.
    #[snafu(display("cleaning of log {} was aborted: {reason}", dir.display()))]
    CleaningAborted {
        /// The log directory.
        dir: PathBuf,
        /// Why.
        reason: &'static str,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// The cleaner's offset map could not be created.
    #[snafu(display("the cleaner's offset map could not be created: {source}"))]
    OffsetMap {
        /// The offset map's error.
        source: lithify_offsetmap::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// A round's read-ahead thread failed (it panicked): the round
    /// stops, nothing of it is swapped in.
    #[snafu(display("the cleaner's read-ahead thread failed: {message}"))]
    ReadAhead {
        /// What the thread said.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// A cleaner thread could not be started.
    #[snafu(display("I/O error while trying to spawn {name}: {source}"))]
    Spawn {
        /// The thread's name.
        name: String,
        /// The operating system's error.
        source: io::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Whether stored data is damaged.
    pub fn is_corruption(&self) -> bool {
        self.kind() == ErrorKind::Corruption
    }

    /// The file and byte offset this error is about, when it is about
    /// stored bytes.
    pub fn file_offset(&self) -> Option<(&Path, u64)> {
        match self {
            Error::Log { source, .. } => source.file_offset(),
            Error::TransactionIndexMismatch { path, offset, .. } => Some((path, *offset)),
            _ => None,
        }
    }

    /// Whether an I/O operation failed (the manager then takes the data
    /// directory offline, as Kafka does).
    pub(crate) fn is_io(&self) -> bool {
        match self {
            Error::Log { source, .. } => matches!(**source, lithify_kafka_log::Error::Io { .. }),
            Error::Spawn { .. } => true,
            _ => false,
        }
    }
}

impl Classify for Error {
    fn kind(&self) -> ErrorKind {
        match self {
            Error::Log { source, .. } => source.kind(),
            Error::TransactionIndexMismatch { .. } => ErrorKind::Corruption,
            Error::Spawn { source, .. } => lithify_base::error::io_error_kind(source),
            Error::InvalidArgument { .. }
            | Error::CleaningAborted { .. }
            | Error::OffsetMap { .. } => ErrorKind::InvalidArgument,
            // A panic: a defect, not the data nor the caller.
            Error::ReadAhead { .. } => ErrorKind::Poisoned,
        }
    }
}

/// A batch's format error is the log's error of the same name, as if the
/// log had read the batch.
impl From<lithify_kafka_format::Error> for Error {
    #[track_caller]
    fn from(err: lithify_kafka_format::Error) -> Self {
        Error::from(lithify_kafka_log::Error::from(err))
    }
}

impl From<Error> for lithify_base::Error {
    fn from(err: Error) -> Self {
        lithify_base::Error::external(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_logs_error_is_the_source_and_reads_the_same() {
        let log_err = lithify_kafka_log::Log::open(
            std::sync::Arc::new(lithify_vfs::MemFs::new()),
            Path::new("/d/t-0"),
            lithify_kafka_log::LogConfig::default().segment_bytes(1),
        )
        .unwrap_err();
        let text = log_err.to_string();
        let err: Error = log_err.into();
        assert_eq!(err.to_string(), text);
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(std::error::Error::source(&err).is_some());
    }
}
