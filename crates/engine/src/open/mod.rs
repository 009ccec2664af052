//! Opening a database, in the order it runs:
//!
//! 1. **lock** ([`lock_dir`]): the directory is created if allowed and the
//!    `LOCK` file taken — a read-only open creates nothing and takes no
//!    lock (RocksDB's `OpenForReadOnly`);
//! 2. **recover** ([`recover_versions`]): the `VersionSet` is created or
//!    recovered from the MANIFEST, and every live SST file is checked to
//!    exist with its recorded size ([`verify`], RocksDB's
//!    `paranoid_checks`);
//! 3. **replay** ([`replay`]): every WAL at or above the minimum log number
//!    is replayed into memtables, dropping only what the recovery mode and
//!    the synced sizes allow, and reporting every dropped range;
//! 4. **finish** ([`finish_recovery`], read-write only): the replayed data
//!    goes to L0, a new WAL starts, one edit group raises every log number,
//!    files nothing needs are deleted — except files recovery dropped bytes
//!    from, which move to `lost/`;
//! 5. **assemble** ([`assemble`]): the running database, its super
//!    versions and (read-write) its background threads.

mod replay;
mod verify;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;
use std::sync::Arc as StdArc;
use std::thread::JoinHandle;
use std::time::Instant;

use lithify_base::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use lithify_base::sync::{Arc, Condvar, Mutex};
use lithify_base::{Id, InternalKeyComparator, SeqNo};
use lithify_sstable::BlockCache;
use lithify_version::filename::{FileKind, manifest_file_name, parse_file_name};
use lithify_version::{TableId, VersionEdit, VersionSet};
use lithify_vfs::{FileLock, FileSystem};
use snafu::ResultExt;

use crate::background::spawn_workers;
use crate::error::{CorruptionSnafu, InvalidArgumentSnafu, IoSnafu, LockedSnafu, Result};
use crate::events::{Events, Level};
use crate::options::Options;
use crate::options::translate::{sst_options, table_effective_options, version_set_options};
use crate::purge::orphans;
use crate::recovery::{DroppedBytes, RecoveryReport};
use crate::snapshot::SnapshotList;
use crate::sst_files::SstFiles;
use crate::state::leader::{LeaderState, MemSet};
use crate::state::table::{Imm, StrategyState, TableMut, TableState, new_memtable};
use crate::state::{DbInner, DbState};
use crate::stats::Counters;
use crate::super_version::SuperVersion;
use crate::wal::LogWriter;
use crate::write_thread::WriteThread;
use replay::{Replay, WalReplay, flush_replayed};

/// How a database is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpenMode {
    /// The normal open: recovery writes L0 files and a new MANIFEST.
    ReadWrite,
    /// RocksDB's `OpenForReadOnly`: the WALs are replayed into memory only;
    /// nothing is written, no lock is taken, no background work runs.
    ReadOnly,
}

/// Refuses tables recorded with a merge operator other than the one
/// configured. (A read-write open records the configured operator of
/// tables that have none recorded yet, in its first edit.)
fn check_merge_operators(versions: &VersionSet, opts: &Options) -> Result<()> {
    for info in versions.tables() {
        let configured = table_effective_options(opts, &info.name).merge_operator;
        if let (Some(recorded), Some(op)) = (&info.merge_operator, &configured)
            && recorded != op.name()
        {
            return InvalidArgumentSnafu {
                message: format!(
                    "table {} was written with merge operator {recorded}, and is opened with {}: \
                     its operands would be read with the wrong meaning",
                    info.name,
                    op.name()
                ),
            }
            .fail();
        }
    }
    Ok(())
}

