//! External SST files: written with `SstFileWriter`, ingested with
//! RocksDB's rules (level, global sequence number, flush first), checked
//! against a `BTreeMap` oracle, with snapshots, racing writers, damaged
//! files and power loss.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::{Model, model_pairs, scan, small_options};
use lithify_engine::{Db, IngestOptions, Options, ReadOptions, SstFileWriter};
use lithify_vfs::{FileSystem, MemFs};

fn options(fs: Arc<dyn FileSystem>) -> Options {
    small_options(fs)
}

/// Writes `entries` (sorted; `None` = delete) and `ranges` into `path`.
fn external(
    opts: &Options,
    path: &str,
    entries: &[(Vec<u8>, Option<Vec<u8>>)],
    ranges: &[(&[u8], &[u8])],
) -> PathBuf {
    let mut w = SstFileWriter::create(path, opts).unwrap();
    for (k, v) in entries {
        match v {
            Some(v) => w.put(k, v).unwrap(),
            None => w.delete(k).unwrap(),
        }
    }
    for (s, e) in ranges {
        w.delete_range(s, e).unwrap();
    }
    w.finish().unwrap().path
}

fn k(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

#[test]
fn a_file_overlapping_nothing_goes_to_the_last_level_with_sequence_zero() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let opts = options(fs.clone());
    let db = Db::open("/db", opts.clone()).unwrap();
    db.put(b"a", b"1").unwrap();
    db.flush().unwrap();
    let entries: Vec<_> = (0..500).map(|i| (k(i), Some(b"bulk".to_vec()))).collect();
    let path = external(&opts, "/ext1.sst", &entries, &[]);
    let placed = db
        .ingest_external_file(&[&path], &IngestOptions::default())
        .unwrap();
    assert_eq!(placed.len(), 1);
    assert_eq!(placed[0].level, opts.num_levels - 1);
    assert_eq!(placed[0].sequence, 0);
    assert!(fs.exists(&path), "copied, not moved");
    assert_eq!(db.get(k(7)).unwrap().as_deref(), Some(&b"bulk"[..]));
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert!(db.live_files().iter().any(|f| f.number == placed[0].number));
}

#[test]
fn an_overlapping_file_gets_a_sequence_number_and_wins() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let opts = options(fs.clone());
    let db = Db::open("/db", opts.clone()).unwrap();
    for i in 0..100 {
        db.put(k(i), b"old").unwrap();
    }
    db.flush().unwrap();
    // Unflushed too: the memtable must be flushed before the file lands.
    db.put(k(50), b"memtable").unwrap();
    let before = db.latest_sequence_number();
    let entries: Vec<_> = (40..60)
        .map(|i| (k(i), (i != 45).then(|| b"new".to_vec())))
        .collect();
    let path = external(&opts, "/ext.sst", &entries, &[]);
    let placed = db
        .ingest_external_file(&[&path], &IngestOptions::default().move_files(true))
        .unwrap();
    assert_eq!(placed[0].sequence, before + 1);
    assert_eq!(db.latest_sequence_number(), before + 1);
    assert!(!fs.exists(&path), "moved");
    assert_eq!(db.get(k(50)).unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(db.get(k(45)).unwrap(), None, "the file's delete wins");
    assert_eq!(db.get(k(10)).unwrap().as_deref(), Some(&b"old"[..]));
    // Later writes win over the file.
    db.put(k(41), b"later").unwrap();
    assert_eq!(db.get(k(41)).unwrap().as_deref(), Some(&b"later"[..]));
    // And after compaction everything still reads the same.
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get(k(41)).unwrap().as_deref(), Some(&b"later"[..]));
    assert_eq!(db.get(k(45)).unwrap(), None);
    assert_eq!(db.get(k(59)).unwrap().as_deref(), Some(&b"new"[..]));
}

