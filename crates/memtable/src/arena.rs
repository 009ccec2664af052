//! A concurrent bump allocator that hands out memory from large blocks.
//!
//! Skiplist nodes live in one [`Arena`] and their keys and values in
//! another: each a list of blocks (1 MiB by default for records, a quarter
//! of that for nodes) carved up by bumping an offset. Nothing is freed
//! until the whole arena is dropped, which is exactly a memtable's life
//! cycle, so allocation is a single `fetch_add` on the current block:
//!
//! * **fast path**: load the current block, `fetch_add` the rounded size to
//!   its `used` offset; if the old offset plus the size fits, the bytes are
//!   ours alone (the `fetch_add`s on one block are totally ordered, so no
//!   two allocations overlap);
//! * **block full**: the first allocation that does not fit seals the block
//!   (every later `fetch_add` starts past the end and fails too); a thread
//!   that sees a full block takes the mutex, and if the block is still the
//!   current one, installs a fresh block with a release store. Its tail is
//!   wasted, like LevelDB's arena and RocksDB's concurrent arena do;
//! * **large allocations** (more than a quarter of a block) get a dedicated
//!   block of their own so they neither waste a block tail nor force a
//!   switch.
//!
//! Every allocation is aligned to [`ARENA_ALIGN`] bytes.

use std::alloc::{self, Layout};
use std::fmt;
use std::ptr::NonNull;

use lithify_base::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use lithify_base::sync::{Mutex, UnsafeCell};

/// Alignment of every arena allocation (and of every block).
pub(crate) const ARENA_ALIGN: usize = 8;

/// The default block size: 1 MiB.
pub const DEFAULT_BLOCK_SIZE: usize = 1 << 20;

/// One contiguous allocation of the arena.
struct Block {
    /// Where the block is; written once, when the block is made. In a cell
    /// so that loom checks every reader of a new block synchronised with
    /// the thread that made it.
    span: UnsafeCell<Span>,
    /// Bytes handed out (may run past `cap` once the block is sealed).
    used: AtomicUsize,
}

#[derive(Clone, Copy)]
struct Span {
    data: NonNull<u8>,
    cap: usize,
}

impl Block {
    /// Allocates a block of `cap` bytes (> 0) with `used` bytes already
    /// taken, and leaks it as a raw pointer owned by the arena's block list.
    fn allocate(cap: usize, used: usize) -> NonNull<Block> {
        let data = block_memory::allocate(cap);
        let block = Box::new(Block {
            span: UnsafeCell::new(Span { data, cap }),
            used: AtomicUsize::new(used),
        });
        NonNull::from(Box::leak(block))
    }

    /// Where the block is.
    #[inline]
    fn span(&self) -> Span {
        // SAFETY: the span is written only by `UnsafeCell::new`; readers
        // reach the block through the release store (or the mutex) that
        // published it.
        self.span.with(|span| unsafe { *span })
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        let Span { data, cap } = self.span();
        // SAFETY: `data` came from `block_memory::allocate(cap)` in
        // `Block::allocate` and is freed once, here.
        unsafe { block_memory::free(data, cap) }
    }
}

/// Where block bytes come from.
///
/// Large blocks are mapped straight from the kernel on Linux, so that a
/// dropped memtable gives its memory back at once. Through `malloc`, glibc
/// raises its mmap threshold after the first large free and serves later
/// blocks from its heap, which it seldom returns: each flush then left RSS
/// a few MiB higher (109 MB peak in `lithify bench` at 2M keys against
/// 100 MB with mapped blocks). Small blocks (tests, the range-tombstone
/// list), loom and Miri use the global allocator.
mod block_memory {
    use super::{ARENA_ALIGN, Layout, NonNull, alloc};

    /// Blocks at least this large are mapped (glibc's initial threshold).
    #[cfg(all(target_os = "linux", not(loom), not(miri)))]
    const MAP_AT: usize = 128 << 10;

