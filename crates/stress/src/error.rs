//! The stress runs' error: each variant reads as one sentence that names
//! the file or setting at fault, or says what a run found and how to
//! repeat it.

use std::io;
use std::path::PathBuf;

use snafu::{Location, Snafu};

/// Everything a stress run can fail with.
#[derive(Debug, Snafu)]
#[snafu(visibility(pub(crate)), context(suffix(Snafu)))]
#[non_exhaustive]
pub enum Error {
    /// The run found the database or the logs disagreeing with what was
    /// acknowledged (the message says what, with the seed and how to
    /// repeat the check).
    #[snafu(display("{message}"))]
    StressFailed {
        /// What was found.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// The expected-state file does not decode.
    #[snafu(display(
        "the expected-state file {} is damaged at byte {offset}: {message}",
        path.display()
    ))]
    ExpectedState {
        /// The file.
        path: PathBuf,
        /// Byte offset of the damaged header or slot.
        offset: u64,
        /// What is wrong.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// The settings ask for something the run cannot do (the message
    /// names the settings by their `lithify stress` flags).
    #[snafu(display("{message}"))]
    Usage {
        /// What is wrong.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// The database failed outside what the run checks (its message names
    /// the file at fault).
    #[snafu(display("{source}"))]
    Db {
        /// The database's error, through the facade.
        #[snafu(source(from(lithify::DbError, |e| Box::new(lithify::Error::from(e)))))]
        source: Box<lithify::Error>,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// A transaction failed for a reason other than another transaction
    /// getting in the way (those are run again).
    #[snafu(display("{source}"))]
    Txn {
        /// The transaction's error, through the facade.
        #[snafu(source(from(lithify::txn::Error, |e| Box::new(lithify::Error::from(e)))))]
        source: Box<lithify::Error>,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// A log failed (its message names the file and offset).
    #[snafu(display("{source}"))]
    Log {
        /// The log's error, through the facade.
        #[snafu(source(from(lithify::log::Error, |e| Box::new(lithify::Error::from(e)))))]
        source: Box<lithify::Error>,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// The log cleaner failed (its message names the log, and the file
    /// and offset of any damage).
    #[snafu(display("{source}"))]
    Cleaner {
        /// The cleaner's error, through the facade.
        #[snafu(source(from(lithify::log::CleanerError, |e| Box::new(lithify::Error::from(e)))))]
        source: Box<lithify::Error>,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// The expected-state file would go among stored data (the message
    /// names the directory and what it holds).
    #[snafu(display("{source}"))]
    Output {
        /// The facade's refusal.
        #[snafu(source(from(lithify::Error, Box::new)))]
        source: Box<lithify::Error>,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// A file or directory could not be used.
    #[snafu(display("cannot {action} {}: {source}", path.display()))]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
}

/// `Result` with the stress runs' [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
