//! Named properties (RocksDB's `GetProperty`) and the statistics snapshot.

use std::time::Duration;

use lithify_base::sync::atomic::Ordering;

use crate::state::DbInner;
use crate::state::table::TableState;
use crate::stats::{
    Counters, DbStats, MergeStats, StallStats, TableStats, estimate_live_bytes, table_rows,
};

/// The property names [`property`] answers. `<N>` stands for a level
/// number, as in RocksDB's `rocksdb.num-files-at-level<N>`: ask for
/// `lithify.num-files-at-level0`.
pub(crate) const NAMES: &[&str] = &[
    "lithify.stats",
    "lithify.levelstats",
    "lithify.num-files-at-level<N>",
    "lithify.num-immutable-mem-table",
    "lithify.cur-size-active-mem-table",
    "lithify.cur-size-all-mem-tables",
    "lithify.estimate-pending-compaction-bytes",
    "lithify.total-sst-files-size",
    "lithify.estimate-live-data-size",
    "lithify.num-blob-files",
    "lithify.live-blob-file-size",
    "lithify.live-blob-file-garbage-size",
    "lithify.num-snapshots",
    "lithify.is-write-stopped",
    "lithify.actual-delayed-write-rate",
    "lithify.background-errors",
    "lithify.num-running-flushes",
    "lithify.num-running-compactions",
];

