//! The block cache shared by many tables.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use bytes::{Bytes, BytesMut};
use lithify_base::sync::Mutex;

use crate::block::Block;
use lithify_base::sync::atomic::{AtomicU64, Ordering};

/// Bytes charged per cached block on top of its length (list links, map
/// entry, `Bytes` header).
pub const ENTRY_OVERHEAD: usize = 80;

/// Default number of shards is `1 << DEFAULT_SHARD_BITS`.
pub(crate) const DEFAULT_SHARD_BITS: u32 = 4;

/// Counters of a [`BlockCache`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups that found their block.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// Blocks inserted.
    pub inserts: u64,
    /// Blocks evicted to stay within capacity.
    pub evictions: u64,
    /// Bytes charged now (block lengths plus [`ENTRY_OVERHEAD`] each).
    pub usage: usize,
    /// Blocks held now.
    pub entries: usize,
    /// The configured capacity in bytes.
    pub capacity: usize,
}

/// The block cache shared by many tables.
///
/// A [`BlockCache`] holds decoded (checksum-verified, decompressed) blocks,
/// keyed by `(table id, block offset)`. Tables cache them parsed, as
/// blocks ([`insert_block`](Self::insert_block),
/// [`get_block`](Self::get_block)), so a hit costs no re-parsing; the
/// byte-level [`insert`](Self::insert) and [`get`](Self::get) serve other
/// users. It is split into
/// shards, each a mutex-protected LRU list with its own share of the byte
/// capacity, so readers of different blocks rarely contend. A hit hands out
/// a clone of the `Bytes` (a reference-count increment): the block is never
/// copied, and an evicted block stays alive while an iterator still uses it.
///
/// **Table ids** come from the cache itself ([`BlockCache::new_table_id`]),
/// one per opened table, so two databases sharing a cache, or a file number
/// reused after a crash, can never read each other's blocks.
///
/// Hit, miss, insert and eviction counters are kept per shard under the
/// shard's lock (no extra shared atomics on the read path) and summed by
/// [`BlockCache::stats`].
///
/// **Spare buffers:** each shard keeps the buffers of its last few evicted
/// blocks (at most four, each at most 1/64 of the shard's capacity, so at
/// most 1/16 of the capacity on top of it; not counted in
/// [`CacheStats::usage`]), and a table read that misses reads into one no
/// one holds any more instead of allocating.
///
/// ```
/// use bytes::Bytes;
/// use lithify_sstable::BlockCache;
///
/// let cache = BlockCache::new(1 << 20);
/// let table = cache.new_table_id();
/// assert!(cache.get(table, 0).is_none());
/// cache.insert(table, 0, Bytes::from_static(b"block"));
/// assert_eq!(cache.get(table, 0).unwrap(), &b"block"[..]);
/// let stats = cache.stats();
/// assert_eq!((stats.hits, stats.misses), (1, 1));
/// ```
pub struct BlockCache {
    shards: Box<[Mutex<Shard>]>,
    shard_mask: u64,
    capacity: usize,
    next_table_id: AtomicU64,
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("capacity", &self.capacity)
            .field("shards", &self.shards.len())
            .finish_non_exhaustive()
    }
}

impl BlockCache {
    /// A cache of `capacity` bytes in 16 shards.
    pub fn new(capacity: usize) -> Self {
        Self::with_shard_bits(capacity, DEFAULT_SHARD_BITS)
    }

    /// A cache of `capacity` bytes in `1 << shard_bits` shards (at most
    /// 2^10), each holding an equal share of the capacity.
    pub fn with_shard_bits(capacity: usize, shard_bits: u32) -> Self {
        let shard_bits = shard_bits.min(10);
        let n = 1usize << shard_bits;
        let per_shard = capacity / n;
        let shards = (0..n).map(|_| Mutex::new(Shard::new(per_shard))).collect();
        BlockCache {
            shards,
            shard_mask: (n - 1) as u64,
            capacity,
            next_table_id: AtomicU64::new(1),
        }
    }

