//! `BaseDeltaIterator`: a cursor over a table as the database shows it
//! (the *base*) with a batch's writes applied (the *delta*), in both
//! directions (RocksDB's `BaseDeltaIterator`).
//!
//! The base is the engine's [`RawIterator`]; the delta is the batch's
//! sorted index. Each move finds the nearest key past the current one in
//! the direction of travel on both sides: a key the batch wrote takes the
//! batch's value (merge operands applied to the base's value of the same
//! key), a key the batch deleted is skipped, and a base key a range
//! deletion of the batch covers is skipped. Changing direction re-seeks
//! the base to the current key.

use std::cell::Ref;
use std::ops::Bound;

use bytes::Bytes;
use lithify_engine::{RawIterator, ReadOptions, Table};

use crate::error::Result;
use crate::indexed_batch::{KeyState, OrdKey, TableIndex, resolve};

/// A cursor over a table with a batch's writes applied; see
/// [`WriteBatchWithIndex::iter`](crate::WriteBatchWithIndex::iter).
///
/// Its moves return `Result` (reads can fail); [`entry`](Self::entry) is
/// the current key and value, `None` once the cursor ran off either end.
pub struct BaseDeltaIterator<'a> {
    table: Table,
    base: RawIterator,
    delta: Option<Ref<'a, TableIndex>>,
    /// The batch's encoding, where the index's values lie.
    rep: &'a [u8],
    lower: Option<Bytes>,
    upper: Option<Bytes>,
    current: Option<(Bytes, Bytes)>,
    /// The direction of the last move (the base is positioned for it).
    forward: bool,
}

impl std::fmt::Debug for BaseDeltaIterator<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BaseDeltaIterator")
            .field("table", &self.table.name())
            .field("current", &self.current)
            .finish_non_exhaustive()
    }
}

impl<'a> BaseDeltaIterator<'a> {
    pub(crate) fn new(
        table: &Table,
        read: &ReadOptions,
        delta: Option<Ref<'a, TableIndex>>,
        rep: &'a [u8],
    ) -> Result<Self> {
        Ok(BaseDeltaIterator {
            table: table.clone(),
            base: table.raw_iterator(read)?,
            delta,
            rep,
            lower: read.lower_bound.clone(),
            upper: read.upper_bound.clone(),
            current: None,
            forward: true,
        })
    }

    /// Whether the cursor is on a key.
    pub fn valid(&self) -> bool {
        self.current.is_some()
    }

    /// The current key and value.
    pub fn entry(&self) -> Option<(&[u8], &[u8])> {
        self.current.as_ref().map(|(k, v)| (&k[..], &v[..]))
    }

    /// The current key.
    pub fn key(&self) -> Option<&[u8]> {
        self.current.as_ref().map(|(k, _)| &k[..])
    }

    /// The current value.
    pub fn value(&self) -> Option<&[u8]> {
        self.current.as_ref().map(|(_, v)| &v[..])
    }

    /// Moves to the first key (at or after the lower bound).
    pub fn seek_to_first(&mut self) -> Result<()> {
        self.base.seek_to_first()?;
        let from = match &self.lower {
            Some(l) => Bound::Included(l.clone()),
            None => Bound::Unbounded,
        };
        self.settle_forward(from)
    }

    /// Moves to the first key `>= target`.
    pub fn seek(&mut self, target: impl AsRef<[u8]>) -> Result<()> {
        let target = Bytes::copy_from_slice(target.as_ref());
        let target = match &self.lower {
            Some(l) if self.table.comparator().compare(&target, l).is_lt() => l.clone(),
            _ => target,
        };
        self.base.seek(&target)?;
        self.settle_forward(Bound::Included(target))
    }

    /// Moves to the last key (before the upper bound).
    pub fn seek_to_last(&mut self) -> Result<()> {
        self.base.seek_to_last()?;
        let from = match &self.upper {
            Some(u) => Bound::Excluded(u.clone()),
            None => Bound::Unbounded,
        };
        self.settle_backward(from)
    }

    /// Moves to the last key `<= target`.
    pub fn seek_for_prev(&mut self, target: impl AsRef<[u8]>) -> Result<()> {
        let target = Bytes::copy_from_slice(target.as_ref());
        self.base.seek_for_prev(&target)?;
        let from = match &self.upper {
            Some(u) if self.table.comparator().compare(&target, u).is_ge() => {
                Bound::Excluded(u.clone())
            }
            _ => Bound::Included(target),
        };
        self.settle_backward(from)
    }

