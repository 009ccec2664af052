//! db_bench's `randomtransaction` (its `RandomTransactionInserter` and
//! `RandomTransactionVerify`), on an optimistic or a pessimistic
//! transaction database wrapping the benchmark's database.
//!
//! `--reads` transactions (default `--num`: db_bench's `readwrites`) are
//! split between the threads. The keys form `--transaction-sets` sets: set `i`'s keys are the
//! four-digit decimal prefix `i + 1` (`0001`, `0002`, ...) followed by a
//! key as the other benchmarks make it, numbered uniformly in `0..num`.
//! Each value is a counter, 8 bytes little-endian (a missing key counts
//! 0). Each transaction draws one increment in `1..=100` and, for every
//! set in a random order, reads a random key of the set with
//! `get_for_update`, adds the increment and writes it back; then commits.
//! A transaction another one got in the way of (an optimistic commit's
//! conflict, a lock wait timeout, a deadlock) is rolled back and counted
//! as a failure, not retried, as db_bench counts them.
//!
//! Every committed transaction adds the same amount to every set, so
//! afterwards the sums of the sets' values, read at one snapshot, must be
//! equal: a difference means a transaction's writes were applied in part.
//!
//! A pessimistic transaction takes no snapshot (RocksDB's default): its
//! `get_for_update` locks the key and reads its latest value. It detects
//! deadlocks and waits `--transaction-lock-timeout` for a lock at most.

use std::sync::atomic::{AtomicU64, Ordering};

use lithify::txn::{
    OptimisticDb, OptimisticTransactionOptions, Transaction, TransactionDb, TransactionDbOptions,
    TransactionOptions,
};
use lithify::{Bytes, Db, ReadOptions};
use snafu::ResultExt as _;

use crate::data::make_key;
use crate::error::{DbSnafu, Result, TxnSnafu, VerifySnafu};
use crate::workload::{Benchmark, Outcome, Settings, in_threads, share, thread_rng};
use lithify_base::rand::SplitMix64 as Rng;

/// Bytes of a set's key prefix.
const PREFIX_LEN: usize = 4;

/// The most sets the four-digit prefixes can tell apart.
pub const MAX_SETS: u16 = 9999;

/// The transaction database `randomtransaction` runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnKind {
    /// `--optimistic-transaction-db`: validated at commit.
    Optimistic,
    /// `--transaction-db`: per-key locks.
    Pessimistic,
}

impl TxnKind {
    /// How the report names it.
    pub fn name(self) -> &'static str {
        match self {
            TxnKind::Optimistic => "optimistic",
            TxnKind::Pessimistic => "pessimistic",
        }
    }
}

/// What `randomtransaction` measured besides the committed transactions
/// (the outcome's operations).
#[derive(Debug, Clone, Copy)]
pub struct TxnOutcome {
    /// The transaction database.
    pub kind: TxnKind,
    /// Transactions begun.
    pub attempts: u64,
    /// Transactions another one got in the way of (rolled back, not
    /// retried).
    pub failed: u64,
    /// Sets of keys.
    pub sets: u16,
    /// The sum of the values of each set, the same for every set.
    pub set_sum: u128,
}

impl TxnOutcome {
    /// Failed transactions per hundred begun.
    pub fn conflict_rate_percent(&self) -> f64 {
        if self.attempts == 0 {
            0.0
        } else {
            self.failed as f64 * 100.0 / self.attempts as f64
        }
    }
}

/// The key prefix of set `set` (counted from 0): `set + 1` in four decimal
/// digits.
fn set_prefix(set: u16) -> [u8; PREFIX_LEN] {
    let mut p = [b'0'; PREFIX_LEN];
    let mut n = set + 1;
    for b in p.iter_mut().rev() {
        *b = b'0' + (n % 10) as u8;
        n /= 10;
    }
    p
}

/// Key `n` of set `set` (counted from 0) into `out`: the set's prefix
/// (`set + 1` in four decimal digits: `0001`, `0002`, ...), then
/// [`make_key`] of `n` in the rest of `out`. `out` must hold more than the
/// 4-byte prefix.
///
/// ```
/// use lithify_bench::transaction::set_key;
/// let mut key = [0u8; 16];
/// set_key(1, 0x0102, &mut key);
/// assert_eq!(&key, b"0002\0\0\0\0\0\0\x01\x020000");
/// ```
pub fn set_key(set: u16, n: u64, out: &mut [u8]) {
    out[..PREFIX_LEN].copy_from_slice(&set_prefix(set));
    make_key(n, &mut out[PREFIX_LEN..]);
}

/// A counter value: 8 bytes little-endian; `None` for any other length.
fn counter(value: &[u8]) -> Option<u64> {
    value.try_into().ok().map(u64::from_le_bytes)
}

/// The transaction database over the benchmark's database.
enum TxnDb<'a> {
    Optimistic(OptimisticDb<&'a Db>),
    Pessimistic(TransactionDb<&'a Db>),
}

impl TxnDb<'_> {
    /// Begins a transaction as `randomtransaction` runs them.
    fn begin(&self, s: &Settings) -> Transaction<'_> {
        match self {
            TxnDb::Optimistic(db) => {
                db.transaction_opt(&s.write_options, &OptimisticTransactionOptions::default())
            }
            TxnDb::Pessimistic(db) => db.transaction_opt(
                &s.write_options,
                &TransactionOptions::default()
                    .set_snapshot(false)
                    .lock_timeout(Some(s.transaction_lock_timeout))
                    .deadlock_detect(true),
            ),
        }
    }
}