    /// A fresh id for a table's blocks, never handed out before by this
    /// cache.
    pub fn new_table_id(&self) -> u64 {
        self.next_table_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The configured capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    #[inline]
    fn shard(&self, key: CacheKey) -> &Mutex<Shard> {
        let h = mix(key.table ^ mix(key.offset));
        &self.shards[((h >> 32) & self.shard_mask) as usize]
    }

    /// The bytes of the cached block at `offset` of table `table_id`,
    /// counting a hit or a miss.
    pub fn get(&self, table_id: u64, offset: u64) -> Option<Bytes> {
        let key = CacheKey {
            table: table_id,
            offset,
        };
        self.shard(key)
            .lock()
            .get(key)
            .map(|cached| cached.data().clone())
    }

    /// Caches the bytes `block` at `offset` of table `table_id`, evicting
    /// the least recently used blocks of its shard to stay within capacity.
    /// A block larger than a shard's capacity is not cached.
    pub fn insert(&self, table_id: u64, offset: u64, block: Bytes) {
        let key = CacheKey {
            table: table_id,
            offset,
        };
        self.shard(key).lock().insert(key, Cached::Bytes(block));
    }

    /// The parsed block cached at `offset` of table `table_id`, counting a
    /// hit or a miss. Bytes cached with [`insert`](Self::insert) are parsed
    /// on the way out (and count as a miss if they are no block).
    pub fn get_block(&self, table_id: u64, offset: u64) -> Option<Block> {
        let key = CacheKey {
            table: table_id,
            offset,
        };
        let mut shard = self.shard(key).lock();
        match shard.get(key)? {
            Cached::Block(block) => Some(block),
            Cached::Bytes(bytes) => match Block::new(bytes) {
                Ok(block) => Some(block),
                Err(_) => {
                    shard.hits -= 1;
                    shard.misses += 1;
                    None
                }
            },
        }
    }

    /// [`get_block`](Self::get_block), but a miss also hands out, when the
    /// shard has one, the buffer of an evicted block that no one holds any
    /// more, for the caller to read the missing block into. Its contents
    /// are stale bytes of another block.
    pub(crate) fn get_block_or_spare(
        &self,
        table_id: u64,
        offset: u64,
    ) -> Result<Block, Option<BytesMut>> {
        let key = CacheKey {
            table: table_id,
            offset,
        };
        let mut shard = self.shard(key).lock();
        match shard.get(key) {
            Some(Cached::Block(block)) => Ok(block),
            Some(Cached::Bytes(bytes)) => match Block::new(bytes) {
                Ok(block) => Ok(block),
                Err(_) => {
                    shard.hits -= 1;
                    shard.misses += 1;
                    Err(shard.take_spare())
                }
            },
            None => Err(shard.take_spare()),
        }
    }

    /// Spares handed out, and the bytes the shards keep now.
    #[cfg(test)]
    pub(crate) fn spare_counts(&self) -> (u64, usize) {
        self.shards.iter().fold((0, 0), |(n, b), shard| {
            let shard = shard.lock();
            (n + shard.spares_reused, b + shard.spare_bytes())
        })
    }

    /// Caches the parsed `block` at `offset` of table `table_id`, charged
    /// like [`insert`](Self::insert)'s bytes.
    pub fn insert_block(&self, table_id: u64, offset: u64, block: Block) {
        let key = CacheKey {
            table: table_id,
            offset,
        };
        self.shard(key).lock().insert(key, Cached::Block(block));
    }

    /// The counters, summed over the shards.
    pub fn stats(&self) -> CacheStats {
        let mut s = CacheStats {
            capacity: self.capacity,
            ..CacheStats::default()
        };
        for shard in self.shards.iter() {
            let shard = shard.lock();
            s.hits += shard.hits;
            s.misses += shard.misses;
            s.inserts += shard.inserts;
            s.evictions += shard.evictions;
            s.usage += shard.usage;
            s.entries += shard.map.len();
        }
        s
    }
}

/// Identifies a cached block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct CacheKey {
    table: u64,
    offset: u64,
}

/// A 64-bit finaliser (from MurmurHash3) spreading a key over all bits.
#[inline]
fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// A fast hasher for two-integer keys (the map needs no DoS resistance:
/// keys are table ids and offsets this process chose).
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    #[inline]
    fn finish(&self) -> u64 {
        mix(self.0)
    }
}

/// Index of the list sentinel in `Shard::slots`.
const SENTINEL: u32 = 0;

/// What a slot holds: a parsed block, or bytes cached through the byte
/// API.
#[derive(Debug, Clone)]
enum Cached {
    Block(Block),
    Bytes(Bytes),
}

