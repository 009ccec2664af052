//! A concurrent skiplist of internal keys whose nodes live in an [`Arena`].
//!
//! The protocol is RocksDB's `InlineSkipList::InsertConcurrently` (the
//! memtable of `allow_concurrent_memtable_write`), written in our own words:
//!
//! * An entry is two allocations in two arenas. Its **node**, in the node
//!   arena, is a tower of `height` atomic `next` links stored top level
//!   first, then the header: the *key word* (the first eight bytes of the
//!   user key, big-endian, zero-padded) and a pointer to the **record**. The
//!   record, in the record arena, holds the key and value lengths, the
//!   internal key and the value. A node pointer points at the header, so the
//!   level-0 link and the key word are adjacent:
//!
//!   ```text
//!   node arena:   +------------------------------------+----------+--------+
//!                 | next[height-1] ... next[1] next[0] | key word | record |
//!                 | AtomicPtr<Node> each               | u64      | ptr    |
//!                 +------------------------------------+----------+--------+
//!                                                      ^ node pointer
//!   record arena: +---------------+-----------------+-----+-------+
//!                 | key_len u32   | value_len u32   | key | value |
//!                 +---------------+-----------------+-----+-------+
//!   ```
//!
//!   The split is what makes a search fast. A search visits a few nodes per
//!   level and compares each with the key; with keys and values inline, the
//!   nodes of a 64 MiB memtable were spread over all 64 MiB, and nearly
//!   every visit below the top levels was a miss to memory. Nodes alone
//!   take 24 to 40 bytes, so the nodes a search walks fit in a fifth of the
//!   space (mostly in the processor's last-level cache), and under the
//!   bytewise comparator the key word decides nearly every comparison
//!   without reading the record. Only equal words (a user key's versions,
//!   or keys that share their first eight bytes) read the record.
//!
//!   Everything but the links is written once, before the node is
//!   published, and never changes. This crate's unit tests, loom and fuzz
//!   builds add the tower height to the header, to check that no link is
//!   read past a node's tower (the links before a node belong to the
//!   previous allocation, so an overrun would read another node's bytes
//!   silently); every other build, debug or release, has the same node
//!   layout, so memtables fill at the same writes in both.
//! * **Insert** raises the list height with a CAS if the new node is
//!   taller, finds the *splice* (at every level, the last node before the
//!   key and the first at or after it) top-down, allocates and fills the
//!   node, then links it bottom-up: for each level, store the successor
//!   into the node's link (relaxed: the node is not reachable at that level
//!   yet) and CAS the predecessor's link from the successor to the node with
//!   **release** ordering. A failed CAS means another writer linked a node
//!   there; the splice of that level is recomputed from the old predecessor
//!   and the step retried. An equal key found at level 0 aborts the insert.
//! * The splice search of a level starts at the predecessor found one level
//!   up and stops, without comparing, when it reaches that level's
//!   successor (it is known to sort at or after the key), as RocksDB's
//!   `FindSpliceForLevel` does; whether that successor's key equals the new
//!   key is carried down, so the duplicate check at level 0 costs no extra
//!   comparison. The key is compared as a split (user key, trailer) pair:
//!   under the bytewise comparator first by key words, then (equal words)
//!   with an inlined byte comparison.
//! * **Readers** load links with **acquire** ordering, so a node reached
//!   through a link is seen fully initialised. They never lock, never
//!   retry, and see each insert appear atomically at level 0 (its
//!   linearisation point). A node linked at level 0 but not yet at higher
//!   levels is merely found more slowly.
//! * Nodes are never removed, and their memory is released only when the
//!   list (and its arenas) is dropped.
//!
//! Heights follow a geometric distribution with branching factor 4, drawn
//! from a hash of the key: deterministic (loom replays executions and needs
//! that), with no shared random state for writers to contend on.

use std::cmp::Ordering as CmpOrdering;
use std::mem::{align_of, size_of};
use std::ptr::{self, NonNull};

use lithify_base::key::{TRAILER_LEN, trailer, user_key};
use lithify_base::sync::UnsafeCell;
use lithify_base::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use lithify_base::xxh3_64;
use lithify_base::{BytewiseComparator, Comparator, InternalKeyComparator};

use crate::arena::{ARENA_ALIGN, Arena};

