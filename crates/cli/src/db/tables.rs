//! `tables`, `create-table` and `drop-table`: a database's tables
//! (RocksDB's column families, `ldb list_column_families`,
//! `create_column_family`, `drop_column_family`).

use clap::Args;
use lithify::TableOptions;
use snafu::ResultExt as _;

use crate::db::{DbArgs, close};
use crate::error::{DbSnafu, Result, UsageSnafu};

/// Arguments of `tables`.
#[derive(Debug, Args)]
pub(crate) struct TablesArgs {
    #[command(flatten)]
    pub db: DbArgs,
}

/// Lists the tables, the default table first: name, compaction strategy
/// in force, live SST files, their bytes and the estimated live data.
pub(crate) fn tables(a: TablesArgs) -> Result<()> {
    let db = a.db.open_read_only()?;
    let stats = db.stats();
    close(db)?;
    println!("table\tstrategy\tfiles\tbytes\tlive bytes");
    for t in &stats.tables {
        println!(
            "{}\t{}\t{}\t{}\t{}",
            t.name, t.strategy, t.sum.files, t.sst_bytes, t.live_bytes
        );
    }
    Ok(())
}

/// Arguments of `create-table`.
#[derive(Debug, Args)]
pub(crate) struct CreateTableArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// The new table's name.
    pub name: String,
}

/// Creates a table with the database's options (durable when this
/// returns).
pub(crate) fn create_table(a: CreateTableArgs) -> Result<()> {
    let db = a.db.open()?;
    if db.table(&a.name).is_some() {
        close(db)?;
        return UsageSnafu {
            message: format!(
                "the database in {} already has a table {:?}",
                a.db.db.display(),
                a.name
            ),
        }
        .fail();
    }
    let made = db.create_table(&a.name, TableOptions::default());
    close(db)?;
    made.context(DbSnafu)?;
    println!("created table {:?}", a.name);
    Ok(())
}

/// Arguments of `drop-table`.
#[derive(Debug, Args)]
pub(crate) struct DropTableArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// The table to drop (not the default table): its data is deleted.
    pub name: String,
}

/// Drops a table: its unflushed writes are discarded and its files
/// deleted.
pub(crate) fn drop_table(a: DropTableArgs) -> Result<()> {
    let db = a.db.open()?;
    if db.table(&a.name).is_none() {
        let names = db.table_names().join(", ");
        close(db)?;
        return UsageSnafu {
            message: format!(
                "the database in {} has no table {:?} (its tables: {names})",
                a.db.db.display(),
                a.name
            ),
        }
        .fail();
    }
    let dropped = db.drop_table(&a.name);
    close(db)?;
    dropped.context(DbSnafu)?;
    println!("dropped table {:?}", a.name);
    Ok(())
}
