//! [`PageCache`]: object bytes kept in memory, bounded in bytes, evicted
//! least recently used first.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

/// Fixed-size pages of objects, shared by every file open on a
/// [`BucketFs`](crate::BucketFs) (and by file systems given the same
/// cache).
///
/// A page is `page_size` bytes of one object at a multiple of `page_size`
/// (the last page of an object is shorter). The cache never holds more than
/// `capacity` bytes of pages; the least recently used pages go first. A
/// capacity of 0 caches nothing.
///
/// ```
/// use lithify_bucket::PageCache;
///
/// let cache = PageCache::new(8, 4); // two pages of 4 bytes
/// cache.insert("a", 0, b"0123"[..].into());
/// cache.insert("a", 1, b"4567"[..].into());
/// assert!(cache.get("a", 0).is_some()); // page 0 is now the most recent
/// cache.insert("b", 0, b"wxyz"[..].into()); // evicts a's page 1
/// assert!(cache.get("a", 1).is_none());
/// assert_eq!(cache.bytes(), 8);
/// cache.remove_object("a");
/// assert_eq!(cache.bytes(), 4);
/// ```
#[derive(Debug)]
pub struct PageCache {
    capacity: u64,
    page_size: u64,
    lru: Mutex<Lru>,
}

type PageKey = (Arc<str>, u64);

#[derive(Debug, Default)]
struct Lru {
    pages: HashMap<PageKey, (Bytes, u64)>,
    by_use: BTreeMap<u64, PageKey>,
    by_object: HashMap<Arc<str>, BTreeSet<u64>>,
    bytes: u64,
    tick: u64,
}

impl PageCache {
    /// A cache of at most `capacity` bytes in pages of `page_size` bytes
    /// (at least 1).
    pub fn new(capacity: u64, page_size: u64) -> Self {
        PageCache {
            capacity,
            page_size: page_size.max(1),
            lru: Mutex::new(Lru::default()),
        }
    }

    /// The page size in bytes.
    pub fn page_size(&self) -> u64 {
        self.page_size
    }

    /// The bound in bytes.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Bytes of pages held now.
    pub fn bytes(&self) -> u64 {
        self.lru.lock().bytes
    }

    /// Page `page` of `object`, marked as just used.
    pub fn get(&self, object: &str, page: u64) -> Option<Bytes> {
        let mut lru = self.lru.lock();
        let lru = &mut *lru;
        lru.tick += 1;
        let tick = lru.tick;
        let key: PageKey = (Arc::from(object), page);
        let (bytes, used) = lru.pages.get_mut(&key)?;
        let old = std::mem::replace(used, tick);
        let bytes = bytes.clone();
        if let Some(k) = lru.by_use.remove(&old) {
            lru.by_use.insert(tick, k);
        }
        Some(bytes)
    }

    /// Keeps `bytes` as page `page` of `object`, evicting the least recently
    /// used pages to stay within the bound. A page larger than the whole
    /// bound is not kept.
    pub fn insert(&self, object: &str, page: u64, bytes: Bytes) {
        let len = bytes.len() as u64;
        if len > self.capacity {
            return;
        }
        let mut lru = self.lru.lock();
        let lru = &mut *lru;
        let name: Arc<str> = lru
            .by_object
            .get_key_value(object)
            .map(|(k, _)| k.clone())
            .unwrap_or_else(|| Arc::from(object));
        let key: PageKey = (name.clone(), page);
        if let Some((old, used)) = lru.pages.remove(&key) {
            lru.bytes -= old.len() as u64;
            lru.by_use.remove(&used);
        }
        while lru.bytes + len > self.capacity {
            let Some((_, victim)) = lru.by_use.pop_first() else {
                break;
            };
            if let Some((b, _)) = lru.pages.remove(&victim) {
                lru.bytes -= b.len() as u64;
            }
            if let Some(set) = lru.by_object.get_mut(&victim.0) {
                set.remove(&victim.1);
                if set.is_empty() {
                    lru.by_object.remove(&victim.0);
                }
            }
        }
        lru.tick += 1;
        let tick = lru.tick;
        lru.bytes += len;
        lru.by_use.insert(tick, key.clone());
        lru.pages.insert(key, (bytes, tick));
        lru.by_object.entry(name).or_default().insert(page);
    }

    /// Keeps all of `data` as the pages of `object` (what a file just
    /// written holds), as far as the bound allows.
    pub fn insert_object(&self, object: &str, data: &Bytes) {
        let ps = self.page_size as usize;
        for (i, start) in (0..data.len()).step_by(ps).enumerate() {
            let end = (start + ps).min(data.len());
            self.insert(object, i as u64, data.slice(start..end));
        }
    }

    /// Drops every page of `object` (it was removed, renamed or rewritten).
    pub fn remove_object(&self, object: &str) {
        let mut lru = self.lru.lock();
        let lru = &mut *lru;
        let Some((name, pages)) = lru.by_object.remove_entry(object) else {
            return;
        };
        for page in pages {
            if let Some((b, used)) = lru.pages.remove(&(name.clone(), page)) {
                lru.bytes -= b.len() as u64;
                lru.by_use.remove(&used);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The bound holds after any sequence of inserts, and what is
        /// found is what was last inserted.
        #[test]
        fn stays_within_its_bound(ops in prop::collection::vec((0u8..3, 0u64..6, 1usize..9), 1..200)) {
            let cache = PageCache::new(20, 8);
            let mut last: HashMap<(u8, u64), Bytes> = HashMap::new();
            for (i, (obj, page, len)) in ops.into_iter().enumerate() {
                let name = format!("o{obj}");
                let bytes = Bytes::from(vec![i as u8; len]);
                cache.insert(&name, page, bytes.clone());
                last.insert((obj, page), bytes);
                prop_assert!(cache.bytes() <= 20);
                let held: u64 = cache.lru.lock().pages.values().map(|(b, _)| b.len() as u64).sum();
                prop_assert_eq!(held, cache.bytes());
                for ((o, p), b) in &last {
                    if let Some(got) = cache.get(&format!("o{o}"), *p) {
                        prop_assert_eq!(&got, b);
                    }
                }
            }
        }
    }

    #[test]
    fn least_recently_used_goes_first() {
        let cache = PageCache::new(12, 4);
        for p in 0..3 {
            cache.insert("x", p, Bytes::from_static(b"abcd"));
        }
        cache.get("x", 0);
        cache.insert("y", 0, Bytes::from_static(b"efgh"));
        assert!(cache.get("x", 0).is_some());
        assert!(cache.get("x", 1).is_none());
        assert!(cache.get("x", 2).is_some());
        assert!(cache.get("y", 0).is_some());
    }

    #[test]
    fn a_zero_bound_keeps_nothing() {
        let cache = PageCache::new(0, 4);
        cache.insert("x", 0, Bytes::from_static(b"abcd"));
        assert!(cache.get("x", 0).is_none());
        assert_eq!(cache.bytes(), 0);
    }
}
