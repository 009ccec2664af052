//! User keys, internal keys, sequence numbers and value kinds.
//!
//! An **internal key** is the user key followed by an 8-byte little-endian
//! **trailer** `seqno << 8 | kind`:
//!
//! ```text
//! +----------------------+--------------------------------------+
//! | user key (n bytes)   | trailer: u64 LE = seqno << 8 | kind   |
//! +----------------------+--------------------------------------+
//! ```
//!
//! Internal keys order by user key ascending (under the user comparator),
//! then by trailer **descending**: the newest version of a key (highest
//! seqno) comes first, and at equal seqnos the higher kind number first.
//!
//! The text form used by tests and tools is `user_key#seqno,KIND`, e.g.
//! `a#5,SET`, `b#12,DEL`, `c#3,RANGEDEL`, `d#4,MERGE`, `e#6,SINGLE_DELETE`. Bytes outside printable ASCII, and
//! `#`, `,` and `\`, are written `\xNN`. The seqno [`MAX_SEQNO`] is written
//! `MAX`.

use std::fmt;

use crate::coding::DecodeError;

/// A sequence number: 56 bits, assigned in write order. Higher is newer.
pub type SeqNo = u64;

/// The largest sequence number. It is never assigned to an entry: seek keys
/// use it to sort before every real version of a user key.
pub const MAX_SEQNO: SeqNo = (1 << 56) - 1;

/// Length of the internal-key trailer.
pub const TRAILER_LEN: usize = 8;

/// The kind byte of seek keys: sorts before every real kind at the same seqno.
pub const KIND_FOR_SEEK: u8 = 0xff;

/// What an entry is.
///
/// The numbers are **part of the file formats** (WAL, sstables, MANIFEST) and
/// must never change; they are RocksDB's (`kTypeDeletion` 0x0, `kTypeValue`
/// 0x1, `kTypeMerge` 0x2, `kTypeSingleDeletion` 0x7, `kTypeRangeDeletion`
/// 0xF).
///
/// Exhaustive on purpose: a new kind is a format change (`docs/FORMATS.md`,
/// "Compatibility") that every reader of entries must handle, so adding one
/// is meant to stop the build of every `match` until it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum ValueKind {
    /// A point tombstone: the key is deleted.
    Delete = 0,
    /// A value.
    Put = 1,
    /// A merge operand: combined with the older versions of the key by the
    /// table's merge operator when the key is read or compacted.
    Merge = 2,
    /// A tombstone for a key written once: it cancels exactly one older
    /// `Put` and vanishes with it in compaction (RocksDB's
    /// `SingleDelete`).
    SingleDelete = 7,
    /// A range tombstone: the user key is the start (inclusive), the value
    /// holds the end (exclusive).
    RangeDelete = 15,
    /// A value kept in a blob file: the entry's value is a blob index
    /// (file number, offset, size, compression; `lithify-blob`) that
    /// locates it (RocksDB's `kTypeBlobIndex`, 0x11). Only flush and
    /// compaction write it, into SSTs; a write batch never carries it.
    /// Reads resolve it to the value, so it behaves as a `Put`.
    BlobIndex = 17,
}

impl ValueKind {
    /// The kind with number `b`, if it is one.
    #[inline]
    pub const fn from_u8(b: u8) -> Option<ValueKind> {
        match b {
            0 => Some(ValueKind::Delete),
            1 => Some(ValueKind::Put),
            2 => Some(ValueKind::Merge),
            7 => Some(ValueKind::SingleDelete),
            15 => Some(ValueKind::RangeDelete),
            17 => Some(ValueKind::BlobIndex),
            _ => None,
        }
    }

