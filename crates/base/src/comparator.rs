//! Key ordering.
//!
//! A [`Comparator`] orders byte strings. [`BytewiseComparator`] is the
//! default user comparator (lexicographic, like `memcmp`).
//! [`InternalKeyComparator`] orders internal keys on top of a user
//! comparator: user key ascending, then trailer (seqno, kind) descending.
//!
//! A comparator's [`name`](Comparator::name) is stored in the MANIFEST and
//! checked on open, so that a database is never read with another order.
//!
//! ```
//! use lithify_base::{BytewiseComparator, Comparator};
//!
//! let cmp = BytewiseComparator;
//! let mut sep = Vec::new();
//! cmp.separator(b"abcdef", b"abzz", &mut sep);
//! assert_eq!(sep, b"abd"); // shortest key in [abcdef, abzz)
//! ```

use std::cmp::Ordering;
use std::sync::Arc;

use crate::key::{KIND_FOR_SEEK, MAX_SEQNO, append_internal_key, trailer, user_key};

/// A total order on byte strings.
pub trait Comparator: Send + Sync {
    /// The name stored in the MANIFEST; a database refuses to open with a
    /// comparator of another name.
    fn name(&self) -> &str;

    /// Three-way comparison.
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering;

    /// Whether `a` and `b` are the same key (may be faster than `compare`).
    fn equal(&self, a: &[u8], b: &[u8]) -> bool {
        self.compare(a, b) == Ordering::Equal
    }

    /// Writes into `out` (cleared first) a short key `k` with
    /// `start <= k < limit` when `start < limit`; used for index separators.
    /// The default is `start` itself.
    fn separator(&self, start: &[u8], limit: &[u8], out: &mut Vec<u8>) {
        let _ = limit;
        out.clear();
        out.extend_from_slice(start);
    }

    /// Writes into `out` (cleared first) a short key `k >= key`; used for
    /// the separator after a table's last block. The default is `key` itself.
    fn successor(&self, key: &[u8], out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(key);
    }
}

impl<C: Comparator + ?Sized> Comparator for Arc<C> {
    fn name(&self) -> &str {
        (**self).name()
    }
    #[inline]
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        (**self).compare(a, b)
    }
    #[inline]
    fn equal(&self, a: &[u8], b: &[u8]) -> bool {
        (**self).equal(a, b)
    }
    fn separator(&self, start: &[u8], limit: &[u8], out: &mut Vec<u8>) {
        (**self).separator(start, limit, out);
    }
    fn successor(&self, key: &[u8], out: &mut Vec<u8>) {
        (**self).successor(key, out);
    }
}

impl<C: Comparator + ?Sized> Comparator for &C {
    fn name(&self) -> &str {
        (**self).name()
    }
    #[inline]
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        (**self).compare(a, b)
    }
    #[inline]
    fn equal(&self, a: &[u8], b: &[u8]) -> bool {
        (**self).equal(a, b)
    }
    fn separator(&self, start: &[u8], limit: &[u8], out: &mut Vec<u8>) {
        (**self).separator(start, limit, out);
    }
    fn successor(&self, key: &[u8], out: &mut Vec<u8>) {
        (**self).successor(key, out);
    }
}

/// Lexicographic byte order, the default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BytewiseComparator;

impl BytewiseComparator {
    /// The name stored in the MANIFEST.
    pub const NAME: &'static str = "lithify.BytewiseComparator";
}

impl Comparator for BytewiseComparator {
    fn name(&self) -> &str {
        Self::NAME
    }

    #[inline]
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        a.cmp(b)
    }

    #[inline]
    fn equal(&self, a: &[u8], b: &[u8]) -> bool {
        a == b
    }

    fn separator(&self, start: &[u8], limit: &[u8], out: &mut Vec<u8>) {
        out.clear();
        let common = start.iter().zip(limit).take_while(|(a, b)| a == b).count();
        if common < start.len().min(limit.len()) {
            let byte = start[common];
            // Bump the first differing byte if the result stays below limit.
            if byte < 0xff && byte + 1 < limit[common] {
                out.extend_from_slice(&start[..=common]);
                out[common] += 1;
                return;
            }
        }
        out.extend_from_slice(start);
    }

    fn successor(&self, key: &[u8], out: &mut Vec<u8>) {
        out.clear();
        // Bump the first byte that can be bumped and cut the rest.
        match key.iter().position(|&b| b != 0xff) {
            Some(i) => {
                out.extend_from_slice(&key[..=i]);
                out[i] += 1;
            }
            None => out.extend_from_slice(key),
        }
    }
}

/// Orders encoded internal keys: user key ascending under the user
/// comparator, then trailer descending (newest first).
#[derive(Clone)]
pub struct InternalKeyComparator {
    user: Arc<dyn Comparator>,
    bytewise: bool,
    name: String,
}

