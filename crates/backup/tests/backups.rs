//! Backups against an oracle: each restored backup equals the database as
//! it was when the backup was made; damage in the backup directory is
//! named by `verify` and refused by `restore`; a backup cut short at any
//! step by a fault and a power loss leaves the earlier backups restorable.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use lithify_backup::BackupEngine;
use lithify_engine::{Db, Options, ReadOptions};
use lithify_vfs::{FaultFs, FaultRule, FileSystem, MemFs, OpKind};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn options(fs: Arc<dyn FileSystem>) -> Options {
    Options::default()
        .fs(fs)
        .write_buffer_size(32 << 10)
        .target_file_size_base(16 << 10)
        .max_bytes_for_level_base(64 << 10)
        .level0_file_num_compaction_trigger(2)
        .block_size(1024)
}

fn contents(db: &Db) -> Model {
    db.iter_opt(&ReadOptions::default())
        .map(|kv| {
            let (k, v) = kv.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect()
}

/// Writes `range` (keys spread over the key space, values naming the
/// round) into `db` and `model`.
fn write(db: &Db, model: &mut Model, range: std::ops::Range<u64>, round: u32) {
    for i in range {
        let k = format!("key{:06}", (i * 7919) % 10_007).into_bytes();
        let mut v = format!("round{round}-{i}-").into_bytes();
        v.resize(80, b'.');
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
}

fn restored(fs: &Arc<dyn FileSystem>, backups: &BackupEngine, id: u32, dest: &str) -> Model {
    backups.restore(Some(id), dest).unwrap();
    let db = Db::open(dest, options(fs.clone())).unwrap();
    let got = contents(&db);
    db.close().unwrap();
    got
}

#[test]
fn each_backup_restores_the_database_as_it_was() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs.clone())).unwrap();
    let backups = BackupEngine::open(fs.clone(), "/backups").unwrap();
    let mut model = Model::new();
    let mut states = Vec::new();
    for round in 0..3 {
        write(
            &db,
            &mut model,
            round as u64 * 1_000..(round as u64 + 1) * 1_000 + 500,
            round,
        );
        let info = backups.create_backup(&db).unwrap();
        assert_eq!(info.id, round + 1);
        states.push((info.id, model.clone()));
    }
    // A backup without the flush: the WALs carry the last writes.
    write(&db, &mut model, 5_000..5_200, 9);
    let (info, _) = backups
        .create_backup_opt(
            &db,
            &lithify_engine::CheckpointOptions::default().log_size_for_flush(u64::MAX),
        )
        .unwrap();
    states.push((info.id, model.clone()));
    let list = backups.list().unwrap();
    assert_eq!(list.iter().map(|b| b.id).collect::<Vec<_>>(), [1, 2, 3, 4]);
    assert!(list.windows(2).all(|w| w[0].sequence < w[1].sequence));
    for (id, want) in &states {
        backups.verify(*id).unwrap();
        assert_eq!(
            &restored(&fs, &backups, *id, &format!("/r{id}")),
            want,
            "backup {id}"
        );
    }
    // Restoring the newest by default.
    backups.restore(None, "/latest").unwrap();
    let latest = Db::open("/latest", options(fs.clone())).unwrap();
    assert_eq!(contents(&latest), model);
    // Purge: keep two; the rest still restore, the purged are gone.
    assert_eq!(backups.purge_old_backups(2).unwrap(), [1, 2]);
    assert!(backups.verify(1).is_err());
    for (id, want) in &states[2..] {
        backups.verify(*id).unwrap();
        assert_eq!(&restored(&fs, &backups, *id, &format!("/p{id}")), want);
    }
    db.close().unwrap();
}

