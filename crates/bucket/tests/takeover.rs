//! The MANIFEST and CURRENT in the bucket: a writer on another machine
//! takes over and fences the first out (which then changes nothing: no
//! MANIFEST record, no CURRENT switch, no overwritten or deleted table); a
//! restart on the same machine loses nothing acknowledged; a read-only
//! open elsewhere sees what was flushed; damage in a MANIFEST part is
//! refused naming the file and offset.

use std::collections::BTreeMap;
use std::sync::Arc;

use lithify_bucket::{BucketFs, ReadOptions as CacheOptions, SplitFs};
use lithify_engine::{Db, Options, RecoveryMode, WriteOptions};
use lithify_test_support::bucket::{TestBucket, local_test_bucket, power_cut, test_bucket};
use lithify_vfs::{FileSystem, MemFs};

const DIR: &str = "/db";

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// A process on a machine whose local disk is `local`.
fn machine(local: Arc<MemFs>, t: &TestBucket) -> (Options, SplitFs) {
    let tables = BucketFs::new(
        t.bucket.clone(),
        DIR,
        &t.prefix,
        CacheOptions::default().with_cache_bytes(256 << 10),
    );
    let split = SplitFs::with_manifest_in_bucket(local, tables);
    let fs: Arc<dyn FileSystem> = Arc::new(split.clone());
    let options = Options::default()
        .fs(fs)
        .write_buffer_size(32 << 10)
        .level0_file_num_compaction_trigger(2)
        .max_bytes_for_level_base(64 << 10)
        .target_file_size_base(16 << 10)
        .block_size(512)
        .num_levels(4)
        // The previous writer's WALs are on its machine: what it did not
        // flush is reported dropped, not an error.
        .wal_recovery_mode(RecoveryMode::SkipAnyCorruptedRecords);
    (options, split)
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn contents(db: &Db) -> Model {
    db.iter()
        .map(|kv| {
            let (k, v) = kv.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect()
}

fn write(db: &Db, model: &mut Model, keys: std::ops::Range<u64>, tag: &str) {
    for i in keys {
        let v = format!("{tag}-{i}").repeat(3);
        db.put(key(i), &v).unwrap();
        model.insert(key(i), v.into_bytes());
    }
}

#[test]
fn a_writer_on_another_machine_fences_out_the_first() {
    let t = test_bucket("takeover");
    let (opts_a, fs_a) = machine(Arc::new(MemFs::new()), &t);
    let a = Db::open(DIR, opts_a).unwrap();
    assert_eq!(fs_a.epoch(), Some(1));
    let mut model = Model::new();
    write(&a, &mut model, 0..2000, "a");
    a.flush().unwrap();
    a.compact_range(None, None).unwrap();
    // Written but not flushed: on machine 1's WAL only.
    a.put(key(99_999), b"unflushed").unwrap();

    let (opts_b, fs_b) = machine(Arc::new(MemFs::new()), &t);
    let b = Db::open(DIR, opts_b).unwrap();
    assert_eq!(fs_b.epoch(), Some(2));
    let report = b.recovery_report();
    assert!(
        !report.is_clean(),
        "the previous writer's WAL is reported dropped"
    );
    assert!(
        report
            .dropped
            .iter()
            .any(|d| d.file.extension().is_some_and(|e| e == "log") && d.reason.contains("missing")),
        "{report}"
    );
    assert_eq!(contents(&b), model, "B starts from what A flushed");
    write(&b, &mut model, 1000..4000, "b");
    b.flush().unwrap();
    write(&b, &mut model, 3000..3500, "b2");
    b.flush().unwrap();

    // A does not know yet. Each of its MANIFEST writes fails, and so does
    // everything after: it uploads nothing over B's tables and deletes
    // none of them.
    a.put(key(5), b"stale").unwrap();
    let err = a.flush().unwrap_err().to_string();
    assert!(err.contains("fenced out"), "{err}");
    assert!(a.compact_range(None, None).is_err());
    assert!(
        a.put(key(6), b"stale").is_err(),
        "a fenced writer stops taking writes"
    );
    drop(a);

    // B goes on, and a third machine finds exactly B's data.
    write(&b, &mut model, 4000..4500, "b3");
    b.flush().unwrap();
    b.wait_for_compact().unwrap();
    assert_eq!(contents(&b), model);
    b.close().unwrap();
    let (opts_c, _) = machine(Arc::new(MemFs::new()), &t);
    let c = Db::open_read_only(DIR, opts_c).unwrap();
    assert_eq!(contents(&c), model);
    assert_eq!(c.get(key(99_999)).unwrap(), None);
}

#[test]
fn a_read_only_open_elsewhere_sees_the_flushed_state_and_claims_nothing() {
    let t = test_bucket("reader");
    let (opts, fs_w) = machine(Arc::new(MemFs::new()), &t);
    let w = Db::open(DIR, opts).unwrap();
    let mut model = Model::new();
    write(&w, &mut model, 0..1500, "w");
    w.flush().unwrap();
    let flushed = model.clone();
    write(&w, &mut model, 1500..1600, "unflushed");

    let (opts_r, fs_r) = machine(Arc::new(MemFs::new()), &t);
    let r = Db::open_read_only(DIR, opts_r).unwrap();
    assert_eq!(fs_r.epoch(), None, "a reader claims nothing");
    assert_eq!(
        contents(&r),
        flushed,
        "a reader on another machine sees what was flushed"
    );
    // The writer is not disturbed.
    w.flush().unwrap();
    assert_eq!(fs_w.epoch(), Some(1));
    assert_eq!(contents(&w), model);
}

#[test]
fn restarts_on_one_machine_lose_nothing_acknowledged() {
    let t = test_bucket("restart");
    let mut local = Arc::new(MemFs::new());
    let mut model = Model::new();
    let sync = WriteOptions::default().sync(true);
    let mut epoch = 0;
    for round in 0..8u64 {
        let (opts, fs) = machine(local.clone(), &t);
        let db = Db::open(DIR, opts).unwrap();
        assert!(
            fs.epoch().unwrap() > epoch,
            "each open claims a newer epoch"
        );
        epoch = fs.epoch().unwrap();
        assert_eq!(contents(&db), model, "round {round}");
        for i in 0..(300 + 97 * round) {
            let k = key((i * 7 + round * 13) % 2500);
            let v = format!("r{round}-{i}");
            db.put_opt(&k, &v, &sync).unwrap();
            model.insert(k, v.into_bytes());
        }
        if round.is_multiple_of(2) {
            db.flush().unwrap();
        }
        local = power_cut(&t, &local, db);
    }
    let (opts, _) = machine(local, &t);
    let db = Db::open(DIR, opts).unwrap();
    assert_eq!(contents(&db), model);
}

/// The live MANIFEST's name.
fn live_manifest(t: &TestBucket) -> String {
    let current = t.bucket.list(&format!("{}/CURRENT", t.prefix)).unwrap();
    let latest = current.last().unwrap();
    let text = t
        .bucket
        .get(&format!("{}/CURRENT/{latest}", t.prefix))
        .unwrap();
    let text = String::from_utf8(text.to_vec()).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("manifest "))
        .unwrap()
        .to_owned()
}

#[test]
fn damage_in_a_manifest_part_is_refused_naming_file_and_offset() {
    let t = test_bucket("manifest-damage");
    let (opts, _) = machine(Arc::new(MemFs::new()), &t);
    let db = Db::open(DIR, opts).unwrap();
    let mut model = Model::new();
    write(&db, &mut model, 0..500, "x");
    db.flush().unwrap();
    db.close().unwrap();
    let manifest = live_manifest(&t);
    let part = format!("{}/{manifest}/00000000000000000000", t.prefix);
    let mut bytes = t.bucket.get(&part).unwrap().to_vec();
    let at = bytes.len() - 3;
    bytes[at] ^= 0x10;
    t.bucket.put(&part, bytes.into(), false).unwrap();

    let (opts, _) = machine(Arc::new(MemFs::new()), &t);
    let err = Db::open(DIR, opts).unwrap_err().to_string();
    assert!(
        err.contains(&manifest),
        "the error names the MANIFEST: {err}"
    );
    assert!(err.contains("offset"), "the error names the offset: {err}");
}

#[test]
fn concurrent_claims_get_distinct_epochs_and_the_last_one_owns() {
    // Racing creates need the store's create-if-absent to be atomic (AWS
    // S3's is; the CI server's is not): object_store's local store.
    let t = local_test_bucket("claims");
    // A database to claim.
    let (opts, _) = machine(Arc::new(MemFs::new()), &t);
    Db::open(DIR, opts).unwrap().close().unwrap();
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (_, fs) = machine(Arc::new(MemFs::new()), &t);
            std::thread::spawn(move || (fs.claim().unwrap(), fs))
        })
        .collect();
    let mut claims: Vec<(u64, SplitFs)> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    claims.sort_by_key(|(e, _)| *e);
    let epochs: Vec<u64> = claims.iter().map(|(e, _)| *e).collect();
    let mut distinct = epochs.clone();
    distinct.dedup();
    assert_eq!(distinct, epochs, "two claims got one epoch: {epochs:?}");
    // The newest claim stands; every older one is fenced out.
    let (newest, fs) = claims.pop().unwrap();
    assert_eq!(fs.claim().unwrap(), newest, "claiming again is a no-op");
    for (_, older) in &claims {
        let err = older
            .remove_file(&std::path::Path::new(DIR).join("000099.sst"))
            .unwrap_err();
        assert!(err.to_string().contains("fenced out"), "{err}");
    }
    // A fenced-out process that opens the database again claims anew.
    let (_, again) = claims.pop().unwrap();
    assert!(again.claim().unwrap() > newest);
    let err = fs
        .remove_file(&std::path::Path::new(DIR).join("000099.sst"))
        .unwrap_err();
    assert!(err.to_string().contains("fenced out"), "{err}");
}

