//! Live files, file-deletion pinning and checkpoints: a checkpoint taken
//! while a writer and background compactions run opens and holds exactly
//! the writes up to its sequence number; a checkpoint cut short by a fault
//! and a power loss at any step leaves the source intact and no copy that
//! opens as a database.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::{Model, model_pairs, scan, small_options};
use lithify_engine::{CheckpointOptions, Db, Options, ReadOptions};
use lithify_vfs::{FaultFs, FaultRule, FileSystem, MemFs, OpKind};

fn key(i: u64) -> Vec<u8> {
    // Spread over the key space, so that compactions overlap.
    format!("key{:08}", (i * 7919) % 100_003).into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    let mut v = format!("v{i}-").into_bytes();
    v.resize(60, b'.');
    v
}

/// The database after the first `n` writes of `key(i)`/`value(i)`.
fn model_after(n: u64) -> Model {
    (0..n).map(|i| (key(i), value(i))).collect()
}

fn open(fs: Arc<dyn FileSystem>, dir: &str) -> Db {
    Db::open(dir, small_options(fs)).unwrap()
}

/// One writer puts `key(i)` for i = 0, 1, ... (sequence number i + 1)
/// while checkpoints are taken, with and without the flush first; each
/// copy opens and equals the writes up to its sequence number.
#[test]
fn a_checkpoint_during_writes_and_compactions_holds_exactly_its_sequence() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let db = open(fs.clone(), "/db");
    let stop = AtomicBool::new(false);
    let infos = std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) || i < 3_000 {
                db.put(key(i), value(i)).unwrap();
                i += 1;
            }
            i
        });
        let mut infos = Vec::new();
        for n in 0..6 {
            // Let the writer get ahead a little (without sleeping: wait
            // for the sequence number to move).
            let seen = db.latest_sequence_number();
            while db.latest_sequence_number() < seen + 500 {
                std::thread::yield_now();
            }
            let options = CheckpointOptions::default()
                // Even steps flush first; odd steps copy the WALs.
                .log_size_for_flush(if n % 2 == 0 { 0 } else { u64::MAX });
            let dest = format!("/copy{n}");
            infos.push((
                dest.clone(),
                db.create_checkpoint_opt(&dest, &options).unwrap(),
            ));
        }
        stop.store(true, Ordering::Relaxed);
        let written = writer.join().unwrap();
        (infos, written)
    });
    let (infos, written) = infos;
    assert!(infos.iter().any(|(_, i)| i.flushed) && infos.iter().any(|(_, i)| !i.flushed));
    assert!(infos.iter().any(|(_, i)| i.wals_copied > 0));
    for (dest, info) in &infos {
        assert!(info.sequence > 0 && info.sequence <= written);
        assert_eq!(info.tables_copied, 0, "MemFs links every table");
        let copy = open(fs.clone(), dest);
        assert_eq!(
            scan(&copy, &ReadOptions::default()),
            model_pairs(&model_after(info.sequence)),
            "{dest} at sequence {}",
            info.sequence
        );
        assert_eq!(copy.latest_sequence_number(), info.sequence);
        // The copy is a database of its own.
        copy.put(b"only-in-the-copy", b"x").unwrap();
        copy.close().unwrap();
    }
    assert_eq!(db.get(b"only-in-the-copy").unwrap(), None);
    assert_eq!(
        scan(&db, &ReadOptions::default()),
        model_pairs(&model_after(written))
    );
    db.close().unwrap();
}

/// On the real file system the tables are hard links: the same inode as
/// the source's, so no table byte is copied.
#[test]
// Inode numbers are not part of the FileSystem trait: ask the OS.
#[allow(clippy::disallowed_methods)]
fn a_checkpoint_on_disk_links_its_tables() {
    let tmp = tempfile::tempdir().unwrap();
    let db = Db::open(tmp.path().join("db"), Options::default()).unwrap();
    for i in 0..2_000 {
        db.put(key(i), value(i)).unwrap();
    }
    let info = db.create_checkpoint(tmp.path().join("copy")).unwrap();
    assert!(info.flushed);
    assert!(info.tables_linked > 0);
    assert_eq!(info.tables_copied, 0);
    for f in db.live_files() {
        let linked = tmp.path().join("copy").join(f.path.file_name().unwrap());
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let (a, b) = (
                std::fs::metadata(&f.path).unwrap(),
                std::fs::metadata(&linked).unwrap(),
            );
            assert_eq!((a.dev(), a.ino()), (b.dev(), b.ino()));
        }
        assert_eq!(std::fs::metadata(&linked).unwrap().len(), f.size);
    }
    db.close().unwrap();
    let copy = Db::open(tmp.path().join("copy"), Options::default()).unwrap();
    assert_eq!(
        scan(&copy, &ReadOptions::default()),
        model_pairs(&model_after(2_000))
    );
}

