//! The damage matrix of the Kafka files (issue 18): one test per file kind
//! and damage, each run on `MemFs` and on real files, each asserting one
//! outcome:
//!
//! * **refused**: an error naming the file and byte offset, at open or at
//!   the first read or cleaning round that touches the bytes, and nothing
//!   on disk changed;
//! * **recovered**: only above the recovery point (bytes never flushed):
//!   the log is truncated at the first invalid batch, the report lists the
//!   file, byte offset, bytes and first offset dropped, and the dropped
//!   bytes are kept under the partition's `lost/`;
//! * **rebuilt**: a derived file (`.index`, `.timeindex`, `.txnindex`)
//!   rebuilt from the `.log`, byte for byte what it was, nothing lost;
//!   **kept**: a derived file damaged in a way that loses nothing (a valid
//!   shorter index) is used as it is;
//! * for a producer snapshot: **replayed** (a snapshot that does not
//!   decode is removed and reported, the state is replayed from the log,
//!   exactly what it was, and the snapshot taken again, byte for byte);
//! * for `cleaner-offset-checkpoint`: **offline** (Kafka's behaviour for a
//!   file it cannot read: the data directory is not cleaned, the file is
//!   kept as it is, the error names its line and byte offset) or **cleaned
//!   from another offset** (a missing or still-readable file: the logs are
//!   cleaned from their start or from the offset read, which loses
//!   nothing: every key keeps its latest value).
//!
//! Never: an open or a round that succeeds with fewer records and nothing
//! in its report. In every log cell, `lithify_kafka_log::verify` (what
//! `lithify log check` runs) agrees before the open: a problem naming the
//! segment for what is refused, a warning at most for the rest, and
//! nothing on disk changed.
//!
//! **Concurrent Kafka writers** (issue 34): a `Log` or a cleaner holds the
//! log first; a second `Log::open`, a second cleaner of the data directory
//! or a read-only check is refused with `Error::InUse` naming the
//! directory, nothing changes, the first goes on; afterwards the second
//! gets in and every record is there.
//!
//! The fixture: `t-0` has two flushed inactive segments (the second is
//! "the flushed segment" below) and an active segment whose first two
//! batches were flushed (the recovery point) and whose last six were
//! appended after that. The checkpoint cells use `t-0` and `u-0`, cleaned
//! once, then appended to. The transaction cells use a log of
//! transactional producers (see [`build_txn_log`]): the `.txnindex` of
//! its first segment (two aborted transactions) and the producer snapshot
//! at its active segment's base.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use lithify_compaction_logclean::checkpoint;
use lithify_compaction_logclean::{CleanerConfig, CleanerEvent, LogCleaner};
use lithify_kafka_log::TopicPartition;
use lithify_kafka_log::naming::{FileKind, Suffix, file_name};
use lithify_kafka_log::record::{BatchPrefix, SimpleRecord, TransactionResult};
use lithify_kafka_log::shared_log;
use lithify_kafka_log::{Log, LogConfig, ManualClock, OpenOptions, Producer, ProducerStateEntry};
use lithify_vfs::{FileSystem, MemFs, OsFs, read_file, write_file_atomic};

/// The files damaged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The `.log` of an inactive segment below the recovery point.
    FlushedLog,
    /// The `.log` of the active segment: flushed, then appended to.
    ActiveLog,
    /// The `.index` of the flushed inactive segment.
    OffsetIndex,
    /// The `.timeindex` of the flushed inactive segment.
    TimeIndex,
    /// The data directory's `cleaner-offset-checkpoint`.
    CleanerCheckpoint,
    /// The `.txnindex` of a flushed segment holding two aborts.
    TxnIndex,
    /// The producer snapshot at the active segment's base.
    ProducerSnapshot,
}

/// What is done to the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Damage {
    Missing,
    Empty,
    /// Cut inside the header (a batch header, the first index entry, the
    /// version line).
    CutHeader,
    /// Cut in the middle of the first unit (batch, entry, entry line).
    CutFirst,
    /// Cut in the middle of the middle unit.
    CutMiddle,
    /// Cut in the middle of the last unit.
    CutLast,
    /// The last byte cut.
    CutLastByte,
    /// A bit flipped in the header (a magic byte, the first entry, the
    /// version).
    FlipHeader,
    /// A bit flipped in the middle of the body.
    FlipBody,
    /// A bit flipped in the last byte.
    FlipFooter,
    /// The whole file replaced by random bytes of the same length.
    Random,
}

/// The one outcome a cell asserts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    RefusedAtOpen,
    RefusedWhenRead,
    Recovered,
    Rebuilt,
    Kept,
    Offline,
    CleanedFromAnotherOffset,
    Replayed,
}

const TS: i64 = 1_000_000;

fn config() -> LogConfig {
    LogConfig::from_properties([
        ("cleanup.policy", "compact"),
        ("segment.index.bytes", "1024"),
        ("index.interval.bytes", "150"),
    ])
    .unwrap()
}

fn open(fs: &Arc<dyn FileSystem>, dir: &Path) -> lithify_kafka_log::Result<Log> {
    let options = OpenOptions::default()
        .recovery_point(None)
        .clock(Arc::new(ManualClock::at_ms(TS)));
    Log::open_with(fs.clone(), dir, config(), options)
}

type Records = Vec<(i64, String, Option<String>)>;

fn records(log: &Log) -> lithify_kafka_log::Result<Records> {
    log.records_from(log.log_start_offset())?
        .map(|r| {
            r.map(|r| {
                let s = |b: bytes::Bytes| String::from_utf8(b.to_vec()).unwrap();
                (r.offset, s(r.key.unwrap()), r.value.map(s))
            })
        })
        .collect()
}