#[test]
fn a_creation_cut_short_before_its_current_is_created_again() {
    let t = test_bucket("cut-short");
    // MANIFEST-000001's first part reached the bucket, its CURRENT did not.
    t.bucket
        .put(
            &format!("{}/MANIFEST-000001/00000000000000000000", t.prefix),
            b"leftover bytes".to_vec().into(),
            false,
        )
        .unwrap();
    let (opts, _) = machine(Arc::new(MemFs::new()), &t);
    let db = Db::open(DIR, opts).unwrap();
    db.put(b"k", b"v").unwrap();
    db.flush().unwrap();
    db.close().unwrap();
    let (opts, _) = machine(Arc::new(MemFs::new()), &t);
    let db = Db::open(DIR, opts).unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}

#[test]
fn a_fenced_writer_neither_replaces_nor_deletes_the_new_writers_tables() {
    let t = test_bucket("zombie-files");
    let (opts, fs_a) = machine(Arc::new(MemFs::new()), &t);
    Db::open(DIR, opts).unwrap().close().unwrap();
    fs_a.claim().unwrap();
    let (_, fs_b) = machine(Arc::new(MemFs::new()), &t);
    assert!(fs_b.claim().unwrap() > fs_a.epoch().unwrap());
    let upload = |fs: &SplitFs, name: &str, bytes: &[u8]| {
        let mut f = fs.create(&std::path::Path::new(DIR).join(name))?;
        f.append(bytes)?;
        f.sync_all()
    };
    let read = |name: &str| {
        t.bucket
            .get(&format!("{}/{name}", t.prefix))
            .unwrap()
            .to_vec()
    };
    // Both took number 50: B first. A's upload is refused.
    upload(&fs_b, "000050.sst", b"B's table").unwrap();
    let err = upload(&fs_a, "000050.sst", b"A's table").unwrap_err();
    assert!(err.to_string().contains("fenced out"), "{err}");
    assert_eq!(read("000050.sst"), b"B's table");
    // Number 51: A first (an orphan nobody names). B replaces it.
    upload(&fs_a, "000051.sst", b"A's orphan").unwrap();
    upload(&fs_b, "000051.sst", b"B's table").unwrap();
    assert_eq!(read("000051.sst"), b"B's table");
    // A cannot delete B's tables either.
    let err = fs_a
        .remove_file(&std::path::Path::new(DIR).join("000051.sst"))
        .unwrap_err();
    assert!(err.to_string().contains("fenced out"), "{err}");
    assert_eq!(read("000051.sst"), b"B's table");
    fs_b.remove_file(&std::path::Path::new(DIR).join("000051.sst"))
        .unwrap();
}

