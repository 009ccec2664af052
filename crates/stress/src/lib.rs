//! Self-checking random workloads for crash loops, as RocksDB's
//! `db_stress`: for the engine, for transactions and for the Kafka log
//! cleaner. `lithify stress db|bank|log` runs them; `cargo xtask crash`
//! runs those commands in a loop, SIGKILLing each at a random moment.
//!
//! * [`db`]: threads of puts, deletes, range deletions, batches, lookups,
//!   iterators and snapshots over a small key space, with flushes and
//!   manual compactions; the expected state keeps, per key, the window of
//!   values a crash may leave, and every run starts by verifying the
//!   database against it.
//! * [`bank`]: threads moving money between accounts in optimistic or
//!   pessimistic transactions while a checker reads every account at
//!   snapshots; every run starts by checking that the accounts still add
//!   up to what the bank was created with.
//! * [`log`]: a producer thread per partition appending keyed records
//!   while cleaner threads compact the logs; every run starts with Kafka's
//!   recovery of each log and a check of every key's latest record and
//!   offset.
//!
//! Both expected-state files share one framing ([`state_file`], specified
//! in `docs/FORMATS.md`): a checksummed header and checksummed 32-byte
//! slots rewritten in place, each with one positional write.
//!
//! A run reports what it does through a [`Say`] callback, one line at a
//! time (`stress: running ...` once the workload starts: the line the
//! crash loop waits for).
//!
//! ```
//! use std::sync::Arc;
//! use lithify::vfs::OsFs;
//! use lithify_stress::db::{DbStress, base_options, run};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let tmp = tempfile::tempdir()?;
//! let stress = DbStress {
//!     threads: 2,
//!     ops_per_thread: 500,
//!     keys: Some(100),
//!     ..DbStress::new(tmp.path().join("db"))
//! };
//! let lines = std::sync::Mutex::new(Vec::new());
//! run(&stress, base_options(Arc::new(OsFs)), &|l: &str| lines.lock().unwrap().push(l.to_owned()))?;
//! assert!(lines.lock().unwrap().iter().any(|l| l.starts_with("stress: running 2 threads")));
//! # Ok(())
//! # }
//! ```

pub mod bank;
pub mod db;
mod db_expected;
mod db_verify;
mod error;
mod key_state;
pub mod log;
mod log_expected;
mod log_state;
pub mod state_file;
mod values;

use std::path::Path;

use snafu::ResultExt as _;

pub use error::{Error, Result};
pub use values::{MAX_VALUE_SIZE, MIN_VALUE_SIZE};

/// Where a run's status lines go, one line per call (without its
/// newline). Called from the run's threads.
pub type Say<'a> = &'a (dyn Fn(&str) + Sync);

/// The most keys a run creates its expected state for (`db` keys, `log`
/// partitions x keys): 2^24, a 512 MiB file, created in seconds. (A file
/// may declare more, up to [`state_file::MAX_SLOTS`].)
pub const MAX_STRESS_KEYS: u64 = 1 << 24;

/// Refuses `path` as the expected-state file when it lies among stored
/// data (the database or logs under test included).
fn check_output(fs: &dyn lithify::vfs::FileSystem, path: &Path) -> Result<()> {
    lithify::check_output_path(fs, path).context(error::OutputSnafu)
}

/// The longest run a duration may ask for: a year, so that a deadline
/// (`now + duration`) never overflows.
pub const MAX_DURATION_SECS: f64 = 31_536_000.0;

/// Refuses a `duration` that is negative, not a number or longer than
/// [`MAX_DURATION_SECS`].
fn check_duration(duration: Option<f64>) -> Result<()> {
    match duration {
        Some(d) if !(d.is_finite() && (0.0..=MAX_DURATION_SECS).contains(&d)) => {
            error::UsageSnafu {
                message: format!(
                    "--duration must be between 0 and {MAX_DURATION_SECS} seconds, not {d}"
                ),
            }
            .fail()
        }
        _ => Ok(()),
    }
}

/// Refuses a key count outside `1..=`[`MAX_STRESS_KEYS`].
fn check_keys(what: &str, keys: u64) -> Result<()> {
    if (1..=MAX_STRESS_KEYS).contains(&keys) {
        return Ok(());
    }
    error::UsageSnafu {
        message: format!("{what} must be between 1 and {MAX_STRESS_KEYS}, not {keys}"),
    }
    .fail()
}

/// Checks that `a x b` is at most `max`; the message names both settings.
fn check_product(a: (&str, u64), b: (&str, u64), max: u64, what: &str) -> Result<()> {
    lithify_bench::check_product(a, b, max, what)
        .map_err(|message| error::UsageSnafu { message }.build())
}
