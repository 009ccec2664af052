//! An in-memory search aid for a table's index block.
//!
//! A point lookup or a seek starts with a binary search of the index
//! block: about `log2(data blocks)` probes, each decoding a separator key
//! somewhere in a block of a megabyte or more, so nearly every probe is a
//! cache miss. When the table's order is plain byte order on an *ordering
//! key* (the whole key under [`BytewiseComparator`], the user key under the
//! bytewise [`InternalKeyComparator`]), the table keeps, next to the index,
//! one `u64` per index entry: the eight bytes of the entry's ordering key
//! that follow the prefix all entries share, big-endian and zero-padded.
//!
//! Byte order makes these words monotone: an entry that sorts before
//! another never has a larger word. So a binary search over the dense word
//! array (eight bytes per entry, which stays in the processor's cache)
//! finds the entries whose word equals the target's; every entry before
//! them sorts before the target and every entry after them after it. Only
//! those few candidates (usually none or one) are compared in full. The
//! answer is exactly the block binary search's: the first entry `>=` the
//! target. Nothing of the file format changes; other comparators search
//! the block as before.
//!
//! Beside each word the table keeps where the entry's data block starts, as
//! a `u32`: data blocks follow each other with only their trailers between
//! them, so a block ends where the next one starts, less the trailer (the
//! offsets are kept only when the index says exactly that, for tables
//! under 4 GiB). When no entry's word equals the target's (nearly every
//! point lookup: ties need the target to share its first eight bytes past
//! the common prefix with a separator), the answer is the entry at the end
//! of the words below the target, and its handle comes from that array: a
//! point lookup then reads nothing of the index block, whose restart
//! array and entry were two more cache misses per lookup (10M-key
//! `readrandom` profile: `seek_in_candidates` and the index entry's
//! decoding were about 8 % of the samples).
//!
//! [`BytewiseComparator`]: lithify_base::BytewiseComparator
//! [`InternalKeyComparator`]: lithify_base::InternalKeyComparator

use std::borrow::Borrow;
use std::cmp::Ordering;

use lithify_base::hint;
use lithify_base::key::{TRAILER_LEN, user_key};
use lithify_base::{BytewiseComparator, Comparator, InternalKeyComparator};

use crate::block::{Block, BlockIter};
use crate::format::{BLOCK_TRAILER_LEN, BlockHandle};

/// Which part of a key the table's comparator orders bytewise first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OrderingKey {
    /// The whole key (`BytewiseComparator`).
    Whole,
    /// The key without its 8-byte trailer (bytewise internal keys; ties are
    /// broken by the trailer, which the full comparison handles).
    UserKey,
}

impl OrderingKey {
    /// The ordering key of a comparator named `name`, if it is one the
    /// words can stand for.
    fn for_comparator(name: &str) -> Option<OrderingKey> {
        if name == BytewiseComparator::NAME {
            Some(OrderingKey::Whole)
        } else if name == InternalKeyComparator::bytewise().name() {
            Some(OrderingKey::UserKey)
        } else {
            None
        }
    }

    #[inline]
    fn of(self, key: &[u8]) -> &[u8] {
        match self {
            OrderingKey::Whole => key,
            OrderingKey::UserKey => user_key(key),
        }
    }
}

/// One word per index entry; see the module documentation.
#[derive(Debug, Clone)]
pub(crate) struct IndexWords {
    ordering: OrderingKey,
    /// The prefix every entry's ordering key starts with.
    common: Box<[u8]>,
    /// Per entry, the 8 ordering-key bytes after `common`, big-endian.
    words: Box<[u64]>,
    /// The first word of every [`BUCKET`] words: a search finds its bucket
    /// here (a sixteenth of the words, which stays in the processor's
    /// cache), then only the bucket's two or three cache lines of `words`
    /// are read, instead of a miss at each of the last binary-search steps.
    summary: Box<[u64]>,
    /// Per entry, the offset of its data block, then the end of the last
    /// one (trailer included): `len() + 1` offsets. Empty when a handle did
    /// not decode, the blocks are not back to back, or the table passes
    /// 4 GiB (the lookups then read the index block, which reports any
    /// damage).
    block_starts: Box<[u32]>,
}

