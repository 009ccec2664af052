//! What pass 1 learned about each mapped record, so that pass 2 need not
//! hash its key again nor probe the offset map for it.
//!
//! Pass 1 puts keys in ascending offset order, and every put that
//! overwrites a key's digest returns the offset it replaced
//! ([`OffsetMap::insert`](lithify_offsetmap::OffsetMap::insert)). Two bits
//! per offset of the dirty section record it: *mapped* (the record at this
//! offset was put) and *superseded* (a later put of the same digest
//! replaced it). For a mapped record, `offset >= map.get(key)` — the
//! filter's "latest for its key" — is exactly "not superseded": the map
//! holds the digest's last put, which is the record itself unless a later
//! put (with a larger offset) replaced it. Digest collisions between
//! different keys answer the same way in both forms, since both see the
//! digest only.
//!
//! A third bit says the mapped record is a tombstone, so that a batch
//! whose records were all mapped and all superseded can be dropped in pass
//! 2 without decompressing or decoding it again, and one whose records
//! all stay can be copied as it is ([`batch`](LatestMarks::batch)).
//!
//! The marks cover at most a bounded span of offsets from the round's
//! first dirty offset (three bits each); a record outside the span, or one
//! pass 1 did not put, gets `None` and pass 2 asks the map as before. So
//! the marks change no decision, only where the answer comes from.

/// Three bits per offset of `[base, base + span)`.
#[derive(Debug, Default)]
pub(crate) struct LatestMarks {
    base: i64,
    span: u64,
    mapped: Vec<u64>,
    superseded: Vec<u64>,
    tombstone: Vec<u64>,
}

impl LatestMarks {
    /// Empties the marks and makes them cover `[base, base + span)`,
    /// reusing their memory.
    pub(crate) fn reset(&mut self, base: i64, span: u64) {
        let words = span.div_ceil(64) as usize;
        self.base = base;
        self.span = span;
        for bits in [&mut self.mapped, &mut self.superseded, &mut self.tombstone] {
            bits.clear();
            bits.resize(words, 0);
        }
    }

    /// The index of `offset`'s bit, if the marks cover it.
    #[inline]
    fn index(&self, offset: i64) -> Option<usize> {
        let i = offset.checked_sub(self.base)?;
        (i >= 0 && (i as u64) < self.span).then_some(i as usize)
    }

    /// Records a put of `offset` (a tombstone or not) that replaced
    /// `previous`.
    #[inline]
    pub(crate) fn on_put(&mut self, offset: i64, tombstone: bool, previous: Option<u64>) {
        if let Some(i) = self.index(offset) {
            self.mapped[i / 64] |= 1 << (i % 64);
            self.tombstone[i / 64] |= u64::from(tombstone) << (i % 64);
        }
        if let Some(i) = previous.and_then(|p| self.index(p as i64)) {
            self.superseded[i / 64] |= 1 << (i % 64);
        }
    }

    /// Whether the record at `offset` is its key's latest (`offset >=
    /// map.get(key)`), if pass 1 put it and the marks cover it.
    #[inline]
    pub(crate) fn is_latest(&self, offset: i64) -> Option<bool> {
        let i = self.index(offset)?;
        let bit = 1u64 << (i % 64);
        (self.mapped[i / 64] & bit != 0).then(|| self.superseded[i / 64] & bit == 0)
    }
}

/// What the marks say of a batch all of whose records pass 1 put, when
/// they say the same of every record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MarkedBatch {
    /// Every record was replaced by a later put of its key.
    Superseded {
        /// Tombstones among them.
        tombstones: u64,
    },
    /// Every record is its key's latest.
    Latest {
        /// Tombstones among them.
        tombstones: u64,
    },
}