#[test]
fn an_older_snapshot_does_not_see_ingested_keys() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let opts = options(fs.clone());
    let db = Db::open("/db", opts.clone()).unwrap();
    db.put(b"zzz", b"1").unwrap();
    let snap = db.snapshot();
    let entries: Vec<_> = (0..10).map(|i| (k(i), Some(b"v".to_vec()))).collect();
    let path = external(&opts, "/ext.sst", &entries, &[]);
    let placed = db
        .ingest_external_file(&[&path], &IngestOptions::default())
        .unwrap();
    assert!(placed[0].sequence > 0, "a snapshot is open");
    let at_snap = ReadOptions::at(&snap);
    assert_eq!(db.get_opt(k(3), &at_snap).unwrap(), None);
    assert_eq!(db.get(k(3)).unwrap().as_deref(), Some(&b"v"[..]));
    assert_eq!(scan(&db, &at_snap).len(), 1);
}

#[test]
fn damaged_and_foreign_files_are_refused_before_anything_changes() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let opts = options(fs.clone()).disable_auto_compactions(true);
    let db = Db::open("/db", opts.clone()).unwrap();
    for i in 0..2_000 {
        db.put(k(i), vec![b'x'; 50]).unwrap();
    }
    db.flush().unwrap();
    let before = (db.live_files(), db.latest_sequence_number());
    let entries: Vec<_> = (0..3_000).map(|i| (k(i), Some(vec![b'y'; 50]))).collect();
    let path = external(&opts, "/damaged.sst", &entries, &[]);
    let bytes = lithify_vfs::read_file(&*fs, &path).unwrap();
    let mut f = fs.open_append(&path).unwrap();
    f.write_at(1_000, &[bytes[1_000] ^ 0x10]).unwrap();
    drop(f);
    let good = external(&opts, "/good.sst", &[(k(9_000), Some(b"g".to_vec()))], &[]);
    let err = db
        .ingest_external_file(&[&good, &path], &IngestOptions::default())
        .unwrap_err();
    assert!(err.to_string().contains("/damaged.sst"), "{err}");
    // A table of the database itself carries real sequence numbers.
    let own = db.live_files()[0].path.clone();
    let err = db
        .ingest_external_file(&[&own], &IngestOptions::default())
        .unwrap_err();
    assert!(err.to_string().contains("not an external table"), "{err}");
    assert_eq!((db.live_files(), db.latest_sequence_number()), before);
    assert_eq!(
        db.get(k(9_000)).unwrap(),
        None,
        "nothing of the list landed"
    );
}

/// RocksDB accepts files that overlap one another in one call: all go to
/// L0, each with a sequence number of its own in the order given, so the
/// later file wins.
#[test]
fn files_overlapping_one_another_are_ingested_and_the_later_wins() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let opts = options(fs.clone());
    let db = Db::open("/db", opts.clone()).unwrap();
    db.put(b"before", b"1").unwrap();
    let a = external(
        &opts,
        "/a.sst",
        &[(k(1), Some(b"a".to_vec())), (k(5), Some(b"a".to_vec()))],
        &[],
    );
    let b = external(
        &opts,
        "/b.sst",
        &[(k(3), Some(b"b".to_vec())), (k(5), Some(b"b".to_vec()))],
        &[],
    );
    let seq = db.latest_sequence_number();
    let placed = db
        .ingest_external_file(&[&a, &b], &IngestOptions::default())
        .unwrap();
    assert_eq!(placed.len(), 2);
    assert_eq!(placed[0].external, a);
    assert_eq!((placed[0].level, placed[0].sequence), (0, seq + 1));
    assert_eq!((placed[1].level, placed[1].sequence), (0, seq + 2));
    assert_eq!(db.latest_sequence_number(), seq + 2);
    assert_eq!(db.get(k(5)).unwrap().as_deref(), Some(&b"b"[..]));
    assert_eq!(db.get(k(1)).unwrap().as_deref(), Some(&b"a"[..]));
    assert_eq!(db.get(k(3)).unwrap().as_deref(), Some(&b"b"[..]));
    // The other order: the other file wins.
    db.ingest_external_file(&[&b, &a], &IngestOptions::default())
        .unwrap();
    assert_eq!(db.get(k(5)).unwrap().as_deref(), Some(&b"a"[..]));
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get(k(5)).unwrap().as_deref(), Some(&b"a"[..]));
    assert_eq!(db.get(k(3)).unwrap().as_deref(), Some(&b"b"[..]));
}

