//! Recycled logs: a log written over the file of an older one ends, in
//! every recovery mode, where its own records end; the older log's bytes
//! after them (its stale tail) are never returned and never reported as
//! damage, and a power cut at any point keeps every synced record.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::{MODES, pattern, read_all, slice_file};
use lithify_vfs::{FileSystem, MemFs};
use lithify_wal::format::BLOCK_SIZE;
use lithify_wal::{LogEnd, Reader, RecoveryMode, Writer, WriterOptions};

const OLD: u64 = 5;
const NEW: u64 = 9;

/// Writes log `OLD` with `old` records, then log `NEW` over its file with
/// `new` records (synced): returns the file system, the new log's path and
/// where each new record ends.
fn recycled(
    old: &[usize],
    new: &[usize],
    options: WriterOptions,
) -> (MemFs, &'static Path, Vec<u64>) {
    let fs = MemFs::new();
    let old_path = Path::new("/000005.log");
    let mut w = Writer::with_options(fs.create(old_path).unwrap(), old_path, OLD, options).unwrap();
    for (i, &n) in old.iter().enumerate() {
        w.add_record(&pattern(n, i as u64)).unwrap();
    }
    w.close().unwrap();
    let path = Path::new("/000009.log");
    fs.rename(old_path, path).unwrap();
    fs.sync_dir(Path::new("/")).unwrap();
    let mut w = Writer::recycle(fs.open_append(path).unwrap(), path, NEW, OLD, options).unwrap();
    let mut ends = Vec::new();
    for (i, &n) in new.iter().enumerate() {
        w.add_record(&pattern(n, 1000 + i as u64)).unwrap();
        ends.push(w.bytes_written());
    }
    w.sync().unwrap();
    (fs, path, ends)
}

#[test]
fn the_stale_tail_is_a_clean_end_in_every_mode() {
    let shapes: [(&[usize], &[usize]); 5] = [
        // Many small old records, fewer new ones.
        (&[100; 400], &[100; 30]),
        // Old records spanning blocks, new small ones ending mid-fragment.
        (&[40_000, 70_000, 5, 31_000], &[10, 3000, 0, 7]),
        // New records that end exactly where an old one starts.
        (&[200; 50], &[200; 20]),
        // A new log longer than the old file: no stale tail.
        (&[100; 3], &[5_000; 20]),
        // No new records at all.
        (&[1_000; 40], &[]),
    ];
    for (old, new) in shapes {
        let (fs, path, ends) = recycled(old, new, WriterOptions::default().owner(None));
        let data = Arc::new(lithify_vfs::read_file(&fs, path).unwrap());
        let end = ends.last().copied();
        for mode in MODES {
            let what = format!("{} old, {} new records, {mode:?}", old.len(), new.len());
            let out = read_all(slice_file(&data, data.len()), NEW, mode);
            assert!(out.error.is_none(), "{what}: {:?}", out.error);
            assert_eq!(out.records.len(), new.len(), "{what}");
            for (i, (_, payload)) in out.records.iter().enumerate() {
                assert_eq!(
                    payload,
                    &pattern(new[i], 1000 + i as u64),
                    "{what}: record {i}"
                );
            }
            assert_eq!(out.end, Some(LogEnd::Clean), "{what}");
            assert!(out.dropped.is_empty(), "{what}: {:?}", out.dropped);
            // The records end where the last one does (or right after
            // the header and its fragments): the older log's bytes, or
            // the zeros of the end marker past the old file, follow.
            let tail = out.stale_tail.or(out.zero_tail);
            match end {
                Some(end) => assert_eq!(tail, Some(end), "{what}"),
                None => assert!(tail.is_some(), "{what}"),
            }
        }
        let mut r = Reader::new(fs.open(path).unwrap(), path, NEW).unwrap();
        assert_eq!(r.recycled_from().unwrap(), Some(OLD));
    }
}

/// Without the `Recycled` fragment, the same bytes are damage: the old
/// log's bytes after the last record are reported, not taken for an end.
#[test]
fn an_old_tail_in_a_log_not_marked_recycled_is_damage() {
    let (fs, path, ends) = recycled(
        &[100; 400],
        &[100; 30],
        WriterOptions::default().owner(None),
    );
    let mut data = lithify_vfs::read_file(&fs, path).unwrap();
    // Turn the Recycled fragment into an unknown safe-to-ignore type
    // (checksum fixed up): the log no longer says it was recycled.
    let at = lithify_wal::format::FILE_HEADER_LEN;
    data[at + 6] = 0xfe;
    let sum = lithify_wal::format::fragment_checksum(&data[at + 4..at + 11 + 8]);
    data[at..at + 4].copy_from_slice(&sum.to_le_bytes());
    let data = Arc::new(data);
    let pit = read_all(
        slice_file(&data, data.len()),
        NEW,
        RecoveryMode::PointInTimeRecovery,
    );
    assert_eq!(pit.records.len(), 30);
    assert!(matches!(pit.end, Some(LogEnd::TornTail { offset, .. }) if offset == ends[29]));
    assert_eq!(pit.stale_tail, None);
    let strict = read_all(
        slice_file(&data, data.len()),
        NEW,
        RecoveryMode::AbsoluteConsistency,
    );
    assert!(strict.error.is_some());
}

