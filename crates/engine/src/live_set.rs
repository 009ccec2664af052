//! What is live, and a consistent set of files to copy: RocksDB's
//! `GetLiveFilesMetaData`, `DisableFileDeletions`/`EnableFileDeletions`
//! and `GetLiveFilesStorageInfo`, the ground of checkpoints and backups.
//!
//! [`Db::live_file_set`](crate::Db::live_file_set) takes the set:
//!
//! 1. File deletions are disabled (until the set is dropped), so nothing
//!    the set names can vanish.
//! 2. If the live WALs hold at least `log_size_for_flush` bytes (0, the
//!    default: always), or writes skipped the WAL, every table's memtable
//!    is flushed first, so the set needs little or no WAL.
//! 3. Under the write leader's lock (no group writes its WAL record and no
//!    ingestion installs files meanwhile), the **MANIFEST cut** — the live
//!    MANIFEST's size, the current version of every table and the smallest
//!    log number any table needs, read at one instant
//!    ([`VersionSet::manifest_cut`](lithify_version::VersionSet::manifest_cut))
//!    — and the **WAL cut**: buffered WAL bytes are handed to the OS, and
//!    the size of every WAL at or above that log number is read, together
//!    with the last sequence number written. Every WAL record up to those
//!    sizes is whole.
//! 4. (Writes made with `disable_wal` after the flush of step 2 are in no
//!    WAL: a copy does not hold them even when their sequence numbers are
//!    below the set's.)
//!
//! A directory holding the tables, the MANIFEST and the WALs up to the
//! sizes in the set, and a `CURRENT` with [`LiveFileSet::current`], opens
//! as the database holding exactly the writes up to
//! [`LiveFileSet::sequence`]: the MANIFEST prefix describes the tables,
//! and replaying the WALs from its log numbers adds the rest.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lithify_base::SeqNo;
use lithify_base::sync::atomic::Ordering;
use lithify_version::TableId;
use lithify_version::filename::{blob_file_name, manifest_file_name, sst_file_name};
use lithify_vfs::FileSystem;
use snafu::ResultExt;

use crate::error::{InvalidArgumentSnafu, IoSnafu, Result, VersionSnafu};
use crate::state::DbInner;
use crate::wal::log_path;

/// How [`Db::live_file_set`](crate::Db::live_file_set) (and checkpoints)
/// take the set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckpointOptions {
    /// Flush every memtable first when the live WALs hold at least this
    /// many bytes; 0 (the default, as RocksDB's) always flushes. Without a
    /// flush the set holds the WALs with the unflushed writes.
    pub log_size_for_flush: u64,
}

lithify_base::options_builder!(CheckpointOptions {
    log_size_for_flush: u64,
});

/// One live SST file (RocksDB's `LiveFileMetaData`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveFileMetaData {
    /// The table (column family) it belongs to.
    pub table: String,
    /// Its file number.
    pub number: u64,
    /// Its path.
    pub path: PathBuf,
    /// Its size in bytes.
    pub size: u64,
    /// Its level.
    pub level: usize,
    /// Its smallest user key.
    pub smallest_key: Vec<u8>,
    /// Its largest user key.
    pub largest_key: Vec<u8>,
    /// The smallest sequence number it holds.
    pub smallest_seqno: SeqNo,
    /// The largest sequence number it holds.
    pub largest_seqno: SeqNo,
    /// Its entries.
    pub num_entries: u64,
    /// Its point deletions.
    pub num_deletions: u64,
    /// Its unique id as the MANIFEST records it (`None` for files added
    /// before ids were recorded); see [`check_sst_identity`](crate::check_sst_identity).
    pub unique_id: Option<lithify_base::Id>,
    /// The xxh3-64 of the whole file as the MANIFEST records it (`None` for
    /// files added before checksums were recorded); see
    /// [`check_sst_checksum`](crate::check_sst_checksum).
    pub file_checksum: Option<u64>,
}

