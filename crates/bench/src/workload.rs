//! The workloads, db_bench's benchmarks by their db_bench names.
//!
//! A workload's operations are split between `--threads` threads (db_bench
//! gives every thread the full count instead); each thread draws its keys
//! from its own generator, seeded from `--seed`, the workload's name and
//! the thread's index, so reads do not replay the fill order and a run is
//! repeatable. Every operation is timed into the thread's [`Histogram`].

use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use lithify::{Db, ReadOptions, WriteBatch, WriteOptions};
use snafu::ResultExt as _;

use crate::data::{Values, make_key};
use crate::error::{DbSnafu, MAX_BATCH_BYTES, Result, UsageSnafu, check_product};
use crate::histogram::{Histogram, PerSecond, SecondRecorder};
use crate::progress::{Progress, UPDATE_EVERY};
use crate::transaction::{self, TxnKind, TxnOutcome};
use lithify_base::rand::SplitMix64 as Rng;

/// A benchmark of `--benchmarks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Benchmark {
    /// Write `--num` keys in key order.
    FillSeq,
    /// Write `--num` keys drawn at random from `0..num`.
    FillRandom,
    /// As `fillrandom`, meant to run over an existing database.
    Overwrite,
    /// Point lookups of random keys (`--read-miss-percent` of them absent).
    ReadRandom,
    /// Scan forward from the first key.
    ReadSeq,
    /// Seek to a random key, then `--seek-nexts` nexts.
    SeekRandom,
    /// `readrandom` in `--threads` threads while one more thread writes
    /// random keys.
    ReadWhileWriting,
    /// Delete random keys.
    DeleteRandom,
    /// Merge operands into random keys (needs `--merge-operator`).
    MergeRandom,
    /// Random keys, each either read or merged into (`--merge-percent`
    /// merges).
    ReadRandomMergeRandom,
    /// Write `--num` keys in key order into external SST files
    /// (`SstFileWriter`, one per `--target-file-size-base` bytes) and
    /// ingest them (RocksDB's bulk load).
    BulkLoad,
    /// Flush the memtables and wait.
    Flush,
    /// Compact the whole key range and wait.
    Compact,
    /// Wait until the background compactions are done (db_bench's
    /// `waitforcompaction`): the compaction debt a fill left, paid.
    WaitForCompaction,
    /// `--reads` transactions that each add one random amount to a random
    /// key of every one of `--transaction-sets` sets, on the transaction database
    /// `--optimistic-transaction-db` or `--transaction-db` asks for; the
    /// sets' sums are checked to be equal afterwards.
    RandomTransaction,
}

impl Benchmark {
    /// Every benchmark, in the order of the help text.
    pub const ALL: [Benchmark; 15] = [
        Benchmark::FillSeq,
        Benchmark::FillRandom,
        Benchmark::Overwrite,
        Benchmark::ReadRandom,
        Benchmark::ReadSeq,
        Benchmark::SeekRandom,
        Benchmark::ReadWhileWriting,
        Benchmark::DeleteRandom,
        Benchmark::MergeRandom,
        Benchmark::ReadRandomMergeRandom,
        Benchmark::BulkLoad,
        Benchmark::Flush,
        Benchmark::Compact,
        Benchmark::WaitForCompaction,
        Benchmark::RandomTransaction,
    ];

    /// db_bench's name.
    pub fn name(self) -> &'static str {
        match self {
            Benchmark::FillSeq => "fillseq",
            Benchmark::FillRandom => "fillrandom",
            Benchmark::Overwrite => "overwrite",
            Benchmark::ReadRandom => "readrandom",
            Benchmark::ReadSeq => "readseq",
            Benchmark::SeekRandom => "seekrandom",
            Benchmark::ReadWhileWriting => "readwhilewriting",
            Benchmark::DeleteRandom => "deleterandom",
            Benchmark::MergeRandom => "mergerandom",
            Benchmark::ReadRandomMergeRandom => "readrandommergerandom",
            Benchmark::BulkLoad => "bulkload",
            Benchmark::Flush => "flush",
            Benchmark::Compact => "compact",
            Benchmark::WaitForCompaction => "waitforcompaction",
            Benchmark::RandomTransaction => "randomtransaction",
        }
    }
}