impl std::fmt::Debug for InternalKeyComparator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InternalKeyComparator")
            .field("user", &self.user.name())
            .finish()
    }
}

impl InternalKeyComparator {
    /// Internal keys over the user comparator `user`.
    pub fn new(user: Arc<dyn Comparator>) -> Self {
        let bytewise = user.name() == BytewiseComparator::NAME;
        let name = format!("lithify.InternalKeyComparator:{}", user.name());
        InternalKeyComparator {
            user,
            bytewise,
            name,
        }
    }

    /// Internal keys over [`BytewiseComparator`].
    pub fn bytewise() -> Self {
        Self::new(Arc::new(BytewiseComparator))
    }

    /// The user comparator.
    pub fn user_comparator(&self) -> &Arc<dyn Comparator> {
        &self.user
    }

    /// Compares two user keys with the user comparator.
    #[inline]
    pub fn compare_user(&self, a: &[u8], b: &[u8]) -> Ordering {
        if self.bytewise {
            a.cmp(b)
        } else {
            self.user.compare(a, b)
        }
    }
}

impl Comparator for InternalKeyComparator {
    fn name(&self) -> &str {
        &self.name
    }

    #[inline]
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        self.compare_user(user_key(a), user_key(b))
            .then_with(|| trailer(b).cmp(&trailer(a)))
    }

    #[inline]
    fn equal(&self, a: &[u8], b: &[u8]) -> bool {
        if self.bytewise {
            a == b
        } else {
            self.compare(a, b) == Ordering::Equal
        }
    }

    fn separator(&self, start: &[u8], limit: &[u8], out: &mut Vec<u8>) {
        // Shorten the user key; if that made it strictly larger, pair it with
        // the earliest possible trailer so it still sorts before `limit`.
        let (us, ul) = (user_key(start), user_key(limit));
        let mut short = Vec::new();
        self.user.separator(us, ul, &mut short);
        out.clear();
        if short.len() < us.len() && self.user.compare(us, &short).is_lt() {
            append_internal_key(out, &short, MAX_SEQNO, KIND_FOR_SEEK);
        } else {
            out.extend_from_slice(start);
        }
    }

    fn successor(&self, key: &[u8], out: &mut Vec<u8>) {
        let uk = user_key(key);
        let mut short = Vec::new();
        self.user.successor(uk, &mut short);
        out.clear();
        if short.len() < uk.len() && self.user.compare(uk, &short).is_lt() {
            append_internal_key(out, &short, MAX_SEQNO, KIND_FOR_SEEK);
        } else {
            out.extend_from_slice(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{InternalKey, ValueKind};
    use proptest::prelude::*;

    #[test]
    fn bytewise_separator_cases() {
        let cmp = BytewiseComparator;
        let mut out = Vec::new();
        let cases: &[(&[u8], &[u8], &[u8])] = &[
            (b"abcdef", b"abzz", b"abd"),
            (b"abc", b"abd", b"abc"),    // bump would equal limit
            (b"abc", b"abcdef", b"abc"), // prefix
            (b"a\xff", b"b", b"a\xff"),  // cannot bump 0xff... first diff is 'a' vs 'b'
            (b"", b"x", b""),
        ];
        for &(start, limit, want) in cases {
            cmp.separator(start, limit, &mut out);
            assert_eq!(out, want, "{start:?} {limit:?}");
        }
        cmp.successor(b"\xff\xffab", &mut out);
        assert_eq!(out, b"\xff\xffb");
        cmp.successor(b"\xff\xff", &mut out);
        assert_eq!(out, b"\xff\xff");
    }

    proptest! {
        #[test]
        fn separator_is_between(a in proptest::collection::vec(any::<u8>(), 0..8),
                                b in proptest::collection::vec(any::<u8>(), 0..8)) {
            let (start, limit) = if a < b { (a, b) } else { (b, a) };
            prop_assume!(start < limit);
            let mut out = Vec::new();
            BytewiseComparator.separator(&start, &limit, &mut out);
            prop_assert!(start <= out && out < limit);
            BytewiseComparator.successor(&start, &mut out);
            prop_assert!(start <= out);

            let cmp = InternalKeyComparator::bytewise();
            let s = InternalKey::new(&start, 5, ValueKind::Put);
            let l = InternalKey::new(&limit, 9, ValueKind::Put);
            cmp.separator(s.encoded(), l.encoded(), &mut out);
            prop_assert!(cmp.compare(s.encoded(), &out).is_le());
            prop_assert!(cmp.compare(&out, l.encoded()).is_lt());
            cmp.successor(s.encoded(), &mut out);
            prop_assert!(cmp.compare(s.encoded(), &out).is_le());
        }
    }
}
