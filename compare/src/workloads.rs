//! db_bench's workloads over any [`Kv`]: 16-byte keys drawn uniformly
//! from `0..keys`, values half random and half repeated (db_bench's
//! compression ratio 0.5), operations split between threads; and its
//! `randomtransaction` over any [`TxnKv`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use hdrhistogram::Histogram;

use crate::engines::{Kv, Result, TxnKv};

/// The workloads `--workload` takes.
pub const WORKLOADS: [&str; 7] = [
    "fillrandom",
    "overwrite",
    "readrandom",
    "seekrandom",
    "readwhilewriting",
    "compact",
    "randomtransaction",
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

/// A small, fast random generator (SplitMix64), one per thread.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }
}

/// db_bench's 16-byte key of `k`.
pub fn key(k: u64, buf: &mut [u8; 16]) {
    let mut k = k;
    for b in buf.iter_mut().rev() {
        *b = b'0' + (k % 10) as u8;
        k /= 10;
    }
}

/// A value of `size` bytes, half random, half repeated.
pub fn value(rng: &mut Rng, size: usize, buf: &mut Vec<u8>) {
    buf.clear();
    let random = size / 2;
    while buf.len() < random {
        buf.extend_from_slice(&rng.next().to_le_bytes());
    }
    buf.truncate(random);
    buf.resize(size, b'x');
}

fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds")
}

/// Writes `ops` random keys of `0..keys` (fillrandom, overwrite) in
/// `threads` threads.
pub fn write_random(db: &dyn Kv, s: &Spec) -> Result<Outcome> {
    in_threads(s, |t, ops, hist| {
        let mut rng = Rng::new(s.seed ^ (t as u64 + 1).wrapping_mul(0x1234_5678_9abc));
        let (mut k, mut v) = ([0u8; 16], Vec::with_capacity(s.value_size));
        let mut bytes = 0;
        for _ in 0..ops {
            key(rng.below(s.keys), &mut k);
            value(&mut rng, s.value_size, &mut v);
            let t0 = Instant::now();
            db.put(&k, &v, s.sync)?;
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
    let (mut k, mut v) = ([0u8; 16], Vec::with_capacity(value_size));
    // A random permutation by a multiplicative step coprime with `keys`.
    let step = (keys / 2..).find(|s| gcd(*s, keys) == 1).unwrap_or(1);
    let start = rng.below(keys.max(1));
    for i in 0..keys {
        key((start + i * step) % keys, &mut k);
        value(&mut rng, value_size, &mut v);
        db.put(&k, &v, false)?;
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
        let mut k = [0u8; 16];
        let mut found = 0;
        for _ in 0..ops {
            key(rng.below(s.keys), &mut k);
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
        let mut k = [0u8; 16];
        let mut found = 0;
        for _ in 0..ops {
            key(rng.below(s.keys), &mut k);
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
            let (mut k, mut v) = ([0u8; 16], Vec::with_capacity(s.value_size));
            let mut bytes = 0;
            while !stop.load(Ordering::Relaxed) {
                key(rng.below(s.keys), &mut k);
                value(&mut rng, s.value_size, &mut v);
                db.put(&k, &v, false)?;
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

/// randomtransaction's 16-byte key of `k` in set `set`: the set's 4-byte
/// prefix, then `k` in 12 decimal digits.
pub fn set_key(set: usize, k: u64, buf: &mut [u8; 16]) {
    buf[..4].copy_from_slice(SETS[set]);
    let mut k = k;
    for b in buf[4..].iter_mut().rev() {
        *b = b'0' + (k % 10) as u8;
        k /= 10;
    }
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
            let first = (rng.next() & 1) as usize;
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
                let ops =
                    s.ops * (t as u64 + 1) / threads as u64 - s.ops * t as u64 / threads as u64;
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
