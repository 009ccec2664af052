//! Containing failures (issue 34): one writer per log directory (its
//! `.lock`), `.deleted` leftovers reported (and a live segment renamed
//! `.deleted` refused), and `verify`, the read-only check of a log
//! directory or a data directory, on `MemFs` and on real files.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lithify_kafka_log::naming::{FileKind, Suffix, file_name};
use lithify_kafka_log::{Error, LOCK_FILE_NAME, Log, LogConfig, SimpleRecord, verify};
use lithify_vfs::{FileSystem, MemFs, OsFs, read_file, write_file_atomic};

fn config() -> LogConfig {
    LogConfig::from_properties([
        ("segment.bytes", "600"),
        ("index.interval.bytes", "1"),
        ("cleanup.policy", "compact"),
    ])
    .unwrap()
}

fn rec(i: i64) -> SimpleRecord {
    SimpleRecord::new(1000 + i, format!("key-{}", i % 5), format!("value-{i:04}"))
}

/// Both file systems, each with a root to work under.
fn each_fs(test: impl Fn(Arc<dyn FileSystem>, &Path)) {
    test(Arc::new(MemFs::new()), Path::new("/data"));
    let tmp = tempfile::tempdir().unwrap();
    test(Arc::new(OsFs), tmp.path());
}

/// A closed log of 40 records in several segments, the last one active;
/// returns the segment base offsets.
fn build(fs: &Arc<dyn FileSystem>, dir: &Path) -> Vec<i64> {
    let mut log = Log::open(fs.clone(), dir, config()).unwrap();
    for i in 0..40 {
        log.append(&[rec(i)]).unwrap();
    }
    let bases = log.segments().map(|s| s.base_offset()).collect();
    log.close().unwrap();
    bases
}

fn seg(dir: &Path, base: i64, kind: FileKind, suffix: Suffix) -> PathBuf {
    dir.join(file_name(base, kind, suffix))
}

fn record_count(log: &Log) -> usize {
    log.records_from(log.log_start_offset()).unwrap().count()
}

/// Byte positions of the batches of a `.log`.
fn batch_starts(bytes: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos + 12 <= bytes.len() {
        out.push(pos);
        let len = i32::from_be_bytes(bytes[pos + 8..pos + 12].try_into().unwrap());
        pos += 12 + len as usize;
    }
    out
}

#[test]
fn a_second_open_of_a_live_log_is_refused_until_the_first_is_dropped() {
    each_fs(|fs, root| {
        let dir = root.join("orders-0");
        let mut first = Log::open(fs.clone(), &dir, config()).unwrap();
        first.append(&[rec(0)]).unwrap();
        let err = Log::open(fs.clone(), &dir, config()).unwrap_err();
        assert!(err.is_in_use(), "{err}");
        assert!(!err.is_corruption(), "{err}");
        let text = err.to_string();
        assert!(
            text.contains(&dir.display().to_string())
                && text.contains("is in use by another process"),
            "{text}"
        );
        // The refused open changed nothing: the first writer goes on.
        first.append(&[rec(1)]).unwrap();
        first.flush().unwrap();
        drop(first);
        let again = Log::open(fs.clone(), &dir, config()).unwrap();
        assert_eq!(again.log_end_offset(), 2);
        assert_eq!(record_count(&again), 2);
        // After close, too.
        again.close().unwrap();
        let last = Log::open(fs.clone(), &dir, config()).unwrap();
        assert_eq!(record_count(&last), 2);
        assert!(fs.exists(&dir.join(LOCK_FILE_NAME)));
    });
}

#[test]
fn a_reader_is_refused_while_a_writer_holds_the_log_and_creates_nothing() {
    each_fs(|fs, root| {
        let dir = root.join("t-0");
        build(&fs, &dir);
        let writer = Log::open(fs.clone(), &dir, config()).unwrap();
        let err = verify(&fs, &dir).unwrap_err();
        assert!(matches!(err, Error::InUse { writer: false, .. }), "{err}");
        assert!(err.to_string().contains("locked by a writer"), "{err}");
        drop(writer);
        let report = verify(&fs, &dir).unwrap();
        assert!(report.is_ok(), "{report}");
        assert!(report.warnings.is_empty(), "{report}");
        // A directory no lithify writer ever held has no `.lock`, and a
        // check does not make one.
        fs.remove_file(&dir.join(LOCK_FILE_NAME)).unwrap();
        let report = verify(&fs, &dir).unwrap();
        assert!(report.is_ok(), "{report}");
        assert!(!fs.exists(&dir.join(LOCK_FILE_NAME)));
    });
}