/// RocksDB's rules look at keys, not ranges: a memtable is flushed only
/// when it holds a key inside a file's range, and a file gets a sequence
/// number only when a level holds a key inside its range.
#[test]
fn keys_around_a_file_neither_flush_nor_need_a_sequence_number() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let opts = options(fs.clone()).disable_auto_compactions(true);
    let db = Db::open("/db", opts.clone()).unwrap();
    // A bottom file spanning [a, z] with no key in between.
    db.put(b"a", b"1").unwrap();
    db.put(b"z", b"1").unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    // Memtable keys around the file's range, not in it.
    db.put(b"b", b"mem").unwrap();
    db.put(b"y", b"mem").unwrap();
    let files_before = db.live_files().len();
    let path = external(
        &opts,
        "/mid.sst",
        &[
            (b"m".to_vec(), Some(b"ing".to_vec())),
            (b"n".to_vec(), Some(b"ing".to_vec())),
        ],
        &[],
    );
    let placed = db
        .ingest_external_file(&[&path], &IngestOptions::default())
        .unwrap();
    assert_eq!(placed[0].sequence, 0, "no key of [m, n] exists");
    assert!(
        placed[0].level < opts.num_levels - 1,
        "the last level's file overlaps the range: {placed:?}"
    );
    assert_eq!(
        db.live_files().len(),
        files_before + 1,
        "the memtable was not flushed"
    );
    for (key, want) in [(&b"b"[..], &b"mem"[..]), (b"m", b"ing"), (b"z", b"1")] {
        assert_eq!(db.get(key).unwrap().as_deref(), Some(want));
    }
    // A memtable key inside the range does flush, and the file then gets a
    // sequence number above it.
    db.put(b"m", b"newer in memtable").unwrap();
    let again = external(
        &opts,
        "/m.sst",
        &[(b"m".to_vec(), Some(b"ingested".to_vec()))],
        &[],
    );
    let placed = db
        .ingest_external_file(&[&again], &IngestOptions::default())
        .unwrap();
    assert!(placed[0].sequence > 0);
    assert_eq!(db.get(b"m").unwrap().as_deref(), Some(&b"ingested"[..]));
    assert_eq!(db.get(b"b").unwrap().as_deref(), Some(&b"mem"[..]));
}

/// `move_files` never deletes a table the database reads: one of its own
/// files (here a bottommost one, whose entries carry sequence number 0 and
/// so pass as external) is refused by name, and stays.
#[test]
fn moving_in_a_table_of_the_database_itself_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let fs: Arc<dyn FileSystem> = Arc::new(lithify_vfs::OsFs);
    let db = Db::open(&path, options(fs.clone())).unwrap();
    for i in 0..100 {
        db.put(k(i), b"v").unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let own = db.live_files()[0].path.clone();
    // Reached through another spelling of the same directory.
    let spelled = dir.path().join("db/../db/.").join(own.file_name().unwrap());
    let moving = IngestOptions::default().move_files(true);
    for p in [&own, &spelled] {
        let err = db.ingest_external_file(&[p], &moving).unwrap_err();
        assert!(err.to_string().contains("of this database"), "{err}");
    }
    assert!(fs.exists(&own));
    db.close().unwrap();
    let db = Db::open(&path, options(fs)).unwrap();
    assert_eq!(db.get(k(7)).unwrap().as_deref(), Some(&b"v"[..]));
}

