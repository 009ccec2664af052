//! [`BucketFs`]: a lithify-vfs [`FileSystem`] whose files are the objects of
//! a bucket.

use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use lithify_vfs::{FileLock, FileSystem, RandomAccessFile, WritableFile};

use crate::bucket::Bucket;
use crate::cache::PageCache;
use crate::manifest::BucketManifest;

/// How a [`BucketFs`] reads: the page cache and the readahead.
///
/// ```
/// use lithify_bucket::ReadOptions;
///
/// let o = ReadOptions::default();
/// assert_eq!((o.cache_bytes, o.page_size), (256 << 20, 64 << 10));
/// assert_eq!(o.readahead, 2 << 20);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadOptions {
    /// Bound of the page cache in bytes (0: no cache).
    pub cache_bytes: u64,
    /// Size of a cached page; a read that misses fetches whole pages.
    pub page_size: u64,
    /// Bytes fetched at once for a reader going through a file in order
    /// (compaction inputs, scans): one request per `readahead` bytes
    /// instead of one per page.
    pub readahead: u64,
    /// Whether a file just written goes into the cache (so that the flush
    /// output a compaction reads next is local).
    pub cache_written: bool,
}

impl Default for ReadOptions {
    /// 256 MiB of 64 KiB pages, 2 MiB readahead, written files cached.
    fn default() -> Self {
        ReadOptions {
            cache_bytes: 256 << 20,
            page_size: 64 << 10,
            readahead: 2 << 20,
            cache_written: true,
        }
    }
}

impl ReadOptions {
    /// A cache of `cache_bytes` bytes, the other settings default.
    pub fn with_cache_bytes(mut self, cache_bytes: u64) -> Self {
        self.cache_bytes = cache_bytes;
        self
    }
}

/// The files under a local path `root`, kept as the objects under `prefix`
/// in a [`Bucket`].
///
/// `root/a/000012.sst` is the object `prefix/a/000012.sst`. A file is
/// written to memory and uploaded whole by `sync_data`/`sync_all`, with one
/// PUT: so a file is in the bucket entirely or not at all, and a file that
/// was never synced never reaches it (as after a power loss). Reads fetch
/// whole pages into a [`PageCache`] bounded in bytes, with readahead for
/// readers that go through a file in order.
///
/// Object stores have no directories, no appends, no renames and no locks:
/// directories exist while objects are under them; `open_append` downloads
/// the object and the next sync uploads it again whole; `rename` is a copy
/// and a delete; [`lock`](FileSystem::lock) fails with `Unsupported` (keep
/// the LOCK file on local disk: [`SplitFs`](crate::SplitFs) does). A bucket
/// suits files written once, which is what [`SplitFs`](crate::SplitFs) sends
/// to it.
///
/// ```
/// use std::path::Path;
/// use lithify_bucket::{Bucket, BucketFs, ReadOptions};
/// use lithify_vfs::{FileSystem, read_file};
///
/// let bucket = Bucket::in_memory();
/// let fs = BucketFs::new(bucket.clone(), "/db", "tenant-7", ReadOptions::default());
/// let mut f = fs.create(Path::new("/db/000012.sst")).unwrap();
/// f.append(b"table bytes").unwrap();
/// f.sync_all().unwrap(); // one PUT of the whole file
/// assert_eq!(bucket.head("tenant-7/000012.sst").unwrap(), Some(11));
/// assert_eq!(read_file(&fs, Path::new("/db/000012.sst")).unwrap(), b"table bytes");
/// assert_eq!(fs.list_dir(Path::new("/db")).unwrap(), ["000012.sst"]);
/// ```
#[derive(Debug, Clone)]
pub struct BucketFs {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    bucket: Bucket,
    root: PathBuf,
    prefix: String,
    options: ReadOptions,
    cache: Arc<PageCache>,
    /// With the MANIFEST in the bucket: the writer claim that uploads
    /// over an existing object and deletes must hold.
    owner: Option<Arc<BucketManifest>>,
    /// With [`BucketFs::new_objects_only`]: the objects this file system
    /// created, the only ones it may replace or remove.
    own: Option<parking_lot::Mutex<std::collections::BTreeSet<String>>>,
}

