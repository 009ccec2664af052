//! The background pool: `max_background_jobs` threads running flushes
//! first, then compactions (at most RocksDB's compaction share of the pool
//! at once, so a flush always finds a thread).

use std::sync::Arc as StdArc;
use std::thread::JoinHandle;

use crate::state::DbInner;
use crate::state::jobs::Job;

/// Starts the background threads.
pub(crate) fn spawn_workers(inner: &StdArc<DbInner>) -> std::io::Result<Vec<JoinHandle<()>>> {
    (0..inner.options.max_background_jobs)
        .map(|i| {
            let inner = StdArc::clone(inner);
            std::thread::Builder::new()
                .name(format!("lithify-bg-{i}"))
                .spawn(move || worker(&inner))
        })
        .collect()
}

fn worker(inner: &DbInner) {
    loop {
        let job = {
            let mut st = inner.lock_state();
            loop {
                if st.is_shutting_down() {
                    return;
                }
                if let Some(job) = inner.next_job(&mut st) {
                    break job;
                }
                // Wake up for the next scheduled major compaction, if any.
                st = match st.next_scheduled_major() {
                    None => inner.bg_cv.wait(st),
                    Some(at) => {
                        let secs = at
                            .saturating_sub(inner.options.clock.now_secs())
                            .clamp(1, 60);
                        inner
                            .bg_cv
                            .wait_timeout(st, std::time::Duration::from_secs(secs))
                            .0
                    }
                };
            }
        };
        // The job is consumed, so a compaction's inputs are no longer held
        // when the purge below looks for obsolete files. Errors are
        // recorded as the background error.
        let done = job.kind();
        let _ = match job {
            Job::Flush(table) => crate::flush::run(inner, table).map(|_| ()),
            Job::Compaction(c) => crate::compaction::run(inner, *c),
            Job::ScheduledMajor(table) => crate::compaction::major_compact(inner, table),
        };
        inner.lock_state().finish_job(done);
        // Delete what the job made obsolete (the WALs a flush freed)
        // before waking stalled writers, as RocksDB's background jobs do:
        // a writer woken first could fill a new memtable, and so start a
        // new WAL, while the freed ones still exist.
        crate::purge::purge_obsolete_files(inner);
        inner.done_cv.notify_all();
        inner.bg_cv.notify_all();
        inner.events.deliver();
        if inner.options.release_memory_after_jobs {
            crate::heap::release_after_job(&inner.counters);
        }
    }
}
