//! Compaction by workers through the bucket: a model check of a writer
//! whose compactions run on worker threads, and every way a worker can
//! fail the writer — a worker without the job's merge operator, an outcome
//! that is garbage or lies about its outputs, a worker that claims a job
//! and never answers, no worker at all, the store going away mid-run. Each
//! costs a wait, a local run or a reopen, never data, and no table with
//! the job's numbers stays in the bucket.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use lithify_bucket::{BucketFs, ReadOptions as CacheOptions, SplitFs};
use lithify_cluster::{BucketCompactionService, CompactionWorker, JOBS_DIR, ServiceOptions};
use lithify_compaction::remote::{RemoteJob, RemoteOutcome, WorkerEnv, run_remote_job};
use lithify_engine::{CompactionService, Db, Options, UInt64Add};
use lithify_test_support::bucket::{TestBucket, test_bucket};
use lithify_vfs::{FileSystem, MemFs};

const DIR: &str = "/db";

fn tables(t: &TestBucket) -> BucketFs {
    BucketFs::new(
        t.bucket.clone(),
        DIR,
        &t.prefix,
        CacheOptions::default().with_cache_bytes(4 << 20),
    )
}

fn small(fs: Arc<dyn FileSystem>) -> Options {
    Options::default()
        .fs(fs)
        .write_buffer_size(16 << 10)
        .level0_file_num_compaction_trigger(2)
        .max_bytes_for_level_base(32 << 10)
        .target_file_size_base(8 << 10)
        .block_size(512)
        .num_levels(4)
        .merge_operator(Some(Arc::new(UInt64Add)))
}

/// A worker's objects: the merge operator the writer has.
fn worker_env(fs: Arc<dyn FileSystem>) -> WorkerEnv {
    let mut env = WorkerEnv::new(fs, DIR);
    env.merge_operator = Some(Arc::new(UInt64Add));
    env
}

fn quick() -> ServiceOptions {
    ServiceOptions::default()
        .claim_timeout(Duration::from_secs(5))
        .deadline(Duration::from_secs(60))
        .poll(Duration::from_millis(5))
        .verify_outputs(true)
}

/// Worker threads over `t`, stopped and joined on drop.
struct Workers {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<u64>>,
}

impl Workers {
    fn start(t: &TestBucket, n: usize, merge: bool) -> Workers {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..n)
            .map(|i| {
                let mut w = CompactionWorker::new(t.bucket.clone(), &t.prefix, &format!("w{i}"));
                if merge {
                    w = w.with_env(worker_env(Arc::new(MemFs::new())));
                }
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || w.run(&stop, Duration::from_millis(2)).unwrap())
            })
            .collect();
        Workers { stop, threads }
    }

    fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.threads.drain(..).map(|t| t.join().unwrap()).sum()
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// The table and blob objects in the bucket, and the job objects.
fn objects(t: &TestBucket) -> (BTreeSet<String>, Vec<String>) {
    let files = t
        .bucket
        .list_sized(&t.prefix)
        .unwrap()
        .into_iter()
        .map(|(n, _)| n)
        .filter(|n| n.ends_with(".sst") || n.ends_with(".blob"))
        .collect();
    let jobs = t.bucket.list(&format!("{}/{JOBS_DIR}", t.prefix)).unwrap();
    (files, jobs)
}