    /// The name in the text form: `DEL`, `SET`, `RANGEDEL`, `MERGE` (Pebble's
    /// names) and `SINGLE_DELETE`.
    pub const fn name(self) -> &'static str {
        match self {
            ValueKind::Delete => "DEL",
            ValueKind::Put => "SET",
            ValueKind::Merge => "MERGE",
            ValueKind::SingleDelete => "SINGLE_DELETE",
            ValueKind::RangeDelete => "RANGEDEL",
            ValueKind::BlobIndex => "BLOB_INDEX",
        }
    }

    /// Parses a name of the text form (Pebble's `SINGLEDEL` is accepted too).
    pub fn from_name(name: &str) -> Option<ValueKind> {
        match name {
            "DEL" => Some(ValueKind::Delete),
            "SET" => Some(ValueKind::Put),
            "MERGE" => Some(ValueKind::Merge),
            "SINGLE_DELETE" | "SINGLEDEL" => Some(ValueKind::SingleDelete),
            "RANGEDEL" => Some(ValueKind::RangeDelete),
            "BLOB_INDEX" | "BLOBINDEX" => Some(ValueKind::BlobIndex),
            _ => None,
        }
    }

    /// Whether this is a point or range tombstone.
    pub const fn is_tombstone(self) -> bool {
        matches!(
            self,
            ValueKind::Delete | ValueKind::SingleDelete | ValueKind::RangeDelete
        )
    }

    /// Whether this is a point tombstone (`Delete` or `SingleDelete`).
    pub const fn is_point_tombstone(self) -> bool {
        matches!(self, ValueKind::Delete | ValueKind::SingleDelete)
    }

    /// Every kind, in number order.
    pub const ALL: [ValueKind; 6] = [
        ValueKind::Delete,
        ValueKind::Put,
        ValueKind::Merge,
        ValueKind::SingleDelete,
        ValueKind::RangeDelete,
        ValueKind::BlobIndex,
    ];

    /// Whether the entry holds a value (`Put`, or `BlobIndex` whose value
    /// lives in a blob file).
    pub const fn is_value(self) -> bool {
        matches!(self, ValueKind::Put | ValueKind::BlobIndex)
    }
}

/// Packs a seqno and a kind byte into a trailer.
///
/// # Panics
/// In debug builds, if `seqno` exceeds [`MAX_SEQNO`].
#[inline]
pub const fn pack_trailer(seqno: SeqNo, kind: u8) -> u64 {
    debug_assert!(seqno <= MAX_SEQNO);
    (seqno << 8) | kind as u64
}

/// Splits a trailer into seqno and kind byte.
#[inline]
pub const fn unpack_trailer(trailer: u64) -> (SeqNo, u8) {
    (trailer >> 8, trailer as u8)
}

/// The user-key part of an encoded internal key. Keys shorter than a trailer
/// (never produced by lithify; possible in damaged data) yield themselves.
#[inline]
pub fn user_key(internal_key: &[u8]) -> &[u8] {
    internal_key
        .len()
        .checked_sub(TRAILER_LEN)
        .map_or(internal_key, |n| &internal_key[..n])
}

/// The trailer of an encoded internal key; 0 for keys shorter than a trailer.
#[inline]
pub fn trailer(internal_key: &[u8]) -> u64 {
    match internal_key.last_chunk::<TRAILER_LEN>() {
        Some(t) => u64::from_le_bytes(*t),
        None => 0,
    }
}

/// Appends the internal key `user_key#seqno,kind` to `dst`.
#[inline]
pub fn append_internal_key(dst: &mut Vec<u8>, user_key: &[u8], seqno: SeqNo, kind: u8) {
    dst.extend_from_slice(user_key);
    dst.extend_from_slice(&pack_trailer(seqno, kind).to_le_bytes());
}

/// A decoded view of an internal key.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ParsedInternalKey<'a> {
    /// The user key.
    pub user_key: &'a [u8],
    /// The sequence number.
    pub seqno: SeqNo,
    /// The kind.
    pub kind: ValueKind,
}

impl<'a> ParsedInternalKey<'a> {
    /// Decodes an internal key; fails on a short key or an unknown kind.
    pub fn parse(encoded: &'a [u8]) -> Result<Self, DecodeError> {
        let Some(n) = encoded.len().checked_sub(TRAILER_LEN) else {
            return Err(DecodeError::Truncated {
                at: 0,
                what: "internal key trailer",
            });
        };
        let (seqno, kind) = unpack_trailer(trailer(encoded));
        let Some(kind) = ValueKind::from_u8(kind) else {
            return Err(DecodeError::Invalid {
                at: n,
                what: "unknown value kind in internal key",
            });
        };
        Ok(ParsedInternalKey {
            user_key: &encoded[..n],
            seqno,
            kind,
        })
    }

    /// Appends the encoded key to `dst`.
    pub fn encode_into(&self, dst: &mut Vec<u8>) {
        append_internal_key(dst, self.user_key, self.seqno, self.kind as u8);
    }

    /// The trailer `seqno << 8 | kind`.
    pub fn trailer(&self) -> u64 {
        pack_trailer(self.seqno, self.kind as u8)
    }
}

impl fmt::Display for ParsedInternalKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_escaped(f, self.user_key)?;
        write_seqno(f, self.seqno)?;
        write!(f, ",{}", self.kind.name())
    }
}

