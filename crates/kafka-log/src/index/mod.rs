//! The offset index (`.index`) and time index (`.timeindex`) of a segment:
//! one [`Index`] type, two entry types.
//!
//! Both are arrays of fixed-size big-endian entries with no header and no
//! checksum: Kafka rebuilds them from the `.log` whenever they look wrong,
//! and so do we. While a segment is active its index files are
//! preallocated to `segment.index.bytes` (rounded down to whole entries) of
//! zeros; when it rolls they are trimmed to their entries. An index is held
//! in memory as well (a lookup is a binary search, no I/O). That lifecycle
//! is [`Index`]'s; what an entry holds, how it is checked and looked up is
//! its [`IndexEntry`] type's:
//!
//! * [`OffsetIndex`] = `Index<OffsetEntry>`: 8-byte entries
//!   `int32 relativeOffset, int32 position`;
//! * [`TimeIndex`] = `Index<TimeEntry>`: 12-byte entries
//!   `int64 timestamp, int32 relativeOffset`, the last slot kept for the
//!   entry written when the segment rolls.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lithify_vfs::{FileSystem, WritableFile};
use snafu::ResultExt as _;

use crate::error::{CorruptSnafu, IoSnafu, Result};

mod offset;
mod time;

pub use offset::{OffsetEntry, OffsetIndex, OffsetPosition};
pub use time::{TimeEntry, TimeIndex, TimestampOffset};

/// What one kind of index holds: an entry as stored (offsets relative to
/// the segment's base offset), its encoding, what a well-formed file
/// looks like, and what a lookup compares.
pub trait IndexEntry: Copy + std::fmt::Debug + Send + Sync + 'static + sealed::Sealed {
    /// An entry in absolute offsets, as lookups return it.
    type Absolute: Copy + PartialEq + std::fmt::Debug;

    /// Bytes per entry.
    const SIZE: usize;
    /// What the index is called in messages ("offset index").
    const NAME: &'static str;
    /// Slots kept free for an entry written when the segment rolls.
    const RESERVED_SLOTS: usize;

    /// Decodes one entry (`bytes` is [`SIZE`](Self::SIZE) long), or says
    /// why it is out of range.
    fn decode(bytes: &[u8]) -> Result<Self, String>;

    /// The entry's bytes (the first [`SIZE`](Self::SIZE) of the array).
    fn encode(self) -> [u8; 12];

    /// Why `self` cannot follow `prev` in a well-formed index, if it cannot.
    fn check_follows(self, prev: Self) -> Result<(), String>;

    /// The entry in absolute offsets.
    fn absolute(self, base_offset: i64) -> Self::Absolute;

    /// What a lookup returns when no entry matches.
    fn none(base_offset: i64) -> Self::Absolute;

    /// Whether the entry is at or before `target` (an offset for the offset
    /// index, a timestamp for the time index).
    fn at_or_before(self, target: i64, base_offset: i64) -> bool;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::OffsetEntry {}
    impl Sealed for super::TimeEntry {}
}

/// A segment's index of entries `E`: in memory and, while writable, in
/// its file.
#[derive(Debug)]
pub struct Index<E: IndexEntry> {
    file: IndexFile,
    base_offset: i64,
    entries: Vec<E>,
    max_entries: usize,
}

impl<E: IndexEntry> Index<E> {
    /// Bytes per entry.
    pub const ENTRY_SIZE: usize = E::SIZE;

    /// An empty index for `path` holding at most `max_index_size /`
    /// [`ENTRY_SIZE`](Self::ENTRY_SIZE) entries. Nothing is written until
    /// [`Index::write_file`].
    pub(crate) fn new(
        fs: Arc<dyn FileSystem>,
        path: PathBuf,
        base_offset: i64,
        max_index_size: u64,
    ) -> Self {
        Index {
            file: IndexFile::new(fs, path),
            base_offset,
            entries: Vec::new(),
            max_entries: (max_index_size / E::SIZE as u64) as usize,
        }
    }

