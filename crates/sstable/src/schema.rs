//! What a table knows about its keys beyond their order.

use std::fmt;

use lithify_base::key::user_key;
use lithify_base::{ParsedInternalKey, SeqNo, ValueKind};

/// What a table knows about its keys beyond their order.
///
/// A [`KeySchema`] extracts the **filter key** (what the bloom filter is
/// built on and queried with) and, for keys that carry one, the sequence
/// number and kind (for the properties block). Two schemas exist:
///
/// * [`PlainKeys`]: keys are opaque; the filter key is the whole key. The
///   default, for tables used on their own.
/// * [`InternalKeys`]: keys are lithify internal keys (`user_key ++
///   trailer`); the filter key is the user key, so a point lookup for any
///   version of a user key consults the filter once.
///
/// The schema's name is stored in the properties block and checked when a
/// table is opened.
pub trait KeySchema: Send + Sync + fmt::Debug {
    /// The name stored in the properties block.
    fn name(&self) -> &str;

    /// The part of `key` the bloom filter is built on.
    fn filter_key<'a>(&self, key: &'a [u8]) -> &'a [u8];

    /// The sequence number and kind of a stored key, if keys carry them.
    fn seqno_and_kind(&self, key: &[u8]) -> Option<(SeqNo, ValueKind)>;
}

/// Opaque keys: the filter key is the key itself.
///
/// ```
/// use lithify_sstable::{KeySchema, PlainKeys};
/// assert_eq!(PlainKeys.filter_key(b"apple"), b"apple");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlainKeys;

impl PlainKeys {
    /// The name stored in tables.
    pub const NAME: &'static str = "lithify.PlainKeys";
}

impl KeySchema for PlainKeys {
    fn name(&self) -> &str {
        Self::NAME
    }

    #[inline]
    fn filter_key<'a>(&self, key: &'a [u8]) -> &'a [u8] {
        key
    }

    fn seqno_and_kind(&self, _key: &[u8]) -> Option<(SeqNo, ValueKind)> {
        None
    }
}

/// lithify internal keys: the filter key is the user key (the key minus
/// its 8-byte trailer).
///
/// ```
/// use lithify_base::{InternalKey, ValueKind};
/// use lithify_sstable::{InternalKeys, KeySchema};
///
/// let key = InternalKey::new(b"apple", 9, ValueKind::Delete);
/// assert_eq!(InternalKeys.filter_key(key.encoded()), b"apple");
/// assert_eq!(InternalKeys.seqno_and_kind(key.encoded()), Some((9, ValueKind::Delete)));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InternalKeys;

impl InternalKeys {
    /// The name stored in tables.
    pub const NAME: &'static str = "lithify.InternalKeys";
}

impl KeySchema for InternalKeys {
    fn name(&self) -> &str {
        Self::NAME
    }

    #[inline]
    fn filter_key<'a>(&self, key: &'a [u8]) -> &'a [u8] {
        user_key(key)
    }

    fn seqno_and_kind(&self, key: &[u8]) -> Option<(SeqNo, ValueKind)> {
        ParsedInternalKey::parse(key)
            .ok()
            .map(|parsed| (parsed.seqno, parsed.kind))
    }
}
