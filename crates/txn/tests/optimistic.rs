//! Optimistic transactions: what validation refuses and what it lets
//! through, stated case by case.

use std::sync::Arc;

use lithify_engine::{Db, Options, TableOptions, UInt64Add, WriteOptions};
use lithify_txn::{Error, OptimisticDb, OptimisticTransactionOptions};

fn open() -> (tempfile::TempDir, OptimisticDb) {
    let dir = tempfile::tempdir().unwrap();
    let options = Options::default().merge_operator(Some(Arc::new(UInt64Add)));
    let db = OptimisticDb::open(dir.path(), options).unwrap();
    (dir, db)
}

fn num(v: Option<bytes::Bytes>) -> u64 {
    v.map_or(0, |v| u64::from_le_bytes(v[..].try_into().unwrap()))
}

#[test]
fn lost_update_is_refused() {
    let (_d, db) = open();
    db.put(b"x", 10u64.to_le_bytes()).unwrap();
    let mut a = db.transaction();
    let mut b = db.transaction();
    let xa = num(a.get(b"x").unwrap());
    let xb = num(b.get(b"x").unwrap());
    a.put(b"x", (xa + 1).to_le_bytes()).unwrap();
    b.put(b"x", (xb + 2).to_le_bytes()).unwrap();
    a.commit().unwrap();
    let err = b.commit().unwrap_err();
    assert!(
        matches!(err, Error::Conflict { ref key, .. } if key == "x"),
        "{err}"
    );
    assert!(err.is_busy());
    assert_eq!(num(db.get(b"x").unwrap()), 11);
}

#[test]
fn reads_see_own_writes_and_the_begin_snapshot() {
    let (_d, db) = open();
    db.put(b"a", 1u64.to_le_bytes()).unwrap();
    let mut t = db.transaction();
    db.put(b"a", 5u64.to_le_bytes()).unwrap();
    // The snapshot was taken at begin.
    assert_eq!(num(t.get(b"a").unwrap()), 1);
    t.put(b"b", 2u64.to_le_bytes()).unwrap();
    t.merge(b"b", 3u64.to_le_bytes()).unwrap();
    assert_eq!(num(t.get(b"b").unwrap()), 5);
    t.delete(b"a").unwrap();
    assert_eq!(t.get(b"a").unwrap(), None);
    // Not visible outside before commit.
    assert_eq!(db.get(b"b").unwrap(), None);
    // `a` changed after the transaction read it: refused.
    assert!(t.commit().unwrap_err().is_busy());
    assert_eq!(db.get(b"b").unwrap(), None);
}

#[test]
fn write_skew_through_keys_is_refused() {
    // Two doctors on call; each may leave if the other stays.
    let (_d, db) = open();
    db.put(b"alice", [1]).unwrap();
    db.put(b"bob", [1]).unwrap();
    let mut a = db.transaction();
    let mut b = db.transaction();
    assert_eq!(a.get(b"bob").unwrap().unwrap()[0], 1);
    a.put(b"alice", [0]).unwrap();
    assert_eq!(b.get(b"alice").unwrap().unwrap()[0], 1);
    b.put(b"bob", [0]).unwrap();
    a.commit().unwrap();
    assert!(b.commit().unwrap_err().is_busy());
    assert_eq!(db.get(b"bob").unwrap().unwrap()[0], 1);
}

/// Each transaction counts the keys under `on_call/` and, if there are two,
/// removes its own. Without `serializable` both commit (write skew through a
/// range: neither read a key the other wrote); with it the second fails.
fn range_skew(serializable: bool) -> (bool, usize) {
    let (_d, db) = open();
    db.put(b"on_call/alice", [1]).unwrap();
    db.put(b"on_call/bob", [1]).unwrap();
    let options = OptimisticTransactionOptions::default().serializable(serializable);
    let t = db.default_table();
    let count = |txn: &lithify_txn::Transaction<'_>| {
        let mut it = txn
            .range_cf(&t, Some(&b"on_call/"[..]), Some(&b"on_call0"[..]))
            .unwrap();
        it.seek_to_first().unwrap();
        let mut n = 0;
        while it.valid() {
            n += 1;
            it.next().unwrap();
        }
        n
    };
    let mut a = db.transaction_opt(&WriteOptions::default(), &options);
    let mut b = db.transaction_opt(&WriteOptions::default(), &options);
    assert_eq!(count(&a), 2);
    assert_eq!(count(&b), 2);
    a.delete(b"on_call/alice").unwrap();
    b.delete(b"on_call/bob").unwrap();
    a.commit().unwrap();
    let second = b.commit();
    if let Err(e) = &second {
        assert!(matches!(e, Error::RangeConflict { .. }), "{e}");
    }
    let left = db.prefix(b"on_call/").count();
    (second.is_ok(), left)
}