impl fmt::Debug for ParsedInternalKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// An owned, encoded internal key.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct InternalKey {
    encoded: Vec<u8>,
}

impl InternalKey {
    /// The key `user_key#seqno,kind`.
    pub fn new(user_key: &[u8], seqno: SeqNo, kind: ValueKind) -> Self {
        let mut encoded = Vec::with_capacity(user_key.len() + TRAILER_LEN);
        append_internal_key(&mut encoded, user_key, seqno, kind as u8);
        InternalKey { encoded }
    }

    /// The smallest internal key for `user_key` visible at `seqno`: seeking
    /// to it lands on the newest version with a seqno `<= seqno`.
    pub fn seek(user_key: &[u8], seqno: SeqNo) -> Self {
        let mut encoded = Vec::with_capacity(user_key.len() + TRAILER_LEN);
        append_internal_key(&mut encoded, user_key, seqno, KIND_FOR_SEEK);
        InternalKey { encoded }
    }

    /// Takes an encoded key after checking that it parses.
    pub fn from_encoded(encoded: Vec<u8>) -> Result<Self, DecodeError> {
        ParsedInternalKey::parse(&encoded)?;
        Ok(InternalKey { encoded })
    }

    /// Parses the text form `user_key#seqno,KIND`.
    pub fn from_text(text: &str) -> Result<Self, TextKeyError> {
        let (user, rest) = text
            .rsplit_once('#')
            .ok_or_else(|| TextKeyError::new(text))?;
        let (seq, kind) = rest
            .split_once(',')
            .ok_or_else(|| TextKeyError::new(text))?;
        let seqno = if seq == "MAX" {
            MAX_SEQNO
        } else {
            seq.parse::<SeqNo>().map_err(|_| TextKeyError::new(text))?
        };
        if seqno > MAX_SEQNO {
            return Err(TextKeyError::new(text));
        }
        let kind = ValueKind::from_name(kind).ok_or_else(|| TextKeyError::new(text))?;
        let user = unescape(user).ok_or_else(|| TextKeyError::new(text))?;
        Ok(InternalKey::new(&user, seqno, kind))
    }

    /// The encoded bytes.
    #[inline]
    pub fn encoded(&self) -> &[u8] {
        &self.encoded
    }

    /// The encoded bytes, by value.
    pub fn into_encoded(self) -> Vec<u8> {
        self.encoded
    }

    /// The user key.
    #[inline]
    pub fn user_key(&self) -> &[u8] {
        user_key(&self.encoded)
    }

    /// The sequence number.
    #[inline]
    pub fn seqno(&self) -> SeqNo {
        unpack_trailer(trailer(&self.encoded)).0
    }

    /// The raw kind byte ([`KIND_FOR_SEEK`] for seek keys).
    #[inline]
    pub fn kind_byte(&self) -> u8 {
        unpack_trailer(trailer(&self.encoded)).1
    }

    /// The decoded view, or `None` for a seek key.
    pub fn parsed(&self) -> Option<ParsedInternalKey<'_>> {
        ParsedInternalKey::parse(&self.encoded).ok()
    }
}

impl fmt::Display for InternalKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.parsed() {
            Some(p) => fmt::Display::fmt(&p, f),
            None => {
                write_escaped(f, self.user_key())?;
                write_seqno(f, self.seqno())?;
                write!(f, ",SEEK")
            }
        }
    }
}

impl fmt::Debug for InternalKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A text-form key that does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextKeyError {
    text: String,
}

impl TextKeyError {
    fn new(text: &str) -> Self {
        TextKeyError {
            text: text.to_owned(),
        }
    }
}

impl fmt::Display for TextKeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not an internal key of the form user_key#seqno,KIND (KIND one of SET, DEL, RANGEDEL, MERGE, SINGLE_DELETE, BLOB_INDEX)",
            self.text
        )
    }
}

impl std::error::Error for TextKeyError {}

fn write_seqno(f: &mut fmt::Formatter<'_>, seqno: SeqNo) -> fmt::Result {
    if seqno == MAX_SEQNO {
        write!(f, "#MAX")
    } else {
        write!(f, "#{seqno}")
    }
}

/// Writes `bytes` in the escaped text form.
pub fn write_escaped(f: &mut impl fmt::Write, bytes: &[u8]) -> fmt::Result {
    for &b in bytes {
        if b.is_ascii_graphic() && !matches!(b, b'#' | b',' | b'\\') || b == b' ' {
            f.write_char(char::from(b))?;
        } else {
            write!(f, "\\x{b:02x}")?;
        }
    }
    Ok(())
}

