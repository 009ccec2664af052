//! Switching a table's compaction strategy: the only code that replaces a
//! table's picker. A switch changes nothing else; the new picker's next
//! compaction reshapes what the old one left, and the write stall is
//! recomputed at once (a picker decides whether L0 files stall writes and
//! how many bytes are pending).

use std::sync::Arc as StdArc;
use std::sync::atomic::Ordering;

use lithify_compaction::CompactionPicker;
use lithify_compaction_strategy::CompactionStrategy;
use lithify_compaction_strategy::adaptive::{
    AdaptiveOptions, AdaptiveState, DayPart, WorkloadStats,
};
use lithify_compaction_strategy::cost_model::TableSize;
use lithify_compaction_tiered::stripe_boundaries;
use lithify_version::TableId;

use super::table::StrategyState;
use super::{DbInner, DbState};
use crate::error::{InvalidArgumentSnafu, Result};
use crate::events::StrategySwitchInfo;
use crate::options::Options;
use crate::options::translate::{leveled_options, picker_for};

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
                // The leveled candidate is the table's own leveled shape.
                let a = AdaptiveOptions {
                    leveled: leveled_options(o),
                    ..a.clone()
                };
                let state = AdaptiveState::new(a);
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

    /// Hands `table`'s closed observation window to its `Adaptive` state
    /// (the table seen as `size`, the window in day part `part`, closed at
    /// `now`); a new choice replaces the picker. Returns the switch, if
    /// one happened, for the caller to announce once the mutex is
    /// released.
    pub(crate) fn observe_window(
        &self,
        st: &mut DbState,
        table: TableId,
        stats: &WorkloadStats,
        size: impl FnOnce(&super::table::TableMut) -> TableSize,
        part: impl FnOnce(Option<u64>) -> DayPart,
        now: u64,
    ) -> Option<StrategySwitchInfo> {
        let t = st.tables.get_mut(&table)?;
        let size = size(t);
        let part = part(t.strategy.window_closed_at);
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
