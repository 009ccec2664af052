//! WAL files sized up front (`Options::wal_preallocate`) and written over
//! obsolete ones (`Options::recycle_log_file_num`): the live WAL holds
//! zeros, or an older log's bytes, after its last record, which every
//! place that sizes, copies or recovers a WAL takes as the end of its
//! records; power cuts into that space lose nothing synced; an end of the
//! records below a recorded synced size is refused.

use std::path::Path;
use std::sync::Arc;

use lithify_engine::{CheckpointOptions, Db, Options, RecoveryMode, WriteOptions};
use lithify_version::filename::{FileKind, parse_file_name};
use lithify_vfs::{FileSystem, MemFs};

const WRITE_BUFFER: usize = 256 << 10;

/// What a WAL is sized to: 1.1 × the write buffer, in whole 32 KiB blocks.
const PREALLOCATED: u64 = (WRITE_BUFFER as u64 / 10 * 11).div_ceil(32 << 10) * (32 << 10);

fn options(fs: &Arc<MemFs>) -> Options {
    Options::default()
        .fs(fs.clone())
        .write_buffer_size(WRITE_BUFFER)
        .disable_auto_compactions(true)
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    let mut v = format!("value{i}-").into_bytes();
    v.resize(100, b'.');
    v
}

/// Every WAL in `dir`: (number, size).
fn wals(fs: &dyn FileSystem, dir: &str) -> Vec<(u64, u64)> {
    fs.list_dir(Path::new(dir))
        .unwrap()
        .iter()
        .filter_map(|n| match parse_file_name(n) {
            Some(FileKind::Log(number)) => {
                Some((number, fs.file_size(&Path::new(dir).join(n)).unwrap()))
            }
            _ => None,
        })
        .collect()
}

/// Where the records of WAL `number` in `dir` end: the start of its zero
/// tail, or its size.
fn records_end(fs: &MemFs, dir: &str, number: u64) -> u64 {
    let path = Path::new(dir).join(lithify_version::filename::log_file_name(number));
    let mut r = lithify_wal::Reader::new(fs.open(&path).unwrap(), &path, number).unwrap();
    while r.read_record().unwrap().is_some() {}
    r.zero_tail().unwrap_or(r.file_len())
}

fn sync() -> WriteOptions {
    WriteOptions::default().sync(true)
}

#[test]
fn the_live_wal_is_sized_up_front_and_cut_to_its_records_at_close() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(&fs).create_if_missing(true)).unwrap();
    for i in 0..50 {
        db.put_opt(key(i), value(i), &sync()).unwrap();
    }
    let live = wals(&*fs, "/db");
    assert_eq!(live.len(), 1);
    let (number, size) = live[0];
    assert_eq!(size, PREALLOCATED);
    let end = records_end(&fs, "/db", number);
    assert!(end > 50 * 100 && end < 50 * 200, "records end at {end}");
    // The stats count the WAL's records, not its preallocated space.
    let stats = db.stats();
    assert!(
        stats.wal_file_bytes <= end,
        "{} > {end}",
        stats.wal_file_bytes
    );
    db.close().unwrap();
    assert_eq!(wals(&*fs, "/db"), vec![(number, end)]);
    // Reopened strictly, everything is there.
    let db = Db::open(
        "/db",
        options(&fs).wal_recovery_mode(RecoveryMode::AbsoluteConsistency),
    )
    .unwrap();
    assert!(db.recovery_report().is_clean());
    for i in 0..50 {
        assert_eq!(db.get(key(i)).unwrap().as_deref(), Some(&value(i)[..]));
    }
}

#[test]
fn a_memtable_switch_cuts_the_closed_wal_and_sizes_the_new_one() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(&fs).create_if_missing(true)).unwrap();
    for i in 0..20 {
        db.put(key(i), value(i)).unwrap();
    }
    let (first, _) = wals(&*fs, "/db")[0];
    // The closed WAL stays to be looked at (else the purge after the flush
    // may delete it while it is read).
    db.disable_file_deletions();
    db.flush().unwrap();
    db.put(key(100), value(100)).unwrap();
    let after = wals(&*fs, "/db");
    assert!(after.len() >= 2, "{after:?}");
    let newest = after.iter().map(|w| w.0).max().unwrap();
    assert!(newest > first);
    for &(number, size) in &after {
        if number == newest {
            assert_eq!(size, PREALLOCATED);
        } else {
            assert_eq!(size, records_end(&fs, "/db", number), "WAL {number}");
        }
    }
}

