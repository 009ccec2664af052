//! `lithify compaction-worker` and `lithify replica` as processes of
//! their own: a worker runs a writer's jobs, and killing it mid-job
//! (SIGKILL, 100 times) costs the writer a wait and a local run, never an
//! acknowledged write, and leaves no table in the bucket that the writer
//! does not name; a replica follows the writer's flushes.
//!
//! The bucket is the S3 server of `LITHIFY_S3_ENDPOINT` when set (CI
//! starts one), else `object_store`'s local store in a temporary
//! directory.

#[allow(dead_code)] // each test file uses its share of the helpers
mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lithify::bucket::{Bucket, BucketFs, ReadOptions, SplitFs};
use lithify::cluster::{BucketCompactionService, JOBS_DIR, ServiceOptions};
use lithify::vfs::{FileSystem, MemFs};
use lithify::{Db, Options};

const DIR: &str = "/db";

/// A bucket URL another process can open, the bucket, and a fresh prefix.
struct Place {
    url: String,
    bucket: Bucket,
    prefix: String,
    _dir: Option<tempfile::TempDir>,
}

fn place(test: &str) -> Place {
    let prefix = format!(
        "{test}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    match std::env::var("LITHIFY_S3_ENDPOINT") {
        Ok(endpoint) => {
            let name = std::env::var("LITHIFY_S3_BUCKET").unwrap_or_else(|_| "lithify".into());
            let url = format!("{}/{name}", endpoint.trim_end_matches('/'));
            Place {
                bucket: Bucket::open_url(&url).unwrap(),
                url,
                prefix,
                _dir: None,
            }
        }
        Err(_) => {
            let dir = tempfile::tempdir().unwrap();
            let url = format!("file://{}", dir.path().display());
            Place {
                bucket: Bucket::open_url(&url).unwrap(),
                url,
                prefix,
                _dir: Some(dir),
            }
        }
    }
}

fn worker(p: &Place, name: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_lithify"))
        .args([
            "compaction-worker",
            "--bucket",
            &p.url,
            "--prefix",
            &p.prefix,
            "--name",
            name,
            "--poll-ms",
            "2",
            "--max-jobs",
            "1000000",
        ])
        .env("XDG_CONFIG_HOME", common::NO_CONFIG)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the lithify binary runs")
}

fn writer_options(p: &Place, service: ServiceOptions) -> Options {
    let tables = BucketFs::new(p.bucket.clone(), DIR, &p.prefix, ReadOptions::default());
    let fs: Arc<dyn FileSystem> = Arc::new(SplitFs::new(Arc::new(MemFs::new()), tables));
    let mut o = Options::default()
        .fs(fs)
        .write_buffer_size(32 << 10)
        .level0_file_num_compaction_trigger(2)
        .max_bytes_for_level_base(64 << 10)
        .target_file_size_base(16 << 10)
        .block_size(512)
        .num_levels(4);
    o.compaction_service = Some(Arc::new(BucketCompactionService::new(
        p.bucket.clone(),
        &p.prefix,
        service,
    )));
    o
}

/// The table objects in the bucket.
fn tables_in_bucket(p: &Place) -> BTreeSet<String> {
    p.bucket
        .list(&p.prefix)
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".sst") || n.ends_with(".blob"))
        .collect()
}