    /// `cap` (> 0) fresh bytes aligned to [`ARENA_ALIGN`].
    pub(super) fn allocate(cap: usize) -> NonNull<u8> {
        #[cfg(all(target_os = "linux", not(loom), not(miri)))]
        if cap >= MAP_AT {
            // MAP_POPULATE: the kernel zeroes and maps all pages now, in one
            // call, instead of trapping on the first write to each page
            // during inserts (random inserts: about 10 % faster).
            // SAFETY: an anonymous private mapping of `cap` bytes at an
            // address the kernel picks; no existing memory is touched.
            let raw = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    cap,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                    -1,
                    0,
                )
            };
            if raw == libc::MAP_FAILED {
                alloc::handle_alloc_error(layout(cap));
            }
            // Page-aligned, so ARENA_ALIGN-aligned; never null on success.
            return NonNull::new(raw.cast::<u8>())
                .unwrap_or_else(|| alloc::handle_alloc_error(layout(cap)));
        }
        let layout = layout(cap);
        // SAFETY: `layout` has a non-zero size (callers pass cap > 0).
        let raw = unsafe { alloc::alloc(layout) };
        NonNull::new(raw).unwrap_or_else(|| alloc::handle_alloc_error(layout))
    }

    /// Frees a block.
    ///
    /// # Safety
    /// `data` came from [`allocate`] with this `cap` and is not used again.
    pub(super) unsafe fn free(data: NonNull<u8>, cap: usize) {
        #[cfg(all(target_os = "linux", not(loom), not(miri)))]
        if cap >= MAP_AT {
            // SAFETY: the caller passes a mapping of `cap` bytes made by
            // `allocate`, unmapped once, here. munmap of a valid mapping
            // only fails on invalid arguments, which would be a bug here.
            let rc = unsafe { libc::munmap(data.as_ptr().cast(), cap) };
            debug_assert_eq!(rc, 0, "munmap of an arena block failed");
            return;
        }
        // SAFETY: the caller passes memory from `allocate`, which used this
        // layout for a block of `cap` bytes.
        unsafe { alloc::dealloc(data.as_ptr(), layout(cap)) }
    }

    fn layout(cap: usize) -> Layout {
        match Layout::from_size_align(cap, ARENA_ALIGN) {
            Ok(layout) => layout,
            // Only a size near usize::MAX fails; no memtable entry gets
            // there because `MemTable::add` bounds keys and values to u32
            // lengths.
            Err(_) => panic!("arena block of {cap} bytes exceeds the address space"),
        }
    }
}

/// A concurrent, grow-only bump allocator. See the module documentation.
pub(crate) struct Arena {
    /// The block that small allocations bump; never null.
    current: AtomicPtr<Block>,
    /// Every block, including `current`; owned (freed on drop).
    blocks: Mutex<Vec<NonNull<Block>>>,
    /// Bytes of blocks that are no longer `current` (dedicated blocks and
    /// sealed blocks, counting their wasted tails).
    retired: AtomicUsize,
    /// Bytes of all blocks.
    reserved: AtomicUsize,
    block_size: usize,
}

// SAFETY: the raw block pointers are owned by the arena (freed only in
// `Drop`, which has exclusive access); the bytes handed out are disjoint, and
// the only shared mutable state is atomics and the mutex-guarded block list.
unsafe impl Send for Arena {}
// SAFETY: as for `Send`: `&Arena` only offers atomic bumps and mutex-guarded
// block switches.
unsafe impl Sync for Arena {}

impl Arena {
    /// An arena whose regular blocks are `block_size` bytes (rounded up to
    /// [`ARENA_ALIGN`], at least 64 bytes).
    pub(crate) fn new(block_size: usize) -> Arena {
        let block_size = round_up(block_size.max(64));
        let first = Block::allocate(block_size, 0);
        Arena {
            current: AtomicPtr::new(first.as_ptr()),
            blocks: Mutex::new(vec![first]),
            retired: AtomicUsize::new(0),
            reserved: AtomicUsize::new(block_size),
            block_size,
        }
    }

