//! Pessimistic transactions: locks, lock timeouts, deadlock detection,
//! snapshots and save points, as RocksDB's `TransactionDB` has them.

use std::sync::{Arc, Barrier, mpsc};
use std::thread;
use std::time::Duration;

use lithify_engine::{Options, TableOptions, WriteBatch, WriteOptions};
use lithify_txn::{Error, TransactionDb, TransactionDbOptions, TransactionOptions};

fn open() -> (tempfile::TempDir, TransactionDb) {
    let dir = tempfile::tempdir().unwrap();
    let db = TransactionDb::open(
        dir.path(),
        Options::default(),
        TransactionDbOptions::default(),
    )
    .unwrap();
    (dir, db)
}

fn opts(timeout: Duration, deadlock_detect: bool) -> TransactionOptions {
    TransactionOptions::default()
        .lock_timeout(Some(timeout))
        .deadlock_detect(deadlock_detect)
}

#[test]
fn a_written_key_is_locked_until_commit() {
    let (_d, db) = open();
    let mut a = db.transaction();
    a.put(b"k", b"a").unwrap();
    assert_eq!(db.locks_held(), 1);
    let mut b = db.transaction_opt(&WriteOptions::default(), &opts(Duration::ZERO, false));
    let err = b.put(b"k", b"b").unwrap_err();
    assert!(
        matches!(err, Error::TimedOut { ref key, .. } if key == "k"),
        "{err}"
    );
    assert!(err.is_busy());
    a.commit().unwrap();
    assert_eq!(db.locks_held(), 0);
    b.put(b"k", b"b").unwrap();
    b.commit().unwrap();
    assert_eq!(&db.get(b"k").unwrap().unwrap()[..], b"b");
}

#[test]
fn plain_writes_lock_their_keys() {
    let dir = tempfile::tempdir().unwrap();
    let db = TransactionDb::open(
        dir.path(),
        Options::default(),
        TransactionDbOptions::default().default_lock_timeout(Some(Duration::ZERO)),
    )
    .unwrap();
    let t = db.transaction();
    t.get_for_update(b"k").unwrap();
    assert!(db.put(b"k", b"plain").unwrap_err().is_busy());
    let mut b = WriteBatch::new();
    b.put(b"other", b"1");
    db.write(b).unwrap();
    t.rollback();
    db.put(b"k", b"plain").unwrap();
    assert_eq!(db.locks_held(), 0);
}

#[test]
fn waiter_gets_the_lock_when_the_holder_commits() {
    let (_d, db) = open();
    let db = Arc::new(db);
    let mut a = db.transaction();
    let n = a.get_for_update(b"n").unwrap().map_or(0, |v| v[0]);
    a.put(b"n", [n + 1]).unwrap();
    let (tx, rx) = mpsc::channel();
    let db2 = Arc::clone(&db);
    let waiter = thread::spawn(move || {
        let mut b = db2.transaction_opt(
            &WriteOptions::default(),
            &opts(Duration::from_secs(30), false),
        );
        tx.send(()).unwrap();
        let n = b.get_for_update(b"n").unwrap().map_or(0, |v| v[0]);
        b.put(b"n", [n + 1]).unwrap();
        b.commit().unwrap();
    });
    rx.recv().unwrap();
    a.commit().unwrap();
    waiter.join().unwrap();
    // No lost update: the waiter read a's value under its lock.
    assert_eq!(db.get(b"n").unwrap().unwrap()[0], 2);
}

#[test]
fn opposite_lock_order_deadlocks_one_and_the_other_commits() {
    let (_d, db) = open();
    let db = Arc::new(db);
    let barrier = Arc::new(Barrier::new(2));
    let run = |first: &'static [u8], second: &'static [u8]| {
        let db = Arc::clone(&db);
        let barrier = Arc::clone(&barrier);
        thread::spawn(move || {
            let mut t = db.transaction_opt(
                &WriteOptions::default(),
                &opts(Duration::from_secs(30), true),
            );
            t.put(first, b"1").unwrap();
            barrier.wait();
            match t.put(second, b"1") {
                Ok(()) => t.commit().map(|()| "committed"),
                Err(e) => {
                    // Giving the first lock back lets the other finish.
                    t.rollback();
                    Err(e)
                }
            }
        })
    };
    let x = run(b"x", b"y");
    let y = run(b"y", b"x");
    let results = [x.join().unwrap(), y.join().unwrap()];
    let committed = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(committed, 1, "{results:?}");
    let err = results.into_iter().find_map(Result::err).unwrap();
    assert!(matches!(err, Error::Deadlock { .. }), "{err}");
    assert!(err.is_busy());
    assert!(err.to_string().contains("waits for"), "{err}");
    assert_eq!(db.locks_held(), 0);
}