#[test]
fn without_preallocation_the_wal_grows_with_its_records() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open(
        "/db",
        options(&fs).create_if_missing(true).wal_preallocate(false),
    )
    .unwrap();
    for i in 0..50 {
        db.put_opt(key(i), value(i), &sync()).unwrap();
    }
    let (number, size) = wals(&*fs, "/db")[0];
    assert_eq!(size, records_end(&fs, "/db", number));
    assert!(size < 50 * 200);
}

/// Power cuts at random points of a run of synced and unsynced writes
/// into preallocated space (with torn writes): every synced write
/// survives, every key read back holds a value that was written.
#[test]
fn power_cuts_into_preallocated_space_keep_every_synced_write() {
    for seed in 0..40u64 {
        let fs = Arc::new(MemFs::new());
        fs.set_torn_tails(Some(seed));
        let db = Db::open("/db", options(&fs).create_if_missing(true)).unwrap();
        let mut synced = 0;
        let writes = 20 + (seed as u32 * 37) % 200;
        for i in 0..writes {
            let durable = (i + seed as u32).is_multiple_of(3);
            let o = WriteOptions::default().sync(durable);
            db.put_opt(key(i), value(i), &o).unwrap();
            if durable {
                synced = i + 1;
            }
            if i == writes / 2 && seed % 4 == 0 {
                db.flush().unwrap();
            }
        }
        fs.crash();
        drop(db);
        let db = Db::open("/db", options(&fs)).unwrap();
        for i in 0..writes {
            let got = db.get(key(i)).unwrap();
            if i < synced {
                assert_eq!(got.as_deref(), Some(&value(i)[..]), "seed {seed}: key {i}");
            } else if let Some(v) = got {
                assert_eq!(&v[..], &value(i)[..], "seed {seed}: key {i}");
            }
        }
        // What survives is a prefix of the writes.
        let present: Vec<bool> = (0..writes)
            .map(|i| db.get(key(i)).unwrap().is_some())
            .collect();
        let n = present.iter().take_while(|&&p| p).count();
        assert!(
            present[n..].iter().all(|&p| !p),
            "seed {seed}: not a prefix"
        );
    }
}

/// A clean close records how far each WAL was synced; zeros below that
/// size are damage, not the end of the records, and the open names the
/// file and the offset.
#[test]
fn zeros_below_the_synced_size_are_refused() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(&fs).create_if_missing(true)).unwrap();
    for i in 0..50 {
        db.put_opt(key(i), value(i), &sync()).unwrap();
    }
    db.close().unwrap();
    let (number, size) = wals(&*fs, "/db")[0];
    let path = Path::new("/db").join(lithify_version::filename::log_file_name(number));
    // Zero from the start of a record in the middle on: the records
    // before it stay intact, and what follows reads as a zero tail.
    let from = {
        let mut r = lithify_wal::Reader::new(fs.open(&path).unwrap(), &path, number).unwrap();
        let mut offsets = Vec::new();
        while let Some(rec) = r.read_record().unwrap() {
            offsets.push(rec.offset);
        }
        offsets[offsets.len() / 2]
    };
    let mut f = fs.open_append(&path).unwrap();
    f.write_at(from, &vec![0; (size - from) as usize]).unwrap();
    f.set_len(PREALLOCATED).unwrap();
    f.sync_all().unwrap();
    drop(f);
    let err = Db::open("/db", options(&fs)).unwrap_err().to_string();
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(
        err.contains(&format!("records end at offset {from}")),
        "{err}"
    );
}

