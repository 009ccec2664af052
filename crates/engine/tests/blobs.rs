//! Key-value separation end to end: values of at least `min_blob_size`
//! bytes go to blob files at flush, reads in every direction return them,
//! compaction carries their blob indexes (and relocates the oldest with
//! garbage collection on, so old blob files are deleted), checkpoints and
//! reopens keep them, and a missing or damaged blob file is refused at
//! open or reported on read, naming the file.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::{Model, scan, small_options};
use lithify_base::ErrorKind;
use lithify_engine::{
    BlobOptions, BlockCache, BottommostLevelCompaction, CompactRangeOptions, Db, Options,
    ReadOptions,
};
use lithify_version::filename::{FileKind, parse_file_name};
use lithify_vfs::{FileSystem, MemFs};

fn options(fs: Arc<MemFs>, blob: BlobOptions) -> Options {
    small_options(fs).blob(blob.blob_file_size(16 << 10))
}

fn blob_files(fs: &MemFs, dir: &str) -> Vec<u64> {
    let mut n: Vec<u64> = fs
        .list_dir(Path::new(dir))
        .unwrap()
        .iter()
        .filter_map(|name| match parse_file_name(name) {
            Some(FileKind::Blob(n)) => Some(n),
            _ => None,
        })
        .collect();
    n.sort_unstable();
    n
}

fn value(i: u32, round: u32, len: usize) -> Vec<u8> {
    let mut v = format!("value-{i}-{round}-").into_bytes();
    v.resize(len, b'a' + (i % 26) as u8);
    v
}

/// Puts `keys` keys of round `round` with `len`-byte values, then flushes.
fn put_and_flush(db: &Db, keys: u32, round: u32, len: usize) {
    for i in 0..keys {
        db.put(key(i), value(i, round, len)).unwrap();
    }
    db.flush().unwrap();
}

/// A full compaction that rewrites the bottom level as well.
fn force_bottom() -> CompactRangeOptions {
    CompactRangeOptions::default().bottommost_level_compaction(BottommostLevelCompaction::Force)
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

#[test]
fn large_values_live_in_blob_files_and_read_back_everywhere() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs.clone(), BlobOptions::enabled(100))).unwrap();
    let mut model = Model::new();
    for i in 0..300u32 {
        // Every third value stays inline (under min_blob_size).
        let len = if i % 3 == 0 { 40 } else { 700 };
        let v = value(i, 0, len);
        db.put(key(i), &v).unwrap();
        model.insert(key(i), v);
    }
    let snap = db.snapshot();
    let before = model.clone();
    db.flush().unwrap();
    assert!(
        !blob_files(&fs, "/db").is_empty(),
        "the flush wrote blob files"
    );
    for (k, v) in &model {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(&v[..]));
    }
    assert_eq!(
        scan(&db, &ReadOptions::default()),
        common::model_pairs(&model)
    );
    let backward: Vec<_> = db
        .iter_opt(&ReadOptions::default())
        .rev()
        .map(|kv| kv.unwrap())
        .map(|(k, v)| (k.to_vec(), v.to_vec()))
        .collect();
    let mut expected = common::model_pairs(&model);
    expected.reverse();
    assert_eq!(backward, expected);
    assert!(db.stats().get_blob_reads > 0);

    // Overwrite half, compact: the snapshot still sees the old values.
    for i in (0..300u32).step_by(2) {
        let v = value(i, 1, 900);
        db.put(key(i), &v).unwrap();
        model.insert(key(i), v);
    }
    db.compact_range(None, None).unwrap();
    assert_eq!(
        scan(&db, &ReadOptions::default()),
        common::model_pairs(&model)
    );
    assert_eq!(
        scan(&db, &ReadOptions::at(&snap)),
        common::model_pairs(&before)
    );
    drop(snap);

    // A checkpoint holds the blob files, and opens with every value.
    db.create_checkpoint("/cp").unwrap();
    assert_eq!(blob_files(&fs, "/cp").len(), {
        let live = blob_files(&fs, "/db");
        live.len()
    });
    db.close().unwrap();
    let cp = Db::open("/cp", options(fs.clone(), BlobOptions::enabled(100))).unwrap();
    assert_eq!(
        scan(&cp, &ReadOptions::default()),
        common::model_pairs(&model)
    );
    cp.close().unwrap();
    let db = Db::open("/db", options(fs.clone(), BlobOptions::default())).unwrap();
    assert_eq!(
        scan(&db, &ReadOptions::default()),
        common::model_pairs(&model)
    );
}

