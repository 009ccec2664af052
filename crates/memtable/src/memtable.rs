//! [`MemTable`]: the engine's write buffer over two concurrent skiplists.

use std::fmt;

use lithify_base::key::{KIND_FOR_SEEK, TRAILER_LEN, escape, pack_trailer, unpack_trailer};
use lithify_base::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use lithify_base::{InternalKeyComparator, MAX_SEQNO, ParsedInternalKey, SeqNo, ValueKind};
use snafu::ensure;

use crate::arena::DEFAULT_BLOCK_SIZE;
use crate::error::{
    DuplicateEntrySnafu, EmptyRangeSnafu, EntryTooLargeSnafu, ImmutableSnafu, Result,
    SeqnoOutOfRangeSnafu, UnsupportedKindSnafu,
};
use crate::filter::{WholeKeyFilter, key_hash};
use crate::lookup::{DeletedBy, Lookup};
use crate::skiplist::{DuplicateKey, MAX_HEIGHT, NodePtr, SearchKey, SkipList, split_key};

/// The longest user key and the longest value of an entry: lengths are
/// stored as `u32` and the internal key adds an 8-byte trailer.
pub const MAX_ENTRY_PART_LEN: usize = u32::MAX as usize - TRAILER_LEN;

/// Arena block size of the range-tombstone list: range deletions are rare,
/// so that list starts small.
const RANGE_DEL_BLOCK_SIZE: usize = 4096;

/// How a [`MemTable`] allocates memory.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MemTableOptions {
    /// Size of the arena blocks of point entries' keys and values (default
    /// 1 MiB, at least 1 KiB); the skiplist nodes get blocks of a quarter
    /// of that, so an empty memtable holds 1.25 blocks. Allocations larger
    /// than a quarter block get a block of their own. RocksDB picks an
    /// eighth of `write_buffer_size`; smaller blocks waste less on tiny
    /// memtables.
    pub arena_block_size: usize,
    /// Bits of the whole-key filter over point keys, 0 (the default) for
    /// none (RocksDB's `memtable_whole_key_filtering`). With one, a
    /// [`get`](MemTable::get) of a key never added answers from one cache
    /// line instead of a skiplist walk, unless the memtable holds range
    /// tombstones. Ten bits per expected key give about 1 % false
    /// positives.
    pub whole_key_filter_bits: u64,
}

lithify_base::options_builder!(MemTableOptions {
    arena_block_size: usize,
    whole_key_filter_bits: u64,
});

impl Default for MemTableOptions {
    fn default() -> Self {
        MemTableOptions {
            arena_block_size: DEFAULT_BLOCK_SIZE,
            whole_key_filter_bits: 0,
        }
    }
}

/// Pads a value to its own cache line so writers updating it do not slow
/// down readers of the neighbouring fields.
#[repr(align(64))]
struct CacheLine<T>(T);

/// Entry counts and seqno bounds, updated by every `add`.
struct Stats {
    entries: AtomicUsize,
    deletes: AtomicUsize,
    range_deletes: AtomicUsize,
    merges: AtomicUsize,
    /// The smallest seqno added; `u64::MAX` while empty.
    first_seqno: AtomicU64,
    /// The largest seqno added.
    last_seqno: AtomicU64,
}

/// The in-memory write buffer: a sorted map of internal keys to values,
/// written by several threads at once and read without locks.
///
/// * [`add`](Self::add) inserts `user_key#seqno,kind -> value` and may be
///   called concurrently (the engine's write group members insert their
///   batches in parallel, each entry with its own seqno). Point entries
///   (`Put`, `Delete`, `Merge`, `SingleDelete`) and range tombstones (`RangeDelete`, value = end key)
///   go to two separate skiplists.
/// * [`get`](Self::get) answers a point lookup at a snapshot, taking range
///   tombstones into account, so the engine can stop at the newest layer
///   that decides.
/// * [`MemTableIter`](crate::MemTableIter) walks the point entries (or,
///   with [`MemTableIter::range_deletions`](crate::MemTableIter::range_deletions),
///   the range tombstones) as an `InternalIterator`; it owns an `Arc`, so
///   it can outlive the borrow it was made from.
///
/// Nothing is ever removed: memory is released when the last `Arc` to the
/// memtable (including iterators) is dropped.
pub struct MemTable {
    points: SkipList,
    range_dels: SkipList,
    stats: CacheLine<Stats>,
    immutable: AtomicBool,
    filter: Option<WholeKeyFilter>,
}

