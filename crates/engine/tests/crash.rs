//! Crash tests on `MemFs`: random workloads with background flushes and
//! compactions running, power loss (`crash_clone`, with torn tails) at
//! many points — including in the middle of flushes and compactions.
//! After each, the database opens, every write acknowledged with `sync`
//! survives, and what survives is the state after a prefix of the writes.
//! Every test runs under each compaction strategy (the fixed ones and
//! `Adaptive`), with live strategy switches among the operations. Merge
//! operands (string append) are among the writes: they survive power cuts
//! as puts do.

mod common;

use std::sync::Arc;

use common::{Model, all_strategies, cases, model_delete_range, model_pairs, scan, small_options};
use lithify_engine::{
    Db, MergeOperator as _, Options, ReadOptions, StringAppend, WalCompression, WriteBatch,
    WriteOptions,
};
use lithify_vfs::MemFs;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Put(u8, u16),
    Delete(u8),
    Merge(u8),
    DeleteRange(u8, u8),
    Batch(Vec<(bool, u8)>),
    /// Switches the live table to `all_strategies()[i % len]`.
    Switch(u8),
}

fn key(k: u8) -> Vec<u8> {
    format!("k{k:03}").into_bytes()
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (0u8..60, 50u16..1500).prop_map(|(k, l)| Op::Put(k, l)),
        3 => (0u8..60).prop_map(Op::Delete),
        6 => (0u8..60).prop_map(Op::Merge),
        1 => (0u8..60, 0u8..60).prop_map(|(a, b)| Op::DeleteRange(a.min(b), a.max(b) + 1)),
        2 => proptest::collection::vec((any::<bool>(), 0u8..60), 1..6).prop_map(Op::Batch),
        1 => any::<u8>().prop_map(Op::Switch),
    ]
}

/// Applies `op` to the database and the model.
fn apply(db: &Db, model: &mut Model, i: usize, op: &Op, sync: bool) {
    let wo = WriteOptions::default().sync(sync);
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
        Op::Merge(k) => {
            let operand = format!("m{i}").into_bytes();
            db.merge_opt(key(*k), &operand, &wo).unwrap();
            let merged = StringAppend::default()
                .full_merge(&key(*k), model.get(&key(*k)).map(|v| &v[..]), &[&operand])
                .unwrap();
            model.insert(key(*k), merged);
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
        Op::Switch(i) => {
            let all = all_strategies();
            db.default_table()
                .set_compaction_strategy(all[*i as usize % all.len()].clone())
                .unwrap();
            if sync {
                // The caller counts this op as a synced point.
                db.flush_wal(true).unwrap();
            }
        }
    }
}

/// The test options with compaction strategy `all_strategies()[strategy]`;
/// odd strategies write LZ4-compressed WALs.
fn options(fs: Arc<MemFs>, strategy: usize) -> Options {
    small_options(fs)
        .compaction_strategy(all_strategies()[strategy].clone())
        .merge_operator(Some(Arc::new(StringAppend::default())))
        .wal_compression(if strategy % 2 == 1 {
            WalCompression::Lz4
        } else {
            WalCompression::None
        })
}

/// Opens the crashed copy and checks the prefix rule.
fn check_recovery(
    fs: MemFs,
    strategy: usize,
    states: &[Model],
    last_synced: usize,
    done: usize,
    what: &str,
) {
    let fs = Arc::new(fs);
    let db = Db::open("/db", options(fs.clone(), strategy))
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
    let db = Db::open("/db", options(fs, strategy)).unwrap();
    assert_eq!(db.get(b"after-crash").unwrap().as_deref(), Some(&b"1"[..]));
    let mut again = scan(&db, &ReadOptions::default());
    again.retain(|(k, _)| k != b"after-crash");
    assert_eq!(again, got, "a second reopen changed the data ({what})");
}

