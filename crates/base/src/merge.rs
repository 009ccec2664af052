//! Merge operators: read-modify-write without the read.
//!
//! A `Merge` entry ([`ValueKind::Merge`](crate::ValueKind::Merge)) holds an
//! **operand**, not a value. The value of a key is found by taking its
//! newest `Put` (or nothing, below a tombstone or at the start of history)
//! and applying the operands written after it, oldest first, with the
//! table's [`MergeOperator`]. Reads do this on the fly; compaction does it
//! once and writes the result, so operands do not pile up (RocksDB's merge
//! operator, `include/rocksdb/merge_operator.h`).
//!
//! The operator's [`name`](MergeOperator::name) is recorded in the
//! database's metadata: opening a database with an operator of another name
//! is refused, because stored operands would then be read with the wrong
//! meaning.
//!
//! ```
//! use lithify_base::merge::{MergeOperator, UInt64Add};
//!
//! let add = UInt64Add;
//! let one = 1u64.to_le_bytes();
//! let five = 5u64.to_le_bytes();
//! // 5 + 1 + 1
//! let v = add.full_merge(b"hits", Some(&five), &[&one, &one]).unwrap();
//! assert_eq!(u64::from_le_bytes(v.try_into().unwrap()), 7);
//! // No older value: the operands start from nothing (0 for a counter).
//! let v = add.full_merge(b"hits", None, &[&one]).unwrap();
//! assert_eq!(v, 1u64.to_le_bytes());
//! ```

use std::fmt;
use std::sync::Arc;

/// What a failed merge takes down (RocksDB's
/// `MergeOperator::OpFailureScope`).
///
/// A merge fails when [`MergeOperator::full_merge`] returns `None`. Every
/// read that needs the key's value fails then, naming the key; the scope
/// says whether flushes and compactions that meet the key fail too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum MergeFailureScope {
    /// Only the reads that need the key's merged value fail (point reads,
    /// and iteration when it reaches the key). Flushes and compactions
    /// write the key's operands and its older value out unmerged and go
    /// on, so one bad operand never stops the database (RocksDB's
    /// `kMustMerge`). The default.
    #[default]
    MustMerge,
    /// Flushes and compactions that meet the key fail too, which turns the
    /// database read-only until it is reopened (RocksDB's default,
    /// `kTryMerge`): for operators whose failure means the data itself is
    /// bad.
    TryMerge,
}

/// Combines a key's operands with its older value.
///
/// Implementations must be deterministic: the same inputs give the same
/// output, whether the merge runs in a read, a flush or a compaction, and
/// in whatever grouping [`partial_merge`](Self::partial_merge) allows.
/// They run on reader and compaction threads at once, hence `Send + Sync`.
pub trait MergeOperator: Send + Sync {
    /// The operator's name, recorded in the database's metadata. Two
    /// operators with the same name must mean the same thing.
    fn name(&self) -> &str;

    /// The value after applying `operands` (oldest first) to `existing`
    /// (`None`: the key had no value — never written, or deleted).
    ///
    /// `None` means the inputs cannot be merged (an operand or the value is
    /// malformed): a read of the key fails with a corruption error naming
    /// it, and [`failure_scope`](Self::failure_scope) says what else does.
    fn full_merge(
        &self,
        key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>>;

    /// What a failed [`full_merge`](Self::full_merge) takes down (default
    /// [`MergeFailureScope::MustMerge`]: only the reads of that key).
    fn failure_scope(&self) -> MergeFailureScope {
        MergeFailureScope::MustMerge
    }

    /// One operand equivalent to applying `older` then `newer`, if the
    /// operator can combine operands without the value (an associative
    /// operator can). `None` (the default) keeps both operands; compaction
    /// then carries them until it finds the key's value or the start of
    /// its history.
    fn partial_merge(&self, key: &[u8], older: &[u8], newer: &[u8]) -> Option<Vec<u8>> {
        let _ = (key, older, newer);
        None
    }

    /// One operand equivalent to all `operands` (oldest first, at least
    /// two). The default folds [`partial_merge`](Self::partial_merge) from
    /// the oldest; `None` if any step is `None`.
    fn partial_merge_multi(&self, key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        let (first, rest) = operands.split_first()?;
        let mut acc = self.partial_merge(key, first, rest.first()?)?;
        for op in &rest[1..] {
            acc = self.partial_merge(key, &acc, op)?;
        }
        Some(acc)
    }
}

impl fmt::Debug for dyn MergeOperator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MergeOperator({})", self.name())
    }
}

