//! `lithify`: the command line of the lithify storage crates.
//!
//! One module per command family; `main` only parses, dispatches and turns
//! an error into one sentence on stderr and a non-zero exit code.
//!
//! * `lithify log ...` ([`log`]): Kafka-format logs and their cleaner —
//!   `produce`, `dump`, `clean`, `bench`.
//!
//! Adding a family (the engine's `bench`, `get`, `scan`, `dump-sst`, ...):
//! a module with its own clap `Args`/`Subcommand` type and a `run`
//! function returning [`error::Result`], one variant in [`Command`], one
//! arm in [`run`].

mod error;
mod log;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The lithify storage toolbox.
#[derive(Debug, Parser)]
#[command(name = "lithify", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The command families.
#[derive(Debug, Subcommand)]
enum Command {
    /// Kafka-format logs: produce a workload, dump files, clean, benchmark.
    #[command(subcommand)]
    Log(log::LogCommand),
}

fn run(cli: Cli) -> error::Result<()> {
    match cli.command {
        Command::Log(cmd) => log::run(cmd),
    }
}

fn main() -> ExitCode {
    // A bug must still read as one sentence, not a backtrace.
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        eprintln!("lithify: internal error (a bug): {what}");
    }));
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
