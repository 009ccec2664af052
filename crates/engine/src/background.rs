//! The background pool: `max_background_jobs` threads running flushes
//! first, then compactions (at most RocksDB's compaction share of the pool
//! at once, so a flush always finds a thread).

use std::sync::Arc as StdArc;
use std::thread::JoinHandle;

use lithify_version::TableId;

use crate::compaction::PickedCompaction;
use crate::db_impl::{DbInner, DbState};

enum Job {
    Flush(TableId),
    Compaction(Box<PickedCompaction>),
    /// A table's scheduled major compaction is due.
    ScheduledMajor(TableId),
}

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

fn next_job(inner: &DbInner, st: &mut DbState) -> Option<Job> {
    if st.bg_error.is_some() {
        return None;
    }
    if let Some(t) = st.flush_queue.pop_front() {
        st.running_flushes += 1;
        return Some(Job::Flush(t));
    }
    let (_, share) = inner.options.job_limits();
    let now = inner.options.clock.now_secs();
    if st.running_compactions < share
        && st.exclusive_manual == 0
        && let Some(id) = st
            .tables
            .iter()
            .find(|(_, t)| {
                !t.scheduled_major_running
                    && !t.state.is_dropped()
                    && t.next_scheduled_major.is_some_and(|at| at <= now)
            })
            .map(|(id, _)| *id)
    {
        if let Some(t) = st.tables.get_mut(&id) {
            t.scheduled_major_running = true;
        }
        st.running_compactions += 1;
        return Some(Job::ScheduledMajor(id));
    }
    let max_compactions = if inner.compaction_pressure(st) {
        share
    } else {
        1
    };
    if st.running_compactions < max_compactions
        && let Some(c) = inner.pick_compaction(st)
    {
        st.running_compactions += 1;
        return Some(Job::Compaction(Box::new(c)));
    }
    None
}

fn worker(inner: &DbInner) {
    loop {
        let job = {
            let mut st = inner.lock_state();
            loop {
                if st.shutting_down {
                    return;
                }
                if let Some(job) = next_job(inner, &mut st) {
                    break job;
                }
                // Wake up for the next scheduled major compaction, if any.
                let next = st
                    .tables
                    .values()
                    .filter_map(|t| t.next_scheduled_major)
                    .min();
                st = match next {
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
        match job {
            Job::Flush(table) => {
                // Errors are recorded as the background error.
                let _ = inner.run_flush(table);
                let mut st = inner.lock_state();
                st.running_flushes -= 1;
            }
            Job::Compaction(c) => {
                let _ = inner.run_compaction(*c);
                let mut st = inner.lock_state();
                st.running_compactions -= 1;
            }
            Job::ScheduledMajor(table) => {
                let _ = inner.major_compact(table);
                let mut st = inner.lock_state();
                st.running_compactions -= 1;
                if let Some(t) = st.tables.get_mut(&table) {
                    t.scheduled_major_running = false;
                    t.next_scheduled_major =
                        crate::compaction::next_scheduled_major(&t.state.options);
                }
            }
        }
        // Delete what the job made obsolete (the WALs a flush freed)
        // before waking stalled writers, as RocksDB's background jobs do:
        // a writer woken first could fill a new memtable, and so start a
        // new WAL, while the freed ones still exist.
        inner.purge_obsolete_files();
        inner.done_cv.notify_all();
        inner.bg_cv.notify_all();
        inner.events.deliver();
        if inner.options.release_memory_after_jobs {
            crate::heap::release_after_job(&inner.counters);
        }
    }
}