#[test]
fn a_checkpoint_copies_the_live_wal_up_to_its_last_record() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(&fs).create_if_missing(true)).unwrap();
    for i in 0..30 {
        db.put(key(i), value(i)).unwrap();
    }
    // No flush: the copy replays the live WAL.
    let opts = CheckpointOptions::default().log_size_for_flush(u64::MAX);
    db.create_checkpoint_opt("/copy", &opts).unwrap();
    let (number, size) = wals(&*fs, "/db")[0];
    assert_eq!(size, PREALLOCATED);
    let copied = wals(&*fs, "/copy");
    assert_eq!(copied, vec![(number, records_end(&fs, "/db", number))]);
    let copy = Db::open(
        "/copy",
        options(&fs).wal_recovery_mode(RecoveryMode::AbsoluteConsistency),
    )
    .unwrap();
    for i in 0..30 {
        assert_eq!(copy.get(key(i)).unwrap().as_deref(), Some(&value(i)[..]));
    }
}

/// Forces the purge that follows a flush to run now (it deletes the
/// obsolete WALs, or keeps them for recycling).
fn purge(db: &Db) {
    db.disable_file_deletions();
    db.enable_file_deletions();
}

/// The number of the WAL the live WAL's file held before, if it was
/// recycled.
fn recycled_from(fs: &MemFs, dir: &str, number: u64) -> Option<u64> {
    let path = Path::new(dir).join(lithify_version::filename::log_file_name(number));
    let mut r = lithify_wal::Reader::new(fs.open(&path).unwrap(), &path, number).unwrap();
    r.recycled_from().unwrap()
}

#[test]
fn obsolete_wals_are_written_over_up_to_the_limit() {
    let fs = Arc::new(MemFs::new());
    let opts = options(&fs).recycle_log_file_num(2);
    let db = Db::open("/db", opts.clone().create_if_missing(true)).unwrap();
    let mut first_logs = Vec::new();
    for round in 0..6u32 {
        for i in 0..50 {
            db.put(key(round * 50 + i), value(round * 50 + i)).unwrap();
        }
        let live = wals(&*fs, "/db").iter().map(|w| w.0).max().unwrap();
        first_logs.push(live);
        db.flush().unwrap();
        purge(&db);
        // The live WAL, and at most two obsolete ones kept for recycling.
        assert!(
            wals(&*fs, "/db").len() <= 3,
            "round {round}: {:?}",
            wals(&*fs, "/db")
        );
    }
    db.put(key(1000), value(1000)).unwrap();
    let live = wals(&*fs, "/db").iter().map(|w| w.0).max().unwrap();
    let from = recycled_from(&fs, "/db", live).expect("the live WAL is a recycled one");
    assert!(first_logs.contains(&from));
    db.close().unwrap();
    // The obsolete WALs kept for recycling go at close.
    assert_eq!(wals(&*fs, "/db").len(), 1, "{:?}", wals(&*fs, "/db"));
    // The recycled WAL was cut to its records at close; everything reads
    // back, strictly.
    let db = Db::open(
        "/db",
        opts.wal_recovery_mode(RecoveryMode::AbsoluteConsistency),
    )
    .unwrap();
    assert!(db.recovery_report().is_clean());
    for i in 0..300 {
        assert_eq!(db.get(key(i)).unwrap().as_deref(), Some(&value(i)[..]));
    }
    assert_eq!(
        db.get(key(1000)).unwrap().as_deref(),
        Some(&value(1000)[..])
    );
}

/// The format version of WAL `number`'s header.
fn wal_version(fs: &MemFs, dir: &str, number: u64) -> Option<u32> {
    let path = Path::new(dir).join(lithify_version::filename::log_file_name(number));
    let mut r = lithify_wal::Reader::new(fs.open(&path).unwrap(), &path, number).unwrap();
    r.format_version().unwrap()
}