#[test]
fn a_checkpoint_refuses_an_existing_directory() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let db = open(fs.clone(), "/db");
    db.put(b"a", b"1").unwrap();
    fs.create_dir_all(Path::new("/taken")).unwrap();
    let err = db.create_checkpoint("/taken").unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err}");
    db.close().unwrap();
}

/// Every file of `dir` with its bytes.
fn tree(fs: &dyn FileSystem, dir: &str) -> Vec<(String, Vec<u8>)> {
    let mut names = fs.list_dir(Path::new(dir)).unwrap();
    names.sort();
    names
        .into_iter()
        .filter(|n| !fs.is_dir(&Path::new(dir).join(n)))
        .map(|n| {
            let bytes = lithify_vfs::read_file(fs, &Path::new(dir).join(&n)).unwrap();
            (n, bytes)
        })
        .collect()
}

/// RocksDB makes checkpoints of a read-only open: the copy holds what the
/// open reads (tables, and the writes only the WALs hold), and the source
/// directory does not change by a byte.
#[test]
fn a_checkpoint_of_a_read_only_open_holds_what_it_reads() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let db = open(fs.clone(), "/db");
    for i in 0..400 {
        db.put(key(i), value(i)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    for i in 400..500 {
        db.put(key(i), value(i)).unwrap(); // only in the WAL
    }
    db.delete(key(3)).unwrap();
    db.close().unwrap();
    let mut want = model_after(500);
    want.remove(&key(3));

    let before = tree(&*fs, "/db");
    let ro = Db::open_read_only("/db", small_options(fs.clone())).unwrap();
    let info = ro.create_checkpoint("/copy").unwrap();
    assert_eq!(info.sequence, 501);
    assert!(!info.flushed);
    assert!(info.wals_copied >= 1, "{info:?}");
    assert_eq!(scan(&ro, &ReadOptions::default()), model_pairs(&want));
    drop(ro);
    assert_eq!(tree(&*fs, "/db"), before, "the source is unchanged");

    for read_only in [true, false] {
        let copy = if read_only {
            Db::open_read_only("/copy", small_options(fs.clone())).unwrap()
        } else {
            Db::open("/copy", small_options(fs.clone())).unwrap()
        };
        assert!(copy.recovery_report().dropped.is_empty());
        assert_eq!(scan(&copy, &ReadOptions::default()), model_pairs(&want));
        copy.close().unwrap();
    }
}

/// A fault at every mutation of the checkpoint, then a power loss: the
/// source reopens with everything it had, and the partial copy is either
/// absent, empty, or refused at open (it has no CURRENT); only a copy
/// whose CURRENT was written opens, and then it is complete.
#[test]
fn a_checkpoint_cut_short_at_any_step_leaves_the_source_intact() {
    // Returns whether the checkpoint succeeded (the fault, if any, came
    // after its last step).
    let run = |fail_at: Option<u64>| -> bool {
        let mem = MemFs::new();
        let fs = Arc::new(FaultFs::new(mem.clone()));
        let db = open(fs.clone(), "/db");
        for i in 0..1_500 {
            db.put(key(i), value(i)).unwrap();
        }
        db.flush_wal(true).unwrap();
        // Unflushed, synced writes: the copy must take them from the WAL.
        let options = CheckpointOptions::default().log_size_for_flush(u64::MAX);
        if let Some(n) = fail_at {
            fs.add_rule(FaultRule::fail_nth(OpKind::Mutation, n).on_paths_containing("/copy"));
        }
        let result = db.create_checkpoint_opt("/copy", &options);
        fs.clear_rules();
        if fail_at.is_none() {
            result.as_ref().unwrap();
        }
        // Deletions are enabled again, and the source still works.
        assert_eq!(db.enable_file_deletions(), 0);
        db.put(b"after", b"x").unwrap();
        db.flush_wal(true).unwrap();
        // Power loss: what is durable now, on a file system of its own
        // (the lost process's threads keep running on the old one).
        let after = mem.crash_clone();
        std::mem::forget(db);
        let mut want = model_after(1_500);
        want.insert(b"after".to_vec(), b"x".to_vec());
        let fs: Arc<dyn FileSystem> = Arc::new(after);
        let db = open(fs.clone(), "/db");
        assert_eq!(scan(&db, &ReadOptions::default()), model_pairs(&want));
        db.close().unwrap();
        let copy_path = Path::new("/copy");
        if fs.exists(&copy_path.join("CURRENT")) {
            let copy = open(fs.clone(), "/copy");
            assert_eq!(
                scan(&copy, &ReadOptions::default()),
                model_pairs(&model_after(1_500)),
                "a copy with CURRENT is complete (fault at {fail_at:?})"
            );
        } else if fs.exists(copy_path) && !fs.list_dir(copy_path).unwrap().is_empty() {
            let err = Db::open("/copy", small_options(fs.clone())).unwrap_err();
            assert!(err.to_string().contains("CURRENT"), "{err}");
        }
        result.is_ok()
    };
    assert!(run(None));
    let mut n = 1;
    while !run(Some(n)) {
        n += 1;
        assert!(n < 1_000, "the checkpoint keeps failing");
    }
    assert!(n > 5, "only {n} steps under /copy");
}

#[test]
fn live_files_and_nested_deletion_pinning() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let options = small_options(fs.clone()).disable_auto_compactions(true);
    let db = Db::open("/db", options).unwrap();
    for i in 0..3_000 {
        db.put(key(i), value(i)).unwrap();
    }
    db.flush().unwrap();
    let before = db.live_files();
    assert!(before.len() >= 2, "{} files", before.len());
    for f in &before {
        assert_eq!(f.table, "default");
        assert_eq!(fs.file_size(&f.path).unwrap(), f.size);
        assert!(f.smallest_key <= f.largest_key);
        assert!(f.smallest_seqno <= f.largest_seqno && f.largest_seqno <= 3_000);
        assert!(f.num_entries > 0);
    }
    db.disable_file_deletions();
    db.disable_file_deletions();
    db.compact_range(None, None).unwrap();
    let after = db.live_files();
    assert!(after.iter().all(|f| f.level > 0));
    let exists = |files: &[lithify_engine::LiveFileMetaData]| {
        files.iter().filter(|f| fs.exists(&f.path)).count()
    };
    assert_eq!(exists(&before), before.len(), "pinned: nothing deleted");
    assert_eq!(db.enable_file_deletions(), 1);
    assert_eq!(exists(&before), before.len(), "still pinned once");
    assert_eq!(db.enable_file_deletions(), 0);
    let replaced: Vec<_> = before
        .iter()
        .filter(|f| !after.iter().any(|a| a.number == f.number))
        .cloned()
        .collect();
    assert!(!replaced.is_empty());
    assert_eq!(exists(&replaced), 0, "deleted once enabled");
    assert_eq!(db.enable_file_deletions(), 0, "an extra enable is harmless");
    assert_eq!(
        scan(&db, &ReadOptions::default()),
        model_pairs(&model_after(3_000))
    );
}

/// Every table (column family) is in the copy, flushed or from the WAL.
#[test]
fn a_checkpoint_holds_every_table() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let db = open(fs.clone(), "/db");
    let users = db
        .create_table("users", lithify_engine::TableOptions::default())
        .unwrap();
    for i in 0..500 {
        db.put(key(i), value(i)).unwrap();
        users.put(key(i), b"user").unwrap();
    }
    users.flush().unwrap();
    for options in [
        CheckpointOptions::default(),
        CheckpointOptions::default().log_size_for_flush(u64::MAX),
    ] {
        let dest = format!("/copy-{}", options.log_size_for_flush);
        db.create_checkpoint_opt(&dest, &options).unwrap();
        let copy = open(fs.clone(), &dest);
        assert_eq!(copy.table_names(), ["default", "users"]);
        let t = copy.table("users").unwrap();
        assert_eq!(t.get(key(499)).unwrap().as_deref(), Some(&b"user"[..]));
        assert_eq!(
            scan(&copy, &ReadOptions::default()),
            model_pairs(&model_after(500))
        );
        drop(t);
        copy.close().unwrap();
    }
}
