//! Compaction strategies on live tables: switching, and the `Adaptive`
//! strategy's observation of the workload.
//!
//! A switch replaces the table's picker under the database mutex
//! ([`crate::state::strategy`]); nothing else changes, and the new
//! picker's next compaction reshapes what the old one left. `Adaptive`
//! tables count their reads (lookups, and each iterator as one read) with
//! an atomic and feed their writes (key order, key range, and for one
//! write in 64 whether the key existed) to a `WorkloadRecorder` on the
//! writer's thread; when a window holds enough operations, the thread that
//! notices closes it and hands it to the table's `AdaptiveState`, which
//! may switch.

use std::cell::RefCell;
use std::sync::Arc as StdArc;
use std::sync::atomic::Ordering;

use lithify_base::key::{KIND_FOR_SEEK, append_internal_key};
use lithify_base::{Comparator, ValueKind};
use lithify_compaction_strategy::CompactionStrategy;
use lithify_compaction_tiered::stripe_boundaries;
use lithify_memtable::Lookup;
use lithify_version::TableId;

use crate::batch::WriteBatch;
use crate::error::Result;
use crate::state::DbInner;
use crate::state::strategy::RECORDER_RANGES;
use crate::state::table::{SAMPLE_EVERY, TableState};
use crate::super_version::FileHandle;

/// Sets the strategy of `table` (a live switch).
pub(crate) fn set_strategy(
    db: &DbInner,
    table: TableId,
    strategy: CompactionStrategy,
) -> Result<()> {
    let info = db.switch_strategy(&mut db.lock_state(), table, strategy)?;
    db.events.strategy_switched(&info);
    db.wake_background();
    Ok(())
}

/// The strategy in force on `table` and why.
pub(crate) fn strategy_of(db: &DbInner, table: TableId) -> (CompactionStrategy, String) {
    let st = db.lock_state();
    match st.table(table) {
        Some(t) => (
            t.strategy().in_force().clone(),
            t.strategy().reason().to_owned(),
        ),
        None => (CompactionStrategy::default(), "dropped".to_owned()),
    }
}

/// Feeds the writes of `batch` to the recorders of the `Adaptive`
/// tables it writes (on the writer's thread, before the write group):
/// one write in [`SAMPLE_EVERY`] is looked up to tell an update from
/// an insert.
pub(crate) fn observe_writes(db: &DbInner, batch: &WriteBatch) {
    let mut last: Option<(TableId, Option<StdArc<TableState>>)> = None;
    let mut full = Vec::new();
    for e in batch.iter() {
        let Ok(e) = e else { return };
        let table = match &last {
            Some((id, t)) if *id == e.table => t.clone(),
            _ => {
                let t = db.table(e.table).filter(|t| t.workload.is_enabled());
                last = Some((e.table, t.clone()));
                t
            }
        };
        let Some(table) = table else { continue };
        let w = &table.workload;
        if e.kind == ValueKind::RangeDelete {
            w.recorder.lock().record_range_delete();
            continue;
        }
        let n = w.writes_seen.fetch_add(1, Ordering::Relaxed);
        let existed = n
            .is_multiple_of(SAMPLE_EVERY)
            .then(|| may_exist_uncounted(db, &table, e.key));
        w.recorder.lock().record_write(e.key, existed);
        if n.is_multiple_of(256)
            && w.is_full()
            && !full.iter().any(|t: &StdArc<TableState>| t.id == table.id)
        {
            full.push(StdArc::clone(&table));
        }
    }
    for t in full {
        close_window(db, &t);
    }
}

/// Counts a read of an `Adaptive` table (and closes its window when it
/// is full).
#[inline]
pub(crate) fn observe_read(db: &DbInner, table: &TableState) {
    if table.workload.is_enabled() && table.workload.record_read() {
        close_window(db, table);
    }
}

/// Counts a scan (an iterator) of an `Adaptive` table.
#[inline]
pub(crate) fn observe_scan(db: &DbInner, table: &TableState) {
    if table.workload.is_enabled() && table.workload.record_scan() {
        close_window(db, table);
    }
}

/// Ends `table`'s observation window and lets its `AdaptiveState`
/// decide; a new choice replaces the picker.
pub(crate) fn close_window(db: &DbInner, table: &TableState) {
    // One closer at a time: a reader and a writer can both see the
    // window full, and the second would take a window of a few
    // operations and lose them.
    let Some(_closing) = table.workload.begin_close() else {
        return;
    };
    let stats = table.workload.take_window();
    let boundaries = stripe_boundaries(&table.sv.get().version, RECORDER_RANGES);
    table.workload.recorder.lock().set_boundaries(boundaries);
    let now = table.options.clock.now_secs();
    let switched = db.observe_window(&mut db.lock_state(), table.id, &stats, now);
    if let Some(info) = switched {
        db.events.strategy_switched(&info);
        db.wake_background();
    }
}

thread_local! {
    /// The seek key of [`may_exist_uncounted`], reused per thread.
    static SEEK_KEY: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Whether `key` may exist in `table` now, judged without reading a
/// data block and without counting a read (the `Adaptive` strategy's
/// update/insert sampling). The memtables answer exactly; below them
/// the key counts as present when a table whose range holds it has no
/// filter or a filter that does not rule it out (a tombstone in a table
/// counts as present). A filter's false positives (about 1 % per table
/// probed at 10 bits per key) count a few inserts as updates.
///
/// A full lookup here read data blocks for one write in 64: on a
/// write-only workload the blocks churned through the block cache and
/// the allocator, costing 17 % more CPU per write and a p99 a third
/// higher than the same fixed strategy.
pub(crate) fn may_exist_uncounted(db: &DbInner, table: &TableState, key: &[u8]) -> bool {
    let sv = table.sv.get();
    let snap = db.visible();
    for mem in std::iter::once(&sv.mem).chain(sv.imm.iter()) {
        match mem.get(key, snap) {
            Lookup::Found { .. } | Lookup::Merge { .. } => return true,
            Lookup::Deleted { .. } => return false,
            Lookup::NotFound => {}
        }
    }
    let icmp = &table.icmp;
    SEEK_KEY.with(|b| {
        let seek = &mut *b.borrow_mut();
        seek.clear();
        append_internal_key(seek, key, snap, KIND_FOR_SEEK);
        let filter_says = |h: &FileHandle| match h.sst(&db.opener) {
            Ok(t) => t.may_contain(t.key_schema().filter_key(seek)),
            // An estimate: a table that cannot be opened here counts as
            // holding the key (the read path reports the error).
            Err(_) => true,
        };
        sv.levels.iter().enumerate().any(|(level, files)| {
            if level == 0 {
                files
                    .iter()
                    .filter(|h| h.meta.contains_user_key(icmp, key))
                    .any(|h| filter_says(h))
            } else {
                let i =
                    files.partition_point(|h| icmp.compare(h.meta.largest.encoded(), seek).is_lt());
                files
                    .get(i)
                    .filter(|h| icmp.compare_user(h.meta.smallest_user_key(), key).is_le())
                    .is_some_and(|h| filter_says(h))
            }
        })
    })
}
