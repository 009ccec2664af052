//! `put` and `delete`.

use clap::Args;
use lithify::WriteOptions;
use snafu::ResultExt as _;

use crate::db::{DbArgs, close};
use crate::error::{DbSnafu, Result};

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
