//! The write path: what the write group's leader does (stalls, memtable
//! switch, sequence numbers, the WAL record) and how batches enter the
//! memtables.

use std::sync::Arc as StdArc;
use std::time::{Duration, Instant};

use lithify_base::sync::Arc;
use lithify_base::sync::atomic::Ordering;
use lithify_base::{SeqNo, ValueKind};
use lithify_version::TableId;
use snafu::ResultExt;

use crate::batch::{Predecessor, WriteBatch, encode_group_header};
use crate::error::{Error, InvalidArgumentSnafu, MemtableSnafu, Result, ShuttingDownSnafu};
use crate::options::WriteOptions;
use crate::stall::{StallCause, StallCondition};
use crate::state::leader::{LeaderState, MemSet};
use crate::state::{DbInner, WriteGroup};
use crate::stats::Counters;
use crate::wal::{LogSettings, LogWriter};
use crate::write_thread::GroupCommit;

/// One writer's request.
pub(crate) struct Writer {
    pub(crate) batch: WriteBatch,
    pub(crate) options: WriteOptions,
    /// Switch this table's memtable before the group (a flush request).
    pub(crate) switch_table: Option<TableId>,
    /// A job the leader runs alone instead of a batch (an ingestion of
    /// external files).
    pub(crate) solo: Option<StdArc<dyn SoloJob>>,
    /// A commit check: the batch commits only if it returns `true` (run by
    /// the leader, see [`crate::commit_check`]).
    pub(crate) check: Option<CommitCheck>,
}

/// The check a checked write runs in the write group, shared with the
/// writer that reads its verdict back (one allocation per checked write).
pub(crate) type CommitCheck = std::sync::Arc<dyn RunCheck>;

/// A check the leader runs once: `true` lets the batch commit.
pub(crate) trait RunCheck: Send + Sync {
    /// Runs the check on `db` with the members `earlier` ahead of its batch
    /// in the group (see [`crate::commit_check::CommitView`]); a second
    /// call returns `false`.
    fn run(&self, db: &DbInner, earlier: &[Writer]) -> bool;
}

/// A job the write group's leader runs alone, with the leader lock held
/// and no group inserting: an ingestion, which places files and takes
/// sequence numbers where no write can slip in between.
pub(crate) trait SoloJob: Send + Sync {
    /// Runs the job; returns the last sequence number allocated.
    fn run(&self, db: &DbInner, leader: &mut LeaderState) -> SeqNo;
}

/// Runs the group's commit checks in order; a rejected member's batch is
/// emptied, so it takes no sequence number and writes nothing. Each check
/// sees the members ahead of it that remain.
pub(crate) fn run_commit_checks(inner: &DbInner, group: &mut [Writer]) {
    for i in 0..group.len() {
        let (earlier, rest) = group.split_at_mut(i);
        let Some(check) = rest[0].check.take() else {
            continue;
        };
        if !check.run(inner, earlier) {
            rest[0].batch.clear();
        }
    }
}

/// What the inserts of a group share.
pub(crate) struct InsertCtx {
    mems: Arc<MemSet>,
}

impl GroupCommit for WriteGroup {
    type Target = DbInner;
    type Batch = Writer;
    type Ctx = InsertCtx;
    type Error = StdArc<Error>;

    fn batch_bytes(w: &Writer) -> usize {
        w.batch.size_in_bytes()
    }

    fn batch_sync(w: &Writer) -> bool {
        w.options.sync
    }

    fn batch_disables_wal(w: &Writer) -> bool {
        w.options.disable_wal
    }

    fn batch_solo(w: &Writer) -> bool {
        w.solo.is_some()
    }

    fn batch_no_slowdown(w: &Writer) -> bool {
        w.options.no_slowdown
    }

    fn max_group_bytes(db: &DbInner) -> usize {
        db.options.max_write_batch_group_size_bytes as usize
    }

    fn reclaim(_db: &DbInner, w: Writer) {
        crate::batch::keep_spare(w.batch);
    }

    fn prepare(db: &DbInner, group: &mut [Writer]) -> Result<(InsertCtx, u64), StdArc<Error>> {
        prepare_group(db, group).map_err(StdArc::new)
    }

    fn insert(db: &DbInner, ctx: &InsertCtx, w: &Writer) -> Result<(), StdArc<Error>> {
        insert_batch(db, &ctx.mems, &w.batch).map_err(StdArc::new)
    }

