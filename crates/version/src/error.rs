//! The error of this crate.

use std::io;
use std::path::PathBuf;

use lithify_base::error::io_error_kind;
use lithify_base::{Classify, ErrorKind};
use snafu::{Location, Snafu};

/// What can go wrong with versions, edits, the MANIFEST and CURRENT.
#[derive(Debug, Snafu)]
#[snafu(visibility(pub(crate)), context(suffix(Snafu)))]
#[non_exhaustive]
pub enum Error {
    /// A file-system operation failed.
    #[snafu(display("{op} {} failed: {source}", path.display()))]
    Io {
        /// What was being done ("creating", "renaming", ...).
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// Writing or reading a MANIFEST through the record log failed.
    #[snafu(display("{source}"))]
    Log {
        /// The log's error (it names the file and offset).
        source: lithify_wal::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// An encoded `VersionEdit` is malformed.
    #[snafu(display("malformed version edit at byte {position}: {message}"))]
    BadEdit {
        /// Byte position inside the encoded edit.
        position: usize,
        /// What is wrong.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// A MANIFEST or CURRENT holds something impossible.
    #[snafu(display("corruption in {} at offset {offset}: {message}", path.display()))]
    Corruption {
        /// The damaged file.
        path: PathBuf,
        /// Offset of the record (or byte) at fault.
        offset: u64,
        /// What is wrong.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// An edit cannot be applied to the current state (deleting a missing
    /// file, adding a duplicate, overlapping files in L1+, ...). Nothing was
    /// written.
    #[snafu(display("invalid version edit: {message}"))]
    InvalidEdit {
        /// What is wrong.
        message: String,
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
    /// The LSM text form does not parse, or describes an impossible shape.
    #[snafu(display("LSM text form: {message}"))]
    Text {
        /// What is wrong (with the line number when one line is at fault).
        message: String,
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
            Error::Log { source, .. } => source.kind(),
            Error::BadEdit { .. } | Error::Corruption { .. } => ErrorKind::Corruption,
            Error::InvalidEdit { .. } | Error::InvalidArgument { .. } | Error::Text { .. } => {
                ErrorKind::InvalidArgument
            }
        }
    }
}

impl From<Error> for lithify_base::Error {
    fn from(err: Error) -> Self {
        lithify_base::Error::external(err)
    }
}

impl From<lithify_wal::Error> for Error {
    #[track_caller]
    fn from(source: lithify_wal::Error) -> Self {
        LogSnafu.into_error(source)
    }
}

use snafu::IntoError as _;
