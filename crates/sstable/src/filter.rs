//! The cache-line-blocked bloom filter.
//!
//! A filter is an array of 64-byte lines. A key's xxh3-64 hash is split in
//! two 32-bit halves: the low half picks the line (`(low * lines) >> 32`, a
//! multiply-shift instead of a modulo), the high half drives every probe
//! inside that line, so a query touches one cache line. Probe `i` sets or
//! tests bit `h_i >> 23` (the top 9 bits address 512 bits) of the line, with
//! `h_0 = high` and `h_{i+1} = h_i * 0x9e3779b9 (mod 2^32)`. This is the
//! design of RocksDB's FastLocalBloom (`util/bloom_impl.h`); the number of
//! probes per bits-per-key follows its measured optimum for 512-bit lines.
//!
//! Stored filter block:
//!
//! ```text
//! +---------------------------+-------------+------------+----------+-----------------+
//! | lines: 64 * num_lines B   | num_probes  | hash: 0x01 | 2 zero B | num_lines u32LE |
//! +---------------------------+-------------+------------+----------+-----------------+
//! ```
//!
//! A filter with zero lines (a table without point entries) matches
//! nothing.

use bytes::Bytes;

/// Bytes per filter line (one cache line).
pub(crate) const LINE_BYTES: usize = 64;
/// Length of the metadata after the lines.
pub(crate) const FILTER_META_LEN: usize = 8;
/// Hash scheme 1: xxh3-64 of the filter key, low half picks the line, high
/// half drives the probes. Frozen.
pub(crate) const HASH_XXH3_SPLIT: u8 = 1;
/// Most probes a filter may ask for.
pub(crate) const MAX_PROBES: u8 = 30;

/// Multiplier between successive probes (2^32 / golden ratio).
const PROBE_MULTIPLIER: u32 = 0x9e37_79b9;

/// The hash a filter stores for `filter_key`.
#[inline]
pub(crate) fn filter_hash(filter_key: &[u8]) -> u64 {
    lithify_base::xxh3_64(filter_key)
}

/// Probes per key for `millibits` thousandths of a bit per key: the most
/// accurate choice for a 512-bit line (RocksDB's measured optimum).
pub(crate) fn probes_for(millibits_per_key: u32) -> u8 {
    match millibits_per_key {
        0..=2080 => 1,
        2081..=3580 => 2,
        3581..=5100 => 3,
        5101..=6640 => 4,
        6641..=8300 => 5,
        8301..=10070 => 6,
        10071..=11720 => 7,
        11721..=14001 => 8,
        14002..=16050 => 9,
        16051..=18300 => 10,
        18301..=22001 => 11,
        22002..=25501 => 12,
        m if m > 50_000 => 24,
        m => ((m - 1) / 2000 - 1) as u8,
    }
}

#[inline]
fn line_of(low: u32, num_lines: u32) -> usize {
    ((u64::from(low) * u64::from(num_lines)) >> 32) as usize
}

/// Hashes per chunk of a [`BloomBuilder`] (64 KiB).
const HASH_CHUNK: usize = 8192;

/// Collects key hashes while a table is built and lays out the filter at
/// the end.
///
/// The hashes are kept in fixed 64 KiB chunks, as RocksDB keeps them in a
/// deque: a 64 MiB table has half a million keys, and one growing vector
/// would reserve up to twice their 4 MiB (12 MiB at the last doubling,
/// old and new buffer together) and copy them each time it doubles.
#[derive(Debug, Default)]
pub(crate) struct BloomBuilder {
    chunks: Vec<Vec<u64>>,
    millibits_per_key: u32,
}

impl BloomBuilder {
    /// A builder for `millibits_per_key` thousandths of a bit per key.
    pub(crate) fn new(millibits_per_key: u32) -> Self {
        BloomBuilder {
            chunks: Vec::new(),
            millibits_per_key,
        }
    }

    /// Adds a key's hash. Consecutive duplicates (versions of one user key)
    /// are stored once.
    #[inline]
    pub(crate) fn add_hash(&mut self, hash: u64) {
        match self.chunks.last_mut() {
            Some(chunk) if chunk.last() == Some(&hash) => {}
            Some(chunk) if chunk.len() < HASH_CHUNK => chunk.push(hash),
            _ => {
                let mut chunk = Vec::with_capacity(HASH_CHUNK);
                chunk.push(hash);
                self.chunks.push(chunk);
            }
        }
    }

    /// Number of hashes collected.
    pub(crate) fn len(&self) -> usize {
        self.chunks
            .last()
            .map_or(0, |last| (self.chunks.len() - 1) * HASH_CHUNK + last.len())
    }

    /// Bytes the filter would take now.
    pub(crate) fn estimated_size(&self) -> usize {
        self.num_lines() as usize * LINE_BYTES + FILTER_META_LEN
    }

    fn num_lines(&self) -> u32 {
        let bits = self.len() as u64 * u64::from(self.millibits_per_key) / 1000;
        bits.div_ceil(LINE_BYTES as u64 * 8)
            .min(u64::from(u32::MAX)) as u32
    }

