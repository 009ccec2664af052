//! The format's error: every variant about bytes names where they came
//! from (a file, or [`IN_MEMORY`]) and the byte offset of the damage.
//!
//! The log (`lithify-kafka-log`) turns each variant into its own variant
//! of the same name, fields and message, so a caller of the log sees one
//! error type.

use std::path::{Path, PathBuf};

use lithify_base::{Classify, ErrorKind};
use snafu::{Location, Snafu};

use crate::codec::Compression;

/// The name used in errors for bytes that did not come from a file (a batch
/// decoded straight from memory).
pub const IN_MEMORY: &str = "<in-memory batch>";

/// Everything that can be wrong with a batch's bytes, or with what a
/// caller asked to encode.
#[derive(Debug, Snafu)]
#[snafu(visibility(pub(crate)), context(suffix(Snafu)))]
#[non_exhaustive]
pub enum Error {
    /// Bytes are not a valid batch or record.
    #[snafu(display("corruption in {} at byte offset {offset}: {message}", path.display()))]
    Corrupt {
        /// Where the bytes came from ([`IN_MEMORY`] for bytes from memory).
        path: PathBuf,
        /// Byte offset of the damage.
        offset: u64,
        /// What is wrong.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// A batch names a compression codec Kafka does not define.
    #[snafu(display(
        "the batch in {} at byte offset {offset} names compression codec id {id}, which is not one of Kafka's codecs (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)",
        path.display()
    ))]
    UnknownCodec {
        /// Where the batch came from.
        path: PathBuf,
        /// Byte offset of the batch.
        offset: u64,
        /// The codec id found in the attributes.
        id: u8,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// Compressed records of a batch could not be decompressed.
    #[snafu(display(
        "the {codec} records of the batch in {} at byte offset {offset} could not be decompressed: {message}",
        path.display()
    ))]
    Decompress {
        /// Where the batch came from.
        path: PathBuf,
        /// Byte offset of the batch.
        offset: u64,
        /// The batch's codec.
        codec: Compression,
        /// What the decompressor said.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// A batch in an old message format (magic 0 or 1), which is not read
    /// here. It is valid Kafka data, so it must never be truncated as
    /// corruption.
    #[snafu(display(
        "the message set in {} at byte offset {offset} has magic {magic}; only RecordBatch v2 (magic 2) is supported",
        path.display()
    ))]
    UnsupportedMagic {
        /// Where the batch came from.
        path: PathBuf,
        /// Byte offset of the batch.
        offset: u64,
        /// The magic byte found.
        magic: i8,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// The caller asked for something invalid (a batch without records,
    /// offsets or sizes out of range).
    #[snafu(display("invalid argument: {message}"))]
    InvalidArgument {
        /// What is wrong.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Whether the bytes are damaged.
    pub fn is_corruption(&self) -> bool {
        self.kind() == ErrorKind::Corruption
    }

    /// Where the bytes came from and the byte offset this error is about,
    /// when it is about bytes.
    pub fn file_offset(&self) -> Option<(&Path, u64)> {
        match self {
            Error::Corrupt { path, offset, .. }
            | Error::UnknownCodec { path, offset, .. }
            | Error::Decompress { path, offset, .. }
            | Error::UnsupportedMagic { path, offset, .. } => Some((path, *offset)),
            Error::InvalidArgument { .. } => None,
        }
    }
}

impl Classify for Error {
    fn kind(&self) -> ErrorKind {
        match self {
            Error::Corrupt { .. } | Error::UnknownCodec { .. } | Error::Decompress { .. } => {
                ErrorKind::Corruption
            }
            Error::UnsupportedMagic { .. } | Error::InvalidArgument { .. } => {
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
