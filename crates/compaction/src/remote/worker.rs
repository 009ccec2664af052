//! The worker's side: [`run_remote_job`].

use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use lithify_base::{Comparator, InternalKeyComparator, MergeOperator};
use lithify_sstable::{SstOptions, SstReader};
use lithify_version::FileMetadata;
use lithify_version::filename::sst_file_name;
use lithify_vfs::FileSystem;

use super::job::RemoteJob;
use super::outcome::{RemoteOutcome, RemoteResult};
use crate::iter::{CompactionFilter, Snapshots};
use crate::job::{BlobSettings, FileNumbers, JobOptions, OutputFactory, SstOpener, run_compaction};

/// What a worker runs jobs with: where the tables are, and the objects
/// jobs name (RocksDB's `CompactionServiceOptionsOverride`). A job naming
/// a comparator, merge operator or compaction filter other than these
/// fails on the worker, and the primary runs it itself.
#[derive(Clone)]
pub struct WorkerEnv {
    /// The file system holding the database's tables.
    pub fs: Arc<dyn FileSystem>,
    /// The database's directory in it.
    pub dir: PathBuf,
    /// The user comparator.
    pub comparator: Arc<dyn Comparator>,
    /// The merge operator, for jobs that name one.
    pub merge_operator: Option<Arc<dyn MergeOperator>>,
    /// The compaction filter, for jobs that name one.
    pub compaction_filter: Option<Arc<dyn CompactionFilter>>,
}

impl WorkerEnv {
    /// Tables in `dir` of `fs`, bytewise keys, no merge operator and no
    /// compaction filter.
    pub fn new(fs: Arc<dyn FileSystem>, dir: impl Into<PathBuf>) -> Self {
        WorkerEnv {
            fs,
            dir: dir.into(),
            comparator: Arc::new(lithify_base::BytewiseComparator),
            merge_operator: None,
            compaction_filter: None,
        }
    }

    /// Whether the job's named objects are this worker's.
    fn check_names(&self, job: &RemoteJob) -> Result<(), String> {
        if self.comparator.name() != job.comparator {
            return Err(format!(
                "the job orders keys by comparator {}, this worker by {}",
                job.comparator,
                self.comparator.name()
            ));
        }
        let named = |what: &str, want: &Option<String>, have: Option<&str>| match (want, have) {
            (None, _) => Ok(()),
            (Some(w), Some(h)) if w == h => Ok(()),
            (Some(w), h) => Err(format!(
                "the job needs {what} {w}, this worker has {}",
                h.unwrap_or("none")
            )),
        };
        named(
            "merge operator",
            &job.merge_operator,
            self.merge_operator.as_ref().map(|m| m.name()),
        )?;
        named(
            "compaction filter",
            &job.compaction_filter,
            self.compaction_filter.as_ref().map(|f| f.name()),
        )
    }
}

/// Opens tables from a file system by their recorded number and size,
/// bypassing any block cache (one sequential pass).
pub struct FsSstOpener<'a> {
    /// The file system.
    pub fs: &'a dyn FileSystem,
    /// The directory of the tables.
    pub dir: &'a std::path::Path,
    /// How the tables are read.
    pub options: &'a SstOptions<InternalKeyComparator>,
}

impl SstOpener for FsSstOpener<'_> {
    fn open_sst(
        &self,
        file: &FileMetadata,
    ) -> lithify_base::Result<Arc<SstReader<InternalKeyComparator>>> {
        let path = self.dir.join(sst_file_name(file.number));
        let f = self
            .fs
            .open(&path)
            .map_err(|e| lithify_base::Error::io(path.clone(), e))?;
        let table = SstReader::open(f, &path, file.size, self.options, None)
            .map_err(lithify_base::Error::external)?;
        Ok(Arc::new(table))
    }
}

/// File numbers handed out from a reserved range; what is asked beyond its
/// end is counted, so the job can be refused afterwards.
pub struct NumberRange {
    next: AtomicU64,
    end: u64,
}

impl NumberRange {
    /// Numbers from `range`.
    pub fn new(range: Range<u64>) -> Self {
        NumberRange {
            next: AtomicU64::new(range.start),
            end: range.end,
        }
    }

    /// Whether every number handed out was in the range.
    pub fn sufficed(&self) -> bool {
        self.next.load(Ordering::Relaxed) <= self.end
    }
}

impl FileNumbers for NumberRange {
    fn new_file_number(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }
}

/// The worker's view of the shared file system: a table or blob file may
/// be created, replaced or removed only under one of the job's reserved
/// numbers. Numbers past the range belong to the writer; a job that needs
/// more fails at its first extra output instead of writing (or, cleaning
/// up, removing) a file the writer may own.
#[derive(Debug)]
struct ReservedFs<'a> {
    inner: &'a dyn FileSystem,
    numbers: Range<u64>,
}

impl ReservedFs<'_> {
    fn check(&self, path: &std::path::Path) -> std::io::Result<()> {
        use lithify_version::filename::{FileKind, parse_file_name};
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        match parse_file_name(name) {
            Some(FileKind::Sst(n) | FileKind::Blob(n)) if !self.numbers.contains(&n) => {
                Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    format!(
                        "{name}: file number {n} is not one of the job's reserved numbers {}..{}",
                        self.numbers.start, self.numbers.end
                    ),
                ))
            }
            _ => Ok(()),
        }
    }
}

