//! `lithify stress bank DIR`: transactions keep money from appearing or
//! vanishing — the classic bank test of transactional databases.
//!
//! On first open, `--accounts` accounts holding `--initial` each are
//! written in one synced batch together with a marker key that records
//! both numbers. Then `--threads` threads each make `--ops-per-thread`
//! transfers of a random amount (1 to 100, never more than the payer
//! holds) between two random accounts, each one transaction —
//! optimistic or pessimistic (`--kind`) — run again whenever another
//! transaction got in the way (a conflict, a lock wait timeout, a
//! deadlock); `--sync-percent` of the commits sync the WAL. Meanwhile a
//! checker thread reads every account at one snapshot, again and again,
//! and checks that they add up to `accounts x initial`.
//!
//! Every run starts by opening the database — after the SIGKILL of the
//! previous run, when the crash loop runs it — and checking the sum, and
//! ends by closing, reopening and checking again. A transaction is one
//! WAL record, so whatever a kill leaves, the sum holds; a wrong sum is a
//! failure that names it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use lithify::txn::{
    DEFAULT_LOCK_TIMEOUT, OptimisticDb, OptimisticTransactionOptions, Transaction, TransactionDb,
    TransactionDbOptions, TransactionOptions,
};
use lithify::{Bytes, Db, Options, ReadOptions, WriteBatch, WriteOptions};
use snafu::ResultExt as _;

use lithify_base::rand::SplitMix64 as Rng;

use crate::Say;
use crate::error::{DbSnafu, Result, StressFailedSnafu, TxnSnafu, UsageSnafu};

/// The key of the marker written with the accounts: 16 bytes, the number
/// of accounts and the initial balance, each 8 bytes little-endian.
const MARKER: &[u8] = b"bank/marker";

/// The prefix of every account key.
const ACCOUNT_PREFIX: &[u8] = b"bank/account/";

/// The largest amount of one transfer.
const MAX_AMOUNT: u64 = 100;

/// The kind of transactions the transfers run in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `OptimisticDb`: validated at commit, run again after a conflict.
    Optimistic,
    /// `TransactionDb`: key locks with deadlock detection and a lock
    /// timeout, run again after a timeout or a deadlock.
    Pessimistic,
}

impl std::str::FromStr for Kind {
    type Err = String;

    /// `optimistic` or `pessimistic`.
    fn from_str(s: &str) -> std::result::Result<Kind, String> {
        Kind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("{s:?} is not optimistic or pessimistic"))
    }
}

impl Kind {
    /// Both kinds.
    pub const ALL: [Kind; 2] = [Kind::Optimistic, Kind::Pessimistic];

    /// Its name (`optimistic`, `pessimistic`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Optimistic => "optimistic",
            Kind::Pessimistic => "pessimistic",
        }
    }
}

/// A `lithify stress bank`.
#[derive(Debug, Clone)]
pub struct BankStress {
    /// The database directory (created if missing).
    pub db: PathBuf,
    /// Accounts of the bank, 2 to [`MAX_ACCOUNTS`] (default 100; fixed when
    /// the bank is created, all in one write batch).
    pub accounts: Option<u64>,
    /// The balance each account starts with (default 1000; fixed when the
    /// bank is created); --accounts x --initial must fit in a u64.
    pub initial: Option<u64>,
    /// Transfer threads (a checker thread runs beside them).
    pub threads: usize,
    /// Transfers per thread.
    pub ops_per_thread: u64,
    /// The transactions: optimistic or pessimistic.
    pub kind: Kind,
    /// Percent of commits made with `sync`.
    pub sync_percent: u8,
    /// Seed of the transfers (each thread derives its own).
    pub seed: u64,
    /// Only open the database and check the sum, then exit.
    pub verify_only: bool,
}

impl BankStress {
    /// A run on the database in `db` with `lithify stress bank`'s
    /// defaults: 4 threads of 10000 optimistic transfers, 10 % of commits
    /// synced, seed 1; 100 accounts of 1000 when the bank is created.
    pub fn new(db: PathBuf) -> Self {
        BankStress {
            db,
            accounts: None,
            initial: None,
            threads: 4,
            ops_per_thread: 10_000,
            kind: Kind::Optimistic,
            sync_percent: 10,
            seed: 1,
            verify_only: false,
        }
    }
}

/// The size of the bank, as its marker records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Bank {
    accounts: u64,
    initial: u64,
}