/// Bytes in the escaped text form, as a `String`.
pub fn escape(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    write_escaped(&mut s, bytes).expect("writing to a String cannot fail");
    s
}

/// Inverts [`escape`]; `None` for a malformed escape.
pub fn unescape(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            if bytes.get(i + 1) != Some(&b'x') {
                return None;
            }
            let hex = text.get(i + 2..i + 4)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comparator::{Comparator, InternalKeyComparator};
    use proptest::prelude::*;

    #[test]
    fn text_form_round_trips() {
        for text in [
            "a#5,SET",
            "b#12,DEL",
            "c#3,RANGEDEL",
            "#0,SET",
            "\\x00\\xff\\x23#MAX,SET",
        ] {
            let key = InternalKey::from_text(text).unwrap();
            assert_eq!(key.to_string(), text);
        }
        let key = InternalKey::from_text("a\\x23b#7,DEL").unwrap();
        assert_eq!(key.user_key(), b"a#b");
        assert_eq!(key.seqno(), 7);
        assert_eq!(key.parsed().unwrap().kind, ValueKind::Delete);
    }

    #[test]
    fn text_form_rejects_garbage() {
        for text in [
            "a",
            "a#5",
            "a#x,SET",
            "a#5,PUT",
            "a\\q#1,SET",
            "a#72057594037927936,SET",
        ] {
            assert!(InternalKey::from_text(text).is_err(), "{text}");
        }
    }

    #[test]
    fn golden_encoding() {
        let key = InternalKey::new(b"ab", 0x0102, ValueKind::Put);
        assert_eq!(key.encoded(), [b'a', b'b', 0x01, 0x02, 0x01, 0, 0, 0, 0, 0]);
        assert!(matches!(
            ParsedInternalKey::parse(b"short"),
            Err(DecodeError::Truncated { .. })
        ));
        let mut bad = key.encoded().to_vec();
        bad[2] = 9;
        assert_eq!(
            ParsedInternalKey::parse(&bad),
            Err(DecodeError::Invalid {
                at: 2,
                what: "unknown value kind in internal key"
            })
        );
    }

    #[test]
    fn seek_key_sorts_before_all_versions() {
        let cmp = InternalKeyComparator::bytewise();
        let seek = InternalKey::seek(b"k", 10);
        for kind in ValueKind::ALL {
            assert!(
                cmp.compare(seek.encoded(), InternalKey::new(b"k", 10, kind).encoded())
                    .is_lt()
            );
            assert!(
                cmp.compare(seek.encoded(), InternalKey::new(b"k", 11, kind).encoded())
                    .is_gt()
            );
        }
        assert_eq!(seek.to_string(), "k#10,SEEK");
    }

    fn kind_strategy() -> impl Strategy<Value = ValueKind> {
        proptest::sample::select(ValueKind::ALL.to_vec())
    }

    proptest! {
        #[test]
        fn ordering_matches_reference(
            a in proptest::collection::vec(0u8..4, 0..4), sa in 0..MAX_SEQNO, ka in kind_strategy(),
            b in proptest::collection::vec(0u8..4, 0..4), sb in 0..MAX_SEQNO, kb in kind_strategy(),
        ) {
            let cmp = InternalKeyComparator::bytewise();
            let x = InternalKey::new(&a, sa, ka);
            let y = InternalKey::new(&b, sb, kb);
            // Reference: user key ascending, seqno descending, kind descending.
            let reference = a.cmp(&b)
                .then(sb.cmp(&sa))
                .then((kb as u8).cmp(&(ka as u8)));
            prop_assert_eq!(cmp.compare(x.encoded(), y.encoded()), reference);
        }

        #[test]
        fn parse_round_trip(user in proptest::collection::vec(any::<u8>(), 0..20), seq in 0..=MAX_SEQNO, kind in kind_strategy()) {
            let key = InternalKey::new(&user, seq, kind);
            let parsed = ParsedInternalKey::parse(key.encoded()).unwrap();
            prop_assert_eq!(parsed.user_key, &user[..]);
            prop_assert_eq!(parsed.seqno, seq);
            prop_assert_eq!(parsed.kind, kind);
            prop_assert_eq!(InternalKey::from_text(&key.to_string()).unwrap(), key);
        }
    }
}