    fn publish(db: &DbInner, _ctx: &InsertCtx, last_seq: u64) {
        db.visible_seq.fetch_max(last_seq, Ordering::AcqRel);
    }

    fn insert_failed(db: &DbInner, err: &StdArc<Error>) {
        let mut st = db.lock_state();
        let e = crate::error::unshare(StdArc::clone(err));
        db.set_bg_error(&mut st, e);
    }
}

/// Writes a batch through the write group.
pub(crate) fn write_batch(
    db: &DbInner,
    batch: WriteBatch,
    options: &WriteOptions,
    switch_table: Option<TableId>,
) -> Result<()> {
    write_batch_checked(db, batch, options, switch_table, None)
}

/// Writes a batch through the write group if `check` (run by the
/// group's leader) allows it.
pub(crate) fn write_batch_checked(
    db: &DbInner,
    batch: WriteBatch,
    options: &WriteOptions,
    switch_table: Option<TableId>,
    check: Option<CommitCheck>,
) -> Result<()> {
    if let Some(msg) = batch.invalid() {
        return InvalidArgumentSnafu {
            message: msg.to_owned(),
        }
        .fail();
    }
    if batch.has_range_deletes() || batch.has_merges() {
        check_ranges_and_merges(db, &batch)?;
    }
    db.check_writable()?;
    // A listener's write goes through: the thread running the callback
    // may be the ingestion itself, or a flush the ingestion waits for.
    if db.ingestions_stopping_writes.load(Ordering::Acquire) > 0
        && !batch.is_empty()
        && !crate::events::in_listener()
    {
        db.wait_while_ingesting(options.no_slowdown)?;
    }
    if db.adaptive_seen.load(Ordering::Relaxed) && !batch.is_empty() {
        crate::strategy::observe_writes(db, &batch);
    }
    let w = Writer {
        batch,
        options: *options,
        switch_table,
        solo: None,
        check,
    };
    let r = db.write_thread.write(db, w).map_err(crate::error::unshare);
    db.events.deliver();
    r
}

/// Runs `job` inside the write group, alone.
pub(crate) fn write_solo(db: &DbInner, job: StdArc<dyn SoloJob>) -> Result<()> {
    let w = Writer {
        batch: WriteBatch::new(),
        options: WriteOptions::default(),
        switch_table: None,
        solo: Some(job),
        check: None,
    };
    let r = db.write_thread.write(db, w).map_err(crate::error::unshare);
    db.events.deliver();
    r
}

/// Range deletions need `start < end`, merges a table with a merge
/// operator (RocksDB refuses them too).
fn check_ranges_and_merges(db: &DbInner, batch: &WriteBatch) -> Result<()> {
    for e in batch.iter() {
        let e = e.map_err(|message| InvalidArgumentSnafu { message }.build())?;
        if e.kind != ValueKind::RangeDelete && e.kind != ValueKind::Merge {
            continue;
        }
        let t = db.table(e.table).ok_or_else(|| {
            InvalidArgumentSnafu {
                message: format!("no table with id {}", e.table),
            }
            .build()
        })?;
        if e.kind == ValueKind::RangeDelete && !t.icmp.compare_user(e.key, e.value).is_lt() {
            return InvalidArgumentSnafu {
                message: "delete_range needs start < end".to_owned(),
            }
            .fail();
        }
        if e.kind == ValueKind::Merge && !t.merge.has_operator() {
            return InvalidArgumentSnafu {
                message: format!(
                    "merge into table {} needs a merge operator: set Options::merge_operator",
                    t.name
                ),
            }
            .fail();
        }
    }
    Ok(())
}

