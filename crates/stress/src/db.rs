//! `lithify stress db DIR`: RocksDB's db_stress for the engine.
//!
//! A run first opens the database and, if an expected-state file exists,
//! verifies every key against it — this
//! is where the damage of a crash of the previous run shows — then resolves
//! the windows to what it found. Then `--threads` threads run a random
//! workload over a key space small enough to be overwritten often: point
//! reads, puts, deletes, range deletions, write batches, iterators (some at
//! snapshots checked many operations later), flushes and manual
//! compactions. Every read is checked while the keys it covers are locked,
//! so it must see exactly the latest acknowledged writes. At the end the
//! database is closed, reopened and verified again.
//!
//! Writes with `sync` are a `--sync-percent` share. What a write's
//! acknowledgement proves depends on how the run may end: with the WAL
//! handed to the OS before a write returns (the engine's default), a
//! SIGKILL loses no acknowledged write; with `--manual-wal-flush true`
//! only sync writes (and everything acknowledged before a sync write
//! started) are durable.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use lithify::vfs::FileSystem;
use lithify::{Bytes, Db, Options, ReadOptions, Snapshot, WriteBatch, WriteOptions};
use snafu::ResultExt as _;

use lithify_base::rand::SplitMix64 as Rng;

use crate::Say;
use crate::db_expected::{DbExpected, StateWriter};
use crate::db_verify::{self, Verdict};
use crate::error::{DbSnafu, Result, StressFailedSnafu, UsageSnafu};
use crate::key_state::Observed;
use crate::values::{Values, key, parse_key};

/// A `lithify stress db` (db_stress's names where it has them).
#[derive(Debug, Clone)]
pub struct DbStress {
    /// The database directory (created if missing).
    pub db: PathBuf,
    /// The expected-state file (default: DIR.expected-state beside the
    /// database). Created with the database; a later run verifies the
    /// database against it before running.
    pub expected_state: Option<PathBuf>,
    /// Keys in the key space, at most [`MAX_STRESS_KEYS`](crate::MAX_STRESS_KEYS)
    /// (default 10000; fixed when the expected state is created).
    pub keys: Option<u64>,
    /// Largest value in bytes, [`MIN_VALUE_SIZE`](crate::MIN_VALUE_SIZE) to
    /// [`MAX_VALUE_SIZE`](crate::MAX_VALUE_SIZE) (default 256; fixed when
    /// the expected state is created).
    pub max_value_size: Option<u32>,
    /// Worker threads.
    pub threads: usize,
    /// Operations per thread.
    pub ops_per_thread: u64,
    /// Stop after this many seconds (at most
    /// [`MAX_DURATION_SECS`](crate::MAX_DURATION_SECS)) even if operations
    /// remain.
    pub duration: Option<f64>,
    /// Seed of the workload (each thread derives its own).
    pub seed: u64,
    /// Percent of writes made with `sync`.
    pub sync_percent: u8,
    /// Percent of operations that are point reads; the six percents add up
    /// to 100.
    pub readpercent: u8,
    /// Percent of operations that are puts.
    pub writepercent: u8,
    /// Percent of operations that are deletes.
    pub delpercent: u8,
    /// Percent of operations that are range deletions.
    pub delrangepercent: u8,
    /// Percent of operations that are write batches of several keys.
    pub batchpercent: u8,
    /// Percent of operations that are iterator checks.
    pub iterpercent: u8,
    /// Keys a range deletion or an iterator check covers at most.
    pub range_width: u64,
    /// One operation in N (per thread) also flushes the memtable; 0 never.
    pub flush_one_in: u64,
    /// One operation in N (per thread) also compacts a random key range; 0
    /// never.
    pub compact_range_one_in: u64,
    /// Operations a thread holds a snapshot before checking it.
    pub snapshot_hold_ops: u64,
    /// Only verify the database against the expected state, then exit.
    pub verify_only: bool,
}

