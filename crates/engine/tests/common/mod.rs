//! Helpers shared by the engine's integration tests.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

use lithify_engine::{
    AdaptiveOptions, CompactionStrategy, Db, MajorOnlyOptions, Options, ReadOptions, TwoTierOptions,
};
use lithify_vfs::FileSystem;

/// Small sizes so that tests reach flushes, several levels and
/// compactions with little data.
pub(crate) fn small_options(fs: Arc<dyn FileSystem>) -> Options {
    Options::default()
        .fs(fs)
        .write_buffer_size(64 << 10)
        .max_write_buffer_number(3)
        .level0_file_num_compaction_trigger(2)
        .level0_slowdown_writes_trigger(8)
        .level0_stop_writes_trigger(12)
        .max_bytes_for_level_base(16 << 10)
        .max_bytes_for_level_multiplier(4.0)
        .target_file_size_base(8 << 10)
        .block_size(512)
        .block_cache_size(1 << 20)
        .num_levels(5)
}

pub(crate) type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Every `(key, value)` of the database, forward.
pub(crate) fn scan(db: &Db, opts: &ReadOptions) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.iter_opt(opts)
        .map(|kv| {
            let (k, v) = kv.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect()
}

/// Every `(key, value)` of the database, backward.
pub(crate) fn scan_rev(db: &Db, opts: &ReadOptions) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.iter_opt(opts)
        .rev()
        .map(|kv| {
            let (k, v) = kv.unwrap();
            (k.to_vec(), v.to_vec())
        })
        .collect()
}

pub(crate) fn model_pairs(m: &Model) -> Vec<(Vec<u8>, Vec<u8>)> {
    m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

pub(crate) fn model_range(
    m: &Model,
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    m.range((lo, hi))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Removes `[start, end)` from the model.
pub(crate) fn model_delete_range(m: &mut Model, start: &[u8], end: &[u8]) {
    if start >= end {
        return;
    }
    let doomed: Vec<Vec<u8>> = m
        .range(start.to_vec()..end.to_vec())
        .map(|(k, _)| k.clone())
        .collect();
    for k in doomed {
        m.remove(&k);
    }
}

/// Asserts that the whole database equals the model, both directions.
pub(crate) fn assert_equal(db: &Db, m: &Model, what: &str) {
    let fwd = scan(db, &ReadOptions::default());
    assert_eq!(fwd, model_pairs(m), "forward scan differs ({what})");
    let mut rev = scan_rev(db, &ReadOptions::default());
    rev.reverse();
    assert_eq!(rev, model_pairs(m), "backward scan differs ({what})");
}

pub(crate) fn open(dir: &Path, opts: &Options) -> Db {
    Db::open(dir, opts.clone()).unwrap()
}

/// The fixed compaction strategies with file sizes fit for tests:
/// `Leveled`, `MajorOnly` and the four `TwoTier` shapes of the choice
/// table.
pub(crate) fn fixed_strategies() -> Vec<CompactionStrategy> {
    let tt = |o: TwoTierOptions| CompactionStrategy::TwoTier(o.target_file_size(8 << 10));
    vec![
        CompactionStrategy::default(),
        CompactionStrategy::MajorOnly(MajorOnlyOptions::default().target_file_size(8 << 10)),
        tt(TwoTierOptions::write_only()),
        tt(TwoTierOptions::write_mostly()),
        tt(TwoTierOptions::read_mostly_few_updates()),
        tt(TwoTierOptions::read_mostly_many_updates()),
    ]
}

/// `Adaptive` deciding every `min_window_ops` operations, its candidate
/// shapes cutting 8 KiB files like [`small_options`]' leveled ones.
pub(crate) fn adaptive_options(min_window_ops: u64) -> AdaptiveOptions {
    AdaptiveOptions::default()
        .min_window_ops(min_window_ops)
        .two_tier(TwoTierOptions::default().target_file_size(8 << 10))
        .major_only(MajorOnlyOptions::default().target_file_size(8 << 10))
}

/// `Adaptive` with a window short enough that it chooses (and switches)
/// within a test's few hundred operations.
pub(crate) fn adaptive_strategy() -> CompactionStrategy {
    CompactionStrategy::Adaptive(adaptive_options(64).switch_after_windows(1))
}

/// Every strategy: the fixed ones, then `Adaptive`.
pub(crate) fn all_strategies() -> Vec<CompactionStrategy> {
    let mut all = fixed_strategies();
    all.push(adaptive_strategy());
    all
}

/// Proptest cases for one strategy: `PROPTEST_CASES` if set, else `default`.
pub(crate) fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(default)
}