fn append_batches(log: &mut Log, n: usize, next: &mut i64) {
    for _ in 0..n {
        let batch: Vec<SimpleRecord> = (0..3)
            .map(|_| {
                let i = *next;
                *next += 1;
                SimpleRecord::new(TS + i, format!("k{}", i % 10), format!("value-{i}"))
            })
            .collect();
        log.append(&batch).unwrap();
    }
}

/// The log `<root>/<name>`: two inactive segments of 12 batches, then an
/// active segment of 2 flushed and 6 unflushed batches. Returns its
/// records and the segments' base offsets.
fn build_log(fs: &Arc<dyn FileSystem>, root: &Path, name: &str) -> (Records, Vec<i64>) {
    let mut log = open(fs, &root.join(name)).unwrap();
    let mut next = 0;
    append_batches(&mut log, 12, &mut next);
    log.roll().unwrap();
    append_batches(&mut log, 12, &mut next);
    log.roll().unwrap();
    append_batches(&mut log, 2, &mut next);
    log.flush().unwrap();
    append_batches(&mut log, 6, &mut next);
    let recs = records(&log).unwrap();
    let bases = log.segments().map(|s| s.base_offset()).collect();
    drop(log);
    (recs, bases)
}

fn cleaner(fs: &Arc<dyn FileSystem>, now: i64) -> LogCleaner {
    let config =
        CleanerConfig::from_properties([("log.cleaner.dedupe.buffer.size", "65536")]).unwrap();
    LogCleaner::new(config, fs.clone(), Arc::new(ManualClock::at_ms(now)))
}

/// The checkpoint fixture: `t-0` and `u-0` built, cleaned once, then
/// appended to and rolled, so both are dirty again.
fn build_cleaned(fs: &Arc<dyn FileSystem>, root: &Path) {
    for name in ["t-0", "u-0"] {
        build_log(fs, root, name);
    }
    let svc = cleaner(fs, TS + 10_000);
    for name in ["t-0", "u-0"] {
        let mut log = open(fs, &root.join(name)).unwrap();
        log.roll().unwrap();
        svc.add_log(shared_log(log)).unwrap();
    }
    let events = svc.clean_eligible_once().unwrap();
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, CleanerEvent::Cleaned(_)))
            .count(),
        2,
        "{events:?}"
    );
    drop(svc);
    for name in ["t-0", "u-0"] {
        let mut log = open(fs, &root.join(name)).unwrap();
        let mut next = log.log_end_offset();
        append_batches(&mut log, 6, &mut next);
        log.roll().unwrap();
        log.close().unwrap();
    }
}

/// Byte ranges of the file's units: batches of a `.log`, entries of an
/// index, lines of a checkpoint.
fn units(kind: Kind, bytes: &[u8]) -> Vec<(usize, usize)> {
    match kind {
        Kind::FlushedLog | Kind::ActiveLog => {
            let mut out = Vec::new();
            let mut pos = 0;
            while pos < bytes.len() {
                let size = BatchPrefix::parse(&bytes[pos..])
                    .unwrap()
                    .batch_size()
                    .unwrap() as usize;
                out.push((pos, pos + size));
                pos += size;
            }
            out
        }
        Kind::OffsetIndex | Kind::TimeIndex => {
            let size = if kind == Kind::OffsetIndex { 8 } else { 12 };
            (0..bytes.len() / size)
                .map(|i| (i * size, i * size + size))
                .collect()
        }
        Kind::TxnIndex => (0..bytes.len() / 34)
            .map(|i| (i * 34, i * 34 + 34))
            .collect(),
        Kind::ProducerSnapshot => (0..(bytes.len() - 10) / 46)
            .map(|i| (10 + i * 46, 10 + i * 46 + 46))
            .collect(),
        Kind::CleanerCheckpoint => {
            let mut out = Vec::new();
            let mut start = 0;
            for (i, b) in bytes.iter().enumerate() {
                if *b == b'\n' {
                    out.push((start, i + 1));
                    start = i + 1;
                }
            }
            // The entry lines: after the version and count lines.
            out.split_off(2)
        }
    }
}

/// `bytes` damaged by `damage`; `None` for a removed file.
fn damaged(kind: Kind, damage: Damage, bytes: &[u8]) -> Option<Vec<u8>> {
    let u = units(kind, bytes);
    assert!(u.len() >= 2, "{kind:?} has {} units", u.len());
    let (first, last, middle) = (u[0], u[u.len() - 1], u[u.len() / 2]);
    let mid = |(a, b): (usize, usize)| (a + b) / 2;
    let cut = |at: usize| Some(bytes[..at].to_vec());
    let flip = |at: usize, bit: u8| {
        let mut b = bytes.to_vec();
        b[at] ^= 1 << bit;
        Some(b)
    };
    match damage {
        Damage::Missing => None,
        Damage::Empty => Some(Vec::new()),
        Damage::CutHeader => cut(match kind {
            Kind::FlushedLog | Kind::ActiveLog => 20,
            Kind::OffsetIndex | Kind::TimeIndex | Kind::TxnIndex => 2,
            Kind::CleanerCheckpoint => 1,
            Kind::ProducerSnapshot => 5,
        }),
        Damage::CutFirst => cut(mid(first)),
        Damage::CutMiddle => cut(mid(middle)),
        Damage::CutLast => cut(mid(last)),
        Damage::CutLastByte => cut(bytes.len() - 1),
        Damage::FlipHeader => match kind {
            // The first batch's magic byte: 2 becomes 0x82.
            Kind::FlushedLog | Kind::ActiveLog => flip(16, 7),
            // The top of the first entry's relative offset or timestamp;
            // a transaction entry's or a snapshot's version.
            Kind::OffsetIndex | Kind::TimeIndex | Kind::TxnIndex | Kind::ProducerSnapshot => {
                flip(0, 6)
            }
            // The version: "0" becomes "1".
            Kind::CleanerCheckpoint => flip(0, 0),
        },
        Damage::FlipBody => match kind {
            Kind::FlushedLog | Kind::ActiveLog => flip(bytes.len() / 2, 4),
            // The lowest bit of the middle entry (a position, an offset).
            Kind::OffsetIndex | Kind::TimeIndex | Kind::ProducerSnapshot => flip(middle.1 - 1, 0),
            // The sign of the middle entry's producer id.
            Kind::TxnIndex => flip(middle.0 + 2, 7),
            // The last digit of an entry's offset: still a number, so the
            // file reads, with another offset.
            Kind::CleanerCheckpoint => flip(middle.1 - 2, 0),
        },
        Damage::FlipFooter => flip(bytes.len() - 1, 0),
        Damage::Random => {
            let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ bytes.len() as u64;
            Some(
                (0..bytes.len())
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        (x >> 24) as u8
                    })
                    .collect(),
            )
        }
    }
}