impl BucketFs {
    /// The files under the local path `root` as the objects under `prefix`
    /// (`""` for the bucket's top) of `bucket`, read through a new page
    /// cache.
    pub fn new(
        bucket: Bucket,
        root: impl Into<PathBuf>,
        prefix: &str,
        options: ReadOptions,
    ) -> Self {
        let cache = Arc::new(PageCache::new(options.cache_bytes, options.page_size));
        Self::with_cache(bucket, root, prefix, options, cache)
    }

    /// As [`new`](Self::new), reading through `cache` (shared with other
    /// file systems; its page size wins over `options.page_size`).
    pub fn with_cache(
        bucket: Bucket,
        root: impl Into<PathBuf>,
        prefix: &str,
        options: ReadOptions,
        cache: Arc<PageCache>,
    ) -> Self {
        BucketFs {
            shared: Arc::new(Shared {
                bucket,
                root: root.into(),
                prefix: prefix.trim_matches('/').to_owned(),
                options,
                cache,
                owner: None,
                own: None,
            }),
        }
    }

    /// This file system writing only objects of its own: an upload creates
    /// its object only if absent (`AlreadyExists` otherwise), and only the
    /// objects it created are replaced or removed (`PermissionDenied` for
    /// any other). What a compaction worker writes through: two workers
    /// that both took one job (on a store whose conditional PUT is not
    /// atomic) cannot overwrite or remove each other's outputs.
    pub fn new_objects_only(&self) -> Self {
        self.derived(self.shared.owner.clone(), true)
    }

    /// Gives up this file system's claim on the object at `path`, which it
    /// created (see [`new_objects_only`](Self::new_objects_only)): from now
    /// on it may neither replace nor remove it, and no longer remembers
    /// it. A compaction worker hands its outputs over this way once the
    /// writer may install them, so what it remembers stays one job's worth.
    /// Returns whether the object was this file system's.
    ///
    /// ```
    /// use std::path::Path;
    /// use lithify_bucket::{Bucket, BucketFs, ReadOptions};
    /// use lithify_vfs::FileSystem;
    ///
    /// let fs = BucketFs::new(Bucket::in_memory(), "/w", "db", ReadOptions::default())
    ///     .new_objects_only();
    /// let out = Path::new("/w/000009.sst");
    /// let mut f = fs.create(out).unwrap();
    /// f.append(b"table").unwrap();
    /// f.sync_all().unwrap();
    /// assert!(fs.hand_over(out).unwrap());
    /// // Handed over: no longer this file system's to remove.
    /// assert!(fs.remove_file(out).is_err());
    /// assert!(!fs.hand_over(out).unwrap());
    /// ```
    pub fn hand_over(&self, path: &Path) -> io::Result<bool> {
        let key = self.key_of(path)?;
        Ok(match &self.shared.own {
            Some(own) => own.lock().remove(&key),
            None => false,
        })
    }

    /// This file system's bucket, root, prefix, options and page cache,
    /// with `owner`'s writer claim, and tracking the objects it creates
    /// when `own_objects`.
    fn derived(&self, owner: Option<Arc<BucketManifest>>, own_objects: bool) -> Self {
        let s = &self.shared;
        BucketFs {
            shared: Arc::new(Shared {
                bucket: s.bucket.clone(),
                root: s.root.clone(),
                prefix: s.prefix.clone(),
                options: s.options,
                cache: s.cache.clone(),
                owner,
                own: own_objects
                    .then(|| parking_lot::Mutex::new(std::collections::BTreeSet::new())),
            }),
        }
    }