    /// Loads the index at `path`; `Ok(None)` when the file is missing, a
    /// corruption error when it is not a well-formed index (whole entries,
    /// each in range and following the one before). Whether its entries
    /// fit the `.log` is for the caller to judge
    /// ([`LogSegment::open`](crate::LogSegment::open)): an entry past the
    /// end of the `.log` may mean the `.log` lost bytes.
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
        if bytes.len() % E::SIZE != 0 {
            return corrupt(
                0,
                format!(
                    "{} size {} is not a multiple of {}",
                    E::NAME,
                    bytes.len(),
                    E::SIZE
                ),
            );
        }
        let mut entries: Vec<E> = Vec::with_capacity(bytes.len() / E::SIZE);
        for (i, e) in bytes.chunks_exact(E::SIZE).enumerate() {
            let entry = match E::decode(e) {
                Ok(entry) => entry,
                Err(message) => return corrupt(i * E::SIZE, message),
            };
            if let Some(&prev) = entries.last()
                && let Err(message) = entry.check_follows(prev)
            {
                return corrupt(i * E::SIZE, message);
            }
            entries.push(entry);
        }
        let max_entries = entries.len();
        Ok(Some(Index {
            file: IndexFile::new(fs, path),
            base_offset,
            entries,
            max_entries,
        }))
    }

    /// The index file.
    pub fn path(&self) -> &Path {
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
        (self.entries.len() * E::SIZE) as u64
    }

    /// Entries this index can hold.
    pub fn max_entries(&self) -> usize {
        self.max_entries
    }

    /// Whether no entry can be added (for the time index: only the slot
    /// kept for the roll entry is left).
    pub fn is_full(&self) -> bool {
        self.entries.len() + E::RESERVED_SLOTS >= self.max_entries
    }

    /// Every entry, in absolute offsets.
    pub fn entries(&self) -> impl Iterator<Item = E::Absolute> + '_ {
        self.entries.iter().map(|e| e.absolute(self.base_offset))
    }

    /// The last entry, or what a lookup returns when none matches.
    pub fn last_entry(&self) -> E::Absolute {
        self.entries
            .last()
            .map_or(E::none(self.base_offset), |e| e.absolute(self.base_offset))
    }

    /// The last entry at or before `target` (an offset for the offset
    /// index, a timestamp for the time index), or what a lookup returns
    /// when none is: `(base, 0)`, `(-1, base)`.
    pub fn lookup(&self, target: i64) -> E::Absolute {
        let n = self
            .entries
            .partition_point(|e| e.at_or_before(target, self.base_offset));
        match n.checked_sub(1) {
            Some(i) => self.entries[i].absolute(self.base_offset),
            None => E::none(self.base_offset),
        }
    }

    /// The last entry as stored.
    fn last_stored(&self) -> Option<E> {
        self.entries.last().copied()
    }

    /// Adds `entry` (already checked by the caller) and writes it if the
    /// file is open for writing.
    fn push(&mut self, entry: E) -> Result<()> {
        let pos = (self.entries.len() * E::SIZE) as u64;
        self.entries.push(entry);
        self.file.write_at(pos, &entry.encode()[..E::SIZE])
    }

    /// The entries as stored.
    pub fn encode(&self) -> Vec<u8> {
        self.entries
            .iter()
            .flat_map(|e| e.encode().into_iter().take(E::SIZE))
            .collect()
    }

    /// Drops every entry (before a rebuild).
    pub(crate) fn reset(&mut self, max_index_size: u64) {
        self.entries.clear();
        self.max_entries = (max_index_size / E::SIZE as u64) as usize;
    }

    /// Writes the file from the in-memory entries; with `preallocate`, the
    /// file is extended to the index's capacity and stays writable.
    pub(crate) fn write_file(&mut self, preallocate: bool) -> Result<()> {
        let cap = preallocate.then_some((self.max_entries * E::SIZE) as u64);
        if !preallocate {
            self.max_entries = self.entries.len();
        }
        self.file.rewrite(&self.encode(), cap)
    }

    /// Makes room for `max_index_size` bytes of entries and keeps the file
    /// writable (the segment became active).
    pub(crate) fn resize(&mut self, max_index_size: u64) -> Result<()> {
        self.max_entries = ((max_index_size / E::SIZE as u64) as usize).max(self.entries.len());
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

/// Renames the file at `path` (if it exists) to `to`, and makes `to` the
/// path (the offset, time and transaction indexes of a segment being
/// renamed).
pub(crate) fn rename_if_exists(fs: &dyn FileSystem, path: &mut PathBuf, to: PathBuf) -> Result<()> {
    if fs.exists(path) {
        fs.rename(path, &to).context(IoSnafu {
            action: "rename",
            path: &*path,
        })?;
    }
    *path = to;
    Ok(())
}

/// Removes the file at `path`; a missing file is not an error.
pub(crate) fn remove_if_exists(fs: &dyn FileSystem, path: &Path) -> Result<()> {
    match fs.remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).context(IoSnafu {
            action: "remove",
            path,
        }),
    }
}

