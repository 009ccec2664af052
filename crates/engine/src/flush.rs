//! Flush: immutable memtables become one L0 table, installed with a
//! `VersionEdit` that also advances the table's log number.

use lithify_base::keyspan::RangeTombstone;
use lithify_base::sync::Arc;
use lithify_base::{InternalIterator, InternalKeyComparator, MergingIterator, SeqNo};
use lithify_compaction::iter::{IterStats, Snapshots};
use lithify_compaction::job::{
    FlushResult, MemtableInput, OutputFactory, flush_to_level0, run_flush,
};
use lithify_memtable::MemTableIter;

use lithify_memtable::MemTable;
use lithify_version::{TableId, VersionEdit};
use lithify_vfs::FileSystem;
use snafu::IntoError as _;

use crate::batch::WriteBatch;
use crate::error::{CompactionSnafu, IoSnafu, ReadOnlySnafu, Result, ShuttingDownSnafu};
use crate::events::FlushJobInfo;
use crate::options::translate::job_options;
use crate::options::{Options, WriteOptions};
use crate::state::jobs::FlushInput;
use crate::state::{DbInner, DbState};
use crate::stats::Counters;

/// Every range tombstone of the memtables.
fn range_tombstones_of(mems: &[Arc<MemTable>]) -> Vec<RangeTombstone> {
    mems.iter()
        .filter(|m| m.num_range_deletes() > 0)
        .flat_map(|m| m.range_tombstones())
        .collect()
}

/// Writes the memtables (newest first) into one L0 table through the
/// compaction iterator's flush rules (a version hidden by a newer one in
/// the same snapshot stripe is dropped; tombstones stay, as older data
/// lives deeper), with all their range tombstones. The file and its
/// directory are synced; `file` is `None` when nothing is left.
pub(crate) fn flush_memtables(
    factory: &OutputFactory<'_>,
    table_options: &Options,
    mems: &[Arc<MemTable>],
    snapshots: &[SeqNo],
) -> Result<FlushResult> {
    let icmp = factory.sst_options.comparator.clone();
    let children: Vec<MemTableIter> = mems
        .iter()
        .map(|m| MemTableIter::new(Arc::clone(m)))
        .collect();
    let merged = MergingIterator::new(icmp, children);
    let tombstones = range_tombstones_of(mems);
    let now = table_options.clock.now_secs();
    let opts = job_options(table_options).now(Some(now));
    flush_to_level0(
        merged,
        tombstones,
        &Snapshots::new(snapshots.to_vec()),
        factory,
        &opts,
        now,
    )
    .map_err(|e| CompactionSnafu.into_error(e))
}

/// The smallest and largest user keys of `mems` (point entries and range
/// tombstone ends), if they hold anything.
pub(crate) fn memtable_range(
    icmp: &InternalKeyComparator,
    mems: &[Arc<MemTable>],
) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
    let mut lo: Option<Vec<u8>> = None;
    let mut hi: Option<Vec<u8>> = None;
    let mut widen = |k: &[u8]| {
        if lo
            .as_deref()
            .is_none_or(|l| icmp.compare_user(k, l).is_lt())
        {
            lo = Some(k.to_vec());
        }
        if hi
            .as_deref()
            .is_none_or(|h| icmp.compare_user(k, h).is_gt())
        {
            hi = Some(k.to_vec());
        }
    };
    for m in mems {
        let mut it = MemTableIter::new(Arc::clone(m));
        it.first()?;
        if it.valid() {
            widen(lithify_base::key::user_key(it.key()));
            it.last()?;
            widen(lithify_base::key::user_key(it.key()));
        }
        if m.num_range_deletes() > 0 {
            for t in m.range_tombstones() {
                widen(&t.start);
                widen(&t.end);
            }
        }
    }
    Ok(lo.zip(hi))
}

/// What a flush writes: one L0 table, or the outputs of a flush plan.
struct Flushed {
    edit: VersionEdit,
    stats: lithify_compaction::CompactionStats,
    /// What the compaction iterator merged and cancelled.
    iter_stats: IterStats,
    /// The plan's output level, when the flush ran a plan.
    plan_level: Option<usize>,
    /// Files written (removed if the edit cannot be installed).
    outputs: Vec<u64>,
    /// The plan's registration in the table's running compactions, held
    /// until its edit is installed (or fails): released any earlier, a
    /// compaction could take the plan's input files in between, and one
    /// of the two edits would delete files the other already deleted.
    plan_id: Option<u64>,
}

