//! Compactions: picking through each table's `CompactionPicker`, running
//! jobs of `lithify-compaction-leveled` on the background pool (or on the
//! caller's thread for `compact_range`), installing their edits.

use std::collections::HashSet;
use std::sync::Arc as StdArc;

use crate::resource::{DailyTime, OffpeakWindow, RateLimiter, RateLimiterOptions};
use lithify_compaction::iter::Snapshots;
use lithify_compaction::job::JobOptions;
use lithify_compaction::{
    CompactRangeOptions, Compaction, CompactionPicker, ManualCompaction, ManualStep, PickContext,
    run_compaction,
};
use lithify_compaction_leveled::LeveledOptions;
use lithify_compaction_strategy::CompactionStrategy;
use lithify_compaction_strategy::adaptive::{AdaptiveOptions, AdaptiveState};
use lithify_compaction_tiered::{MajorOnlyOptions, TwoTierOptions};
use lithify_version::TableId;

use crate::db_impl::{DbInner, DbState};
use crate::error::{CompactionSnafu, Error, ReadOnlySnafu, Result, ShuttingDownSnafu};
use crate::events::CompactionJobInfo;
use crate::options::Options;
use crate::sst_opener::InputOpener;
use crate::stats::Counters;
use crate::table_state::{StrategyState, TableMut};

/// The leveled picker's options from the database options.
pub(crate) fn leveled_options(o: &Options) -> LeveledOptions {
    LeveledOptions {
        num_levels: o.num_levels,
        level0_file_num_compaction_trigger: o.level0_file_num_compaction_trigger,
        max_bytes_for_level_base: o.max_bytes_for_level_base,
        max_bytes_for_level_multiplier: o.max_bytes_for_level_multiplier,
        max_bytes_for_level_multiplier_additional: Vec::new(),
        level_compaction_dynamic_level_bytes: o.level_compaction_dynamic_level_bytes,
        target_file_size_base: o.target_file_size_base,
        target_file_size_multiplier: u64::from(o.target_file_size_multiplier),
        max_compaction_bytes: o.max_compaction_bytes,
        compaction_pri: o.compaction_pri,
        ttl: o.ttl,
        periodic_compaction_seconds: o.effective_periodic_compaction_seconds(),
        max_subcompactions: o.max_subcompactions,
        disable_auto_compactions: o.disable_auto_compactions,
        compression: o.compression,
        ..LeveledOptions::default()
    }
}

/// The picker of a fixed strategy on a table with options `o`: `Leveled`
/// takes its options from `o`; `MajorOnly` and `TwoTier` take theirs from
/// the strategy, with the table's compression and subcompactions.
pub(crate) fn picker_for(
    strategy: &CompactionStrategy,
    o: &Options,
) -> Result<StdArc<dyn CompactionPicker>> {
    let fixed = match strategy {
        CompactionStrategy::Leveled(_) => CompactionStrategy::Leveled(leveled_options(o)),
        CompactionStrategy::MajorOnly(m) => CompactionStrategy::MajorOnly(MajorOnlyOptions {
            compression: o.compression,
            max_subcompactions: o.max_subcompactions,
            ..m.clone()
        }),
        CompactionStrategy::TwoTier(t) => CompactionStrategy::TwoTier(TwoTierOptions {
            compression: o.compression,
            max_subcompactions: o.max_subcompactions,
            ..t.clone()
        }),
        CompactionStrategy::Adaptive(a) => return picker_for(&a.initial, o),
    };
    fixed.picker().map_err(|e| CompactionSnafu.into_error(e))
}

