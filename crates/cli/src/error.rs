//! The command line's error: every variant reads as one sentence that
//! names the file or setting at fault, and maps to one exit status
//! ([`Error::exit_code`]).

use std::io;
use std::path::PathBuf;

use lithify::{Classify as _, ErrorKind};
use snafu::{Location, Snafu};

/// The exit statuses, one meaning each, for every command. `--help` and
/// `crates/cli/README.md` list them; `tests/language.rs` holds the
/// commands to them.
pub(crate) mod exit {
    /// `get`: the key has no value.
    pub(crate) const NOT_FOUND: u8 = 1;
    /// The command line asks for something that cannot be: an unknown
    /// flag, a value out of range, a database that is not there, a
    /// database or log in use by another process, a file of the wrong
    /// kind, an output aimed at stored data (what the libraries classify
    /// as `ErrorKind::InvalidArgument`).
    pub(crate) const USAGE: u8 = 2;
    /// Damage found: `check`, `log check`, the dumps, or any command that
    /// read a file whose bytes are not what was written.
    pub(crate) const DAMAGE: u8 = 3;
    /// Any other failure: I/O (a file that cannot be read included), a
    /// full disk, a background error.
    pub(crate) const FAILURE: u8 = 4;
    /// stdout closed early (`lithify scan ... | head`): the shell's code
    /// for SIGPIPE, as other tools end. (A bug ends with Rust's panic
    /// status, 101, after one `lithify: internal error` line.)
    pub(crate) const BROKEN_PIPE: u8 = 141;
    /// The exit statuses of command `path` (`get`, `log check`), as its
    /// `--help` ends and the README's command table lists them.
    pub(crate) fn of(path: &str) -> &'static str {
        match path {
            "get" => "Exit status: 0 found, 1 not found, 2 usage error, 3 damage, 4 other failure.",
            "check" | "log check" => {
                "Exit status: 0 no problem, 2 usage error, 3 problems found, 4 other failure."
            }
            "log clean" => {
                "Exit status: 0 every eligible log cleaned, 2 usage error, 4 a log could not be cleaned (each named above, damage with its file and byte offset)."
            }
            "dump-sst" | "dump-wal" | "dump-manifest" | "log dump" => {
                "Exit status: 0 read, 2 usage error (a file of another kind included), 3 damage found, 4 other failure."
            }
            "stress db" | "stress log" | "stress bank" => {
                "Exit status: 0 verified, 2 usage error, 3 the data disagrees with what was acknowledged, 4 other failure."
            }
            _ => "Exit status: 0 success, 2 usage error, 3 damage, 4 other failure.",
        }
    }

    /// The text `--help` shows after the commands.
    pub(crate) const HELP: &str = "Exit status: 0 success; 1 not found (get); 2 usage error \
(bad flag or value, no database there, database or log in use by another process, file of \
the wrong kind, output aimed at stored data); 3 damage found (check, log check, the dumps, or \
any read of damaged data); 4 any other failure (I/O, disk full, background error); 141 \
stdout closed early; 101 a bug (one `internal error` line).";
}

/// Everything a `lithify` command can fail with.
#[derive(Debug, Snafu)]
#[snafu(visibility(pub(crate)), context(suffix(Snafu)))]
pub(crate) enum Error {
    /// A log operation failed (its message names the file and offset).
    #[snafu(display("{source}"))]
    Log {
        /// The log crate's error.
        source: lithify::log::Error,
        #[snafu(implicit)]
        location: Location,
    },

    /// The log cleaner failed (its message names the log, and the file
    /// and offset of any damage).
    #[snafu(display("{source}"))]
    Cleaner {
        /// The cleaner crate's error.
        source: lithify::log::CleanerError,
        #[snafu(implicit)]
        location: Location,
    },

    /// The database failed (its message names the file at fault).
    #[snafu(display("{source}"))]
    Db {
        /// The database's error.
        #[snafu(source(from(lithify::DbError, |e| Box::new(lithify::Error::from(e)))))]
        source: Box<lithify::Error>,
        #[snafu(implicit)]
        location: Location,
    },

    /// A backup operation failed (its message names the file at fault).
    #[snafu(display("{source}"))]
    Backup {
        /// The backup engine's error, through the facade.
        #[snafu(source(from(lithify::backup::Error, |e| Box::new(lithify::Error::from(e)))))]
        source: Box<lithify::Error>,
        #[snafu(implicit)]
        location: Location,
    },

    /// An SST file could not be read (the message names the file and
    /// byte offset).
    #[snafu(display("{source}"))]
    Table {
        /// The table crate's error.
        source: lithify::error::SstError,
        #[snafu(implicit)]
        location: Location,
    },

    /// A record log (WAL) could not be read (the message names the file
    /// and byte offset).
    #[snafu(display("{source}"))]
    Wal {
        /// The log crate's error.
        source: lithify::error::WalError,
        #[snafu(implicit)]
        location: Location,
    },

    /// A MANIFEST or CURRENT could not be read (the message names the file).
    #[snafu(display("{source}"))]
    Version {
        /// The version crate's error.
        source: lithify::error::VersionError,
        #[snafu(implicit)]
        location: Location,
    },

    /// An output path lies among stored data (the message names the
    /// directory and what it holds).
    #[snafu(display("{source}"))]
    Output {
        /// The facade's refusal.
        #[snafu(source(from(lithify::Error, Box::new)))]
        source: Box<lithify::Error>,
        #[snafu(implicit)]
        location: Location,
    },

