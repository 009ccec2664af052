//! `lithify stress log DATA_DIR`: the log cleaner under a producer load,
//! made to be killed.
//!
//! The data directory holds `--partitions` compacted logs
//! (`stress-0`, `stress-1`, ...) with tiny segments, so that segments roll
//! all the time and the cleaner (`--cleaner-threads` threads of
//! [`LogCleaner`]) always has a round to run. A run first opens every log —
//! Kafka's recovery: `.cleaned`/`.swap`/`.deleted` leftovers of an
//! interrupted round completed or rolled back, the active segment
//! re-validated — and checks each against the expected-state file; then one producer thread per
//! partition appends batches of `log produce`-style keyed records (uniform
//! keys, a share of tombstones) whose values are a function of key and
//! offset, while the cleaner threads clean. Cleaner failures end the run.
//!
//! With `--transactional` each producer is a transactional producer (id
//! `partition + 1`): its batches form transactions of 1 to
//! `--txn-batches` batches, each ended by a COMMIT marker or, for
//! `--abort-percent` of them, an ABORT marker. The logs are then read as a
//! `read_committed` consumer reads them (undecided and aborted records
//! left out), every `.txnindex` is checked against the markers
//! ([`txn_check`]), and a transaction a killed run left open is aborted
//! when the next run starts, as a transaction coordinator aborts the
//! transaction of a producer that went away. Every run of a data
//! directory must use the same mode.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use lithify::log::cleaner_checkpoint as checkpoint;
use lithify::log::record::{SimpleRecord, TransactionResult};
use lithify::log::{CleanerConfig, CleanerEvent, LogCleaner, TopicPartition, txn_check};
use lithify::log::{Log, LogConfig, OpenOptions, Producer as TxnProducer};
use lithify::log::{SharedLog, shared_log};
use lithify::vfs::FileSystem;
use lithify::{Clock, SystemClock};
use lithify_base::rand::SplitMix64 as Rng;
use snafu::ResultExt as _;

use crate::db::default_expected_path;
use crate::error::{CleanerSnafu, IoSnafu, LogSnafu, Result, StressFailedSnafu, UsageSnafu};
use crate::log_expected::{
    LogExpected, PartitionState, check_partition, latest_records, log_key, log_value,
    resolve_partition,
};
use crate::{MAX_STRESS_KEYS, Say};

/// A `lithify stress log`.
#[derive(Debug, Clone)]
pub struct LogStress {
    /// The data directory (created if missing).
    pub data_dir: PathBuf,
    /// The expected-state file (default: DATA_DIR.expected-state).
    pub expected_state: Option<PathBuf>,
    /// Partitions (logs), one producer each (default 3; fixed when the
    /// expected state is created); --partitions x --keys is at most
    /// 16777216.
    pub partitions: Option<usize>,
    /// Keys per partition (default 500; fixed when the expected state is
    /// created).
    pub keys: Option<u64>,
    /// Largest value in bytes, [`MIN_VALUE_SIZE`](crate::MIN_VALUE_SIZE) to
    /// [`MAX_VALUE_SIZE`](crate::MAX_VALUE_SIZE) (default 200; fixed when
    /// the expected state is created).
    pub max_value_size: Option<u32>,
    /// Records each producer appends at most.
    pub records: u64,
    /// Stop after this many seconds (at most
    /// [`MAX_DURATION_SECS`](crate::MAX_DURATION_SECS)) even if records
    /// remain.
    pub duration: Option<f64>,
    /// Records per second each producer appends at most (0: no limit), so
    /// that the cleaner keeps up and the logs stay small.
    pub rate: u64,
    /// Segments a partition may hold before its producer waits for the
    /// cleaner (0: never waits). The cleaner swaps a round's output in
    /// only when the round completes, so under frequent kills a backlog
    /// that takes longer to clean than a run lasts would never shrink and
    /// the logs would grow without bound (and run out of file handles).
    pub max_segments: usize,
    /// Records per batch at most (each batch has 1 to N).
    pub batch_size: u64,
    /// Percent of records that are tombstones.
    pub tombstone_percent: u8,
    /// One batch in N is followed by a flush (fsync); 0 never.
    pub flush_one_in: u64,
    /// Seed of the producers.
    pub seed: u64,
    /// Only recover and verify the logs, then exit.
    pub verify_only: bool,
    /// Append in transactions (COMMIT or ABORT markers) and verify what a
    /// `read_committed` consumer reads.
    pub transactional: bool,
    /// With `--transactional`: percent of transactions aborted.
    pub abort_percent: u8,
    /// With `--transactional`: batches per transaction at most (each has 1
    /// to N).
    pub txn_batches: u64,
}