/// Opens (or, read-write, creates) the database in `dir`.
pub(crate) fn open(
    dir: &Path,
    options: Options,
    mode: OpenMode,
) -> Result<(StdArc<DbInner>, Vec<JoinHandle<()>>)> {
    let opts = StdArc::new(options.sanitized()?);
    let fs = StdArc::clone(&opts.fs);
    let read_only = mode == OpenMode::ReadOnly;
    let (lock, exists) = lock_dir(&*fs, dir, &opts, mode)?;
    let events = Events::new(
        &*fs,
        dir,
        opts.listeners.clone(),
        opts.info_log && !read_only,
        opts.keep_log_file_num,
    );
    events.emit(
        Level::Info,
        "open",
        format_args!(
            "opening {}{}",
            if exists {
                "the database"
            } else {
                "a new database"
            },
            if read_only { " read-only" } else { "" }
        ),
    );
    let (versions, names) = recover_versions(&fs, dir, &opts, exists)?;
    check_merge_operators(&versions, &opts)?;
    let session_id = Id::random();
    events.emit(
        Level::Info,
        "open",
        format_args!(
            "database identity {}{}, session {session_id}",
            versions.db_id(),
            if versions.db_id_recorded() {
                ""
            } else {
                " (new: the MANIFEST records none yet)"
            }
        ),
    );
    let mut logs = Vec::new();
    for name in &names {
        match parse_file_name(name) {
            Some(FileKind::Log(n)) => {
                versions.mark_file_number_used(n);
                logs.push(n);
            }
            Some(FileKind::Sst(n) | FileKind::Blob(n) | FileKind::Manifest(n)) => {
                versions.mark_file_number_used(n)
            }
            _ => {}
        }
    }
    logs.sort_unstable();

    let icmp = InternalKeyComparator::new(opts.comparator.clone());
    let cache = match &opts.block_cache {
        Some(c) => Some(StdArc::clone(c)),
        None if opts.block_cache_size > 0 => {
            Some(StdArc::new(BlockCache::new(opts.block_cache_size)))
        }
        None => None,
    };
    let opener = StdArc::new(SstFiles {
        fs: StdArc::clone(&fs),
        dir: dir.to_path_buf(),
        options: sst_options(&opts),
        cache: cache.clone(),
        blobs: crate::blob_files::BlobFiles::new(
            StdArc::clone(&fs),
            dir.to_path_buf(),
            opts.blob_cache.clone(),
        ),
    });

    // Tables, with empty memtables.
    let mut tables: BTreeMap<TableId, Replay> = BTreeMap::new();
    for info in versions.tables() {
        let Some(version) = versions.current(info.id) else {
            continue;
        };
        let topts = StdArc::new(table_effective_options(&opts, &info.name));
        let mem = Arc::new(new_memtable(&icmp, &topts));
        let state = StdArc::new(TableState::new(
            info.id,
            info.name.clone(),
            topts,
            icmp.clone(),
            SuperVersion::new(Arc::clone(&mem), Vec::new(), version, None),
            info.merge_operator.clone(),
        ));
        tables.insert(
            info.id,
            Replay {
                state,
                log_number: info.log_number,
                mem,
                imm: Vec::new(),
                files: Vec::new(),
                blob_files: Vec::new(),
                stats: lithify_compaction::CompactionStatsTable::new(opts.num_levels),
            },
        );
    }

    let manifest = manifest_file_name(versions.manifest_number());
    let min_log = versions.min_log_number_to_keep();
    let replay_logs: Vec<u64> = logs.iter().copied().filter(|&n| n >= min_log).collect();
    let replayed = WalReplay {
        fs: &*fs,
        dir,
        options: &opts,
        opener: &opener,
        versions: &versions,
        read_only,
        manifest: manifest.clone(),
        identity: (versions.db_id(), session_id),
    }
    .run(&replay_logs, min_log, &mut tables)?;
    let last_seq = versions.last_sequence().max(replayed.last_seq);
    let replayed_wal_sizes = if read_only {
        replayed.wal_sizes
    } else {
        Vec::new()
    };
    let mut report = RecoveryReport {
        mode: opts.wal_recovery_mode,
        read_only,
        wals_replayed: replayed.wals_read,
        last_sequence: last_seq,
        dropped: Vec::new(),
    };
    if let Some(torn) = versions.recovered_torn_tail() {
        report.dropped.push(DroppedBytes {
            file: dir.join(&manifest),
            offset: torn.offset,
            len: torn.len,
            reason: format!(
                "{} in the last record (an edit whose write a crash cut short, never acknowledged)",
                torn.reason
            ),
            kept: None,
        });
    }
    report.dropped.extend(replayed.dropped);

    let log = if read_only {
        None
    } else {
        Some(finish_recovery(
            &*fs,
            dir,
            &opener,
            &versions,
            &mut tables,
            &names,
            &replay_logs,
            last_seq,
            &mut report,
            crate::wal::LogSettings::of(&opts),
            session_id,
        )?)
    };
    let inner = assemble(AssembleParts {
        dir,
        fs,
        opts,
        versions,
        opener,
        cache,
        icmp,
        tables,
        log,
        last_seq,
        events,
        report,
        replayed_wal_sizes,
        session_id,
        lock,
    })?;
    inner.events.recovery_completed(&inner.recovery);
    if read_only {
        return Ok((inner, Vec::new()));
    }
    crate::purge::purge_obsolete_files(&inner);
    let workers = spawn_workers(&inner).context(IoSnafu {
        op: "starting background threads for",
        path: dir.to_path_buf(),
    })?;
    inner.wake_background();
    Ok((inner, workers))
}

