//! Live files, file-deletion pinning and checkpoints (RocksDB's
//! `GetLiveFilesMetaData`, `DisableFileDeletions`/`EnableFileDeletions` and
//! `Checkpoint::CreateCheckpoint`).
//!
//! A checkpoint is an openable copy of the database in a new directory:
//!
//! 1. File deletions are disabled, so nothing the copy needs can vanish.
//! 2. If the live WALs hold at least `log_size_for_flush` bytes (0, the
//!    default: always), or writes skipped the WAL, every table's memtable
//!    is flushed first, so the copy needs little or no WAL.
//! 3. The **MANIFEST cut**: the live MANIFEST's size, the current version
//!    of every table and the smallest log number any table needs, read at
//!    one instant ([`VersionSet::manifest_cut`]).
//! 4. The **WAL cut**, under the write leader's lock (no group is writing
//!    its WAL record meanwhile): buffered WAL bytes are handed to the OS,
//!    and the size of every WAL at or above that log number is read,
//!    together with the last sequence number written. Every WAL record up
//!    to those sizes is whole.
//! 5. Table files are hard-linked (copied when the file system has no
//!    links or the copy is on another device; any other link error fails
//!    the checkpoint); the MANIFEST and the WALs are copied up to
//!    their cut sizes and synced; the directory is synced; `CURRENT` is
//!    written last (atomically). Opening the copy replays the MANIFEST and
//!    the copied WALs: it holds exactly the writes up to the returned
//!    sequence number.
//! 6. File deletions are enabled again (whatever happened).
//!
//! The destination must not exist. A crash or error before `CURRENT` is
//! written leaves a directory that open refuses ("the directory holds a
//! database's files" with no `CURRENT`); delete it and try again. The
//! source is never changed by a checkpoint beyond the flush of step 2.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use lithify_base::SeqNo;
use lithify_base::sync::atomic::Ordering;
use lithify_version::TableId;
use lithify_version::filename::{manifest_file_name, table_file_name};
use snafu::ResultExt;

use crate::batch::WriteBatch;
use crate::db_impl::DbInner;
use crate::error::{InvalidArgumentSnafu, IoSnafu, Result, VersionSnafu};
use crate::options::WriteOptions;
use crate::wal::log_path;

/// How [`Db::create_checkpoint_opt`](crate::Db::create_checkpoint_opt)
/// works.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckpointOptions {
    /// Flush every memtable first when the live WALs hold at least this
    /// many bytes; 0 (the default, as RocksDB's) always flushes. Without a
    /// flush the checkpoint copies the WALs that hold the unflushed writes.
    pub log_size_for_flush: u64,
}

/// What a checkpoint did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckpointInfo {
    /// The checkpoint holds exactly the writes with sequence numbers up to
    /// this one.
    pub sequence: SeqNo,
    /// Whether the memtables were flushed first.
    pub flushed: bool,
    /// Table files hard-linked.
    pub tables_linked: usize,
    /// Table files copied (the file system could not link them).
    pub tables_copied: usize,
    /// WAL files copied.
    pub wals_copied: usize,
    /// Bytes copied (tables that could not be linked, the MANIFEST, WALs).
    pub bytes_copied: u64,
}

/// One live table file (RocksDB's `LiveFileMetaData`).
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
}

/// Re-enables file deletions when dropped (the checkpoint's step 6 on
/// every path).
struct DeletionsDisabled<'a>(&'a DbInner);

impl Drop for DeletionsDisabled<'_> {
    fn drop(&mut self) {
        self.0.enable_file_deletions();
    }
}

impl DbInner {
    /// Every live table file of every table, by table, level and key.
    pub(crate) fn live_files(&self) -> Vec<LiveFileMetaData> {
        let names: std::collections::BTreeMap<TableId, String> = self
            .versions
            .tables()
            .into_iter()
            .map(|t| (t.id, t.name))
            .collect();
        let mut out = Vec::new();
        for (id, version) in self.versions.current_all() {
            let table = names.get(&id).cloned().unwrap_or_default();
            for level in 0..version.num_levels() {
                for f in version.files(level) {
                    out.push(LiveFileMetaData {
                        table: table.clone(),
                        number: f.number,
                        path: self.dir.join(table_file_name(f.number)),
                        size: f.size,
                        level,
                        smallest_key: f.smallest_user_key().to_vec(),
                        largest_key: f.largest_user_key().to_vec(),
                        smallest_seqno: f.smallest_seqno,
                        largest_seqno: f.largest_seqno,
                        num_entries: f.num_entries,
                        num_deletions: f.num_deletions,
                    });
                }
            }
        }
        out
    }

    /// One more reason not to delete obsolete files.
    pub(crate) fn disable_file_deletions(&self) {
        self.deletions_disabled.fetch_add(1, Ordering::AcqRel);
    }

