//! Who may write a log: lock files in the partition directory and in the
//! data directory.
//!
//! Two processes writing one log lose acknowledged records (both append at
//! the same offsets), and two cleaners of one data directory replace each
//! other's segments and checkpoint. So every writer holds an exclusive
//! lock for as long as it writes:
//!
//! * [`Log::open`](crate::Log::open) locks `<partition dir>/.lock` for the
//!   `Log`'s lifetime: a second `Log` of the same directory, in this
//!   process or another, is refused with [`Error::InUse`]. Every writer of
//!   a log (appending, cleaning, recovery itself) goes through a `Log`, so
//!   this one lock excludes them all, whatever command they run;
//! * the cleaner, which owns a data directory's
//!   `cleaner-offset-checkpoint`, also locks `<data dir>/.lock`
//!   ([`lock_data_dir`]) for as long as it holds logs of that directory:
//!   Kafka's broker holds the same file (`LogManager`'s `.lock`) while it
//!   runs, so two cleaners of one data directory exclude each other before
//!   they open a single log;
//! * read-only tools ([`verify`](crate::verify)) take a **shared** lock on
//!   an existing `.lock` ([`lock_shared`]): they refuse clearly while a
//!   writer works, instead of reporting a live append or a swap in
//!   progress as damage, and they create nothing (a directory that never
//!   had a lithify writer has no `.lock` and is read without one).
//!
//! The name `.lock` can never be taken for anything else: it starts with a
//! dot, so it has no offset ([`naming::parse`](crate::naming::parse) and
//! Kafka's `LogLoader`, which lists only files and acts only on segment,
//! index, snapshot and temporary suffixes, ignore it), and it has no
//! `-<partition>` suffix, so it is never a partition directory (and is a
//! file, which Kafka's `LogManager` does not list). The file stays after
//! the lock is released: removing a lock file while another process may
//! be opening it would let two holders lock two different files.
//!
//! The locks are advisory `flock` locks on [`lithify_vfs::OsFs`]: they
//! exclude lithify processes from each other. A Kafka broker locks with
//! `FileChannel.tryLock` (POSIX record locks on Linux), which `flock` does
//! not see: never run lithify writers on a data directory a broker uses.

use std::io;
use std::path::Path;

use lithify_vfs::{FileLock, FileSystem};
use snafu::ResultExt as _;

use crate::error::{InUseSnafu, IoSnafu, Result};

/// The lock file's name, in a partition directory and in a data directory
/// (Kafka's `LogManager.LockFileName`).
pub const LOCK_FILE_NAME: &str = ".lock";

/// Takes the exclusive lock of directory `dir` (`what` names it in the
/// error: "log directory", "data directory").
pub(crate) fn lock_exclusive(
    fs: &dyn FileSystem,
    dir: &Path,
    what: &'static str,
) -> Result<FileLock> {
    let path = dir.join(LOCK_FILE_NAME);
    match fs.lock(&path) {
        Ok(lock) => Ok(lock),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => InUseSnafu {
            what,
            dir,
            path,
            writer: true,
        }
        .fail(),
        Err(e) => Err(e).context(IoSnafu {
            action: "lock",
            path,
        }),
    }
}

/// Takes the exclusive lock of the data directory `data_dir` (the parent
/// of partition directories; Kafka's `log.dirs` entry): its `.lock`, as a
/// Kafka broker holds it. The log cleaner holds it while it holds logs of
/// that directory. Refused with [`Error::InUse`](crate::Error::InUse)
/// while another process (or another handle in this one) holds it.
///
/// ```
/// use std::path::Path;
/// use lithify_vfs::{FileSystem, MemFs};
/// use lithify_kafka_log::lock_data_dir;
///
/// let fs = MemFs::new();
/// fs.create_dir_all(Path::new("/data")).unwrap();
/// let held = lock_data_dir(&fs, Path::new("/data")).unwrap();
/// let err = lock_data_dir(&fs, Path::new("/data")).unwrap_err();
/// assert!(err.to_string().contains("/data is in use by another process"), "{err}");
/// drop(held);
/// lock_data_dir(&fs, Path::new("/data")).unwrap();
/// ```
pub fn lock_data_dir(fs: &dyn FileSystem, data_dir: &Path) -> Result<FileLock> {
    lock_exclusive(fs, data_dir, "data directory")
}

/// Takes a shared lock on directory `dir`'s `.lock`, as a reader: refused
/// with [`Error::InUse`](crate::Error::InUse) while a writer holds it;
/// `None` when `dir` has no `.lock` (no lithify writer ever opened it, so
/// nothing is created) or the file cannot be opened for reading.
///
/// ```
/// use std::path::Path;
/// use std::sync::Arc;
/// use lithify_vfs::MemFs;
/// use lithify_kafka_log::{Log, LogConfig, lock_shared};
///
/// let fs = Arc::new(MemFs::new());
/// let dir = Path::new("/data/orders-0");
/// let log = Log::open(fs.clone(), dir, LogConfig::default()).unwrap();
/// assert!(lock_shared(&*fs, dir, "log directory").is_err(), "a writer holds it");
/// drop(log);
/// let reader = lock_shared(&*fs, dir, "log directory").unwrap();
/// assert!(reader.is_some());
/// assert!(Log::open(fs.clone(), dir, LogConfig::default()).is_err(), "a reader holds it");
/// ```
pub fn lock_shared(
    fs: &dyn FileSystem,
    dir: &Path,
    what: &'static str,
) -> Result<Option<FileLock>> {
    let path = dir.join(LOCK_FILE_NAME);
    match fs.lock_shared(&path) {
        Ok(lock) => Ok(Some(lock)),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => InUseSnafu {
            what,
            dir,
            path,
            writer: false,
        }
        .fail(),
        // No `.lock` (never written by lithify), or one we may not open
        // (a read-only copy): nothing to take.
        Err(_) => Ok(None),
    }
}
