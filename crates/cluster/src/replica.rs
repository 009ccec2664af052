//! [`Replica`]: a read-only copy of a database in a bucket that follows
//! its writer.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use lithify_bucket::{ManifestPosition, SplitFs};
use lithify_engine::{Db, Options, RecoveryMode, SeqNo};
use snafu::ResultExt;

use crate::error::{BucketSnafu, DbSnafu, Result};
use parking_lot::{Mutex, RwLock};

/// A read replica of a database whose tables and MANIFEST are in a bucket
/// (RocksDB's `OpenAsSecondary` and `TryCatchUpWithPrimary`).
///
/// The replica opens the database read-only through its own
/// [`SplitFs`] (its machine's local side holds nothing of the database)
/// and serves gets and iterators from [`db`](Self::db): one consistent
/// version, which stays readable while a reader holds it.
/// [`try_catch_up`](Self::try_catch_up) looks at the MANIFEST's position
/// in the bucket (three requests) and, when it moved, opens the newest
/// version and serves it from then on; [`follow`](Self::follow) does that
/// on a thread.
///
/// **What a replica sees.** The WAL is local to the writer, so a replica
/// sees what the writer has flushed: its lag is the writes the writer
/// acknowledged but has not flushed yet, plus the time to the next catch
/// up. [`sequence`](Self::sequence) is the last sequence number the
/// replica serves; the writer's flushed sequence minus it is the lag in
/// writes.
///
/// **Files under a replica.** The writer deletes the tables it removes
/// only after a grace period (`SplitFs::with_delete_grace`, 60 s by
/// default): a replica that catches up more often than that never finds a
/// file of its version deleted. A version held longer than the grace
/// period may fail a read with `NotFound` naming the file (never with
/// other data). Each catch up re-reads the live MANIFEST whole.
#[derive(Debug)]
pub struct Replica {
    dir: PathBuf,
    options: Options,
    fs: SplitFs,
    db: RwLock<Arc<Db>>,
    seen: Mutex<Option<ManifestPosition>>,
}

/// What a [`Replica::try_catch_up`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct CatchUp {
    /// Whether the replica now serves a newer version.
    pub advanced: bool,
    /// The last sequence number it serves.
    pub sequence: SeqNo,
}

impl Replica {
    /// Opens the database in `dir` read-only through `fs` (a
    /// [`SplitFs::with_manifest_in_bucket`] of this machine), with
    /// `options` (their `fs` is replaced; WALs are not expected here, so
    /// a WAL the MANIFEST names is reported dropped, not an error).
    pub fn open(dir: impl AsRef<Path>, mut options: Options, fs: SplitFs) -> Result<Replica> {
        options.fs = Arc::new(fs.clone());
        options.wal_recovery_mode = RecoveryMode::SkipAnyCorruptedRecords;
        let dir = dir.as_ref().to_path_buf();
        let seen = fs.manifest_position().context(BucketSnafu {
            op: "reading the MANIFEST's position",
            dir: dir.clone(),
        })?;
        let db = Db::open_read_only(&dir, options.clone()).context(DbSnafu)?;
        Ok(Replica {
            dir,
            options,
            fs,
            db: RwLock::new(Arc::new(db)),
            seen: Mutex::new(seen),
        })
    }

    /// The version the replica serves now. Reads on it are consistent with
    /// each other; it stays readable while held (within the writer's
    /// delete grace period).
    pub fn db(&self) -> Arc<Db> {
        self.db.read().clone()
    }

    /// The last sequence number the replica serves.
    pub fn sequence(&self) -> SeqNo {
        self.db.read().latest_sequence_number()
    }

    /// Where the MANIFEST stood when the replica last caught up.
    pub fn position(&self) -> Option<ManifestPosition> {
        self.seen.lock().clone()
    }

    /// Serves the writer's newest flushed version if the MANIFEST moved
    /// since the last catch up. On an error (the bucket unreachable, say)
    /// the replica keeps serving the version it has.
    pub fn try_catch_up(&self) -> Result<CatchUp> {
        let mut seen = self.seen.lock();
        let now = self.fs.manifest_position().context(BucketSnafu {
            op: "reading the MANIFEST's position",
            dir: self.dir.clone(),
        })?;
        if now == *seen {
            return Ok(CatchUp {
                advanced: false,
                sequence: self.sequence(),
            });
        }
        let db = Db::open_read_only(&self.dir, self.options.clone()).context(DbSnafu)?;
        let sequence = db.latest_sequence_number();
        let before = self.sequence();
        *self.db.write() = Arc::new(db);
        tracing::debug!(
            dir = %self.dir.display(), before, sequence, position = ?now,
            "replica caught up"
        );
        *seen = now;
        Ok(CatchUp {
            advanced: true,
            sequence,
        })
    }

    /// Catches up every `every` on a thread until the returned
    /// [`Follower`] is dropped (or stopped). Errors are logged (a
    /// `tracing` warning) and the next round tries again.
    pub fn follow(self: &Arc<Self>, every: Duration) -> Follower {
        let stop = Arc::new(AtomicBool::new(false));
        let replica = Arc::clone(self);
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("lithify-replica".to_owned())
            .spawn(move || {
                while !flag.load(Ordering::Acquire) {
                    if let Err(e) = replica.try_catch_up() {
                        tracing::warn!(dir = %replica.dir.display(), error = %e, "replica catch up failed");
                    }
                    std::thread::park_timeout(every);
                }
            })
            .expect("spawning the replica's thread");
        Follower {
            stop,
            thread: Some(thread),
        }
    }
}

/// The thread of [`Replica::follow`]; dropping it stops the thread.
#[derive(Debug)]
pub struct Follower {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Follower {
    /// Stops the thread and waits for it.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.halt();
    }
}