#[test]
fn range_deletions_in_an_ingested_file_delete_older_data() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let opts = options(fs.clone());
    let db = Db::open("/db", opts.clone()).unwrap();
    for i in 0..100 {
        db.put(k(i), b"old").unwrap();
    }
    db.flush().unwrap();
    let path = external(
        &opts,
        "/ext.sst",
        &[(k(20), Some(b"kept".to_vec()))],
        &[(&k(10), &k(30))],
    );
    db.ingest_external_file(&[&path], &IngestOptions::default())
        .unwrap();
    assert_eq!(db.get(k(9)).unwrap().as_deref(), Some(&b"old"[..]));
    assert_eq!(db.get(k(15)).unwrap(), None);
    assert_eq!(db.get(k(20)).unwrap().as_deref(), Some(&b"kept"[..]));
    assert_eq!(db.get(k(30)).unwrap().as_deref(), Some(&b"old"[..]));
}

/// Random puts, ingested files (with deletes and range deletes) and
/// snapshots against an oracle; a power cut and reopen at the end.
#[test]
fn random_ingestions_and_writes_match_the_oracle() {
    let mem = MemFs::new();
    let fs: Arc<dyn FileSystem> = Arc::new(mem.clone());
    let opts = options(fs.clone());
    let db = Db::open("/db", opts.clone()).unwrap();
    let mut model = Model::new();
    let mut snapshots = Vec::new();
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % n
    };
    for round in 0..60u32 {
        match next(4) {
            0 | 1 => {
                for _ in 0..50 {
                    let key = k(next(2_000) as u32);
                    let v = format!("put{round}").into_bytes();
                    db.put(&key, &v).unwrap();
                    model.insert(key, v);
                }
            }
            2 => {
                // One file, or two that may overlap (the later wins).
                let mut paths = Vec::new();
                for file in 0..1 + next(2) {
                    let start = next(1_900) as u32;
                    let mut keys: Vec<u32> = (0..20).map(|_| start + next(100) as u32).collect();
                    keys.sort_unstable();
                    keys.dedup();
                    let entries: Vec<_> = keys
                        .iter()
                        .map(|&i| {
                            (
                                k(i),
                                (next(5) != 0).then(|| format!("ing{round}.{file}").into_bytes()),
                            )
                        })
                        .collect();
                    let ranges: Vec<(Vec<u8>, Vec<u8>)> = if next(3) == 0 {
                        let s = start + next(50) as u32;
                        vec![(k(s), k(s + 10))]
                    } else {
                        Vec::new()
                    };
                    for (s, e) in &ranges {
                        let doomed: Vec<_> = model
                            .range(s.clone()..e.clone())
                            .map(|(k, _)| k.clone())
                            .collect();
                        for d in doomed {
                            model.remove(&d);
                        }
                    }
                    for (key, v) in &entries {
                        match v {
                            Some(v) => model.insert(key.clone(), v.clone()),
                            None => model.remove(key),
                        };
                    }
                    let range_refs: Vec<(&[u8], &[u8])> =
                        ranges.iter().map(|(s, e)| (&s[..], &e[..])).collect();
                    let name = format!("/ext{round}.{file}.sst");
                    paths.push(external(&opts, &name, &entries, &range_refs));
                }
                db.ingest_external_file(&paths, &IngestOptions::default())
                    .unwrap();
            }
            _ => snapshots.push((db.snapshot(), model.clone())),
        }
        assert_eq!(
            scan(&db, &ReadOptions::default()),
            model_pairs(&model),
            "round {round}"
        );
    }
    for (snap, want) in &snapshots {
        assert_eq!(scan(&db, &ReadOptions::at(snap)), model_pairs(want));
    }
    drop(snapshots);
    db.flush_wal(true).unwrap();
    let after: Arc<dyn FileSystem> = Arc::new(mem.crash_clone());
    std::mem::forget(db);
    let db = Db::open("/db", options(after)).unwrap();
    assert_eq!(scan(&db, &ReadOptions::default()), model_pairs(&model));
}

