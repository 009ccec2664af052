//! Merge operands and single deletes through the engine: the operator
//! recorded in the MANIFEST and checked at open, reads without an operator,
//! failed merges, snapshots, iterators both ways across layers, and the
//! single-delete cases RocksDB leaves undefined.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::small_options;
use lithify_base::ErrorKind;
use lithify_engine::{
    BottommostLevelCompaction, CompactRangeOptions, Db, Max, MergeFailureScope, MergeOperator,
    Options, ReadOptions, StringAppend, UInt64Add, WriteBatch,
};
use lithify_vfs::MemFs;

fn with_operator(fs: &Arc<MemFs>, op: Option<Arc<dyn MergeOperator>>) -> Options {
    small_options(fs.clone()).merge_operator(op)
}

fn u64_of(v: &[u8]) -> u64 {
    u64::from_le_bytes(v.try_into().expect("8 bytes"))
}

#[test]
fn the_operator_is_recorded_and_a_different_one_refused() {
    let fs = Arc::new(MemFs::new());
    let add: Arc<dyn MergeOperator> = Arc::new(UInt64Add);
    let db = Db::open("/db", with_operator(&fs, Some(add.clone()))).unwrap();
    db.put(b"plain", b"value").unwrap();
    db.merge(b"count", 5u64.to_le_bytes()).unwrap();
    db.merge(b"count", 2u64.to_le_bytes()).unwrap();
    db.close().unwrap();

    // Another operator: refused, naming both.
    let err = Db::open("/db", with_operator(&fs, Some(Arc::new(Max)))).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    let text = err.to_string();
    assert!(
        text.contains("UInt64AddOperator") && text.contains("MaxOperator"),
        "{text}"
    );

    // No operator: the database opens, keys without operands read, a key
    // with operands fails naming the recorded operator, merges are refused.
    for read_only in [false, true] {
        let opts = with_operator(&fs, None);
        let db = if read_only {
            Db::open_read_only("/db", opts).unwrap()
        } else {
            Db::open("/db", opts).unwrap()
        };
        assert_eq!(db.get(b"plain").unwrap().as_deref(), Some(&b"value"[..]));
        let err = db.get(b"count").unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(
            err.to_string().contains("UInt64AddOperator") && err.to_string().contains("count"),
            "{err}"
        );
        let scan_err = db
            .iter()
            .find_map(Result::err)
            .expect("the scan fails at count");
        assert!(
            scan_err.to_string().contains("UInt64AddOperator"),
            "{scan_err}"
        );
        if !read_only {
            let err = db.merge(b"count", 1u64.to_le_bytes()).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidArgument);
            // Flushes and compactions carry the operands unresolved.
            db.flush().unwrap();
            db.compact_range(None, None).unwrap();
        }
        db.close().unwrap();
    }

    // The right operator again: nothing was lost.
    let db = Db::open("/db", with_operator(&fs, Some(add))).unwrap();
    assert_eq!(u64_of(&db.get(b"count").unwrap().unwrap()), 7);
    // Rewriting the last level merges the operands carried down there.
    let force = CompactRangeOptions::default()
        .bottommost_level_compaction(BottommostLevelCompaction::Force);
    db.compact_range_opt(None, None, &force).unwrap();
    assert_eq!(u64_of(&db.get(b"count").unwrap().unwrap()), 7);
    let stats = db.stats();
    assert!(stats.merges.full_merges >= 1, "{:?}", stats.merges);
    db.close().unwrap();
}

/// Appends operands with `+`, and cannot merge the operand `bad` while it
/// is `strict` (a later fixed version of the operator, or data fixed by
/// hand, is what `tolerant` stands for).
struct Fussy {
    scope: MergeFailureScope,
    strict: AtomicBool,
}

impl Fussy {
    fn new(scope: MergeFailureScope) -> Arc<Fussy> {
        Arc::new(Fussy {
            scope,
            strict: AtomicBool::new(true),
        })
    }
}

impl MergeOperator for Fussy {
    fn name(&self) -> &str {
        "fussy"
    }
    fn full_merge(&self, _: &[u8], base: Option<&[u8]>, ops: &[&[u8]]) -> Option<Vec<u8>> {
        let mut v = base.unwrap_or(b"_").to_vec();
        for op in ops {
            if *op == b"bad" && self.strict.load(Ordering::Relaxed) {
                return None;
            }
            v.push(b'+');
            v.extend_from_slice(op);
        }
        Some(v)
    }
    fn failure_scope(&self) -> MergeFailureScope {
        self.scope
    }
}