/// Step 1: checks the directory, creates it if allowed (read-write) and
/// takes the `LOCK` (read-write). Returns the lock and whether a database
/// exists there.
fn lock_dir(
    fs: &dyn FileSystem,
    dir: &Path,
    opts: &Options,
    mode: OpenMode,
) -> Result<(Option<FileLock>, bool)> {
    if fs.exists(dir) && !fs.is_dir(dir) {
        return InvalidArgumentSnafu {
            message: format!("{} is not a directory", dir.display()),
        }
        .fail();
    }
    let current = dir.join(lithify_version::filename::CURRENT);
    // Asked with `try_exists`: a store that does not answer is an error
    // here, never "no database" (which would create one).
    let current_exists = || {
        fs.try_exists(&current).context(IoSnafu {
            op: "looking for",
            path: current.clone(),
        })
    };
    // Without CURRENT the directory is a new database only if it holds no
    // database files: a lost CURRENT must not turn a database into an
    // empty one (whose open would then delete the old files as orphans).
    if !current_exists()?
        && let Some(found) = database_files(fs, dir)?
    {
        return CorruptionSnafu {
            path: current,
            message: format!(
                "the file is missing, but the directory holds a database's files ({found}); refusing to create a new database over them"
            ),
        }
        .fail();
    }
    if mode == OpenMode::ReadOnly {
        if !current_exists()? {
            return InvalidArgumentSnafu {
                message: format!(
                    "no database in {} (no CURRENT file); a read-only open creates nothing",
                    dir.display()
                ),
            }
            .fail();
        }
        return Ok((None, true));
    }
    if !fs.is_dir(dir) {
        if !opts.create_if_missing {
            return InvalidArgumentSnafu {
                message: format!(
                    "{} does not exist (create_if_missing is false)",
                    dir.display()
                ),
            }
            .fail();
        }
        lithify_vfs::create_dir_durable(fs, dir).context(IoSnafu {
            op: "creating directory",
            path: dir.to_path_buf(),
        })?;
    }
    let lock_path = dir.join("LOCK");
    let lock = fs.lock(&lock_path).context(LockedSnafu {
        dir: dir.to_path_buf(),
        path: lock_path.clone(),
    })?;
    let exists = current_exists()?;
    if exists && opts.error_if_exists {
        return InvalidArgumentSnafu {
            message: format!(
                "a database exists in {} (error_if_exists is set)",
                dir.display()
            ),
        }
        .fail();
    }
    if !exists && !opts.create_if_missing {
        return InvalidArgumentSnafu {
            message: format!(
                "no database in {} (create_if_missing is false)",
                dir.display()
            ),
        }
        .fail();
    }
    Ok((Some(lock), exists))
}

