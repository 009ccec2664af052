//! Requests made to a bucket and bytes moved, and the page cache's hits.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Counts of one [`Bucket`](crate::Bucket) since it was opened (shared by
/// its clones), and of the page caches of the file systems over it.
///
/// ```
/// use lithify_bucket::Bucket;
///
/// let b = Bucket::in_memory();
/// b.put("k", vec![0; 100].into(), false).unwrap();
/// b.get_range("k", 0..10).unwrap();
/// let s = b.stats();
/// assert_eq!((s.put_requests, s.bytes_uploaded), (1, 100));
/// assert_eq!((s.get_requests, s.bytes_downloaded), (1, 10));
/// assert_eq!(s.requests(), 2);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BucketStats {
    /// PUT requests (tries, retries included).
    pub put_requests: u64,
    /// GET requests (whole objects and ranges).
    pub get_requests: u64,
    /// HEAD requests.
    pub head_requests: u64,
    /// LIST requests.
    pub list_requests: u64,
    /// DELETE requests.
    pub delete_requests: u64,
    /// Server-side COPY requests.
    pub copy_requests: u64,
    /// Bytes sent in PUT bodies.
    pub bytes_uploaded: u64,
    /// Bytes received in GET bodies.
    pub bytes_downloaded: u64,
    /// Requests tried again after a passing failure.
    pub retries: u64,
    /// Requests that failed after their last try.
    pub failures: u64,
    /// Reads served from the page cache, page by page.
    pub cache_hits: u64,
    /// Pages a read had to fetch (readahead pages not counted).
    pub cache_misses: u64,
    /// Bytes fetched ahead of a sequential reader.
    pub readahead_bytes: u64,
}

impl std::fmt::Display for BucketStats {
    /// One line: requests by kind, bytes each way, retries, the page
    /// cache's hit rate.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} requests (PUT {}, GET {}, HEAD {}, LIST {}, DELETE {}, COPY {}), {:.1} MB up, {:.1} MB down, {} retries, {} failed; page cache hit rate {:.1} % ({:.1} MB read ahead)",
            self.requests(),
            self.put_requests,
            self.get_requests,
            self.head_requests,
            self.list_requests,
            self.delete_requests,
            self.copy_requests,
            self.bytes_uploaded as f64 / 1e6,
            self.bytes_downloaded as f64 / 1e6,
            self.retries,
            self.failures,
            100.0 * self.cache_hit_rate(),
            self.readahead_bytes as f64 / 1e6,
        )
    }
}

impl BucketStats {
    /// All requests of every kind.
    pub fn requests(&self) -> u64 {
        self.put_requests
            + self.get_requests
            + self.head_requests
            + self.list_requests
            + self.delete_requests
            + self.copy_requests
    }

    /// Share of page lookups the cache answered (0 when there were none).
    pub fn cache_hit_rate(&self) -> f64 {
        let all = self.cache_hits + self.cache_misses;
        if all == 0 {
            0.0
        } else {
            self.cache_hits as f64 / all as f64
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    put: AtomicU64,
    get: AtomicU64,
    head: AtomicU64,
    list: AtomicU64,
    delete: AtomicU64,
    copy: AtomicU64,
    up: AtomicU64,
    down: AtomicU64,
    retries: AtomicU64,
    failures: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
    readahead: AtomicU64,
}

impl Counters {
    pub(crate) fn put(&self, bytes: u64) {
        self.put.fetch_add(1, Relaxed);
        self.up.fetch_add(bytes, Relaxed);
    }
    pub(crate) fn get(&self, bytes: u64) {
        self.get.fetch_add(1, Relaxed);
        self.down.fetch_add(bytes, Relaxed);
    }
    pub(crate) fn head(&self) {
        self.head.fetch_add(1, Relaxed);
    }
    pub(crate) fn list(&self) {
        self.list.fetch_add(1, Relaxed);
    }
    pub(crate) fn delete(&self) {
        self.delete.fetch_add(1, Relaxed);
    }
    pub(crate) fn copy(&self) {
        self.copy.fetch_add(1, Relaxed);
    }
    pub(crate) fn retry(&self) {
        self.retries.fetch_add(1, Relaxed);
    }
    pub(crate) fn failure(&self) {
        self.failures.fetch_add(1, Relaxed);
    }
    pub(crate) fn cache(&self, hits: u64, misses: u64, readahead_bytes: u64) {
        self.hits.fetch_add(hits, Relaxed);
        self.misses.fetch_add(misses, Relaxed);
        self.readahead.fetch_add(readahead_bytes, Relaxed);
    }

    pub(crate) fn snapshot(&self) -> BucketStats {
        BucketStats {
            put_requests: self.put.load(Relaxed),
            get_requests: self.get.load(Relaxed),
            head_requests: self.head.load(Relaxed),
            list_requests: self.list.load(Relaxed),
            delete_requests: self.delete.load(Relaxed),
            copy_requests: self.copy.load(Relaxed),
            bytes_uploaded: self.up.load(Relaxed),
            bytes_downloaded: self.down.load(Relaxed),
            retries: self.retries.load(Relaxed),
            failures: self.failures.load(Relaxed),
            cache_hits: self.hits.load(Relaxed),
            cache_misses: self.misses.load(Relaxed),
            readahead_bytes: self.readahead.load(Relaxed),
        }
    }
}
