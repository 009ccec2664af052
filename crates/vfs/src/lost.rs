//! The `lost/` quarantine: where recovery keeps what it drops, instead of
//! deleting it.
//!
//! Both the engine (a WAL or MANIFEST it stopped reading, an SST no version
//! names) and the Kafka log (a segment tail above the recovery point, a
//! leftover it cannot place) keep the evidence of every drop in a `lost/`
//! directory inside the directory they own: the database directory, or the
//! partition directory. One rule names what is kept there:
//!
//! * a whole file keeps its name: `lost/<name>` ([`keep_file`]);
//! * a byte range copied out of a file is named after the file and the
//!   offset of its first byte: `lost/<name>.<offset>` ([`keep_range`]);
//! * a name already taken (a second drop of the same file after a later
//!   crash) gets `-1`, `-2`, … appended, so nothing kept is ever
//!   overwritten. A dash, not a dot: `<name>.1` would read as a range kept
//!   from byte 1.
//!
//! What is kept is durable before the call returns (a copied range is
//! synced; `lost/` is synced after the new entry, and its parent after a
//! move or after `lost/` is created), so a power cut right after it loses
//! nothing, and the caller may then truncate or forget the original. An
//! error names the step and the path it failed on.
//!
//! ```
//! use std::path::Path;
//! use lithify_vfs::{FileSystem, MemFs, lost};
//!
//! let fs = MemFs::new();
//! let dir = Path::new("/db");
//! fs.create_dir_all(dir).unwrap();
//! for _ in 0..2 {
//!     fs.create(&dir.join("000007.log")).unwrap().sync_all().unwrap();
//!     lost::keep_file(&fs, dir, "000007.log").unwrap();
//! }
//! assert_eq!(lost::kept_files(&fs, dir), ["000007.log", "000007.log-1"]);
//! ```

use std::io;
use std::path::{Path, PathBuf};

use crate::{FileSystem, RandomAccessFile};

/// The directory, inside the directory recovery works on, that holds what
/// it dropped.
pub const LOST_DIR: &str = "lost";

/// How many `-<n>` suffixes are tried before giving up.
const MAX_SUFFIX: u32 = 10_000;

/// Bytes copied at a time by [`keep_range`].
const COPY_CHUNK: u64 = 1 << 20;

/// `err` with the step and the path it failed on in its message (its kind
/// kept).
fn at(action: &str, path: &Path, err: io::Error) -> io::Error {
    io::Error::new(err.kind(), format!("{action} {}: {err}", path.display()))
}

/// `<dir>/lost/`, created (and made durable in `dir`) if missing.
fn lost_dir(fs: &dyn FileSystem, dir: &Path) -> io::Result<PathBuf> {
    let lost = dir.join(LOST_DIR);
    if !fs.is_dir(&lost) {
        fs.create_dir_all(&lost)
            .map_err(|e| at("create", &lost, e))?;
        fs.sync_dir(dir).map_err(|e| at("sync", dir, e))?;
    }
    Ok(lost)
}

/// The `attempt`th candidate name for `base` in `lost`: `base`, then
/// `base-1`, `base-2`, …
fn candidate(lost: &Path, base: &str, attempt: u32) -> PathBuf {
    if attempt == 0 {
        lost.join(base)
    } else {
        lost.join(format!("{base}-{attempt}"))
    }
}

fn all_taken(lost: &Path, base: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!(
            "{}: {MAX_SUFFIX} files named {base} are kept already",
            lost.display()
        ),
    )
}

/// Moves the file `name` of `dir` into `<dir>/lost/` under the first free
/// name of the rule (see the [module docs](self)), syncing both
/// directories; returns where it went.
pub fn keep_file(fs: &dyn FileSystem, dir: &Path, name: &str) -> io::Result<PathBuf> {
    let lost = lost_dir(fs, dir)?;
    let mut attempt = 0;
    let target = loop {
        let path = candidate(&lost, name, attempt);
        if !fs.exists(&path) {
            break path;
        }
        if attempt >= MAX_SUFFIX {
            return Err(all_taken(&lost, name));
        }
        attempt += 1;
    };
    let from = dir.join(name);
    fs.rename(&from, &target)
        .map_err(|e| at("move into lost/", &from, e))?;
    fs.sync_dir(&lost).map_err(|e| at("sync", &lost, e))?;
    fs.sync_dir(dir).map_err(|e| at("sync", dir, e))?;
    Ok(target)
}