/// The tallest tower a node can have. With branching factor 4 this serves
/// lists of tens of millions of entries at full speed.
pub(crate) const MAX_HEIGHT: usize = 12;

/// The node header; the tower precedes it.
#[repr(C)]
struct Node {
    /// The first eight bytes of the user key ([`key_word`]).
    word: u64,
    /// The record: key and value lengths (`u32` each), then the key and
    /// the value, in the record arena.
    record: NonNull<u8>,
    /// The number of links, to check every link access: in this crate's
    /// unit tests and its loom and fuzz builds only. Everywhere else a node
    /// has the same size in debug and release builds, so a memtable fills
    /// at the same write in both, and the engine's counted runs agree
    /// across build profiles.
    #[cfg(any(test, loom, fuzzing))]
    height: u32,
    /// Stands for the header's and the record's bytes: they are written
    /// before the node is published (the record inside `with_mut`) and
    /// read after `with`. Under
    /// std this is zero-sized and free; under loom it lets the model checker
    /// verify that every reader's access happens after the writer's.
    payload: UnsafeCell<()>,
}

/// Bytes of one tower link.
const LINK_LEN: usize = size_of::<AtomicPtr<Node>>();
/// Bytes of the header.
const HEADER_LEN: usize = size_of::<Node>();
/// Bytes of a record's lengths (the key starts this far into the record).
const RECORD_HEADER_LEN: usize = 2 * size_of::<u32>();

// Towers start at an arena-aligned address; the header after `height` links
// and the links themselves must be aligned.
const _: () = assert!(align_of::<Node>() <= ARENA_ALIGN);
const _: () = assert!(align_of::<AtomicPtr<Node>>() <= ARENA_ALIGN);
const _: () = assert!(LINK_LEN.is_multiple_of(align_of::<Node>()));

/// A pointer to a published (fully initialised) node of a [`SkipList`].
///
/// Only the list that returned it may dereference it, through its methods;
/// that list's arenas keep the node and its record alive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NodePtr(NonNull<Node>);

/// An insert found an entry with an equal key already in the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DuplicateKey;

/// An internal key split into its user key and trailer once, so that the
/// many comparisons of a search do not split it again.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SearchKey<'a> {
    user_key: &'a [u8],
    trailer: u64,
    /// [`key_word`] of `user_key`.
    word: u64,
}

impl<'a> SearchKey<'a> {
    /// The internal key `user_key#trailer`.
    #[inline]
    pub(crate) fn new(user_key: &'a [u8], trailer: u64) -> Self {
        SearchKey {
            user_key,
            trailer,
            word: key_word(user_key),
        }
    }

    /// An encoded internal key, split as the internal-key comparator splits
    /// it (a key shorter than a trailer is all user key, trailer 0).
    #[inline]
    pub(crate) fn from_encoded(key: &'a [u8]) -> Self {
        SearchKey::new(user_key(key), trailer(key))
    }
}

/// A concurrent arena skiplist of `(internal key, value)` entries.
pub(crate) struct SkipList {
    /// The nodes (towers and headers).
    nodes: Arena,
    /// The records (keys and values).
    records: Arena,
    /// The sentinel before the first entry: a node of `max_height` links
    /// and an empty key, never compared.
    head: NonNull<Node>,
    /// The height of the tallest linked (or being linked) node, >= 1.
    height: AtomicUsize,
    max_height: usize,
    cmp: InternalKeyComparator,
    /// Whether user keys compare as plain bytes (then compared inline).
    bytewise: bool,
}

// SAFETY: the list's nodes live in its own arena, which is dropped with it.
// After publication, node memory is only mutated through atomic links; the
// raw `head` pointer is never freed separately. So the list can move between
// threads and be shared by them.
unsafe impl Send for SkipList {}
// SAFETY: see `Send`: shared access only performs atomic operations and reads
// of immutable, published bytes.
unsafe impl Sync for SkipList {}

impl SkipList {
    /// An empty list ordered by `cmp`, allocating record arena blocks of
    /// `block_size` bytes (node arena blocks of a quarter of that: nodes
    /// are small) and building towers of at most `max_height` (clamped to
    /// `1..=MAX_HEIGHT`) links.
    pub(crate) fn new(cmp: InternalKeyComparator, block_size: usize, max_height: usize) -> Self {
        let max_height = max_height.clamp(1, MAX_HEIGHT);
        let nodes = Arena::new(block_size / 4);
        let records = Arena::new(block_size);
        let head = allocate_node(&nodes, &records, max_height, None, &[]);
        let bytewise = cmp.user_comparator().name() == BytewiseComparator::NAME;
        SkipList {
            nodes,
            records,
            head,
            height: AtomicUsize::new(1),
            max_height,
            cmp,
            bytewise,
        }
    }

