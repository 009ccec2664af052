//! `stats`, `compact`, `checkpoint`, `live-files` and `ingest`.

use clap::{Args, ValueEnum};
use lithify::vfs::{FileSystem as _, OsFs};
use lithify::{BottommostLevelCompaction, CompactRangeOptions};
use snafu::ResultExt as _;

use crate::db::{DbArgs, RangeArgs, TableArgs, close};
use crate::error::{DbSnafu, Result, UsageSnafu};
use crate::json::JsonArgs;
use crate::text::HexArgs;

/// Arguments of `stats`.
#[derive(Debug, Args)]
pub(crate) struct StatsArgs {
    #[command(flatten)]
    pub db: DbArgs,
    #[command(flatten)]
    pub table: TableArgs,
    /// Print this property instead of the statistics (see
    /// `--list-properties`; `<N>` in a name stands for a level number:
    /// `lithify.num-files-at-level0`).
    #[arg(long)]
    pub property: Option<String>,
    /// List the property names.
    #[arg(long)]
    pub list_properties: bool,
    #[command(flatten)]
    pub json: JsonArgs,
}

/// Prints the engine's statistics (RocksDB's compaction stats table and
/// the amplification figures) or one property.
pub(crate) fn stats(a: StatsArgs) -> Result<()> {
    if a.list_properties {
        if a.json.json {
            return crate::json::print(&lithify::Db::property_names());
        }
        for name in lithify::Db::property_names() {
            println!("{name}");
        }
        return Ok(());
    }
    // Read-only: the shape of the tree and what recovery found are read
    // from the files; counters of earlier processes are not kept.
    let db = a.db.open_read_only()?;
    let table = a.table.open(&db, &a.db.db)?;
    let text = match a.property.as_deref() {
        Some(name) => table.property(name).context(DbSnafu)?,
        None => {
            let mut stats = db.stats();
            if a.table.table.is_some() {
                stats.tables.retain(|t| t.name == table.name());
            }
            if a.json.json {
                close(db)?;
                return crate::json::print(&lithify_bench::report::EngineJson::new(&stats));
            }
            Some(stats.to_string())
        }
    };
    close(db)?;
    match text {
        Some(text) if a.json.json => crate::json::print(&serde_json::json!({
            "name": a.property.as_deref().unwrap_or_default(),
            "value": text,
        })),
        Some(text) => {
            print!("{text}");
            if !text.ends_with('\n') {
                println!();
            }
            Ok(())
        }
        None => UsageSnafu {
            message: format!(
                "unknown property {:?}; --list-properties lists them (put a level number in place of <N>)",
                a.property.unwrap_or_default()
            ),
        }
        .fail(),
    }
}

/// Arguments of `compact`.
#[derive(Debug, Args)]
pub(crate) struct CompactArgs {
    #[command(flatten)]
    pub db: DbArgs,
    #[command(flatten)]
    pub hex: HexArgs,
    #[command(flatten)]
    pub table: TableArgs,
    #[command(flatten)]
    pub range: RangeArgs,
    /// Whether the last level's files in the range are rewritten too
    /// (RocksDB's `BottommostLevelCompaction`): `skip` (never),
    /// `if-have-compaction-filter` (default: only when a compaction filter
    /// is set, which the command line never sets, and not the files this
    /// compaction wrote), `force` (always), `force-optimized` (always, but
    /// not the files this compaction wrote).
    #[arg(long, value_enum, value_name = "RULE", default_value_t = Bottommost::IfHaveCompactionFilter)]
    pub bottommost_level_compaction: Bottommost,
}

/// `--bottommost-level-compaction`'s names for [`BottommostLevelCompaction`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Bottommost {
    /// Never rewrite the last level.
    Skip,
    /// Rewrite it only when a compaction filter is set.
    IfHaveCompactionFilter,
    /// Always rewrite it.
    Force,
    /// Always rewrite it, except the files this compaction wrote.
    ForceOptimized,
}