fn live(db: &Db) -> BTreeSet<String> {
    db.live_files()
        .iter()
        .map(|f| f.path.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

fn check(db: &Db, model: &BTreeMap<String, String>) {
    for (k, v) in model {
        let got = db.get(k.as_bytes()).unwrap();
        assert_eq!(got.as_deref(), Some(v.as_bytes()), "key {k}");
    }
    assert_eq!(db.iter().count(), model.len());
}

#[test]
fn a_worker_process_runs_the_writers_compactions() {
    let p = place("worker");
    let mut w = worker(&p, "w1");
    let db = Db::open(DIR, writer_options(&p, ServiceOptions::default())).unwrap();
    let mut model = BTreeMap::new();
    for round in 0..6 {
        for i in 0..400 {
            let (k, v) = (format!("key{i:04}"), format!("v{round}-{i}"));
            db.put(k.as_bytes(), v.as_bytes()).unwrap();
            model.insert(k, v);
        }
        db.flush().unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.wait_for_compact().unwrap();
    check(&db, &model);
    let stats = db.stats();
    assert!(stats.remote_compactions >= 1, "{stats:?}");
    assert_eq!(stats.remote_compaction_fallbacks, 0);
    assert_eq!(tables_in_bucket(&p), live(&db));
    drop(db);
    w.kill().unwrap();
    w.wait().unwrap();
    let out = BufReader::new(w.stdout.take().unwrap());
    let lines: Vec<String> = out.lines().map_while(Result::ok).collect();
    assert!(
        lines[0].starts_with("w1: taking the compaction jobs under "),
        "{lines:?}"
    );
    let jobs = lines.iter().filter(|l| l.starts_with("job ")).count() as u64;
    assert_eq!(jobs, stats.remote_compactions, "{lines:?}");
    assert!(lines.iter().all(|l| !l.contains(": failed: ")), "{lines:?}");
}

#[test]
fn bench_hands_its_compactions_to_a_worker_process() {
    let p = place("bench");
    let mut w = Command::new(env!("CARGO_BIN_EXE_lithify"))
        .args([
            "compaction-worker",
            "--bucket",
            &p.url,
            "--prefix",
            &p.prefix,
            "--merge-operator",
            "uint64add",
        ])
        .env("XDG_CONFIG_HOME", common::NO_CONFIG)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let db = tempfile::tempdir().unwrap();
    let text = common::ok(&[
        "bench",
        "--db",
        db.path().join("db").to_str().unwrap(),
        "--num",
        "20000",
        "--benchmarks",
        "fillrandom,mergerandom,compact",
        "--merge-operator",
        "uint64add",
        "--value-size",
        "8",
        "--write-buffer-size",
        "65536",
        "--bucket",
        &p.url,
        "--bucket-prefix",
        &p.prefix,
        "--manifest-in-bucket",
        "--remote-compaction",
    ]);
    w.kill().unwrap();
    w.wait().unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("Remote compactions: "))
        .unwrap_or_else(|| panic!("{text}"));
    let installed: u64 = line
        .trim_start_matches("Remote compactions: ")
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(installed >= 1, "{line}");
    assert!(line.ends_with(", 0 run here instead"), "{line}");
    // The MANIFEST went to the bucket with the tables.
    let objects = p.bucket.list(&p.prefix).unwrap();
    assert!(objects.iter().any(|o| o == "CURRENT"), "{objects:?}");
    assert!(objects.iter().any(|o| o.ends_with(".sst")), "{objects:?}");
}

#[test]
fn a_replica_process_follows_the_writers_flushes() {
    let p = place("replica");
    let tables = BucketFs::new(p.bucket.clone(), DIR, &p.prefix, ReadOptions::default());
    let fs: Arc<dyn FileSystem> = Arc::new(SplitFs::with_manifest_in_bucket(
        Arc::new(MemFs::new()),
        tables,
    ));
    let db = Db::open(DIR, Options::default().fs(fs)).unwrap();
    db.put(b"a", b"1").unwrap();
    db.flush().unwrap();
    let mut r = Command::new(env!("CARGO_BIN_EXE_lithify"))
        .args([
            "replica",
            "--bucket",
            &p.url,
            "--prefix",
            &p.prefix,
            "--catch-up-ms",
            "10",
            "--duration-secs",
            "3",
        ])
        .env("XDG_CONFIG_HOME", common::NO_CONFIG)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(r.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(first.contains(" sequence 1 tables 1 new "), "{first}");
    // Unflushed writes are not seen; flushed ones are.
    db.put(b"b", b"2").unwrap();
    db.put(b"c", b"3").unwrap();
    db.flush().unwrap();
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(r.wait().unwrap().success());
    let last = rest
        .last()
        .unwrap_or_else(|| panic!("no line after {first}"));
    assert!(last.contains(" sequence 3 tables 2 new "), "{rest:?}");
}

#[test]
fn killing_workers_mid_job_costs_waits_never_data() {
    const KILLS: usize = 100;
    let p = place("kill");
    // A deadline that small jobs meet (a few ms each) and that a killed
    // worker's job runs into.
    let service = ServiceOptions::default()
        .claim_timeout(Duration::from_millis(500))
        .deadline(Duration::from_millis(700))
        .deadline_per_gib(Duration::ZERO)
        .poll(Duration::from_millis(2))
        .verify_outputs(true);
    let db = Db::open(DIR, writer_options(&p, service)).unwrap();
    let mut model = BTreeMap::new();
    let mut name = "w0".to_owned();
    let mut w = worker(&p, &name);
    let mut kills = 0;
    let mut n = 0u64;
    let started = Instant::now();
    while kills < KILLS {
        // Writes (each acknowledged one goes in the model) until a worker
        // holds a job; then it dies, somewhere inside the job.
        for _ in 0..200 {
            n += 1;
            let (k, v) = (format!("key{:05}", n * 7919 % 20_000), format!("v{n}"));
            db.put(k.as_bytes(), v.as_bytes()).unwrap();
            model.insert(k, v);
        }
        // A job this worker claimed (a claim names its worker).
        let jobs = format!("{}/{JOBS_DIR}", p.prefix);
        let claimed = p.bucket.list(&jobs).unwrap().iter().any(|object| {
            object.ends_with(".claim")
                && p.bucket
                    .get(&format!("{jobs}/{object}"))
                    .is_ok_and(|who| who.starts_with(format!("{name} ").as_bytes()))
        });
        if claimed {
            std::thread::sleep(Duration::from_millis(n % 7));
            w.kill().unwrap();
            w.wait().unwrap();
            kills += 1;
            name = format!("w{kills}");
            w = worker(&p, &name);
        }
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "{kills} kills in 10 minutes"
        );
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.wait_for_compact().unwrap();
    check(&db, &model);
    let stats = db.stats();
    eprintln!(
        "{KILLS} kills: {} jobs installed, {} run by the writer",
        stats.remote_compactions, stats.remote_compaction_fallbacks
    );
    assert!(
        stats.remote_compaction_fallbacks >= 1,
        "some kills hit a job: {stats:?}"
    );
    // What killed workers wrote was removed with their jobs.
    assert_eq!(tables_in_bucket(&p), live(&db));
    assert!(
        p.bucket
            .list(&format!("{}/{JOBS_DIR}", p.prefix))
            .unwrap()
            .is_empty()
    );
    w.kill().unwrap();
    w.wait().unwrap();
    drop(db);
}