impl FromStr for Benchmark {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Benchmark::ALL
            .into_iter()
            .find(|b| b.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Benchmark::ALL.iter().map(|b| b.name()).collect();
                format!("unknown benchmark {s:?}; known: {}", names.join(", "))
            })
    }
}

/// What every workload needs to know.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Keys of the key space, and operations of the write workloads.
    pub num: u64,
    /// Operations of the read workloads.
    pub reads: u64,
    /// Bytes per key.
    pub key_size: usize,
    /// Bytes per value.
    pub value_size: usize,
    /// Random share of each value.
    pub compression_ratio: f64,
    /// Threads per workload.
    pub threads: usize,
    /// Seed of every generator.
    pub seed: u64,
    /// Nexts after each seek of `seekrandom`.
    pub seek_nexts: usize,
    /// Writes per batch.
    pub batch_size: usize,
    /// Percent of `readrandom` lookups aimed at keys never written.
    pub read_miss_percent: u8,
    /// Percent of `readrandommergerandom` operations that merge.
    pub merge_percent: u8,
    /// The merge operator's short id, if any (`uint64add` takes 8-byte
    /// operands).
    pub merge_operator: Option<String>,
    /// Options of every write.
    pub write_options: WriteOptions,
    /// The transaction database of `randomtransaction`, if one was asked
    /// for.
    pub transaction_db: Option<TxnKind>,
    /// Sets of keys each `randomtransaction` transaction updates one key
    /// of (db_bench's `transaction_sets`).
    pub transaction_sets: u16,
    /// How long a pessimistic transaction waits for a lock (db_bench's
    /// `transaction_lock_timeout`).
    pub transaction_lock_timeout: Duration,
    /// Where each operation's latency is also counted per second, when
    /// something draws the run over time (`bench --html`).
    pub per_second: Option<std::sync::Arc<PerSecond>>,
}

/// db_bench's defaults (those of `lithify bench`): 1M keys of 16 bytes,
/// 100-byte values compressing to half, one thread, seed 301, 10 nexts per
/// seek, unbatched writes to the WAL without sync, no merge operator, no
/// transaction database.
impl Default for Settings {
    fn default() -> Self {
        Settings {
            num: 1_000_000,
            reads: 1_000_000,
            key_size: 16,
            value_size: 100,
            compression_ratio: 0.5,
            threads: 1,
            seed: 301,
            seek_nexts: 10,
            batch_size: 1,
            read_miss_percent: 0,
            merge_percent: 70,
            merge_operator: None,
            write_options: WriteOptions::default(),
            transaction_db: None,
            transaction_sets: 2,
            transaction_lock_timeout: Duration::from_millis(100),
            per_second: None,
        }
    }
}

/// What one workload measured.
#[derive(Debug)]
pub struct Outcome {
    /// The benchmark.
    pub benchmark: Benchmark,
    /// Operations done (keys written, lookups, seeks, entries scanned).
    pub ops: u64,
    /// Key and value bytes written or returned.
    pub bytes: u64,
    /// Wall time of the whole workload.
    pub elapsed: Duration,
    /// Latency of each operation (each batch, for batched writes), in
    /// nanoseconds.
    pub latency: Histogram,
    /// Lookups that found their key (read workloads).
    pub found: Option<u64>,
    /// Writes of the background writer of `readwhilewriting`.
    pub background_writes: Option<u64>,
    /// The transactions of `randomtransaction`: attempts, failures and the
    /// checked sums.
    pub transactions: Option<TxnOutcome>,
    /// CPU seconds the process used during the workload (every thread:
    /// the workload's and the engine's background work); `None` where the
    /// platform does not say.
    pub cpu_seconds: Option<f64>,
}

/// The per-thread tally.
pub(crate) struct Tally<'p> {
    latency: Histogram,
    ops: u64,
    bytes: u64,
    found: u64,
    last: Instant,
    unreported: u64,
    progress: Option<&'p Progress>,
    per_second: Option<SecondRecorder<'p>>,
}

