//! Checkpoints (RocksDB's `Checkpoint::CreateCheckpoint`): an openable copy
//! of the database in a new directory, made from a
//! [`LiveFileSet`](crate::LiveFileSet): SST files hard-linked (copied
//! when the file system has no links or the copy is on another device; any
//! other link error fails the checkpoint), the MANIFEST and the WALs
//! copied up to their cut sizes and synced, the directory synced, and
//! `CURRENT` written last (atomically). Opening the copy replays the
//! MANIFEST and the copied WALs: it holds exactly the writes up to the
//! returned sequence number.
//!
//! The destination must not exist. A crash or error before `CURRENT` is
//! written leaves a directory that open refuses ("the directory holds a
//! database's files" with no `CURRENT`); delete it and try again. The
//! source is never changed by a checkpoint beyond the flush.

use std::io::ErrorKind;
use std::path::Path;

use lithify_base::SeqNo;
use snafu::ResultExt;

use crate::error::{InvalidArgumentSnafu, IoSnafu, Result};
use crate::live_set::{CheckpointOptions, LiveFileKind, copy_file_prefix};
use crate::state::DbInner;

/// What a checkpoint did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckpointInfo {
    /// The checkpoint holds exactly the writes with sequence numbers up to
    /// this one.
    pub sequence: SeqNo,
    /// Whether the memtables were flushed first.
    pub flushed: bool,
    /// SST files hard-linked.
    pub tables_linked: usize,
    /// SST files copied (the file system could not link them).
    pub tables_copied: usize,
    /// WAL files copied.
    pub wals_copied: usize,
    /// Bytes copied (tables that could not be linked, the MANIFEST, WALs).
    pub bytes_copied: u64,
}

/// See the [module documentation](db).
pub(crate) fn create_checkpoint(
    db: &DbInner,
    dest: &Path,
    options: &CheckpointOptions,
) -> Result<CheckpointInfo> {
    if db.fs.exists(dest) {
        return InvalidArgumentSnafu {
            message: format!("checkpoint directory {} already exists", dest.display()),
        }
        .fail();
    }
    let inside = lithify_vfs::is_within(&*db.fs, dest, &db.dir).context(IoSnafu {
        op: "resolving",
        path: dest.to_path_buf(),
    })?;
    if inside {
        return InvalidArgumentSnafu {
            message: format!(
                "checkpoint directory {} is inside the database directory {}: make it elsewhere",
                dest.display(),
                db.dir.display()
            ),
        }
        .fail();
    }
    let set = crate::live_set::live_file_set(db, options)?;
    let fs = &*db.fs;
    let mut info = CheckpointInfo {
        sequence: set.sequence(),
        flushed: set.flushed(),
        ..CheckpointInfo::default()
    };
    let io = |op: &'static str, path: &Path| IoSnafu {
        op,
        path: path.to_path_buf(),
    };
    lithify_vfs::create_dir_durable(fs, dest).context(io("creating", dest))?;
    for f in set.files() {
        let to = dest.join(&f.name);
        if matches!(f.kind, LiveFileKind::Sst | LiveFileKind::Blob) {
            match fs.hard_link(&f.path, &to) {
                Ok(()) => {
                    info.tables_linked += 1;
                    continue;
                }
                // No links here, or not across these devices: copy
                // (RocksDB falls back the same way).
                Err(e)
                    if matches!(e.kind(), ErrorKind::Unsupported | ErrorKind::CrossesDevices) =>
                {
                    info.tables_copied += 1;
                }
                Err(source) => {
                    return Err(source).context(IoSnafu {
                        op: "linking",
                        path: to,
                    });
                }
            }
        } else if f.kind == LiveFileKind::Wal {
            info.wals_copied += 1;
        }
        info.bytes_copied += copy_file_prefix(fs, &f.path, fs, &to, f.size, |_| {})?;
    }
    fs.sync_dir(dest).context(io("syncing directory", dest))?;
    let current = dest.join(lithify_version::filename::CURRENT);
    lithify_vfs::write_file_atomic(fs, &current, set.current())
        .context(io("replacing", &current))?;
    tracing::info!(
        target: "lithify::checkpoint",
        dest = %dest.display(),
        sequence = info.sequence,
        tables_linked = info.tables_linked,
        tables_copied = info.tables_copied,
        wals_copied = info.wals_copied,
        bytes_copied = info.bytes_copied,
        "checkpoint created"
    );
    Ok(info)
}
