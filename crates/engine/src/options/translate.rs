//! Options translated for the crates below the engine: one place turns
//! the database's [`Options`] (and a table's effective ones) into the SST,
//! version-set, memtable, picker, strategy (`Adaptive`'s), job and
//! rate-limiter options.

use std::sync::Arc as StdArc;

use lithify_base::InternalKeyComparator;
use lithify_compaction::CompactionPicker;
use lithify_compaction::job::JobOptions;
use lithify_compaction_leveled::LeveledOptions;
use lithify_compaction_strategy::CompactionStrategy;
use lithify_compaction_strategy::adaptive::AdaptiveOptions;
use lithify_memtable::MemTableOptions;
use lithify_sstable::SstOptions;
use lithify_version::VersionSetOptions;
use snafu::IntoError as _;

use super::Options;
use crate::error::{CompactionSnafu, Result};
use crate::resource::{DailyTime, OffpeakWindow, RateLimiter, RateLimiterOptions};

/// The output side of a table's key-value separation.
pub(crate) fn blob_settings<'a>(
    o: &crate::BlobOptions,
    table: lithify_version::TableId,
    relocate_below: u64,
    fetcher: &'a dyn lithify_compaction::iter::BlobFetcher,
) -> lithify_compaction::BlobSettings<'a> {
    lithify_compaction::BlobSettings {
        enable_blob_files: o.enable_blob_files,
        min_blob_size: o.min_blob_size,
        blob_file_size: o.blob_file_size,
        compression: o.blob_compression,
        table_id: table,
        relocate_below,
        fetcher: Some(fetcher),
        readahead_size: o.blob_compaction_readahead_size,
    }
}

pub(crate) fn sst_options(o: &Options) -> SstOptions<InternalKeyComparator> {
    let mut t = SstOptions::for_internal_keys(InternalKeyComparator::new(o.comparator.clone()));
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

/// The version set's options of `o`.
pub(crate) fn version_set_options(o: &Options) -> VersionSetOptions {
    VersionSetOptions::default()
        .num_levels(o.num_levels)
        .max_manifest_file_size(o.max_manifest_file_size)
        .comparators(vec![o.comparator.clone()])
}

/// The leveled picker's options from the database options.
pub(crate) fn leveled_options(o: &Options) -> LeveledOptions {
    LeveledOptions::default()
        .num_levels(o.num_levels)
        .level0_file_num_compaction_trigger(o.level0_file_num_compaction_trigger)
        .max_bytes_for_level_base(o.max_bytes_for_level_base)
        .max_bytes_for_level_multiplier(o.max_bytes_for_level_multiplier)
        .max_bytes_for_level_multiplier_additional(Vec::new())
        .level_compaction_dynamic_level_bytes(o.level_compaction_dynamic_level_bytes)
        .target_file_size_base(o.target_file_size_base)
        .target_file_size_multiplier(u64::from(o.target_file_size_multiplier))
        .max_compaction_bytes(o.max_compaction_bytes)
        .compaction_pri(o.compaction_pri)
        .ttl(o.ttl)
        .periodic_compaction_seconds(o.effective_periodic_compaction_seconds())
        .max_subcompactions(o.max_subcompactions)
        .disable_auto_compactions(o.disable_auto_compactions)
        .compression(o.compression)
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
        CompactionStrategy::MajorOnly(m) => CompactionStrategy::MajorOnly(
            m.clone()
                .compression(o.compression)
                .max_subcompactions(o.max_subcompactions),
        ),
        CompactionStrategy::TwoTier(t) => CompactionStrategy::TwoTier(
            t.clone()
                .compression(o.compression)
                .max_subcompactions(o.max_subcompactions),
        ),
        CompactionStrategy::Adaptive(a) => return picker_for(&a.initial, o),
    };
    fixed.picker().map_err(|e| CompactionSnafu.into_error(e))
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

/// The job options of a table's flushes and compactions: its merge
/// operator and single-delete rule, and the time by its clock (the
/// outputs' creation time).
pub(crate) fn job_options(table_options: &Options) -> JobOptions {
    JobOptions::default()
        .now(Some(table_options.clock.now_secs()))
        .merge_operator(table_options.merge_operator.clone())
        .enforce_single_delete_contracts(table_options.enforce_single_delete_contracts)
}

/// A compaction job's options: the table's, with the database's file
/// order (`compaction_pri`) and the database's one rate limiter.
pub(crate) fn compaction_job_options(
    db_options: &Options,
    table_options: &Options,
    rate_limiter: Option<&StdArc<RateLimiter>>,
) -> JobOptions {
    job_options(table_options)
        .compaction_pri(db_options.compaction_pri)
        .rate_limiter(
            rate_limiter
                .map(|r| StdArc::clone(r) as StdArc<dyn lithify_compaction::WriteRateLimiter>),
        )
}

/// A memtable's options: the arena block size, and the whole-key filter
/// when `memtable_whole_key_filtering` is on, ten bits per key for keys of
/// 64 bytes of memtable (RocksDB's `memtable_prefix_bloom_size_ratio` of
/// about 0.02).
pub(crate) fn memtable_options(o: &Options) -> MemTableOptions {
    MemTableOptions::default()
        .arena_block_size(o.arena_block_size.max(1024))
        .whole_key_filter_bits(if o.memtable_whole_key_filtering {
            o.write_buffer_size as u64 * 10 / 64
        } else {
            0
        })
}

/// `Adaptive`'s options for a table: as configured, with the table's own
/// leveled shape as the leveled candidate.
pub(crate) fn adaptive_options(adaptive: &AdaptiveOptions, o: &Options) -> AdaptiveOptions {
    adaptive.clone().leveled(leveled_options(o))
}
