//! Appending, rolling, reading and reopening a log, with exact expected
//! files and index entries.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use lithify_kafka_log::codec::Compression;
use lithify_kafka_log::naming::{FileKind, Suffix, file_name};
use lithify_kafka_log::record::{BatchBuilder, RecordBatch, SimpleRecord, TimestampType};
use lithify_kafka_log::{Error, Log, LogConfig, ManualClock, OpenOptions};
use lithify_vfs::{FileSystem, MemFs, read_file};

const DIR: &str = "/kafka/topic-0";

fn config(props: &[(&str, &str)]) -> LogConfig {
    LogConfig::from_properties(props.iter().copied()).unwrap()
}

fn open(fs: &MemFs, c: &LogConfig) -> Log {
    Log::open(Arc::new(fs.clone()), Path::new(DIR), c.clone()).unwrap()
}

fn file(base: i64, kind: FileKind) -> std::path::PathBuf {
    Path::new(DIR).join(file_name(base, kind, Suffix::None))
}

fn rec(i: i64) -> SimpleRecord {
    SimpleRecord::new(1000 + i, format!("key-{i}"), format!("value-{i}"))
}

fn all_records(log: &Log) -> Vec<(i64, String)> {
    log.records_from(log.log_start_offset())
        .unwrap()
        .map(|r| {
            let r = r.unwrap();
            (
                r.offset,
                String::from_utf8(r.key.unwrap().to_vec()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_new_log_has_one_empty_segment_with_preallocated_indexes() {
    let fs = MemFs::new();
    let log = open(&fs, &config(&[("segment.index.bytes", "100")]));
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (0, 0));
    assert_eq!(fs.file_size(&file(0, FileKind::Log)).unwrap(), 0);
    // Preallocated to whole entries: 100 / 8 * 8 and 100 / 12 * 12.
    assert_eq!(fs.file_size(&file(0, FileKind::Index)).unwrap(), 96);
    assert_eq!(fs.file_size(&file(0, FileKind::TimeIndex)).unwrap(), 96);
    assert_eq!(log.topic_partition(), Some(("topic".to_string(), 0)));
}

#[test]
fn rolls_on_size_trim_indexes_and_keep_offsets() {
    let fs = MemFs::new();
    let c = config(&[("segment.bytes", "300"), ("index.interval.bytes", "50")]);
    let mut log = open(&fs, &c);
    let mut sizes = Vec::new();
    for i in 0..12 {
        let info = log.append(&[rec(i)]).unwrap();
        assert_eq!((info.first_offset, info.last_offset), (i, i));
        sizes.push(info.size as u64);
    }
    let infos = log.segment_infos();
    // Each batch is the same size; a segment takes batches while its size
    // stays within 300 bytes.
    let per_segment = (300 / sizes[0]) as usize;
    assert_eq!(infos.len(), 12usize.div_ceil(per_segment));
    for (n, info) in infos.iter().enumerate() {
        assert_eq!(info.base_offset, (n * per_segment) as i64);
        assert_eq!(info.active, n == infos.len() - 1);
        let base = info.base_offset;
        let entries = info.offset_index_entries as u64;
        if !info.active {
            // Trimmed to their entries when the segment rolled.
            assert_eq!(
                fs.file_size(&file(base, FileKind::Index)).unwrap(),
                entries * 8
            );
            assert_eq!(
                fs.file_size(&file(base, FileKind::TimeIndex)).unwrap(),
                info.time_index_entries as u64 * 12
            );
            // The roll entry holds the segment's largest timestamp.
            let seg = log.segments().nth(n).unwrap();
            assert_eq!(
                seg.time_index().last_entry().timestamp,
                info.largest_timestamp
            );
            assert_eq!(info.largest_timestamp, 1000 + info.next_offset - 1);
        }
        // Kafka's rule: an entry for the batch starting after more than 50
        // bytes were appended since the last entry; never the first batch.
        let seg = log.segments().nth(n).unwrap();
        let got: Vec<_> = seg
            .offset_index()
            .entries()
            .map(|e| (e.offset, e.position))
            .collect();
        let mut want = Vec::new();
        let (mut since, mut pos) = (0u64, 0u64);
        for off in base..info.next_offset {
            if since > 50 {
                want.push((off, pos as u32));
                since = 0;
            }
            since += sizes[off as usize];
            pos += sizes[off as usize];
        }
        assert_eq!(got, want, "segment {base}");
    }
    assert_eq!(all_records(&log).len(), 12);
    // Reads start at any offset.
    for start in 0..=12 {
        let batches = log.read(start, usize::MAX).unwrap();
        assert_eq!(batches.len() as i64, 12 - start);
        if let Some(b) = batches.first() {
            assert_eq!(b.base_offset(), start);
        }
    }
    assert_eq!(log.read(3, 1).unwrap().len(), 1, "at least one batch");
    assert!(log.read(13, 100).is_err());
}

#[test]
fn rolls_on_segment_ms_in_record_time() {
    let fs = MemFs::new();
    let c = config(&[("segment.ms", "100")]);
    let mut log = open(&fs, &c);
    for ts in [0, 50, 100, 101, 150, 300] {
        log.append(&[SimpleRecord::new(ts, "k", "v")]).unwrap();
    }
    // A batch rolls when it is more than 100 ms after the segment's first.
    let bases: Vec<_> = log.segment_infos().iter().map(|s| s.base_offset).collect();
    assert_eq!(bases, [0, 3, 5]);
}

#[test]
fn full_indexes_roll_the_segment() {
    let fs = MemFs::new();
    // Room for 2 offset entries and 2 time entries (one reserved for the roll).
    let c = config(&[("segment.index.bytes", "24"), ("index.interval.bytes", "0")]);
    let mut log = open(&fs, &c);
    for i in 0..6 {
        log.append(&[rec(i)]).unwrap();
    }
    let infos = log.segment_infos();
    assert_eq!(
        infos.iter().map(|s| s.base_offset).collect::<Vec<_>>(),
        [0, 2, 4]
    );
    assert_eq!(infos[0].offset_index_entries, 1);
}

#[test]
fn compacted_logs_reject_keyless_records_and_limits_apply() {
    let fs = MemFs::new();
    let mut log = open(
        &fs,
        &config(&[("cleanup.policy", "compact"), ("max.message.bytes", "200")]),
    );
    let keyless = SimpleRecord {
        timestamp: 1,
        key: None,
        value: Some(Bytes::from_static(b"v")),
        headers: vec![],
    };
    let err = log.append(&[rec(0), keyless.clone()]).unwrap_err();
    assert!(
        matches!(err, Error::KeylessRecord { index: 1, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("cannot accept record 1"), "{err}");
    let err = log
        .append(&[SimpleRecord::new(1, "k", vec![0u8; 300])])
        .unwrap_err();
    assert!(matches!(err, Error::BatchTooLarge { .. }), "{err}");
    assert!(log.append(&[]).is_err());
    assert_eq!(log.log_end_offset(), 0, "nothing was appended");
    // A delete-policy log takes keyless records.
    let mut plain = Log::open(
        Arc::new(fs.clone()),
        Path::new("/kafka/other-1"),
        LogConfig::default(),
    )
    .unwrap();
    plain.append(&[keyless]).unwrap();
}

#[test]
fn every_codec_is_written_and_read_back_after_reopen() {
    for codec in Compression::ALL {
        let fs = MemFs::new();
        let c = config(&[
            ("compression.type", codec.name()),
            ("segment.bytes", "2000"),
        ]);
        let mut log = open(&fs, &c);
        for n in 0..10 {
            let batch: Vec<_> = (0..7).map(|i| rec(n * 7 + i)).collect();
            log.append(&batch).unwrap();
        }
        log.flush().unwrap();
        drop(log);
        fs.crash();
        let log = open(&fs, &c);
        assert_eq!(log.log_end_offset(), 70);
        for b in log.batches_from(0).unwrap() {
            assert_eq!(b.unwrap().compression().unwrap(), codec);
        }
        let got = all_records(&log);
        assert_eq!(got.len(), 70);
        assert!(
            got.iter()
                .enumerate()
                .all(|(i, (o, k))| *o == i as i64 && *k == format!("key-{i}"))
        );
    }
}

#[test]
fn log_append_time_stamps_batches_with_the_clock() {
    let fs = MemFs::new();
    let clock = Arc::new(ManualClock::at_ms(77_000));
    let c = config(&[("message.timestamp.type", "LogAppendTime")]);
    let options = OpenOptions::default()
        .recovery_point(None)
        .clock(clock.clone());
    let mut log = Log::open_with(Arc::new(fs.clone()), Path::new(DIR), c, options).unwrap();
    log.append(&[rec(0), rec(1)]).unwrap();
    let mut b = BatchBuilder::new(0).compression(Compression::Lz4);
    b.append(0, 5, Some(b"x"), Some(b"y"), &[]).unwrap();
    clock.advance_ms(1);
    log.append_batch(RecordBatch::parse(b.build()).unwrap())
        .unwrap();
    let batches = log.read(0, usize::MAX).unwrap();
    assert_eq!(batches[0].timestamp_type(), TimestampType::LogAppendTime);
    assert_eq!(batches[0].max_timestamp(), 77_000);
    assert_eq!(batches[1].max_timestamp(), 77_001);
    batches[1].ensure_valid().unwrap();
    let ts: Vec<_> = log
        .records_from(0)
        .unwrap()
        .map(|r| r.unwrap().timestamp)
        .collect();
    assert_eq!(ts, [77_000, 77_000, 77_001]);
}

#[test]
fn foreign_batches_get_the_log_end_offset_and_keep_their_bytes_otherwise() {
    let fs = MemFs::new();
    let mut log = open(&fs, &LogConfig::default());
    log.append(&[rec(0)]).unwrap();
    let mut b = BatchBuilder::new(500)
        .compression(Compression::Snappy)
        .producer(9, 1, 4)
        .transactional(true);
    b.append(500, 10, Some(b"a"), Some(b"1"), &[]).unwrap();
    b.append(502, 11, Some(b"b"), None, &[]).unwrap();
    let original = RecordBatch::parse(b.build()).unwrap();
    let info = log.append_batch(original.clone()).unwrap();
    assert_eq!((info.first_offset, info.last_offset), (1, 3));
    let stored = log.read(1, 1).unwrap().remove(0);
    assert_eq!(
        stored.raw()[8..],
        original.raw()[8..],
        "only the base offset changed"
    );
    assert!(stored.is_transactional());
    let offsets: Vec<_> = stored.records().unwrap().iter().map(|r| r.offset).collect();
    assert_eq!(offsets, [1, 3]);
    assert_eq!(log.log_end_offset(), 4);
    // A damaged batch is refused.
    let mut bad = original.raw().to_vec();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    let err = log
        .append_batch(RecordBatch::parse(bad.into()).unwrap())
        .unwrap_err();
    assert!(err.is_corruption(), "{err}");
}

#[test]
fn errors_in_files_name_the_file_and_byte_offset() {
    let fs = MemFs::new();
    let mut log = open(&fs, &LogConfig::default());
    for i in 0..3 {
        log.append(&[rec(i)]).unwrap();
    }
    log.roll().unwrap();
    log.append(&[rec(3)]).unwrap();
    log.flush().unwrap();
    drop(log);
    let path = file(0, FileKind::Log);
    let mut bytes = read_file(&fs, &path).unwrap();
    let second = RecordBatch::parse(Bytes::copy_from_slice(&bytes)).err();
    assert!(second.is_some(), "three batches are not one batch");
    // Damage the second batch's first record length (inside the CRC).
    let b0 = lithify_kafka_log::record::BatchPrefix::parse(&bytes).unwrap();
    let at = b0.batch_size().unwrap() as usize;
    bytes[at + 61] = 0x7f;
    lithify_vfs::write_file_atomic(&fs, &path, &bytes).unwrap();
    let log = open(&fs, &LogConfig::default());
    let batch = log.read(1, 1).unwrap().remove(0);
    let err = batch.records().unwrap_err();
    let (p, off) = err.file_offset().unwrap();
    assert_eq!(p, path);
    assert_eq!(off, at as u64 + 61);
    assert!(
        err.to_string()
            .contains(&format!("{} at byte offset {}", path.display(), at + 61)),
        "{err}"
    );
    assert!(
        batch
            .ensure_valid()
            .unwrap_err()
            .to_string()
            .contains("CRC mismatch")
    );
}

/// A batch's error from the format crate becomes the log's variant of the
/// same name, message, kind and place, so a caller of the log matches what
/// it matched when the log decoded batches itself.
#[test]
fn batch_errors_are_the_logs_errors_of_the_same_name() {
    use lithify_base::{Classify as _, ErrorKind};
    let mut b = BatchBuilder::new(0);
    b.append(0, 1, Some(b"k"), Some(b"v"), &[]).unwrap();
    let good = b.build().to_vec();

    // An unknown codec (a valid CRC over it).
    let mut raw = good.clone();
    raw[22] |= 0x06; // codec id 6
    let crc = lithify_kafka_log::record::compute_crc(&raw);
    raw[17..21].copy_from_slice(&crc.to_be_bytes());
    let batch = RecordBatch::parse(raw.into()).unwrap();
    let format = batch.records().unwrap_err();
    let (message, kind) = (format.to_string(), format.kind());
    let err = Error::from(format);
    assert!(matches!(err, Error::UnknownCodec { id: 6, .. }), "{err}");
    assert!(err.to_string().contains("codec id 6"), "{err}");
    assert_eq!((err.to_string(), err.kind()), (message, kind));

    // A changed byte: corruption, at the CRC field.
    let mut raw = good.clone();
    *raw.last_mut().unwrap() ^= 1;
    let format = RecordBatch::parse(raw.into())
        .unwrap()
        .ensure_valid()
        .unwrap_err();
    let message = format.to_string();
    let err = Error::from(format);
    assert!(matches!(err, Error::Corrupt { offset: 17, .. }), "{err}");
    assert_eq!(err.kind(), ErrorKind::Corruption);
    assert_eq!(err.to_string(), message);

    // An old message format: refused, never corruption.
    let mut raw = good;
    raw[16] = 1;
    let format = RecordBatch::parse(raw.into()).unwrap_err();
    let err = Error::from(format);
    assert!(
        matches!(err, Error::UnsupportedMagic { magic: 1, .. }),
        "{err}"
    );
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
}