    /// The comparator the list is ordered by.
    pub(crate) fn comparator(&self) -> &InternalKeyComparator {
        &self.cmp
    }

    /// Bytes of the arenas consumed by nodes and records (see
    /// `Arena::memory_usage`).
    pub(crate) fn memory_usage(&self) -> usize {
        self.nodes.memory_usage() + self.records.memory_usage()
    }

    /// Bytes of arena blocks held.
    pub(crate) fn reserved_bytes(&self) -> usize {
        self.nodes.reserved_bytes() + self.records.reserved_bytes()
    }

    /// Inserts `user_key#trailer` with `value`. Safe to call from many
    /// threads at once and concurrently with readers.
    pub(crate) fn insert(
        &self,
        ukey: &[u8],
        trailer: u64,
        value: &[u8],
    ) -> Result<(), DuplicateKey> {
        let height = self.random_height(ukey, trailer);
        self.insert_with_height(height, ukey, trailer, value)
    }

    /// [`insert`](Self::insert) with a chosen tower height (tests and loom
    /// models pick heights to reach every linking path).
    pub(crate) fn insert_with_height(
        &self,
        height: usize,
        ukey: &[u8],
        trailer: u64,
        value: &[u8],
    ) -> Result<(), DuplicateKey> {
        let height = height.clamp(1, self.max_height);
        let key = SearchKey::new(ukey, trailer);

        // Raise the list height first, so the splice covers the new levels.
        let mut list_height = self.height.load(Ordering::Relaxed);
        while height > list_height {
            match self.height.compare_exchange_weak(
                list_height,
                height,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => list_height = height,
                Err(seen) => list_height = seen,
            }
        }

        // The splice: prev[l] < key <= next[l] at every level l. Each level
        // starts from the level above's pair, which brackets the key.
        let mut prev = [self.head; MAX_HEIGHT];
        let mut next: [*mut Node; MAX_HEIGHT] = [ptr::null_mut(); MAX_HEIGHT];
        let mut before = self.head;
        let mut after: *mut Node = ptr::null_mut();
        let mut after_equal = false;
        for level in (0..list_height).rev() {
            let (p, n, equal) = self.find_splice_for_level(&key, before, after, after_equal, level);
            prev[level] = p;
            next[level] = n;
            (before, after, after_equal) = (p, n, equal);
        }
        // Whether next[0] holds an equal key.
        let mut duplicate = after_equal;
        if duplicate {
            return Err(DuplicateKey);
        }

        let node = allocate_node(
            &self.nodes,
            &self.records,
            height,
            Some((ukey, trailer)),
            value,
        );
        for level in 0..height {
            loop {
                if level == 0 && duplicate {
                    return Err(DuplicateKey);
                }
                // Relaxed: nobody reaches `node` at this level before the
                // release CAS below publishes it there.
                self.link(node, level).store(next[level], Ordering::Relaxed);
                match self.link(prev[level], level).compare_exchange(
                    next[level],
                    node.as_ptr(),
                    Ordering::Release,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break,
                    Err(_) => {
                        // Another writer linked a node between prev and
                        // next: the old next still brackets the key.
                        let (p, n, equal) = self.find_splice_for_level(
                            &key,
                            prev[level],
                            next[level],
                            false,
                            level,
                        );
                        prev[level] = p;
                        next[level] = n;
                        duplicate = equal;
                    }
                }
            }
        }
        Ok(())
    }