    /// One reason less; at none, the files that became obsolete meanwhile
    /// are deleted. Returns how many reasons remain.
    pub(crate) fn enable_file_deletions(&self) -> usize {
        let previous = self
            .deletions_disabled
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                Some(n.saturating_sub(1))
            })
            .unwrap_or(0);
        let now = previous.saturating_sub(1);
        if now == 0 && previous > 0 {
            self.purge_obsolete_files();
        }
        now
    }

    /// Whether file deletions are disabled.
    pub(crate) fn file_deletions_disabled(&self) -> bool {
        self.deletions_disabled.load(Ordering::Acquire) > 0
    }

    /// See the [module documentation](self).
    pub(crate) fn create_checkpoint(
        &self,
        dest: &Path,
        options: &CheckpointOptions,
    ) -> Result<CheckpointInfo> {
        if self.opened_read_only {
            return InvalidArgumentSnafu {
                message: "a checkpoint needs a read-write open (it flushes and pins files)"
                    .to_owned(),
            }
            .fail();
        }
        if self.fs.exists(dest) {
            return InvalidArgumentSnafu {
                message: format!("checkpoint directory {} already exists", dest.display()),
            }
            .fail();
        }
        self.check_writable()?;
        self.disable_file_deletions();
        let _pinned = DeletionsDisabled(self);
        let mut info = CheckpointInfo::default();

        let wal_bytes = self.leader.lock().wal_size().0;
        if wal_bytes >= options.log_size_for_flush || self.unpersisted.load(Ordering::Acquire) {
            self.flush_all_tables()?;
            info.flushed = true;
        }

        let cut = match self.versions.manifest_cut() {
            Some(cut) => cut,
            None => {
                // No MANIFEST open for writing yet: start one.
                self.versions.roll_manifest().context(VersionSnafu)?;
                self.versions.manifest_cut().ok_or_else(|| {
                    InvalidArgumentSnafu {
                        message: "the MANIFEST is not writable".to_owned(),
                    }
                    .build()
                })?
            }
        };
        let (wals, sequence) = self.wal_cut(cut.min_log_number)?;
        info.sequence = sequence;

        let io = |op: &'static str, path: &Path| IoSnafu {
            op,
            path: path.to_path_buf(),
        };
        lithify_vfs::create_dir_durable(&*self.fs, dest).context(io("creating", dest))?;
        for version in cut.versions.values() {
            for level in 0..version.num_levels() {
                for f in version.files(level) {
                    let name = table_file_name(f.number);
                    let (from, to) = (self.dir.join(&name), dest.join(&name));
                    match self.fs.hard_link(&from, &to) {
                        Ok(()) => info.tables_linked += 1,
                        // No links here, or not across these devices:
                        // copy (RocksDB falls back the same way).
                        Err(e)
                            if matches!(
                                e.kind(),
                                ErrorKind::Unsupported | ErrorKind::CrossesDevices
                            ) =>
                        {
                            info.bytes_copied += self.copy_prefix(&from, &to, f.size)?;
                            info.tables_copied += 1;
                        }
                        Err(source) => {
                            return Err(source).context(IoSnafu {
                                op: "linking",
                                path: to,
                            });
                        }
                    }
                }
            }
        }
        let manifest = manifest_file_name(cut.manifest_number);
        info.bytes_copied += self.copy_prefix(
            &self.dir.join(&manifest),
            &dest.join(&manifest),
            cut.manifest_size,
        )?;
        for (number, size) in &wals {
            let from = log_path(&self.dir, *number);
            let to = dest.join(from.file_name().expect("a WAL path names a file"));
            info.bytes_copied += self.copy_prefix(&from, &to, *size)?;
            info.wals_copied += 1;
        }
        self.fs
            .sync_dir(dest)
            .context(io("syncing directory", dest))?;
        lithify_version::manifest::set_current(&*self.fs, dest, cut.manifest_number)
            .context(VersionSnafu)?;
        tracing::info!(
            target: "lithify::checkpoint",
            dest = %dest.display(),
            sequence = info.sequence,
            tables_linked = info.tables_linked,
            tables_copied = info.tables_copied,
            wals_copied = info.wals_copied,
            bytes_copied = info.bytes_copied,
            "checkpoint created"
        );
        Ok(info)
    }

    /// Flushes every table's memtable and waits for the flushes.
    fn flush_all_tables(&self) -> Result<()> {
        let ids: Vec<TableId> = self.lock_state().tables.keys().copied().collect();
        for id in ids {
            self.write_batch(WriteBatch::new(), &WriteOptions::default(), Some(id))?;
            self.wait_for_flush(id)?;
        }
        Ok(())
    }

    /// The WAL cut: (number, size) of every WAL at or above `min_log`, and
    /// the last sequence number they hold.
    fn wal_cut(&self, min_log: u64) -> Result<(Vec<(u64, u64)>, SeqNo)> {
        let mut leader = self.leader.lock();
        leader.flush()?;
        let sequence = leader.last_allocated;
        let numbers: Vec<u64> = self
            .lock_state()
            .live_logs
            .range(min_log..)
            .copied()
            .collect();
        let mut wals = Vec::with_capacity(numbers.len());
        for number in numbers {
            let path = log_path(&self.dir, number);
            match self.fs.file_size(&path) {
                Ok(size) => wals.push((number, size)),
                // A WAL made but never written to disk (the switch failed).
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(source).context(IoSnafu {
                        op: "reading the size of",
                        path,
                    });
                }
            }
        }
        Ok((wals, sequence))
    }

    /// Copies the first `len` bytes of `from` into the new file `to` and
    /// syncs it; returns `len`.
    fn copy_prefix(&self, from: &Path, to: &Path, len: u64) -> Result<u64> {
        const CHUNK: u64 = 1 << 20;
        let src = self.fs.open(from).context(IoSnafu {
            op: "opening",
            path: from.to_path_buf(),
        })?;
        let mut dst = self.fs.create_new(to).context(IoSnafu {
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
}
