//! The cleaner's half of the independent codec check against
//! kafka-python (`cargo xtask kafka-compat` runs it before
//! `check.py validate-cleaned`, in `crates/kafka-log/tests/kafka_compat/`):
//! every batch the cleaner writes, in every codec, for kafka-python to
//! validate.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use lithify_kafka_log::codec::Compression;
use lithify_kafka_log::record::{BatchBuilder, RecordBatch, SimpleRecord};
use lithify_kafka_log::{Log, LogConfig};
use lithify_vfs::{FileSystem, OsFs};

use lithify_test_support::kafka_compat::{ENV, batch_json};

/// Writes a log in `codec` with overwrites, tombstones, headers and an
/// idempotent producer, cleans it once at time 10_000 (tombstones kept and
/// stamped with a delete horizon, batches rewritten, empty headers) and,
/// with `rounds == 2`, appends more and cleans again past the horizon
/// (tombstones removed). Returns the expected.json of the result.
fn write_cleaned_log(dir: &Path, codec: Compression, rounds: u32) -> String {
    use lithify_base::sync::Mutex;
    use lithify_compaction_logclean::Throttler;
    use lithify_compaction_logclean::{Cleaner, CleanerConfig, LogToClean};

    let fs: Arc<dyn FileSystem> = Arc::new(OsFs);
    let config = LogConfig::from_properties([
        ("cleanup.policy", "compact"),
        ("compression.type", codec.name()),
        ("segment.bytes", "700"),
        ("segment.index.bytes", "1024"),
        ("index.interval.bytes", "100"),
        ("delete.retention.ms", "1000"),
    ])
    .unwrap();
    let mut log = Log::open(fs, dir, config).unwrap();
    let mut ts = 1_000i64;
    let mut append = |log: &mut Log, n: i64, salt: &str| {
        for _ in 0..n {
            let records: Vec<SimpleRecord> = (0..3)
                .map(|j| {
                    ts += 1;
                    let key = format!("key-{}", (ts * 7 + j) % 11);
                    let mut r = SimpleRecord::new(ts, key.clone(), format!("{salt}{codec}-{ts}-"));
                    if ts % 9 == 0 {
                        r = SimpleRecord::tombstone(ts, key);
                    }
                    if ts % 4 == 0 {
                        r = r.with_header("trace", Some(Bytes::from(format!("t{ts}"))));
                    }
                    r
                })
                .collect();
            if ts % 5 == 0 {
                // An idempotent producer's batch.
                let base = log.log_end_offset();
                let mut b =
                    BatchBuilder::new(base)
                        .compression(codec)
                        .producer(9, 0, (ts % 1000) as i32);
                for (i, r) in records.iter().enumerate() {
                    b.append(
                        base + i as i64,
                        r.timestamp,
                        r.key.as_deref(),
                        r.value.as_deref(),
                        &r.headers,
                    )
                    .unwrap();
                }
                log.append_batch(RecordBatch::parse(b.build()).unwrap())
                    .unwrap();
            } else {
                log.append(&records).unwrap();
            }
        }
        // The producer's last batch, then a newer value of its key: the
        // cleaner keeps the batch as an empty header.
        ts += 1;
        let base = log.log_end_offset();
        let mut b = BatchBuilder::new(base)
            .compression(codec)
            .producer(9, 0, 900);
        b.append(base, ts, Some(b"solo"), Some(b"old"), &[])
            .unwrap();
        log.append_batch(RecordBatch::parse(b.build()).unwrap())
            .unwrap();
        ts += 1;
        log.append(&[SimpleRecord::new(ts, "solo", "new")]).unwrap();
        log.roll().unwrap();
    };
    append(&mut log, 14, "a");
    let config = CleanerConfig::default();
    let throttler = Arc::new(Throttler::new(
        f64::MAX,
        Arc::new(lithify_kafka_log::SystemClock),
    ));
    let mut cleaner = Cleaner::new(0, &config, throttler).unwrap();
    let log = Mutex::new(log);
    let mut first_dirty = None;
    for round in 1..=rounds {
        let now = 10_000 * i64::from(round);
        if round > 1 {
            append(&mut log.lock(), 4, "b");
        }
        let ltc = LogToClean::from_log(&log.lock(), first_dirty, now).unwrap();
        let out = cleaner.clean(&log, &ltc, now, &|| Ok(())).unwrap();
        let s = &out.report.stats;
        assert!(
            s.batches_rewritten > 0 && s.batches_dropped > 0,
            "{}",
            out.report
        );
        if round == 1 {
            assert!(s.delete_horizons_set > 0, "{}", out.report);
        } else {
            assert!(s.tombstones_dropped > 0, "{}", out.report);
        }
        first_dirty = Some(out.report.end_offset);
    }
    let mut log = log.into_inner();
    log.append(&[SimpleRecord::new(ts + 1, "active", "segment")])
        .unwrap();
    log.flush().unwrap();
    let batches: Vec<RecordBatch> = log.batches_from(0).unwrap().map(Result::unwrap).collect();
    assert!(
        batches.iter().any(|b| b.records_count() == 0),
        "an empty header is written"
    );
    for b in &batches {
        b.ensure_valid().unwrap();
    }
    let json: Vec<String> = batches.iter().map(batch_json).collect();
    format!(
        "{{\"codec\": \"{codec}\", \"batches\": [\n{}\n]}}\n",
        json.join(",\n")
    )
}

