//! The compaction iterator: which versions survive a compaction or flush
//! (RocksDB's `CompactionIterator`, `db/compaction/compaction_iterator.cc`).

use bytes::Bytes;
use lithify_base::key::{append_internal_key, escape};
use std::collections::VecDeque;

use lithify_base::{
    InternalIterator, InternalKey, InternalKeyComparator, MAX_SEQNO, MergeFailureScope,
    MergeOperator, ParsedInternalKey, SeqNo, ValueKind,
};
use snafu::ResultExt as _;

use super::blob::BlobFetcher;
use super::filter::{CompactionFilter, FilterDecision};
use super::range_del::RangeDelAggregator;
use super::snapshots::Snapshots;
use crate::compaction::DeeperLevels;
use crate::error::{
    BlobReadSnafu, CorruptKeySnafu, InputSnafu, MergeFailedSnafu, Result, SingleDeleteContractSnafu,
};

/// What ended a run of merge operands.
enum RunEnd {
    /// A value — a put or a blob index: its kind and stored value, `None`
    /// if a range tombstone covers it — or a tombstone (`None`), consumed
    /// by the merge, with its sequence number.
    Base(SeqNo, Option<(ValueKind, Bytes)>),
    /// The next version is in an older snapshot stripe, or every operand
    /// so far was dropped and the next version is not an operand.
    StripeEnd,
    /// No older version of the key in the input.
    KeyEnd,
}

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
    /// Values and merge operands the filter changed.
    pub filter_changed: u64,
    /// Merge operands, and the values or tombstones under them, folded
    /// into a merge result (a merge of `n` records outputs one and counts
    /// `n - 1` here).
    pub dropped_merged: u64,
    /// `SingleDelete`s and the versions they cancelled.
    pub dropped_single_delete: u64,
    /// Full merges output as values.
    pub full_merges: u64,
    /// Runs of operands combined into one by the operator's partial merge.
    pub partial_merges: u64,
    /// Cases RocksDB leaves undefined: a `SingleDelete` meeting another
    /// `SingleDelete`, a `Delete` (when not enforced) or a merge operand in
    /// its stripe, or a key with two puts under one `SingleDelete`
    /// (RocksDB's `num_single_del_mismatch`, widened to the last two).
    pub single_delete_mismatch: u64,
    /// Keys whose full merge failed under
    /// [`MergeFailureScope::MustMerge`](lithify_base::MergeFailureScope):
    /// their operands and older value were output unmerged.
    pub merge_failures_kept: u64,
}

impl IterStats {
    /// All dropped records.
    pub fn dropped(&self) -> u64 {
        self.dropped_hidden
            + self.dropped_obsolete
            + self.dropped_range_del
            + self.dropped_filter
            + self.dropped_merged
            + self.dropped_single_delete
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
        self.dropped_merged += other.dropped_merged;
        self.dropped_single_delete += other.dropped_single_delete;
        self.full_merges += other.full_merges;
        self.partial_merges += other.partial_merges;
        self.single_delete_mismatch += other.single_delete_mismatch;
        self.merge_failures_kept += other.merge_failures_kept;
    }
}

/// How a [`CompactionIterator`] decides. Start from
/// [`for_flush`](Self::for_flush) and set the rest with the chained
/// methods.
#[non_exhaustive]
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
    /// Resolves merge operands; without one, operands pass through
    /// unchanged (and so do the values under them).
    pub merge_operator: Option<&'a dyn MergeOperator>,
    /// Fail on a `SingleDelete` meeting a `Delete` in its stripe (RocksDB's
    /// `enforce_single_del_contracts`, on by default); otherwise count it
    /// in [`IterStats::single_delete_mismatch`] and drop the single delete.
    pub enforce_single_delete_contracts: bool,
    /// Reads separated values (blob indexes) for the filter and for
    /// merges; without one, such a read is an error.
    pub blobs: Option<&'a dyn BlobFetcher>,
}

