//! The time index: 12-byte entries `int64 timestamp, int32 relativeOffset`.
//!
//! An entry `(t, o)` says: up to offset `o` the largest timestamp seen is
//! `t`. Entries are added only when the timestamp grows, and the last slot
//! is kept for the entry written when the segment rolls, so the last entry
//! of an inactive segment holds its largest timestamp.

use std::path::PathBuf;
use std::sync::Arc;

use lithify_vfs::FileSystem;

use super::{IndexFile, read_index_file};
use crate::error::{CorruptSnafu, InvalidArgumentSnafu, Result};
use crate::record::batch::NO_TIMESTAMP;

/// A timestamp and the offset it was reached at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimestampOffset {
    /// Milliseconds since the epoch (-1 for none).
    pub timestamp: i64,
    /// Absolute offset.
    pub offset: i64,
}

/// A segment's time index.
#[derive(Debug)]
pub struct TimeIndex {
    file: IndexFile,
    base_offset: i64,
    entries: Vec<(i64, u32)>,
    max_entries: usize,
}

impl TimeIndex {
    /// Bytes per entry.
    pub const ENTRY_SIZE: usize = 12;

    pub(crate) fn new(
        fs: Arc<dyn FileSystem>,
        path: PathBuf,
        base_offset: i64,
        max_index_size: u64,
    ) -> Self {
        TimeIndex {
            file: IndexFile::new(fs, path),
            base_offset,
            entries: Vec::new(),
            max_entries: (max_index_size / Self::ENTRY_SIZE as u64) as usize,
        }
    }

    /// Loads the index at `path`; `Ok(None)` when missing, a corruption
    /// error when sizes, timestamps or offsets are out of order.
    pub(crate) fn load(
        fs: Arc<dyn FileSystem>,
        path: PathBuf,
        base_offset: i64,
    ) -> Result<Option<Self>> {
        let Some(bytes) = read_index_file(&*fs, &path)? else {
            return Ok(None);
        };
        let corrupt = |offset: usize, message: String| {
            CorruptSnafu {
                path: path.clone(),
                offset: offset as u64,
                message,
            }
            .fail()
        };
        if bytes.len() % Self::ENTRY_SIZE != 0 {
            return corrupt(
                0,
                format!("time index size {} is not a multiple of 12", bytes.len()),
            );
        }
        let mut entries: Vec<(i64, u32)> = Vec::with_capacity(bytes.len() / Self::ENTRY_SIZE);
        for (i, e) in bytes.chunks_exact(Self::ENTRY_SIZE).enumerate() {
            let mut ts = [0; 8];
            ts.copy_from_slice(&e[..8]);
            let ts = i64::from_be_bytes(ts);
            let rel = u32::from_be_bytes([e[8], e[9], e[10], e[11]]);
            if rel > i32::MAX as u32 {
                return corrupt(i * 12, format!("relative offset {rel} is out of range"));
            }
            if let Some(&(pts, prel)) = entries.last()
                && (ts < pts || rel < prel)
            {
                return corrupt(
                    i * 12,
                    format!("entry ({ts}, {rel}) does not follow ({pts}, {prel})"),
                );
            }
            entries.push((ts, rel));
        }
        let max_entries = entries.len();
        Ok(Some(TimeIndex {
            file: IndexFile::new(fs, path),
            base_offset,
            entries,
            max_entries,
        }))
    }

    /// The index file.
    pub fn path(&self) -> &std::path::Path {
        self.file.path()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the index has no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes the entries take.
    pub fn size_in_bytes(&self) -> u64 {
        (self.entries.len() * Self::ENTRY_SIZE) as u64
    }

    /// Whether only the slot reserved for the roll entry is left.
    pub fn is_full(&self) -> bool {
        self.entries.len() + 1 >= self.max_entries
    }

    /// Every entry, as absolute offsets.
    pub fn entries(&self) -> impl Iterator<Item = TimestampOffset> + '_ {
        self.entries
            .iter()
            .map(|&(timestamp, rel)| TimestampOffset {
                timestamp,
                offset: self.base_offset + i64::from(rel),
            })
    }

