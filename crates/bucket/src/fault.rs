//! [`FaultStore`]: an object store that fails on demand, for tests of what
//! a store outage does.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::stream::{self, BoxStream, StreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result,
};

/// Wraps an object store and fails its requests on demand, the way an
/// unreachable or overloaded server does (a passing failure, which a
/// [`Bucket`](crate::Bucket) retries).
///
/// ```
/// use std::sync::Arc;
/// use lithify_bucket::{Bucket, FaultStore, RetryPolicy};
/// use std::time::Duration;
///
/// let faults = Arc::new(FaultStore::new(Arc::new(object_store::memory::InMemory::new())));
/// let bucket = Bucket::from_store(faults.clone(), "faulty").unwrap()
///     .with_retry(RetryPolicy::new(3, Duration::from_millis(1), Duration::from_millis(1)));
/// faults.fail_next(2); // two failures, then the third try passes
/// bucket.put("k", b"v".to_vec().into(), false).unwrap();
/// assert_eq!(bucket.stats().retries, 2);
/// faults.set_down(true); // every try fails: the error surfaces
/// assert!(bucket.get("k").unwrap_err().to_string().contains("after 3 tries"));
/// faults.set_down(false);
/// assert_eq!(bucket.get("k").unwrap().as_ref(), b"v");
/// ```
pub struct FaultStore {
    inner: Arc<dyn ObjectStore>,
    down: AtomicBool,
    fail_next: AtomicU64,
    lose_next: AtomicU64,
    failed: AtomicU64,
}

impl fmt::Debug for FaultStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultStore")
            .field("down", &self.down.load(Ordering::Relaxed))
            .field("fail_next", &self.fail_next.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl fmt::Display for FaultStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FaultStore({})", self.inner)
    }
}

impl FaultStore {
    /// `inner`, failing nothing yet.
    pub fn new(inner: Arc<dyn ObjectStore>) -> Self {
        FaultStore {
            inner,
            down: AtomicBool::new(false),
            fail_next: AtomicU64::new(0),
            lose_next: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        }
    }

    /// While `down`, every request fails.
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    /// The next `n` requests fail.
    pub fn fail_next(&self, n: u64) {
        self.fail_next.store(n, Ordering::SeqCst);
    }

    /// The next `n` PUTs reach the store, but their answers are lost: the
    /// caller sees a failure for a write that happened (a timeout after
    /// the server stored the object).
    pub fn lose_next_answers(&self, n: u64) {
        self.lose_next.store(n, Ordering::SeqCst);
    }

    /// Requests failed so far.
    pub fn failed(&self) -> u64 {
        self.failed.load(Ordering::SeqCst)
    }

    fn check(&self) -> Result<()> {
        let injected = self.down.load(Ordering::SeqCst)
            || self
                .fail_next
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
        if injected {
            self.failed.fetch_add(1, Ordering::SeqCst);
            return Err(object_store::Error::Generic {
                store: "FaultStore",
                source: "injected failure: service unavailable".into(),
            });
        }
        Ok(())
    }
}

#[async_trait]
impl ObjectStore for FaultStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.check()?;
        let result = self.inner.put_opts(location, payload, opts).await;
        if self
            .lose_next
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            self.failed.fetch_add(1, Ordering::SeqCst);
            return Err(object_store::Error::Generic {
                store: "FaultStore",
                source: "injected failure: the answer was lost after the write".into(),
            });
        }
        result
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.check()?;
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.check()?;
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.check()?;
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        if let Err(e) = self.check() {
            return stream::once(async move { Err(e) }).boxed();
        }
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        if let Err(e) = self.check() {
            return stream::once(async move { Err(e) }).boxed();
        }
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.check()?;
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.check()?;
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.check()?;
        self.inner.rename_opts(from, to, options).await
    }
}
