//! db_bench's workloads over any [`Kv`]: 16-byte keys drawn uniformly
//! from `0..keys`, values half random and half repeated (db_bench's
//! compression ratio 0.5), operations split between threads; and its
//! `randomtransaction` over any [`TxnKv`].
//!
//! Keys, values, the random generator and the split of operations between
//! threads are `lithify bench`'s own (`lithify-bench`), so the engines here
//! see the same data as `lithify bench` writes; only the loops are here,
//! because they drive three engines through one trait.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use hdrhistogram::Histogram;

use lithify_bench::SplitMix64 as Rng;
use lithify_bench::data::{Values, make_key};

use crate::engines::{Kv, Result, TxnKv};

/// The workloads `--workload` takes.
pub const WORKLOADS: [&str; 8] = [
    "fillrandom",
    "overwrite",
    "readrandom",
    "seekrandom",
    "readwhilewriting",
    "compact",
    "randomtransaction",
    "fill-overwrite",
];

/// What one workload does.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// Operations of the measured phase.
    pub ops: u64,
    /// The key space: keys are `0..keys`.
    pub keys: u64,
    pub threads: usize,
    pub value_size: usize,
    pub sync: bool,
    pub seed: u64,
}

/// The measured phase's outcome.
#[derive(Debug, Default)]
pub struct Outcome {
    pub ops: u64,
    pub seconds: f64,
    /// Latencies in nanoseconds.
    pub hist: Option<Histogram<u64>>,
    /// Bytes of keys and values written.
    pub user_bytes: u64,
    /// Reads that found their key.
    pub found: u64,
    /// Transactions another one got in the way of (randomtransaction;
    /// `ops` counts the committed ones).
    pub failed: u64,
    /// The sum of each set's counters after a randomtransaction run, all
    /// equal and equal to the increments committed (checked).
    pub set_sum: u128,
}

/// What one worker thread of [`in_threads`] did.
#[derive(Debug, Default)]
struct Tally {
    /// Bytes of keys and values written.
    bytes: u64,
    /// Reads that found their key.
    found: u64,
    /// Operations that failed (transactions got in the way of).
    failed: u64,
    /// The sum of the increments of the committed transactions.
    increments: u128,
}

/// The key size of every workload.
const KEY_SIZE: usize = 16;

/// db_bench's compression ratio: half of each value is random.
const COMPRESSION_RATIO: f64 = 0.5;

fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds")
}

/// Writes `ops` random keys of `0..keys` (fillrandom, overwrite) in
/// `threads` threads.
pub fn write_random(db: &dyn Kv, s: &Spec) -> Result<Outcome> {
    in_threads(s, |t, ops, hist| {
        let mut rng = Rng::new(s.seed ^ (t as u64 + 1).wrapping_mul(0x1234_5678_9abc));
        let mut values = Values::new(s.value_size, COMPRESSION_RATIO, rng.next_u64());
        let mut k = [0u8; KEY_SIZE];
        let mut bytes = 0;
        for _ in 0..ops {
            make_key(rng.below(s.keys), &mut k);
            let v = values.next_value();
            let t0 = Instant::now();
            db.put(&k, v, s.sync)?;
            hist.saturating_record(t0.elapsed().as_nanos() as u64);
            bytes += (k.len() + v.len()) as u64;
        }
        Ok(Tally {
            bytes,
            ..Tally::default()
        })
    })
}

/// Loads every key of `0..keys` once, in random order of threads' shares
/// (the fill before read workloads; not measured).
pub fn load(db: &dyn Kv, keys: u64, value_size: usize, seed: u64) -> Result<()> {
    let mut rng = Rng::new(seed);
    let mut values = Values::new(value_size, COMPRESSION_RATIO, rng.next_u64());
    let mut k = [0u8; KEY_SIZE];
    // A random permutation by a multiplicative step coprime with `keys`.
    let step = (keys / 2..).find(|s| gcd(*s, keys) == 1).unwrap_or(1);
    let start = rng.below(keys.max(1));
    for i in 0..keys {
        make_key((start + i * step) % keys, &mut k);
        db.put(&k, values.next_value(), false)?;
    }
    Ok(())
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Random point reads of `0..keys`.
pub fn read_random(db: &dyn Kv, s: &Spec) -> Result<Outcome> {
    in_threads(s, |t, ops, hist| {
        let mut rng = Rng::new(s.seed ^ (t as u64 + 7).wrapping_mul(0x5151_7171));
        let mut k = [0u8; KEY_SIZE];
        let mut found = 0;
        for _ in 0..ops {
            make_key(rng.below(s.keys), &mut k);
            let t0 = Instant::now();
            found += u64::from(db.get(&k)?);
            hist.saturating_record(t0.elapsed().as_nanos() as u64);
        }
        Ok(Tally {
            found,
            ..Tally::default()
        })
    })
}

/// Seek to a random key, then 10 nexts (db_bench seekrandom).
pub fn seek_random(db: &dyn Kv, s: &Spec) -> Result<Outcome> {
    in_threads(s, |t, ops, hist| {
        let mut rng = Rng::new(s.seed ^ (t as u64 + 3).wrapping_mul(0x9191_3131));
        let mut k = [0u8; KEY_SIZE];
        let mut found = 0;
        for _ in 0..ops {
            make_key(rng.below(s.keys), &mut k);
            let t0 = Instant::now();
            found += u64::from(db.seek_next(&k, 10)? > 0);
            hist.saturating_record(t0.elapsed().as_nanos() as u64);
        }
        Ok(Tally {
            found,
            ..Tally::default()
        })
    })
}

/// `threads` readers doing `ops` reads between them while one more thread
/// writes random keys until they finish; the reads are measured.
pub fn read_while_writing(db: &dyn Kv, s: &Spec) -> Result<Outcome> {
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let writer = scope.spawn(|| -> Result<u64> {
            let mut rng = Rng::new(s.seed ^ 0xfeed);
            let mut values = Values::new(s.value_size, COMPRESSION_RATIO, rng.next_u64());
            let mut k = [0u8; KEY_SIZE];
            let mut bytes = 0;
            while !stop.load(Ordering::Relaxed) {
                make_key(rng.below(s.keys), &mut k);
                let v = values.next_value();
                db.put(&k, v, false)?;
                bytes += (k.len() + v.len()) as u64;
            }
            Ok(bytes)
        });
        let reads = read_random(db, s);
        stop.store(true, Ordering::Relaxed);
        let written = writer.join().expect("the writer does not panic")?;
        let mut out = reads?;
        out.user_bytes = written;
        Ok(out)
    })
}

