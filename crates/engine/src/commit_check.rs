//! Commit checks: a write that commits only if a condition on the database
//! still holds when it commits — the validation of optimistic
//! transactions.
//!
//! [`Db::write_checked`](crate::Db::write_checked) queues its batch with a
//! check. The write group's leader runs the check after every earlier
//! group is in the memtables and before it assigns sequence numbers, so
//! nothing can commit between the check and the write. The check sees the
//! batches ahead of it in its own group as well ([`CommitView`]): they
//! commit before it, so they count as changes. A check that says no
//! leaves its batch out of the group; the other members commit.
//!
//! The questions a check asks — "was this key, or anything in this range,
//! written after sequence number `s`?" — are answered from the newest
//! version of the key: the memtables first, then the files whose largest
//! sequence number is above `s` (files wholly older than `s` are skipped
//! without a read). Range deletions newer than `s` covering the key count.
//! A caller that asks about `s` must hold a snapshot at or below `s`, so
//! that compaction keeps the versions newer than it.

use std::ops::Bound;
use std::sync::Arc as StdArc;

use lithify_base::key::{KIND_FOR_SEEK, MAX_SEQNO, append_internal_key, trailer, unpack_trailer};
use lithify_base::{InternalIterator, InternalKeyComparator, SeqNo, ValueKind};
use lithify_memtable::{Lookup, MemTableIter};
use lithify_version::TableId;

use crate::batch::BatchEntry;
use crate::error::{Error, InvalidArgumentSnafu, Result};
use crate::range_del::covering_seq;
use crate::state::DbInner;
use crate::state::table::TableState;
use crate::super_version::SuperVersion;
use crate::write::Writer;

/// What a commit check run by
/// [`Db::write_checked`](crate::Db::write_checked) sees: the database with
/// every write that commits before the checked batch in place, including
/// the batches ahead of it in its write group.
pub struct CommitView<'a> {
    pub(crate) inner: &'a DbInner,
    /// The members of the group before the checked one (rejected members
    /// hold empty batches).
    pub(crate) earlier: &'a [Writer],
    /// The point keys those members write, by table: built at the second
    /// key a check asks about when they hold many records, so that a
    /// check of many keys after large batches stays linear.
    pub(crate) earlier_keys: std::cell::OnceCell<EarlierKeys>,
    /// Key questions asked so far.
    pub(crate) asked: std::cell::Cell<u32>,
    /// The table of the last question.
    last_table: std::cell::RefCell<Option<StdArc<TableState>>>,
}

/// The keys the members ahead of a check write, and whether any of them
/// deletes a range (then every question scans them).
#[derive(Default)]
pub(crate) struct EarlierKeys {
    points: std::collections::HashMap<TableId, std::collections::HashSet<bytes::Bytes>>,
    range_deletes: bool,
}

/// Records ahead of a check past which its key questions use a hash set.
const INDEX_EARLIER_FROM: usize = 32;

impl<'a> CommitView<'a> {
    pub(crate) fn new(inner: &'a DbInner, earlier: &'a [Writer]) -> Self {
        CommitView {
            inner,
            earlier,
            earlier_keys: std::cell::OnceCell::new(),
            asked: std::cell::Cell::new(0),
            last_table: std::cell::RefCell::new(None),
        }
    }

