//! `lithify`: the command line of the lithify storage crates.
//!
//! One module per command family; `main` only parses, dispatches and turns
//! an error into one sentence on stderr and a non-zero exit code.
//!
//! * `lithify bench` ([`bench`](mod@bench)): the engine's db_bench;
//! * `lithify compaction-worker|replica` ([`cluster`]): runs the
//!   compactions a writer posts to a bucket; follows a writer from the
//!   bucket as a read replica;
//! * `lithify get|put|delete|scan|stats|compact|check` ([`db`]): the
//!   database tools, as RocksDB's `ldb` (reads open the database
//!   read-only);
//! * `lithify dump-sst|dump-wal|dump-manifest` ([`dump`]): file dumps, as
//!   `sst_dump` and `ldb dump_wal` / `manifest_dump`;
//! * `lithify log ...` ([`log`]): Kafka-format logs and their cleaner —
//!   `produce`, `dump`, `clean`, `bench`;
//! * `lithify stress db|log|bank` ([`stress`]): self-checking random
//!   workloads (with an expected-state file, or transactions whose
//!   invariant is checked), for crash loops (`cargo xtask crash`).
//!
//! Adding a command: a module with its own clap `Args`/`Subcommand` type
//! and a `run` function returning [`error::Result`], one variant in
//! [`Command`], one arm in [`run`].

mod bench;
mod cluster;
mod db;
mod dump;
mod error;
mod json;
mod log;
mod lsm;
mod numbers;
mod output;
mod progress;
mod rng;
mod stress;
mod text;

use std::process::ExitCode;

use clap::{CommandFactory as _, FromArgMatches as _, Parser, Subcommand};

