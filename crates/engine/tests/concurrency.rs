//! Four writer threads and two reader/iterator threads with background
//! flushes and compactions running: readers see well-formed, monotonic
//! state; the final contents equal the oracle; the whole run finishes in
//! bounded time (a deadlock fails the test instead of hanging it).

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use common::{Model, assert_equal, small_options};
use lithify_engine::{Db, ReadOptions, WriteBatch, WriteOptions};
use lithify_vfs::MemFs;

const WRITERS: u64 = 4;
const OPS: u64 = 6000;
const KEYS: u64 = 400;

fn key(k: u64) -> Vec<u8> {
    format!("key{k:04}").into_bytes()
}

/// Writer `t` owns the keys `k % WRITERS == t`; its values say who wrote
/// them and in which step.
fn value(t: u64, k: u64, step: u64) -> Vec<u8> {
    let mut v = format!("{t}:{k}:{step:08}:").into_bytes();
    v.resize(v.len() + 150, b'#');
    v
}

fn parse(v: &[u8]) -> (u64, u64, u64) {
    let s = std::str::from_utf8(v).unwrap();
    let mut parts = s.split(':');
    let mut n = || parts.next().unwrap().parse::<u64>().unwrap();
    (n(), n(), n())
}

fn writer(db: &Db, t: u64) -> Model {
    let mut model = Model::new();
    let mut rng = 0x9e37_79b9_u64.wrapping_mul(t + 1);
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for step in 0..OPS {
        let k = (next() % (KEYS / WRITERS)) * WRITERS + t;
        match next() % 10 {
            0 => {
                db.delete(key(k)).unwrap();
                model.remove(&key(k));
            }
            1 => {
                let mut b = WriteBatch::new();
                for j in 0..4 {
                    let kk = ((k / WRITERS + j) % (KEYS / WRITERS)) * WRITERS + t;
                    b.put(key(kk), value(t, kk, step));
                    model.insert(key(kk), value(t, kk, step));
                }
                let sync = next() % 4 == 0;
                db.write_opt(b, &WriteOptions::default().sync(sync))
                    .unwrap();
            }
            _ => {
                db.put(key(k), value(t, k, step)).unwrap();
                model.insert(key(k), value(t, k, step));
            }
        }
    }
    model
}

fn reader(db: &Db, stop: &AtomicBool, id: u64) -> u64 {
    // The latest step seen per key: later reads never go back in time.
    let mut seen: BTreeMap<u64, u64> = BTreeMap::new();
    let mut reads = 0;
    let mut i = id;
    while !stop.load(Ordering::Relaxed) {
        i = i
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let k = (i >> 33) % KEYS;
        if let Some(v) = db.get(key(k)).unwrap() {
            let (t, kk, step) = parse(&v);
            assert_eq!((t, kk), (k % WRITERS, k), "a value under the wrong key");
            let last = seen.entry(k).or_insert(0);
            assert!(
                step >= *last,
                "key {k} went back from step {last} to {step}"
            );
            *last = step;
        }
        reads += 1;
        if reads % 50 == 0 {
            // A snapshot scan: sorted keys, well-formed values, and stable
            // under a second look through the same snapshot.
            let snap = db.snapshot();
            let opts = ReadOptions::at(&snap);
            let first: Vec<_> = db.iter_opt(&opts).map(|kv| kv.unwrap()).collect();
            assert!(first.windows(2).all(|w| w[0].0 < w[1].0), "unsorted scan");
            for (k, v) in &first {
                let (t, kk, _) = parse(v);
                assert_eq!(key(kk), k.to_vec());
                assert_eq!(t, kk % WRITERS);
            }
            let back: Vec<_> = db.iter_opt(&opts).rev().map(|kv| kv.unwrap()).collect();
            assert_eq!(back.len(), first.len());
            assert!(back.iter().rev().eq(first.iter()), "backward scan differs");
        }
    }
    reads
}

#[test]
fn writers_readers_and_background_compaction() {
    let (done_tx, done_rx) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        let fs = Arc::new(MemFs::new());
        let db = Arc::new(Db::open("/db", small_options(fs.clone())).unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..2)
            .map(|id| {
                let (db, stop) = (db.clone(), stop.clone());
                std::thread::spawn(move || reader(&db, &stop, id))
            })
            .collect();
        let writers: Vec<_> = (0..WRITERS)
            .map(|t| {
                let db = db.clone();
                std::thread::spawn(move || writer(&db, t))
            })
            .collect();
        let mut oracle = Model::new();
        for w in writers {
            oracle.extend(w.join().unwrap());
        }
        stop.store(true, Ordering::Relaxed);
        let reads: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
        assert!(reads > 0);
        assert_equal(&db, &oracle, "after the writers finished");
        let stats = db.stats();
        assert!(
            stats.write_groups < stats.write_batches,
            "writers never shared a write group"
        );
        assert!(stats.compaction_write_bytes > 0, "no compaction ran");
        let db = Arc::try_unwrap(db).unwrap();
        db.close().unwrap();
        let db = Db::open("/db", small_options(fs)).unwrap();
        assert_equal(&db, &oracle, "after reopen");
        done_tx.send(()).unwrap();
    });
    match done_rx.recv_timeout(Duration::from_secs(240)) {
        Ok(()) => worker.join().unwrap(),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            // The worker panicked: show why.
            worker.join().unwrap();
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("the workload did not finish: deadlock?"),
    }
}