/// The leader's work before the inserts.
fn prepare_group(db: &DbInner, group: &mut [Writer]) -> Result<(InsertCtx, u64)> {
    db.check_writable()?;
    let bytes: u64 = group.iter().map(|w| w.batch.size_in_bytes() as u64).sum();
    if db.stalled.load(Ordering::Acquire) {
        wait_for_stall(db, bytes, group[0].options.no_slowdown)?;
    }
    let mut leader = db.leader.lock();
    let mut forced: Vec<TableId> = group.iter().filter_map(|w| w.switch_table).collect();
    forced.extend(tables_pinning_old_wals(db, &leader));
    if !forced.is_empty() || db.switch_pending.load(Ordering::Acquire) {
        switch_memtables(db, &mut leader, &forced)?;
    }
    if let Some(job) = group.first().and_then(|w| w.solo.as_ref()) {
        // Alone in its group (`batch_solo`), and no group is inserting.
        let last = job.run(db, &mut leader);
        return Ok((
            InsertCtx {
                mems: Arc::clone(&leader.mems),
            },
            last,
        ));
    }
    if group.iter().any(|w| w.check.is_some()) {
        run_commit_checks(db, group);
    }
    let mut seq = leader.last_allocated + 1;
    let first = seq;
    let mut records = 0u64;
    let mut user_bytes = 0u64;
    let mut batches = 0u64;
    for w in group.iter_mut() {
        let n = w.batch.len() as u64;
        if n == 0 {
            continue;
        }
        w.batch.set_sequence(seq);
        seq += n;
        records += n;
        user_bytes += w.batch.user_bytes();
        batches += 1;
    }
    let last = seq - 1;
    if last > lithify_base::MAX_SEQNO {
        return InvalidArgumentSnafu {
            message: "sequence numbers are exhausted".to_owned(),
        }
        .fail();
    }
    if records == 0 {
        return Ok((
            InsertCtx {
                mems: Arc::clone(&leader.mems),
            },
            leader.last_allocated,
        ));
    }
    leader.last_allocated = last;
    let c = &db.counters;
    Counters::add(&c.write_batches, batches);
    Counters::add(&c.write_groups, 1);
    Counters::add(&c.keys_written, records);
    Counters::add(&c.user_bytes, user_bytes);
    if group[0].options.disable_wal {
        db.unpersisted.store(true, Ordering::Release);
    } else {
        let sync = group.iter().any(|w| w.options.sync);
        if let Err(e) = log_group(db, &mut leader, group, first, records, last, sync) {
            drop(leader);
            return Err(db.stop_writes(&mut db.lock_state(), e));
        }
    }
    Ok((
        InsertCtx {
            mems: Arc::clone(&leader.mems),
        },
        last,
    ))
}

/// Appends the group's WAL record (and syncs).
fn log_group(
    db: &DbInner,
    leader: &mut LeaderState,
    group: &[Writer],
    first: u64,
    records: u64,
    last: u64,
    sync: bool,
) -> Result<()> {
    let manual = db.options.manual_wal_flush;
    let LeaderState { log, record, .. } = leader;
    let log = log.as_mut().expect("an open database has a WAL");
    let non_empty = group.iter().filter(|w| !w.batch.is_empty()).count();
    // The bytes the record took in the file: framing included, after
    // compression.
    let bytes = if non_empty == 1 {
        let w = group
            .iter()
            .find(|w| !w.batch.is_empty())
            .expect("one batch");
        log.append(w.batch.encoded(), last, manual)?
    } else {
        encode_group_header(record, first, records as u32);
        for w in group {
            if !w.batch.is_empty() {
                record.extend_from_slice(w.batch.encoded_records());
            }
        }
        log.append(record, last, manual)?
    };
    Counters::add(&db.counters.wal_bytes, bytes);
    *leader.log_bytes.entry(log.number).or_insert(0) += bytes;
    if sync {
        leader.sync_all(&*db.fs, &db.dir)?;
        Counters::add(&db.counters.wal_syncs, 1);
    }
    Ok(())
}

/// Inserts one batch into the memtables (any thread).
pub(crate) fn insert_batch(db: &DbInner, mems: &MemSet, batch: &WriteBatch) -> Result<()> {
    let mut seq = batch.sequence();
    // Per-table byte and key counts, added once per run of one table.
    let mut run: Option<(&StdArc<crate::state::table::TableState>, u64, u64)> = None;
    let flush_run = |run: Option<(&StdArc<crate::state::table::TableState>, u64, u64)>| {
        if let Some((t, keys, bytes)) = run {
            Counters::add(&t.counters.keys_written, keys);
            Counters::add(&t.counters.user_bytes, bytes);
            t.read_heat.record_writes(keys);
        }
    };
    for e in batch.iter() {
        let e = e.map_err(|message| InvalidArgumentSnafu { message }.build())?;
        let Some((_, table, mem)) = mems.get(e.table) else {
            // A table dropped while the batch waited: its records go.
            seq += 1;
            continue;
        };
        mem.add(seq, e.kind, e.key, e.value)
            .context(MemtableSnafu)?;
        seq += 1;
        let bytes = (e.key.len() + e.value.len()) as u64;
        match &mut run {
            Some((t, keys, b)) if StdArc::ptr_eq(t, table) => {
                *keys += 1;
                *b += bytes;
            }
            _ => {
                flush_run(run.take());
                run = Some((table, 1, bytes));
            }
        }
        if table.is_full(mem) && table.mark_full() {
            db.switch_pending.store(true, Ordering::Release);
        }
    }
    flush_run(run);
    Ok(())
}