impl Bank {
    /// What the accounts must add up to.
    fn total(self) -> u128 {
        u128::from(self.accounts) * u128::from(self.initial)
    }

    fn marker_value(self) -> [u8; 16] {
        let mut v = [0; 16];
        v[..8].copy_from_slice(&self.accounts.to_le_bytes());
        v[8..].copy_from_slice(&self.initial.to_le_bytes());
        v
    }

    fn from_marker(v: &[u8]) -> Option<Bank> {
        let accounts = u64::from_le_bytes(v.get(..8)?.try_into().ok()?);
        let initial = u64::from_le_bytes(v.get(8..16)?.try_into().ok()?);
        (v.len() == 16).then_some(Bank { accounts, initial })
    }
}

/// The key of account `n`.
fn account(n: u64) -> Vec<u8> {
    let mut k = ACCOUNT_PREFIX.to_vec();
    k.extend_from_slice(format!("{n:08}").as_bytes());
    k
}

/// A balance: 8 bytes little-endian.
fn balance(value: &[u8]) -> Option<u64> {
    value.try_into().ok().map(u64::from_le_bytes)
}

fn failed<T>(message: String) -> Result<T> {
    StressFailedSnafu { message }.fail()
}

fn usage<T>(message: String) -> Result<T> {
    UsageSnafu { message }.fail()
}

/// The most accounts a bank may have (they are created in one write
/// batch).
pub const MAX_ACCOUNTS: u64 = 1_000_000;

/// The accounts a bank has when [`BankStress::accounts`] is not given.
pub const DEFAULT_ACCOUNTS: u64 = 100;

/// The balance each account starts with when [`BankStress::initial`] is
/// not given.
pub const DEFAULT_INITIAL: u64 = 1000;

/// Runs `stress bank` on the database `a.db` opened with `opts` (see
/// [`base_options`](crate::db::base_options)), telling `say` what it does.
pub fn run(a: &BankStress, opts: Options, say: Say<'_>) -> Result<()> {
    if a.accounts.is_some_and(|n| !(2..=MAX_ACCOUNTS).contains(&n)) {
        return usage(format!(
            "--accounts must be between 2 and {MAX_ACCOUNTS}, not {}",
            a.accounts.unwrap_or(0)
        ));
    }
    // No account can then hold more than a u64: a transfer's sum never
    // overflows (it would read as money appearing from nowhere).
    crate::check_product(
        ("--accounts", a.accounts.unwrap_or(DEFAULT_ACCOUNTS)),
        ("--initial", a.initial.unwrap_or(DEFAULT_INITIAL)),
        u64::MAX,
        "money in the bank",
    )?;
    let fs = opts.fs.clone();
    if fs.exists(&a.db) && !fs.is_dir(&a.db) {
        return usage(format!("{} is not a directory", a.db.display()));
    }
    if a.verify_only && !fs.exists(&a.db.join(lithify::files::CURRENT)) {
        return usage(format!("there is no database in {}", a.db.display()));
    }
    let seed = a.seed;
    let (db, bank) = open_and_check(a, &opts, "at the start", say)?;
    if a.verify_only {
        db.close().context(DbSnafu)?;
        return Ok(());
    }
    say(&format!(
        "stress: running {} threads x {} {} transfers between {} accounts (seed {seed}, sync {}%)",
        a.threads,
        a.ops_per_thread,
        a.kind.name(),
        bank.accounts,
        a.sync_percent
    ));

    let started = Instant::now();
    let counts = match a.kind {
        Kind::Optimistic => transfer_all(&Transfers {
            db: &db,
            txn_db: TxnDb::Optimistic(OptimisticDb::new(&db)),
            bank,
            args: a,
            stop: AtomicBool::new(false),
            checks: AtomicU64::new(0),
        })?,
        Kind::Pessimistic => transfer_all(&Transfers {
            db: &db,
            txn_db: TxnDb::Pessimistic(TransactionDb::new(&db, TransactionDbOptions::default())),
            bank,
            args: a,
            stop: AtomicBool::new(false),
            checks: AtomicU64::new(0),
        })?,
    };
    say(&format!(
        "stress: {} transfers in {:.1}s: {} run again after another transaction got in the way, \
         {} declined for want of money, {} synced; {} snapshots checked",
        counts.transfers,
        started.elapsed().as_secs_f64(),
        counts.retries,
        counts.declined,
        counts.syncs,
        counts.checks
    ));
    db.close().context(DbSnafu)?;
    // A clean close loses nothing acknowledged: the sum still holds.
    let (db, _) = open_and_check(a, &opts, "after a clean close", say)?;
    db.close().context(DbSnafu)?;
    Ok(())
}