#[test]
fn snapshot_makes_a_lock_on_a_changed_key_fail() {
    let (_d, db) = open();
    db.put(b"k", b"old").unwrap();
    let options = TransactionOptions::default().set_snapshot(true);
    let mut t = db.transaction_opt(&WriteOptions::default(), &options);
    db.put(b"k", b"new").unwrap();
    // The snapshot's read is repeatable.
    assert_eq!(&t.get(b"k").unwrap().unwrap()[..], b"old");
    let err = t.get_for_update(b"k").unwrap_err();
    assert!(matches!(err, Error::Conflict { .. }), "{err}");
    // The lock taken for the failed read was given back.
    assert_eq!(db.locks_held(), 0);
    assert!(t.put(b"k", b"mine").unwrap_err().is_busy());
    // An unchanged key locks fine.
    t.put(b"other", b"1").unwrap();
    t.commit().unwrap();
}

#[test]
fn without_snapshot_reads_are_latest_and_get_for_update_is_stable() {
    let (_d, db) = open();
    db.put(b"a", b"1").unwrap();
    let t = db.transaction();
    assert_eq!(&t.get(b"a").unwrap().unwrap()[..], b"1");
    db.put(b"a", b"2").unwrap();
    // Non-repeatable read: allowed without a snapshot (RocksDB's semantics).
    assert_eq!(&t.get(b"a").unwrap().unwrap()[..], b"2");
    assert_eq!(&t.get_for_update(b"a").unwrap().unwrap()[..], b"2");
    // Now locked: a plain write cannot change it under the transaction.
    let quick = TransactionOptions::default().lock_timeout(Some(Duration::ZERO));
    let mut other = db.transaction_opt(&WriteOptions::default(), &quick);
    assert!(other.put(b"a", b"3").is_err());
    assert_eq!(&t.get(b"a").unwrap().unwrap()[..], b"2");
}

#[test]
fn rollback_to_save_point_releases_locks_taken_after_it() {
    let (_d, db) = open();
    let mut t = db.transaction();
    t.put(b"a", b"1").unwrap();
    t.set_save_point();
    t.put(b"b", b"1").unwrap();
    t.put(b"a", b"2").unwrap();
    assert_eq!(db.locks_held(), 2);
    t.rollback_to_save_point().unwrap();
    // `a` was locked before the save point: still held; `b` released.
    assert_eq!(db.locks_held(), 1);
    assert_eq!(&t.get(b"a").unwrap().unwrap()[..], b"1");
    assert_eq!(t.get(b"b").unwrap(), None);
    t.commit().unwrap();
    assert_eq!(db.locks_held(), 0);
    assert_eq!(db.get(b"b").unwrap(), None);
}

#[test]
fn dropping_a_transaction_rolls_it_back() {
    let (_d, db) = open();
    {
        let mut t = db.transaction();
        t.put(b"a", b"1").unwrap();
    }
    assert_eq!(db.locks_held(), 0);
    assert_eq!(db.get(b"a").unwrap(), None);
}

#[test]
fn range_deletes_are_refused() {
    let (_d, db) = open();
    let t = db.db().default_table();
    let mut txn = db.transaction();
    assert!(txn.delete_range_cf(&t, b"a", b"b").is_err());
    let mut b = WriteBatch::new();
    b.delete_range(b"a", b"b");
    assert!(db.write(b).is_err());
}

#[test]
fn locks_are_per_table() {
    let (_d, db) = open();
    let other = db
        .db()
        .create_table("other", TableOptions::default())
        .unwrap();
    let mut a = db.transaction();
    a.put(b"k", b"1").unwrap();
    let mut b = db.transaction_opt(&WriteOptions::default(), &opts(Duration::ZERO, false));
    b.put_cf(&other, b"k", b"1").unwrap();
    b.commit().unwrap();
    a.commit().unwrap();
}
