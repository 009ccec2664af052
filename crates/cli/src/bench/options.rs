//! Engine options on the command line, by their RocksDB (db_bench) names.
//!
//! Every flag is spelled both ways: `--write-buffer-size` and db_bench's
//! `--write_buffer_size`. A flag left out keeps the engine's default
//! (RocksDB's, see `lithify::Options`).

use std::sync::Arc;

use clap::Args;
use lithify::{
    AdaptiveLimits, AdaptiveObjective, BlockCache, CompactionPri, CompactionStrategy, Compression,
    CpuCosts, Options,
};

use crate::error::{Result, UsageSnafu};
use crate::numbers;

/// The engine options `bench` accepts.
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Engine options (RocksDB names)")]
pub(crate) struct EngineArgs {
    /// Bytes of a memtable before it is flushed (engine default 64 MiB).
    /// [range: 65536..=68719476736]
    #[arg(long,
          value_parser = numbers::rocksdb::<usize>("write_buffer_size", 65536, 64 << 30))]
    pub write_buffer_size: Option<usize>,
    /// Memtables (mutable + immutable) before writes stop (default 2).
    /// [range: 1..=256]
    #[arg(long,
          value_parser = numbers::rocksdb::<usize>("max_write_buffer_number", 1, 256))]
    pub max_write_buffer_number: Option<usize>,
    /// Immutable memtables merged into one flush (default 1). [range: 1..=256]
    #[arg(long,
          value_parser = numbers::rocksdb::<usize>("min_write_buffer_number_to_merge", 1, 256))]
    pub min_write_buffer_number_to_merge: Option<usize>,
    /// Block cache capacity in bytes (engine default 32 MiB; 0 disables it).
    /// [range: 0..=1099511627776]
    #[arg(long,
          value_parser = numbers::rocksdb::<usize>("cache_size", 0, 1 << 40))]
    pub cache_size: Option<usize>,
    /// Uncompressed data-block size (default 4096). [range: 1..=268435456]
    #[arg(long,
          value_parser = numbers::rocksdb::<usize>("block_size", 1, 256 << 20))]
    pub block_size: Option<usize>,
    /// Entries between restart points in data blocks (default 16).
    /// [range: 1..=65536]
    #[arg(long,
          value_parser = numbers::rocksdb::<usize>("block_restart_interval", 1, 65536))]
    pub block_restart_interval: Option<usize>,
    /// Bloom filter bits per key, 0 for none (default 10) [range: 0..=100].
    #[arg(long, value_parser = numbers::float(0.0, 100.0))]
    pub bloom_bits: Option<f64>,
    /// Data-block compression: none or zstd (default none).
    #[arg(long, value_parser = ["none", "zstd"])]
    pub compression_type: Option<String>,
    /// zstd level when --compression-type zstd (default 3).
    /// [range: -131072..=22]
    #[arg(long,
          value_parser = numbers::rocksdb::<i32>("compression_level", -131072, 22))]
    pub compression_level: Option<i32>,
    /// Number of levels (default 7). [range: 2..=64]
    #[arg(long,
          value_parser = numbers::rocksdb::<usize>("num_levels", 2, 64))]
    pub num_levels: Option<usize>,
    /// L0 files that trigger a compaction (default 4). [range: 1..=1073741824]
    #[arg(long,
          value_parser = numbers::rocksdb::<usize>("level0_file_num_compaction_trigger", 1, 1 << 30))]
    pub level0_file_num_compaction_trigger: Option<usize>,
    /// L0 files at which writes slow down (default 20). [range: 1..=1073741824]
    #[arg(long,
          value_parser = numbers::rocksdb::<usize>("level0_slowdown_writes_trigger", 1, 1 << 30))]
    pub level0_slowdown_writes_trigger: Option<usize>,
    /// L0 files at which writes stop (default 36). [range: 1..=1073741824]
    #[arg(long,
          value_parser = numbers::rocksdb::<usize>("level0_stop_writes_trigger", 1, 1 << 30))]
    pub level0_stop_writes_trigger: Option<usize>,
    /// Target size of the base level in bytes (default 256 MiB).
    /// [range: 1..=1125899906842624]
    #[arg(long,
          value_parser = numbers::rocksdb::<u64>("max_bytes_for_level_base", 1, 1 << 50))]
    pub max_bytes_for_level_base: Option<u64>,
    /// Size ratio between adjacent levels (default 10) [range: above 0,
    /// at most 1000].
    #[arg(long,
          value_parser = numbers::positive("max_bytes_for_level_multiplier", 1000.0))]
    pub max_bytes_for_level_multiplier: Option<f64>,
    /// Level targets computed from the last level's size (default true).
    #[arg(long)]
    pub level_compaction_dynamic_level_bytes: Option<bool>,
    /// Target size of compaction output files in bytes (default 64 MiB).
    /// [range: 1..=1099511627776]
    #[arg(long,
          value_parser = numbers::rocksdb::<u64>("target_file_size_base", 1, 1 << 40))]
    pub target_file_size_base: Option<u64>,
    /// Growth of the target file size per level (default 1). [range: 1..=1000]
    #[arg(long,
          value_parser = numbers::rocksdb::<u32>("target_file_size_multiplier", 1, 1000))]
    pub target_file_size_multiplier: Option<u32>,
    /// Upper bound of a compaction's input bytes (default 25 target files).
    /// [range: 0..=1125899906842624; 0: the default]
    #[arg(long,
          value_parser = numbers::rocksdb::<u64>("max_compaction_bytes", 0, 1 << 50))]
    pub max_compaction_bytes: Option<u64>,
    /// Background threads for flushes and compactions (default 2).
    /// [range: 1..=256]
    #[arg(long,
          value_parser = numbers::rocksdb::<usize>("max_background_jobs", 1, 256))]
    pub max_background_jobs: Option<usize>,
    /// Pieces a compaction is split into and run in parallel (default 1).
    /// [range: 1..=256]
    #[arg(long, alias = "subcompactions",
          value_parser = numbers::rocksdb::<usize>("max_subcompactions", 1, 256))]
    pub max_subcompactions: Option<usize>,
    /// No automatic compactions (default false).
    #[arg(long)]
    pub disable_auto_compactions: Option<bool>,
    /// Order files of a level are compacted in, as RocksDB numbers it:
    /// 0 by compensated size, 1 oldest largest seqno, 2 oldest smallest
    /// seqno, 3 min overlapping ratio (default), 4 round robin. [range: 0..=4]
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=4),
          value_parser = numbers::rocksdb::<u8>("compaction_pri", 0, 4))]
    pub compaction_pri: Option<u8>,
    /// Bytes per second writes are slowed to during a slowdown (default 16 MiB).
    /// [range: 0..=1099511627776]
    #[arg(long,
          value_parser = numbers::rocksdb::<u64>("delayed_write_rate", 0, 1 << 40))]
    pub delayed_write_rate: Option<u64>,
    /// Pending compaction bytes that slow writes (default 64 GiB; 0 off).
    /// [range: 0..=1125899906842624]
    #[arg(long,
          value_parser = numbers::rocksdb::<u64>("soft_pending_compaction_bytes_limit", 0, 1 << 50))]
    pub soft_pending_compaction_bytes_limit: Option<u64>,
    /// Pending compaction bytes that stop writes (default 256 GiB; 0 off).
    /// [range: 0..=1125899906842624]
    #[arg(long,
          value_parser = numbers::rocksdb::<u64>("hard_pending_compaction_bytes_limit", 0, 1 << 50))]
    pub hard_pending_compaction_bytes_limit: Option<u64>,
    /// Key-value separation: values of at least --min-blob-size bytes go
    /// to blob files at flush (RocksDB's `enable_blob_files`; default
    /// false).
    #[arg(long)]
    pub enable_blob_files: Option<bool>,
    /// The smallest value kept in a blob file (default 0: every value).
    /// [range: any u64]
    #[arg(long,
          value_parser = numbers::rocksdb::<u64>("min_blob_size", 0, u64::MAX))]
    pub min_blob_size: Option<u64>,
    /// A blob file is closed when it reaches this size (default 256 MiB).
    /// [range: 1..=1099511627776]
    #[arg(long,
          value_parser = numbers::rocksdb::<u64>("blob_file_size", 1, 1 << 40))]
    pub blob_file_size: Option<u64>,
    /// How each value is compressed in its blob file (default none).
    #[arg(long, value_parser = ["none", "zstd", "lz4"])]
    pub blob_compression_type: Option<String>,
    /// Relocate values out of the oldest blob files when compaction meets
    /// them (default false).
    #[arg(long)]
    pub enable_blob_garbage_collection: Option<bool>,
    /// The oldest fraction of blob files garbage collection relocates from
    /// (default 0.25). [range: 0..=1]
    #[arg(long, value_name = "F", value_parser = numbers::float(0.0, 1.0))]
    pub blob_garbage_collection_age_cutoff: Option<f64>,
    /// Garbage share of those files that forces compactions of the SSTs
    /// pinning the oldest (default 1.0: never). [range: 0..=1]
    #[arg(long, value_name = "F", value_parser = numbers::float(0.0, 1.0))]
    pub blob_garbage_collection_force_threshold: Option<f64>,
    /// How far garbage collection reads old blob files ahead while it
    /// relocates their values (default 64 KiB; 0 reads each value alone).
    /// [range: 0..=1073741824]
    #[arg(long,
          value_parser = numbers::rocksdb::<u64>("blob_compaction_readahead_size", 0, 1 << 30))]
    pub blob_compaction_readahead_size: Option<u64>,
    /// Cache separated values (RocksDB's `blob_cache`; default false: a
    /// get reads its value from the blob file each time).
    #[arg(long)]
    pub use_blob_cache: Option<bool>,
    /// With --use-blob-cache: share the block cache (default true, false
    /// when --blob-cache-size is given) or use a cache of --blob-cache-size
    /// bytes.
    #[arg(long)]
    pub use_shared_block_and_blob_cache: Option<bool>,
    /// Capacity of a blob cache of its own (default 8 MiB; given alone,
    /// it asks for one).
    /// [range: 1..=1099511627776]
    #[arg(long,
          value_parser = numbers::rocksdb::<usize>("blob_cache_size", 1, 1 << 40))]
    pub blob_cache_size: Option<usize>,
    /// Bytes one write group commits at most (default 1 MiB).
    /// [range: 1..=1073741824]
    #[arg(long,
          value_parser = numbers::rocksdb::<u64>("max_write_batch_group_size_bytes", 1, 1 << 30))]
    pub max_write_batch_group_size_bytes: Option<u64>,
    /// Buffer WAL records until 64 KiB, a sync or close (default false).
    #[arg(long)]
    pub manual_wal_flush: Option<bool>,
    /// Size each new WAL up front to 1.1 × the write buffer, so a sync
    /// rarely changes the file's size (default true).
    #[arg(long)]
    pub wal_preallocate: Option<bool>,
    /// Obsolete WAL files kept to be written over by later WALs
    /// (RocksDB's recycle_log_file_num; default 0).
    /// [range: 0..=1024]
    #[arg(long,
          value_parser = numbers::rocksdb::<usize>("recycle_log_file_num", 0, 1024))]
    pub recycle_log_file_num: Option<usize>,
    /// Give the allocator's free memory back to the kernel after
    /// flushes and compactions (`malloc_trim`; default true here, false in
    /// the library, where it would reach into the host's heap).
    #[arg(long)]
    pub release_memory_after_jobs: Option<bool>,
    /// WAL records stored as they are (none) or each LZ4-compressed when
    /// that is smaller (lz4) (default none).
    #[arg(long, value_parser = ["none", "lz4"])]
    pub wal_compression: Option<String>,
    /// Verify block checksums on every read from a file (default true).
    #[arg(long, alias = "verify_checksums")]
    pub verify_checksum: Option<bool>,
    /// Whole-key bloom filter in every memtable (default true here).
    #[arg(long)]
    pub memtable_whole_key_filtering: Option<bool>,
    /// The merge operator, one of the built-in ones: `uint64add` (little-
    /// endian u64 sum of 8-byte operands), `stringappend` (comma-joined) or
    /// `max`. A database holding merge operands must be opened with the one
    /// it records: reads (`get`, `scan`, `check`) combine a key's operands
    /// with it, `merge` writes them, and without it reading a key that
    /// holds operands fails, naming the key. `bench` merges with it in
    /// mergerandom and readrandommergerandom; `stress db` and `stress bank`
    /// open their database with it; `replica` reads with it; a
    /// `compaction-worker` without the one a job names fails the job, which
    /// the writer then runs itself.
    #[arg(long, alias = "operator", value_name = "NAME", value_parser = crate::db::parse_merge_operator)]
    pub merge_operator: Option<String>,
    /// A daily off-peak window, `HH:mm-HH:mm` in UTC (RocksDB's
    /// `daily_offpeak_time_utc`; default none, and the `diurnal`
    /// workload's night under `--workload diurnal`).
    #[arg(long, value_name = "HH:mm-HH:mm")]
    pub daily_offpeak_time_utc: Option<String>,
    /// A daily time, `HH:mm` in UTC, of a major compaction of the whole
    /// table (OceanBase's daily merge; default none).
    #[arg(long, value_name = "HH:mm")]
    pub scheduled_major_time_utc: Option<String>,
    /// What `--strategy adaptive` minimises (default cpu).
    #[arg(long, value_parser = ["cpu", "write-amp", "space-amp"])]
    pub adaptive_objective: Option<String>,
    /// Most space amplification (table bytes per live byte) `Adaptive`
    /// chooses when a shape keeps it, as its cost model predicts it
    /// [range: above 0, at most 1000].
    #[arg(long, value_name = "F", value_parser = numbers::positive("limits", 1000.0))]
    pub adaptive_max_space_amp: Option<f64>,
    /// Most write amplification `Adaptive` chooses when a shape keeps it:
    /// flush and compaction bytes per user byte, the WAL not counted
    /// [range: above 0, at most 1000].
    #[arg(long, value_name = "F", value_parser = numbers::positive("limits", 1000.0))]
    pub adaptive_max_write_amp: Option<f64>,
    /// Most read amplification `Adaptive` chooses when a shape keeps it:
    /// tables a point lookup consults, before their filters [range: above
    /// 0, at most 1000].
    #[arg(long, value_name = "F", value_parser = numbers::positive("limits", 1000.0))]
    pub adaptive_max_read_amp: Option<f64>,
    /// The unit costs (`name = µs` lines) `Adaptive` and the counted
    /// strategies report price work with; `bench --calibrate` writes this
    /// machine's. Default: the built-in costs, except for
    /// --strategies-report and --workload, which take the file
    /// `--calibrate` writes by default ($XDG_CONFIG_HOME/lithify/cpu-costs
    /// or ~/.config/lithify/cpu-costs) when it exists.
    #[arg(long, value_name = "PATH")]
    pub cpu_costs: Option<std::path::PathBuf>,
}