/// Opens the database and checks the bank in it; creates the bank in an
/// empty database (unless `--verify-only`).
fn open_and_check(a: &BankStress, opts: &Options, when: &str, say: Say<'_>) -> Result<(Db, Bank)> {
    let started = Instant::now();
    let dir = &a.db;
    let db = match Db::open(dir, opts.clone()) {
        Ok(db) => db,
        Err(e) => {
            return failed(format!(
                "the database in {} does not open {when} (seed {}): {e}",
                dir.display(),
                a.seed
            ));
        }
    };
    let bank = match db.get(MARKER).context(DbSnafu)? {
        Some(v) => {
            let Some(bank) = Bank::from_marker(&v) else {
                return failed(format!(
                    "the bank's marker in {} holds {} bytes, not 16 ({when})",
                    dir.display(),
                    v.len()
                ));
            };
            if a.accounts.is_some_and(|n| n != bank.accounts)
                || a.initial.is_some_and(|i| i != bank.initial)
            {
                return usage(format!(
                    "the bank in {} was created with {} accounts of {}; --accounts and \
                     --initial cannot change them",
                    dir.display(),
                    bank.accounts,
                    bank.initial
                ));
            }
            bank
        }
        None => {
            if let Some(item) = db.iter().next() {
                let (k, _) = item.context(DbSnafu)?;
                return failed(format!(
                    "the database in {} holds key {} but no bank marker {when} (seed {}): the \
                     accounts and the marker were written in one batch, so either all or none \
                     of them should be there",
                    dir.display(),
                    lithify_base::key::escape(&k),
                    a.seed
                ));
            }
            if a.verify_only {
                return usage(format!("there is no bank in {}", dir.display()));
            }
            let bank = Bank {
                accounts: a.accounts.unwrap_or(DEFAULT_ACCOUNTS),
                initial: a.initial.unwrap_or(DEFAULT_INITIAL),
            };
            let mut batch = WriteBatch::new();
            for n in 0..bank.accounts {
                batch.put(account(n), bank.initial.to_le_bytes());
            }
            batch.put(MARKER, bank.marker_value());
            let sync = WriteOptions::default().sync(true);
            db.write_opt(batch, &sync).context(DbSnafu)?;
            say(&format!(
                "stress: created {} accounts of {} in {}",
                bank.accounts,
                bank.initial,
                dir.display()
            ));
            bank
        }
    };
    let snapshot = db.snapshot();
    let read = ReadOptions::at(&snapshot);
    let checked = match sum_by_lookups(&db, bank, &read)? {
        Ok(()) => sum_by_scan(&db, bank, &read)?,
        Err(e) => Err(e),
    };
    if let Err(message) = checked {
        return failed(format!(
            "{message} {when}, at sequence number {} (seed {}; `lithify stress bank {} \
             --verify-only` repeats the check)",
            snapshot.sequence_number(),
            a.seed,
            dir.display()
        ));
    }
    drop(snapshot);
    say(&format!(
        "stress: verified {} accounts {when}: they sum to {} in {:.2}s",
        bank.accounts,
        bank.total(),
        started.elapsed().as_secs_f64()
    ));
    Ok((db, bank))
}

/// Reads every account with lookups at `read`'s snapshot: `Ok(Err(what is
/// wrong))` unless every account is there and they sum to the total.
fn sum_by_lookups(
    db: &Db,
    bank: Bank,
    read: &ReadOptions,
) -> Result<std::result::Result<(), String>> {
    let mut sum: u128 = 0;
    for n in 0..bank.accounts {
        let Some(v) = db.get_opt(account(n), read).context(DbSnafu)? else {
            return Ok(Err(format!("account {n} of {} is missing", bank.accounts)));
        };
        let Some(b) = balance(&v) else {
            return Ok(Err(format!(
                "account {n} holds {} bytes, not an 8-byte balance",
                v.len()
            )));
        };
        sum += u128::from(b);
    }
    Ok(check_sum(bank, sum, bank.accounts))
}

