//! One WAL file being written ([`LogWriter`]), and the rules the WAL files
//! follow together.
//!
//! # WAL files and the prefix guarantee
//!
//! Every write group appends one record to the live WAL. A memtable switch
//! starts a new WAL whose first record names its predecessor and the last
//! sequence number written to it ([`Predecessor`]). Recovery replays a log
//! only if its predecessor was replayed up to exactly that number, so a log
//! that lost its tail in a crash is never followed by records of a later
//! log: what survives is a prefix of the writes in sequence order.
//!
//! A `sync` write makes every older unsynced WAL durable before the live
//! one, and the live WAL's directory entry on its first sync.
//!
//! # Synced sizes in the MANIFEST
//!
//! As RocksDB's `track_and_verify_wals_in_manifest` does for closed WALs,
//! the MANIFEST learns how far WALs were synced (`WalAddition`): a closed
//! WAL found wholly synced rides on the next flush's edit, and a clean
//! close syncs every live WAL and records all of them. Recovery refuses a
//! recorded WAL that is missing, shorter than its synced size, or damaged
//! below it; only bytes past the last recorded sync may be dropped as a
//! torn tail.

use std::path::{Path, PathBuf};

use lithify_base::{Id, SeqNo};
use lithify_version::filename::log_file_name;
use lithify_vfs::FileSystem;
use lithify_wal::format::Framing;
use lithify_wal::{RecordCompression, Writer, WriterOptions};
use snafu::ResultExt;

use crate::batch::Predecessor;
use crate::error::{IoSnafu, Result};
use crate::options::Options;

/// How new WALs are written, from the options.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LogSettings {
    /// How records are stored.
    pub(crate) compression: RecordCompression,
    /// Bytes each WAL is sized to up front (0: none).
    pub(crate) preallocate: u64,
    /// The fragment headers: compact, unless WALs are recycled (then
    /// every WAL is tagged, as any of them may be written over later).
    pub(crate) framing: Framing,
}

impl LogSettings {
    pub(crate) fn of(options: &Options) -> LogSettings {
        LogSettings {
            compression: options.wal_compression,
            preallocate: options.wal_preallocation(),
            framing: if options.recycle_log_file_num > 0 {
                Framing::Tagged
            } else {
                Framing::Compact
            },
        }
    }
}

/// One WAL being written.
pub(crate) struct LogWriter {
    pub(crate) writer: Writer,
    pub(crate) number: u64,
    /// The directory entry of this log is durable.
    pub(crate) dir_synced: bool,
    /// The last sequence number of a record in this log (0: none).
    pub(crate) last_seq: SeqNo,
    /// Every record is durable.
    pub(crate) synced: bool,
}

impl LogWriter {
    /// Creates WAL `number` in `dir`, owned by database `owner`, starting
    /// with the predecessor note if there is one, written as `settings`
    /// say.
    ///
    /// With `recycle`, the file of that obsolete WAL is renamed and
    /// written over ([`Writer::recycle`]); if that cannot be done (the file
    /// is gone, say), the WAL is created anew and the old file removed.
    pub(crate) fn create(
        fs: &dyn FileSystem,
        dir: &Path,
        number: u64,
        predecessor: Option<Predecessor>,
        settings: LogSettings,
        owner: Id,
        recycle: Option<u64>,
    ) -> Result<LogWriter> {
        let path = log_path(dir, number);
        let options = WriterOptions::default()
            .compression(settings.compression)
            .preallocate(settings.preallocate)
            .framing(settings.framing)
            .owner(Some(owner));
        let recycled = recycle.and_then(|old| {
            let from = log_path(dir, old);
            let reused = fs
                .rename(&from, &path)
                .and_then(|()| fs.open_append(&path))
                .map_err(|e| e.to_string())
                .and_then(|file| {
                    Writer::recycle(file, &path, number, old, options).map_err(|e| e.to_string())
                });
            match reused {
                Ok(writer) => {
                    tracing::debug!(
                        target: "lithify::wal",
                        old,
                        new = number,
                        "WAL {old}'s file recycled as WAL {number}"
                    );
                    Some(writer)
                }
                Err(e) => {
                    tracing::warn!(
                        target: "lithify::wal",
                        old,
                        new = number,
                        "WAL {old}'s file cannot be recycled ({e}); WAL {number} is created anew"
                    );
                    let _ = fs.remove_file(&from);
                    None
                }
            }
        });
        let mut writer = match recycled {
            Some(writer) => writer,
            None => {
                let file = fs.create(&path).context(IoSnafu {
                    op: "creating WAL",
                    path: path.clone(),
                })?;
                Writer::with_options(file, &path, number, options)?
            }
        };
        if let Some(p) = predecessor {
            writer.add_record(&p.encode())?;
        }
        // The header (and note) reach the file now, and the file gets its
        // size: an empty WAL then only ever means a power cut before its
        // first sync, or damage.
        writer.flush()?;
        Ok(LogWriter {
            writer,
            number,
            dir_synced: false,
            last_seq: 0,
            synced: false,
        })
    }

    /// Appends a group's record; hands it to the OS unless `manual_flush`.
    /// Returns the bytes the record took in the log (framing included,
    /// after compression).
    pub(crate) fn append(
        &mut self,
        record: &[u8],
        last_seq: SeqNo,
        manual_flush: bool,
    ) -> Result<u64> {
        let before = self.writer.bytes_written();
        self.writer.add_record(record)?;
        let bytes = self.writer.bytes_written() - before;
        self.last_seq = last_seq;
        self.synced = false;
        if !manual_flush {
            self.writer.flush()?;
        }
        Ok(bytes)
    }

    /// Makes every record durable, and the log's directory entry.
    pub(crate) fn sync(&mut self, fs: &dyn FileSystem, dir: &Path) -> Result<()> {
        self.writer.sync()?;
        if !self.dir_synced {
            fs.sync_dir(dir).context(IoSnafu {
                op: "syncing directory",
                path: dir.to_path_buf(),
            })?;
            self.dir_synced = true;
        }
        self.synced = true;
        Ok(())
    }
}

pub(crate) fn log_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(log_file_name(number))
}