/// Where `bench --calibrate` keeps this machine's unit costs unless told:
/// `$XDG_CONFIG_HOME/lithify/cpu-costs`, or `~/.config/lithify/cpu-costs`.
pub(crate) fn default_cpu_costs_path() -> Option<std::path::PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| std::path::PathBuf::from(h).join(".config"))
        })?;
    Some(base.join("lithify").join("cpu-costs"))
}

impl EngineArgs {
    /// The unit costs to price work with, and where they came from:
    /// `--cpu-costs`, else (with `calibration_file`) the file `bench
    /// --calibrate` writes if there is one, else the built-in ones.
    pub(crate) fn cpu_costs(&self, calibration_file: bool) -> Result<(CpuCosts, String)> {
        let built_in = || Ok((CpuCosts::default(), "built-in".to_owned()));
        let (path, required) = match &self.cpu_costs {
            Some(p) => (p.clone(), true),
            None if calibration_file => match default_cpu_costs_path() {
                Some(p) => (p, false),
                None => return built_in(),
            },
            None => return built_in(),
        };
        let text = match lithify::vfs::read_file(&lithify::vfs::OsFs, &path) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => {
                return built_in();
            }
            Err(e) => {
                return UsageSnafu {
                    message: format!("cannot read the unit costs {}: {e}", path.display()),
                }
                .fail();
            }
        };
        let costs = CpuCosts::from_text(&text).map_err(|e| {
            UsageSnafu {
                message: format!("unit costs {}: {e}", path.display()),
            }
            .build()
        })?;
        Ok((costs, path.display().to_string()))
    }

    /// Strategy `name` sized like `strategy_named`, with the
    /// `--adaptive-*` goal when it is `Adaptive`.
    pub(crate) fn strategy(&self, name: &str, target_file_size: u64) -> Result<CompactionStrategy> {
        let mut s = crate::bench::strategies::strategy_named(name, target_file_size)?;
        if let CompactionStrategy::Adaptive(a) = &mut s {
            if let Some(o) = &self.adaptive_objective {
                a.objective = AdaptiveObjective::parse(o).ok_or_else(|| {
                    UsageSnafu {
                        message: format!("unknown objective {o:?}"),
                    }
                    .build()
                })?;
            }
            let limits = [
                self.adaptive_max_space_amp,
                self.adaptive_max_write_amp,
                self.adaptive_max_read_amp,
            ];
            if limits
                .iter()
                .flatten()
                .any(|l| !(l.is_finite() && *l > 0.0))
            {
                return UsageSnafu {
                    message: "--adaptive-max-* limits must be positive".to_owned(),
                }
                .fail();
            }
            a.limits = AdaptiveLimits::default()
                .max_space_amp(self.adaptive_max_space_amp)
                .max_write_amp(self.adaptive_max_write_amp)
                .max_read_amp(self.adaptive_max_read_amp);
            a.costs = self.cpu_costs(false)?.0;
        }
        Ok(s)
    }

    /// The engine options: the defaults with every given flag applied.
    pub(crate) fn to_options(&self) -> Result<Options> {
        self.apply_to(bench_defaults())
    }

    /// `base` with every given flag applied (a command with defaults of
    /// its own, such as `stress`, starts from those).
    /// db_bench's blob cache flags: none, the block cache shared, or a
    /// cache of its own. `--blob-cache-size` alone asks for a cache of its
    /// own, and `--use-shared-block-and-blob-cache true` alone for the
    /// shared one; flags that contradict each other are refused.
    fn apply_blob_cache(&self, o: &mut Options) -> Result<()> {
        let shared = self
            .use_shared_block_and_blob_cache
            .unwrap_or(self.blob_cache_size.is_none());
        let asked =
            self.use_shared_block_and_blob_cache == Some(true) || self.blob_cache_size.is_some();
        let usage = |message: &str| {
            UsageSnafu {
                message: message.to_owned(),
            }
            .fail()
        };
        match self.use_blob_cache {
            Some(false) if asked => {
                return usage(
                    "--use-shared-block-and-blob-cache true and --blob-cache-size ask for a blob cache, but --use-blob-cache is false",
                );
            }
            Some(true) => {}
            _ if asked => {}
            _ => return Ok(()),
        }
        if shared && self.blob_cache_size.is_some() {
            return usage(
                "--blob-cache-size sizes a blob cache of its own: not with --use-shared-block-and-blob-cache true",
            );
        }
        if shared {
            if o.block_cache.is_none() && o.block_cache_size == 0 {
                return usage(
                    "--use-shared-block-and-blob-cache needs a block cache (--cache-size above 0)",
                );
            }
            let size = o.block_cache_size;
            let block = o
                .block_cache
                .get_or_insert_with(|| Arc::new(BlockCache::new(size)));
            o.blob_cache = Some(Arc::clone(block));
        } else {
            o.blob_cache = Some(Arc::new(BlockCache::new(
                self.blob_cache_size.unwrap_or(8 << 20),
            )));
        }
        Ok(())
    }

    pub(crate) fn apply_to(&self, base: Options) -> Result<Options> {
        let mut o = base;
        macro_rules! set {
            ($($field:ident),* $(,)?) => {
                $(if let Some(v) = self.$field.clone() { o.$field = v; })*
            };
        }
        set!(
            write_buffer_size,
            max_write_buffer_number,
            min_write_buffer_number_to_merge,
            block_size,
            block_restart_interval,
            num_levels,
            level0_file_num_compaction_trigger,
            level0_slowdown_writes_trigger,
            level0_stop_writes_trigger,
            max_bytes_for_level_base,
            max_bytes_for_level_multiplier,
            level_compaction_dynamic_level_bytes,
            target_file_size_base,
            target_file_size_multiplier,
            max_compaction_bytes,
            max_background_jobs,
            max_subcompactions,
            disable_auto_compactions,
            delayed_write_rate,
            soft_pending_compaction_bytes_limit,
            hard_pending_compaction_bytes_limit,
            max_write_batch_group_size_bytes,
            manual_wal_flush,
            wal_preallocate,
            recycle_log_file_num,
            memtable_whole_key_filtering,
            release_memory_after_jobs,
        );
        let b = &mut o.blob;
        if let Some(v) = self.enable_blob_files {
            b.enable_blob_files = v;
        }
        if let Some(v) = self.min_blob_size {
            b.min_blob_size = v;
        }
        if let Some(v) = self.blob_file_size {
            b.blob_file_size = v;
        }
        if let Some(name) = &self.blob_compression_type {
            b.blob_compression = lithify::BlobCompression::from_name(name).ok_or_else(|| {
                UsageSnafu {
                    message: format!("--blob-compression-type {name:?} is not none, zstd or lz4"),
                }
                .build()
            })?;
        }
        if let Some(v) = self.enable_blob_garbage_collection {
            b.enable_blob_garbage_collection = v;
        }
        if let Some(v) = self.blob_garbage_collection_age_cutoff {
            b.blob_garbage_collection_age_cutoff = v;
        }
        if let Some(v) = self.blob_garbage_collection_force_threshold {
            b.blob_garbage_collection_force_threshold = v;
        }
        if let Some(v) = self.blob_compaction_readahead_size {
            b.blob_compaction_readahead_size = v;
        }
        if let Some(bits) = self.bloom_bits {
            o.bloom_bits_per_key = bits;
        }
        if let Some(v) = self.verify_checksum {
            o.verify_checksums = v;
        }
        if let Some(w) = &self.daily_offpeak_time_utc {
            o.daily_offpeak_time_utc = w.clone();
        }
        if let Some(t) = &self.scheduled_major_time_utc {
            o.scheduled_major_time_utc = Some(t.clone());
        }
        match self.wal_compression.as_deref() {
            Some("lz4") => o.wal_compression = lithify::WalCompression::Lz4,
            Some(_) => o.wal_compression = lithify::WalCompression::None,
            None => {}
        }
        if let Some(name) = &self.merge_operator {
            o.merge_operator = Some(lithify::merge_operator_by_name(name).ok_or_else(|| {
                UsageSnafu {
                    message: format!(
                        "--merge-operator {name:?} is not a built-in operator ({})",
                        lithify::BUILT_IN_MERGE_OPERATORS.join(", ")
                    ),
                }
                .build()
            })?);
        }
        if let Some(size) = self.cache_size {
            o.block_cache = Some(Arc::new(BlockCache::new(size)));
            o.block_cache_size = size;
        }
        self.apply_blob_cache(&mut o)?;
        match (self.compression_type.as_deref(), self.compression_level) {
            (Some("zstd"), level) => {
                o.compression = Compression::Zstd {
                    level: level.unwrap_or(3),
                }
            }
            (_, Some(_)) => {
                return UsageSnafu {
                    message: "--compression-level needs --compression-type zstd".to_string(),
                }
                .fail();
            }
            (Some(_), None) => o.compression = Compression::None,
            (None, None) => {}
        }
        if let Some(p) = self.compaction_pri {
            o.compaction_pri = match p {
                0 => CompactionPri::ByCompensatedSize,
                1 => CompactionPri::OldestLargestSeqFirst,
                2 => CompactionPri::OldestSmallestSeqFirst,
                3 => CompactionPri::MinOverlappingRatio,
                _ => CompactionPri::RoundRobin,
            };
        }
        Ok(o)
    }
}

