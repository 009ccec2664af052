//! `lithify stress bank DIR`: the flags of [`lithify_stress::bank`]
//! (see there for what a run does and checks).

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use clap::builder::TypedValueParser as _;
use lithify::vfs::{FileSystem, OsFs};
use lithify_stress::bank::{BankStress, Kind};
use lithify_stress::db::base_options;

use super::say;
use crate::bench::options::EngineArgs;
use crate::error::Result;
use crate::numbers;

/// Parses `--kind` among the library's kinds.
fn kind_parser() -> impl clap::builder::TypedValueParser<Value = Kind> {
    clap::builder::PossibleValuesParser::new(Kind::ALL.map(Kind::name))
        .try_map(|name| name.parse::<Kind>())
}

/// Arguments of `stress bank`.
#[derive(Debug, Args)]
pub(crate) struct BankStressArgs {
    /// The database directory (created if missing).
    pub db: PathBuf,
    /// Accounts of the bank (default 100; fixed when the bank is created,
    /// all in one write batch) [range: 2..=1000000].
    #[arg(long, value_parser = numbers::int::<u64>(2, 1_000_000))]
    pub accounts: Option<u64>,
    /// The balance each account starts with (default 1000; fixed when the
    /// bank is created); --accounts x --initial must fit in a u64
    /// [range: any u64].
    #[arg(long, value_parser = numbers::int::<u64>(0, u64::MAX))]
    pub initial: Option<u64>,
    /// Threads doing the work: `bench` splits each benchmark's operations
    /// between them (readwhilewriting adds one writer); `log bench` runs
    /// that many cleaner threads (`log.cleaner.threads`, the offset map
    /// memory divided among them; default the `--config` value, else 1);
    /// `stress db` and `stress bank` run every thread for --ops-per-thread
    /// operations (`stress bank` adds a checker thread) [range: 1..=256]
    #[arg(long, default_value_t = 4, value_parser = numbers::int::<usize>(1, numbers::MAX_THREADS))]
    pub threads: usize,
    /// Operations per thread: writes and reads (`stress db`), transfers
    /// (`stress bank`) [range: 0..=1000000000000]
    #[arg(long, default_value_t = 10_000,
          value_parser = numbers::int::<u64>(0, numbers::MAX_OPS))]
    pub ops_per_thread: u64,
    /// The transactions: optimistic or pessimistic.
    #[arg(long, default_value = "optimistic", value_parser = kind_parser())]
    pub kind: Kind,
    /// Percent of writes (`stress db`) or commits (`stress bank`) made with
    /// `sync` [range: 0..=100]
    #[arg(long, default_value_t = 10,
          value_parser = numbers::int::<u8>(0, 100))]
    pub sync_percent: u8,
    /// Seed of the workload's generators (a command with several threads
    /// derives one per thread) [range: any u64]
    #[arg(long, default_value_t = 1, value_parser = numbers::int::<u64>(0, u64::MAX))]
    pub seed: u64,
    /// Only verify what earlier runs left against the expected state
    /// (`stress bank`: the sum of the accounts), then exit.
    #[arg(long)]
    pub verify_only: bool,
    /// Engine options (stress defaults: 512 KiB memtables, 256 KiB files,
    /// 1 MiB base level, 8 MiB cache).
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// Runs `stress bank`.
pub(crate) fn run(a: BankStressArgs) -> Result<()> {
    let fs: Arc<dyn FileSystem> = Arc::new(OsFs);
    let opts = a.engine.apply_to(base_options(fs))?;
    let stress = BankStress {
        db: a.db,
        accounts: a.accounts,
        initial: a.initial,
        threads: a.threads,
        ops_per_thread: a.ops_per_thread,
        kind: a.kind,
        sync_percent: a.sync_percent,
        seed: a.seed,
        verify_only: a.verify_only,
    };
    lithify_stress::bank::run(&stress, opts, &say)?;
    Ok(())
}
