//! Merging any number of sorted iterators into one.

use std::cmp::Ordering;

use bytes::Bytes;

use super::InternalIterator;
use crate::comparator::Comparator;
use crate::error::Result;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Backward,
}

/// Merges child iterators into one sorted stream, forward and backward.
///
/// Children are kept in a binary heap keyed by their current key: a min-heap
/// while moving forward, a max-heap while moving backward. When two children
/// hold equal keys, the child with the **lower index comes first** in forward
/// order (and last in backward order), so a caller that lists newer sources
/// first sees them first. Changing direction re-seeks every other child
/// around the current key, as LevelDB's merging iterator does.
///
/// ```
/// use lithify_base::{BytewiseComparator, InternalIterator, MergingIterator, VecIterator};
///
/// let a = VecIterator::new(BytewiseComparator, vec![(&b"a"[..], &b"1"[..]), (b"c", b"3")]);
/// let b = VecIterator::new(BytewiseComparator, vec![(&b"b"[..], &b"2"[..])]);
/// let mut merged = MergingIterator::new(BytewiseComparator, vec![a, b]);
/// merged.first().unwrap();
/// let mut keys = Vec::new();
/// while merged.valid() {
///     keys.push(merged.key().to_vec());
///     merged.next().unwrap();
/// }
/// assert_eq!(keys, [b"a", b"b", b"c"]);
/// ```
#[derive(Debug)]
pub struct MergingIterator<I, C> {
    cmp: C,
    children: Vec<I>,
    /// Indices of the valid children, in heap order.
    heap: Vec<usize>,
    direction: Direction,
}

impl<I: InternalIterator, C: Comparator> MergingIterator<I, C> {
    /// Merges `children` under `cmp`.
    pub fn new(cmp: C, children: Vec<I>) -> Self {
        let heap = Vec::with_capacity(children.len());
        MergingIterator {
            cmp,
            children,
            heap,
            direction: Direction::Forward,
        }
    }

    /// The children, in the order given.
    pub fn children(&self) -> &[I] {
        &self.children
    }

    /// Mutable access to the children (repositioning one invalidates the
    /// merged position; reposition the merging iterator afterwards).
    pub fn children_mut(&mut self) -> &mut [I] {
        self.heap.clear();
        &mut self.children
    }

    /// The index of the child the cursor is on.
    pub fn current_child(&self) -> Option<usize> {
        self.heap.first().copied()
    }

    /// Whether child `a` belongs above child `b` in the heap.
    #[inline]
    fn above(&self, a: usize, b: usize) -> bool {
        let ord = self
            .cmp
            .compare(self.children[a].key(), self.children[b].key())
            .then(a.cmp(&b));
        match self.direction {
            Direction::Forward => ord == Ordering::Less,
            Direction::Backward => ord == Ordering::Greater,
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let left = 2 * i + 1;
            if left >= n {
                return;
            }
            let right = left + 1;
            let child = if right < n && self.above(self.heap[right], self.heap[left]) {
                right
            } else {
                left
            };
            if self.above(self.heap[child], self.heap[i]) {
                self.heap.swap(i, child);
                i = child;
            } else {
                return;
            }
        }
    }

    fn rebuild(&mut self, direction: Direction) {
        self.direction = direction;
        self.heap.clear();
        self.heap
            .extend((0..self.children.len()).filter(|&i| self.children[i].valid()));
        for i in (0..self.heap.len() / 2).rev() {
            self.sift_down(i);
        }
    }

    /// Runs `op` on every child, then rebuilds the heap for `direction`.
    fn position_all(
        &mut self,
        direction: Direction,
        mut op: impl FnMut(&mut I) -> Result<()>,
    ) -> Result<()> {
        self.heap.clear();
        for child in &mut self.children {
            op(child)?;
        }
        self.rebuild(direction);
        Ok(())
    }

    /// After the top child moved, restores the heap.
    fn fix_top(&mut self) {
        let top = self.heap[0];
        if self.children[top].valid() {
            self.sift_down(0);
        } else {
            let last = self.heap.len() - 1;
            self.heap.swap(0, last);
            self.heap.pop();
            self.sift_down(0);
        }
    }

    fn switch_to_forward(&mut self) -> Result<()> {
        let current = self.heap[0];
        let key = self.children[current].key().to_vec();
        self.heap.clear();
        for i in 0..self.children.len() {
            if i == current {
                continue;
            }
            let child = &mut self.children[i];
            child.seek_ge(&key)?;
            // Equal keys of lower-index children come before the current
            // entry in forward order: they were already passed.
            if i < current && child.valid() && self.cmp.equal(child.key(), &key) {
                child.next()?;
            }
        }
        self.rebuild(Direction::Forward);
        Ok(())
    }