impl From<Bottommost> for BottommostLevelCompaction {
    fn from(b: Bottommost) -> Self {
        match b {
            Bottommost::Skip => BottommostLevelCompaction::Skip,
            Bottommost::IfHaveCompactionFilter => BottommostLevelCompaction::IfHaveCompactionFilter,
            Bottommost::Force => BottommostLevelCompaction::Force,
            Bottommost::ForceOptimized => BottommostLevelCompaction::ForceOptimized,
        }
    }
}

/// Compacts a key range (everything by default) of one table and waits;
/// prints the files per level afterwards.
pub(crate) fn compact(a: CompactArgs) -> Result<()> {
    let (from, to) = a.range.parse(a.hex.encoding())?;
    let db = a.db.open()?;
    let table = a.table.open(&db, &a.db.db)?;
    let options = CompactRangeOptions::default()
        .bottommost_level_compaction(a.bottommost_level_compaction.into());
    // The bytes of the compactions' output files as they grow (the inputs
    // are deleted only when a compaction ends), against the table's size
    // when the whole table is compacted.
    let before = crate::progress::dir_bytes(&a.db.db);
    let total = (from.is_none() && to.is_none())
        .then(|| table.stats().map(|t| t.sst_bytes).ok())
        .flatten();
    crate::progress::watch(
        &format!("compacting table {}", a.table.name()),
        || {
            let now = crate::progress::dir_bytes(&a.db.db);
            (now.saturating_sub(before), total)
        },
        || table.compact_range_opt(from.as_deref(), to.as_deref(), &options),
    )
    .context(DbSnafu)?;
    let mut stats = db.stats();
    close(db)?;
    stats.tables.retain(|t| t.name == a.table.name());
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
    let db = a.db.open()?;
    let options = lithify::CheckpointOptions::default().log_size_for_flush(a.log_size_for_flush);
    let total: u64 = db.live_files().iter().map(|f| f.size).sum();
    let info = crate::progress::watch(
        &format!("checkpoint {}", a.dest.display()),
        || (crate::progress::dir_bytes(&a.dest), Some(total)),
        || db.create_checkpoint_opt(&a.dest, &options),
    )
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
    #[command(flatten)]
    pub hex: HexArgs,
    #[command(flatten)]
    pub table: TableArgs,
    #[command(flatten)]
    pub json: JsonArgs,
}

/// Lists every live SST file (RocksDB's `GetLiveFilesMetaData`): table,
/// level, file, size, key range and sequence numbers.
pub(crate) fn live_files(a: LiveFilesArgs) -> Result<()> {
    let enc = a.hex.encoding();
    let db = a.db.open_read_only()?;
    let mut files = db.live_files();
    if a.table.table.is_some() {
        let name = a.table.open(&db, &a.db.db)?.name().to_owned();
        files.retain(|f| f.table == name);
    }
    close(db)?;
    if a.json.json {
        let files: Vec<serde_json::Value> = files
            .iter()
            .map(|f| {
                serde_json::json!({
                    "table": f.table,
                    "level": f.level,
                    "file": f.path.display().to_string(),
                    "size": f.size,
                    "entries": f.num_entries,
                    "smallest_seqno": f.smallest_seqno,
                    "largest_seqno": f.largest_seqno,
                    "smallest_key": enc.show(&f.smallest_key),
                    "largest_key": enc.show(&f.largest_key),
                })
            })
            .collect();
        return crate::json::print(&files);
    }
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
    #[command(flatten)]
    pub table: TableArgs,
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
    let db = a.db.open()?;
    let options = lithify::IngestOptions::default().move_files(a.move_files);
    let total: u64 = a.files.iter().map(|f| OsFs.file_size(f).unwrap_or(0)).sum();
    let before = crate::progress::dir_bytes(&a.db.db);
    let placed = a.table.open(&db, &a.db.db).and_then(|t| {
        crate::progress::watch(
            "ingesting",
            || {
                let now = crate::progress::dir_bytes(&a.db.db);
                (now.saturating_sub(before), Some(total))
            },
            || t.ingest_external_file(&a.files, &options),
        )
        .context(DbSnafu)
    });
    close(db)?;
    for f in placed? {
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