impl MemTable {
    /// An empty memtable ordered by `cmp`, with default options.
    pub fn new(cmp: InternalKeyComparator) -> MemTable {
        MemTable::with_options(cmp, &MemTableOptions::default())
    }

    /// An empty memtable ordered by `cmp`.
    pub fn with_options(cmp: InternalKeyComparator, options: &MemTableOptions) -> MemTable {
        let mut mem = MemTable::build(cmp, options.arena_block_size.max(1024), MAX_HEIGHT);
        if options.whole_key_filter_bits > 0 {
            mem.filter = Some(WholeKeyFilter::new(options.whole_key_filter_bits));
        }
        mem
    }

    /// A memtable with chosen arena block size and tower height limit:
    /// loom models use tiny blocks and short towers to reach every path.
    pub(crate) fn build(
        cmp: InternalKeyComparator,
        block_size: usize,
        max_height: usize,
    ) -> MemTable {
        MemTable {
            points: SkipList::new(cmp.clone(), block_size, max_height),
            range_dels: SkipList::new(cmp, RANGE_DEL_BLOCK_SIZE.min(block_size), max_height),
            stats: CacheLine(Stats {
                entries: AtomicUsize::new(0),
                deletes: AtomicUsize::new(0),
                range_deletes: AtomicUsize::new(0),
                merges: AtomicUsize::new(0),
                first_seqno: AtomicU64::new(u64::MAX),
                last_seqno: AtomicU64::new(0),
            }),
            immutable: AtomicBool::new(false),
            filter: None,
        }
    }

    /// The comparator of the memtable's internal keys.
    pub fn comparator(&self) -> &InternalKeyComparator {
        self.points.comparator()
    }

    /// Adds `user_key#seqno,kind -> value`. For `RangeDelete`, `user_key`
    /// is the start (inclusive) and `value` the end (exclusive) of the
    /// deleted range.
    ///
    /// May be called from several threads at once and while readers run.
    /// An entry is visible to readers from the moment it is linked, before
    /// this call returns; the engine publishes seqnos only after their
    /// writes returned, so snapshots never see a half-applied batch.
    ///
    /// # Errors
    /// [`Error`](crate::Error) (all `InvalidArgument`): the memtable is
    /// immutable, the same `user_key#seqno,kind` was already added, the
    /// seqno is above [`MAX_SEQNO`], a key or value exceeds
    /// [`MAX_ENTRY_PART_LEN`], a range tombstone is empty, or the kind is
    /// [`ValueKind::BlobIndex`] (only SSTs hold those).
    pub fn add(&self, seqno: SeqNo, kind: ValueKind, user_key: &[u8], value: &[u8]) -> Result<()> {
        ensure!(
            !self.immutable.load(Ordering::Relaxed),
            ImmutableSnafu { seqno }
        );
        ensure!(
            seqno <= MAX_SEQNO,
            SeqnoOutOfRangeSnafu {
                seqno,
                max: MAX_SEQNO
            }
        );
        ensure!(
            user_key.len() <= MAX_ENTRY_PART_LEN && value.len() <= MAX_ENTRY_PART_LEN,
            EntryTooLargeSnafu {
                user_key_len: user_key.len(),
                value_len: value.len(),
                limit: MAX_ENTRY_PART_LEN,
            }
        );
        let trailer = pack_trailer(seqno, kind as u8);
        let inserted = match kind {
            ValueKind::RangeDelete => {
                ensure!(
                    self.comparator().compare_user(user_key, value).is_lt(),
                    EmptyRangeSnafu {
                        start: escape(user_key),
                        end: escape(value),
                        seqno,
                    }
                );
                self.range_dels.insert(user_key, trailer, value)
            }
            ValueKind::BlobIndex => {
                return UnsupportedKindSnafu {
                    kind: kind.name(),
                    seqno,
                }
                .fail();
            }
            ValueKind::Put | ValueKind::Delete | ValueKind::Merge | ValueKind::SingleDelete => {
                match &self.filter {
                    // The filter's block is a cache miss of its own: fetch
                    // it while the insert walks the skiplist, and set the
                    // bits after. Readers only consult the filter for keys
                    // whose seqno is published, after this call returns.
                    Some(filter) => {
                        let hash = key_hash(user_key);
                        filter.prefetch(hash);
                        let inserted = self.points.insert(user_key, trailer, value);
                        if inserted.is_ok() {
                            filter.add(hash);
                        }
                        inserted
                    }
                    None => self.points.insert(user_key, trailer, value),
                }
            }
        };
        if let Err(DuplicateKey) = inserted {
            let key = ParsedInternalKey {
                user_key,
                seqno,
                kind,
            };
            return DuplicateEntrySnafu {
                key: key.to_string(),
            }
            .fail();
        }
        self.count(seqno, kind);
        Ok(())
    }

