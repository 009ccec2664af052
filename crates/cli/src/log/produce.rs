//! `lithify log produce LOG_DIR`: append a synthetic workload.
//!
//! With `--transactional` the batches are written by `--producers`
//! transactional producers (ids 1 to N), interleaved at random, each in
//! transactions of 1 to `--txn-batches` batches ended by a COMMIT marker
//! or, with probability `--abort-ratio`, an ABORT marker (as a transaction
//! coordinator writes them). Every transaction is ended before the command
//! exits; one a crashed earlier run left open is aborted first.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use lithify::log::TopicPartition;
use lithify::log::record::TransactionResult;
use lithify::log::{Log, OpenOptions, Producer};
use lithify::vfs::OsFs;
use lithify::{Clock, ManualClock, SystemClock};
use snafu::ResultExt as _;

use crate::error::{LogSnafu, Result, UsageSnafu};
use crate::log::settings::{apply, default_log_config, split};
use crate::log::warn_recovery;
use lithify_bench::log_clean::{MAX_BATCH_RECORDS, MAX_VALUE_SIZE, Workload};

use crate::numbers;
use crate::rng::Rng;

/// Arguments of `log produce`.
#[derive(Debug, Args)]
pub(crate) struct ProduceArgs {
    /// The log directory, named `<topic>-<partition>` (created if missing).
    pub log_dir: PathBuf,
    /// Records to append: in all (`log produce`), in the log (`log bench`),
    /// per producer at most (`stress log`) [range: 0..=1000000000000]
    #[arg(long, default_value_t = 10_000, value_parser = numbers::int::<u64>(0, numbers::MAX_OPS))]
    pub records: u64,
    /// Distinct keys: uniformly chosen, so keys are overwritten. For
    /// `stress db` the whole key space (default 10000), for `stress log`
    /// the keys per partition (default 500), fixed when the expected state
    /// is created [range: 1..=1000000000000]
    #[arg(long, default_value_t = 1_000, value_parser = numbers::int::<u64>(1, numbers::MAX_OPS))]
    pub keys: u64,
    /// Bytes per value; a batch of --batch-size entries must stay within 1
    /// GiB [range: 0..=16777216]
    #[arg(long, default_value_t = 100, value_parser = numbers::int::<usize>(0, MAX_VALUE_SIZE))]
    pub value_size: usize,
    /// Percent of records that are tombstones [range: 0..=100].
    #[arg(long, default_value_t = 5, value_parser = numbers::int::<u8>(0, 100))]
    pub tombstone_percent: u8,
    /// Entries per batch: keys per write batch (`bench`), records per
    /// record batch (`log produce`, `log bench`; `stress log`: at most,
    /// each batch has 1 to N). A batch (--batch-size entries of their
    /// bytes) must stay within 1 GiB [range: 1..=1000000]
    #[arg(long, default_value_t = 100, value_parser = numbers::int::<usize>(1, MAX_BATCH_RECORDS))]
    pub batch_size: usize,
    /// Seed of the workload's generators (a command with several threads
    /// derives one per thread) [range: any u64]
    #[arg(long, default_value_t = 1, value_parser = numbers::int::<u64>(0, u64::MAX))]
    pub seed: u64,
    /// The current time in ms since the epoch (default: the system clock):
    /// `log produce` stamps its first record with it, `log clean` judges
    /// retention by it [range: 0..=253402300799999, the end of year 9999]
    #[arg(long, value_parser = numbers::int::<i64>(0, numbers::MAX_EPOCH_MS))]
    pub now: Option<i64>,
    /// Milliseconds between two records' timestamps [range: 0..=86400000,
    /// a day].
    #[arg(long, default_value_t = 1, value_parser = numbers::int::<i64>(0, 86_400_000))]
    pub time_step_ms: i64,
    /// Roll the active segment at the end, so every record is cleanable.
    #[arg(long)]
    pub roll: bool,
    /// Append in transactions of interleaved transactional producers, ended
    /// by COMMIT or ABORT markers (some aborted); `stress log` verifies
    /// what a `read_committed` consumer reads.
    #[arg(long)]
    pub transactional: bool,
    /// With `--transactional`: the share of transactions aborted
    /// [range: 0..=1].
    #[arg(long, default_value_t = 0.2, value_parser = numbers::float(0.0, 1.0))]
    pub abort_ratio: f64,
    /// With `--transactional`: the producers (ids 1 to N)
    /// [range: 1..=10000].
    #[arg(long, default_value_t = 3, value_parser = numbers::int::<u32>(1, 10_000))]
    pub producers: u32,
    /// With `--transactional`: batches per transaction at most (each has 1
    /// to N) [range: 1..=1000000].
    #[arg(long, default_value_t = 4, value_parser = numbers::int::<u32>(1, 1_000_000))]
    pub txn_batches: u32,
    /// A setting by its Kafka name, `NAME=VALUE` (repeatable): a log
    /// setting (`segment.bytes=1048576`), or a cleaner setting where a
    /// cleaner runs (`log.cleaner.threads=2`); `log clean` applies it to
    /// every log, `stress log` over its own defaults (small segments, a
    /// busy cleaner).
    #[arg(long = "config", value_name = "NAME=VALUE")]
    pub config: Vec<String>,
}