/// A description of the database files in `dir` — MANIFESTs, tables,
/// WALs — if there are any beyond what an interrupted creation leaves
/// (`MANIFEST-000001` written, `CURRENT` not yet: the open that creates a
/// database makes its first WAL only after `CURRENT`).
fn database_files(fs: &dyn FileSystem, dir: &Path) -> Result<Option<String>> {
    let names = match fs.list_dir(dir) {
        Ok(names) => names,
        // No directory: no files.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(e).context(IoSnafu {
                op: "listing",
                path: dir.to_path_buf(),
            });
        }
    };
    let (mut manifests, mut tables, mut logs) = (Vec::new(), 0, 0);
    for name in &names {
        match parse_file_name(name) {
            Some(FileKind::Manifest(_)) => manifests.push(name.as_str()),
            Some(FileKind::Sst(_)) => tables += 1,
            Some(FileKind::Log(_)) => logs += 1,
            _ => {}
        }
    }
    let interrupted_creation = tables == 0
        && logs == 0
        && manifests
            .iter()
            .all(|m| *m == manifest_file_name(1).as_str());
    if interrupted_creation {
        return Ok(None);
    }
    manifests.sort_unstable();
    Ok(Some(format!(
        "{}{tables} SST file(s), {logs} WAL(s)",
        if manifests.is_empty() {
            String::new()
        } else {
            format!("{}, ", manifests.join(", "))
        }
    )))
}

/// Step 2: the `VersionSet`, created or recovered, with its live files
/// verified; and the names in the directory.
fn recover_versions(
    fs: &StdArc<dyn FileSystem>,
    dir: &Path,
    opts: &Options,
    exists: bool,
) -> Result<(VersionSet, Vec<String>)> {
    let vs_opts = version_set_options(opts);
    let names = fs.list_dir(dir).context(IoSnafu {
        op: "listing",
        path: dir.to_path_buf(),
    })?;
    let versions = if exists {
        VersionSet::recover(StdArc::clone(fs), dir, vs_opts)?
    } else {
        VersionSet::create(StdArc::clone(fs), dir, vs_opts)?
    };
    if opts.paranoid_checks {
        verify::live_files(&**fs, dir, &versions)?;
    }
    Ok((versions, names))
}

/// Step 4 (read-write): writes what the replay left in memtables to L0,
/// starts a new WAL, raises every table's log number past the replayed
/// WALs in one edit group, then removes files nothing needs — moving the
/// ones recovery dropped bytes from into `lost/` instead. Returns the new
/// WAL.
/// The identity of the database that wrote the table `name`, when its
/// properties name one other than `ours` (`None` for our own, for a file
/// that is not a readable table, and for a table without an identity).
fn foreign_table(
    fs: &dyn FileSystem,
    dir: &Path,
    name: &str,
    ours: lithify_base::Id,
) -> Option<lithify_base::Id> {
    if !matches!(parse_file_name(name), Some(FileKind::Sst(_))) {
        return None;
    }
    let path = dir.join(name);
    let size = fs.file_size(&path).ok()?;
    let file = fs.open(&path).ok()?;
    let props = lithify_sstable::read_properties(&*file, &path, size).ok()?;
    props.db_id.filter(|id| *id != ours)
}

