//! Crash recovery: torn writes at every byte, power loss on `MemFs`, bit
//! flips in old batches, damaged or missing indexes, every crash point of
//! the `.cleaned` -> `.swap` -> `.deleted` segment replacement, and old
//! message formats that must not be truncated.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lithify_kafka_log::codec::Compression;
use lithify_kafka_log::naming::{FileKind, Suffix, file_name};
use lithify_kafka_log::record::{BatchPrefix, SimpleRecord};
use lithify_kafka_log::{Error, Log, LogConfig, LogSegment, ManualClock, OpenOptions};
use lithify_vfs::{FileSystem, MemFs, read_file, write_file_atomic};

const DIR: &str = "/kafka/t-0";

fn dir() -> &'static Path {
    Path::new(DIR)
}

fn path(base: i64, kind: FileKind, suffix: Suffix) -> PathBuf {
    dir().join(file_name(base, kind, suffix))
}

fn open(fs: &MemFs, c: &LogConfig) -> Log {
    Log::open(Arc::new(fs.clone()), dir(), c.clone()).unwrap()
}

fn open_recovering_all(fs: &MemFs, c: &LogConfig) -> Result<Log, Error> {
    let options = OpenOptions::default()
        .recovery_point(Some(0))
        .clock(Arc::new(ManualClock::at_ms(0)));
    Log::open_with(Arc::new(fs.clone()), dir(), c.clone(), options)
}

fn rec(i: i64) -> SimpleRecord {
    SimpleRecord::new(1000 + i, format!("key-{}", i % 4), format!("value-{i}"))
        .with_header("h", Some(bytes::Bytes::from(format!("{i}"))))
}

fn contents(log: &Log) -> Vec<(i64, Vec<u8>, Option<Vec<u8>>)> {
    log.records_from(log.log_start_offset())
        .unwrap()
        .map(|r| {
            let r = r.unwrap();
            (
                r.offset,
                r.key.unwrap().to_vec(),
                r.value.map(|v| v.to_vec()),
            )
        })
        .collect()
}

fn config(codec: Compression) -> LogConfig {
    LogConfig::from_properties([
        ("compression.type", codec.name()),
        ("index.interval.bytes", "40"),
        ("segment.index.bytes", "240"),
    ])
    .unwrap()
}

/// A copy of `fs`'s files (current contents) into a new `MemFs`, with the
/// `.log` of segment `base` cut to `cut` bytes; everything durable.
fn copy_with_cut(fs: &MemFs, base: i64, cut: usize) -> MemFs {
    let out = MemFs::new();
    out.create_dir_all(dir()).unwrap();
    out.sync_dir(Path::new("/")).unwrap();
    out.sync_dir(Path::new("/kafka")).unwrap();
    for name in fs.list_dir(dir()).unwrap() {
        let p = dir().join(&name);
        let mut data = read_file(fs, &p).unwrap();
        if p == path(base, FileKind::Log, Suffix::None) {
            data.truncate(cut);
        }
        write_file_atomic(&out, &p, &data).unwrap();
    }
    out
}

#[test]
fn a_torn_last_batch_at_every_byte_recovers_every_complete_batch() {
    for codec in [Compression::None, Compression::Zstd] {
        let fs = MemFs::new();
        let c = config(codec);
        let mut log = open(&fs, &c);
        for n in 0..6 {
            log.append(&(n * 3..n * 3 + 3).map(rec).collect::<Vec<_>>())
                .unwrap();
        }
        let before_last = log.log_end_offset();
        let last_start = log.active_segment().size() as usize;
        log.append(&(18..21).map(rec).collect::<Vec<_>>()).unwrap();
        log.flush().unwrap();
        let full = contents(&log);
        let total = log.active_segment().size() as usize;
        let entries_before: Vec<_> = log.active_segment().offset_index().entries().collect();
        drop(log);

        for cut in last_start..=total {
            let copy = copy_with_cut(&fs, 0, cut);
            let mut log = open(&copy, &c);
            let complete = cut == total;
            let want_end = if complete { 21 } else { before_last };
            assert_eq!(log.log_end_offset(), want_end, "{codec} cut at {cut}");
            assert_eq!(
                contents(&log),
                full[..want_end as usize],
                "{codec} cut at {cut}"
            );
            let kept = if complete { total } else { last_start };
            assert_eq!(
                copy.file_size(&path(0, FileKind::Log, Suffix::None))
                    .unwrap(),
                kept as u64
            );
            let r0 = &log.recovery_report().recovered[0];
            assert_eq!(
                (r0.valid_bytes, r0.truncated_bytes),
                (kept as u64, (cut - kept) as u64)
            );
            assert_eq!(r0.reason.is_some(), cut != kept);
            // The rebuilt index equals the one written by the appends.
            let entries: Vec<_> = log.active_segment().offset_index().entries().collect();
            let want: Vec<_> = entries_before
                .iter()
                .copied()
                .filter(|e| u64::from(e.position) < kept as u64)
                .collect();
            assert_eq!(entries, want, "{codec} cut at {cut}");
            // The log goes on from there and survives a crash once flushed.
            log.append(&[rec(99)]).unwrap();
            log.flush().unwrap();
            drop(log);
            copy.crash();
            let log = open(&copy, &c);
            assert_eq!(log.log_end_offset(), want_end + 1);
        }
    }
}