impl IndexWords {
    /// Builds the words of `index` for a table ordered by the comparator
    /// named `comparator`. `None` when that comparator is not a byte order
    /// the words can stand for, or when the index is not one restart point
    /// per entry (as every index this crate writes is) or does not decode:
    /// the table then searches the block itself, which reports any damage.
    pub(crate) fn build(index: &Block, comparator: &str) -> Option<IndexWords> {
        let ordering = OrderingKey::for_comparator(comparator)?;
        let n = index.num_restarts() as usize;
        if n == 0 {
            return None;
        }
        // The shared prefix of the first and the second-to-last entries: the
        // last separator of a table is often a short successor key (`"1"`
        // after `"0999"`) that shares nothing with the others. Entries that
        // do not start with the prefix still get monotone words (see
        // `word_of`).
        let mut it = BlockIter::new(index, Vec::new());
        it.first().ok()?;
        let first = ordering.of(it.key()).to_vec();
        it.seek_to_restart_entry(index.num_restarts().saturating_sub(2))
            .ok()?;
        let other = ordering.of(it.key());
        let common_len = first.iter().zip(other).take_while(|(a, b)| a == b).count();
        let common: Box<[u8]> = first[..common_len].into();

        let mut words = Vec::with_capacity(n);
        let mut starts = BlockStarts::new(n);
        it.first().ok()?;
        while it.valid() {
            // Entry `i` must be the one restart point `i` names: positions
            // in `words` and `block_starts` are restart indexes, which the
            // index block's own cursors (ties, iterators) go by. A damaged
            // restart array would make the two disagree.
            if words.len() >= n || index.restart(words.len() as u32).ok()? != it.entry_offset() {
                return None;
            }
            words.push(word_of(ordering.of(it.key()), &common));
            starts.add(BlockHandle::decode_exact(it.value()));
            it.next().ok()?;
        }
        // Every entry must be a restart point: positions in `words` are
        // restart indexes.
        if words.len() != n {
            return None;
        }
        Some(IndexWords::new(ordering, common, words, starts.finish()))
    }

    fn new(
        ordering: OrderingKey,
        common: Box<[u8]>,
        words: Vec<u64>,
        block_starts: Box<[u32]>,
    ) -> Self {
        let summary = words.iter().step_by(BUCKET).copied().collect();
        IndexWords {
            ordering,
            common,
            words: words.into_boxed_slice(),
            summary,
            block_starts,
        }
    }

    /// Bytes held.
    pub(crate) fn size(&self) -> usize {
        (self.words.len() + self.summary.len()) * 8
            + self.block_starts.len() * 4
            + self.common.len()
    }

    /// The number of index entries.
    pub(crate) fn len(&self) -> usize {
        self.words.len()
    }

    /// Whether every entry's handle is kept (see [`handle`](Self::handle)).
    pub(crate) fn has_handles(&self) -> bool {
        !self.block_starts.is_empty()
    }

    /// The data block handle of entry `pos`, when the handles are kept and
    /// `pos` is an entry.
    #[inline]
    pub(crate) fn handle(&self, pos: usize) -> Option<BlockHandle> {
        let start = *self.block_starts.get(pos)?;
        let next = *self.block_starts.get(pos + 1)?;
        Some(BlockHandle {
            offset: u64::from(start),
            size: u64::from(next - start) - BLOCK_TRAILER_LEN as u64,
        })
    }

    /// The entries that may be the first one `>= target`, as a range of
    /// entry positions `lo..hi`: every entry before `lo` sorts before
    /// `target`, every entry from `hi` on after it. The answer is the first
    /// entry of the range that is `>= target` in a full comparison, or `hi`
    /// if none is.
    pub(crate) fn candidates(&self, target: &[u8]) -> (usize, usize) {
        self.finish_search(self.start_search(target))
    }

    /// The first half of [`candidates`](Self::candidates): finds the bucket
    /// of words that holds the answer in the summary and starts loading it
    /// (and its block starts), so that the caller can do other work (the
    /// filter probe) while the loads are under way.
    pub(crate) fn start_search(&self, target: &[u8]) -> WordSearch {
        let word = word_of(self.ordering.of(target), &self.common);
        // Buckets before `k` start below `word`, the rest at or above it:
        // the first word `>= word` is in bucket `k - 1`, or is the first of
        // bucket `k`, where the bucket search ends when it finds none.
        let k = self.summary.partition_point(|&x| x < word);
        let (start, end) = match k {
            0 => (0, 0),
            k => ((k - 1) * BUCKET, (k * BUCKET).min(self.words.len())),
        };
        if start < end {
            // A bucket is 128 bytes: at most three cache lines.
            hint::prefetch_read(&self.words[start]);
            hint::prefetch_read(&self.words[start + (end - start) / 2]);
            hint::prefetch_read(&self.words[end - 1]);
            if let Some(first) = self.block_starts.get(start) {
                hint::prefetch_read(first);
                hint::prefetch_read(&self.block_starts[end]);
            }
        }
        WordSearch { word, start, end }
    }