impl DbStress {
    /// A run on the database in `db` with `lithify stress db`'s defaults:
    /// 4 threads of 100000 operations (25 % reads, 35 % puts, 10 %
    /// deletes, 5 % range deletions, 10 % batches, 15 % iterator checks),
    /// 10 % of writes synced, seed 1; 10000 keys and values of up to 256
    /// bytes when the expected state is created.
    pub fn new(db: PathBuf) -> Self {
        DbStress {
            db,
            expected_state: None,
            keys: None,
            max_value_size: None,
            threads: 4,
            ops_per_thread: 100_000,
            duration: None,
            seed: 1,
            sync_percent: 10,
            readpercent: 25,
            writepercent: 35,
            delpercent: 10,
            delrangepercent: 5,
            batchpercent: 10,
            iterpercent: 15,
            range_width: 10,
            flush_one_in: 2_000,
            compact_range_one_in: 5_000,
            snapshot_hold_ops: 100,
            verify_only: false,
        }
    }
}

/// The engine options a stress run starts from: 512 KiB memtables, 256 KiB
/// files, a 1 MiB base level and an 8 MiB cache, so that flushes and
/// compactions run all the time.
pub fn base_options(fs: Arc<dyn FileSystem>) -> Options {
    Options::default()
        .fs(fs)
        .write_buffer_size(512 << 10)
        .target_file_size_base(256 << 10)
        .max_bytes_for_level_base(1 << 20)
        .block_cache_size(8 << 20)
}

/// The default expected-state path for a database directory.
pub fn default_expected_path(dir: &Path) -> PathBuf {
    let mut p = dir.as_os_str().to_owned();
    p.push(".expected-state");
    PathBuf::from(p)
}

fn failed<T>(message: String) -> Result<T> {
    StressFailedSnafu { message }.fail()
}

