//! The offset index: 8-byte entries `int32 relativeOffset, int32 position`
//! mapping an offset (relative to the segment's base offset) to the byte
//! position of a batch in the `.log`.
//!
//! An entry `(o, p)` says: the batch starting at position `p` has last
//! offset `o`, so every batch before `p` ends below `o`. A lookup returns
//! the last entry with offset <= the target (or `(base, 0)`), and the read
//! scans forward from there.

use std::path::PathBuf;
use std::sync::Arc;

use lithify_vfs::FileSystem;

use super::{IndexFile, read_index_file};
use crate::error::{CorruptSnafu, InvalidArgumentSnafu, Result};

/// An offset and the byte position of the batch holding it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetPosition {
    /// Absolute offset.
    pub offset: i64,
    /// Byte position in the segment's `.log`.
    pub position: u32,
}

/// A segment's offset index.
#[derive(Debug)]
pub struct OffsetIndex {
    file: IndexFile,
    base_offset: i64,
    entries: Vec<(u32, u32)>,
    max_entries: usize,
}

impl OffsetIndex {
    /// Bytes per entry.
    pub const ENTRY_SIZE: usize = 8;

    /// An empty index for `path` holding at most `max_index_size / 8`
    /// entries. Nothing is written until [`OffsetIndex::write_file`].
    pub(crate) fn new(
        fs: Arc<dyn FileSystem>,
        path: PathBuf,
        base_offset: i64,
        max_index_size: u64,
    ) -> Self {
        OffsetIndex {
            file: IndexFile::new(fs, path),
            base_offset,
            entries: Vec::new(),
            max_entries: (max_index_size / Self::ENTRY_SIZE as u64) as usize,
        }
    }

    /// Loads the index at `path`; `Ok(None)` when the file is missing, a
    /// corruption error when it is not a well-formed index (size, offsets
    /// and positions in range, offsets increasing, positions not
    /// decreasing). Whether its positions fit the `.log` is for the caller
    /// to judge ([`LogSegment::open`](crate::LogSegment::open)): an entry
    /// past the end of the `.log` may mean the `.log` lost bytes.
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
                format!("offset index size {} is not a multiple of 8", bytes.len()),
            );
        }
        let mut entries = Vec::with_capacity(bytes.len() / Self::ENTRY_SIZE);
        for (i, e) in bytes.chunks_exact(Self::ENTRY_SIZE).enumerate() {
            let rel = u32::from_be_bytes([e[0], e[1], e[2], e[3]]);
            let pos = u32::from_be_bytes([e[4], e[5], e[6], e[7]]);
            if rel > i32::MAX as u32 || pos > i32::MAX as u32 {
                return corrupt(i * 8, format!("entry ({rel}, {pos}) is out of range"));
            }
            if let Some(&(prev_rel, prev_pos)) = entries.last()
                && (rel <= prev_rel || pos < prev_pos)
            {
                return corrupt(
                    i * 8,
                    format!("entry ({rel}, {pos}) does not follow ({prev_rel}, {prev_pos})"),
                );
            }
            entries.push((rel, pos));
        }
        let max_entries = entries.len();
        Ok(Some(OffsetIndex {
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

    /// Bytes the entries take (Kafka's `sizeInBytes`).
    pub fn size_in_bytes(&self) -> u64 {
        (self.entries.len() * Self::ENTRY_SIZE) as u64
    }

    /// Entries this index can hold.
    pub fn max_entries(&self) -> usize {
        self.max_entries
    }

    /// Whether no entry can be added.
    pub fn is_full(&self) -> bool {
        self.entries.len() >= self.max_entries
    }

    /// Every entry, as absolute offsets.
    pub fn entries(&self) -> impl Iterator<Item = OffsetPosition> + '_ {
        self.entries.iter().map(|&(rel, position)| OffsetPosition {
            offset: self.base_offset + i64::from(rel),
            position,
        })
    }

    /// The last entry, or `(base, 0)`.
    pub fn last_entry(&self) -> OffsetPosition {
        self.entries.last().map_or(
            OffsetPosition {
                offset: self.base_offset,
                position: 0,
            },
            |&(rel, position)| OffsetPosition {
                offset: self.base_offset + i64::from(rel),
                position,
            },
        )
    }

    /// The last entry with offset <= `target`, or `(base, 0)`.
    pub fn lookup(&self, target: i64) -> OffsetPosition {
        let rel = target - self.base_offset;
        let n = self.entries.partition_point(|&(r, _)| i64::from(r) <= rel);
        match n.checked_sub(1) {
            Some(i) => OffsetPosition {
                offset: self.base_offset + i64::from(self.entries[i].0),
                position: self.entries[i].1,
            },
            None => OffsetPosition {
                offset: self.base_offset,
                position: 0,
            },
        }
    }

    /// Adds `(offset, position)`; the offset must exceed the last entry's
    /// and the index must not be full.
    pub(crate) fn append(&mut self, offset: i64, position: u32) -> Result<()> {
        let rel = offset - self.base_offset;
        let ok = (0..=i64::from(i32::MAX)).contains(&rel)
            && !self.is_full()
            && self.entries.last().is_none_or(|&(r, _)| i64::from(r) < rel);
        if !ok {
            return InvalidArgumentSnafu {
                message: format!(
                    "cannot append offset {offset} to offset index {} ({} of {} entries used)",
                    self.file.path().display(),
                    self.entries.len(),
                    self.max_entries
                ),
            }
            .fail();
        }
        let pos = (self.entries.len() * Self::ENTRY_SIZE) as u64;
        self.entries.push((rel as u32, position));
        self.file
            .write_at(pos, &Self::encode_entry(rel as u32, position))
    }

    fn encode_entry(rel: u32, position: u32) -> [u8; 8] {
        let mut e = [0; 8];
        e[..4].copy_from_slice(&rel.to_be_bytes());
        e[4..].copy_from_slice(&position.to_be_bytes());
        e
    }

    /// The entries as stored.
    pub fn encode(&self) -> Vec<u8> {
        self.entries
            .iter()
            .flat_map(|&(r, p)| Self::encode_entry(r, p))
            .collect()
    }

    /// Drops every entry (before a rebuild).
    pub(crate) fn reset(&mut self, max_index_size: u64) {
        self.entries.clear();
        self.max_entries = (max_index_size / Self::ENTRY_SIZE as u64) as usize;
    }

    /// Writes the file from the in-memory entries; with `preallocate`, the
    /// file is extended to the index's capacity and stays writable.
    pub(crate) fn write_file(&mut self, preallocate: bool) -> Result<()> {
        let cap = preallocate.then_some((self.max_entries * Self::ENTRY_SIZE) as u64);
        if !preallocate {
            self.max_entries = self.entries.len();
        }
        self.file.rewrite(&self.encode(), cap)
    }

    /// Makes room for `max_index_size` bytes of entries and keeps the file
    /// writable (the segment became active).
    pub(crate) fn resize(&mut self, max_index_size: u64) -> Result<()> {
        self.max_entries =
            ((max_index_size / Self::ENTRY_SIZE as u64) as usize).max(self.entries.len());
        self.write_file(true)
    }

    /// Trims the file to its entries and syncs it (the segment rolled).
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