#[test]
fn write_skew_through_ranges_needs_serializable() {
    assert_eq!(
        range_skew(false),
        (true, 0),
        "without serializable both commit"
    );
    assert_eq!(
        range_skew(true),
        (false, 1),
        "with serializable the second fails"
    );
}

#[test]
fn phantom_insert_into_a_scanned_range_is_refused_when_serializable() {
    let (_d, db) = open();
    db.put(b"k1", [1]).unwrap();
    db.put(b"k5", [1]).unwrap();
    let options = OptimisticTransactionOptions::default().serializable(true);
    let t = db.default_table();
    let mut a = db.transaction_opt(&WriteOptions::default(), &options);
    {
        let mut it = a.range_cf(&t, Some(b"k0"), Some(b"k9")).unwrap();
        it.seek(b"k2").unwrap();
        assert_eq!(it.key(), Some(&b"k5"[..]));
    }
    a.put(b"sum", [1]).unwrap();
    // Outside [k2, k5]: no conflict.
    db.put(b"k7", [1]).unwrap();
    db.put(b"k1", [2]).unwrap();
    let mut b = db.transaction_opt(&WriteOptions::default(), &options);
    {
        let mut it = b.range_cf(&t, None, None).unwrap();
        it.seek(b"k2").unwrap();
    }
    b.put(b"sum_b", [2]).unwrap();
    a.commit().unwrap();
    // `b` covered [k2, k5] too, and `a` wrote only `sum`: fine.
    b.commit().unwrap();
    let mut c = db.transaction_opt(&WriteOptions::default(), &options);
    {
        let mut it = c.range_cf(&t, None, None).unwrap();
        it.seek(b"k2").unwrap();
    }
    c.put(b"sum_c", [3]).unwrap();
    db.put(b"k3", [1]).unwrap(); // a phantom in [k2, k5]
    assert!(matches!(c.commit(), Err(Error::RangeConflict { .. })));
}

#[test]
fn save_point_rollback_undoes_writes_and_untracks_reads() {
    let (_d, db) = open();
    db.put(b"a", [1]).unwrap();
    let mut t = db.transaction();
    t.put(b"x", [1]).unwrap();
    t.set_save_point();
    t.get(b"a").unwrap();
    t.put(b"y", [2]).unwrap();
    t.merge(b"n", 7u64.to_le_bytes()).unwrap();
    assert_eq!(t.get(b"y").unwrap().unwrap()[0], 2);
    t.rollback_to_save_point().unwrap();
    assert_eq!(t.get(b"y").unwrap(), None);
    assert_eq!(t.get(b"n").unwrap(), None);
    assert!(t.rollback_to_save_point().is_err());
    // `a` was read only after the save point: its change does not matter.
    db.put(b"a", [9]).unwrap();
    t.commit().unwrap();
    assert_eq!(db.get(b"x").unwrap().unwrap()[0], 1);
    assert_eq!(db.get(b"y").unwrap(), None);
}

#[test]
fn transactions_span_tables() {
    let (_d, db) = open();
    let accounts = db
        .create_table("accounts", TableOptions::default())
        .unwrap();
    let audit = db.create_table("audit", TableOptions::default()).unwrap();
    accounts.put(b"a", 100u64.to_le_bytes()).unwrap();
    let mut t = db.transaction();
    let a = num(t.get_cf(&accounts, b"a").unwrap());
    t.put_cf(&accounts, b"a", (a - 30).to_le_bytes()).unwrap();
    t.put_cf(&audit, b"1", b"a -30").unwrap();
    // Another transaction changes the account: the audit write goes too.
    let mut u = db.transaction();
    u.merge_cf(&accounts, b"a", 1u64.to_le_bytes()).unwrap();
    u.commit().unwrap();
    let err = t.commit().unwrap_err();
    assert!(
        matches!(err, Error::Conflict { ref table, .. } if table == "accounts"),
        "{err}"
    );
    assert_eq!(audit.get(b"1").unwrap(), None);
    assert_eq!(num(accounts.get(b"a").unwrap()), 101);
}

#[test]
fn conflicts_are_found_in_table_files_too() {
    let (_d, db) = open();
    db.put(b"k", [1]).unwrap();
    let mut t = db.transaction();
    t.get(b"k").unwrap();
    t.put(b"k", [2]).unwrap();
    db.put(b"k", [3]).unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert!(t.commit().unwrap_err().is_busy());
    // A range deletion over the key counts as a change.
    let mut t = db.transaction();
    t.get(b"k").unwrap();
    t.put(b"k", [4]).unwrap();
    db.delete_range(b"a", b"z").unwrap();
    db.flush().unwrap();
    assert!(t.commit().unwrap_err().is_busy());
    // Unchanged since: commits, although its version went through files.
    let mut t = db.transaction();
    t.get(b"k").unwrap();
    t.put(b"k", [5]).unwrap();
    db.put(b"other", [1]).unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    t.commit().unwrap();
    assert_eq!(db.get(b"k").unwrap().unwrap()[0], 5);
}