    /// `size` fresh bytes (uninitialised), aligned to [`ARENA_ALIGN`], valid
    /// until the arena is dropped and used by nobody else.
    pub(crate) fn allocate(&self, size: usize) -> NonNull<u8> {
        let size = round_up(size.max(1));
        if size > self.block_size / 4 {
            return self.allocate_dedicated(size);
        }
        loop {
            let current = self.current.load(Ordering::Acquire);
            // SAFETY: `current` is never null and points to a block in
            // `blocks`, which lives until the arena is dropped; the acquire
            // load saw the release store that published its fields.
            let block = unsafe { &*current };
            let span = block.span();
            let offset = block.used.fetch_add(size, Ordering::Relaxed);
            if offset.checked_add(size).is_some_and(|end| end <= span.cap) {
                // SAFETY: `offset + size <= cap`, so the result stays inside
                // the block's allocation.
                return unsafe { span.data.add(offset) };
            }
            self.replace_full_block(current);
        }
    }

    /// Installs a new current block unless another thread already replaced
    /// `full`.
    #[cold]
    fn replace_full_block(&self, full: *mut Block) {
        let mut blocks = self.blocks.lock();
        // `current` is only stored under this lock, so this load sees the
        // latest block.
        if self.current.load(Ordering::Relaxed) != full {
            return;
        }
        let fresh = Block::allocate(self.block_size, 0);
        blocks.push(fresh);
        // SAFETY: `full` is one of `blocks`, alive until the arena drops.
        let full_cap = unsafe { (*full).span().cap };
        self.retired.fetch_add(full_cap, Ordering::Relaxed);
        self.reserved.fetch_add(self.block_size, Ordering::Relaxed);
        self.current.store(fresh.as_ptr(), Ordering::Release);
    }

    #[cold]
    fn allocate_dedicated(&self, size: usize) -> NonNull<u8> {
        let block = Block::allocate(size, size);
        self.blocks.lock().push(block);
        self.retired.fetch_add(size, Ordering::Relaxed);
        self.reserved.fetch_add(size, Ordering::Relaxed);
        // SAFETY: the block was just allocated and is owned by `blocks`.
        unsafe { block.as_ref().span().data }
    }

    /// Bytes consumed: everything handed out, plus the wasted tails of
    /// sealed blocks. Cheap (three relaxed loads); approximate while other
    /// threads allocate.
    pub(crate) fn memory_usage(&self) -> usize {
        let current = self.current.load(Ordering::Acquire);
        // SAFETY: as in `allocate`: blocks outlive `&self`.
        let block = unsafe { &*current };
        let used = block.used.load(Ordering::Relaxed).min(block.span().cap);
        self.retired.load(Ordering::Relaxed) + used
    }

    /// Bytes of all blocks the arena holds (what it costs the process).
    pub(crate) fn reserved_bytes(&self) -> usize {
        self.reserved.load(Ordering::Relaxed)
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        for block in self.blocks.get_mut().drain(..) {
            // SAFETY: every pointer in `blocks` came from `Box::leak` in
            // `Block::allocate` and is reclaimed exactly once, here; nobody
            // can use the arena's memory after its owner is dropped.
            drop(unsafe { Box::from_raw(block.as_ptr()) });
        }
    }
}

impl fmt::Debug for Arena {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Arena")
            .field("block_size", &self.block_size)
            .field("memory_usage", &self.memory_usage())
            .field("reserved_bytes", &self.reserved_bytes())
            .finish()
    }
}

