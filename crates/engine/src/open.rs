//! Opening a database: the LOCK file, the `VersionSet` (created or
//! recovered), replay of every WAL at or above the minimum log number into
//! memtables that are written to L0, a new WAL, and the removal of files
//! nothing needs (orphans of a crashed flush or compaction, replayed WALs,
//! old MANIFESTs).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;
use std::sync::Arc as StdArc;
use std::thread::JoinHandle;
use std::time::Instant;

use crate::mem::Mem;
use lithify_base::sync::atomic::{AtomicBool, AtomicU64};
use lithify_base::sync::{Arc, Condvar, Mutex};
use lithify_base::{InternalKeyComparator, MAX_SEQNO, SeqNo, ValueKind};
use lithify_sstable::{BlockCache, TableOptions};
use lithify_version::filename::{FileKind, parse_file_name};
use lithify_version::{FileMetadata, TableId, VersionEdit, VersionSet, VersionSetOptions};
use lithify_vfs::{FileSystem, parent_dir};
use lithify_wal::{LogEnd, Reader, RecoveryMode};
use snafu::ResultExt;

use crate::background::spawn_workers;
use crate::batch::{BatchEntry, DecodedBatch, WalRecord};
use crate::db_impl::{DbInner, DbState};
use crate::error::{
    CorruptionSnafu, InvalidArgumentSnafu, IoSnafu, LockedSnafu, MemtableSnafu, Result,
    WalRecordSnafu,
};
use crate::flush::flush_memtables;
use crate::options::Options;
use crate::purge::orphans;
use crate::snapshot::SnapshotList;
use crate::stats::Counters;
use crate::super_version::{SuperVersion, TableOpener};
use crate::table_state::{TableMut, TableState, new_memtable};
use crate::wal::{LeaderState, LogWriter, MemSet, log_path};
use crate::write_controller::WriteController;
use crate::write_thread::WriteThread;
use lithify_compaction_leveled::{CompactionStatsTable, CompactionsInProgress};

/// The table-file options of `o`.
pub(crate) fn table_options(o: &Options) -> TableOptions<InternalKeyComparator> {
    let mut t = TableOptions::for_internal_keys(InternalKeyComparator::new(o.comparator.clone()));
    t.block_size = o.block_size;
    t.block_restart_interval = o.block_restart_interval;
    t.bloom_bits_per_key = o.bloom_bits_per_key;
    t.compression = o.compression;
    t.verify_checksums = o.verify_checksums;
    t
}

/// The effective options of table `name`: the database's, with the
/// table's overrides from `table_options`.
pub(crate) fn table_effective_options(db: &Options, name: &str) -> Options {
    match db.table_options.get(name) {
        Some(t) => t.apply(db),
        None => db.clone(),
    }
}

/// A table being recovered.
struct Replay {
    state: StdArc<TableState>,
    log_number: u64,
    mem: Arc<Mem>,
    files: Vec<FileMetadata>,
    /// The recovery flushes, recorded at L0.
    stats: CompactionStatsTable,
}

