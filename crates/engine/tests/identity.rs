//! File identity: every file a database adds is recorded with its unique
//! id and whole-file checksum, its WALs name it, and copies of it
//! (checkpoints, ingested files) keep opening.

use std::path::Path;

use lithify_engine::{Db, IngestOptions, Options, SstFileWriter};
use lithify_version::filename::{FileKind, parse_file_name};
use lithify_vfs::{FileSystem, OsFs};

fn options() -> Options {
    Options::default().disable_auto_compactions(true)
}

/// Every live file records a unique id and a checksum, and both hold.
fn assert_recorded(db: &Db) {
    let live = db.live_files();
    assert!(!live.is_empty());
    for f in live {
        assert!(f.unique_id.is_some(), "{:?}: no unique id", f.path);
        assert!(f.file_checksum.is_some(), "{:?}: no checksum", f.path);
        lithify_engine::check_sst_identity(&OsFs, &f.path, f.size, f.unique_id).unwrap();
        lithify_engine::check_sst_checksum(&OsFs, &f.path, f.size, f.file_checksum).unwrap();
    }
}

fn external(path: &Path, keys: std::ops::Range<u32>, tag: &str) {
    let mut w = SstFileWriter::create(path, &options()).unwrap();
    for i in keys {
        w.put(format!("k{i:04}"), format!("{tag}{i}")).unwrap();
    }
    w.finish().unwrap();
}

#[test]
fn flush_compaction_and_ingestion_record_unique_ids_and_checksums() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = Db::open(&dir, options()).unwrap();
    for i in 0..100u32 {
        db.put(format!("k{i:04}"), format!("v{i}")).unwrap();
    }
    db.flush().unwrap();
    assert_recorded(&db);
    db.compact_range(None, None).unwrap();
    assert_recorded(&db);
    // Ingested as it is (below everything: sequence 0, copied) and
    // rewritten with a sequence number (it overlaps what is there).
    let below = tmp.path().join("below.sst");
    external(&below, 200..300, "e");
    let over = tmp.path().join("over.sst");
    external(&over, 50..60, "o");
    let placed = db
        .ingest_external_file(&[&below, &over], &IngestOptions::default())
        .unwrap();
    assert_eq!(placed.len(), 2);
    assert_recorded(&db);
    // A file ingested as it is keeps the writer's identity; one rewritten
    // is this database's.
    let ids: Vec<_> = db.live_files().iter().map(|f| f.unique_id).collect();
    let unique: std::collections::BTreeSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "unique ids repeat: {ids:?}");
    drop(db);
    let db = Db::open(&dir, options()).unwrap();
    assert_eq!(db.get("k0055").unwrap().as_deref(), Some(&b"o55"[..]));
    assert_eq!(db.get("k0250").unwrap().as_deref(), Some(&b"e250"[..]));
}

#[test]
fn wals_name_their_database_and_copies_share_its_identity() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = Db::open(&dir, options()).unwrap();
    let id = db.db_id();
    db.put("a", "1").unwrap();
    db.flush().unwrap();
    db.put("b", "2").unwrap();
    db.flush_wal(true).unwrap();
    let mut wals = 0;
    for name in OsFs.list_dir(&dir).unwrap() {
        if let Some(FileKind::Log(n)) = parse_file_name(&name) {
            let path = dir.join(&name);
            // An obsolete WAL the background purge removed meanwhile.
            let Ok(file) = OsFs.open(&path) else {
                continue;
            };
            let mut r = lithify_wal::Reader::new(file, &path, n).unwrap();
            assert_eq!(r.owner().unwrap(), Some(id), "{name}");
            wals += 1;
        }
    }
    assert!(wals >= 1);
    // A checkpoint (hard-linked tables, a copied WAL) is a copy of the
    // database: same identity, every file checks against its own record.
    let cp = tmp.path().join("cp");
    db.create_checkpoint(&cp).unwrap();
    let session = db.session_id();
    drop(db);
    let copy = Db::open(&cp, options()).unwrap();
    assert_eq!(copy.db_id(), id);
    assert_ne!(copy.session_id(), session);
    assert_eq!(copy.get("b").unwrap().as_deref(), Some(&b"2"[..]));
    assert_recorded(&copy);
    // Its new files carry the new session.
    copy.put("c", "3").unwrap();
    copy.flush().unwrap();
    assert_recorded(&copy);
}