impl LogStress {
    /// A run on the data directory `data_dir` with `lithify stress log`'s
    /// defaults: producers of up to 1000000 records at 5000 per second
    /// (batches of up to 20 records, 10 % tombstones, one batch in 50
    /// flushed), waiting for the cleaner beyond 256 segments, seed 1, not
    /// transactional (with it: 20 % aborted, up to 4 batches each); 3
    /// partitions of 500 keys and values of up to 200 bytes when the
    /// expected state is created.
    pub fn new(data_dir: PathBuf) -> Self {
        LogStress {
            data_dir,
            expected_state: None,
            partitions: None,
            keys: None,
            max_value_size: None,
            records: 1_000_000,
            duration: None,
            rate: 5_000,
            max_segments: 256,
            batch_size: 20,
            tombstone_percent: 10,
            flush_one_in: 50,
            seed: 1,
            verify_only: false,
            transactional: false,
            abort_percent: 20,
            txn_batches: 4,
        }
    }
}

fn failed<T>(message: String) -> Result<T> {
    StressFailedSnafu { message }.fail()
}

/// The log and cleaner settings a stress run starts from, by their Kafka
/// names (a caller applies them, then its own): tiny segments and indexes,
/// so that segments roll all the time, and a cleaner that finds work often.
pub const DEFAULT_SETTINGS: [(&str, &str); 8] = [
    ("segment.bytes", "16384"),
    ("segment.index.bytes", "4096"),
    ("index.interval.bytes", "512"),
    ("min.cleanable.dirty.ratio", "0.1"),
    ("delete.retention.ms", "200"),
    ("log.cleaner.threads", "2"),
    ("log.cleaner.dedupe.buffer.size", "65536"),
    ("log.cleaner.backoff.ms", "20"),
];

fn partition_dir(data_dir: &Path, p: usize) -> PathBuf {
    data_dir.join(format!("stress-{p}"))
}