    /// Walks `level` from `before` (which sorts before `key`) to the last
    /// node before `key`; returns it, its successor (null at the end) and
    /// whether that successor's key equals `key`. `after` is a node of this
    /// level known to sort at or after `key` (null: the end), reached
    /// without comparing; `after_equal` says whether its key equals `key`.
    #[inline]
    fn find_splice_for_level(
        &self,
        key: &SearchKey<'_>,
        mut before: NonNull<Node>,
        after: *mut Node,
        after_equal: bool,
        level: usize,
    ) -> (NonNull<Node>, *mut Node, bool) {
        loop {
            let next = self.link(before, level).load(Ordering::Acquire);
            if next == after {
                return (before, next, after_equal);
            }
            let Some(n) = NonNull::new(next) else {
                return (before, next, false);
            };
            // Start fetching the nodes the search may visit after `n` while
            // `n` is compared.
            self.prefetch_next(n, level);
            self.prefetch_below(before, level);
            match self.compare_node(n, key) {
                CmpOrdering::Less => before = n,
                CmpOrdering::Equal => return (before, next, true),
                CmpOrdering::Greater => return (before, next, false),
            }
        }
    }

    /// Compares the key of `node` (not the head) with `key`.
    #[inline]
    fn compare_node(&self, node: NonNull<Node>, key: &SearchKey<'_>) -> CmpOrdering {
        if self.bytewise {
            // Big-endian words order like the bytes they hold; only equal
            // words (which zero padding can also make) need the record.
            // The header is read like the record, after touching the
            // marker, so loom checks its publication in every model.
            let header = header(node);
            header.payload.with(|_| ());
            let word = header.word;
            if word != key.word {
                return word.cmp(&key.word);
            }
        }
        let encoded = self.key(NodePtr(node));
        let (node_user, node_trailer) = (user_key(encoded), trailer(encoded));
        let users = if self.bytewise {
            compare_bytes(node_user, key.user_key)
        } else {
            self.cmp.compare_user(node_user, key.user_key)
        };
        // A higher trailer (newer) sorts first.
        users.then_with(|| key.trailer.cmp(&node_trailer))
    }

    /// Whether the entry `node` has the user key `user_key`.
    #[inline]
    pub(crate) fn has_user_key(&self, node: NodePtr, ukey: &[u8]) -> bool {
        if self.bytewise {
            let header = header(node.0);
            header.payload.with(|_| ());
            header.word == key_word(ukey) && user_key(self.key(node)) == ukey
        } else {
            let node_user = user_key(self.key(node));
            self.cmp.compare_user(node_user, ukey).is_eq()
        }
    }

    /// The first entry whose key is `>=` `target`.
    pub(crate) fn find_greater_or_equal(&self, target: &SearchKey<'_>) -> Option<NodePtr> {
        let mut x = self.head;
        let mut level = self.height.load(Ordering::Relaxed) - 1;
        // A node already known to be >= target at a higher level.
        let mut last_bigger: *mut Node = ptr::null_mut();
        loop {
            let next = self.link(x, level).load(Ordering::Acquire);
            let ord = match NonNull::new(next) {
                Some(n) if next != last_bigger => {
                    self.prefetch_next(n, level);
                    self.prefetch_below(x, level);
                    self.compare_node(n, target)
                }
                _ => CmpOrdering::Greater,
            };
            match ord {
                CmpOrdering::Less => {
                    // `ord` is only `Less` for a non-null `next`.
                    x = NonNull::new(next)?;
                }
                CmpOrdering::Equal => return NonNull::new(next).map(NodePtr),
                CmpOrdering::Greater if level == 0 => return NonNull::new(next).map(NodePtr),
                CmpOrdering::Greater => {
                    last_bigger = next;
                    level -= 1;
                }
            }
        }
    }

    /// The last entry whose key is `<` `target`.
    pub(crate) fn find_less_than(&self, target: &SearchKey<'_>) -> Option<NodePtr> {
        let mut x = self.head;
        let mut level = self.height.load(Ordering::Relaxed) - 1;
        // A node already known not to be before the target.
        let mut last_not_before: *mut Node = ptr::null_mut();
        loop {
            let next = self.link(x, level).load(Ordering::Acquire);
            self.prefetch_below(x, level);
            match NonNull::new(next) {
                Some(n)
                    if next != last_not_before
                        && self.compare_node(n, target) == CmpOrdering::Less =>
                {
                    x = n;
                }
                _ if level == 0 => return self.not_head(x),
                _ => {
                    last_not_before = next;
                    level -= 1;
                }
            }
        }
    }

    /// The first entry.
    pub(crate) fn first(&self) -> Option<NodePtr> {
        self.next(NodePtr(self.head))
    }

