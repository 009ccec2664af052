//! Transactions from several threads at once: bank transfers keep the sum
//! of all accounts, and counters increment without a lost update — with
//! optimistic transactions (whose commits share write groups, so one
//! group's checks see the members ahead of them) and pessimistic ones.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

use lithify_engine::{Options, WriteOptions};
use lithify_txn::{
    OptimisticDb, Transaction, TransactionDb, TransactionDbOptions, TransactionOptions,
};

const ACCOUNTS: u64 = 8;
const START: u64 = 1000;
const THREADS: u64 = 4;
const TRANSFERS: u64 = 300;

fn acct(i: u64) -> String {
    format!("acct{i:03}")
}

fn balance(v: Option<bytes::Bytes>) -> u64 {
    v.map_or(0, |v| u64::from_le_bytes(v[..].try_into().unwrap()))
}

/// One transfer of `amount` from `from` to `to`; `Ok(false)` if the source
/// lacks the money.
fn transfer(t: &mut Transaction<'_>, from: u64, to: u64, amount: u64) -> lithify_txn::Result<bool> {
    let a = balance(t.get_for_update(acct(from))?);
    if a < amount {
        return Ok(false);
    }
    let b = balance(t.get_for_update(acct(to))?);
    t.put(acct(from), (a - amount).to_le_bytes())?;
    t.put(acct(to), (b + amount).to_le_bytes())?;
    Ok(true)
}

/// A tiny deterministic generator per thread.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

fn total(db: &lithify_engine::Db) -> u64 {
    (0..ACCOUNTS)
        .map(|i| balance(db.get(acct(i)).unwrap()))
        .sum()
}

#[test]
fn optimistic_transfers_keep_the_sum() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(OptimisticDb::open(dir.path(), Options::default()).unwrap());
    for i in 0..ACCOUNTS {
        db.put(acct(i), START.to_le_bytes()).unwrap();
    }
    let committed = Arc::new(AtomicU64::new(0));
    let conflicts = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..THREADS)
        .map(|w| {
            let db = Arc::clone(&db);
            let committed = Arc::clone(&committed);
            let conflicts = Arc::clone(&conflicts);
            thread::spawn(move || {
                let mut rng = 0x9e37_79b9_7f4a_7c15 ^ (w + 1);
                for _ in 0..TRANSFERS {
                    let from = next(&mut rng) % ACCOUNTS;
                    let to = (from + 1 + next(&mut rng) % (ACCOUNTS - 1)) % ACCOUNTS;
                    let amount = next(&mut rng) % 50;
                    let mut t = db.transaction();
                    if !transfer(&mut t, from, to, amount).unwrap() {
                        continue;
                    }
                    match t.commit() {
                        Ok(()) => committed.fetch_add(1, Ordering::Relaxed),
                        Err(e) if e.is_busy() => conflicts.fetch_add(1, Ordering::Relaxed),
                        Err(e) => panic!("{e}"),
                    };
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    assert_eq!(total(&db), START * ACCOUNTS);
    assert!(committed.load(Ordering::Relaxed) > 0);
}

#[test]
fn optimistic_counters_lose_no_update() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(OptimisticDb::open(dir.path(), Options::default()).unwrap());
    let committed = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..THREADS)
        .map(|_| {
            let db = Arc::clone(&db);
            let committed = Arc::clone(&committed);
            thread::spawn(move || {
                for i in 0..TRANSFERS {
                    let key = format!("counter{}", i % 2);
                    let mut t = db.transaction();
                    let n = balance(t.get(&key).unwrap());
                    t.put(&key, (n + 1).to_le_bytes()).unwrap();
                    if t.commit().is_ok() {
                        committed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let sum = balance(db.get("counter0").unwrap()) + balance(db.get("counter1").unwrap());
    assert_eq!(sum, committed.load(Ordering::Relaxed));
}

#[test]
fn pessimistic_transfers_keep_the_sum_and_all_commit() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(
        TransactionDb::open(
            dir.path(),
            Options::default(),
            TransactionDbOptions::default(),
        )
        .unwrap(),
    );
    for i in 0..ACCOUNTS {
        db.put(acct(i), START.to_le_bytes()).unwrap();
    }
    let failed = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..THREADS)
        .map(|w| {
            let db = Arc::clone(&db);
            let failed = Arc::clone(&failed);
            thread::spawn(move || {
                let options = TransactionOptions::default()
                    .deadlock_detect(true)
                    .lock_timeout(Some(Duration::from_secs(30)));
                let mut rng = 0x2545_f491_4f6c_dd1d ^ (w + 1);
                for _ in 0..TRANSFERS {
                    let from = next(&mut rng) % ACCOUNTS;
                    let to = (from + 1 + next(&mut rng) % (ACCOUNTS - 1)) % ACCOUNTS;
                    let amount = next(&mut rng) % 50;
                    let mut t = db.transaction_opt(&WriteOptions::default(), &options);
                    match transfer(&mut t, from, to, amount) {
                        Ok(true) => t.commit().unwrap(),
                        Ok(false) => t.rollback(),
                        // Locks taken in either order: a deadlock is
                        // possible and detected; the transaction retries
                        // nothing here, it just gives up.
                        Err(e) if e.is_busy() => {
                            failed.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    assert_eq!(total(db.db()), START * ACCOUNTS);
    assert_eq!(db.locks_held(), 0);
}