/// Reads every account with one iterator at `read`'s snapshot, as
/// [`sum_by_lookups`] does with lookups.
fn sum_by_scan(db: &Db, bank: Bank, read: &ReadOptions) -> Result<std::result::Result<(), String>> {
    let mut upper = ACCOUNT_PREFIX.to_vec();
    if let Some(last) = upper.last_mut() {
        *last += 1;
    }
    let options = read
        .clone()
        .lower_bound(Some(Bytes::from_static(ACCOUNT_PREFIX)))
        .upper_bound(Some(Bytes::from(upper)));
    let mut sum: u128 = 0;
    let mut seen = 0;
    for item in db.iter_opt(&options) {
        let (k, v) = item.context(DbSnafu)?;
        let Some(b) = balance(&v) else {
            return Ok(Err(format!(
                "account {} holds {} bytes, not an 8-byte balance",
                String::from_utf8_lossy(&k[ACCOUNT_PREFIX.len()..]),
                v.len()
            )));
        };
        sum += u128::from(b);
        seen += 1;
    }
    Ok(check_sum(bank, sum, seen))
}

fn check_sum(bank: Bank, sum: u128, seen: u64) -> std::result::Result<(), String> {
    if seen != bank.accounts {
        return Err(format!(
            "the bank holds {seen} accounts, not {}",
            bank.accounts
        ));
    }
    if sum != bank.total() {
        return Err(format!(
            "the {} accounts sum to {sum}, not {} ({} x {}): {}",
            bank.accounts,
            bank.total(),
            bank.accounts,
            bank.initial,
            if sum > bank.total() {
                "money appeared"
            } else {
                "money vanished"
            }
        ));
    }
    Ok(())
}

/// The transaction database over the run's database.
enum TxnDb<'a> {
    Optimistic(OptimisticDb<&'a Db>),
    Pessimistic(TransactionDb<&'a Db>),
}

impl TxnDb<'_> {
    fn begin(&self, write_options: &WriteOptions) -> Transaction<'_> {
        match self {
            TxnDb::Optimistic(db) => {
                db.transaction_opt(write_options, &OptimisticTransactionOptions::default())
            }
            TxnDb::Pessimistic(db) => db.transaction_opt(
                write_options,
                &TransactionOptions::default()
                    .set_snapshot(false)
                    .lock_timeout(Some(DEFAULT_LOCK_TIMEOUT))
                    .deadlock_detect(true),
            ),
        }
    }
}

/// What the threads did.
#[derive(Debug, Default)]
struct Counts {
    transfers: u64,
    retries: u64,
    declined: u64,
    syncs: u64,
    checks: u64,
}

/// The transfer threads' and the checker's shared state.
struct Transfers<'a> {
    db: &'a Db,
    txn_db: TxnDb<'a>,
    bank: Bank,
    args: &'a BankStress,
    /// Set when the workers are done or one failed.
    stop: AtomicBool,
    checks: AtomicU64,
}

/// Runs the transfer threads and the checker until the transfers are done
/// or one fails.
fn transfer_all(run: &Transfers<'_>) -> Result<Counts> {
    std::thread::scope(|scope| {
        let checker = scope.spawn(|| {
            let r = run.checker();
            if r.is_err() {
                run.stop.store(true, Ordering::SeqCst);
            }
            r
        });
        let handles: Vec<_> = (0..run.args.threads)
            .map(|t| {
                scope.spawn(move || {
                    let r = run.worker(t);
                    if r.is_err() {
                        run.stop.store(true, Ordering::SeqCst);
                    }
                    r
                })
            })
            .collect();
        let results: Vec<Result<Counts>> = handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(r) => r,
                Err(_) => failed("a transfer thread panicked".to_string()),
            })
            .collect();
        run.stop.store(true, Ordering::SeqCst);
        let checked = match checker.join() {
            Ok(r) => r,
            Err(_) => failed("the checker thread panicked".to_string()),
        };
        let mut total = Counts::default();
        for r in results {
            let c = r?;
            total.transfers += c.transfers;
            total.retries += c.retries;
            total.declined += c.declined;
            total.syncs += c.syncs;
        }
        checked?;
        total.checks = run.checks.load(Ordering::Relaxed);
        Ok(total)
    })
}