/// Without compactions, the tables of the first backup are all still live
/// at the second: it copies only the new ones.
#[test]
fn unchanged_tables_are_shared_not_copied() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let opts = options(fs.clone()).disable_auto_compactions(true);
    let db = Db::open("/db", opts).unwrap();
    let backups = BackupEngine::open(fs.clone(), "/backups").unwrap();
    let mut model = Model::new();
    write(&db, &mut model, 0..1_000, 0);
    let (_, first) = backups.create_backup_opt(&db, &Default::default()).unwrap();
    assert!(first.tables_copied > 0);
    assert_eq!(first.tables_shared, 0);
    write(&db, &mut model, 1_000..1_300, 1);
    let (second, stats) = backups.create_backup_opt(&db, &Default::default()).unwrap();
    assert_eq!(stats.tables_shared, first.tables_copied);
    assert!(stats.tables_copied >= 1, "the new writes' flush");
    assert_eq!(restored(&fs, &backups, second.id, "/r"), model);
    let shared = fs.list_dir(Path::new("/backups/shared")).unwrap();
    assert_eq!(shared.len(), first.tables_copied + stats.tables_copied);
}

#[test]
fn damage_in_a_backup_is_named_by_verify_and_refused_by_restore() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs.clone())).unwrap();
    let backups = BackupEngine::open(fs.clone(), "/backups").unwrap();
    let mut model = Model::new();
    write(&db, &mut model, 0..2_000, 0);
    let info = backups.create_backup(&db).unwrap();
    let shared = fs.list_dir(Path::new("/backups/shared")).unwrap();
    let victim = Path::new("/backups/shared").join(&shared[0]);
    // Flip one byte in the middle of a shared SST file.
    let bytes = lithify_vfs::read_file(&*fs, &victim).unwrap();
    let mut f = fs.open_append(&victim).unwrap();
    let at = bytes.len() as u64 / 2;
    f.write_at(at, &[bytes[at as usize] ^ 0x40]).unwrap();
    drop(f);
    let err = backups.verify(info.id).unwrap_err();
    assert!(err.to_string().contains(&shared[0]), "{err}");
    assert!(err.to_string().contains("checksum"), "{err}");
    let err = backups.restore(Some(info.id), "/restored").unwrap_err();
    assert!(err.to_string().contains(&shared[0]), "{err}");
    assert!(
        !fs.exists(Path::new("/restored")),
        "a refused restore leaves nothing behind"
    );
    // Nor the parents it had to create.
    backups
        .restore(Some(info.id), "/new/parents/restored")
        .unwrap_err();
    assert!(
        !fs.exists(Path::new("/new")),
        "a refused restore left parents"
    );
    // An empty directory given as the target stays, empty.
    fs.create_dir_all(Path::new("/empty")).unwrap();
    backups.restore(Some(info.id), "/empty").unwrap_err();
    assert!(fs.list_dir(Path::new("/empty")).unwrap().is_empty());
    // A cut metadata file makes its backup damaged, by name.
    let meta = Path::new("/backups/meta/1");
    let bytes = lithify_vfs::read_file(&*fs, meta).unwrap();
    let mut f = fs.create(meta).unwrap();
    f.append(&bytes[..bytes.len() - 5]).unwrap();
    drop(f);
    assert!(backups.list().unwrap().is_empty());
    let damaged = backups.corrupt_backups().unwrap();
    assert_eq!(damaged.len(), 1);
    assert!(damaged[0].path.ends_with("meta/1"), "{damaged:?}");
    let err = backups.verify(1).unwrap_err();
    // The name as the backup engine builds it (with `\\` on Windows).
    let named = Path::new("/backups").join("meta").join("1");
    assert!(
        err.to_string().contains(&named.display().to_string()),
        "{err}"
    );
    db.close().unwrap();
}