#[test]
fn an_open_while_the_store_is_down_fails_and_creates_nothing() {
    let t = test_bucket("down-at-open");
    let mut model = Model::new();
    {
        let (opts, _) = machine(Arc::new(MemFs::new()), &t);
        let db = Db::open(DIR, opts).unwrap();
        write(&db, &mut model, 0..500, "first");
        db.flush().unwrap();
    }
    // Another machine opens while the store does not answer: the open
    // fails saying why, and writes nothing (the engine's own test,
    // `faults.rs`, covers a store that fails only at the CURRENT check).
    t.faults.set_down(true);
    let (opts, _) = machine(Arc::new(MemFs::new()), &t);
    let err = match Db::open(DIR, opts) {
        Ok(_) => panic!("an open with the store down succeeded"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("CURRENT"), "{err}");
    assert!(err.contains("after 4 tries"), "{err}");
    t.faults.set_down(false);
    let (opts, _) = machine(Arc::new(MemFs::new()), &t);
    let db = Db::open(DIR, opts).unwrap();
    assert_eq!(contents(&db), model, "the database is the one written");
}

#[test]
fn a_manifest_of_many_parts_is_read_whole_and_a_missing_one_is_named() {
    let t = test_bucket("manifest-parts");
    let (opts, _) = machine(Arc::new(MemFs::new()), &t);
    let db = Db::open(DIR, opts).unwrap();
    let mut model = Model::new();
    // One part per edit: every flush and compaction adds one.
    for round in 0..40u64 {
        write(
            &db,
            &mut model,
            round * 20..round * 20 + 60,
            &format!("r{round}"),
        );
        db.flush().unwrap();
    }
    db.close().unwrap();
    let manifest = live_manifest(&t);
    let parts = t.bucket.list(&format!("{}/{manifest}", t.prefix)).unwrap();
    assert!(parts.len() > 40, "{} parts", parts.len());

    // Read back at once, in order, by a read-only open (a read-write one
    // would write a new MANIFEST): the same database.
    let (opts, _) = machine(Arc::new(MemFs::new()), &t);
    let db = Db::open_read_only(DIR, opts).unwrap();
    assert_eq!(contents(&db), model);
    drop(db);

    // A part gone from the middle: refused, naming the part and the offset
    // where the MANIFEST breaks off.
    let gone = &parts[parts.len() / 2];
    t.bucket
        .delete(&format!("{}/{manifest}/{gone}", t.prefix))
        .unwrap();
    let (opts, _) = machine(Arc::new(MemFs::new()), &t);
    let err = match Db::open_read_only(DIR, opts) {
        Ok(_) => panic!("a MANIFEST with a part missing was opened"),
        Err(e) => e.to_string(),
    };
    let missing = format!("part {} is missing", parts.len() / 2);
    assert!(err.contains(&missing), "{err}");
    assert!(
        err.contains(&manifest) && err.contains("at offset"),
        "{err}"
    );
}