/// One live blob file (RocksDB's `BlobMetaData`, part of its
/// `ColumnFamilyMetaData`): the values key-value separation keeps out of
/// a table's SSTs, and how many of them are garbage.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LiveBlobFileMetaData {
    /// The table (column family) it belongs to.
    pub table: String,
    /// Its file number (`NNNNNN.blob`).
    pub number: u64,
    /// Its path.
    pub path: PathBuf,
    /// Its size in bytes.
    pub size: u64,
    /// Values it holds.
    pub blob_count: u64,
    /// Their stored bytes (after compression).
    pub blob_bytes: u64,
    /// Values no SST refers to any more.
    pub garbage_count: u64,
    /// Their stored bytes.
    pub garbage_bytes: u64,
    /// Its unique id as the MANIFEST records it.
    pub unique_id: Option<lithify_base::Id>,
    /// The xxh3-64 of the whole file as the MANIFEST records it.
    pub file_checksum: Option<u64>,
}

/// What a file of a [`LiveFileSet`] is.
///
/// Exhaustive on purpose: checkpoints and backups copy every kind of live
/// file, so a new kind must stop their build until they do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LiveFileKind {
    /// An SST: immutable, may be hard-linked or shared.
    Sst,
    /// A blob file (separated values): immutable, may be hard-linked or
    /// shared like an SST.
    Blob,
    /// The MANIFEST: copy its first `size` bytes.
    Manifest,
    /// A write-ahead log: copy its first `size` bytes.
    Wal,
}

/// One file of a [`LiveFileSet`] (RocksDB's `LiveFileStorageInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveFile {
    /// Its name in the database directory (and in any copy).
    pub name: String,
    /// Its path in the database directory.
    pub path: PathBuf,
    /// The bytes to copy (a prefix for the MANIFEST and WALs, which may
    /// grow after the cut).
    pub size: u64,
    /// What it is.
    pub kind: LiveFileKind,
}

/// A consistent set of files: the live files of every table and the WALs
/// still needed, pinned until dropped.
/// File deletions stay disabled while it exists.
pub struct LiveFileSet<'db> {
    files: Vec<LiveFile>,
    current: Vec<u8>,
    sequence: SeqNo,
    flushed: bool,
    inner: &'db DbInner,
}

impl std::fmt::Debug for LiveFileSet<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveFileSet")
            .field("files", &self.files)
            .field("sequence", &self.sequence)
            .field("flushed", &self.flushed)
            .finish_non_exhaustive()
    }
}

impl LiveFileSet<'_> {
    /// The tables, the MANIFEST and the WALs, in that order.
    pub fn files(&self) -> &[LiveFile] {
        &self.files
    }

    /// What `CURRENT` must hold in a copy (write it last).
    pub fn current(&self) -> &[u8] {
        &self.current
    }

    /// A copy holds exactly the writes up to this sequence number.
    pub fn sequence(&self) -> SeqNo {
        self.sequence
    }

    /// Whether the memtables were flushed first.
    pub fn flushed(&self) -> bool {
        self.flushed
    }

    /// The database's file system (where the files are read).
    pub fn file_system(&self) -> &Arc<dyn FileSystem> {
        &self.inner.fs
    }
}

impl Drop for LiveFileSet<'_> {
    fn drop(&mut self) {
        crate::purge::enable_file_deletions(self.inner);
    }
}

/// Every table's name, by id.
fn table_names(db: &DbInner) -> std::collections::BTreeMap<TableId, String> {
    db.versions
        .tables()
        .into_iter()
        .map(|t| (t.id, t.name))
        .collect()
}