/// Runs `stress db` on the database `a.db` opened with `opts` (whose
/// file system must be the one `a.db` and the expected state live on),
/// telling `say` what it does.
pub fn run(a: &DbStress, opts: Options, say: Say<'_>) -> Result<()> {
    crate::check_duration(a.duration)?;
    if let Some(keys) = a.keys {
        crate::check_keys("--keys", keys)?;
    }
    let percents = [
        a.readpercent,
        a.writepercent,
        a.delpercent,
        a.delrangepercent,
        a.batchpercent,
        a.iterpercent,
    ];
    if percents.iter().map(|&p| u32::from(p)).sum::<u32>() != 100 {
        return UsageSnafu {
            message: format!(
                "--readpercent, --writepercent, --delpercent, --delrangepercent, --batchpercent \
                 and --iterpercent must add up to 100, not {}",
                percents.iter().map(|&p| u32::from(p)).sum::<u32>()
            ),
        }
        .fail();
    }
    let fs = opts.fs.clone();
    if fs.exists(&a.db) && !fs.is_dir(&a.db) {
        // Checked before the expected-state file is created beside it.
        return UsageSnafu {
            message: format!("{} is not a directory", a.db.display()),
        }
        .fail();
    }
    let expected_path = a
        .expected_state
        .clone()
        .unwrap_or_else(|| default_expected_path(&a.db));
    // The expected state never goes among stored data (the database
    // under test included).
    crate::check_output(&*fs, &expected_path)?;
    let seed = a.seed;
    let state = if fs.exists(&expected_path) {
        let state = DbExpected::load(fs.clone(), &expected_path)?;
        if a.keys.is_some_and(|k| k != state.keys())
            || a.max_value_size
                .is_some_and(|m| m != state.max_value_size())
        {
            return UsageSnafu {
                message: format!(
                    "{} was created for {} keys and values of up to {} bytes; \
                     --keys and --max-value-size cannot change them",
                    expected_path.display(),
                    state.keys(),
                    state.max_value_size()
                ),
            }
            .fail();
        }
        state
    } else {
        if fs.is_dir(&a.db) && !fs.list_dir(&a.db).map(|l| l.is_empty()).unwrap_or(false) {
            return UsageSnafu {
                message: format!(
                    "{} is not empty but {} does not exist: a stress run starts from an empty \
                     directory, or resumes with the expected state it wrote",
                    a.db.display(),
                    expected_path.display()
                ),
            }
            .fail();
        }
        if a.verify_only {
            return UsageSnafu {
                message: format!("there is no expected state {}", expected_path.display()),
            }
            .fail();
        }
        let max_value_size = a.max_value_size.unwrap_or(256);
        DbExpected::create(
            fs.clone(),
            &expected_path,
            a.keys.unwrap_or(10_000),
            max_value_size,
        )?
    };

    let db = open_and_verify(&a.db, &opts, &state, seed, "at the start", say)?;
    if a.verify_only {
        db.close().context(DbSnafu)?;
        return Ok(());
    }
    say(&format!(
        "stress: running {} threads x {} operations on {} keys (seed {seed}, sync {}%, {})",
        a.threads,
        a.ops_per_thread,
        state.keys(),
        a.sync_percent,
        if opts.manual_wal_flush {
            "manual WAL flush: only synced writes survive a kill"
        } else {
            "every acknowledged write survives a kill"
        }
    ));

    let run = Workload {
        db: &db,
        state: &state,
        values: state.values(),
        args: a,
        ack_survives_kill: !opts.manual_wal_flush,
        stop: AtomicBool::new(false),
        deadline: a
            .duration
            .map(|s| Instant::now() + Duration::from_secs_f64(s.max(0.0))),
    };
    let start = Instant::now();
    let results: Vec<Result<Counts>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..a.threads)
            .map(|t| {
                let run = &run;
                scope.spawn(move || {
                    let r = run.worker(t);
                    if r.is_err() {
                        run.stop.store(true, Ordering::SeqCst);
                    }
                    r
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(r) => r,
                Err(_) => failed("a stress thread panicked".to_string()),
            })
            .collect()
    });
    let mut total = Counts::default();
    for r in results {
        total.add(&r?);
    }
    let secs = start.elapsed().as_secs_f64();
    say(&format!(
        "stress: {} operations in {secs:.1}s: {} gets, {} puts, {} deletes, {} range deletions, \
         {} batches, {} iterator checks, {} snapshot checks, {} flushes, {} compactions, \
         {} sync writes",
        total.ops,
        total.gets,
        total.puts,
        total.deletes,
        total.range_deletes,
        total.batches,
        total.iterations,
        total.snapshot_checks,
        total.flushes,
        total.compactions,
        total.syncs
    ));
    db.close().context(DbSnafu)?;
    // A clean close loses nothing acknowledged.
    let db = open_and_verify(&a.db, &opts, &state, seed, "after a clean close", say)?;
    db.close().context(DbSnafu)?;
    Ok(())
}

/// Opens the database, verifies it against `state`, and resolves the
/// state to what was found.
fn open_and_verify(
    dir: &Path,
    opts: &Options,
    state: &DbExpected,
    seed: u64,
    when: &str,
    say: Say<'_>,
) -> Result<Db> {
    let started = Instant::now();
    let db = match Db::open(dir, opts.clone()) {
        Ok(db) => db,
        Err(e) => {
            return failed(format!(
                "the database in {} does not open {when} (seed {seed}): {e}",
                dir.display()
            ));
        }
    };
    let verdict: Verdict = db_verify::verify(&db, state)?;
    if !verdict.passed() {
        return failed(format!(
            "the database in {} fails verification against {} {when} (seed {seed}; the files \
             are left as they are: `lithify stress db {} --expected-state {} --verify-only` \
             repeats the check): {}",
            dir.display(),
            state.path().display(),
            dir.display(),
            state.path().display(),
            verdict.report()
        ));
    }
    db_verify::resolve(state, &verdict)?;
    say(&format!(
        "stress: verified {} keys {when} ({} present; writes in flight: {} survived, {} lost) in {:.2}s",
        state.keys(),
        verdict.present,
        verdict.pending_applied,
        verdict.pending_lost,
        started.elapsed().as_secs_f64()
    ));
    Ok(db)
}