/// Once a database records its identity, every WAL it needs names it: a
/// WAL without an owner (an older format) under a live name came from
/// elsewhere. Every mode but skip refuses it naming the file; skip drops
/// it, reports it and keeps it in `lost/`.
#[test]
fn an_ownerless_wal_in_a_database_with_an_identity_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = Db::open(&dir, options()).unwrap();
    db.put("a", "1").unwrap();
    db.close().unwrap();
    let (number, path) = OsFs
        .list_dir(&dir)
        .unwrap()
        .into_iter()
        .filter_map(|n| match parse_file_name(&n) {
            Some(FileKind::Log(number)) => Some((number, dir.join(n))),
            _ => None,
        })
        .max()
        .unwrap();
    // The same number, the old header, a record longer than what the
    // MANIFEST records as synced.
    let mut w = lithify_wal::Writer::new(OsFs.create(&path).unwrap(), &path, number).unwrap();
    w.add_record(&[0u8; 200]).unwrap();
    w.close().unwrap();
    let err = Db::open(&dir, options()).unwrap_err().to_string();
    assert!(
        err.contains(&path.display().to_string()) && err.contains("names no database"),
        "{err}"
    );
    let err = Db::open_read_only(&dir, options()).unwrap_err().to_string();
    assert!(err.contains("names no database"), "{err}");
    let salvage =
        options().wal_recovery_mode(lithify_engine::RecoveryMode::SkipAnyCorruptedRecords);
    let db = Db::open(&dir, salvage).unwrap();
    let dropped = &db.recovery_report().dropped;
    assert!(
        dropped
            .iter()
            .any(|d| d.file == path && d.reason.contains("names no database") && d.kept.is_some()),
        "{dropped:?}"
    );
}

/// A live SST rewritten with a changed value but everything else the same
/// (its size, its writer's identity, so its unique id; every block and the
/// footer with valid checksums) is found by `check` through the whole-file
/// checksum the MANIFEST records, and only by it.
#[test]
fn check_finds_a_table_whose_whole_file_checksum_differs() {
    use std::sync::Arc;

    use lithify_base::InternalKeyComparator;
    use lithify_base::iter::InternalIterator as _;
    use lithify_sstable::{SstBuilder, SstOptions, SstReader};

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let db = Db::open(&dir, options()).unwrap();
    for i in 0..100u32 {
        db.put(format!("k{i:04}"), format!("v{i:04}")).unwrap();
    }
    db.flush().unwrap();
    let live = db.live_files();
    assert_eq!(live.len(), 1);
    let f = live[0].clone();
    db.close().unwrap();
    let fs: Arc<dyn FileSystem> = Arc::new(OsFs);
    assert!(
        lithify_engine::verify_sst_files(Arc::clone(&fs), &dir)
            .problems
            .is_empty()
    );

    // Rebuild the table entry by entry, one value changed, with the
    // properties the original records.
    let file = fs.open(&f.path).unwrap();
    let props = lithify_sstable::read_properties(&*file, &f.path, f.size).unwrap();
    let mut sst_options = SstOptions::for_internal_keys(InternalKeyComparator::new(
        std::sync::Arc::new(lithify_base::BytewiseComparator),
    ));
    sst_options.creation_time = Some(props.creation_time);
    let reader = Arc::new(SstReader::open(file, &f.path, f.size, &sst_options, None).unwrap());
    let mut entries = Vec::new();
    let mut it = reader.iter();
    it.first().unwrap();
    while it.valid() {
        entries.push((it.key().to_vec(), it.value().to_vec()));
        it.next().unwrap();
    }
    drop(it);
    drop(reader);
    assert_eq!(entries.len(), 100);
    let last = entries[50].1.len() - 1;
    entries[50].1[last] ^= 1;
    let mut b = SstBuilder::new(fs.create(&f.path).unwrap(), &f.path, &sst_options).unwrap();
    b.set_identity(
        props.db_id.unwrap(),
        props.db_session_id.unwrap(),
        props.orig_file_number,
    );
    for (k, v) in &entries {
        b.add(k, v).unwrap();
    }
    b.finish().unwrap();
    assert_eq!(
        fs.file_size(&f.path).unwrap(),
        f.size,
        "the rewrite keeps the size"
    );

    let check = lithify_engine::verify_sst_files(Arc::clone(&fs), &dir);
    assert_eq!(check.problems.len(), 1, "{:?}", check.problems);
    let problem = &check.problems[0];
    assert_eq!(problem.path, f.path);
    assert!(
        problem.message.contains("whole-file checksum"),
        "{}",
        problem.message
    );
}
