//! A database whose tables live in a bucket (SplitFs): the model holds
//! through flushes, compactions and reopens; a power cut loses nothing
//! acknowledged and leaves no orphan object; a store outage is a
//! background error that loses nothing; a damaged object is refused
//! naming its file and offset.

use std::collections::BTreeMap;
use std::sync::Arc;

use lithify_bucket::{BucketFs, ReadOptions as CacheOptions, SplitFs};
use lithify_engine::{Db, Options, WriteOptions};
use lithify_test_support::bucket::{TestBucket, power_cut, test_bucket};
use lithify_vfs::{FileSystem, MemFs};

const DIR: &str = "/db";

fn options(local: Arc<MemFs>, t: &TestBucket) -> Options {
    let tables = BucketFs::new(
        t.bucket.clone(),
        DIR,
        &t.prefix,
        CacheOptions::default().with_cache_bytes(256 << 10),
    );
    let fs: Arc<dyn FileSystem> = Arc::new(SplitFs::new(local, tables));
    Options::default()
        .fs(fs)
        .write_buffer_size(32 << 10)
        .max_write_buffer_number(3)
        .level0_file_num_compaction_trigger(2)
        .max_bytes_for_level_base(64 << 10)
        .max_bytes_for_level_multiplier(4.0)
        .target_file_size_base(16 << 10)
        .block_size(512)
        .block_cache_size(64 << 10)
        .num_levels(4)
}

/// A small deterministic generator (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("key{:05}", i % 3000).into_bytes()
}