fn live(db: &Db) -> BTreeSet<String> {
    db.live_files()
        .iter()
        .map(|f| f.path.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

fn assert_model(db: &Db, model: &BTreeMap<String, Vec<u8>>) {
    let got: BTreeMap<String, Vec<u8>> = db
        .iter()
        .map(|kv| {
            let (k, v) = kv.unwrap();
            (String::from_utf8(k.to_vec()).unwrap(), v.to_vec())
        })
        .collect();
    assert_eq!(got.len(), model.len());
    for (k, v) in model {
        assert_eq!(got.get(k), Some(v), "key {k}");
    }
}

#[test]
fn workers_run_the_compactions_and_the_writer_matches_its_model() {
    let t = test_bucket("remote-model");
    let workers = Workers::start(&t, 2, true);
    let local: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let fs: Arc<dyn FileSystem> = Arc::new(SplitFs::new(Arc::clone(&local), tables(&t)));
    let service = BucketCompactionService::new(t.bucket.clone(), &t.prefix, quick());
    let mut options = small(Arc::clone(&fs));
    options.compaction_service = Some(Arc::new(service));
    let db = Db::open(DIR, options.clone()).unwrap();
    let mut model: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut counters: BTreeMap<String, u64> = BTreeMap::new();
    let mut seed = 7u64;
    for i in 0..6000u64 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let k = format!("key{:05}", (seed >> 33) % 1500);
        match (seed >> 20) % 10 {
            0 => {
                db.delete(&k).unwrap();
                model.remove(&k);
                counters.remove(&k);
            }
            1 => {
                // A counter: the merge operator runs on the workers.
                let c = format!("ctr{:03}", (seed >> 33) % 50);
                db.merge(&c, 3u64.to_le_bytes()).unwrap();
                let n = counters.entry(c.clone()).or_insert(0);
                *n += 3;
                model.insert(c, n.to_le_bytes().to_vec());
            }
            _ => {
                let v = format!("{i:08}").repeat(4).into_bytes();
                db.put(&k, &v).unwrap();
                counters.remove(&k);
                model.insert(k, v);
            }
        }
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.wait_for_compact().unwrap();
    assert_model(&db, &model);
    let stats = db.stats();
    assert!(stats.remote_compactions >= 3, "{stats:?}");
    assert_eq!(stats.remote_compaction_fallbacks, 0);
    drop(db);
    let ran = workers.finish();
    assert_eq!(ran, stats.remote_compactions);
    // A reopen finds the same data, and nothing but live tables is left.
    let db = Db::open(DIR, small(fs)).unwrap();
    assert_model(&db, &model);
    let (files, jobs) = objects(&t);
    assert_eq!(files, live(&db));
    assert!(jobs.is_empty(), "{jobs:?}");
}

/// A service over an in-process worker whose outcome `tamper` changes
/// (or `None`: leaves), counting what it changed.
struct Tampering {
    fs: Arc<dyn FileSystem>,
    tamper: fn(&RemoteJob, Vec<u8>) -> Option<Vec<u8>>,
    tampered: Arc<AtomicUsize>,
}

impl CompactionService for Tampering {
    fn run(&self, job: &RemoteJob, closing: &dyn Fn() -> bool) -> Result<Vec<u8>, String> {
        let _ = closing;
        let env = worker_env(Arc::clone(&self.fs));
        let outcome = run_remote_job(&RemoteJob::decode(&job.encode()).unwrap(), &env);
        let bytes = outcome.encode();
        match (self.tamper)(job, bytes.clone()) {
            Some(changed) => {
                self.tampered.fetch_add(1, Ordering::Relaxed);
                Ok(changed)
            }
            None => Ok(bytes),
        }
    }
}

/// Writes, compacts with `service`, and checks that every job fell back,
/// the data is whole, and no table but the live ones is left.
fn falls_back(
    name: &str,
    changed: Option<Arc<AtomicUsize>>,
    service: impl Fn(&TestBucket, Arc<dyn FileSystem>) -> Arc<dyn CompactionService>,
) {
    let t = test_bucket(name);
    let fs: Arc<dyn FileSystem> = Arc::new(SplitFs::new(Arc::new(MemFs::new()), tables(&t)));
    let mut options = small(Arc::clone(&fs));
    options.compaction_service = Some(service(&t, Arc::clone(&fs)));
    let db = Db::open(DIR, options).unwrap();
    let mut model = BTreeMap::new();
    for round in 0..4u32 {
        for i in 0..300u32 {
            let k = format!("key{i:04}");
            let v = format!("{round}-{i}").into_bytes();
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        db.flush().unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.wait_for_compact().unwrap();
    let stats = db.stats();
    assert_eq!(stats.remote_compactions, 0, "{name}: {stats:?}");
    assert!(stats.remote_compaction_fallbacks >= 1, "{name}");
    if let Some(changed) = changed {
        assert_eq!(
            changed.load(Ordering::Relaxed) as u64,
            stats.remote_compaction_fallbacks,
            "{name}: every job was spoiled, and every one fell back"
        );
    }
    assert_model(&db, &model);
    let (files, jobs) = objects(&t);
    assert_eq!(files, live(&db), "{name}: only live tables are left");
    assert!(jobs.is_empty(), "{name}: {jobs:?}");
}

#[test]
fn a_garbage_outcome_costs_a_local_run() {
    let n = Arc::new(AtomicUsize::new(0));
    falls_back("remote-garbage", Some(Arc::clone(&n)), |_, fs| {
        Arc::new(Tampering {
            fs,
            tamper: |_, mut bytes| {
                let at = bytes.len() / 2;
                bytes[at] ^= 0x10;
                Some(bytes)
            },
            tampered: Arc::clone(&n),
        })
    });
}

#[test]
fn an_outcome_with_a_number_not_reserved_costs_a_local_run() {
    let n = Arc::new(AtomicUsize::new(0));
    falls_back("remote-wrong-number", Some(Arc::clone(&n)), |_, fs| {
        Arc::new(Tampering {
            fs,
            tamper: |job, bytes| match RemoteOutcome::decode(&bytes).ok()? {
                RemoteOutcome::Done(mut r) if !r.outputs.is_empty() => {
                    r.outputs[0].number = job.output_numbers.end;
                    Some(RemoteOutcome::Done(r).encode())
                }
                _ => None,
            },
            tampered: Arc::clone(&n),
        })
    });
}

#[test]
fn an_outcome_claiming_other_contents_costs_a_local_run() {
    let n = Arc::new(AtomicUsize::new(0));
    falls_back("remote-wrong-count", Some(Arc::clone(&n)), |_, fs| {
        Arc::new(Tampering {
            fs,
            tamper: |_, bytes| match RemoteOutcome::decode(&bytes).ok()? {
                RemoteOutcome::Done(mut r) if !r.outputs.is_empty() => {
                    r.outputs[0].num_entries += 1;
                    Some(RemoteOutcome::Done(r).encode())
                }
                _ => None,
            },
            tampered: Arc::clone(&n),
        })
    });
    // An outcome that drops an output (its records with it): the counts no
    // longer add up.
    let n = Arc::new(AtomicUsize::new(0));
    falls_back("remote-missing-output", Some(Arc::clone(&n)), |_, fs| {
        Arc::new(Tampering {
            fs,
            tamper: |_, bytes| match RemoteOutcome::decode(&bytes).ok()? {
                RemoteOutcome::Done(mut r) if !r.outputs.is_empty() => {
                    r.outputs.pop();
                    Some(RemoteOutcome::Done(r).encode())
                }
                _ => None,
            },
            tampered: Arc::clone(&n),
        })
    });
    // Sequence numbers claimed beyond the inputs' (an L0 output would then
    // sort before newer flushes).
    let n = Arc::new(AtomicUsize::new(0));
    falls_back("remote-seqno", Some(Arc::clone(&n)), |_, fs| {
        Arc::new(Tampering {
            fs,
            tamper: |_, bytes| match RemoteOutcome::decode(&bytes).ok()? {
                RemoteOutcome::Done(mut r) if !r.outputs.is_empty() => {
                    r.outputs[0].largest_seqno += 1_000_000;
                    Some(RemoteOutcome::Done(r).encode())
                }
                _ => None,
            },
            tampered: Arc::clone(&n),
        })
    });
}

#[test]
fn an_output_changed_after_the_worker_wrote_it_costs_a_local_run() {
    let n = Arc::new(AtomicUsize::new(0));
    falls_back("remote-changed-output", Some(Arc::clone(&n)), |_, fs| {
        struct Flipping(Arc<dyn FileSystem>, Arc<AtomicUsize>);
        impl CompactionService for Flipping {
            fn run(&self, job: &RemoteJob, closing: &dyn Fn() -> bool) -> Result<Vec<u8>, String> {
                let _ = closing;
                let env = worker_env(Arc::clone(&self.0));
                let outcome = run_remote_job(job, &env);
                if let RemoteOutcome::Done(r) = &outcome
                    && !r.outputs.is_empty()
                {
                    self.1.fetch_add(1, Ordering::Relaxed);
                    // One byte of a data block flipped: the table still
                    // opens; only the whole-file checksum finds it.
                    let path = std::path::Path::new(DIR).join(
                        lithify_version::filename::sst_file_name(r.outputs[0].number),
                    );
                    let mut bytes = lithify_vfs::read_file(&*self.0, &path).unwrap();
                    bytes[10] ^= 1;
                    let mut f = self.0.create(&path).unwrap();
                    f.append(&bytes).unwrap();
                    f.sync_all().unwrap();
                }
                Ok(outcome.encode())
            }
        }
        Arc::new(Flipping(fs, Arc::clone(&n)))
    });
}

#[test]
fn a_worker_without_the_merge_operator_fails_the_job_and_the_writer_runs_it() {
    let t = test_bucket("remote-no-merge");
    let workers = Workers::start(&t, 1, false);
    let fs: Arc<dyn FileSystem> = Arc::new(SplitFs::new(Arc::new(MemFs::new()), tables(&t)));
    let mut options = small(fs);
    options.compaction_service = Some(Arc::new(BucketCompactionService::new(
        t.bucket.clone(),
        &t.prefix,
        quick(),
    )));
    let db = Db::open(DIR, options).unwrap();
    for round in 0..3u64 {
        for i in 0..200u32 {
            db.merge(format!("c{i:03}"), round.to_le_bytes()).unwrap();
        }
        db.flush().unwrap();
    }
    db.compact_range(None, None).unwrap();
    assert_eq!(
        db.get(b"c007").unwrap().as_deref(),
        Some(&3u64.to_le_bytes()[..])
    );
    let stats = db.stats();
    assert_eq!(stats.remote_compactions, 0);
    assert!(stats.remote_compaction_fallbacks >= 1);
    drop(db);
    assert!(
        workers.finish() >= 1,
        "the worker took the jobs, and failed them"
    );
    assert!(objects(&t).1.is_empty());
}

#[test]
fn no_worker_or_a_silent_one_costs_a_local_run_after_the_timeout() {
    // Nobody claims: the claim timeout.
    falls_back("remote-unclaimed", None, |t, _| {
        Arc::new(BucketCompactionService::new(
            t.bucket.clone(),
            &t.prefix,
            quick().claim_timeout(Duration::from_millis(100)),
        ))
    });
    // A "worker" claims every job and never answers: the deadline.
    falls_back("remote-silent", None, |t, _| {
        struct Silent {
            inner: BucketCompactionService,
            bucket: lithify_bucket::Bucket,
            prefix: String,
        }
        impl CompactionService for Silent {
            fn run(&self, job: &RemoteJob, closing: &dyn Fn() -> bool) -> Result<Vec<u8>, String> {
                let claim = format!("{}/{JOBS_DIR}/{:020}.claim", self.prefix, job.id);
                self.bucket.put(&claim, "silent".into(), true).unwrap();
                self.inner.run(job, closing)
            }
        }
        Arc::new(Silent {
            inner: BucketCompactionService::new(
                t.bucket.clone(),
                &t.prefix,
                quick()
                    .deadline(Duration::from_millis(300))
                    .deadline_per_gib(Duration::ZERO),
            ),
            bucket: t.bucket.clone(),
            prefix: t.prefix.clone(),
        })
    });
}

#[test]
fn a_job_needing_more_numbers_than_reserved_writes_none_outside_them() {
    // The service gives the worker one number for a job that needs
    // several outputs: it must fail at the second, writing no table under
    // a number the writer owns, and the writer runs the job itself.
    struct Short(Arc<dyn FileSystem>, Arc<AtomicUsize>);
    impl CompactionService for Short {
        fn run(&self, job: &RemoteJob, _: &dyn Fn() -> bool) -> Result<Vec<u8>, String> {
            let mut short = RemoteJob::decode(&job.encode()).unwrap();
            short.output_numbers = job.output_numbers.start..job.output_numbers.start + 1;
            short.compaction.target_output_file_size = 1024;
            short.compaction.max_output_file_size = 1024;
            let outcome = run_remote_job(&short, &worker_env(Arc::clone(&self.0)));
            let listed = self.0.list_dir(std::path::Path::new(DIR)).unwrap();
            for name in listed {
                if let Some(n) = name
                    .strip_suffix(".sst")
                    .and_then(|n| n.parse::<u64>().ok())
                {
                    // Reserved for the job but not given to the worker:
                    // nobody else writes these.
                    assert!(
                        !(short.output_numbers.end..job.output_numbers.end).contains(&n),
                        "the worker wrote {name}, past its numbers"
                    );
                }
            }
            if let RemoteOutcome::Failed { message, .. } = &outcome {
                assert!(
                    message.contains("not one of the job's reserved numbers"),
                    "{message}"
                );
                self.1.fetch_add(1, Ordering::Relaxed);
            }
            Ok(outcome.encode())
        }
    }
    let n = Arc::new(AtomicUsize::new(0));
    falls_back("remote-short", Some(Arc::clone(&n)), |_, fs| {
        Arc::new(Short(fs, Arc::clone(&n)))
    });
}

#[test]
fn the_two_tier_strategy_with_workers_keeps_every_key() {
    // Its incremental majors keep untouched files in place, decided while
    // they run: they stay on the writer (a worker's edit would delete
    // those files), its other jobs go to the worker, and nothing is lost.
    let t = test_bucket("remote-two-tier");
    let workers = Workers::start(&t, 1, true);
    let fs: Arc<dyn FileSystem> = Arc::new(SplitFs::new(Arc::new(MemFs::new()), tables(&t)));
    let mut options = small(fs).compaction_strategy(lithify_engine::CompactionStrategy::TwoTier(
        lithify_engine::TwoTierOptions::default(),
    ));
    options.compaction_service = Some(Arc::new(BucketCompactionService::new(
        t.bucket.clone(),
        &t.prefix,
        quick(),
    )));
    let db = Db::open(DIR, options).unwrap();
    let mut model = BTreeMap::new();
    for round in 0..6u32 {
        // Each round rewrites a different tenth of the keys.
        for i in 0..300u32 {
            if i % 10 == round % 10 || round == 0 {
                let (k, v) = (format!("key{i:04}"), format!("{round}-{i}").into_bytes());
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
        }
        db.flush().unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.wait_for_compact().unwrap();
    assert_model(&db, &model);
    drop(db);
    drop(workers);
}

#[test]
fn a_store_outage_mid_run_costs_waits_or_local_runs_never_data() {
    let t = test_bucket("remote-outage");
    let workers = Workers::start(&t, 2, true);
    let local: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let fs: Arc<dyn FileSystem> = Arc::new(SplitFs::new(Arc::clone(&local), tables(&t)));
    let with_service = || {
        let mut options = small(Arc::clone(&fs));
        options.compaction_service = Some(Arc::new(BucketCompactionService::new(
            t.bucket.clone(),
            &t.prefix,
            quick(),
        )));
        options
    };
    let sync = lithify_engine::WriteOptions::default().sync(true);
    let value = |round: u64, i: u64| format!("{round}-{i}").repeat(6).into_bytes();
    let mut model: BTreeMap<String, Vec<u8>> = BTreeMap::new();

    // Before: the workers compact (overlapping tables, so that no
    // compaction is a trivial move).
    let db = Db::open(DIR, with_service()).unwrap();
    for i in 0..1600u64 {
        let k = format!("key{:05}", (i * 7919) % 1200);
        db.put_opt(&k, value(0, i), &sync).unwrap();
        model.insert(k, value(0, i));
        if i % 400 == 399 {
            db.flush().unwrap();
        }
    }
    db.wait_for_compact().unwrap();
    assert!(db.stats().remote_compactions >= 1, "{:?}", db.stats());

    // The store goes away mid-run (for the writer and the workers alike).
    // Writes go on into the local WAL until a flush or compaction gives up
    // on the store; from then on the database refuses writes, and says
    // why. Only what it acknowledged counts.
    t.faults.set_down(true);
    let mut refused = None;
    for i in 0..4000u64 {
        let k = format!("key{:05}", (i * 104_729) % 1200);
        match db.put_opt(&k, value(1, i), &sync) {
            Ok(()) => {
                model.insert(k, value(1, i));
            }
            Err(e) => {
                refused = Some(e.to_string());
                break;
            }
        }
    }
    if refused.is_none() {
        refused = db.flush().err().map(|e| e.to_string());
    }
    let refused = refused.expect("a flush with the store down fails");
    assert!(refused.contains("tries"), "the error says why: {refused}");
    drop(db);

    // The store is back: a reopen finds every acknowledged write, and the
    // workers, which lived through the outage, compact again.
    t.faults.set_down(false);
    let db = Db::open(DIR, with_service()).unwrap();
    assert_model(&db, &model);
    for i in 0..1500u64 {
        let k = format!("key{:05}", (i * 31) % 1200);
        db.put_opt(&k, value(2, i), &sync).unwrap();
        model.insert(k, value(2, i));
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.wait_for_compact().unwrap();
    assert_model(&db, &model);
    assert!(
        db.stats().remote_compactions >= 1,
        "the workers survived the outage: {:?}",
        db.stats()
    );
    drop(db);
    assert!(workers.finish() >= 2);

    // Collected: nothing but live tables, and no job objects.
    let db = Db::open(DIR, small(fs)).unwrap();
    assert_model(&db, &model);
    let (files, jobs) = objects(&t);
    assert_eq!(files, live(&db));
    assert!(jobs.is_empty(), "{jobs:?}");
}