    /// Fails unless this file system may replace or remove `key`.
    fn check_own(&self, key: &str, what: &str) -> io::Result<()> {
        match &self.shared.own {
            Some(own) if !own.lock().contains(key) => Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{what} {key}: not an object this file system created"),
            )),
            _ => Ok(()),
        }
    }

    /// This file system, uploading over an existing object and deleting
    /// only while `owner`'s writer claim is the newest.
    pub(crate) fn with_owner(&self, owner: Arc<BucketManifest>) -> Self {
        self.derived(Some(owner), false)
    }

    /// The bucket.
    pub fn bucket(&self) -> &Bucket {
        &self.shared.bucket
    }

    /// The local path the bucket's prefix stands for.
    pub fn root(&self) -> &Path {
        &self.shared.root
    }

    /// The page cache.
    pub fn cache(&self) -> &Arc<PageCache> {
        &self.shared.cache
    }

    /// Whether `path` is `root` or under it.
    pub fn contains(&self, path: &Path) -> bool {
        path.starts_with(&self.shared.root)
    }

    /// The object key of `path`, or `InvalidInput` if it is not under
    /// `root`.
    pub fn key_of(&self, path: &Path) -> io::Result<String> {
        let rel = path.strip_prefix(&self.shared.root).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is not under {}, which is what {} holds",
                    path.display(),
                    self.shared.root.display(),
                    self.shared.bucket.name()
                ),
            )
        })?;
        let mut key = self.shared.prefix.clone();
        for c in rel.components() {
            match c {
                Component::Normal(part) => {
                    if !key.is_empty() {
                        key.push('/');
                    }
                    key.push_str(&part.to_string_lossy());
                }
                Component::CurDir => {}
                _ => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("{}: no `..` in bucket paths", path.display()),
                    ));
                }
            }
        }
        Ok(key)
    }

    fn writer(&self, path: &Path, data: Vec<u8>, create_new: bool) -> io::Result<BucketWriter> {
        Ok(BucketWriter {
            shared: self.shared.clone(),
            key: self.key_of(path)?,
            data,
            dirty: create_new,
            create_new,
        })
    }
}

impl FileSystem for BucketFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let mut w = self.writer(path, Vec::new(), false)?;
        // An existing object is replaced at the first sync, as a truncated
        // file would be; an unsynced new file never reaches the bucket.
        w.dirty = true;
        Ok(Box::new(w))
    }

    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let key = self.key_of(path)?;
        if self.shared.bucket.head(&key)?.is_some() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} exists in {}", key, self.shared.bucket.name()),
            ));
        }
        Ok(Box::new(self.writer(path, Vec::new(), true)?))
    }

    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        let key = self.key_of(path)?;
        let data = self.shared.bucket.get(&key)?.to_vec();
        Ok(Box::new(self.writer(path, data, false)?))
    }

    fn open(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        let key = self.key_of(path)?;
        let Some(size) = self.shared.bucket.head(&key)? else {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{} is not in {}", key, self.shared.bucket.name()),
            ));
        };
        Ok(Arc::new(BucketReader {
            shared: self.shared.clone(),
            key,
            size,
            next: AtomicU64::new(u64::MAX),
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let (f, t) = (self.key_of(from)?, self.key_of(to)?);
        if self.shared.own.is_some() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("renaming {f}: a file system of new objects only does not rename"),
            ));
        }
        self.shared.bucket.copy(&f, &t)?;
        self.shared.cache.remove_object(&self.shared.cached(&t));
        self.shared.bucket.delete(&f)?;
        self.shared.cache.remove_object(&self.shared.cached(&f));
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let key = self.key_of(path)?;
        if let Some(owner) = &self.shared.owner {
            // A writer fenced out must not delete: the new writer may have
            // written a file of the same number.
            owner.check_owner(&format!("removing {key}"))?;
        }
        self.check_own(&key, "removing")?;
        self.shared.cache.remove_object(&self.shared.cached(&key));
        self.shared.bucket.delete(&key)?;
        if let Some(own) = &self.shared.own {
            own.lock().remove(&key);
        }
        Ok(())
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        if self.list_dir(dir)?.is_empty() {
            Ok(())
        } else {
            Err(io::Error::other(format!(
                "{} is not empty in {}",
                dir.display(),
                self.shared.bucket.name()
            )))
        }
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        let key = self.key_of(dir)?;
        self.shared.bucket.list(&key)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        // Object stores have no directories: a prefix exists while objects
        // are under it. The path must still be one this bucket holds.
        self.key_of(dir).map(|_| ())
    }

    fn exists(&self, path: &Path) -> bool {
        self.try_exists(path).unwrap_or(false)
    }

    fn try_exists(&self, path: &Path) -> io::Result<bool> {
        if path == self.shared.root {
            return Ok(true);
        }
        let Ok(key) = self.key_of(path) else {
            // Outside this bucket's root: nothing of it is here.
            return Ok(false);
        };
        if self.shared.bucket.head(&key)?.is_some() {
            return Ok(true);
        }
        // A prefix with objects under it is a directory.
        Ok(!self.shared.bucket.list(&key)?.is_empty())
    }

    fn is_dir(&self, path: &Path) -> bool {
        if path == self.shared.root {
            return true;
        }
        // A prefix with objects under it.
        let Ok(key) = self.key_of(path) else {
            return false;
        };
        matches!(self.shared.bucket.list(&key), Ok(names) if !names.is_empty())
    }

    fn file_size(&self, path: &Path) -> io::Result<u64> {
        let key = self.key_of(path)?;
        self.shared.bucket.head(&key)?.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("{} is not in {}", key, self.shared.bucket.name()),
            )
        })
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        // A PUT is durable, and its name visible, when it returns.
        self.key_of(dir).map(|_| ())
    }

    fn lock(&self, path: &Path) -> io::Result<FileLock> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "{}: a bucket has no locks; keep the lock file on local disk",
                path.display()
            ),
        ))
    }
}

