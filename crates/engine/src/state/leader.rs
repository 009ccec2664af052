//! What the write group's leader owns: the live WAL and the closed ones
//! that may still need a sync or a record of their synced size, the last
//! sequence number assigned, and the memtables writes go to. The leader
//! mutex guards it (see `state/mod.rs` for the lock order).

use std::path::Path;
use std::sync::Arc as StdArc;

use lithify_base::SeqNo;
use lithify_base::sync::Arc;
use lithify_version::{TableId, WalAddition};
use lithify_vfs::FileSystem;

use super::table::TableState;
use crate::error::Result;
use crate::wal::LogWriter;
use lithify_memtable::MemTable;

/// The memtables writes go to, one per table; the default table first.
pub(crate) struct MemSet {
    pub(crate) entries: Vec<(TableId, StdArc<TableState>, Arc<MemTable>)>,
}

impl MemSet {
    /// The memtable of `table`.
    #[inline]
    pub(crate) fn get(
        &self,
        table: TableId,
    ) -> Option<&(TableId, StdArc<TableState>, Arc<MemTable>)> {
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
    /// Obsolete WALs whose files wait to be written over by new WALs
    /// (`recycle_log_file_num`), oldest first.
    pub(crate) recyclable: std::collections::VecDeque<u64>,
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
        if let Some(log) = &mut self.log {
            // The preallocated space after its last record goes.
            log.writer.trim()?;
        }
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

    /// The length of WAL `number`'s records if this process wrote it: up
    /// to its last record, without the preallocated space after it
    /// (buffered bytes included). `None` for a WAL it did not write.
    pub(crate) fn wal_len(&self, number: u64) -> Option<u64> {
        match &self.log {
            Some(log) if log.number == number => Some(log.writer.bytes_written()),
            _ => self.closed_sizes.get(&number).copied(),
        }
    }

    /// Bytes of the live WALs, and the oldest of them.
    pub(crate) fn wal_size(&self) -> (u64, Option<u64>) {
        (
            self.log_bytes.values().sum(),
            self.log_bytes.keys().next().copied(),
        )
    }
}
