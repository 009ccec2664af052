//! `WriteBatchWithIndex` against a `BTreeMap` oracle: random database
//! contents (some flushed to an SST file), a random batch of puts,
//! deletes, single deletes, range deletions and merges on top, then every
//! key read through `get_from_batch_and_db` and random cursor walks in both
//! directions, within random bounds, compared with the oracle.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use lithify_engine::{Db, Options, ReadOptions, StringAppend};
use lithify_txn::{BatchLookup, WriteBatchWithIndex};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Put(u8, u8),
    Delete(u8),
    SingleDelete(u8),
    Merge(u8, u8),
    DeleteRange(u8, u8),
    SavePoint,
    Rollback,
}

#[derive(Debug, Clone, Copy)]
enum Move {
    Next,
    Prev,
    Seek(u8),
    SeekForPrev(u8),
    First,
    Last,
}

fn key(k: u8) -> Vec<u8> {
    vec![b'a' + k % 12]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..12, any::<u8>()).prop_map(|(k, v)| Op::Put(k, v)),
        2 => (0u8..12).prop_map(Op::Delete),
        1 => (0u8..12).prop_map(Op::SingleDelete),
        3 => (0u8..12, any::<u8>()).prop_map(|(k, v)| Op::Merge(k, v)),
        1 => (0u8..12, 0u8..12).prop_map(|(a, b)| Op::DeleteRange(a.min(b), a.max(b))),
        1 => Just(Op::SavePoint),
        1 => Just(Op::Rollback),
    ]
}

