//! Compactions: running a picked compaction (a job of `lithify-compaction`)
//! on a background thread or, for `compact_range` and major compactions,
//! on the caller's thread, and installing its edit. What is picked, and
//! what runs, is registered in [`crate::state::jobs`].

use std::sync::Arc as StdArc;

use lithify_base::sync::MutexGuard;
use lithify_compaction::iter::Snapshots;
use lithify_compaction::{CompactRangeOptions, ManualCompaction, ManualStep, run_compaction};
use lithify_version::TableId;
use snafu::IntoError as _;

use crate::error::{CompactionSnafu, ReadOnlySnafu, Result, ShuttingDownSnafu};
use crate::events::CompactionJobInfo;
use crate::options::translate::compaction_job_options;
use crate::sst_files::InputOpener;
use crate::state::jobs::PickedCompaction;
use crate::state::table::TableMut;
use crate::state::{DbInner, DbState};
use crate::stats::Counters;

/// Runs a picked compaction and installs it (or records the failure as
/// the background error). Its registration ends either way, and its
/// inputs are no longer held when it returns.
pub(crate) fn run(db: &DbInner, p: PickedCompaction) -> Result<()> {
    let started = std::time::Instant::now();
    let c = &p.compaction;
    let mut info = CompactionJobInfo {
        table: db
            .table(p.table)
            .map(|t| t.name.clone())
            .unwrap_or_default(),
        table_id: p.table,
        reason: format!("{:?}", c.reason),
        inputs: c
            .inputs
            .iter()
            .map(|i| (i.level, i.files.iter().map(|f| f.number).collect()))
            .collect(),
        output_level: c.output_level,
        trivial_move: c.trivial_move,
        manual: c.manual,
        output_files: Vec::new(),
        bytes_read: 0,
        bytes_written: 0,
        micros: 0,
    };
    db.events.compaction_begin(&info);
    let snapshots = Snapshots::new(db.snapshots.sequences());
    let result = {
        let opener = InputOpener { opener: &db.opener };
        let state = db.table_or_default(p.table);
        let topts = StdArc::clone(&state.options);
        let factory = db.output_factory(p.table, &state.blob_options());
        let filter = topts.compaction_filter.clone();
        let opts = compaction_job_options(&db.options, &topts, db.rate_limiter.as_ref());
        match crate::remote_compaction::try_remote(db, c, &topts, &factory, &snapshots, &opts) {
            Some(r) => Ok(r),
            None => run_compaction(c, &opener, &snapshots, filter.as_deref(), &factory, &opts),
        }
    };
    let mut st = db.lock_state();
    st.finish_compaction(p.table, p.id);
    let r = match result {
        Err(e) => return Err(db.stop_writes(&mut st, CompactionSnafu.into_error(e))),
        Ok(r) => r,
    };
    db.apply_and_install(&mut st, p.table, vec![r.edit.clone()], |st| {
        st.record_compaction(p.table, c.output_level, &r.stats);
        Counters::add(
            &db.counters.compaction_write_bytes,
            r.stats.bytes_written + r.stats.bytes_written_blob,
        );
        db.counters.record_iter_stats(&r.iter_stats);
        if let Some(t) = st.table(p.table) {
            Counters::add(
                &t.state().counters.compaction_write_bytes,
                r.stats.bytes_written,
            );
            Counters::add(
                &t.state().counters.blob_write_bytes,
                r.stats.bytes_written_blob,
            );
        }
        Counters::add(&db.counters.compaction_read_bytes, r.stats.bytes_read());
    })?;
    drop(st);
    info.output_files = r.edit.new_files.iter().map(|(_, f)| f.number).collect();
    info.bytes_read = r.stats.bytes_read();
    info.bytes_written = r.stats.bytes_written;
    // Listeners hear of the compaction before its waiters wake.
    info.micros = started.elapsed().as_micros() as u64;
    db.events.compaction_completed(&info);
    db.notify_installed();
    Ok(())
}

/// RocksDB's `CompactRange`: flushes, then compacts `[begin, end]` level by
/// level down to the last level on the caller's thread, waiting for
/// conflicting background compactions. Returns when done.
pub(crate) fn compact_range(
    db: &DbInner,
    table: TableId,
    begin: Option<&[u8]>,
    end: Option<&[u8]>,
    options: &CompactRangeOptions,
) -> Result<()> {
    db.check_writable()?;
    crate::flush::flush_table(db, table)?;
    let mut manual = ManualCompaction::new(
        begin.map(<[u8]>::to_vec),
        end.map(<[u8]>::to_vec),
        options.clone(),
        db.versions.next_file_number(),
    );
    let exclusive = options.exclusive_manual_compaction;
    let mut st = db.lock_state();
    if exclusive {
        st.begin_exclusive_manual();
        st = db.wait_for_background_compactions(st);
    }
    let result = manual_loop(db, st, table, &mut manual);
    if exclusive {
        db.lock_state().end_exclusive_manual();
        db.wake_background();
    }
    // Space back before returning, as RocksDB's manual compaction deletes
    // its obsolete inputs before it returns: only what something still
    // holds stays, and the event says what.
    if let Some((held, by)) = crate::purge::purge_obsolete_files(db) {
        let bytes: u64 = held
            .iter()
            .filter_map(|&n| {
                let path = db.dir.join(lithify_version::filename::sst_file_name(n));
                db.fs.file_size(&path).ok()
            })
            .sum();
        db.events.emit(
            crate::events::Level::Info,
            "obsolete_files_held",
            format_args!(
                "compact_range returned with {} obsolete SST file(s), {bytes} bytes, not deleted yet: {}",
                held.len(),
                by.describe()
            ),
        );
    }
    if db.options.release_memory_after_jobs {
        crate::heap::release_free_memory();
    }
    result
}