/// A record whose first fragments were written over the old bytes but
/// whose last was not is still a torn write, dropped and reported.
#[test]
fn a_record_cut_inside_the_recycled_file_is_incomplete() {
    let (fs, path, ends) = recycled(
        &[30_000; 10],
        &[100, 70_000],
        WriterOptions::default().owner(None),
    );
    let mut data = lithify_vfs::read_file(&fs, path).unwrap();
    // Put back the old bytes over the second record's last block.
    let cut = (ends[1] as usize / BLOCK_SIZE) * BLOCK_SIZE;
    let (old_fs, old_path, _) = recycled(&[30_000; 10], &[], WriterOptions::default().owner(None));
    let old = lithify_vfs::read_file(&old_fs, old_path).unwrap();
    data[cut..ends[1] as usize].copy_from_slice(&old[cut..ends[1] as usize]);
    let data = Arc::new(data);
    let pit = read_all(
        slice_file(&data, data.len()),
        NEW,
        RecoveryMode::PointInTimeRecovery,
    );
    assert_eq!(pit.records.len(), 1);
    assert!(
        matches!(pit.end, Some(LogEnd::TornTail { offset, .. }) if offset == ends[0]),
        "{:?}",
        pit.end
    );
}

/// Power cuts with torn writes while a recycled log is written (and, in
/// half the runs, sized up front past the old file): every synced record
/// survives, and what is read is a prefix of what was written.
#[test]
fn power_cuts_while_writing_over_an_old_log_keep_every_synced_record() {
    for seed in 0..200u64 {
        let fs = MemFs::new();
        let options = WriterOptions::default()
            .owner(None)
            .buffer_size(1 + (seed as usize * 811) % 5000)
            .preallocate(if seed % 2 == 0 { 0 } else { 40_000 });
        let old_path = Path::new("/000005.log");
        let mut w =
            Writer::with_options(fs.create(old_path).unwrap(), old_path, OLD, options).unwrap();
        for i in 0..(seed % 50 + 10) {
            w.add_record(&pattern(((seed + i) as usize * 97) % 3000, i))
                .unwrap();
        }
        w.close().unwrap();
        let path = Path::new("/000009.log");
        fs.rename(old_path, path).unwrap();
        fs.sync_dir(Path::new("/")).unwrap();
        fs.set_torn_tails(Some(seed));
        let mut w =
            Writer::recycle(fs.open_append(path).unwrap(), path, NEW, OLD, options).unwrap();
        let mut payloads = Vec::new();
        let mut durable = 0;
        for i in 0..(seed % 60 + 1) {
            payloads.push(pattern(((seed * 7 + i) as usize * 131) % 4000, 5000 + i));
            w.add_record(payloads.last().unwrap()).unwrap();
            if (seed + i) % 5 == 0 {
                w.sync().unwrap();
                durable = payloads.len();
            }
        }
        w.flush().unwrap();
        drop(w);
        fs.crash();
        let out = read_all(
            fs.open(path).unwrap(),
            NEW,
            RecoveryMode::PointInTimeRecovery,
        );
        assert!(out.error.is_none(), "seed {seed}: {:?}", out.error);
        assert!(
            out.records.len() >= durable,
            "seed {seed}: {} < {durable}",
            out.records.len()
        );
        for (got, want) in out.records.iter().zip(&payloads) {
            assert_eq!(&got.1, want, "seed {seed}");
        }
        assert!(
            out.records.len() <= payloads.len(),
            "seed {seed}: an old record came back"
        );
        assert!(
            matches!(out.end, Some(LogEnd::Clean) | Some(LogEnd::TornTail { .. })),
            "seed {seed}: {:?}",
            out.end
        );
    }
}

#[test]
fn a_log_cannot_be_written_over_one_whose_fragments_carry_its_number() {
    let fs = MemFs::new();
    let path = Path::new("/x.log");
    fs.create(path).unwrap();
    let err = Writer::recycle(
        fs.open_append(path).unwrap(),
        path,
        7 + (1 << 32),
        7,
        WriterOptions::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("same number"), "{err}");
}

