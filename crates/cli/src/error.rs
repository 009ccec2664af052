//! The command line's error: every variant reads as one sentence that
//! names the file or setting at fault.

use std::io;
use std::path::PathBuf;

use snafu::{Location, Snafu};

/// Everything a `lithify` command can fail with.
#[derive(Debug, Snafu)]
#[snafu(visibility(pub(crate)), context(suffix(Snafu)))]
pub(crate) enum Error {
    /// A log operation failed (its message names the file and offset).
    #[snafu(display("{source}"))]
    Log {
        /// The log crate's error.
        source: lithify::log::Error,
        #[snafu(implicit)]
        location: Location,
    },

    /// The log cleaner failed (its message names the log, and the file
    /// and offset of any damage).
    #[snafu(display("{source}"))]
    Cleaner {
        /// The cleaner crate's error.
        source: lithify::log::CleanerError,
        #[snafu(implicit)]
        location: Location,
    },

    /// The database failed (its message names the file at fault).
    #[snafu(display("{source}"))]
    Db {
        /// The database's error.
        #[snafu(source(from(lithify::DbError, |e| Box::new(lithify::Error::from(e)))))]
        source: Box<lithify::Error>,
        #[snafu(implicit)]
        location: Location,
    },

    /// A backup operation failed (its message names the file at fault).
    #[snafu(display("{source}"))]
    Backup {
        /// The backup engine's error, through the facade.
        #[snafu(source(from(lithify::backup::Error, |e| Box::new(lithify::Error::from(e)))))]
        source: Box<lithify::Error>,
        #[snafu(implicit)]
        location: Location,
    },

    /// An SST file could not be read (the message names the file and
    /// byte offset).
    #[snafu(display("{source}"))]
    Table {
        /// The table crate's error.
        source: lithify::error::SstError,
        #[snafu(implicit)]
        location: Location,
    },

    /// A record log (WAL) could not be read (the message names the file
    /// and byte offset).
    #[snafu(display("{source}"))]
    Wal {
        /// The log crate's error.
        source: lithify::error::WalError,
        #[snafu(implicit)]
        location: Location,
    },

    /// A MANIFEST or CURRENT could not be read (the message names the file).
    #[snafu(display("{source}"))]
    Version {
        /// The version crate's error.
        source: lithify::error::VersionError,
        #[snafu(implicit)]
        location: Location,
    },

    /// An output path lies among stored data (the message names the
    /// directory and what it holds).
    #[snafu(display("{source}"))]
    Output {
        /// The facade's refusal.
        #[snafu(source(from(lithify::Error, Box::new)))]
        source: Box<lithify::Error>,
        #[snafu(implicit)]
        location: Location,
    },

    /// A benchmark failed or refused its settings (the message names the
    /// setting or file at fault).
    #[snafu(display("{source}"), context(false))]
    Bench {
        /// The benchmark crate's error.
        source: lithify_bench::Error,
        #[snafu(implicit)]
        location: Location,
    },

    /// A stress run failed, or found the database or log disagreeing with
    /// what was acknowledged (the message says what, and how to reproduce
    /// it).
    #[snafu(display("{source}"), context(false))]
    Stress {
        /// The stress crate's error.
        source: lithify_stress::Error,
        #[snafu(implicit)]
        location: Location,
    },

    /// The benchmark's results could not be written as JSON.
    #[snafu(display("cannot write the benchmark results as JSON: {source}"))]
    Json {
        /// serde_json's error.
        source: serde_json::Error,
        #[snafu(implicit)]
        location: Location,
    },

    /// `get` found no value.
    #[snafu(display("key {key:?} is not in the database in {}", dir.display()))]
    NotFound {
        /// The key as given.
        key: String,
        /// The database directory.
        dir: PathBuf,
        #[snafu(implicit)]
        location: Location,
    },

    /// A file or directory could not be used.
    #[snafu(display("cannot {action} {}: {source}", path.display()))]
    Io {
        /// What we were doing.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
        #[snafu(implicit)]
        location: Location,
    },

    /// The command line asks for something invalid.
    #[snafu(display("{message}"))]
    Usage {
        /// What is wrong.
        message: String,
        #[snafu(implicit)]
        location: Location,
    },

    /// A dumped file holds damaged data (details were printed above).
    #[snafu(display("{} is damaged: {message}", path.display()))]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the byte offset.
        message: String,
        #[snafu(implicit)]
        location: Location,
    },

    /// Some logs failed (each failure was printed above).
    #[snafu(display("{message}"))]
    Failures {
        /// A summary.
        message: String,
        #[snafu(implicit)]
        location: Location,
    },
}

impl Error {
    /// Whether this is a write to a pipe whose reader has gone
    /// (`lithify bench | head`): no failure of ours.
    pub(crate) fn is_broken_pipe(&self) -> bool {
        matches!(self, Error::Io { source, .. } if source.kind() == io::ErrorKind::BrokenPipe)
    }
}

/// `Result` with the command line's [`Error`].
pub(crate) type Result<T, E = Error> = std::result::Result<T, E>;
