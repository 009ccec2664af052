//! Key sets of the simulator: one bit per key, and the memtable's keys.

/// The flag marking a tombstone in an L0 file's key list.
pub(crate) const TOMB: u32 = 1 << 31;

/// One bit per key of the key space.
#[derive(Debug, Clone)]
pub(crate) struct Bitmap {
    pub(crate) words: Vec<u64>,
}

impl Bitmap {
    pub(crate) fn new(bits: u64) -> Self {
        Bitmap {
            words: vec![0; bits.div_ceil(64) as usize],
        }
    }

    #[inline]
    pub(crate) fn get(&self, i: u32) -> bool {
        self.words[(i / 64) as usize] & (1 << (i % 64)) != 0
    }

    #[inline]
    pub(crate) fn set(&mut self, i: u32) {
        self.words[(i / 64) as usize] |= 1 << (i % 64);
    }

    #[inline]
    pub(crate) fn clear(&mut self, i: u32) {
        self.words[(i / 64) as usize] &= !(1 << (i % 64));
    }

    /// Masks of words `lo / 64 ..= hi / 64` selecting `[lo, hi]`.
    pub(crate) fn range_masks(lo: u32, hi: u32) -> impl Iterator<Item = (usize, u64)> {
        let (lw, hw) = ((lo / 64) as usize, (hi / 64) as usize);
        (lw..=hw).map(move |w| {
            let mut m = u64::MAX;
            if w == lw {
                m &= u64::MAX << (lo % 64);
            }
            if w == hw {
                m &= u64::MAX >> (63 - hi % 64);
            }
            (w, m)
        })
    }

    /// Whether any key of `[lo, hi]` is set (in a slice indexed from word
    /// `base`).
    pub(crate) fn any_in(words: &[u64], base: usize, lo: u32, hi: u32) -> bool {
        Self::range_masks(lo, hi).any(|(w, m)| words[w - base] & m != 0)
    }

    /// Number of keys set.
    pub(crate) fn count(&self) -> u64 {
        self.words.iter().map(|w| w.count_ones() as u64).sum()
    }
}

/// A level L1+: the keys its files hold, and which of them are
/// tombstones.
#[derive(Debug, Clone)]
pub(crate) struct LevelBits {
    pub(crate) keys: Bitmap,
    pub(crate) tombs: Bitmap,
}

impl LevelBits {
    pub(crate) fn new(bits: u64) -> Self {
        LevelBits {
            keys: Bitmap::new(bits),
            tombs: Bitmap::new(bits),
        }
    }
}

/// The memtable: the newest operation on each key (a put or a delete),
/// its key range, and how many distinct keys it holds.
#[derive(Debug, Clone)]
pub(crate) struct MemKeys {
    keys: Bitmap,
    tombs: Bitmap,
    lo: u32,
    hi: u32,
    distinct: usize,
}

impl MemKeys {
    pub(crate) fn new(key_space: u64) -> Self {
        MemKeys {
            keys: Bitmap::new(key_space),
            tombs: Bitmap::new(key_space),
            lo: u32::MAX,
            hi: 0,
            distinct: 0,
        }
    }

    pub(crate) fn insert(&mut self, id: u32, tombstone: bool) {
        if !self.keys.get(id) {
            self.distinct += 1;
            self.keys.set(id);
        }
        if tombstone {
            self.tombs.set(id);
        } else {
            self.tombs.clear(id);
        }
        self.lo = self.lo.min(id);
        self.hi = self.hi.max(id);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.distinct == 0
    }

    /// Distinct keys held.
    pub(crate) fn distinct(&self) -> u64 {
        self.distinct as u64
    }

    /// The newest operation on `id`: `Some(true)` a delete, `Some(false)` a
    /// put, `None` none.
    pub(crate) fn lookup(&self, id: u32) -> Option<bool> {
        self.keys.get(id).then(|| self.tombs.get(id))
    }

    /// The smallest and largest key.
    pub(crate) fn range(&self) -> Option<(u32, u32)> {
        (!self.is_empty()).then_some((self.lo, self.hi))
    }

    /// The keys in order, tombstones flagged with [`TOMB`]; empties the
    /// set.
    pub(crate) fn drain_sorted(&mut self) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.distinct);
        if self.distinct > 0 {
            for w in (self.lo / 64) as usize..=(self.hi / 64) as usize {
                let mut bits = std::mem::take(&mut self.keys.words[w]);
                let tombs = std::mem::take(&mut self.tombs.words[w]);
                while bits != 0 {
                    let b = bits.trailing_zeros();
                    let id = (w * 64 + b as usize) as u32;
                    out.push(if tombs & (1 << b) != 0 { id | TOMB } else { id });
                    bits &= bits - 1;
                }
            }
        }
        self.lo = u32::MAX;
        self.hi = 0;
        self.distinct = 0;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memtable_keeps_the_newest_operation() {
        let mut m = MemKeys::new(200);
        m.insert(70, false);
        m.insert(3, true);
        m.insert(70, true);
        m.insert(3, false);
        m.insert(130, false);
        assert_eq!(m.lookup(70), Some(true));
        assert_eq!(m.lookup(3), Some(false));
        assert_eq!(m.lookup(4), None);
        assert_eq!(m.range(), Some((3, 130)));
        assert_eq!(m.drain_sorted(), [3, 70 | TOMB, 130]);
        assert!(m.is_empty());
        assert_eq!(m.lookup(70), None);
    }

    #[test]
    fn ranges() {
        let mut b = Bitmap::new(300);
        b.set(5);
        b.set(130);
        assert!(Bitmap::any_in(&b.words, 0, 0, 5));
        assert!(!Bitmap::any_in(&b.words, 0, 6, 129));
        assert!(Bitmap::any_in(&b.words, 0, 6, 130));
        assert!(Bitmap::any_in(&b.words[2..], 2, 128, 140));
        assert_eq!(b.count(), 2);
        b.clear(5);
        assert!(!b.get(5));
    }
}
