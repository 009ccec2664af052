//! Statistics: RocksDB's "Compaction Stats" table per table, cumulative
//! write / read / space amplification, stall counters — as a struct
//! ([`DbStats`]) and as text (`db.property("lithify.stats")`).

use std::fmt::{self, Write as _};
use std::time::Duration;

use crate::recovery::RecoveryReport;
use lithify_base::sync::atomic::{AtomicU64, Ordering};
use lithify_base::{InternalKeyComparator, key::user_key};
pub use lithify_compaction::LevelStats;
use lithify_compaction::iter::IterStats;
use lithify_compaction::{CompactionStatsTable, LevelShape, human_size, write_table};
use lithify_compaction_strategy::cost_model::Prediction;
use lithify_sstable::CacheStats;
use lithify_version::Version;

/// Database-wide counters, updated with relaxed atomics.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) write_batches: AtomicU64,
    pub(crate) write_groups: AtomicU64,
    pub(crate) keys_written: AtomicU64,
    pub(crate) user_bytes: AtomicU64,
    pub(crate) wal_bytes: AtomicU64,
    pub(crate) wal_syncs: AtomicU64,
    pub(crate) flush_bytes: AtomicU64,
    pub(crate) compaction_write_bytes: AtomicU64,
    pub(crate) compaction_read_bytes: AtomicU64,
    pub(crate) remote_compactions: AtomicU64,
    pub(crate) remote_compaction_fallbacks: AtomicU64,
    /// `flush_bytes + compaction_write_bytes` when background jobs last
    /// gave free memory back (`heap::release_after_job`).
    pub(crate) released_at_job_bytes: AtomicU64,
    pub(crate) gets: AtomicU64,
    pub(crate) get_tables_probed: AtomicU64,
    pub(crate) get_blocks: AtomicU64,
    pub(crate) get_blocks_from_file: AtomicU64,
    pub(crate) get_filter_negatives: AtomicU64,
    pub(crate) get_blob_reads: AtomicU64,
    pub(crate) stall_delayed_writes: AtomicU64,
    pub(crate) stall_delayed_micros: AtomicU64,
    pub(crate) stall_stopped_writes: AtomicU64,
    pub(crate) stall_stopped_micros: AtomicU64,
    pub(crate) stall_memtable_limit: AtomicU64,
    pub(crate) stall_l0_files: AtomicU64,
    pub(crate) stall_pending_bytes: AtomicU64,
    pub(crate) full_merges: AtomicU64,
    pub(crate) partial_merges: AtomicU64,
    pub(crate) merge_failures_kept: AtomicU64,
    pub(crate) single_deletes_cancelled: AtomicU64,
    pub(crate) single_delete_mismatches: AtomicU64,
}

impl Counters {
    #[inline]
    pub(crate) fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::Relaxed)
    }

    /// Counts what a flush or compaction merged and cancelled.
    pub(crate) fn record_iter_stats(&self, s: &IterStats) {
        Self::add(&self.full_merges, s.full_merges);
        Self::add(&self.partial_merges, s.partial_merges);
        Self::add(&self.merge_failures_kept, s.merge_failures_kept);
        Self::add(&self.single_deletes_cancelled, s.dropped_single_delete / 2);
        Self::add(&self.single_delete_mismatches, s.single_delete_mismatch);
    }
}

/// What the engine did with merge operands and single deletes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergeStats {
    /// Point lookups and cursor positions whose value was merged from
    /// operands.
    pub reads_merged: u64,
    /// Operand runs flushes and compactions merged into values.
    pub full_merges: u64,
    /// Operand runs flushes and compactions combined into one operand.
    pub partial_merges: u64,
    /// Keys whose merge failed in a flush or compaction and were written
    /// out unmerged (the operator's failure scope is `MustMerge`); reads of
    /// those keys fail until the operands can be merged.
    pub merge_failures_kept: u64,
    /// Single deletes that vanished with their put in a flush or
    /// compaction.
    pub single_deletes_cancelled: u64,
    /// Single deletes used outside their contract (over another single
    /// delete, a delete, a merge operand, or a key put twice), as RocksDB's
    /// `num_single_del_mismatch` counts them.
    pub single_delete_mismatches: u64,
}

