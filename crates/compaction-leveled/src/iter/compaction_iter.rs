//! The compaction iterator: which versions survive a compaction or flush
//! (RocksDB's `CompactionIterator`, `db/compaction/compaction_iterator.cc`).

use bytes::Bytes;
use lithify_base::key::{append_internal_key, escape};
use lithify_base::{
    InternalIterator, InternalKey, InternalKeyComparator, MAX_SEQNO, ParsedInternalKey, SeqNo,
    ValueKind,
};
use snafu::ResultExt as _;

use super::filter::{CompactionFilter, FilterDecision};
use super::range_del::RangeDelAggregator;
use super::snapshots::Snapshots;
use crate::compaction::DeeperLevels;
use crate::error::{CorruptKeySnafu, InputSnafu, Result};

/// What a [`CompactionIterator`] saw and dropped. Every record read is
/// either output or counted in exactly one `dropped_*` field.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IterStats {
    /// Point records read from the input.
    pub records_in: u64,
    /// Point records output.
    pub records_out: u64,
    /// Point tombstones among the records read.
    pub input_deletions: u64,
    /// Versions hidden by a newer version of the same key in the same
    /// snapshot stripe.
    pub dropped_hidden: u64,
    /// Point tombstones dropped because nothing older can exist (or, at the
    /// bottommost level, nothing older remains).
    pub dropped_obsolete: u64,
    /// Versions deleted by a range tombstone of their stripe.
    pub dropped_range_del: u64,
    /// Records removed by the compaction filter's skip-until decision.
    pub dropped_filter: u64,
    /// Values the filter turned into tombstones.
    pub filter_removed: u64,
    /// Values the filter changed.
    pub filter_changed: u64,
}

impl IterStats {
    /// All dropped records.
    pub fn dropped(&self) -> u64 {
        self.dropped_hidden + self.dropped_obsolete + self.dropped_range_del + self.dropped_filter
    }

    /// Adds `other` into `self`.
    pub fn add(&mut self, other: &IterStats) {
        self.records_in += other.records_in;
        self.records_out += other.records_out;
        self.input_deletions += other.input_deletions;
        self.dropped_hidden += other.dropped_hidden;
        self.dropped_obsolete += other.dropped_obsolete;
        self.dropped_range_del += other.dropped_range_del;
        self.dropped_filter += other.dropped_filter;
        self.filter_removed += other.filter_removed;
        self.filter_changed += other.filter_changed;
    }
}

/// How a [`CompactionIterator`] decides.
pub struct CompactionIterOptions<'a> {
    /// Live snapshots when the job started.
    pub snapshots: Snapshots,
    /// The range tombstones of all inputs.
    pub range_dels: Option<&'a RangeDelAggregator>,
    /// What exists below the output level (bottommost, known files, or
    /// unknown for a flush).
    pub deeper: DeeperLevels,
    /// The compaction filter, if any.
    pub filter: Option<&'a dyn CompactionFilter>,
    /// The level passed to the filter.
    pub filter_level: usize,
    /// Stop before this user key (exclusive; a subcompaction's end).
    pub upper_bound: Option<Vec<u8>>,
    /// Names the input in corruption errors.
    pub origin: String,
}

impl<'a> CompactionIterOptions<'a> {
    /// Options for a flush: no knowledge of deeper levels, not bottommost,
    /// no filter.
    pub fn for_flush(snapshots: Snapshots, range_dels: Option<&'a RangeDelAggregator>) -> Self {
        CompactionIterOptions {
            snapshots,
            range_dels,
            deeper: DeeperLevels::unknown(),
            filter: None,
            filter_level: 0,
            upper_bound: None,
            origin: "flush input".to_owned(),
        }
    }
}