/// Damage is not a stale tail: a recycled log cut inside its last record,
/// or with a byte of it changed, is reported as before, though the older
/// log's bytes follow.
#[test]
fn damage_at_the_end_of_a_recycled_log_is_still_reported() {
    let (fs, path, ends) = recycled(
        &[100; 400],
        &[100; 30],
        WriterOptions::default().owner(None),
    );
    let data = lithify_vfs::read_file(&fs, path).unwrap();
    let last = ends[28] as usize; // where the last record starts
    // Cut inside the last record.
    let cut = Arc::new(data[..last + 40].to_vec());
    let out = read_all(
        slice_file(&cut, cut.len()),
        NEW,
        RecoveryMode::PointInTimeRecovery,
    );
    assert_eq!(out.records.len(), 29);
    assert!(matches!(out.end, Some(LogEnd::TornTail { offset, .. }) if offset == ends[28] ));
    assert_eq!((out.stale_tail, out.dropped.len()), (None, 1));
    // A byte of the last record changed.
    let mut flipped = data.clone();
    flipped[last + 50] ^= 1;
    let flipped = Arc::new(flipped);
    let out = read_all(
        slice_file(&flipped, flipped.len()),
        NEW,
        RecoveryMode::PointInTimeRecovery,
    );
    assert_eq!(out.records.len(), 29);
    assert!(matches!(out.end, Some(LogEnd::TornTail { offset, .. }) if offset == ends[28]));
    assert_eq!(out.stale_tail, None);
    let strict = read_all(
        slice_file(&flipped, flipped.len()),
        NEW,
        RecoveryMode::AbsoluteConsistency,
    );
    assert!(strict.error.is_some());
}

/// Log 9 written over log 5's file, holding "ab", flushed: pins the
/// `Recycled` fragment and the end marker (`docs/FORMATS.md`, "Recycled
/// logs").
#[test]
fn golden_recycled_bytes() {
    let fs = MemFs::new();
    let old = Path::new("/000005.log");
    let options = WriterOptions::default().owner(None);
    let mut w = Writer::with_options(fs.create(old).unwrap(), old, OLD, options).unwrap();
    w.add_record(&[7; 100]).unwrap();
    w.close().unwrap();
    let path = Path::new("/000009.log");
    fs.rename(old, path).unwrap();
    let mut w = Writer::recycle(fs.open_append(path).unwrap(), path, NEW, OLD, options).unwrap();
    assert_eq!(w.add_record(b"ab").unwrap(), 43);
    w.flush().unwrap();
    let data = lithify_vfs::read_file(&fs, path).unwrap();
    assert_eq!(data.len(), 24 + 11 + 100, "the file keeps its size");
    let hex: String = data[..67].iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        hex,
        concat!(
            "4c544846594c4f47",
            "01000000",
            "0900000000000000",
            "7774fdb2",
            "315ef095",
            "0800",
            "82",
            "09000000",
            "0500000000000000",
            "a016202e",
            "0200",
            "01",
            "09000000",
            "6162",
            "0000000000000000000000",
        )
    );
    // After the end marker, log 5's record bytes are still there.
    assert_eq!(&data[67..], &[7; 68][..]);
}

/// A header zeroed at a record boundary inside the last block, with
/// intact records of the log after it in that block, is damage, not the
/// end marker of a recycled log: the records from it on are reported
/// dropped.
#[test]
fn zeros_before_records_in_the_same_block_are_not_a_stale_tail() {
    let (fs, path, ends) = recycled(
        &[100; 400],
        &[100; 30],
        WriterOptions::default().owner(None),
    );
    let mut data = lithify_vfs::read_file(&fs, path).unwrap();
    // Zero the header of record 20 (all 30 records sit in block 0).
    let at = ends[19] as usize;
    assert!(ends[29] < BLOCK_SIZE as u64);
    data[at..at + 11].fill(0);
    let data = Arc::new(data);
    let pit = read_all(
        slice_file(&data, data.len()),
        NEW,
        RecoveryMode::PointInTimeRecovery,
    );
    assert_eq!(pit.records.len(), 20);
    assert_eq!(pit.stale_tail, None);
    // Reported as a non-recycled log reports it (the tail scan looks at
    // later block starts only), with the records after it dropped.
    assert!(
        matches!(pit.end, Some(LogEnd::TornTail { offset, .. }) if offset == ends[19]),
        "{:?}",
        pit.end
    );
    assert_eq!(pit.dropped.len(), 1);
}