/// The statistics of one table.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableStats {
    /// The table's name.
    pub name: String,
    /// One row per level that has files or history.
    pub levels: Vec<LevelStats>,
    /// The `Sum` row.
    pub sum: LevelStats,
    /// Bytes of tables written by flushes (blob files: `blob_write_bytes`).
    pub flush_bytes: u64,
    /// RocksDB's estimate of the bytes compaction still has to rewrite.
    pub pending_compaction_bytes: u64,
    /// Bytes of all SST files.
    pub sst_bytes: u64,
    /// Estimated live data: non-overlapping files from the bottom up
    /// (RocksDB's `EstimateLiveDataSize`), blob indexes counted as the
    /// bytes they take in the SSTs.
    pub live_bytes: u64,
    /// Live blob files (key-value separation; RocksDB's
    /// `rocksdb.num-blob-files`).
    pub blob_files: usize,
    /// Their bytes on disk (`rocksdb.live-blob-file-size`).
    pub blob_file_bytes: u64,
    /// Stored value bytes in them that no SST refers to any more
    /// (`rocksdb.live-blob-file-garbage-size`): what blob garbage
    /// collection can reclaim.
    pub blob_garbage_bytes: u64,
    /// Immutable memtables not yet flushed.
    pub immutable_memtables: usize,
    /// Bytes of the memtables.
    pub memtable_bytes: usize,
    /// The compaction strategy in force.
    pub strategy: String,
    /// Why it is in force (`Adaptive`: the workload figures of its choice).
    pub strategy_reason: String,
    /// Strategy switches so far (live switches and `Adaptive` choices).
    pub strategy_switches: u64,
    /// `Adaptive`'s cost model on the strategy in force, for the last
    /// window's mix (none for fixed strategies and before a full window).
    pub predicted: Option<Prediction>,
    /// Its predicted CPU µs per operation.
    pub predicted_cpu_us: Option<f64>,
    /// Records written to the table.
    pub keys_written: u64,
    /// Key and value bytes written to the table.
    pub user_bytes: u64,
    /// Bytes of tables written by the table's compactions.
    pub compaction_write_bytes: u64,
    /// Bytes flushes and compactions wrote to blob files (key-value
    /// separation; not in `flush_bytes` and `compaction_write_bytes`).
    pub blob_write_bytes: u64,
    /// `(WAL share + flush_bytes + compaction_write_bytes +
    /// blob_write_bytes) / user_bytes`, the WAL's bytes shared out by user
    /// bytes.
    pub write_amp: f64,
    /// Point lookups of the table.
    pub gets: u64,
    /// Tables probed per lookup.
    pub read_amp_tables: f64,
    /// Data blocks read per lookup.
    pub read_amp_blocks: f64,
    /// Tables the lookups probed (`read_amp_tables` × `gets`).
    pub get_tables_probed: u64,
    /// Data blocks the lookups read, from the cache or the file.
    pub get_blocks_read: u64,
    /// Iterators opened on the table.
    pub scans: u64,
    /// Sorted runs of SST files those iterators merged (each L0 file,
    /// each level below, holding keys within the iterator's bounds): what
    /// a scan seeks.
    pub scan_sorted_runs: u64,
    /// SST files flushes and compactions wrote (trivial moves write none).
    pub files_written: u64,
    /// `sst_bytes / live_bytes`.
    pub space_amp: f64,
}

/// Write-stall counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StallStats {
    /// Write groups slowed down.
    pub delayed_writes: u64,
    /// Time spent sleeping in slowdowns.
    pub delayed_time: Duration,
    /// Write groups that waited for a stop to clear.
    pub stopped_writes: u64,
    /// Time spent stopped.
    pub stopped_time: Duration,
    /// Stalls caused by the memtable limit.
    pub memtable_limit: u64,
    /// Stalls caused by the L0 file count.
    pub l0_file_count: u64,
    /// Stalls caused by pending compaction bytes.
    pub pending_compaction_bytes: u64,
}