/// Reads an index file, `None` if it does not exist.
pub(crate) fn read_index_file(fs: &dyn FileSystem, path: &Path) -> Result<Option<Vec<u8>>> {
    match lithify_vfs::read_file(fs, path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).context(IoSnafu {
            action: "read",
            path,
        }),
    }
}

/// The file behind an index: its path and, while writable, its writer.
#[derive(Debug)]
pub(crate) struct IndexFile {
    fs: Arc<dyn FileSystem>,
    path: PathBuf,
    writer: Option<Box<dyn WritableFile>>,
}

impl IndexFile {
    pub(crate) fn new(fs: Arc<dyn FileSystem>, path: PathBuf) -> Self {
        IndexFile {
            fs,
            path,
            writer: None,
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces the file with `bytes`, zero-extended to `preallocate` bytes
    /// when given (the file then stays open for entry writes).
    pub(crate) fn rewrite(&mut self, bytes: &[u8], preallocate: Option<u64>) -> Result<()> {
        let path = self.path.clone();
        let ctx = |action| IoSnafu {
            action,
            path: path.clone(),
        };
        self.writer = None;
        let mut f = self.fs.create(&path).context(ctx("create"))?;
        f.append(bytes).context(ctx("write"))?;
        if let Some(len) = preallocate {
            f.set_len(len.max(bytes.len() as u64))
                .context(ctx("preallocate"))?;
            self.writer = Some(f);
        } else {
            f.sync_data().context(ctx("sync"))?;
        }
        Ok(())
    }

    /// Writes an entry at `pos` if the file is open for writing.
    pub(crate) fn write_at(&mut self, pos: u64, bytes: &[u8]) -> Result<()> {
        if let Some(w) = &mut self.writer {
            w.write_at(pos, bytes).context(IoSnafu {
                action: "write",
                path: &self.path,
            })?;
        }
        Ok(())
    }

    /// Trims the file to `len` bytes, syncs it and closes the writer.
    pub(crate) fn trim(&mut self, len: u64) -> Result<()> {
        if let Some(mut w) = self.writer.take() {
            let ctx = |action| IoSnafu {
                action,
                path: self.path.clone(),
            };
            w.set_len(len).context(ctx("trim"))?;
            w.sync_data().context(ctx("sync"))?;
        }
        Ok(())
    }

    pub(crate) fn sync(&mut self) -> Result<()> {
        if let Some(w) = &mut self.writer {
            w.sync_data().context(IoSnafu {
                action: "sync",
                path: &self.path,
            })?;
        }
        Ok(())
    }

    /// Renames the file (if it exists) to `to`.
    pub(crate) fn rename(&mut self, to: PathBuf) -> Result<()> {
        crate::index::rename_if_exists(&*self.fs, &mut self.path, to)
    }

    pub(crate) fn delete(&mut self) -> Result<()> {
        self.writer = None;
        crate::index::remove_if_exists(&*self.fs, &self.path)
    }
}

#[cfg(test)]
mod tests {
    use lithify_vfs::MemFs;

    use super::*;

    fn fs() -> Arc<dyn FileSystem> {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/d")).unwrap();
        Arc::new(fs)
    }

    /// One lifecycle, both entry types: preallocated, appended, trimmed,
    /// loaded back, looked up; `is_full` keeps the time index's roll slot.
    #[test]
    fn both_entry_types_share_the_lifecycle() {
        let fs = fs();
        let mut offsets = OffsetIndex::new(fs.clone(), "/d/0.index".into(), 100, 24);
        let mut times = TimeIndex::new(fs.clone(), "/d/0.timeindex".into(), 100, 36);
        offsets.write_file(true).unwrap();
        times.write_file(true).unwrap();
        let size = |p: &str| lithify_vfs::read_file(&*fs, Path::new(p)).unwrap().len();
        assert_eq!((size("/d/0.index"), size("/d/0.timeindex")), (24, 36));
        assert_eq!((offsets.max_entries(), times.max_entries()), (3, 3));
        offsets.append(105, 0).unwrap();
        offsets.append(110, 400).unwrap();
        assert!(offsets.append(110, 500).is_err(), "offsets must grow");
        times.maybe_append(7, 105, false).unwrap();
        times.maybe_append(7, 107, false).unwrap(); // not larger: no entry
        assert_eq!(times.len(), 1);
        times.maybe_append(9, 110, false).unwrap();
        assert!(times.is_full(), "the last slot is kept for the roll entry");
        assert!(times.maybe_append(10, 111, false).is_err());
        times.maybe_append(10, 111, true).unwrap();
        offsets.append(120, 900).unwrap();
        assert!(offsets.is_full());
        assert!(offsets.append(130, 1000).is_err());
        offsets.trim().unwrap();
        times.trim().unwrap();
        assert_eq!((size("/d/0.index"), size("/d/0.timeindex")), (24, 36));

        let offsets = OffsetIndex::load(fs.clone(), "/d/0.index".into(), 100)
            .unwrap()
            .unwrap();
        let times = TimeIndex::load(fs.clone(), "/d/0.timeindex".into(), 100)
            .unwrap()
            .unwrap();
        assert_eq!(offsets.len(), 3);
        assert_eq!(
            offsets.encode(),
            [
                0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 1, 144, 0, 0, 0, 20, 0, 0, 3, 132
            ]
        );
        assert_eq!(&times.encode()[..12], [0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 5]);
        assert_eq!(
            offsets.lookup(112),
            OffsetPosition {
                offset: 110,
                position: 400
            }
        );
        assert_eq!(
            offsets.lookup(104),
            OffsetPosition {
                offset: 100,
                position: 0
            }
        );
        assert_eq!(
            times.lookup(9),
            TimestampOffset {
                timestamp: 9,
                offset: 110
            }
        );
        assert_eq!(
            times.lookup(6),
            TimestampOffset {
                timestamp: -1,
                offset: 100
            }
        );
        assert_eq!(
            times.last_entry(),
            TimestampOffset {
                timestamp: 10,
                offset: 111
            }
        );
        let all: Vec<_> = offsets.entries().map(|e| e.offset).collect();
        assert_eq!(all, [105, 110, 120]);
        assert!(
            OffsetIndex::load(fs.clone(), "/d/none".into(), 0)
                .unwrap()
                .is_none()
        );
    }

    /// A malformed file of either kind is a corruption error naming the
    /// file, the entry's byte offset and what is wrong.
    #[test]
    fn malformed_files_of_both_kinds_are_refused() {
        let fs = fs();
        let cases: [(&str, Vec<u8>, &str); 5] = [
            (
                "/d/a.index",
                vec![0; 7],
                "offset index size 7 is not a multiple of 8",
            ),
            (
                "/d/b.index",
                [[0, 0, 0, 2, 0, 0, 0, 9], [0, 0, 0, 2, 0, 0, 0, 9]].concat(),
                "at byte offset 8: entry (2, 9) does not follow (2, 9)",
            ),
            ("/d/c.index", vec![0xff; 8], "is out of range"),
            (
                "/d/a.timeindex",
                vec![0; 13],
                "time index size 13 is not a multiple of 12",
            ),
            (
                "/d/b.timeindex",
                [
                    [0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 1],
                    [0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 2],
                ]
                .concat(),
                "at byte offset 12: entry (8, 2) does not follow (9, 1)",
            ),
        ];
        for (path, bytes, message) in cases {
            lithify_vfs::write_file_atomic(&*fs, Path::new(path), &bytes).unwrap();
            let err = if path.ends_with(".index") {
                OffsetIndex::load(fs.clone(), path.into(), 0).unwrap_err()
            } else {
                TimeIndex::load(fs.clone(), path.into(), 0).unwrap_err()
            };
            assert!(err.is_corruption(), "{err}");
            let text = err.to_string();
            assert!(text.contains(path) && text.contains(message), "{text}");
        }
    }
}
