//! Compaction filters: user code that decides the fate of values during
//! compaction (RocksDB's `CompactionFilter`).

/// What a [`CompactionFilter`] decides for one value.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FilterDecision {
    /// Keep the value.
    Keep,
    /// Remove it: the version becomes a point tombstone at the same
    /// sequence number (which the usual rules may then drop).
    Remove,
    /// Replace the value.
    ChangeValue(Vec<u8>),
    /// Remove it and skip every input record up to (not including) user
    /// key `until`, without looking at them. A key not after the current
    /// one means [`Keep`](FilterDecision::Keep).
    RemoveAndSkipUntil(Vec<u8>),
}

/// A compaction filter, called on the newest version of each user key
/// whose value is a `Put`, whatever the snapshots (RocksDB ignores
/// snapshots for filters: a snapshot may see the filtered result).
///
/// It runs on compaction threads, possibly several at once (one per
/// subcompaction), hence `Send + Sync`.
///
/// ```
/// use lithify_compaction::iter::{CompactionFilter, FilterDecision};
///
/// struct DropExpired;
/// impl CompactionFilter for DropExpired {
///     fn name(&self) -> &str { "drop-expired" }
///     fn filter(&self, _level: usize, key: &[u8], _value: &[u8]) -> FilterDecision {
///         if key.starts_with(b"tmp/") { FilterDecision::Remove } else { FilterDecision::Keep }
///     }
/// }
/// assert_eq!(DropExpired.filter(1, b"tmp/x", b""), FilterDecision::Remove);
/// ```
pub trait CompactionFilter: Send + Sync {
    /// The filter's name (for logs).
    fn name(&self) -> &str;

    /// The decision for `user_key` holding `value`, in a compaction whose
    /// inputs start at `level`.
    fn filter(&self, level: usize, user_key: &[u8], value: &[u8]) -> FilterDecision;

    /// The decision for one merge operand of `user_key`, before the merge
    /// operator sees it (RocksDB's `FilterMergeOperand`): keep it, drop it
    /// ([`Remove`](FilterDecision::Remove)), replace it
    /// ([`ChangeValue`](FilterDecision::ChangeValue)), or drop the key's
    /// operands and skip input up to a key
    /// ([`RemoveAndSkipUntil`](FilterDecision::RemoveAndSkipUntil)).
    /// Called only on operands newer than every live snapshot, as RocksDB's
    /// `MergeHelper` does. The result of a merge is not filtered again.
    /// The default keeps every operand.
    fn filter_merge_operand(
        &self,
        level: usize,
        user_key: &[u8],
        operand: &[u8],
    ) -> FilterDecision {
        let _ = (level, user_key, operand);
        FilterDecision::Keep
    }
}