impl FileSystem for ReservedFs<'_> {
    fn create(
        &self,
        path: &std::path::Path,
    ) -> std::io::Result<Box<dyn lithify_vfs::WritableFile>> {
        self.check(path)?;
        self.inner.create(path)
    }
    fn create_new(
        &self,
        path: &std::path::Path,
    ) -> std::io::Result<Box<dyn lithify_vfs::WritableFile>> {
        self.check(path)?;
        self.inner.create_new(path)
    }
    fn open_append(
        &self,
        path: &std::path::Path,
    ) -> std::io::Result<Box<dyn lithify_vfs::WritableFile>> {
        self.check(path)?;
        self.inner.open_append(path)
    }
    fn open(
        &self,
        path: &std::path::Path,
    ) -> std::io::Result<Arc<dyn lithify_vfs::RandomAccessFile>> {
        self.inner.open(path)
    }
    fn rename(&self, from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
        self.check(from)?;
        self.check(to)?;
        self.inner.rename(from, to)
    }
    fn remove_file(&self, path: &std::path::Path) -> std::io::Result<()> {
        self.check(path)?;
        self.inner.remove_file(path)
    }
    fn hard_link(&self, from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
        self.check(to)?;
        self.inner.hard_link(from, to)
    }
    fn remove_dir(&self, path: &std::path::Path) -> std::io::Result<()> {
        self.inner.remove_dir(path)
    }
    fn list_dir(&self, dir: &std::path::Path) -> std::io::Result<Vec<String>> {
        self.inner.list_dir(dir)
    }
    fn create_dir_all(&self, dir: &std::path::Path) -> std::io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn exists(&self, path: &std::path::Path) -> bool {
        self.inner.exists(path)
    }
    fn try_exists(&self, path: &std::path::Path) -> std::io::Result<bool> {
        self.inner.try_exists(path)
    }
    fn is_dir(&self, path: &std::path::Path) -> bool {
        self.inner.is_dir(path)
    }
    fn file_size(&self, path: &std::path::Path) -> std::io::Result<u64> {
        self.inner.file_size(path)
    }
    fn sync_dir(&self, dir: &std::path::Path) -> std::io::Result<()> {
        self.inner.sync_dir(dir)
    }
    fn lock(&self, path: &std::path::Path) -> std::io::Result<lithify_vfs::FileLock> {
        self.inner.lock(path)
    }
}

/// The table-reading options of a job's tables.
pub(crate) fn sst_options(
    job: &RemoteJob,
    comparator: Arc<dyn Comparator>,
) -> SstOptions<InternalKeyComparator> {
    let mut o = SstOptions::for_internal_keys(InternalKeyComparator::new(comparator));
    o.block_size = job.sst.block_size;
    o.block_restart_interval = job.sst.block_restart_interval;
    o.bloom_bits_per_key = job.sst.bloom_bits_per_key;
    o.verify_checksums = job.sst.verify_checksums;
    o
}

/// Runs `job` on a worker (RocksDB's `DB::OpenAndCompact`): reads the
/// inputs from `env.fs`, writes the outputs there under the reserved
/// numbers with the writer's identity, and says what it wrote. A job that
/// fails — objects it names that `env` lacks, unreadable inputs, more
/// outputs than numbers — removes what it wrote and reports why; it never
/// panics on a job's content.
pub fn run_remote_job(job: &RemoteJob, env: &WorkerEnv) -> RemoteOutcome {
    let failed = |message: String| RemoteOutcome::Failed {
        id: job.id,
        message,
    };
    if let Err(m) = env.check_names(job) {
        return failed(m);
    }
    if job.output_numbers.is_empty() {
        return failed("the job reserves no output numbers".to_owned());
    }
    let sst_options = sst_options(job, Arc::clone(&env.comparator));
    let numbers = NumberRange::new(job.output_numbers.clone());
    let fs = ReservedFs {
        inner: &*env.fs,
        numbers: job.output_numbers.clone(),
    };
    let factory = OutputFactory {
        fs: &fs,
        dir: &env.dir,
        numbers: &numbers,
        sst_options: sst_options.clone(),
        identity: Some((job.db_id, job.session_id)),
        blobs: BlobSettings::disabled(),
    };
    let opener = FsSstOpener {
        fs: &*env.fs,
        dir: &env.dir,
        options: &sst_options,
    };
    let opts = JobOptions::default()
        .verify_record_count(job.verify_record_count)
        .now(Some(job.now))
        .compaction_pri(job.compaction_pri)
        .merge_operator(env.merge_operator.clone())
        .enforce_single_delete_contracts(job.enforce_single_delete_contracts);
    let snapshots = Snapshots::new(job.snapshots.clone());
    let filter = job
        .compaction_filter
        .as_ref()
        .and(env.compaction_filter.as_deref());
    let r = match run_compaction(
        &job.compaction,
        &opener,
        &snapshots,
        filter,
        &factory,
        &opts,
    ) {
        Ok(r) => r,
        Err(e) => return failed(e.to_string()),
    };
    if !numbers.sufficed() || !r.blob_files.is_empty() {
        for f in &r.outputs {
            let _ = env.fs.remove_file(&factory.path_of(f.number));
        }
        for b in &r.blob_files {
            let _ = env.fs.remove_file(
                &env.dir
                    .join(lithify_version::filename::blob_file_name(b.number)),
            );
        }
        return failed(format!(
            "the job needed more than its {} output numbers, or wrote blob files",
            job.output_numbers.end - job.output_numbers.start
        ));
    }
    RemoteOutcome::Done(Box::new(RemoteResult {
        id: job.id,
        outputs: r.outputs,
        stats: r.stats,
        iter_stats: r.iter_stats,
        subcompactions: r.subcompactions,
    }))
}
