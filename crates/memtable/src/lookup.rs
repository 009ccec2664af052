//! The answer of a point lookup in one memtable.

use lithify_base::SeqNo;

/// What one memtable says about a user key at a snapshot.
///
/// [`Found`](Lookup::Found) and [`Deleted`](Lookup::Deleted) *decide* the
/// key; [`Merge`](Lookup::Merge) says the newest version is a merge operand,
/// so the value depends on older versions too
/// ([`MemTable::collect_operands`](crate::MemTable::collect_operands)
/// gathers them): older layers (older memtables, sstables) hold only older versions,
/// so a reader stops here. [`NotFound`](Lookup::NotFound) means this
/// memtable has neither a visible version of the key nor a visible range
/// tombstone covering it.
///
/// The value borrows the memtable's arena (no copy); copy it (e.g.
/// `Bytes::copy_from_slice`) to keep it after the memtable reference goes.
///
/// Exhaustive on purpose: every reader of a memtable must handle every
/// answer, so a new one must stop their build until they do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup<'a> {
    /// The newest visible version is a value, and no visible range
    /// tombstone of this memtable newer than it covers the key.
    Found {
        /// The value.
        value: &'a [u8],
        /// The version's sequence number.
        seqno: SeqNo,
    },
    /// The newest visible decision is a deletion.
    Deleted {
        /// The sequence number of the tombstone that decided.
        seqno: SeqNo,
        /// Whether a point or a range tombstone decided.
        by: DeletedBy,
    },
    /// The newest visible version is a merge operand that no visible range
    /// tombstone of this memtable covers.
    Merge {
        /// The operand.
        operand: &'a [u8],
        /// Its sequence number.
        seqno: SeqNo,
    },
    /// This memtable does not decide the key: look in older layers.
    NotFound,
}

/// Which kind of tombstone deleted a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeletedBy {
    /// A point tombstone (`Delete` or `SingleDelete`) is the newest visible
    /// version, and no newer visible range tombstone covers the key.
    PointTombstone,
    /// A visible range tombstone covers the key and is newer than any
    /// visible version of it in this memtable.
    RangeTombstone,
}

impl<'a> Lookup<'a> {
    /// Whether this memtable decides the key (older layers need not be
    /// consulted).
    pub fn is_decided(&self) -> bool {
        matches!(self, Lookup::Found { .. } | Lookup::Deleted { .. })
    }

    /// The value, if one was found.
    pub fn value(&self) -> Option<&'a [u8]> {
        match *self {
            Lookup::Found { value, .. } => Some(value),
            _ => None,
        }
    }
}