lithify_base::options_builder!(CompactionIterOptions<'a> {
    snapshots: Snapshots,
    range_dels: Option<&'a RangeDelAggregator>,
    deeper: DeeperLevels,
    filter: Option<&'a dyn CompactionFilter>,
    filter_level: usize,
    upper_bound: Option<Vec<u8>>,
    origin: String,
    merge_operator: Option<&'a dyn MergeOperator>,
    enforce_single_delete_contracts: bool,
    blobs: Option<&'a dyn BlobFetcher>,
});

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
            merge_operator: None,
            enforce_single_delete_contracts: true,
            blobs: None,
        }
    }
}

/// Iterates the surviving versions of a merged stream of internal keys,
/// applying RocksDB's rules in this order to each record:
///
/// 1. **Compaction filter**, on the newest version of each user key when it
///    is a value (a `Put`, or a `BlobIndex`, whose value is read from its
///    blob file for the filter): keep, remove (becomes a tombstone at the same seqno),
///    change the value, or remove and skip input up to a key.
/// 2. **Hidden** (rule A): a version whose snapshot stripe equals the
///    stripe of the newer version just seen is dropped.
/// 3. **Obsolete delete**: a tombstone visible to the earliest snapshot
///    whose key cannot exist below the output level is dropped (older
///    versions of the key then fall to rule 2).
/// 4. **Bottommost delete**: at the bottommost level, a tombstone newer
///    than the earliest snapshot swallows the older versions of its stripe
///    and is output only if versions in older stripes remain.
/// 5. **Single delete**: a `SingleDelete` and the version right below it in
///    its stripe both vanish (the version should be its one `Put`); with no
///    version below in its stripe it is output, or dropped when nothing
///    older can exist.
/// 6. **Merge** (RocksDB's `MergeHelper::MergeUntil`): the operands of a
///    stripe, newest first, each passed to the filter and dropped if a
///    range tombstone covers it, are collected until a `Put` (merged with
///    its value), a tombstone (merged with nothing), the end of the stripe
///    or the end of the key. At the bottommost level the end of the key
///    means the start of its history: the operands merge with nothing.
///    Otherwise they stay operands, combined into one by the operator's
///    partial merge when it can.
/// 7. **Range tombstones** drop a version covered by a newer tombstone of
///    the same stripe.
/// 8. Otherwise the version is output; at the bottommost level a value
///    visible to the earliest snapshot gets sequence number 0.
///
/// Range tombstones themselves are not in the stream: the caller writes
/// them per output file with [`RangeDelAggregator::tombstones_in`].
///
/// ```
/// use lithify_base::{InternalIterator, InternalKey, InternalKeyComparator, ValueKind, VecIterator};
/// use lithify_compaction::iter::{CompactionIterOptions, CompactionIterator, Snapshots};
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
    /// The current value, copied out of the input before it moves on (a
    /// buffer kept across entries: no allocation per entry).
    value: Vec<u8>,
    kind: ValueKind,
    seqno: SeqNo,
    valid: bool,
    // Per user key.
    current_user_key: Vec<u8>,
    has_current_user_key: bool,
    current_user_key_sequence: SeqNo,
    current_user_key_snapshot: SeqNo,
    /// Outputs of a merge still to be emitted, newest first.
    pending: VecDeque<(SeqNo, ValueKind, Bytes)>,
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
            value: Vec::new(),
            kind: ValueKind::Put,
            seqno: 0,
            valid: false,
            current_user_key: Vec::new(),
            has_current_user_key: false,
            current_user_key_sequence: MAX_SEQNO,
            current_user_key_snapshot: 0,
            pending: VecDeque::new(),
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
    pub fn value(&self) -> &[u8] {
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
        self.pending.clear();
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

    /// RocksDB's `NextFromInput`.
    fn next_from_input(&mut self) -> Result<()> {
        self.valid = false;
        if let Some((seqno, kind, value)) = self.pending.pop_front() {
            self.emit(seqno, kind, &value);
            return Ok(());
        }
        while self.input.valid() {
            let (n, mut seqno, mut kind) = self.parse_current()?;
            if self.past_upper_bound(&self.input.key()[..n]) {
                return Ok(());
            }
            self.stats.records_in += 1;
            if kind.is_point_tombstone() {
                self.stats.input_deletions += 1;
            }
            // The version's value when a filter replaced it; otherwise it
            // is the input's, read only where it is needed (most versions
            // a compaction drops are never looked at).
            let mut replaced: Option<Bytes> = None;
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
                    && kind.is_value()
                {
                    let resolved = if kind == ValueKind::BlobIndex {
                        Some(self.resolve_blob(self.input.value())?)
                    } else {
                        None
                    };
                    let shown = resolved.as_deref().unwrap_or(self.input.value());
                    match filter.filter(self.opts.filter_level, &self.current_user_key, shown) {
                        FilterDecision::Keep => {}
                        FilterDecision::Remove => {
                            kind = ValueKind::Delete;
                            replaced = Some(Bytes::new());
                            self.stats.filter_removed += 1;
                        }
                        FilterDecision::ChangeValue(v) => {
                            kind = ValueKind::Put;
                            replaced = Some(Bytes::from(v));
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
                self.stats.dropped_filter += 1;
                self.advance()?;
                self.skip_until(&until)?;
                continue;
            }

            if last_sequence != MAX_SEQNO && last_snapshot <= visible {
                if kind == ValueKind::SingleDelete {
                    if self.hidden_single_delete(seqno, prev_snapshot)? {
                        return Ok(());
                    }
                    continue;
                }
                // Rule A: hidden by a newer version in the same stripe.
                self.stats.dropped_hidden += 1;
                self.advance()?;
                continue;
            }

            if kind == ValueKind::SingleDelete {
                if self.single_delete(seqno, prev_snapshot)? {
                    return Ok(());
                }
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
                let value = replaced.unwrap_or_else(|| self.input.value_bytes());
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
                    self.emit(seqno, kind, &value);
                    return Ok(());
                }
                self.stats.dropped_obsolete += 1;
                continue;
            }

            if kind == ValueKind::Merge
                && let Some(op) = self.opts.merge_operator
            {
                let value = replaced.unwrap_or_else(|| self.input.value_bytes());
                if self.merge_until(op, seqno, value, prev_snapshot)? {
                    return Ok(());
                }
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

            if kind == ValueKind::Merge {
                // No operator: the operand passes through and hides nothing
                // (the versions below it are what it applies to).
                self.current_user_key_sequence = MAX_SEQNO;
            }
            // Output; at the bottom a value every snapshot sees loses its
            // seqno (it compresses better and nothing needs it).
            if self.bottommost && seqno <= self.earliest_snapshot && kind.is_value() {
                seqno = 0;
            }
            // Copied out before the input moves on.
            self.value.clear();
            match &replaced {
                Some(v) => self.value.extend_from_slice(v),
                None => self.value.extend_from_slice(self.input.value()),
            }
            self.advance()?;
            self.emit_key(seqno, kind);
            return Ok(());
        }
        Ok(())
    }

    /// Drops input records before user key `until` (a filter's
    /// skip-until), counting each, and forgets the current key.
    fn skip_until(&mut self, until: &[u8]) -> Result<()> {
        while self.input.valid() {
            let (n, _, _) = self.parse_current()?;
            let uk = &self.input.key()[..n];
            if self.past_upper_bound(uk) || self.cmp.compare_user(uk, until).is_ge() {
                break;
            }
            self.stats.records_in += 1;
            self.stats.dropped_filter += 1;
            self.advance()?;
        }
        self.has_current_user_key = false;
        Ok(())
    }

    /// The input's current record, if it is a version of the current user
    /// key: its seqno and kind.
    fn peek_same_key(&self) -> Result<Option<(SeqNo, ValueKind)>> {
        if !self.input.valid() {
            return Ok(None);
        }
        let (n, seqno, kind) = self.parse_current()?;
        let uk = &self.input.key()[..n];
        if self.past_upper_bound(uk) || !self.cmp.compare_user(uk, &self.current_user_key).is_eq() {
            return Ok(None);
        }
        Ok(Some((seqno, kind)))
    }

    /// A `SingleDelete` at `seqno`, the input still on it (RocksDB's
    /// single-delete branch of `NextFromInput`, without transactions: every
    /// matching put may go). Returns whether it was output.
    fn single_delete(&mut self, seqno: SeqNo, prev_snapshot: SeqNo) -> Result<bool> {
        self.advance()?;
        let Some((next_seq, next_kind)) = self.peek_same_key()? else {
            // Nothing older of this key in the input. Forget the key so
            // the next record is judged afresh.
            self.has_current_user_key = false;
            if seqno <= self.earliest_snapshot
                && self
                    .opts
                    .deeper
                    .key_not_exists_beyond(&self.cmp, &self.current_user_key)
            {
                self.stats.dropped_obsolete += 1;
                return Ok(false);
            }
            self.emit(seqno, ValueKind::SingleDelete, &[]);
            return Ok(true);
        };
        if prev_snapshot != 0 && next_seq <= prev_snapshot {
            // The next version is in an older stripe: a snapshot sees it,
            // so the single delete stays to hide it from newer readers.
            self.emit(seqno, ValueKind::SingleDelete, &[]);
            return Ok(true);
        }
        match next_kind {
            ValueKind::SingleDelete => {
                // Two in a row: drop the first, the second is then hidden
                // by rule A like any older version of the stripe.
                self.stats.dropped_obsolete += 1;
                self.stats.single_delete_mismatch += 1;
            }
            ValueKind::Delete => {
                if self.opts.enforce_single_delete_contracts {
                    return SingleDeleteContractSnafu {
                        key: escape(&self.current_user_key),
                        seqno,
                        origin: self.opts.origin.clone(),
                    }
                    .fail();
                }
                tracing::warn!(
                    target: "lithify::compaction",
                    key = %escape(&self.current_user_key),
                    seqno,
                    "a single delete meets a delete of the same key; dropping the single delete"
                );
                self.stats.dropped_obsolete += 1;
                self.stats.single_delete_mismatch += 1;
            }
            _ => {
                // The matching put (or, undefined, a merge operand): both go.
                if next_kind == ValueKind::Merge {
                    self.stats.single_delete_mismatch += 1;
                }
                self.stats.records_in += 1;
                self.stats.dropped_single_delete += 2;
                self.advance()?;
                // A second put in the stripe means the key was overwritten
                // before its single delete: undefined, it is hidden below.
                if let Some((s, k)) = self.peek_same_key()?
                    && (prev_snapshot == 0 || s > prev_snapshot)
                    && k.is_value()
                {
                    self.stats.single_delete_mismatch += 1;
                }
            }
        }
        Ok(false)
    }

    /// A `SingleDelete` at `seqno` hidden by a newer version of its key in
    /// the same stripe (the input still on it). Dropping it as rule A drops
    /// any hidden version would leave the put it was written to cancel
    /// alive below (Put, SingleDelete, Put, SingleDelete, with the first
    /// put in a deeper file: the second pair cancels, and the first put
    /// would come back). So it goes only with its put, when that put is
    /// the next version in the same stripe, or when nothing of the key
    /// exists below the output; otherwise it is kept. Returns whether it
    /// was output.
    fn hidden_single_delete(&mut self, seqno: SeqNo, prev_snapshot: SeqNo) -> Result<bool> {
        self.advance()?;
        match self.peek_same_key()? {
            Some((next_seq, next_kind)) if prev_snapshot == 0 || next_seq > prev_snapshot => {
                if next_kind.is_value() {
                    // Its put, hidden too: both go.
                    self.stats.records_in += 1;
                    self.stats.dropped_hidden += 2;
                    self.advance()?;
                } else {
                    // Not a put it could cancel (undefined use): hidden.
                    self.stats.dropped_hidden += 1;
                }
                Ok(false)
            }
            next => {
                // Nothing older of the key in this input, or only in an
                // older stripe: its put may be below.
                if next.is_none() {
                    self.has_current_user_key = false;
                }
                if seqno <= self.earliest_snapshot
                    && self
                        .opts
                        .deeper
                        .key_not_exists_beyond(&self.cmp, &self.current_user_key)
                {
                    self.stats.dropped_hidden += 1;
                    return Ok(false);
                }
                self.emit(seqno, ValueKind::SingleDelete, &[]);
                Ok(true)
            }
        }
    }

    /// RocksDB's `MergeHelper::MergeUntil`: the input is on the operand
    /// `first_seq` (counted, not yet advanced past). Returns whether
    /// something was output.
    fn merge_until(
        &mut self,
        op: &dyn MergeOperator,
        first_seq: SeqNo,
        first_value: Bytes,
        prev_snapshot: SeqNo,
    ) -> Result<bool> {
        // Kept operands with their seqnos, newest first.
        let mut operands: Vec<(SeqNo, Bytes)> = Vec::new();
        let latest_snapshot = self.opts.snapshots.latest();
        let (mut seqno, mut value) = (first_seq, first_value);
        let end = loop {
            // The input is on operand `seqno`, already counted.
            let mut decision = match self.opts.filter {
                Some(f) if seqno > latest_snapshot => {
                    f.filter_merge_operand(self.opts.filter_level, &self.current_user_key, &value)
                }
                _ => FilterDecision::Keep,
            };
            if let FilterDecision::RemoveAndSkipUntil(until) = &decision
                && self.cmp.compare_user(until, &self.current_user_key).is_le()
            {
                decision = FilterDecision::Keep;
            }
            let covered = self
                .opts
                .range_dels
                .is_some_and(|agg| agg.should_delete(&self.current_user_key, seqno));
            match decision {
                FilterDecision::RemoveAndSkipUntil(until) => {
                    // The key goes altogether: its operands so far too.
                    self.stats.dropped_filter += 1 + operands.len() as u64;
                    self.advance()?;
                    self.skip_until(&until)?;
                    return Ok(false);
                }
                _ if covered => self.stats.dropped_range_del += 1,
                FilterDecision::Keep => operands.push((seqno, value)),
                FilterDecision::ChangeValue(v) => {
                    self.stats.filter_changed += 1;
                    operands.push((seqno, Bytes::from(v)));
                }
                FilterDecision::Remove => self.stats.dropped_filter += 1,
            }
            self.advance()?;
            let Some((next_seq, next_kind)) = self.peek_same_key()? else {
                break RunEnd::KeyEnd;
            };
            if prev_snapshot != 0 && next_seq <= prev_snapshot {
                // A snapshot sees the older versions: stop here.
                break RunEnd::StripeEnd;
            }
            if next_kind != ValueKind::Merge {
                if operands.is_empty() {
                    break RunEnd::StripeEnd;
                }
                self.stats.records_in += 1;
                if next_kind.is_point_tombstone() {
                    self.stats.input_deletions += 1;
                }
                let live_put = next_kind.is_value()
                    && !self
                        .opts
                        .range_dels
                        .is_some_and(|agg| agg.should_delete(&self.current_user_key, next_seq));
                let base = live_put.then(|| (next_kind, self.input.value_bytes()));
                self.advance()?;
                break RunEnd::Base(next_seq, base);
            }
            self.stats.records_in += 1;
            seqno = next_seq;
            value = self.input.value_bytes();
        };
        if operands.is_empty() {
            // Every operand was dropped: what follows is judged on its own,
            // not hidden by them.
            self.has_current_user_key = false;
            return Ok(false);
        }
        let n = operands.len() as u64;
        let existing = match &end {
            RunEnd::Base(_, Some((ValueKind::BlobIndex, index))) => {
                Some(Some(self.resolve_blob(index)?))
            }
            RunEnd::Base(_, base) => Some(base.as_ref().map(|(_, v)| v.clone())),
            // At the bottom, the end of the key is the start of its history.
            RunEnd::KeyEnd if self.bottommost => Some(None),
            _ => None,
        };
        if let Some(existing) = existing {
            let merged = match self.full_merge(op, existing.as_deref(), &operands) {
                Ok(merged) => merged,
                Err(e) if op.failure_scope() == MergeFailureScope::MustMerge => {
                    tracing::warn!(
                        target: "lithify::compaction",
                        key = %escape(&self.current_user_key),
                        operator = op.name(),
                        input = %self.opts.origin,
                        "{e}: its operands are kept unmerged (failure scope MustMerge)"
                    );
                    self.stats.merge_failures_kept += 1;
                    self.emit_unmerged(operands, end);
                    return Ok(true);
                }
                Err(e) => return Err(e),
            };
            let consumed = u64::from(matches!(end, RunEnd::Base(..)));
            self.stats.full_merges += 1;
            self.stats.dropped_merged += n + consumed - 1;
            let out_seq = if self.bottommost && first_seq <= self.earliest_snapshot {
                0
            } else {
                first_seq
            };
            self.emit(out_seq, ValueKind::Put, &merged);
            return Ok(true);
        }
        if operands.len() >= 2 {
            let oldest_first: Vec<&[u8]> = operands.iter().rev().map(|(_, b)| &b[..]).collect();
            if let Some(one) = op.partial_merge_multi(&self.current_user_key, &oldest_first) {
                self.stats.partial_merges += 1;
                self.stats.dropped_merged += n - 1;
                self.emit(operands[0].0, ValueKind::Merge, &one);
                return Ok(true);
            }
        }
        // Each operand keeps its own seqno.
        let mut it = operands.into_iter();
        if let Some((s, v)) = it.next() {
            self.pending.clear();
            self.pending
                .extend(it.map(|(s, v)| (s, ValueKind::Merge, v)));
            self.emit(s, ValueKind::Merge, &v);
        }
        Ok(true)
    }

    /// Outputs a run whose merge failed as it was: each operand with its
    /// own seqno, then what it applied to — the put, or, for a tombstone
    /// or a put a range tombstone covers, a `Delete` at its seqno so that
    /// nothing older shows through. At the bottom with nothing below, the
    /// operands alone.
    fn emit_unmerged(&mut self, operands: Vec<(SeqNo, Bytes)>, end: RunEnd) {
        let mut it = operands.into_iter();
        let Some((s, v)) = it.next() else {
            return;
        };
        self.pending.clear();
        self.pending
            .extend(it.map(|(s, v)| (s, ValueKind::Merge, v)));
        if let RunEnd::Base(seq, base) = end {
            self.pending.push_back(match base {
                Some((kind, value)) => (seq, kind, value),
                None => (seq, ValueKind::Delete, Bytes::new()),
            });
        }
        self.emit(s, ValueKind::Merge, &v);
    }

    /// The value the blob index `index` of the current user key points at.
    fn resolve_blob(&self, index: &[u8]) -> Result<Bytes> {
        let key = &self.current_user_key;
        let context = || BlobReadSnafu {
            key: escape(key),
            origin: self.opts.origin.clone(),
        };
        match self.opts.blobs {
            Some(blobs) => blobs.fetch(key, index).map_err(Box::new).context(context()),
            None => Err(Box::new(lithify_base::Error::invalid_argument(
                "the compaction was given no blob reader",
            )))
            .context(context()),
        }
    }

    /// Runs the operator's full merge of `operands` (newest first) onto
    /// `existing`.
    fn full_merge(
        &self,
        op: &dyn MergeOperator,
        existing: Option<&[u8]>,
        operands: &[(SeqNo, Bytes)],
    ) -> Result<Vec<u8>> {
        let oldest_first: Vec<&[u8]> = operands.iter().rev().map(|(_, b)| &b[..]).collect();
        match op.full_merge(&self.current_user_key, existing, &oldest_first) {
            Some(v) => Ok(v),
            None => MergeFailedSnafu {
                operator: op.name().to_owned(),
                key: escape(&self.current_user_key),
                origin: self.opts.origin.clone(),
            }
            .fail(),
        }
    }

    fn emit(&mut self, seqno: SeqNo, kind: ValueKind, value: &[u8]) {
        self.value.clear();
        self.value.extend_from_slice(value);
        self.emit_key(seqno, kind);
    }

    /// Outputs `current_user_key#seqno,kind` with the value already in
    /// `self.value`.
    fn emit_key(&mut self, seqno: SeqNo, kind: ValueKind) {
        self.key.clear();
        append_internal_key(&mut self.key, &self.current_user_key, seqno, kind as u8);
        self.kind = kind;
        self.seqno = seqno;
        self.valid = true;
        self.stats.records_out += 1;
    }
}