    /// Whether a member ahead writes `key` of `table` (a point write, or a
    /// range deletion covering it).
    fn written_ahead(&self, table: TableId, key: &[u8], icmp: &InternalKeyComparator) -> bool {
        let asked = self.asked.get() + 1;
        self.asked.set(asked);
        let scan = || {
            self.earlier_entries(table).any(|e| match e.kind {
                ValueKind::RangeDelete => {
                    icmp.compare_user(e.key, key).is_le() && icmp.compare_user(key, e.value).is_lt()
                }
                _ => icmp.compare_user(e.key, key).is_eq(),
            })
        };
        if asked < 2 && self.earlier_keys.get().is_none() {
            return scan();
        }
        let records: usize = self.earlier.iter().map(|w| w.batch.len()).sum();
        if records < INDEX_EARLIER_FROM {
            return scan();
        }
        let index = self.earlier_keys.get_or_init(|| {
            let mut index = EarlierKeys::default();
            for w in self.earlier {
                for e in w.batch.iter().flatten() {
                    if e.kind == ValueKind::RangeDelete {
                        index.range_deletes = true;
                    } else {
                        index
                            .points
                            .entry(e.table)
                            .or_default()
                            .insert(bytes::Bytes::copy_from_slice(e.key));
                    }
                }
            }
            index
        });
        if index.range_deletes {
            return scan();
        }
        index
            .points
            .get(&table)
            .is_some_and(|keys| keys.contains(key))
    }
}

impl CommitView<'_> {
    /// Whether `key` of table `table` was written — put, deleted, merged or
    /// covered by a range deletion — after sequence number `since`.
    pub fn key_changed_since(&self, table: TableId, key: &[u8], since: SeqNo) -> Result<bool> {
        let t = self.table(table)?;
        Ok(self.written_ahead(table, key, &t.icmp) || key_changed_in(self.inner, &t, key, since)?)
    }

    /// Whether any key of table `table` between `start` and `end` was
    /// written after sequence number `since` (a range deletion counts if it
    /// overlaps the range).
    pub fn range_changed_since(
        &self,
        table: TableId,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        since: SeqNo,
    ) -> Result<bool> {
        let t = self.table(table)?;
        let icmp = &t.icmp;
        let in_group = self.earlier_entries(table).any(|e| {
            if e.kind == ValueKind::RangeDelete {
                span_overlaps(icmp, e.key, e.value, start, end)
            } else {
                in_bounds(icmp, e.key, start, end)
            }
        });
        Ok(in_group || range_changed_in(self.inner, &t, start, end, since)?)
    }

    /// The table `id`, looked up once per check (a table other than the
    /// default one is found under the database's state lock).
    fn table(&self, id: TableId) -> Result<StdArc<TableState>> {
        let mut last = self.last_table.borrow_mut();
        if let Some(t) = last.as_ref().filter(|t| t.id == id) {
            return Ok(StdArc::clone(t));
        }
        let t = self.inner.table(id).ok_or_else(|| no_table(id))?;
        *last = Some(StdArc::clone(&t));
        Ok(t)
    }

    /// The records of `table` in the batches ahead in the group.
    fn earlier_entries(&self, table: TableId) -> impl Iterator<Item = BatchEntry<'_>> {
        self.earlier
            .iter()
            .flat_map(|w| w.batch.iter().flatten())
            .filter(move |e| e.table == table)
    }
}

/// Whether `key` lies between `start` and `end`.
fn in_bounds(
    icmp: &InternalKeyComparator,
    key: &[u8],
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
) -> bool {
    let above = match start {
        Bound::Included(s) => icmp.compare_user(s, key).is_le(),
        Bound::Excluded(s) => icmp.compare_user(s, key).is_lt(),
        Bound::Unbounded => true,
    };
    above && below_end(icmp, key, end)
}

/// Whether `key` is not past `end`.
fn below_end(icmp: &InternalKeyComparator, key: &[u8], end: Bound<&[u8]>) -> bool {
    match end {
        Bound::Included(e) => icmp.compare_user(key, e).is_le(),
        Bound::Excluded(e) => icmp.compare_user(key, e).is_lt(),
        Bound::Unbounded => true,
    }
}

/// Whether the span `[span_start, span_end)` (a range deletion) may hold a
/// key between `start` and `end` (with an excluded `start`, a span ending
/// just after it counts: conservative).
fn span_overlaps(
    icmp: &InternalKeyComparator,
    span_start: &[u8],
    span_end: &[u8],
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
) -> bool {
    let starts_before_end = below_end(icmp, span_start, end);
    let ends_after_start = match start {
        Bound::Included(s) | Bound::Excluded(s) => icmp.compare_user(s, span_end).is_lt(),
        Bound::Unbounded => true,
    };
    starts_before_end && ends_after_start
}