    /// A benchmark failed or refused its settings (the message names the
    /// setting or file at fault).
    #[snafu(display("{source}"), context(false))]
    Bench {
        /// The benchmark crate's error.
        source: lithify_bench::Error,
        #[snafu(implicit)]
        location: Location,
    },

    /// A stress run failed, or found the database or log disagreeing with
    /// what was acknowledged (the message says what, and how to reproduce
    /// it).
    #[snafu(display("{source}"), context(false))]
    Stress {
        /// The stress crate's error.
        source: lithify_stress::Error,
        #[snafu(implicit)]
        location: Location,
    },

    /// The benchmark's results could not be written as JSON.
    #[snafu(display("cannot write the benchmark results as JSON: {source}"))]
    Json {
        /// serde_json's error.
        source: serde_json::Error,
        #[snafu(implicit)]
        location: Location,
    },

    /// `get` found no value.
    #[snafu(display("key {key:?} is not in table {table:?} of the database in {}", dir.display()))]
    NotFound {
        /// The key as given.
        key: String,
        /// The table looked in.
        table: String,
        /// The database directory.
        dir: PathBuf,
        #[snafu(implicit)]
        location: Location,
    },

    /// A compaction worker's request to its bucket failed.
    #[snafu(display("{source}"))]
    Cluster {
        /// The cluster crate's error.
        source: lithify::cluster::Error,
        #[snafu(implicit)]
        location: Location,
    },

    /// A file or directory could not be used.
    #[snafu(display("cannot {action} {}: {source}", path.display()))]
    Io {
        /// What we were doing.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
        #[snafu(implicit)]
        location: Location,
    },

    /// The command line asks for something invalid.
    #[snafu(display("{message}"))]
    Usage {
        /// What is wrong.
        message: String,
        #[snafu(implicit)]
        location: Location,
    },

    /// A dumped file holds damaged data (details were printed above).
    #[snafu(display("{} is damaged: {message}", path.display()))]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the byte offset.
        message: String,
        #[snafu(implicit)]
        location: Location,
    },

    /// `check` found problems (each was printed above).
    #[snafu(display("{message}"))]
    Problems {
        /// A summary.
        message: String,
        #[snafu(implicit)]
        location: Location,
    },

    /// Some logs failed (each failure was printed above).
    #[snafu(display("{message}"))]
    Failures {
        /// A summary.
        message: String,
        #[snafu(implicit)]
        location: Location,
    },
}

impl Error {
    /// The exit status this error ends the command with (see [`exit`]).
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            Error::NotFound { .. } => exit::NOT_FOUND,
            Error::Usage { .. } | Error::Output { .. } => exit::USAGE,
            Error::Damaged { .. } | Error::Problems { .. } => exit::DAMAGE,
            Error::Io { .. } if self.is_broken_pipe() => exit::BROKEN_PIPE,
            Error::Io { .. }
            | Error::Json { .. }
            | Error::Failures { .. }
            | Error::Cluster { .. } => exit::FAILURE,
            Error::Log { source, .. } => by_kind(source.kind()),
            Error::Cleaner { source, .. } => by_kind(source.kind()),
            Error::Db { source, .. } | Error::Backup { source, .. } => by_kind(source.kind()),
            Error::Table { source, .. } => by_kind(source.kind()),
            Error::Wal { source, .. } => by_kind(source.kind()),
            Error::Version { source, .. } => by_kind(source.kind()),
            Error::Bench { source, .. } => match source {
                lithify_bench::Error::Usage { .. } => exit::USAGE,
                lithify_bench::Error::Verify { .. } => exit::DAMAGE,
                other => by_source(other),
            },
            Error::Stress { source, .. } => match source {
                lithify_stress::Error::Usage { .. } | lithify_stress::Error::Output { .. } => {
                    exit::USAGE
                }
                // What was acknowledged is not there: damage found.
                lithify_stress::Error::StressFailed { .. } => exit::DAMAGE,
                other => by_source(other),
            },
        }
    }

    /// Whether this is a write to a pipe whose reader has gone
    /// (`lithify bench | head`): no failure of ours.
    pub(crate) fn is_broken_pipe(&self) -> bool {
        matches!(self, Error::Io { source, .. } if source.kind() == io::ErrorKind::BrokenPipe)
    }
}

/// The exit status of a library error of `kind`.
fn by_kind(kind: ErrorKind) -> u8 {
    match kind {
        ErrorKind::Corruption => exit::DAMAGE,
        ErrorKind::InvalidArgument => exit::USAGE,
        _ => exit::FAILURE,
    }
}

/// The exit status of a tool crate's error: that of the first library
/// error in its chain of causes, else [`exit::FAILURE`].
fn by_source(error: &dyn std::error::Error) -> u8 {
    let mut cause = error.source();
    while let Some(e) = cause {
        if let Some(e) = e.downcast_ref::<lithify::Error>() {
            return by_kind(e.kind());
        }
        if let Some(e) = e.downcast_ref::<Box<lithify::Error>>() {
            return by_kind(e.kind());
        }
        cause = e.source();
    }
    exit::FAILURE
}

/// `Result` with the command line's [`Error`].
pub(crate) type Result<T, E = Error> = std::result::Result<T, E>;
