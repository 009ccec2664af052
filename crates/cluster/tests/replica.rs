//! Read replicas: they serve consistent versions through the writer's
//! flushes and compactions, never find a file of their version deleted
//! within the grace period, and lag by exactly what is not flushed.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use lithify_bucket::{BucketFs, ReadOptions as CacheOptions, SplitFs};
use lithify_cluster::Replica;
use lithify_engine::{Db, Options, WriteBatch};
use lithify_test_support::bucket::{TestBucket, test_bucket};
use lithify_vfs::MemFs;

const DIR: &str = "/db";
const KEYS: u64 = 200;

fn machine(t: &TestBucket) -> SplitFs {
    machine_with_cache(t, 1 << 20)
}

fn machine_with_cache(t: &TestBucket, cache_bytes: u64) -> SplitFs {
    let tables = BucketFs::new(
        t.bucket.clone(),
        DIR,
        &t.prefix,
        CacheOptions::default().with_cache_bytes(cache_bytes),
    );
    SplitFs::with_manifest_in_bucket(Arc::new(MemFs::new()), tables)
}

fn small(fs: SplitFs) -> Options {
    Options::default()
        .fs(Arc::new(fs))
        .write_buffer_size(16 << 10)
        .level0_file_num_compaction_trigger(2)
        .max_bytes_for_level_base(32 << 10)
        .target_file_size_base(8 << 10)
        .block_size(512)
        .num_levels(4)
}

/// Round `r` writes every key with the value `r`, in one batch.
fn write_round(db: &Db, r: u64) {
    let mut batch = WriteBatch::new();
    for k in 0..KEYS {
        batch.put(format!("key{k:04}"), format!("{r:08}"));
    }
    db.write(batch).unwrap();
}

/// The one round a consistent version shows (every key has the same
/// value), or a panic naming what is wrong.
fn round_of(db: &Db) -> Option<u64> {
    let mut round = None;
    let mut n = 0;
    for kv in db.iter() {
        let (_, v) = kv.expect("a replica read failed");
        let r: u64 = std::str::from_utf8(&v).unwrap().parse().unwrap();
        assert!(
            round.is_none_or(|x| x == r),
            "a version mixes rounds {round:?} and {r}"
        );
        round = Some(r);
        n += 1;
    }
    assert!(n == 0 || n == KEYS, "a version with {n} of {KEYS} keys");
    round
}

#[test]
fn a_replica_serves_consistent_versions_through_compactions() {
    let t = test_bucket("replica");
    let writer = Arc::new(Db::open(DIR, small(machine(&t))).unwrap());
    write_round(&writer, 0);
    writer.flush().unwrap();
    let replica = Arc::new(Replica::open(DIR, Options::default(), machine(&t)).unwrap());
    let follower = replica.follow(Duration::from_millis(5));

    let done = Arc::new(AtomicBool::new(false));
    let w = {
        let (writer, done) = (writer.clone(), done.clone());
        let replica_w = replica.clone();
        std::thread::spawn(move || {
            for r in 1..=60 {
                write_round(&writer, r);
                if r % 3 == 0 {
                    writer.flush().unwrap();
                    // The follower catches up with every flush (within its
                    // period), while the reader below keeps scanning.
                    let deadline = std::time::Instant::now() + Duration::from_secs(60);
                    while replica_w.sequence() < writer.latest_sequence_number() {
                        assert!(
                            std::time::Instant::now() < deadline,
                            "the replica did not catch up with a flush"
                        );
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
            }
            done.store(true, Ordering::Release);
        })
    };
    let mut last = 0;
    while !done.load(Ordering::Acquire) {
        let db = replica.db();
        let r = round_of(&db).expect("the first round was flushed");
        assert!(r >= last, "the replica went back from round {last} to {r}");
        last = r;
        // Gets on one version agree with its scan.
        assert_eq!(
            db.get(b"key0007").unwrap().unwrap(),
            format!("{r:08}").as_bytes()
        );
    }
    w.join().unwrap();
    writer.wait_for_compact().unwrap();
    follower.stop();
    let c = replica.try_catch_up().unwrap();
    assert_eq!(round_of(&replica.db()), Some(60));
    assert_eq!(
        c.sequence,
        writer.latest_sequence_number(),
        "all flushed: no lag"
    );
    assert!(
        writer
            .property("lithify.num-files-at-level1")
            .is_some_and(|n| n != "0")
            || writer.live_files().iter().any(|f| f.level > 0),
        "compactions ran"
    );
}

#[test]
fn a_replica_lags_by_what_is_not_flushed() {
    let t = test_bucket("lag");
    let writer = Db::open(DIR, small(machine(&t))).unwrap();
    write_round(&writer, 1);
    writer.flush().unwrap();
    let replica = Replica::open(DIR, Options::default(), machine(&t)).unwrap();
    assert_eq!(replica.sequence(), writer.latest_sequence_number());
    write_round(&writer, 2);
    let c = replica.try_catch_up().unwrap();
    assert!(!c.advanced);
    assert_eq!(
        writer.latest_sequence_number() - c.sequence,
        KEYS,
        "the unflushed round is the lag"
    );
    writer.flush().unwrap();
    let c = replica.try_catch_up().unwrap();
    assert!(c.advanced);
    assert_eq!(c.sequence, writer.latest_sequence_number());
    assert_eq!(round_of(&replica.db()), Some(2));
}

/// The grace period is what keeps an older version readable: without it,
/// a version whose files the writer compacted away fails, naming a file.
#[test]
fn a_version_stays_readable_for_the_grace_period() {
    for grace in [Duration::ZERO, Duration::from_secs(60)] {
        let t = test_bucket("grace");
        let writer_fs = machine(&t).with_delete_grace(grace);
        let writer = Db::open(DIR, small(writer_fs.clone())).unwrap();
        for r in 0..4 {
            write_round(&writer, r);
            writer.flush().unwrap();
        }
        writer.wait_for_compact().unwrap();
        // A reader that opened this version and has not read it yet (and
        // keeps no page cache, which would hold what its open read).
        let replica = Replica::open(DIR, Options::default(), machine_with_cache(&t, 0)).unwrap();
        let held = replica.db();
        // A new round over every key, compacted all the way: every table
        // of the held version is rewritten and removed.
        write_round(&writer, 4);
        writer.flush().unwrap();
        writer.compact_range(None, None).unwrap();
        writer.wait_for_compact().unwrap();
        let read: Result<Vec<_>, _> = held.iter().collect();
        if grace.is_zero() {
            let err = read
                .expect_err("the files of the held version are gone")
                .to_string();
            assert!(err.contains(".sst"), "the error names the file: {err}");
        } else {
            assert_eq!(read.unwrap().len() as u64, KEYS);
            assert!(writer_fs.pending_deletes() > 0);
            // Once the grace period is over (here: forced), they go.
            assert!(writer_fs.delete_due(true).unwrap() > 0);
            assert_eq!(writer_fs.pending_deletes(), 0);
        }
    }
}
