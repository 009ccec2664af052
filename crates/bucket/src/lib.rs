//! Table and blob files of a lithify database in an S3-compatible bucket.
//!
//! * [`Bucket`] is one object store (S3 or a compatible server, a local
//!   directory through `object_store`'s local store, or memory), the
//!   runtime its requests run on, the [`RetryPolicy`] for passing failures
//!   and the [`BucketStats`] of every request.
//! * [`BucketFs`] is a `lithify-vfs` file system whose files are objects: a
//!   file is uploaded whole when it is synced, and read through a bounded
//!   [`PageCache`] with readahead.
//! * [`FaultStore`] fails a store's requests on demand, for tests of
//!   outages.
//! * [`SplitFs`] is what a database opens: its SSTs and blob files (written
//!   once, never changed) go to the bucket, the WAL, LOCK and the info log
//!   stay on local disk, and the MANIFEST and CURRENT stay local too or go
//!   to the bucket as immutable numbered objects, with writer-epoch fencing
//!   ([`SplitFs::with_manifest_in_bucket`]).
//!
//! ```
//! use std::sync::Arc;
//! use lithify_bucket::{Bucket, BucketFs, ReadOptions, SplitFs};
//! use lithify_engine::{Db, Options};
//! use lithify_vfs::MemFs;
//!
//! let bucket = Bucket::in_memory();
//! let tables = BucketFs::new(bucket.clone(), "/db", "db", ReadOptions::default());
//! let mut options = Options::default();
//! options.fs = Arc::new(SplitFs::new(Arc::new(MemFs::new()), tables));
//! let db = Db::open("/db", options).unwrap();
//! db.put(b"k", b"v").unwrap();
//! db.flush().unwrap();
//! assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
//! assert!(bucket.list("db").unwrap().iter().any(|n| n.ends_with(".sst")));
//! ```

mod bucket;
mod cache;
mod fault;
pub mod format;
mod fs;
mod grace;
mod manifest;
mod split;
mod stats;

pub use bucket::{Bucket, RetryPolicy, S3Config};
pub use cache::PageCache;
pub use fault::FaultStore;
pub use fs::{BucketFs, ReadOptions};
pub use manifest::ManifestPosition;
/// The `object_store` this crate is built on (its stores go to
/// [`Bucket::from_store`] and [`FaultStore::new`]).
pub use object_store;
pub use split::{DEFAULT_DELETE_GRACE, SplitFs};
pub use stats::BucketStats;

/// The README's example, run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