/// One damaged metadata file — cut, a garbage line, a changed size —
/// damages its own backup only: the others list, verify and restore (the
/// newest by default), new backups get new ids, nothing the damaged backup
/// may use is collected until it is deleted.
#[test]
fn one_damaged_backup_leaves_the_others_usable() {
    for damage in ["cut", "garbage line", "changed size"] {
        let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
        let db = Db::open("/db", options(fs.clone())).unwrap();
        let backups = BackupEngine::open(fs.clone(), "/backups").unwrap();
        let mut model = Model::new();
        let mut states = Vec::new();
        for round in 0..2u32 {
            write(&db, &mut model, 0..1_000 + 500 * u64::from(round), round);
            states.push((backups.create_backup(&db).unwrap().id, model.clone()));
        }
        let meta = Path::new("/backups/meta/1");
        let text = String::from_utf8(lithify_vfs::read_file(&*fs, meta).unwrap()).unwrap();
        let bad = match damage {
            "cut" => text[..text.len() / 2].to_owned(),
            "garbage line" => text.replacen("\nsequence", "\n%$#garbage\nsequence", 1),
            _ => {
                let line = text.lines().find(|l| l.starts_with("file table")).unwrap();
                let mut parts: Vec<String> = line.split(' ').map(str::to_owned).collect();
                parts[3] = format!("{}", parts[3].parse::<u64>().unwrap() + 1);
                text.replacen(line, &parts.join(" "), 1)
            }
        };
        lithify_vfs::write_file_atomic(&*fs, meta, bad.as_bytes()).unwrap();
        drop(backups);

        let shared_before = fs.list_dir(Path::new("/backups/shared")).unwrap();
        let backups = BackupEngine::open(fs.clone(), "/backups").unwrap();
        assert_eq!(
            fs.list_dir(Path::new("/backups/shared")).unwrap(),
            shared_before,
            "{damage}: nothing the damaged backup may use is collected"
        );
        let listed: Vec<u32> = backups.list().unwrap().iter().map(|b| b.id).collect();
        assert_eq!(listed, [2], "{damage}");
        assert_eq!(backups.corrupt_backups().unwrap()[0].id, 1, "{damage}");
        backups.verify(2).unwrap();
        assert!(backups.verify(1).is_err());
        assert!(backups.restore(Some(1), "/r1").is_err());
        assert!(!fs.exists(Path::new("/r1")));
        backups.restore(None, "/newest").unwrap();
        let restored = Db::open("/newest", options(fs.clone())).unwrap();
        assert_eq!(contents(&restored), states[1].1, "{damage}");
        restored.close().unwrap();
        // A new backup does not reuse the damaged one's id.
        write(&db, &mut model, 5_000..5_100, 7);
        assert_eq!(backups.create_backup(&db).unwrap().id, 3);
        // Deleting the damaged backup frees what only it used.
        backups.delete_backup(1).unwrap();
        assert!(backups.corrupt_backups().unwrap().is_empty());
        assert!(!fs.exists(Path::new("/backups/private/1")));
        for id in [2, 3] {
            backups.verify(id).unwrap();
        }
        db.close().unwrap();
    }
}

/// `backup create` reads every table it copies back block by block: a
/// damaged table of the database is refused, naming it, and no backup is
/// made of it.
#[test]
fn a_damaged_table_is_not_backed_up() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let opts = options(fs.clone())
        .disable_auto_compactions(true)
        .paranoid_checks(false);
    let db = Db::open("/db", opts.clone()).unwrap();
    let mut model = Model::new();
    write(&db, &mut model, 0..2_000, 0);
    db.flush().unwrap();
    let table = db.live_files()[0].path.clone();
    let mut f = fs.open_append(&table).unwrap();
    f.write_at(10, b"\xff\xfe").unwrap();
    drop(f);
    let backups = BackupEngine::open(fs.clone(), "/backups").unwrap();
    let err = backups.create_backup(&db).unwrap_err();
    assert_eq!(
        lithify_base::Classify::kind(&err),
        lithify_base::ErrorKind::Corruption,
        "{err}"
    );
    let name = table.file_name().unwrap().to_str().unwrap();
    assert!(
        err.to_string().contains(name) && err.to_string().contains("damaged"),
        "{err}"
    );
    assert!(backups.list().unwrap().is_empty());
    assert!(backups.corrupt_backups().unwrap().is_empty());
    assert!(
        fs.list_dir(Path::new("/backups/shared"))
            .unwrap()
            .is_empty(),
        "no copy of the damaged table stays"
    );
    db.close().unwrap();
}