impl Cached {
    fn data(&self) -> &Bytes {
        match self {
            Cached::Block(block) => block.data(),
            Cached::Bytes(bytes) => bytes,
        }
    }
}

/// Evicted blocks' buffers a shard keeps for the next reads to fill
/// ([`BlockCache::get_block_or_spare`]), at most this many. A table read
/// that misses the cache, then evicts a block to make room, would otherwise
/// free one buffer and allocate another of about the same size: under
/// glibc a free of a few kilobytes touches its neighbours' headers, cold
/// memory: `free`, `malloc` and the drop of evicted blocks were 18 % of a
/// 10M-key seekrandom profile.
const SPARES_PER_SHARD: usize = 4;

#[derive(Debug)]
struct Slot {
    key: CacheKey,
    block: Option<Cached>,
    charge: usize,
    prev: u32,
    next: u32,
}

/// One LRU list: slots in a vector linked by index, most recent after the
/// sentinel.
#[derive(Debug)]
struct Shard {
    map: HashMap<CacheKey, u32, BuildHasherDefault<KeyHasher>>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    usage: usize,
    capacity: usize,
    hits: u64,
    misses: u64,
    inserts: u64,
    evictions: u64,
    /// Buffers of evicted blocks, which other holders may still share (a
    /// buffer is reused only once it is no longer shared).
    spares: Vec<Bytes>,
    /// Spares handed out (tests check that reads use them).
    spares_reused: u64,
}

impl Shard {
    fn new(capacity: usize) -> Self {
        let sentinel = Slot {
            key: CacheKey {
                table: 0,
                offset: 0,
            },
            block: None,
            charge: 0,
            prev: SENTINEL,
            next: SENTINEL,
        };
        Shard {
            map: HashMap::default(),
            slots: vec![sentinel],
            free: Vec::new(),
            usage: 0,
            capacity,
            hits: 0,
            misses: 0,
            inserts: 0,
            evictions: 0,
            spares: Vec::new(),
            spares_reused: 0,
        }
    }

    /// Keeps an evicted block's buffer for a later read, if there is room
    /// and it is small beside the shard. Only parsed blocks: bytes cached
    /// with [`BlockCache::insert`] (blob values) may be slices of a much
    /// larger buffer, and their caches never read into a spare.
    fn keep_spare(&mut self, evicted: Cached) {
        if let Cached::Block(block) = evicted
            && self.spares.len() < SPARES_PER_SHARD
            && block.data().len() <= self.spare_limit()
        {
            self.spares.push(block.into_data());
        }
    }

    /// The largest buffer a spare may be: 1/64 of the shard's capacity, so
    /// the spares hold at most 1/16 of it on top of it (shards under
    /// 256 KiB keep no 4 KiB blocks).
    fn spare_limit(&self) -> usize {
        self.capacity / 64
    }

    /// A kept buffer no one else holds any more, to read into; one whose
    /// allocation turns out larger than the limit (its block was a view of
    /// a larger buffer) is freed instead.
    fn take_spare(&mut self) -> Option<BytesMut> {
        while let Some(data) = self.spares.pop() {
            if let Ok(unique) = data.try_into_mut()
                && unique.capacity() <= self.spare_limit()
            {
                self.spares_reused += 1;
                return Some(unique);
            }
        }
        None
    }

    /// Bytes of the spare buffers' views (tests check the bound).
    #[cfg(test)]
    fn spare_bytes(&self) -> usize {
        self.spares.iter().map(Bytes::len).sum()
    }

    fn unlink(&mut self, i: u32) {
        let (prev, next) = (self.slots[i as usize].prev, self.slots[i as usize].next);
        self.slots[prev as usize].next = next;
        self.slots[next as usize].prev = prev;
    }

    fn push_front(&mut self, i: u32) {
        let first = self.slots[SENTINEL as usize].next;
        self.slots[i as usize].prev = SENTINEL;
        self.slots[i as usize].next = first;
        self.slots[first as usize].prev = i;
        self.slots[SENTINEL as usize].next = i;
    }

    fn get(&mut self, key: CacheKey) -> Option<Cached> {
        match self.map.get(&key) {
            Some(&i) => {
                self.hits += 1;
                self.unlink(i);
                self.push_front(i);
                self.slots[i as usize].block.clone()
            }
            None => {
                self.misses += 1;
                None
            }
        }
    }

