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

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lithify_base::Id;
use lithify_blob::BlobFileReader;
use lithify_version::filename::{CURRENT, blob_file_name, manifest_file_name, sst_file_name};
use lithify_version::{BlobFileMetadata, VersionSet, VersionSetOptions};
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

/// Opens the blob file at `path`, recorded as `meta`, after checking what
/// can be checked without reading its records: it exists with the
/// recorded size, its header and footer are ones a writer wrote, and it
/// carries the recorded file number, unique id and value counts. The
/// error says what is wrong (missing, another size, another file's
/// identity, other counts, or the header's or footer's damage with its
/// offset).
pub(crate) fn open_blob_file(
    fs: &dyn FileSystem,
    path: &Path,
    meta: &BlobFileMetadata,
) -> std::result::Result<BlobFileReader, String> {
    let actual = match fs.file_size(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "the blob file is missing, with {} values of {} bytes",
                meta.blob_count, meta.blob_bytes
            ));
        }
        Err(e) => return Err(format!("the size of the blob file cannot be read: {e}")),
        Ok(actual) => actual,
    };
    if actual != meta.file_size {
        return Err(format!(
            "the blob file has {actual} bytes, the MANIFEST records {} (it is {} at offset {})",
            meta.file_size,
            if actual < meta.file_size {
                "cut short"
            } else {
                "extended"
            },
            actual.min(meta.file_size)
        ));
    }
    let reader = fs
        .open(path)
        .map_err(|e| e.to_string())
        .and_then(|f| BlobFileReader::open(f, path).map_err(|e| e.to_string()))?;
    let header = reader.header();
    if header.file_number != meta.number {
        return Err(format!(
            "the blob file's header names file {} (a file copied in under another name)",
            header.file_number
        ));
    }
    if let Some(id) = meta.unique_id
        && header.unique_id() != id
    {
        return Err(format!(
            "the blob file's identity {} is not the {id} the MANIFEST records (a file from another database)",
            header.unique_id()
        ));
    }
    let footer = reader.footer();
    if (footer.blob_count, footer.blob_bytes) != (meta.blob_count, meta.blob_bytes) {
        return Err(format!(
            "the blob file's footer counts {} values of {} bytes, the MANIFEST {} of {}",
            footer.blob_count, footer.blob_bytes, meta.blob_count, meta.blob_bytes
        ));
    }
    Ok(reader)
}

/// [`open_blob_file`], then every record of the file read back and
/// checked, and its whole-file checksum against the recorded one.
/// Returns the values checked, or what is wrong.
fn verify_blob_file(
    fs: &dyn FileSystem,
    path: &Path,
    meta: &BlobFileMetadata,
) -> std::result::Result<u64, String> {
    let summary = open_blob_file(fs, path, meta)?
        .verify()
        .map_err(|e| e.to_string())?;
    match meta.file_checksum {
        Some(recorded) if recorded != summary.file_checksum => Err(format!(
            "the whole-file checksum of its {} bytes is {:016x}, the MANIFEST records {recorded:016x}",
            meta.file_size, summary.file_checksum
        )),
        _ => Ok(summary.blob_count),
    }
}

/// One problem [`verify_sst_files`] found: the file it is in and what is
/// wrong, with the byte offset where there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FileProblem {
    /// The file.
    pub path: PathBuf,
    /// What is wrong.
    pub message: String,
}

/// What [`verify_sst_files`] checked and found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SstFilesCheck {
    /// The MANIFEST `CURRENT` names, when it could be replayed.
    pub manifest: Option<PathBuf>,
    /// Live SSTs checked.
    pub files: u64,
    /// Data blocks read from them.
    pub data_blocks: u64,
    /// Entries in those blocks.
    pub entries: u64,
    /// Live blob files checked.
    pub blob_files: u64,
    /// Values read back from them.
    pub blob_values: u64,
    /// Every problem, in the order found.
    pub problems: Vec<FileProblem>,
}

/// Checks the MANIFEST and every live SST of the database in `dir`,
/// reading only (RocksDB's `ldb checkconsistency` with `sst_dump
/// --command=verify` of each file):
///
/// 1. `CURRENT` and the MANIFEST it names replay into a state (a torn last
///    record is a problem: an open would drop it);
/// 2. every SST that state lists exists with its recorded size, opens, and
///    every data block reads back with a matching checksum, decodes and
///    holds keys in order, with the counts its properties record
///    ([`SstReader::verify`](lithify_sstable::SstReader::verify));
/// 3. an intact file carries the unique id and whole-file checksum the
///    MANIFEST records ([`check_sst_identity`], [`check_sst_checksum`]);
/// 4. every blob file the state lists (key-value separation) exists with
///    its recorded size, carries the file number, unique id, value counts
///    and whole-file checksum recorded, and every record reads back with
///    matching checksums.
///
/// Every problem names its file (and the byte offset where there is
/// one); the walk goes on past each.
///
/// ```
/// use std::sync::Arc;
/// use lithify_engine::{Db, Options, verify_sst_files};
/// # let dir = tempfile::tempdir().unwrap();
/// let db = Db::open(dir.path(), Options::default()).unwrap();
/// db.put(b"k", b"v").unwrap();
/// db.flush().unwrap();
/// db.close().unwrap();
/// let check = verify_sst_files(Arc::new(lithify_vfs::OsFs), dir.path());
/// assert!(check.problems.is_empty());
/// assert_eq!((check.files, check.entries), (1, 1));
/// ```
pub fn verify_sst_files(fs: Arc<dyn FileSystem>, dir: &Path) -> SstFilesCheck {
    verify_sst_files_with(fs, dir, &mut |_| {})
}

