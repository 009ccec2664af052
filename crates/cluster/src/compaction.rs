//! Compaction run by workers on other machines, through the bucket: the
//! writer's [`BucketCompactionService`] posts each job as an object, a
//! [`CompactionWorker`] anywhere claims it with a conditional create,
//! runs it on the tables in the bucket, and posts the outcome; the writer
//! checks the outcome and installs it, or runs the job itself.
//!
//! The objects, under `<prefix>/compaction-jobs/` (the job id is the
//! job's first reserved file number, 20 digits):
//!
//! | object | written by | when |
//! |---|---|---|
//! | `<id>.job` | writer, create-only | a job is handed over |
//! | `<id>.claim` | worker, create-only | one worker takes it (the name of the worker) |
//! | `<id>.outcome` | worker, create-only | the job ran or failed |
//!
//! The writer removes all three once it has the outcome or gives up
//! (no claim within `claim_timeout`, no outcome within the deadline, the
//! database closing), again before its next job (for a claim or outcome
//! posted meanwhile), and, before its first job, those an earlier session
//! left. A
//! worker that finds the job object gone when it is done removes its own
//! outputs: a job the writer gave up on leaves no tables behind, except
//! when the worker itself dies in between, and then the next open's
//! orphan sweep removes them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use lithify_bucket::Bucket;
use lithify_compaction::remote::{RemoteJob, RemoteOutcome, WorkerEnv, run_remote_job};
use lithify_engine::CompactionService;
use lithify_version::filename::sst_file_name;
use snafu::ResultExt as _;

use crate::error::{Result, StoreSnafu};

/// The folder of the job objects under a database's prefix.
pub const JOBS_DIR: &str = "compaction-jobs";

fn job_key(prefix: &str, id: u64, kind: &str) -> String {
    let dir = jobs_dir(prefix);
    format!("{dir}/{id:020}.{kind}")
}

fn jobs_dir(prefix: &str) -> String {
    let prefix = prefix.trim_matches('/');
    if prefix.is_empty() {
        JOBS_DIR.to_owned()
    } else {
        format!("{prefix}/{JOBS_DIR}")
    }
}

/// How long the writer waits for workers (set with the builder methods:
/// `ServiceOptions::default().claim_timeout(..)`).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ServiceOptions {
    /// A job no worker claimed within this runs on the writer (default
    /// 10 s).
    pub claim_timeout: Duration,
    /// A claimed job without an outcome within this, plus
    /// `deadline_per_gib` for each GiB of its inputs (from its posting),
    /// runs on the writer (default 60 s).
    pub deadline: Duration,
    /// What each GiB of a job's inputs adds to its deadline (default
    /// 120 s: a worker slower than about 8 MiB/s is given up on).
    pub deadline_per_gib: Duration,
    /// How often the writer looks for the claim and the outcome at first
    /// (default 20 ms); later it looks every tenth of the time it has
    /// waited, at most every second.
    pub poll: Duration,
    /// Whether the writer reads each output whole to check its checksum
    /// before installing it (default false). Without it the writer still
    /// opens each output (footer, index and properties, with their block
    /// checksums) and checks its number, size, identity, counts and key
    /// range, and every later read checks the checksum of each block it
    /// reads, as RocksDB's primary trusts a remote compaction's data
    /// blocks. With it the outputs cross the network twice: at 10M keys it
    /// cost a sixth of the fill throughput (see the engine README,
    /// "Beyond one machine").
    pub verify_outputs: bool,
}

lithify_base::options_builder!(ServiceOptions {
    claim_timeout: Duration,
    deadline: Duration,
    deadline_per_gib: Duration,
    poll: Duration,
    verify_outputs: bool,
});

impl Default for ServiceOptions {
    fn default() -> Self {
        ServiceOptions {
            claim_timeout: Duration::from_secs(10),
            deadline: Duration::from_secs(60),
            deadline_per_gib: Duration::from_secs(120),
            poll: Duration::from_millis(20),
            verify_outputs: false,
        }
    }
}

/// The writer's side: a [`CompactionService`] that hands each job to the
/// workers watching `prefix` of `bucket` (the database's tables' prefix).
///
/// Set it as the database's `Options::compaction_service`. See
/// [`CompactionWorker`] for a whole round trip.
pub struct BucketCompactionService {
    bucket: Bucket,
    prefix: String,
    options: ServiceOptions,
    /// Whether the job objects of earlier sessions were removed.
    swept: std::sync::atomic::AtomicBool,
    /// Jobs given up, whose objects are removed again at the next job (a
    /// worker may have posted its claim or outcome after the removal).
    abandoned: parking_lot::Mutex<Vec<u64>>,
}