/// Everything the engine measures about itself, machine-readable.
/// [`Display`](fmt::Display) prints it as `db.property("lithify.stats")`
/// does.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DbStats {
    /// Seconds since the database was opened.
    pub uptime_secs: f64,
    /// Write batches committed.
    pub write_batches: u64,
    /// Write groups (WAL records) committed.
    pub write_groups: u64,
    /// Records (puts, deletes, range deletes) written.
    pub keys_written: u64,
    /// Key and value bytes written by users.
    pub user_bytes: u64,
    /// Bytes appended to WALs.
    pub wal_bytes: u64,
    /// WAL syncs.
    pub wal_syncs: u64,
    /// Bytes of tables and blob files written by flushes.
    pub flush_bytes: u64,
    /// Bytes of tables and blob files written by compactions.
    pub compaction_write_bytes: u64,
    /// Bytes of tables read by compactions.
    pub compaction_read_bytes: u64,
    /// Compactions a [`CompactionService`](crate::CompactionService) ran
    /// and this database installed.
    pub remote_compactions: u64,
    /// Compactions handed to the service that this database ran itself
    /// instead (the service declined or failed, or its result was refused).
    pub remote_compaction_fallbacks: u64,
    /// `(wal_bytes + flush_bytes + compaction_write_bytes) / user_bytes`.
    pub write_amp: f64,
    /// Point lookups served.
    pub gets: u64,
    /// SST files probed by those lookups (filter checks included).
    pub get_tables_probed: u64,
    /// Data blocks read by those lookups (cache or file).
    pub get_blocks_read: u64,
    /// Data blocks read from files by those lookups.
    pub get_blocks_from_file: u64,
    /// Lookups the bloom filter answered.
    pub get_filter_negatives: u64,
    /// Values lookups read through blob indexes (from a blob file or the
    /// cache).
    pub get_blob_reads: u64,
    /// Merge operands on the read and compaction paths.
    pub merges: MergeStats,
    /// Tables probed per lookup.
    pub read_amp_tables: f64,
    /// Data blocks read per lookup.
    pub read_amp_blocks: f64,
    /// Bytes of SST files.
    pub sst_bytes: u64,
    /// Live blob files of every table.
    pub blob_files: usize,
    /// Their bytes on disk.
    pub blob_file_bytes: u64,
    /// Stored value bytes in them that are garbage.
    pub blob_garbage_bytes: u64,
    /// Bytes of WAL files alive.
    pub wal_file_bytes: u64,
    /// Estimated live bytes (see [`TableStats::live_bytes`]).
    pub live_bytes: u64,
    /// `(sst_bytes + blob_file_bytes + wal_file_bytes) / (live_bytes +
    /// blob_file_bytes - blob_garbage_bytes)`.
    pub space_amp: f64,
    /// Stall counters.
    pub stalls: StallStats,
    /// The block cache's counters.
    pub block_cache: Option<CacheStats>,
    /// The blob cache's counters, when it is a cache of its own
    /// ([`Options::blob_cache`](crate::Options::blob_cache); a blob cache
    /// shared with the block cache counts in `block_cache`).
    pub blob_cache: Option<CacheStats>,
    /// Bytes compactions wrote through the rate limiter (0 without one).
    pub rate_limited_bytes: u64,
    /// Time compactions waited for the rate limiter.
    pub rate_limit_wait: Duration,
    /// Per-table statistics.
    pub tables: Vec<TableStats>,
    /// Live snapshots.
    pub snapshots: usize,
    /// Whether a background error made the database read-only.
    pub read_only: bool,
    /// Whether the database was opened with `Db::open_read_only`.
    pub opened_read_only: bool,
    /// What the open recovered and dropped.
    pub recovery: RecoveryReport,
    /// Files earlier recoveries kept in `lost/` (names).
    pub lost_files: Vec<String>,
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