/// Operations done by a thread.
#[derive(Debug, Default, Clone)]
struct Counts {
    ops: u64,
    gets: u64,
    puts: u64,
    deletes: u64,
    range_deletes: u64,
    batches: u64,
    iterations: u64,
    snapshot_checks: u64,
    flushes: u64,
    compactions: u64,
    syncs: u64,
}

impl Counts {
    fn add(&mut self, o: &Counts) {
        self.ops += o.ops;
        self.gets += o.gets;
        self.puts += o.puts;
        self.deletes += o.deletes;
        self.range_deletes += o.range_deletes;
        self.batches += o.batches;
        self.iterations += o.iterations;
        self.snapshot_checks += o.snapshot_checks;
        self.flushes += o.flushes;
        self.compactions += o.compactions;
        self.syncs += o.syncs;
    }
}

/// A snapshot a thread holds, with what its range held when it was taken.
struct HeldSnapshot {
    snapshot: Snapshot,
    first: u64,
    image: Vec<Observed>,
    check_after: u64,
}

/// One write of a key in a write operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyWrite {
    Put,
    Delete,
}

/// The shape of a write operation.
#[derive(Debug, Clone, Copy)]
enum WriteShape {
    /// One key: `put` or `delete`.
    Single,
    /// `delete_range` of the locked keys (consecutive).
    Range,
    /// A `WriteBatch` of the locked keys.
    Batch,
}

struct Workload<'a> {
    db: &'a Db,
    state: &'a DbExpected,
    values: Values,
    args: &'a DbStress,
    ack_survives_kill: bool,
    stop: AtomicBool,
    deadline: Option<Instant>,
}