    /// The last entry, or `(-1, base)`.
    pub fn last_entry(&self) -> TimestampOffset {
        self.entries.last().map_or(
            TimestampOffset {
                timestamp: NO_TIMESTAMP,
                offset: self.base_offset,
            },
            |&(timestamp, rel)| TimestampOffset {
                timestamp,
                offset: self.base_offset + i64::from(rel),
            },
        )
    }

    /// The last entry with timestamp <= `target`, or `(-1, base)`.
    pub fn lookup(&self, target: i64) -> TimestampOffset {
        let n = self.entries.partition_point(|&(t, _)| t <= target);
        match n.checked_sub(1) {
            Some(i) => TimestampOffset {
                timestamp: self.entries[i].0,
                offset: self.base_offset + i64::from(self.entries[i].1),
            },
            None => TimestampOffset {
                timestamp: NO_TIMESTAMP,
                offset: self.base_offset,
            },
        }
    }

    /// Adds `(timestamp, offset)` if the timestamp exceeds the last entry's
    /// (Kafka's `maybeAppend`). Unless `skip_full_check`, the index must not
    /// be full.
    pub(crate) fn maybe_append(
        &mut self,
        timestamp: i64,
        offset: i64,
        skip_full_check: bool,
    ) -> Result<()> {
        let last = self.last_entry();
        let rel = offset - self.base_offset;
        let bad = (!skip_full_check && self.is_full())
            || !(0..=i64::from(i32::MAX)).contains(&rel)
            || (!self.entries.is_empty() && (offset < last.offset || timestamp < last.timestamp));
        if bad {
            return InvalidArgumentSnafu {
                message: format!(
                    "cannot append ({timestamp}, {offset}) to time index {} after ({}, {})",
                    self.file.path().display(),
                    last.timestamp,
                    last.offset
                ),
            }
            .fail();
        }
        if timestamp <= last.timestamp {
            return Ok(());
        }
        let pos = (self.entries.len() * Self::ENTRY_SIZE) as u64;
        self.entries.push((timestamp, rel as u32));
        self.file
            .write_at(pos, &Self::encode_entry(timestamp, rel as u32))
    }

    fn encode_entry(timestamp: i64, rel: u32) -> [u8; 12] {
        let mut e = [0; 12];
        e[..8].copy_from_slice(&timestamp.to_be_bytes());
        e[8..].copy_from_slice(&rel.to_be_bytes());
        e
    }

    /// The entries as stored.
    pub fn encode(&self) -> Vec<u8> {
        self.entries
            .iter()
            .flat_map(|&(t, r)| Self::encode_entry(t, r))
            .collect()
    }

    pub(crate) fn reset(&mut self, max_index_size: u64) {
        self.entries.clear();
        self.max_entries = (max_index_size / Self::ENTRY_SIZE as u64) as usize;
    }

    pub(crate) fn write_file(&mut self, preallocate: bool) -> Result<()> {
        let cap = preallocate.then_some((self.max_entries * Self::ENTRY_SIZE) as u64);
        if !preallocate {
            self.max_entries = self.entries.len();
        }
        self.file.rewrite(&self.encode(), cap)
    }

    pub(crate) fn resize(&mut self, max_index_size: u64) -> Result<()> {
        self.max_entries =
            ((max_index_size / Self::ENTRY_SIZE as u64) as usize).max(self.entries.len());
        self.write_file(true)
    }

    pub(crate) fn trim(&mut self) -> Result<()> {
        self.max_entries = self.entries.len();
        self.file.trim(self.size_in_bytes())
    }

    pub(crate) fn sync(&mut self) -> Result<()> {
        self.file.sync()
    }

    pub(crate) fn rename(&mut self, to: PathBuf) -> Result<()> {
        self.file.rename(to)
    }

    pub(crate) fn delete(&mut self) -> Result<()> {
        self.file.delete()
    }
}