impl<'p> Tally<'p> {
    fn new(progress: Option<&'p Progress>, per_second: Option<&'p PerSecond>) -> Self {
        Tally {
            per_second: per_second.map(PerSecond::recorder),
            latency: Histogram::default(),
            ops: 0,
            bytes: 0,
            found: 0,
            last: Instant::now(),
            unreported: 0,
            progress,
        }
    }

    /// Closes one timed operation that did `ops` operations' worth of work
    /// and moved `bytes`. One clock read per operation: the time since the
    /// previous one (key generation included, as db_bench measures).
    #[inline]
    pub(crate) fn done(&mut self, ops: u64, bytes: u64) {
        let now = Instant::now();
        let nanos = now.duration_since(self.last).as_nanos() as u64;
        self.latency.record(nanos);
        if let Some(r) = &mut self.per_second {
            r.record(now, nanos);
        }
        self.last = now;
        self.ops += ops;
        self.bytes += bytes;
        self.unreported += ops;
        if self.unreported >= UPDATE_EVERY {
            if let Some(p) = self.progress {
                p.advance(self.unreported);
            }
            self.unreported = 0;
        }
    }
}

/// A thread's key generator.
struct Keys {
    rng: Rng,
    buf: Vec<u8>,
}

/// Thread `thread`'s generator for `benchmark`: seeded from `--seed`, the
/// benchmark's name and the thread's index.
pub(crate) fn thread_rng(settings: &Settings, benchmark: Benchmark, thread: usize) -> Rng {
    let salt = lithify_base::xxh3_64(benchmark.name().as_bytes());
    Rng::new(settings.seed ^ salt ^ (thread as u64).wrapping_mul(0x9E37_79B9))
}

impl Keys {
    fn new(settings: &Settings, benchmark: Benchmark, thread: usize) -> Self {
        Keys {
            rng: thread_rng(settings, benchmark, thread),
            buf: vec![0; settings.key_size],
        }
    }

    /// Key number `n`.
    #[inline]
    fn number(&mut self, n: u64) -> &[u8] {
        make_key(n, &mut self.buf);
        &self.buf
    }

    /// A random key of `0..num`.
    #[inline]
    fn random(&mut self, num: u64) -> &[u8] {
        let n = self.rng.uniform(num);
        self.number(n)
    }

    /// A random key for a lookup: `miss_percent` of them in `num..2 num`,
    /// where nothing was written.
    #[inline]
    fn lookup(&mut self, num: u64, miss_percent: u8) -> &[u8] {
        let n = if miss_percent > 0 && self.rng.uniform(100) < u64::from(miss_percent) {
            num + self.rng.uniform(num)
        } else {
            self.rng.uniform(num)
        };
        self.number(n)
    }
}

/// Runs `benchmark` on `db`.
pub fn run(db: &Db, benchmark: Benchmark, s: &Settings) -> Result<Outcome> {
    let cpu_before = crate::report::process_cpu_seconds();
    let mut outcome = run_workload(db, benchmark, s)?;
    outcome.cpu_seconds = cpu_before
        .zip(crate::report::process_cpu_seconds())
        .map(|(before, after)| after - before);
    Ok(outcome)
}

fn run_workload(db: &Db, benchmark: Benchmark, s: &Settings) -> Result<Outcome> {
    match benchmark {
        Benchmark::FillSeq | Benchmark::FillRandom | Benchmark::Overwrite => {
            write_workload(db, benchmark, s, false)
        }
        Benchmark::DeleteRandom => write_workload(db, benchmark, s, true),
        Benchmark::MergeRandom => merge_random(db, s),
        Benchmark::ReadRandomMergeRandom => read_random_merge_random(db, s),
        Benchmark::ReadRandom => read_random(db, benchmark, s),
        Benchmark::ReadWhileWriting => read_while_writing(db, s),
        Benchmark::ReadSeq => read_seq(db, s),
        Benchmark::SeekRandom => seek_random(db, s),
        Benchmark::BulkLoad => bulk_load(db, s),
        Benchmark::Flush => single(benchmark, || db.flush()),
        Benchmark::Compact => single(benchmark, || db.compact_range(None, None)),
        Benchmark::WaitForCompaction => single(benchmark, || db.wait_for_compact()),
        Benchmark::RandomTransaction => transaction::random_transaction(db, s),
    }
}