/// The lithify storage toolbox.
#[derive(Debug, Parser)]
#[command(
    name = "lithify",
    version,
    about,
    propagate_version = true,
    after_help = error::exit::HELP
)]
struct Cli {
    /// Show the libraries' events on stderr: `-v` flushes, compactions and
    /// recovery; `-vv` everything. Without it only warnings and errors
    /// (damage a recovery dropped, background errors). `RUST_LOG`, when
    /// set, decides instead (e.g. `RUST_LOG=lithify=debug`).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    /// No progress bars. Long commands (`compact`, `check`, `checkpoint`,
    /// `backup`, `ingest`, `log clean`) draw one on stderr after a second,
    /// only when stderr is a terminal and without `-v`.
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
enum Command {
    /// Benchmark the engine as db_bench does (default: fillrandom,
    /// readrandom and seekrandom over 1M keys in a temporary directory).
    Bench(Box<bench::BenchArgs>),
    /// Run the compactions a writer posts to a bucket (`bench
    /// --remote-compaction`), as RocksDB's remote compaction workers do.
    CompactionWorker(cluster::CompactionWorkerArgs),
    /// Follow a writer whose MANIFEST is in a bucket, as a read replica
    /// (RocksDB's secondary instance): one line per version it moves to.
    Replica(cluster::ReplicaArgs),
    /// Print the value of a key.
    Get(db::GetArgs),
    /// Set a key.
    Put(db::PutArgs),
    /// Add a merge operand to a key (needs `--merge-operator`).
    Merge(db::MergeArgs),
    /// Delete a key.
    Delete(db::DeleteArgs),
    /// Delete a key written at most once (RocksDB's SingleDelete).
    SingleDelete(db::SingleDeleteArgs),
    /// Print the keys (and values) of a key range in order.
    Scan(db::ScanArgs),
    /// List the tables (column families): strategy, files, bytes.
    #[command(alias = "list-column-families")]
    Tables(db::TablesArgs),
    /// Create a table (RocksDB's CreateColumnFamily).
    #[command(alias = "create-column-family")]
    CreateTable(db::CreateTableArgs),
    /// Drop a table and delete its data (RocksDB's DropColumnFamily).
    #[command(alias = "drop-column-family")]
    DropTable(db::DropTableArgs),
    /// Print the engine's statistics: compaction stats and amplification.
    Stats(db::StatsArgs),
    /// Compact a key range (everything by default) and wait.
    Compact(db::CompactArgs),
    /// Write an openable copy of a database into a new directory (RocksDB's
    /// checkpoint): SST files hard-linked, the MANIFEST and WALs copied.
    Checkpoint(db::CheckpointArgs),
    /// List the live SST files: table, level, size, key range, seqnos.
    LiveFiles(db::LiveFilesArgs),
    /// Ingest SST files written by an SstFileWriter (RocksDB's
    /// IngestExternalFile): placed at the lowest level they fit.
    Ingest(db::IngestArgs),
    /// Draw the LSM tree (now, and every flush and compaction the MANIFEST
    /// remembers) as one self-contained HTML page.
    Lsm(lsm::LsmArgs),
    /// Incremental backups: create, list, verify, restore, purge.
    #[command(subcommand)]
    Backup(db::backup::BackupCommand),
    /// Verify a database: the MANIFEST, every live SST file (size,
    /// footer, every block's checksum, key order) and the WALs, as
    /// RocksDB's `ldb checkconsistency` and `sst_dump --command=verify`;
    /// one line per problem, exit status 3 if any.
    #[command(alias = "checkconsistency")]
    Check(db::CheckArgs),
    /// Print an SST file: properties, blocks, entries; verify every
    /// checksum.
    DumpSst(dump::sst::DumpSstArgs),
    /// Print a blob file (key-value separation): header, records, footer;
    /// verify every record's checksums.
    DumpBlob(dump::blob::DumpBlobArgs),
    /// Print the records and writes of a write-ahead log.
    DumpWal(dump::wal::DumpWalArgs),
    /// Print the MANIFEST of a database: version edits and the LSM shape.
    #[command(alias = "manifest-dump")]
    DumpManifest(dump::manifest::DumpManifestArgs),
    /// Kafka-format logs: produce a workload, dump files, clean, benchmark.
    #[command(subcommand)]
    Log(log::LogCommand),
    /// Random self-checking workloads with an expected-state file that a
    /// later process verifies after a crash (RocksDB's db_stress).
    #[command(subcommand)]
    Stress(stress::StressCommand),
}

fn run(cli: Cli) -> error::Result<()> {
    match cli.command {
        Command::Bench(a) => bench::run(*a),
        Command::CompactionWorker(a) => cluster::compaction_worker(a),
        Command::Replica(a) => cluster::replica(a),
        Command::Get(a) => db::get(a),
        Command::Put(a) => db::put(a),
        Command::Merge(a) => db::merge(a),
        Command::Delete(a) => db::delete(a),
        Command::SingleDelete(a) => db::single_delete(a),
        Command::Scan(a) => db::scan(a),
        Command::Tables(a) => db::tables(a),
        Command::CreateTable(a) => db::create_table(a),
        Command::DropTable(a) => db::drop_table(a),
        Command::Stats(a) => db::stats(a),
        Command::Compact(a) => db::compact(a),
        Command::Checkpoint(a) => db::checkpoint(a),
        Command::LiveFiles(a) => db::live_files(a),
        Command::Ingest(a) => db::ingest(a),
        Command::Backup(cmd) => db::backup::run(cmd),
        Command::Lsm(a) => lsm::run(a),
        Command::Check(a) => db::check(a),
        Command::DumpSst(a) => dump::sst::run(a),
        Command::DumpWal(a) => dump::wal::run(a),
        Command::DumpBlob(a) => dump::blob::run(a),
        Command::DumpManifest(a) => dump::manifest::run(a),
        Command::Log(cmd) => log::run(cmd),
        Command::Stress(cmd) => stress::run(cmd),
    }
}

/// Keeps glibc's `malloc` from retaining freed memory.
///
/// glibc raises its mmap threshold to the size of every large block freed
/// (up to 32 MiB) and its trim threshold to twice that, so after a flush
/// frees a few MiB of builder buffers each thread's arena keeps up to twice
/// as much: `lithify bench` at 2M keys peaked at 109-121 MB RSS. Setting the
/// thresholds pins them at their initial values (128 KiB), which gave
/// 100 MB with no measurable throughput change. A process-wide choice, so
/// it is made here, by the application, not by the library crates.
fn pin_malloc_thresholds() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt only changes allocator parameters; it is called
        // before any other thread exists.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
            libc::mallopt(libc::M_TRIM_THRESHOLD, 128 << 10);
        }
    }
}

