//! The error of the compaction simulator.

use std::io;
use std::path::PathBuf;

use lithify_base::{Classify, ErrorKind};
use snafu::{Location, Snafu};

/// What can go wrong setting up or running a simulation.
#[derive(Debug, Snafu)]
#[snafu(visibility(pub(crate)), context(suffix(Snafu)))]
#[non_exhaustive]
pub enum Error {
    /// A setting is out of range.
    #[snafu(display("invalid simulation setting: {message}"))]
    InvalidArgument {
        /// What is wrong.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// The simulated LSM's metadata (a real `VersionSet` on a `MemFs`)
    /// refused an edit.
    #[snafu(display("the simulated version set failed: {source}"))]
    Version {
        /// The version crate's error.
        source: lithify_version::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// A strategy could not be built (its options are out of range).
    #[snafu(display("{source}"))]
    Strategy {
        /// The compaction crates' error.
        source: lithify_compaction::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// Writing a calibration table failed.
    #[snafu(display("{op} {} failed: {source}", path.display()))]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// Building a calibration table failed.
    #[snafu(display("{source}"))]
    Sst {
        /// The table's error.
        source: lithify_sstable::Error,
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
            Error::InvalidArgument { .. } => ErrorKind::InvalidArgument,
            Error::Version { source, .. } => source.kind(),
            Error::Strategy { source, .. } => source.kind(),
            Error::Io { source, .. } => lithify_base::error::io_error_kind(source),
            Error::Sst { source, .. } => source.kind(),
        }
    }
}

impl From<lithify_compaction::Error> for Error {
    #[track_caller]
    fn from(source: lithify_compaction::Error) -> Self {
        snafu::IntoError::into_error(StrategySnafu, source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_a_sentence() {
        let e = InvalidArgumentSnafu {
            message: "key space must be in 1..2^31, not 0".to_owned(),
        }
        .build();
        assert_eq!(
            e.to_string(),
            "invalid simulation setting: key space must be in 1..2^31, not 0"
        );
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    }
}