    /// The last entry.
    pub(crate) fn last(&self) -> Option<NodePtr> {
        let mut x = self.head;
        let mut level = self.height.load(Ordering::Relaxed) - 1;
        loop {
            match NonNull::new(self.link(x, level).load(Ordering::Acquire)) {
                Some(n) => x = n,
                None if level == 0 => return self.not_head(x),
                None => level -= 1,
            }
        }
    }

    /// The entry after `node`.
    #[inline]
    pub(crate) fn next(&self, node: NodePtr) -> Option<NodePtr> {
        NonNull::new(self.link(node.0, 0).load(Ordering::Acquire)).map(NodePtr)
    }

    /// Starts fetching the record of `node`, and the node after it, into
    /// the cache: an iterator just positioned on `node` reads the record
    /// at once and will likely step to the successor. Reads only `node`'s
    /// own header, which the search that found it has just loaded.
    #[inline]
    pub(crate) fn prefetch_record_and_next(&self, node: NodePtr) {
        #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
        lithify_base::hint::prefetch_read(header(node.0).record.as_ptr());
        self.prefetch_next(node.0, 0);
    }

    /// Starts fetching, for an iterator that has just stepped to `node`,
    /// the record of the entry after it and the node after that. Called at
    /// each step, it keeps two steps in flight: the successor's header was
    /// fetched one step earlier (by this call, or by
    /// [`prefetch_record_and_next`](Self::prefetch_record_and_next) after a
    /// seek), so reading its record pointer here is usually a cache hit,
    /// and its record arrives while the caller works on `node`.
    #[inline]
    pub(crate) fn prefetch_successor(&self, node: NodePtr) {
        // Where prefetches are no-ops (other processors, Miri) and under
        // loom (whose model checker would only explore the extra loads'
        // interleavings), the successor is not read at all.
        #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
        if let Some(next) = self.next(node) {
            self.prefetch_record_and_next(next);
        }
        #[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
        let _ = node;
    }

    /// Whether the list has no entries.
    pub(crate) fn is_empty(&self) -> bool {
        self.first().is_none()
    }

    fn not_head(&self, x: NonNull<Node>) -> Option<NodePtr> {
        (x != self.head).then_some(NodePtr(x))
    }

    /// The encoded internal key of `node`.
    #[inline]
    pub(crate) fn key(&self, node: NodePtr) -> &[u8] {
        let (record, key_len, _) = record(node.0);
        // SAFETY: `node` is a published node of this list (the `NodePtr`
        // contract): its record was written before the release that
        // published it, is never written again, and lives in
        // `self.records` for as long as `&self`; the key follows the
        // lengths.
        unsafe { std::slice::from_raw_parts(record.add(RECORD_HEADER_LEN), key_len) }
    }

    /// The value of `node`.
    #[inline]
    pub(crate) fn value(&self, node: NodePtr) -> &[u8] {
        let (record, key_len, value_len) = record(node.0);
        // SAFETY: as in `key`; the value follows the key.
        unsafe { std::slice::from_raw_parts(record.add(RECORD_HEADER_LEN + key_len), value_len) }
    }

    /// The link of `node` at `level`.
    #[inline]
    fn link(&self, node: NonNull<Node>, level: usize) -> &AtomicPtr<Node> {
        // Checked in release too: loom's tests run optimised.
        #[cfg(any(test, loom, fuzzing))]
        assert!(level < header(node).height as usize);
        // SAFETY: `node` is a node of this list (published, or being linked
        // by the caller) with more than `level` links (callers only follow a
        // node's links at levels it was linked at, or the head's, which has
        // `max_height`), all initialised by `allocate_node`; the arena keeps
        // them alive for `&self`.
        unsafe { &*link_ptr(node, level) }
    }

    /// Hints the processor to fetch the header of the successor of `node`
    /// at `level` (RocksDB's skiplist does the same): a search usually
    /// moves on to it next, and its cache miss then overlaps the comparison
    /// with `node`. A relaxed load is enough: the pointer is only a hint.
    #[inline(always)]
    fn prefetch_next(&self, node: NonNull<Node>, level: usize) {
        // Under loom the hint is nothing, and its load would only add
        // interleavings for the model checker to explore.
        #[cfg(not(loom))]
        lithify_base::hint::prefetch_read(self.link(node, level).load(Ordering::Relaxed));
        #[cfg(loom)]
        let _ = (node, level);
    }