    /// Writes the filter block into `out` (cleared first).
    pub(crate) fn finish_into(&self, out: &mut Vec<u8>) {
        let num_lines = self.num_lines();
        let probes = probes_for(self.millibits_per_key).min(MAX_PROBES);
        out.clear();
        out.resize(num_lines as usize * LINE_BYTES, 0);
        if num_lines > 0 {
            for &hash in self.chunks.iter().flatten() {
                let line = line_of(hash as u32, num_lines) * LINE_BYTES;
                let bits = &mut out[line..line + LINE_BYTES];
                let mut h = (hash >> 32) as u32;
                for _ in 0..probes {
                    let bit = (h >> 23) as usize;
                    bits[bit >> 3] |= 1 << (bit & 7);
                    h = h.wrapping_mul(PROBE_MULTIPLIER);
                }
            }
        }
        out.push(probes);
        out.push(HASH_XXH3_SPLIT);
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&num_lines.to_le_bytes());
    }
}

/// One 512-bit line of a filter, aligned to a cache line: a probe then
/// touches exactly one cache line of memory (a line read into a plain
/// buffer would straddle two three times in four).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct FilterLine([u8; LINE_BYTES]);

/// A decoded filter, answering "may the table hold this key?".
pub(crate) struct BloomFilter {
    lines: Box<[FilterLine]>,
    probes: u8,
}

impl std::fmt::Debug for BloomFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BloomFilter")
            .field("lines", &self.lines.len())
            .field("probes", &self.probes)
            .finish()
    }
}