/// Adds little-endian `u64`s, wrapping on overflow (RocksDB's
/// `UInt64AddOperator`): a counter. A value or operand that is not exactly
/// 8 bytes counts as 0 and is reported as a `tracing` warning (target
/// `lithify::merge`) naming the key, as RocksDB reads it as 0 and logs it:
/// one malformed write never makes the counter unreadable.
///
/// ```
/// use lithify_base::merge::{MergeOperator, UInt64Add};
///
/// let sum = UInt64Add.partial_merge(b"k", &2u64.to_le_bytes(), &3u64.to_le_bytes()).unwrap();
/// assert_eq!(sum, 5u64.to_le_bytes());
/// // "short" is not 8 bytes: it counts as 0.
/// assert_eq!(UInt64Add.full_merge(b"k", Some(b"short"), &[&sum]).unwrap(), sum);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct UInt64Add;

impl UInt64Add {
    /// `bytes` as a little-endian `u64`; anything but 8 bytes is 0.
    fn decode(key: &[u8], bytes: &[u8]) -> u64 {
        match bytes.try_into() {
            Ok(b) => u64::from_le_bytes(b),
            Err(_) => {
                tracing::warn!(
                    target: "lithify::merge",
                    key = %crate::key::escape(key),
                    size = bytes.len(),
                    "UInt64AddOperator: a value or operand of {} bytes (not 8) counts as 0",
                    bytes.len()
                );
                0
            }
        }
    }
}

impl MergeOperator for UInt64Add {
    fn name(&self) -> &str {
        "UInt64AddOperator"
    }

    fn full_merge(
        &self,
        key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>> {
        let mut sum = existing.map_or(0, |v| Self::decode(key, v));
        for op in operands {
            sum = sum.wrapping_add(Self::decode(key, op));
        }
        Some(sum.to_le_bytes().to_vec())
    }

    fn partial_merge(&self, key: &[u8], older: &[u8], newer: &[u8]) -> Option<Vec<u8>> {
        let sum = Self::decode(key, older).wrapping_add(Self::decode(key, newer));
        Some(sum.to_le_bytes().to_vec())
    }
}

/// Appends operands to the value with a delimiter between them (RocksDB's
/// `StringAppendOperator`): a list.
///
/// ```
/// use lithify_base::merge::{MergeOperator, StringAppend};
///
/// let op = StringAppend::new(b',');
/// assert_eq!(op.full_merge(b"k", Some(b"a"), &[b"b", b"c"]).unwrap(), b"a,b,c");
/// assert_eq!(op.full_merge(b"k", None, &[b"b"]).unwrap(), b"b");
/// ```
#[derive(Debug, Clone)]
pub struct StringAppend {
    delimiter: u8,
    name: String,
}

impl StringAppend {
    /// An operator joining with `delimiter`. The comma (RocksDB's default)
    /// is named `StringAppendOperator`; another delimiter is part of the
    /// name (`StringAppendOperator(;)`), so a database is not reopened
    /// with a different one.
    pub fn new(delimiter: u8) -> Self {
        let name = if delimiter == b',' {
            "StringAppendOperator".to_owned()
        } else {
            format!("StringAppendOperator({})", crate::key::escape(&[delimiter]))
        };
        StringAppend { delimiter, name }
    }

    fn join<'a>(&self, parts: impl Iterator<Item = &'a [u8]>) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, p) in parts.enumerate() {
            if i > 0 {
                out.push(self.delimiter);
            }
            out.extend_from_slice(p);
        }
        out
    }
}

impl Default for StringAppend {
    fn default() -> Self {
        StringAppend::new(b',')
    }
}

impl MergeOperator for StringAppend {
    fn name(&self) -> &str {
        &self.name
    }

    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>> {
        Some(self.join(existing.into_iter().chain(operands.iter().copied())))
    }