    fn switch_to_backward(&mut self) -> Result<()> {
        let current = self.heap[0];
        let key = self.children[current].key().to_vec();
        self.heap.clear();
        for i in 0..self.children.len() {
            if i == current {
                continue;
            }
            let child = &mut self.children[i];
            if i < current {
                // An equal key of a lower-index child precedes the current
                // entry: keep it. Anything greater is behind us.
                child.seek_ge(&key)?;
                if !child.valid() {
                    child.last()?;
                } else if !self.cmp.equal(child.key(), &key) {
                    child.prev()?;
                }
            } else {
                child.seek_lt(&key)?;
            }
        }
        self.rebuild(Direction::Backward);
        Ok(())
    }
}

impl<I: InternalIterator, C: Comparator> InternalIterator for MergingIterator<I, C> {
    fn seek_ge(&mut self, target: &[u8]) -> Result<()> {
        self.position_all(Direction::Forward, |c| c.seek_ge(target))
    }

    fn seek_lt(&mut self, target: &[u8]) -> Result<()> {
        self.position_all(Direction::Backward, |c| c.seek_lt(target))
    }

    fn first(&mut self) -> Result<()> {
        self.position_all(Direction::Forward, |c| c.first())
    }

    fn last(&mut self) -> Result<()> {
        self.position_all(Direction::Backward, |c| c.last())
    }

    fn next(&mut self) -> Result<()> {
        if self.heap.is_empty() {
            return Ok(());
        }
        if self.direction == Direction::Backward
            && let Err(e) = self.switch_to_forward()
        {
            self.heap.clear();
            return Err(e);
        }
        let top = self.heap[0];
        if let Err(e) = self.children[top].next() {
            self.heap.clear();
            return Err(e);
        }
        self.fix_top();
        Ok(())
    }

    fn prev(&mut self) -> Result<()> {
        if self.heap.is_empty() {
            return Ok(());
        }
        if self.direction == Direction::Forward
            && let Err(e) = self.switch_to_backward()
        {
            self.heap.clear();
            return Err(e);
        }
        let top = self.heap[0];
        if let Err(e) = self.children[top].prev() {
            self.heap.clear();
            return Err(e);
        }
        self.fix_top();
        Ok(())
    }

    #[inline]
    fn valid(&self) -> bool {
        !self.heap.is_empty()
    }

    #[inline]
    fn key(&self) -> &[u8] {
        self.children[self.heap[0]].key()
    }

    #[inline]
    fn value(&self) -> &[u8] {
        self.children[self.heap[0]].value()
    }

    fn value_bytes(&self) -> Bytes {
        self.children[self.heap[0]].value_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comparator::BytewiseComparator;
    use crate::error::Error;
    use crate::iter::VecIterator;
    use proptest::prelude::*;

    type Entry = (Vec<u8>, Vec<u8>);

    fn collect_forward(it: &mut impl InternalIterator) -> Vec<Entry> {
        let mut out = Vec::new();
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.next().unwrap();
        }
        out
    }

