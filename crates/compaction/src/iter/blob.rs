//! Reading separated values during compaction.

use bytes::Bytes;
use lithify_blob::Readahead;

/// Reads the value a blob index points at (the engine's blob file cache
/// implements it). A compaction needs the value itself only to show it to
/// a compaction filter, to merge operands onto it, or to copy it out of an
/// old blob file (garbage collection); otherwise the blob index passes
/// through untouched.
pub trait BlobFetcher: Send + Sync {
    /// The value of `user_key` that the encoded blob index `index` (the
    /// entry's value) points at. Errors name the blob file and offset.
    fn fetch(&self, user_key: &[u8], index: &[u8]) -> lithify_base::Result<Bytes>;

    /// [`fetch`](Self::fetch) for a reader going through values in
    /// order, as garbage collection relocates them: `ahead` keeps the
    /// reader's readahead windows (RocksDB's
    /// `blob_compaction_readahead_size`). A fetcher that cannot read ahead
    /// reads each value alone, which is what this default does.
    fn fetch_sequential(
        &self,
        user_key: &[u8],
        index: &[u8],
        ahead: &mut Readahead,
    ) -> lithify_base::Result<Bytes> {
        let _ = ahead;
        self.fetch(user_key, index)
    }
}
