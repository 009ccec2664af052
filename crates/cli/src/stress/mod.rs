//! `lithify stress ...`: random workloads that check themselves, and leave
//! behind an expected-state file so that a later process can check what
//! survived a crash — RocksDB's `db_stress`, for the engine and for the
//! log cleaner. `cargo xtask crash --kills N` runs them in a loop,
//! SIGKILLing each run at a random moment.
//!
//! * `db DIR` ([`db`]): threads of puts, deletes, range deletions, batches,
//!   lookups, iterators and snapshots over a small key space, with flushes
//!   and manual compactions; the expected state keeps, per key, the window
//!   of values a crash may leave ([`key_state`], [`db_expected`]), and
//!   every run starts by verifying the database against it
//!   ([`db_verify`]).
//! * `bank DIR` ([`bank`]): threads moving money between accounts in
//!   optimistic or pessimistic transactions while a checker reads every
//!   account at snapshots; every run starts by checking that the accounts
//!   still add up to what the bank was created with.
//! * `log DATA_DIR` ([`log`]): a producer thread per partition appending
//!   keyed records while cleaner threads compact the logs; every run
//!   starts with Kafka's recovery of each log and a check of every key's
//!   latest record and offset ([`log_expected`]).
//!
//! Both files share one framing ([`state_file`], specified in
//! `docs/FORMATS.md`): a checksummed header and checksummed 32-byte slots
//! rewritten in place, each with one positional write.

pub(crate) mod bank;
pub(crate) mod db;
pub(crate) mod db_expected;
pub(crate) mod db_verify;
pub(crate) mod key_state;
pub(crate) mod log;
pub(crate) mod log_expected;
pub(crate) mod log_state;
pub(crate) mod state_file;
pub(crate) mod values;

use clap::Subcommand;

use crate::error::Result;

/// The most keys a run creates its expected state for (`stress db
/// --keys`, `stress log --partitions` x `--keys`): 2^24, a 512 MiB file,
/// created in seconds. (A file may declare more, up to
/// [`state_file::MAX_SLOTS`].)
pub(crate) const MAX_STRESS_KEYS: u64 = 1 << 24;

/// The `stress` commands.
#[derive(Debug, Subcommand)]
pub(crate) enum StressCommand {
    /// Stress the engine: a random multi-threaded workload checked against
    /// an expected-state file (verified first, after a crash).
    Db(Box<db::DbStressArgs>),
    /// Stress the log cleaner: producers appending to compacted logs while
    /// cleaner threads clean them, checked against an expected-state file
    /// (after Kafka's recovery, first).
    Log(Box<log::LogStressArgs>),
    /// Stress transactions: transfers between bank accounts in optimistic
    /// or pessimistic transactions, the accounts' sum checked at snapshots
    /// while they run and at every start (after a crash).
    Bank(Box<bank::BankStressArgs>),
}

/// Runs a `stress` command.
pub(crate) fn run(cmd: StressCommand) -> Result<()> {
    match cmd {
        StressCommand::Db(a) => db::run(*a),
        StressCommand::Log(a) => log::run(*a),
        StressCommand::Bank(a) => bank::run(*a),
    }
}
