//! Damage is never silent (issue 18, the Kafka-log half): each case the
//! issue reproduced with `lithify log clean`, at the library's level.
//!
//! * recovery refuses damage below the recovery point (bytes that were
//!   flushed) with the file and byte offset, and never truncates it;
//! * above the recovery point (bytes never flushed) it truncates, reports
//!   what it dropped and keeps the bytes under the partition's `lost/`;
//! * the cleaner refuses a damaged batch: no segment replaced, no
//!   checkpoint moved, the log uncleanable, the other logs cleaned;
//! * a valid batch larger than a lowered `max.message.bytes` is cleaned;
//! * a closed (or dropped) log leaves trimmed indexes, as Kafka does.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::*;
use lithify_base::sync::Mutex;
use lithify_compaction_logclean::checkpoint;
use lithify_compaction_logclean::{CleanerConfig, CleanerEvent, LogCleaner, LogToClean};
use lithify_kafka_log::TopicPartition;
use lithify_kafka_log::checkpoint as recovery_points;
use lithify_kafka_log::naming::{FileKind, Suffix, file_name};
use lithify_kafka_log::record::{BatchPrefix, SimpleRecord};
use lithify_kafka_log::shared_log;
use lithify_kafka_log::{Error, Log, LogConfig, ManualClock, OpenOptions, RecoveryPointSource};
use lithify_vfs::{FileSystem, MemFs, OsFs, read_file, write_file_atomic};

/// Runs `test` on a fresh `MemFs` (data directory `/data`) and on real
/// files (a temporary directory).
fn on_both(test: impl Fn(Arc<dyn FileSystem>, &Path)) {
    test(Arc::new(MemFs::new()), Path::new("/data"));
    let tmp = tempfile::tempdir().unwrap();
    test(Arc::new(OsFs), tmp.path());
}

fn log_path(dir: &Path, base: i64) -> PathBuf {
    dir.join(file_name(base, FileKind::Log, Suffix::None))
}

/// Every file under `dir` (not recursing) with its bytes.
fn files(fs: &dyn FileSystem, dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fs.list_dir(dir)
        .unwrap()
        .into_iter()
        .filter(|n| !fs.is_dir(&dir.join(n)))
        .map(|n| {
            let bytes = read_file(fs, &dir.join(&n)).unwrap();
            (n, bytes)
        })
        .collect()
}

/// The byte positions of the batches of a `.log`.
fn batch_starts(bytes: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        out.push(pos);
        pos += BatchPrefix::parse(&bytes[pos..])
            .unwrap()
            .batch_size()
            .unwrap() as usize;
    }
    out
}

fn write_in_place(fs: &dyn FileSystem, path: &Path, bytes: &[u8]) {
    write_file_atomic(fs, path, bytes).unwrap();
}

fn open(fs: &Arc<dyn FileSystem>, dir: &Path, config: &LogConfig) -> Result<Log, Error> {
    let options = OpenOptions::default()
        .recovery_point(None)
        .clock(Arc::new(ManualClock::at_ms(1_000_000)));
    Log::open_with(fs.clone(), dir, config.clone(), options)
}