/// Every plain file of `dir` and its bytes.
fn files(fs: &dyn FileSystem, dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fs.list_dir(dir)
        .unwrap()
        .into_iter()
        .filter(|n| !fs.is_dir(&dir.join(n)))
        .map(|n| {
            let b = read_file(fs, &dir.join(&n)).unwrap();
            (n, b)
        })
        .collect()
}

/// Asserts two snapshots of a directory are equal, naming the files that
/// differ (not their bytes).
#[track_caller]
fn same_files(a: &BTreeMap<String, Vec<u8>>, b: &BTreeMap<String, Vec<u8>>, what: &str) {
    let names = |m: &BTreeMap<String, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(a), names(b), "{what}");
    let differ: Vec<&String> = a
        .iter()
        .filter(|(n, v)| b[*n] != **v)
        .map(|(n, _)| n)
        .collect();
    assert!(differ.is_empty(), "{what}: {differ:?} changed");
}

/// The `.log` files of `dir`.
fn logs(fs: &dyn FileSystem, dir: &Path) -> BTreeMap<String, Vec<u8>> {
    files(fs, dir)
        .into_iter()
        .filter(|(n, _)| n.ends_with(".log"))
        .collect()
}

/// The latest value of every key.
fn latest(recs: &Records) -> BTreeMap<String, Option<String>> {
    recs.iter()
        .map(|(_, k, v)| (k.clone(), v.clone()))
        .collect()
}

fn cell(kind: Kind, damage: Damage, outcome: Outcome) {
    let mem: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    run(&mem, Path::new("/data"), kind, damage, outcome);
    let tmp = tempfile::tempdir().unwrap();
    let os: Arc<dyn FileSystem> = Arc::new(OsFs);
    run(&os, tmp.path(), kind, damage, outcome);
}

