//! `lithify stress ...`: the flags of the `lithify-stress` crate's random
//! workloads that check themselves and leave behind an expected-state
//! file, so that a later process can check what survived a crash —
//! RocksDB's `db_stress`, for the engine, transactions and the log
//! cleaner. `cargo xtask crash --kills N` runs them in a loop, SIGKILLing
//! each run at a random moment.

pub(crate) mod bank;
pub(crate) mod db;
pub(crate) mod log;

use std::io::Write as _;

use clap::Subcommand;

use crate::error::Result;

/// The `stress` commands.
#[derive(Debug, Subcommand)]
pub(crate) enum StressCommand {
    /// Stress the engine: a random multi-threaded workload checked against
    /// an expected-state file (verified first, after a crash).
    Db(Box<db::DbStressArgs>),
    /// Stress the log cleaner: producers appending to compacted logs while
    /// cleaner threads clean them, checked against an expected-state file
    /// (after Kafka's recovery, first). Its logs default to small segments
    /// and a busy cleaner (segment.bytes=16384, segment.index.bytes=4096,
    /// index.interval.bytes=512, min.cleanable.dirty.ratio=0.1,
    /// delete.retention.ms=200, log.cleaner.threads=2,
    /// log.cleaner.dedupe.buffer.size=65536, log.cleaner.backoff.ms=20);
    /// `--config` overrides them.
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

/// Prints a run's status line on stdout at once: `cargo xtask crash`
/// waits for `stress: running` before it picks the moment to kill. A
/// closed stdout ends the process as `println!` does (the panic hook's
/// exit status 141), not the run's silence.
fn say(line: &str) {
    println!("{line}");
    let _ = std::io::stdout().flush();
}
