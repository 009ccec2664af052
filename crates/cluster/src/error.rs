//! The error of the cluster crate.

use std::io;
use std::path::PathBuf;

use snafu::Snafu;

/// What can go wrong running a replica.
#[derive(Debug, Snafu)]
#[snafu(visibility(pub(crate)), context(suffix(Snafu)))]
#[non_exhaustive]
pub enum Error {
    /// Opening or reading the database failed.
    #[snafu(display("{source}"))]
    Db {
        /// The engine's error.
        source: lithify_engine::Error,
    },
    /// A request to the bucket failed.
    #[snafu(display("{op} for {}: {source}", dir.display()))]
    Bucket {
        /// What was being done.
        op: &'static str,
        /// The database directory.
        dir: PathBuf,
        /// The store's error (after its retries).
        source: io::Error,
    },
    /// A request for a job object failed.
    #[snafu(display("{op} {key}: {source}"))]
    Store {
        /// What was being done.
        op: &'static str,
        /// The object.
        key: String,
        /// The store's error (after its retries).
        source: io::Error,
    },
}

/// The result of the cluster crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
