//! Both directions of the independent codec check against kafka-python
//! (`cargo xtask kafka-compat` runs them around `kafka_compat/check.py`).
//!
//! * `writes_a_log_in_every_codec`: writes one log per codec (data,
//!   transactional and control batches, tombstones, headers, several
//!   segments) and an `expected.json` beside each. With
//!   `LITHIFY_KAFKA_COMPAT_DIR` set they go to `$DIR/from-rust/`, where the
//!   Python script checks every batch's CRC and fields with
//!   `kafka.record.default_records.DefaultRecordBatch`; otherwise to a
//!   temporary directory, checked only by our reader.
//! * `reads_batches_written_by_kafka_python` (ignored unless run by the
//!   xtask): reads `$DIR/from-python/<codec>.bin`, batches the script built
//!   with kafka-python's `DefaultRecordBatchBuilder` from the same
//!   specification, checks every field, and appends them to a log.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use lithify_kafka_log::codec::Compression;
use lithify_kafka_log::record::{
    BatchBuilder, ControlRecordType, EndTransactionMarker, Header, RecordBatch, SimpleRecord,
};
use lithify_kafka_log::{Log, LogConfig};
use lithify_vfs::{FileSystem, OsFs, read_file};

use lithify_test_support::kafka_compat::{ENV, batch_json};

fn value(codec: Compression, i: i64) -> Vec<u8> {
    format!("{codec}-value-{i}-")
        .repeat(1 + (i as usize % 5))
        .into_bytes()
}

/// Writes the log for `codec` under `dir` and returns its expected.json.
fn write_log(dir: &Path, codec: Compression) -> String {
    let fs: Arc<dyn FileSystem> = Arc::new(OsFs);
    let config = LogConfig::from_properties([
        ("compression.type", codec.name()),
        ("segment.bytes", "500"),
        ("index.interval.bytes", "100"),
    ])
    .unwrap();
    let mut log = Log::open(fs, dir, config).unwrap();
    let mut next = 0i64;
    for n in 0..12 {
        let records: Vec<SimpleRecord> = (0..4)
            .map(|j| {
                let i = next + j;
                let mut r = SimpleRecord::new(
                    1_700_000_000_000 + i * 7,
                    format!("key-{}", i % 9),
                    value(codec, i),
                );
                if i % 6 == 5 {
                    r.value = None;
                }
                if i % 3 == 0 {
                    r = r
                        .with_header("trace-id", Some(Bytes::from(format!("t{i}"))))
                        .with_header("null", None);
                }
                r
            })
            .collect();
        if n % 4 == 3 {
            // A transactional batch of producer 42, then its COMMIT marker.
            let mut b = BatchBuilder::new(0)
                .compression(codec)
                .producer(42, 3, next as i32)
                .transactional(true);
            for (i, r) in records.iter().enumerate() {
                b.append(
                    i as i64,
                    r.timestamp,
                    r.key.as_deref(),
                    r.value.as_deref(),
                    &r.headers,
                )
                .unwrap();
            }
            log.append_batch(RecordBatch::parse(b.build()).unwrap())
                .unwrap();
            let mut marker = BatchBuilder::new(0)
                .control(true)
                .transactional(true)
                .producer(42, 3, -1);
            let value = EndTransactionMarker {
                coordinator_epoch: 7,
            }
            .value();
            marker
                .append(
                    0,
                    1_700_000_000_999,
                    Some(&ControlRecordType::Commit.key()),
                    Some(&value),
                    &[],
                )
                .unwrap();
            log.append_batch(RecordBatch::parse(marker.build()).unwrap())
                .unwrap();
            next += 5;
        } else {
            log.append(&records).unwrap();
            next += 4;
        }
    }
    log.flush().unwrap();
    assert!(
        log.segments().count() >= 3,
        "the log spans several segments"
    );
    let batches: Vec<RecordBatch> = log.batches_from(0).unwrap().map(Result::unwrap).collect();
    for b in &batches {
        b.ensure_valid().unwrap();
        if !b.is_control() {
            assert_eq!(b.compression().unwrap(), codec);
        }
    }
    assert_eq!(log.log_end_offset(), next);
    let json: Vec<String> = batches.iter().map(batch_json).collect();
    format!(
        "{{\"codec\": \"{codec}\", \"batches\": [\n{}\n]}}\n",
        json.join(",\n")
    )
}