impl BloomFilter {
    /// Decodes a filter block, copying its lines into cache-line-aligned
    /// memory (the block's own buffer is freed once the caller drops it);
    /// the error is a phrase.
    pub(crate) fn decode(data: Bytes) -> Result<BloomFilter, &'static str> {
        let Some(meta_at) = data.len().checked_sub(FILTER_META_LEN) else {
            return Err("filter block shorter than its metadata");
        };
        let meta = &data[meta_at..];
        let probes = meta[0];
        if meta[1] != HASH_XXH3_SPLIT {
            return Err("unknown filter hash scheme");
        }
        if meta[2] != 0 || meta[3] != 0 {
            return Err("reserved filter bytes are not zero");
        }
        if probes == 0 || probes > MAX_PROBES {
            return Err("filter probe count out of range");
        }
        let num_lines = u32::from_le_bytes([meta[4], meta[5], meta[6], meta[7]]);
        if num_lines as u64 * LINE_BYTES as u64 != meta_at as u64 {
            return Err("filter line count does not match the block size");
        }
        let lines = data[..meta_at]
            .chunks_exact(LINE_BYTES)
            .map(|c| FilterLine(c.try_into().expect("chunks_exact gives whole lines")))
            .collect();
        Ok(BloomFilter { lines, probes })
    }

    /// The line a key with this filter hash probes, if the filter has any.
    #[inline]
    fn line(&self, hash: u64) -> Option<&FilterLine> {
        let num_lines = self.lines.len() as u32;
        if num_lines == 0 {
            return None;
        }
        Some(&self.lines[line_of(hash as u32, num_lines)])
    }

    /// Starts loading the line a key with this filter hash probes, so that
    /// [`may_contain_hash`](Self::may_contain_hash) a little later finds it
    /// in the cache: the caller does other work (the index search) while
    /// the load is under way.
    #[inline]
    pub(crate) fn prefetch_hash(&self, hash: u64) {
        if let Some(line) = self.line(hash) {
            lithify_base::hint::prefetch_read(line);
        }
    }

    /// Whether a key with this filter hash may have been added.
    #[inline]
    pub(crate) fn may_contain_hash(&self, hash: u64) -> bool {
        let Some(FilterLine(bits)) = self.line(hash) else {
            return false;
        };
        let mut h = (hash >> 32) as u32;
        for _ in 0..self.probes {
            let bit = (h >> 23) as usize;
            if bits[bit >> 3] & (1 << (bit & 7)) == 0 {
                return false;
            }
            h = h.wrapping_mul(PROBE_MULTIPLIER);
        }
        true
    }

    /// Whether `filter_key` may have been added.
    #[inline]
    pub(crate) fn may_contain(&self, filter_key: &[u8]) -> bool {
        self.may_contain_hash(filter_hash(filter_key))
    }

    /// Bytes held in memory (the lines).
    pub(crate) fn size(&self) -> usize {
        self.lines.len() * LINE_BYTES
    }

    /// Probes per key.
    #[cfg(test)]
    pub(crate) fn probes(&self) -> u8 {
        self.probes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(keys: impl Iterator<Item = Vec<u8>>, millibits: u32) -> BloomFilter {
        let mut b = BloomBuilder::new(millibits);
        for k in keys {
            b.add_hash(filter_hash(&k));
        }
        let mut out = Vec::new();
        b.finish_into(&mut out);
        BloomFilter::decode(Bytes::from(out)).unwrap()
    }

    #[test]
    fn lines_are_cache_line_aligned() {
        let f = build((0..1000u64).map(key), 10_000);
        assert_eq!(f.lines.as_ptr() as usize % 64, 0);
        assert_eq!(f.size(), f.lines.len() * LINE_BYTES);
        for i in 0..1000 {
            f.prefetch_hash(filter_hash(&key(i)));
            assert!(f.may_contain(&key(i)));
        }
        // An empty filter: nothing to load, nothing may be there.
        let empty = build(std::iter::empty(), 10_000);
        empty.prefetch_hash(filter_hash(b"x"));
        assert!(!empty.may_contain(b"x"));
    }

    fn key(i: u64) -> Vec<u8> {
        format!("key{i:012}").into_bytes()
    }

    /// False-positive rate of a bloom filter of `bits` bits per key and `k`
    /// probes, assuming uniform hashing.
    fn standard_fp_rate(bits_per_key: f64, k: f64) -> f64 {
        (1.0 - (-k / bits_per_key).exp()).powf(k)
    }

    /// Expected false-positive rate of a filter blocked in 512-bit lines:
    /// the number of keys per line varies (Poisson), so average the rates
    /// one standard deviation above and below the mean occupancy.
    fn cache_local_fp_rate(bits_per_key: f64, k: f64) -> f64 {
        let per_line = 512.0 / bits_per_key;
        let sd = per_line.sqrt();
        let crowded = standard_fp_rate(512.0 / (per_line + sd), k);
        let sparse = standard_fp_rate(512.0 / (per_line - sd), k);
        (crowded + sparse) / 2.0
    }

    #[test]
    fn no_false_negatives() {
        let f = build((0..5000).map(key), 10_000);
        for i in 0..5000 {
            assert!(f.may_contain(&key(i)), "key {i} missing");
        }
    }

    #[test]
    fn false_positive_rate_within_statistical_bound() {
        // 50k keys at 10 bits/key (6 probes), 200k absent queries.
        let n = 50_000u64;
        let queries = 200_000u64;
        let f = build((0..n).map(key), 10_000);
        assert_eq!(f.probes(), 6);
        let fp = (n..n + queries).filter(|&i| f.may_contain(&key(i))).count();
        let rate = fp as f64 / queries as f64;
        let expected = cache_local_fp_rate(10.0, 6.0); // about 0.95 %
        // The count of false positives is binomial(queries, p): allow six
        // standard deviations of sampling noise, plus 15 % for the model's
        // approximation of line occupancy and 32-bit in-line hashing.
        let sd = (expected * (1.0 - expected) / queries as f64).sqrt();
        let (lo, hi) = (expected * 0.85 - 6.0 * sd, expected * 1.15 + 6.0 * sd);
        assert!(
            rate > lo && rate < hi,
            "false-positive rate {rate:.5} outside [{lo:.5}, {hi:.5}] (model {expected:.5})"
        );
        // And it is close to the textbook 0.82 % of an unblocked filter,
        // never worse than 1.2 %.
        assert!(rate < 0.012, "rate {rate}");
    }

    #[test]
    fn hashes_span_chunks_and_consecutive_duplicates_count_once() {
        let mut b = BloomBuilder::new(10_000);
        let n = 3 * HASH_CHUNK as u64 + 5;
        for i in 0..n {
            // Every version of a user key in a row, across chunk ends too.
            b.add_hash(filter_hash(&key(i)));
            b.add_hash(filter_hash(&key(i)));
        }
        assert_eq!(b.len(), n as usize);
        assert_eq!(b.chunks.len(), 4);
        let mut out = Vec::new();
        b.finish_into(&mut out);
        let f = BloomFilter::decode(Bytes::from(out)).unwrap();
        assert!((0..n).all(|i| f.may_contain(&key(i))));
    }

    #[test]
    fn empty_filter_matches_nothing() {
        let f = build(std::iter::empty(), 10_000);
        // No lines are held (the metadata is not kept in memory).
        assert_eq!(f.size(), 0);
        assert!(!f.may_contain(b"anything"));
    }

    #[test]
    fn probes_follow_bits_per_key() {
        assert_eq!(probes_for(1000), 1);
        assert_eq!(probes_for(10_000), 6);
        assert_eq!(probes_for(16_000), 9);
        assert_eq!(probes_for(30_000), 13);
        assert_eq!(probes_for(100_000), 24);
    }

    #[test]
    fn bad_metadata_is_rejected() {
        let mut b = BloomBuilder::new(10_000);
        b.add_hash(filter_hash(b"a"));
        let mut out = Vec::new();
        b.finish_into(&mut out);
        let meta = out.len() - FILTER_META_LEN;
        for (i, what) in [(0, 0u8), (0, 31), (1, 2), (2, 1), (4, 9)] {
            let mut bad = out.clone();
            bad[meta + i] = what;
            assert!(BloomFilter::decode(Bytes::from(bad)).is_err());
        }
        assert!(BloomFilter::decode(Bytes::from_static(&[1, 2, 3])).is_err());
    }
}
