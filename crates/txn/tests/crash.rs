//! Power cuts during transaction commits (`MemFs`, torn tails): a run of
//! bank transfers — each a transaction writing two accounts and a transfer
//! counter, committed with `sync` — is cut before every file-system
//! mutation in turn. After each cut the reopened database holds a whole
//! number of transfers (the sum of the accounts never changes: a commit is
//! there completely or not at all), and at least every transfer whose
//! commit returned.

use std::sync::Arc;

use lithify_engine::{Db, Options, WriteOptions};
use lithify_txn::{OptimisticDb, TransactionDb, TransactionDbOptions, TransactionOptions};
use lithify_vfs::{FaultFs, FaultRule, FileSystem, MemFs, OpKind};

const ACCOUNTS: u64 = 4;
const START: u64 = 100;
const TRANSFERS: u64 = 40;

fn options(fs: Arc<dyn FileSystem>) -> Options {
    Options::default().fs(fs).write_buffer_size(1024)
}

fn num(v: Option<bytes::Bytes>) -> u64 {
    v.map_or(0, |v| u64::from_le_bytes(v[..].try_into().unwrap()))
}

fn acct(i: u64) -> String {
    format!("acct{i}")
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Optimistic,
    Pessimistic,
}

/// Runs the transfers; returns how many commits returned `Ok`.
fn run(db: Db, kind: Kind) -> u64 {
    let sync = WriteOptions::default().sync(true);
    match kind {
        Kind::Optimistic => {
            let db = OptimisticDb::new(db);
            transfers(|| db.transaction_opt(&sync, &Default::default()))
        }
        Kind::Pessimistic => {
            let db = TransactionDb::new(db, TransactionDbOptions::default());
            transfers(|| db.transaction_opt(&sync, &TransactionOptions::default()))
        }
    }
}

/// Runs transfers until one fails; returns how many committed.
fn transfers<'a>(begin: impl Fn() -> lithify_txn::Transaction<'a>) -> u64 {
    let mut done = 0;
    for i in 0..TRANSFERS {
        let (from, to) = (i % ACCOUNTS, (i + 1) % ACCOUNTS);
        if transfer(begin(), from, to).is_err() {
            break;
        }
        done += 1;
    }
    done
}

/// Moves 7 from `from` to `to` and counts the transfer, in one commit.
fn transfer(mut t: lithify_txn::Transaction<'_>, from: u64, to: u64) -> lithify_txn::Result<()> {
    let a = num(t.get_for_update(acct(from))?);
    let b = num(t.get_for_update(acct(to))?);
    let n = num(t.get_for_update("transfers")?);
    t.put(acct(from), (a - 7).to_le_bytes())?;
    t.put(acct(to), (b + 7).to_le_bytes())?;
    t.put("transfers", (n + 1).to_le_bytes())?;
    t.commit()
}

fn setup(fs: Arc<dyn FileSystem>) -> Option<Db> {
    let db = Db::open("/db", options(fs)).ok()?;
    let sync = WriteOptions::default().sync(true);
    let mut b = lithify_engine::WriteBatch::new();
    for i in 0..ACCOUNTS {
        b.put(acct(i), START.to_le_bytes());
    }
    db.write_opt(b, &sync).ok()?;
    Some(db)
}

fn check(crashed: MemFs, acked: u64, what: &str) {
    let db = Db::open("/db", options(Arc::new(crashed)))
        .unwrap_or_else(|e| panic!("{what}: reopen failed: {e}"));
    let n = num(db.get("transfers").unwrap());
    let sum: u64 = (0..ACCOUNTS).map(|i| num(db.get(acct(i)).unwrap())).sum();
    if db.get(acct(0)).unwrap().is_some() {
        assert_eq!(sum, START * ACCOUNTS, "{what}: a transfer is there in part");
    }
    assert!(
        n >= acked,
        "{what}: {acked} transfers acknowledged, {n} recovered"
    );
    assert!(
        n <= acked + 1,
        "{what}: {n} recovered, only {acked} (+1 in flight) committed"
    );
}

fn cut_everywhere(kind: Kind) {
    // Count the mutations of a whole run first.
    let mem = MemFs::new();
    let fs = Arc::new(FaultFs::new(mem.clone()));
    let db = setup(fs.clone()).expect("a healthy run");
    assert_eq!(run(db, kind), TRANSFERS);
    let mutations = fs.counts().mutations();
    for cut in 1..=mutations + 1 {
        let mem = MemFs::new();
        mem.set_torn_tails(Some(cut));
        let fs = Arc::new(FaultFs::new(mem.clone()));
        fs.add_rule(FaultRule::fail_from(OpKind::Mutation, cut));
        let what = format!("{kind:?}: power cut before mutation {cut} of {mutations}");
        let acked = match setup(fs.clone()) {
            Some(db) => run(db, kind),
            None => 0,
        };
        check(mem.crash_clone(), acked, &what);
    }
}

#[test]
fn optimistic_commits_survive_power_cuts_whole() {
    cut_everywhere(Kind::Optimistic);
}

#[test]
fn pessimistic_commits_survive_power_cuts_whole() {
    cut_everywhere(Kind::Pessimistic);
}
