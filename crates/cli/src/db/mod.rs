//! The database tools, as RocksDB's `ldb`: `get`, `put`, `merge`,
//! `delete`, `single-delete`, `scan`, `stats`, `compact` and `check` on the
//! database in `--db DIR`. A database that holds merge operands is opened
//! with `--merge-operator NAME` (a built-in operator: `uint64add`,
//! `stringappend`, `max`).
//!
//! `get`, `scan`, `stats`, `tables`, `live-files` and `check` open the
//! database read-only (RocksDB's `OpenForReadOnly`, as `ldb` does for
//! reads): the WALs are replayed into memory and nothing in the directory
//! changes. The writing commands open it read-write, writing the engine's
//! `LOG` file. Only `put` and `merge` with `--create-if-missing` create a
//! database; every other command fails on a directory that holds none,
//! naming it and saying how to create one. Whatever a recovery drops is
//! printed on stderr (the engine's warning events).
//!
//! `--table NAME` picks the table (RocksDB's column family, `ldb
//! --column_family`) of the commands that work on one; `tables` lists
//! them, `create-table` and `drop-table` make and remove them.

pub(crate) mod backup;
mod check;
mod maintain;
mod read;
mod write;

mod tables;

use std::path::PathBuf;

use clap::Args;
use lithify::vfs::{FileSystem as _, OsFs};
use lithify::{Db, Options, RecoveryMode, Table};
use snafu::ResultExt as _;

use crate::error::{DbSnafu, Result, UsageSnafu};
use crate::text::Encoding;

pub(crate) use check::{CheckArgs, check};
pub(crate) use maintain::{
    CheckpointArgs, CompactArgs, IngestArgs, LiveFilesArgs, StatsArgs, checkpoint, compact, ingest,
    live_files, stats,
};
pub(crate) use read::{GetArgs, ScanArgs, get, scan};
pub(crate) use tables::{
    CreateTableArgs, DropTableArgs, TablesArgs, create_table, drop_table, tables,
};
pub(crate) use write::{
    DeleteArgs, MergeArgs, PutArgs, SingleDeleteArgs, delete, merge, put, single_delete,
};

/// The options every database command shares.
#[derive(Debug, Args)]
pub(crate) struct DbArgs {
    /// The database directory. `bench` runs in a fresh temporary directory
    /// without it (removed afterwards unless --keep-db); the other commands
    /// need it.
    #[arg(long)]
    pub db: PathBuf,
    #[command(flatten)]
    pub recovery: RecoveryArgs,
    /// The merge operator, one of the built-in ones: `uint64add` (little-
    /// endian u64 sum of 8-byte operands), `stringappend` (comma-joined) or
    /// `max`. A database holding merge operands must be opened with the one
    /// it records: reads (`get`, `scan`, `check`) combine a key's operands
    /// with it, `merge` writes them, and without it reading a key that
    /// holds operands fails, naming the key. `bench` merges with it in
    /// mergerandom and readrandommergerandom; `stress db` and `stress bank`
    /// open their database with it; `replica` reads with it; a
    /// `compaction-worker` without the one a job names fails the job, which
    /// the writer then runs itself.
    #[arg(long, alias = "operator", value_name = "NAME", value_parser = parse_merge_operator)]
    pub merge_operator: Option<String>,
}

/// `--wal-recovery-mode`: one flag, with one set of names, for everything
/// that reads a write-ahead log.
#[derive(Debug, Args)]
pub(crate) struct RecoveryArgs {
    /// What reading a write-ahead log does with damaged records (RocksDB's
    /// `WALRecoveryMode`): `point-in-time` (default: stop at the first
    /// damage), `tolerate-tail` (drop a torn tail, refuse damage followed
    /// by intact records), `absolute` (refuse any damage) or `skip`
    /// (salvage: drop every damaged record and go on). Database commands
    /// replay their WALs this way when they open the database; `dump-wal`
    /// reads its file this way. Whatever is dropped is reported.
    #[arg(long, value_name = "MODE", default_value = "point-in-time", value_parser = parse_recovery_mode)]
    pub wal_recovery_mode: RecoveryMode,
}

/// `--table NAME`, on the commands that work on one table.
#[derive(Debug, Args)]
pub(crate) struct TableArgs {
    /// The table (RocksDB's column family) to work on. Without it, `stats`
    /// and `live-files` cover every table (and `stats --property` the
    /// default table's), every other command the default table. `lithify
    /// tables` lists a database's tables.
    #[arg(long, value_name = "NAME", alias = "column-family")]
    pub table: Option<String>,
}

