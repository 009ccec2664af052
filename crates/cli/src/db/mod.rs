//! The database tools, as RocksDB's `ldb`: `get`, `put`, `delete`, `scan`,
//! `stats` and `compact` on the database in `--db DIR`.
//!
//! Each command opens the database as the engine does (replaying its WALs),
//! does its work and closes it. Only `put` with `--create-if-missing`
//! creates a database; every other command fails on a directory that holds
//! none, naming it.

mod maintain;
mod read;
mod write;

use std::path::PathBuf;

use clap::Args;
use lithify::{Db, Options};
use lithify_vfs::{FileSystem as _, OsFs};
use snafu::ResultExt as _;

use crate::error::{DbSnafu, Result, UsageSnafu};
use crate::text::Encoding;

pub(crate) use maintain::{CompactArgs, StatsArgs, compact, stats};
pub(crate) use read::{GetArgs, ScanArgs, get, scan};
pub(crate) use write::{DeleteArgs, PutArgs, delete, put};

/// The options every database command shares.
#[derive(Debug, Args)]
pub(crate) struct DbArgs {
    /// The database directory.
    #[arg(long)]
    pub db: PathBuf,
    /// Keys and values in hexadecimal, in arguments and output.
    #[arg(long)]
    pub hex: bool,
}

impl DbArgs {
    /// How keys and values are written.
    pub(crate) fn encoding(&self) -> Encoding {
        Encoding::new(self.hex)
    }

    /// Opens the database; creates it only if `create`.
    pub(crate) fn open(&self, create: bool) -> Result<Db> {
        if !create && !OsFs.exists(&self.db.join(lithify_version::filename::CURRENT)) {
            let what = if OsFs.is_dir(&self.db) {
                "holds no database (no CURRENT file)"
            } else {
                "does not exist"
            };
            return UsageSnafu {
                message: format!("{} {what}", self.db.display()),
            }
            .fail();
        }
        let options = Options {
            create_if_missing: create,
            ..Options::default()
        };
        Db::open(&self.db, options).context(DbSnafu)
    }
}

/// Closes `db`, reporting a background error.
pub(crate) fn close(db: Db) -> Result<()> {
    db.close().context(DbSnafu)
}
