//! lithify beyond one machine, over a database whose tables and MANIFEST
//! are in a bucket (`lithify-bucket`'s `SplitFs::with_manifest_in_bucket`).
//!
//! * [`Replica`]: a read replica (RocksDB's secondary instance): a process
//!   on any machine opens the database read-only from the bucket and
//!   follows its writer's MANIFEST, serving gets and iterators at
//!   consistent versions.
//! * [`BucketCompactionService`] and [`CompactionWorker`]: compaction run
//!   by worker processes on any machine (RocksDB's `CompactionService`),
//!   with the bucket as the job queue.
//!
//! ```
//! use std::sync::Arc;
//! use lithify_bucket::{Bucket, BucketFs, ReadOptions, SplitFs};
//! use lithify_cluster::Replica;
//! use lithify_engine::{Db, Options, RecoveryMode};
//! use lithify_vfs::MemFs;
//!
//! let bucket = Bucket::in_memory();
//! let machine = || {
//!     let tables = BucketFs::new(bucket.clone(), "/db", "db", ReadOptions::default());
//!     SplitFs::with_manifest_in_bucket(Arc::new(MemFs::new()), tables)
//! };
//! let writer_fs = machine();
//! let mut options = Options::default();
//! options.fs = Arc::new(writer_fs);
//! let writer = Db::open("/db", options).unwrap();
//! writer.put(b"k", b"1").unwrap();
//! writer.flush().unwrap();
//!
//! let replica = Replica::open("/db", Options::default(), machine()).unwrap();
//! assert_eq!(replica.db().get(b"k").unwrap().as_deref(), Some(&b"1"[..]));
//! writer.put(b"k", b"2").unwrap();
//! assert!(!replica.try_catch_up().unwrap().advanced, "not flushed: nothing to see");
//! writer.flush().unwrap();
//! assert!(replica.try_catch_up().unwrap().advanced);
//! assert_eq!(replica.db().get(b"k").unwrap().as_deref(), Some(&b"2"[..]));
//! ```

mod compaction;
mod error;
mod replica;

pub use compaction::{
    BucketCompactionService, CompactionWorker, JOBS_DIR, JobReport, ServiceOptions,
};
pub use error::{Error, Result};
pub use replica::{CatchUp, Follower, Replica};

/// The README's example, run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
