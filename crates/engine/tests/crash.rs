//! Crash tests on `MemFs`: random workloads with background flushes and
//! compactions running, power loss (`crash_clone`, with torn tails) at
//! many points — including in the middle of flushes and compactions.
//! After each, the database opens, every write acknowledged with `sync`
//! survives, and what survives is the state after a prefix of the writes.

mod common;

use std::sync::Arc;

use common::{Model, model_delete_range, model_pairs, scan, small_options};
use lithify_engine::{Db, ReadOptions, WriteBatch, WriteOptions};
use lithify_vfs::MemFs;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Put(u8, u16),
    Delete(u8),
    DeleteRange(u8, u8),
    Batch(Vec<(bool, u8)>),
}

fn key(k: u8) -> Vec<u8> {
    format!("k{k:03}").into_bytes()
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (0u8..60, 50u16..1500).prop_map(|(k, l)| Op::Put(k, l)),
        3 => (0u8..60).prop_map(Op::Delete),
        1 => (0u8..60, 0u8..60).prop_map(|(a, b)| Op::DeleteRange(a.min(b), a.max(b) + 1)),
        2 => proptest::collection::vec((any::<bool>(), 0u8..60), 1..6).prop_map(Op::Batch),
    ]
}

/// Applies `op` to the database and the model.
fn apply(db: &Db, model: &mut Model, i: usize, op: &Op, sync: bool) {
    let wo = WriteOptions {
        sync,
        ..WriteOptions::default()
    };
    let value = |len: u16| {
        let mut v = format!("op{i}-").into_bytes();
        v.resize(v.len() + len as usize, b'.');
        v
    };
    match op {
        Op::Put(k, len) => {
            let v = value(*len);
            db.put_opt(key(*k), &v, &wo).unwrap();
            model.insert(key(*k), v);
        }
        Op::Delete(k) => {
            db.delete_opt(key(*k), &wo).unwrap();
            model.remove(&key(*k));
        }
        Op::DeleteRange(a, b) => {
            db.delete_range_opt(key(*a), key(*b), &wo).unwrap();
            model_delete_range(model, &key(*a), &key(*b));
        }
        Op::Batch(entries) => {
            let mut b = WriteBatch::new();
            for (j, &(put, k)) in entries.iter().enumerate() {
                if put {
                    let v = value(100 + j as u16);
                    b.put(key(k), &v);
                    model.insert(key(k), v);
                } else {
                    b.delete(key(k));
                    model.remove(&key(k));
                }
            }
            db.write_opt(b, &wo).unwrap();
        }
    }
}

/// Opens the crashed copy and checks the prefix rule.
fn check_recovery(fs: MemFs, states: &[Model], last_synced: usize, done: usize, what: &str) {
    let fs = Arc::new(fs);
    let db = Db::open("/db", small_options(fs.clone()))
        .unwrap_or_else(|e| panic!("the database does not open after a crash ({what}): {e}"));
    let got = scan(&db, &ReadOptions::default());
    let k = (last_synced..=done)
        .rev()
        .find(|&k| model_pairs(&states[k]) == got);
    assert!(
        k.is_some(),
        "after a crash ({what}) the database holds no prefix of the writes between the last \
         synced one ({last_synced}) and the last acknowledged one ({done}); it holds {} keys",
        got.len()
    );
    // The recovered database keeps working, and survives another reopen.
    db.put(b"after-crash", b"1").unwrap();
    db.close().unwrap();
    let db = Db::open("/db", small_options(fs)).unwrap();
    assert_eq!(db.get(b"after-crash").unwrap().as_deref(), Some(&b"1"[..]));
    let mut again = scan(&db, &ReadOptions::default());
    again.retain(|(k, _)| k != b"after-crash");
    assert_eq!(again, got, "a second reopen changed the data ({what})");
}

fn run(ops: &[Op], sync_every: usize, crash_every: usize, seed: u64) {
    let fs = MemFs::new();
    fs.set_torn_tails(Some(seed));
    let fs = Arc::new(fs);
    let db = Db::open("/db", small_options(fs.clone())).unwrap();
    let mut model = Model::new();
    let mut states = vec![model.clone()];
    let mut last_synced = 0;
    for (i, op) in ops.iter().enumerate() {
        let sync = sync_every > 0 && i % sync_every == sync_every - 1;
        apply(&db, &mut model, i, op, sync);
        states.push(model.clone());
        if sync {
            last_synced = i + 1;
        }
        if i % crash_every == crash_every - 1 {
            // Power loss now, while background flushes and compactions may
            // be in the middle of writing.
            let crashed = fs.crash_clone();
            check_recovery(
                crashed,
                &states,
                last_synced,
                i + 1,
                &format!("after op {i}"),
            );
        }
    }
    let crashed = fs.crash_clone();
    check_recovery(crashed, &states, last_synced, ops.len(), "at the end");
    drop(db);
    // A clean shutdown loses nothing acknowledged (process exit, no power
    // loss).
    let db = Db::open("/db", small_options(fs)).unwrap();
    assert_eq!(scan(&db, &ReadOptions::default()), model_pairs(&model));
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(48),
        ..ProptestConfig::default()
    })]

    #[test]
    fn power_loss_keeps_a_prefix(
        ops in proptest::collection::vec(op(), 50..400),
        sync_every in prop_oneof![Just(0usize), 1usize..20],
        crash_every in 10usize..60,
        seed in any::<u64>(),
    ) {
        run(&ops, sync_every, crash_every, seed);
    }
}

/// Big enough values that memtables switch often, and a crash right after
/// each switch: the flush (and the compactions it triggers) is running.
#[test]
fn crash_in_the_middle_of_flushes_and_compactions() {
    let fs = MemFs::new();
    fs.set_torn_tails(Some(7));
    let fs = Arc::new(fs);
    let db = Db::open("/db", small_options(fs.clone())).unwrap();
    let mut model = Model::new();
    let mut states = vec![model.clone()];
    let mut last_synced = 0;
    let mut crashes = 0;
    for i in 0..1500usize {
        let op = Op::Put((i * 37 % 251) as u8 % 60, 900);
        let sync = i % 50 == 49;
        apply(&db, &mut model, i, &op, sync);
        states.push(model.clone());
        if sync {
            last_synced = i + 1;
        }
        let stats = db.stats();
        let busy = db.property("lithify.num-running-flushes").unwrap() != "0"
            || db.property("lithify.num-running-compactions").unwrap() != "0";
        if busy || stats.tables[0].immutable_memtables > 0 {
            // Several power losses of the same moment, each keeping other
            // torn prefixes of the unsynced WAL tails.
            for seed in 0..4 {
                crashes += 1;
                fs.set_torn_tails(Some(i as u64 * 4 + seed));
                check_recovery(
                    fs.crash_clone(),
                    &states,
                    last_synced,
                    i + 1,
                    &format!("busy after op {i}"),
                );
            }
        }
    }
    // How many of the points find a job running depends on the machine's
    // speed; some always do, with twenty memtable switches.
    assert!(crashes > 0, "no crash hit background work");
}