fn run(ops: &[Op], sync_every: usize, crash_every: usize, seed: u64, strategy: usize) {
    let fs = MemFs::new();
    fs.set_torn_tails(Some(seed));
    let fs = Arc::new(fs);
    let db = Db::open("/db", options(fs.clone(), strategy)).unwrap();
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
                strategy,
                &states,
                last_synced,
                i + 1,
                &format!("after op {i}"),
            );
        }
    }
    let crashed = fs.crash_clone();
    check_recovery(
        crashed,
        strategy,
        &states,
        last_synced,
        ops.len(),
        "at the end",
    );
    drop(db);
    // A clean shutdown loses nothing acknowledged (process exit, no power
    // loss).
    let db = Db::open("/db", options(fs, strategy)).unwrap();
    assert_eq!(scan(&db, &ReadOptions::default()), model_pairs(&model));
}

/// One power-loss proptest per strategy (an index into `all_strategies()`).
macro_rules! power_loss_under {
    ($($name:ident: $strategy:expr, $cases:expr;)*) => {
        $(
            proptest! {
                #![proptest_config(ProptestConfig {
                    cases: cases($cases),
                    ..ProptestConfig::default()
                })]
                #[test]
                fn $name(
                    ops in proptest::collection::vec(op(), 50..400),
                    sync_every in prop_oneof![Just(0usize), 1usize..20],
                    crash_every in 10usize..60,
                    seed in any::<u64>(),
                ) {
                    run(&ops, sync_every, crash_every, seed, $strategy);
                }
            }
        )*
    };
}

power_loss_under! {
    power_loss_keeps_a_prefix_leveled: 0, 32;
    power_loss_keeps_a_prefix_major_only: 1, 12;
    power_loss_keeps_a_prefix_two_tier_write_only: 2, 12;
    power_loss_keeps_a_prefix_two_tier_write_mostly: 3, 12;
    power_loss_keeps_a_prefix_two_tier_read_mostly_few_updates: 4, 12;
    power_loss_keeps_a_prefix_two_tier_read_mostly_many_updates: 5, 12;
    power_loss_keeps_a_prefix_adaptive: 6, 16;
}

/// Big enough values that memtables switch often, and a crash right after
/// each switch: the flush (and the compactions it triggers) is running.
/// Under every strategy, the run switching to the next one half-way.
#[test]
fn crash_in_the_middle_of_flushes_and_compactions() {
    let all = all_strategies();
    let mut crashes = 0;
    for strategy in 0..all.len() {
        crashes += crash_while_busy(strategy, (strategy + 1) % all.len());
    }
    // How many of the points find a job running depends on the machine's
    // speed; some always do, with twenty memtable switches per strategy.
    assert!(crashes > 0, "no crash hit background work");
}

/// One run of [`crash_in_the_middle_of_flushes_and_compactions`]; returns
/// the crashes made while background work was pending.
fn crash_while_busy(strategy: usize, then: usize) -> usize {
    let fs = MemFs::new();
    fs.set_torn_tails(Some(7));
    let fs = Arc::new(fs);
    let db = Db::open("/db", options(fs.clone(), strategy)).unwrap();
    let mut model = Model::new();
    let mut states = vec![model.clone()];
    let mut last_synced = 0;
    let mut crashes = 0;
    for i in 0..1200usize {
        let op = if i == 600 {
            Op::Switch(then as u8)
        } else if i % 7 == 3 {
            Op::Merge((i * 37 % 251) as u8 % 60)
        } else {
            Op::Put((i * 37 % 251) as u8 % 60, 900)
        };
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
            // Power losses of the same moment, each keeping other torn
            // prefixes of the unsynced WAL tails.
            for seed in 0..2 {
                crashes += 1;
                fs.set_torn_tails(Some(i as u64 * 4 + seed));
                check_recovery(
                    fs.crash_clone(),
                    strategy,
                    &states,
                    last_synced,
                    i + 1,
                    &format!("busy after op {i} under strategy {strategy}"),
                );
            }
        }
    }
    crashes
}