/// Shows the libraries' `tracing` events on stderr, one line each: by
/// default warnings and errors, `-v` informational events, `-vv` debug
/// events; `RUST_LOG` overrides.
fn install_subscriber(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .without_time()
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

/// The command line's definition, as [`parse_args`] parses it: every
/// flag whose name has a `-` also answers to the `_` spelling RocksDB's
/// tools use (`--create_if_missing`), and a negative number is a value
/// (`--batch-size -1` reaches the option's parser, which names its range,
/// instead of reading as an unknown flag `-1`).
fn command() -> clap::Command {
    fn adjust(cmd: clap::Command) -> clap::Command {
        cmd.mut_args(|a| {
            let a = if a.get_action().takes_values() {
                a.allow_negative_numbers(true)
            } else {
                a
            };
            let mut names: Vec<String> = a.get_long().into_iter().map(str::to_owned).collect();
            names.extend(
                a.get_all_aliases()
                    .unwrap_or_default()
                    .into_iter()
                    .map(str::to_owned),
            );
            let underscored: Vec<String> = names
                .iter()
                .filter(|n| n.contains('-'))
                .map(|n| n.replace('-', "_"))
                .filter(|u| !names.contains(u))
                .collect();
            underscored
                .into_iter()
                .fold(a, |a, u| a.alias(&*Box::leak(u.into_boxed_str())))
        })
        .mut_subcommands(adjust)
    }
    /// Each command also answers to its `_` spelling (`dump_wal`,
    /// `create_column_family`), as ldb's commands are spelt.
    fn underscore_commands(cmd: clap::Command) -> clap::Command {
        let mut names: Vec<String> = vec![cmd.get_name().to_owned()];
        names.extend(cmd.get_all_aliases().map(str::to_owned));
        let cmd = names
            .iter()
            .filter(|n| n.contains('-'))
            .map(|n| n.replace('-', "_"))
            .fold(cmd, |c, u| c.alias(&*Box::leak(u.into_boxed_str())));
        cmd.mut_subcommands(underscore_commands)
    }
    let cli = adjust(Cli::command()).mut_subcommands(underscore_commands);
    with_exit_statuses(cli, "")
}

/// Ends every command's `--help` with its exit statuses
/// ([`error::exit::of`]).
fn with_exit_statuses(cmd: clap::Command, path: &str) -> clap::Command {
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|c| c.get_name().to_owned())
        .collect();
    if names.is_empty() {
        return cmd.after_help(error::exit::of(path));
    }
    names.into_iter().fold(cmd, |cmd, name| {
        let sub_path = if path.is_empty() {
            name.clone()
        } else {
            format!("{path} {name}")
        };
        cmd.mut_subcommand(name, |sub| with_exit_statuses(sub, &sub_path))
    })
}

/// Parses the command line as clap does, with the spellings of
/// [`command`], and with a value its parser refuses (see [`numbers`])
/// reported as one line — the option, the value and its range — with the
/// usage exit status 2.
fn parse_args() -> Cli {
    let parsed = command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m));
    match parsed {
        Ok(cli) => cli,
        Err(e) if e.kind() == clap::error::ErrorKind::ValueValidation => {
            let text = e.to_string();
            eprintln!("{}", text.lines().next().unwrap_or("error: invalid value"));
            std::process::exit(e.exit_code());
        }
        Err(e) => e.exit(),
    }
}