    fn collect_backward(it: &mut impl InternalIterator) -> Vec<Entry> {
        let mut out = Vec::new();
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.prev().unwrap();
        }
        out
    }

    /// The merged order: by key, ties by child index.
    fn reference(children: &[Vec<Vec<u8>>]) -> Vec<Entry> {
        let mut all: Vec<(Vec<u8>, usize)> = Vec::new();
        for (i, keys) in children.iter().enumerate() {
            for k in keys {
                all.push((k.clone(), i));
            }
        }
        all.sort();
        all.into_iter().map(|(k, i)| (k, vec![i as u8])).collect()
    }

    fn build(
        children: &[Vec<Vec<u8>>],
    ) -> MergingIterator<VecIterator<BytewiseComparator>, BytewiseComparator> {
        let iters = children
            .iter()
            .enumerate()
            .map(|(i, keys)| {
                VecIterator::new(
                    BytewiseComparator,
                    keys.iter().map(|k| (k.clone(), vec![i as u8])).collect(),
                )
            })
            .collect();
        MergingIterator::new(BytewiseComparator, iters)
    }

    fn children_strategy() -> impl Strategy<Value = Vec<Vec<Vec<u8>>>> {
        proptest::collection::vec(
            proptest::collection::btree_set(proptest::collection::vec(0u8..6, 0..3), 0..8)
                .prop_map(|s| s.into_iter().collect::<Vec<_>>()),
            0..5,
        )
    }

    #[derive(Debug, Clone)]
    enum Op {
        First,
        Last,
        SeekGe(Vec<u8>),
        SeekLt(Vec<u8>),
        Next,
        Prev,
    }

    fn op_strategy() -> impl Strategy<Value = Op> {
        let key = proptest::collection::vec(0u8..6, 0..3);
        prop_oneof![
            Just(Op::First),
            Just(Op::Last),
            key.clone().prop_map(Op::SeekGe),
            key.prop_map(Op::SeekLt),
            Just(Op::Next),
            Just(Op::Next),
            Just(Op::Prev),
            Just(Op::Prev),
        ]
    }

    proptest! {
        #[test]
        fn full_scans_match_sorted_vec(children in children_strategy()) {
            let want = reference(&children);
            let mut it = build(&children);
            it.first().unwrap();
            prop_assert_eq!(collect_forward(&mut it), want.clone());
            it.last().unwrap();
            let mut back = collect_backward(&mut it);
            back.reverse();
            prop_assert_eq!(back, want);
        }

        #[test]
        fn random_ops_match_sorted_vec(children in children_strategy(),
                                       ops in proptest::collection::vec(op_strategy(), 1..40)) {
            let want = reference(&children);
            let mut it = build(&children);
            // Position in `want`, or None.
            let mut pos: Option<usize> = None;
            for op in ops {
                match op {
                    Op::First => { it.first().unwrap(); pos = (!want.is_empty()).then_some(0); }
                    Op::Last => { it.last().unwrap(); pos = want.len().checked_sub(1); }
                    Op::SeekGe(k) => {
                        it.seek_ge(&k).unwrap();
                        let i = want.partition_point(|(x, _)| *x < k);
                        pos = (i < want.len()).then_some(i);
                    }
                    Op::SeekLt(k) => {
                        it.seek_lt(&k).unwrap();
                        pos = want.partition_point(|(x, _)| *x < k).checked_sub(1);
                    }
                    Op::Next => {
                        if pos.is_none() { continue; }
                        it.next().unwrap();
                        pos = pos.map(|p| p + 1).filter(|&p| p < want.len());
                    }
                    Op::Prev => {
                        if pos.is_none() { continue; }
                        it.prev().unwrap();
                        pos = pos.and_then(|p| p.checked_sub(1));
                    }
                }
                prop_assert_eq!(it.valid(), pos.is_some());
                if let Some(p) = pos {
                    prop_assert_eq!(it.key(), &want[p].0[..]);
                    prop_assert_eq!(it.value(), &want[p].1[..]);
                }
            }
        }
    }

    /// A child that fails every positioning call after `ok_calls` calls.
    struct Failing {
        inner: VecIterator<BytewiseComparator>,
        ok_calls: usize,
    }

    impl Failing {
        fn tick(&mut self) -> Result<()> {
            if self.ok_calls == 0 {
                return Err(Error::corruption("child.sst", 42, "injected"));
            }
            self.ok_calls -= 1;
            Ok(())
        }
    }

    impl InternalIterator for Failing {
        fn seek_ge(&mut self, t: &[u8]) -> Result<()> {
            self.tick()?;
            self.inner.seek_ge(t)
        }
        fn seek_lt(&mut self, t: &[u8]) -> Result<()> {
            self.tick()?;
            self.inner.seek_lt(t)
        }
        fn first(&mut self) -> Result<()> {
            self.tick()?;
            self.inner.first()
        }
        fn last(&mut self) -> Result<()> {
            self.tick()?;
            self.inner.last()
        }
        fn next(&mut self) -> Result<()> {
            self.tick()?;
            self.inner.next()
        }
        fn prev(&mut self) -> Result<()> {
            self.tick()?;
            self.inner.prev()
        }
        fn valid(&self) -> bool {
            self.inner.valid()
        }
        fn key(&self) -> &[u8] {
            self.inner.key()
        }
        fn value(&self) -> &[u8] {
            self.inner.value()
        }
    }

    #[test]
    fn child_errors_surface_and_invalidate() {
        let entries = vec![
            (b"a".to_vec(), b"1".to_vec()),
            (b"b".to_vec(), b"2".to_vec()),
        ];
        let children = vec![Failing {
            inner: VecIterator::new(BytewiseComparator, entries),
            ok_calls: 1,
        }];
        let mut it = MergingIterator::new(BytewiseComparator, children);
        it.first().unwrap();
        assert!(it.valid());
        let err = it.next().unwrap_err();
        assert!(err.is_corruption());
        assert!(!it.valid());
    }
}