    /// Hints the processor to fetch the successors of `node` one and two
    /// levels below `level`: when the node compared at `level` turns out to
    /// follow the key, the search drops down from `node` and visits one of
    /// them next. Fetching them during that comparison turns a chain of
    /// dependent cache misses into overlapping ones (single-threaded random
    /// inserts into a 470K-entry list: 1550 -> 1270 ns; lookups 2050 ->
    /// 1700 ns). A third level gained nothing measurable.
    #[inline(always)]
    fn prefetch_below(&self, node: NonNull<Node>, level: usize) {
        if level > 0 {
            self.prefetch_next(node, level - 1);
        }
        if level > 1 {
            self.prefetch_next(node, level - 2);
        }
    }

    /// A tower height for a new entry: 1, then one more with probability
    /// 1/4 each, up to `max_height`.
    fn random_height(&self, ukey: &[u8], trailer: u64) -> usize {
        let mut bits = mix64(xxh3_64(ukey) ^ trailer);
        let mut height = 1;
        while height < self.max_height && bits & 3 == 0 {
            height += 1;
            bits >>= 2;
        }
        height
    }
}

impl std::fmt::Debug for SkipList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkipList")
            .field("height", &self.height.load(Ordering::Relaxed))
            .field("nodes", &self.nodes)
            .field("records", &self.records)
            .finish()
    }
}

/// Compares two byte strings as `Ord for [u8]` does, eight bytes at a time
/// (big-endian words compare like their bytes), without a call to `memcmp`:
/// memtable keys are short and compared millions of times.
#[inline]
pub(crate) fn compare_bytes(a: &[u8], b: &[u8]) -> CmpOrdering {
    let common = a.len().min(b.len());
    let mut at = 0;
    while at + 8 <= common {
        // SAFETY: `at + 8 <= common`, so both reads stay inside their slices.
        let (x, y) = unsafe {
            (
                a.as_ptr().add(at).cast::<u64>().read_unaligned(),
                b.as_ptr().add(at).cast::<u64>().read_unaligned(),
            )
        };
        if x != y {
            return u64::from_be(x).cmp(&u64::from_be(y));
        }
        at += 8;
    }
    while at < common {
        let (x, y) = (a[at], b[at]);
        if x != y {
            return x.cmp(&y);
        }
        at += 1;
    }
    a.len().cmp(&b.len())
}

/// The header of an initialised node.
#[inline]
fn header<'a>(node: NonNull<Node>) -> &'a Node {
    // SAFETY: every `NonNull<Node>` the list handles points to a header
    // written by `allocate_node` before the node was shared; headers are
    // immutable afterwards (the payload marker is an `UnsafeCell`). The
    // reference covers the header only, so it overlaps no bytes that change
    // (the links precede it). Callers bound the lifetime by the list that
    // owns the arena.
    unsafe { node.as_ref() }
}

/// The link of `node` at `level`, with the provenance of the node's
/// allocation. Link `level` sits `level + 1` links before the header.
#[inline]
fn link_ptr(node: NonNull<Node>, level: usize) -> *const AtomicPtr<Node> {
    // SAFETY: callers pass a level below the node's height, so the link is
    // inside the node's allocation, which starts `height` links before the
    // header; no reference is created.
    unsafe { node.as_ptr().cast::<AtomicPtr<Node>>().sub(level + 1) }
}

/// The record of the published `node`: where it starts, its key length
/// and its value length.
#[inline]
fn record(node: NonNull<Node>) -> (*const u8, usize, usize) {
    let header = header(node);
    header.payload.with(|_| ());
    let record = header.record.as_ptr().cast_const();
    // SAFETY: `allocate_node` wrote both lengths at the start of the record
    // (aligned: records are arena allocations) before the node was
    // published, and they never change.
    let (key_len, value_len) = unsafe {
        (
            record.cast::<u32>().read(),
            record.cast::<u32>().add(1).read(),
        )
    };
    (record, key_len as usize, value_len as usize)
}

/// The key word of a user key: its first eight bytes, big-endian, padded
/// with zeros. Byte order of user keys implies the order of their words
/// (equal words say nothing), which is all a search needs.
#[inline]
pub(crate) fn key_word(user_key: &[u8]) -> u64 {
    if let Some(head) = user_key.first_chunk::<8>() {
        u64::from_be_bytes(*head)
    } else {
        let mut bytes = [0u8; 8];
        bytes[..user_key.len()].copy_from_slice(user_key);
        u64::from_be_bytes(bytes)
    }
}