fn mv() -> impl Strategy<Value = Move> {
    prop_oneof![
        4 => Just(Move::Next),
        3 => Just(Move::Prev),
        1 => (0u8..13).prop_map(Move::Seek),
        1 => (0u8..13).prop_map(Move::SeekForPrev),
        1 => Just(Move::First),
        1 => Just(Move::Last),
    ]
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn apply(m: &mut Model, op: &Op) {
    match *op {
        Op::Put(k, v) => {
            m.insert(key(k), vec![v]);
        }
        Op::Delete(k) | Op::SingleDelete(k) => {
            m.remove(&key(k));
        }
        Op::Merge(k, v) => {
            let e = m.entry(key(k)).or_default();
            if !e.is_empty() {
                e.push(b',');
            }
            e.push(v);
        }
        Op::DeleteRange(a, b) => {
            let (a, b) = (key(a), key(b));
            m.retain(|k, _| !(a <= *k && *k < b));
        }
        Op::SavePoint | Op::Rollback => {}
    }
}

/// The oracle's answer to a move from `at` (`None`: the cursor is off).
fn model_move(m: &Model, lo: &[u8], hi: &[u8], at: Option<&Vec<u8>>, mv: Move) -> Option<Vec<u8>> {
    let in_b = |k: &Vec<u8>| lo <= &k[..] && &k[..] < hi;
    let keys: Vec<&Vec<u8>> = m.keys().filter(|k| in_b(k)).collect();
    match mv {
        Move::Next => at.and_then(|a| keys.iter().find(|k| **k > a).map(|k| (*k).clone())),
        Move::Prev => at.and_then(|a| keys.iter().rev().find(|k| **k < a).map(|k| (*k).clone())),
        Move::Seek(t) => {
            let t = key(t).max(lo.to_vec());
            keys.iter().find(|k| ***k >= t).map(|k| (*k).clone())
        }
        Move::SeekForPrev(t) => {
            let t = key(t);
            keys.iter().rev().find(|k| ***k <= t).map(|k| (*k).clone())
        }
        Move::First => keys.first().map(|k| (*k).clone()),
        Move::Last => keys.last().map(|k| (*k).clone()),
    }
}

fn options() -> Options {
    Options::default().merge_operator(Some(Arc::new(StringAppend::new(b','))))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn batch_over_db_reads_like_the_oracle(
        db_ops in proptest::collection::vec(op(), 0..24),
        flush_at in 0usize..24,
        batch_ops in proptest::collection::vec(op(), 0..24),
        bounds in (0u8..13, 0u8..13),
        moves in proptest::collection::vec(mv(), 1..30),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path(), options()).unwrap();
        let t = db.default_table();
        let mut model = Model::new();
        for (i, o) in db_ops.iter().enumerate() {
            if i == flush_at {
                db.flush().unwrap();
            }
            match *o {
                Op::Put(k, v) => db.put(key(k), [v]).unwrap(),
                Op::Delete(k) | Op::SingleDelete(k) => db.delete(key(k)).unwrap(),
                Op::Merge(k, v) => db.merge(key(k), [v]).unwrap(),
                Op::DeleteRange(a, b) if a < b => db.delete_range(key(a), key(b)).unwrap(),
                _ => continue,
            }
            apply(&mut model, o);
        }
        // The batch: save points are a stack of model copies.
        let mut batch = WriteBatchWithIndex::new();
        let mut saved: Vec<Model> = Vec::new();
        for o in &batch_ops {
            match *o {
                Op::Put(k, v) => batch.put(&t, key(k), [v]),
                Op::Delete(k) => batch.delete(&t, key(k)),
                Op::SingleDelete(k) => batch.single_delete(&t, key(k)),
                Op::Merge(k, v) => batch.merge(&t, key(k), [v]),
                Op::DeleteRange(a, b) if a < b => batch.delete_range(&t, key(a), key(b)),
                Op::DeleteRange(..) => continue,
                Op::SavePoint => {
                    batch.set_save_point();
                    saved.push(model.clone());
                    continue;
                }
                Op::Rollback => {
                    let had = batch.rollback_to_save_point();
                    prop_assert_eq!(had, !saved.is_empty());
                    if let Some(m) = saved.pop() {
                        model = m;
                    }
                    continue;
                }
            }
            apply(&mut model, o);
        }
        let read = ReadOptions::default();
        for k in 0..12 {
            let got = batch.get_from_batch_and_db(&t, &key(k), &read).unwrap();
            prop_assert_eq!(got.map(|b| b.to_vec()), model.get(&key(k)).cloned(), "key {}", k);
            // The batch alone never contradicts the oracle.
            match batch.get_from_batch(&t, &key(k)).unwrap() {
                BatchLookup::Found(v) => prop_assert_eq!(Some(v.to_vec()), model.get(&key(k)).cloned()),
                BatchLookup::Deleted => prop_assert!(!model.contains_key(&key(k))),
                BatchLookup::MergeInProgress | BatchLookup::NotFound => {}
                other => panic!("an answer this test does not know: {other:?}"),
            }
        }
        let (lo, hi) = (key(bounds.0.min(bounds.1)), if bounds.0.max(bounds.1) == 12 { vec![0xff] } else { key(bounds.0.max(bounds.1)) });
        let read = ReadOptions::default()
            .lower_bound(Some(Bytes::from(lo.clone())))
            .upper_bound(Some(Bytes::from(hi.clone())));
        let mut it = batch.iter(&t, &read).unwrap();
        let mut at: Option<Vec<u8>> = None;
        for m in &moves {
            match *m {
                Move::Next => it.next().unwrap(),
                Move::Prev => it.prev().unwrap(),
                Move::Seek(k) => it.seek(key(k)).unwrap(),
                Move::SeekForPrev(k) => it.seek_for_prev(key(k)).unwrap(),
                Move::First => it.seek_to_first().unwrap(),
                Move::Last => it.seek_to_last().unwrap(),
            }
            at = model_move(&model, &lo, &hi, at.as_ref(), *m);
            prop_assert_eq!(it.key().map(<[u8]>::to_vec), at.clone(), "after {:?}", m);
            if let Some(a) = &at {
                prop_assert_eq!(it.value().map(<[u8]>::to_vec), model.get(a).cloned());
            }
        }
        // Writing the batch gives the oracle's state.
        drop(it);
        db.write(batch.into_batch()).unwrap();
        let all: Model = db.iter().map(|kv| { let (k, v) = kv.unwrap(); (k.to_vec(), v.to_vec()) }).collect();
        prop_assert_eq!(all, model);
    }
}