impl Shared {
    /// The cache's name of object `key`: the bucket's name and the key, so
    /// that a cache shared by file systems over several buckets keeps their
    /// objects apart.
    fn cached(&self, key: &str) -> String {
        format!("{}\n{key}", self.bucket.name())
    }
}

/// A file being written: held in memory, uploaded whole at each sync.
#[derive(Debug)]
struct BucketWriter {
    shared: Arc<Shared>,
    key: String,
    data: Vec<u8>,
    dirty: bool,
    create_new: bool,
}

impl BucketWriter {
    fn upload(&mut self) -> io::Result<()> {
        if !self.dirty {
            return Ok(());
        }
        let bytes = Bytes::copy_from_slice(&self.data);
        self.shared
            .cache
            .remove_object(&self.shared.cached(&self.key));
        match &self.shared.owner {
            // With a writer claim, an upload never replaces an object
            // blindly: it is created only if absent, and an existing one
            // (left by a writer fenced out, under a number it also took) is
            // replaced only while this writer's claim is the newest.
            Some(owner) if !self.create_new => {
                let bucket = &self.shared.bucket;
                match bucket.put(&self.key, bytes.clone(), true) {
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                        // The object as it is before the check; the
                        // replacement then goes through only if nobody
                        // wrote it since (If-Match), so a takeover landing
                        // between the check and the PUT cannot lose the new
                        // writer's table.
                        let etag = bucket.head_etag(&self.key)?.and_then(|(_, e)| e);
                        let what = format!("replacing {}", self.key);
                        owner.check_owner(&what)?;
                        let replaced = match &etag {
                            Some(etag) => bucket.put_if_match(&self.key, bytes.clone(), etag),
                            None => bucket.put(&self.key, bytes.clone(), false),
                        };
                        match replaced {
                            // A store without conditional updates: the
                            // check above is all there is.
                            Err(e) if e.kind() == io::ErrorKind::Unsupported => {
                                bucket.put(&self.key, bytes.clone(), false)?
                            }
                            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                                owner.check_owner(&what)?;
                                return Err(io::Error::new(
                                    io::ErrorKind::AlreadyExists,
                                    format!(
                                        "{}: written by another process during the replacement",
                                        self.key
                                    ),
                                ));
                            }
                            other => other?,
                        }
                    }
                    other => other?,
                }
            }
            _ => match &self.shared.own {
                Some(own) => {
                    // Our own object is replaced; any other is never.
                    let ours = own.lock().contains(&self.key);
                    self.shared.bucket.put(&self.key, bytes.clone(), !ours)?;
                    own.lock().insert(self.key.clone());
                }
                None => self
                    .shared
                    .bucket
                    .put(&self.key, bytes.clone(), self.create_new)?,
            },
        }
        if self.shared.options.cache_written {
            self.shared
                .cache
                .insert_object(&self.shared.cached(&self.key), &bytes);
        }
        self.dirty = false;
        // Written once under this name: later syncs replace our own object.
        self.create_new = false;
        Ok(())
    }
}