fn run(fs: &Arc<dyn FileSystem>, root: &Path, kind: Kind, damage: Damage, outcome: Outcome) {
    let what = format!("{kind:?} {damage:?} on {root:?}");
    let dir = root.join("t-0");
    if kind == Kind::CleanerCheckpoint {
        build_cleaned(fs, root);
        return run_checkpoint(fs, root, damage, outcome, &what);
    }
    if matches!(kind, Kind::TxnIndex | Kind::ProducerSnapshot) {
        return run_txn(fs, root, kind, damage, outcome, &what);
    }
    let (before, bases) = build_log(fs, root, "t-0");
    assert_eq!(bases.len(), 3, "{what}");
    let (flushed, active) = (bases[1], bases[2]);
    let target = match kind {
        Kind::FlushedLog => dir.join(file_name(flushed, FileKind::Log, Suffix::None)),
        Kind::ActiveLog => dir.join(file_name(active, FileKind::Log, Suffix::None)),
        Kind::OffsetIndex => dir.join(file_name(flushed, FileKind::Index, Suffix::None)),
        Kind::TimeIndex => dir.join(file_name(flushed, FileKind::TimeIndex, Suffix::None)),
        Kind::CleanerCheckpoint | Kind::TxnIndex | Kind::ProducerSnapshot => unreachable!(),
    };
    let segment_log = dir.join(file_name(
        if kind == Kind::ActiveLog {
            active
        } else {
            flushed
        },
        FileKind::Log,
        Suffix::None,
    ));
    let original = read_file(&**fs, &target).unwrap();
    let bad = damaged(kind, damage, &original);
    match &bad {
        None => fs.remove_file(&target).unwrap(),
        Some(b) => write_file_atomic(&**fs, &target, b).unwrap(),
    }
    let after_damage = files(&**fs, &dir);

    // `lithify log check` (verify) agrees with what open and the cleaner
    // do, and changes nothing: a problem for what they refuse, a warning
    // at most for what they recover, rebuild or keep.
    let checked = lithify_kafka_log::verify(fs, &dir).unwrap_or_else(|e| panic!("{what}: {e}"));
    let base_of = |p: &Path| p.file_name().unwrap().to_str().unwrap()[..20].to_string();
    let segment = base_of(&segment_log);
    let names_segment = |f: &lithify_kafka_log::Finding| {
        f.file.starts_with(&dir)
            && f.file
                .file_name()
                .is_some_and(|n| n.to_str().unwrap().starts_with(&segment))
    };
    match outcome {
        Outcome::RefusedAtOpen | Outcome::RefusedWhenRead => assert!(
            checked.problems.iter().any(names_segment),
            "{what}: {checked}"
        ),
        Outcome::Recovered => {
            assert!(checked.is_ok(), "{what}: {checked}");
            assert!(
                checked.warnings.iter().any(names_segment),
                "{what}: {checked}"
            );
        }
        _ => assert!(checked.is_ok(), "{what}: {checked}"),
    }
    same_files(&files(&**fs, &dir), &after_damage, &what);

    let opened = open(fs, &dir);
    match outcome {
        Outcome::RefusedAtOpen => {
            let err = opened.err().unwrap_or_else(|| panic!("{what}: opened"));
            assert!(err.is_corruption(), "{what}: {err}");
            let (path, offset) = err.file_offset().unwrap_or_else(|| panic!("{what}: {err}"));
            assert!(
                path == target || path == segment_log,
                "{what}: {err} names {path:?}"
            );
            let size = bad.as_ref().map_or(0, Vec::len) as u64;
            assert!(offset <= size.max(original.len() as u64), "{what}: {err}");
            let text = err.to_string();
            assert!(text.contains(&path.display().to_string()), "{what}: {text}");
            same_files(&files(&**fs, &dir), &after_damage, &what);
            assert!(!fs.exists(&dir.join("lost")), "{what}");
        }
        Outcome::RefusedWhenRead => {
            let log = opened.unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(log.recovery_report().truncations.is_empty(), "{what}");
            let err = records(&log).expect_err(&what);
            let (path, offset) = err.file_offset().unwrap_or_else(|| panic!("{what}: {err}"));
            assert_eq!(path, target, "{what}: {err}");
            assert!(offset < original.len() as u64, "{what}: {err}");
            let log_files = logs(&**fs, &dir);
            // A cleaning round refuses too, and changes nothing.
            let svc = cleaner(fs, TS + 10_000);
            let mut log = log;
            log.roll().unwrap();
            let rolled = logs(&**fs, &dir);
            svc.add_log(shared_log(log)).unwrap();
            let events = svc.clean_eligible_once().unwrap();
            // A failed round, or a failure while choosing the log (its
            // first batch's header is read to find its age).
            let failure = events
                .iter()
                .find(|e| e.is_failure())
                .unwrap_or_else(|| panic!("{what}: {events:?}"))
                .to_string();
            assert!(
                failure.contains(&target.display().to_string()) && failure.contains("byte offset"),
                "{what}: {failure}"
            );
            assert!(
                svc.manager()
                    .uncleanable_partitions()
                    .contains_key(&TopicPartition::new("t", 0)),
                "{what}"
            );
            same_files(&logs(&**fs, &dir), &rolled, &what);
            assert!(
                rolled
                    .iter()
                    .all(|(n, b)| log_files.get(n).is_none_or(|o| o == b)),
                "{what}"
            );
            let cp = checkpoint::read(&**fs, root).unwrap();
            assert!(cp.is_empty(), "{what}: {cp:?}");
        }
        Outcome::Recovered => {
            let log = opened.unwrap_or_else(|e| panic!("{what}: {e}"));
            let report = log.recovery_report();
            let rp = report.recovery_point;
            assert_eq!(rp, active + 6, "{what}");
            let t = report
                .truncations
                .first()
                .unwrap_or_else(|| panic!("{what}: {report:?}"));
            assert_eq!(t.file, target, "{what}");
            assert!(t.first_offset_dropped >= rp, "{what}: {t}");
            assert_eq!(log.log_end_offset(), t.first_offset_dropped, "{what}");
            let bad = bad.as_ref().unwrap();
            assert_eq!(t.position + t.bytes, bad.len() as u64, "{what}: {t}");
            assert!(t.kept_at.starts_with(dir.join("lost")), "{what}: {t}");
            assert_eq!(
                read_file(&**fs, &t.kept_at).unwrap(),
                &bad[t.position as usize..],
                "{what}: the dropped bytes are kept"
            );
            let got = records(&log).unwrap();
            let n = got.len();
            assert_eq!(got, before[..n], "{what}");
            assert_eq!(before[n].0, t.first_offset_dropped, "{what}");
        }
        Outcome::Rebuilt | Outcome::Kept => {
            let log = opened.unwrap_or_else(|e| panic!("{what}: {e}"));
            let report = log.recovery_report();
            assert!(report.truncations.is_empty(), "{what}: {report:?}");
            let rebuilt = report.rebuilt_indexes.iter().any(|(b, _)| *b == flushed);
            assert_eq!(rebuilt, outcome == Outcome::Rebuilt, "{what}: {report:?}");
            let now = read_file(&**fs, &target).ok();
            if outcome == Outcome::Rebuilt {
                assert_eq!(
                    now.as_deref(),
                    Some(&original[..]),
                    "{what}: rebuilt as it was"
                );
            } else {
                assert_eq!(now, bad, "{what}: kept as it is");
            }
            assert_eq!(records(&log).unwrap(), before, "{what}");
            // Reads through the index from every offset lose nothing.
            for (i, (offset, _, _)) in before.iter().enumerate() {
                let got: Vec<i64> = log
                    .records_from(*offset)
                    .unwrap()
                    .map(|r| r.unwrap().offset)
                    .collect();
                let want: Vec<i64> = before[i..].iter().map(|r| r.0).collect();
                assert_eq!(got, want, "{what}: from {offset}");
            }
        }
        Outcome::Offline | Outcome::CleanedFromAnotherOffset | Outcome::Replayed => {
            unreachable!("{what}")
        }
    }
}

/// What a `read_committed` reader sees, and the producers' state.
type TxnView = (Vec<(i64, String)>, Vec<ProducerStateEntry>, Option<i64>);