/// Runs one flush of `table`: takes its immutable memtables, writes them
/// — to an L0 table, or by the strategy's flush plan (a major flush into
/// the major level, a flush cut by stripe or merged with the previous L0
/// table) — and installs the edit. Returns whether it did anything.
pub(crate) fn run(db: &DbInner, table: TableId) -> Result<bool> {
    let Some(FlushInput { mems, next_log }) = db.lock_state().begin_flush(table) else {
        return Ok(false);
    };
    let count = mems.len();
    let started = std::time::Instant::now();
    let mut info = flush_info(db, table, &mems);
    db.events.flush_begin(&info);
    let snapshots = db.snapshots.sequences();
    let flushed = write_flush(db, table, &mems, &snapshots);
    // Closed WALs that sync writes made durable: this edit records their
    // sizes (the leader lock comes before the state lock).
    let wal_additions = db.leader.lock().take_synced_closed();
    let mut st = db.lock_state();
    let mut flushed = match flushed {
        Ok(f) => f,
        Err(e) => {
            st.abort_flush(table);
            return Err(db.stop_writes(&mut st, e));
        }
    };
    // The edit names WAL `next_log` as the table's log number: its
    // directory entry must be durable first (an open refuses a log number
    // whose WAL is missing). A flush that wrote a file synced the
    // directory after the WAL was created; one that wrote nothing did not.
    if flushed.outputs.is_empty()
        && let Err(e) = db.fs.sync_dir(&db.dir)
    {
        st.abort_flush(table);
        let e = IoSnafu {
            op: "syncing directory",
            path: db.dir.clone(),
        }
        .into_error(e);
        return Err(db.stop_writes(&mut st, e));
    }
    flushed.edit.log_number = Some(next_log);
    flushed.edit.wal_additions = wal_additions;
    let mut edits = vec![flushed.edit.clone()];
    // Tables with nothing unflushed move their log number along, so an
    // idle table never pins the WALs this flush frees.
    edits.extend(idle_log_edits(db, &st, table, next_log));
    db.versions.set_last_sequence(db.visible());
    // The plan's registration ends under the same lock as its install (or
    // failure), so no compaction sees its inputs free before they are
    // gone.
    if let Some(id) = flushed.plan_id {
        st.finish_compaction(table, id);
    }
    let finish =
        |st: &mut DbState| st.finish_flush(table, count, flushed.plan_level, &flushed.stats);
    if let Err(e) = db.apply_and_install(&mut st, table, edits, finish) {
        // The outputs stay: the failed record may be durable and name them
        // (a write whose sync failed), so the version set keeps them
        // quarantined until a new MANIFEST no longer can.
        st.abort_flush(table);
        return Err(e);
    }
    drop(st);
    Counters::add(
        &db.counters.flush_bytes,
        flushed.stats.bytes_written + flushed.stats.bytes_written_blob,
    );
    db.counters.record_iter_stats(&flushed.iter_stats);
    if let Some(t) = db.table(table) {
        if flushed.plan_level.is_some() {
            Counters::add(&t.counters.flush_plan_bytes, flushed.stats.bytes_written);
        }
        Counters::add(
            &t.counters.blob_write_bytes,
            flushed.stats.bytes_written_blob,
        );
    }
    // Listeners hear of the flush before its waiters wake.
    info.output_level = flushed.plan_level.unwrap_or(0);
    info.output_files = flushed.outputs;
    info.bytes_written = flushed.stats.bytes_written;
    info.micros = started.elapsed().as_micros() as u64;
    db.events.flush_completed(&info);
    db.notify_installed();
    Ok(true)
}

/// Switches the memtable of `table` (if it holds anything) through the
/// write group and waits until it is flushed.
pub(crate) fn flush_table(db: &DbInner, table: TableId) -> Result<()> {
    crate::write::write_batch(db, WriteBatch::new(), &WriteOptions::default(), Some(table))?;
    wait_for_flush(db, table)
}

/// Waits until the newest immutable memtable of `table` (as of now) is
/// flushed.
pub(crate) fn wait_for_flush(db: &DbInner, table: TableId) -> Result<()> {
    let mut st = db.lock_state();
    let target = match st.table(table).and_then(|t| t.imm().back()) {
        Some(imm) => Arc::as_ptr(imm.mem()),
        None => return Ok(()),
    };
    loop {
        if let Some(cause) = st.bg_error() {
            return ReadOnlySnafu {
                cause: cause.clone(),
            }
            .fail();
        }
        let pending = st.table(table).is_some_and(|t| {
            t.imm()
                .iter()
                .any(|i| std::ptr::eq(Arc::as_ptr(i.mem()), target))
        });
        if !pending {
            return Ok(());
        }
        if st.is_shutting_down() {
            return ShuttingDownSnafu.fail();
        }
        st = db.done_cv.wait(st);
    }
}

/// What a flush of `mems` is, before it runs.
fn flush_info(db: &DbInner, table: TableId, mems: &[Arc<MemTable>]) -> FlushJobInfo {
    let (mut lo, mut hi) = (SeqNo::MAX, 0);
    for m in mems {
        if let (Some(a), Some(b)) = (m.first_seqno(), m.last_seqno()) {
            lo = lo.min(a);
            hi = hi.max(b);
        }
    }
    FlushJobInfo {
        table: db.table(table).map(|t| t.name.clone()).unwrap_or_default(),
        table_id: table,
        memtables: mems.len(),
        smallest_seqno: if lo == SeqNo::MAX { 0 } else { lo },
        largest_seqno: hi,
        output_level: 0,
        output_files: Vec::new(),
        bytes_written: 0,
        micros: 0,
    }
}

