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
//! settings for the rest of the process. It takes a few hundred
//! microseconds; a job takes tens of milliseconds or more.
//!
//! On other targets and allocators there is nothing to do.

/// Returns free heap memory to the kernel, where the allocator allows.
pub(crate) fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu", not(loom), not(miri)))]
    // SAFETY: malloc_trim only walks the allocator's own free lists under
    // their locks; it takes no pointers from us.
    unsafe {
        libc::malloc_trim(0);
    }
}