fn check(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let got: BTreeMap<Vec<u8>, Vec<u8>> = db
        .iter()
        .map(|kv| {
            let (k, v) = kv.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect();
    assert_eq!(got.len(), model.len());
    assert!(got == *model, "the database differs from the model");
    for (k, v) in model.iter().step_by(37) {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(&v[..]));
    }
}

/// Every SST and blob object in the bucket is named by the live version.
fn assert_no_orphans(db: &Db, t: &TestBucket) {
    let live: Vec<String> = db
        .live_files()
        .iter()
        .map(|f| f.path.file_name().unwrap().to_string_lossy().into_owned())
        .chain(
            db.live_blob_files()
                .iter()
                .map(|b| lithify_version::filename::blob_file_name(b.number)),
        )
        .collect();
    for name in t.bucket.list(&t.prefix).unwrap() {
        assert!(
            live.contains(&name),
            "{name} is in the bucket but no version names it"
        );
    }
}

#[test]
fn the_model_holds_through_flushes_compactions_and_reopens() {
    let t = test_bucket("model");
    let local = Arc::new(MemFs::new());
    let mut model = BTreeMap::new();
    let mut rng = Rng(0x9e3779b97f4a7c15);
    for round in 0..4u32 {
        let db = Db::open(DIR, options(local.clone(), &t)).unwrap();
        check(&db, &model);
        for _ in 0..4000 {
            let r = rng.next();
            let k = key(r >> 8);
            if r.is_multiple_of(7) {
                db.delete(&k).unwrap();
                model.remove(&k);
            } else {
                let v = format!("v{round}-{r:x}").repeat(1 + (r % 5) as usize);
                db.put(&k, &v).unwrap();
                model.insert(k, v.into_bytes());
            }
        }
        db.flush().unwrap();
        if !round.is_multiple_of(2) {
            db.compact_range(None, None).unwrap();
        }
        db.wait_for_compact().unwrap();
        check(&db, &model);
        assert_no_orphans(&db, &t);
        db.close().unwrap();
    }
    let s = t.bucket.stats();
    assert!(s.put_requests > 4 && s.get_requests > 0, "{s:?}");
}

#[test]
fn a_power_cut_loses_nothing_acknowledged_and_leaves_no_orphan() {
    let t = test_bucket("crash");
    let mut local = Arc::new(MemFs::new());
    let mut model = BTreeMap::new();
    let mut rng = Rng(0x2545f4914f6cdd1d);
    let sync = WriteOptions::default().sync(true);
    for round in 0..12u32 {
        let db = Db::open(DIR, options(local.clone(), &t)).unwrap();
        check(&db, &model);
        // The last round's unfinished uploads are collected by the open.
        db.wait_for_compact().unwrap();
        assert_no_orphans(&db, &t);
        for _ in 0..(500 + rng.next() % 1500) {
            let r = rng.next();
            let k = key(r >> 8);
            let v = format!("c{round}-{r:x}");
            db.put_opt(&k, &v, &sync).unwrap();
            model.insert(k, v.into_bytes());
        }
        if round.is_multiple_of(3) {
            db.flush().unwrap();
        }
        // Power cut with flushes and compactions maybe in flight.
        local = power_cut(&t, &local, db);
    }
    let db = Db::open(DIR, options(local, &t)).unwrap();
    check(&db, &model);
}

#[test]
fn a_store_outage_is_a_background_error_and_loses_nothing() {
    let t = test_bucket("outage");
    let local = Arc::new(MemFs::new());
    let db = Db::open(DIR, options(local.clone(), &t)).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..500u64 {
        db.put(key(i), b"before").unwrap();
        model.insert(key(i), b"before".to_vec());
    }
    t.faults.set_down(true);
    for i in 500..1000u64 {
        db.put(key(i), b"during").unwrap();
        model.insert(key(i), b"during".to_vec());
    }
    let err = db.flush().unwrap_err().to_string();
    assert!(err.contains(".sst"), "the error names the table: {err}");
    assert!(db.background_error().is_some());
    drop(db);
    t.faults.set_down(false);
    let db = Db::open(DIR, options(local, &t)).unwrap();
    check(&db, &model);
    db.flush().unwrap();
    assert_no_orphans(&db, &t);
}

#[test]
fn a_damaged_object_is_refused_naming_file_and_offset() {
    let t = test_bucket("damage");
    let local = Arc::new(MemFs::new());
    let db = Db::open(DIR, options(local.clone(), &t)).unwrap();
    for i in 0..2000u64 {
        db.put(key(i), format!("value-{i}")).unwrap();
    }
    db.flush().unwrap();
    let file = db.live_files().into_iter().max_by_key(|f| f.size).unwrap();
    db.close().unwrap();
    let name = file
        .path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let object = format!("{}/{name}", t.prefix);
    let mut bytes = t.bucket.get(&object).unwrap().to_vec();
    let at = bytes.len() / 4;
    bytes[at] ^= 0x55;
    t.bucket.put(&object, bytes.into(), false).unwrap();

    let errors: Vec<String> = match Db::open(DIR, options(local, &t)) {
        Err(e) => vec![e.to_string()],
        Ok(db) => {
            let mut errs = Vec::new();
            for kv in db.iter() {
                if let Err(e) = kv {
                    errs.push(e.to_string());
                    break;
                }
            }
            errs
        }
    };
    let err = errors.first().expect("the damage went unnoticed");
    assert!(err.contains(&name), "the error names the file: {err}");
    assert!(err.contains("offset"), "the error names the offset: {err}");
}

#[test]
fn a_second_database_on_the_same_prefix_leaves_the_firsts_tables_alone() {
    // Two databases pointed at one prefix (their MANIFESTs local, so
    // nothing fences them): at open each sees the other's tables as files
    // no version names. They carry another database's identity, so they
    // are left in place, and the first database keeps every key.
    let t = test_bucket("two-dbs");
    let a_local = Arc::new(MemFs::new());
    let a = Db::open(DIR, options(a_local.clone(), &t)).unwrap();
    for i in 0..500u32 {
        a.put(format!("a{i:04}"), b"first").unwrap();
    }
    a.flush().unwrap();
    let b = Db::open(DIR, options(Arc::new(MemFs::new()), &t)).unwrap();
    b.put(b"b", b"second").unwrap();
    b.flush().unwrap();
    drop(b);
    drop(a);
    let a = Db::open(DIR, options(a_local, &t)).unwrap();
    for i in (0..500u32).step_by(37) {
        assert_eq!(
            a.get(format!("a{i:04}")).unwrap().as_deref(),
            Some(&b"first"[..]),
            "key a{i:04}"
        );
    }
    assert_eq!(a.get(b"b").unwrap(), None);
}