#[test]
fn writes_a_log_in_every_codec() {
    let temp;
    let root = match std::env::var_os(ENV) {
        Some(d) => PathBuf::from(d).join("from-rust"),
        None => {
            temp = tempfile::tempdir().unwrap();
            temp.path().join("from-rust")
        }
    };
    let fs = OsFs;
    for codec in Compression::ALL {
        let dir = root.join(format!("compat-{}", codec.id()));
        if fs.is_dir(&dir) {
            for name in fs.list_dir(&dir).unwrap() {
                fs.remove_file(&dir.join(name)).unwrap();
            }
        }
        let expected = write_log(&dir, codec);
        lithify_vfs::write_file_atomic(&fs, &dir.join("expected.json"), expected.as_bytes())
            .unwrap();
    }
}

/// What check.py builds for `codec`: batch `j` of records `i`, as
/// (offset delta, timestamp, key, value, headers).
type SpecRecord = (
    i64,
    i64,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Vec<(String, Option<Vec<u8>>)>,
);

fn python_spec(codec: Compression, j: i64) -> Vec<SpecRecord> {
    (0..(3 + j * 4))
        .map(|i| {
            let key = (i % 7 != 6).then(|| format!("py-{j}-{}", i % 5).into_bytes());
            let value =
                (i % 4 != 1).then(|| format!("{}:{j}:{i};", codec.name()).repeat(8).into_bytes());
            let headers = if i % 2 == 0 {
                vec![
                    (format!("h{i}"), Some(vec![i as u8; 3])),
                    ("n".to_string(), None),
                ]
            } else {
                vec![]
            };
            (i, 1_600_000_000_000 + j * 1000 + i * 3, key, value, headers)
        })
        .collect()
}

#[test]
#[ignore = "needs batches from kafka-python: run `cargo xtask kafka-compat`"]
fn reads_batches_written_by_kafka_python() {
    let root = PathBuf::from(std::env::var_os(ENV).expect("LITHIFY_KAFKA_COMPAT_DIR must be set"));
    let fs: Arc<dyn FileSystem> = Arc::new(OsFs);
    let logs = tempfile::tempdir().unwrap();
    for codec in Compression::ALL {
        let path = root
            .join("from-python")
            .join(format!("{}.bin", codec.name()));
        let bytes = Bytes::from(read_file(&*fs, &path).unwrap());
        let mut log = Log::open(
            fs.clone(),
            &logs.path().join(format!("py-{}", codec.id())),
            LogConfig::default(),
        )
        .unwrap();
        let mut pos = 0usize;
        let mut j = 0i64;
        while pos < bytes.len() {
            let prefix = lithify_kafka_log::record::BatchPrefix::parse(&bytes[pos..]).unwrap();
            let size = prefix.batch_size().unwrap() as usize;
            let batch = RecordBatch::parse(bytes.slice(pos..pos + size)).unwrap();
            batch.ensure_valid().unwrap();
            assert_eq!(batch.compression().unwrap(), codec, "{path:?} batch {j}");
            assert_eq!(batch.base_offset(), 1000 * j);
            let (pid, epoch, seq) = if j == 1 { (77, 2, 10) } else { (-1, -1, -1) };
            assert_eq!(
                (
                    batch.producer_id(),
                    batch.producer_epoch(),
                    batch.base_sequence()
                ),
                (pid, epoch, seq)
            );
            assert_eq!(batch.is_transactional(), j == 1);
            let spec = python_spec(codec, j);
            let records = batch.records().unwrap();
            assert_eq!(records.len(), spec.len());
            assert_eq!(batch.last_offset(), 1000 * j + spec.len() as i64 - 1);
            assert_eq!(
                batch.max_timestamp(),
                spec.iter().map(|r| r.1).max().unwrap()
            );
            for (r, (delta, ts, key, value, headers)) in records.iter().zip(&spec) {
                assert_eq!(r.offset, 1000 * j + delta);
                assert_eq!(r.timestamp, *ts);
                assert_eq!(r.key.as_deref(), key.as_deref());
                assert_eq!(r.value.as_deref(), value.as_deref());
                let want: Vec<Header> = headers
                    .iter()
                    .map(|(k, v)| Header::new(k.clone(), v.clone().map(Bytes::from)))
                    .collect();
                assert_eq!(r.headers, want);
            }
            // A log takes kafka-python's batch as a producer's.
            let before = log.log_end_offset();
            let info = log.append_batch(batch.clone()).unwrap();
            assert_eq!(info.first_offset, before);
            pos += size;
            j += 1;
        }
        assert_eq!(j, 3, "{path:?}: three batches");
        let n: usize = (0..3).map(|j| python_spec(codec, j).len()).sum();
        assert_eq!(log.records_from(0).unwrap().count(), n);
    }
}