/// Switches the memtables that are full or asked for (leader only):
/// starts a new WAL, marks the old memtables immutable and queues their
/// flushes.
pub(crate) fn switch_memtables(
    db: &DbInner,
    leader: &mut LeaderState,
    forced: &[TableId],
) -> Result<()> {
    db.switch_pending.store(false, Ordering::Release);
    let mut to_switch: Vec<TableId> = Vec::new();
    for (id, state, mem) in &leader.mems.entries {
        let full = state.take_full();
        if (full || forced.contains(id)) && !mem.is_empty() {
            to_switch.push(*id);
        }
    }
    if to_switch.is_empty() {
        return Ok(());
    }
    let number = db.versions.new_file_number();
    let old = leader.log.as_ref().map(|l| Predecessor {
        log_number: l.number,
        last_sequence: l.last_seq,
    });
    let settings = LogSettings::of(&db.options);
    let owner = db.versions.db_id();
    let recycle = leader.recyclable.pop_front();
    let result = LogWriter::create(&*db.fs, &db.dir, number, old, settings, owner, recycle)
        .and_then(|new| {
            if let Some(mut prev) = leader.log.take() {
                // Hand the old log's buffer to the OS and cut off its
                // preallocated space; keep it for a later sync unless it
                // is durable already.
                if let Err(e) = prev.writer.trim() {
                    leader.log = Some(prev);
                    return Err(e.into());
                }
                leader.close_log(prev);
            }
            leader.log = Some(new);
            Ok(())
        });
    let mut st = db.lock_state();
    st.add_live_log(number);
    if let Err(e) = result {
        return Err(db.stop_writes(&mut st, e));
    }
    let mut entries = Vec::with_capacity(leader.mems.entries.len());
    for (id, state, mem) in &leader.mems.entries {
        if !to_switch.contains(id) {
            entries.push((*id, StdArc::clone(state), Arc::clone(mem)));
            continue;
        }
        // Asked for (a flush call, or a WAL to free): its flush goes ahead
        // of flushes of memtables that merely filled up.
        let Some(fresh) = db.switch_memtable(&mut st, *id, number, forced.contains(id)) else {
            continue;
        };
        entries.push((*id, StdArc::clone(state), fresh));
    }
    drop(st);
    leader.mems = Arc::new(MemSet { entries });
    db.wake_background();
    Ok(())
}

/// When the live WALs hold more than `max_total_wal_size` bytes (by
/// default 4 x every table's memtable budget), the tables whose mutable
/// memtable holds data of the oldest live WAL: switching (and so
/// flushing) them lets it go. A table written rarely would otherwise
/// pin every WAL written since its last flush (RocksDB's
/// `max_total_wal_size`). A table switched once starts its new
/// memtable in a newer WAL, so it is not picked again for the same
/// oldest WAL while its flush runs; immutable memtables pinning the
/// oldest WAL are already queued for their flush.
fn tables_pinning_old_wals(db: &DbInner, leader: &LeaderState) -> Vec<TableId> {
    let (total, oldest) = leader.wal_size();
    let limit = if db.options.max_total_wal_size > 0 {
        db.options.max_total_wal_size
    } else {
        4 * leader
            .mems
            .entries
            .iter()
            .map(|(_, t, _)| {
                (t.options.write_buffer_size * t.options.max_write_buffer_number) as u64
            })
            .sum::<u64>()
    };
    let (Some(oldest), true) = (oldest, total > limit) else {
        return Vec::new();
    };
    leader
        .mems
        .entries
        .iter()
        .filter(|(_, t, mem)| !mem.is_empty() && t.mem_first_log.load(Ordering::Relaxed) <= oldest)
        .map(|(id, _, _)| *id)
        .collect()
}