#[test]
fn lazy_snapshot_validates_each_read_at_its_own_time() {
    let (_d, db) = open();
    let options = OptimisticTransactionOptions::default().set_snapshot(false);
    db.put(b"a", [1]).unwrap();
    let mut t = db.transaction_opt(&WriteOptions::default(), &options);
    assert!(t.snapshot().is_none());
    db.put(b"a", [2]).unwrap();
    // No snapshot: reads the latest, and validates from that read on.
    assert_eq!(t.get(b"a").unwrap().unwrap()[0], 2);
    t.put(b"b", [1]).unwrap();
    t.commit().unwrap();

    let mut t = db.transaction_opt(&WriteOptions::default(), &options);
    t.get(b"a").unwrap();
    db.put(b"a", [3]).unwrap();
    t.put(b"b", [2]).unwrap();
    assert!(t.commit().unwrap_err().is_busy());
}

#[test]
fn plain_db_keeps_working_under_the_wrapper() {
    let (_d, db) = open();
    let plain: &Db = &db;
    plain.put(b"p", b"v").unwrap();
    let t = db.transaction();
    assert_eq!(&t.get(b"p").unwrap().unwrap()[..], b"v");
    t.rollback();
    db.close().unwrap();
}

#[test]
fn get_for_update_alone_is_validated_at_commit() {
    // RocksDB's `GetForUpdate` promises the key is unchanged at commit,
    // even when the transaction writes nothing (it returns Busy).
    for snapshot in [true, false] {
        let (_d, db) = open();
        db.put(b"x", 1u64.to_le_bytes()).unwrap();
        let options = OptimisticTransactionOptions::default().set_snapshot(snapshot);
        let t = db.transaction_opt(&WriteOptions::default(), &options);
        assert_eq!(num(t.get_for_update(b"x").unwrap()), 1);
        db.put(b"x", 2u64.to_le_bytes()).unwrap();
        let err = t.commit().unwrap_err();
        assert!(err.is_busy(), "snapshot {snapshot}: {err}");
        // Unchanged, the same read-only commit succeeds.
        let t = db.transaction_opt(&WriteOptions::default(), &options);
        t.get_for_update(b"x").unwrap();
        t.commit().unwrap();
    }
    // A plain read at one snapshot still needs no validation: it saw one
    // consistent state.
    let (_d, db) = open();
    db.put(b"x", 1u64.to_le_bytes()).unwrap();
    let t = db.transaction();
    t.get(b"x").unwrap();
    db.put(b"x", 2u64.to_le_bytes()).unwrap();
    t.commit().unwrap();
}

/// Key-value separation under transactions: reads of the transaction
/// (its own writes over the database's blob-held values) return the real
/// values, forward and backward, and commits flush into blob files.
#[test]
fn transactions_read_values_kept_in_blob_files() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options::default().blob(lithify_engine::BlobOptions::enabled(64));
    let db = OptimisticDb::open(dir.path(), options).unwrap();
    let big = |i: u8| vec![i; 300];
    for i in 0..10u8 {
        db.put([b'k', b'0' + i], big(i)).unwrap();
    }
    db.db().flush().unwrap();
    assert!(!db.db().live_blob_files().is_empty());

    let mut t = db.transaction();
    t.put(b"k3", big(33)).unwrap();
    t.delete(b"k4").unwrap();
    assert_eq!(t.get(b"k2").unwrap().as_deref(), Some(&big(2)[..]));
    assert_eq!(t.get(b"k3").unwrap().as_deref(), Some(&big(33)[..]));
    assert_eq!(t.get(b"k4").unwrap(), None);
    let mut it = t.iter().unwrap();
    it.seek_to_first().unwrap();
    let mut seen = Vec::new();
    while it.valid() {
        seen.push((it.key().unwrap().to_vec(), it.value().unwrap().to_vec()));
        it.next().unwrap();
    }
    let expected: Vec<(Vec<u8>, Vec<u8>)> = (0..10u8)
        .filter(|&i| i != 4)
        .map(|i| (vec![b'k', b'0' + i], if i == 3 { big(33) } else { big(i) }))
        .collect();
    assert_eq!(seen, expected);
    it.seek_to_last().unwrap();
    assert_eq!(it.value().unwrap(), &big(9)[..]);
    it.prev().unwrap();
    assert_eq!(it.value().unwrap(), &big(8)[..]);
    drop(it);
    t.commit().unwrap();
    db.db().flush().unwrap();
    assert_eq!(db.get(b"k3").unwrap().as_deref(), Some(&big(33)[..]));
}
