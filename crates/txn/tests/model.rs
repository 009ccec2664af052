//! Model-based test: three logical clients interleave begin, get,
//! get_for_update, put, delete, merge, scans, save points, commit and
//! rollback (plus plain writes and flushes), on one thread, checked step by
//! step against an oracle that states each mode's isolation:
//!
//! * **Optimistic** (snapshot at begin): every read returns the committed
//!   state as of the transaction's begin with its own writes applied (no
//!   dirty read, repeatable reads); a commit fails exactly when a key the
//!   transaction read or wrote — and, with `serializable`, a key in a range
//!   it scanned — was committed by someone else after its begin (so no
//!   lost update, no write skew); keys first tracked after a save point the
//!   transaction rolled back to do not count.
//! * **Pessimistic** (no snapshot, lock timeout zero so a lock conflict
//!   fails at once on this one thread): `get` reads the latest committed
//!   state with the transaction's writes applied (non-repeatable reads are
//!   allowed); a write or `get_for_update` of a key another transaction
//!   holds fails with `TimedOut` and changes nothing; a commit always
//!   succeeds and applies exactly the transaction's writes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use lithify_engine::{Options, UInt64Add, WriteOptions};
use lithify_txn::{
    Error, OptimisticDb, OptimisticTransactionOptions, Transaction, TransactionDb,
    TransactionDbOptions, TransactionOptions,
};
use proptest::prelude::*;

const CLIENTS: usize = 3;
const KEYS: u8 = 5;

#[derive(Debug, Clone)]
enum Op {
    Begin(usize),
    Get(usize, u8),
    GetForUpdate(usize, u8),
    Put(usize, u8, u8),
    Delete(usize, u8),
    Merge(usize, u8, u8),
    Scan(usize, u8, u8),
    SetSavepoint(usize),
    RollbackToSavepoint(usize),
    Commit(usize),
    Rollback(usize),
    PlainPut(u8, u8),
    Flush,
}

fn op() -> impl Strategy<Value = Op> {
    let c = 0..CLIENTS;
    let k = 0..KEYS;
    prop_oneof![
        3 => c.clone().prop_map(Op::Begin),
        4 => (c.clone(), k.clone()).prop_map(|(c, k)| Op::Get(c, k)),
        3 => (c.clone(), k.clone()).prop_map(|(c, k)| Op::GetForUpdate(c, k)),
        4 => (c.clone(), k.clone(), any::<u8>()).prop_map(|(c, k, v)| Op::Put(c, k, v)),
        1 => (c.clone(), k.clone()).prop_map(|(c, k)| Op::Delete(c, k)),
        2 => (c.clone(), k.clone(), 1u8..5).prop_map(|(c, k, v)| Op::Merge(c, k, v)),
        2 => (c.clone(), k.clone(), k.clone()).prop_map(|(c, a, b)| Op::Scan(c, a.min(b), a.max(b) + 1)),
        1 => c.clone().prop_map(Op::SetSavepoint),
        1 => c.clone().prop_map(Op::RollbackToSavepoint),
        3 => c.clone().prop_map(Op::Commit),
        1 => c.clone().prop_map(Op::Rollback),
        1 => (k.clone(), any::<u8>()).prop_map(|(k, v)| Op::PlainPut(k, v)),
        1 => Just(Op::Flush),
    ]
}

fn key(k: u8) -> [u8; 2] {
    [b'k', b'0' + k]
}

fn enc(v: u64) -> [u8; 8] {
    v.to_le_bytes()
}

fn dec(v: Option<bytes::Bytes>) -> Option<u64> {
    v.map(|v| u64::from_le_bytes(v[..].try_into().unwrap()))
}

/// What a transaction's writes make of one key.
#[derive(Debug, Clone, Copy, Default)]
struct Written {
    /// `Some(Some(v))` put, `Some(None)` deleted, `None` the database's.
    base: Option<Option<u64>>,
    /// The sum of its merge operands, if any.
    add: Option<u64>,
}