/// Splits `total` operations between `threads`: thread `t` gets the range
/// of operation numbers it does.
pub fn share(total: u64, threads: usize, t: usize) -> std::ops::Range<u64> {
    // In u128: `total * t` overflows a u64 for a large total.
    let cut = |t: usize| (u128::from(total) * t as u128 / threads.max(1) as u128) as u64;
    cut(t)..cut(t + 1)
}

/// Runs `work(thread, tally)` in `threads` threads and sums the tallies.
pub(crate) fn in_threads<F>(
    benchmark: Benchmark,
    threads: usize,
    total: u64,
    per_second: Option<&PerSecond>,
    work: F,
) -> Result<Outcome>
where
    F: Fn(usize, &mut Tally<'_>) -> Result<()> + Sync,
{
    let progress = Progress::new(benchmark.name(), total);
    let started = Instant::now();
    let results: Vec<Result<Tally<'_>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let work = &work;
                let progress = &progress;
                scope.spawn(move || {
                    let mut tally = Tally::new(Some(progress), per_second);
                    work(t, &mut tally).map(|()| tally)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| match h.join() {
                Ok(r) => r,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    });
    let elapsed = started.elapsed();
    progress.finish();
    let mut outcome = Outcome {
        benchmark,
        ops: 0,
        bytes: 0,
        elapsed,
        latency: Histogram::default(),
        found: None,
        background_writes: None,
        transactions: None,
        cpu_seconds: None,
    };
    let mut found = 0;
    for r in results {
        let tally = r?;
        outcome.ops += tally.ops;
        outcome.bytes += tally.bytes;
        outcome.latency.merge(&tally.latency);
        found += tally.found;
    }
    outcome.found = Some(found);
    Ok(outcome)
}

fn write_workload(db: &Db, benchmark: Benchmark, s: &Settings, delete: bool) -> Result<Outcome> {
    let entry_bytes = if delete {
        s.key_size as u64
    } else {
        (s.key_size + s.value_size) as u64
    };
    let mut outcome = in_threads(
        benchmark,
        s.threads,
        s.num,
        s.per_second.as_deref(),
        |t, tally| {
            let mut keys = Keys::new(s, benchmark, t);
            let mut values = Values::new(s.value_size, s.compression_ratio, s.seed ^ t as u64);
            let range = share(s.num, s.threads, t);
            let mut next = range.start;
            while next < range.end {
                let n = (s.batch_size as u64).min(range.end - next);
                if n == 1 {
                    let key = match benchmark {
                        Benchmark::FillSeq => keys.number(next),
                        _ => keys.random(s.num),
                    };
                    if delete {
                        db.delete_opt(key, &s.write_options).context(DbSnafu)?;
                    } else {
                        db.put_opt(key, values.next_value(), &s.write_options)
                            .context(DbSnafu)?;
                    }
                } else {
                    let mut batch =
                        WriteBatch::with_capacity(n as usize * (entry_bytes as usize + 8));
                    for i in 0..n {
                        let key = match benchmark {
                            Benchmark::FillSeq => keys.number(next + i),
                            _ => keys.random(s.num),
                        };
                        if delete {
                            batch.delete(key);
                        } else {
                            batch.put(key, values.next_value());
                        }
                    }
                    db.write_opt(batch, &s.write_options).context(DbSnafu)?;
                }
                next += n;
                tally.done(n, n * entry_bytes);
            }
            Ok(())
        },
    )?;
    outcome.found = None;
    Ok(outcome)
}

fn read_random(db: &Db, benchmark: Benchmark, s: &Settings) -> Result<Outcome> {
    let outcome = in_threads(
        benchmark,
        s.threads,
        s.reads,
        s.per_second.as_deref(),
        |t, tally| {
            let mut keys = Keys::new(s, benchmark, t);
            for _ in share(s.reads, s.threads, t) {
                let key = keys.lookup(s.num, s.read_miss_percent);
                let bytes = read_one(db, key, tally)?;
                tally.done(1, bytes);
            }
            Ok(())
        },
    )?;
    Ok(outcome)
}

/// Merge operands: 8-byte counts of 1 for `uint64add` (its operands must
/// be 8 bytes), else values as the fills write them.
struct Operands {
    counter: bool,
    values: Values,
}

impl Operands {
    fn new(s: &Settings, thread: usize) -> Self {
        Operands {
            counter: s.merge_operator.as_deref() == Some("uint64add"),
            values: Values::new(s.value_size, s.compression_ratio, !s.seed ^ thread as u64),
        }
    }

    #[inline]
    fn next_operand(&mut self) -> &[u8] {
        if self.counter {
            const ONE: [u8; 8] = 1u64.to_le_bytes();
            &ONE
        } else {
            self.values.next_value()
        }
    }
}

/// db_bench's `mergerandom`: a merge into a random key per operation.
fn merge_random(db: &Db, s: &Settings) -> Result<Outcome> {
    let mut outcome = in_threads(
        Benchmark::MergeRandom,
        s.threads,
        s.num,
        s.per_second.as_deref(),
        |t, tally| {
            let mut keys = Keys::new(s, Benchmark::MergeRandom, t);
            let mut operands = Operands::new(s, t);
            for _ in share(s.num, s.threads, t) {
                let key = keys.random(s.num);
                let operand = operands.next_operand();
                let bytes = (key.len() + operand.len()) as u64;
                db.merge_opt(key, operand, &s.write_options)
                    .context(DbSnafu)?;
                tally.done(1, bytes);
            }
            Ok(())
        },
    )?;
    outcome.found = None;
    Ok(outcome)
}

/// db_bench's `readrandommergerandom`: each operation reads or (with
/// `--merge-percent` odds) merges into a random key.
fn read_random_merge_random(db: &Db, s: &Settings) -> Result<Outcome> {
    let benchmark = Benchmark::ReadRandomMergeRandom;
    in_threads(
        benchmark,
        s.threads,
        s.reads,
        s.per_second.as_deref(),
        |t, tally| {
            let mut keys = Keys::new(s, benchmark, t);
            let mut operands = Operands::new(s, t);
            let mut dice = Rng::new(s.seed ^ 0x5EED ^ t as u64);
            for _ in share(s.reads, s.threads, t) {
                let key = keys.random(s.num);
                let bytes = if dice.uniform(100) < u64::from(s.merge_percent) {
                    let operand = operands.next_operand();
                    db.merge_opt(key, operand, &s.write_options)
                        .context(DbSnafu)?;
                    (key.len() + operand.len()) as u64
                } else {
                    read_one(db, key, tally)?
                };
                tally.done(1, bytes);
            }
            Ok(())
        },
    )
}

/// One lookup: counts it found, returns the bytes it moved.
#[inline]
fn read_one(db: &Db, key: &[u8], tally: &mut Tally<'_>) -> Result<u64> {
    Ok(match db.get(key).context(DbSnafu)? {
        Some(value) => {
            tally.found += 1;
            (key.len() + value.len()) as u64
        }
        None => 0,
    })
}

fn read_while_writing(db: &Db, s: &Settings) -> Result<Outcome> {
    let readers_done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let writer = scope.spawn(|| -> Result<u64> {
            let mut keys = Keys::new(s, Benchmark::ReadWhileWriting, usize::MAX);
            let mut values = Values::new(s.value_size, s.compression_ratio, !s.seed);
            let mut written = 0;
            while !readers_done.load(Ordering::Relaxed) {
                let key = keys.random(s.num);
                db.put_opt(key, values.next_value(), &s.write_options)
                    .context(DbSnafu)?;
                written += 1;
            }
            Ok(written)
        });
        let reads = read_random(db, Benchmark::ReadWhileWriting, s);
        readers_done.store(true, Ordering::Relaxed);
        let written = match writer.join() {
            Ok(r) => r,
            Err(panic) => std::panic::resume_unwind(panic),
        };
        let mut outcome = reads?;
        outcome.background_writes = Some(written?);
        Ok(outcome)
    })
}