/// Runs `stress log` on the data directory `a.data_dir` of `fs`, with the
/// logs' and the cleaner's settings, telling `say` what it does.
pub fn run(
    a: &LogStress,
    fs: Arc<dyn FileSystem>,
    log_config: LogConfig,
    cleaner_config: CleanerConfig,
    say: Say<'_>,
) -> Result<()> {
    crate::check_duration(a.duration)?;
    log_config.validate().context(LogSnafu)?;
    let expected_path = a
        .expected_state
        .clone()
        .unwrap_or_else(|| default_expected_path(&a.data_dir));
    crate::check_output(&*fs, &expected_path)?;
    let seed = a.seed;
    let mut state = if fs.exists(&expected_path) {
        let state = LogExpected::load(fs.clone(), &expected_path)?;
        if a.partitions.is_some_and(|p| p != state.partitions.len())
            || a.keys.is_some_and(|k| k != state.keys)
            || a.max_value_size.is_some_and(|m| m != state.max_value_size)
        {
            return UsageSnafu {
                message: format!(
                    "{} was created for {} partitions of {} keys with values of up to {} bytes; \
                     --partitions, --keys and --max-value-size cannot change them",
                    expected_path.display(),
                    state.partitions.len(),
                    state.keys,
                    state.max_value_size
                ),
            }
            .fail();
        }
        state
    } else {
        if a.verify_only {
            return UsageSnafu {
                message: format!("there is no expected state {}", expected_path.display()),
            }
            .fail();
        }
        if fs.is_dir(&a.data_dir) && !fs.list_dir(&a.data_dir).is_ok_and(|l| l.is_empty()) {
            return UsageSnafu {
                message: format!(
                    "{} is not empty but {} does not exist: a stress run starts from an empty \
                     directory, or resumes with the expected state it wrote",
                    a.data_dir.display(),
                    expected_path.display()
                ),
            }
            .fail();
        }
        let (partitions, keys) = (a.partitions.unwrap_or(3), a.keys.unwrap_or(500));
        crate::check_product(
            ("--partitions", partitions as u64),
            ("--keys", keys),
            MAX_STRESS_KEYS,
            "keys in the expected state",
        )?;
        fs.create_dir_all(&a.data_dir).context(IoSnafu {
            action: "create",
            path: &a.data_dir,
        })?;
        let max_value_size = a.max_value_size.unwrap_or(200);
        LogExpected::create(fs.clone(), &expected_path, partitions, keys, max_value_size)?
    };

    let logs = open_and_verify(
        &fs,
        &a.data_dir,
        &log_config,
        &mut state,
        seed,
        a.transactional,
        "at the start",
        say,
    )?;
    if a.verify_only {
        return Ok(());
    }
    say(&format!(
        "stress: running {} producers and {} cleaner threads on {} partitions of {} keys (seed {seed})",
        logs.len(),
        cleaner_config.threads,
        logs.len(),
        state.keys
    ));

    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let cleaner = LogCleaner::new(cleaner_config, fs.clone(), clock);
    for log in &logs {
        cleaner.add_log(log.clone()).context(CleanerSnafu)?;
    }
    let events = cleaner.events();
    cleaner.startup().context(CleanerSnafu)?;

    let stop = AtomicBool::new(false);
    let appended = AtomicU64::new(0);
    let deadline = a
        .duration
        .map(|s| Instant::now() + Duration::from_secs_f64(s.max(0.0)));
    let start = Instant::now();
    let keys = state.keys;
    let max_value_size = state.max_value_size as usize;
    let state_ref = &state;
    let (results, rounds, cleaner_failure) = std::thread::scope(|scope| {
        let handles: Vec<_> = logs
            .iter()
            .enumerate()
            .map(|(p, log)| {
                let (stop, appended) = (&stop, &appended);
                let part = state_ref.partitions[p].clone();
                scope.spawn(move || {
                    let producer = Producer {
                        log,
                        args: a,
                        keys,
                        max_value_size,
                        stop,
                        deadline,
                        say,
                    };
                    let r = state_ref
                        .writer(p)
                        .and_then(|w| producer.run(p, part, w, appended));
                    if r.is_err() {
                        stop.store(true, Ordering::SeqCst);
                    }
                    r
                })
            })
            .collect();
        // Watch the cleaner while the producers run.
        let mut rounds = 0u64;
        let mut cleaner_failure = None;
        while handles.iter().any(|h| !h.is_finished()) {
            if let Ok(e) = events.recv_timeout(Duration::from_millis(50)) {
                match &e {
                    CleanerEvent::Cleaned(_) => rounds += 1,
                    e if e.is_failure() && cleaner_failure.is_none() => {
                        cleaner_failure = Some(e.to_string());
                        stop.store(true, Ordering::SeqCst);
                    }
                    _ => {}
                }
            }
        }
        let results: Vec<Result<u64>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| failed("a producer thread panicked".to_string()))
            })
            .collect();
        (results, rounds, cleaner_failure)
    });
    cleaner.shutdown();
    let mut rounds = rounds;
    for e in events.try_iter() {
        match e {
            CleanerEvent::Cleaned(_) => rounds += 1,
            e if e.is_failure() => {
                return failed(format!(
                    "the log cleaner failed (seed {seed}): {}",
                    e.to_string().trim()
                ));
            }
            _ => {}
        }
    }
    if let Some(f) = cleaner_failure {
        return failed(format!(
            "the log cleaner failed (seed {seed}): {}",
            f.trim()
        ));
    }
    let mut records = 0;
    for r in results {
        records += r?;
    }
    say(&format!(
        "stress: appended {records} records in {:.1}s; {rounds} cleaning rounds",
        start.elapsed().as_secs_f64()
    ));
    for log in &logs {
        log.lock().flush().context(LogSnafu)?;
    }
    drop(cleaner);
    drop(logs);
    // Reopening after a clean stop loses nothing acknowledged.
    let mut state = LogExpected::load(fs.clone(), &expected_path)?;
    open_and_verify(
        &fs,
        &a.data_dir,
        &log_config,
        &mut state,
        seed,
        a.transactional,
        "after a clean stop",
        say,
    )?;
    Ok(())
}