#[test]
fn power_loss_keeps_flushed_batches_and_a_prefix_of_the_rest() {
    for seed in 0..40u64 {
        let fs = MemFs::new();
        fs.set_torn_tails(Some(seed));
        let c = config(Compression::Lz4);
        let mut log = open(&fs, &c);
        for i in 0..5 {
            log.append(&[rec(i)]).unwrap();
        }
        log.flush().unwrap();
        for i in 5..12 {
            log.append(&[rec(i), rec(i + 100)]).unwrap();
        }
        let full = contents(&log);
        drop(log);
        fs.crash();
        let log = open(&fs, &c);
        let got = contents(&log);
        assert!(got.len() >= 5, "seed {seed}: flushed records lost");
        assert_eq!(got, full[..got.len()], "seed {seed}");
        assert_eq!(log.log_end_offset() as usize, got.len());
        assert_eq!((got.len() - 5) % 2, 0, "seed {seed}: whole batches only");
    }
}

/// A log of three segments; returns it with the records it holds.
fn three_segments(fs: &MemFs, c: &LogConfig) -> Vec<(i64, Vec<u8>, Option<Vec<u8>>)> {
    let mut log = open(fs, c);
    for seg in 0..3 {
        for n in 0..4 {
            let first = seg * 8 + n * 2;
            log.append(&[rec(first), rec(first + 1)]).unwrap();
        }
        if seg < 2 {
            log.roll().unwrap();
        }
    }
    log.flush().unwrap();
    let out = contents(&log);
    assert_eq!(
        log.segment_infos()
            .iter()
            .map(|s| s.base_offset)
            .collect::<Vec<_>>(),
        [0, 8, 16]
    );
    out
}

#[test]
fn a_flipped_bit_in_an_old_batch_is_found_by_recovering_that_segment() {
    let c = config(Compression::Gzip);
    let base = MemFs::new();
    let full = three_segments(&base, &c);
    let log_path = path(0, FileKind::Log, Suffix::None);
    let bytes = read_file(&base, &log_path).unwrap();
    let first = BatchPrefix::parse(&bytes).unwrap().batch_size().unwrap() as usize;
    let second = BatchPrefix::parse(&bytes[first..])
        .unwrap()
        .batch_size()
        .unwrap() as usize;
    // Every bit of the second batch from the magic byte on (CRC field,
    // CRC-covered bytes): baseOffset, length and the partition leader
    // epoch are outside Kafka's CRC.
    for byte in first + 16..first + second {
        for bit in [0, 3, 7] {
            let copy = copy_with_cut(&base, 0, usize::MAX);
            let mut damaged = bytes.clone();
            damaged[byte] ^= 1 << bit;
            write_file_atomic(&copy, &log_path, &damaged).unwrap();

            // Without a recovery point the old segment is not re-read...
            let log = open(&copy, &c);
            assert_eq!(log.log_end_offset(), 24);
            drop(log);
            // ...with one, recovery finds the damage and, as Kafka does,
            // ends the log at the last valid batch before it.
            let log = open_recovering_all(&copy, &c).unwrap();
            let report = log.recovery_report();
            let seg0 = report
                .recovered
                .iter()
                .find(|r| r.base_offset == 0)
                .unwrap();
            assert_eq!(seg0.valid_bytes, first as u64, "byte {byte} bit {bit}");
            let reason = seg0.reason.as_deref().unwrap();
            assert!(reason.contains(&log_path.display().to_string()), "{reason}");
            assert_eq!(report.removed_after_corruption, [8, 16]);
            assert_eq!(log.log_end_offset(), 2);
            assert_eq!(contents(&log), full[..2]);
        }
    }
}