impl WritableFile for BucketWriter {
    fn append(&mut self, data: &[u8]) -> io::Result<()> {
        self.data.extend_from_slice(data);
        self.dirty = true;
        Ok(())
    }

    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        let start = usize::try_from(offset).map_err(io::Error::other)?;
        let end = start + data.len();
        if self.data.len() < end {
            self.data.resize(end, 0);
        }
        self.data[start..end].copy_from_slice(data);
        self.dirty = true;
        Ok(())
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.data
            .resize(usize::try_from(len).map_err(io::Error::other)?, 0);
        self.dirty = true;
        Ok(())
    }

    fn len(&self) -> u64 {
        self.data.len() as u64
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.upload()
    }

    fn sync_all(&mut self) -> io::Result<()> {
        self.upload()
    }
}

/// A file open for reads: pages from the cache, misses fetched by ranged
/// GETs.
#[derive(Debug)]
struct BucketReader {
    shared: Arc<Shared>,
    key: String,
    size: u64,
    /// Where the last read ended: a read starting there is sequential and
    /// fetches ahead.
    next: AtomicU64,
}

impl RandomAccessFile for BucketReader {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        if offset >= self.size || buf.is_empty() {
            return Ok(0);
        }
        let len = (buf.len() as u64).min(self.size - offset);
        let end = offset + len;
        let cache = &self.shared.cache;
        let ps = cache.page_size();
        let (first, last) = (offset / ps, (end - 1) / ps);
        let name = self.shared.cached(&self.key);
        // A page of another length than this object's page there is stale
        // (the object was written again): a miss.
        let expected = |p: u64| ps.min(self.size - p * ps) as usize;
        let mut pages: Vec<Option<Bytes>> = (first..=last)
            .map(|p| cache.get(&name, p).filter(|b| b.len() == expected(p)))
            .collect();
        let hits = pages.iter().filter(|p| p.is_some()).count() as u64;
        let misses = pages.len() as u64 - hits;
        let mut ahead = 0;
        if misses > 0 {
            let lo = first + pages.iter().position(Option::is_none).unwrap_or(0) as u64;
            let mut hi = first + pages.iter().rposition(Option::is_none).unwrap_or(0) as u64;
            let sequential = self.next.load(Ordering::Relaxed) == offset;
            let last_page = (self.size - 1) / ps;
            // Readahead the cache cannot keep would be fetched for nothing:
            // at most a quarter of the cache.
            let readahead = self.shared.options.readahead.min(cache.capacity() / 4);
            if sequential && readahead > 0 {
                let target = (offset + readahead - 1) / ps;
                let extended = target.min(last_page).max(hi);
                ahead = (extended - hi) * ps;
                hi = extended;
            }
            let range = lo * ps..((hi + 1) * ps).min(self.size);
            let fetched = self.shared.bucket.get_range(&self.key, range.clone())?;
            if fetched.len() as u64 != range.end - range.start {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "{}: asked for bytes {}..{}, got {} (the object changed size?)",
                        self.key,
                        range.start,
                        range.end,
                        fetched.len()
                    ),
                ));
            }
            for p in lo..=hi {
                let s = ((p - lo) * ps) as usize;
                let e = (s + ps as usize).min(fetched.len());
                let page = fetched.slice(s..e);
                if (first..=last).contains(&p) {
                    pages[(p - first) as usize] = Some(page.clone());
                }
                cache.insert(&name, p, page);
            }
        }
        self.shared.bucket.counters().cache(hits, misses, ahead);
        let mut done = 0usize;
        for (i, page) in pages.into_iter().enumerate() {
            let page = page.expect("every page was found or fetched");
            let page_start = (first + i as u64) * ps;
            let from = offset.max(page_start) - page_start;
            let to = (end.min(page_start + page.len() as u64) - page_start) as usize;
            let n = to - from as usize;
            buf[done..done + n].copy_from_slice(&page[from as usize..to]);
            done += n;
        }
        self.next.store(end, Ordering::Relaxed);
        Ok(done)
    }

    fn size(&self) -> io::Result<u64> {
        Ok(self.size)
    }
}