/// The first layout: three segments of duplicate keys, small
/// enough to have no offset-index entries, flushed; the middle segment's
/// first batch gets magic byte 0xFF; the recovery point is at the active
/// segment. Recovery used to rebuild the middle segment's indexes by
/// truncating it to nothing, and the cleaner then cleaned the log without
/// its records and moved the checkpoint past them.
#[test]
fn a_bad_magic_byte_in_a_flushed_middle_segment_is_refused_not_truncated() {
    on_both(|fs, root| {
        let dir = root.join("t-0");
        let config = compact(&[("segment.bytes", "1000")]);
        let mut log = open(&fs, &dir, &config).unwrap();
        for i in 0..60 {
            log.append(&[rec(1000 + i, format!("k{}", i % 5), "v".repeat(20))])
                .unwrap();
        }
        log.close().unwrap();
        let bases: Vec<i64> = {
            let log = open(&fs, &dir, &config).unwrap();
            log.segments().map(|s| s.base_offset()).collect()
        };
        assert!(bases.len() >= 3, "{bases:?}");
        let middle = log_path(&dir, bases[1]);
        let mut bytes = read_file(&*fs, &middle).unwrap();
        bytes[16] = 0xff;
        write_in_place(&*fs, &middle, &bytes);
        let before = files(&*fs, &dir);

        let err = open(&fs, &dir, &config).unwrap_err();
        assert!(err.is_corruption(), "{err}");
        let (path, offset) = err.file_offset().unwrap();
        assert_eq!((path, offset), (middle.as_path(), 0), "{err}");
        let text = err.to_string();
        assert!(
            text.contains(&middle.display().to_string()) && text.contains("byte offset 0"),
            "{text}"
        );
        assert!(text.contains("recovery point"), "{text}");
        // Nothing was truncated, rebuilt or moved.
        assert_eq!(files(&*fs, &dir), before);
        assert!(!fs.exists(&dir.join("lost")));
        assert!(!fs.exists(&root.join(checkpoint::FILE_NAME)));
    });
}

/// The second case: a non-active segment cut mid-batch (its
/// offset index has entries past the cut) was "rebuilt" by truncating it,
/// and cleaned with the cut records gone (900 of 20,000), exit 0.
#[test]
fn a_flushed_segment_cut_mid_batch_is_refused_not_truncated() {
    on_both(|fs, root| {
        let dir = root.join("t-0");
        let config = compact(&[("segment.bytes", "30000"), ("index.interval.bytes", "500")]);
        let mut log = open(&fs, &dir, &config).unwrap();
        for i in 0..400 {
            log.append(&[
                rec(1000 + i, format!("k{}", i % 50), format!("value-{i}")),
                rec(1000 + i, format!("k{}", (i + 7) % 50), format!("value-{i}")),
            ])
            .unwrap();
        }
        log.close().unwrap();
        let first = log_path(&dir, 0);
        let bytes = read_file(&*fs, &first).unwrap();
        let starts = batch_starts(&bytes);
        // Keep 95 % of the file, cutting a batch in two.
        let cut = bytes.len() * 95 / 100;
        assert!(!starts.contains(&cut));
        let partial = *starts.iter().rev().find(|s| **s < cut).unwrap();
        write_in_place(&*fs, &first, &bytes[..cut]);
        let index =
            read_file(&*fs, &dir.join(file_name(0, FileKind::Index, Suffix::None))).unwrap();
        assert!(
            index
                .chunks(8)
                .any(|e| u32::from_be_bytes([e[4], e[5], e[6], e[7]]) as usize > cut),
            "the offset index has entries past the cut"
        );
        let before = files(&*fs, &dir);

        let err = open(&fs, &dir, &config).unwrap_err();
        let (path, offset) = err.file_offset().unwrap();
        assert_eq!(path, first.as_path(), "{err}");
        assert!(
            offset == cut as u64 || offset == partial as u64,
            "{err} (cut at {cut}, the partial batch starts at {partial})"
        );
        assert_eq!(files(&*fs, &dir), before);

        // Cut with no index entry past it: the scan after the last entry
        // finds the partial batch.
        let entries = index.len() / 8;
        let last_entry = u32::from_be_bytes(index[index.len() - 4..].try_into().unwrap()) as usize;
        assert!(entries > 1);
        let cut = bytes.len() - 10;
        assert!(cut > last_entry);
        write_in_place(&*fs, &first, &bytes[..cut]);
        let err = open(&fs, &dir, &config).unwrap_err();
        let (path, offset) = err.file_offset().unwrap();
        assert_eq!(path, first.as_path(), "{err}");
        assert_eq!(offset, *starts.last().unwrap() as u64, "{err}");
    });
}

