//! `put`, `merge`, `delete` and `single-delete`.

use clap::Args;
use lithify::{Table, WriteBatch, WriteOptions};
use snafu::ResultExt as _;

use crate::db::{DbArgs, TableArgs, close};
use crate::error::{DbSnafu, Result, UsageSnafu};
use crate::text::HexArgs;

/// `--sync`, on every command that writes.
#[derive(Debug, Args)]
pub(crate) struct SyncArgs {
    /// Make every write durable (fsync the WAL) before it returns.
    #[arg(long)]
    pub sync: bool,
}

/// `--create-if-missing`, on the commands that can start a database.
#[derive(Debug, Args)]
pub(crate) struct CreateArgs {
    /// Create the database if the directory holds none (the other
    /// commands refuse a directory without a database).
    #[arg(long)]
    pub create_if_missing: bool,
}

/// Opens the database (creating it only if `create` is given), makes one
/// write to `--table` with `--sync`'s options, and closes it.
fn write_one(
    args: &DbArgs,
    table: &TableArgs,
    create: Option<&CreateArgs>,
    sync: &SyncArgs,
    write: impl FnOnce(&mut WriteBatch, &Table),
) -> Result<()> {
    let db = match create {
        Some(c) => args.open_or_create(c.create_if_missing)?,
        None => args.open()?,
    };
    let handle = table.open(&db, &args.db)?;
    let mut batch = WriteBatch::new();
    write(&mut batch, &handle);
    let options = WriteOptions::default().sync(sync.sync);
    db.write_opt(batch, &options).context(DbSnafu)?;
    close(db)
}

/// Arguments of `put`.
#[derive(Debug, Args)]
pub(crate) struct PutArgs {
    #[command(flatten)]
    pub db: DbArgs,
    #[command(flatten)]
    pub hex: HexArgs,
    #[command(flatten)]
    pub table: TableArgs,
    #[command(flatten)]
    pub create: CreateArgs,
    #[command(flatten)]
    pub sync: SyncArgs,
    /// The key.
    pub key: String,
    /// The value.
    pub value: String,
}

/// Sets a key.
pub(crate) fn put(a: PutArgs) -> Result<()> {
    let enc = a.hex.encoding();
    let key = enc.parse("key", &a.key)?;
    let value = enc.parse("value", &a.value)?;
    write_one(&a.db, &a.table, Some(&a.create), &a.sync, |b, t| {
        b.put_cf(t, &key, &value)
    })
}

/// Arguments of `delete`.
#[derive(Debug, Args)]
pub(crate) struct DeleteArgs {
    #[command(flatten)]
    pub db: DbArgs,
    #[command(flatten)]
    pub hex: HexArgs,
    #[command(flatten)]
    pub table: TableArgs,
    #[command(flatten)]
    pub sync: SyncArgs,
    /// The key.
    pub key: String,
}

/// Arguments of `single-delete`.
#[derive(Debug, Args)]
pub(crate) struct SingleDeleteArgs {
    #[command(flatten)]
    pub db: DbArgs,
    #[command(flatten)]
    pub hex: HexArgs,
    #[command(flatten)]
    pub table: TableArgs,
    #[command(flatten)]
    pub sync: SyncArgs,
    /// The key: put at most once since it was last deleted, never merged
    /// (RocksDB's `SingleDelete` contract).
    pub key: String,
}

/// Deletes a key (deleting a missing key is not an error).
pub(crate) fn delete(a: DeleteArgs) -> Result<()> {
    let key = a.hex.encoding().parse("key", &a.key)?;
    write_one(&a.db, &a.table, None, &a.sync, |b, t| b.delete_cf(t, &key))
}

/// Single-deletes a key (RocksDB's `SingleDelete`).
pub(crate) fn single_delete(a: SingleDeleteArgs) -> Result<()> {
    let key = a.hex.encoding().parse("key", &a.key)?;
    write_one(&a.db, &a.table, None, &a.sync, |b, t| {
        b.single_delete_cf(t, &key)
    })
}

/// Arguments of `merge`.
#[derive(Debug, Args)]
pub(crate) struct MergeArgs {
    #[command(flatten)]
    pub db: DbArgs,
    #[command(flatten)]
    pub hex: HexArgs,
    #[command(flatten)]
    pub table: TableArgs,
    #[command(flatten)]
    pub create: CreateArgs,
    #[command(flatten)]
    pub sync: SyncArgs,
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
    let enc = a.hex.encoding();
    let key = enc.parse("key", &a.key)?;
    let operand = if operator == "uint64add" && !a.hex.hex {
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
    write_one(&a.db, &a.table, Some(&a.create), &a.sync, |b, t| {
        b.merge_cf(t, &key, &operand)
    })
}
