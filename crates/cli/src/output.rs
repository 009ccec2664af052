//! Where commands write their outputs: never among stored data
//! ([`lithify::check_output_path`]), each output file whole or not at
//! all (a temporary name, synced, renamed over the target), and lines on
//! standard output ([`say`]).

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

/// Writes to stdout and flushes. A failure (say a closed pipe) is an
/// error, returned so that a long command still closes its database and
/// removes what it must.
pub(crate) fn say(text: std::fmt::Arguments<'_>) -> Result<()> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    out.write_fmt(text)
        .and_then(|()| out.flush())
        .context(IoSnafu {
            action: "write to",
            path: "standard output",
        })
}