/// Iterates the surviving versions of a merged stream of internal keys,
/// applying RocksDB's rules in this order to each record:
///
/// 1. **Compaction filter**, on the newest version of each user key when it
///    is a `Put`: keep, remove (becomes a tombstone at the same seqno),
///    change the value, or remove and skip input up to a key.
/// 2. **Hidden** (rule A): a version whose snapshot stripe equals the
///    stripe of the newer version just seen is dropped.
/// 3. **Obsolete delete**: a tombstone visible to the earliest snapshot
///    whose key cannot exist below the output level is dropped (older
///    versions of the key then fall to rule 2).
/// 4. **Bottommost delete**: at the bottommost level, a tombstone newer
///    than the earliest snapshot swallows the older versions of its stripe
///    and is output only if versions in older stripes remain.
/// 5. **Range tombstones** drop a version covered by a newer tombstone of
///    the same stripe.
/// 6. Otherwise the version is output; at the bottommost level a version
///    visible to the earliest snapshot gets sequence number 0.
///
/// Range tombstones themselves are not in the stream: the caller writes
/// them per output file with [`RangeDelAggregator::tombstones_in`].
///
/// ```
/// use lithify_base::{InternalIterator, InternalKey, InternalKeyComparator, ValueKind, VecIterator};
/// use lithify_compaction_leveled::iter::{CompactionIterOptions, CompactionIterator, Snapshots};
///
/// let cmp = InternalKeyComparator::bytewise();
/// let entries = vec![
///     (InternalKey::new(b"a", 9, ValueKind::Put).into_encoded(), b"new".to_vec()),
///     (InternalKey::new(b"a", 3, ValueKind::Put).into_encoded(), b"old".to_vec()),
/// ];
/// let input = VecIterator::new(cmp.clone(), entries);
/// // A snapshot at 5 still sees a#3: both versions survive.
/// let mut it = CompactionIterator::new(input, cmp.clone(), CompactionIterOptions::for_flush(Snapshots::new(vec![5]), None));
/// it.seek_to_first().unwrap();
/// let mut out = Vec::new();
/// while it.valid() {
///     out.push(InternalKey::from_encoded(it.key().to_vec()).unwrap().to_string());
///     it.next().unwrap();
/// }
/// assert_eq!(out, ["a#9,SET", "a#3,SET"]);
/// ```
pub struct CompactionIterator<'a, I> {
    input: I,
    cmp: InternalKeyComparator,
    opts: CompactionIterOptions<'a>,
    earliest_snapshot: SeqNo,
    bottommost: bool,
    // Output.
    key: Vec<u8>,
    value: Bytes,
    kind: ValueKind,
    seqno: SeqNo,
    valid: bool,
    // Per user key.
    current_user_key: Vec<u8>,
    has_current_user_key: bool,
    current_user_key_sequence: SeqNo,
    current_user_key_snapshot: SeqNo,
    stats: IterStats,
}

impl<'a, I: InternalIterator> CompactionIterator<'a, I> {
    /// An iterator over `input`, which must yield internal keys in
    /// `cmp` order.
    pub fn new(input: I, cmp: InternalKeyComparator, opts: CompactionIterOptions<'a>) -> Self {
        let earliest_snapshot = opts.snapshots.earliest();
        let bottommost = opts.deeper.is_bottommost();
        CompactionIterator {
            input,
            cmp,
            opts,
            earliest_snapshot,
            bottommost,
            key: Vec::new(),
            value: Bytes::new(),
            kind: ValueKind::Put,
            seqno: 0,
            valid: false,
            current_user_key: Vec::new(),
            has_current_user_key: false,
            current_user_key_sequence: MAX_SEQNO,
            current_user_key_snapshot: 0,
            stats: IterStats::default(),
        }
    }

    /// Positions at the first surviving version.
    pub fn seek_to_first(&mut self) -> Result<()> {
        self.input.first().context(InputSnafu)?;
        self.reset_key_state();
        self.next_from_input()
    }

    /// Positions at the first surviving version with user key
    /// `>= user_key` (a subcompaction's start).
    pub fn seek(&mut self, user_key: &[u8]) -> Result<()> {
        let target = InternalKey::seek(user_key, MAX_SEQNO);
        self.input.seek_ge(target.encoded()).context(InputSnafu)?;
        self.reset_key_state();
        self.next_from_input()
    }

