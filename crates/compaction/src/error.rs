//! The error of `lithify-compaction` (and of the pickers built on it).

use std::io;
use std::path::PathBuf;

use lithify_base::{Classify, ErrorKind, SeqNo};
use snafu::{Location, Snafu};

/// What can go wrong while picking, running or simulating compactions.
#[derive(Debug, Snafu)]
#[snafu(visibility(pub(crate)), context(suffix(Snafu)))]
#[non_exhaustive]
pub enum Error {
    /// A file-system operation on a compaction output failed.
    #[snafu(display("{op} {} failed: {source}", path.display()))]
    Io {
        /// What was being done ("creating", "syncing the directory", ...).
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// Building or opening a table failed (the source names file and offset).
    #[snafu(display("{source}"))]
    Sst {
        /// The table's error.
        source: lithify_sstable::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// Reading the input of a compaction or flush failed.
    #[snafu(display("reading the compaction input failed: {source}"))]
    Input {
        /// The iterator's error.
        source: lithify_base::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// The merge operator could not merge a key's operands (a malformed
    /// operand or value).
    #[snafu(display("merge operator {operator} failed to merge key {key} ({origin})"))]
    MergeFailed {
        /// The merge operator's name.
        operator: String,
        /// The key, escaped.
        key: String,
        /// Which input it came from.
        origin: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// Writing a blob file failed.
    #[snafu(display("{source}"))]
    BlobWrite {
        /// The blob file's error (it names the file and offset).
        source: lithify_blob::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// A separated value could not be read (for a compaction filter, a
    /// merge, or relocation), or its blob index is malformed.
    #[snafu(display("cannot read the separated value of key {key} ({origin}): {source}"))]
    BlobRead {
        /// The key, escaped.
        key: String,
        /// Which input it came from.
        origin: String,
        /// What went wrong (it names the blob file and offset).
        source: Box<lithify_base::Error>,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// A `SingleDelete` met a `Delete` of the same key in one snapshot
    /// stripe: the application mixed the two, which RocksDB's contract
    /// forbids (`enforce_single_del_contracts`).
    #[snafu(display(
        "single delete of {key} at seqno {seqno} meets a delete of the same key in {origin}: \
         SingleDelete and Delete were mixed on one key"
    ))]
    SingleDeleteContract {
        /// The key, escaped.
        key: String,
        /// The single delete's sequence number.
        seqno: SeqNo,
        /// Which input it came from.
        origin: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// The input holds a key that is not an internal key.
    #[snafu(display("corrupt internal key {key} in the input of a compaction ({origin})"))]
    CorruptKey {
        /// The key, escaped.
        key: String,
        /// Which input it came from (an SST file, or "flush input").
        origin: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// The compaction read a different number of records than its input
    /// tables hold, or its outputs do not account for every record read.
    #[snafu(display(
        "compaction record count mismatch: {expected} records expected, {actual} accounted for ({what})"
    ))]
    RecordCount {
        /// What the check compared.
        what: &'static str,
        /// The number expected.
        expected: u64,
        /// The number found.
        actual: u64,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// A request (manual compaction, options) is invalid.
    #[snafu(display("invalid compaction request: {message}"))]
    InvalidArgument {
        /// What is wrong.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// A requested compaction conflicts with one already running (RocksDB's
    /// `Aborted`): retry once it finished.
    #[snafu(display("compaction conflicts with a running compaction: {message}"))]
    Conflict {
        /// What conflicts.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// A remote-compaction job or outcome that is not one its encoder
    /// could have written.
    #[snafu(display("corrupt {what} at byte {at}: {message}"))]
    RemoteFormat {
        /// Which object.
        what: &'static str,
        /// Where in it.
        at: usize,
        /// What is wrong.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// A worker's outcome the primary does not install.
    #[snafu(display("remote compaction job {job} refused: {message}"))]
    RemoteRejected {
        /// The job.
        job: u64,
        /// Why.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// The simulator's in-memory version set refused an edit.
    #[snafu(display("{source}"))]
    Version {
        /// The version set's error.
        source: lithify_version::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Whether this is a conflict with a running compaction (retryable).
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Conflict { .. })
    }

    /// An invalid option or request, for strategies built on this crate
    /// (`lithify-compaction-tiered` reports through this error type, as its
    /// pickers implement [`CompactionPicker`](crate::CompactionPicker)).
    #[track_caller]
    pub fn invalid_argument(message: impl Into<String>) -> Error {
        InvalidArgumentSnafu {
            message: message.into(),
        }
        .build()
    }

    /// A conflict with a running compaction, for strategies built on this
    /// crate.
    #[track_caller]
    pub fn conflict(message: impl Into<String>) -> Error {
        ConflictSnafu {
            message: message.into(),
        }
        .build()
    }
}

impl Classify for Error {
    fn kind(&self) -> ErrorKind {
        match self {
            Error::Io { source, .. } => lithify_base::error::io_error_kind(source),
            Error::Sst { source, .. } => source.kind(),
            Error::Input { source, .. } => source.kind(),
            Error::CorruptKey { .. }
            | Error::RecordCount { .. }
            | Error::MergeFailed { .. }
            | Error::SingleDeleteContract { .. }
            | Error::RemoteFormat { .. }
            | Error::RemoteRejected { .. } => ErrorKind::Corruption,
            Error::InvalidArgument { .. } | Error::Conflict { .. } => ErrorKind::InvalidArgument,
            Error::Version { source, .. } => source.kind(),
            Error::BlobWrite { source, .. } => source.kind(),
            Error::BlobRead { source, .. } => source.kind(),
        }
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
    fn display_is_a_sentence_and_kind_is_kept() {
        let err = RecordCountSnafu {
            what: "records read vs input table entries",
            expected: 10u64,
            actual: 9u64,
        }
        .build();
        assert_eq!(
            err.to_string(),
            "compaction record count mismatch: 10 records expected, 9 accounted for (records read vs input table entries)"
        );
        let shared: lithify_base::Error = err.into();
        assert!(shared.is_corruption());
        let conflict = ConflictSnafu {
            message: "L1 file 000007 is being compacted",
        }
        .build();
        assert!(conflict.is_conflict());
        assert_eq!(conflict.kind(), ErrorKind::InvalidArgument);
    }
}