/// A writer puts keys interleaved with the ingested ones while the file is
/// ingested: the memtable overlaps, is flushed, and both end up complete.
#[test]
fn ingestion_racing_writes_keeps_both() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let opts = options(fs.clone());
    let db = Db::open("/db", opts.clone()).unwrap();
    let entries: Vec<_> = (0..2_000)
        .map(|i| (format!("k{i:05}0").into_bytes(), Some(b"ingested".to_vec())))
        .collect();
    let path = external(&opts, "/ext.sst", &entries, &[]);
    std::thread::scope(|s| {
        let writer = s.spawn(|| {
            for i in 0..2_000 {
                db.put(format!("k{i:05}1"), b"written").unwrap();
            }
        });
        db.ingest_external_file(&[Path::new(&path)], &IngestOptions::default())
            .unwrap();
        writer.join().unwrap();
    });
    let got = scan(&db, &ReadOptions::default());
    assert_eq!(got.len(), 4_000);
    for (key, v) in got {
        let want: &[u8] = if key.ends_with(b"0") {
            b"ingested"
        } else {
            b"written"
        };
        assert_eq!(v, want);
    }
}

#[test]
fn a_named_table_ingests_into_itself_only() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let opts = options(fs.clone());
    let db = Db::open("/db", opts.clone()).unwrap();
    let t = db
        .create_table("bulk", lithify_engine::TableOptions::default())
        .unwrap();
    t.put(k(1), b"old").unwrap();
    let entries: Vec<_> = (0..10).map(|i| (k(i), Some(b"new".to_vec()))).collect();
    let path = external(&opts, "/ext.sst", &entries, &[]);
    let placed = t
        .ingest_external_file(&[&path], &IngestOptions::default())
        .unwrap();
    assert!(placed[0].sequence > 0, "it overlaps the memtable's key");
    assert_eq!(t.get(k(1)).unwrap().as_deref(), Some(&b"new"[..]));
    assert_eq!(
        db.get(k(1)).unwrap(),
        None,
        "the default table is untouched"
    );
}

/// The MANIFEST write of an ingestion fails: the database turns
/// read-only, the file the record may name is kept, and both a reopen and
/// a power cut then a reopen find a consistent database (the ingestion
/// wholly there or wholly absent).
#[test]
fn a_failed_manifest_write_during_ingestion_loses_nothing() {
    use lithify_vfs::{FaultFs, FaultRule, OpKind};
    let mem = MemFs::new();
    let fs = Arc::new(FaultFs::new(mem.clone()));
    let opts = options(fs.clone());
    let db = Db::open("/db", opts.clone()).unwrap();
    for i in 0..50 {
        db.put(k(i), b"old").unwrap();
    }
    db.flush_wal(true).unwrap();
    let entries: Vec<_> = (40..60).map(|i| (k(i), Some(b"new".to_vec()))).collect();
    let path = external(&opts, "/ext.sst", &entries, &[]);
    fs.add_rule(FaultRule::fail_nth(OpKind::Sync, 1).on_paths_containing("MANIFEST"));
    let err = db
        .ingest_external_file(&[&path], &IngestOptions::default())
        .unwrap_err();
    assert!(err.is_read_only(), "{err}");
    assert!(db.background_error().is_some());
    assert!(db.put(b"x", b"y").is_err(), "read-only after the failure");
    fs.clear_rules();
    let after_cut: Arc<dyn FileSystem> = Arc::new(mem.crash_clone());
    drop(db);
    for fs in [fs as Arc<dyn FileSystem>, after_cut] {
        let db = Db::open("/db", options(fs)).unwrap();
        let ingested = db.get(k(45)).unwrap().as_deref() == Some(&b"new"[..]);
        for i in 0..60 {
            let want: Option<&[u8]> = match (i, ingested) {
                (40..60, true) => Some(b"new"),
                (0..50, _) => Some(b"old"),
                _ => None,
            };
            assert_eq!(
                db.get(k(i)).unwrap().as_deref(),
                want,
                "key {i}, ingested {ingested}"
            );
        }
        db.put(b"after", b"ok").unwrap();
    }
}