#[allow(clippy::too_many_arguments)]
fn finish_recovery(
    fs: &dyn FileSystem,
    dir: &Path,
    opener: &SstFiles,
    versions: &VersionSet,
    tables: &mut BTreeMap<TableId, Replay>,
    names: &[String],
    replay_logs: &[u64],
    last_seq: SeqNo,
    report: &mut RecoveryReport,
    wal: crate::wal::LogSettings,
    session_id: Id,
) -> Result<LogWriter> {
    let identity = (versions.db_id(), session_id);
    for r in tables.values_mut() {
        if !r.mem.is_empty() {
            flush_replayed(fs, dir, opener, versions, identity, r)?;
        }
    }
    let new_log = versions.new_file_number();
    let log = LogWriter::create(fs, dir, new_log, None, wal, versions.db_id(), None)?;
    let mut edits = Vec::new();
    for (id, r) in tables.iter_mut() {
        let mut edit = VersionEdit::new(*id);
        edit.log_number = Some(new_log);
        edit.merge_operator = r
            .state
            .options
            .merge_operator
            .as_ref()
            .map(|m| m.name().to_owned());
        for f in r.files.drain(..) {
            edit.add_file(0, f);
        }
        edit.blob_file_additions.append(&mut r.blob_files);
        edits.push(edit);
    }
    if !replay_logs.is_empty() || tables.values().any(|r| r.log_number < new_log) {
        fs.sync_dir(dir).context(IoSnafu {
            op: "syncing directory",
            path: dir.to_path_buf(),
        })?;
    }
    versions.set_last_sequence(last_seq);
    versions.log_and_apply(edits)?;

    // Files recovery dropped bytes from are evidence: kept, not deleted.
    // So are tables no version names when the MANIFEST lost its tail (they
    // may be the outputs of the dropped edit).
    let mut keep: BTreeSet<String> = report
        .dropped
        .iter()
        .filter_map(|d| d.file.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .collect();
    let manifest_torn = versions.recovered_torn_tail().is_some();
    let live = versions.live_files();
    for name in orphans(
        names,
        &live,
        versions.min_log_number_to_keep(),
        versions.manifest_number(),
    ) {
        if manifest_torn
            && matches!(
                parse_file_name(&name),
                Some(FileKind::Sst(_) | FileKind::Blob(_))
            )
        {
            keep.insert(name.clone());
        }
        if !keep.contains(&name) {
            // A table of another database (a directory or bucket prefix
            // two databases were pointed at) is not ours to delete.
            if let Some(theirs) = foreign_table(fs, dir, &name, versions.db_id()) {
                tracing::warn!(
                    target: "lithify::engine",
                    db = %dir.display(),
                    event = "foreign_file",
                    "{name} is not in this database and belongs to database {theirs}: left in place, not deleted"
                );
                continue;
            }
            let _ = fs.remove_file(&dir.join(&name));
            continue;
        }
        let kept = lithify_vfs::lost::keep_file(fs, dir, &name).context(IoSnafu {
            op: "keeping in lost/",
            path: dir.join(&name),
        })?;
        for d in &mut report.dropped {
            if d.file.file_name().is_some_and(|n| *n == *name) {
                d.kept = Some(kept.clone());
            }
        }
        if !report
            .dropped
            .iter()
            .any(|d| d.kept.as_ref() == Some(&kept))
        {
            report.dropped.push(DroppedBytes {
                file: dir.join(&name),
                offset: 0,
                len: fs.file_size(&kept).unwrap_or(0),
                reason: "an SST file no version names after the MANIFEST lost its last record"
                    .to_owned(),
                kept: Some(kept),
            });
        }
    }
    Ok(log)
}

/// What [`assemble`] builds the database from.
struct AssembleParts<'a> {
    dir: &'a Path,
    fs: StdArc<dyn FileSystem>,
    opts: StdArc<Options>,
    versions: VersionSet,
    opener: StdArc<SstFiles>,
    cache: Option<StdArc<BlockCache>>,
    icmp: InternalKeyComparator,
    tables: BTreeMap<TableId, Replay>,
    /// The WAL writes go to; `None` for a read-only open.
    log: Option<LogWriter>,
    last_seq: SeqNo,
    events: Events,
    report: RecoveryReport,
    /// Read-only: each WAL replayed and its size then.
    replayed_wal_sizes: Vec<(u64, u64)>,
    /// This open's identity.
    session_id: Id,
    lock: Option<FileLock>,
}

