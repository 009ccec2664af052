//! [`Bucket`]: one object store, the runtime its requests run on, the retry
//! policy and the request counts.

use std::fmt;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use object_store::path::Path as ObjectPath;
use object_store::{
    ListResult, ObjectMeta, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload,
};

use crate::stats::{BucketStats, Counters};

/// How requests that failed for a passing reason (a timeout, a 5xx, a
/// throttle, a refused connection) are tried again.
///
/// The wait doubles from `first_backoff` up to `max_backoff`; after
/// `attempts` tries the request fails with the last error, which the engine
/// then holds as its background error. A request refused for what it is
/// (not found, already exists, a failed precondition, an invalid path) is
/// never retried.
///
/// ```
/// use std::time::Duration;
/// use lithify_bucket::RetryPolicy;
///
/// let p = RetryPolicy::default();
/// assert_eq!(p.attempts, 8);
/// assert_eq!(p.backoff(0), Duration::from_millis(50));
/// assert_eq!(p.backoff(1), Duration::from_millis(100));
/// assert_eq!(p.backoff(20), p.max_backoff);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Tries in all, the first included (at least 1).
    pub attempts: u32,
    /// Wait before the second try.
    pub first_backoff: Duration,
    /// Longest wait between two tries.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    /// 8 tries, 50 ms doubling to 2 s: about 6 s before a failure is
    /// surfaced.
    fn default() -> Self {
        RetryPolicy {
            attempts: 8,
            first_backoff: Duration::from_millis(50),
            max_backoff: Duration::from_secs(2),
        }
    }
}

impl RetryPolicy {
    /// A policy of `attempts` tries waiting `first_backoff`, doubling up to
    /// `max_backoff`.
    pub fn new(attempts: u32, first_backoff: Duration, max_backoff: Duration) -> Self {
        RetryPolicy {
            attempts: attempts.max(1),
            first_backoff,
            max_backoff,
        }
    }

    /// The wait after failed try number `retry` (0 for the first failure).
    pub fn backoff(&self, retry: u32) -> Duration {
        let factor = 1u32.checked_shl(retry.min(31)).unwrap_or(u32::MAX);
        self.first_backoff
            .checked_mul(factor)
            .unwrap_or(self.max_backoff)
            .min(self.max_backoff)
    }
}

/// Where an S3-compatible bucket is, and how to sign requests to it.
///
/// Requests use path-style addressing and conditional PUT (`If-None-Match:
/// *`), which AWS S3, MinIO, Cloudflare R2 and `s3s-fs` all take. Both
/// `http://` (a server on loopback or a private network) and `https://`
/// endpoints work.
///
/// ```
/// use lithify_bucket::S3Config;
///
/// let c = S3Config::new("http://127.0.0.1:9000", "lithify");
/// assert_eq!(c.region, "us-east-1");
/// assert_eq!(c.bucket, "lithify");
/// // TLS guards the body over https; over http the signature covers it.
/// assert!(c.sign_payload);
/// assert!(!S3Config::new("https://s3.example.com", "b").sign_payload);
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct S3Config {
    /// `http://host:port` or `https://host` of the server.
    pub endpoint: String,
    /// The bucket's name.
    pub bucket: String,
    /// The region requests are signed for.
    pub region: String,
    /// Access key id.
    pub access_key_id: String,
    /// Secret access key.
    pub secret_access_key: String,
    /// How long one request may take before it counts as failed.
    pub request_timeout: Duration,
    /// Whether a PUT's signature covers a SHA-256 of its body (else the
    /// request says `UNSIGNED-PAYLOAD`). `new` sets it for `http://`
    /// endpoints only: over `https://` TLS already guards the body in
    /// transit, and hashing every uploaded byte costs the writer CPU
    /// (about 2% of a bucket-backed fill's, on this project's machine).
    /// Either way every table and MANIFEST object carries its own
    /// checksums, which reads check (tables: unless `verify_checksums` is
    /// turned off).
    pub sign_payload: bool,
}

impl fmt::Debug for S3Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Config")
            .field("endpoint", &self.endpoint)
            .field("bucket", &self.bucket)
            .field("region", &self.region)
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<hidden>")
            .field("request_timeout", &self.request_timeout)
            .field("sign_payload", &self.sign_payload)
            .finish()
    }
}