impl DbStats {
    pub(crate) fn finish(&mut self) {
        let total_user: u64 = self.tables.iter().map(|t| t.user_bytes).sum();
        for t in &mut self.tables {
            let wal_share = if total_user == 0 {
                0
            } else {
                (self.wal_bytes as u128 * t.user_bytes as u128 / total_user as u128) as u64
            };
            t.write_amp = ratio(
                wal_share + t.flush_bytes + t.compaction_write_bytes + t.blob_write_bytes,
                t.user_bytes,
            );
            t.space_amp = ratio(
                t.sst_bytes + t.blob_file_bytes,
                t.live_bytes + t.blob_file_bytes.saturating_sub(t.blob_garbage_bytes),
            );
        }
        self.write_amp = ratio(
            self.wal_bytes + self.flush_bytes + self.compaction_write_bytes,
            self.user_bytes,
        );
        self.read_amp_tables = ratio(self.get_tables_probed, self.gets);
        self.read_amp_blocks = ratio(self.get_blocks_read, self.gets);
        self.sst_bytes = self.tables.iter().map(|t| t.sst_bytes).sum();
        self.live_bytes = self.tables.iter().map(|t| t.live_bytes).sum();
        self.blob_files = self.tables.iter().map(|t| t.blob_files).sum();
        self.blob_file_bytes = self.tables.iter().map(|t| t.blob_file_bytes).sum();
        self.blob_garbage_bytes = self.tables.iter().map(|t| t.blob_garbage_bytes).sum();
        self.space_amp = ratio(
            self.sst_bytes + self.blob_file_bytes + self.wal_file_bytes,
            self.live_bytes + self.blob_file_bytes.saturating_sub(self.blob_garbage_bytes),
        );
    }
}

/// Builds the rows of a table from its version and counters.
pub(crate) fn table_rows(
    version: &Version,
    counters: &CompactionStatsTable,
    scores: &[f64],
    being_compacted: &[usize],
) -> (Vec<LevelStats>, LevelStats) {
    let shapes: Vec<LevelShape> = (0..version.num_levels())
        .map(|level| LevelShape {
            files: version.num_files(level),
            files_being_compacted: being_compacted.get(level).copied().unwrap_or(0),
            bytes: version.level_bytes(level),
            score: scores.get(level).copied().unwrap_or(0.0),
        })
        .collect();
    counters.rows(&shapes)
}

/// RocksDB's `EstimateLiveDataSize`: scanning from the bottom level up,
/// a file counts if its range overlaps no file counted before.
pub(crate) fn estimate_live_bytes(version: &Version) -> u64 {
    let icmp: &InternalKeyComparator = version.comparator();
    // Counted ranges, sorted by smallest user key, disjoint.
    let mut ranges: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut total = 0;
    for level in (0..version.num_levels()).rev() {
        for f in version.files(level) {
            let (lo, hi) = (
                user_key(f.smallest.encoded()),
                user_key(f.largest.encoded()),
            );
            let i = ranges.partition_point(|r| icmp.compare_user(&r.1, lo).is_lt());
            let overlaps = ranges
                .get(i)
                .is_some_and(|r| icmp.compare_user(&r.0, hi).is_le());
            if !overlaps {
                total += f.size;
                ranges.insert(i, (lo.to_vec(), hi.to_vec()));
            }
        }
    }
    total
}

const GB: f64 = (1u64 << 30) as f64;

