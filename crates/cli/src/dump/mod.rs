//! The file dumps: `dump-sst` (as RocksDB's `sst_dump`), `dump-wal` and
//! `dump-manifest` (as `ldb dump_wal` / `ldb manifest_dump`), `dump-blob`
//! (as `blob_dump`). Each reads
//! one file without opening the database, prints what it holds, checks
//! every checksum, and fails naming the file and byte offset when it finds
//! damage.

pub(crate) mod blob;
pub(crate) mod manifest;
pub(crate) mod sst;
pub(crate) mod wal;

use std::path::Path;

use lithify::FileFormat;
use lithify::vfs::{FileSystem as _, OsFs};

use crate::error::{Result, UsageSnafu};

/// Refuses a record log whose name says it is a MANIFEST where a WAL is
/// wanted (`manifest` false), or a WAL where a MANIFEST is.
fn refuse_other_record_log(path: &Path, manifest: bool) -> Result<()> {
    let named = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(lithify::files::parse_file_name);
    let (is, reader) = match named {
        Some(lithify::files::FileKind::Manifest(_)) if !manifest => {
            ("a MANIFEST", "`lithify dump-manifest`")
        }
        Some(lithify::files::FileKind::Log(_)) if manifest => {
            ("a write-ahead log", "`lithify dump-wal`")
        }
        _ => return Ok(()),
    };
    UsageSnafu {
        message: format!("{} is {is}, which {reader} reads", path.display()),
    }
    .fail()
}

/// The command that reads files of `format`.
fn reader_of(format: FileFormat) -> &'static str {
    match format {
        FileFormat::RecordLog => "`lithify dump-wal` (or `dump-manifest` for a MANIFEST)",
        FileFormat::Table => "`lithify dump-sst`",
        FileFormat::Blob => "`lithify dump-blob`",
        FileFormat::KafkaSegment => "`lithify log dump`",
        _ => "no lithify command",
    }
}

/// Refuses `path` when its bytes say it is a known format other than
/// `wanted` (a usage error naming what it looks like and the command that
/// reads it), and a lithify database directory given where Kafka log data
/// is wanted. A file of unknown or damaged format passes: the dump itself
/// reports what is wrong with it, with offsets.
///
/// A WAL and a MANIFEST share the record log's format, so for those the
/// file name decides: `manifest` says which of the two the command reads.
pub(crate) fn refuse_other_format(path: &Path, wanted: FileFormat, manifest: bool) -> Result<()> {
    if OsFs.is_dir(path) {
        if wanted == FileFormat::KafkaSegment && OsFs.exists(&path.join(lithify::files::CURRENT)) {
            return UsageSnafu {
                message: format!(
                    "{} holds a lithify database, not Kafka log data: `lithify dump-manifest`, `dump-wal` and `dump-sst` read its files",
                    path.display()
                ),
            }
            .fail();
        }
        return Ok(());
    }
    let Ok(found) = lithify::identify_file(&OsFs, path) else {
        // Unreadable: the command's own open names the error.
        return Ok(());
    };
    if found == FileFormat::RecordLog && wanted == FileFormat::RecordLog {
        return refuse_other_record_log(path, manifest);
    }
    if found == wanted || matches!(found, FileFormat::Empty | FileFormat::Unknown) {
        return Ok(());
    }
    UsageSnafu {
        message: format!(
            "{} is not {}: it looks like {}, which {} reads",
            path.display(),
            wanted.describe(),
            found.describe(),
            reader_of(found)
        ),
    }
    .fail()
}