fn txn_view(log: &Log) -> lithify_kafka_log::Result<TxnView> {
    let committed = log
        .committed_records_from(log.log_start_offset())?
        .map(|r| {
            r.map(|r| {
                (
                    r.offset,
                    String::from_utf8(r.key.unwrap().to_vec()).unwrap(),
                )
            })
        })
        .collect::<lithify_kafka_log::Result<_>>()?;
    Ok((
        committed,
        log.producers().copied().collect(),
        log.first_unstable_offset(),
    ))
}

/// The transaction fixture `<root>/t-0`: a first segment with two aborted
/// transactions (producers 1 and 2) and a committed one, a second with a
/// committed transaction and plain records, an active segment with a
/// transaction left open, flushed after its first batches. Returns what
/// is read from it and the segments' base offsets.
fn build_txn_log(fs: &Arc<dyn FileSystem>, root: &Path) -> (TxnView, Vec<i64>) {
    let mut log = open(fs, &root.join("t-0")).unwrap();
    let mut next = 0;
    let producer = |id| Producer {
        producer_id: id,
        producer_epoch: 0,
        base_sequence: 0,
        transactional: true,
    };
    let txn = |log: &mut Log, id: i64, next: &mut i64| {
        let recs: Vec<SimpleRecord> = (0..2)
            .map(|_| {
                *next += 1;
                SimpleRecord::new(TS, format!("k{}", *next % 7), format!("v{next}"))
            })
            .collect();
        log.append_as(&producer(id), &recs).unwrap();
    };
    let end = |log: &mut Log, id: i64, r: TransactionResult| {
        log.append_end_txn_marker(id, 0, r, 0).unwrap();
    };
    append_batches(&mut log, 2, &mut next);
    txn(&mut log, 1, &mut next);
    txn(&mut log, 2, &mut next);
    end(&mut log, 1, TransactionResult::Abort);
    txn(&mut log, 3, &mut next);
    end(&mut log, 3, TransactionResult::Commit);
    end(&mut log, 2, TransactionResult::Abort);
    log.roll().unwrap();
    txn(&mut log, 2, &mut next);
    append_batches(&mut log, 2, &mut next);
    end(&mut log, 2, TransactionResult::Commit);
    log.roll().unwrap();
    append_batches(&mut log, 1, &mut next);
    txn(&mut log, 4, &mut next);
    log.flush().unwrap();
    append_batches(&mut log, 3, &mut next);
    let view = txn_view(&log).unwrap();
    assert_eq!(log.segments().next().unwrap().aborted_txns().len(), 2);
    let bases = log.segments().map(|s| s.base_offset()).collect();
    drop(log);
    (view, bases)
}

fn run_txn(
    fs: &Arc<dyn FileSystem>,
    root: &Path,
    kind: Kind,
    damage: Damage,
    outcome: Outcome,
    what: &str,
) {
    let dir = root.join("t-0");
    let (before, bases) = build_txn_log(fs, root);
    assert_eq!(bases.len(), 3, "{what}");
    let target = match kind {
        Kind::TxnIndex => dir.join(file_name(bases[0], FileKind::TxnIndex, Suffix::None)),
        _ => dir.join(file_name(bases[2], FileKind::Snapshot, Suffix::None)),
    };
    let original = read_file(&**fs, &target).unwrap();
    let bad = damaged(kind, damage, &original);
    match &bad {
        None => fs.remove_file(&target).unwrap(),
        Some(b) => write_file_atomic(&**fs, &target, b).unwrap(),
    }
    let log = open(fs, &dir).unwrap_or_else(|e| panic!("{what}: {e}"));
    let report = log.recovery_report().clone();
    assert!(report.truncations.is_empty(), "{what}: {report:?}");
    match outcome {
        Outcome::RefusedWhenRead => {
            let err = txn_view(&log).expect_err(what);
            assert!(err.is_corruption(), "{what}: {err}");
            let seg0 = dir.join(file_name(bases[0], FileKind::Log, Suffix::None));
            let (path, _) = err.file_offset().unwrap_or_else(|| panic!("{what}: {err}"));
            assert_eq!(path, seg0, "{what}: {err}");
            assert!(err.to_string().contains("lost entries"), "{what}: {err}");
            // A cleaning round refuses too, changing nothing.
            let mut log = log;
            log.roll().unwrap();
            let rolled = logs(&**fs, &dir);
            let svc = cleaner(fs, TS + 10_000);
            svc.add_log(shared_log(log)).unwrap();
            let events = svc.clean_eligible_once().unwrap();
            let failure = events
                .iter()
                .find(|e| e.is_failure())
                .unwrap_or_else(|| panic!("{what}: {events:?}"))
                .to_string();
            assert!(
                failure.contains(&seg0.display().to_string()) && failure.contains("byte offset"),
                "{what}: {failure}"
            );
            same_files(&logs(&**fs, &dir), &rolled, what);
        }
        Outcome::Rebuilt | Outcome::Kept => {
            let rebuilt = report
                .rebuilt_indexes
                .iter()
                .any(|(b, why)| *b == bases[0] && why.contains(".txnindex"));
            assert_eq!(rebuilt, outcome == Outcome::Rebuilt, "{what}: {report:?}");
            let now = read_file(&**fs, &target).ok();
            if outcome == Outcome::Rebuilt {
                assert_eq!(now.as_deref(), Some(&original[..]), "{what}");
            } else {
                assert_eq!(now, bad, "{what}: kept as it is");
            }
            assert_eq!(txn_view(&log).unwrap(), before, "{what}");
        }
        Outcome::Replayed => {
            assert_eq!(
                report.dropped_snapshots.len(),
                usize::from(bad.is_some()),
                "{what}: {report:?}"
            );
            if bad.is_some() {
                let name = target.file_name().unwrap().to_string_lossy().into_owned();
                assert!(
                    report.dropped_snapshots[0].contains(&name),
                    "{what}: {report:?}"
                );
            }
            // The replay passed the active segment's base: it took the
            // snapshot there again, byte for byte.
            assert_eq!(
                read_file(&**fs, &target).ok().as_deref(),
                Some(&original[..]),
                "{what}"
            );
            assert!(report.producer_state_replayed_from < bases[2], "{what}");
            assert_eq!(txn_view(&log).unwrap(), before, "{what}");
        }
        _ => unreachable!("{what}"),
    }
}