/// Opens (or creates) the database in `dir`.
pub(crate) fn open(dir: &Path, options: Options) -> Result<(StdArc<DbInner>, Vec<JoinHandle<()>>)> {
    let opts = StdArc::new(options.sanitized()?);
    let fs = StdArc::clone(&opts.fs);
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
        fs.create_dir_all(dir).context(IoSnafu {
            op: "creating directory",
            path: dir.to_path_buf(),
        })?;
        fs.sync_dir(parent_dir(dir)).context(IoSnafu {
            op: "syncing directory",
            path: parent_dir(dir).to_path_buf(),
        })?;
    }
    let lock_path = dir.join("LOCK");
    let lock = fs.lock(&lock_path).context(LockedSnafu {
        dir: dir.to_path_buf(),
        path: lock_path.clone(),
    })?;
    let exists = fs.exists(&dir.join(lithify_version::filename::CURRENT));
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
    let vs_opts = VersionSetOptions {
        num_levels: opts.num_levels,
        max_manifest_file_size: opts.max_manifest_file_size,
        comparators: vec![opts.comparator.clone()],
    };
    let names = fs.list_dir(dir).context(IoSnafu {
        op: "listing",
        path: dir.to_path_buf(),
    })?;
    let versions = if exists {
        VersionSet::recover(StdArc::clone(&fs), dir, vs_opts)?
    } else {
        VersionSet::create(StdArc::clone(&fs), dir, vs_opts)?
    };
    let mut logs = Vec::new();
    for name in &names {
        match parse_file_name(name) {
            Some(FileKind::Log(n)) => {
                versions.mark_file_number_used(n);
                logs.push(n);
            }
            Some(FileKind::Table(n) | FileKind::Manifest(n)) => versions.mark_file_number_used(n),
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
    let opener = StdArc::new(TableOpener {
        fs: StdArc::clone(&fs),
        dir: dir.to_path_buf(),
        options: table_options(&opts),
        cache: cache.clone(),
    });

    // Tables, with empty memtables.
    let mut replay: BTreeMap<TableId, Replay> = BTreeMap::new();
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
        ));
        replay.insert(
            info.id,
            Replay {
                state,
                log_number: info.log_number,
                mem,
                files: Vec::new(),
                stats: CompactionStatsTable::new(opts.num_levels),
            },
        );
    }

    let min_log = versions.min_log_number_to_keep();
    let replay_logs: Vec<u64> = logs.iter().copied().filter(|&n| n >= min_log).collect();
    let replayed = replay_wals(
        &*fs,
        dir,
        &replay_logs,
        min_log,
        &opts,
        &opener,
        &versions,
        &mut replay,
    )?;
    let last_seq = versions.last_sequence().max(replayed);

    // Whatever the replay left in memtables goes to L0 too.
    for r in replay.values_mut() {
        if !r.mem.is_empty() {
            flush_replayed(&*fs, dir, &opener, &versions, r)?;
        }
    }
    let new_log = versions.new_file_number();
    let log = LogWriter::create(&*fs, dir, new_log, None)?;
    let mut edits = Vec::new();
    for (id, r) in &mut replay {
        let mut edit = VersionEdit::new(*id);
        edit.log_number = Some(new_log);
        for f in r.files.drain(..) {
            edit.add_file(0, f);
        }
        edits.push(edit);
    }
    if !replay_logs.is_empty() || replay.values().any(|r| r.log_number < new_log) {
        fs.sync_dir(dir).context(IoSnafu {
            op: "syncing directory",
            path: dir.to_path_buf(),
        })?;
    }
    versions.set_last_sequence(last_seq);
    versions.log_and_apply(edits)?;

    // Orphans: tables no version names (a crashed flush or compaction),
    // replayed WALs, MANIFESTs other than the live one.
    let live = versions.live_files();
    for name in orphans(
        &names,
        &live,
        versions.min_log_number_to_keep(),
        versions.manifest_number(),
    ) {
        let _ = fs.remove_file(&dir.join(&name));
    }

    // Assemble the running database.
    let mut tables = BTreeMap::new();
    let mut mem_entries = Vec::new();
    for (id, r) in replay {
        let version = versions
            .current(id)
            .expect("recovered tables have versions");
        let topts = StdArc::clone(&r.state.options);
        let mem = Arc::new(new_memtable(&icmp, &topts));
        r.state
            .mem_first_log
            .store(new_log, std::sync::atomic::Ordering::Relaxed);
        mem_entries.push((id, StdArc::clone(&r.state), Arc::clone(&mem)));
        let (picker, strategy) = crate::compaction::strategy_state(&topts)?;
        r.state.workload.configure(&strategy);
        tables.insert(
            id,
            TableMut {
                state: r.state,
                mem,
                imm: VecDeque::new(),
                version,
                flush_running: false,
                flush_queued: false,
                picker,
                compactions: CompactionsInProgress::new(),
                stats: r.stats,
                strategy,
                next_scheduled_major: crate::compaction::next_scheduled_major(&topts),
                scheduled_major_running: false,
            },
        );
    }
    let default_table = tables
        .get(&lithify_version::DEFAULT_TABLE)
        .map(|t| StdArc::clone(&t.state))
        .ok_or_else(|| {
            CorruptionSnafu {
                path: dir.join(lithify_version::filename::CURRENT),
                message: "the database has no default table".to_owned(),
            }
            .build()
        })?;
    let any_adaptive = tables.values().any(|t| t.state.workload.is_enabled());
    // The default table first: the write path finds it without a search.
    mem_entries.sort_by_key(|e| e.0 != lithify_version::DEFAULT_TABLE);
    let state = DbState {
        tables,
        bg_error: None,
        shutting_down: false,
        flush_queue: VecDeque::new(),
        running_flushes: 0,
        running_compactions: 0,
        exclusive_manual: 0,
        running_manual: 0,
        controller: WriteController::new(opts.delayed_write_rate),
        live_logs: BTreeSet::from([new_log]),
        bg_epoch: 0,
    };
    let inner = StdArc::new(DbInner {
        dir: dir.to_path_buf(),
        fs,
        options: StdArc::clone(&opts),
        versions,
        opener,
        cache,
        default_table,
        write_thread: WriteThread::new(),
        leader: Mutex::new(LeaderState {
            log: Some(log),
            old_logs: Vec::new(),
            last_allocated: last_seq,
            record: Vec::new(),
            mems: Arc::new(MemSet {
                entries: mem_entries,
            }),
            log_bytes: std::collections::BTreeMap::from([(new_log, 0)]),
        }),
        visible_seq: AtomicU64::new(last_seq),
        snapshots: StdArc::new(SnapshotList::new()),
        state: Mutex::new(state),
        bg_cv: Condvar::new(),
        done_cv: Condvar::new(),
        read_only: AtomicBool::new(false),
        stalled: AtomicBool::new(false),
        switch_pending: AtomicBool::new(false),
        unpersisted: AtomicBool::new(false),
        adaptive_seen: AtomicBool::new(any_adaptive),
        rate_limiter: crate::compaction::rate_limiter(&opts),
        counters: Counters::default(),
        opened_at: Instant::now(),
        _lock: lock,
    });
    {
        let mut st = inner.lock_state();
        let ids: Vec<TableId> = st.tables.keys().copied().collect();
        for id in ids {
            inner.install_super_version(&mut st, id);
        }
        inner.recompute_stall(&mut st);
    }
    inner.purge_obsolete_files();
    let workers = spawn_workers(&inner).context(IoSnafu {
        op: "starting background threads for",
        path: dir.to_path_buf(),
    })?;
    inner.wake_background();
    Ok((inner, workers))
}