    /// Moves to the next surviving version (a cursor step that can fail,
    /// like [`InternalIterator::next`], not `std::iter::Iterator::next`).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<()> {
        self.next_from_input()
    }

    /// Whether positioned on a version.
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current internal key (its seqno may have been zeroed).
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The current user key.
    pub fn user_key(&self) -> &[u8] {
        &self.key[..self.key.len() - lithify_base::key::TRAILER_LEN]
    }

    /// The current value.
    pub fn value(&self) -> &Bytes {
        &self.value
    }

    /// The current kind.
    pub fn kind(&self) -> ValueKind {
        self.kind
    }

    /// The current sequence number.
    pub fn seqno(&self) -> SeqNo {
        self.seqno
    }

    /// What was read and dropped so far.
    pub fn stats(&self) -> IterStats {
        self.stats
    }

    fn reset_key_state(&mut self) {
        self.has_current_user_key = false;
        self.valid = false;
    }

    fn past_upper_bound(&self, user_key: &[u8]) -> bool {
        self.opts
            .upper_bound
            .as_deref()
            .is_some_and(|u| self.cmp.compare_user(user_key, u).is_ge())
    }

    /// The user-key length, seqno and kind of the input's current key.
    fn parse_current(&self) -> Result<(usize, SeqNo, ValueKind)> {
        let key = self.input.key();
        match ParsedInternalKey::parse(key) {
            Ok(p) => Ok((p.user_key.len(), p.seqno, p.kind)),
            Err(_) => CorruptKeySnafu {
                key: escape(key),
                origin: self.opts.origin.clone(),
            }
            .fail(),
        }
    }

    fn advance(&mut self) -> Result<()> {
        self.input.next().context(InputSnafu)
    }

    /// RocksDB's `NextFromInput` (without merge operands and single
    /// deletes).
    fn next_from_input(&mut self) -> Result<()> {
        self.valid = false;
        while self.input.valid() {
            let (n, mut seqno, mut kind) = self.parse_current()?;
            if self.past_upper_bound(&self.input.key()[..n]) {
                return Ok(());
            }
            self.stats.records_in += 1;
            if kind == ValueKind::Delete {
                self.stats.input_deletions += 1;
            }
            let mut value = self.input.value_bytes();
            let mut skip_until: Option<Vec<u8>> = None;

            let new_user_key = !self.has_current_user_key
                || !self
                    .cmp
                    .compare_user(&self.input.key()[..n], &self.current_user_key)
                    .is_eq();
            if new_user_key {
                self.current_user_key.clear();
                self.current_user_key
                    .extend_from_slice(&self.input.key()[..n]);
                self.has_current_user_key = true;
                self.current_user_key_sequence = MAX_SEQNO;
                self.current_user_key_snapshot = 0;
                if let Some(filter) = self.opts.filter
                    && kind == ValueKind::Put
                {
                    match filter.filter(self.opts.filter_level, &self.current_user_key, &value) {
                        FilterDecision::Keep => {}
                        FilterDecision::Remove => {
                            kind = ValueKind::Delete;
                            value = Bytes::new();
                            self.stats.filter_removed += 1;
                        }
                        FilterDecision::ChangeValue(v) => {
                            value = Bytes::from(v);
                            self.stats.filter_changed += 1;
                        }
                        FilterDecision::RemoveAndSkipUntil(until) => {
                            if self
                                .cmp
                                .compare_user(&until, &self.current_user_key)
                                .is_gt()
                            {
                                skip_until = Some(until);
                            }
                        }
                    }
                }
            }

            let last_sequence = self.current_user_key_sequence;
            self.current_user_key_sequence = seqno;
            let last_snapshot = self.current_user_key_snapshot;
            let (visible, prev_snapshot) = self.opts.snapshots.stripe(seqno);
            self.current_user_key_snapshot = visible;

            if let Some(until) = skip_until {
                // Drop this record and everything before `until`, counting
                // each (so the record-count check holds).
                self.stats.dropped_filter += 1;
                self.advance()?;
                while self.input.valid() {
                    let (n2, _, _) = self.parse_current()?;
                    let uk = &self.input.key()[..n2];
                    if self.past_upper_bound(uk) || self.cmp.compare_user(uk, &until).is_ge() {
                        break;
                    }
                    self.stats.records_in += 1;
                    self.stats.dropped_filter += 1;
                    self.advance()?;
                }
                self.has_current_user_key = false;
                continue;
            }

            if last_sequence != MAX_SEQNO && last_snapshot <= visible {
                // Rule A: hidden by a newer version in the same stripe.
                self.stats.dropped_hidden += 1;
                self.advance()?;
                continue;
            }

            if kind == ValueKind::Delete
                && seqno <= self.earliest_snapshot
                && self
                    .opts
                    .deeper
                    .key_not_exists_beyond(&self.cmp, &self.current_user_key)
            {
                self.stats.dropped_obsolete += 1;
                self.advance()?;
                continue;
            }

            if kind == ValueKind::Delete && self.bottommost {
                // Swallow the older versions of this stripe; keep the
                // tombstone only if older stripes still hold versions.
                self.advance()?;
                let mut more = false;
                while self.input.valid() {
                    let (n2, s, _) = self.parse_current()?;
                    let uk = &self.input.key()[..n2];
                    if self.past_upper_bound(uk)
                        || !self.cmp.compare_user(uk, &self.current_user_key).is_eq()
                    {
                        break;
                    }
                    if prev_snapshot != 0 && s <= prev_snapshot {
                        more = true;
                        break;
                    }
                    self.stats.records_in += 1;
                    self.stats.dropped_hidden += 1;
                    self.advance()?;
                }
                if more {
                    self.emit(seqno, kind, value);
                    return Ok(());
                }
                self.stats.dropped_obsolete += 1;
                continue;
            }

            if self
                .opts
                .range_dels
                .is_some_and(|agg| agg.should_delete(&self.current_user_key, seqno))
            {
                self.stats.dropped_range_del += 1;
                self.advance()?;
                continue;
            }

            // Output; at the bottom a version every snapshot sees loses its
            // seqno (it compresses better and nothing needs it).
            if self.bottommost && seqno <= self.earliest_snapshot && kind != ValueKind::Delete {
                seqno = 0;
            }
            self.advance()?;
            self.emit(seqno, kind, value);
            return Ok(());
        }
        Ok(())
    }

    fn emit(&mut self, seqno: SeqNo, kind: ValueKind, value: Bytes) {
        self.key.clear();
        append_internal_key(&mut self.key, &self.current_user_key, seqno, kind as u8);
        self.value = value;
        self.kind = kind;
        self.seqno = seqno;
        self.valid = true;
        self.stats.records_out += 1;
    }
}
