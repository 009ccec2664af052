//! Giving the allocator's free memory back to the kernel after background
//! work.
//!
//! Flushes and compactions allocate and free megabytes per job (filter and
//! index blocks being built, output buffers, the new tables' index and
//! filter blocks read back). Under glibc each background thread allocates
//! from its own arena, and glibc raises its mmap and trim thresholds after
//! the first large free (up to 32 and 64 MiB), so a job's freed memory
//! stays in the arena, pinned by the few long-lived blocks (a new table's
//! index, say) that landed above it. In `cargo xtask compare`'s readrandom
//! on 10M keys that kept peak RSS 36 MB over what the same run used with
//! the thresholds fixed (150 against 114 MB). `malloc_trim(0)` after a job
//! returns every free page of every arena (`MADV_DONTNEED` in the middle of
//! a heap too), which brings it back without touching the allocator's
//! settings for the rest of the process.
//!
//! A trim costs system time (the returned pages fault back in when reused):
//! after every job of 1 MiB memtables it took 4-5 % more CPU in all
//! (`lithify bench --benchmarks fillrandom --num 1000000` with 1 MiB
//! memtables and files). So background jobs trim only once they have
//! written [`RELEASE_EVERY_BYTES`] since the last trim: every job of 64 MiB
//! memtables, one job in dozens of 1 MiB ones. A manual compaction, the
//! caller's own heavy operation, always trims when it ends.
//!
//! On other targets and allocators there is nothing to do.

use std::sync::atomic::Ordering;

use crate::stats::Counters;

/// Bytes flushes and compactions write between two trims after background
/// jobs.
const RELEASE_EVERY_BYTES: u64 = 32 << 20;

/// After a background job: trims if jobs wrote [`RELEASE_EVERY_BYTES`]
/// since the last trim.
pub(crate) fn release_after_job(counters: &Counters) {
    let written =
        Counters::get(&counters.flush_bytes) + Counters::get(&counters.compaction_write_bytes);
    let last = counters.released_at_job_bytes.load(Ordering::Relaxed);
    if written.saturating_sub(last) >= RELEASE_EVERY_BYTES
        && counters
            .released_at_job_bytes
            .compare_exchange(last, written, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    {
        release_free_memory();
    }
}

/// Returns free heap memory to the kernel, where the allocator allows.
pub(crate) fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu", not(loom), not(miri)))]
    // SAFETY: malloc_trim only walks the allocator's own free lists under
    // their locks; it takes no pointers from us.
    unsafe {
        libc::malloc_trim(0);
    }
}