    fn count(&self, seqno: SeqNo, kind: ValueKind) {
        let stats = &self.stats.0;
        stats.entries.fetch_add(1, Ordering::Relaxed);
        match kind {
            ValueKind::Delete | ValueKind::SingleDelete => {
                stats.deletes.fetch_add(1, Ordering::Relaxed);
            }
            ValueKind::RangeDelete => {
                stats.range_deletes.fetch_add(1, Ordering::Relaxed);
            }
            ValueKind::Merge => {
                stats.merges.fetch_add(1, Ordering::Relaxed);
            }
            ValueKind::Put | ValueKind::BlobIndex => {}
        }
        // Load first: with increasing seqnos the minimum rarely changes, and
        // a plain load does not take the cache line away from other writers.
        if seqno < stats.first_seqno.load(Ordering::Relaxed) {
            stats.first_seqno.fetch_min(seqno, Ordering::Relaxed);
        }
        if seqno > stats.last_seqno.load(Ordering::Relaxed) {
            stats.last_seqno.fetch_max(seqno, Ordering::Relaxed);
        }
    }

    /// Looks `user_key` up at `snapshot`: only entries with a seqno
    /// `<= snapshot` are seen. Never locks.
    ///
    /// The newest visible version decides, unless a visible range tombstone
    /// of this memtable with a higher seqno covers the key, in which case the
    /// key is [`Deleted`](Lookup::Deleted) by that tombstone. Returns
    /// [`NotFound`](Lookup::NotFound) only when neither exists, so the engine
    /// consults older layers exactly then.
    pub fn get(&self, user_key: &[u8], snapshot: SeqNo) -> Lookup<'_> {
        // An empty memtable answers before its filter is probed: the probe
        // is a cache miss in a filter sized for the full memtable, and the
        // two list heads read here stay cached (RocksDB's `MemTable::Get`
        // checks `IsEmpty` first too).
        if self.is_empty() {
            return Lookup::NotFound;
        }
        if let Some(filter) = &self.filter
            && !filter.may_contain(key_hash(user_key))
            && self.num_range_deletes() == 0
        {
            return Lookup::NotFound;
        }
        let snapshot = snapshot.min(MAX_SEQNO);
        // Seek to `user_key#snapshot,SEEK` without building that key: the
        // newest version with seqno <= snapshot is the first entry >= it.
        let seek = SearchKey::new(user_key, pack_trailer(snapshot, KIND_FOR_SEEK));
        let point = self
            .points
            .find_greater_or_equal(&seek)
            .filter(|&node| self.points.has_user_key(node, user_key))
            .map(|node| (node, unpack_trailer(split_key(self.points.key(node)).1)));
        let point_seqno = point.map(|(_, (seqno, _))| seqno);
        if let Some(range_seqno) = self.max_covering_tombstone_seq(user_key, snapshot)
            && point_seqno.is_none_or(|p| range_seqno > p)
        {
            return Lookup::Deleted {
                seqno: range_seqno,
                by: DeletedBy::RangeTombstone,
            };
        }
        match point {
            None => Lookup::NotFound,
            Some((node, (seqno, kind))) => self.decide(node, seqno, kind),
        }
    }

    /// The lookup answer of a visible, uncovered point entry.
    #[inline]
    fn decide(&self, node: NodePtr, seqno: SeqNo, kind: u8) -> Lookup<'_> {
        if kind == ValueKind::Put as u8 {
            Lookup::Found {
                value: self.points.value(node),
                seqno,
            }
        } else if kind == ValueKind::Merge as u8 {
            Lookup::Merge {
                operand: self.points.value(node),
                seqno,
            }
        } else {
            // The point list holds no other kinds than these and the two
            // point tombstones.
            Lookup::Deleted {
                seqno,
                by: DeletedBy::PointTombstone,
            }
        }
    }

    /// Collects the merge operands of `user_key` visible at `snapshot`,
    /// newest first, into `operands`, and says what lies below them in
    /// this memtable: [`Found`](Lookup::Found) (the value they apply to),
    /// [`Deleted`](Lookup::Deleted) (they apply to nothing: a point
    /// tombstone, or a range tombstone of this memtable newer than the next
    /// version), or [`NotFound`](Lookup::NotFound) (continue in older
    /// layers). Never returns [`Merge`](Lookup::Merge).
    ///
    /// Called after [`get`](Self::get) answered `Merge`; also correct on a
    /// key without operands (it then answers as `get` does).
    pub fn collect_operands<'a>(
        &'a self,
        user_key: &[u8],
        snapshot: SeqNo,
        operands: &mut Vec<&'a [u8]>,
    ) -> Lookup<'a> {
        let snapshot = snapshot.min(MAX_SEQNO);
        let covering = self.max_covering_tombstone_seq(user_key, snapshot);
        let seek = SearchKey::new(user_key, pack_trailer(snapshot, KIND_FOR_SEEK));
        let mut node = self
            .points
            .find_greater_or_equal(&seek)
            .filter(|&node| self.points.has_user_key(node, user_key));
        while let Some(n) = node {
            let (seqno, kind) = unpack_trailer(split_key(self.points.key(n)).1);
            if let Some(range_seqno) = covering
                && range_seqno > seqno
            {
                return Lookup::Deleted {
                    seqno: range_seqno,
                    by: DeletedBy::RangeTombstone,
                };
            }
            match self.decide(n, seqno, kind) {
                Lookup::Merge { operand, .. } => operands.push(operand),
                decided => return decided,
            }
            node = self
                .points
                .next(n)
                .filter(|&next| self.points.has_user_key(next, user_key));
        }
        match covering {
            // Newer than every older layer's versions.
            Some(seqno) => Lookup::Deleted {
                seqno,
                by: DeletedBy::RangeTombstone,
            },
            None => Lookup::NotFound,
        }
    }

    /// Marks the memtable immutable: later [`add`](Self::add)s fail. The
    /// engine calls this when it switches to a new memtable, after the last
    /// write group of this one finished.
    pub fn mark_immutable(&self) {
        self.immutable.store(true, Ordering::Release);
    }

    /// Whether [`mark_immutable`](Self::mark_immutable) was called.
    pub fn is_immutable(&self) -> bool {
        self.immutable.load(Ordering::Acquire)
    }

    /// Arena bytes consumed by the entries (nodes, keys, values, sealed
    /// block tails), the figure the engine compares with
    /// `write_buffer_size`. A few relaxed loads: cheap to read on every
    /// write; approximate while writers run.
    pub fn approximate_memory_usage(&self) -> usize {
        self.points.memory_usage() + self.range_dels.memory_usage()
    }

    /// Bytes of the whole-key filter (0 without one).
    pub fn filter_size(&self) -> usize {
        self.filter.as_ref().map_or(0, WholeKeyFilter::size)
    }

    /// Bytes of arena blocks held (what the memtable costs the process,
    /// including not yet used block space).
    pub fn allocated_memory(&self) -> usize {
        self.points.reserved_bytes() + self.range_dels.reserved_bytes()
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty() && self.range_dels.is_empty()
    }

    /// The number of entries added (point entries and range tombstones).
    pub fn len(&self) -> usize {
        self.stats.0.entries.load(Ordering::Relaxed)
    }

    /// The number of point tombstones (`Delete`, `SingleDelete`) added.
    pub fn num_deletes(&self) -> usize {
        self.stats.0.deletes.load(Ordering::Relaxed)
    }

    /// The number of merge operands added.
    pub fn num_merges(&self) -> usize {
        self.stats.0.merges.load(Ordering::Relaxed)
    }

    /// The number of range tombstones added.
    pub fn num_range_deletes(&self) -> usize {
        self.stats.0.range_deletes.load(Ordering::Relaxed)
    }

    /// The smallest seqno added, if any.
    pub fn first_seqno(&self) -> Option<SeqNo> {
        let first = self.stats.0.first_seqno.load(Ordering::Relaxed);
        (first != u64::MAX).then_some(first)
    }

    /// The largest seqno added, if any.
    pub fn last_seqno(&self) -> Option<SeqNo> {
        self.first_seqno()?;
        Some(self.stats.0.last_seqno.load(Ordering::Relaxed))
    }

    /// The list of point entries.
    pub(crate) fn points(&self) -> &SkipList {
        &self.points
    }

    /// The list of range tombstones (`start#seqno,RANGEDEL -> end`).
    pub(crate) fn range_dels(&self) -> &SkipList {
        &self.range_dels
    }
}

impl fmt::Debug for MemTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemTable")
            .field("len", &self.len())
            .field("num_deletes", &self.num_deletes())
            .field("num_range_deletes", &self.num_range_deletes())
            .field("first_seqno", &self.first_seqno())
            .field("last_seqno", &self.last_seqno())
            .field("approximate_memory_usage", &self.approximate_memory_usage())
            .field("immutable", &self.is_immutable())
            .finish()
    }
}