/// See [`CommitView::key_changed_since`]; without the group's earlier
/// members.
pub(crate) fn key_changed_since(
    db: &DbInner,
    table: TableId,
    key: &[u8],
    since: SeqNo,
) -> Result<bool> {
    let t = db.table(table).ok_or_else(|| no_table(table))?;
    key_changed_in(db, &t, key, since)
}

/// [`key_changed_since`](Self::key_changed_since) in table `t`.
fn key_changed_in(db: &DbInner, t: &TableState, key: &[u8], since: SeqNo) -> Result<bool> {
    let sv = t.sv.get();
    // The newest layer that decides the key holds its newest version.
    for mem in std::iter::once(&sv.mem).chain(sv.imm.iter()) {
        if mem.last_seqno().is_none_or(|last| last <= since) {
            // Nothing here is newer than `since`, nor in the older
            // memtables (the common, uncontended case: no lookup).
            if mem.last_seqno().is_some() {
                break;
            }
            continue;
        }
        match mem.get(key, MAX_SEQNO) {
            Lookup::NotFound => {}
            Lookup::Found { seqno, .. }
            | Lookup::Deleted { seqno, .. }
            | Lookup::Merge { seqno, .. } => return Ok(seqno > since),
        }
    }
    if sv.max_file_seqno <= since {
        return Ok(false);
    }
    newest_in_files_after(&sv, db, &t.icmp, key, since)
}

/// See [`CommitView::range_changed_since`]; without the group's earlier
/// members.
pub(crate) fn range_changed_since(
    db: &DbInner,
    table: TableId,
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
    since: SeqNo,
) -> Result<bool> {
    let t = db.table(table).ok_or_else(|| no_table(table))?;
    range_changed_in(db, &t, start, end, since)
}

/// [`range_changed_since`](Self::range_changed_since) in table `t`.
fn range_changed_in(
    db: &DbInner,
    t: &TableState,
    start: Bound<&[u8]>,
    end: Bound<&[u8]>,
    since: SeqNo,
) -> Result<bool> {
    let icmp = &t.icmp;
    let sv = t.sv.get();
    let mut seek = Vec::new();
    let seek_from = match start {
        Bound::Included(s) | Bound::Excluded(s) => s,
        Bound::Unbounded => &[][..],
    };
    append_internal_key(&mut seek, seek_from, MAX_SEQNO, KIND_FOR_SEEK);
    let before_end = |user_key: &[u8]| below_end(icmp, user_key, end);
    let in_range = |user_key: &[u8]| in_bounds(icmp, user_key, start, end);
    for mem in std::iter::once(&sv.mem).chain(sv.imm.iter()) {
        if mem.last_seqno().is_none_or(|s| s <= since) {
            continue;
        }
        if mem.num_range_deletes() > 0
            && mem
                .range_tombstones()
                .iter()
                .any(|t| t.seqno > since && span_overlaps(icmp, &t.start, &t.end, start, end))
        {
            return Ok(true);
        }
        let mut it = MemTableIter::new(lithify_base::sync::Arc::clone(mem));
        it.seek_ge(&seek)?;
        while it.valid() && before_end(lithify_base::key::user_key(it.key())) {
            if unpack_trailer(trailer(it.key())).0 > since
                && in_range(lithify_base::key::user_key(it.key()))
            {
                return Ok(true);
            }
            it.next()?;
        }
    }
    let (lo, hi) = (bound_key(start), bound_key(end));
    for files in &sv.levels {
        for h in files {
            if h.meta.largest_seqno <= since || !h.meta.overlaps_user_range(icmp, lo, hi) {
                continue;
            }
            let table = h.sst(&db.opener)?;
            if h.meta.num_range_deletions > 0
                && table.range_tombstones().iter().any(|t| {
                    unpack_trailer(trailer(&t.start)).0 > since
                        && span_overlaps(
                            icmp,
                            lithify_base::key::user_key(&t.start),
                            &t.end,
                            start,
                            end,
                        )
                })
            {
                return Ok(true);
            }
            let mut it = table.iter();
            it.seek_ge(&seek)?;
            while it.valid() && before_end(lithify_base::key::user_key(it.key())) {
                if unpack_trailer(trailer(it.key())).0 > since
                    && in_range(lithify_base::key::user_key(it.key()))
                {
                    return Ok(true);
                }
                it.next()?;
            }
        }
    }
    Ok(false)
}