/// Fails with the background error or the shutdown, if either stops
/// the work a caller waits for.
fn still_running(st: &DbState) -> Result<()> {
    if let Some(cause) = st.bg_error() {
        return ReadOnlySnafu {
            cause: StdArc::clone(cause),
        }
        .fail();
    }
    if st.is_shutting_down() {
        return ShuttingDownSnafu.fail();
    }
    Ok(())
}

/// Waits until the background threads are done for now (see
/// `DbInner::background_idle`), then deletes what their jobs made
/// obsolete, so the files on disk are the live ones when this returns
/// (apart from those an iterator or a disabled deletion holds).
pub(crate) fn wait_for_compact(db: &DbInner) -> Result<()> {
    if db.opened_read_only {
        return Ok(());
    }
    if crate::events::in_listener() {
        // A listener runs inside the job it hears of: waiting for that
        // job to end would never return.
        return crate::error::InvalidArgumentSnafu {
            message: "wait_for_compact cannot be called from an event listener".to_owned(),
        }
        .fail();
    }
    let mut st = db.lock_state();
    loop {
        still_running(&st)?;
        if db.background_idle(&st) {
            break;
        }
        // Work can become due with no one told (a released snapshot, a
        // TTL or periodic compaction whose time came): wake the threads,
        // and look again now and then.
        db.wake_background();
        st = db
            .done_cv
            .wait_timeout(st, std::time::Duration::from_millis(100))
            .0;
    }
    drop(st);
    crate::purge::purge_obsolete_files(db);
    Ok(())
}

/// A major compaction of all of `table` (what a scheduled major runs):
/// everything above the bottom merged down, then the bottom level
/// rewritten (`BottommostLevelCompaction::ForceOptimized`), which drops
/// what deletes and snapshots no longer need. Runs on the calling thread;
/// memtables are not flushed first.
pub(crate) fn major_compact(db: &DbInner, table: TableId) -> Result<()> {
    let mut manual = ManualCompaction::new(
        None,
        None,
        CompactRangeOptions::default().bottommost_level_compaction(
            lithify_compaction::BottommostLevelCompaction::ForceOptimized,
        ),
        db.versions.next_file_number(),
    );
    let st = db.lock_state();
    manual_loop(db, st, table, &mut manual)
}

fn manual_loop<'a>(
    db: &'a DbInner,
    mut st: MutexGuard<'a, DbState>,
    table: TableId,
    manual: &mut ManualCompaction,
) -> Result<()> {
    loop {
        still_running(&st)?;
        let Some(t) = st.table(table) else {
            return Ok(());
        };
        let step = {
            let ctx = db.pick_context(t);
            manual.next(t.picker(), t.version(), &ctx)
        };
        match step {
            Err(e) if e.is_conflict() => {
                // A background compaction holds some input: wait for it,
                // then ask again.
                st = db.done_cv.wait(st);
            }
            Err(e) => return Err(CompactionSnafu.into_error(e)),
            Ok(ManualStep::Done) => return Ok(()),
            Ok(ManualStep::Refit(edit)) => {
                db.apply_and_install(&mut st, table, vec![edit], |_| {})?
            }
            Ok(ManualStep::Compact(c)) => {
                let Some(id) = st.register_compaction(table, &c) else {
                    return Ok(());
                };
                st.begin_manual_job();
                drop(st);
                let r = run(
                    db,
                    PickedCompaction {
                        table,
                        compaction: c,
                        id,
                    },
                );
                // Each step's inputs go as soon as it is installed, so a
                // long manual compaction never holds twice its data.
                crate::purge::purge_obsolete_files(db);
                st = db.lock_state();
                st.end_manual_job();
                db.done_cv.notify_all();
                r?;
            }
        }
    }
}

/// Each level's compaction score, and its files being compacted.
pub(crate) fn level_scores(db: &DbInner, t: &TableMut) -> (Vec<f64>, Vec<usize>) {
    let ctx = db.pick_context(t);
    let version = t.version();
    let scores = t
        .picker()
        .level_scores(version, &ctx)
        .into_iter()
        .map(|s| s.score)
        .collect();
    let being = (0..version.num_levels())
        .map(|l| {
            version
                .files(l)
                .iter()
                .filter(|f| t.compactions().is_being_compacted(f.number))
                .count()
        })
        .collect();
    (scores, being)
}