/// The third case: a bad magic byte in the active segment was
/// truncated away silently (95,792 -> 23,948 bytes, exit 0). Those bytes
/// were flushed: the recovery point says so.
#[test]
fn a_bad_magic_byte_in_the_flushed_active_segment_is_refused() {
    on_both(|fs, root| {
        let dir = root.join("t-0");
        let config = compact(&[]);
        let mut log = open(&fs, &dir, &config).unwrap();
        for i in 0..40 {
            log.append(&[rec(1000 + i, format!("k{}", i % 5), "value")])
                .unwrap();
        }
        log.flush().unwrap();
        assert_eq!(log.recovery_point(), 40);
        drop(log);
        let cp =
            recovery_points::read_file(&*fs, &root.join(recovery_points::RECOVERY_POINT_FILE_NAME));
        assert_eq!(cp.unwrap()[&TopicPartition::new("t", 0)], 40);

        let active = log_path(&dir, 0);
        let mut bytes = read_file(&*fs, &active).unwrap();
        let third = batch_starts(&bytes)[2];
        bytes[third + 16] = 0xff;
        write_in_place(&*fs, &active, &bytes);
        let size = bytes.len() as u64;

        let err = open(&fs, &dir, &config).unwrap_err();
        assert!(
            matches!(err, Error::DamagedBelowRecoveryPoint { .. }),
            "{err}"
        );
        let (path, offset) = err.file_offset().unwrap();
        assert_eq!((path, offset), (active.as_path(), third as u64));
        assert_eq!(fs.file_size(&active).unwrap(), size, "nothing truncated");
    });
}

/// Above the recovery point (appended, never flushed) recovery truncates
/// at the first invalid batch, as Kafka's log loader does, and reports it:
/// the file, the byte offset, the bytes and first offset dropped, and the
/// copy of those bytes under the partition's `lost/`.
#[test]
fn damage_above_the_recovery_point_is_truncated_reported_and_kept() {
    on_both(|fs, root| {
        let dir = root.join("t-0");
        let config = compact(&[]);
        let mut log = open(&fs, &dir, &config).unwrap();
        for i in 0..10 {
            log.append(&[rec(1000 + i, format!("k{i}"), "value")])
                .unwrap();
        }
        log.flush().unwrap();
        for i in 10..20 {
            log.append(&[rec(1000 + i, format!("k{i}"), "value")])
                .unwrap();
        }
        let all = contents(&log);
        drop(log);
        let active = log_path(&dir, 0);
        let mut bytes = read_file(&*fs, &active).unwrap();
        let at = batch_starts(&bytes)[14];
        bytes[at + 70] ^= 0x10; // a CRC mismatch in batch 14
        write_in_place(&*fs, &active, &bytes);

        let log = open(&fs, &dir, &config).unwrap();
        let report = log.recovery_report();
        assert_eq!(report.recovery_point, 10);
        assert_eq!(
            report.recovery_point_source,
            RecoveryPointSource::Checkpoint
        );
        assert_eq!(report.truncations.len(), 1, "{report:?}");
        let t = &report.truncations[0];
        assert_eq!(t.file, active);
        assert_eq!(t.position, at as u64);
        assert_eq!(t.bytes, (bytes.len() - at) as u64);
        assert_eq!(t.first_offset_dropped, 14);
        assert!(t.reason.contains("CRC"), "{}", t.reason);
        assert_eq!(
            t.kept_at,
            dir.join("lost").join(format!(
                "{}.{at}",
                file_name(0, FileKind::Log, Suffix::None)
            ))
        );
        assert_eq!(read_file(&*fs, &t.kept_at).unwrap(), &bytes[at..]);
        assert!(t.to_string().contains("kept in"), "{t}");
        assert_eq!(log.log_end_offset(), 14);
        assert_eq!(contents(&log), all[..14]);
        drop(log);
        // `lost/` is a directory: the next open does not take it for a
        // segment, and a second truncation at the same place gets a new
        // name.
        let log = open(&fs, &dir, &config).unwrap();
        assert!(log.recovery_report().truncations.is_empty());
        assert_eq!(log.log_end_offset(), 14);
    });
}

