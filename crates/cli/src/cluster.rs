//! The processes beside a writer whose tables are in a bucket:
//!
//! * `lithify compaction-worker` runs the compactions a writer (`lithify
//!   bench --remote-compaction`, or any database with a
//!   `BucketCompactionService`) posts to the bucket, through
//!   `lithify::cluster::CompactionWorker`;
//! * `lithify replica` follows a writer whose MANIFEST is in the bucket
//!   (`bench --manifest-in-bucket`), through `lithify::cluster::Replica`.

use std::sync::Arc;

use clap::Args;
use lithify::bucket::Bucket;
use lithify::cluster::CompactionWorker;
use lithify::compaction::remote::{RemoteOutcome, WorkerEnv};
use snafu::ResultExt as _;

use crate::error::{ClusterSnafu, Result, UsageSnafu};
use crate::numbers;
use crate::output::say;

/// Where the database is: a bucket and the prefix of its objects, and its
/// merge operator (`compaction-worker` and `replica`).
#[derive(Debug, Args)]
pub(crate) struct PlaceArgs {
    /// The S3-compatible bucket of the database's tables (and, with
    /// `bench --manifest-in-bucket`, its MANIFEST): http://host:port/name
    /// (an S3-compatible server), file:///path or a path (object_store's
    /// local store), memory://. `bench` keeps the tables there instead of
    /// in its directory (the WAL stays there) and prints the requests and
    /// bytes sent per user byte and the page cache's hit rate;
    /// `compaction-worker` and `replica` work on the database there.
    #[arg(long, value_name = "URL")]
    pub bucket: String,
    /// The prefix of the database's objects in the bucket (the writer's
    /// `bench --bucket-prefix`).
    #[arg(long, value_name = "PREFIX")]
    pub prefix: String,
    /// The merge operator, one of the built-in ones: `uint64add` (little-
    /// endian u64 sum of 8-byte operands), `stringappend` (comma-joined) or
    /// `max`. A database holding merge operands must be opened with the one
    /// it records: reads (`get`, `scan`, `check`) combine a key's operands
    /// with it, `merge` writes them, and without it reading a key that
    /// holds operands fails, naming the key. `bench` merges with it in
    /// mergerandom and readrandommergerandom; `stress db` and `stress bank`
    /// open their database with it; `replica` reads with it; a
    /// `compaction-worker` without the one a job names fails the job, which
    /// the writer then runs itself.
    #[arg(long, alias = "operator", value_name = "NAME", value_parser = crate::db::parse_merge_operator)]
    pub merge_operator: Option<String>,
}

impl PlaceArgs {
    /// The bucket, refusing a local one inside stored data (a worker
    /// writes tables there).
    fn bucket(&self) -> Result<Bucket> {
        if let Some(local) = Bucket::url_local_dir(&self.bucket) {
            crate::output::check(local)?;
        }
        Bucket::open_url(&self.bucket).map_err(|e| {
            UsageSnafu {
                message: format!("--bucket {}: {e}", self.bucket),
            }
            .build()
        })
    }

    /// The merge operator `--merge-operator` names.
    fn merge_operator(&self) -> Option<Arc<dyn lithify::MergeOperator>> {
        self.merge_operator
            .as_deref()
            .and_then(lithify::merge_operator_by_name)
    }
}

/// `lithify compaction-worker`.
#[derive(Debug, Args)]
pub(crate) struct CompactionWorkerArgs {
    #[command(flatten)]
    pub place: PlaceArgs,
    /// The name this worker claims jobs under (default `worker-<pid>`).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Milliseconds between looks for new jobs while there are none (each
    /// look is one LIST request) [range: 1..=60000].
    #[arg(long, default_value_t = 100, value_parser = numbers::int::<u64>(1, 60_000))]
    pub poll_ms: u64,
    /// Exit after this many jobs (default: run until stopped)
    /// [range: 1..=1000000000].
    #[arg(long, value_parser = numbers::int::<u64>(1, 1_000_000_000))]
    pub max_jobs: Option<u64>,
}