/// How far [`verify_sst_files_with`] has got: reported once the MANIFEST
/// is replayed (nothing done yet) and after each file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifyProgress {
    /// Live SSTs and blob files checked so far.
    pub files_done: u64,
    /// Live SSTs and blob files the MANIFEST lists.
    pub files_total: u64,
    /// Their recorded bytes checked so far.
    pub bytes_done: u64,
    /// Their recorded bytes in all.
    pub bytes_total: u64,
}

/// [`verify_sst_files`], calling `progress` as it goes (a tool's progress
/// bar).
///
/// ```
/// use std::sync::Arc;
/// use lithify_engine::{Db, Options, verify_sst_files_with};
/// # let dir = tempfile::tempdir().unwrap();
/// let db = Db::open(dir.path(), Options::default()).unwrap();
/// db.put(b"k", b"v").unwrap();
/// db.flush().unwrap();
/// db.close().unwrap();
/// let mut seen = Vec::new();
/// let check = verify_sst_files_with(Arc::new(lithify_vfs::OsFs), dir.path(), &mut |p| {
///     seen.push((p.files_done, p.files_total))
/// });
/// assert!(check.problems.is_empty());
/// assert_eq!(seen, [(0, 1), (1, 1)]);
/// ```
pub fn verify_sst_files_with(
    fs: Arc<dyn FileSystem>,
    dir: &Path,
    progress: &mut dyn FnMut(&VerifyProgress),
) -> SstFilesCheck {
    let mut check = SstFilesCheck::default();
    let mut problem = |path: &Path, message: String| {
        check.problems.push(FileProblem {
            path: path.to_path_buf(),
            message,
        })
    };
    let versions = match VersionSet::recover(Arc::clone(&fs), dir, VersionSetOptions::default()) {
        Ok(v) => v,
        Err(e) => {
            problem(&dir.join(CURRENT), e.to_string());
            return check;
        }
    };
    let manifest = dir.join(manifest_file_name(versions.manifest_number()));
    if let Some(t) = versions.recovered_torn_tail() {
        problem(
            &manifest,
            format!(
                "the last record, at offset {} ({} bytes), is cut short ({}); an open drops it",
                t.offset, t.len, t.reason
            ),
        );
    }
    let (mut files, mut data_blocks, mut entries) = (0, 0, 0);
    let (mut blob_files, mut blob_values) = (0, 0);
    let mut done = VerifyProgress::default();
    for info in versions.tables() {
        if let Some(version) = versions.current(info.id) {
            for (_, f) in version.all_files() {
                done.files_total += 1;
                done.bytes_total += f.size;
            }
            for blob in version.blob_files().values() {
                done.files_total += 1;
                done.bytes_total += blob.meta.file_size;
            }
        }
    }
    progress(&done);
    for info in versions.tables() {
        let Some(version) = versions.current(info.id) else {
            continue;
        };
        for (level, f) in version.all_files() {
            if files + blob_files > 0 {
                progress(&done);
            }
            files += 1;
            done.files_done += 1;
            done.bytes_done += f.size;
            let path = dir.join(sst_file_name(f.number));
            match fs.file_size(&path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    problem(
                        &path,
                        format!(
                            "missing; {} lists it in table {:?} at L{level} with {} bytes",
                            manifest.display(),
                            info.name,
                            f.size
                        ),
                    );
                    continue;
                }
                Err(e) => {
                    problem(&path, format!("cannot read its size: {e}"));
                    continue;
                }
                Ok(_) => {}
            }
            let sst = match open(&*fs, &path).and_then(|file| {
                lithify_sstable::open_recorded(file, &path, f.size).context(SstSnafu)
            }) {
                Ok(sst) => sst,
                Err(e) => {
                    problem(&path, e.to_string());
                    continue;
                }
            };
            let blocks = sst.verify();
            data_blocks += blocks.data_blocks;
            entries += blocks.entries;
            if !blocks.damage.is_empty() {
                for d in blocks.damage {
                    problem(&path, format!("at offset {}: {}", d.offset, d.message));
                }
                continue;
            }
            // Intact: is it the file the MANIFEST recorded, byte for byte?
            if let Err(e) = check_sst_identity(&*fs, &path, f.size, f.unique_id)
                .and_then(|()| check_sst_checksum(&*fs, &path, f.size, f.file_checksum))
            {
                problem(&path, e.to_string());
            }
        }
        for blob in version.blob_files().values() {
            if files + blob_files > 0 {
                progress(&done);
            }
            blob_files += 1;
            done.files_done += 1;
            done.bytes_done += blob.meta.file_size;
            let path = dir.join(blob_file_name(blob.meta.number));
            match verify_blob_file(&*fs, &path, &blob.meta) {
                Ok(values) => blob_values += values,
                Err(message) => problem(
                    &path,
                    format!(
                        "{message} ({} lists it in table {:?})",
                        manifest.display(),
                        info.name
                    ),
                ),
            }
        }
    }
    if files + blob_files > 0 {
        progress(&done);
    }
    check.manifest = Some(manifest);
    check.files = files;
    check.data_blocks = data_blocks;
    check.entries = entries;
    check.blob_files = blob_files;
    check.blob_values = blob_values;
    check
}