/// Runs `log produce`.
pub(crate) fn run(a: ProduceArgs) -> Result<()> {
    check_batch_bytes(a.batch_size, a.value_size)?;
    let named = a
        .log_dir
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(TopicPartition::from_dir_name);
    if named.is_none() {
        return UsageSnafu {
            message: format!(
                "{} is not named <topic>-<partition> (e.g. orders-0): Kafka, and lithify log clean, only know a log by a directory named so",
                a.log_dir.display()
            ),
        }
        .fail();
    }
    let mut config = default_log_config();
    for s in &a.config {
        let (name, value) = split(s)?;
        apply(name, value, &mut config, None)?;
    }
    let start = a.now.unwrap_or_else(|| SystemClock.now_ms());
    let clock = Arc::new(ManualClock::at_ms(start));
    let options = OpenOptions::default()
        .recovery_point(None)
        .clock(clock.clone());
    let mut log = Log::open_with(Arc::new(OsFs), &a.log_dir, config, options).context(LogSnafu)?;
    warn_recovery(&log);
    let first = log.log_end_offset();
    let workload = Workload {
        keys: a.keys,
        value_size: a.value_size,
        tombstone_percent: a.tombstone_percent,
    };
    let mut rng = Rng::new(a.seed);
    let mut batch = Vec::with_capacity(
        a.batch_size
            .min(usize::try_from(a.records).unwrap_or(usize::MAX)),
    );
    let mut tombstones = 0u64;
    let mut ts = start;
    let mut txns = a
        .transactional
        .then(|| Transactions::start(&mut log, a.producers))
        .transpose()?;
    for i in 0..a.records {
        let r = workload.record(&mut rng, ts);
        tombstones += u64::from(r.value.is_none());
        batch.push(r);
        ts = ts.saturating_add(a.time_step_ms);
        if batch.len() == a.batch_size || i + 1 == a.records {
            clock.set_ms(ts);
            match &mut txns {
                None => {
                    log.append(&batch).context(LogSnafu)?;
                }
                Some(t) => t.append(&mut log, &mut rng, &a, &batch)?,
            }
            batch.clear();
        }
    }
    let txn_text = match &mut txns {
        None => String::new(),
        Some(t) => {
            t.end_all(&mut log, &mut rng, a.abort_ratio)?;
            format!(
                " in {} transactions ({} committed, {} aborted) of {} producers",
                t.committed + t.aborted,
                t.committed,
                t.aborted,
                a.producers
            )
        }
    };
    if a.roll {
        log.roll().context(LogSnafu)?;
    }
    let segments = log.segment_infos();
    let end = log.log_end_offset();
    // As Kafka at a clean shutdown: synced, indexes trimmed, the recovery
    // point checkpointed.
    log.close().context(LogSnafu)?;
    println!(
        "produced {} records ({} tombstones, {} keys){txn_text} at offsets {}..{} of {}; the log has {} segments, {} bytes",
        a.records,
        tombstones,
        a.keys,
        first,
        end,
        a.log_dir.display(),
        segments.len(),
        segments.iter().map(|s| s.size).sum::<u64>()
    );
    Ok(())
}

