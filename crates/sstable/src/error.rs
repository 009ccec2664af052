//! The error of `lithify-sstable`.
//!
//! Everything read from an SST file that is not what a builder could have
//! written is [`Error::Corruption`], naming the file and the byte offset of
//! the damaged block (or footer). Corruption is always an error value: no
//! decoder in this crate panics on bad bytes.

use std::io;
use std::path::PathBuf;

use lithify_base::{Classify, ErrorKind};
use snafu::{Location, Snafu};

/// Errors of table building, opening and reading.
#[derive(Debug, Snafu)]
#[snafu(visibility(pub(crate)), context(suffix(Snafu)))]
#[non_exhaustive]
pub enum Error {
    /// An I/O operation on the SST file failed.
    #[snafu(display("I/O error on SST {} at offset {offset}: {source}", path.display()))]
    Io {
        /// The SST file.
        path: PathBuf,
        /// Byte offset of the read or write.
        offset: u64,
        /// The operating system's error.
        source: io::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// The SST file holds bytes a builder could not have written.
    #[snafu(display("corruption in SST {} at offset {offset}: {message}", path.display()))]
    Corruption {
        /// The damaged SST file.
        path: PathBuf,
        /// Byte offset of the damaged block or footer within the file.
        offset: u64,
        /// What is wrong.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// A key was added that does not sort after the previous one.
    #[snafu(display(
        "keys must be added to SST {} in strictly increasing order: {key:?} does not sort after {previous:?}",
        path.display()
    ))]
    OutOfOrder {
        /// The table being built.
        path: PathBuf,
        /// The key that was rejected (as bytes).
        key: Vec<u8>,
        /// The previous key.
        previous: Vec<u8>,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// A key or value is too large for the format.
    #[snafu(display(
        "entry of {key_len}-byte key and {value_len}-byte value is too large for SST {} (at most {max} bytes together)",
        path.display()
    ))]
    EntryTooLarge {
        /// The table being built.
        path: PathBuf,
        /// Length of the key.
        key_len: usize,
        /// Length of the value.
        value_len: usize,
        /// The limit on key and value together.
        max: usize,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// The table was written under another key order or key schema than the
    /// options it is opened with.
    #[snafu(display(
        "SST {} was written with {what} {found:?} but is opened with {expected:?}",
        path.display()
    ))]
    Incompatible {
        /// The SST file.
        path: PathBuf,
        /// What differs ("comparator", "key schema").
        what: &'static str,
        /// The name recorded in the table.
        found: String,
        /// The name in the options.
        expected: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// An option is out of its valid range.
    #[snafu(display("invalid SST option: {message}"))]
    InvalidOption {
        /// What is wrong.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// The builder failed earlier (an I/O error) and refuses further work.
    #[snafu(display(
        "SST builder for {} failed earlier ({cause}) and refuses further work",
        path.display()
    ))]
    Poisoned {
        /// The table being built.
        path: PathBuf,
        /// The first failure.
        cause: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Whether the SST file is damaged.
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }

    /// The byte offset the error is about, for I/O errors and corruption.
    pub fn offset(&self) -> Option<u64> {
        match self {
            Error::Io { offset, .. } | Error::Corruption { offset, .. } => Some(*offset),
            _ => None,
        }
    }

    /// The SST file the error is about, where there is one.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            Error::Io { path, .. }
            | Error::Corruption { path, .. }
            | Error::OutOfOrder { path, .. }
            | Error::EntryTooLarge { path, .. }
            | Error::Incompatible { path, .. }
            | Error::Poisoned { path, .. } => Some(path),
            Error::InvalidOption { .. } => None,
        }
    }
}

impl Classify for Error {
    fn kind(&self) -> ErrorKind {
        match self {
            Error::Io { source, .. } => lithify_base::error::io_error_kind(source),
            Error::Corruption { .. } => ErrorKind::Corruption,
            Error::OutOfOrder { .. }
            | Error::EntryTooLarge { .. }
            | Error::Incompatible { .. }
            | Error::InvalidOption { .. } => ErrorKind::InvalidArgument,
            Error::Poisoned { .. } => ErrorKind::Poisoned,
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
        let err = CorruptionSnafu {
            path: "000007.sst",
            offset: 4096u64,
            message: "block checksum mismatch",
        }
        .build();
        assert_eq!(
            err.to_string(),
            "corruption in SST 000007.sst at offset 4096: block checksum mismatch"
        );
        assert_eq!(err.offset(), Some(4096));
        let shared: lithify_base::Error = err.into();
        assert!(shared.is_corruption());
    }

    #[test]
    fn io_errors_classify_no_space() {
        let err = IoSnafu {
            path: "x.sst",
            offset: 0u64,
        }
        .into_error(io::Error::from(io::ErrorKind::StorageFull));
        assert_eq!(err.kind(), ErrorKind::NoSpace);
    }

    use snafu::IntoError as _;
}