/// Step 5: the running database around the recovered tables.
fn assemble(p: AssembleParts<'_>) -> Result<StdArc<DbInner>> {
    let read_only = p.log.is_none();
    let new_log = p.log.as_ref().map(|l| l.number);
    let log = p.log;
    let mut tables = BTreeMap::new();
    let mut mem_entries = Vec::new();
    for (id, r) in p.tables {
        let version = p
            .versions
            .current(id)
            .expect("recovered tables have versions");
        let topts = StdArc::clone(&r.state.options);
        // Read-write: a fresh memtable (the replayed ones are in L0).
        // Read-only: the replayed memtables are the data.
        let (mem, imm) = if read_only {
            let imm: VecDeque<Imm> = r.imm.into_iter().map(|mem| Imm::new(mem, 0)).collect();
            (r.mem, imm)
        } else {
            (Arc::new(new_memtable(&p.icmp, &topts)), VecDeque::new())
        };
        if let Some(n) = new_log {
            r.state
                .mem_first_log
                .store(n, std::sync::atomic::Ordering::Relaxed);
        }
        mem_entries.push((id, StdArc::clone(&r.state), Arc::clone(&mem)));
        let (picker, strategy) = StrategyState::from_options(&topts)?;
        r.state.workload.configure(&strategy);
        tables.insert(
            id,
            TableMut::new(r.state, mem, imm, version, r.stats, picker, strategy),
        );
    }
    let default_table = tables
        .get(&lithify_version::DEFAULT_TABLE)
        .map(|t| StdArc::clone(t.state()))
        .ok_or_else(|| {
            CorruptionSnafu {
                path: p.dir.join(lithify_version::filename::CURRENT),
                message: "the database has no default table".to_owned(),
            }
            .build()
        })?;
    let any_adaptive = tables.values().any(|t| t.state().workload.is_enabled());
    // The default table first: the write path finds it without a search.
    mem_entries.sort_by_key(|e| e.0 != lithify_version::DEFAULT_TABLE);
    // Read-only: the WALs read are the live ones (for the statistics).
    let live_logs = match new_log {
        Some(n) => BTreeSet::from([n]),
        None => p.report.wals_replayed.iter().copied().collect(),
    };
    let state = DbState::new(tables, p.opts.delayed_write_rate, live_logs);
    let inner = StdArc::new(DbInner {
        dir: p.dir.to_path_buf(),
        fs: p.fs,
        options: StdArc::clone(&p.opts),
        versions: p.versions,
        opener: p.opener,
        cache: p.cache,
        default_table,
        write_thread: WriteThread::new(),
        leader: Mutex::new(LeaderState {
            log,
            old_logs: Vec::new(),
            last_allocated: p.last_seq,
            record: Vec::new(),
            mems: Arc::new(MemSet {
                entries: mem_entries,
            }),
            log_bytes: new_log.map(|n| (n, 0)).into_iter().collect(),
            closed_sizes: BTreeMap::new(),
            synced_closed: Vec::new(),
            recyclable: Default::default(),
        }),
        visible_seq: AtomicU64::new(p.last_seq),
        snapshots: StdArc::new(SnapshotList::new()),
        state: Mutex::new(state),
        bg_cv: Condvar::new(),
        done_cv: Condvar::new(),
        read_only: AtomicBool::new(read_only),
        opened_read_only: read_only,
        stalled: AtomicBool::new(false),
        switch_pending: AtomicBool::new(false),
        unpersisted: AtomicBool::new(false),
        adaptive_seen: AtomicBool::new(any_adaptive),
        ingestions_stopping_writes: AtomicUsize::new(0),
        deletions_disabled: AtomicUsize::new(0),
        purge_lock: Mutex::new(()),
        rate_limiter: crate::options::translate::rate_limiter(&p.opts),
        counters: Counters::default(),
        opened_at: Instant::now(),
        events: p.events,
        recovery: p.report,
        replayed_wal_sizes: p.replayed_wal_sizes,
        session_id: p.session_id,
        _lock: p.lock,
    });
    {
        let mut st = inner.lock_state();
        for id in st.table_ids() {
            inner.install(&mut st, id);
        }
    }
    Ok(inner)
}