/// The entries of a replayed batch, if the batch can be applied whole:
/// every record decodes, its sequence numbers follow everything replayed
/// before and stay below `MAX_SEQNO`, and its range deletions are not
/// empty. Anything else is damage a valid checksum did not catch.
fn check_batch<'a>(
    b: &DecodedBatch<'a>,
    replayed: SeqNo,
    tables: &BTreeMap<TableId, Replay>,
) -> std::result::Result<Vec<BatchEntry<'a>>, String> {
    let count = u64::from(b.count);
    if b.sequence <= replayed
        || b.sequence
            .checked_add(count)
            .is_none_or(|end| end > MAX_SEQNO + 1)
    {
        return Err(format!(
            "batch of {count} records at sequence {} does not follow sequence {replayed}",
            b.sequence
        ));
    }
    let entries = b.iter().collect::<std::result::Result<Vec<_>, String>>()?;
    for e in &entries {
        if e.kind == ValueKind::RangeDelete
            && let Some(t) = tables.get(&e.table)
            && !t.state.icmp.compare_user(e.key, e.value).is_lt()
        {
            return Err("an empty range deletion".to_owned());
        }
    }
    Ok(entries)
}

/// Writes a recovered memtable to an L0 file and starts a fresh one.
fn flush_replayed(
    fs: &dyn FileSystem,
    dir: &Path,
    opener: &TableOpener,
    versions: &VersionSet,
    r: &mut Replay,
) -> Result<()> {
    let flushed = flush_memtables(
        fs,
        dir,
        versions,
        &opener.options,
        std::slice::from_ref(&r.mem),
        &[],
    )?;
    r.stats.record_flush(&flushed.stats);
    if let Some(f) = flushed.file {
        r.files.push(f);
    }
    r.mem = Arc::new(new_memtable(&r.state.icmp, &r.state.options));
    Ok(())
}