/// The key prefixes of randomtransaction's two sets.
pub const SETS: [&[u8; 4]; 2] = [b"0001", b"0002"];

/// randomtransaction's 16-byte key of `k` in set `set`: `lithify bench`'s
/// (the set's 4-byte prefix, then db_bench's key of `k` in 12 bytes).
pub fn set_key(set: usize, k: u64, buf: &mut [u8; 16]) {
    lithify_bench::transaction::set_key(set as u16, k, buf);
}

/// db_bench's randomtransaction: `ops` transactions split between the
/// threads, each drawing one increment in `1..=100` and, for both sets in a
/// random order, reading a random key of the set (uniform in `0..keys`) for
/// update, adding the increment and writing it back, then committing. A
/// transaction another one got in the way of is counted as failed, not
/// retried. Afterwards (db_bench's `RandomTransactionVerify`) each set's
/// counters must sum to the same total, the increments of the committed
/// transactions (the database starts empty). `ops` of the outcome are
/// the committed transactions, `failed` the others.
pub fn random_transaction(db: &dyn TxnKv, s: &Spec) -> Result<Outcome> {
    let mut out = in_threads(s, |t, ops, hist| {
        let mut rng = Rng::new(s.seed ^ (t as u64 + 11).wrapping_mul(0x7f4a_7c15_9e37));
        let mut keys = [[0u8; 16]; 2];
        let mut tally = Tally::default();
        for _ in 0..ops {
            let increment = 1 + rng.below(100);
            let first = (rng.next_u64() & 1) as usize;
            for (i, k) in keys.iter_mut().enumerate() {
                set_key((first + i) % 2, rng.below(s.keys), k);
            }
            let t0 = Instant::now();
            let committed = db.rmw(&keys, increment)?;
            hist.saturating_record(t0.elapsed().as_nanos() as u64);
            if committed {
                tally.bytes += 2 * (16 + 8);
                tally.increments += u128::from(increment);
            } else {
                tally.failed += 1;
            }
        }
        Ok(tally)
    })?;
    out.ops -= out.failed;
    for set in SETS {
        let sum = db.sum_prefix(set)?;
        if sum != out.set_sum {
            return Err(format!(
                "randomtransaction: the counters of set {} sum to {sum}, but the committed \
                 transactions added {} to every set",
                String::from_utf8_lossy(set),
                out.set_sum
            ));
        }
    }
    Ok(out)
}

/// Runs `work(thread, ops, histogram)` in `s.threads` threads, the ops
/// split evenly, and adds up what they did.
fn in_threads<F>(s: &Spec, work: F) -> Result<Outcome>
where
    F: Fn(usize, u64, &mut Histogram<u64>) -> Result<Tally> + Sync,
{
    let threads = s.threads.max(1);
    let start = Instant::now();
    let results: Vec<Result<(Histogram<u64>, Tally)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let work = &work;
                let share = lithify_bench::workload::share(s.ops, threads, t);
                let ops = share.end - share.start;
                scope.spawn(move || {
                    let mut hist = new_hist();
                    let tally = work(t, ops, &mut hist)?;
                    Ok((hist, tally))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a worker does not panic"))
            .collect()
    });
    let seconds = start.elapsed().as_secs_f64();
    let mut out = Outcome {
        ops: s.ops,
        seconds,
        hist: Some(new_hist()),
        ..Outcome::default()
    };
    for r in results {
        let (h, tally) = r?;
        out.hist
            .as_mut()
            .expect("set")
            .add(&h)
            .expect("same bounds");
        out.user_bytes += tally.bytes;
        out.found += tally.found;
        out.failed += tally.failed;
        out.set_sum += tally.increments;
    }
    Ok(out)
}