impl LatestMarks {
    /// For a batch holding `records` records at offsets within `[first,
    /// last]`: if the marks cover the range, exactly `records` of its
    /// offsets were put, and they were all superseded or all left latest,
    /// which and how many tombstones are among them; otherwise `None`
    /// (also for a batch without records: the marks say nothing of it).
    pub(crate) fn batch(&self, first: i64, last: i64, records: u64) -> Option<MarkedBatch> {
        if records == 0 {
            return None;
        }
        let (lo, hi) = (self.index(first)?, self.index(last)?);
        let (mut mapped, mut superseded, mut tombstones) = (0u64, 0u64, 0u64);
        for w in lo / 64..=hi / 64 {
            let mut mask = u64::MAX;
            if w == lo / 64 {
                mask &= u64::MAX << (lo % 64);
            }
            if w == hi / 64 {
                mask &= u64::MAX >> (63 - hi % 64);
            }
            let m = self.mapped[w] & mask;
            let gone = self.superseded[w] & m;
            mapped += u64::from(m.count_ones());
            superseded += u64::from(gone.count_ones());
            if superseded != 0 && superseded != mapped {
                return None; // some go, some stay
            }
            tombstones += u64::from((self.tombstone[w] & m).count_ones());
        }
        if mapped != records {
            return None;
        }
        Some(if superseded == 0 {
            MarkedBatch::Latest { tombstones }
        } else {
            MarkedBatch::Superseded { tombstones }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lithify_offsetmap::OffsetMap;

    /// The marks answer as the map does, for every mapped offset, whatever
    /// the span (including spans that cover part of the section).
    #[test]
    fn marks_agree_with_the_map() {
        let keys: Vec<u64> = (0..2_000u64).map(|i| (i * 7919) % 300).collect();
        let base = 1_000i64;
        for span in [0u64, 1, 63, 64, 65, 999, 2_000, 5_000] {
            let mut map = OffsetMap::new(64 << 10).expect("map");
            let mut marks = LatestMarks::default();
            marks.reset(base, span);
            for (i, k) in keys.iter().enumerate() {
                let offset = base + i as i64;
                let previous = map
                    .insert(k.to_string().as_bytes(), offset as u64)
                    .expect("room");
                marks.on_put(offset, false, previous);
            }
            let mut answered = 0u64;
            for (i, k) in keys.iter().enumerate() {
                let offset = base + i as i64;
                let from_map = map
                    .get(k.to_string().as_bytes())
                    .is_none_or(|found| offset as u64 >= found);
                match marks.is_latest(offset) {
                    Some(latest) => {
                        assert_eq!(latest, from_map, "offset {offset}, span {span}");
                        answered += 1;
                    }
                    None => assert!((i as u64) >= span, "offset {offset} is covered"),
                }
            }
            assert_eq!(answered, span.min(keys.len() as u64));
            assert_eq!(marks.is_latest(base - 1), None);
        }
    }

    #[test]
    fn unmapped_offsets_fall_back_to_the_map() {
        let mut marks = LatestMarks::default();
        marks.reset(10, 100);
        marks.on_put(12, false, None);
        marks.on_put(15, false, Some(12));
        assert_eq!(marks.is_latest(11), None, "never put (keyless, aborted)");
        assert_eq!(marks.is_latest(12), Some(false));
        assert_eq!(marks.is_latest(15), Some(true));
        // A reset forgets everything.
        marks.reset(10, 100);
        assert_eq!(marks.is_latest(15), None);
    }

    /// A batch is superseded (or latest) only when every one of its
    /// records was mapped and replaced (or none was), across word
    /// boundaries; tombstones are counted.
    #[test]
    fn batches_are_decided_only_when_every_record_agrees() {
        let mut marks = LatestMarks::default();
        marks.reset(1_000, 300);
        // Offsets 1_060 ..= 1_140 (crossing two word boundaries) put, then
        // all but 1_100 replaced by puts at 1_200 ..; 1_070 a tombstone;
        // 1_150 ..= 1_159 put and kept.
        for o in 1_060..=1_140 {
            marks.on_put(o, o == 1_070, None);
        }
        for (i, o) in (1_060..=1_140).filter(|&o| o != 1_100).enumerate() {
            marks.on_put(1_200 + i as i64, false, Some(o as u64));
        }
        for o in 1_150..=1_159 {
            marks.on_put(o, false, None);
        }
        let gone = |tombstones| Some(MarkedBatch::Superseded { tombstones });
        let latest = |tombstones| Some(MarkedBatch::Latest { tombstones });
        assert_eq!(marks.batch(1_060, 1_099, 40), gone(1));
        assert_eq!(marks.batch(1_101, 1_140, 40), gone(0));
        assert_eq!(marks.batch(1_060, 1_140, 81), None, "1_100 is latest");
        assert_eq!(marks.batch(1_100, 1_100, 1), latest(0));
        assert_eq!(marks.batch(1_150, 1_159, 10), latest(0), "all latest");
        assert_eq!(
            marks.batch(1_140, 1_159, 11),
            None,
            "1_140 goes, 1_150.. stay"
        );
        // Replaced by the puts at 1_200 ..: latest, across a word boundary.
        assert_eq!(marks.batch(1_200, 1_279, 80), latest(0));
        // A count that the marks do not account for (a record never put).
        assert_eq!(marks.batch(1_060, 1_099, 41), None);
        assert_eq!(marks.batch(1_055, 1_099, 45), None);
        assert_eq!(marks.batch(1_150, 1_160, 11), None);
        assert_eq!(marks.batch(1_150, 1_150, 0), None, "an empty header");
        // Outside the span.
        assert_eq!(marks.batch(990, 1_010, 21), None);
        assert_eq!(marks.batch(1_290, 1_310, 21), None);
    }
}
