//! The verified open (RocksDB's `paranoid_checks`): every SST file and
//! blob file the MANIFEST lists exists with the size it records, and
//! carries the unique id it records (a blob file also its header, footer
//! and value counts) (RocksDB's `verify_sst_unique_id_in_manifest`; see
//! [`check_sst_identity`](crate::check_sst_identity)).
//!
//! RocksDB refuses to open a database whose live files are missing; so do
//! we, before anything is written, so a database with a lost or cut table
//! is never opened into a state that silently lacks its data. Blocks and
//! checksums are not read here (that is `lithify check` and the reads that
//! touch them): a file of the right size with a flipped bit inside a block
//! is found at the first read of that block. The identity check reads each
//! file's footer, metaindex and properties: a file copied in from another
//! database under a live name is refused here, before any read serves it.

use std::path::Path;

use lithify_version::VersionSet;
use lithify_version::filename::{blob_file_name, manifest_file_name, sst_file_name};
use lithify_vfs::FileSystem;

use crate::error::{CorruptionSnafu, Result};

/// Checks every live SST file of `versions` in `dir`.
pub(super) fn live_files(fs: &dyn FileSystem, dir: &Path, versions: &VersionSet) -> Result<()> {
    let manifest = manifest_file_name(versions.manifest_number());
    for info in versions.tables() {
        let Some(version) = versions.current(info.id) else {
            continue;
        };
        for (level, f) in version.all_files() {
            let path = dir.join(sst_file_name(f.number));
            let problem = match fs.file_size(&path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(format!(
                    "the SST file is missing; {manifest} lists it in table {:?} at L{level} with {} bytes",
                    info.name, f.size
                )),
                Err(e) => Some(format!("the size of the SST file cannot be read: {e}")),
                Ok(actual) if actual < f.size => Some(format!(
                    "the SST file is truncated: it ends at offset {actual}, {} bytes short of the {} bytes {manifest} records",
                    f.size - actual,
                    f.size
                )),
                Ok(actual) if actual > f.size => Some(format!(
                    "the SST file has {actual} bytes, {manifest} records {} (bytes were added at offset {})",
                    f.size, f.size
                )),
                // The file cannot be read, or its footer, metaindex or
                // properties are damaged: that error names file and offset.
                Ok(_) => match crate::check_sst_identity(fs, &path, f.size, f.unique_id) {
                    Ok(()) => None,
                    Err(crate::Error::Corruption { message, .. }) => Some(format!(
                        "{message} ({manifest} lists it in table {:?} at L{level})",
                        info.name
                    )),
                    Err(other) => return Err(other),
                },
            };
            if let Some(mut message) = problem {
                if let Some(t) = versions.recovered_torn_tail() {
                    message.push_str(&format!(
                        " (the MANIFEST's last record, at offset {}, was cut short and dropped: if more than a crash cut it, the MANIFEST lost records)",
                        t.offset
                    ));
                }
                return CorruptionSnafu { path, message }.fail();
            }
        }
        for blob in version.blob_files().values() {
            let path = dir.join(blob_file_name(blob.meta.number));
            if let Err(message) = crate::sst_check::open_blob_file(fs, &path, &blob.meta) {
                return CorruptionSnafu {
                    path,
                    message: format!("{message} ({manifest} lists it in table {:?})", info.name),
                }
                .fail();
            }
        }
    }
    Ok(())
}