/// Every live SST file of every table, by table, level and key.
pub(crate) fn live_files(db: &DbInner) -> Vec<LiveFileMetaData> {
    let names = table_names(db);
    let mut out = Vec::new();
    for (id, version) in db.versions.current_all() {
        let table = names.get(&id).cloned().unwrap_or_default();
        for level in 0..version.num_levels() {
            for f in version.files(level) {
                out.push(LiveFileMetaData {
                    table: table.clone(),
                    number: f.number,
                    path: db.dir.join(sst_file_name(f.number)),
                    size: f.size,
                    level,
                    smallest_key: f.smallest_user_key().to_vec(),
                    largest_key: f.largest_user_key().to_vec(),
                    smallest_seqno: f.smallest_seqno,
                    largest_seqno: f.largest_seqno,
                    num_entries: f.num_entries,
                    num_deletions: f.num_deletions,
                    unique_id: f.unique_id,
                    file_checksum: f.file_checksum,
                });
            }
        }
    }
    out
}

/// Every live blob file of every table, by table and number.
pub(crate) fn live_blob_files(db: &DbInner) -> Vec<LiveBlobFileMetaData> {
    let names = table_names(db);
    let mut out = Vec::new();
    for (id, version) in db.versions.current_all() {
        let table = names.get(&id).cloned().unwrap_or_default();
        for blob in version.blob_files().values() {
            let meta = &blob.meta;
            out.push(LiveBlobFileMetaData {
                table: table.clone(),
                number: meta.number,
                path: db
                    .dir
                    .join(lithify_version::filename::blob_file_name(meta.number)),
                size: meta.file_size,
                blob_count: meta.blob_count,
                blob_bytes: meta.blob_bytes,
                garbage_count: blob.garbage_count,
                garbage_bytes: blob.garbage_bytes,
                unique_id: meta.unique_id,
                file_checksum: meta.file_checksum,
            });
        }
    }
    out
}

/// See the [module documentation](db).
pub(crate) fn live_file_set<'a>(
    db: &'a DbInner,
    options: &CheckpointOptions,
) -> Result<LiveFileSet<'a>> {
    if !db.opened_read_only {
        db.check_writable()?;
    }
    crate::purge::disable_file_deletions(db);
    // From here on, dropping the set enables deletions again.
    let mut set = LiveFileSet {
        files: Vec::new(),
        current: Vec::new(),
        sequence: 0,
        flushed: false,
        inner: db,
    };
    let (cut, wals, sequence) = if db.opened_read_only {
        read_only_cuts(db)?
    } else {
        let wal_bytes = db.leader.lock().wal_size().0;
        if wal_bytes >= options.log_size_for_flush || db.unpersisted.load(Ordering::Acquire) {
            flush_all_tables(db)?;
            set.flushed = true;
        }
        cuts(db)?
    };
    set.sequence = sequence;
    for version in cut.versions.values() {
        for level in 0..version.num_levels() {
            for f in version.files(level) {
                let name = sst_file_name(f.number);
                set.files.push(LiveFile {
                    path: db.dir.join(&name),
                    name,
                    size: f.size,
                    kind: LiveFileKind::Sst,
                });
            }
        }
        for blob in version.blob_files().values() {
            let name = blob_file_name(blob.meta.number);
            set.files.push(LiveFile {
                path: db.dir.join(&name),
                name,
                size: blob.meta.file_size,
                kind: LiveFileKind::Blob,
            });
        }
    }
    let manifest = manifest_file_name(cut.manifest_number);
    set.files.push(LiveFile {
        path: db.dir.join(&manifest),
        name: manifest.clone(),
        size: cut.manifest_size,
        kind: LiveFileKind::Manifest,
    });
    set.current = format!("{manifest}\n").into_bytes();
    for (number, size) in wals {
        let path = log_path(&db.dir, number);
        let name = path
            .file_name()
            .expect("a WAL path names a file")
            .to_string_lossy()
            .into_owned();
        set.files.push(LiveFile {
            name,
            path,
            size,
            kind: LiveFileKind::Wal,
        });
    }
    Ok(set)
}

