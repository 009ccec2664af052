//! The database tools, as RocksDB's `ldb`: `get`, `put`, `merge`,
//! `delete`, `single-delete`, `scan`, `stats`, `compact` and `check` on the
//! database in `--db DIR`. A database that holds merge operands is opened
//! with `--merge-operator NAME` (a built-in operator: `uint64add`,
//! `stringappend`, `max`).
//!
//! `get`, `scan`, `stats` and `check` open the database read-only (RocksDB's
//! `OpenForReadOnly`, as `ldb` does for reads): the WALs are replayed into
//! memory and nothing in the directory changes. `put`, `delete` and
//! `compact` open it read-write, writing the engine's `LOG` file. Only
//! `put` with `--create-if-missing` creates a database; every other command
//! fails on a directory that holds none, naming it. Whatever a recovery
//! drops is printed on stderr (the engine's warning events).

pub(crate) mod backup;
mod check;
mod maintain;
mod read;
mod write;

use std::path::PathBuf;

use clap::Args;
use lithify::vfs::{FileSystem as _, OsFs};
use lithify::{Db, Options, RecoveryMode};
use snafu::ResultExt as _;

use crate::error::{DbSnafu, Result, UsageSnafu};
use crate::text::Encoding;

pub(crate) use check::{CheckArgs, check};
pub(crate) use maintain::{
    CheckpointArgs, CompactArgs, IngestArgs, LiveFilesArgs, StatsArgs, checkpoint, compact, ingest,
    live_files, stats,
};
pub(crate) use read::{GetArgs, ScanArgs, get, scan};
pub(crate) use write::{DeleteArgs, MergeArgs, PutArgs, delete, merge, put, single_delete};

/// The options every database command shares.
#[derive(Debug, Args)]
pub(crate) struct DbArgs {
    /// The database directory.
    #[arg(long)]
    pub db: PathBuf,
    /// Keys and values in hexadecimal, in arguments and output.
    #[arg(long)]
    pub hex: bool,
    /// What recovery does with damaged WAL records: `point-in-time`
    /// (default: stop at the first damage), `tolerate-tail` (drop a torn
    /// tail, refuse damage followed by intact records), `absolute` (refuse
    /// any damage) or `skip` (salvage: drop every damaged record and go
    /// on). Whatever is dropped is reported.
    #[arg(long, value_name = "MODE", default_value = "point-in-time", value_parser = parse_recovery_mode)]
    pub wal_recovery_mode: RecoveryMode,
    /// The merge operator of a database that holds merge operands, one of
    /// the built-in ones: `uint64add` (little-endian u64 sum), `stringappend`
    /// (comma-joined) or `max`. It must be the one the database records.
    #[arg(long, alias = "operator", value_name = "NAME", value_parser = parse_merge_operator)]
    pub merge_operator: Option<String>,
}

/// The `--merge-operator` names.
fn parse_merge_operator(s: &str) -> std::result::Result<String, String> {
    match lithify::merge_operator_by_name(s) {
        Some(_) => Ok(s.to_owned()),
        None => Err(format!(
            "{s:?} is not a built-in merge operator ({})",
            lithify::BUILT_IN_MERGE_OPERATORS.join(", ")
        )),
    }
}

/// The `--wal-recovery-mode` names.
fn parse_recovery_mode(s: &str) -> std::result::Result<RecoveryMode, String> {
    match s {
        "point-in-time" => Ok(RecoveryMode::PointInTimeRecovery),
        "tolerate-tail" => Ok(RecoveryMode::TolerateCorruptedTailRecords),
        "absolute" => Ok(RecoveryMode::AbsoluteConsistency),
        "skip" => Ok(RecoveryMode::SkipAnyCorruptedRecords),
        other => Err(format!(
            "{other:?} is not a recovery mode (point-in-time, tolerate-tail, absolute, skip)"
        )),
    }
}

impl DbArgs {
    /// How keys and values are written.
    pub(crate) fn encoding(&self) -> Encoding {
        Encoding::new(self.hex)
    }

    /// Fails unless `--db` names a directory holding a database.
    pub(crate) fn check_dir(&self) -> Result<()> {
        if OsFs.exists(&self.db.join(lithify::files::CURRENT)) {
            return Ok(());
        }
        let what = if OsFs.is_dir(&self.db) {
            "holds no database (no CURRENT file)"
        } else if OsFs.exists(&self.db) {
            "is not a directory"
        } else {
            "does not exist"
        };
        UsageSnafu {
            message: format!("{} {what}", self.db.display()),
        }
        .fail()
    }

    pub(crate) fn options(&self) -> Options {
        Options::default()
            .wal_recovery_mode(self.wal_recovery_mode)
            .merge_operator(
                self.merge_operator
                    .as_deref()
                    .and_then(lithify::merge_operator_by_name),
            )
    }

    /// Opens the database read-write, writing its `LOG`; creates it only if
    /// `create`.
    pub(crate) fn open(&self, create: bool) -> Result<Db> {
        if !create {
            self.check_dir()?;
        } else if OsFs.exists(&self.db) && !OsFs.is_dir(&self.db) {
            return UsageSnafu {
                message: format!("{} is not a directory", self.db.display()),
            }
            .fail();
        }
        let options = self.options().create_if_missing(create).info_log(true);
        Db::open(&self.db, options).context(DbSnafu)
    }

    /// Opens the database read-only: nothing in the directory changes.
    pub(crate) fn open_read_only(&self) -> Result<Db> {
        self.check_dir()?;
        Db::open_read_only(&self.db, self.options()).context(DbSnafu)
    }
}

/// Closes `db`, reporting a background error.
pub(crate) fn close(db: Db) -> Result<()> {
    db.close().context(DbSnafu)
}

/// Fails when a key range runs backwards (`--from` after `--to`).
pub(crate) fn check_range(from: Option<&[u8]>, to: Option<&[u8]>, to_name: &str) -> Result<()> {
    if let (Some(f), Some(t)) = (from, to)
        && f > t
    {
        return UsageSnafu {
            message: format!(
                "--from must not sort after {to_name}: the range [{}, {}] is empty the wrong way round",
                String::from_utf8_lossy(f),
                String::from_utf8_lossy(t)
            ),
        }
        .fail();
    }
    Ok(())
}