#[test]
fn a_merge_the_operator_cannot_do_is_an_error_naming_the_key() {
    // RocksDB's default scope, `TryMerge`: a flush that meets the key fails
    // and the database stops taking writes rather than drop the operand.
    let fs = Arc::new(MemFs::new());
    let op = Fussy::new(MergeFailureScope::TryMerge);
    let db = Db::open("/db", with_operator(&fs, Some(op))).unwrap();
    db.put(b"k", b"1").unwrap();
    db.merge(b"k", b"bad").unwrap();
    let err = db.get(b"k").unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(
        err.to_string()
            .contains("merge operator fussy failed to merge key k"),
        "{err}"
    );
    assert!(db.flush().is_err());
    assert!(db.put(b"other", b"v").is_err());
}

#[test]
fn a_failed_merge_stays_with_its_key() {
    let fs = Arc::new(MemFs::new());
    let op = Fussy::new(MergeFailureScope::MustMerge);
    let db = Db::open("/db", with_operator(&fs, Some(op.clone()))).unwrap();
    db.put(b"a", b"A").unwrap();
    db.put(b"k", b"K").unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap(); // K at the bottom
    db.merge(b"k", b"1").unwrap();
    db.merge(b"k", b"bad").unwrap();
    db.merge(b"k", b"2").unwrap();
    db.delete(b"gone").unwrap();
    db.merge(b"gone", b"bad").unwrap(); // over a tombstone
    db.put(b"z", b"Z").unwrap();

    // Only reads of the key fail, naming it.
    let err = db.get(b"k").unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(err.to_string().contains("key k"), "{err}");
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"A"[..]));
    assert_eq!(db.get(b"z").unwrap().as_deref(), Some(&b"Z"[..]));
    let scan: Vec<_> = db.iter().collect();
    assert_eq!(scan[0].as_ref().unwrap().0, &b"a"[..]);
    assert!(scan[1].is_err(), "iteration reaching `gone` fails there");

    // Flushes and compactions go on and keep the operands unmerged.
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert!(db.background_error().is_none());
    db.put(b"after", b"writes still work").unwrap();
    let stats = db.stats();
    assert!(stats.merges.merge_failures_kept >= 2, "{:?}", stats.merges);
    let failures = db.verify_merges().unwrap();
    let keys: Vec<_> = failures.iter().map(|f| f.key.clone()).collect();
    assert_eq!(keys, [&b"gone"[..], &b"k"[..]]);
    assert!(failures[1].message.contains("key k"), "{:?}", failures[1]);
    db.close().unwrap();

    // Reopened, the same; once the operator accepts the operand, nothing
    // was lost: the base value and every operand are still there, and the
    // tombstone still hides what was below it.
    let db = Db::open("/db", with_operator(&fs, Some(op.clone()))).unwrap();
    assert!(db.get(b"k").is_err());
    op.strict.store(false, Ordering::Relaxed);
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"K+1+bad+2"[..]));
    assert_eq!(db.get(b"gone").unwrap().as_deref(), Some(&b"_+bad"[..]));
    assert!(db.verify_merges().unwrap().is_empty());
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"K+1+bad+2"[..]));
    db.close().unwrap();
}

#[test]
fn uint64add_reads_a_malformed_value_as_zero() {
    // The case: a 1-byte value, then a merge of 5.
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", with_operator(&fs, Some(Arc::new(UInt64Add)))).unwrap();
    db.put(b"a", b"1").unwrap();
    db.merge(b"a", 5u64.to_le_bytes()).unwrap();
    assert_eq!(u64_of(&db.get(b"a").unwrap().unwrap()), 5);
    db.merge(b"a", b"xyz").unwrap(); // a malformed operand adds 0
    assert_eq!(u64_of(&db.get(b"a").unwrap().unwrap()), 5);
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(u64_of(&db.get(b"a").unwrap().unwrap()), 5);
    assert!(db.verify_merges().unwrap().is_empty());
    db.close().unwrap();
}

#[test]
fn verify_merges_names_keys_an_open_without_the_operator_cannot_read() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open(
        "/db",
        with_operator(&fs, Some(Arc::new(StringAppend::default()))),
    )
    .unwrap();
    db.put(b"p", b"plain").unwrap();
    db.merge(b"m", b"x").unwrap();
    db.close().unwrap();
    let db = Db::open_read_only("/db", with_operator(&fs, None)).unwrap();
    let failures = db.verify_merges().unwrap();
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].key, &b"m"[..]);
    assert!(
        failures[0].message.contains("StringAppendOperator"),
        "{:?}",
        failures[0]
    );
}