    fn partial_merge(&self, _key: &[u8], older: &[u8], newer: &[u8]) -> Option<Vec<u8>> {
        Some(self.join([older, newer].into_iter()))
    }
}

/// Keeps the bytewise largest of the value and the operands (RocksDB's
/// `MaxOperator`).
///
/// ```
/// use lithify_base::merge::{Max, MergeOperator};
///
/// assert_eq!(Max.full_merge(b"k", Some(b"m"), &[b"c", b"x", b"a"]).unwrap(), b"x");
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Max;

impl MergeOperator for Max {
    fn name(&self) -> &str {
        "MaxOperator"
    }

    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>> {
        let max = existing
            .into_iter()
            .chain(operands.iter().copied())
            .max()
            .unwrap_or_default();
        Some(max.to_vec())
    }

    fn partial_merge(&self, _key: &[u8], older: &[u8], newer: &[u8]) -> Option<Vec<u8>> {
        Some(older.max(newer).to_vec())
    }
}

/// The short ids of the built-in operators, as db_bench's
/// `--merge_operator` spells them.
pub const BUILT_IN: [&str; 3] = ["uint64add", "stringappend", "max"];

/// The built-in operator with short id `id` (one of [`BUILT_IN`]) or with
/// that [`name`](MergeOperator::name).
///
/// ```
/// use lithify_base::merge::built_in;
///
/// assert_eq!(built_in("uint64add").unwrap().name(), "UInt64AddOperator");
/// assert_eq!(built_in("MaxOperator").unwrap().name(), "MaxOperator");
/// assert!(built_in("sortlist").is_none());
/// ```
pub fn built_in(id: &str) -> Option<Arc<dyn MergeOperator>> {
    Some(match id {
        "uint64add" | "UInt64AddOperator" => Arc::new(UInt64Add),
        "stringappend" | "StringAppendOperator" => Arc::new(StringAppend::default()),
        "max" | "MaxOperator" => Arc::new(Max),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uint64_add_wraps_and_reads_bad_sizes_as_zero() {
        let max = u64::MAX.to_le_bytes();
        let one = 1u64.to_le_bytes();
        let five = 5u64.to_le_bytes();
        assert_eq!(
            UInt64Add.full_merge(b"k", Some(&max), &[&one]).unwrap(),
            0u64.to_le_bytes()
        );
        // RocksDB's rule: a value or operand of the wrong size is 0.
        assert_eq!(
            UInt64Add.full_merge(b"k", None, &[b"1234567"]).unwrap(),
            0u64.to_le_bytes()
        );
        assert_eq!(
            UInt64Add.full_merge(b"k", Some(b"1"), &[&five]).unwrap(),
            five
        );
        assert_eq!(UInt64Add.partial_merge(b"k", &one, b"").unwrap(), one);
        assert_eq!(UInt64Add.failure_scope(), MergeFailureScope::MustMerge);
    }

    #[test]
    fn partial_merge_multi_folds_oldest_first() {
        let op = StringAppend::new(b'|');
        assert_eq!(op.name(), "StringAppendOperator(|)");
        assert_eq!(
            op.partial_merge_multi(b"k", &[b"a", b"b", b"c"]).unwrap(),
            b"a|b|c"
        );
        assert_eq!(op.partial_merge_multi(b"k", &[b"a"]), None);
    }

    #[test]
    fn operators_without_partial_merge_keep_operands() {
        struct Last;
        impl MergeOperator for Last {
            fn name(&self) -> &str {
                "last"
            }
            fn full_merge(&self, _: &[u8], e: Option<&[u8]>, ops: &[&[u8]]) -> Option<Vec<u8>> {
                ops.last().copied().or(e).map(<[u8]>::to_vec)
            }
        }
        assert_eq!(Last.partial_merge_multi(b"k", &[b"a", b"b"]), None);
        assert_eq!(Last.full_merge(b"k", Some(b"v"), &[]).unwrap(), b"v");
    }

    #[test]
    fn max_of_nothing_is_empty() {
        assert_eq!(Max.full_merge(b"k", None, &[]).unwrap(), b"");
    }
}