impl Workload<'_> {
    fn worker(&self, t: usize) -> Result<Counts> {
        let seed = self
            .args
            .seed
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(t as u64 + 1);
        let mut rng = Rng::new(seed);
        let mut w = self.state.writer()?;
        let mut counts = Counts::default();
        let mut held: Option<HeldSnapshot> = None;
        let keys = self.state.keys();
        for i in 0..self.args.ops_per_thread {
            if self.stop.load(Ordering::Relaxed)
                || (i % 64 == 0 && self.deadline.is_some_and(|d| Instant::now() >= d))
            {
                break;
            }
            counts.ops += 1;
            let a = &self.args;
            let mut pick = rng.uniform(100) as u8;
            let mut choose = |p: u8| {
                if pick < p {
                    true
                } else {
                    pick -= p;
                    false
                }
            };
            if choose(a.readpercent) {
                counts.gets += 1;
                self.get(rng.uniform(keys))?;
            } else if choose(a.writepercent) {
                counts.puts += 1;
                let k = rng.uniform(keys);
                self.write(
                    &mut w,
                    &mut rng,
                    &[(k, KeyWrite::Put)],
                    WriteShape::Single,
                    &mut counts,
                )?;
            } else if choose(a.delpercent) {
                counts.deletes += 1;
                let k = rng.uniform(keys);
                self.write(
                    &mut w,
                    &mut rng,
                    &[(k, KeyWrite::Delete)],
                    WriteShape::Single,
                    &mut counts,
                )?;
            } else if choose(a.delrangepercent) {
                counts.range_deletes += 1;
                let first = rng.uniform(keys);
                let width = 1 + rng.uniform(a.range_width.max(1));
                let plan: Vec<_> = (first..(first + width).min(keys))
                    .map(|k| (k, KeyWrite::Delete))
                    .collect();
                self.write(&mut w, &mut rng, &plan, WriteShape::Range, &mut counts)?;
            } else if choose(a.batchpercent) {
                counts.batches += 1;
                let n = 2 + rng.uniform(7);
                let mut plan: Vec<_> = (0..n)
                    .map(|_| {
                        let k = rng.uniform(keys);
                        let kind = if rng.uniform(4) == 0 {
                            KeyWrite::Delete
                        } else {
                            KeyWrite::Put
                        };
                        (k, kind)
                    })
                    .collect();
                plan.sort_by_key(|&(k, _)| k);
                plan.dedup_by_key(|&mut (k, _)| k);
                self.write(&mut w, &mut rng, &plan, WriteShape::Batch, &mut counts)?;
            } else {
                counts.iterations += 1;
                let first = rng.uniform(keys);
                let width = 1 + rng.uniform(a.range_width.max(1) * 2);
                let end = (first + width).min(keys);
                let taken = self.iterate(&mut rng, first, end, held.is_none(), i)?;
                if held.is_none() {
                    held = taken;
                }
            }
            if held.as_ref().is_some_and(|h| h.check_after <= i)
                && let Some(h) = held.take()
            {
                counts.snapshot_checks += 1;
                self.check_snapshot(&h)?;
            }
            if a.flush_one_in > 0 && rng.uniform(a.flush_one_in) == 0 {
                counts.flushes += 1;
                self.db.flush().context(DbSnafu)?;
            }
            if a.compact_range_one_in > 0 && rng.uniform(a.compact_range_one_in) == 0 {
                counts.compactions += 1;
                let x = rng.uniform(keys);
                let y = rng.uniform(keys);
                let (lo, hi) = (key(x.min(y)), key(x.max(y)));
                self.db
                    .compact_range(Some(&lo), Some(&hi))
                    .context(DbSnafu)?;
            }
        }
        if let Some(h) = held.take() {
            counts.snapshot_checks += 1;
            self.check_snapshot(&h)?;
        }
        Ok(counts)
    }

    fn observe(&self, k: u64, value: Option<&[u8]>, what: &str) -> Result<Observed> {
        match value {
            None => Ok(Observed::Absent),
            Some(v) => match self.values.base_of(k, v) {
                Some(b) => Ok(Observed::Put(b)),
                None => failed(format!(
                    "{what} of key {} returned {} which no write of the key produced (seed {})",
                    String::from_utf8_lossy(&key(k)),
                    lithify_base::key::escape(v),
                    self.args.seed
                )),
            },
        }
    }

    /// A point read under the key's lock: exactly the latest write.
    fn get(&self, k: u64) -> Result<()> {
        let s = self.state.lock(k);
        let got = self.db.get(key(k)).context(DbSnafu)?;
        let seen = self.observe(k, got.as_deref(), "a lookup")?;
        if seen != s.latest() {
            return failed(format!(
                "a lookup of key {} returned {seen} but the latest acknowledged write left {} \
                 (seed {})",
                String::from_utf8_lossy(&key(k)),
                s.latest(),
                self.args.seed
            ));
        }
        Ok(())
    }

    /// A write of the keys of `plan` (sorted, distinct), as db_stress does
    /// it: lock them in order, widen their windows (written to the file
    /// first), write, then record the acknowledgement.
    fn write(
        &self,
        w: &mut StateWriter<'_>,
        rng: &mut Rng,
        plan: &[(u64, KeyWrite)],
        shape: WriteShape,
        counts: &mut Counts,
    ) -> Result<()> {
        if plan.is_empty() {
            return Ok(());
        }
        let sync = rng.uniform(100) < u64::from(self.args.sync_percent);
        counts.syncs += u64::from(sync);
        let mut guards: Vec<_> = plan.iter().map(|&(k, _)| self.state.lock(k)).collect();
        let started = self.state.now();
        let durable = self.state.durable_stamp();
        let mut bases = Vec::with_capacity(plan.len());
        for (g, &(_, kind)) in guards.iter_mut().zip(plan) {
            g.collapse(durable);
            bases.push(match kind {
                KeyWrite::Put => g.begin_put(),
                KeyWrite::Delete => {
                    g.begin_delete();
                    0
                }
            });
        }
        self.record(w, plan, &guards, shape)?;
        let wo = WriteOptions::default().sync(sync);
        let result = match shape {
            WriteShape::Single => {
                let (k, kind) = plan[0];
                match kind {
                    KeyWrite::Put => self.db.put_opt(key(k), self.values.value(k, bases[0]), &wo),
                    KeyWrite::Delete => self.db.delete_opt(key(k), &wo),
                }
            }
            WriteShape::Range => {
                let first = plan[0].0;
                let last = plan[plan.len() - 1].0;
                self.db.delete_range_opt(key(first), key(last + 1), &wo)
            }
            WriteShape::Batch => {
                let mut batch = WriteBatch::new();
                for (&(k, kind), &base) in plan.iter().zip(&bases) {
                    match kind {
                        KeyWrite::Put => batch.put(key(k), self.values.value(k, base)),
                        KeyWrite::Delete => batch.delete(key(k)),
                    }
                }
                self.db.write_opt(batch, &wo)
            }
        };
        result.context(DbSnafu)?;
        let stamp = self.state.next_stamp();
        let survives = sync || self.ack_survives_kill;
        for (g, (&(_, kind), &base)) in guards.iter_mut().zip(plan.iter().zip(&bases)) {
            match kind {
                KeyWrite::Put => g.ack_put(base, stamp, survives),
                KeyWrite::Delete => g.ack_delete(stamp, survives),
            }
        }
        self.record(w, plan, &guards, shape)?;
        if sync {
            w.advance_durable(started)?;
        }
        Ok(())
    }

    /// Writes the slots of the locked keys.
    fn record(
        &self,
        w: &mut StateWriter<'_>,
        plan: &[(u64, KeyWrite)],
        guards: &[lithify_base::sync::MutexGuard<'_, crate::key_state::KeyState>],
        shape: WriteShape,
    ) -> Result<()> {
        if matches!(shape, WriteShape::Range) {
            let states: Vec<_> = guards.iter().map(|g| &**g).collect();
            return w.write_run(plan[0].0, &states);
        }
        for (g, &(k, _)) in guards.iter().zip(plan) {
            w.write(k, g)?;
        }
        Ok(())
    }

    /// Reads keys `first..end` under their locks, by a bounded forward or
    /// backward scan or a cursor walk, and compares with the latest
    /// writes. May take a snapshot of the range to check later.
    fn iterate(
        &self,
        rng: &mut Rng,
        first: u64,
        end: u64,
        may_hold: bool,
        op: u64,
    ) -> Result<Option<HeldSnapshot>> {
        let guards: Vec<_> = (first..end).map(|k| self.state.lock(k)).collect();
        let image: Vec<Observed> = guards.iter().map(|g| g.latest()).collect();
        let expected = present(first, &image);
        let opts = ReadOptions::default()
            .lower_bound(Some(Bytes::from(key(first))))
            .upper_bound(Some(Bytes::from(key(end))));
        let how = rng.uniform(3);
        let got = match how {
            0 => self.scan(&opts, false)?,
            1 => self.scan(&opts, true)?,
            _ => self.walk(&opts, rng, first, end)?,
        };
        if got != expected {
            return failed(format!(
                "a {} of keys {}..{} returned {:?} but the latest acknowledged writes left {:?} \
                 (key, base) (seed {})",
                ["forward scan", "backward scan", "cursor walk"][how as usize],
                String::from_utf8_lossy(&key(first)),
                String::from_utf8_lossy(&key(end)),
                got,
                expected,
                self.args.seed
            ));
        }
        let held = (may_hold && rng.uniform(2) == 0).then(|| HeldSnapshot {
            snapshot: self.db.snapshot(),
            first,
            image,
            check_after: op + 1 + rng.uniform(self.args.snapshot_hold_ops.max(1)),
        });
        drop(guards);
        Ok(held)
    }

    /// `(key, base)` of every entry a bounded scan returns.
    fn scan(&self, opts: &ReadOptions, reverse: bool) -> Result<Vec<(u64, u32)>> {
        let mut out = Vec::new();
        let iter = self.db.iter_opt(opts);
        let items: Box<dyn Iterator<Item = _>> = if reverse {
            Box::new(iter.rev())
        } else {
            Box::new(iter)
        };
        for item in items {
            let (k, v) = item.context(DbSnafu)?;
            out.push(self.pair(&k, &v)?);
        }
        if reverse {
            out.reverse();
        }
        Ok(out)
    }

    fn pair(&self, k: &[u8], v: &[u8]) -> Result<(u64, u32)> {
        let Some(n) = parse_key(k).filter(|&n| n < self.state.keys()) else {
            return failed(format!(
                "a read returned key {} which no write produced (seed {})",
                lithify_base::key::escape(k),
                self.args.seed
            ));
        };
        match self.observe(n, Some(v), "a scan")? {
            Observed::Put(b) => Ok((n, b)),
            Observed::Absent => unreachable!("a value was given"),
        }
    }

    /// A cursor walk over the bounded range: from a seek to a random key
    /// forward to the end, then backward from the last key to the start;
    /// returns the entries in key order as seen going backward, after
    /// checking the forward part agrees.
    fn walk(
        &self,
        opts: &ReadOptions,
        rng: &mut Rng,
        first: u64,
        end: u64,
    ) -> Result<Vec<(u64, u32)>> {
        let mut it = self.db.raw_iterator(opts).context(DbSnafu)?;
        let from = first + rng.uniform(end - first);
        it.seek(key(from)).context(DbSnafu)?;
        let mut forward = Vec::new();
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            forward.push(self.pair(k, v)?);
            it.next().context(DbSnafu)?;
        }
        it.seek_to_last().context(DbSnafu)?;
        let mut all = Vec::new();
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            all.push(self.pair(k, v)?);
            it.prev().context(DbSnafu)?;
        }
        all.reverse();
        let tail: Vec<_> = all.iter().copied().filter(|&(k, _)| k >= from).collect();
        if tail != forward {
            return failed(format!(
                "a cursor going forward from key {} saw {forward:?} but going backward saw \
                 {tail:?} (key, base) (seed {})",
                String::from_utf8_lossy(&key(from)),
                self.args.seed
            ));
        }
        Ok(all)
    }

    /// Reads a held snapshot's range by scan and by lookups: what the
    /// range held when it was taken, whatever was written since.
    fn check_snapshot(&self, h: &HeldSnapshot) -> Result<()> {
        let end = h.first + h.image.len() as u64;
        let expected = present(h.first, &h.image);
        let opts = ReadOptions::default()
            .snapshot(Some(h.snapshot.clone()))
            .lower_bound(Some(Bytes::from(key(h.first))))
            .upper_bound(Some(Bytes::from(key(end))));
        let got = self.scan(&opts, false)?;
        let mut looked_up = Vec::new();
        let at = ReadOptions::at(&h.snapshot);
        for k in h.first..end {
            let v = self.db.get_opt(key(k), &at).context(DbSnafu)?;
            if let Observed::Put(b) = self.observe(k, v.as_deref(), "a lookup at a snapshot")? {
                looked_up.push((k, b));
            }
        }
        if got != expected || looked_up != expected {
            return failed(format!(
                "at a snapshot of keys {}..{} (sequence number {}), a scan returned {got:?} and \
                 lookups {looked_up:?} but the range held {expected:?} (key, base) when the \
                 snapshot was taken (seed {})",
                String::from_utf8_lossy(&key(h.first)),
                String::from_utf8_lossy(&key(end)),
                h.snapshot.sequence_number(),
                self.args.seed
            ));
        }
        Ok(())
    }
}

/// `(key, base)` of the keys of `image` (starting at key `first`) that
/// hold a value.
fn present(first: u64, image: &[Observed]) -> Vec<(u64, u32)> {
    image
        .iter()
        .enumerate()
        .filter_map(|(i, o)| match o {
            Observed::Put(b) => Some((first + i as u64, *b)),
            Observed::Absent => None,
        })
        .collect()
}
