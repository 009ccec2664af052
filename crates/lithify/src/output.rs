//! Where a tool may write its outputs: never among stored data. An HTML
//! page, a checkpoint, a restored backup or a stress run's expected state
//! written into a database directory could overwrite one of its files
//! (`lsm --html DB/CURRENT` once made a database unopenable) or be taken
//! for one later; the same goes for Kafka log directories and backup
//! directories.

use std::path::{Path, PathBuf};

use lithify_vfs::FileSystem;
use snafu::ResultExt as _;

use crate::{IoSnafu, OutputInStoredDataSnafu, Result};

/// A directory holding stored data (see [`stored_data_at_or_above`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoredData {
    /// The directory, absolute and resolved.
    pub dir: PathBuf,
    /// What it is and holds, in a few words.
    pub what: String,
}

/// What stored data `dir` holds itself, if any: a database (its `CURRENT`
/// decides first), a Kafka log or data directory, a backup directory.
fn stored_data_in(fs: &dyn FileSystem, dir: &Path) -> Option<String> {
    #[cfg(feature = "db")]
    {
        if lithify_backup::holds_backups(fs, dir) {
            return Some("a backup directory".to_owned());
        }
        if let Some(files) = lithify_engine::holds_database(fs, dir) {
            return Some(format!("a lithify database: {files}"));
        }
    }
    #[cfg(feature = "log")]
    if let Some(files) = lithify_kafka_log::naming::holds_log_data(fs, dir) {
        return Some(format!("Kafka log data: {files}"));
    }
    let _ = (fs, dir);
    None
}

/// The nearest directory at or above `path` (made absolute, with `.`, `..`
/// and links resolved as far as it exists) that holds stored data: a
/// lithify database, a Kafka log or data directory, a backup directory.
///
/// ```
/// # fn main() -> lithify::Result<()> {
/// use lithify::{Db, Options, stored_data_at_or_above};
/// use lithify::vfs::OsFs;
///
/// let tmp = tempfile::tempdir().unwrap();
/// let db = tmp.path().join("db");
/// Db::open(&db, Options::default())?.close()?;
/// let found = stored_data_at_or_above(&OsFs, &db.join("CURRENT"))?.unwrap();
/// assert!(found.what.contains("lithify database"));
/// assert_eq!(stored_data_at_or_above(&OsFs, &tmp.path().join("page.html"))?, None);
/// # Ok(())
/// # }
/// ```
pub fn stored_data_at_or_above(fs: &dyn FileSystem, path: &Path) -> Result<Option<StoredData>> {
    let resolved = lithify_vfs::resolve(fs, path).context(IoSnafu {
        op: "resolving",
        path: path.to_path_buf(),
    })?;
    for dir in resolved.ancestors() {
        if !fs.is_dir(dir) {
            continue;
        }
        if let Some(what) = stored_data_in(fs, dir) {
            return Ok(Some(StoredData {
                dir: dir.to_path_buf(),
                what,
            }));
        }
    }
    Ok(None)
}

/// Refuses `path` as a command's output when it is, or is inside, a
/// directory of stored data ([`stored_data_at_or_above`]), naming that
/// directory; an invalid-argument error.
pub fn check_output_path(fs: &dyn FileSystem, path: &Path) -> Result<()> {
    match stored_data_at_or_above(fs, path)? {
        None => Ok(()),
        Some(found) => OutputInStoredDataSnafu {
            output: path.to_path_buf(),
            dir: found.dir,
            what: found.what,
        }
        .fail(),
    }
}