/// Allocates and fully initialises an unlinked node and its record for
/// the internal key `user_key#trailer` (`None`: the head's empty key).
fn allocate_node(
    nodes: &Arena,
    records: &Arena,
    height: usize,
    key: Option<(&[u8], u64)>,
    value: &[u8],
) -> NonNull<Node> {
    let key_len = key.map_or(0, |(ukey, _)| ukey.len() + TRAILER_LEN);
    let (Ok(key_len32), Ok(value_len32)) = (u32::try_from(key_len), u32::try_from(value.len()))
    else {
        unreachable!("MemTable::add bounds key and value lengths to u32")
    };
    let record = records.allocate(RECORD_HEADER_LEN + key_len + value.len());
    let tower_len = height * LINK_LEN;
    let start = nodes.allocate(tower_len + HEADER_LEN);
    // SAFETY: `start` points to `tower_len + HEADER_LEN` fresh, exclusively
    // owned bytes aligned to ARENA_ALIGN; the `height` links fill the first
    // `tower_len` bytes (each aligned: see the const assertions) and the
    // header follows, aligned for `Node`. Nothing else can see the node
    // until it is published with a release CAS.
    let node = unsafe {
        let node = start.add(tower_len).cast::<Node>();
        node.as_ptr().write(Node {
            word: key.map_or(0, |(ukey, _)| key_word(ukey)),
            record,
            #[cfg(any(test, loom, fuzzing))]
            height: height as u32,
            payload: UnsafeCell::new(()),
        });
        for level in 0..height {
            link_ptr(node, level)
                .cast_mut()
                .write(AtomicPtr::new(ptr::null_mut()));
        }
        node
    };
    header(node).payload.with_mut(|_| {
        let dst = record.as_ptr();
        // SAFETY: `dst` is an ARENA_ALIGN-aligned allocation of
        // `RECORD_HEADER_LEN + key_len + value.len()` bytes, which no one
        // else accesses yet.
        unsafe {
            dst.cast::<u32>().write(key_len32);
            dst.cast::<u32>().add(1).write(value_len32);
            let dst = dst.add(RECORD_HEADER_LEN);
            if let Some((ukey, trailer)) = key {
                ptr::copy_nonoverlapping(ukey.as_ptr(), dst, ukey.len());
                ptr::copy_nonoverlapping(
                    trailer.to_le_bytes().as_ptr(),
                    dst.add(ukey.len()),
                    TRAILER_LEN,
                );
            }
            ptr::copy_nonoverlapping(value.as_ptr(), dst.add(key_len), value.len());
        }
    });
    node
}