/// Whether the files of `sv` hold a version of `key`, or a range deletion
/// covering it, newer than `since`. Files wholly at or below `since` are
/// skipped; in the others the key's first entry is its newest version
/// there.
fn newest_in_files_after(
    sv: &SuperVersion,
    inner: &DbInner,
    icmp: &InternalKeyComparator,
    key: &[u8],
    since: SeqNo,
) -> Result<bool> {
    // The seek key, built only if a file must be read.
    let mut seek = Vec::new();
    for (level, files) in sv.levels.iter().enumerate() {
        // L0 files overlap: each may hold the key. Deeper levels are
        // sorted and disjoint: one file may (the first whose largest user
        // key is not below it).
        let candidates = if level == 0 {
            &files[..]
        } else {
            let i = files
                .partition_point(|h| icmp.compare_user(h.meta.largest_user_key(), key).is_lt());
            &files[i..files.len().min(i + 1)]
        };
        for h in candidates {
            if h.meta.largest_seqno <= since || !h.meta.contains_user_key(icmp, key) {
                continue;
            }
            let table = h.sst(&inner.opener)?;
            if h.meta.num_range_deletions > 0
                && covering_seq(icmp, table.range_tombstones(), key, MAX_SEQNO) > since
            {
                return Ok(true);
            }
            if seek.is_empty() {
                append_internal_key(&mut seek, key, MAX_SEQNO, KIND_FOR_SEEK);
            }
            if !table.may_contain(table.key_schema().filter_key(&seek)) {
                continue;
            }
            let mut it = table.iter();
            it.seek_ge(&seek)?;
            if it.valid()
                && icmp
                    .compare_user(lithify_base::key::user_key(it.key()), key)
                    .is_eq()
            {
                // The newest version in this file; deeper ones are older.
                return Ok(unpack_trailer(trailer(it.key())).0 > since);
            }
        }
    }
    Ok(false)
}

fn bound_key(b: Bound<&[u8]>) -> Option<&[u8]> {
    match b {
        Bound::Included(k) | Bound::Excluded(k) => Some(k),
        Bound::Unbounded => None,
    }
}

fn no_table(table: TableId) -> crate::Error {
    InvalidArgumentSnafu {
        message: format!("no table with id {table}"),
    }
    .build()
}

/// A checked write's check and its verdict, shared by the writer and the
/// leader that runs it: one allocation per checked write. The rare error
/// is boxed so that the allocation stays small — a slot holding the
/// engine's error inline (144 bytes) left the allocator's per-thread cache
/// and took its arena lock on every free, contending with the flush thread.
struct Checked<F, R> {
    check: lithify_base::sync::Mutex<Option<F>>,
    verdict: lithify_base::sync::Mutex<Option<Verdict<R>>>,
}

/// What a check returned: its error boxed.
type Verdict<R> = std::result::Result<std::result::Result<(), R>, Box<Error>>;

