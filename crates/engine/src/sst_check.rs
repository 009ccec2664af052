//! Is a live SST the file the MANIFEST recorded? Two checks against the
//! MANIFEST's record of the file (`lithify_version::FileMetadata`, or a
//! [`LiveFileMetaData`](crate::LiveFileMetaData)):
//!
//! * [`check_sst_identity`]: the file's unique id — derived from the
//!   database identity, session identity and original file number its
//!   properties carry — is the one recorded when the file was added
//!   (RocksDB's `verify_sst_unique_id_in_manifest`). A file copied in from
//!   another database, or an older file of this one put back under a live
//!   name, fails it even when its name and size match. Open runs it for
//!   every live file (with `paranoid_checks`): it reads only the footer,
//!   metaindex and properties.
//! * [`check_sst_checksum`]: the xxh3-64 of the whole file is the one
//!   recorded when it was written. It reads every byte, so `lithify check`
//!   runs it, not open.
//!
//! Files added before identities and checksums were recorded have none in
//! the MANIFEST; both checks pass them.

use std::path::Path;

use lithify_base::Id;
use lithify_vfs::FileSystem;
use snafu::ResultExt;

use crate::error::{CorruptionSnafu, IoSnafu, Result, SstSnafu};

/// Checks that the SST at `path` (`size` bytes) carries the unique id
/// `recorded` for it; passes a file whose record has none. The error names
/// the file, the id it carries and the one recorded.
///
/// ```
/// use lithify_engine::{Db, Options, check_sst_identity};
/// # let a = tempfile::tempdir().unwrap();
/// # let b = tempfile::tempdir().unwrap();
/// let db = Db::open(a.path(), Options::default()).unwrap();
/// db.put(b"k", b"v").unwrap();
/// db.flush().unwrap();
/// let f = &db.live_files()[0];
/// let fs = lithify_vfs::OsFs;
/// check_sst_identity(&fs, &f.path, f.size, f.unique_id).unwrap();
///
/// // The same file name in another database is another file.
/// let other = Db::open(b.path(), Options::default()).unwrap();
/// other.put(b"k", b"v").unwrap();
/// other.flush().unwrap();
/// let theirs = &other.live_files()[0];
/// assert_eq!(theirs.path.file_name(), f.path.file_name());
/// let err = check_sst_identity(&fs, &theirs.path, theirs.size, f.unique_id).unwrap_err();
/// assert!(err.to_string().contains("unique id"), "{err}");
/// ```
pub fn check_sst_identity(
    fs: &dyn FileSystem,
    path: &Path,
    size: u64,
    recorded: Option<Id>,
) -> Result<()> {
    let Some(recorded) = recorded else {
        return Ok(());
    };
    let file = open(fs, path)?;
    let props = lithify_sstable::read_properties(&*file, path, size).context(SstSnafu)?;
    let carried = props.unique_id();
    if carried == Some(recorded) {
        return Ok(());
    }
    let what = match (props.db_id, props.db_session_id) {
        (Some(db), Some(session)) => format!(
            "its properties give unique id {} (database {db}, session {session}, file number {})",
            carried.map_or_else(String::new, |c| c.to_string()),
            props.orig_file_number
        ),
        _ => "its properties carry no identity".to_owned(),
    };
    CorruptionSnafu {
        path: path.to_path_buf(),
        message: format!(
            "the file is not the one the MANIFEST recorded under this number: {what}, the MANIFEST records unique id {recorded} (a file copied in from another database, or an older file put back?)"
        ),
    }
    .fail()
}

/// Checks that the first `size` bytes of the SST at `path` have the
/// xxh3-64 checksum `recorded` for the file (reading every byte); passes a
/// file whose record has none.
///
/// ```
/// use lithify_engine::{Db, Options, check_sst_checksum};
/// # let dir = tempfile::tempdir().unwrap();
/// let db = Db::open(dir.path(), Options::default()).unwrap();
/// db.put(b"k", b"v").unwrap();
/// db.flush().unwrap();
/// let f = &db.live_files()[0];
/// assert!(f.file_checksum.is_some());
/// check_sst_checksum(&lithify_vfs::OsFs, &f.path, f.size, f.file_checksum).unwrap();
/// ```
pub fn check_sst_checksum(
    fs: &dyn FileSystem,
    path: &Path,
    size: u64,
    recorded: Option<u64>,
) -> Result<()> {
    let Some(recorded) = recorded else {
        return Ok(());
    };
    let file = open(fs, path)?;
    let actual = lithify_sstable::file_checksum(&*file, path, size).context(SstSnafu)?;
    if actual == recorded {
        return Ok(());
    }
    CorruptionSnafu {
        path: path.to_path_buf(),
        message: format!(
            "the whole-file checksum of its {size} bytes is {actual:016x}, the MANIFEST records {recorded:016x}"
        ),
    }
    .fail()
}

fn open(
    fs: &dyn FileSystem,
    path: &Path,
) -> Result<std::sync::Arc<dyn lithify_vfs::RandomAccessFile>> {
    fs.open(path).context(IoSnafu {
        op: "opening",
        path: path.to_path_buf(),
    })
}