/// Copies bytes `[from, to)` of the file `src` of `dir` (read through
/// `reader`) into a new file `<dir>/lost/<src name>.<from>` (or the first
/// free name after it), syncs it and `lost/`, and returns its path. `src`
/// itself is left as it is.
pub fn keep_range(
    fs: &dyn FileSystem,
    dir: &Path,
    src: &Path,
    reader: &dyn RandomAccessFile,
    from: u64,
    to: u64,
) -> io::Result<PathBuf> {
    let lost = lost_dir(fs, dir)?;
    let name = src
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let base = format!("{name}.{from}");
    let mut attempt = 0;
    let (path, mut out) = loop {
        let path = candidate(&lost, &base, attempt);
        match fs.create_new(&path) {
            Ok(f) => break (path, f),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                if attempt >= MAX_SUFFIX {
                    return Err(all_taken(&lost, &base));
                }
                attempt += 1;
            }
            Err(e) => return Err(at("create", &path, e)),
        }
    };
    let mut offset = from;
    while offset < to {
        let len = (to - offset).min(COPY_CHUNK) as usize;
        let bytes = reader
            .read_vec(offset, len)
            .map_err(|e| at("read", src, e))?;
        out.append(&bytes).map_err(|e| at("write", &path, e))?;
        offset += len as u64;
    }
    out.sync_data().map_err(|e| at("sync", &path, e))?;
    fs.sync_dir(&lost).map_err(|e| at("sync", &lost, e))?;
    Ok(path)
}

/// The names of the files kept in `<dir>/lost/`, sorted; empty when there
/// is no `lost/`.
pub fn kept_files(fs: &dyn FileSystem, dir: &Path) -> Vec<String> {
    let mut names = fs.list_dir(&dir.join(LOST_DIR)).unwrap_or_default();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemFs, read_file};

    fn write(fs: &MemFs, path: &Path, data: &[u8]) {
        let mut f = fs.create(path).unwrap();
        f.append(data).unwrap();
        f.sync_all().unwrap();
    }

    #[test]
    fn kept_files_never_overwrite_earlier_ones() {
        let fs = MemFs::new();
        let dir = Path::new("/db");
        fs.create_dir_all(dir).unwrap();
        fs.sync_dir(Path::new("/")).unwrap();
        for i in 0..3u8 {
            write(&fs, &dir.join("000007.log"), &[i]);
            let kept = keep_file(&fs, dir, "000007.log").unwrap();
            assert_eq!(read_file(&fs, &kept).unwrap(), [i]);
        }
        assert_eq!(
            kept_files(&fs, dir),
            ["000007.log", "000007.log-1", "000007.log-2"]
        );
        assert!(!fs.exists(&dir.join("000007.log")));
        // Durable: the moves survive a power cut.
        fs.crash();
        assert_eq!(kept_files(&fs, dir).len(), 3);
    }

    #[test]
    fn ranges_are_named_by_offset_and_survive_a_power_cut() {
        let fs = MemFs::new();
        let dir = Path::new("/t-0");
        fs.create_dir_all(dir).unwrap();
        fs.sync_dir(Path::new("/")).unwrap();
        let src = dir.join("00000000000000000000.log");
        write(&fs, &src, b"0123456789");
        fs.sync_dir(dir).unwrap();
        let reader = fs.open(&src).unwrap();
        let a = keep_range(&fs, dir, &src, &*reader, 4, 10).unwrap();
        let b = keep_range(&fs, dir, &src, &*reader, 4, 6).unwrap();
        assert_eq!(a, dir.join("lost/00000000000000000000.log.4"));
        assert_eq!(b, dir.join("lost/00000000000000000000.log.4-1"));
        fs.crash();
        assert_eq!(read_file(&fs, &a).unwrap(), b"456789");
        assert_eq!(read_file(&fs, &b).unwrap(), b"45");
        assert_eq!(read_file(&fs, &src).unwrap(), b"0123456789");
    }
}