/// Opens (recovers) every partition's log, checks it against `state`, and
/// resolves and saves the state.
#[allow(clippy::too_many_arguments)]
fn open_and_verify(
    fs: &Arc<dyn FileSystem>,
    data_dir: &Path,
    config: &LogConfig,
    state: &mut LogExpected,
    seed: u64,
    transactional: bool,
    when: &str,
    say: Say<'_>,
) -> Result<Vec<SharedLog>> {
    let started = Instant::now();
    let checkpoints = match checkpoint::read(fs.as_ref(), data_dir) {
        Ok(c) => c,
        Err(e) => {
            return failed(format!(
                "the cleaner-offset-checkpoint of {} cannot be read {when} (seed {seed}): {e}",
                data_dir.display()
            ));
        }
    };
    let mut logs = Vec::new();
    let mut failures = Vec::new();
    let mut ends = Vec::new();
    let mut live = 0usize;
    for p in 0..state.partitions.len() {
        let dir = partition_dir(data_dir, p);
        let options = OpenOptions::default()
            .recovery_point(None)
            .clock(Arc::new(SystemClock));
        let log = match Log::open_with(fs.clone(), &dir, config.clone(), options) {
            Ok(l) => l,
            Err(e) => {
                return failed(format!(
                    "the log {} does not open {when} (seed {seed}): {e}",
                    dir.display()
                ));
            }
        };
        let end = log.log_end_offset();
        let start = log.log_start_offset();
        let read: Vec<lithify::log::Result<lithify::log::record::Record>> = if transactional {
            match log.committed_records_from(start) {
                Ok(i) => i.collect(),
                Err(e) => vec![Err(e)],
            }
        } else {
            match log.records_from(start) {
                Ok(i) => i.collect(),
                Err(e) => vec![Err(e)],
            }
        };
        let mut records = Vec::new();
        for r in read {
            match r {
                Ok(r) => records.push((
                    r.offset,
                    r.key.map(|k| k.to_vec()),
                    r.value.map(|v| v.to_vec()),
                )),
                Err(e) => {
                    return failed(format!(
                        "the log {} cannot be read {when} (seed {seed}): {e}",
                        dir.display()
                    ));
                }
            }
        }
        if transactional {
            let check = txn_check::check_dir(fs.as_ref(), &dir).context(LogSnafu)?;
            failures.extend(
                check
                    .problems
                    .into_iter()
                    .map(|p| format!("{}: {p}", dir.display())),
            );
        }
        let mut part_failures = Vec::new();
        let found = latest_records(
            records,
            state.keys,
            state.max_value_size as usize,
            end,
            &mut part_failures,
        );
        live += found.values().filter(|(_, tomb)| !tomb).count();
        check_partition(&state.partitions[p], end, &found, &mut part_failures);
        let tp = TopicPartition::new("stress", p as i32);
        if let Some(&cleaned_to) = checkpoints.get(&tp)
            && cleaned_to > end
        {
            part_failures.push(format!(
                "cleaner-offset-checkpoint says the log was cleaned up to offset {cleaned_to} but \
                 it ends at {end}"
            ));
        }
        failures.extend(
            part_failures
                .into_iter()
                .map(|f| format!("{}: {f}", dir.display())),
        );
        ends.push(end);
        logs.push(shared_log(log));
    }
    if !failures.is_empty() {
        let shown: Vec<_> = failures.iter().take(20).cloned().collect();
        return failed(format!(
            "the logs in {} fail verification against {} {when} (seed {seed}; the files are left \
             as they are: `lithify stress log {} --expected-state {} --verify-only` repeats the \
             check): {} failures\n  {}",
            data_dir.display(),
            state.path().display(),
            data_dir.display(),
            state.path().display(),
            failures.len(),
            shown.join("\n  ")
        ));
    }
    for (part, &end) in state.partitions.iter_mut().zip(&ends) {
        resolve_partition(part, end);
    }
    state.save()?;
    say(&format!(
        "stress: verified {} logs {when} (ends {ends:?}, {live} live keys) in {:.2}s",
        logs.len(),
        started.elapsed().as_secs_f64()
    ));
    Ok(logs)
}

