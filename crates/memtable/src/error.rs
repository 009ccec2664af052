//! The errors of the memtable.
//!
//! A memtable holds no data read from disk, so every error is a refused
//! write: [`ErrorKind::InvalidArgument`] in the shared classification.

use lithify_base::{Classify, ErrorKind};
use snafu::{Location, Snafu};

/// A write the memtable refused.
#[derive(Debug, Snafu)]
#[snafu(visibility(pub(crate)))]
#[non_exhaustive]
pub enum Error {
    /// An entry with the same user key, sequence number and kind is already
    /// in the memtable (the engine gives every entry its own seqno).
    #[snafu(display("entry {key} is already in the memtable"))]
    DuplicateEntry {
        /// The entry, in the text form `user_key#seqno,KIND`.
        key: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// A key or value is longer than a memtable entry can hold.
    #[snafu(display(
        "memtable entry with a {user_key_len}-byte key and a {value_len}-byte value is too large: keys and values are limited to {limit} bytes"
    ))]
    EntryTooLarge {
        /// Length of the user key.
        user_key_len: usize,
        /// Length of the value.
        value_len: usize,
        /// The largest length allowed for each.
        limit: usize,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// A sequence number above `MAX_SEQNO` (reserved for seeks).
    #[snafu(display("sequence number {seqno} is above the largest assignable, {max}"))]
    SeqnoOutOfRange {
        /// The sequence number given.
        seqno: u64,
        /// The largest allowed.
        max: u64,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// A range tombstone whose end does not sort after its start.
    #[snafu(display(
        "range tombstone [{start}, {end}) at seqno {seqno} is empty: its end must sort after its start"
    ))]
    EmptyRange {
        /// The start key, escaped.
        start: String,
        /// The end key, escaped.
        end: String,
        /// Its sequence number.
        seqno: u64,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// An entry of a kind that only SSTs hold (a blob index, which flush
    /// and compaction write in place of a separated value).
    #[snafu(display(
        "a memtable does not hold {kind} entries (entry at seqno {seqno}): only flush and compaction write them, into SSTs"
    ))]
    UnsupportedKind {
        /// The kind's name.
        kind: &'static str,
        /// The sequence number of the refused entry.
        seqno: u64,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// A write to a memtable already marked immutable.
    #[snafu(display("memtable is immutable and accepts no more writes (entry at seqno {seqno})"))]
    Immutable {
        /// The sequence number of the refused entry.
        seqno: u64,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
}

/// `Result` with the memtable's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Classify for Error {
    fn kind(&self) -> ErrorKind {
        match self {
            Error::DuplicateEntry { .. }
            | Error::EntryTooLarge { .. }
            | Error::SeqnoOutOfRange { .. }
            | Error::EmptyRange { .. }
            | Error::UnsupportedKind { .. }
            | Error::Immutable { .. } => ErrorKind::InvalidArgument,
        }
    }
}

impl From<Error> for lithify_base::Error {
    fn from(err: Error) -> Self {
        lithify_base::Error::external(err)
    }
}
