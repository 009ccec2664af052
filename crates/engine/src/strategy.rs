//! Compaction strategies on live tables: switching, and the `Adaptive`
//! strategy's observation of the workload.
//!
//! A switch replaces the table's picker under the database mutex; nothing
//! else changes, and the new picker's next compaction reshapes what the
//! old one left. `Adaptive` tables count their reads (lookups, and each
//! iterator as one read) with an atomic and feed their writes (key order,
//! key range, and for one write in 64 whether the key existed) to a
//! `WorkloadRecorder` on the writer's thread; when a window holds enough operations, the thread that notices
//! closes it and hands it to the table's `AdaptiveState`, which may switch.

use std::sync::Arc as StdArc;
use std::sync::atomic::Ordering;

use lithify_base::ValueKind;
use lithify_compaction_strategy::CompactionStrategy;
use lithify_compaction_strategy::adaptive::DayPart;
use lithify_compaction_strategy::cost_model::TableSize;
use lithify_compaction_tiered::stripe_boundaries;
use lithify_version::TableId;

use crate::batch::WriteBatch;
use crate::compaction::{picker_for, strategy_in_force, strategy_state};
use crate::db_impl::DbInner;
use crate::error::{InvalidArgumentSnafu, Result};
use crate::events::StrategySwitchInfo;
use crate::resource::OffpeakWindow;
use crate::table_state::{SAMPLE_EVERY, TableMut, TableState};

/// Key ranges the recorder buckets writes into (for the hot-range share).
const RECORDER_RANGES: usize = 16;

impl DbInner {
    /// Sets the strategy of `table` (a live switch).
    pub(crate) fn set_strategy(&self, table: TableId, strategy: CompactionStrategy) -> Result<()> {
        let mut st = self.lock_state();
        let Some(t) = st.tables.get_mut(&table) else {
            return InvalidArgumentSnafu {
                message: format!("no table with id {table}"),
            }
            .fail();
        };
        let from = strategy_in_force(&t.strategy).to_string();
        let mut o = (*t.state.options).clone();
        o.compaction_strategy = strategy;
        let (picker, mut state) = strategy_state(&o)?;
        state.switches = t.strategy.switches + 1;
        if state.adaptive.is_none() {
            state.reason = "set on the live table".to_owned();
        }
        t.picker = picker;
        t.strategy = state;
        t.state.workload.configure(&t.strategy);
        if t.state.workload.is_enabled() {
            self.adaptive_seen.store(true, Ordering::Release);
            let boundaries = stripe_boundaries(&t.version, RECORDER_RANGES);
            let _ = t.state.workload.take_window();
            t.state.workload.recorder.lock().set_boundaries(boundaries);
        }
        let info = StrategySwitchInfo {
            table: t.state.name.clone(),
            from,
            to: strategy_in_force(&t.strategy).to_string(),
            reason: t.strategy.reason.clone(),
        };
        self.recompute_stall(&mut st);
        drop(st);
        self.events.strategy_switched(&info);
        self.wake_background();
        Ok(())
    }

    /// The strategy in force on `table` and why.
    pub(crate) fn strategy_of(&self, table: TableId) -> (CompactionStrategy, String) {
        let st = self.lock_state();
        match st.tables.get(&table) {
            Some(t) => (
                strategy_in_force(&t.strategy).clone(),
                t.strategy.reason.clone(),
            ),
            None => (CompactionStrategy::default(), "dropped".to_owned()),
        }
    }