struct Producer<'a> {
    log: &'a SharedLog,
    args: &'a LogStress,
    keys: u64,
    max_value_size: usize,
    stop: &'a AtomicBool,
    deadline: Option<Instant>,
    say: Say<'a>,
}

impl Producer<'_> {
    /// Appends batches to partition `p` until told to stop; returns the
    /// records appended.
    fn run(
        &self,
        p: usize,
        mut part: PartitionState,
        mut w: crate::log_expected::PartitionWriter,
        appended: &AtomicU64,
    ) -> Result<u64> {
        let a = self.args;
        let mut rng = Rng::new(
            a.seed
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .wrapping_add(p as u64 + 1),
        );
        let clock = SystemClock;
        let started = Instant::now();
        let mut records_done = 0u64;
        let mut batch_no = 0u64;
        let mut txn = if a.transactional {
            Some(self.begin_transactions(p, &mut part, &mut w)?)
        } else {
            None
        };
        while records_done < a.records
            && !self.stop.load(Ordering::Relaxed)
            && self.deadline.is_none_or(|d| Instant::now() < d)
        {
            if a.max_segments > 0 && self.log.lock().segments().count() > a.max_segments {
                // Backpressure: let the cleaner catch up.
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            let n = (1 + rng.uniform(a.batch_size.max(1))).min(a.records - records_done);
            let base = self.log.lock().log_end_offset();
            if base != part.acked_end {
                return failed(format!(
                    "partition {p}'s log ends at {base}, not at {} where its last append ended \
                     (seed {})",
                    part.acked_end, a.seed
                ));
            }
            let now = clock.now_ms();
            let mut batch = Vec::with_capacity(n as usize);
            let mut last: BTreeMap<u64, (i64, bool)> = BTreeMap::new();
            for i in 0..n as i64 {
                let k = rng.uniform(self.keys);
                let offset = base + i;
                let tomb = rng.uniform(100) < u64::from(a.tombstone_percent);
                batch.push(if tomb {
                    SimpleRecord::tombstone(now, log_key(k))
                } else {
                    SimpleRecord::new(now, log_key(k), log_value(k, offset, self.max_value_size))
                });
                last.insert(k, (offset, tomb));
            }
            // Pending first: the head, then each key (in a transaction,
            // the keys wait for its COMMIT marker).
            part.pending_end = base + n as i64;
            w.write_head(&part)?;
            if txn.is_none() {
                for (&k, &l) in &last {
                    part.keys[k as usize].pending = Some(l);
                    w.write_key(k, &part.keys[k as usize])?;
                }
            }
            let info = match &mut txn {
                None => self.log.lock().append(&batch),
                Some(t) => {
                    if t.left == 0 {
                        t.left = 1 + rng.uniform(a.txn_batches.max(1));
                    }
                    let appended = self.log.lock().append_as(&t.producer, &batch);
                    t.producer.base_sequence =
                        t.producer.base_sequence.wrapping_add(n as i32).max(0);
                    t.last.extend(last.iter().map(|(k, l)| (*k, *l)));
                    appended
                }
            }
            .context(LogSnafu)?;
            if info.first_offset != base || info.last_offset != base + n as i64 - 1 {
                return failed(format!(
                    "partition {p}: an append at {base} of {n} records got offsets {}..={} \
                     (seed {})",
                    info.first_offset, info.last_offset, a.seed
                ));
            }
            // Acknowledged: the head, then each key.
            part.acked_end = part.pending_end;
            w.write_head(&part)?;
            if txn.is_none() {
                for &k in last.keys() {
                    let s = &mut part.keys[k as usize];
                    s.acked = s.pending.take();
                    w.write_key(k, s)?;
                }
            }
            if let Some(t) = &mut txn {
                t.left -= 1;
                if t.left == 0 {
                    let abort = rng.uniform(100) < u64::from(a.abort_percent);
                    self.end_transaction(t, abort, &mut part, &mut w)?;
                }
            }
            records_done += n;
            appended.fetch_add(n, Ordering::Relaxed);
            batch_no += 1;
            if a.flush_one_in > 0 && batch_no.is_multiple_of(a.flush_one_in) {
                self.log.lock().flush().context(LogSnafu)?;
            }
            if a.rate > 0 {
                let due = Duration::from_secs_f64(records_done as f64 / a.rate as f64);
                if let Some(ahead) = due.checked_sub(started.elapsed()) {
                    std::thread::sleep(ahead.min(Duration::from_millis(100)));
                }
            }
        }
        // A run that stops cleanly leaves no transaction open.
        if let Some(t) = &mut txn
            && t.left > 0
        {
            let abort = rng.uniform(100) < u64::from(a.abort_percent);
            self.end_transaction(t, abort, &mut part, &mut w)?;
        }
        Ok(records_done)
    }

    /// Partition `p`'s transactional producer; a transaction an earlier
    /// (killed) run left open is aborted first, as a coordinator aborts it.
    fn begin_transactions(
        &self,
        p: usize,
        part: &mut PartitionState,
        w: &mut crate::log_expected::PartitionWriter,
    ) -> Result<Transaction> {
        let id = p as i64 + 1;
        let (known, open) = {
            let log = self.log.lock();
            let known = log.producers().find(|e| e.producer_id == id).copied();
            (
                known,
                known.is_some_and(|e| e.current_txn_first_offset.is_some()),
            )
        };
        let mut t = Transaction {
            producer: TxnProducer {
                producer_id: id,
                producer_epoch: known.map_or(0, |e| e.producer_epoch.max(0)),
                base_sequence: known
                    .and_then(|e| e.last_batch)
                    .map_or(0, |b| b.last_sequence.wrapping_add(1).max(0)),
                transactional: true,
            },
            left: 0,
            last: BTreeMap::new(),
        };
        if open {
            let at = part.acked_end;
            self.end_transaction(&mut t, true, part, w)?;
            (self.say)(&format!(
                "stress: aborted the transaction producer {id} left open, at offset {at}"
            ));
        }
        Ok(t)
    }

    /// Appends the marker ending `t`: with a COMMIT, its records are in
    /// flight with the marker, so the expected state takes them exactly
    /// when the marker made it.
    fn end_transaction(
        &self,
        t: &mut Transaction,
        abort: bool,
        part: &mut PartitionState,
        w: &mut crate::log_expected::PartitionWriter,
    ) -> Result<()> {
        let base = self.log.lock().log_end_offset();
        part.pending_end = base + 1;
        w.write_head(part)?;
        if !abort {
            for (&k, &l) in &t.last {
                part.keys[k as usize].pending = Some(l);
                w.write_key(k, &part.keys[k as usize])?;
            }
        }
        let result = if abort {
            TransactionResult::Abort
        } else {
            TransactionResult::Commit
        };
        let info = self
            .log
            .lock()
            .append_end_txn_marker(t.producer.producer_id, t.producer.producer_epoch, result, 0)
            .context(LogSnafu)?;
        if info.first_offset != base {
            return failed(format!(
                "a transaction marker for offset {base} went to offset {}",
                info.first_offset
            ));
        }
        part.acked_end = part.pending_end;
        w.write_head(part)?;
        if !abort {
            for &k in t.last.keys() {
                let s = &mut part.keys[k as usize];
                s.acked = s.pending.take();
                w.write_key(k, s)?;
            }
        }
        t.left = 0;
        t.last.clear();
        Ok(())
    }
}

/// A partition's transactional producer and its open transaction.
struct Transaction {
    producer: TxnProducer,
    /// Batches left in the open transaction (0: none open).
    left: u64,
    /// Each key's last record in the open transaction.
    last: BTreeMap<u64, (i64, bool)>,
}
