//! `put`, `merge`, `delete` and `single-delete`.

use clap::Args;
use lithify::WriteOptions;
use snafu::ResultExt as _;

use crate::db::{DbArgs, close};
use crate::error::{DbSnafu, Result, UsageSnafu};

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
    let db = a.db.open(a.create_if_missing)?;
    let options = WriteOptions {
        sync: a.sync,
        ..WriteOptions::default()
    };
    db.put_opt(&key, &value, &options).context(DbSnafu)?;
    close(db)
}

/// Arguments of `delete`.
#[derive(Debug, Args)]
pub(crate) struct DeleteArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Make the write durable (fsync the WAL) before returning.
    #[arg(long)]
    pub sync: bool,
    /// The key.
    pub key: String,
}

/// Deletes a key (deleting a missing key is not an error).
pub(crate) fn delete(a: DeleteArgs) -> Result<()> {
    let key = a.db.encoding().parse("key", &a.key)?;
    let db = a.db.open(false)?;
    let options = WriteOptions {
        sync: a.sync,
        ..WriteOptions::default()
    };
    db.delete_opt(&key, &options).context(DbSnafu)?;
    close(db)
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
    let db = a.db.open(a.create_if_missing)?;
    let options = WriteOptions {
        sync: a.sync,
        ..WriteOptions::default()
    };
    db.merge_opt(&key, &operand, &options).context(DbSnafu)?;
    close(db)
}

/// Arguments of `single-delete`.
#[derive(Debug, Args)]
pub(crate) struct SingleDeleteArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Make the write durable (fsync the WAL) before returning.
    #[arg(long)]
    pub sync: bool,
    /// The key: one put at most since it was last deleted, never merged.
    pub key: String,
}

/// Single-deletes a key.
pub(crate) fn single_delete(a: SingleDeleteArgs) -> Result<()> {
    let key = a.db.encoding().parse("key", &a.key)?;
    let db = a.db.open(false)?;
    let options = WriteOptions {
        sync: a.sync,
        ..WriteOptions::default()
    };
    db.single_delete_opt(&key, &options).context(DbSnafu)?;
    close(db)
}