/// A log that ends below its recovery point lost records that were
/// flushed: refused, naming the last segment and its size.
#[test]
fn a_log_ending_below_its_recovery_point_is_refused() {
    on_both(|fs, root| {
        let dir = root.join("t-0");
        let config = compact(&[]);
        let mut log = open(&fs, &dir, &config).unwrap();
        for i in 0..10 {
            log.append(&[rec(1000 + i, format!("k{i}"), "value")])
                .unwrap();
        }
        log.close().unwrap();
        let active = log_path(&dir, 0);
        let bytes = read_file(&*fs, &active).unwrap();
        let cut = batch_starts(&bytes)[7];
        write_in_place(&*fs, &active, &bytes[..cut]);
        let err = open(&fs, &dir, &config).unwrap_err();
        assert!(matches!(err, Error::MissingFlushedRecords { .. }), "{err}");
        assert_eq!(err.file_offset(), Some((active.as_path(), cut as u64)));
        assert!(
            err.to_string().contains("recovery-point-offset-checkpoint"),
            "{err}"
        );
    });
}

/// A segment's `.log` missing from the middle of a log (its index files
/// are still there) is refused, not "an orphaned index" removed silently.
#[test]
fn a_missing_segment_log_is_refused() {
    on_both(|fs, root| {
        let dir = root.join("t-0");
        let config = compact(&[("segment.bytes", "600")]);
        let mut log = open(&fs, &dir, &config).unwrap();
        for i in 0..40 {
            log.append(&[rec(1000 + i, format!("k{i}"), "value")])
                .unwrap();
        }
        log.close().unwrap();
        let bases: Vec<i64> = open(&fs, &dir, &config)
            .unwrap()
            .segments()
            .map(|s| s.base_offset())
            .collect();
        assert!(bases.len() >= 3);
        let missing = log_path(&dir, bases[1]);
        fs.remove_file(&missing).unwrap();
        let err = open(&fs, &dir, &config).unwrap_err();
        assert!(matches!(err, Error::MissingSegment { .. }), "{err}");
        assert_eq!(err.file_offset(), Some((missing.as_path(), 0)));
        assert!(fs.exists(&dir.join(file_name(bases[1], FileKind::Index, Suffix::None))));
    });
}

