//! Error kinds every crate classifies into, and the shared [`Error`].
//!
//! Each lithify crate has its own snafu `Error` whose variants carry the
//! context of that crate (file, offset, what was expected). They all
//! implement [`Classify`], so a caller several layers up can still ask "is
//! this corruption?" without knowing the crate it came from.
//!
//! [`Error`] is the error of code that crosses crates, above all the
//! [`InternalIterator`](crate::InternalIterator) trait: a merging iterator
//! over memtables and tables must speak one error type. A crate turns its own
//! error into it with [`Error::external`], keeping the kind.
//!
//! ```
//! use lithify_base::{Error, ErrorKind};
//!
//! let err = Error::corruption("000012.sst", 4096, "block checksum mismatch");
//! assert_eq!(err.kind(), ErrorKind::Corruption);
//! assert_eq!(err.to_string(), "corruption in 000012.sst at offset 4096: block checksum mismatch");
//! ```

use std::io;
use std::path::PathBuf;

use snafu::{Location, Snafu};

/// What kind of failure an error is, whatever crate raised it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The operating system or device failed an I/O operation.
    Io,
    /// Bytes read from storage are not what was written (bad checksum,
    /// impossible structure, truncated record that should be complete).
    Corruption,
    /// The caller asked for something invalid (bad option, out-of-order
    /// keys, a name that does not exist).
    InvalidArgument,
    /// The device is full (ENOSPC or a quota).
    NoSpace,
    /// A component refuses work after an earlier failure it cannot recover
    /// from in place (e.g. a failed fsync): reopen to continue.
    Poisoned,
    /// Another transaction got in the way — it changed a key this one
    /// read, holds a lock too long, or waits on this one (a deadlock):
    /// nothing was written; run the transaction again.
    Busy,
}

/// Classification of a crate's error into an [`ErrorKind`].
pub trait Classify {
    /// The kind of this error.
    fn kind(&self) -> ErrorKind;

    /// Whether stored data is damaged.
    fn is_corruption(&self) -> bool {
        self.kind() == ErrorKind::Corruption
    }
}

/// The kind an [`io::Error`] classifies into: `NoSpace` for a full device or
/// quota, `Io` for everything else.
pub fn io_error_kind(err: &io::Error) -> ErrorKind {
    match err.kind() {
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => ErrorKind::NoSpace,
        _ => ErrorKind::Io,
    }
}

/// The shared error of cross-crate code.
#[derive(Debug, Snafu)]
#[snafu(visibility(pub), context(suffix(Snafu)))]
#[non_exhaustive]
pub enum Error {
    /// An I/O operation on `path` failed.
    #[snafu(display("I/O error on {}: {source}", path.display()))]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// The device is full.
    #[snafu(display("no space left on device writing {}: {source}", path.display()))]
    NoSpace {
        /// The file being written.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// Stored bytes are damaged.
    #[snafu(display("corruption in {} at offset {offset}: {message}", path.display()))]
    Corruption {
        /// The damaged file.
        path: PathBuf,
        /// Byte offset of the damage within the file.
        offset: u64,
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
    /// A component refuses work after an unrecoverable failure.
    #[snafu(display("{message}: refusing further work after an earlier failure"))]
    Poisoned {
        /// What failed first.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// Another crate's error, with its classification kept.
    #[snafu(display("{source}"))]
    External {
        /// Its classification.
        kind: ErrorKind,
        /// The original error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// `Result` with the shared [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An I/O error on `path`; a full device becomes [`Error::NoSpace`].
    #[track_caller]
    pub fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        let path = path.into();
        if io_error_kind(&source) == ErrorKind::NoSpace {
            NoSpaceSnafu { path }.into_error(source)
        } else {
            IoSnafu { path }.into_error(source)
        }
    }

    /// Damage in `path` at `offset`.
    #[track_caller]
    pub fn corruption(path: impl Into<PathBuf>, offset: u64, message: impl Into<String>) -> Self {
        CorruptionSnafu {
            path: path.into(),
            offset,
            message: message.into(),
        }
        .build()
    }

    /// An invalid request.
    #[track_caller]
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        InvalidArgumentSnafu {
            message: message.into(),
        }
        .build()
    }

    /// A refusal after an earlier unrecoverable failure.
    #[track_caller]
    pub fn poisoned(message: impl Into<String>) -> Self {
        PoisonedSnafu {
            message: message.into(),
        }
        .build()
    }

    /// Wraps another crate's error, keeping its classification.
    pub fn external<E>(err: E) -> Self
    where
        E: Classify + std::error::Error + Send + Sync + 'static,
    {
        Error::External {
            kind: err.kind(),
            source: Box::new(err),
        }
    }

    /// The kind of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Io { .. } => ErrorKind::Io,
            Error::NoSpace { .. } => ErrorKind::NoSpace,
            Error::Corruption { .. } => ErrorKind::Corruption,
            Error::InvalidArgument { .. } => ErrorKind::InvalidArgument,
            Error::Poisoned { .. } => ErrorKind::Poisoned,
            Error::External { kind, .. } => *kind,
        }
    }

    /// Whether stored data is damaged.
    pub fn is_corruption(&self) -> bool {
        self.kind() == ErrorKind::Corruption
    }
}

impl Classify for Error {
    fn kind(&self) -> ErrorKind {
        Error::kind(self)
    }
}

use snafu::IntoError as _;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_classify() {
        let e = Error::io("a.log", io::Error::from(io::ErrorKind::StorageFull));
        assert_eq!(e.kind(), ErrorKind::NoSpace);
        let e = Error::io("a.log", io::Error::from(io::ErrorKind::PermissionDenied));
        assert_eq!(e.kind(), ErrorKind::Io);
        assert!(e.to_string().starts_with("I/O error on a.log: "));
    }

    #[test]
    fn external_keeps_kind() {
        let inner = Error::corruption("x", 1, "bad");
        let outer = Error::external(inner);
        assert!(outer.is_corruption());
        assert_eq!(outer.to_string(), "corruption in x at offset 1: bad");
    }
}