    fn insert(&mut self, key: CacheKey, block: Cached) {
        let charge = block.data().len() + ENTRY_OVERHEAD;
        if charge > self.capacity {
            return;
        }
        self.inserts += 1;
        if let Some(&i) = self.map.get(&key) {
            let slot = &mut self.slots[i as usize];
            self.usage = self.usage - slot.charge + charge;
            slot.charge = charge;
            slot.block = Some(block);
            self.unlink(i);
            self.push_front(i);
        } else {
            let slot = Slot {
                key,
                block: Some(block),
                charge,
                prev: SENTINEL,
                next: SENTINEL,
            };
            let i = match self.free.pop() {
                Some(i) => {
                    self.slots[i as usize] = slot;
                    i
                }
                None => {
                    self.slots.push(slot);
                    (self.slots.len() - 1) as u32
                }
            };
            self.push_front(i);
            self.map.insert(key, i);
            self.usage += charge;
        }
        while self.usage > self.capacity {
            let victim = self.slots[SENTINEL as usize].prev;
            debug_assert_ne!(victim, SENTINEL);
            self.unlink(victim);
            let slot = &mut self.slots[victim as usize];
            let evicted = slot.block.take();
            self.usage -= slot.charge;
            let key = slot.key;
            self.map.remove(&key);
            self.free.push(victim);
            self.evictions += 1;
            if let Some(evicted) = evicted {
                self.keep_spare(evicted);
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn block(len: usize, fill: u8) -> Bytes {
        Bytes::from(vec![fill; len])
    }

    /// An evicted block's buffer is handed to the next miss of its shard
    /// once no one holds it; a buffer still held is never handed out.
    #[test]
    fn evicted_buffers_are_reused_only_when_no_one_holds_them() {
        let data = |fill: u8| {
            let mut b = crate::block::BlockBuilder::new(16);
            b.add(&[fill; 8], &[fill; 40]);
            Block::new(Bytes::from(b.finish().to_vec())).unwrap()
        };
        let size = data(0).data().len();
        // One shard with room for two blocks, and spares up to 1/64 of it.
        let cache = BlockCache::with_shard_bits(64 * 2 * (size + ENTRY_OVERHEAD), 0);
        let cache_fits = 128;
        let t = cache.new_table_id();
        // Fill the cache, holding on to the first block.
        let held = data(1);
        cache.insert_block(t, 0, held.clone());
        for i in 1..cache_fits as u64 {
            cache.insert_block(t, i, data(2));
        }
        assert_eq!(cache.stats().evictions, 0);
        cache.insert_block(t, 1000, data(3));
        assert_eq!(cache.stats().evictions, 1);
        // Block 0 was evicted, but `held` still shares its buffer.
        assert!(matches!(cache.get_block_or_spare(t, 0), Err(None)));
        // The next eviction's buffer is no one else's.
        cache.insert_block(t, 1001, data(4));
        let spare = cache
            .get_block_or_spare(t, 1)
            .unwrap_err()
            .expect("a spare");
        assert_eq!(spare.len(), size);
        assert_eq!(spare[0], data(2).data()[0]);
        assert!(matches!(cache.get_block_or_spare(t, 1), Err(None)));
        // Hits are hits.
        assert!(cache.get_block_or_spare(t, 1001).is_ok());
        drop(held);
    }

    /// Bytes cached with `insert` (blob values, possibly views of a larger
    /// buffer) are never kept as spares, and the spares stay within 1/16
    /// of the capacity.
    #[test]
    fn spares_are_blocks_only_and_bounded() {
        let cache = BlockCache::with_shard_bits(64 * 4096, 0);
        let t = cache.new_table_id();
        let big = Bytes::from(vec![9u8; 64 * 1024]);
        for i in 0..400 {
            cache.insert(t, i, big.slice(..1000));
        }
        assert!(cache.stats().evictions > 0);
        assert_eq!(cache.spare_counts(), (0, 0));
        assert!(matches!(cache.get_block_or_spare(t, 0), Err(None)));
        let block = |n: usize| {
            let mut b = crate::block::BlockBuilder::new(16);
            b.add(b"k", &vec![1u8; n]);
            Block::new(Bytes::from(b.finish().to_vec())).unwrap()
        };
        // 3 KiB blocks (under the 4 KiB limit) and 8 KiB ones (over it).
        for i in 0..200 {
            cache.insert_block(t, 1000 + i, block(if i % 2 == 0 { 3000 } else { 8000 }));
        }
        let (_, bytes) = cache.spare_counts();
        assert!(bytes > 0 && bytes <= cache.capacity() / 16, "{bytes}");
    }

    #[test]
    fn evicts_least_recently_used() {
        // One shard holding three 100-byte blocks.
        let cache = BlockCache::with_shard_bits(3 * (100 + ENTRY_OVERHEAD), 0);
        let t = cache.new_table_id();
        for i in 0..3 {
            cache.insert(t, i, block(100, i as u8));
        }
        // Touch block 0 so block 1 is the least recently used.
        assert_eq!(cache.get(t, 0).unwrap()[0], 0);
        cache.insert(t, 3, block(100, 3));
        assert!(cache.get(t, 1).is_none());
        for i in [0, 2, 3] {
            assert_eq!(cache.get(t, i).unwrap()[0], i as u8);
        }
        let s = cache.stats();
        assert_eq!(s.entries, 3);
        assert_eq!(s.usage, 3 * (100 + ENTRY_OVERHEAD));
        assert_eq!(s.evictions, 1);
        assert_eq!(s.inserts, 4);
        assert_eq!((s.hits, s.misses), (4, 1));
    }

    #[test]
    fn replacing_and_oversized_blocks() {
        let cache = BlockCache::with_shard_bits(1000, 0);
        let t = cache.new_table_id();
        cache.insert(t, 0, block(100, 1));
        cache.insert(t, 0, block(200, 2));
        let s = cache.stats();
        assert_eq!((s.entries, s.usage), (1, 200 + ENTRY_OVERHEAD));
        assert_eq!(cache.get(t, 0).unwrap().len(), 200);
        cache.insert(t, 8, block(5000, 3));
        assert!(cache.get(t, 8).is_none());
        assert_eq!(cache.stats().entries, 1);
    }

    #[test]
    fn table_ids_are_unique_and_separate_blocks() {
        let cache = BlockCache::new(1 << 20);
        let (a, b) = (cache.new_table_id(), cache.new_table_id());
        assert_ne!(a, b);
        cache.insert(a, 0, block(10, 1));
        assert!(cache.get(b, 0).is_none());
    }

    #[test]
    fn usage_stays_within_capacity_under_churn() {
        let cache = BlockCache::with_shard_bits(10_000, 2);
        let t = cache.new_table_id();
        for i in 0..2000u64 {
            cache.insert(t, i * 4096, block((i % 700) as usize, 0));
            if i % 3 == 0 {
                let _ = cache.get(t, (i / 2) * 4096);
            }
            assert!(cache.stats().usage <= 10_000);
        }
        // Slots are reused: the slab never outgrows what fits at once.
        for shard in cache.shards.iter() {
            let shard = shard.lock();
            assert!(shard.slots.len() <= 2 + 2500 / ENTRY_OVERHEAD);
            assert_eq!(shard.map.len() + shard.free.len() + 1, shard.slots.len());
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use lithify_base::sync::Arc;

    #[test]
    fn loom_concurrent_inserts_keep_accounting() {
        loom::model(|| {
            // Room for one 100-byte block only.
            let cache = Arc::new(BlockCache::with_shard_bits(100 + ENTRY_OVERHEAD, 0));
            let other = cache.clone();
            let t = loom::thread::spawn(move || {
                other.insert(1, 0, Bytes::from_static(&[1; 100]));
                other.get(1, 0).is_some()
            });
            cache.insert(1, 4096, Bytes::from_static(&[2; 100]));
            let mine = cache.get(1, 4096).is_some();
            let theirs = t.join().unwrap();
            let s = cache.stats();
            assert_eq!(s.entries, 1);
            assert_eq!(s.usage, 100 + ENTRY_OVERHEAD);
            assert_eq!(s.inserts, 2);
            assert_eq!(s.evictions, 1);
            assert_eq!(s.hits + s.misses, 2);
            assert_eq!(u64::from(mine) + u64::from(theirs), s.hits);
            // At least one of the two blocks was seen by its inserter.
            assert!(mine || theirs);
        });
    }
}