#[test]
fn garbage_collection_empties_and_deletes_old_blob_files() {
    let fs = Arc::new(MemFs::new());
    let gc = BlobOptions::enabled(100)
        .enable_blob_garbage_collection(true)
        .blob_garbage_collection_age_cutoff(1.0);
    let db = Db::open("/db", options(fs.clone(), gc)).unwrap();
    let mut model = Model::new();
    for round in 0..3u32 {
        for i in 0..200u32 {
            let v = value(i, round, 600);
            db.put(key(i), &v).unwrap();
            model.insert(key(i), v);
        }
        db.flush().unwrap();
    }
    let before = blob_files(&fs, "/db");
    assert!(before.len() >= 3);
    // With the cutoff at 1.0 a compaction relocates every value it reads:
    // a full compaction that also rewrites the bottom level (files moved
    // there trivially keep their references, as in RocksDB) leaves the old
    // blob files without a reference, and they are deleted.
    let force = CompactRangeOptions::default()
        .bottommost_level_compaction(BottommostLevelCompaction::Force);
    db.compact_range_opt(None, None, &force).unwrap();
    let after = blob_files(&fs, "/db");
    assert!(
        after.iter().all(|n| !before.contains(n)),
        "{before:?} -> {after:?}"
    );
    assert_eq!(
        scan(&db, &ReadOptions::default()),
        common::model_pairs(&model)
    );
    db.close().unwrap();
    let db = Db::open("/db", options(fs.clone(), gc)).unwrap();
    assert_eq!(
        scan(&db, &ReadOptions::default()),
        common::model_pairs(&model)
    );
}

#[test]
fn garbage_collection_reads_old_blob_files_ahead() {
    // The same relocation with each value read alone and with readahead:
    // the result is the same, the reads of the file system far fewer.
    let relocate = |readahead: u64| {
        let fs = Arc::new(lithify_vfs::FaultFs::new(MemFs::new()));
        let gc = BlobOptions::enabled(100)
            .enable_blob_garbage_collection(true)
            .blob_garbage_collection_age_cutoff(1.0)
            .blob_compaction_readahead_size(readahead);
        let db = Db::open("/db", small_options(fs.clone()).blob(gc)).unwrap();
        for round in 0..3u32 {
            put_and_flush(&db, 300, round, 600);
        }
        fs.reset_counts();
        db.compact_range_opt(None, None, &force_bottom()).unwrap();
        let reads = fs.counts().reads;
        let pairs = scan(&db, &ReadOptions::default());
        (reads, pairs)
    };
    let (alone, pairs) = relocate(0);
    let (ahead, same) = relocate(1 << 20);
    assert_eq!(pairs, same);
    assert_eq!(pairs.len(), 300);
    assert!(pairs.iter().all(|(k, v)| {
        let i: u32 = std::str::from_utf8(&k[3..]).unwrap().parse().unwrap();
        *v == value(i, 2, 600)
    }));
    // 300 values relocated: at least one read each without readahead.
    assert!(alone >= 300, "{alone}");
    assert!(
        ahead * 2 < alone,
        "{ahead} reads with readahead, {alone} without"
    );
}