/// Replays `logs` (ascending) into the tables' memtables, writing a memtable
/// to L0 whenever it fills. Returns the largest sequence number replayed.
///
/// A log is replayed only if its first record names the log before it
/// with exactly the last sequence number replayed from that log (or names
/// a log older than any replayed): otherwise the predecessor lost records,
/// and replaying later logs would leave a hole. Point-in-time and
/// tolerate-tail recovery stop there; absolute consistency fails; skip
/// mode ignores it.
#[allow(clippy::too_many_arguments)]
fn replay_wals(
    fs: &dyn FileSystem,
    dir: &Path,
    logs: &[u64],
    min_log: u64,
    opts: &Options,
    opener: &TableOpener,
    versions: &VersionSet,
    tables: &mut BTreeMap<TableId, Replay>,
) -> Result<SeqNo> {
    let mode = opts.wal_recovery_mode;
    let mut max_seq: SeqNo = 0;
    // (number, last sequence replayed from it)
    let mut prev: Option<(u64, SeqNo)> = None;
    'logs: for &number in logs {
        let path = log_path(dir, number);
        let file = fs.open(&path).context(IoSnafu {
            op: "opening WAL",
            path: path.clone(),
        })?;
        let mut reader = Reader::new(file, &path, number)?.with_mode(mode);
        let mut first = true;
        let mut last_in_log: SeqNo = 0;
        let mut stop = false;
        while let Some(record) = reader.read_record()? {
            let offset = record.offset;
            let corrupt = |message: String| {
                WalRecordSnafu {
                    path: path.clone(),
                    offset,
                    message,
                }
                .build()
            };
            let decoded = WalRecord::decode(record.payload);
            let is_first = std::mem::replace(&mut first, false);
            match decoded {
                Err(message) => match mode {
                    RecoveryMode::SkipAnyCorruptedRecords => continue,
                    RecoveryMode::PointInTimeRecovery => {
                        stop = true;
                        break;
                    }
                    _ => return Err(corrupt(message)),
                },
                Ok(WalRecord::Predecessor(p)) => {
                    let consistent = is_first
                        && match prev {
                            Some((n, last)) => p.log_number == n && p.last_sequence == last,
                            None => p.log_number < min_log,
                        };
                    if !consistent {
                        match mode {
                            RecoveryMode::SkipAnyCorruptedRecords => {}
                            RecoveryMode::AbsoluteConsistency => {
                                return Err(corrupt(format!(
                                    "log {} lost records before sequence {}",
                                    p.log_number, p.last_sequence
                                )));
                            }
                            _ => break 'logs,
                        }
                    }
                }
                Ok(WalRecord::Batch(b)) => {
                    // Check the whole batch before applying any of it, so
                    // that a damaged batch is never half applied.
                    let entries = match check_batch(&b, max_seq, tables) {
                        Ok(entries) => entries,
                        Err(message) => match mode {
                            RecoveryMode::SkipAnyCorruptedRecords => continue,
                            RecoveryMode::PointInTimeRecovery => {
                                stop = true;
                                break;
                            }
                            _ => return Err(corrupt(message)),
                        },
                    };
                    let mut touched: Vec<TableId> = Vec::new();
                    for (seq, e) in (b.sequence..).zip(entries) {
                        if let Some(t) = tables.get_mut(&e.table)
                            && number >= t.log_number
                        {
                            t.mem
                                .add(seq, e.kind, e.key, e.value)
                                .context(MemtableSnafu)?;
                            if !touched.contains(&e.table) {
                                touched.push(e.table);
                            }
                        }
                        max_seq = max_seq.max(seq);
                        last_in_log = last_in_log.max(seq);
                    }
                    for id in touched {
                        let t = tables.get_mut(&id).expect("touched tables exist");
                        if t.state.is_full(&t.mem) {
                            flush_replayed(fs, dir, opener, versions, t)?;
                        }
                    }
                }
            }
        }
        if matches!(reader.end(), Some(LogEnd::Corruption { .. })) {
            stop = true;
        }
        prev = Some((number, last_in_log));
        if stop {
            break;
        }
    }
    Ok(max_seq)
}
