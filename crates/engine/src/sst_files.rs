//! The database's SSTs: [`SstFiles`] says where they are and opens a
//! version's files for reads, through the block cache, with the SST
//! options of the database (and holds the blob files their separated
//! values are in); [`InputOpener`] is the compaction core's
//! [`SstOpener`], opening a job's inputs for one pass around the cache.

use std::path::PathBuf;
use std::sync::Arc as StdArc;

use lithify_base::InternalKeyComparator;
use lithify_compaction::job::SstOpener;
use lithify_sstable::{BlockCache, SstOptions, SstReader};
use lithify_version::FileMetadata;
use lithify_version::filename::sst_file_name;
use lithify_vfs::FileSystem;
use snafu::ResultExt;

use crate::error::{IoSnafu, Result};

/// An open SST, shared by every super version that holds it.
pub(crate) type SharedSst = StdArc<SstReader<InternalKeyComparator>>;

/// Where the database's SSTs are and how they are read: what opening one
/// needs.
pub(crate) struct SstFiles {
    pub(crate) fs: StdArc<dyn FileSystem>,
    pub(crate) dir: PathBuf,
    pub(crate) options: SstOptions<InternalKeyComparator>,
    pub(crate) cache: Option<StdArc<BlockCache>>,
    /// The blob files the SSTs' blob indexes point into.
    pub(crate) blobs: crate::blob_files::BlobFiles,
}

impl SstFiles {
    /// Opens SST `number` of `size` bytes (the size its metadata records),
    /// reading through the block cache.
    pub(crate) fn open(&self, number: u64, size: u64) -> Result<SharedSst> {
        self.open_with(number, size, self.cache.clone())
    }

    /// Opens SST `number` for a one-pass read that bypasses the block
    /// cache.
    pub(crate) fn open_uncached(&self, number: u64, size: u64) -> Result<SharedSst> {
        self.open_with(number, size, None)
    }

    fn open_with(
        &self,
        number: u64,
        size: u64,
        cache: Option<StdArc<BlockCache>>,
    ) -> Result<SharedSst> {
        let path = self.dir.join(sst_file_name(number));
        let file = self.fs.open(&path).context(IoSnafu {
            op: "opening SST",
            path: path.clone(),
        })?;
        let table = SstReader::open(file, &path, size, &self.options, cache)?;
        Ok(StdArc::new(table))
    }
}

/// Opens a compaction's inputs for one sequential pass **without** the
/// block cache (RocksDB reads compaction inputs with `fill_cache = false`):
/// a compaction must not evict the blocks readers use, nor hold a cache's
/// worth of memory while a memtable fills.
pub(crate) struct InputOpener<'a> {
    pub(crate) opener: &'a SstFiles,
}

impl SstOpener for InputOpener<'_> {
    fn open_sst(
        &self,
        file: &FileMetadata,
    ) -> lithify_base::Result<StdArc<SstReader<InternalKeyComparator>>> {
        Ok(self.opener.open_uncached(file.number, file.size)?)
    }
}