impl S3Config {
    /// The bucket `bucket` at `endpoint`, region `us-east-1`, with the
    /// credentials of `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` (or
    /// `lithify` / `lithify-secret` when they are unset), a 30 s request
    /// timeout, and signed bodies only over `http://`.
    pub fn new(endpoint: impl Into<String>, bucket: impl Into<String>) -> Self {
        let env = |name: &str, default: &str| {
            std::env::var(name)
                .ok()
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| default.to_owned())
        };
        let endpoint: String = endpoint.into();
        S3Config {
            sign_payload: endpoint.starts_with("http://"),
            endpoint,
            bucket: bucket.into(),
            region: env("AWS_REGION", "us-east-1"),
            access_key_id: env("AWS_ACCESS_KEY_ID", "lithify"),
            secret_access_key: env("AWS_SECRET_ACCESS_KEY", "lithify-secret"),
            request_timeout: Duration::from_secs(30),
        }
    }

    /// The bucket named by `LITHIFY_S3_ENDPOINT` and `LITHIFY_S3_BUCKET`
    /// (default `lithify`), or `None` when no endpoint is set.
    pub fn from_env() -> Option<Self> {
        let endpoint = std::env::var("LITHIFY_S3_ENDPOINT")
            .ok()
            .filter(|e| !e.is_empty())?;
        let bucket = std::env::var("LITHIFY_S3_BUCKET")
            .ok()
            .filter(|b| !b.is_empty())
            .unwrap_or_else(|| "lithify".to_owned());
        Some(S3Config::new(endpoint, bucket))
    }

    /// The `object_store` S3 client for this bucket, with its own retries
    /// off (a [`Bucket`] retries, by its [`RetryPolicy`]). For a bucket
    /// use [`Bucket::s3`]; this is for wrapping the store first (in a
    /// [`FaultStore`](crate::FaultStore), say).
    pub fn store(&self) -> io::Result<Arc<dyn ObjectStore>> {
        // TLS goes through rustls with ring (see Cargo.toml); installing
        // the provider is a no-op when the process has one already. (ring's
        // provider is deprecated for lacking post-quantum key exchange; the
        // aws-lc one needs a C/CMake build on every target.)
        #[allow(deprecated)]
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = object_store::ClientOptions::new()
            .with_allow_http(self.endpoint.starts_with("http://"))
            .with_timeout(self.request_timeout)
            .with_connect_timeout(Duration::from_secs(5));
        let retry = object_store::RetryConfig {
            max_retries: 0,
            ..Default::default()
        };
        let store = object_store::aws::AmazonS3Builder::new()
            .with_endpoint(&self.endpoint)
            .with_bucket_name(&self.bucket)
            .with_region(&self.region)
            .with_access_key_id(&self.access_key_id)
            .with_secret_access_key(&self.secret_access_key)
            .with_virtual_hosted_style_request(false)
            .with_unsigned_payload(!self.sign_payload)
            .with_client_options(client)
            .with_retry(retry)
            .build()
            .map_err(|e| to_io(e, "opening", &self.bucket))?;
        Ok(Arc::new(store))
    }
}

/// How many GETs [`Bucket::get_many`] keeps in flight.
const GETS_IN_FLIGHT: usize = 32;

/// An object store, shared by everything that reads and writes one bucket.
///
/// Cloning is cheap: clones share the store, the runtime and the counts.
/// Every call blocks the calling thread until its request is done (the
/// requests themselves run on a small runtime the bucket owns, so callers
/// need none); a request that fails for a passing reason is retried by the
/// [`RetryPolicy`].
///
/// ```
/// use lithify_bucket::Bucket;
///
/// let bucket = Bucket::in_memory();
/// bucket.put("a/b", b"hello".to_vec().into(), false).unwrap();
/// assert_eq!(bucket.get_range("a/b", 1..4).unwrap().as_ref(), b"ell");
/// assert_eq!(bucket.head("a/b").unwrap(), Some(5));
/// assert_eq!(bucket.stats().put_requests, 1);
/// ```
#[derive(Clone)]
pub struct Bucket {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn ObjectStore>,
    /// Always `Some` until the bucket is dropped.
    runtime: Option<Arc<tokio::runtime::Runtime>>,
    retry: RetryPolicy,
    counters: Arc<Counters>,
    name: String,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The last bucket may be dropped inside an async task, where
        // dropping a runtime panics; let its threads wind down on their
        // own instead.
        if let Some(rt) = self.runtime.take().and_then(|r| Arc::try_unwrap(r).ok()) {
            rt.shutdown_background();
        }
    }
}

