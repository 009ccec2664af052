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
//! The marks cover at most a bounded span of offsets from the round's
//! first dirty offset (two bits each); a record outside the span, or one
//! pass 1 did not put, gets `None` and pass 2 asks the map as before. So
//! the marks change no decision, only where the answer comes from.

/// Two bits per offset of `[base, base + span)`.
#[derive(Debug, Default)]
pub(crate) struct LatestMarks {
    base: i64,
    span: u64,
    mapped: Vec<u64>,
    superseded: Vec<u64>,
}

impl LatestMarks {
    /// Empties the marks and makes them cover `[base, base + span)`,
    /// reusing their memory.
    pub(crate) fn reset(&mut self, base: i64, span: u64) {
        let words = span.div_ceil(64) as usize;
        self.base = base;
        self.span = span;
        for bits in [&mut self.mapped, &mut self.superseded] {
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

    /// Records a put of `offset` that replaced `previous`.
    #[inline]
    pub(crate) fn on_put(&mut self, offset: i64, previous: Option<u64>) {
        if let Some(i) = self.index(offset) {
            self.mapped[i / 64] |= 1 << (i % 64);
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
                marks.on_put(offset, previous);
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
        marks.on_put(12, None);
        marks.on_put(15, Some(12));
        assert_eq!(marks.is_latest(11), None, "never put (keyless, aborted)");
        assert_eq!(marks.is_latest(12), Some(false));
        assert_eq!(marks.is_latest(15), Some(true));
        // A reset forgets everything.
        marks.reset(10, 100);
        assert_eq!(marks.is_latest(15), None);
    }
}