impl BucketCompactionService {
    /// Jobs of the database whose tables are under `prefix`.
    pub fn new(bucket: Bucket, prefix: &str, options: ServiceOptions) -> Self {
        BucketCompactionService {
            bucket,
            prefix: prefix.trim_matches('/').to_owned(),
            options,
            swept: std::sync::atomic::AtomicBool::new(false),
            abandoned: parking_lot::Mutex::new(Vec::new()),
        }
    }

    /// Before the first job: the objects of jobs an earlier session of the
    /// writer left (it crashed, or was fenced out). A worker still running
    /// one finds its job gone and removes its outputs. After that, the
    /// objects of jobs given up since the last job.
    fn sweep(&self) {
        if !self.swept.swap(true, Ordering::AcqRel) {
            let dir = jobs_dir(&self.prefix);
            match self.bucket.list(&dir) {
                Ok(names) => {
                    for name in names {
                        let key = format!("{dir}/{name}");
                        if let Err(e) = self.bucket.delete(&key) {
                            tracing::warn!(target: "lithify::cluster", key, error = %e, "cannot remove an earlier session's job object");
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(target: "lithify::cluster", dir, error = %e, "cannot list earlier sessions' job objects");
                }
            }
        }
        let abandoned: Vec<u64> = std::mem::take(&mut *self.abandoned.lock());
        for id in abandoned {
            self.remove_job(id);
        }
    }

    fn remove_job(&self, id: u64) {
        for kind in ["job", "claim", "outcome"] {
            let key = job_key(&self.prefix, id, kind);
            if let Err(e) = self.bucket.delete(&key) {
                tracing::warn!(target: "lithify::cluster", key, error = %e, "cannot remove a finished job's object");
            }
        }
    }
}

impl CompactionService for BucketCompactionService {
    fn run(
        &self,
        job: &RemoteJob,
        closing: &dyn Fn() -> bool,
    ) -> std::result::Result<Vec<u8>, String> {
        self.sweep();
        let id = job.id;
        let job_object = job_key(&self.prefix, id, "job");
        self.bucket
            .put(&job_object, Bytes::from(job.encode()), true)
            .map_err(|e| format!("posting {job_object}: {e}"))?;
        tracing::debug!(target: "lithify::cluster", job = id, "compaction job posted");
        let posted = Instant::now();
        let gib = job.compaction.input_bytes() as f64 / (1u64 << 30) as f64;
        let deadline = self.options.deadline + self.options.deadline_per_gib.mul_f64(gib);
        let claim = job_key(&self.prefix, id, "claim");
        let outcome = job_key(&self.prefix, id, "outcome");
        let mut claimed_by: Option<String> = None;
        let answer = loop {
            match self.bucket.get(&outcome) {
                Ok(bytes) => break Ok(bytes.to_vec()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => break Err(format!("reading {outcome}: {e}")),
            }
            if closing() {
                break Err("the database is closing".to_owned());
            }
            let waited = posted.elapsed();
            if claimed_by.is_none() {
                match self.bucket.get(&claim) {
                    Ok(who) => claimed_by = Some(String::from_utf8_lossy(&who).into_owned()),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        if waited >= self.options.claim_timeout {
                            break Err(format!(
                                "no worker claimed it within {:?}",
                                self.options.claim_timeout
                            ));
                        }
                    }
                    Err(e) => break Err(format!("reading {claim}: {e}")),
                }
            }
            if waited >= deadline {
                break Err(format!(
                    "worker {} sent no outcome within {deadline:?}",
                    claimed_by.as_deref().unwrap_or("?")
                ));
            }
            // A tenth of the wait so far (at least `poll`, at most a
            // second): a long job costs a few dozen requests, and its
            // outcome waits at most a tenth longer than the job took.
            std::thread::sleep(
                (waited / 10)
                    .max(self.options.poll)
                    .min(Duration::from_secs(1).max(self.options.poll)),
            );
        };
        self.remove_job(id);
        if answer.is_err() {
            self.abandoned.lock().push(id);
        }
        answer
    }

    fn verify_outputs(&self) -> bool {
        self.options.verify_outputs
    }
}

/// What a worker did with one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobReport {
    /// The job.
    pub id: u64,
    /// Its outcome as sent, or `None` when the writer had given the job
    /// up by the time it was done (its outputs were removed).
    pub outcome: Option<RemoteOutcome>,
}

/// A compaction worker (RocksDB's remote worker calling
/// `DB::OpenAndCompact`): claims the jobs posted under a database's
/// prefix, one at a time, and runs them on the tables in the bucket.
///
/// ```
/// use std::sync::Arc;
/// use lithify_bucket::{Bucket, BucketFs, ReadOptions, SplitFs};
/// use lithify_cluster::{BucketCompactionService, CompactionWorker, ServiceOptions};
/// use lithify_engine::{Db, Options};
/// use lithify_vfs::MemFs;
///
/// let bucket = Bucket::in_memory();
/// let tables = BucketFs::new(bucket.clone(), "/db", "db", ReadOptions::default());
/// let mut options = Options::default();
/// options.fs = Arc::new(SplitFs::new(Arc::new(MemFs::new()), tables));
/// options.compaction_service = Some(Arc::new(BucketCompactionService::new(
///     bucket.clone(),
///     "db",
///     ServiceOptions::default(),
/// )));
///
/// // A worker (a thread here; a process on another machine in use).
/// let worker = CompactionWorker::new(bucket.clone(), "db", "worker-1");
/// let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
/// let thread = {
///     let stop = Arc::clone(&stop);
///     std::thread::spawn(move || worker.run(&stop, std::time::Duration::from_millis(5)))
/// };
///
/// let db = Db::open("/db", options).unwrap();
/// for round in 0..3u32 {
///     for i in 0..100u32 {
///         db.put(format!("k{i:03}"), format!("v{round}")).unwrap();
///     }
///     db.flush().unwrap();
/// }
/// db.compact_range(None, None).unwrap();
/// assert_eq!(db.get(b"k007").unwrap().as_deref(), Some(&b"v2"[..]));
/// assert!(db.stats().remote_compactions >= 1);
/// stop.store(true, std::sync::atomic::Ordering::Relaxed);
/// let done = thread.join().unwrap().unwrap();
/// assert!(done >= 1);
/// ```
pub struct CompactionWorker {
    bucket: Bucket,
    prefix: String,
    name: String,
    env: WorkerEnv,
    /// The file system of `env`, which hands each job's outputs over to
    /// the writer once posted.
    outputs: lithify_bucket::BucketFs,
}

/// Tells this process's claims apart from each other and from those of
/// other processes with the same worker name.
fn claim_nonce() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{}-{nanos}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The local path a worker's bucket file system is rooted at.
const WORKER_ROOT: &str = "/lithify-worker";

impl CompactionWorker {
    /// A worker named `name` for the database whose tables are under
    /// `prefix` of `bucket`: bytewise keys, no merge operator, no
    /// compaction filter ([`with_env`](Self::with_env) sets them).
    pub fn new(bucket: Bucket, prefix: &str, name: &str) -> Self {
        let prefix = prefix.trim_matches('/').to_owned();
        // Outputs are new objects only: a second worker that took the same
        // job (a store whose conditional PUT is not atomic) can neither
        // overwrite nor remove the first one's tables.
        let fs = lithify_bucket::BucketFs::new(
            bucket.clone(),
            WORKER_ROOT,
            &prefix,
            lithify_bucket::ReadOptions::default(),
        )
        .new_objects_only();
        CompactionWorker {
            env: WorkerEnv::new(Arc::new(fs.clone()), WORKER_ROOT),
            outputs: fs,
            bucket,
            prefix,
            name: name.to_owned(),
        }
    }