/// Damage the cleaner finds in a log it already has open (a magic byte, a
/// CRC) aborts that log's round: nothing is swapped in, the checkpoint
/// does not move, the log is uncleanable with the file and byte offset
/// named, and the other logs are cleaned.
#[test]
fn damage_found_while_cleaning_refuses_the_round_and_spares_the_other_logs() {
    // A bad magic byte; a CRC mismatch (a byte of the base timestamp); a
    // base offset (outside the CRC) that goes backwards.
    for (what, at, value) in [
        ("magic", 16usize, 0xffu8),
        ("crc", 30, 0x5a),
        ("offset", 2, 0x10),
    ] {
        let fs = MemFs::new();
        let clock = Arc::new(ManualClock::at_ms(10_000));
        let cleaner_config =
            CleanerConfig::from_properties([("log.cleaner.dedupe.buffer.size", "65536")]).unwrap();
        let svc = LogCleaner::new(cleaner_config, Arc::new(fs.clone()), clock);
        let c = compact(&[("segment.bytes", "2000"), ("index.interval.bytes", "200")]);
        for name in ["bad-0", "good-0"] {
            let mut log =
                common::open(Arc::new(fs.clone()), &format!("/data/{name}"), c.clone(), 0);
            for i in 0..80 {
                log.append(&[rec(1000 + i, format!("k{}", i % 7), format!("v{i}"))])
                    .unwrap();
            }
            log.roll().unwrap();
            svc.add_log(shared_log(log)).unwrap();
        }
        // The second segment's first batch, in place (the open log's handle
        // sees it).
        let seg = svc
            .manager()
            .log(&TopicPartition::new("bad", 0))
            .unwrap()
            .lock()
            .segments()
            .nth(1)
            .unwrap()
            .log_path()
            .to_path_buf();
        let mut f = fs.open_append(&seg).unwrap();
        f.write_at(at as u64, &[value]).unwrap();
        drop(f);
        let bad_dir = Path::new("/data/bad-0");
        let before = files(&fs, bad_dir);

        let events = svc.clean_eligible_once().unwrap();
        let cleaned: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                CleanerEvent::Cleaned(r) => Some(r.topic_partition.to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(cleaned, ["good-0"], "{what}: {events:?}");
        let failure = events
            .iter()
            .find(|e| matches!(e, CleanerEvent::Failed { .. }))
            .unwrap()
            .to_string();
        assert!(
            failure.contains(&seg.display().to_string()) && failure.contains("byte offset"),
            "{what}: {failure}"
        );
        let uncleanable = svc.manager().uncleanable_partitions();
        assert!(
            uncleanable.contains_key(&TopicPartition::new("bad", 0)),
            "{what}"
        );
        assert_eq!(files(&fs, bad_dir), before, "{what}: no segment replaced");
        let cp = checkpoint::read(&fs, Path::new("/data")).unwrap();
        assert!(
            !cp.contains_key(&TopicPartition::new("bad", 0)),
            "{what}: {cp:?}"
        );
        assert!(
            cp.contains_key(&TopicPartition::new("good", 0)),
            "{what}: {cp:?}"
        );
        // A read of the damaged batch is refused the same way.
        let log = svc.manager().log(&TopicPartition::new("bad", 0)).unwrap();
        let log = log.lock();
        let err = log.records_from(0).unwrap().find_map(Result::err).unwrap();
        assert_eq!(
            err.file_offset().map(|(p, _)| p),
            Some(seg.as_path()),
            "{what}"
        );
    }
}

/// Kafka's cleaner grows its read buffer to the next batch's size
/// (`growBuffersOrFail`), so a valid batch larger than the topic's
/// `max.message.bytes`, lowered after it was written, is cleaned.
#[test]
fn a_valid_batch_larger_than_a_lowered_max_message_bytes_is_cleaned() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let big = compact(&[("max.message.bytes", "10000000")]);
    let mut log = common::open(fs.clone(), "/data/big-0", big, 0);
    let records: Vec<SimpleRecord> = (0..40)
        .map(|i| rec(1000 + i, format!("k{}", i % 4), "x".repeat(40_000)))
        .collect();
    let info = log.append(&records).unwrap();
    assert!(info.size > 1_048_588, "{}", info.size);
    log.append(&[rec(2000, "k0", "last")]).unwrap();
    log.close().unwrap();
    // The limit is lowered; the cleaner's own message.max.bytes is small.
    let small = compact(&[("max.message.bytes", "1000")]);
    let log = Mutex::new(common::open(fs.clone(), "/data/big-0", small, 0));
    let mut cleaner = common::cleaner(1 << 16, "0.75");
    log.lock().roll().unwrap();
    let ltc = LogToClean::from_log(&log.lock(), None, 5000).unwrap();
    let out = cleaner.clean(&log, &ltc, 5000, &|| Ok(())).unwrap();
    assert_eq!(out.report.end_offset, 41);
    let kept: Vec<_> = contents(&log.lock())
        .into_iter()
        .map(|(o, k, _)| (o, k.unwrap()))
        .collect();
    assert_eq!(
        kept,
        [
            (37, "k1".into()),
            (38, "k2".into()),
            (39, "k3".into()),
            (40, "k0".into())
        ]
    );
}

/// `Log::close` leaves the active segment's indexes trimmed to their
/// entries (Kafka's `AbstractIndex.close` -> `trimToValidSize`), with the
/// time index's final entry; a dropped log trims them too, best effort.
#[test]
fn closing_or_dropping_a_log_trims_the_active_segment_indexes() {
    on_both(|fs, root| {
        let config = compact(&[("index.interval.bytes", "100")]);
        for close in [true, false] {
            let dir = root.join(if close { "closed-0" } else { "dropped-0" });
            let mut log = open(&fs, &dir, &config).unwrap();
            for i in 0..30 {
                log.append(&[rec(1000 + i, format!("k{i}"), "value")])
                    .unwrap();
            }
            let entries = log.active_segment().offset_index().len();
            assert!(entries > 2);
            let index = dir.join(file_name(0, FileKind::Index, Suffix::None));
            let time = dir.join(file_name(0, FileKind::TimeIndex, Suffix::None));
            assert_eq!(
                fs.file_size(&index).unwrap(),
                1024,
                "preallocated while open"
            );
            let time_entries = log.active_segment().time_index().len();
            if close {
                log.close().unwrap();
                // The final time-index entry: the largest timestamp.
                assert_eq!(fs.file_size(&time).unwrap(), 12 * (time_entries as u64 + 1));
                let bytes = read_file(&*fs, &time).unwrap();
                let last = i64::from_be_bytes(bytes[bytes.len() - 12..][..8].try_into().unwrap());
                assert_eq!(last, 1029);
            } else {
                drop(log);
                assert_eq!(fs.file_size(&time).unwrap(), 12 * time_entries as u64);
            }
            assert_eq!(fs.file_size(&index).unwrap(), 8 * entries as u64);
            // Reopened, the log is whole and its index preallocated again.
            let log = open(&fs, &dir, &config).unwrap();
            assert_eq!(log.log_end_offset(), 30);
            assert!(log.recovery_report().truncations.is_empty());
            assert_eq!(fs.file_size(&index).unwrap(), 1024);
        }
    });
}