impl<F, R> crate::write::RunCheck for Checked<F, R>
where
    R: Send,
    F: FnOnce(&CommitView<'_>) -> Result<std::result::Result<(), R>> + Send,
{
    fn run(&self, db: &DbInner, earlier: &[Writer]) -> bool {
        let Some(check) = self.check.lock().take() else {
            return false;
        };
        let r = check(&CommitView::new(db, earlier));
        let commit = matches!(r, Ok(Ok(())));
        *self.verdict.lock() = Some(r.map_err(Box::new));
        commit
    }
}

/// See [`Db::write_checked`](crate::Db::write_checked).
pub(crate) fn write_checked<R, F>(
    db: &DbInner,
    batch: crate::WriteBatch,
    options: &crate::WriteOptions,
    check: F,
) -> Result<std::result::Result<(), R>>
where
    R: Send + 'static,
    F: FnOnce(&CommitView<'_>) -> Result<std::result::Result<(), R>> + Send + 'static,
{
    let checked = StdArc::new(Checked {
        check: lithify_base::sync::Mutex::new(Some(check)),
        verdict: lithify_base::sync::Mutex::new(None),
    });
    let run: crate::write::CommitCheck = StdArc::clone(&checked) as _;
    crate::write::write_batch_checked(db, batch, options, None, Some(run))?;
    let verdict = checked.verdict.lock().take();
    verdict
        .expect("a group that committed ran its members' checks")
        .map_err(|e| *e)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::write::{Writer, run_commit_checks};
    use crate::{Db, Options, WriteBatch, WriteOptions};

    /// A check from a closure that says whether to commit.
    struct FnCheck<F>(lithify_base::sync::Mutex<Option<F>>);

    impl<F: FnOnce(&CommitView<'_>) -> bool + Send> crate::write::RunCheck for FnCheck<F> {
        fn run(&self, db: &DbInner, earlier: &[Writer]) -> bool {
            self.0
                .lock()
                .take()
                .is_some_and(|f| f(&CommitView::new(db, earlier)))
        }
    }

    fn check_fn(
        f: impl FnOnce(&CommitView<'_>) -> bool + Send + 'static,
    ) -> crate::write::CommitCheck {
        StdArc::new(FnCheck(lithify_base::sync::Mutex::new(Some(f))))
    }

    fn writer(batch: WriteBatch, check: Option<crate::write::CommitCheck>) -> Writer {
        Writer {
            batch,
            options: WriteOptions::default(),
            switch_table: None,
            solo: None,
            check,
        }
    }

    fn put(key: &[u8]) -> WriteBatch {
        let mut b = WriteBatch::new();
        b.put(key, b"v");
        b
    }

    /// A check that rejects if `key` changed after `since`.
    fn unchanged(key: &'static [u8], since: SeqNo) -> crate::write::CommitCheck {
        check_fn(move |view: &CommitView<'_>| !view.key_changed_since(0, key, since).unwrap())
    }

    #[test]
    fn a_check_sees_the_members_ahead_of_it_in_its_group() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        db.put(b"old", b"v").unwrap();
        let since = db.latest_sequence_number();
        let mut group = vec![
            // A plain write of `a`, then two checked writes that read `a`
            // and `b` at `since`, then one that read `a` but is behind a
            // rejected member only.
            writer(put(b"a"), None),
            writer(put(b"x"), Some(unchanged(b"a", since))),
            writer(put(b"b"), Some(unchanged(b"old", since))),
            writer(put(b"y"), Some(unchanged(b"b", since))),
            writer(put(b"z"), Some(unchanged(b"x", since))),
        ];
        run_commit_checks(db.inner(), &mut group);
        let kept: Vec<bool> = group.iter().map(|w| !w.batch.is_empty()).collect();
        // x's check: `a` written ahead -> rejected; b's: `old` unchanged ->
        // kept; y's: `b` written ahead -> rejected; z's: `x` was rejected,
        // so it is not ahead -> kept.
        assert_eq!(kept, [true, false, true, false, true]);
    }

    #[test]
    fn many_keys_after_large_batches_use_the_key_set() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        let since = db.latest_sequence_number();
        let mut big = WriteBatch::new();
        for i in 0..40 {
            big.put(format!("k{i}"), b"v");
        }
        let none_of = |keys: &'static [&'static str]| -> crate::write::CommitCheck {
            check_fn(move |view: &CommitView<'_>| {
                let ok = keys
                    .iter()
                    .all(|k| !view.key_changed_since(0, k.as_bytes(), since).unwrap());
                // Past the first question, a group this large is indexed.
                assert!(keys.len() < 2 || view.earlier_keys.get().is_some());
                ok
            })
        };
        let mut del = WriteBatch::new();
        del.delete_range(b"r0", b"r5");
        let mut group = vec![
            writer(big, None),
            writer(put(b"x"), Some(none_of(&["a", "b", "c", "k39"]))),
            writer(put(b"y"), Some(none_of(&["a", "b", "k40", "x"]))),
            writer(del, None),
            writer(put(b"z"), Some(none_of(&["a", "b", "r3"]))),
            writer(put(b"w"), Some(none_of(&["a", "b", "r7"]))),
        ];
        run_commit_checks(db.inner(), &mut group);
        let kept: Vec<bool> = group.iter().map(|w| !w.batch.is_empty()).collect();
        // x: k39 written ahead; y: x was rejected, the rest absent; z: r3
        // in a range deleted ahead; w: r7 outside it.
        assert_eq!(kept, [true, false, true, true, false, true]);
    }

    #[test]
    fn range_checks_see_points_and_range_deletions_ahead() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        let since = db.latest_sequence_number();
        let range_unchanged = |lo: &'static [u8], hi: &'static [u8]| -> crate::write::CommitCheck {
            check_fn(move |view: &CommitView<'_>| {
                !view
                    .range_changed_since(0, Bound::Included(lo), Bound::Excluded(hi), since)
                    .unwrap()
            })
        };
        let mut del = WriteBatch::new();
        del.delete_range(b"m", b"p");
        let mut group = vec![
            writer(put(b"c"), None),
            writer(del, None),
            writer(put(b"1"), Some(range_unchanged(b"a", b"c"))),
            writer(put(b"2"), Some(range_unchanged(b"a", b"d"))),
            writer(put(b"3"), Some(range_unchanged(b"o", b"z"))),
            writer(put(b"4"), Some(range_unchanged(b"p", b"z"))),
        ];
        run_commit_checks(db.inner(), &mut group);
        let kept: Vec<bool> = group.iter().map(|w| !w.batch.is_empty()).collect();
        assert_eq!(kept, [true, true, true, false, false, true]);
    }

    #[test]
    fn changes_are_found_in_memtables_and_files_and_by_range_deletions() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), Options::default()).unwrap();
        db.put(b"k", b"1").unwrap();
        let s1 = db.latest_sequence_number();
        let _snap = db.snapshot();
        assert!(!db.key_changed_since(0, b"k", s1).unwrap());
        assert!(db.key_changed_since(0, b"k", s1 - 1).unwrap());
        db.flush().unwrap();
        assert!(!db.key_changed_since(0, b"k", s1).unwrap());
        assert!(db.key_changed_since(0, b"k", s1 - 1).unwrap());
        db.delete_range(b"j", b"l").unwrap();
        assert!(db.key_changed_since(0, b"k", s1).unwrap());
        let s2 = db.latest_sequence_number();
        db.flush().unwrap();
        assert!(db.key_changed_since(0, b"k", s1).unwrap());
        assert!(!db.key_changed_since(0, b"k", s2).unwrap());
        assert!(!db.key_changed_since(0, b"absent", 0).unwrap());
        assert!(
            db.range_changed_since(0, Bound::Included(b"a"), Bound::Excluded(b"z"), s1)
                .unwrap()
        );
        assert!(
            !db.range_changed_since(0, Bound::Included(b"a"), Bound::Excluded(b"z"), s2)
                .unwrap()
        );
        assert!(
            !db.range_changed_since(0, Bound::Excluded(b"l"), Bound::Unbounded, s1)
                .unwrap()
        );
    }
}
