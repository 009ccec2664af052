//! `lithify backup`: incremental backups of a database (RocksDB's
//! `BackupEngine`, `ldb backup`/`restore`): create, list, verify, restore,
//! purge.

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Subcommand};
use lithify::backup::BackupEngine;
use lithify::vfs::OsFs;
use snafu::ResultExt as _;

use crate::db::{DbArgs, close};
use crate::error::{BackupSnafu, Result, UsageSnafu};
use crate::json::JsonArgs;

/// The backup commands.
#[derive(Debug, Subcommand)]
pub(crate) enum BackupCommand {
    /// Back up a database (tables already in the backup directory are
    /// shared, not copied again).
    Create(CreateArgs),
    /// List the backups: id, time, sequence number, files, bytes.
    List(ListArgs),
    /// Re-read every file of a backup (the newest by default) and check
    /// its size and checksum.
    Verify(VerifyArgs),
    /// Restore a backup (the newest by default) into a new directory.
    Restore(RestoreArgs),
    /// Keep the newest N backups, delete the rest and the files only they
    /// used.
    Purge(PurgeArgs),
}

/// The backup directory.
#[derive(Debug, Args)]
pub(crate) struct DirArgs {
    /// The backup directory (`backup create` creates it if missing; the
    /// other commands refuse a missing one).
    #[arg(long, value_name = "DIR")]
    pub backup_dir: PathBuf,
}

/// Arguments of `backup list`.
#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    #[command(flatten)]
    pub dir: DirArgs,
    #[command(flatten)]
    pub json: JsonArgs,
}

/// Arguments of `backup create`.
#[derive(Debug, Args)]
pub(crate) struct CreateArgs {
    #[command(flatten)]
    pub dir: DirArgs,
    #[command(flatten)]
    pub db: DbArgs,
}

/// `--id`: which backup `verify` and `restore` work on.
#[derive(Debug, Args)]
pub(crate) struct IdArgs {
    /// The backup id, as `backup list` prints it (default: the newest)
    /// [range: 1..=4294967295].
    #[arg(long, value_parser = crate::numbers::int::<u32>(1, u32::MAX))]
    pub id: Option<u32>,
}

/// Arguments of `backup verify`.
#[derive(Debug, Args)]
pub(crate) struct VerifyArgs {
    #[command(flatten)]
    pub dir: DirArgs,
    #[command(flatten)]
    pub id: IdArgs,
}

/// Arguments of `backup restore`.
#[derive(Debug, Args)]
pub(crate) struct RestoreArgs {
    #[command(flatten)]
    pub dir: DirArgs,
    #[command(flatten)]
    pub id: IdArgs,
    /// The new database directory (must not exist, or be empty).
    pub dest: PathBuf,
}

/// Arguments of `backup purge`.
#[derive(Debug, Args)]
pub(crate) struct PurgeArgs {
    #[command(flatten)]
    pub dir: DirArgs,
    /// How many of the newest backups to keep [range: 0..=4294967295].
    #[arg(long, value_parser = crate::numbers::int::<usize>(0, u32::MAX as usize))]
    pub keep: usize,
}

/// The engine of `backup create`: the directory is created if missing.
fn engine(d: &DirArgs) -> Result<BackupEngine> {
    BackupEngine::open_os(&d.backup_dir).context(BackupSnafu)
}

/// The engine of `backup purge`: the directory must exist.
fn existing_engine(d: &DirArgs) -> Result<BackupEngine> {
    BackupEngine::open_existing(Arc::new(OsFs), &d.backup_dir).context(BackupSnafu)
}

/// The engine of `list`, `verify` and `restore`: nothing in the backup
/// directory changes.
fn read_only_engine(d: &DirArgs) -> Result<BackupEngine> {
    BackupEngine::open_read_only(Arc::new(OsFs), &d.backup_dir).context(BackupSnafu)
}

/// The newest backup's id; a usage error when there is none.
fn newest(backups: &BackupEngine, d: &DirArgs) -> Result<u32> {
    let list = backups.list().context(BackupSnafu)?;
    match list.iter().max_by_key(|b| b.id) {
        Some(b) => Ok(b.id),
        None => UsageSnafu {
            message: format!("{} holds no backup", d.backup_dir.display()),
        }
        .fail(),
    }
}