/// Property `name` of `table` (the table-wide ones, such as
/// `lithify.stats`, cover the whole database whichever table is asked).
pub(crate) fn property(inner: &DbInner, table: &TableState, name: &str) -> Option<String> {
    let rest = name.strip_prefix("lithify.")?;
    if let Some(level) = rest.strip_prefix("num-files-at-level") {
        let level: usize = level.parse().ok()?;
        let v = table.sv.get().version.clone();
        return (level < v.num_levels()).then(|| v.num_files(level).to_string());
    }
    let stats = || collect_stats(inner);
    let default = || {
        stats()
            .tables
            .into_iter()
            .find(|t| t.name == table.name)
            .unwrap_or_default()
    };
    Some(match rest {
        "stats" => stats().to_string(),
        "levelstats" => {
            let v = table.sv.get().version.clone();
            let mut out = String::from("Level Files Size(MB)\n--------------------\n");
            for l in 0..v.num_levels() {
                out.push_str(&format!(
                    "{l:>5} {:>5} {:>8.0}\n",
                    v.num_files(l),
                    v.level_bytes(l) as f64 / (1 << 20) as f64
                ));
            }
            out
        }
        "num-immutable-mem-table" => default().immutable_memtables.to_string(),
        "cur-size-active-mem-table" => table.sv.get().mem.approximate_memory_usage().to_string(),
        "cur-size-all-mem-tables" => default().memtable_bytes.to_string(),
        "estimate-pending-compaction-bytes" => default().pending_compaction_bytes.to_string(),
        "total-sst-files-size" => default().sst_bytes.to_string(),
        "estimate-live-data-size" => default().live_bytes.to_string(),
        "num-blob-files" => default().blob_files.to_string(),
        "live-blob-file-size" => default().blob_file_bytes.to_string(),
        "live-blob-file-garbage-size" => default().blob_garbage_bytes.to_string(),
        "num-snapshots" => inner.snapshots.count().to_string(),
        "is-write-stopped" => {
            let st = inner.lock_state();
            u8::from(st.controller().condition() == crate::StallCondition::Stopped).to_string()
        }
        "actual-delayed-write-rate" => {
            let st = inner.lock_state();
            if st.controller().condition() == crate::StallCondition::Delayed {
                st.controller().delayed_rate().to_string()
            } else {
                "0".to_owned()
            }
        }
        "background-errors" => u8::from(inner.read_only.load(Ordering::Acquire)).to_string(),
        "num-running-flushes" => inner.lock_state().running_flushes().to_string(),
        "num-running-compactions" => inner.lock_state().running_compactions().to_string(),
        _ => return None,
    })
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// Gathers every statistic into one struct.
pub(crate) fn collect_stats(db: &DbInner) -> DbStats {
    let c = &db.counters;
    let g = Counters::get;
    let mut tables = Vec::new();
    let mut reads_merged = 0;
    // The WALs this process writes count up to their last record, not
    // with their preallocated space; obsolete WALs kept for recycling
    // count whole. (The two locks are taken one after the other.)
    let live: Vec<u64> = db.lock_state().live_logs().iter().copied().collect();
    let (lens, recyclable): (Vec<Option<u64>>, Vec<u64>) = {
        let leader = db.leader.lock();
        (
            live.iter().map(|&n| leader.wal_len(n)).collect(),
            leader.recyclable.iter().copied().collect(),
        )
    };
    let file_size = |n: u64| db.fs.file_size(&crate::wal::log_path(&db.dir, n)).ok();
    let wal_file_bytes: u64 = live
        .iter()
        .zip(&lens)
        .filter_map(|(&n, len)| len.or_else(|| file_size(n)))
        .chain(recyclable.into_iter().filter_map(file_size))
        .sum();
    let read_only = {
        let st = db.lock_state();
        for (_, t) in st.tables() {
            reads_merged += t.state().merge.reads_merged();
            let version = t.version();
            let (scores, being) = crate::compaction::level_scores(db, t);
            let (levels, sum) = table_rows(version, t.stats(), &scores, &being);
            // Plain flushes (and recovery) are recorded at L0; flush
            // plans at their output level.
            let flush_bytes = t.stats().bytes_flushed() + g(&t.state().counters.flush_plan_bytes);
            let predicted = t.strategy().adaptive().and_then(|a| a.prediction());
            let blob_files = version.blob_files();
            tables.push(TableStats {
                name: t.state().name.clone(),
                blob_files: blob_files.len(),
                blob_file_bytes: blob_files.values().map(|b| b.meta.file_size).sum(),
                blob_garbage_bytes: blob_files.values().map(|b| b.garbage_bytes).sum(),
                levels,
                sum,
                flush_bytes,
                pending_compaction_bytes: t.pending_compaction_bytes(),
                sst_bytes: version.total_bytes(),
                live_bytes: estimate_live_bytes(version),
                immutable_memtables: t.imm().len(),
                memtable_bytes: std::iter::once(t.mem())
                    .chain(t.imm().iter().map(|i| i.mem()))
                    .map(|m| m.approximate_memory_usage() + m.filter_size())
                    .sum(),
                strategy: t.strategy().in_force().to_string(),
                strategy_reason: t.strategy().reason().to_owned(),
                strategy_switches: t.strategy().switches(),
                predicted: predicted.map(|s| s.prediction),
                predicted_cpu_us: predicted.map(|s| s.cpu_us),
                keys_written: g(&t.state().counters.keys_written),
                user_bytes: g(&t.state().counters.user_bytes),
                compaction_write_bytes: g(&t.state().counters.compaction_write_bytes),
                blob_write_bytes: g(&t.state().counters.blob_write_bytes),
                gets: g(&t.state().counters.gets),
                read_amp_tables: ratio(
                    g(&t.state().counters.get_tables_probed),
                    g(&t.state().counters.gets),
                ),
                read_amp_blocks: ratio(
                    g(&t.state().counters.get_blocks),
                    g(&t.state().counters.gets),
                ),
                get_tables_probed: g(&t.state().counters.get_tables_probed),
                get_blocks_read: g(&t.state().counters.get_blocks),
                scans: g(&t.state().counters.scans),
                scan_sorted_runs: g(&t.state().counters.scan_sorted_runs),
                files_written: t.stats().sum().num_output_files,
                ..TableStats::default()
            });
        }
        st.bg_error().is_some()
    };
    let mut s = DbStats {
        uptime_secs: db.opened_at.elapsed().as_secs_f64(),
        write_batches: g(&c.write_batches),
        write_groups: g(&c.write_groups),
        keys_written: g(&c.keys_written),
        user_bytes: g(&c.user_bytes),
        wal_bytes: g(&c.wal_bytes),
        wal_syncs: g(&c.wal_syncs),
        flush_bytes: g(&c.flush_bytes),
        compaction_write_bytes: g(&c.compaction_write_bytes),
        compaction_read_bytes: g(&c.compaction_read_bytes),
        remote_compactions: g(&c.remote_compactions),
        remote_compaction_fallbacks: g(&c.remote_compaction_fallbacks),
        gets: g(&c.gets),
        get_tables_probed: g(&c.get_tables_probed),
        get_blocks_read: g(&c.get_blocks),
        get_blocks_from_file: g(&c.get_blocks_from_file),
        get_filter_negatives: g(&c.get_filter_negatives),
        get_blob_reads: g(&c.get_blob_reads),
        merges: MergeStats {
            reads_merged,
            full_merges: g(&c.full_merges),
            partial_merges: g(&c.partial_merges),
            merge_failures_kept: g(&c.merge_failures_kept),
            single_deletes_cancelled: g(&c.single_deletes_cancelled),
            single_delete_mismatches: g(&c.single_delete_mismatches),
        },
        wal_file_bytes,
        stalls: StallStats {
            delayed_writes: g(&c.stall_delayed_writes),
            delayed_time: Duration::from_micros(g(&c.stall_delayed_micros)),
            stopped_writes: g(&c.stall_stopped_writes),
            stopped_time: Duration::from_micros(g(&c.stall_stopped_micros)),
            memtable_limit: g(&c.stall_memtable_limit),
            l0_file_count: g(&c.stall_l0_files),
            pending_compaction_bytes: g(&c.stall_pending_bytes),
        },
        block_cache: db.cache.as_ref().map(|c| c.stats()),
        blob_cache: db
            .options
            .blob_cache
            .as_ref()
            .filter(|b| {
                !db.cache
                    .as_ref()
                    .is_some_and(|c| std::sync::Arc::ptr_eq(b, c))
            })
            .map(|b| b.stats()),
        rate_limited_bytes: db.rate_limiter.as_ref().map_or(0, |r| r.total_bytes()),
        rate_limit_wait: Duration::from_micros(
            db.rate_limiter
                .as_ref()
                .map_or(0, |r| r.total_wait_micros()),
        ),
        tables,
        snapshots: db.snapshots.count(),
        read_only: read_only || db.opened_read_only,
        opened_read_only: db.opened_read_only,
        recovery: db.recovery.clone(),
        lost_files: lithify_vfs::lost::kept_files(&*db.fs, &db.dir),
        ..DbStats::default()
    };
    s.finish();
    s
}
