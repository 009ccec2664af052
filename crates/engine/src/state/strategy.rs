//! Switching a table's compaction strategy: the only code that replaces a
//! table's picker. A switch changes nothing else; the new picker's next
//! compaction reshapes what the old one left, and the write stall is
//! recomputed at once (a picker decides whether L0 files stall writes and
//! how many bytes are pending). `Adaptive`'s decision is given the table
//! as its cost model sees it ([`table_size`]) and the part of the day its
//! window fell in ([`day_part`]).

use std::sync::Arc as StdArc;
use std::sync::atomic::Ordering;

use lithify_compaction::CompactionPicker;
use lithify_compaction_strategy::CompactionStrategy;
use lithify_compaction_strategy::adaptive::{AdaptiveState, DayPart, WorkloadStats};
use lithify_compaction_strategy::cost_model::TableSize;
use lithify_compaction_tiered::stripe_boundaries;
use lithify_version::TableId;

use super::table::{StrategyState, TableMut};
use super::{DbInner, DbState};
use crate::error::{InvalidArgumentSnafu, Result};
use crate::events::StrategySwitchInfo;
use crate::options::Options;
use crate::options::translate::{adaptive_options, picker_for};
use crate::resource::OffpeakWindow;

/// Key ranges the `Adaptive` recorder buckets writes into (for the
/// hot-range share).
pub(crate) const RECORDER_RANGES: usize = 16;

impl StrategyState {
    /// A table's picker and strategy state from its options.
    pub(crate) fn from_options(
        o: &Options,
    ) -> Result<(StdArc<dyn CompactionPicker>, StrategyState)> {
        let configured = o.compaction_strategy.clone();
        let (picker, adaptive, reason) = match &configured {
            CompactionStrategy::Adaptive(a) => {
                let state = AdaptiveState::new(adaptive_options(a, o));
                let picker = picker_for(state.current(), o)?;
                let reason = state.reason().to_owned();
                (picker, Some(state), reason)
            }
            fixed => (picker_for(fixed, o)?, None, "configured".to_owned()),
        };
        Ok((
            picker,
            StrategyState {
                configured,
                adaptive,
                reason,
                switches: 0,
                window_closed_at: None,
                written_at_window: (0, 0),
            },
        ))
    }
}

impl DbInner {
    /// Sets the strategy of `table` (a live switch); returns what
    /// switched, for the caller to announce once the mutex is released.
    pub(crate) fn switch_strategy(
        &self,
        st: &mut DbState,
        table: TableId,
        strategy: CompactionStrategy,
    ) -> Result<StrategySwitchInfo> {
        let Some(t) = st.tables.get_mut(&table) else {
            return InvalidArgumentSnafu {
                message: format!("no table with id {table}"),
            }
            .fail();
        };
        let from = t.strategy.in_force().to_string();
        let mut o = (*t.state.options).clone();
        o.compaction_strategy = strategy;
        let (picker, mut state) = StrategyState::from_options(&o)?;
        state.switches = t.strategy.switches + 1;
        if state.adaptive.is_none() {
            state.reason = "set on the live table".to_owned();
        }
        t.picker = picker;
        t.strategy = state;
        // A new `Adaptive` counts what its first window writes, not the
        // table's history.
        t.strategy.written_at_window = written_totals(t);
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
            to: t.strategy.in_force().to_string(),
            reason: t.strategy.reason.clone(),
        };
        self.install(st, table);
        Ok(info)
    }

    /// Hands `table`'s observation window, closed at `now`, to its
    /// `Adaptive` state, with the table's size and the part of the day
    /// the window fell in; a new choice replaces the picker. Returns the
    /// switch, if one happened, for the caller to announce once the mutex
    /// is released.
    pub(crate) fn observe_window(
        &self,
        st: &mut DbState,
        table: TableId,
        stats: &WorkloadStats,
        now: u64,
    ) -> Option<StrategySwitchInfo> {
        let t = st.tables.get_mut(&table)?;
        let size = table_size(t, stats.update_share());
        // What flushes and compactions wrote for the window's writes.
        let written = written_totals(t);
        let (table_before, user_before) = t.strategy.written_at_window;
        t.strategy.written_at_window = written;
        let stats = &WorkloadStats {
            table_bytes_written: written.0.saturating_sub(table_before),
            user_bytes: written.1.saturating_sub(user_before),
            ..*stats
        };
        let part = day_part(&t.state.options, t.strategy.window_closed_at, now);
        let adaptive = t.strategy.adaptive.as_mut()?;
        adaptive.set_table_size(size);
        t.strategy.window_closed_at = Some(now);
        let switch = match adaptive.observe_at(stats, part) {
            None => {
                t.strategy.reason = adaptive.reason().to_owned();
                return None;
            }
            Some(switch) => switch,
        };
        match picker_for(&switch.to, &t.state.options) {
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
                self.install(st, table);
                Some(info)
            }
            Err(e) => {
                t.strategy.reason = format!("could not switch to {}: {e}", switch.to);
                None
            }
        }
    }
}

/// The bytes `t`'s flushes and compactions have written (tables and blob
/// files: what [`Prediction::write_amp`] counts), and the user bytes of
/// its writes, since the database opened.
///
/// [`Prediction::write_amp`]: lithify_compaction_strategy::cost_model::Prediction::write_amp
fn written_totals(t: &TableMut) -> (u64, u64) {
    let sum = t.stats().sum();
    (
        sum.bytes_written + sum.bytes_written_blob,
        t.state().counters.user_bytes.load(Ordering::Relaxed),
    )
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
/// at 0.8 table bytes per memtable byte). With key-value separation the
/// tables' bytes are those of the SSTs (blob indexes in place of the
/// values), the flushes' blob bytes per user byte are the write every
/// shape pays once, and garbage collection's age cutoff sets what each
/// shape relocates.
fn table_size(t: &TableMut, update_share: f64) -> TableSize {
    let c = &t.state().counters;
    let keys = c.keys_written.load(Ordering::Relaxed).max(1);
    let user_per_write = (c.user_bytes.load(Ordering::Relaxed) as f64 / keys as f64).max(1.0);
    let f = t.flush_shape();
    let blob = t.state().blob_options();
    let write_buffer = t.state().options.write_buffer_size as f64;
    let (entry_bytes, distinct, per_memtable, blob_per_user) =
        if f.records_out > 0 && f.memtables > 0 {
            (
                f.bytes as f64 / f.records_out as f64,
                (f.records_out as f64 / f.records_in.max(1) as f64).min(1.0),
                f.bytes as f64 / f.memtables as f64,
                f.blob_bytes as f64 / (f.records_in.max(1) as f64 * user_per_write),
            )
        } else {
            let entry = user_per_write + 16.0;
            (entry, 1.0, 0.8 * write_buffer, 0.0)
        };
    let distinct = distinct.max(1e-3);
    let v = t.version();
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
        blob_bytes_per_user_byte: blob_per_user,
        blob_gc_age_cutoff: if blob.enable_blob_garbage_collection {
            blob.blob_garbage_collection_age_cutoff
        } else {
            0.0
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_is_off_peak_when_it_overlapped_the_off_peak_window() {
        let o = crate::Options::default().daily_offpeak_time_utc("22:00-23:59".to_owned());
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