#[test]
fn missing_or_damaged_indexes_are_rebuilt_identically() {
    let c = config(Compression::Snappy);
    let base = MemFs::new();
    three_segments(&base, &c);
    let index = path(8, FileKind::Index, Suffix::None);
    let time = path(8, FileKind::TimeIndex, Suffix::None);
    let want_index = read_file(&base, &index).unwrap();
    let want_time = read_file(&base, &time).unwrap();
    assert!(!want_index.is_empty(), "the test needs index entries");
    type Damage = fn(&MemFs, &Path);
    let damages: [(&str, Damage); 4] = [
        ("missing offset index", |fs, p| fs.remove_file(p).unwrap()),
        ("odd-sized offset index", |fs, p| {
            write_file_atomic(fs, p, &[0; 7]).unwrap()
        }),
        ("offset index past the log", |fs, p| {
            write_file_atomic(fs, p, &[0, 0, 0, 1, 0x7f, 0, 0, 0]).unwrap()
        }),
        ("missing time index", |fs, p| {
            let t = p.with_extension("timeindex");
            fs.remove_file(&t).unwrap()
        }),
    ];
    for (what, damage) in damages {
        let copy = copy_with_cut(&base, -1, 0);
        damage(&copy, &index);
        let log = open(&copy, &c);
        assert_eq!(log.recovery_report().rebuilt_indexes.len(), 1, "{what}");
        assert_eq!(log.recovery_report().rebuilt_indexes[0].0, 8, "{what}");
        assert_eq!(read_file(&copy, &index).unwrap(), want_index, "{what}");
        assert_eq!(read_file(&copy, &time).unwrap(), want_time, "{what}");
        assert_eq!(log.log_end_offset(), 24);
    }
    // An index without its .log is removed.
    let copy = copy_with_cut(&base, -1, 0);
    let orphan = path(40, FileKind::Index, Suffix::None);
    write_file_atomic(&copy, &orphan, &[]).unwrap();
    let log = open(&copy, &c);
    assert!(!copy.exists(&orphan));
    assert!(log.recovery_report().deleted_files.contains(&file_name(
        40,
        FileKind::Index,
        Suffix::None
    )));
}

