//! The error of this crate.

use std::io;
use std::path::PathBuf;

use lithify_base::error::io_error_kind;
use lithify_base::{Classify, ErrorKind};
use snafu::{Location, Snafu};

use crate::reader::DropReason;

/// What can go wrong writing or reading a log.
#[derive(Debug, Snafu)]
#[snafu(visibility(pub(crate)), context(suffix(Snafu)))]
#[non_exhaustive]
pub enum Error {
    /// Appending buffered records to the file failed.
    #[snafu(display("writing log {} at offset {offset} failed: {source}", path.display()))]
    Write {
        /// The log file.
        path: PathBuf,
        /// Where the failed write started.
        offset: u64,
        /// The operating system's error.
        source: io::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// Syncing the file failed; its durable contents are unknown.
    #[snafu(display("syncing log {} failed: {source}", path.display()))]
    Sync {
        /// The log file.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// Reading the file failed.
    #[snafu(display("reading log {} at offset {offset} failed: {source}", path.display()))]
    Read {
        /// The log file.
        path: PathBuf,
        /// Where the failed read started.
        offset: u64,
        /// The operating system's error.
        source: io::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// An earlier write or sync failed, so the writer refuses more records
    /// (what reached the disk is unknown; start a new log).
    #[snafu(display(
        "log {} refuses further records after an earlier failure: {cause}",
        path.display()
    ))]
    Poisoned {
        /// The log file.
        path: PathBuf,
        /// The first failure.
        cause: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// The log is damaged in a way the recovery mode does not tolerate.
    #[snafu(display(
        "corruption in log {} at offset {offset} (record starting at {record_offset}): {reason}",
        path.display()
    ))]
    Corruption {
        /// The log file.
        path: PathBuf,
        /// Where the damage was found.
        offset: u64,
        /// Start of the record the damage belongs to (`offset` if none).
        record_offset: u64,
        /// What is wrong.
        reason: DropReason,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// The file header is intact but names another format or version.
    #[snafu(display("{} is not a readable lithify log: {message}", path.display()))]
    NotALog {
        /// The file.
        path: PathBuf,
        /// What the header says instead.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// The caller asked for something invalid.
    #[snafu(display("invalid argument for log {}: {message}", path.display()))]
    InvalidArgument {
        /// The log file.
        path: PathBuf,
        /// What is wrong.
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
            Error::Write { source, .. }
            | Error::Sync { source, .. }
            | Error::Read { source, .. } => io_error_kind(source),
            Error::Poisoned { .. } => ErrorKind::Poisoned,
            Error::Corruption { .. } | Error::NotALog { .. } => ErrorKind::Corruption,
            Error::InvalidArgument { .. } => ErrorKind::InvalidArgument,
        }
    }
}

impl From<Error> for lithify_base::Error {
    fn from(err: Error) -> Self {
        lithify_base::Error::external(err)
    }
}
