//! `put`, `merge`, `delete` and `single-delete`.

use clap::Args;
use lithify::{Db, WriteOptions};
use snafu::ResultExt as _;

use crate::db::{DbArgs, close};
use crate::error::{DbSnafu, Result, UsageSnafu};

/// Opens the database (creating it only if `create`), makes one write with
/// `--sync`'s options, and closes it.
fn write_one(
    args: &DbArgs,
    create: bool,
    sync: bool,
    write: impl FnOnce(&Db, &WriteOptions) -> Result<(), lithify::DbError>,
) -> Result<()> {
    let db = args.open(create)?;
    let options = WriteOptions::default().sync(sync);
    write(&db, &options).context(DbSnafu)?;
    close(db)
}

/// Arguments of `put`.
#[derive(Debug, Args)]
pub(crate) struct PutArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Create the database if the directory holds none.
    #[arg(long)]
    pub create_if_missing: bool,
    /// Make the write durable (fsync the WAL) before returning.
    #[arg(long)]
    pub sync: bool,
    /// The key.
    pub key: String,
    /// The value.
    pub value: String,
}

/// Sets a key.
pub(crate) fn put(a: PutArgs) -> Result<()> {
    let enc = a.db.encoding();
    let key = enc.parse("key", &a.key)?;
    let value = enc.parse("value", &a.value)?;
    write_one(&a.db, a.create_if_missing, a.sync, |db, o| {
        db.put_opt(&key, &value, o)
    })
}

/// Arguments of `delete` and `single-delete`.
#[derive(Debug, Args)]
pub(crate) struct DeleteArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Make the write durable (fsync the WAL) before returning.
    #[arg(long)]
    pub sync: bool,
    /// The key (for `single-delete`: put at most once since it was last
    /// deleted, never merged).
    pub key: String,
}

/// Deletes a key (deleting a missing key is not an error).
pub(crate) fn delete(a: DeleteArgs) -> Result<()> {
    let key = a.db.encoding().parse("key", &a.key)?;
    write_one(&a.db, false, a.sync, |db, o| db.delete_opt(&key, o))
}

/// Single-deletes a key (RocksDB's `SingleDelete`).
pub(crate) fn single_delete(a: DeleteArgs) -> Result<()> {
    let key = a.db.encoding().parse("key", &a.key)?;
    write_one(&a.db, false, a.sync, |db, o| db.single_delete_opt(&key, o))
}

/// Arguments of `merge`.
#[derive(Debug, Args)]
pub(crate) struct MergeArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Create the database if the directory holds none.
    #[arg(long)]
    pub create_if_missing: bool,
    /// Make the write durable (fsync the WAL) before returning.
    #[arg(long)]
    pub sync: bool,
    /// The key.
    pub key: String,
    /// The operand. With `uint64add` a decimal number (without `--hex`),
    /// stored as 8 little-endian bytes.
    pub operand: String,
}

/// Adds a merge operand to a key.
pub(crate) fn merge(a: MergeArgs) -> Result<()> {
    let Some(operator) = a.db.merge_operator.as_deref() else {
        return UsageSnafu {
            message: "merge needs --merge-operator (uint64add, stringappend or max)".to_owned(),
        }
        .fail();
    };
    let enc = a.db.encoding();
    let key = enc.parse("key", &a.key)?;
    let operand = if operator == "uint64add" && !a.db.hex {
        let n: u64 = a.operand.parse().map_err(|_| {
            UsageSnafu {
                message: format!(
                    "the uint64add operand {:?} is not a decimal number (or pass --hex)",
                    a.operand
                ),
            }
            .build()
        })?;
        n.to_le_bytes().to_vec()
    } else {
        enc.parse("operand", &a.operand)?
    };
    write_one(&a.db, a.create_if_missing, a.sync, |db, o| {
        db.merge_opt(&key, &operand, o)
    })
}