    /// Moves to the next key. Does nothing on an invalid cursor.
    // RocksDB's cursor API, as the engine's `RawIterator`.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<()> {
        let Some((key, _)) = self.current.clone() else {
            return Ok(());
        };
        if !self.forward {
            self.base.seek(&key)?;
        }
        self.settle_forward(Bound::Excluded(key))
    }

    /// Moves to the previous key. Does nothing on an invalid cursor.
    pub fn prev(&mut self) -> Result<()> {
        let Some((key, _)) = self.current.clone() else {
            return Ok(());
        };
        if self.forward {
            self.base.seek_for_prev(&key)?;
        }
        self.settle_backward(Bound::Excluded(key))
    }

    fn settle_forward(&mut self, from: Bound<Bytes>) -> Result<()> {
        self.settle(from, true)
    }

    fn settle_backward(&mut self, from: Bound<Bytes>) -> Result<()> {
        self.settle(from, false)
    }

    /// Positions on the nearest visible key past `from` in the direction
    /// of travel (the base is at or past `from` already).
    fn settle(&mut self, mut from: Bound<Bytes>, forward: bool) -> Result<()> {
        self.forward = forward;
        let cmp = std::sync::Arc::clone(self.table.comparator());
        // `a` comes before `b` in the direction of travel.
        let ahead = |a: &[u8], b: &[u8]| {
            let o = cmp.compare(a, b);
            if forward { o } else { o.reverse() }
        };
        let past = |from: &Bound<Bytes>, k: &[u8]| match from {
            Bound::Included(f) => ahead(k, f).is_ge(),
            Bound::Excluded(f) => ahead(k, f).is_gt(),
            Bound::Unbounded => true,
        };
        loop {
            while let Some(k) = self.base.key() {
                if past(&from, k) {
                    break;
                }
                step(&mut self.base, forward)?;
            }
            let delta = self.delta.as_deref().and_then(|d| {
                if forward {
                    delta_after(d, &from, self.upper.as_ref())
                } else {
                    delta_before(d, &from, self.lower.as_ref())
                }
            });
            let delta_first = match (&delta, self.base.key()) {
                (None, None) => {
                    self.current = None;
                    return Ok(());
                }
                (Some((dk, _)), Some(bk)) => ahead(dk, bk).is_le(),
                (Some(_), None) => true,
                (None, Some(_)) => false,
            };
            match delta {
                Some((dk, state)) if delta_first => {
                    let same = self
                        .base
                        .key()
                        .is_some_and(|bk| cmp.compare(&dk, bk).is_eq());
                    let below = if same { self.base.value() } else { None };
                    let v = resolve(&self.table, &dk, state, self.rep, below)?;
                    if same {
                        step(&mut self.base, forward)?;
                    }
                    from = Bound::Excluded(dk.clone());
                    if let Some(v) = v {
                        self.current = Some((dk, v));
                        return Ok(());
                    }
                }
                _ => {
                    let bk = Bytes::copy_from_slice(self.base.key().unwrap_or_default());
                    if self.delta.as_deref().is_some_and(|d| d.range_deleted(&bk)) {
                        step(&mut self.base, forward)?;
                        from = Bound::Excluded(bk);
                        continue;
                    }
                    let v = self.base.value_bytes().unwrap_or_default();
                    self.current = Some((bk, v));
                    return Ok(());
                }
            }
        }
    }
}

/// Moves the base one key in the direction of travel.
fn step(base: &mut RawIterator, forward: bool) -> Result<()> {
    if forward { base.next() } else { base.prev() }.map_err(Into::into)
}

/// The batch's first key after `from`, below `upper`.
fn delta_after<'d>(
    d: &'d TableIndex,
    from: &Bound<Bytes>,
    upper: Option<&Bytes>,
) -> Option<(Bytes, &'d KeyState)> {
    let lo = bound_key(from, &d.cmp);
    let hi = match upper {
        Some(u) => Bound::Excluded(OrdKey::new(u.clone(), &d.cmp)),
        None => Bound::Unbounded,
    };
    if !bounds_ordered(&lo, &hi) {
        return None;
    }
    d.keys
        .range((lo, hi))
        .next()
        .map(|(k, s)| (k.key.clone(), s))
}

/// The batch's last key before `from`, at or above `lower`.
fn delta_before<'d>(
    d: &'d TableIndex,
    from: &Bound<Bytes>,
    lower: Option<&Bytes>,
) -> Option<(Bytes, &'d KeyState)> {
    let hi = bound_key(from, &d.cmp);
    let lo = match lower {
        Some(l) => Bound::Included(OrdKey::new(l.clone(), &d.cmp)),
        None => Bound::Unbounded,
    };
    if !bounds_ordered(&lo, &hi) {
        return None;
    }
    d.keys
        .range((lo, hi))
        .next_back()
        .map(|(k, s)| (k.key.clone(), s))
}

fn bound_key(
    b: &Bound<Bytes>,
    cmp: &std::sync::Arc<dyn lithify_base::Comparator>,
) -> Bound<OrdKey> {
    match b {
        Bound::Included(k) => Bound::Included(OrdKey::new(k.clone(), cmp)),
        Bound::Excluded(k) => Bound::Excluded(OrdKey::new(k.clone(), cmp)),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Whether `(lo, hi)` is a range `BTreeMap::range` accepts (it panics on
/// a start after the end, or equal ends both excluded).
fn bounds_ordered(lo: &Bound<OrdKey>, hi: &Bound<OrdKey>) -> bool {
    match (lo, hi) {
        (Bound::Unbounded, _) | (_, Bound::Unbounded) => true,
        (Bound::Included(a), Bound::Included(b)) => a <= b,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => a < b,
    }
}