fn read_seq(db: &Db, s: &Settings) -> Result<Outcome> {
    let outcome = in_threads(
        Benchmark::ReadSeq,
        s.threads,
        s.reads,
        s.per_second.as_deref(),
        |t, tally| {
            let mut it = db.raw_iterator(&ReadOptions::default()).context(DbSnafu)?;
            it.seek_to_first().context(DbSnafu)?;
            for _ in share(s.reads, s.threads, t) {
                let (Some(key), Some(value)) = (it.key(), it.value()) else {
                    break;
                };
                let bytes = (key.len() + value.len()) as u64;
                tally.found += 1;
                it.next().context(DbSnafu)?;
                tally.done(1, bytes);
            }
            Ok(())
        },
    )?;
    Ok(outcome)
}

fn seek_random(db: &Db, s: &Settings) -> Result<Outcome> {
    let outcome = in_threads(
        Benchmark::SeekRandom,
        s.threads,
        s.reads,
        s.per_second.as_deref(),
        |t, tally| {
            let mut keys = Keys::new(s, Benchmark::SeekRandom, t);
            let mut it = db.raw_iterator(&ReadOptions::default()).context(DbSnafu)?;
            for _ in share(s.reads, s.threads, t) {
                it.seek(keys.random(s.num)).context(DbSnafu)?;
                let mut bytes = 0;
                if it.valid() {
                    tally.found += 1;
                }
                for _ in 0..s.seek_nexts {
                    let (Some(key), Some(value)) = (it.key(), it.value()) else {
                        break;
                    };
                    bytes += (key.len() + value.len()) as u64;
                    it.next().context(DbSnafu)?;
                }
                tally.done(1, bytes);
            }
            Ok(())
        },
    )?;
    Ok(outcome)
}

