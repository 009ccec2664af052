//! Compaction run by another process (RocksDB's `CompactionService`): the
//! [`CompactionService`] trait a transport implements, and the engine's
//! side of a job — reserve its output numbers, hand it over, check what
//! comes back (`lithify_compaction::remote::check_remote_result`), or
//! remove whatever the job left and run it here.

use std::ops::Range;
use std::sync::Arc as StdArc;

use lithify_compaction::iter::Snapshots;
use lithify_compaction::job::JobOptions;
use lithify_compaction::remote::{RemoteJob, RemoteOutcome, SstSettings, check_remote_result};
use lithify_compaction::{Compaction, CompactionResult, OutputFactory};
use lithify_version::filename::{FileKind, parse_file_name, sst_file_name};

use crate::events::Level;
use crate::options::Options;
use crate::sst_files::InputOpener;
use crate::state::DbInner;
use crate::stats::Counters;

/// Runs compactions elsewhere (RocksDB's `CompactionService`): the engine
/// calls [`run`](Self::run) on its compaction thread with a job that
/// another process can run through
/// [`run_remote_job`](lithify_compaction::remote::run_remote_job) on the
/// same tables (a worker on a machine reading the same bucket), and waits.
///
/// What comes back is checked before it is installed (the job's id, every
/// output's number, key range, identity, entry count and, when
/// [`verify_outputs`](Self::verify_outputs), the checksum of every byte).
/// An error, an answer that does not decode, or one that fails a check
/// costs a local run of the job, never data: the engine removes every
/// file with one of the job's reserved numbers and compacts itself,
/// counting it in [`DbStats::remote_compaction_fallbacks`](crate::DbStats).
///
/// Trivial moves, flush plans, and compactions of tables with blob files
/// always run locally.
///
/// ```
/// use std::sync::Arc;
/// use lithify_compaction::remote::{RemoteJob, WorkerEnv, run_remote_job};
/// use lithify_engine::{CompactionService, Db, Options};
/// use lithify_vfs::{FileSystem, MemFs};
///
/// /// A "worker" in the same process, over the same file system.
/// struct InProcess(Arc<dyn FileSystem>);
///
/// impl CompactionService for InProcess {
///     fn run(&self, job: &RemoteJob, _closing: &dyn Fn() -> bool) -> Result<Vec<u8>, String> {
///         // The job crosses as bytes, as it would cross a network.
///         let job = RemoteJob::decode(&job.encode()).map_err(|e| e.to_string())?;
///         let env = WorkerEnv::new(Arc::clone(&self.0), "/db");
///         Ok(run_remote_job(&job, &env).encode())
///     }
/// }
///
/// let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
/// let mut options = Options::default();
/// options.fs = Arc::clone(&fs);
/// options.compaction_service = Some(Arc::new(InProcess(Arc::clone(&fs))));
/// let db = Db::open("/db", options).unwrap();
/// for round in 0..3u32 {
///     for i in 0..100u32 {
///         db.put(format!("k{i:03}"), format!("v{round}")).unwrap();
///     }
///     db.flush().unwrap();
/// }
/// db.compact_range(None, None).unwrap();
/// assert_eq!(db.get(b"k042").unwrap().as_deref(), Some(&b"v2"[..]));
/// let stats = db.stats();
/// assert!(stats.remote_compactions >= 1);
/// assert_eq!(stats.remote_compaction_fallbacks, 0);
/// ```
pub trait CompactionService: Send + Sync {
    /// Runs `job` elsewhere, blocking until it is done, and returns the
    /// worker's outcome as encoded
    /// ([`RemoteOutcome::encode`](lithify_compaction::remote::RemoteOutcome::encode)),
    /// or why it could not (the engine then runs the job itself).
    /// `closing()` turns true when the database is closing: a service
    /// that waits should then give up.
    fn run(&self, job: &RemoteJob, closing: &dyn Fn() -> bool) -> Result<Vec<u8>, String>;

    /// Whether the engine reads every byte of each output to check its
    /// checksum before installing it (default true). Without it, each
    /// output is still opened and its identity and counts checked.
    fn verify_outputs(&self) -> bool {
        true
    }
}

