//! `stats`, `compact`, `checkpoint`, `live-files` and `ingest`.

use clap::Args;
use snafu::ResultExt as _;

use crate::db::{DbArgs, check_range, close};
use crate::error::{DbSnafu, Result, UsageSnafu};

/// Arguments of `stats`.
#[derive(Debug, Args)]
pub(crate) struct StatsArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Print this property instead of `lithify.stats` (see
    /// `--list-properties`).
    #[arg(long)]
    pub property: Option<String>,
    /// List the property names.
    #[arg(long)]
    pub list_properties: bool,
}

/// Prints the engine's statistics (RocksDB's compaction stats table and
/// the amplification figures) or another property.
pub(crate) fn stats(a: StatsArgs) -> Result<()> {
    if a.list_properties {
        for name in lithify::Db::property_names() {
            println!("{name}");
        }
        return Ok(());
    }
    let name = a.property.as_deref().unwrap_or("lithify.stats");
    // Read-only: the shape of the tree and what recovery found are read
    // from the files; counters of earlier processes are not kept.
    let db = a.db.open_read_only()?;
    let text = db.property(name);
    close(db)?;
    match text {
        Some(text) => {
            print!("{text}");
            if !text.ends_with('\n') {
                println!();
            }
            Ok(())
        }
        None => UsageSnafu {
            message: format!("unknown property {name:?}; --list-properties lists them"),
        }
        .fail(),
    }
}

/// Arguments of `compact`.
#[derive(Debug, Args)]
pub(crate) struct CompactArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// First key of the range (default: the smallest).
    #[arg(long)]
    pub from: Option<String>,
    /// Last key of the range (inclusive; default: the largest).
    #[arg(long)]
    pub to: Option<String>,
}

/// Compacts a key range (everything by default) and waits; prints the
/// files per level afterwards.
pub(crate) fn compact(a: CompactArgs) -> Result<()> {
    let enc = a.db.encoding();
    let from = a
        .from
        .as_deref()
        .map(|k| enc.parse("--from", k))
        .transpose()?;
    let to = a.to.as_deref().map(|k| enc.parse("--to", k)).transpose()?;
    check_range(from.as_deref(), to.as_deref(), "--to")?;
    let db = a.db.open(false)?;
    db.compact_range(from.as_deref(), to.as_deref())
        .context(DbSnafu)?;
    let stats = db.stats();
    close(db)?;
    for table in &stats.tables {
        let levels: Vec<String> = table
            .levels
            .iter()
            .filter(|l| l.files > 0)
            .map(|l| format!("L{}: {} files", l.level.unwrap_or(0), l.files))
            .collect();
        println!(
            "compacted table {:?}: {}",
            table.name,
            if levels.is_empty() {
                "no files".to_string()
            } else {
                levels.join(", ")
            }
        );
    }
    Ok(())
}

/// Arguments of `checkpoint`.
#[derive(Debug, Args)]
pub(crate) struct CheckpointArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// The new directory (must not exist).
    pub dest: std::path::PathBuf,
    /// Flush the memtables first only when the WALs hold at least this
    /// many bytes (default 0: always flush, as RocksDB); otherwise the
    /// checkpoint copies the WALs [range: any u64].
    #[arg(long, default_value_t = 0, value_parser = crate::numbers::int::<u64>(0, u64::MAX))]
    pub log_size_for_flush: u64,
}

/// Writes an openable copy of the database into a new directory (RocksDB's
/// `Checkpoint::CreateCheckpoint`): tables hard-linked, the MANIFEST and
/// the WALs copied.
pub(crate) fn checkpoint(a: CheckpointArgs) -> Result<()> {
    crate::output::check(&a.dest)?;
    let db = a.db.open(false)?;
    let options = lithify::CheckpointOptions::default().log_size_for_flush(a.log_size_for_flush);
    let info = db
        .create_checkpoint_opt(&a.dest, &options)
        .context(DbSnafu)?;
    close(db)?;
    println!(
        "checkpoint {} at sequence {}: {} SST file(s) linked, {} copied, {} WAL(s) copied, {} byte(s) copied{}",
        a.dest.display(),
        info.sequence,
        info.tables_linked,
        info.tables_copied,
        info.wals_copied,
        info.bytes_copied,
        if info.flushed {
            " (memtables flushed first)"
        } else {
            ""
        }
    );
    Ok(())
}

/// Arguments of `live-files`.
#[derive(Debug, Args)]
pub(crate) struct LiveFilesArgs {
    #[command(flatten)]
    pub db: DbArgs,
}

/// Lists every live SST file (RocksDB's `GetLiveFilesMetaData`): table,
/// level, file, size, key range and sequence numbers.
pub(crate) fn live_files(a: LiveFilesArgs) -> Result<()> {
    let enc = a.db.encoding();
    let db = a.db.open_read_only()?;
    let files = db.live_files();
    close(db)?;
    println!("table\tlevel\tfile\tsize\tentries\tseqnos\tsmallest\tlargest");
    for f in &files {
        println!(
            "{}\tL{}\t{}\t{}\t{}\t{}..{}\t{}\t{}",
            f.table,
            f.level,
            f.path.file_name().map_or_else(
                || f.path.display().to_string(),
                |n| n.to_string_lossy().into_owned()
            ),
            f.size,
            f.num_entries,
            f.smallest_seqno,
            f.largest_seqno,
            enc.show(&f.smallest_key),
            enc.show(&f.largest_key),
        );
    }
    Ok(())
}

/// Arguments of `ingest`.
#[derive(Debug, Args)]
pub(crate) struct IngestArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// SST files written by an `SstFileWriter` (sequence numbers 0).
    #[arg(required = true)]
    pub files: Vec<std::path::PathBuf>,
    /// Hard-link the files into the database and delete the originals
    /// (default: copy them).
    #[arg(long)]
    pub move_files: bool,
}

/// Ingests external SST files (RocksDB's `IngestExternalFile`) and
/// prints where each went.
pub(crate) fn ingest(a: IngestArgs) -> Result<()> {
    let db = a.db.open(false)?;
    let options = lithify::IngestOptions::default().move_files(a.move_files);
    let placed = db.ingest_external_file(&a.files, &options);
    close(db)?;
    for f in placed.context(DbSnafu)? {
        println!(
            "ingested {} as {:06}.sst at L{}, {} byte(s), sequence number {}",
            f.external.display(),
            f.number,
            f.level,
            f.size,
            f.sequence
        );
    }
    Ok(())
}
