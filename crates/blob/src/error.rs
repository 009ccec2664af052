//! The error of `lithify-blob`.
//!
//! Everything read from a blob file that is not what a writer could have
//! written is [`Error::Corruption`], naming the file and the byte offset of
//! the damaged part: 0 for the file header, the record's first byte for a
//! record, the footer's first byte for the footer. Corruption is always an
//! error value: no decoder in this crate panics on bad bytes.

use std::io;
use std::path::{Path, PathBuf};

use lithify_base::{Classify, ErrorKind};
use snafu::{Location, Snafu};

/// Errors of writing, opening and reading blob files.
#[derive(Debug, Snafu)]
#[snafu(visibility(pub(crate)), context(suffix(Snafu)))]
#[non_exhaustive]
pub enum Error {
    /// An I/O operation on the blob file failed.
    #[snafu(display("I/O error on blob file {} at offset {offset}: {source}", path.display()))]
    Io {
        /// The blob file.
        path: PathBuf,
        /// Byte offset of the read or write.
        offset: u64,
        /// The operating system's error.
        source: io::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// The blob file holds bytes a writer could not have written, or a blob
    /// index does not point at a record of the key it was looked up with.
    #[snafu(display("corruption in blob file {} at offset {offset}: {message}", path.display()))]
    Corruption {
        /// The damaged blob file.
        path: PathBuf,
        /// Byte offset of the damaged header, record or footer.
        offset: u64,
        /// What is wrong.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// A key or value is too large for the format.
    #[snafu(display(
        "a {key_len}-byte key with a {value_len}-byte value is too large for blob file {} (keys under 4 GiB, values at most {max_value_len} bytes)",
        path.display()
    ))]
    ValueTooLarge {
        /// The blob file being written.
        path: PathBuf,
        /// Length of the key.
        key_len: usize,
        /// Length of the value.
        value_len: usize,
        /// The limit on a value ([`MAX_BLOB_LEN`](crate::MAX_BLOB_LEN)).
        max_value_len: usize,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// The writer was handed a file that is not empty.
    #[snafu(display(
        "blob file {} must be empty when writing starts, it holds {len} bytes",
        path.display()
    ))]
    NotEmpty {
        /// The file.
        path: PathBuf,
        /// Its size.
        len: u64,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// The writer failed earlier (an I/O error) and refuses further work.
    #[snafu(display(
        "blob file writer for {} failed earlier ({cause}) and refuses further work",
        path.display()
    ))]
    Poisoned {
        /// The blob file being written.
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
    /// Whether the blob file is damaged (or an index does not fit it).
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

    /// The blob file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            Error::Io { path, .. }
            | Error::Corruption { path, .. }
            | Error::ValueTooLarge { path, .. }
            | Error::NotEmpty { path, .. }
            | Error::Poisoned { path, .. } => path,
        }
    }
}

impl Classify for Error {
    fn kind(&self) -> ErrorKind {
        match self {
            Error::Io { source, .. } => lithify_base::error::io_error_kind(source),
            Error::Corruption { .. } => ErrorKind::Corruption,
            Error::ValueTooLarge { .. } | Error::NotEmpty { .. } => ErrorKind::InvalidArgument,
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
    use snafu::IntoError as _;

    #[test]
    fn display_is_a_sentence_and_kind_is_kept() {
        let err = CorruptionSnafu {
            path: "000012.blob",
            offset: 64u64,
            message: "record checksum mismatch",
        }
        .build();
        assert_eq!(
            err.to_string(),
            "corruption in blob file 000012.blob at offset 64: record checksum mismatch"
        );
        assert_eq!(err.offset(), Some(64));
        assert_eq!(err.path(), Path::new("000012.blob"));
        assert!(err.is_corruption());
        assert_eq!(err.kind(), ErrorKind::Corruption);
        let shared: lithify_base::Error = err.into();
        assert!(shared.is_corruption());
    }

    #[test]
    fn kinds() {
        let err = IoSnafu {
            path: "x.blob",
            offset: 0u64,
        }
        .into_error(io::Error::from(io::ErrorKind::StorageFull));
        assert_eq!(err.kind(), ErrorKind::NoSpace);
        let err = ValueTooLargeSnafu {
            path: "x.blob",
            key_len: 1usize,
            value_len: usize::MAX,
            max_value_len: crate::MAX_BLOB_LEN,
        }
        .build();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert_eq!(err.offset(), None);
        let err = PoisonedSnafu {
            path: "x.blob",
            cause: "append failed",
        }
        .build();
        assert_eq!(err.kind(), ErrorKind::Poisoned);
    }
}