/// Runs one backup command.
pub(crate) fn run(cmd: BackupCommand) -> Result<()> {
    match cmd {
        BackupCommand::Create(a) => {
            // A new backup directory never goes inside stored data; an
            // existing one is a backup directory itself.
            if !lithify::backup::holds_backups(&OsFs, &a.dir.backup_dir) {
                crate::output::check(&a.dir.backup_dir)?;
            }
            let backups = engine(&a.dir)?;
            let db = a.db.open()?;
            let before = crate::progress::dir_bytes(&a.dir.backup_dir);
            let made = crate::progress::watch(
                &format!("backing up into {}", a.dir.backup_dir.display()),
                || {
                    let now = crate::progress::dir_bytes(&a.dir.backup_dir);
                    (now.saturating_sub(before), None)
                },
                || backups.create_backup_opt(&db, &Default::default()),
            );
            close(db)?;
            let (info, stats) = made.context(BackupSnafu)?;
            println!(
                "backup {} at sequence {}: {} file(s), {} byte(s); {} SST file(s) copied, {} shared with earlier backups, {} byte(s) written",
                info.id,
                info.sequence,
                info.files,
                info.size,
                stats.tables_copied,
                stats.tables_shared,
                stats.bytes_copied
            );
        }
        BackupCommand::List(a) => {
            let backups = read_only_engine(&a.dir)?;
            if a.json.json {
                let listed: Vec<serde_json::Value> = backups
                    .list()
                    .context(BackupSnafu)?
                    .iter()
                    .map(|b| {
                        serde_json::json!({
                            "id": b.id, "timestamp": b.timestamp, "sequence": b.sequence,
                            "files": b.files, "size": b.size,
                        })
                    })
                    .collect();
                let damaged: Vec<serde_json::Value> = backups
                    .corrupt_backups()
                    .context(BackupSnafu)?
                    .iter()
                    .map(|c| serde_json::json!({"id": c.id, "message": c.message}))
                    .collect();
                return crate::json::print(
                    &serde_json::json!({"backups": listed, "damaged": damaged}),
                );
            }
            println!("id\ttime (unix)\tsequence\tfiles\tbytes");
            for b in backups.list().context(BackupSnafu)? {
                println!(
                    "{}\t{}\t{}\t{}\t{}",
                    b.id, b.timestamp, b.sequence, b.files, b.size
                );
            }
            for c in backups.corrupt_backups().context(BackupSnafu)? {
                println!("{}\tdamaged: {}", c.id, c.message);
            }
        }
        BackupCommand::Verify(a) => {
            let backups = read_only_engine(&a.dir)?;
            let id = match a.id.id {
                Some(id) => id,
                None => newest(&backups, &a.dir)?,
            };
            let info = backups.verify(id).context(BackupSnafu)?;
            println!(
                "backup {}: {} file(s), {} byte(s): every size and checksum matches",
                info.id, info.files, info.size
            );
        }
        BackupCommand::Restore(a) => {
            crate::output::check(&a.dest)?;
            let backups = read_only_engine(&a.dir)?;
            // Bytes restored so far, without a total: listing the backups
            // for their sizes would warn about every damaged one again.
            let info = crate::progress::watch(
                "restoring",
                || (crate::progress::dir_bytes(&a.dest), None),
                || backups.restore(a.id.id, &a.dest),
            )
            .context(BackupSnafu)?;
            println!(
                "restored backup {} (sequence {}) into {}",
                info.id,
                info.sequence,
                a.dest.display()
            );
        }
        BackupCommand::Purge(a) => {
            let gone = existing_engine(&a.dir)?
                .purge_old_backups(a.keep)
                .context(BackupSnafu)?;
            if gone.is_empty() {
                println!("nothing to purge");
            } else {
                let ids: Vec<String> = gone.iter().map(u32::to_string).collect();
                println!("deleted backup(s) {}", ids.join(", "));
            }
        }
    }
    Ok(())
}