/// WALs are compact (format version 4) unless they are recycled; then
/// every WAL is tagged, and a compact WAL an earlier open left is never
/// written over: the open replays it, flushes what it held and deletes
/// it, and only WALs of this open are kept for recycling.
#[test]
fn wals_are_compact_unless_recycled_and_a_compact_one_is_never_written_over() {
    use lithify_wal::format::{FORMAT_VERSION_COMPACT, FORMAT_VERSION_OWNED};
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(&fs).create_if_missing(true)).unwrap();
    db.put(key(1), value(1)).unwrap();
    let compact = wals(&*fs, "/db")[0].0;
    assert_eq!(
        wal_version(&fs, "/db", compact),
        Some(FORMAT_VERSION_COMPACT)
    );
    // Left behind unflushed, as a crash leaves it.
    drop(db);

    let opts = options(&fs).recycle_log_file_num(4);
    let db = Db::open("/db", opts.clone()).unwrap();
    assert_eq!(db.get(key(1)).unwrap().as_deref(), Some(&value(1)[..]));
    let mut seen = Vec::new();
    for round in 2..8u32 {
        db.put(key(round), value(round)).unwrap();
        let live = wals(&*fs, "/db").iter().map(|w| w.0).max().unwrap();
        assert_eq!(wal_version(&fs, "/db", live), Some(FORMAT_VERSION_OWNED));
        seen.extend(recycled_from(&fs, "/db", live));
        db.flush().unwrap();
        purge(&db);
        assert!(
            wals(&*fs, "/db").iter().all(|w| w.0 != compact),
            "round {round}: the compact WAL {compact} is kept: {:?}",
            wals(&*fs, "/db")
        );
    }
    assert!(!seen.is_empty(), "no WAL was recycled");
    assert!(!seen.contains(&compact));
    db.close().unwrap();
    let db = Db::open(
        "/db",
        opts.wal_recovery_mode(RecoveryMode::AbsoluteConsistency),
    )
    .unwrap();
    for i in 1..8 {
        assert_eq!(db.get(key(i)).unwrap().as_deref(), Some(&value(i)[..]));
    }
}

#[test]
fn recycling_is_off_under_the_strict_recovery_modes() {
    for mode in [
        RecoveryMode::TolerateCorruptedTailRecords,
        RecoveryMode::AbsoluteConsistency,
    ] {
        let fs = Arc::new(MemFs::new());
        let opts = options(&fs)
            .recycle_log_file_num(2)
            .wal_recovery_mode(mode)
            .create_if_missing(true);
        let db = Db::open("/db", opts).unwrap();
        for round in 0..3u32 {
            db.put(key(round), value(round)).unwrap();
            db.flush().unwrap();
            purge(&db);
        }
        db.put(key(99), value(99)).unwrap();
        let live = wals(&*fs, "/db");
        assert_eq!(live.len(), 1, "{mode:?}: {live:?}");
        assert_eq!(recycled_from(&fs, "/db", live[0].0), None, "{mode:?}");
    }
}

/// Power cuts at random points while WALs are written over obsolete
/// ones (torn writes, flushes that switch WALs): every synced write
/// survives, and what survives is a prefix of the writes.
#[test]
fn power_cuts_while_wals_are_recycled_keep_every_synced_write() {
    let mut recycled = 0;
    for seed in 0..40u64 {
        let fs = Arc::new(MemFs::new());
        fs.set_torn_tails(Some(seed));
        let opts = options(&fs)
            .recycle_log_file_num(1 + seed as usize % 2)
            .wal_preallocate(seed % 3 != 0);
        let db = Db::open("/db", opts.clone().create_if_missing(true)).unwrap();
        let mut synced = 0;
        let writes = 60 + (seed as u32 * 37) % 200;
        for i in 0..writes {
            let durable = (i + seed as u32).is_multiple_of(4);
            db.put_opt(key(i), value(i), &WriteOptions::default().sync(durable))
                .unwrap();
            if durable {
                synced = i + 1;
            }
            if i % 25 == 24 {
                db.flush().unwrap();
                purge(&db);
            }
        }
        let live = wals(&*fs, "/db").iter().map(|w| w.0).max().unwrap();
        recycled += usize::from(recycled_from(&fs, "/db", live).is_some());
        fs.crash();
        drop(db);
        let db = Db::open("/db", opts).unwrap();
        let present: Vec<bool> = (0..writes)
            .map(|i| match db.get(key(i)).unwrap() {
                Some(v) => {
                    assert_eq!(&v[..], &value(i)[..], "seed {seed}: key {i}");
                    true
                }
                None => false,
            })
            .collect();
        let n = present.iter().take_while(|&&p| p).count();
        assert!(
            n >= synced as usize,
            "seed {seed}: {n} of {synced} synced writes"
        );
        assert!(
            present[n..].iter().all(|&p| !p),
            "seed {seed}: not a prefix"
        );
    }
    assert!(
        recycled > 30,
        "only {recycled} of 40 runs ended on a recycled WAL"
    );
}