fn run_checkpoint(
    fs: &Arc<dyn FileSystem>,
    root: &Path,
    damage: Damage,
    outcome: Outcome,
    what: &str,
) {
    let target = checkpoint::path(root);
    let original = read_file(&**fs, &target).unwrap();
    let bad = damaged(Kind::CleanerCheckpoint, damage, &original);
    match &bad {
        None => fs.remove_file(&target).unwrap(),
        Some(b) => write_file_atomic(&**fs, &target, b).unwrap(),
    }
    let names = ["t-0", "u-0"];
    let mut before = BTreeMap::new();
    let svc = cleaner(fs, TS + 20_000);
    for name in names {
        let log = open(fs, &root.join(name)).unwrap_or_else(|e| panic!("{what}: {e}"));
        before.insert(
            name,
            (records(&log).unwrap(), logs(&**fs, &root.join(name))),
        );
        svc.add_log(shared_log(log)).unwrap();
    }
    let events = svc.clean_eligible_once().unwrap();
    let cleaned: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            CleanerEvent::Cleaned(r) => Some(r.topic_partition.to_string()),
            _ => None,
        })
        .collect();
    match outcome {
        Outcome::Offline => {
            assert!(cleaned.is_empty(), "{what}: {events:?}");
            let problems: Vec<String> = events.iter().map(ToString::to_string).collect();
            assert_eq!(problems.len(), 1, "{what}: {problems:?}");
            assert!(
                problems[0].contains(&target.display().to_string())
                    && problems[0].contains("byte offset"),
                "{what}: {problems:?}"
            );
            assert!(svc.manager().offline_dirs().contains_key(root), "{what}");
            assert_eq!(
                read_file(&**fs, &target).ok(),
                bad,
                "{what}: the file is kept"
            );
            for name in names {
                same_files(&logs(&**fs, &root.join(name)), &before[name].1, what);
            }
        }
        Outcome::CleanedFromAnotherOffset => {
            // Cleaned from their start, or from the offset read (a log
            // whose first dirty offset moved up may not be dirty enough).
            assert!(cleaned.contains(&"t-0".to_string()), "{what}: {events:?}");
            assert!(events.iter().all(|e| !e.is_failure()), "{what}: {events:?}");
            drop(svc);
            for name in names {
                let log = open(fs, &root.join(name)).unwrap();
                let after = records(&log).unwrap();
                let (was, _) = &before[name];
                assert_eq!(latest(&after), latest(was), "{what}: {name}");
                assert_eq!(log.log_end_offset(), was.last().unwrap().0 + 1, "{what}");
            }
            let cp = checkpoint::read(&**fs, root).unwrap();
            assert_eq!(cp.len(), 2, "{what}: {cp:?}");
        }
        _ => unreachable!("{what}"),
    }
}

macro_rules! matrix {
    ($($name:ident: $kind:ident $damage:ident => $outcome:ident;)*) => {
        $(
            #[test]
            fn $name() {
                cell(Kind::$kind, Damage::$damage, Outcome::$outcome);
            }
        )*
        /// Every cell, for the table in docs/ARCHITECTURE.md.
        #[allow(dead_code)]
        const CELLS: &[(Kind, Damage, Outcome)] = &[$((Kind::$kind, Damage::$damage, Outcome::$outcome),)*];
    };
}