/// The options `bench` starts from: the library's defaults, except that a
/// benchmark process, which is all database, trims the heap after
/// background jobs (the library leaves that to the application).
pub(crate) fn bench_defaults() -> Options {
    Options::default().release_memory_after_jobs(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adaptive_flags_set_the_objective_and_limits() {
        let args = EngineArgs {
            adaptive_objective: Some("write-amp".to_owned()),
            adaptive_max_space_amp: Some(1.2),
            adaptive_max_read_amp: Some(4.0),
            ..EngineArgs::default()
        };
        match args.strategy("adaptive", 64 << 10).unwrap() {
            CompactionStrategy::Adaptive(a) => {
                assert_eq!(a.objective, AdaptiveObjective::WriteAmp);
                assert_eq!(
                    a.limits,
                    AdaptiveLimits::default()
                        .max_space_amp(Some(1.2))
                        .max_write_amp(None)
                        .max_read_amp(Some(4.0))
                );
                assert_eq!(a.two_tier.target_file_size, 64 << 10);
            }
            other => panic!("{other}"),
        }
        // A fixed strategy ignores them.
        assert_eq!(
            args.strategy("leveled", 64 << 10).unwrap().kind_name(),
            "leveled"
        );
        let bad = EngineArgs {
            adaptive_max_write_amp: Some(f64::NAN),
            ..EngineArgs::default()
        };
        assert!(bad.strategy("adaptive", 64 << 10).is_err());
    }
}