impl Written {
    fn over(&self, db: Option<u64>) -> Option<u64> {
        let below = self.base.unwrap_or(db);
        match self.add {
            Some(a) => Some(below.unwrap_or(0) + a),
            None => below,
        }
    }
}

#[derive(Debug, Clone, Default)]
struct ClientModel {
    /// The committed state and version at begin (optimistic).
    snapshot: BTreeMap<u8, u64>,
    begin: u64,
    writes: BTreeMap<u8, Written>,
    /// Optimistic: tracked keys (order of first tracking); pessimistic:
    /// locked keys.
    tracked: Vec<u8>,
    /// Scanned ranges `[lo, hi)` (serializable optimistic).
    ranges: Vec<(u8, u8)>,
    saves: Vec<(BTreeMap<u8, Written>, usize, usize)>,
    /// Optimistic: read with `get_for_update` (a rollback to a save point
    /// keeps it), so the commit validates even without writes.
    for_update: bool,
}

impl ClientModel {
    fn track(&mut self, k: u8) {
        if !self.tracked.contains(&k) {
            self.tracked.push(k);
        }
    }
}

#[derive(Default)]
struct Oracle {
    committed: BTreeMap<u8, u64>,
    version: u64,
    /// Key -> the version of its last committed write.
    last_write: BTreeMap<u8, u64>,
}