matrix! {
    flushed_log_missing: FlushedLog Missing => RefusedAtOpen;
    flushed_log_empty: FlushedLog Empty => RefusedAtOpen;
    flushed_log_cut_in_header: FlushedLog CutHeader => RefusedAtOpen;
    flushed_log_cut_in_first_batch: FlushedLog CutFirst => RefusedAtOpen;
    flushed_log_cut_in_middle: FlushedLog CutMiddle => RefusedAtOpen;
    flushed_log_cut_in_last_batch: FlushedLog CutLast => RefusedAtOpen;
    flushed_log_cut_last_byte: FlushedLog CutLastByte => RefusedAtOpen;
    flushed_log_bit_flip_in_header: FlushedLog FlipHeader => RefusedWhenRead;
    flushed_log_bit_flip_in_body: FlushedLog FlipBody => RefusedWhenRead;
    flushed_log_bit_flip_in_footer: FlushedLog FlipFooter => RefusedWhenRead;
    flushed_log_random_bytes: FlushedLog Random => RefusedAtOpen;

    active_log_missing: ActiveLog Missing => RefusedAtOpen;
    active_log_empty: ActiveLog Empty => RefusedAtOpen;
    active_log_cut_in_header: ActiveLog CutHeader => RefusedAtOpen;
    active_log_cut_in_first_batch: ActiveLog CutFirst => RefusedAtOpen;
    active_log_cut_in_middle: ActiveLog CutMiddle => Recovered;
    active_log_cut_in_last_batch: ActiveLog CutLast => Recovered;
    active_log_cut_last_byte: ActiveLog CutLastByte => Recovered;
    active_log_bit_flip_in_header: ActiveLog FlipHeader => RefusedAtOpen;
    active_log_bit_flip_in_body: ActiveLog FlipBody => Recovered;
    active_log_bit_flip_in_footer: ActiveLog FlipFooter => Recovered;
    active_log_random_bytes: ActiveLog Random => RefusedAtOpen;

    offset_index_missing: OffsetIndex Missing => Rebuilt;
    offset_index_empty: OffsetIndex Empty => Kept;
    offset_index_cut_in_header: OffsetIndex CutHeader => Rebuilt;
    offset_index_cut_in_first_entry: OffsetIndex CutFirst => Rebuilt;
    offset_index_cut_in_middle: OffsetIndex CutMiddle => Rebuilt;
    offset_index_cut_in_last_entry: OffsetIndex CutLast => Rebuilt;
    offset_index_cut_last_byte: OffsetIndex CutLastByte => Rebuilt;
    offset_index_bit_flip_in_header: OffsetIndex FlipHeader => Rebuilt;
    offset_index_bit_flip_in_body: OffsetIndex FlipBody => Kept;
    offset_index_bit_flip_in_footer: OffsetIndex FlipFooter => Rebuilt;
    offset_index_random_bytes: OffsetIndex Random => Rebuilt;

    time_index_missing: TimeIndex Missing => Rebuilt;
    time_index_empty: TimeIndex Empty => Kept;
    time_index_cut_in_header: TimeIndex CutHeader => Rebuilt;
    time_index_cut_in_first_entry: TimeIndex CutFirst => Rebuilt;
    time_index_cut_in_middle: TimeIndex CutMiddle => Rebuilt;
    time_index_cut_in_last_entry: TimeIndex CutLast => Rebuilt;
    time_index_cut_last_byte: TimeIndex CutLastByte => Rebuilt;
    time_index_bit_flip_in_header: TimeIndex FlipHeader => Rebuilt;
    time_index_bit_flip_in_body: TimeIndex FlipBody => Kept;
    time_index_bit_flip_in_footer: TimeIndex FlipFooter => Rebuilt;
    time_index_random_bytes: TimeIndex Random => Rebuilt;

    checkpoint_missing: CleanerCheckpoint Missing => CleanedFromAnotherOffset;
    checkpoint_empty: CleanerCheckpoint Empty => CleanedFromAnotherOffset;
    checkpoint_cut_in_header: CleanerCheckpoint CutHeader => CleanedFromAnotherOffset;
    checkpoint_cut_in_first_entry: CleanerCheckpoint CutFirst => Offline;
    checkpoint_cut_in_middle: CleanerCheckpoint CutMiddle => Offline;
    checkpoint_cut_in_last_entry: CleanerCheckpoint CutLast => Offline;
    checkpoint_cut_last_byte: CleanerCheckpoint CutLastByte => CleanedFromAnotherOffset;
    checkpoint_bit_flip_in_header: CleanerCheckpoint FlipHeader => Offline;
    checkpoint_bit_flip_in_body: CleanerCheckpoint FlipBody => CleanedFromAnotherOffset;
    checkpoint_bit_flip_in_footer: CleanerCheckpoint FlipFooter => CleanedFromAnotherOffset;
    checkpoint_random_bytes: CleanerCheckpoint Random => Offline;

    txn_index_missing: TxnIndex Missing => RefusedWhenRead;
    txn_index_empty: TxnIndex Empty => RefusedWhenRead;
    txn_index_cut_in_header: TxnIndex CutHeader => Rebuilt;
    txn_index_cut_in_first_entry: TxnIndex CutFirst => Rebuilt;
    txn_index_cut_in_middle: TxnIndex CutMiddle => Rebuilt;
    txn_index_cut_in_last_entry: TxnIndex CutLast => Rebuilt;
    txn_index_cut_last_byte: TxnIndex CutLastByte => Rebuilt;
    txn_index_bit_flip_in_header: TxnIndex FlipHeader => Rebuilt;
    txn_index_bit_flip_in_body: TxnIndex FlipBody => Rebuilt;
    txn_index_bit_flip_in_footer: TxnIndex FlipFooter => Kept;
    txn_index_random_bytes: TxnIndex Random => Rebuilt;

    producer_snapshot_missing: ProducerSnapshot Missing => Replayed;
    producer_snapshot_empty: ProducerSnapshot Empty => Replayed;
    producer_snapshot_cut_in_header: ProducerSnapshot CutHeader => Replayed;
    producer_snapshot_cut_in_first_entry: ProducerSnapshot CutFirst => Replayed;
    producer_snapshot_cut_in_middle: ProducerSnapshot CutMiddle => Replayed;
    producer_snapshot_cut_in_last_entry: ProducerSnapshot CutLast => Replayed;
    producer_snapshot_cut_last_byte: ProducerSnapshot CutLastByte => Replayed;
    producer_snapshot_bit_flip_in_header: ProducerSnapshot FlipHeader => Replayed;
    producer_snapshot_bit_flip_in_body: ProducerSnapshot FlipBody => Replayed;
    producer_snapshot_bit_flip_in_footer: ProducerSnapshot FlipFooter => Replayed;
    producer_snapshot_random_bytes: ProducerSnapshot Random => Replayed;
}

/// Concurrent Kafka writers (issue 34): who holds a log or its data
/// directory first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum First {
    /// A `Log` (what `lithify log produce` holds).
    Log,
    /// A cleaner with the log handed to it (what `lithify log clean`
    /// holds: the data directory's `.lock` and the log's).
    Cleaner,
}