/// The cuts of a read-only open (RocksDB makes checkpoints of those
/// too): nothing is flushed or written, so the set is what the open
/// read — the MANIFEST's replayed records, and every WAL the replay
/// read, whole as it was then. A copy replays them as this open did.
fn read_only_cuts(db: &DbInner) -> Result<Cuts> {
    let cut = db.versions.recovered_cut().ok_or_else(|| {
        InvalidArgumentSnafu {
            message: "the MANIFEST this read-only open read is not known".to_owned(),
        }
        .build()
    })?;
    let wals = db
        .replayed_wal_sizes
        .iter()
        .copied()
        .filter(|&(n, _)| n >= cut.min_log_number)
        .collect();
    Ok((cut, wals, db.visible()))
}

/// Flushes every table's memtable and waits for the flushes.
fn flush_all_tables(db: &DbInner) -> Result<()> {
    let ids: Vec<TableId> = db.lock_state().table_ids();
    for id in ids {
        crate::flush::flush_table(db, id)?;
    }
    Ok(())
}

/// The MANIFEST cut and the WAL cut, both under the write leader's lock
/// (no group, and no ingestion, changes either meanwhile): the
/// MANIFEST's state, the (number, size) of every WAL at or above its
/// smallest log number, and the last sequence number those hold.
fn cuts(db: &DbInner) -> Result<Cuts> {
    let mut leader = db.leader.lock();
    leader.flush()?;
    let cut = match db.versions.manifest_cut() {
        Some(cut) => cut,
        None => {
            // No MANIFEST open for writing yet: start one.
            db.versions.roll_manifest().context(VersionSnafu)?;
            db.versions.manifest_cut().ok_or_else(|| {
                InvalidArgumentSnafu {
                    message: "the MANIFEST is not writable".to_owned(),
                }
                .build()
            })?
        }
    };
    let sequence = leader.last_allocated;
    let numbers: Vec<u64> = db
        .lock_state()
        .live_logs()
        .range(cut.min_log_number..)
        .copied()
        .collect();
    let mut wals = Vec::with_capacity(numbers.len());
    for number in numbers {
        let path = log_path(&db.dir, number);
        // Deletions are disabled and no purge is running: a live WAL
        // that is missing is damage, not a race.
        let size = db.fs.file_size(&path).context(IoSnafu {
            op: "reading the size of",
            path,
        })?;
        // A WAL this process writes is copied up to its last record (it
        // was flushed above), not with its preallocated space.
        let size = leader.wal_len(number).map_or(size, |len| len.min(size));
        wals.push((number, size));
    }
    Ok((cut, wals, sequence))
}

/// The MANIFEST cut, the WALs to copy (number, size) and the last
/// sequence number they hold.
type Cuts = (lithify_version::ManifestCut, Vec<(u64, u64)>, SeqNo);

/// Copies the first `len` bytes of `from` (on `src_fs`) into the new file
/// `to` (on `dst_fs`), syncs it, and feeds every byte to `inspect` (a
/// checksum); returns `len`. Fails if `from` is shorter than `len`.
pub fn copy_file_prefix(
    src_fs: &dyn FileSystem,
    from: &Path,
    dst_fs: &dyn FileSystem,
    to: &Path,
    len: u64,
    mut inspect: impl FnMut(&[u8]),
) -> Result<u64> {
    const CHUNK: u64 = 1 << 20;
    let src = src_fs.open(from).context(IoSnafu {
        op: "opening",
        path: from.to_path_buf(),
    })?;
    let mut dst = dst_fs.create_new(to).context(IoSnafu {
        op: "creating",
        path: to.to_path_buf(),
    })?;
    let mut offset = 0;
    while offset < len {
        let n = CHUNK.min(len - offset) as usize;
        let bytes = src.read_vec(offset, n).context(IoSnafu {
            op: "reading",
            path: from.to_path_buf(),
        })?;
        inspect(&bytes);
        dst.append(&bytes).context(IoSnafu {
            op: "writing",
            path: to.to_path_buf(),
        })?;
        offset += n as u64;
    }
    dst.sync_all().context(IoSnafu {
        op: "syncing",
        path: to.to_path_buf(),
    })?;
    Ok(len)
}
