//! The damage matrix's object-store variant: every object a database keeps
//! in a bucket (a table, a MANIFEST part, a CURRENT object) damaged every
//! way an object can be (a flipped byte, cut short, deleted, swapped with
//! another) is refused by name, at open or at the read that meets it;
//! nothing damaged is read back as data.

use std::sync::Arc;

use lithify_bucket::{BucketFs, ReadOptions, SplitFs};
use lithify_engine::{Db, Options};
use lithify_test_support::bucket::{TestBucket, test_bucket};
use lithify_vfs::{FileSystem, MemFs};

const DIR: &str = "/db";

fn options(t: &TestBucket) -> Options {
    // No page cache: every read goes to the damaged object.
    let tables = BucketFs::new(
        t.bucket.clone(),
        DIR,
        &t.prefix,
        ReadOptions::default().with_cache_bytes(0),
    );
    let fs: Arc<dyn FileSystem> = Arc::new(SplitFs::with_manifest_in_bucket(
        Arc::new(MemFs::new()),
        tables,
    ));
    Options::default()
        .fs(fs)
        .write_buffer_size(16 << 10)
        .block_size(512)
        .wal_recovery_mode(lithify_engine::RecoveryMode::SkipAnyCorruptedRecords)
}

#[derive(Debug, Clone, Copy)]
enum Damage {
    Flip,
    Cut,
    Delete,
    Swap,
}

/// A database with two tables flushed, closed.
fn build(t: &TestBucket) {
    let db = Db::open(DIR, options(t)).unwrap();
    for round in 0..2 {
        for i in 0..400u32 {
            db.put(format!("key{i:04}"), format!("value-{round}-{i}"))
                .unwrap();
        }
        db.flush().unwrap();
    }
    db.close().unwrap();
}

/// The bucket's names of the objects: (tables, the live MANIFEST's first
/// part, the live CURRENT object).
fn objects(t: &TestBucket) -> (Vec<String>, String, String) {
    let p = &t.prefix;
    let tables: Vec<String> = t
        .bucket
        .list(p)
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".sst"))
        .map(|n| format!("{p}/{n}"))
        .collect();
    let current = t.bucket.list(&format!("{p}/CURRENT")).unwrap();
    let current = format!("{p}/CURRENT/{}", current.last().unwrap());
    let text = String::from_utf8(t.bucket.get(&current).unwrap().to_vec()).unwrap();
    let manifest = text
        .lines()
        .find_map(|l| l.strip_prefix("manifest "))
        .unwrap();
    let part = format!("{p}/{manifest}/00000000000000000000");
    (tables, part, current)
}

/// What opening and reading everything gives: `Ok` with the data read, or
/// the first error's message.
fn open_and_read(t: &TestBucket) -> Result<usize, String> {
    let db = Db::open(DIR, options(t)).map_err(|e| e.to_string())?;
    let mut n = 0;
    for kv in db.iter() {
        kv.map_err(|e| e.to_string())?;
        n += 1;
    }
    Ok(n)
}

fn damage(t: &TestBucket, key: &str, other: &str, d: Damage) {
    let bytes = t.bucket.get(key).unwrap().to_vec();
    match d {
        Damage::Flip => {
            let mut b = bytes;
            let at = b.len() / 2;
            b[at] ^= 0x20;
            t.bucket.put(key, b.into(), false).unwrap();
        }
        Damage::Cut => {
            let cut = bytes[..bytes.len() * 2 / 3].to_vec();
            t.bucket.put(key, cut.into(), false).unwrap();
        }
        Damage::Delete => t.bucket.delete(key).unwrap(),
        Damage::Swap => {
            let theirs = t.bucket.get(other).unwrap();
            t.bucket.put(key, theirs, false).unwrap();
            t.bucket.put(other, bytes.into(), false).unwrap();
        }
    }
}

#[test]
fn every_damaged_object_is_refused_by_name() {
    for kind in ["table", "manifest part", "current"] {
        for d in [Damage::Flip, Damage::Cut, Damage::Delete, Damage::Swap] {
            let t = test_bucket("damage-matrix");
            build(&t);
            assert_eq!(open_and_read(&t), Ok(400), "the undamaged database");
            let (tables, part, current) = objects(&t);
            let base = |k: &str| k.rsplit('/').next().unwrap().to_owned();
            // What the error may name: the damaged object, or, for a swap,
            // the other one (whichever is met first).
            let (key, other, names) = match kind {
                "table" => (
                    tables[0].clone(),
                    tables[1].clone(),
                    vec![base(&tables[0]), base(&tables[1])],
                ),
                "manifest part" => (
                    part.clone(),
                    current.clone(),
                    vec!["MANIFEST-".to_owned(), "CURRENT".to_owned()],
                ),
                _ => (
                    current.clone(),
                    part.clone(),
                    vec!["CURRENT".to_owned(), "MANIFEST-".to_owned()],
                ),
            };
            let names = match d {
                Damage::Swap => names,
                _ => names[..1].to_vec(),
            };
            damage(&t, &key, &other, d);
            let what = format!("{kind} {d:?}");
            match open_and_read(&t) {
                Ok(n) => panic!("{what}: the damage went unnoticed ({n} entries read)"),
                Err(e) => assert!(
                    names.iter().any(|n| e.contains(n.as_str())),
                    "{what}: the error names none of {names:?}: {e}"
                ),
            }
        }
    }
}
