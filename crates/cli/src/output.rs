//! Where commands write their outputs: never among stored data
//! ([`lithify::check_output_path`]), and each output file whole or not at
//! all (a temporary name, synced, renamed over the target).

use std::path::Path;

use lithify::vfs::OsFs;
use snafu::ResultExt as _;

use crate::error::{IoSnafu, OutputSnafu, Result};

/// Refuses `path` as an output when it is, or is inside, a database, a
/// Kafka log or data directory, or a backup directory.
pub(crate) fn check(path: &Path) -> Result<()> {
    lithify::check_output_path(&OsFs, path).context(OutputSnafu)
}

/// Writes the output file `path`: checked, then written to
/// `<path>.tmp`, synced and renamed over `path`, and its directory synced,
/// so an interrupted write leaves the old file or none.
pub(crate) fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    check(path)?;
    lithify::vfs::write_file_atomic(&OsFs, path, bytes).context(IoSnafu {
        action: "write",
        path,
    })
}