    /// Feeds the writes of `batch` to the recorders of the `Adaptive`
    /// tables it writes (on the writer's thread, before the write group):
    /// one write in [`SAMPLE_EVERY`] is looked up to tell an update from
    /// an insert.
    pub(crate) fn observe_writes(&self, batch: &WriteBatch) {
        let mut last: Option<(TableId, Option<StdArc<TableState>>)> = None;
        let mut full = Vec::new();
        for e in batch.iter() {
            let Ok(e) = e else { return };
            let table = match &last {
                Some((id, t)) if *id == e.table => t.clone(),
                _ => {
                    let t = self.table(e.table).filter(|t| t.workload.is_enabled());
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
                .then(|| self.may_exist_uncounted(&table, e.key));
            w.recorder.lock().record_write(e.key, existed);
            if n.is_multiple_of(256)
                && w.is_full()
                && !full.iter().any(|t: &StdArc<TableState>| t.id == table.id)
            {
                full.push(StdArc::clone(&table));
            }
        }
        for t in full {
            self.close_window(&t);
        }
    }

    /// Counts a read of an `Adaptive` table (and closes its window when it
    /// is full).
    #[inline]
    pub(crate) fn observe_read(&self, table: &TableState) {
        if table.workload.is_enabled() && table.workload.record_read() {
            self.close_window(table);
        }
    }

    /// Counts a scan (an iterator) of an `Adaptive` table.
    #[inline]
    pub(crate) fn observe_scan(&self, table: &TableState) {
        if table.workload.is_enabled() && table.workload.record_scan() {
            self.close_window(table);
        }
    }

    /// Ends `table`'s observation window and lets its `AdaptiveState`
    /// decide; a new choice replaces the picker.
    pub(crate) fn close_window(&self, table: &TableState) {
        // One closer at a time: a reader and a writer can both see the
        // window full, and the second would take a window of a few
        // operations and lose them.
        let Some(_closing) = table.workload.begin_close() else {
            return;
        };
        let stats = table.workload.take_window();
        let boundaries = stripe_boundaries(&table.sv.get().version, RECORDER_RANGES);
        table.workload.recorder.lock().set_boundaries(boundaries);
        let mut st = self.lock_state();
        let Some(t) = st.tables.get_mut(&table.id) else {
            return;
        };
        let size = table_size(t, stats.update_share());
        let Some(adaptive) = t.strategy.adaptive.as_mut() else {
            return;
        };
        adaptive.set_table_size(size);
        let now = t.state.options.clock.now_secs();
        let part = day_part(&t.state.options, t.strategy.window_closed_at, now);
        t.strategy.window_closed_at = Some(now);
        match adaptive.observe_at(&stats, part) {
            None => t.strategy.reason = adaptive.reason().to_owned(),
            Some(switch) => match picker_for(&switch.to, &t.state.options) {
                Ok(picker) => {
                    let info = StrategySwitchInfo {
                        table: t.state.name.clone(),
                        from: switch.from.to_string(),
                        to: switch.to.to_string(),
                        reason: switch.reason.clone(),
                    };
                    t.picker = picker;
                    t.strategy.reason = switch.reason;
                    t.strategy.switches += 1;
                    self.recompute_stall(&mut st);
                    drop(st);
                    self.events.strategy_switched(&info);
                    self.wake_background();
                }
                Err(e) => {
                    t.strategy.reason = format!("could not switch to {}: {e}", switch.to);
                }
            },
        }
    }
}

/// Where a window of a table with options `o`, from `opened` (when the
/// previous one closed) to `now`, fell in its day: off-peak if it
/// overlapped the off-peak window (a quiet night may not fill a window
/// of its own), peak if not, unknown without a window.
fn day_part(o: &crate::Options, opened: Option<u64>, now: u64) -> DayPart {
    if o.daily_offpeak_time_utc.is_empty() {
        return DayPart::Unknown;
    }
    let Ok(w) = OffpeakWindow::parse(&o.daily_offpeak_time_utc) else {
        return DayPart::Unknown;
    };
    let opened = opened.unwrap_or(now).min(now);
    if w.contains(now) || w.seconds_until_start(opened) <= now - opened {
        DayPart::OffPeak
    } else {
        DayPart::Peak
    }
}

/// The table as `Adaptive`'s cost model sees it: its live data (the
/// last level, and the part of the levels above that is not updates of
/// it, at the window's `update_share`), and what its plain flushes wrote
/// per memtable (before any flush, a full memtable of the writes so far,
/// at 0.8 table bytes per memtable byte).
pub(crate) fn table_size(t: &TableMut, update_share: f64) -> TableSize {
    let c = &t.state.counters;
    let keys = c.keys_written.load(Ordering::Relaxed).max(1);
    let user_per_write = (c.user_bytes.load(Ordering::Relaxed) as f64 / keys as f64).max(1.0);
    let f = &t.flush_shape;
    let write_buffer = t.state.options.write_buffer_size as f64;
    let (entry_bytes, distinct, per_memtable) = if f.records_out > 0 && f.memtables > 0 {
        (
            f.bytes as f64 / f.records_out as f64,
            (f.records_out as f64 / f.records_in.max(1) as f64).min(1.0),
            f.bytes as f64 / f.memtables as f64,
        )
    } else {
        let entry = user_per_write + 16.0;
        (entry, 1.0, 0.8 * write_buffer)
    };
    let distinct = distinct.max(1e-3);
    let v = &t.version;
    let last = v.num_levels().saturating_sub(1);
    let upper = v.total_bytes() - v.level_bytes(last);
    let fresh = 1.0 - update_share.clamp(0.0, 1.0);
    TableSize {
        live_bytes: v.level_bytes(last) + (upper as f64 * fresh) as u64,
        upper_bytes: upper,
        flush_bytes: (per_memtable / distinct).max(1.0) as u64,
        entry_bytes: entry_bytes.round().max(1.0) as u64,
        table_bytes_per_user_byte: entry_bytes / user_per_write,
        flush_distinct_share: distinct,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_is_off_peak_when_it_overlapped_the_off_peak_window() {
        let o = crate::Options {
            daily_offpeak_time_utc: "22:00-23:59".to_owned(),
            ..crate::Options::default()
        };
        let day = 20_454 * 86_400;
        let at = |h: u64| day + h * 3_600;
        // Inside the window, whenever the window opened.
        assert_eq!(day_part(&o, None, at(23)), DayPart::OffPeak);
        assert_eq!(day_part(&o, Some(at(12)), at(23)), DayPart::OffPeak);
        // A quiet night: the window opened at 21:00 and closed the next
        // morning, so it spanned the night.
        assert_eq!(day_part(&o, Some(at(21)), at(24 + 9)), DayPart::OffPeak);
        // Daytime from start to end.
        assert_eq!(day_part(&o, Some(at(9)), at(21)), DayPart::Peak);
        assert_eq!(day_part(&o, None, at(12)), DayPart::Peak);
        // No window: unknown.
        let none = crate::Options::default();
        assert_eq!(day_part(&none, Some(at(9)), at(23)), DayPart::Unknown);
    }
}