/// `Some` of a transaction call's value, `None` if another transaction got
/// in the way, or the error.
fn unless_busy<T>(r: lithify::txn::Result<T>) -> Result<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_busy() => Ok(None),
        Err(e) => Err(e).context(TxnSnafu),
    }
}

/// Runs `randomtransaction` on `db`, then checks the sets' sums.
pub fn random_transaction(db: &Db, s: &Settings) -> Result<Outcome> {
    let kind = s.transaction_db.unwrap_or(TxnKind::Optimistic);
    let txn_db = match kind {
        TxnKind::Optimistic => TxnDb::Optimistic(OptimisticDb::new(db)),
        TxnKind::Pessimistic => {
            TxnDb::Pessimistic(TransactionDb::new(db, TransactionDbOptions::default()))
        }
    };
    let failed = AtomicU64::new(0);
    let benchmark = Benchmark::RandomTransaction;
    let mut outcome = in_threads(
        benchmark,
        s.threads,
        s.reads,
        s.per_second.as_deref(),
        |t, tally| {
            let mut rng = thread_rng(s, benchmark, t);
            let mut order: Vec<u16> = (0..s.transaction_sets).collect();
            let mut key = vec![0u8; PREFIX_LEN + s.key_size];
            let mut failures = 0;
            for _ in share(s.reads, s.threads, t) {
                shuffle(&mut order, &mut rng);
                let txn = txn_db.begin(s);
                match insert(txn, &order, &mut key, &mut rng, s)? {
                    Some(bytes) => tally.done(1, bytes),
                    None => {
                        failures += 1;
                        tally.done(0, 0);
                    }
                }
            }
            failed.fetch_add(failures, Ordering::Relaxed);
            Ok(())
        },
    )?;
    outcome.found = None;
    let set_sum = verify(db, s)?;
    let failed = failed.into_inner();
    outcome.transactions = Some(TxnOutcome {
        kind,
        attempts: outcome.ops + failed,
        failed,
        sets: s.transaction_sets,
        set_sum,
    });
    Ok(outcome)
}

/// One transaction: adds one random increment to a random key of every
/// set (in `order`) and commits. Returns the key and value bytes written,
/// or `None` if another transaction got in the way (this one is then
/// rolled back).
fn insert(
    mut txn: Transaction<'_>,
    order: &[u16],
    key: &mut [u8],
    rng: &mut Rng,
    s: &Settings,
) -> Result<Option<u64>> {
    let increment = 1 + rng.uniform(100);
    let mut bytes = 0;
    for &set in order {
        set_key(set, rng.uniform(s.num), key);
        let Some(value) = unless_busy(txn.get_for_update(&*key))? else {
            return Ok(None);
        };
        let current = match value.as_deref() {
            None => 0,
            Some(v) => counter(v).ok_or_else(|| not_a_counter(key, v))?,
        };
        let Some(()) = unless_busy(txn.put(&*key, current.wrapping_add(increment).to_le_bytes()))?
        else {
            return Ok(None);
        };
        bytes += (key.len() + 8) as u64;
    }
    Ok(unless_busy(txn.commit())?.map(|()| bytes))
}

/// Fisher–Yates.
fn shuffle(order: &mut [u16], rng: &mut Rng) {
    for i in (1..order.len()).rev() {
        let j = rng.uniform(i as u64 + 1) as usize;
        order.swap(i, j);
    }
}

fn not_a_counter(key: &[u8], value: &[u8]) -> crate::error::Error {
    VerifySnafu {
        message: format!(
            "randomtransaction: key {} holds {} bytes, not an 8-byte counter (was the database \
             written by something else?)",
            lithify_base::key::escape(key),
            value.len()
        ),
    }
    .build()
}

/// db_bench's `RandomTransactionVerify`: sums the values of each set at
/// one snapshot and checks the sums are equal; returns the sum.
fn verify(db: &Db, s: &Settings) -> Result<u128> {
    let snapshot = db.snapshot();
    let key_len = PREFIX_LEN + s.key_size;
    let mut first: Option<u128> = None;
    for set in 0..s.transaction_sets {
        let prefix = set_prefix(set);
        let mut upper = prefix;
        upper[PREFIX_LEN - 1] += 1;
        let options = ReadOptions::at(&snapshot)
            .lower_bound(Some(Bytes::copy_from_slice(&prefix)))
            .upper_bound(Some(Bytes::copy_from_slice(&upper)));
        let mut sum: u128 = 0;
        for item in db.iter_opt(&options) {
            let (k, v) = item.context(DbSnafu)?;
            // The other benchmarks' keys are `key_size` bytes: never
            // mistaken for a set's.
            if k.len() != key_len {
                continue;
            }
            sum += u128::from(counter(&v).ok_or_else(|| not_a_counter(&k, &v))?);
        }
        match first {
            None => first = Some(sum),
            Some(f) if f != sum => {
                return VerifySnafu {
                    message: format!(
                        "randomtransaction: the values of set 1 sum to {f} but those of set {} \
                         to {sum} at sequence number {}: a transaction's writes were not \
                         applied all together",
                        set + 1,
                        snapshot.sequence_number()
                    ),
                }
                .fail();
            }
            Some(_) => {}
        }
    }
    Ok(first.unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_four_digits_in_set_order() {
        assert_eq!(&set_prefix(0), b"0001");
        assert_eq!(&set_prefix(9), b"0010");
        assert_eq!(&set_prefix(MAX_SETS - 1), b"9999");
        assert!(set_prefix(8) < set_prefix(9));
    }

    #[test]
    fn shuffles_keep_every_set() {
        let mut rng = Rng::new(5);
        let mut order: Vec<u16> = (0..10).collect();
        shuffle(&mut order, &mut rng);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..10).collect::<Vec<_>>());
    }
}