impl fmt::Debug for Bucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bucket")
            .field("name", &self.inner.name)
            .field("retry", &self.inner.retry)
            .finish_non_exhaustive()
    }
}

impl Bucket {
    /// A bucket over any object store; `name` is how messages name it.
    pub fn from_store(store: Arc<dyn ObjectStore>, name: impl Into<String>) -> io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("lithify-bucket")
            .enable_all()
            .build()?;
        Ok(Bucket {
            inner: Arc::new(Inner {
                store,
                runtime: Some(Arc::new(runtime)),
                retry: RetryPolicy::default(),
                counters: Arc::new(Counters::default()),
                name: name.into(),
            }),
        })
    }

    /// A bucket kept in memory: for tests and examples.
    pub fn in_memory() -> Self {
        Self::from_store(Arc::new(object_store::memory::InMemory::new()), "memory://")
            .expect("a runtime for the in-memory bucket")
    }

    /// A "bucket" that is the local directory `dir` (created if missing),
    /// through `object_store`'s local store: the same code paths as a
    /// remote bucket, without a server.
    pub fn local(dir: &std::path::Path) -> io::Result<Self> {
        use lithify_vfs::FileSystem;
        lithify_vfs::OsFs.create_dir_all(dir)?;
        let store = object_store::local::LocalFileSystem::new_with_prefix(dir)
            .map_err(|e| to_io(e, "opening", dir.to_string_lossy().as_ref()))?
            .with_automatic_cleanup(true);
        Self::from_store(Arc::new(store), format!("file://{}", dir.display()))
    }

    /// An S3-compatible bucket (see [`S3Config`]).
    pub fn s3(config: &S3Config) -> io::Result<Self> {
        Self::from_store(
            config.store()?,
            format!("s3://{} at {}", config.bucket, config.endpoint),
        )
    }

    /// The bucket a URL names:
    ///
    /// * `http://host:port/name` or `https://host/name`: the S3-compatible
    ///   bucket `name` at that endpoint ([`S3Config::new`]: credentials
    ///   from `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`);
    /// * `memory://`: a bucket in memory;
    /// * `file:///path`, or a plain path: the local directory `path`
    ///   through `object_store`'s local store.
    ///
    /// ```
    /// use lithify_bucket::Bucket;
    ///
    /// assert!(Bucket::open_url("memory://").unwrap().name().starts_with("memory"));
    /// let dir = tempfile::tempdir().unwrap();
    /// assert!(Bucket::open_url(dir.path().to_str().unwrap()).unwrap().name().starts_with("file://"));
    /// assert!(Bucket::open_url("http://127.0.0.1:9000").is_err()); // no bucket name
    /// ```
    pub fn open_url(url: &str) -> io::Result<Self> {
        if url == "memory://" || url == "memory:" {
            return Ok(Self::in_memory());
        }
        if let Some(rest) = url
            .strip_prefix("http://")
            .map(|r| ("http://", r))
            .or_else(|| url.strip_prefix("https://").map(|r| ("https://", r)))
        {
            let (scheme, rest) = rest;
            let (host, name) = rest.split_once('/').unwrap_or((rest, ""));
            let name = name.trim_matches('/');
            if name.is_empty() || name.contains('/') {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{url}: expected {scheme}host:port/bucket-name"),
                ));
            }
            return Self::s3(&S3Config::new(format!("{scheme}{host}"), name));
        }
        match Self::url_local_dir(url) {
            Some(dir) => Self::local(dir),
            None => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{url}: not a bucket URL (http://host:port/name, file:///path, memory://)"),
            )),
        }
    }

    /// The local directory a bucket URL names (`file:///path` or a plain
    /// path), if it names one: what a tool checks before writing there.
    ///
    /// ```
    /// use std::path::Path;
    /// use lithify_bucket::Bucket;
    ///
    /// assert_eq!(Bucket::url_local_dir("file:///tmp/b"), Some(Path::new("/tmp/b")));
    /// assert_eq!(Bucket::url_local_dir("b"), Some(Path::new("b")));
    /// assert_eq!(Bucket::url_local_dir("http://127.0.0.1:9000/b"), None);
    /// assert_eq!(Bucket::url_local_dir("memory://"), None);
    /// ```
    pub fn url_local_dir(url: &str) -> Option<&std::path::Path> {
        let path = url.strip_prefix("file://").unwrap_or(url);
        (!path.is_empty() && !path.contains("://") && !path.starts_with("memory:"))
            .then(|| std::path::Path::new(path))
    }

    /// Deletes every object under `prefix` (which must not be empty: a
    /// whole bucket is not removed this way); returns how many. For tools
    /// cleaning up what they made.
    pub fn remove_all(&self, prefix: &str) -> io::Result<usize> {
        use futures_util::TryStreamExt;
        if prefix.trim_matches('/').is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "refusing to remove every object of the bucket (an empty prefix)",
            ));
        }
        let location = (!prefix.is_empty()).then(|| ObjectPath::from(prefix));
        let keys: Vec<ObjectPath> = self.run("listing", prefix, move |store, c| {
            let location = location.clone();
            async move {
                c.list();
                store
                    .list(location.as_ref())
                    .map_ok(|m| m.location)
                    .try_collect()
                    .await
            }
        })?;
        for key in &keys {
            self.delete(key.as_ref())?;
        }
        Ok(keys.len())
    }

    /// This bucket with `retry` as its retry policy (the store, runtime
    /// and counts are shared with `self`).
    pub fn with_retry(&self, retry: RetryPolicy) -> Self {
        let inner = &self.inner;
        Bucket {
            inner: Arc::new(Inner {
                store: inner.store.clone(),
                runtime: inner.runtime.clone(),
                retry,
                counters: inner.counters.clone(),
                name: inner.name.clone(),
            }),
        }
    }

    /// How messages name this bucket.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Requests made and bytes moved so far.
    pub fn stats(&self) -> BucketStats {
        self.inner.counters.snapshot()
    }

    pub(crate) fn counters(&self) -> &Counters {
        &self.inner.counters
    }

    /// Writes `data` as the object `key`. With `create_new`, fails with
    /// `AlreadyExists` if the object exists (a conditional PUT: of two
    /// writers racing for one key, exactly one succeeds).
    pub fn put(&self, key: &str, data: Bytes, create_new: bool) -> io::Result<()> {
        let mode = if create_new {
            PutMode::Create
        } else {
            PutMode::Overwrite
        };
        self.put_mode(key, data, mode)
    }

    /// Replaces the object `key` with `data` only if its ETag is still
    /// `etag` (`If-Match`): fails with `AlreadyExists` if it changed, and
    /// with `Unsupported` on a store without conditional updates
    /// (`object_store`'s local store).
    pub fn put_if_match(&self, key: &str, data: Bytes, etag: &str) -> io::Result<()> {
        let version = object_store::UpdateVersion {
            e_tag: Some(etag.to_owned()),
            version: None,
        };
        self.put_mode(key, data, PutMode::Update(version))
    }

    fn put_mode(&self, key: &str, data: Bytes, mode: PutMode) -> io::Result<()> {
        let len = data.len() as u64;
        let location = ObjectPath::from(key);
        let conditional = !matches!(mode, PutMode::Overwrite);
        let tries = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let counted = tries.clone();
        let payload = data.clone();
        let result = self.run("writing", key, move |store, c| {
            let location = location.clone();
            let payload = PutPayload::from_bytes(payload.clone());
            let opts = PutOptions {
                mode: mode.clone(),
                ..Default::default()
            };
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            async move {
                c.put(len);
                store.put_opts(&location, payload, opts).await.map(|_| ())
            }
        });
        match result {
            // A conditional PUT refused after an earlier try failed may be
            // refused because that try did store the object (the answer was
            // lost): the same bytes there mean it did.
            Err(e)
                if conditional
                    && e.kind() == io::ErrorKind::AlreadyExists
                    && tries.load(std::sync::atomic::Ordering::Relaxed) > 1 =>
            {
                match self.get(key) {
                    Ok(stored) if stored == data => Ok(()),
                    _ => Err(e),
                }
            }
            other => other,
        }
    }

    /// Bytes `range` of the object `key`.
    pub fn get_range(&self, key: &str, range: std::ops::Range<u64>) -> io::Result<Bytes> {
        let location = ObjectPath::from(key);
        self.run("reading", key, move |store, c| {
            let location = location.clone();
            let range = range.clone();
            async move {
                let bytes = store.get_range(&location, range).await?;
                c.get(bytes.len() as u64);
                Ok(bytes)
            }
        })
    }

    /// The whole object `key`.
    pub fn get(&self, key: &str) -> io::Result<Bytes> {
        self.block(self.get_task(key))
    }

    /// The whole objects `keys`, in their order, with up to 32 requests
    /// at once, each retried as [`get`](Self::get) is: many small objects
    /// (a MANIFEST's parts) in the time of a few. The first failure is the
    /// answer.
    ///
    /// ```
    /// use lithify_bucket::Bucket;
    ///
    /// let bucket = Bucket::in_memory();
    /// bucket.put("p/1", b"one".to_vec().into(), false).unwrap();
    /// bucket.put("p/2", b"two".to_vec().into(), false).unwrap();
    /// let got = bucket.get_many(&["p/2".into(), "p/1".into()]).unwrap();
    /// assert_eq!(got, [&b"two"[..], &b"one"[..]]);
    /// assert!(bucket.get_many(&["p/3".into()]).is_err());
    /// ```
    pub fn get_many(&self, keys: &[String]) -> io::Result<Vec<Bytes>> {
        use futures_util::{StreamExt as _, TryStreamExt as _};
        let requests: Vec<_> = keys.iter().map(|key| self.get_task(key)).collect();
        self.block(async move {
            futures_util::stream::iter(requests)
                .buffered(GETS_IN_FLIGHT)
                .try_collect()
                .await
        })
    }

    /// Reading the whole object `key`, as a task for the runtime.
    fn get_task(&self, key: &str) -> impl Future<Output = io::Result<Bytes>> + Send + 'static {
        let location = ObjectPath::from(key);
        self.retried("reading", key, move |store, c| {
            let location = location.clone();
            async move {
                let bytes = store.get(&location).await?.bytes().await?;
                c.get(bytes.len() as u64);
                Ok(bytes)
            }
        })
    }

    /// The size of the object `key`, or `None` if there is none.
    pub fn head(&self, key: &str) -> io::Result<Option<u64>> {
        Ok(self.head_etag(key)?.map(|(size, _)| size))
    }

    /// The size and ETag of the object `key`, or `None` if there is none.
    pub fn head_etag(&self, key: &str) -> io::Result<Option<(u64, Option<String>)>> {
        let location = ObjectPath::from(key);
        let meta: io::Result<ObjectMeta> = self.run("looking up", key, move |store, c| {
            let location = location.clone();
            async move {
                c.head();
                store.head(&location).await
            }
        });
        match meta {
            Ok(m) => Ok(Some((m.size, m.e_tag))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Removes the object `key` (S3 reports success for a missing one).
    pub fn delete(&self, key: &str) -> io::Result<()> {
        let location = ObjectPath::from(key);
        self.run("removing", key, move |store, c| {
            let location = location.clone();
            async move {
                c.delete();
                store.delete(&location).await
            }
        })
    }

    /// Copies `from` to `to` inside the bucket (server side), replacing
    /// `to`.
    pub fn copy(&self, from: &str, to: &str) -> io::Result<()> {
        let (f, t) = (ObjectPath::from(from), ObjectPath::from(to));
        self.run("copying", from, move |store, c| {
            let (f, t) = (f.clone(), t.clone());
            async move {
                c.copy();
                store.copy(&f, &t).await
            }
        })
    }

    /// The objects and "directories" directly under `prefix` (`""` for the
    /// bucket's top): names relative to `prefix`, sorted.
    pub fn list(&self, prefix: &str) -> io::Result<Vec<String>> {
        let result = self.list_result(prefix)?;
        let mut names: Vec<String> = result
            .objects
            .iter()
            .map(|o| &o.location)
            .chain(result.common_prefixes.iter())
            .filter_map(|p| p.filename().map(str::to_owned))
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// The objects directly under `prefix` with their sizes, sorted by
    /// name ("directories" left out).
    pub fn list_sized(&self, prefix: &str) -> io::Result<Vec<(String, u64)>> {
        let result = self.list_result(prefix)?;
        let mut objects: Vec<(String, u64)> = result
            .objects
            .iter()
            .filter_map(|o| o.location.filename().map(|n| (n.to_owned(), o.size)))
            .collect();
        objects.sort();
        Ok(objects)
    }

    fn list_result(&self, prefix: &str) -> io::Result<ListResult> {
        let location = (!prefix.is_empty()).then(|| ObjectPath::from(prefix));
        self.run("listing", prefix, move |store, c| {
            let location = location.clone();
            async move {
                c.list();
                store.list_with_delimiter(location.as_ref()).await
            }
        })
    }

    /// Runs one request on the bucket's runtime, retrying passing failures,
    /// and waits for it.
    fn run<T, F, Fut>(&self, op: &'static str, key: &str, request: F) -> io::Result<T>
    where
        T: Send + 'static,
        F: FnMut(Arc<dyn ObjectStore>, Arc<Counters>) -> Fut + Send + 'static,
        Fut: Future<Output = object_store::Result<T>> + Send,
    {
        self.block(self.retried(op, key, request))
    }

    /// One request, retrying passing failures, as a task for the runtime.
    fn retried<T, F, Fut>(
        &self,
        op: &'static str,
        key: &str,
        mut request: F,
    ) -> impl Future<Output = io::Result<T>> + Send + 'static
    where
        T: Send + 'static,
        F: FnMut(Arc<dyn ObjectStore>, Arc<Counters>) -> Fut + Send + 'static,
        Fut: Future<Output = object_store::Result<T>> + Send,
    {
        let store = self.inner.store.clone();
        let counters = self.inner.counters.clone();
        let retry = self.inner.retry;
        let key = key.to_owned();
        let name = self.inner.name.clone();
        async move {
            let mut failures = 0;
            loop {
                match request(store.clone(), counters.clone()).await {
                    Ok(v) => return Ok(v),
                    Err(e) if is_passing(&e) && failures + 1 < retry.attempts => {
                        let wait = retry.backoff(failures);
                        failures += 1;
                        counters.retry();
                        tracing::warn!(
                            bucket = %name, key = %key, op, attempt = failures,
                            wait_ms = wait.as_millis() as u64, error = %e,
                            "object store request failed; retrying"
                        );
                        tokio::time::sleep(wait).await;
                    }
                    Err(e) => {
                        if is_passing(&e) {
                            counters.failure();
                            tracing::error!(
                                bucket = %name, key = %key, op, attempts = failures + 1,
                                error = %e, "object store request failed; giving up"
                            );
                            let io = to_io(e, op, &key);
                            return Err(io::Error::new(
                                io.kind(),
                                format!("{io} (after {} tries)", failures + 1),
                            ));
                        }
                        return Err(to_io(e, op, &key));
                    }
                }
            }
        }
    }

    /// Runs `task` on the runtime and waits for its result, from any thread
    /// (an async caller's worker thread included).
    fn block<T: Send + 'static>(
        &self,
        task: impl Future<Output = io::Result<T>> + Send + 'static,
    ) -> io::Result<T> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let runtime = self.inner.runtime.as_ref().expect("set until drop");
        runtime.spawn(async move {
            let _ = tx.send(task.await);
        });
        rx.recv().unwrap_or_else(|_| {
            Err(io::Error::other(format!(
                "{}: the request was dropped (the bucket is shutting down)",
                self.inner.name
            )))
        })
    }
}

/// Whether `e` may pass if the request is tried again.
fn is_passing(e: &object_store::Error) -> bool {
    matches!(
        e,
        object_store::Error::Generic { .. } | object_store::Error::JoinError { .. }
    )
}

/// `e` as an `io::Error` naming the operation and the object.
fn to_io(e: object_store::Error, op: &str, key: &str) -> io::Error {
    use object_store::Error as E;
    let kind = match &e {
        E::NotFound { .. } => io::ErrorKind::NotFound,
        E::AlreadyExists { .. } | E::Precondition { .. } => io::ErrorKind::AlreadyExists,
        E::NotSupported { .. } | E::NotImplemented { .. } => io::ErrorKind::Unsupported,
        E::InvalidPath { .. } => io::ErrorKind::InvalidInput,
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, format!("{op} object {key}: {e}"))
}
