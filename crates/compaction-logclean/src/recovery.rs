//! Crash recovery of a partition directory's temporary files: the rules of
//! Kafka's `LogLoader` for files left by an interrupted segment replacement
//! (the cleaner's `.cleaned` -> `.swap` -> `.deleted` protocol).
//!
//! 1. Every `*.deleted` file is removed.
//! 2. `minCleaned` is the smallest base offset among `*.cleaned` files.
//! 3. Every `*.swap` file with base offset >= `minCleaned` is removed (it
//!    belongs to an operation that had not finished writing), then every
//!    `*.cleaned` file is removed.
//! 4. For the remaining `*.log.swap` files: `minSwap` is the smallest base
//!    offset, `maxSwap` the largest offset after a swap segment's last
//!    batch. Every file without the `.swap` suffix whose name's offset is
//!    in `[minSwap, maxSwap)` is removed: those are the segments the swap
//!    replaces, not yet renamed to `.deleted`.
//! 5. Every remaining `*.swap` file is renamed without its suffix.
//!
//! The directory is synced afterwards, so the outcome is durable before
//! segments are loaded. Per crash point of the replacement: before any
//! `.swap` exists the old segments stay and the cleaning is lost; once all
//! new files are `.swap` the replacement completes; a mix of `.swap` and
//! `.cleaned` is rolled back.

use std::io;
use std::path::Path;
use std::sync::Arc;

use lithify_vfs::FileSystem;
use snafu::ResultExt as _;

use crate::error::{IoSnafu, Result};
use crate::file_batches::FileBatches;
use crate::naming::{self, FileKind, Suffix};
use crate::segment::SegmentRecovery;

/// What opening a log found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Files removed: `.deleted`, `.cleaned`, unfinished `.swap`, segments
    /// replaced by a swap, index files without a `.log`.
    pub deleted_files: Vec<String>,
    /// `.swap` files renamed into place.
    pub swapped_in: Vec<String>,
    /// Segments whose indexes were missing or corrupt, and why.
    pub rebuilt_indexes: Vec<(i64, String)>,
    /// Segments re-validated batch by batch.
    pub recovered: Vec<SegmentRecovery>,
    /// Segments removed because an earlier segment was truncated (the log
    /// ends at the first invalid batch, as in Kafka).
    pub removed_after_corruption: Vec<i64>,
}

impl RecoveryReport {
    /// Total bytes truncated from segments.
    pub fn truncated_bytes(&self) -> u64 {
        self.recovered.iter().map(|r| r.truncated_bytes).sum()
    }
}

fn remove(fs: &dyn FileSystem, dir: &Path, name: &str, report: &mut RecoveryReport) -> Result<()> {
    let path = dir.join(name);
    match fs.remove_file(&path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(e).context(IoSnafu {
                action: "remove",
                path,
            });
        }
    }
    report.deleted_files.push(name.to_string());
    Ok(())
}

fn list(fs: &dyn FileSystem, dir: &Path) -> Result<Vec<String>> {
    let names = fs.list_dir(dir).context(IoSnafu {
        action: "list",
        path: dir,
    })?;
    Ok(names
        .into_iter()
        .filter(|n| !fs.is_dir(&dir.join(n)))
        .collect())
}

/// The offset after the last valid batch of a `.log` file (its base
/// offset when it holds none).
fn next_offset_of(fs: &dyn FileSystem, path: &Path, base_offset: i64) -> Result<i64> {
    let file = fs.open(path).context(IoSnafu {
        action: "open",
        path,
    })?;
    let size = file.size().context(IoSnafu {
        action: "stat",
        path,
    })?;
    let mut next = base_offset;
    for batch in FileBatches::new(file, Arc::new(path.to_path_buf()), 0, size) {
        match batch {
            Ok(b) => next = next.max(b.next_offset()),
            Err(e) if e.is_corruption() => break,
            Err(e) => return Err(e),
        }
    }
    Ok(next)
}

/// Applies steps 1 to 5 to `dir`, then syncs it.
pub(crate) fn complete_or_roll_back_swaps(
    fs: &dyn FileSystem,
    dir: &Path,
    report: &mut RecoveryReport,
) -> Result<()> {
    let mut swaps = Vec::new();
    let mut cleaned = Vec::new();
    let mut min_cleaned = i64::MAX;
    for name in list(fs, dir)? {
        if name.ends_with(Suffix::Deleted.as_str()) {
            remove(fs, dir, &name, report)?;
        } else if name.ends_with(Suffix::Cleaned.as_str()) {
            if let Some(off) = naming::offset_from_file_name(&name) {
                min_cleaned = min_cleaned.min(off);
            }
            cleaned.push(name);
        } else if name.ends_with(Suffix::Swap.as_str()) {
            swaps.push(name);
        }
    }
    let mut valid_swaps = Vec::new();
    for name in swaps {
        match naming::offset_from_file_name(&name) {
            Some(off) if off >= min_cleaned => remove(fs, dir, &name, report)?,
            _ => valid_swaps.push(name),
        }
    }
    for name in cleaned {
        remove(fs, dir, &name, report)?;
    }
    let mut min_swap = i64::MAX;
    let mut max_swap = i64::MIN;
    for name in &valid_swaps {
        let Some(p) = naming::parse(name) else {
            continue;
        };
        if p.kind != FileKind::Log {
            continue;
        }
        min_swap = min_swap.min(p.base_offset);
        max_swap = max_swap.max(next_offset_of(fs, &dir.join(name), p.base_offset)?);
    }
    if min_swap < max_swap {
        for name in list(fs, dir)? {
            if name.ends_with(Suffix::Swap.as_str()) {
                continue;
            }
            if naming::offset_from_file_name(&name).is_some_and(|o| o >= min_swap && o < max_swap) {
                remove(fs, dir, &name, report)?;
            }
        }
    }
    for name in list(fs, dir)? {
        if let Some(target) = name.strip_suffix(Suffix::Swap.as_str()) {
            let from = dir.join(&name);
            fs.rename(&from, &dir.join(target)).context(IoSnafu {
                action: "rename",
                path: from,
            })?;
            report.swapped_in.push(name);
        }
    }
    fs.sync_dir(dir).context(IoSnafu {
        action: "sync",
        path: dir,
    })
}