/// What comes second, while the first still holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Second {
    /// Another `Log::open` of the same directory (a second producer, or
    /// a cleaner opening the log).
    OpenLog,
    /// A second cleaner of the same data directory.
    Cleaner,
    /// A read-only check (`lithify log check`, `log dump`).
    Verify,
}

/// Every cell: the second is refused with `Error::InUse` naming the
/// directory, nothing on disk changes, the first goes on writing; once
/// the first is gone, the second succeeds and every record is there.
fn concurrent(first: First, second: Second) {
    let mem: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    concurrent_on(&mem, Path::new("/data"), first, second);
    let tmp = tempfile::tempdir().unwrap();
    let os: Arc<dyn FileSystem> = Arc::new(OsFs);
    concurrent_on(&os, tmp.path(), first, second);
}

fn concurrent_on(fs: &Arc<dyn FileSystem>, root: &Path, first: First, second: Second) {
    let what = format!("{first:?} then {second:?} on {root:?}");
    let dir = root.join("t-0");
    let (before, _) = build_log(fs, root, "t-0");
    let log = open(fs, &dir).unwrap();
    let shared = shared_log(log);
    let svc = (first == First::Cleaner).then(|| {
        let svc = cleaner(fs, TS + 10_000);
        svc.add_log(shared.clone()).unwrap();
        svc
    });
    let held = files(&**fs, &dir);
    let (err, locked_dir) = match second {
        Second::OpenLog => (open(fs, &dir).map(drop).unwrap_err(), dir.clone()),
        Second::Verify => (
            lithify_kafka_log::verify(fs, &dir).map(drop).unwrap_err(),
            dir.clone(),
        ),
        Second::Cleaner => {
            let other = cleaner(fs, TS + 10_000);
            if first == First::Log {
                // A log holds no data directory lock: a second cleaner
                // gets the directory and is refused the log itself.
                other.manager().lock_data_dir(root).unwrap();
                drop(other);
                return concurrent_on_log_only(fs, &dir, shared, before, &what);
            }
            let err = other.manager().lock_data_dir(root).unwrap_err();
            let lithify_compaction_logclean::Error::Log { source, .. } = err else {
                panic!("{what}: {err}")
            };
            (*source, root.to_path_buf())
        }
    };
    assert!(err.is_in_use(), "{what}: {err}");
    assert!(
        err.to_string().contains(&format!(
            "{} is in use by another process",
            locked_dir.display()
        )),
        "{what}: {err}"
    );
    same_files(&files(&**fs, &dir), &held, &what);
    // The first writer goes on.
    let mut next = before.len() as i64;
    append_batches(&mut shared.lock(), 1, &mut next);
    drop(svc);
    let log = Arc::try_unwrap(shared).unwrap().into_inner();
    log.close().unwrap();
    // Afterwards the second gets in, and every record is there.
    let log = open(fs, &dir).unwrap();
    let got = records(&log).unwrap();
    assert_eq!(got[..before.len()], before[..], "{what}");
    assert_eq!(got.len(), before.len() + 3, "{what}");
    drop(log);
    let report = lithify_kafka_log::verify(fs, root).unwrap();
    assert!(report.is_ok(), "{what}: {report}");
}

/// A second cleaner while a `Log` (a producer) holds the log: it takes the
/// data directory, and its own open of the log is refused.
fn concurrent_on_log_only(
    fs: &Arc<dyn FileSystem>,
    dir: &Path,
    shared: lithify_kafka_log::SharedLog,
    before: Records,
    what: &str,
) {
    let err = open(fs, dir).map(drop).unwrap_err();
    assert!(err.is_in_use(), "{what}: {err}");
    let mut next = before.len() as i64;
    append_batches(&mut shared.lock(), 1, &mut next);
    Arc::try_unwrap(shared)
        .unwrap()
        .into_inner()
        .close()
        .unwrap();
    let log = open(fs, dir).unwrap();
    assert_eq!(records(&log).unwrap().len(), before.len() + 3, "{what}");
}

#[test]
fn concurrent_log_then_open_log_is_refused() {
    concurrent(First::Log, Second::OpenLog);
}

#[test]
fn concurrent_log_then_verify_is_refused() {
    concurrent(First::Log, Second::Verify);
}

#[test]
fn concurrent_log_then_cleaner_is_refused_the_log() {
    concurrent(First::Log, Second::Cleaner);
}

#[test]
fn concurrent_cleaner_then_open_log_is_refused() {
    concurrent(First::Cleaner, Second::OpenLog);
}

#[test]
fn concurrent_cleaner_then_second_cleaner_is_refused() {
    concurrent(First::Cleaner, Second::Cleaner);
}

#[test]
fn concurrent_cleaner_then_verify_is_refused() {
    concurrent(First::Cleaner, Second::Verify);
}

/// The matrix covers every file kind with every damage.
#[test]
fn every_cell_is_in_the_matrix() {
    use Damage::*;
    use Kind::*;
    for kind in [
        FlushedLog,
        ActiveLog,
        OffsetIndex,
        TimeIndex,
        CleanerCheckpoint,
        TxnIndex,
        ProducerSnapshot,
    ] {
        for damage in [
            Missing,
            Empty,
            CutHeader,
            CutFirst,
            CutMiddle,
            CutLast,
            CutLastByte,
            FlipHeader,
            FlipBody,
            FlipFooter,
            Random,
        ] {
            assert_eq!(
                CELLS
                    .iter()
                    .filter(|(k, d, _)| *k == kind && *d == damage)
                    .count(),
                1,
                "{kind:?} {damage:?}"
            );
        }
    }
}
