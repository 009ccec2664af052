//! WALs sized up front (`Options::wal_preallocate`): the live WAL holds
//! zeros after its last record, which every place that sizes, copies or
//! recovers a WAL takes as the end of its records; power cuts into that
//! space lose nothing synced; zeros below a recorded synced size are
//! refused.

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
    db.flush().unwrap();
    db.put(key(100), value(100)).unwrap();
    let after = wals(&*fs, "/db");
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
        err.contains(&format!("only zeros from offset {from} on")),
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