impl TableArgs {
    /// The handle of the table `--table` names in `db` (at `dir`).
    pub(crate) fn open(&self, db: &Db, dir: &std::path::Path) -> Result<Table> {
        let Some(name) = self.table.as_deref() else {
            return Ok(db.default_table());
        };
        db.table(name).ok_or_else(|| {
            UsageSnafu {
                message: format!(
                    "the database in {} has no table {name:?} (its tables: {}; `lithify create-table` makes one)",
                    dir.display(),
                    db.table_names().join(", ")
                ),
            }
            .build()
        })
    }

    /// The name to show: the given one, or the default table's.
    pub(crate) fn name(&self) -> &str {
        self.table
            .as_deref()
            .unwrap_or(lithify::inspect::manifest::DEFAULT_TABLE_NAME)
    }
}

/// The `--merge-operator` names.
pub(crate) fn parse_merge_operator(s: &str) -> std::result::Result<String, String> {
    match lithify::merge_operator_by_name(s) {
        Some(_) => Ok(s.to_owned()),
        None => Err(format!(
            "{s:?} is not a built-in merge operator ({})",
            lithify::BUILT_IN_MERGE_OPERATORS.join(", ")
        )),
    }
}

/// The `--wal-recovery-mode` names.
pub(crate) fn parse_recovery_mode(s: &str) -> std::result::Result<RecoveryMode, String> {
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
    /// Fails unless `--db` names a directory holding a database, saying
    /// how to create one.
    pub(crate) fn check_dir(&self) -> Result<()> {
        self.check_dir_or("`lithify put --create-if-missing` creates one")
    }

    /// [`check_dir`](Self::check_dir) with the command's own hint.
    fn check_dir_or(&self, hint: &str) -> Result<()> {
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
            message: format!("{} {what}: {hint}", self.db.display()),
        }
        .fail()
    }

    pub(crate) fn options(&self) -> Options {
        Options::default()
            .wal_recovery_mode(self.recovery.wal_recovery_mode)
            .merge_operator(
                self.merge_operator
                    .as_deref()
                    .and_then(lithify::merge_operator_by_name),
            )
    }

    /// Opens an existing database read-write, writing its `LOG`.
    pub(crate) fn open(&self) -> Result<Db> {
        self.check_dir()?;
        self.open_checked(false)
    }

    /// Opens the database read-write for a command with
    /// `--create-if-missing`: creates it only if `create`.
    pub(crate) fn open_or_create(&self, create: bool) -> Result<Db> {
        if !create {
            self.check_dir_or("pass --create-if-missing to create one")?;
        } else if OsFs.exists(&self.db) && !OsFs.is_dir(&self.db) {
            return UsageSnafu {
                message: format!("{} is not a directory", self.db.display()),
            }
            .fail();
        }
        self.open_checked(create)
    }

    fn open_checked(&self, create: bool) -> Result<Db> {
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

/// A range's bounds as bytes: `--from` and `--to`, each when given.
pub(crate) type Bounds = (Option<Vec<u8>>, Option<Vec<u8>>);

/// `--from` and `--to`: a key range, on `scan` and `compact`.
#[derive(Debug, Args)]
pub(crate) struct RangeArgs {
    /// The first key of the range, included (default: the smallest).
    #[arg(long, value_name = "KEY")]
    pub from: Option<String>,
    /// The end of the range (default: past the largest key). `scan`
    /// stops before it (excluded, as `ldb scan --to`); `compact` includes
    /// it (as RocksDB's `CompactRange`).
    #[arg(long, value_name = "KEY")]
    pub to: Option<String>,
}

impl RangeArgs {
    /// The bounds as bytes; fails when `--from` sorts after `--to`.
    pub(crate) fn parse(&self, enc: Encoding) -> Result<Bounds> {
        let from = self
            .from
            .as_deref()
            .map(|k| enc.parse("--from", k))
            .transpose()?;
        let to = self
            .to
            .as_deref()
            .map(|k| enc.parse("--to", k))
            .transpose()?;
        if let (Some(f), Some(t)) = (&from, &to)
            && f > t
        {
            return UsageSnafu {
                message: format!(
                    "--from must not sort after --to: the range [{}, {}] is empty the wrong way round",
                    enc.show(f),
                    enc.show(t)
                ),
            }
            .fail();
        }
        Ok((from, to))
    }
}