    /// The same worker with the comparator, merge operator and compaction
    /// filter of `with` (its file system and directory are kept).
    pub fn with_env(mut self, with: WorkerEnv) -> Self {
        self.env = WorkerEnv {
            fs: self.env.fs,
            dir: self.env.dir,
            ..with
        };
        self
    }

    /// Claims and runs the oldest unclaimed job, if there is one.
    pub fn run_one(&self) -> Result<Option<JobReport>> {
        let dir = jobs_dir(&self.prefix);
        let names = self.bucket.list(&dir).context(StoreSnafu {
            op: "listing",
            key: dir.clone(),
        })?;
        let taken: std::collections::BTreeSet<&str> = names
            .iter()
            .filter_map(|n| {
                n.strip_suffix(".claim")
                    .or_else(|| n.strip_suffix(".outcome"))
            })
            .collect();
        for stem in names.iter().filter_map(|n| n.strip_suffix(".job")) {
            if taken.contains(stem) {
                continue;
            }
            let Ok(id) = stem.parse::<u64>() else {
                continue;
            };
            let claim = job_key(&self.prefix, id, "claim");
            // The claim names this worker and this attempt; reading it back
            // finds a racing claim on a store whose conditional PUT is not
            // atomic (the last PUT wins there), in most cases.
            let mine = Bytes::from(format!("{} {}", self.name, claim_nonce()));
            match self.bucket.put(&claim, mine.clone(), true) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(e).context(StoreSnafu {
                        op: "claiming",
                        key: claim,
                    });
                }
            }
            match self.bucket.get(&claim) {
                Ok(held) if held == mine => return self.run_claimed(id).map(Some),
                Ok(_) => continue,
                Err(e) => {
                    return Err(e).context(StoreSnafu {
                        op: "reading",
                        key: claim,
                    });
                }
            }
        }
        Ok(None)
    }

    fn run_claimed(&self, id: u64) -> Result<JobReport> {
        let job_object = job_key(&self.prefix, id, "job");
        let bytes = match self.bucket.get(&job_object) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(JobReport { id, outcome: None });
            }
            Err(e) => {
                return Err(e).context(StoreSnafu {
                    op: "reading",
                    key: job_object,
                });
            }
        };
        let started = Instant::now();
        let mut reserved = 0..0;
        let outcome = match RemoteJob::decode(&bytes) {
            // A job that panics the worker fails; the worker goes on.
            Ok(job) if job.id == id => {
                reserved = job.output_numbers.clone();
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    run_remote_job(&job, &self.env)
                }))
                .unwrap_or_else(|_| RemoteOutcome::Failed {
                    id,
                    message: "the job panicked the worker".to_owned(),
                })
            }
            Ok(job) => RemoteOutcome::Failed {
                id,
                message: format!("object {job_object} holds job {}", job.id),
            },
            Err(e) => RemoteOutcome::Failed {
                id,
                message: e.to_string(),
            },
        };
        let report = self.post(id, &job_object, outcome, started);
        // Whatever came of it, the job's numbers are the writer's again:
        // it installs the outputs, or removes every file under them when
        // it runs the job itself. The worker forgets them, so what it
        // remembers stays one job's worth.
        for n in reserved {
            let _ = self.outputs.hand_over(&self.env.dir.join(sst_file_name(n)));
        }
        report
    }

    /// Posts the outcome of job `id`, unless the writer gave the job up
    /// meanwhile (then removes its outputs).
    fn post(
        &self,
        id: u64,
        job_object: &str,
        outcome: RemoteOutcome,
        started: Instant,
    ) -> Result<JobReport> {
        // Given up meanwhile? Then nobody installs the outputs: remove them.
        let still_wanted = self.bucket.head(job_object).context(StoreSnafu {
            op: "looking up",
            key: job_object.to_owned(),
        })?;
        if still_wanted.is_none() {
            self.remove_outputs(&outcome);
            let _ = self.bucket.delete(&job_key(&self.prefix, id, "claim"));
            tracing::warn!(target: "lithify::cluster", job = id, "the writer gave the job up; its outputs are removed");
            return Ok(JobReport { id, outcome: None });
        }
        let key = job_key(&self.prefix, id, "outcome");
        if let Err(e) = self.bucket.put(&key, Bytes::from(outcome.encode()), true) {
            self.remove_outputs(&outcome);
            return Err(e).context(StoreSnafu { op: "posting", key });
        }
        match &outcome {
            RemoteOutcome::Done(r) => tracing::info!(
                target: "lithify::cluster",
                job = id,
                outputs = r.outputs.len(),
                bytes_read = r.stats.bytes_read(),
                bytes_written = r.stats.bytes_written,
                millis = started.elapsed().as_millis() as u64,
                "compaction job done"
            ),
            RemoteOutcome::Failed { message, .. } => {
                tracing::warn!(target: "lithify::cluster", job = id, message, "compaction job failed")
            }
        }
        Ok(JobReport {
            id,
            outcome: Some(outcome),
        })
    }

    fn remove_outputs(&self, outcome: &RemoteOutcome) {
        if let RemoteOutcome::Done(r) = outcome {
            for f in &r.outputs {
                let _ = self
                    .env
                    .fs
                    .remove_file(&self.env.dir.join(sst_file_name(f.number)));
            }
        }
    }

    /// Runs jobs until `stop` is set, looking for new ones every `poll`
    /// when there are none; returns how many it ran. A failing request to
    /// the bucket is logged and retried at the next poll.
    pub fn run(&self, stop: &AtomicBool, poll: Duration) -> Result<u64> {
        let mut done = 0;
        while !stop.load(Ordering::Relaxed) {
            match self.run_one() {
                Ok(Some(_)) => done += 1,
                Ok(None) => std::thread::sleep(poll),
                Err(e) => {
                    tracing::warn!(target: "lithify::cluster", error = %e, "compaction worker: bucket request failed");
                    std::thread::sleep(poll);
                }
            }
        }
        Ok(done)
    }
}