/// A benchmark of one call (`flush`, `compact`).
/// `bulkload`: keys `0..num` in order, written as external SST files
/// of about `target_file_size_base` bytes in the database directory, then
/// ingested in one call (moved: hard-linked, the originals removed).
fn bulk_load(db: &Db, s: &Settings) -> Result<Outcome> {
    let entry_bytes = (s.key_size + s.value_size) as u64;
    let per_file = (db.options().target_file_size_base / entry_bytes.max(1)).max(1);
    let mut outcome = in_threads(
        Benchmark::BulkLoad,
        1,
        s.num,
        s.per_second.as_deref(),
        |_, tally| {
            let mut keys = Keys::new(s, Benchmark::FillSeq, 0);
            let mut values = Values::new(s.value_size, s.compression_ratio, s.seed);
            let mut files = Vec::new();
            let mut next = 0;
            while next < s.num {
                let path = db.path().join(format!("bulkload-{:06}.ext", files.len()));
                let mut w = lithify::SstFileWriter::create(&path, db.options()).context(DbSnafu)?;
                let end = (next + per_file).min(s.num);
                while next < end {
                    w.put(keys.number(next), values.next_value())
                        .context(DbSnafu)?;
                    tally.done(1, entry_bytes);
                    next += 1;
                }
                files.push(w.finish().context(DbSnafu)?.path);
            }
            let options = lithify::IngestOptions::default().move_files(true);
            db.ingest_external_file(&files, &options).context(DbSnafu)?;
            tally.done(0, 0);
            Ok(())
        },
    )?;
    outcome.bytes = s.num.saturating_mul(entry_bytes);
    outcome.found = None;
    Ok(outcome)
}

fn single(
    benchmark: Benchmark,
    call: impl FnOnce() -> Result<(), lithify::DbError>,
) -> Result<Outcome> {
    let mut tally = Tally::new(None, None);
    let started = Instant::now();
    call().context(DbSnafu)?;
    tally.done(1, 0);
    Ok(Outcome {
        benchmark,
        ops: 1,
        bytes: 0,
        elapsed: started.elapsed(),
        latency: tally.latency,
        found: None,
        background_writes: None,
        transactions: None,
        cpu_seconds: None,
    })
}