/// Flush, roll and close record the recovery point in the data
/// directory's `recovery-point-offset-checkpoint`, one line per log.
#[test]
fn the_recovery_point_is_checkpointed_by_flush_roll_and_close() {
    on_both(|fs, root| {
        let config = compact(&[]);
        let cp = || {
            recovery_points::read_file(&*fs, &root.join(recovery_points::RECOVERY_POINT_FILE_NAME))
                .unwrap()
        };
        let mut a = open(&fs, &root.join("a-0"), &config).unwrap();
        let mut b = open(&fs, &root.join("b-3"), &config).unwrap();
        a.append(&[rec(1, "k", "v"), rec(2, "k", "v")]).unwrap();
        b.append(&[rec(1, "k", "v")]).unwrap();
        assert!(cp().is_empty(), "appends alone are not flushed");
        a.flush().unwrap();
        assert_eq!(cp(), BTreeMap::from([(TopicPartition::new("a", 0), 2)]));
        b.append(&[rec(2, "k", "v")]).unwrap();
        b.roll().unwrap();
        a.append(&[rec(3, "k", "v")]).unwrap();
        a.close().unwrap();
        assert_eq!(
            cp(),
            BTreeMap::from([
                (TopicPartition::new("a", 0), 3),
                (TopicPartition::new("b", 3), 2)
            ])
        );
        drop(b);
        // A directory not named <topic>-<partition> has no line.
        let mut c = open(&fs, &root.join("plain"), &config).unwrap();
        c.append(&[rec(1, "k", "v")]).unwrap();
        c.close().unwrap();
        assert_eq!(cp().len(), 2);
    });
}

/// An offset-index entry damaged in a way that keeps the index
/// well-formed (a position off by one) is not caught at open (nor is it by
/// Kafka); a read through it checks the batch it points at and scans the
/// segment instead, losing nothing.
#[test]
fn a_damaged_index_entry_is_not_trusted_by_reads() {
    on_both(|fs, root| {
        let dir = root.join("t-0");
        let config = compact(&[("segment.bytes", "4000"), ("index.interval.bytes", "100")]);
        let mut log = open(&fs, &dir, &config).unwrap();
        for i in 0..80 {
            log.append(&[rec(1000 + i, format!("k{i}"), "value")])
                .unwrap();
        }
        log.close().unwrap();
        let want = contents(&open(&fs, &dir, &config).unwrap());
        let index = dir.join(file_name(0, FileKind::Index, Suffix::None));
        let mut bytes = read_file(&*fs, &index).unwrap();
        assert!(bytes.len() >= 24);
        bytes[15] ^= 1; // the second entry's position
        write_in_place(&*fs, &index, &bytes);
        let log = open(&fs, &dir, &config).unwrap();
        assert!(log.recovery_report().rebuilt_indexes.is_empty());
        for from in 0..want.len() {
            let got: Vec<_> = log
                .records_from(from as i64)
                .unwrap()
                .map(|r| r.unwrap().offset)
                .collect();
            let expected: Vec<_> = want[from..].iter().map(|r| r.0).collect();
            assert_eq!(got, expected, "from {from}");
        }
    });
}
