//! A concurrent skiplist of internal keys whose nodes live in an [`Arena`].
//!
//! The protocol is RocksDB's `InlineSkipList::InsertConcurrently` (the
//! memtable of `allow_concurrent_memtable_write`), written in our own words:
//!
//! * A node is one arena allocation: a header, a tower of `height` atomic
//!   `next` links, then the internal key and the value inline:
//!
//!   ```text
//!   +---------------------------------+--------------------+-----+-------+
//!   | key_len u32 | value_len u32 |   | next[0..height]    | key | value |
//!   | height u32  | payload marker    | AtomicPtr<Node>    |     |       |
//!   +---------------------------------+--------------------+-----+-------+
//!   ```
//!
//!   Everything but the links is written once, before the node is
//!   published, and never changes.
//! * **Insert** allocates and fills the node, raises the list height with a
//!   CAS if the node is taller, finds the *splice* (at every level, the last
//!   node before the key and the first at or after it), then links the node
//!   bottom-up: for each level, store the successor into the node's link
//!   (relaxed: the node is not reachable at that level yet) and CAS the
//!   predecessor's link from the successor to the node with **release**
//!   ordering. A failed CAS means another writer linked a node there; the
//!   splice of that level is recomputed from the old predecessor and the
//!   step retried. An equal key found at level 0 aborts the insert.
//! * **Readers** load links with **acquire** ordering, so a node reached
//!   through a link is seen fully initialised. They never lock, never
//!   retry, and see each insert appear atomically at level 0 (its
//!   linearisation point). A node linked at level 0 but not yet at higher
//!   levels is merely found more slowly.
//! * Nodes are never removed, and their memory is released only when the
//!   list (and its arena) is dropped.
//!
//! Heights follow a geometric distribution with branching factor 4, drawn
//! from a hash of the key: deterministic (loom replays executions and needs
//! that), with no shared random state for writers to contend on.

use std::cmp::Ordering as CmpOrdering;
use std::mem::{align_of, offset_of, size_of};
use std::ptr::{self, NonNull};

use lithify_base::key::{TRAILER_LEN, trailer, user_key};
use lithify_base::sync::UnsafeCell;
use lithify_base::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use lithify_base::xxh3_64;
use lithify_base::{Comparator, InternalKeyComparator};

use crate::arena::{ARENA_ALIGN, Arena};

/// The tallest tower a node can have. With branching factor 4 this serves
/// lists of tens of millions of entries at full speed.
pub(crate) const MAX_HEIGHT: usize = 12;

/// The node header; the tower, key and value follow it in the arena.
#[repr(C)]
struct Node {
    key_len: u32,
    value_len: u32,
    height: u32,
    /// Stands for the key and value bytes: they are written inside
    /// `with_mut` before the node is published and read after `with`. Under
    /// std this is zero-sized and free; under loom it lets the model checker
    /// verify that every reader's access happens after the writer's.
    payload: UnsafeCell<()>,
    /// The first of `height` links (a zero-length marker: the links are
    /// addressed from the node pointer, whose provenance covers them).
    tower: [AtomicPtr<Node>; 0],
}

const _: () = assert!(align_of::<Node>() <= ARENA_ALIGN);

/// A pointer to a published (fully initialised) node of a [`SkipList`].
///
/// Only the list that returned it may dereference it, through its methods;
/// that list's arena keeps the node alive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NodePtr(NonNull<Node>);

/// An insert found an entry with an equal key already in the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DuplicateKey;

/// A concurrent arena skiplist of `(internal key, value)` entries.
pub(crate) struct SkipList {
    arena: Arena,
    /// The sentinel before the first entry: a node of `max_height` links
    /// and an empty key, never compared.
    head: NonNull<Node>,
    /// The height of the tallest linked (or being linked) node, >= 1.
    height: AtomicUsize,
    max_height: usize,
    cmp: InternalKeyComparator,
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
    /// An empty list ordered by `cmp`, allocating arena blocks of
    /// `block_size` bytes and building towers of at most `max_height`
    /// (clamped to `1..=MAX_HEIGHT`) links.
    pub(crate) fn new(cmp: InternalKeyComparator, block_size: usize, max_height: usize) -> Self {
        let max_height = max_height.clamp(1, MAX_HEIGHT);
        let arena = Arena::new(block_size);
        let head = allocate_node(&arena, max_height, None, &[]);
        SkipList {
            arena,
            head,
            height: AtomicUsize::new(1),
            max_height,
            cmp,
        }
    }

