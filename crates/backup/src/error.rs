//! The backup engine's errors.

use std::path::PathBuf;

use snafu::Snafu;

/// What can go wrong.
#[derive(Debug, Snafu)]
#[snafu(visibility(pub(crate)))]
#[non_exhaustive]
pub enum Error {
    /// A file operation failed.
    #[snafu(display("{op} {} failed: {source}", path.display()))]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The database could not give a consistent set of files, or a copy
    /// of one failed.
    #[snafu(display("{source}"))]
    Engine {
        /// The engine's error (boxed: it is large, and rare here).
        #[snafu(source(from(lithify_engine::Error, Box::new)))]
        source: Box<lithify_engine::Error>,
    },
    /// A backup's file or metadata does not hold what was recorded.
    #[snafu(display("corrupt backup file {}: {message}", path.display()))]
    Corrupt {
        /// The damaged file.
        path: PathBuf,
        /// What is wrong (expected and actual size or checksum).
        message: String,
    },
    /// A table of the backup fails its block checks.
    #[snafu(display("{source}"))]
    Table {
        /// The table reader's error (file and offset).
        source: lithify_sstable::Error,
    },
    /// A table of the database is damaged: it is not backed up.
    #[snafu(display("not backed up: table {} of the database is damaged: {source}", path.display()))]
    DamagedSource {
        /// The database's SST file.
        path: PathBuf,
        /// What is damaged (file and offset).
        source: lithify_sstable::Error,
    },
    /// A blob file of the database is damaged: it is not backed up.
    #[snafu(display("not backed up: blob file {} of the database is damaged: {source}", path.display()))]
    DamagedSourceBlob {
        /// The database's blob file.
        path: PathBuf,
        /// What is damaged (file and offset).
        source: lithify_blob::Error,
    },
    /// No backup with this id.
    #[snafu(display("no backup {id} in {}", dir.display()))]
    NoSuchBackup {
        /// The id asked for.
        id: u32,
        /// The backup directory.
        dir: PathBuf,
    },
    /// A request that cannot be carried out as asked.
    #[snafu(display("invalid argument: {message}"))]
    InvalidArgument {
        /// What is wrong.
        message: String,
    },
}

impl lithify_base::Classify for Error {
    fn kind(&self) -> lithify_base::ErrorKind {
        use lithify_base::ErrorKind;
        match self {
            Error::Io { source, .. } => lithify_base::error::io_error_kind(source),
            Error::Engine { source } => source.kind(),
            Error::Corrupt { .. } => ErrorKind::Corruption,
            Error::Table { source } | Error::DamagedSource { source, .. } => source.kind(),
            Error::DamagedSourceBlob { source, .. } => source.kind(),
            Error::NoSuchBackup { .. } | Error::InvalidArgument { .. } => {
                ErrorKind::InvalidArgument
            }
        }
    }
}

/// The backup engine's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