#[test]
fn a_deleted_leftover_is_removed_with_a_report_naming_its_offsets() {
    each_fs(|fs, root| {
        let dir = root.join("t-0");
        let bases = build(&fs, &dir);
        // What a cleaning's swap leaves after a crash: the replaced first
        // segment, under the name of the segment that replaced it.
        let old = read_file(&*fs, &seg(&dir, bases[0], FileKind::Log, Suffix::None)).unwrap();
        let leftover = seg(&dir, bases[0], FileKind::Log, Suffix::Deleted);
        write_file_atomic(&*fs, &leftover, &old).unwrap();
        let report = verify(&fs, &dir).unwrap();
        assert!(report.is_ok(), "{report}");
        let w = report
            .warnings
            .iter()
            .find(|w| w.file == leftover)
            .unwrap_or_else(|| panic!("{report}"));
        assert!(
            w.message
                .contains(&format!("offsets {}..{}", bases[0], bases[1]))
                && w.message.contains("open deletes it"),
            "{w}"
        );

        let log = Log::open(fs.clone(), &dir, config()).unwrap();
        assert!(!fs.exists(&leftover));
        let name = leftover.file_name().unwrap().to_str().unwrap();
        let reported = &log.recovery_report().deleted_leftovers;
        assert_eq!(reported.len(), 1, "{reported:?}");
        assert_eq!(reported[0].file, name);
        assert_eq!(
            (reported[0].base_offset, reported[0].next_offset),
            (bases[0], Some(bases[1]))
        );
        assert!(reported[0].to_string().contains(name), "{}", reported[0]);
        assert_eq!(record_count(&log), 40);
    });
}

#[test]
fn a_live_segment_renamed_deleted_is_kept_in_lost_not_deleted() {
    each_fs(|fs, root| {
        let dir = root.join("t-0");
        let bases = build(&fs, &dir);
        assert!(bases.len() >= 3, "{bases:?}");
        let middle = bases[1];
        // Every file of a middle segment renamed `.deleted` by mistake.
        for kind in [FileKind::Log, FileKind::Index, FileKind::TimeIndex] {
            fs.rename(
                &seg(&dir, middle, kind, Suffix::None),
                &seg(&dir, middle, kind, Suffix::Deleted),
            )
            .unwrap();
        }
        let renamed = seg(&dir, middle, FileKind::Log, Suffix::Deleted);
        let report = verify(&fs, &dir).unwrap();
        let w = report
            .warnings
            .iter()
            .find(|w| w.file == renamed)
            .unwrap_or_else(|| panic!("{report}"));
        assert!(w.message.contains("keeps it in lost/"), "{w}");

        // Open moves it aside, reports where, and deletes nothing of it.
        let log = Log::open(fs.clone(), &dir, config()).unwrap();
        let name = renamed.file_name().unwrap().to_str().unwrap();
        let reported = &log.recovery_report().deleted_leftovers;
        let kept = reported
            .iter()
            .find(|d| d.file == name)
            .and_then(|d| d.kept.clone())
            .unwrap_or_else(|| panic!("{reported:?}"));
        assert_eq!(kept, dir.join(lithify_kafka_log::LOST_DIR).join(name));
        let text = reported
            .iter()
            .find(|d| d.file == name)
            .unwrap()
            .to_string();
        assert!(
            text.contains(&format!("offsets {middle}..{}", bases[2]))
                && text.contains("move it back without the .deleted suffix"),
            "{text}"
        );
        assert!(!fs.exists(&renamed));
        assert!(fs.exists(&kept), "nothing was deleted");
        drop(log);
        // Moved back under its own name, every record is there.
        fs.rename(&kept, &seg(&dir, middle, FileKind::Log, Suffix::None))
            .unwrap();
        let log = Log::open(fs.clone(), &dir, config()).unwrap();
        assert_eq!(record_count(&log), 40);
    });
}

#[test]
fn verify_refuses_offsets_that_go_backwards_or_repeat() {
    each_fs(|fs, root| {
        let dir = root.join("t-0");
        let bases = build(&fs, &dir);
        let path = seg(&dir, bases[0], FileKind::Log, Suffix::None);
        let mut bytes = read_file(&*fs, &path).unwrap();
        let starts = batch_starts(&bytes);
        // The second batch repeats the first one's base offset (outside
        // the CRC, so every batch still passes its CRC check).
        let first_base = bytes[0..8].to_vec();
        bytes[starts[1]..starts[1] + 8].copy_from_slice(&first_base);
        write_file_atomic(&*fs, &path, &bytes).unwrap();
        let report = verify(&fs, &dir).unwrap();
        let p = report
            .problems
            .iter()
            .find(|p| p.file == path)
            .unwrap_or_else(|| panic!("{report}"));
        assert_eq!(p.offset, Some(starts[1] as u64), "{p}");
        assert!(p.message.contains("go backwards or repeat"), "{p}");
    });
}

#[test]
fn verify_refuses_overlapping_segments() {
    each_fs(|fs, root| {
        let dir = root.join("t-0");
        let bases = build(&fs, &dir);
        let path = seg(&dir, bases[0], FileKind::Log, Suffix::None);
        let mut bytes = read_file(&*fs, &path).unwrap();
        let starts = batch_starts(&bytes);
        let last = *starts.last().unwrap();
        // The first segment's last batch claims the next segment's first
        // offset (what two cleaners writing one log can leave).
        bytes[last..last + 8].copy_from_slice(&bases[1].to_be_bytes());
        write_file_atomic(&*fs, &path, &bytes).unwrap();
        let report = verify(&fs, &dir).unwrap();
        let p = report
            .problems
            .iter()
            .find(|p| p.file == path)
            .unwrap_or_else(|| panic!("{report}"));
        assert_eq!(p.offset, Some(last as u64), "{p}");
        assert!(p.message.contains("overlaps the next one"), "{p}");
    });
}