/// A table's picker and strategy state from its options.
pub(crate) fn strategy_state(o: &Options) -> Result<(StdArc<dyn CompactionPicker>, StrategyState)> {
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

/// The database's compaction rate limiter, if a rate is set.
pub(crate) fn rate_limiter(o: &Options) -> Option<StdArc<RateLimiter>> {
    if o.compaction_rate_limit == 0 && o.compaction_rate_limit_offpeak == 0 {
        return None;
    }
    let offpeak = if o.daily_offpeak_time_utc.is_empty() {
        None
    } else {
        OffpeakWindow::parse(&o.daily_offpeak_time_utc).ok()
    };
    Some(StdArc::new(RateLimiter::new(
        RateLimiterOptions {
            bytes_per_sec: o.compaction_rate_limit,
            offpeak_bytes_per_sec: o.compaction_rate_limit_offpeak,
            offpeak,
        },
        StdArc::clone(&o.clock),
    )))
}

/// The first scheduled major compaction of a table with options `o` after
/// now, if it has a schedule.
pub(crate) fn next_scheduled_major(o: &Options) -> Option<u64> {
    let t = DailyTime::parse(o.scheduled_major_time_utc.as_deref()?).ok()?;
    Some(t.next_at_or_after(o.clock.now_secs() + 1))
}

/// The strategy in force on a table.
pub(crate) fn strategy_in_force(s: &StrategyState) -> &CompactionStrategy {
    match &s.adaptive {
        Some(a) => a.current(),
        None => &s.configured,
    }
}

/// RocksDB's estimate of the bytes compaction still has to rewrite.
pub(crate) fn pending_compaction_bytes(t: &TableMut) -> u64 {
    t.picker.estimated_compaction_needed_bytes(&t.version)
}

/// A compaction chosen for a table and registered as running.
pub(crate) struct PickedCompaction {
    pub(crate) table: TableId,
    pub(crate) compaction: Compaction,
    pub(crate) id: u64,
}

static NO_MARKED: std::sync::LazyLock<HashSet<u64>> = std::sync::LazyLock::new(HashSet::new);

impl DbInner {
    pub(crate) fn pick_context<'a>(&self, t: &'a TableMut) -> PickContext<'a> {
        PickContext {
            in_progress: &t.compactions,
            now: self.options.clock.now_secs(),
            bottommost_mark_threshold: self.snapshots.bottommost_threshold(),
            marked_files: &NO_MARKED,
            has_compaction_filter: t.state.options.compaction_filter.is_some(),
        }
    }

    /// Whether compactions may use the whole compaction share of the pool
    /// (RocksDB's `NeedSpeedupCompaction`): writes are stalled, L0 is well
    /// past its trigger, or much compaction is pending. Otherwise one runs
    /// at a time.
    pub(crate) fn compaction_pressure(&self, st: &DbState) -> bool {
        if st.controller.condition() != crate::StallCondition::Normal {
            return true;
        }
        st.tables.values().any(|t| {
            let o = &t.state.options;
            let trigger = o.level0_file_num_compaction_trigger;
            let l0_speedup = (2 * trigger)
                .min(trigger + o.level0_slowdown_writes_trigger.saturating_sub(trigger) / 4);
            let soft = o.soft_pending_compaction_bytes_limit;
            t.version.num_files(0) >= l0_speedup
                || soft == 0
                || pending_compaction_bytes(t) >= (2 * o.max_bytes_for_level_base).min(soft / 4)
        })
    }

    /// The next automatic compaction of any table, registered as running.
    pub(crate) fn pick_compaction(&self, st: &mut DbState) -> Option<PickedCompaction> {
        if st.exclusive_manual > 0 {
            return None;
        }
        let ids: Vec<TableId> = st.tables.keys().copied().collect();
        for id in ids {
            let t = st.tables.get(&id)?;
            if t.state.options.disable_auto_compactions || t.state.is_dropped() {
                continue;
            }
            let picked = {
                let ctx = self.pick_context(t);
                if !t.picker.needs_compaction(&t.version, &ctx) {
                    continue;
                }
                t.picker.pick_auto(&t.version, &ctx)
            };
            let Some(c) = picked else { continue };
            let t = st.tables.get_mut(&id)?;
            let cid = t.compactions.register(&c, &t.state.icmp);
            return Some(PickedCompaction {
                table: id,
                compaction: c,
                id: cid,
            });
        }
        None
    }

    /// Runs a picked compaction and installs it (or records the failure
    /// as the background error).
    pub(crate) fn run_compaction(&self, p: PickedCompaction) -> Result<()> {
        let started = std::time::Instant::now();
        let c = &p.compaction;
        let mut info = CompactionJobInfo {
            table: self
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
        self.events.compaction_begin(&info);
        let snapshots = Snapshots::new(self.snapshots.sequences());
        let result = {
            let opener = InputOpener {
                opener: &self.opener,
            };
            let factory = self.output_factory();
            let table = self.table(p.table);
            let topts = table.as_ref().map_or_else(
                || StdArc::clone(&self.default_table.options),
                |t| StdArc::clone(&t.options),
            );
            let filter = topts.compaction_filter.clone();
            let opts = JobOptions {
                compaction_pri: self.options.compaction_pri,
                rate_limiter: self
                    .rate_limiter
                    .clone()
                    .map(|r| r as StdArc<dyn lithify_compaction::WriteRateLimiter>),
                ..crate::flush::job_options(&topts)
            };
            run_compaction(
                &p.compaction,
                &opener,
                &snapshots,
                filter.as_deref(),
                &factory,
                &opts,
            )
        };
        let mut st = self.lock_state();
        if let Some(t) = st.tables.get_mut(&p.table) {
            t.compactions.unregister(p.id);
        }
        let r = match result {
            Err(e) => Err(CompactionSnafu.into_error(e)),
            Ok(r) => match self.versions.log_and_apply(vec![r.edit.clone()]) {
                Err(e) => Err(Error::from(e)),
                Ok(()) => {
                    if let Some(t) = st.tables.get_mut(&p.table) {
                        t.stats
                            .record_compaction(p.compaction.output_level, &r.stats);
                    }
                    Counters::add(&self.counters.compaction_write_bytes, r.stats.bytes_written);
                    self.counters.record_iter_stats(&r.iter_stats);
                    if let Some(t) = st.tables.get(&p.table) {
                        Counters::add(
                            &t.state.counters.compaction_write_bytes,
                            r.stats.bytes_written,
                        );
                    }
                    Counters::add(&self.counters.compaction_read_bytes, r.stats.bytes_read());
                    self.install(&mut st, p.table);
                    info.output_files = r.edit.new_files.iter().map(|(_, f)| f.number).collect();
                    info.bytes_read = r.stats.bytes_read();
                    info.bytes_written = r.stats.bytes_written;
                    Ok(())
                }
            },
        };
        if let Err(e) = r {
            let shared = self.set_bg_error(&mut st, e);
            return Err(ReadOnlySnafu { cause: shared }.build());
        }
        drop(st);
        // Listeners hear of the compaction before its waiters wake.
        info.micros = started.elapsed().as_micros() as u64;
        self.events.compaction_completed(&info);
        self.notify_installed();
        Ok(())
    }

    /// RocksDB's `CompactRange`: flushes, then compacts `[begin, end]` level
    /// by level down to the last level on the caller's thread, waiting for
    /// conflicting background compactions. Returns when done.
    pub(crate) fn compact_range(
        &self,
        table: TableId,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
        options: &CompactRangeOptions,
    ) -> Result<()> {
        self.check_writable()?;
        self.flush_table(table)?;
        let mut manual = ManualCompaction::new(
            begin.map(<[u8]>::to_vec),
            end.map(<[u8]>::to_vec),
            options.clone(),
            self.versions.next_file_number(),
        );
        let exclusive = options.exclusive_manual_compaction;
        let mut st = self.lock_state();
        if exclusive {
            st.exclusive_manual += 1;
            // Wait for running compactions to finish.
            while st.running_compactions > 0 && st.bg_error.is_none() && !st.shutting_down {
                st = self.done_cv.wait(st);
            }
        }
        let result = self.manual_loop(st, table, &mut manual);
        if exclusive {
            self.lock_state().exclusive_manual -= 1;
            self.wake_background();
        }
        // Space back before returning, as RocksDB's manual compaction
        // deletes its obsolete inputs before it returns: only what
        // something still holds stays, and the event says what.
        if let Some((held, by)) = self.purge_obsolete_files() {
            let bytes: u64 = held
                .iter()
                .filter_map(|&n| {
                    let path = self.dir.join(lithify_version::filename::table_file_name(n));
                    self.fs.file_size(&path).ok()
                })
                .sum();
            self.events.emit(
                crate::events::Level::Info,
                "obsolete_files_held",
                format_args!(
                    "compact_range returned with {} obsolete table file(s), {bytes} bytes, not deleted yet: {}",
                    held.len(),
                    by.describe()
                ),
            );
        }
        if self.options.release_memory_after_jobs {
            crate::heap::release_free_memory();
        }
        result
    }

    /// A major compaction of all of `table` (what a scheduled major runs):
    /// everything above the bottom merged down, then the bottom level
    /// rewritten (`BottommostLevelCompaction::ForceOptimized`), which drops
    /// what deletes and snapshots no longer need. Runs on the calling
    /// thread; memtables are not flushed first.
    pub(crate) fn major_compact(&self, table: TableId) -> Result<()> {
        let mut manual = ManualCompaction::new(
            None,
            None,
            CompactRangeOptions {
                bottommost_level_compaction:
                    lithify_compaction::BottommostLevelCompaction::ForceOptimized,
                ..CompactRangeOptions::default()
            },
            self.versions.next_file_number(),
        );
        let st = self.lock_state();
        self.manual_loop(st, table, &mut manual)
    }

    fn manual_loop<'a>(
        &'a self,
        mut st: lithify_base::sync::MutexGuard<'a, DbState>,
        table: TableId,
        manual: &mut ManualCompaction,
    ) -> Result<()> {
        loop {
            if let Some(cause) = &st.bg_error {
                return ReadOnlySnafu {
                    cause: StdArc::clone(cause),
                }
                .fail();
            }
            if st.shutting_down {
                return ShuttingDownSnafu.fail();
            }
            let Some(t) = st.tables.get(&table) else {
                return Ok(());
            };
            let step = {
                let ctx = self.pick_context(t);
                manual.next(&*t.picker, &t.version, &ctx)
            };
            match step {
                Err(e) if e.is_conflict() => {
                    // A background compaction holds some input: wait for
                    // it, then ask again.
                    st = self.done_cv.wait(st);
                }
                Err(e) => return Err(CompactionSnafu.into_error(e)),
                Ok(ManualStep::Done) => return Ok(()),
                Ok(ManualStep::Refit(edit)) => {
                    if let Err(e) = self.versions.log_and_apply(vec![edit]) {
                        let shared = self.set_bg_error(&mut st, e.into());
                        return ReadOnlySnafu { cause: shared }.fail();
                    }
                    self.install(&mut st, table);
                }
                Ok(ManualStep::Compact(c)) => {
                    let Some(t) = st.tables.get_mut(&table) else {
                        return Ok(());
                    };
                    let id = t.compactions.register(&c, &t.state.icmp);
                    st.running_manual += 1;
                    drop(st);
                    let r = self.run_compaction(PickedCompaction {
                        table,
                        compaction: c,
                        id,
                    });
                    // Each step's inputs go as soon as it is installed, so a
                    // long manual compaction never holds twice its data.
                    self.purge_obsolete_files();
                    st = self.lock_state();
                    st.running_manual -= 1;
                    r?;
                }
            }
        }
    }

    /// Each level's compaction score, and its files being compacted.
    pub(crate) fn level_scores(&self, t: &TableMut) -> (Vec<f64>, Vec<usize>) {
        let ctx = self.pick_context(t);
        let scores = t
            .picker
            .level_scores(&t.version, &ctx)
            .into_iter()
            .map(|s| s.score)
            .collect();
        let being = (0..t.version.num_levels())
            .map(|l| {
                t.version
                    .files(l)
                    .iter()
                    .filter(|f| t.compactions.is_being_compacted(f.number))
                    .count()
            })
            .collect();
        (scores, being)
    }
}

use snafu::IntoError as _;