fn main() -> ExitCode {
    pin_malloc_thresholds();
    // A bug must still read as one sentence, not a backtrace.
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        // `lithify dump-sst x.sst --entries | head`: the reader left, as
        // it may; end quietly with the shell's code for SIGPIPE.
        if what.starts_with("failed printing to stdout") && what.contains("Broken pipe") {
            std::process::exit(error::exit::BROKEN_PIPE.into());
        }
        eprintln!("lithify: internal error (a bug): {what}");
    }));
    let cli = parse_args();
    install_subscriber(cli.verbose);
    progress::set_quiet(cli.quiet || cli.verbose > 0);
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is_broken_pipe() => ExitCode::from(error::exit::BROKEN_PIPE),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    /// Every leaf command (`log clean`, `get`, ...) with its path.
    fn leaves(cmd: &clap::Command, path: &str, out: &mut Vec<(String, clap::Command)>) {
        let mut any = false;
        for sub in cmd.get_subcommands() {
            any = true;
            let name = if path.is_empty() {
                sub.get_name().to_owned()
            } else {
                format!("{path} {}", sub.get_name())
            };
            leaves(sub, &name, out);
        }
        if !any {
            out.push((path.to_owned(), cmd.clone()));
        }
    }

    /// A help text without the value range it ends with: a flag may
    /// allow a smaller range in one command than in another (`--value-size`
    /// of a Kafka record against an engine value), and each help states
    /// its own.
    fn meaning(help: &str) -> String {
        let text = help.split_whitespace().collect::<Vec<_>>().join(" ");
        match text.find(" [range: ") {
            Some(at) => text[..at].to_owned(),
            None => text,
        }
    }

    /// The command table of `crates/cli/README.md`, as `--help` describes
    /// the commands: each leaf command, its arguments and flags, and its
    /// exit statuses.
    fn command_table() -> String {
        let mut all = Vec::new();
        leaves(&super::command(), "", &mut all);
        let mut out =
            String::from("| command | arguments and flags | exit statuses |\n|---|---|---|\n");
        for (path, cmd) in &all {
            let mut args = Vec::new();
            for arg in cmd.get_arguments() {
                if arg.is_positional() {
                    args.push(format!("`<{}>`", arg.get_id().as_str().to_uppercase()));
                } else if let Some(long) = arg.get_long()
                    && !matches!(long, "help" | "version" | "verbose" | "quiet")
                {
                    args.push(format!("`--{long}`"));
                }
            }
            let exits = cmd
                .get_after_help()
                .map(|h| h.to_string())
                .unwrap_or_default()
                .trim_start_matches("Exit status: ")
                .trim_end_matches('.')
                .to_owned();
            out.push_str(&format!("| `{path}` | {} | {exits} |\n", args.join(" ")));
        }
        out
    }

    #[test]
    fn the_readme_lists_every_command_as_help_describes_it() {
        let readme = include_str!("../README.md");
        let (begin, end) = ("<!-- commands: begin -->\n", "<!-- commands: end -->");
        let start = readme.find(begin).expect("README has the command table") + begin.len();
        let stop = readme[start..].find(end).expect("the table ends") + start;
        let want = command_table();
        assert!(
            readme[start..stop] == want,
            "crates/cli/README.md's command table differs from --help; it should be:\n{want}"
        );
    }

    #[test]
    fn every_flag_has_its_underscore_spelling_and_no_name_clashes() {
        let cli = super::command();
        cli.clone().debug_assert();
        let mut all = Vec::new();
        leaves(&cli, "", &mut all);
        for (path, cmd) in &all {
            for arg in cmd.get_arguments() {
                let Some(long) = arg.get_long() else { continue };
                if long.contains('-') {
                    let underscored = long.replace('-', "_");
                    assert!(
                        arg.get_all_aliases()
                            .unwrap_or_default()
                            .contains(&underscored.as_str()),
                        "`lithify {path} --{long}` does not answer to --{underscored}"
                    );
                }
            }
        }
    }

    /// The text of every file under `tests/`.
    fn test_sources() -> String {
        use lithify::vfs::{FileSystem as _, OsFs};
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
        let mut text = String::new();
        for name in OsFs.list_dir(&dir).unwrap() {
            let path = dir.join(&name);
            if name.ends_with(".rs") {
                let bytes = lithify::vfs::read_file(&OsFs, &path).unwrap();
                text.push_str(&String::from_utf8(bytes).unwrap());
            }
        }
        text
    }

    #[test]
    fn every_command_and_flag_is_run_by_a_test() {
        let tests = test_sources();
        let mut all = Vec::new();
        leaves(&super::command(), "", &mut all);
        let mut missing = Vec::new();
        for (path, cmd) in &all {
            let last = path.rsplit(' ').next().unwrap_or(path);
            if !tests.contains(&format!("\"{last}\"")) {
                missing.push(format!("the command `{path}`"));
            }
            for arg in cmd.get_arguments() {
                let Some(long) = arg.get_long() else { continue };
                if matches!(long, "help" | "version") {
                    continue;
                }
                let spelled = [format!("\"--{long}\""), format!("\"--{long}=")];
                if !spelled.iter().any(|s| tests.contains(s.as_str())) {
                    missing.push(format!("`{path} --{long}`"));
                }
            }
        }
        assert!(
            missing.is_empty(),
            "no test under crates/cli/tests runs {}",
            missing.join(", ")
        );
    }

    #[test]
    fn a_flag_shared_by_commands_has_one_help_text() {
        let mut all = Vec::new();
        leaves(&super::command(), "", &mut all);
        let mut by_flag: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        for (path, cmd) in &all {
            for arg in cmd.get_arguments() {
                let Some(long) = arg.get_long() else { continue };
                if matches!(long, "help" | "version" | "verbose" | "quiet") {
                    continue;
                }
                let help = arg
                    .get_long_help()
                    .or(arg.get_help())
                    .map(|h| h.to_string())
                    .unwrap_or_default();
                by_flag
                    .entry(long.to_owned())
                    .or_default()
                    .push((path.clone(), meaning(&help)));
            }
        }
        let mut differing = Vec::new();
        for (flag, uses) in &by_flag {
            let first = &uses[0].1;
            if uses.iter().any(|(_, h)| h != first) {
                let mut lines = vec![format!("--{flag}:")];
                for (path, help) in uses {
                    lines.push(format!("  {path}: {help}"));
                }
                differing.push(lines.join("\n"));
            }
        }
        assert!(
            differing.is_empty(),
            "{} flag(s) mean different things in different commands:\n{}",
            differing.len(),
            differing.join("\n")
        );
    }
}