#[test]
fn verify_refuses_a_flushed_segment_cut_at_a_batch_boundary() {
    each_fs(|fs, root| {
        let dir = root.join("t-0");
        let bases = build(&fs, &dir);
        let path = seg(&dir, bases[0], FileKind::Log, Suffix::None);
        let bytes = read_file(&*fs, &path).unwrap();
        let starts = batch_starts(&bytes);
        // Cut after the first batch: the offset index (an entry per batch)
        // describes bytes the `.log` no longer holds.
        write_file_atomic(&*fs, &path, &bytes[..starts[1]]).unwrap();
        let report = verify(&fs, &dir).unwrap();
        assert!(
            report
                .problems
                .iter()
                .any(|p| p.file == path && p.message.contains("cut short")),
            "{report}"
        );
    });
}

#[test]
fn verify_names_a_gap_where_a_middle_segment_went_missing() {
    each_fs(|fs, root| {
        let dir = root.join("t-0");
        let bases = build(&fs, &dir);
        let middle = bases[1];
        for kind in [FileKind::Log, FileKind::Index, FileKind::TimeIndex] {
            fs.remove_file(&seg(&dir, middle, kind, Suffix::None))
                .unwrap();
        }
        let report = verify(&fs, &dir).unwrap();
        assert!(
            report.is_ok(),
            "a gap alone is accepted, as open accepts it: {report}"
        );
        let first = seg(&dir, bases[0], FileKind::Log, Suffix::None);
        let next = seg(&dir, bases[2], FileKind::Log, Suffix::None);
        let w = report
            .warnings
            .iter()
            .find(|w| w.file == first)
            .unwrap_or_else(|| panic!("{report}"));
        assert!(
            w.message
                .contains(&format!("offsets {middle}..{} are in no segment", bases[2]))
                && w.message.contains(&next.display().to_string()),
            "{w}"
        );
    });
}

#[test]
fn verify_warns_of_a_torn_tail_open_would_truncate_and_refuses_an_unreadable_cleaner_checkpoint() {
    each_fs(|fs, root| {
        let dir = root.join("t-0");
        let bases = build(&fs, &dir);
        let active = seg(&dir, *bases.last().unwrap(), FileKind::Log, Suffix::None);
        let mut bytes = read_file(&*fs, &active).unwrap();
        let size = bytes.len() as u64;
        bytes.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 9, 0, 0]);
        write_file_atomic(&*fs, &active, &bytes).unwrap();
        // Not flushed: no line in the recovery point checkpoint.
        let rp = root.join("recovery-point-offset-checkpoint");
        if fs.exists(&rp) {
            fs.remove_file(&rp).unwrap();
        }
        let report = verify(&fs, root).unwrap();
        assert!(report.is_ok(), "{report}");
        assert!(
            report.warnings.iter().any(|w| w.file == active
                && w.offset == Some(size)
                && w.message.contains("open truncates")),
            "{report}"
        );
        let cleaner = root.join("cleaner-offset-checkpoint");
        write_file_atomic(&*fs, &cleaner, b"0\nnot a count\n").unwrap();
        let report = verify(&fs, root).unwrap();
        assert!(
            report.problems.iter().any(|p| p.file == cleaner),
            "{report}"
        );
    });
}

/// A `.log.deleted` holding bytes but no readable batch (damaged from its
/// first byte): its offsets cannot be told, so open keeps it in `lost/`
/// rather than deleting it as one that holds nothing.
#[test]
fn an_unreadable_deleted_segment_is_kept_not_deleted() {
    each_fs(|fs, root| {
        let dir = root.join("t-0");
        let bases = build(&fs, &dir);
        let garbage = seg(&dir, bases[1] + 1, FileKind::Log, Suffix::Deleted);
        lithify_vfs::write_file_atomic(&*fs, &garbage, &[0xee; 300]).unwrap();
        let empty = seg(&dir, bases[1] + 2, FileKind::Log, Suffix::Deleted);
        lithify_vfs::write_file_atomic(&*fs, &empty, &[]).unwrap();
        let log = Log::open(fs.clone(), &dir, config()).unwrap();
        let name = |p: &Path| p.file_name().unwrap().to_str().unwrap().to_owned();
        let reported = &log.recovery_report().deleted_leftovers;
        let kept = reported.iter().find(|d| d.file == name(&garbage)).unwrap();
        assert!(kept.kept.is_some(), "{kept:?}");
        assert!(fs.exists(kept.kept.as_ref().unwrap()));
        let removed = reported.iter().find(|d| d.file == name(&empty)).unwrap();
        assert_eq!(removed.kept, None, "an empty one holds nothing: deleted");
        assert!(!fs.exists(&empty));
        assert_eq!(record_count(&log), 40);
    });
}