impl fmt::Display for DbStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        for t in &self.tables {
            write_table(&mut out, &t.name, &t.levels, &t.sum);
            writeln!(
                out,
                "Flush(GB): cumulative {:.3}; memtables: {} immutable, {} bytes",
                t.flush_bytes as f64 / GB,
                t.immutable_memtables,
                t.memtable_bytes
            )?;
            writeln!(
                out,
                "Estimated pending compaction bytes: {}; SST files {} ({}), estimated live data {}",
                t.pending_compaction_bytes,
                human_size(t.sst_bytes),
                t.sst_bytes,
                human_size(t.live_bytes)
            )?;
            if t.blob_files > 0 {
                writeln!(
                    out,
                    "Blob files: {}, {} on disk, {} garbage",
                    t.blob_files,
                    human_size(t.blob_file_bytes),
                    human_size(t.blob_garbage_bytes)
                )?;
            }
            writeln!(
                out,
                "Strategy: {} ({} switches) - {}",
                t.strategy, t.strategy_switches, t.strategy_reason
            )?;
            writeln!(
                out,
                "Amplification: write {:.2} ({} user bytes), read {:.2} tables and {:.2} blocks per get ({} gets), space {:.2}",
                t.write_amp,
                human_size(t.user_bytes),
                t.read_amp_tables,
                t.read_amp_blocks,
                t.gets,
                t.space_amp
            )?;
            if let Some(p) = &t.predicted {
                let tables_wa = (t.flush_bytes + t.compaction_write_bytes + t.blob_write_bytes)
                    as f64
                    / t.user_bytes.max(1) as f64;
                writeln!(
                    out,
                    "Predicted by the cost model (measured): write {:.2} ({:.2} by flushes and compactions), read {:.2} ({:.2}) tables per get, space {:.2} ({:.2}), {:.1} sorted runs per scan, {:.2} CPU us/op",
                    p.write_amp,
                    tables_wa,
                    p.read_amp,
                    t.read_amp_tables,
                    p.space_amp,
                    t.space_amp,
                    p.sorted_runs,
                    t.predicted_cpu_us.unwrap_or(0.0)
                )?;
            }
            writeln!(out)?;
        }
        writeln!(out, "** DB Stats **")?;
        writeln!(out, "Uptime(secs): {:.1}", self.uptime_secs)?;
        writeln!(
            out,
            "Cumulative writes: {} batches, {} groups, {} keys, ingest: {:.3} GB",
            self.write_batches,
            self.write_groups,
            self.keys_written,
            self.user_bytes as f64 / GB
        )?;
        writeln!(
            out,
            "Cumulative WAL: {:.3} GB written, {} syncs",
            self.wal_bytes as f64 / GB,
            self.wal_syncs
        )?;
        writeln!(
            out,
            "Cumulative compaction: {:.3} GB write, {:.3} GB read; flush {:.3} GB",
            self.compaction_write_bytes as f64 / GB,
            self.compaction_read_bytes as f64 / GB,
            self.flush_bytes as f64 / GB
        )?;
        if self.remote_compactions + self.remote_compaction_fallbacks > 0 {
            writeln!(
                out,
                "Remote compactions: {} installed, {} run here instead",
                self.remote_compactions, self.remote_compaction_fallbacks
            )?;
        }
        writeln!(
            out,
            "Write amplification: {:.2} ((WAL {} + flush {} + compaction {}) / user {})",
            self.write_amp,
            human_size(self.wal_bytes),
            human_size(self.flush_bytes),
            human_size(self.compaction_write_bytes),
            human_size(self.user_bytes)
        )?;
        writeln!(
            out,
            "Read amplification: {:.2} tables probed and {:.2} data blocks read per get ({} gets, {} blocks from files, {} filter negatives)",
            self.read_amp_tables,
            self.read_amp_blocks,
            self.gets,
            self.get_blocks_from_file,
            self.get_filter_negatives
        )?;
        writeln!(
            out,
            "Space amplification: {:.2} (tables {} + blob files {} + WAL {} on disk / {} live)",
            self.space_amp,
            human_size(self.sst_bytes),
            human_size(self.blob_file_bytes),
            human_size(self.wal_file_bytes),
            human_size(
                self.live_bytes + self.blob_file_bytes.saturating_sub(self.blob_garbage_bytes)
            )
        )?;
        if self.blob_files > 0 || self.get_blob_reads > 0 {
            writeln!(
                out,
                "Blob files: {}, {} on disk, {} garbage; {} blob reads by {} gets ({:.2} per get)",
                self.blob_files,
                human_size(self.blob_file_bytes),
                human_size(self.blob_garbage_bytes),
                self.get_blob_reads,
                self.gets,
                ratio(self.get_blob_reads, self.gets)
            )?;
        }
        let s = &self.stalls;
        writeln!(
            out,
            "Stalls: {} delayed writes ({:.3} s), {} stopped writes ({:.3} s); causes: memtable-limit {}, l0-file-count-limit {}, pending-compaction-bytes {}",
            s.delayed_writes,
            s.delayed_time.as_secs_f64(),
            s.stopped_writes,
            s.stopped_time.as_secs_f64(),
            s.memtable_limit,
            s.l0_file_count,
            s.pending_compaction_bytes
        )?;
        if self.rate_limited_bytes > 0 {
            writeln!(
                out,
                "Compaction rate limiter: {} through, {:.3} s waited",
                human_size(self.rate_limited_bytes),
                self.rate_limit_wait.as_secs_f64()
            )?;
        }
        for (name, cache) in [("Block", &self.block_cache), ("Blob", &self.blob_cache)] {
            if let Some(c) = cache {
                writeln!(
                    out,
                    "{name} cache: {} hits, {} misses, {} of {} used",
                    c.hits,
                    c.misses,
                    human_size(c.usage as u64),
                    human_size(c.capacity as u64)
                )?;
            }
        }
        writeln!(
            out,
            "Snapshots: {}; read-only: {}{}",
            self.snapshots,
            self.read_only,
            if self.opened_read_only {
                " (opened read-only)"
            } else {
                ""
            }
        )?;
        writeln!(out, "Recovery: {}", self.recovery)?;
        for d in &self.recovery.dropped {
            writeln!(out, "  {d}")?;
        }
        if !self.lost_files.is_empty() {
            writeln!(
                out,
                "Kept in {}/ by recoveries: {}",
                crate::recovery::LOST_DIR,
                self.lost_files.join(", ")
            )?;
        }
        f.write_str(&out)
    }
}