#[test]
fn a_missing_cut_or_foreign_blob_file_is_refused_at_open() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs.clone(), BlobOptions::enabled(10))).unwrap();
    put_and_flush(&db, 50, 0, 300);
    db.close().unwrap();
    let blob = blob_files(&fs, "/db")[0];
    let path = Path::new("/db").join(format!("{blob:06}.blob"));
    let bytes = lithify_vfs::read_file(&*fs, &path).unwrap();

    // Cut short.
    lithify_vfs::write_file_atomic(&*fs, &path, &bytes[..bytes.len() - 5]).unwrap();
    let err = Db::open("/db", options(fs.clone(), BlobOptions::enabled(10))).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corruption);
    assert!(
        err.to_string().contains(&format!("{blob:06}.blob")),
        "{err}"
    );

    // Missing.
    fs.remove_file(&path).unwrap();
    let err = Db::open("/db", options(fs.clone(), BlobOptions::enabled(10))).unwrap_err();
    assert!(err.to_string().contains("missing"), "{err}");

    // A bit flipped inside a value: the open succeeds (sizes and footer
    // are right), the read of that value names the file and offset.
    let mut flipped = bytes.clone();
    flipped[64 + 21 + 8 + 3] ^= 0x10;
    lithify_vfs::write_file_atomic(&*fs, &path, &flipped).unwrap();
    let db = Db::open("/db", options(fs.clone(), BlobOptions::enabled(10))).unwrap();
    let errors: Vec<_> = (0..50u32).filter_map(|i| db.get(key(i)).err()).collect();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].kind(), ErrorKind::Corruption);
    assert!(
        errors[0].to_string().contains(&format!("{blob:06}.blob")),
        "{}",
        errors[0]
    );
    assert!(errors[0].to_string().contains("offset 64"), "{}", errors[0]);
}

#[test]
fn stats_properties_and_live_blob_files_count_blob_files_and_their_garbage() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs.clone(), BlobOptions::enabled(100))).unwrap();
    put_and_flush(&db, 100, 0, 500);
    // The second round overwrites the even keys: once compacted, half of
    // each first-round blob file is garbage (none is all garbage, which
    // would drop it).
    for i in (0..100u32).step_by(2) {
        db.put(key(i), value(i, 1, 500)).unwrap();
    }
    db.flush().unwrap();
    // Rewrite the bottom level too: files moved there trivially keep
    // their references.
    db.compact_range_opt(None, None, &force_bottom()).unwrap();
    let blobs = db.live_blob_files();
    assert!(blobs.iter().all(|b| b.table == "default"));
    assert_eq!(
        blobs.iter().map(|b| b.blob_count).sum::<u64>(),
        150,
        "{blobs:?}"
    );
    let garbage: u64 = blobs.iter().map(|b| b.garbage_count).sum();
    assert_eq!(garbage, 50, "{blobs:?}");
    let garbage_bytes: u64 = blobs.iter().map(|b| b.garbage_bytes).sum();
    let file_bytes: u64 = blobs.iter().map(|b| b.size).sum();
    for b in &blobs {
        assert_eq!(fs.file_size(&b.path).unwrap(), b.size);
    }

    let stats = db.stats();
    assert_eq!(stats.blob_files, blobs.len());
    assert_eq!(stats.blob_file_bytes, file_bytes);
    assert_eq!(stats.blob_garbage_bytes, garbage_bytes);
    assert_eq!(stats.tables[0].blob_files, blobs.len());
    // The table's write amplification counts what it wrote to blob files.
    let t = &stats.tables[0];
    assert!(t.blob_write_bytes >= file_bytes, "{t:?}");
    assert!(
        t.write_amp * t.user_bytes as f64
            >= (t.flush_bytes + t.compaction_write_bytes + t.blob_write_bytes) as f64 - 1.0,
        "{t:?}"
    );
    // Space amplification counts the blob files and their garbage.
    assert!(stats.space_amp > 1.0, "{}", stats.space_amp);
    let property = |name: &str| db.property(name).unwrap();
    assert_eq!(property("lithify.num-blob-files"), blobs.len().to_string());
    assert_eq!(
        property("lithify.live-blob-file-size"),
        file_bytes.to_string()
    );
    assert_eq!(
        property("lithify.live-blob-file-garbage-size"),
        garbage_bytes.to_string()
    );

    let gets_before = db.stats().get_blob_reads;
    for i in 0..10u32 {
        let round = if i % 2 == 0 { 1 } else { 0 };
        assert_eq!(db.get(key(i)).unwrap().unwrap(), value(i, round, 500));
    }
    let stats = db.stats();
    assert_eq!(stats.get_blob_reads - gets_before, 10);
    let text = stats.to_string();
    assert!(text.contains("Blob files: "), "{text}");
    assert!(text.contains("blob reads by"), "{text}");
}