/// The transactional producers of `--transactional`.
struct Transactions {
    producers: Vec<TxnProducer>,
    committed: u64,
    aborted: u64,
}

struct TxnProducer {
    producer: Producer,
    /// Batches left in its open transaction (0: none open).
    left: u32,
}

impl Transactions {
    /// Producers 1..=n, continuing the epochs and sequences the log knows;
    /// a transaction an earlier run left open is aborted, as a coordinator
    /// aborts the transaction of a producer that went away.
    fn start(log: &mut Log, n: u32) -> Result<Self> {
        let mut producers = Vec::new();
        for id in 1..=i64::from(n) {
            let known = log.producers().find(|p| p.producer_id == id).copied();
            let epoch = known.map_or(0, |p| p.producer_epoch.max(0));
            if known.is_some_and(|p| p.current_txn_first_offset.is_some()) {
                log.append_end_txn_marker(id, epoch, TransactionResult::Abort, 0)
                    .context(LogSnafu)?;
            }
            let next_sequence = known
                .and_then(|p| p.last_batch)
                .map_or(0, |b| b.last_sequence.wrapping_add(1).max(0));
            producers.push(TxnProducer {
                producer: Producer {
                    producer_id: id,
                    producer_epoch: epoch,
                    base_sequence: next_sequence,
                    transactional: true,
                },
                left: 0,
            });
        }
        Ok(Transactions {
            producers,
            committed: 0,
            aborted: 0,
        })
    }

    /// Appends `batch` for a producer picked at random, opening and
    /// ending its transactions.
    fn append(
        &mut self,
        log: &mut Log,
        rng: &mut Rng,
        a: &ProduceArgs,
        batch: &[lithify::log::record::SimpleRecord],
    ) -> Result<()> {
        let i = rng.below(self.producers.len() as u64) as usize;
        let p = &mut self.producers[i];
        if p.left == 0 {
            p.left = 1 + rng.below(u64::from(a.txn_batches)) as u32;
        }
        log.append_as(&p.producer, batch).context(LogSnafu)?;
        p.producer.base_sequence = p
            .producer
            .base_sequence
            .wrapping_add(batch.len() as i32)
            .max(0);
        p.left -= 1;
        if p.left == 0 {
            self.end(log, rng, i, a.abort_ratio)?;
        }
        Ok(())
    }

    /// Ends producer `i`'s transaction: ABORT with probability `ratio`.
    fn end(&mut self, log: &mut Log, rng: &mut Rng, i: usize, ratio: f64) -> Result<()> {
        let unit = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let abort = unit < ratio;
        let result = if abort {
            self.aborted += 1;
            TransactionResult::Abort
        } else {
            self.committed += 1;
            TransactionResult::Commit
        };
        let p = &mut self.producers[i];
        p.left = 0;
        log.append_end_txn_marker(p.producer.producer_id, p.producer.producer_epoch, result, 0)
            .context(LogSnafu)?;
        Ok(())
    }

    /// Ends every open transaction.
    fn end_all(&mut self, log: &mut Log, rng: &mut Rng, ratio: f64) -> Result<()> {
        for i in 0..self.producers.len() {
            if self.producers[i].left > 0 {
                self.end(log, rng, i, ratio)?;
            }
        }
        Ok(())
    }
}

/// Fails when a batch of `batch_size` records of `value_size` bytes would
/// pass 1 GiB: the batch is built in memory before it is appended.
pub(crate) fn check_batch_bytes(batch_size: usize, value_size: usize) -> Result<()> {
    lithify_bench::log_clean::check_batch(batch_size, value_size)
        .map_err(|message| crate::error::UsageSnafu { message }.build())
}