#[inline]
fn round_up(size: usize) -> usize {
    size.next_multiple_of(ARENA_ALIGN)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn fill(ptr: NonNull<u8>, len: usize, byte: u8) {
        // SAFETY: the arena handed out `len` bytes at `ptr` to this test.
        unsafe { std::ptr::write_bytes(ptr.as_ptr(), byte, len) }
    }

    fn read(ptr: NonNull<u8>, len: usize) -> Vec<u8> {
        // SAFETY: written by `fill` above; the arena is still alive.
        unsafe { std::slice::from_raw_parts(ptr.as_ptr(), len).to_vec() }
    }

    #[test]
    fn allocations_are_aligned_disjoint_and_survive_block_switches() {
        let arena = Arena::new(256);
        let mut spans = Vec::new();
        for i in 0..100u8 {
            let len = 1 + (i as usize * 7) % 60;
            let ptr = arena.allocate(len);
            assert_eq!(ptr.as_ptr() as usize % ARENA_ALIGN, 0);
            fill(ptr, len, i);
            spans.push((ptr, len, i));
        }
        for &(ptr, len, i) in &spans {
            assert_eq!(
                read(ptr, len),
                vec![i; len],
                "allocation {i} was overwritten"
            );
        }
        let mut ranges: Vec<(usize, usize)> = spans
            .iter()
            .map(|&(p, len, _)| (p.as_ptr() as usize, p.as_ptr() as usize + len))
            .collect();
        ranges.sort();
        assert!(ranges.windows(2).all(|w| w[0].1 <= w[1].0));
        assert!(arena.reserved_bytes() > 256, "blocks were switched");
    }

    #[test]
    fn memory_usage_counts_rounded_sizes_and_sealed_tails() {
        let arena = Arena::new(128);
        assert_eq!(arena.memory_usage(), 0);
        arena.allocate(1);
        assert_eq!(arena.memory_usage(), 8);
        arena.allocate(30);
        assert_eq!(arena.memory_usage(), 8 + 32);
        // 32 is a quarter block: still bump-allocated. 88 bytes left.
        for _ in 0..2 {
            arena.allocate(32);
        }
        assert_eq!(arena.memory_usage(), 104);
        // Does not fit in the 24 left: the block is sealed with its tail.
        arena.allocate(32);
        assert_eq!(arena.memory_usage(), 128 + 32);
        assert_eq!(arena.reserved_bytes(), 256);
    }

    #[test]
    fn large_allocations_get_dedicated_blocks() {
        let arena = Arena::new(1024);
        let small = arena.allocate(16);
        let big = arena.allocate(5000);
        fill(big, 5000, 0xab);
        fill(small, 16, 0x01);
        assert_eq!(read(big, 5000), vec![0xab; 5000]);
        assert_eq!(arena.memory_usage(), 16 + 5000);
        assert_eq!(arena.reserved_bytes(), 1024 + 5000);
        // The current block was not sealed by the big allocation.
        arena.allocate(16);
        assert_eq!(arena.memory_usage(), 32 + 5000);
    }

    /// An allocation handed back from a test thread.
    struct Span(NonNull<u8>, usize);
    // SAFETY: the span's bytes belong to the arena, which outlives the test
    // threads; each span is only read after its writer thread was joined.
    unsafe impl Send for Span {}

    #[test]
    #[cfg_attr(
        miri,
        ignore = "threads are slow under Miri; the loom model covers this"
    )]
    fn concurrent_allocations_never_overlap() {
        let arena = std::sync::Arc::new(Arena::new(4096));
        let handles: Vec<_> = (0..4u8)
            .map(|t| {
                let arena = arena.clone();
                std::thread::spawn(move || {
                    let mut mine = Vec::new();
                    for i in 0..2000usize {
                        let len = 8 + (i % 5) * 8;
                        let ptr = arena.allocate(len);
                        fill(ptr, len, t);
                        mine.push(Span(ptr, len));
                    }
                    mine
                })
            })
            .collect();
        let mut all = Vec::new();
        for (t, h) in handles.into_iter().enumerate() {
            for Span(ptr, len) in h.join().unwrap() {
                assert_eq!(read(ptr, len), vec![t as u8; len]);
                let addr = ptr.as_ptr() as usize;
                all.push((addr, addr + len));
            }
        }
        all.sort();
        assert!(all.windows(2).all(|w| w[0].1 <= w[1].0));
    }
}