/// Waits out a stall (leader only, before it takes the leader lock).
fn wait_for_stall(db: &DbInner, bytes: u64, no_slowdown: bool) -> Result<()> {
    let mut st = db.lock_state();
    let mut counted_stop = false;
    let start = Instant::now();
    loop {
        if st.bg_error().is_some() {
            drop(st);
            return db.check_writable();
        }
        if st.is_shutting_down() {
            return ShuttingDownSnafu.fail();
        }
        match st.controller().condition() {
            StallCondition::Normal => break,
            StallCondition::Stopped => {
                if no_slowdown {
                    return InvalidArgumentSnafu {
                        message: "writes are stopped and the write asked for no slowdown"
                            .to_owned(),
                    }
                    .fail();
                }
                if !counted_stop {
                    counted_stop = true;
                    Counters::add(&db.counters.stall_stopped_writes, 1);
                    count_cause(db, st.controller().cause());
                }
                // Background work notifies `done_cv`; the timeout only
                // guards against a missed wake-up.
                st = db.done_cv.wait_timeout(st, Duration::from_millis(100)).0;
            }
            StallCondition::Delayed => {
                if no_slowdown {
                    return InvalidArgumentSnafu {
                        message: "writes are delayed and the write asked for no slowdown"
                            .to_owned(),
                    }
                    .fail();
                }
                let delay = st.stall_delay(bytes, Instant::now());
                if !delay.is_zero() {
                    Counters::add(&db.counters.stall_delayed_writes, 1);
                    count_cause(db, st.controller().cause());
                }
                drop(st);
                let t0 = Instant::now();
                // Sleep in 1 ms steps, leaving early if the delay ends.
                while let Some(step) = delay_step(delay, t0.elapsed()) {
                    std::thread::sleep(step);
                    if !db.stalled.load(Ordering::Acquire) {
                        break;
                    }
                }
                Counters::add(
                    &db.counters.stall_delayed_micros,
                    t0.elapsed().as_micros() as u64,
                );
                return Ok(());
            }
        }
    }
    if counted_stop {
        Counters::add(
            &db.counters.stall_stopped_micros,
            start.elapsed().as_micros() as u64,
        );
    }
    Ok(())
}

/// The next sleep of a delayed write, `elapsed` into a `delay`: at most
/// 1 ms, and none once the delay is over (also when `elapsed` has gone
/// past it between two readings of the clock).
fn delay_step(delay: Duration, elapsed: Duration) -> Option<Duration> {
    let left = delay.saturating_sub(elapsed);
    (!left.is_zero()).then(|| left.min(Duration::from_millis(1)))
}

fn count_cause(db: &DbInner, cause: Option<StallCause>) {
    let c = &db.counters;
    match cause {
        Some(StallCause::MemtableLimit) => Counters::add(&c.stall_memtable_limit, 1),
        Some(StallCause::L0FileCount) => Counters::add(&c.stall_l0_files, 1),
        Some(StallCause::PendingCompactionBytes) => Counters::add(&c.stall_pending_bytes, 1),
        None => {}
    }
}

/// Makes every WAL record durable.
pub(crate) fn sync_wal(db: &DbInner) -> Result<()> {
    let mut leader = db.leader.lock();
    let r = leader.sync_all(&*db.fs, &db.dir);
    Counters::add(&db.counters.wal_syncs, 1);
    drop(leader);
    r.map_err(|e| db.stop_writes(&mut db.lock_state(), e))
}

/// Syncs every live WAL and records their sizes in the MANIFEST (a
/// clean close).
pub(crate) fn close_wals(db: &DbInner) -> Result<()> {
    let sizes = db.leader.lock().sync_for_close(&*db.fs, &db.dir)?;
    if sizes.is_empty() {
        return Ok(());
    }
    let mut edit = lithify_version::VersionEdit::new(lithify_version::DEFAULT_TABLE);
    edit.wal_additions = sizes;
    db.record(vec![edit])
}

/// Hands buffered WAL records to the OS.
pub(crate) fn flush_wal(db: &DbInner) -> Result<()> {
    let mut leader = db.leader.lock();
    leader.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delay_sleeps_in_steps_of_at_most_a_millisecond_and_ends_once_over() {
        let ms = Duration::from_millis;
        assert_eq!(delay_step(ms(5), ms(0)), Some(ms(1)));
        assert_eq!(
            delay_step(ms(5), Duration::from_micros(4_700)),
            Some(Duration::from_micros(300))
        );
        assert_eq!(delay_step(ms(5), ms(5)), None);
        // The clock read after the loop's check may be past the delay: the
        // step is none, not a negative duration (which panicked in a
        // 1M-key fill of 4 KiB values under write delays).
        assert_eq!(delay_step(ms(5), ms(6)), None);
        assert_eq!(delay_step(Duration::ZERO, ms(1)), None);
    }
}
