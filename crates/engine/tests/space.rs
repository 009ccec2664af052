//! Space comes back when the work that freed it returns: after
//! `compact_range`, the directory holds only the live tables, unless
//! something still holds the obsolete ones — and then the `LOG` says what.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::small_options;
use lithify_engine::{Db, INFO_LOG_FILE, Options};
use lithify_vfs::{FileSystem, MemFs};

fn options(fs: Arc<dyn FileSystem>) -> Options {
    small_options(fs)
        .disable_auto_compactions(true)
        .info_log(true)
}

/// Bytes of the `.sst` files in `/db`.
fn table_bytes_on_disk(fs: &dyn FileSystem) -> u64 {
    fs.list_dir(Path::new("/db"))
        .unwrap()
        .iter()
        .filter(|n| n.ends_with(".sst"))
        .map(|n| fs.file_size(&Path::new("/db").join(n)).unwrap())
        .sum()
}

/// The database's `LOG`.
fn info_log(fs: &dyn FileSystem) -> String {
    String::from_utf8(lithify_vfs::read_file(fs, &Path::new("/db").join(INFO_LOG_FILE)).unwrap())
        .unwrap()
}

fn live_bytes(db: &Db) -> u64 {
    db.live_files().iter().map(|f| f.size).sum()
}

fn fill(db: &Db, rounds: u32) {
    for round in 0..rounds {
        for i in 0..300u32 {
            db.put(format!("key{i:05}"), format!("value {round} {i}"))
                .unwrap();
        }
        db.flush().unwrap();
    }
}

#[test]
fn compact_range_returns_with_its_inputs_deleted() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs.clone())).unwrap();
    fill(&db, 6);
    db.compact_range(None, None).unwrap();
    assert_eq!(table_bytes_on_disk(&*fs), live_bytes(&db));
    db.close().unwrap();
}

#[test]
fn what_holds_obsolete_files_is_said_in_the_log() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs.clone())).unwrap();
    fill(&db, 4);

    // An iterator pins the version it reads.
    let mut it = db.iter();
    assert!(it.next().is_some());
    db.compact_range(None, None).unwrap();
    assert!(table_bytes_on_disk(&*fs) > live_bytes(&db));
    drop(it);

    // Disabled deletions (what a backup does) hold them too.
    fill(&db, 2);
    db.disable_file_deletions();
    db.compact_range(None, None).unwrap();
    assert!(table_bytes_on_disk(&*fs) > live_bytes(&db));
    db.enable_file_deletions();
    assert_eq!(table_bytes_on_disk(&*fs), live_bytes(&db));

    db.close().unwrap();
    let log = info_log(&*fs);
    assert!(
        log.contains("obsolete SST file(s)") && log.contains("an iterator"),
        "{log}"
    );
    assert!(log.contains("file deletions are disabled"), "{log}");
}

/// A snapshot pins sequence numbers, not files: the compaction keeps the
/// versions it needs inside its outputs, and the inputs go at once.
#[test]
fn a_snapshot_does_not_hold_obsolete_files() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs.clone())).unwrap();
    fill(&db, 3);
    let snapshot = db.snapshot();
    fill(&db, 2);
    db.compact_range(None, None).unwrap();
    assert_eq!(table_bytes_on_disk(&*fs), live_bytes(&db));
    let at_snapshot = lithify_engine::ReadOptions::default().snapshot(Some(snapshot.clone()));
    assert_eq!(
        db.get_opt("key00007", &at_snapshot).unwrap().as_deref(),
        Some(&b"value 2 7"[..])
    );
    assert_eq!(
        db.get("key00007").unwrap().as_deref(),
        Some(&b"value 1 7"[..])
    );
    drop((at_snapshot, snapshot));
    db.close().unwrap();
}

/// An obsolete table that cannot be deleted is named in the `LOG` as it
/// fails, stays behind, and the next open removes it.
#[test]
fn an_obsolete_table_that_cannot_be_deleted_is_said_and_removed_at_the_next_open() {
    use lithify_vfs::{FaultFs, FaultRule, OpKind};

    let faults = Arc::new(FaultFs::new(MemFs::new()));
    let fs: Arc<dyn FileSystem> = faults.clone();
    let db = Db::open("/db", options(fs.clone())).unwrap();
    fill(&db, 4);
    faults.add_rule(FaultRule::fail_from(OpKind::Remove, 1).on_paths_containing(".sst"));
    db.compact_range(None, None).unwrap();
    assert!(table_bytes_on_disk(&*fs) > live_bytes(&db));
    db.close().unwrap();
    faults.clear_rules();
    let log = info_log(&*fs);
    assert!(
        log.lines()
            .any(|l| l.contains("cannot delete obsolete file") && l.contains(".sst")),
        "{log}"
    );

    let db = Db::open("/db", options(fs.clone())).unwrap();
    assert_eq!(table_bytes_on_disk(&*fs), live_bytes(&db));
    assert_eq!(
        db.get("key00007").unwrap().as_deref(),
        Some(&b"value 3 7"[..])
    );
    db.close().unwrap();
}

#[test]
fn wait_for_compact_returns_once_nothing_is_left_to_flush_or_compact() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let db = Db::open(
        "/db",
        small_options(fs.clone())
            .level0_file_num_compaction_trigger(2)
            .max_background_jobs(1),
    )
    .unwrap();
    let level0 = |db: &Db| db.property("lithify.num-files-at-level0").unwrap();
    let mut flushed = 0;
    for round in 0..6u32 {
        // 90 KB into 64 KiB memtables: at least one switch per round,
        // whose flush (and the compactions after it) run in the
        // background.
        for i in 0..300u32 {
            db.put(format!("key{i:05}"), vec![round as u8; 300])
                .unwrap();
        }
        db.wait_for_compact().unwrap();
        let now = db.stats().flush_bytes;
        assert!(now > flushed, "round {round} flushed nothing");
        flushed = now;
        for p in [
            "lithify.num-immutable-mem-table",
            "lithify.num-running-flushes",
            "lithify.num-running-compactions",
        ] {
            assert_eq!(db.property(p).as_deref(), Some("0"), "{p}");
        }
        // The trigger of 2 is never reached at rest, and the obsolete
        // inputs are gone.
        assert!(level0(&db).parse::<u32>().unwrap() < 2, "{}", level0(&db));
        assert_eq!(table_bytes_on_disk(&*fs), live_bytes(&db));
    }
    db.close().unwrap();
}