/// Runs `c` through the database's compaction service, if it has one and
/// the job can run elsewhere. `None`: run it here (whatever the attempt
/// wrote is already removed).
pub(crate) fn try_remote(
    db: &DbInner,
    c: &Compaction,
    table_options: &Options,
    factory: &OutputFactory<'_>,
    snapshots: &Snapshots,
    opts: &JobOptions,
) -> Option<CompactionResult> {
    let service = db.options.compaction_service.as_ref()?;
    if !RemoteJob::is_remotable(c)
        || factory.blobs.enable_blob_files
        || factory.blobs.relocate_below > 0
        || c.input_files().any(|(_, f)| !f.blob_refs.is_empty())
    {
        return None;
    }
    let numbers = db
        .versions
        .reserve_file_numbers(RemoteJob::output_numbers_for(c));
    let (db_id, session_id) = db.writer_identity();
    let sst = &factory.sst_options;
    let job = RemoteJob {
        id: numbers.start,
        db_id,
        session_id,
        compaction: c.clone(),
        snapshots: snapshots.as_slice().to_vec(),
        output_numbers: numbers.clone(),
        comparator: table_options.comparator.name().to_owned(),
        merge_operator: table_options
            .merge_operator
            .as_ref()
            .map(|m| m.name().to_owned()),
        compaction_filter: table_options
            .compaction_filter
            .as_ref()
            .map(|f| f.name().to_owned()),
        sst: SstSettings {
            block_size: sst.block_size,
            block_restart_interval: sst.block_restart_interval,
            bloom_bits_per_key: sst.bloom_bits_per_key,
            verify_checksums: sst.verify_checksums,
        },
        verify_record_count: opts.verify_record_count,
        now: opts.now.unwrap_or_else(|| db.options.clock.now_secs()),
        compaction_pri: opts.compaction_pri,
        enforce_single_delete_contracts: opts.enforce_single_delete_contracts,
    };
    // A service that panics fails this job, not the compaction thread.
    let closing = || db.lock_state().is_shutting_down();
    let answer =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| service.run(&job, &closing)))
            .unwrap_or_else(|_| Err("the compaction service panicked".to_owned()));
    let outcome = answer
        .and_then(|bytes| RemoteOutcome::decode(&bytes).map_err(|e| e.to_string()))
        .and_then(|outcome| {
            let opener = InputOpener { opener: &db.opener };
            check_remote_result(
                &job,
                outcome,
                &opener,
                &*db.fs,
                &db.dir,
                &sst.comparator,
                service.verify_outputs(),
            )
            .map_err(|e| e.to_string())
        });
    match outcome {
        Ok(r) => {
            Counters::add(&db.counters.remote_compactions, 1);
            db.events.emit(
                Level::Info,
                "remote_compaction",
                format_args!(
                    "remote compaction job {} installs {} output(s): {}",
                    job.id,
                    r.outputs.len(),
                    r.outputs
                        .iter()
                        .map(|f| sst_file_name(f.number))
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
            );
            Some(r)
        }
        Err(why) => {
            Counters::add(&db.counters.remote_compaction_fallbacks, 1);
            let removed = remove_reserved(db, &numbers);
            db.events.emit(
                Level::Warn,
                "remote_compaction_failed",
                format_args!(
                    "remote compaction job {} not installed, running it here: {why}; removed {removed} file(s) with its reserved numbers",
                    job.id
                ),
            );
            None
        }
    }
}

/// Removes every table or blob file numbered in `numbers` (what an
/// abandoned or refused job wrote); returns how many.
fn remove_reserved(db: &DbInner, numbers: &Range<u64>) -> usize {
    let Ok(names) = db.fs.list_dir(&db.dir) else {
        return 0;
    };
    let mut removed = 0;
    for name in names {
        let ours = matches!(
            parse_file_name(&name),
            Some(FileKind::Sst(n) | FileKind::Blob(n)) if numbers.contains(&n)
        );
        if ours && db.fs.remove_file(&db.dir.join(&name)).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// The service of a database's options, for `Debug`.
pub(crate) fn describe(service: &Option<StdArc<dyn CompactionService>>) -> &'static str {
    if service.is_some() { "set" } else { "none" }
}
