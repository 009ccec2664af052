//! Where recovery keeps the bytes it drops: the `lost/` directory inside
//! the partition directory.
//!
//! [`Log::open`](crate::Log::open) may truncate a segment only above the
//! recovery point (bytes never flushed); before it does, it copies the
//! bytes it is about to drop to `<partition dir>/lost/`, so a truncation
//! never destroys evidence. The name is chosen so that Kafka never
//! misreads what is kept:
//!
//! * Kafka's `LogLoader` lists a partition directory with
//!   `listFiles(File::isFile)` (its three passes over `.deleted`,
//!   `.cleaned`, `.swap` files and `loadSegmentFiles`), so a
//!   **subdirectory** of the partition directory is never taken for a
//!   segment, an index or a swap leftover, whatever its files are named;
//!   our own [`recovery`](crate::recovery) skips directories too;
//! * a directory in the *data* directory would not do: Kafka's
//!   `LogManager.loadLogs` parses every subdirectory of a data directory as
//!   a `<topic>-<partition>` log directory, and a broker does not start
//!   with any other name there ("'lost+found' is not in the form of
//!   topic-partition");
//! * `lost` does not start with a digit, so no code that reads an offset
//!   from the text before the first `.` of a name takes it for a segment;
//! * when Kafka deletes the partition it deletes the directory with
//!   everything in it, `lost/` included.
//!
//! Each kept range is one file `lost/<segment file name>.<byte offset>`
//! (the byte offset in the segment where the dropped range began), with
//! `-<n>` appended if that name is taken (a second truncation at the same
//! place after a later crash). The file and `lost/` are synced before the
//! segment is truncated, so a power cut in between loses nothing.

use std::io;
use std::path::{Path, PathBuf};

use lithify_vfs::{FileSystem, RandomAccessFile};
use snafu::ResultExt as _;

use crate::error::{IoSnafu, Result};

/// The directory, inside a partition directory, that holds dropped bytes.
pub const LOST_DIR: &str = "lost";

/// Bytes copied at a time.
const COPY_CHUNK: u64 = 1 << 20;

/// `<dir>/lost/`, created (and made durable in `dir`) if missing.
fn lost_dir(fs: &dyn FileSystem, dir: &Path) -> Result<PathBuf> {
    let lost = dir.join(LOST_DIR);
    if !fs.is_dir(&lost) {
        fs.create_dir_all(&lost).context(IoSnafu {
            action: "create",
            path: &lost,
        })?;
        fs.sync_dir(dir).context(IoSnafu {
            action: "sync",
            path: dir,
        })?;
    }
    Ok(lost)
}

/// Moves the file `name` of the partition directory `dir` into
/// `<dir>/lost/` (as `<name>`, or `<name>-<n>` if that is taken), syncing
/// both directories; returns where it went.
pub(crate) fn keep_file(fs: &dyn FileSystem, dir: &Path, name: &str) -> Result<PathBuf> {
    let lost = lost_dir(fs, dir)?;
    let mut attempt = 0u32;
    let target = loop {
        let candidate = if attempt == 0 {
            lost.join(name)
        } else {
            lost.join(format!("{name}-{attempt}"))
        };
        if !fs.exists(&candidate) {
            break candidate;
        }
        if attempt >= 10_000 {
            // Never over what lost/ keeps.
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "10000 files of this name are kept already",
            ))
            .context(IoSnafu {
                action: "keep in",
                path: &lost,
            });
        }
        attempt += 1;
    };
    let from = dir.join(name);
    fs.rename(&from, &target).context(IoSnafu {
        action: "move into lost/",
        path: &from,
    })?;
    for d in [&lost, &dir.to_path_buf()] {
        fs.sync_dir(d).context(IoSnafu {
            action: "sync",
            path: d,
        })?;
    }
    Ok(target)
}

/// Copies bytes `[from, to)` of the segment file `src` (read through
/// `reader`) into a new file in `<dir>/lost/`, syncs it and the directory,
/// and returns its path.
pub(crate) fn keep_range(
    fs: &dyn FileSystem,
    dir: &Path,
    src: &Path,
    reader: &dyn RandomAccessFile,
    from: u64,
    to: u64,
) -> Result<PathBuf> {
    let lost = lost_dir(fs, dir)?;
    let name = src
        .file_name()
        .map_or_else(|| "segment".into(), |n| n.to_string_lossy().into_owned());
    let mut attempt = 0u32;
    let (path, mut out) = loop {
        let candidate = if attempt == 0 {
            lost.join(format!("{name}.{from}"))
        } else {
            lost.join(format!("{name}.{from}-{attempt}"))
        };
        match fs.create_new(&candidate) {
            Ok(f) => break (candidate, f),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 10_000 => {
                attempt += 1;
            }
            Err(e) => {
                return Err(e).context(IoSnafu {
                    action: "create",
                    path: candidate,
                });
            }
        }
    };
    let mut at = from;
    while at < to {
        let len = (to - at).min(COPY_CHUNK) as usize;
        let bytes = reader.read_vec(at, len).context(IoSnafu {
            action: "read",
            path: src,
        })?;
        out.append(&bytes).context(IoSnafu {
            action: "write",
            path: &path,
        })?;
        at += len as u64;
    }
    out.sync_data().context(IoSnafu {
        action: "sync",
        path: &path,
    })?;
    fs.sync_dir(&lost).context(IoSnafu {
        action: "sync",
        path: &lost,
    })?;
    Ok(path)
}