/// Only `create` makes a backup directory: the read-only engine refuses a
/// missing one and creates nothing, and so does `open_existing`.
#[test]
fn only_create_makes_a_backup_directory() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    for open in [BackupEngine::open_read_only, BackupEngine::open_existing] {
        let err = open(fs.clone(), Path::new("/nowhere")).unwrap_err();
        assert!(err.to_string().contains("/nowhere does not exist"), "{err}");
        assert!(!fs.exists(Path::new("/nowhere")));
    }
    let db = Db::open("/db", options(fs.clone())).unwrap();
    db.put(b"k", b"v").unwrap();
    let backups = BackupEngine::open(fs.clone(), "/backups").unwrap();
    backups.create_backup(&db).unwrap();
    drop(backups);
    let read_only = BackupEngine::open_read_only(fs.clone(), "/backups").unwrap();
    assert_eq!(read_only.list().unwrap().len(), 1);
    assert!(read_only.create_backup(&db).is_err());
    assert!(read_only.purge_old_backups(0).is_err());
    db.close().unwrap();
}

/// A fault at every mutation of the third backup, then a power loss: the
/// reopened backup directory lists the first two (and the third only if
/// its metadata was written), and every listed backup restores to its
/// state; leftovers are deleted.
#[test]
fn a_backup_cut_short_at_any_step_leaves_the_earlier_ones() {
    let run = |fail_at: Option<u64>| -> bool {
        let mem = MemFs::new();
        let fs = Arc::new(FaultFs::new(mem.clone()));
        let dyn_fs: Arc<dyn FileSystem> = fs.clone();
        let db = Db::open("/db", options(dyn_fs.clone())).unwrap();
        let backups = BackupEngine::open(dyn_fs.clone(), "/backups").unwrap();
        let mut model = Model::new();
        let mut states = Vec::new();
        for round in 0..3u32 {
            write(&db, &mut model, 0..800 + 300 * round as u64, round);
            if round == 2
                && let Some(n) = fail_at
            {
                fs.add_rule(
                    FaultRule::fail_nth(OpKind::Mutation, n).on_paths_containing("/backups"),
                );
            }
            match backups.create_backup(&db) {
                Ok(info) => states.push((info.id, model.clone())),
                Err(e) => assert!(round == 2 && fail_at.is_some(), "{e}"),
            }
        }
        let complete = states.len() == 3;
        fs.clear_rules();
        let after: Arc<dyn FileSystem> = Arc::new(mem.crash_clone());
        drop(backups);
        std::mem::forget(db);
        let backups = BackupEngine::open(after.clone(), "/backups").unwrap();
        let listed: Vec<u32> = backups.list().unwrap().iter().map(|b| b.id).collect();
        assert!(listed.len() >= 2, "{listed:?} at {fail_at:?}");
        for id in &listed {
            let want = &states
                .iter()
                .find(|(i, _)| i == id)
                .expect("a listed backup was acknowledged")
                .1;
            backups.verify(*id).unwrap();
            let dest = format!("/r{id}");
            backups.restore(Some(*id), &dest).unwrap();
            let db = Db::open(&dest, options(after.clone())).unwrap();
            assert_eq!(&contents(&db), want, "backup {id} at {fail_at:?}");
        }
        // Nothing but the listed backups' files remain.
        let private = after.list_dir(Path::new("/backups/private")).unwrap();
        assert_eq!(
            private,
            listed.iter().map(u32::to_string).collect::<Vec<_>>()
        );
        complete
    };
    assert!(run(None));
    let mut n = 1;
    while !run(Some(n)) {
        n += 1;
        assert!(n < 2_000, "the backup keeps failing");
    }
    assert!(n > 5, "only {n} steps");
}

#[test]
fn a_backup_restores_every_table() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs.clone())).unwrap();
    let t = db
        .create_table("events", lithify_engine::TableOptions::default())
        .unwrap();
    let mut model = Model::new();
    write(&db, &mut model, 0..600, 0);
    for i in 0..300u32 {
        t.put(format!("e{i:04}"), b"event").unwrap();
    }
    let backups = BackupEngine::open(fs.clone(), "/backups").unwrap();
    let info = backups.create_backup(&db).unwrap();
    drop(t);
    db.close().unwrap();
    backups.restore(Some(info.id), "/restored").unwrap();
    let restored = Db::open("/restored", options(fs.clone())).unwrap();
    assert_eq!(contents(&restored), model);
    let t = restored.table("events").unwrap();
    assert_eq!(t.get(b"e0299").unwrap().as_deref(), Some(&b"event"[..]));
}
