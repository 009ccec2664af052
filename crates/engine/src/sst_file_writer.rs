//! RocksDB's `SstFileWriter`: an SST file written outside the database,
//! in key order, for [`Db::ingest_external_file`](crate::Db::ingest_external_file).
//!
//! Entries carry sequence number 0 (ingestion assigns the real one); keys
//! must be strictly increasing under the table's comparator. The file is
//! built with the database's table options (block size, compression,
//! bloom filter, comparator), so it is an ordinary table of that database.

use std::path::{Path, PathBuf};

use lithify_base::key::append_internal_key;
use lithify_base::{InternalKeyComparator, ValueKind};
use lithify_sstable::SstBuilder;
use snafu::ResultExt;

use crate::error::{InvalidArgumentSnafu, IoSnafu, Result, SstSnafu};
use crate::options::Options;

/// What [`SstFileWriter::finish`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalSstInfo {
    /// The file.
    pub path: PathBuf,
    /// Its smallest user key (of a point entry or a range deletion).
    pub smallest_key: Vec<u8>,
    /// Its largest user key (a range deletion's end counts, exclusive).
    pub largest_key: Vec<u8>,
    /// Point entries (puts and deletes).
    pub num_entries: u64,
    /// Range deletions.
    pub num_range_deletions: u64,
    /// Bytes of the file.
    pub file_size: u64,
}

/// Writes one external SST file, for
/// [`Db::ingest_external_file`](crate::Db::ingest_external_file).
///
/// ```
/// # fn main() -> lithify_engine::Result<()> {
/// use lithify_engine::{Db, IngestOptions, Options, SstFileWriter};
///
/// let dir = tempfile::tempdir().unwrap();
/// let options = Options::default();
/// let mut w = SstFileWriter::create(dir.path().join("bulk.sst"), &options)?;
/// w.put(b"a", b"1")?;
/// w.put(b"b", b"2")?;
/// assert!(w.put(b"a", b"0").is_err()); // keys must increase
/// let file = w.finish()?;
///
/// let db = Db::open(dir.path().join("db"), options)?;
/// db.ingest_external_file(&[file.path], &IngestOptions::default())?;
/// assert_eq!(db.get(b"b")?.as_deref(), Some(&b"2"[..]));
/// # Ok(())
/// # }
/// ```
pub struct SstFileWriter {
    builder: SstBuilder<InternalKeyComparator>,
    icmp: InternalKeyComparator,
    path: PathBuf,
    last_key: Option<Vec<u8>>,
    key: Vec<u8>,
    smallest: Option<Vec<u8>>,
    largest: Option<Vec<u8>>,
    entries: u64,
    range_deletions: u64,
}

impl std::fmt::Debug for SstFileWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SstFileWriter")
            .field("path", &self.path)
            .field("entries", &self.entries)
            .finish_non_exhaustive()
    }
}

impl SstFileWriter {
    /// Creates `path` (on `options.fs`) for a table written with
    /// `options`' table settings.
    pub fn create(path: impl AsRef<Path>, options: &Options) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let mut sst = crate::options::translate::sst_options(options);
        sst.creation_time = Some(options.clock.now_secs());
        let file = options.fs.create_new(&path).context(IoSnafu {
            op: "creating",
            path: path.clone(),
        })?;
        let mut builder = SstBuilder::new(file, &path, &sst).context(SstSnafu)?;
        // As RocksDB's writer does: a fixed database identity that says no
        // database wrote the file, and a fresh session, so the file's
        // unique id is its own; a database that ingests it records that id.
        builder.set_identity(
            lithify_base::Id::derive(&[b"lithify SstFileWriter"]),
            lithify_base::Id::random(),
            1,
        );
        Ok(SstFileWriter {
            builder,
            icmp: sst.comparator.clone(),
            path,
            last_key: None,
            key: Vec::new(),
            smallest: None,
            largest: None,
            entries: 0,
            range_deletions: 0,
        })
    }

    /// Adds a value for `key`, which must sort after every key added.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        self.add(key.as_ref(), ValueKind::Put, value.as_ref())
    }

    /// Adds a deletion of `key`, which must sort after every key added.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> Result<()> {
        self.add(key.as_ref(), ValueKind::Delete, b"")
    }

    /// Deletes every key in `[start, end)` of what the database holds
    /// below the ingested file (range deletions may come in any order).
    pub fn delete_range(&mut self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Result<()> {
        let (start, end) = (start.as_ref(), end.as_ref());
        if !self.icmp.compare_user(start, end).is_lt() {
            return InvalidArgumentSnafu {
                message: "delete_range needs start < end".to_owned(),
            }
            .fail();
        }
        self.key.clear();
        append_internal_key(&mut self.key, start, 0, ValueKind::RangeDelete as u8);
        self.builder
            .add_range_tombstone(&self.key, end)
            .context(SstSnafu)?;
        self.widen(start);
        self.widen(end);
        self.range_deletions += 1;
        Ok(())
    }

    fn add(&mut self, key: &[u8], kind: ValueKind, value: &[u8]) -> Result<()> {
        if let Some(last) = &self.last_key
            && !self.icmp.compare_user(last, key).is_lt()
        {
            return InvalidArgumentSnafu {
                message: format!(
                    "{}: keys must be added in strictly increasing order ({:?} after {:?})",
                    self.path.display(),
                    String::from_utf8_lossy(key),
                    String::from_utf8_lossy(last)
                ),
            }
            .fail();
        }
        self.key.clear();
        append_internal_key(&mut self.key, key, 0, kind as u8);
        self.builder.add(&self.key, value).context(SstSnafu)?;
        self.last_key = Some(key.to_vec());
        self.widen(key);
        self.entries += 1;
        Ok(())
    }

    fn widen(&mut self, key: &[u8]) {
        if self
            .smallest
            .as_deref()
            .is_none_or(|s| self.icmp.compare_user(key, s).is_lt())
        {
            self.smallest = Some(key.to_vec());
        }
        if self
            .largest
            .as_deref()
            .is_none_or(|l| self.icmp.compare_user(key, l).is_gt())
        {
            self.largest = Some(key.to_vec());
        }
    }

    /// Finishes and syncs the file. A file with nothing in it is refused
    /// (as RocksDB refuses it).
    pub fn finish(self) -> Result<ExternalSstInfo> {
        let (Some(smallest_key), Some(largest_key)) = (self.smallest, self.largest) else {
            return InvalidArgumentSnafu {
                message: format!(
                    "{}: an external table needs at least one entry",
                    self.path.display()
                ),
            }
            .fail();
        };
        let built = self.builder.finish().context(SstSnafu)?;
        Ok(ExternalSstInfo {
            path: self.path,
            smallest_key,
            largest_key,
            num_entries: self.entries,
            num_range_deletions: self.range_deletions,
            file_size: built.file_size,
        })
    }
}