impl Oracle {
    fn commit(&mut self, writes: &BTreeMap<u8, Written>) {
        if writes.is_empty() {
            return;
        }
        self.version += 1;
        for (k, w) in writes {
            match w.over(self.committed.get(k).copied()) {
                Some(v) => self.committed.insert(*k, v),
                None => self.committed.remove(k),
            };
            self.last_write.insert(*k, self.version);
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Optimistic { serializable: bool },
    Pessimistic,
}

enum Store {
    Optimistic(OptimisticDb),
    Pessimistic(TransactionDb),
}

fn run(kind: Kind, ops: &[Op]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let options = Options::default().merge_operator(Some(Arc::new(UInt64Add)));
    let store = match kind {
        Kind::Optimistic { .. } => {
            Store::Optimistic(OptimisticDb::open(dir.path(), options).unwrap())
        }
        Kind::Pessimistic => Store::Pessimistic(
            TransactionDb::open(
                dir.path(),
                options,
                TransactionDbOptions::default()
                    .transaction_lock_timeout(Some(Duration::ZERO))
                    .default_lock_timeout(Some(Duration::ZERO)),
            )
            .unwrap(),
        ),
    };
    let db = match &store {
        Store::Optimistic(d) => d.db(),
        Store::Pessimistic(d) => d.db(),
    };
    let table = db.default_table();
    let mut oracle = Oracle::default();
    let mut txns: Vec<Option<Transaction<'_>>> = (0..CLIENTS).map(|_| None).collect();
    let mut models: Vec<ClientModel> = vec![ClientModel::default(); CLIENTS];
    let pessimistic = matches!(kind, Kind::Pessimistic);
    // Pessimistic: key -> holder.
    let mut locks: BTreeMap<u8, usize> = BTreeMap::new();

    for (step, o) in ops.iter().enumerate() {
        let ctx = format!("step {step}: {o:?}");
        match *o {
            Op::Begin(c) => {
                if txns[c].is_some() {
                    continue;
                }
                txns[c] = Some(match &store {
                    Store::Optimistic(d) => {
                        let Kind::Optimistic { serializable } = kind else {
                            unreachable!()
                        };
                        d.transaction_opt(
                            &WriteOptions::default(),
                            &OptimisticTransactionOptions::default().serializable(serializable),
                        )
                    }
                    Store::Pessimistic(d) => {
                        d.transaction_opt(&WriteOptions::default(), &TransactionOptions::default())
                    }
                });
                models[c] = ClientModel {
                    snapshot: oracle.committed.clone(),
                    begin: oracle.version,
                    ..ClientModel::default()
                };
            }
            Op::Get(c, k) | Op::GetForUpdate(c, k) => {
                let Some(t) = txns[c].as_ref() else { continue };
                let for_update = matches!(o, Op::GetForUpdate(..));
                let m = &mut models[c];
                if pessimistic && for_update && locks.get(&k).is_some_and(|h| *h != c) {
                    let err = t.get_for_update(key(k)).unwrap_err();
                    prop_assert!(matches!(err, Error::TimedOut { .. }), "{}: {}", ctx, err);
                    continue;
                }
                let got = if for_update {
                    t.get_for_update(key(k))
                } else {
                    t.get(key(k))
                };
                let got = dec(got.unwrap());
                let base = if pessimistic {
                    &oracle.committed
                } else {
                    &m.snapshot
                };
                let want = m
                    .writes
                    .get(&k)
                    .copied()
                    .unwrap_or_default()
                    .over(base.get(&k).copied());
                prop_assert_eq!(got, want, "{}", ctx);
                if pessimistic {
                    if for_update {
                        locks.insert(k, c);
                        m.track(k);
                    }
                } else {
                    m.track(k);
                    m.for_update |= for_update;
                }
            }
            Op::Put(c, k, _) | Op::Delete(c, k) | Op::Merge(c, k, _) => {
                let Some(t) = txns[c].as_mut() else { continue };
                let m = &mut models[c];
                if pessimistic && locks.get(&k).is_some_and(|h| *h != c) {
                    let err = match *o {
                        Op::Put(_, _, v) => t.put(key(k), enc(v.into())),
                        Op::Delete(..) => t.delete(key(k)),
                        Op::Merge(_, _, v) => t.merge(key(k), enc(v.into())),
                        _ => unreachable!(),
                    }
                    .unwrap_err();
                    prop_assert!(matches!(err, Error::TimedOut { .. }), "{}: {}", ctx, err);
                    continue;
                }
                let w = m.writes.entry(k).or_default();
                match *o {
                    Op::Put(_, _, v) => {
                        t.put(key(k), enc(v.into())).unwrap();
                        *w = Written {
                            base: Some(Some(v.into())),
                            add: None,
                        };
                    }
                    Op::Delete(..) => {
                        t.delete(key(k)).unwrap();
                        *w = Written {
                            base: Some(None),
                            add: None,
                        };
                    }
                    Op::Merge(_, _, v) => {
                        t.merge(key(k), enc(v.into())).unwrap();
                        w.add = Some(w.add.unwrap_or(0) + u64::from(v));
                    }
                    _ => unreachable!(),
                }
                if pessimistic {
                    locks.insert(k, c);
                }
                m.track(k);
            }
            Op::Scan(c, lo, hi) => {
                let Some(t) = txns[c].as_ref() else { continue };
                let m = &mut models[c];
                let mut it = t.range_cf(&table, Some(&key(lo)), Some(&key(hi))).unwrap();
                it.seek_to_first().unwrap();
                let mut got = Vec::new();
                while let Some((k, v)) = it.entry() {
                    got.push((k[1] - b'0', u64::from_le_bytes(v.try_into().unwrap())));
                    it.next().unwrap();
                }
                let base = if pessimistic {
                    &oracle.committed
                } else {
                    &m.snapshot
                };
                let keys: BTreeSet<u8> = base
                    .keys()
                    .chain(m.writes.keys())
                    .copied()
                    .filter(|k| (lo..hi).contains(k))
                    .collect();
                let want: Vec<(u8, u64)> = keys
                    .into_iter()
                    .filter_map(|k| {
                        m.writes
                            .get(&k)
                            .copied()
                            .unwrap_or_default()
                            .over(base.get(&k).copied())
                            .map(|v| (k, v))
                    })
                    .collect();
                prop_assert_eq!(got, want, "{}", ctx);
                m.ranges.push((lo, hi));
            }
            Op::SetSavepoint(c) => {
                let Some(t) = txns[c].as_mut() else { continue };
                t.set_save_point();
                let m = &mut models[c];
                m.saves
                    .push((m.writes.clone(), m.tracked.len(), m.ranges.len()));
            }
            Op::RollbackToSavepoint(c) => {
                let Some(t) = txns[c].as_mut() else { continue };
                let m = &mut models[c];
                let r = t.rollback_to_save_point();
                match m.saves.pop() {
                    None => prop_assert!(r.is_err(), "{}", ctx),
                    Some((writes, tracked, ranges)) => {
                        r.unwrap();
                        m.writes = writes;
                        for k in m.tracked.split_off(tracked) {
                            if pessimistic {
                                locks.remove(&k);
                            }
                        }
                        m.ranges.truncate(ranges);
                    }
                }
            }
            Op::Commit(c) => {
                let Some(t) = txns[c].take() else { continue };
                let m = std::mem::take(&mut models[c]);
                let result = t.commit();
                if pessimistic {
                    result.unwrap();
                    oracle.commit(&m.writes);
                    locks.retain(|_, h| *h != c);
                    continue;
                }
                let Kind::Optimistic { serializable } = kind else {
                    unreachable!()
                };
                let changed = |k: &u8| oracle.last_write.get(k).is_some_and(|v| *v > m.begin);
                let key_conflict = m.tracked.iter().any(changed);
                let range_conflict = serializable
                    && m.ranges
                        .iter()
                        .any(|(lo, hi)| (*lo..*hi).any(|k| changed(&k)));
                // A transaction that only read commits without validation
                // (it read one snapshot), unless it read with
                // `get_for_update`, which promises the key is unchanged.
                let validated = !m.writes.is_empty() || m.for_update;
                let conflict = validated && (key_conflict || range_conflict);
                match result {
                    Ok(()) => {
                        prop_assert!(!conflict, "{}: committed despite a conflict", ctx);
                        oracle.commit(&m.writes);
                    }
                    Err(e) => {
                        prop_assert!(conflict, "{}: refused without a conflict: {}", ctx, e);
                        prop_assert!(e.is_busy(), "{}: {}", ctx, e);
                    }
                }
            }
            Op::Rollback(c) => {
                let Some(t) = txns[c].take() else { continue };
                t.rollback();
                models[c] = ClientModel::default();
                locks.retain(|_, h| *h != c);
            }
            Op::PlainPut(k, v) => {
                let r = match &store {
                    Store::Optimistic(d) => d.put(key(k), enc(v.into())).map_err(Error::from),
                    Store::Pessimistic(d) => d.put(key(k), enc(v.into())),
                };
                if pessimistic && locks.contains_key(&k) {
                    prop_assert!(r.unwrap_err().is_busy(), "{}", ctx);
                    continue;
                }
                r.unwrap();
                let mut w = BTreeMap::new();
                w.insert(
                    k,
                    Written {
                        base: Some(Some(v.into())),
                        add: None,
                    },
                );
                oracle.commit(&w);
            }
            Op::Flush => db.flush().unwrap(),
        }
        // Whatever happened, the committed state is the oracle's.
        let all: BTreeMap<u8, u64> = db
            .iter()
            .map(|kv| {
                let (k, v) = kv.unwrap();
                (k[1] - b'0', u64::from_le_bytes(v[..].try_into().unwrap()))
            })
            .collect();
        prop_assert_eq!(&all, &oracle.committed, "{}", ctx);
    }
    drop(txns);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn optimistic_matches_the_oracle(ops in proptest::collection::vec(op(), 1..60)) {
        run(Kind::Optimistic { serializable: false }, &ops)?;
    }

    #[test]
    fn optimistic_serializable_matches_the_oracle(ops in proptest::collection::vec(op(), 1..60)) {
        run(Kind::Optimistic { serializable: true }, &ops)?;
    }

    #[test]
    fn pessimistic_matches_the_oracle(ops in proptest::collection::vec(op(), 1..60)) {
        run(Kind::Pessimistic, &ops)?;
    }
}