/// How one attempt at a transfer ended.
enum Attempt {
    Committed,
    Declined,
    /// Another transaction got in the way: run it again.
    Busy,
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

impl Transfers<'_> {
    fn worker(&self, t: usize) -> Result<Counts> {
        let seed = self
            .args
            .seed
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(t as u64 + 1);
        let mut rng = Rng::new(seed);
        let mut counts = Counts::default();
        let accounts = self.bank.accounts;
        for _ in 0..self.args.ops_per_thread {
            if self.stop.load(Ordering::Relaxed) {
                break;
            }
            let from = rng.uniform(accounts);
            let to = (from + 1 + rng.uniform(accounts - 1)) % accounts;
            let amount = 1 + rng.uniform(MAX_AMOUNT);
            let sync = rng.uniform(100) < u64::from(self.args.sync_percent);
            let write_options = WriteOptions::default().sync(sync);
            loop {
                match self.transfer(&write_options, from, to, amount)? {
                    Attempt::Committed => {
                        counts.transfers += 1;
                        counts.syncs += u64::from(sync);
                        break;
                    }
                    Attempt::Declined => {
                        counts.declined += 1;
                        break;
                    }
                    Attempt::Busy => {
                        counts.retries += 1;
                        if self.stop.load(Ordering::Relaxed) {
                            return Ok(counts);
                        }
                    }
                }
            }
        }
        Ok(counts)
    }

    /// One attempt at moving `amount` from account `from` to account `to`.
    fn transfer(
        &self,
        write_options: &WriteOptions,
        from: u64,
        to: u64,
        amount: u64,
    ) -> Result<Attempt> {
        let mut txn = self.txn_db.begin(write_options);
        let (from_key, to_key) = (account(from), account(to));
        let Some(a) = unless_busy(txn.get_for_update(&from_key))? else {
            return Ok(Attempt::Busy);
        };
        let Some(b) = unless_busy(txn.get_for_update(&to_key))? else {
            return Ok(Attempt::Busy);
        };
        let (a, b) = match (self.read_balance(from, a)?, self.read_balance(to, b)?) {
            (a, b) if a >= amount => (a, b),
            _ => {
                txn.rollback();
                return Ok(Attempt::Declined);
            }
        };
        let Some(b) = b.checked_add(amount) else {
            return failed(format!(
                "account {to} holds {b}: more money than the bank has (seed {})",
                self.args.seed
            ));
        };
        for (key, value) in [(&from_key, a - amount), (&to_key, b)] {
            if unless_busy(txn.put(key, value.to_le_bytes()))?.is_none() {
                return Ok(Attempt::Busy);
            }
        }
        Ok(match unless_busy(txn.commit())? {
            Some(()) => Attempt::Committed,
            None => Attempt::Busy,
        })
    }

    /// The balance of account `n` a transaction read.
    fn read_balance(&self, n: u64, value: Option<Bytes>) -> Result<u64> {
        match value.as_deref().map(balance) {
            Some(Some(b)) => Ok(b),
            Some(None) => failed(format!(
                "a transaction read account {n} as {} bytes, not an 8-byte balance (seed {})",
                value.as_deref().map_or(0, <[u8]>::len),
                self.args.seed
            )),
            None => failed(format!(
                "a transaction found account {n} missing (seed {})",
                self.args.seed
            )),
        }
    }

    /// Reads every account at one snapshot, by scans and lookups in turn,
    /// until the transfers are done; every read must sum to the total.
    fn checker(&self) -> Result<()> {
        let mut by_scan = true;
        while !self.stop.load(Ordering::Relaxed) {
            let snapshot = self.db.snapshot();
            let read = ReadOptions::at(&snapshot);
            let r = if by_scan {
                sum_by_scan(self.db, self.bank, &read)?
            } else {
                sum_by_lookups(self.db, self.bank, &read)?
            };
            if let Err(message) = r {
                return failed(format!(
                    "{message}, read by {} at sequence number {} while transfers ran (seed {}, \
                     {} transactions)",
                    if by_scan { "a scan" } else { "lookups" },
                    snapshot.sequence_number(),
                    self.args.seed,
                    self.args.kind.name()
                ));
            }
            self.checks.fetch_add(1, Ordering::Relaxed);
            by_scan = !by_scan;
            // Leave the transfer threads the CPU most of the time.
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn account_keys_sort_in_order_and_the_marker_round_trips() {
        assert!(account(9) < account(10));
        assert!(account(99_999) < account(100_000));
        let bank = Bank {
            accounts: 7,
            initial: 1000,
        };
        assert_eq!(Bank::from_marker(&bank.marker_value()), Some(bank));
        assert_eq!(Bank::from_marker(b"short"), None);
        assert_eq!(bank.total(), 7000);
        assert!(check_sum(bank, 7000, 7).is_ok());
        assert!(check_sum(bank, 6999, 7).unwrap_err().contains("vanished"));
        assert!(check_sum(bank, 7000, 6).unwrap_err().contains("6 accounts"));
    }
}