/// Every batch the cleaner writes, in every codec, after one round (with
/// delete horizons) and after two (tombstones removed), for kafka-python
/// (`check.py validate-cleaned`) under `$DIR/from-cleaner/`.
#[test]
fn cleaner_output_in_every_codec() {
    let temp;
    let root = match std::env::var_os(ENV) {
        Some(d) => PathBuf::from(d).join("from-cleaner"),
        None => {
            temp = tempfile::tempdir().unwrap();
            temp.path().join("from-cleaner")
        }
    };
    let fs = OsFs;
    for codec in Compression::ALL {
        for rounds in [1, 2] {
            let dir = root.join(format!("round{rounds}-{}", codec.id()));
            if fs.is_dir(&dir) {
                for name in fs.list_dir(&dir).unwrap() {
                    fs.remove_file(&dir.join(name)).unwrap();
                }
            }
            let expected = write_cleaned_log(&dir, codec, rounds);
            lithify_vfs::write_file_atomic(&fs, &dir.join("expected.json"), expected.as_bytes())
                .unwrap();
        }
    }
}

/// The transactional batches and markers `check.py generate-txn` wrote
/// with kafka-python, appended to a log as a broker appends them, then
/// cleaned: `before/` as appended, `cleaned/` after one round, and
/// `past-horizon/` after two more (the last past `delete.retention.ms`),
/// under `$DIR/from-python-txn/`, for `check.py validate-txn` to read.
/// Ignored in a plain `cargo test`: `cargo xtask kafka-compat` runs it.
#[test]
#[ignore = "needs the batches of `check.py generate-txn`; run by `cargo xtask kafka-compat`"]
fn cleans_transactions_written_by_kafka_python() {
    use lithify_base::sync::Mutex;
    use lithify_compaction_logclean::Throttler;
    use lithify_compaction_logclean::{Cleaner, CleanerConfig, LogToClean};
    use lithify_kafka_log::record::BatchPrefix;

    let root = PathBuf::from(std::env::var_os(ENV).expect("LITHIFY_KAFKA_COMPAT_DIR is set"));
    let bytes = lithify_vfs::read_file(&OsFs, &root.join("from-python/txn.bin")).unwrap();
    let mut batches = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let size = BatchPrefix::parse(&bytes[pos..])
            .and_then(|p| p.batch_size())
            .unwrap() as usize;
        let b = RecordBatch::parse(Bytes::copy_from_slice(&bytes[pos..pos + size])).unwrap();
        b.ensure_valid().unwrap();
        batches.push(b);
        pos += size;
    }
    assert!(batches.iter().any(|b| b.is_control()));
    const RETENTION: i64 = 1000;
    let now = 2_000_000_000_000;
    let times: [&[i64]; 3] = [&[], &[now], &[now, now, now + RETENTION + 1]];
    for (name, rounds) in ["before", "cleaned", "past-horizon"].into_iter().zip(times) {
        let dir = root.join("from-python-txn").join(name).join("txns-0");
        if OsFs.is_dir(&dir) {
            for n in OsFs.list_dir(&dir).unwrap() {
                OsFs.remove_file(&dir.join(n)).unwrap();
            }
        }
        let config = LogConfig::from_properties([
            ("cleanup.policy", "compact"),
            ("segment.bytes", "4000"),
            ("segment.index.bytes", "1024"),
            ("index.interval.bytes", "300"),
            ("delete.retention.ms", "1000"),
        ])
        .unwrap();
        let fs: Arc<dyn FileSystem> = Arc::new(OsFs);
        let mut log = Log::open(fs, &dir, config).unwrap();
        for b in &batches {
            log.append_batch(b.clone()).unwrap();
        }
        log.roll().unwrap();
        assert_eq!(log.first_unstable_offset(), None, "every transaction ended");
        let aborted = log.collect_aborted_transactions(0, log.log_end_offset());
        assert!(!aborted.is_empty());
        let log = Mutex::new(log);
        let config =
            CleanerConfig::from_properties([("producer.id.expiration.ms", "9223372036854775807")])
                .unwrap();
        let throttler = Arc::new(Throttler::new(
            f64::MAX,
            Arc::new(lithify_kafka_log::SystemClock),
        ));
        let mut cleaner = Cleaner::new(0, &config, throttler).unwrap();
        let mut first_dirty = None;
        for &at in rounds {
            let ltc = LogToClean::from_log(&log.lock(), first_dirty, at).unwrap();
            let out = cleaner.clean(&log, &ltc, at, &|| Ok(())).unwrap();
            first_dirty = Some(out.report.end_offset);
        }
        let log = log.into_inner();
        for b in log.batches_from(0).unwrap() {
            b.unwrap().ensure_valid().unwrap();
        }
        log.close().unwrap();
    }
}
