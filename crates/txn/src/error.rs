//! The error of a transaction.

use lithify_base::{Classify, ErrorKind, SeqNo};
use snafu::{Location, Snafu};

/// What can go wrong in a transaction. [`Error::is_busy`] tells the
/// errors after which running the transaction again may succeed; nothing
/// of the transaction was written when one of them is returned by a
/// commit.
#[derive(Debug, Snafu)]
#[snafu(visibility(pub(crate)), context(suffix(Snafu)))]
#[non_exhaustive]
pub enum Error {
    /// A key the transaction read or wrote was written by another commit
    /// after the transaction read it (RocksDB's `Status::Busy`): an
    /// optimistic commit's validation, or a pessimistic lock taken with a
    /// snapshot.
    #[snafu(display(
        "write conflict: key {key} of table {table} was written after sequence number {since}"
    ))]
    Conflict {
        /// The table's name.
        table: String,
        /// The key, escaped.
        key: String,
        /// The sequence number the transaction read it at.
        since: SeqNo,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// A range a `serializable` optimistic transaction iterated over was
    /// written to after the transaction read it (a phantom).
    #[snafu(display(
        "write conflict: table {table} was written in the range {range} after sequence number {since}"
    ))]
    RangeConflict {
        /// The table's name.
        table: String,
        /// The range, escaped, as `[start, end)`-style bounds.
        range: String,
        /// The sequence number the transaction read it at.
        since: SeqNo,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// A pessimistic transaction waited `lock_timeout` for a key's lock.
    #[snafu(display(
        "timed out waiting for the lock of key {key} of table {table}, held by transaction {holder}"
    ))]
    TimedOut {
        /// The table's name.
        table: String,
        /// The key, escaped.
        key: String,
        /// The transaction holding the lock.
        holder: u64,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// Waiting for a key's lock would close a cycle of transactions
    /// waiting for each other (or the chain of waiters is longer than
    /// `deadlock_detect_depth`).
    #[snafu(display(
        "deadlock: waiting for key {key} of table {table} would close the cycle {cycle}"
    ))]
    Deadlock {
        /// The table's name.
        table: String,
        /// The key, escaped.
        key: String,
        /// The waits, `txn 3 waits for default/"a" -> txn 5 waits for ...`.
        cycle: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// `rollback_to_save_point` without a save point.
    #[snafu(display("no save point to roll back to"))]
    NoSavePoint {
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// A table that is not this transaction's database's.
    #[snafu(display("{message}"))]
    InvalidArgument {
        /// What is wrong.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
    /// The database failed the read or the write.
    #[snafu(display("{source}"), context(false))]
    Engine {
        /// The engine's error (boxed: it is large, and rare here).
        #[snafu(source(from(lithify_engine::Error, Box::new)))]
        source: Box<lithify_engine::Error>,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
}

impl Error {
    /// Whether another transaction got in the way (a conflict, a lock wait
    /// timeout, a deadlock): the transaction wrote nothing and may succeed
    /// if run again.
    pub fn is_busy(&self) -> bool {
        self.kind() == ErrorKind::Busy
    }
}

impl Classify for Error {
    fn kind(&self) -> ErrorKind {
        match self {
            Error::Conflict { .. }
            | Error::RangeConflict { .. }
            | Error::TimedOut { .. }
            | Error::Deadlock { .. } => ErrorKind::Busy,
            Error::NoSavePoint { .. } | Error::InvalidArgument { .. } => ErrorKind::InvalidArgument,
            Error::Engine { source, .. } => source.kind(),
        }
    }
}

/// The result of a transaction's operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    #[test]
    fn the_error_is_no_larger_than_the_engines() {
        // The facade's error holds either; a transaction's must not make
        // every `lithify::Result` larger.
        assert!(
            std::mem::size_of::<super::Error>() <= std::mem::size_of::<lithify_engine::Error>(),
            "{} > {}",
            std::mem::size_of::<super::Error>(),
            std::mem::size_of::<lithify_engine::Error>()
        );
    }
}