/// Writes the memtables of `table` by its strategy's flush plan, or to
/// one L0 table.
fn write_flush(
    db: &DbInner,
    table: TableId,
    mems: &[Arc<MemTable>],
    snapshots: &[SeqNo],
) -> Result<Flushed> {
    let icmp = db.opener.options.comparator.clone();
    let plan = match memtable_range(&icmp, mems)? {
        None => None,
        Some((lo, hi)) => {
            let mut st = db.lock_state();
            let Some(t) = st.table(table) else {
                return Ok(Flushed {
                    edit: VersionEdit::new(table),
                    stats: Default::default(),
                    iter_stats: IterStats::default(),
                    plan_level: None,
                    outputs: Vec::new(),
                    plan_id: None,
                });
            };
            let c = {
                let ctx = db.pick_context(t);
                t.picker().pick_flush(t.version(), &ctx, &lo, &hi)
            };
            c.and_then(|c| st.register_compaction(table, &c).map(|id| (c, id)))
        }
    };
    let Some((c, id)) = plan else {
        let state = db.table_or_default(table);
        let topts = std::sync::Arc::clone(&state.options);
        let factory = db.output_factory(table, &state.blob_options());
        let flushed = flush_memtables(&factory, &topts, mems, snapshots)?;
        let mut edit = VersionEdit::new(table);
        let mut outputs = Vec::new();
        if let Some(f) = flushed.file {
            outputs.push(f.number);
            edit.add_file(0, f);
        }
        for b in flushed.blob_files {
            outputs.push(b.number);
            edit.blob_file_additions.push(b);
        }
        return Ok(Flushed {
            edit,
            stats: flushed.stats,
            iter_stats: flushed.iter_stats,
            plan_level: None,
            outputs,
            plan_id: None,
        });
    };
    let r = match run_flush_plan(db, table, &c, mems, snapshots) {
        Ok(r) => r,
        Err(e) => {
            db.lock_state().finish_compaction(table, id);
            return Err(e);
        }
    };
    Ok(Flushed {
        outputs: r
            .outputs
            .iter()
            .map(|f| f.number)
            .chain(r.blob_files.iter().map(|b| b.number))
            .collect(),
        edit: r.edit,
        stats: r.stats,
        iter_stats: r.iter_stats,
        plan_level: Some(c.output_level),
        plan_id: Some(id),
    })
}

fn run_flush_plan(
    db: &DbInner,
    table: TableId,
    c: &lithify_compaction::Compaction,
    mems: &[Arc<MemTable>],
    snapshots: &[SeqNo],
) -> Result<lithify_compaction::CompactionResult> {
    let icmp = db.opener.options.comparator.clone();
    let open = || -> Box<dyn InternalIterator + Send> {
        let children: Vec<MemTableIter> = mems
            .iter()
            .map(|m| MemTableIter::new(Arc::clone(m)))
            .collect();
        Box::new(MergingIterator::new(icmp.clone(), children))
    };
    let tombstones = range_tombstones_of(mems);
    let num_entries = mems
        .iter()
        .map(|m| (m.len() - m.num_range_deletes()) as u64)
        .sum();
    let now = db.options.clock.now_secs();
    let mem = MemtableInput {
        open: &open,
        range_tombstones: tombstones,
        num_entries,
        flush_time: now,
    };
    let state = db.table_or_default(table);
    let topts = std::sync::Arc::clone(&state.options);
    let factory = db.output_factory(table, &state.blob_options());
    let filter = topts.compaction_filter.clone();
    let opts = job_options(&topts).now(Some(now));
    run_flush(
        c,
        &mem,
        &crate::sst_files::InputOpener { opener: &db.opener },
        &Snapshots::new(snapshots.to_vec()),
        filter.as_deref(),
        &factory,
        &opts,
    )
    .map_err(|e| CompactionSnafu.into_error(e))
}

/// Edits moving the log number of every table other than `flushed`
/// that holds nothing unflushed up to `next_log`: its data is all in
/// tables, and anything written to it from now on goes to WALs at or
/// above `next_log`, so no older WAL is needed for it.
fn idle_log_edits(
    db: &DbInner,
    st: &crate::state::DbState,
    flushed: TableId,
    next_log: u64,
) -> Vec<VersionEdit> {
    st.tables()
        .filter(|(id, t)| {
            *id != flushed
                && t.mem().is_empty()
                && t.imm().is_empty()
                && db
                    .versions
                    .table(*id)
                    .is_some_and(|info| info.log_number < next_log)
        })
        .map(|(id, _)| {
            let mut e = VersionEdit::new(id);
            e.log_number = Some(next_log);
            e
        })
        .collect()
}