#[test]
fn the_file_check_reads_every_blob_record_and_names_damage() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs.clone(), BlobOptions::enabled(10))).unwrap();
    put_and_flush(&db, 50, 0, 300);
    db.close().unwrap();
    let check = lithify_engine::verify_sst_files(fs.clone(), Path::new("/db"));
    assert!(check.problems.is_empty(), "{:?}", check.problems);
    assert_eq!(check.blob_values, 50);
    assert!(check.blob_files >= 1);

    // A flipped bit inside the last value: the open does not read it,
    // the check does, naming the file and the record's offset.
    let blob = *blob_files(&fs, "/db").last().unwrap();
    let path = Path::new("/db").join(format!("{blob:06}.blob"));
    let mut bytes = lithify_vfs::read_file(&*fs, &path).unwrap();
    let at = bytes.len() - 32 - 10;
    bytes[at] ^= 0x01;
    lithify_vfs::write_file_atomic(&*fs, &path, &bytes).unwrap();
    let check = lithify_engine::verify_sst_files(fs.clone(), Path::new("/db"));
    assert_eq!(check.problems.len(), 1, "{:?}", check.problems);
    let problem = &check.problems[0];
    assert_eq!(problem.path, path);
    assert!(problem.message.contains("offset"), "{}", problem.message);

    // Cut short: named as such.
    lithify_vfs::write_file_atomic(&*fs, &path, &bytes[..bytes.len() - 1]).unwrap();
    let check = lithify_engine::verify_sst_files(fs.clone(), Path::new("/db"));
    assert_eq!(check.problems.len(), 1, "{:?}", check.problems);
    assert!(
        check.problems[0].message.contains("cut short"),
        "{}",
        check.problems[0].message
    );
}

#[test]
fn ingestion_refuses_a_table_of_blob_indexes() {
    // A fully compacted bottom level zeroes sequence numbers: its SST then
    // looks external, but its blob indexes point into this database's
    // blob files, which ingestion would not bring along.
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/a", options(fs.clone(), BlobOptions::enabled(10))).unwrap();
    put_and_flush(&db, 20, 0, 200);
    let force = CompactRangeOptions::default()
        .bottommost_level_compaction(BottommostLevelCompaction::Force);
    db.compact_range_opt(None, None, &force).unwrap();
    let sst = db.live_files()[0].path.clone();
    let other = Db::open("/b", options(fs.clone(), BlobOptions::enabled(10))).unwrap();
    let err = other
        .ingest_external_file(&[&sst], &lithify_engine::IngestOptions::default())
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(err.to_string().contains("blob index"), "{err}");
    assert_eq!(other.get(key(0)).unwrap(), None);
}

