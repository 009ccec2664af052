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

use std::path::{Path, PathBuf};
use std::sync::Arc as StdArc;

use crate::mem::Mem;
use lithify_base::SeqNo;
use lithify_base::sync::Arc;
use lithify_version::TableId;
use lithify_version::filename::log_file_name;
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
}

impl LeaderState {
    /// Syncs every closed WAL not known durable, then the live one.
    pub(crate) fn sync_all(&mut self, fs: &dyn FileSystem, dir: &Path) -> Result<()> {
        for old in &mut self.old_logs {
            if !old.synced {
                old.sync(fs, dir)?;
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
    }

    /// Bytes of the live WALs, and the oldest of them.
    pub(crate) fn wal_size(&self) -> (u64, Option<u64>) {
        (
            self.log_bytes.values().sum(),
            self.log_bytes.keys().next().copied(),
        )
    }
}
