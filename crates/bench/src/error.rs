//! The benchmark's error: each variant reads as one sentence that names
//! the setting or file at fault.

use snafu::{Location, Snafu};

/// Everything a benchmark run can fail with.
#[derive(Debug, Snafu)]
#[snafu(visibility(pub(crate)), context(suffix(Snafu)))]
#[non_exhaustive]
pub enum Error {
    /// The database failed (its message names the file at fault).
    #[snafu(display("{source}"))]
    Db {
        /// The database's error, through the facade.
        #[snafu(source(from(lithify::DbError, |e| Box::new(lithify::Error::from(e)))))]
        source: Box<lithify::Error>,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// A transaction failed for a reason other than another transaction
    /// getting in the way (those are counted by the workload).
    #[snafu(display("{source}"))]
    Txn {
        /// The transaction's error, through the facade.
        #[snafu(source(from(lithify::txn::Error, |e| Box::new(lithify::Error::from(e)))))]
        source: Box<lithify::Error>,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// A MANIFEST or CURRENT could not be read (the message names the
    /// file).
    #[snafu(display("{source}"))]
    Manifest {
        /// The version crate's error, through the facade.
        source: lithify::error::VersionError,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// A log failed (its message names the file and offset).
    #[cfg(feature = "log")]
    #[snafu(display("{source}"))]
    Log {
        /// The log's error, through the facade.
        #[snafu(source(from(lithify::log::Error, |e| Box::new(lithify::Error::from(e)))))]
        source: Box<lithify::Error>,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// The log cleaner failed.
    #[cfg(feature = "log")]
    #[snafu(display("{source}"))]
    Cleaner {
        /// The cleaner's error, through the facade.
        #[snafu(source(from(lithify::log::CleanerError, |e| Box::new(lithify::Error::from(e)))))]
        source: Box<lithify::Error>,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// Some cleaning rounds of the log benchmark did not run.
    #[cfg(feature = "log")]
    #[snafu(display("a benchmark cleaning round did not run: {}", failures.join("; ")))]
    Rounds {
        /// What the cleaner reported instead, one entry per round.
        failures: Vec<String>,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// A file or directory could not be used.
    #[snafu(display("cannot {action} {}: {source}", path.display()))]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file or directory.
        path: std::path::PathBuf,
        /// The operating system's error.
        source: std::io::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// The results could not be written as JSON.
    #[snafu(display("cannot write the benchmark results as JSON: {source}"))]
    Json {
        /// serde_json's error.
        source: serde_json::Error,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// The settings ask for something the benchmark cannot do (the
    /// message names the settings by their db_bench flags).
    #[snafu(display("{message}"))]
    Usage {
        /// What is wrong.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },

    /// A benchmark's check of what it wrote failed (the message says what
    /// was found).
    #[snafu(display("{message}"))]
    Verify {
        /// What was found.
        message: String,
        /// Where the error was raised.
        #[snafu(implicit)]
        location: Location,
    },
}

/// `Result` with the benchmark's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Checks that `a x b` is at most `max`, as `Err(message)` naming both
/// settings otherwise (`--batch-size 1000000 x entry bytes ... = N bytes in
/// one write batch, more than the 1073741824 allowed; lower one of them`).
///
/// ```
/// use lithify_bench::check_product;
/// assert!(check_product(("--threads", 4), ("--value-size", 100), 1 << 30, "bytes").is_ok());
/// let err = check_product(("--threads", 256), ("--value-size", 64 << 20), 1 << 30, "bytes");
/// assert!(err.unwrap_err().starts_with("--threads 256 x --value-size"));
/// ```
pub fn check_product(a: (&str, u64), b: (&str, u64), max: u64, what: &str) -> Result<(), String> {
    let product = u128::from(a.1) * u128::from(b.1);
    if product <= u128::from(max) {
        return Ok(());
    }
    Err(format!(
        "{} {} x {} {} = {product} {what}, more than the {max} allowed; lower one of them",
        a.0, a.1, b.0, b.1
    ))
}

/// Bytes one write batch may hold when its size is the product of two
/// settings (`--batch-size` x entry bytes): 1 GiB.
pub const MAX_BATCH_BYTES: u64 = 1 << 30;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn products_are_checked_without_overflow() {
        assert!(check_product(("--a", 1 << 20), ("--b", 1 << 10), 1 << 30, "bytes").is_ok());
        let e = check_product(("--a", u64::MAX), ("--b", u64::MAX), 1 << 30, "bytes").unwrap_err();
        assert!(e.contains("--a 18446744073709551615 x --b"), "{e}");
    }
}
