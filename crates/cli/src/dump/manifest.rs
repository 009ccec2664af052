//! `dump-manifest DIR`: the MANIFEST that `DIR/CURRENT` names (or a
//! MANIFEST file given directly) — every record with its version edits, how
//! the log ended, then the resulting LSM shape of every table — through
//! `lithify::inspect::manifest::dump`.

use std::path::PathBuf;

use clap::Args;
use lithify::files;
use lithify::inspect::manifest;
use lithify::vfs::{FileSystem as _, OsFs};
use snafu::ResultExt as _;

use crate::error::{Result, VersionSnafu};

/// Arguments of `dump-manifest`.
#[derive(Debug, Args)]
pub(crate) struct DumpManifestArgs {
    /// A database directory (its CURRENT names the MANIFEST) or a
    /// MANIFEST file.
    pub path: PathBuf,
}

/// Runs `dump-manifest`.
pub(crate) fn run(a: DumpManifestArgs) -> Result<()> {
    let path = if OsFs.is_dir(&a.path) {
        let number = manifest::read_current(&OsFs, &a.path).context(VersionSnafu)?;
        a.path.join(files::manifest_file_name(number))
    } else {
        super::refuse_other_format(&a.path, lithify::FileFormat::RecordLog, true)?;
        a.path
    };
    let mut out = String::new();
    let result = manifest::dump(&OsFs, &path, &mut out);
    print!("{out}");
    result.context(VersionSnafu)
}