    /// The second half of [`candidates`](Self::candidates).
    pub(crate) fn finish_search(&self, search: WordSearch) -> (usize, usize) {
        let WordSearch {
            word: w,
            start,
            end,
        } = search;
        let lo = start + self.words[start..end].partition_point(|&x| x < w);
        // Ties are rare and short: gallop over them from `lo` instead of a
        // second search over the whole tail.
        let rest = &self.words[lo..];
        let mut reach = 1;
        while reach < rest.len() && rest[reach - 1] <= w {
            reach *= 2;
        }
        let reach = reach.min(rest.len());
        let hi = lo + rest[..reach].partition_point(|&x| x <= w);
        (lo, hi)
    }
}

/// Words per bucket of [`IndexWords::summary`].
const BUCKET: usize = 16;

/// A search of the index words between its two halves
/// ([`IndexWords::start_search`], [`IndexWords::finish_search`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct WordSearch {
    /// The target's word.
    word: u64,
    /// The bucket of words that holds the first word `>= word`, or ends
    /// just before it.
    start: usize,
    end: usize,
}

/// Collects [`IndexWords::block_starts`] while it holds: each handle must
/// start where the previous block's trailer ended, below 4 GiB.
struct BlockStarts(Option<Vec<u32>>);

impl BlockStarts {
    fn new(entries: usize) -> Self {
        BlockStarts(Some(Vec::with_capacity(entries + 1)))
    }

    /// The next entry's handle (`None`: it did not decode).
    fn add(&mut self, handle: Option<BlockHandle>) {
        let Some(starts) = &mut self.0 else { return };
        let fits = handle.and_then(|h| {
            let start = u32::try_from(h.offset).ok()?;
            let end = u32::try_from(h.end_with_trailer()?).ok()?;
            // Back to back with the previous block (whose end is the last
            // offset pushed).
            let follows = starts.last().is_none_or(|&prev_end| prev_end == start);
            follows.then_some((start, end))
        });
        match fits {
            Some((start, end)) => {
                starts.pop();
                starts.push(start);
                starts.push(end);
            }
            None => self.0 = None,
        }
    }

    fn finish(self) -> Box<[u32]> {
        self.0.unwrap_or_default().into_boxed_slice()
    }
}

/// The word of an ordering key: the 8 bytes after `common`, big-endian and
/// zero-padded, for keys that start with `common`; 0 for keys below every
/// key that does (they differ from it by a smaller byte, or are a proper
/// prefix of it) and `u64::MAX` for keys above. Byte order of keys implies
/// the order of their words, which is all the search needs.
#[inline]
fn word_of(key: &[u8], common: &[u8]) -> u64 {
    let c = common.len();
    let head = &key[..key.len().min(c)];
    match head.cmp(&common[..head.len()]) {
        Ordering::Less => 0,
        Ordering::Greater => u64::MAX,
        Ordering::Equal if key.len() < c => 0,
        Ordering::Equal => {
            let rest = &key[c..];
            let mut bytes = [0u8; 8];
            let n = rest.len().min(8);
            bytes[..n].copy_from_slice(&rest[..n]);
            u64::from_be_bytes(bytes)
        }
    }
}