/// A 64-bit finaliser (splitmix64's) spreading `x`'s entropy over all bits.
#[inline]
fn mix64(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The user key and trailer of a list entry's key (helpers for callers).
#[inline]
pub(crate) fn split_key(key: &[u8]) -> (&[u8], u64) {
    (user_key(key), trailer(key))
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use lithify_base::key::pack_trailer;
    use lithify_base::{InternalKey, ValueKind};

    fn list(block: usize) -> SkipList {
        SkipList::new(InternalKeyComparator::bytewise(), block, MAX_HEIGHT)
    }

    fn put(l: &SkipList, k: &str, seq: u64, v: &str) -> Result<(), DuplicateKey> {
        l.insert(
            k.as_bytes(),
            pack_trailer(seq, ValueKind::Put as u8),
            v.as_bytes(),
        )
    }

    fn text(l: &SkipList, n: NodePtr) -> String {
        let key = InternalKey::from_encoded(l.key(n).to_vec()).unwrap();
        format!("{key}={}", String::from_utf8_lossy(l.value(n)))
    }

    fn forward(l: &SkipList) -> Vec<String> {
        let mut out = Vec::new();
        let mut n = l.first();
        while let Some(node) = n {
            out.push(text(l, node));
            n = l.next(node);
        }
        out
    }

    #[test]
    fn keeps_entries_sorted_newest_first() {
        let l = list(1024);
        assert!(l.is_empty());
        assert!(l.first().is_none() && l.last().is_none());
        for (k, s, v) in [
            ("b", 1, "b1"),
            ("a", 2, "a2"),
            ("c", 3, "c3"),
            ("b", 4, "b4"),
        ] {
            put(&l, k, s, v).unwrap();
        }
        assert_eq!(
            forward(&l),
            ["a#2,SET=a2", "b#4,SET=b4", "b#1,SET=b1", "c#3,SET=c3"]
        );
        assert_eq!(text(&l, l.last().unwrap()), "c#3,SET=c3");
        assert!(!l.is_empty());
    }

    #[test]
    fn rejects_an_equal_key() {
        let l = list(1024);
        put(&l, "k", 7, "first").unwrap();
        assert_eq!(put(&l, "k", 7, "second"), Err(DuplicateKey));
        put(&l, "k", 8, "newer").unwrap();
        assert_eq!(forward(&l), ["k#8,SET=newer", "k#7,SET=first"]);
    }

    #[test]
    fn finds_bounds_at_every_height() {
        // Explicit heights put nodes on every level, so the searches take
        // each of their branches.
        let l = list(4096);
        let keys: Vec<u32> = (0..64).map(|i| i * 2).collect();
        for (i, &k) in keys.iter().enumerate() {
            let height = 1 + (i * 7) % MAX_HEIGHT;
            l.insert_with_height(height, &k.to_be_bytes(), pack_trailer(1, 1), b"")
                .unwrap();
        }
        for probe in 0u32..130 {
            let target = InternalKey::new(&probe.to_be_bytes(), 1, ValueKind::Put);
            let target = SearchKey::from_encoded(target.encoded());
            let ge = l.find_greater_or_equal(&target);
            let want_ge = keys.iter().find(|&&k| k >= probe);
            assert_eq!(
                ge.map(|n| l.key(n)[..4].to_vec()),
                want_ge.map(|k| k.to_be_bytes().to_vec())
            );
            let lt = l.find_less_than(&target);
            let want_lt = keys.iter().rev().find(|&&k| k < probe);
            assert_eq!(
                lt.map(|n| l.key(n)[..4].to_vec()),
                want_lt.map(|k| k.to_be_bytes().to_vec())
            );
        }
        assert_eq!(&l.key(l.last().unwrap())[..4], 126u32.to_be_bytes());
    }

    #[test]
    fn heights_follow_a_geometric_distribution() {
        let l = list(1024);
        let mut counts = [0usize; MAX_HEIGHT + 1];
        for i in 0u32..40_000 {
            counts[l.random_height(&i.to_le_bytes(), pack_trailer(u64::from(i), 1))] += 1;
        }
        // Expected 30000, 7500, 1875, 469, ...: allow generous slack.
        assert!((28_000..32_000).contains(&counts[1]), "{counts:?}");
        assert!((6_500..8_500).contains(&counts[2]), "{counts:?}");
        assert!((1_500..2_300).contains(&counts[3]), "{counts:?}");
        assert_eq!(counts[0], 0);
    }

    #[test]
    fn large_values_live_in_dedicated_blocks() {
        let l = list(1024);
        let big = "x".repeat(10_000);
        put(&l, "big", 1, &big).unwrap();
        put(&l, "small", 2, "s").unwrap();
        let first = l.first().unwrap();
        assert_eq!(l.value(first).len(), 10_000);
        assert!(l.memory_usage() > 10_000);
        assert!(l.reserved_bytes() >= 10_000 + 1024);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "threads are slow under Miri; the loom models cover this"
    )]
    fn concurrent_inserts_all_land_in_order() {
        let l = std::sync::Arc::new(list(64 * 1024));
        let threads: Vec<_> = (0..4u32)
            .map(|t| {
                let l = l.clone();
                std::thread::spawn(move || {
                    for i in 0..5000u32 {
                        let k = (i * 4 + t).to_be_bytes();
                        l.insert(&k, pack_trailer(u64::from(i), 1), &k).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let mut n = l.first();
        let mut expect = 0u32;
        while let Some(node) = n {
            let (uk, _) = split_key(l.key(node));
            assert_eq!(uk, expect.to_be_bytes());
            assert_eq!(l.value(node), expect.to_be_bytes());
            expect += 1;
            n = l.next(node);
        }
        assert_eq!(expect, 20_000);
    }
}
