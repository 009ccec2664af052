//! Helpers shared by the cleaner's integration tests.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use lithify_base::sync::Mutex;
use lithify_compaction_logclean::{Cleaner, CleanerConfig, LogToClean, RoundOutcome, Throttler};
use lithify_kafka_log::record::{RecordBatch, SimpleRecord};
use lithify_kafka_log::{Log, LogConfig, ManualClock, OpenOptions};
use lithify_vfs::FileSystem;

/// A compacted log's config with `props` applied.
pub(crate) fn compact(props: &[(&str, &str)]) -> LogConfig {
    // Kafka's LogCleanerTest uses 1 KiB indexes too; MemFs really
    // allocates the preallocated index files, so the default 10 MiB is slow.
    let mut c = LogConfig::from_properties([
        ("cleanup.policy", "compact"),
        ("segment.index.bytes", "1024"),
    ])
    .unwrap();
    for (k, v) in props {
        c.set(k, v).unwrap();
    }
    c
}

/// Opens a log with a manual clock at `now`.
pub(crate) fn open(fs: Arc<dyn FileSystem>, dir: &str, config: LogConfig, now: i64) -> Log {
    let options = OpenOptions::default()
        .recovery_point(None)
        .clock(Arc::new(ManualClock::at_ms(now)));
    Log::open_with(fs, Path::new(dir), config, options).unwrap()
}

/// `(offset, key, value)` of every record.
pub(crate) fn contents(log: &Log) -> Vec<(i64, Option<String>, Option<String>)> {
    log.records_from(log.log_start_offset())
        .unwrap()
        .map(|r| {
            let r = r.unwrap();
            let s = |b: Option<bytes::Bytes>| b.map(|b| String::from_utf8(b.to_vec()).unwrap());
            (r.offset, s(r.key), s(r.value))
        })
        .collect()
}

/// Keys of every record, in order.
pub(crate) fn keys(log: &Log) -> Vec<String> {
    contents(log)
        .into_iter()
        .map(|(_, k, _)| k.unwrap_or_default())
        .collect()
}

/// Offsets of every record, in order.
pub(crate) fn offsets(log: &Log) -> Vec<i64> {
    contents(log).into_iter().map(|(o, _, _)| o).collect()
}

/// Every batch of the log.
pub(crate) fn batches(log: &Log) -> Vec<RecordBatch> {
    log.batches_from(log.log_start_offset())
        .unwrap()
        .map(|b| b.unwrap())
        .collect()
}

/// A keyed record `key -> value` at `ts`.
pub(crate) fn rec(ts: i64, key: impl ToString, value: impl ToString) -> SimpleRecord {
    SimpleRecord::new(ts, key.to_string(), value.to_string())
}

/// A cleaner whose map has `memory` bytes and load factor `lf`.
pub(crate) fn cleaner(memory: usize, lf: &str) -> Cleaner {
    let config = CleanerConfig::from_properties([
        (
            "log.cleaner.dedupe.buffer.size",
            memory.to_string().as_str(),
        ),
        ("log.cleaner.io.buffer.load.factor", lf),
    ])
    .unwrap();
    Cleaner::new(
        0,
        &config,
        Arc::new(Throttler::new(
            f64::MAX,
            Arc::new(lithify_kafka_log::SystemClock),
        )),
    )
    .unwrap()
}

/// One round of `log` from first dirty offset `first_dirty` (as Kafka's
/// `cleaner.clean(LogToClean(log, first_dirty, activeSegment.baseOffset))`).
pub(crate) fn clean(
    cleaner: &mut Cleaner,
    log: &Mutex<Log>,
    first_dirty: i64,
    now: i64,
) -> RoundOutcome {
    let ltc = LogToClean::from_log(&log.lock(), Some(first_dirty), now).unwrap();
    cleaner.clean(log, &ltc, now, &|| Ok(())).unwrap()
}
