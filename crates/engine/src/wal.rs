//! The write leader's state: the live WAL, older WALs that may still need
//! a sync, the sequence counter and the memtables writes go to.
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
use std::sync::Arc as StdArc;

use crate::mem::Mem;
use lithify_base::SeqNo;
use lithify_base::sync::Arc;
use lithify_version::filename::log_file_name;
use lithify_version::{TableId, WalAddition};
use lithify_vfs::FileSystem;
use lithify_wal::{Writer, WriterOptions};
use snafu::ResultExt;

use crate::batch::Predecessor;
use crate::error::{IoSnafu, Result};
use crate::table_state::TableState;

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
    /// Creates WAL `number` in `dir`, starting with the predecessor note if
    /// there is one.
    pub(crate) fn create(
        fs: &dyn FileSystem,
        dir: &Path,
        number: u64,
        predecessor: Option<Predecessor>,
    ) -> Result<LogWriter> {
        let path = log_path(dir, number);
        let file = fs.create(&path).context(IoSnafu {
            op: "creating WAL",
            path: path.clone(),
        })?;
        let mut writer = Writer::with_options(file, &path, number, WriterOptions::default())?;
        if let Some(p) = predecessor {
            writer.add_record(&p.encode())?;
        }
        // The header (and note) reach the file now: an empty WAL then only
        // ever means a power cut before its first sync, or damage.
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
    pub(crate) fn append(
        &mut self,
        record: &[u8],
        last_seq: SeqNo,
        manual_flush: bool,
    ) -> Result<()> {
        self.writer.add_record(record)?;
        self.last_seq = last_seq;
        self.synced = false;
        if !manual_flush {
            self.writer.flush()?;
        }
        Ok(())
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

/// The memtables writes go to, one per table; the default table first.
pub(crate) struct MemSet {
    pub(crate) entries: Vec<(TableId, StdArc<TableState>, Arc<Mem>)>,
}

impl MemSet {
    /// The memtable of `table`.
    #[inline]
    pub(crate) fn get(&self, table: TableId) -> Option<&(TableId, StdArc<TableState>, Arc<Mem>)> {
        match self.entries.first() {
            Some(e) if e.0 == table => Some(e),
            _ => self.entries.iter().find(|e| e.0 == table),
        }
    }
}

/// What the write leader owns.
pub(crate) struct LeaderState {
    /// The live WAL.
    pub(crate) log: Option<LogWriter>,
    /// Closed WALs that may hold unsynced records, oldest first.
    pub(crate) old_logs: Vec<LogWriter>,
    /// The last sequence number assigned.
    pub(crate) last_allocated: SeqNo,
    /// Scratch for a group's WAL record.
    pub(crate) record: Vec<u8>,
    /// The memtables receiving writes.
    pub(crate) mems: Arc<MemSet>,
    /// Bytes appended to each live WAL by this process (for
    /// `max_total_wal_size`).
    pub(crate) log_bytes: std::collections::BTreeMap<u64, u64>,
    /// Final sizes of the closed WALs still live (for the record made at
    /// close).
    pub(crate) closed_sizes: std::collections::BTreeMap<u64, u64>,
    /// Closed WALs now wholly synced whose size no edit recorded yet: the
    /// next flush's edit carries them (`WalAddition`s).
    pub(crate) synced_closed: Vec<WalAddition>,
}

impl LeaderState {
    /// Syncs every closed WAL not known durable, then the live one.
    pub(crate) fn sync_all(&mut self, fs: &dyn FileSystem, dir: &Path) -> Result<()> {
        for old in &mut self.old_logs {
            if !old.synced {
                old.sync(fs, dir)?;
                self.synced_closed.push(WalAddition {
                    number: old.number,
                    synced_size: old.writer.synced_len(),
                });
            }
        }
        self.old_logs.retain(|l| !l.synced);
        if let Some(log) = &mut self.log {
            log.sync(fs, dir)?;
        }
        Ok(())
    }

    /// Hands buffered WAL bytes to the OS.
    pub(crate) fn flush(&mut self) -> Result<()> {
        if let Some(log) = &mut self.log {
            log.writer.flush()?;
        }
        Ok(())
    }

    /// Forgets closed WALs below `min_log` (their data is in tables).
    pub(crate) fn drop_logs_below(&mut self, min_log: u64) {
        self.old_logs.retain(|l| l.number >= min_log);
        self.log_bytes.retain(|n, _| *n >= min_log);
        self.closed_sizes.retain(|n, _| *n >= min_log);
        self.synced_closed.retain(|w| w.number >= min_log);
    }

    /// Keeps a WAL the switch closed: for a later sync, or, if it is
    /// durable already, as a size the next edit records.
    pub(crate) fn close_log(&mut self, log: LogWriter) {
        let size = log.writer.bytes_written();
        self.closed_sizes.insert(log.number, size);
        if log.synced {
            self.synced_closed.push(WalAddition {
                number: log.number,
                synced_size: size,
            });
        } else {
            self.old_logs.push(log);
        }
    }

    /// The closed WALs found wholly synced since the last call.
    pub(crate) fn take_synced_closed(&mut self) -> Vec<WalAddition> {
        std::mem::take(&mut self.synced_closed)
    }

    /// Syncs every live WAL and returns the size of each (what a clean
    /// close records in the MANIFEST).
    pub(crate) fn sync_for_close(
        &mut self,
        fs: &dyn FileSystem,
        dir: &Path,
    ) -> Result<Vec<WalAddition>> {
        self.sync_all(fs, dir)?;
        self.synced_closed.clear();
        let mut sizes: Vec<WalAddition> = self
            .closed_sizes
            .iter()
            .map(|(&number, &synced_size)| WalAddition {
                number,
                synced_size,
            })
            .collect();
        if let Some(log) = &self.log {
            sizes.push(WalAddition {
                number: log.number,
                synced_size: log.writer.synced_len(),
            });
        }
        Ok(sizes)
    }

    /// Bytes of the live WALs, and the oldest of them.
    pub(crate) fn wal_size(&self) -> (u64, Option<u64>) {
        (
            self.log_bytes.values().sum(),
            self.log_bytes.keys().next().copied(),
        )
    }
}