    /// The comparator the list is ordered by.
    pub(crate) fn comparator(&self) -> &InternalKeyComparator {
        &self.cmp
    }

    /// Bytes of the arena consumed by nodes (see `Arena::memory_usage`).
    pub(crate) fn memory_usage(&self) -> usize {
        self.arena.memory_usage()
    }

    /// Bytes of arena blocks held.
    pub(crate) fn reserved_bytes(&self) -> usize {
        self.arena.reserved_bytes()
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
        let node = allocate_node(&self.arena, height, Some((ukey, trailer)), value);
        let node_ptr = NodePtr(node);
        let key = self.key(node_ptr);

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

        // The splice: prev[l] < key <= next[l] at every level l.
        let mut prev = [self.head; MAX_HEIGHT];
        let mut next: [*mut Node; MAX_HEIGHT] = [ptr::null_mut(); MAX_HEIGHT];
        let mut before = self.head;
        for level in (0..list_height).rev() {
            let (p, n) = self.find_splice_for_level(key, before, level);
            prev[level] = p;
            next[level] = n;
            before = p;
        }

        for level in 0..height {
            loop {
                if level == 0
                    && let Some(succ) = NonNull::new(next[0])
                    && self.cmp.compare(self.key(NodePtr(succ)), key) == CmpOrdering::Equal
                {
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
                        let (p, n) = self.find_splice_for_level(key, prev[level], level);
                        prev[level] = p;
                        next[level] = n;
                    }
                }
            }
        }
        Ok(())
    }

    /// Walks `level` from `before` (which sorts before `key`) to the last
    /// node before `key`; returns it and its successor (null at the end).
    fn find_splice_for_level(
        &self,
        key: &[u8],
        mut before: NonNull<Node>,
        level: usize,
    ) -> (NonNull<Node>, *mut Node) {
        loop {
            let next = self.link(before, level).load(Ordering::Acquire);
            match NonNull::new(next) {
                Some(n) if self.cmp.compare(self.key(NodePtr(n)), key) == CmpOrdering::Less => {
                    before = n;
                }
                _ => return (before, next),
            }
        }
    }

    /// The first entry whose key is `>=` the target; `target(k)` compares
    /// an entry's key `k` with the target.
    pub(crate) fn find_greater_or_equal(
        &self,
        target: impl Fn(&[u8]) -> CmpOrdering,
    ) -> Option<NodePtr> {
        let mut x = self.head;
        let mut level = self.height.load(Ordering::Relaxed) - 1;
        // A node already known to be >= target at a higher level.
        let mut last_bigger: *mut Node = ptr::null_mut();
        loop {
            let next = self.link(x, level).load(Ordering::Acquire);
            let ord = match NonNull::new(next) {
                Some(n) if next != last_bigger => target(self.key(NodePtr(n))),
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

    /// The last entry whose key is `<` the target (see
    /// [`find_greater_or_equal`](Self::find_greater_or_equal)).
    pub(crate) fn find_less_than(&self, target: impl Fn(&[u8]) -> CmpOrdering) -> Option<NodePtr> {
        let mut x = self.head;
        let mut level = self.height.load(Ordering::Relaxed) - 1;
        // A node already known not to be before the target.
        let mut last_not_before: *mut Node = ptr::null_mut();
        loop {
            let next = self.link(x, level).load(Ordering::Acquire);
            match NonNull::new(next) {
                Some(n)
                    if next != last_not_before
                        && target(self.key(NodePtr(n))) == CmpOrdering::Less =>
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
        let header = header(node.0);
        header.payload.with(|_| ());
        // SAFETY: `node` is a published node of this list (the `NodePtr`
        // contract): its key bytes were written before the release that
        // published it, are never written again, and live in `self.arena`
        // for as long as `&self`.
        unsafe { std::slice::from_raw_parts(key_ptr(node.0), header.key_len as usize) }
    }

    /// The value of `node`.
    #[inline]
    pub(crate) fn value(&self, node: NodePtr) -> &[u8] {
        let header = header(node.0);
        header.payload.with(|_| ());
        // SAFETY: as in `key`; the value follows the key.
        unsafe {
            std::slice::from_raw_parts(
                key_ptr(node.0).add(header.key_len as usize),
                header.value_len as usize,
            )
        }
    }

    /// The link of `node` at `level`.
    #[inline]
    fn link(&self, node: NonNull<Node>, level: usize) -> &AtomicPtr<Node> {
        debug_assert!(level < header(node).height as usize);
        // SAFETY: `node` is a node of this list (published, or being linked
        // by the caller) with more than `level` links, all initialised by
        // `allocate_node`; the arena keeps them alive for `&self`.
        unsafe { &*tower(node).add(level) }
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
            .field("arena", &self.arena)
            .finish()
    }
}

/// The header of an initialised node.
#[inline]
fn header<'a>(node: NonNull<Node>) -> &'a Node {
    // SAFETY: every `NonNull<Node>` the list handles points to a header
    // written by `allocate_node` before the node was shared; headers are
    // immutable afterwards (the payload marker is an `UnsafeCell`). The
    // reference covers the header only (the tower is a zero-length array),
    // so it overlaps no bytes that change. Callers bound the lifetime by the
    // list that owns the arena.
    unsafe { node.as_ref() }
}

/// The first link of `node`, with the provenance of the node's allocation.
#[inline]
fn tower(node: NonNull<Node>) -> *const AtomicPtr<Node> {
    // SAFETY: in bounds of the node's allocation (the tower follows the
    // header); no reference is created.
    unsafe {
        node.as_ptr()
            .cast::<u8>()
            .add(offset_of!(Node, tower))
            .cast()
    }
}

/// The first key byte of `node`.
#[inline]
fn key_ptr(node: NonNull<Node>) -> *mut u8 {
    let height = header(node).height as usize;
    // SAFETY: the key follows the `height` links inside the node allocation.
    unsafe {
        node.as_ptr()
            .cast::<u8>()
            .add(offset_of!(Node, tower) + height * size_of::<AtomicPtr<Node>>())
    }
}

/// Allocates and fully initialises an unlinked node for the internal key
/// `user_key#trailer` (`None`: the head's empty key).
fn allocate_node(
    arena: &Arena,
    height: usize,
    key: Option<(&[u8], u64)>,
    value: &[u8],
) -> NonNull<Node> {
    let key_len = key.map_or(0, |(ukey, _)| ukey.len() + TRAILER_LEN);
    let size =
        offset_of!(Node, tower) + height * size_of::<AtomicPtr<Node>>() + key_len + value.len();
    let node = arena.allocate(size).cast::<Node>();
    let (Ok(key_len32), Ok(value_len32)) = (u32::try_from(key_len), u32::try_from(value.len()))
    else {
        unreachable!("MemTable::add bounds key and value lengths to u32")
    };
    // SAFETY: `node` points to `size` fresh, exclusively owned bytes aligned
    // for `Node` (ARENA_ALIGN >= align_of::<Node>()); the header, `height`
    // links and the key and value fit inside them. Nothing else can see the
    // node until it is published with a release CAS.
    unsafe {
        node.as_ptr().write(Node {
            key_len: key_len32,
            value_len: value_len32,
            height: height as u32,
            payload: UnsafeCell::new(()),
            tower: [],
        });
        let links = tower(node).cast_mut();
        for level in 0..height {
            links.add(level).write(AtomicPtr::new(ptr::null_mut()));
        }
    }
    header(node).payload.with_mut(|_| {
        let dst = key_ptr(node);
        // SAFETY: `dst` has room for `key_len + value.len()` bytes (see the
        // size above), which no one else accesses yet.
        unsafe {
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
        let cmp = InternalKeyComparator::bytewise();
        for probe in 0u32..130 {
            let target = InternalKey::new(&probe.to_be_bytes(), 1, ValueKind::Put);
            let ge = l.find_greater_or_equal(|k| cmp.compare(k, target.encoded()));
            let want_ge = keys.iter().find(|&&k| k >= probe);
            assert_eq!(
                ge.map(|n| l.key(n)[..4].to_vec()),
                want_ge.map(|k| k.to_be_bytes().to_vec())
            );
            let lt = l.find_less_than(|k| cmp.compare(k, target.encoded()));
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