#[cfg(test)]
mod tests {
    use lithify_compaction::CompactionStats;

    use super::*;

    #[test]
    fn live_bytes_counts_non_overlapping_files_bottom_up() {
        let v = Version::from_text(
            "
L0:
  000009:[a#20,SET-z#21,SET] size=100
L1:
  000005:[c#10,SET-d#10,SET] size=10
  000006:[m#10,SET-n#10,SET] size=20
L2:
  000002:[a#1,SET-e#1,SET] size=1000
",
        )
        .unwrap();
        // L2 counts; L1 file 5 overlaps it, file 6 does not; L0 overlaps.
        assert_eq!(estimate_live_bytes(&v), 1020);
    }

    #[test]
    fn rows_and_sum_write_amp() {
        let v = Version::from_text(
            "
L0:
  000009:[a#20,SET-z#21,SET] size=100
L1:
  000005:[c#10,SET-d#10,SET] size=300
",
        )
        .unwrap();
        let mut c = CompactionStatsTable::new(7);
        c.record_flush(&CompactionStats {
            bytes_written: 200,
            count: 2,
            micros: 2_000_000,
            ..Default::default()
        });
        c.record_compaction(
            1,
            &CompactionStats {
                bytes_read_non_output_levels: 100,
                bytes_written: 300,
                count: 1,
                num_input_records: 10,
                num_dropped_records: 2,
                ..Default::default()
            },
        );
        let (rows, sum) = table_rows(&v, &c, &[0.25, 0.1], &[0, 0]);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].write_amp, 1.0);
        assert_eq!(rows[1].write_amp, 3.0);
        assert_eq!(sum.write_bytes, 500);
        assert_eq!(sum.write_amp, 2.5);
        let stats = DbStats {
            tables: vec![TableStats {
                name: "default".into(),
                levels: rows,
                sum,
                ..Default::default()
            }],
            ..Default::default()
        };
        let text = stats.to_string();
        assert!(text.starts_with("** Compaction Stats [default] **\nLevel  Files"));
        assert!(text.contains("\n   L1    1/0      300 B    0.1"), "{text}");
        assert!(text.contains("\n  Sum "));
    }
}
