//! The database's blob files: opened on first need and kept open, their
//! values read through the blob cache when there is one
//! ([`Options::blob_cache`](crate::Options::blob_cache); none by default,
//! as in RocksDB). Reads ([`BlobFiles::get`]) turn a blob index into the
//! value; iterators read ahead ([`BlobFiles::get_sequential`]) when they
//! go through a blob file in order; compaction reads through the same
//! handle ([`BlobFetcher`]), ahead when it relocates values, and without
//! filling the cache (RocksDB's compaction reads with `fill_cache =
//! false`: a relocated value is about to move to another file).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc as StdArc;

use bytes::Bytes;
use lithify_base::sync::Mutex;
use lithify_blob::{BlobFileReader, BlobIndex, Readahead};
use lithify_compaction::iter::BlobFetcher;
use lithify_sstable::BlockCache;
use lithify_version::filename::blob_file_name;
use lithify_vfs::FileSystem;

/// An open blob file and its id in the blob cache.
struct OpenBlob {
    reader: StdArc<BlobFileReader>,
    cache_id: u64,
}

/// Opens and reads the blob files of one database directory.
pub(crate) struct BlobFiles {
    fs: StdArc<dyn FileSystem>,
    dir: PathBuf,
    cache: Option<StdArc<BlockCache>>,
    open: Mutex<HashMap<u64, StdArc<OpenBlob>>>,
}

impl BlobFiles {
    pub(crate) fn new(
        fs: StdArc<dyn FileSystem>,
        dir: PathBuf,
        cache: Option<StdArc<BlockCache>>,
    ) -> Self {
        BlobFiles {
            fs,
            dir,
            cache,
            open: Mutex::new(HashMap::new()),
        }
    }

    /// The path of blob file `number`.
    pub(crate) fn path_of(&self, number: u64) -> PathBuf {
        self.dir.join(blob_file_name(number))
    }

    fn opened(&self, number: u64) -> lithify_base::Result<StdArc<OpenBlob>> {
        if let Some(open) = self.open.lock().get(&number) {
            return Ok(StdArc::clone(open));
        }
        let path = self.path_of(number);
        let file = self
            .fs
            .open(&path)
            .map_err(|e| lithify_base::Error::io(&path, e))?;
        let reader = BlobFileReader::open(file, &path).map_err(lithify_base::Error::external)?;
        if reader.header().file_number != number {
            return Err(lithify_base::Error::corruption(
                &path,
                0,
                format!(
                    "the blob file's header names file {}, not {number}",
                    reader.header().file_number
                ),
            ));
        }
        let open = StdArc::new(OpenBlob {
            reader: StdArc::new(reader),
            cache_id: self.cache.as_ref().map_or(0, |c| c.new_table_id()),
        });
        Ok(StdArc::clone(
            self.open.lock().entry(number).or_insert(open),
        ))
    }

    /// The value of `user_key` that the encoded blob index `index` points
    /// at, from the blob cache or the blob file.
    pub(crate) fn get(&self, user_key: &[u8], index: &[u8]) -> lithify_base::Result<Bytes> {
        self.read(user_key, index, None, true)
    }

    /// [`get`](Self::get) for a reader going through values in file
    /// order (an iterator): misses of the cache read ahead through
    /// `ahead` ([`BlobFileReader::get_sequential`]).
    pub(crate) fn get_sequential(
        &self,
        user_key: &[u8],
        index: &[u8],
        ahead: &mut Readahead,
    ) -> lithify_base::Result<Bytes> {
        self.read(user_key, index, Some(ahead), true)
    }

    fn read(
        &self,
        user_key: &[u8],
        index: &[u8],
        ahead: Option<&mut Readahead>,
        fill_cache: bool,
    ) -> lithify_base::Result<Bytes> {
        let index = BlobIndex::decode(index).map_err(|e| {
            lithify_base::Error::invalid_argument(format!(
                "malformed blob index of key {}: {e}",
                lithify_base::key::escape(user_key)
            ))
        })?;
        let open = self.opened(index.file_number)?;
        if let Some(cache) = &self.cache
            && let Some(value) = cache.get(open.cache_id, index.offset)
        {
            return Ok(value);
        }
        let value = match ahead {
            Some(ahead) => open.reader.get_sequential(user_key, &index, ahead),
            None => open.reader.get(user_key, &index),
        }
        .map_err(lithify_base::Error::external)?;
        if fill_cache && let Some(cache) = &self.cache {
            cache.insert(open.cache_id, index.offset, value.clone());
        }
        Ok(value)
    }

    /// Forgets blob file `number` (it was deleted).
    pub(crate) fn evict(&self, number: u64) {
        self.open.lock().remove(&number);
    }
}

impl BlobFetcher for BlobFiles {
    fn fetch(&self, user_key: &[u8], index: &[u8]) -> lithify_base::Result<Bytes> {
        self.read(user_key, index, None, false)
    }

    fn fetch_sequential(
        &self,
        user_key: &[u8],
        index: &[u8],
        ahead: &mut Readahead,
    ) -> lithify_base::Result<Bytes> {
        self.read(user_key, index, Some(ahead), false)
    }
}