/// Positions `index` (a cursor over a block with one restart point per
/// entry) at the first entry of `lo..hi` whose key is `>= target` under
/// `compare`, or at entry `hi` (past the end: invalid) if none is.
pub(crate) fn seek_in_candidates<B: Borrow<Block>>(
    index: &mut BlockIter<B>,
    lo: usize,
    hi: usize,
    target: &[u8],
    compare: impl Fn(&[u8], &[u8]) -> Ordering,
) -> Result<(), crate::block::BlockError> {
    let (mut lo, mut hi) = (lo as u32, hi as u32);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let block = index.block();
        let key = block.restart_key(block.restart(mid)?)?;
        if compare(key, target) == Ordering::Less {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    index.seek_to_restart_entry(lo)
}

// The trailer length the `UserKey` ordering strips.
const _: () = assert!(TRAILER_LEN == 8);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::BlockBuilder;
    use lithify_base::key::append_internal_key;
    use proptest::prelude::*;

    fn block_of(keys: &[Vec<u8>]) -> Block {
        let mut b = BlockBuilder::new(1);
        for k in keys {
            b.add(k, b"v");
        }
        Block::new(bytes::Bytes::copy_from_slice(b.finish())).unwrap()
    }

    fn first_ge(
        block: &Block,
        words: &IndexWords,
        target: &[u8],
        cmp: &dyn Comparator,
    ) -> Option<Vec<u8>> {
        let (lo, hi) = words.candidates(target);
        let mut it = BlockIter::new(block, Vec::new());
        seek_in_candidates(&mut it, lo, hi, target, |a, b| cmp.compare(a, b)).unwrap();
        it.valid().then(|| it.key().to_vec())
    }

    fn plain_first_ge(block: &Block, target: &[u8], cmp: &dyn Comparator) -> Option<Vec<u8>> {
        let mut it = BlockIter::new(block, Vec::new());
        it.seek_ge(target, cmp).unwrap();
        it.valid().then(|| it.key().to_vec())
    }

    #[test]
    fn only_byte_orders_get_words() {
        let block = block_of(&[b"a".to_vec(), b"b".to_vec()]);
        assert!(IndexWords::build(&block, BytewiseComparator::NAME).is_some());
        let icmp = InternalKeyComparator::bytewise();
        assert!(IndexWords::build(&block, icmp.name()).is_some());
        assert!(IndexWords::build(&block, "some.OtherComparator").is_none());
        assert!(IndexWords::build(&Block::empty(), BytewiseComparator::NAME).is_none());
        // Two entries per restart point: positions would not be entries.
        let mut b = BlockBuilder::new(2);
        b.add(b"a", b"");
        b.add(b"b", b"");
        let block = Block::new(bytes::Bytes::copy_from_slice(b.finish())).unwrap();
        assert!(IndexWords::build(&block, BytewiseComparator::NAME).is_none());
    }

    /// An index block over back-to-back data blocks of sizes `4000 + i`
    /// (plus their trailers) from `first_offset` on, or with a gap of
    /// `gap` bytes before the second block.
    fn index_with_handles(keys: &[&str], first_offset: u64, gap: u64) -> (Block, Vec<BlockHandle>) {
        let mut b = BlockBuilder::new(1);
        let mut handles = Vec::new();
        let mut offset = first_offset;
        for (i, k) in keys.iter().enumerate() {
            if i == 1 {
                offset += gap;
            }
            let handle = BlockHandle {
                offset,
                size: 4000 + i as u64,
            };
            offset = handle.end_with_trailer().unwrap();
            let mut v = Vec::new();
            handle.encode_to(&mut v);
            b.add(k.as_bytes(), &v);
            handles.push(handle);
        }
        let block = Block::new(bytes::Bytes::copy_from_slice(b.finish())).unwrap();
        (block, handles)
    }

    #[test]
    fn handles_are_the_index_entries_handles() {
        let (index, handles) = index_with_handles(&["b", "d", "f"], 0, 0);
        let words = IndexWords::build(&index, BytewiseComparator::NAME).unwrap();
        assert!(words.has_handles());
        assert_eq!(words.len(), 3);
        for (pos, handle) in handles.iter().enumerate() {
            assert_eq!(words.handle(pos), Some(*handle));
        }
        assert_eq!(words.handle(3), None);
        // "c" ties with no word: the answer is entry 1, from the handles.
        assert_eq!(words.candidates(b"c"), (1, 1));
        // Three words, a summary of one, four block starts.
        assert_eq!(words.size(), (3 + 1) * 8 + 4 * 4 + words.common.len());
    }

    /// The tables this crate writes keep their data blocks back to back,
    /// so their point lookups take the handles from the words.
    #[test]
    fn built_tables_keep_their_handles() {
        use crate::{SstBuilder, SstOptions, SstReader};
        use lithify_vfs::{FileSystem, MemFs};
        use std::path::Path;

        let fs = MemFs::new();
        let path = Path::new("/t.sst");
        let opts = SstOptions::default();
        let mut b = SstBuilder::new(fs.create(path).unwrap(), path, &opts).unwrap();
        for i in 0..5000u32 {
            b.add(format!("key{i:08}").as_bytes(), &[7u8; 100]).unwrap();
        }
        let size = b.finish().unwrap().file_size;
        let table = SstReader::open(fs.open(path).unwrap(), path, size, &opts, None).unwrap();
        let words = table.index_words().unwrap();
        assert!(words.len() > 100, "{} blocks", words.len());
        assert!(words.has_handles());
        // Every key, and every gap after one: a gap after a block's last
        // key is below that block's separator, so the lookup reads the
        // block, finds nothing at or after the target, and steps to the
        // next block's first entry.
        let mut stats = crate::ReadStats::default();
        let mut found = Vec::new();
        for i in 0..5000u32 {
            let key = format!("key{i:08}");
            let value = table.point_lookup(None, key.as_bytes(), &mut found, &mut stats);
            assert_eq!(value.unwrap().as_deref(), Some(&[7u8; 100][..]), "{key}");
            assert_eq!(found, key.as_bytes());
            let gap = format!("{key}x");
            let next = table.point_lookup(None, gap.as_bytes(), &mut found, &mut stats);
            if i == 4999 {
                assert_eq!(next.unwrap(), None);
            } else {
                assert!(next.unwrap().is_some());
                assert_eq!(found, format!("key{:08}", i + 1).as_bytes(), "{gap}");
            }
        }
        assert_eq!(table.get(b"zzz").unwrap(), None);
    }

    #[test]
    fn a_restart_array_that_disagrees_with_the_entries_gets_no_words() {
        let (index, _) = index_with_handles(&["b", "d", "f"], 0, 0);
        let mut bytes = index.data().to_vec();
        // Swap restart points 0 and 1 (the array precedes the count).
        let at = bytes.len() - 4 - 3 * 4;
        let (r0, r1) = (at, at + 4);
        let first: [u8; 4] = bytes[r0..r0 + 4].try_into().unwrap();
        bytes.copy_within(r1..r1 + 4, r0);
        bytes[r1..r1 + 4].copy_from_slice(&first);
        let swapped = Block::new(bytes::Bytes::from(bytes)).unwrap();
        assert!(IndexWords::build(&swapped, BytewiseComparator::NAME).is_none());
        assert!(IndexWords::build(&index, BytewiseComparator::NAME).is_some());
    }

    #[test]
    fn handles_are_kept_only_for_back_to_back_blocks_under_4_gib() {
        for (first, gap) in [(0, 1), ((1 << 32) - 4000, 0), (1 << 32, 0)] {
            let (index, _) = index_with_handles(&["b", "d"], first, gap);
            let words = IndexWords::build(&index, BytewiseComparator::NAME).unwrap();
            assert!(!words.has_handles(), "{first} {gap}");
            assert_eq!(words.handle(0), None);
        }
        // A value that is no handle.
        let block = block_of(&[b"a".to_vec(), b"b".to_vec()]);
        let words = IndexWords::build(&block, BytewiseComparator::NAME).unwrap();
        assert!(!words.has_handles());
        assert_eq!(words.size(), (2 + 1) * 8 + words.common.len());
    }

    #[test]
    fn shared_prefix_and_ties() {
        // Long shared prefixes and words that tie on 8 bytes.
        let keys: Vec<Vec<u8>> = [
            "user:0001:aaaaaaaaaa1",
            "user:0001:aaaaaaaaaa2",
            "user:0001:aaaaaaaaaa3",
            "user:0002",
            "user:0003:x",
        ]
        .iter()
        .map(|k| k.as_bytes().to_vec())
        .collect();
        let block = block_of(&keys);
        let words = IndexWords::build(&block, BytewiseComparator::NAME).unwrap();
        assert_eq!(&*words.common, b"user:000");
        // A last separator outside the shared prefix, as successors are.
        let mut with_successor = keys.clone();
        with_successor.push(b"v".to_vec());
        let block2 = block_of(&with_successor);
        let words2 = IndexWords::build(&block2, BytewiseComparator::NAME).unwrap();
        assert_eq!(&*words2.common, b"user:000");
        assert_eq!(words2.candidates(b"user:0002"), (3, 4));
        for target in ["", "user:0003:z", "u", "v", "w"] {
            assert_eq!(
                first_ge(&block2, &words2, target.as_bytes(), &BytewiseComparator),
                plain_first_ge(&block2, target.as_bytes(), &BytewiseComparator),
                "{target}"
            );
        }
        for target in [
            "",
            "a",
            "user:",
            "user:0001:aaaaaaaaaa2",
            "user:0001:aaaaaaaaaa21",
            "user:0001:b",
            "user:0003:x",
            "user:0003:y",
            "z",
        ] {
            assert_eq!(
                first_ge(&block, &words, target.as_bytes(), &BytewiseComparator),
                plain_first_ge(&block, target.as_bytes(), &BytewiseComparator),
                "{target}"
            );
        }
    }

    /// The summary's buckets: answers on each side of every bucket edge,
    /// before the first word and past the last, match a search of all the
    /// words.
    #[test]
    fn bucket_edges() {
        for n in [1usize, 15, 16, 17, 32, 33, 100] {
            let keys: Vec<Vec<u8>> = (0..n)
                .map(|i| format!("k{:03}", i * 2).into_bytes())
                .collect();
            let block = block_of(&keys);
            let words = IndexWords::build(&block, BytewiseComparator::NAME).unwrap();
            assert_eq!(words.summary.len(), n.div_ceil(BUCKET), "{n}");
            let targets = (0..=2 * n + 1).map(|t| format!("k{t:03}"));
            for target in targets.chain(["a".into(), "z".into()]) {
                let w = word_of(target.as_bytes(), &words.common);
                let lo = words.words.partition_point(|&x| x < w);
                let hi = words.words.partition_point(|&x| x <= w);
                assert_eq!(
                    words.candidates(target.as_bytes()),
                    (lo, hi),
                    "{n} {target}"
                );
                assert_eq!(
                    first_ge(&block, &words, target.as_bytes(), &BytewiseComparator),
                    plain_first_ge(&block, target.as_bytes(), &BytewiseComparator),
                    "{n} {target}"
                );
            }
        }
    }

    /// The two-step search over the summary and a bucket, against both
    /// partition points of the whole array: sorted words with long runs of
    /// ties, which cross bucket edges.
    #[test]
    fn candidates_are_the_partition_points() {
        proptest!(|(mut words in proptest::collection::vec(0u64..40, 1..200), targets in proptest::collection::vec(0u64..42, 1..50))| {
            words.sort_unstable();
            let starts: Box<[u32]> = (0..=words.len() as u32).map(|i| i * 100).collect();
            let w = IndexWords::new(OrderingKey::Whole, Box::default(), words.clone(), starts);
            for t in targets.into_iter().chain(words.iter().step_by(BUCKET).copied()) {
                let lo = words.partition_point(|&x| x < t);
                let hi = words.partition_point(|&x| x <= t);
                prop_assert_eq!(w.candidates(&t.to_be_bytes()), (lo, hi), "{}", t);
                prop_assert_eq!(w.handle(lo).map(|h| h.offset), (lo < words.len()).then(|| lo as u64 * 100));
            }
        });
    }

    proptest! {
        #[test]
        fn agrees_with_the_block_search_on_plain_keys(
            mut keys in proptest::collection::btree_set(proptest::collection::vec(0u8..4, 0..12), 1..60),
            targets in proptest::collection::vec(proptest::collection::vec(0u8..4, 0..12), 1..40),
            prefix in proptest::collection::vec(0u8..3, 0..10),
        ) {
            let keys: Vec<Vec<u8>> = std::mem::take(&mut keys).into_iter().map(|k| [prefix.clone(), k].concat()).collect();
            let block = block_of(&keys);
            let words = IndexWords::build(&block, BytewiseComparator::NAME).unwrap();
            for t in targets {
                for target in [t.clone(), [prefix.clone(), t].concat()] {
                    prop_assert_eq!(
                        first_ge(&block, &words, &target, &BytewiseComparator),
                        plain_first_ge(&block, &target, &BytewiseComparator)
                    );
                }
            }
        }

        #[test]
        fn agrees_with_the_block_search_on_internal_keys(
            entries in proptest::collection::btree_set((proptest::collection::vec(0u8..3, 0..10), 0u64..4), 1..60),
            targets in proptest::collection::vec((proptest::collection::vec(0u8..3, 0..10), 0u64..5), 1..40),
        ) {
            let icmp = InternalKeyComparator::bytewise();
            let mut keys: Vec<Vec<u8>> = entries
                .into_iter()
                .map(|(uk, seq)| {
                    let mut k = Vec::new();
                    append_internal_key(&mut k, &uk, seq, 1);
                    k
                })
                .collect();
            keys.sort_by(|a, b| icmp.compare(a, b));
            let block = block_of(&keys);
            let words = IndexWords::build(&block, icmp.name()).unwrap();
            for (uk, seq) in targets {
                let mut target = Vec::new();
                append_internal_key(&mut target, &uk, seq, 1);
                prop_assert_eq!(
                    first_ge(&block, &words, &target, &icmp),
                    plain_first_ge(&block, &target, &icmp)
                );
                // Damaged short targets (no whole trailer) as well.
                prop_assert_eq!(
                    first_ge(&block, &words, &uk, &icmp),
                    plain_first_ge(&block, &uk, &icmp)
                );
            }
        }
    }
}