/// Runs jobs until stopped (or `--max-jobs`), one line per job on stdout.
pub(crate) fn compaction_worker(a: CompactionWorkerArgs) -> Result<()> {
    let bucket = a.place.bucket()?;
    let name = a
        .name
        .clone()
        .unwrap_or_else(|| format!("worker-{}", std::process::id()));
    let mut env = WorkerEnv::new(Arc::new(lithify::vfs::MemFs::new()), "/");
    env.merge_operator = a.place.merge_operator();
    let worker = CompactionWorker::new(bucket.clone(), &a.place.prefix, &name).with_env(env);
    say(format_args!(
        "{name}: taking the compaction jobs under {} in {}\n",
        a.place.prefix.trim_matches('/'),
        bucket.name()
    ))?;
    let poll = std::time::Duration::from_millis(a.poll_ms);
    let mut done = 0u64;
    while a.max_jobs.is_none_or(|max| done < max) {
        let report = match worker.run_one() {
            Ok(Some(report)) => report,
            Ok(None) => {
                std::thread::sleep(poll);
                continue;
            }
            // A request that failed after its retries: said, and the
            // worker looks again (the writer runs a job it never answers).
            Err(e) => {
                tracing::warn!("{name}: {e}");
                std::thread::sleep(poll);
                continue;
            }
        };
        done += 1;
        match &report.outcome {
            Some(RemoteOutcome::Done(r)) => say(format_args!(
                "job {}: read {:.1} MB, wrote {:.1} MB in {} table(s), {} ms; bucket so far: {}\n",
                report.id,
                r.stats.bytes_read() as f64 / 1e6,
                r.stats.bytes_written as f64 / 1e6,
                r.outputs.len(),
                r.stats.micros / 1000,
                bucket.stats()
            ))?,
            Some(RemoteOutcome::Failed { message, .. }) => {
                say(format_args!("job {}: failed: {message}\n", report.id))?
            }
            None => say(format_args!(
                "job {}: given up by the writer; its outputs are removed\n",
                report.id
            ))?,
        }
    }
    Ok(())
}

/// `lithify replica`.
#[derive(Debug, Args)]
pub(crate) struct ReplicaArgs {
    #[command(flatten)]
    pub place: PlaceArgs,
    /// Milliseconds between looks at the writer's MANIFEST
    /// [range: 1..=3600000].
    #[arg(long, default_value_t = 100, value_parser = numbers::int::<u64>(1, 3_600_000))]
    pub catch_up_ms: u64,
    /// Stop after this many seconds (default: follow until stopped)
    /// [range: 1..=31536000].
    #[arg(long, value_parser = numbers::int::<u64>(1, 31_536_000))]
    pub duration_secs: Option<u64>,
}

/// Follows the writer, one line per version it moves to: the time (ms
/// since the epoch), the sequence number it serves, its tables, and the
/// tables new to it.
pub(crate) fn replica(a: ReplicaArgs) -> Result<()> {
    use lithify::bucket::{BucketFs, ReadOptions, SplitFs};
    use lithify::cluster::Replica;
    let bucket = a.place.bucket()?;
    let dir = "/lithify-replica";
    let tables = BucketFs::new(bucket.clone(), dir, &a.place.prefix, ReadOptions::default());
    let fs = SplitFs::with_manifest_in_bucket(Arc::new(lithify::vfs::MemFs::new()), tables);
    let options = lithify::Options::default().merge_operator(a.place.merge_operator());
    let replica = Replica::open(dir, options, fs).context(ClusterSnafu)?;
    let started = std::time::Instant::now();
    let every = std::time::Duration::from_millis(a.catch_up_ms);
    let mut known = std::collections::BTreeSet::new();
    let mut first = true;
    loop {
        let advanced = if first {
            first = false;
            true
        } else {
            replica.try_catch_up().context(ClusterSnafu)?.advanced
        };
        if advanced {
            let db = replica.db();
            let live: std::collections::BTreeSet<u64> = db
                .live_files()
                .iter()
                .filter_map(|f| {
                    f.path
                        .file_stem()
                        .and_then(|s| s.to_str())
                        .and_then(|s| s.parse().ok())
                })
                .collect();
            let new: Vec<String> = live.difference(&known).map(|n| format!("{n:06}")).collect();
            let ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis());
            say(format_args!(
                "{ms} sequence {} tables {} new {}\n",
                db.latest_sequence_number(),
                live.len(),
                if new.is_empty() {
                    "-".to_owned()
                } else {
                    new.join(",")
                }
            ))?;
            known = live;
        }
        if a.duration_secs
            .is_some_and(|s| started.elapsed().as_secs() >= s)
        {
            return Ok(());
        }
        std::thread::sleep(every);
    }
}
