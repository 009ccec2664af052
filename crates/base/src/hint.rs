//! Processor hints for hot paths.

/// Asks the processor to start loading the cache line at `ptr` into all
/// cache levels, so that a load a little later does not stall on memory.
///
/// Only a hint: it never faults and reads nothing, whatever the address
/// (null and dangling pointers included), and compiles to nothing off
/// x86-64 and under loom or Miri.
///
/// ```
/// let words = vec![0u64; 1024];
/// lithify_base::hint::prefetch_read(&words[512]);
/// assert_eq!(words[512], 0);
/// ```
#[inline(always)]
pub fn prefetch_read<T>(ptr: *const T) {
    #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: a prefetch is a hint; it has no observable effect on
        // memory and cannot fault.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(ptr.cast::<i8>()) }
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
    let _ = ptr;
}
