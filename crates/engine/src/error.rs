//! The error of the engine.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use lithify_base::error::io_error_kind;
use lithify_base::{Classify, ErrorKind};
use snafu::{Location, Snafu};

/// What can go wrong opening, writing or reading a database.
#[derive(Debug, Snafu)]
#[snafu(visibility(pub(crate)), context(suffix(Snafu)))]
#[non_exhaustive]
pub enum Error {
    /// A file-system operation failed.
    #[snafu(display("{op} {} failed: {source}", path.display()))]
    Io {
        /// What was being done ("creating", "removing", ...).
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// Another process (or another `Db` in this one) holds the database.
    #[snafu(display(
        "the database in {} is in use: cannot lock {}: {source}",
        dir.display(),
        path.display()
    ))]
    Locked {
        /// The database directory.
        dir: PathBuf,
        /// The LOCK file.
        path: PathBuf,
        /// Why the lock was refused.
        source: io::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// Writing or reading a write-ahead log failed.
    #[snafu(display("{source}"))]
    Wal {
        /// The log's error (it names the file and offset).
        source: lithify_wal::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// The MANIFEST, CURRENT or a version edit failed.
    #[snafu(display("{source}"))]
    Version {
        /// The version crate's error.
        source: lithify_version::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// A compaction (or flush) job failed.
    #[snafu(display("{source}"))]
    Compaction {
        /// The compaction crate's error.
        source: lithify_compaction::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// Building, opening or reading an SST failed.
    #[snafu(display("{source}"))]
    Sst {
        /// The table crate's error (it names the file and offset).
        source: lithify_sstable::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// A memtable refused an entry.
    #[snafu(display("{source}"))]
    Memtable {
        /// The memtable's error.
        source: lithify_memtable::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// An iterator over memtables and tables failed.
    #[snafu(display("{source}"))]
    Read {
        /// The error the iterator reported.
        source: lithify_base::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// A write-ahead log record does not decode as a write batch.
    #[snafu(display(
        "corruption in write-ahead log {} in the record at offset {offset}: {message}",
        path.display()
    ))]
    WalRecord {
        /// The log file.
        path: PathBuf,
        /// Offset of the record.
        offset: u64,
        /// What is wrong.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// Recovery found data it cannot reconcile.
    #[snafu(display("corruption in {}: {message}", path.display()))]
    Corruption {
        /// The file at fault.
        path: PathBuf,
        /// What is wrong.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// A key holds merge operands but the table has no merge operator to
    /// read them with.
    #[snafu(display(
        "key {key} of table {table} holds merge operands, and the database was opened without \
         a merge operator (the table records {recorded}): open it with that operator"
    ))]
    NoMergeOperator {
        /// The table's name.
        table: String,
        /// The key, escaped.
        key: String,
        /// The operator name the MANIFEST records, or a phrase saying none is.
        recorded: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// The merge operator could not merge a key's operands (a malformed
    /// operand or value).
    #[snafu(display("merge operator {operator} failed to merge key {key} of table {table}"))]
    MergeFailed {
        /// The table's name.
        table: String,
        /// The operator's name.
        operator: String,
        /// The key, escaped.
        key: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// The caller asked for something invalid.
    #[snafu(display("invalid argument: {message}"))]
    InvalidArgument {
        /// What is wrong.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// A background flush or compaction (or a WAL write) failed: the
    /// database accepts no more writes until it is reopened. Reads still
    /// work, and nothing acknowledged was lost.
    #[snafu(display("the database is read-only after a background error: {cause}"))]
    ReadOnly {
        /// The first failure.
        cause: Arc<Error>,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// The database was opened with `Db::open_read_only`: it takes no
    /// writes, flushes or compactions.
    #[snafu(display(
        "the database in {} was opened read-only: it takes no writes, flushes or compactions",
        dir.display()
    ))]
    OpenedReadOnly {
        /// The database directory.
        dir: PathBuf,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// The write group this write belonged to failed; the group's leader
    /// got the original error.
    #[snafu(display("the write group of this write failed: {cause}"))]
    GroupFailed {
        /// The leader's error.
        cause: Arc<Error>,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// The database is closing and refuses new work.
    #[snafu(display("the database is shutting down"))]
    ShuttingDown {
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// A [`Table`](crate::Table) handle was used after its database was
    /// closed or dropped.
    #[snafu(display("table {table} belongs to a database that is closed"))]
    Closed {
        /// The table's name.
        table: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Classify for Error {
    fn kind(&self) -> ErrorKind {
        match self {
            Error::Io { source, .. } => io_error_kind(source),
            Error::Locked { .. } => ErrorKind::InvalidArgument,
            Error::Wal { source, .. } => source.kind(),
            Error::Version { source, .. } => source.kind(),
            Error::Sst { source, .. } => source.kind(),
            Error::Compaction { source, .. } => source.kind(),
            Error::Memtable { source, .. } => source.kind(),
            Error::Read { source, .. } => source.kind(),
            Error::WalRecord { .. } | Error::Corruption { .. } | Error::MergeFailed { .. } => {
                ErrorKind::Corruption
            }
            Error::InvalidArgument { .. }
            | Error::OpenedReadOnly { .. }
            | Error::NoMergeOperator { .. } => ErrorKind::InvalidArgument,
            Error::ReadOnly { .. } | Error::ShuttingDown { .. } | Error::Closed { .. } => {
                ErrorKind::Poisoned
            }
            Error::GroupFailed { cause, .. } => cause.kind(),
        }
    }
}

impl Error {
    /// The kind of this error.
    pub fn kind(&self) -> ErrorKind {
        Classify::kind(self)
    }

    /// Whether stored data is damaged.
    pub fn is_corruption(&self) -> bool {
        self.kind() == ErrorKind::Corruption
    }

    /// Whether the database refuses writes: after a background error, or
    /// because it was opened read-only.
    pub fn is_read_only(&self) -> bool {
        matches!(self, Error::ReadOnly { .. } | Error::OpenedReadOnly { .. })
    }
}

impl From<Error> for lithify_base::Error {
    fn from(err: Error) -> Self {
        lithify_base::Error::external(err)
    }
}

impl From<lithify_base::Error> for Error {
    #[track_caller]
    fn from(source: lithify_base::Error) -> Self {
        ReadSnafu.into_error(source)
    }
}

impl From<lithify_sstable::Error> for Error {
    #[track_caller]
    fn from(source: lithify_sstable::Error) -> Self {
        SstSnafu.into_error(source)
    }
}

impl From<lithify_wal::Error> for Error {
    #[track_caller]
    fn from(source: lithify_wal::Error) -> Self {
        WalSnafu.into_error(source)
    }
}

impl From<lithify_version::Error> for Error {
    #[track_caller]
    fn from(source: lithify_version::Error) -> Self {
        VersionSnafu.into_error(source)
    }
}

/// An error shared by several callers (a write group, the background
/// error): the first holder gets it back unwrapped when it is the only one.
pub(crate) fn unshare(err: Arc<Error>) -> Error {
    match Arc::try_unwrap(err) {
        Ok(e) => e,
        Err(shared) => GroupFailedSnafu { cause: shared }.build(),
    }
}

use snafu::IntoError as _;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_a_sentence_and_kinds_classify() {
        let e = InvalidArgumentSnafu {
            message: "start must be before end".to_owned(),
        }
        .build();
        assert_eq!(e.to_string(), "invalid argument: start must be before end");
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        let ro = ReadOnlySnafu { cause: Arc::new(e) }.build();
        assert!(ro.is_read_only());
        assert_eq!(ro.kind(), ErrorKind::Poisoned);
        assert_eq!(
            ro.to_string(),
            "the database is read-only after a background error: invalid argument: start must be before end"
        );
        let base: lithify_base::Error = ro.into();
        assert_eq!(base.kind(), ErrorKind::Poisoned);
    }
}