#[test]
fn forced_garbage_collection_rewrites_what_pins_a_mostly_garbage_blob_file() {
    // Without garbage collection, overwrites leave the oldest blob files
    // mostly garbage, still pinned by the few SST entries that remain.
    let fs = Arc::new(MemFs::new());
    let plain = BlobOptions::enabled(100);
    let db = Db::open("/db", options(fs.clone(), plain)).unwrap();
    let mut model = Model::new();
    for (round, keys) in [(0u32, 100u32), (1, 90)] {
        for i in 0..keys {
            let v = value(i, round, 500);
            db.put(key(i), &v).unwrap();
            model.insert(key(i), v);
        }
        db.flush().unwrap();
        // Rewrite the bottom level too: files moved there trivially keep
        // their references.
        db.compact_range_opt(None, None, &force_bottom()).unwrap();
    }
    let before = db.live_blob_files();
    let oldest = before[0].number;
    assert!(before[0].garbage_count > 0, "{before:?}");
    db.close().unwrap();

    // Reopened with forced garbage collection: the oldest half of the blob
    // files is mostly garbage, so the SSTs pinning the oldest file are
    // rewritten (relocating its live values) and it is deleted, with no
    // write touching those keys.
    let forced = plain
        .enable_blob_garbage_collection(true)
        .blob_garbage_collection_age_cutoff(0.5)
        .blob_garbage_collection_force_threshold(0.3);
    let db = Db::open("/db", options(fs.clone(), forced)).unwrap();
    let mut rounds = 0;
    while db.live_blob_files().iter().any(|b| b.number == oldest) {
        rounds += 1;
        assert!(
            rounds < 500,
            "blob file {oldest} was not collected: {:?}",
            db.live_blob_files()
        );
        // A small write and flush wake the background threads.
        std::thread::sleep(std::time::Duration::from_millis(10));
        db.put(b"poke", b"x").unwrap();
        db.flush().unwrap();
    }
    if rounds > 0 {
        model.insert(b"poke".to_vec(), b"x".to_vec());
    }
    assert_eq!(
        scan(&db, &ReadOptions::default()),
        common::model_pairs(&model)
    );
}

#[test]
fn set_options_turns_separation_and_collection_on_and_off_for_new_files() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs.clone(), BlobOptions::default())).unwrap();
    let table = db.default_table();
    let mut model = Model::new();
    let mut write = |round: u32| {
        for i in 0..60u32 {
            let v = value(i, round, 400);
            db.put(key(i), &v).unwrap();
            model.insert(key(i), v);
        }
        db.flush().unwrap();
    };
    write(0);
    assert!(db.live_blob_files().is_empty());

    // On: the next flush separates.
    table
        .set_options(&[("enable_blob_files", "true"), ("min_blob_size", "100")])
        .unwrap();
    write(1);
    assert!(!db.live_blob_files().is_empty());

    // Off, with garbage collection of every blob file: a full compaction
    // brings every separated value back inline, and the blob files go.
    table
        .set_options(&[
            ("enable_blob_files", "false"),
            ("enable_blob_garbage_collection", "true"),
            ("blob_garbage_collection_age_cutoff", "1.0"),
        ])
        .unwrap();
    let force = CompactRangeOptions::default()
        .bottommost_level_compaction(BottommostLevelCompaction::Force);
    db.compact_range_opt(None, None, &force).unwrap();
    assert!(
        db.live_blob_files().is_empty(),
        "{:?}",
        db.live_blob_files()
    );
    assert!(blob_files(&fs, "/db").is_empty());
    assert_eq!(
        scan(&db, &ReadOptions::default()),
        common::model_pairs(&model)
    );

    // A bad change changes nothing.
    let before = table.blob_options().unwrap();
    let err = table
        .set_options(&[
            ("min_blob_size", "10"),
            ("blob_garbage_collection_age_cutoff", "2"),
        ])
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert_eq!(table.blob_options().unwrap(), before);
}