#[test]
fn operands_across_layers_at_snapshots_and_in_both_directions() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open(
        "/db",
        with_operator(&fs, Some(Arc::new(StringAppend::default()))),
    )
    .unwrap();
    db.put(b"b", b"base").unwrap();
    db.merge(b"b", b"1").unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap(); // base,1 at the bottom
    db.merge(b"b", b"2").unwrap();
    db.flush().unwrap(); // an operand in L0
    let before = db.snapshot();
    db.merge(b"b", b"3").unwrap(); // and one in the memtable
    db.merge(b"a", b"x").unwrap(); // operands over nothing
    db.merge(b"c", b"y").unwrap();
    db.delete_range(b"c", b"d").unwrap();
    db.merge(b"c", b"z").unwrap(); // over a range deletion

    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"base,1,2,3"[..]));
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"x"[..]));
    assert_eq!(db.get(b"c").unwrap().as_deref(), Some(&b"z"[..]));
    let at = ReadOptions::at(&before);
    assert_eq!(
        db.get_opt(b"b", &at).unwrap().as_deref(),
        Some(&b"base,1,2"[..])
    );
    let want: Vec<(&[u8], &[u8])> = vec![(b"a", b"x"), (b"b", b"base,1,2,3"), (b"c", b"z")];
    let forward: Vec<_> = db.iter().map(Result::unwrap).collect();
    let got: Vec<(&[u8], &[u8])> = forward.iter().map(|(k, v)| (&k[..], &v[..])).collect();
    assert_eq!(got, want);
    let backward: Vec<_> = db.iter().rev().map(Result::unwrap).collect();
    let got: Vec<(&[u8], &[u8])> = backward
        .iter()
        .rev()
        .map(|(k, v)| (&k[..], &v[..]))
        .collect();
    assert_eq!(got, want);
    // A cursor turning around on a merged entry.
    let mut it = db.raw_iterator(&ReadOptions::default()).unwrap();
    it.seek(b"b").unwrap();
    assert_eq!(it.value(), Some(&b"base,1,2,3"[..]));
    it.prev().unwrap();
    assert_eq!(it.key(), Some(&b"a"[..]));
    it.next().unwrap();
    assert_eq!(it.value(), Some(&b"base,1,2,3"[..]));
    it.next().unwrap();
    assert_eq!(it.key(), Some(&b"c"[..]));
    let stats = db.stats();
    assert!(stats.merges.reads_merged > 0, "{:?}", stats.merges);

    // multi_get resolves as get does.
    let got = db.multi_get([&b"a"[..], b"b", b"c", b"d"]);
    let got: Vec<_> = got.into_iter().map(Result::unwrap).collect();
    assert_eq!(got[1].as_deref(), Some(&b"base,1,2,3"[..]));
    assert_eq!(got[3], None);

    // The snapshot keeps its view through a full compaction.
    db.compact_range(None, None).unwrap();
    assert_eq!(
        db.get_opt(b"b", &at).unwrap().as_deref(),
        Some(&b"base,1,2"[..])
    );
    drop(before);
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"base,1,2,3"[..]));
    db.close().unwrap();
}

#[test]
fn a_single_delete_vanishes_with_its_put() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", with_operator(&fs, None)).unwrap();
    for i in 0..50u32 {
        db.put(format!("k{i:02}"), b"once").unwrap();
    }
    db.flush().unwrap();
    for i in 0..50u32 {
        db.single_delete(format!("k{i:02}")).unwrap();
    }
    assert_eq!(db.get(b"k07").unwrap(), None);
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(db.iter().count(), 0);
    let stats = db.stats();
    assert_eq!(
        stats.merges.single_deletes_cancelled, 50,
        "{:?}",
        stats.merges
    );
    assert_eq!(stats.merges.single_delete_mismatches, 0);
    assert_eq!(stats.tables[0].sum.files, 0, "nothing is left to store");
    db.close().unwrap();
}

#[test]
fn single_delete_over_a_merge_is_counted_not_a_crash() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open(
        "/db",
        with_operator(&fs, Some(Arc::new(StringAppend::default()))),
    )
    .unwrap();
    db.put(b"k", b"v").unwrap();
    db.merge(b"k", b"m").unwrap();
    db.single_delete(b"k").unwrap();
    assert_eq!(db.get(b"k").unwrap(), None);
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    // Undefined in RocksDB: here the single delete takes the operand, and
    // the put below it is hidden. What matters is the counter.
    assert!(db.stats().merges.single_delete_mismatches >= 1);
    assert_eq!(db.get(b"k").unwrap(), None);
    db.close().unwrap();
}

#[test]
fn a_single_delete_over_a_delete_fails_the_flush_unless_told_otherwise() {
    for enforce in [true, false] {
        let fs = Arc::new(MemFs::new());
        let opts = with_operator(&fs, None).enforce_single_delete_contracts(enforce);
        let db = Db::open("/db", opts).unwrap();
        let mut b = WriteBatch::new();
        b.put(b"k", b"v");
        b.delete(b"k");
        b.single_delete(b"k");
        db.write(b).unwrap();
        let flushed = db.flush();
        if enforce {
            let err = flushed.unwrap_err();
            assert!(
                err.to_string()
                    .contains("SingleDelete and Delete were mixed"),
                "{err}"
            );
        } else {
            flushed.unwrap();
            assert_eq!(db.stats().merges.single_delete_mismatches, 1);
            assert_eq!(db.get(b"k").unwrap(), None);
            db.close().unwrap();
        }
    }
}
