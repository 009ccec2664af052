//! `lithify log ...`: Kafka-format logs and their cleaner.
//!
//! * `produce LOG_DIR`: append a synthetic keyed workload (overwrites and
//!   tombstones) to a log (a directory named `<topic>-<partition>`), with
//!   `--transactional` in transactions of interleaved producers, some
//!   aborted;
//! * `dump PATH`: print a `.log`, `.index`, `.timeindex`, `.txnindex`,
//!   producer `.snapshot`, a `cleaner-offset-checkpoint`, a log directory
//!   or a data directory, as `kafka-dump-log` does;
//! * `check PATH`: verify a log directory or a data directory the way
//!   open and the cleaner would (`lithify::log::verify`), printing
//!   each problem and warning; exit status 3 on any problem;
//! * `clean DATA_DIR`: one cleaning round for each eligible log of a data
//!   directory, with Kafka's settings by their Kafka names;
//! * `bench`: cleaning throughput, and its ratio to copying the same bytes.
//!
//! These tools compact logs, so `cleanup.policy` defaults to `compact`
//! here (Kafka's default is `delete`).

mod bench;
mod check;
mod clean;
mod dump;
mod produce;
pub(crate) mod settings;

use clap::Subcommand;

use crate::error::Result;

/// The `log` commands.
#[derive(Debug, Subcommand)]
pub(crate) enum LogCommand {
    /// Append a synthetic keyed workload (overwrites, tombstones) to a log.
    Produce(produce::ProduceArgs),
    /// Print the batches and records of log files, like kafka-dump-log.
    Dump(dump::DumpArgs),
    /// Verify a log directory or data directory as open and the cleaner
    /// would; exit status 3 if anything would be refused.
    Check(check::CheckArgs),
    /// Run one cleaning round for each eligible log of a data directory.
    /// Logs here default to `cleanup.policy=compact` (Kafka's default is
    /// `delete`); `--config cleanup.policy=delete` gives Kafka's.
    Clean(clean::CleanArgs),
    /// Measure cleaning throughput against a plain copy of the same bytes.
    Bench(bench::BenchArgs),
}

/// Tells, on stderr, what opening `log` dropped and where the bytes were
/// kept: recovery truncates only bytes above the recovery point (never
/// flushed), but never silently.
pub(crate) fn warn_recovery(log: &lithify::log::Log) {
    let report = log.recovery_report();
    for t in &report.truncations {
        eprintln!("warning: log {}: {t}", log.dir().display());
    }
    for d in &report.deleted_leftovers {
        let what = if d.kept.is_some() {
            "moved aside"
        } else {
            "deleted"
        };
        eprintln!(
            "warning: log {}: recovery {what} the leftover {d}",
            log.dir().display()
        );
    }
    if let Some(e) = &report.recovery_point_unreadable {
        eprintln!(
            "warning: log {}: its recovery point could not be read ({e}); only its last segment was re-validated",
            log.dir().display()
        );
    }
}

/// Runs a `log` command.
pub(crate) fn run(cmd: LogCommand) -> Result<()> {
    match cmd {
        LogCommand::Produce(a) => produce::run(a),
        LogCommand::Dump(a) => dump::run(a),
        LogCommand::Check(a) => check::run(a),
        LogCommand::Clean(a) => clean::run(a),
        LogCommand::Bench(a) => bench::run(a),
    }
}