/// Checks the settings against the benchmarks asked for.
pub fn check(settings: &Settings, benchmarks: &[Benchmark]) -> Result<()> {
    let usage = |message: String| UsageSnafu { message }.fail();
    if settings.num == 0 || settings.threads == 0 || settings.batch_size == 0 {
        return usage("--num, --threads and --batch-size must be at least 1".to_string());
    }
    if settings.key_size == 0 {
        return usage("--key-size must be at least 1".to_string());
    }
    let key_space = if settings.read_miss_percent > 0 {
        settings.num.saturating_mul(2)
    } else {
        settings.num
    };
    let distinct = crate::data::distinct_keys(settings.key_size);
    if key_space > distinct {
        return usage(format!(
            "{}-byte keys have only {distinct} distinct values, too few for --num {}{}",
            settings.key_size,
            settings.num,
            if settings.read_miss_percent > 0 {
                " and keys outside it for --read-miss-percent"
            } else {
                ""
            }
        ));
    }
    // What each thread allocates: a batch of --batch-size entries, and a
    // value buffer of at least --value-size bytes.
    let entry = settings.key_size as u64 + settings.value_size as u64 + 8;
    check_product(
        ("--batch-size", settings.batch_size as u64),
        ("entry bytes (--key-size + --value-size + 8)", entry),
        MAX_BATCH_BYTES,
        "bytes in one write batch",
    )
    .or_else(usage)?;
    check_product(
        ("--threads", settings.threads as u64),
        ("--value-size", settings.value_size as u64),
        MAX_BATCH_BYTES,
        "bytes of value buffers (one per thread)",
    )
    .or_else(usage)?;
    if benchmarks.is_empty() {
        return usage("--benchmarks names no benchmark".to_string());
    }
    if benchmarks.contains(&Benchmark::RandomTransaction) && settings.transaction_db.is_none() {
        return usage(
            "randomtransaction needs --optimistic-transaction-db or --transaction-db".to_string(),
        );
    }
    if settings.merge_operator.is_none()
        && let Some(b) = benchmarks
            .iter()
            .find(|b| matches!(b, Benchmark::MergeRandom | Benchmark::ReadRandomMergeRandom))
    {
        return usage(format!(
            "{} needs --merge-operator (uint64add, stringappend or max)",
            b.name()
        ));
    }
    // uint64add reads a value that is not 8 bytes as 0, with a warning per
    // merge: the puts of the other write benchmarks must be counters too,
    // or the figures would measure warnings.
    let puts = benchmarks.iter().any(|b| {
        matches!(
            b,
            Benchmark::FillSeq
                | Benchmark::FillRandom
                | Benchmark::Overwrite
                | Benchmark::ReadWhileWriting
        )
    });
    let merges = benchmarks
        .iter()
        .any(|b| matches!(b, Benchmark::MergeRandom | Benchmark::ReadRandomMergeRandom));
    if settings.merge_operator.as_deref() == Some("uint64add")
        && puts
        && merges
        && settings.value_size != 8
    {
        return usage(format!(
            "uint64add counts only 8-byte values (others count as 0, with a warning each): run \
             the merge benchmarks on their own database, or pass --value-size 8 (not {})",
            settings.value_size
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for b in Benchmark::ALL {
            assert_eq!(b.name().parse::<Benchmark>(), Ok(b));
        }
        let err = "readrandomly".parse::<Benchmark>().unwrap_err();
        assert!(err.contains("fillseq, fillrandom"), "{err}");
    }

    #[test]
    fn shares_cover_every_operation_once() {
        for total in [0u64, 1, 7, 1000, 1_000_003] {
            for threads in 1..=5 {
                let mut next = 0;
                for t in 0..threads {
                    let r = share(total, threads, t);
                    assert_eq!(r.start, next);
                    next = r.end;
                }
                assert_eq!(next, total);
            }
        }
    }
}