#[test]
fn obsolete_blob_files_wait_for_file_deletions_to_be_enabled_again() {
    let fs = Arc::new(MemFs::new());
    let gc = BlobOptions::enabled(100)
        .enable_blob_garbage_collection(true)
        .blob_garbage_collection_age_cutoff(1.0);
    let db = Db::open("/db", options(fs.clone(), gc)).unwrap();
    put_and_flush(&db, 100, 0, 500);
    let before = blob_files(&fs, "/db");
    db.disable_file_deletions();
    // Every value relocated: the old blob files leave the version, but
    // stay on disk while deletions are disabled (a backup may be copying
    // them).
    let force = CompactRangeOptions::default()
        .bottommost_level_compaction(BottommostLevelCompaction::Force);
    db.compact_range_opt(None, None, &force).unwrap();
    let live: Vec<u64> = db.live_blob_files().iter().map(|b| b.number).collect();
    assert!(
        before.iter().all(|n| !live.contains(n)),
        "{before:?} {live:?}"
    );
    let on_disk = blob_files(&fs, "/db");
    assert!(before.iter().all(|n| on_disk.contains(n)), "{on_disk:?}");
    assert_eq!(db.enable_file_deletions(), 0);
    let on_disk = blob_files(&fs, "/db");
    assert!(before.iter().all(|n| !on_disk.contains(n)), "{on_disk:?}");
    assert_eq!(on_disk, live);
    for i in 0..100u32 {
        assert_eq!(db.get(key(i)).unwrap().unwrap(), value(i, 0, 500));
    }
}

#[test]
fn values_are_cached_only_in_a_blob_cache_the_options_name() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(fs.clone(), BlobOptions::enabled(100))).unwrap();
    put_and_flush(&db, 100, 0, 500);
    drop(db);

    // Two passes over the same ten keys, each with fresh caches: the
    // counters each pass adds, (block hits, block misses, blob hits, blob
    // misses).
    let passes = |blob_cache: Option<Arc<BlockCache>>, shared: bool| {
        let block_cache = Arc::new(BlockCache::new(1 << 20));
        let blob_cache = if shared {
            Some(Arc::clone(&block_cache))
        } else {
            blob_cache
        };
        let opts = options(fs.clone(), BlobOptions::enabled(100))
            .block_cache(Some(block_cache))
            .blob_cache(blob_cache);
        let db = Db::open("/db", opts).unwrap();
        let counters = |db: &Db| {
            let s = db.stats();
            let block = s.block_cache.unwrap();
            let blob = s.blob_cache.map_or((0, 0), |c| (c.hits, c.misses));
            [block.hits, block.misses, blob.0, blob.1]
        };
        let mut deltas = Vec::new();
        for _ in 0..2 {
            let before = counters(&db);
            for i in 0..10u32 {
                assert_eq!(db.get(key(i)).unwrap().unwrap(), value(i, 0, 500));
            }
            let after = counters(&db);
            deltas.push([0, 1, 2, 3].map(|c| after[c] - before[c]));
        }
        deltas
    };

    // No blob cache (the default): values are read from the blob file
    // each time and never enter the block cache, whose second pass hits
    // every block.
    let none = passes(None, false);
    assert_eq!(none[1][1], 0, "{none:?}");
    assert_eq!([none[0][2], none[0][3], none[1][2], none[1][3]], [0; 4]);
    // A cache of its own: ten misses, then ten hits; the block cache's
    // counters are those without a blob cache.
    let separate = passes(Some(Arc::new(BlockCache::new(1 << 20))), false);
    assert_eq!(separate[0][2..], [0, 10]);
    assert_eq!(separate[1][2..], [10, 0]);
    assert_eq!(separate[0][..2], none[0][..2]);
    assert_eq!(separate[1][..2], none[1][..2]);
    // Shared with the block cache: the values count there.
    let shared = passes(None, true);
    assert_eq!(shared[0][1], none[0][1] + 10, "{shared:?} {none:?}");
    assert_eq!(shared[1][0], none[1][0] + 10, "{shared:?} {none:?}");
    assert_eq!(shared[1][1], 0);
    assert_eq!([shared[0][2], shared[0][3]], [0, 0]);
}
