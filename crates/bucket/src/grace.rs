//! Deletes of tables and blob files that wait out a grace period, so that
//! a replica still reading an older version finds its files.

use std::collections::{HashSet, VecDeque};
use std::io;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use lithify_vfs::FileSystem;
use parking_lot::Mutex;

/// The files a writer removed, each deleted from the bucket once `grace`
/// has passed since.
#[derive(Debug)]
pub(crate) struct DeferredDeletes {
    grace: Duration,
    queue: Mutex<Queue>,
}

#[derive(Debug, Default)]
struct Queue {
    due: VecDeque<(Instant, PathBuf)>,
    queued: HashSet<PathBuf>,
}

impl DeferredDeletes {
    pub(crate) fn new(grace: Duration) -> Self {
        DeferredDeletes {
            grace,
            queue: Mutex::new(Queue::default()),
        }
    }

    pub(crate) fn grace(&self) -> Duration {
        self.grace
    }

    /// Queues `path` for deletion after the grace period.
    pub(crate) fn defer(&self, path: PathBuf) {
        let mut q = self.queue.lock();
        if q.queued.insert(path.clone()) {
            q.due.push_back((Instant::now() + self.grace, path));
        }
    }

    /// Forgets a queued delete of `path` (a file of that name is being
    /// written again: the queued delete must not remove it).
    pub(crate) fn cancel(&self, path: &std::path::Path) {
        let mut q = self.queue.lock();
        if q.queued.remove(path) {
            q.due.retain(|(_, p)| p != path);
        }
    }

    pub(crate) fn pending(&self) -> usize {
        self.queue.lock().due.len()
    }

    /// Deletes, through `fs`, every queued file whose grace period is over
    /// (all of them with `all`). Returns how many were deleted; a file that
    /// cannot be deleted now is queued again, and the first error is
    /// returned after the others were tried.
    pub(crate) fn delete_due(&self, fs: &dyn FileSystem, all: bool) -> io::Result<usize> {
        let now = Instant::now();
        let ready: Vec<PathBuf> = {
            let mut q = self.queue.lock();
            let mut ready = Vec::new();
            while let Some((due, _)) = q.due.front() {
                if !all && *due > now {
                    break;
                }
                let (_, path) = q.due.pop_front().expect("front exists");
                q.queued.remove(&path);
                ready.push(path);
            }
            ready
        };
        let mut deleted = 0;
        let mut first_error = None;
        for path in ready {
            match fs.remove_file(&path) {
                Ok(()) => deleted += 1,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "deferred delete failed; will retry");
                    let mut q = self.queue.lock();
                    if q.queued.insert(path.clone()) {
                        q.due.push_back((now, path));
                    }
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(deleted),
        }
    }
}