#[test]
fn an_old_message_format_is_an_error_not_a_truncation() {
    let fs = MemFs::new();
    let c = LogConfig::default();
    drop(open(&fs, &c));
    // A magic-1 message (offset 0, size 26) as Kafka 0.10 wrote it.
    let mut v1 = vec![0u8; 12 + 26];
    v1[8..12].copy_from_slice(&26i32.to_be_bytes());
    v1[16] = 1;
    let p = path(0, FileKind::Log, Suffix::None);
    write_file_atomic(&fs, &p, &v1).unwrap();
    let err = Log::open(Arc::new(fs.clone()), dir(), c).unwrap_err();
    assert!(
        matches!(
            err,
            Error::UnsupportedMagic {
                magic: 1,
                offset: 16,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        read_file(&fs, &p).unwrap(),
        v1,
        "valid old data is never truncated"
    );
}

/// The steps of replacing segments 0 and 8 by one cleaned segment at 0,
/// in Kafka's order, each a separate directory operation.
/// One directory operation of the swap.
type Step = Box<dyn Fn(&MemFs)>;

fn swap_steps() -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let kinds = [FileKind::Log, FileKind::Index, FileKind::TimeIndex];
    for kind in kinds {
        steps.push(Box::new(move |fs: &MemFs| {
            fs.rename(
                &path(0, kind, Suffix::Cleaned),
                &path(0, kind, Suffix::Swap),
            )
            .unwrap()
        }));
    }
    for old in [0, 8] {
        for kind in kinds {
            steps.push(Box::new(move |fs: &MemFs| {
                fs.rename(
                    &path(old, kind, Suffix::None),
                    &path(old, kind, Suffix::Deleted),
                )
                .unwrap()
            }));
        }
    }
    for kind in kinds {
        steps.push(Box::new(move |fs: &MemFs| {
            fs.rename(&path(0, kind, Suffix::Swap), &path(0, kind, Suffix::None))
                .unwrap()
        }));
    }
    for old in [0, 8] {
        for kind in kinds {
            steps.push(Box::new(move |fs: &MemFs| {
                fs.remove_file(&path(old, kind, Suffix::Deleted)).unwrap()
            }));
        }
    }
    steps
}

#[test]
fn every_crash_point_of_a_segment_swap_yields_the_old_or_the_new_log() {
    let c = config(Compression::None);
    let fs = MemFs::new();
    let old = three_segments(&fs, &c);
    // The cleaned segment: the latest record per key of segments 0 and 8,
    // copied as whole batches (keys repeat every 4 offsets, so only the
    // last two batches of segment 8 hold the latest versions).
    let log = open(&fs, &c);
    let keep: Vec<_> = log
        .batches_from(0)
        .unwrap()
        .map(Result::unwrap)
        .filter(|b| b.base_offset() >= 12 && b.last_offset() < 16)
        .collect();
    drop(log);
    let mut cleaned =
        LogSegment::create(Arc::new(fs.clone()), dir(), 0, Suffix::Cleaned, &c, 0).unwrap();
    for b in &keep {
        cleaned
            .append(b.last_offset(), b.max_timestamp(), b.last_offset(), b.raw())
            .unwrap();
    }
    cleaned.on_become_inactive().unwrap();
    drop(cleaned);
    fs.sync_dir(dir()).unwrap();
    let new: Vec<_> = old.iter().filter(|r| r.0 >= 12).cloned().collect();

    let steps = swap_steps();
    // Before step k, crash (every step's directory change made durable).
    for k in 0..=steps.len() {
        let state = fs.crash_clone();
        for step in &steps[..k] {
            step(&state);
        }
        state.sync_dir(dir()).unwrap();
        let log = open(&state, &c);
        let got = contents(&log);
        // Kafka's rules: while any file is still .cleaned, the swap rolls
        // back; once all new files are .swap, it completes.
        let want = if k < 3 { &old } else { &new };
        assert_eq!(&got, want, "crash before step {k}");
        let names = state.list_dir(dir()).unwrap();
        assert!(
            names.iter().all(|n| !n.contains(".cleaned")
                && !n.contains(".swap")
                && !n.contains(".deleted")),
            "step {k}: {names:?}"
        );
        assert_eq!(log.log_end_offset(), 24);
        if k >= 3 {
            assert_eq!(
                log.segment_infos()
                    .iter()
                    .map(|s| s.base_offset)
                    .collect::<Vec<_>>(),
                [0, 16]
            );
        }
    }
}

#[test]
fn a_swap_left_behind_a_newer_cleaned_file_is_rolled_back() {
    // Kafka's KAFKA-6264 rule: a .swap at or above the smallest .cleaned
    // base offset belongs to an unfinished operation and is removed.
    let c = config(Compression::None);
    let fs = MemFs::new();
    let old = three_segments(&fs, &c);
    let mut s = LogSegment::create(Arc::new(fs.clone()), dir(), 8, Suffix::Swap, &c, 0).unwrap();
    s.on_become_inactive().unwrap();
    drop(s);
    let mut s = LogSegment::create(Arc::new(fs.clone()), dir(), 0, Suffix::Cleaned, &c, 0).unwrap();
    s.on_become_inactive().unwrap();
    drop(s);
    let log = open(&fs, &c);
    assert_eq!(contents(&log), old);
    let deleted = &log.recovery_report().deleted_files;
    assert!(
        deleted.contains(&file_name(8, FileKind::Log, Suffix::Swap)),
        "{deleted:?}"
    );
    assert!(
        deleted.contains(&file_name(0, FileKind::Log, Suffix::Cleaned)),
        "{deleted:?}"
    );
}
