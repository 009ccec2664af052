//! Options of the database, of reads and of writes, with RocksDB's names
//! and defaults.

mod blob;
pub(crate) mod set;
pub(crate) mod translate;

pub use blob::BlobOptions;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use crate::resource::{DailyTime, OffpeakWindow};
use bytes::Bytes;
use lithify_base::clock::{Clock, SystemClock};
use lithify_base::{BytewiseComparator, Comparator, MergeOperator};
use lithify_compaction::CompactionPri;
use lithify_compaction::iter::CompactionFilter;
use lithify_compaction_leveled::DEFAULT_TTL_SECONDS;
use lithify_compaction_strategy::CompactionStrategy;
use lithify_sstable::{BlockCache, Compression};
use lithify_vfs::{FileSystem, OsFs};
use lithify_wal::{RecordCompression as WalCompression, RecoveryMode};

use crate::error::{InvalidArgumentSnafu, Result};
use crate::events::EventListener;
use crate::snapshot::Snapshot;

/// How a database is opened and run. Field names and defaults are
/// RocksDB's (`DBOptions` + `ColumnFamilyOptions` + block-based table
/// options) unless noted.
///
/// ```
/// use lithify_engine::Options;
///
/// let opts = Options::default()
///     .write_buffer_size(4 << 20)
///     .max_background_jobs(4);
/// assert_eq!(opts.max_write_buffer_number, 2);
/// assert_eq!(opts.level0_file_num_compaction_trigger, 4);
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct Options {
    // ----- database -----
    /// Create the database if the directory holds none (default **true**;
    /// RocksDB's default is false).
    pub create_if_missing: bool,
    /// Fail if a database already exists (default false).
    pub error_if_exists: bool,
    /// The file system every file goes through (default the OS's).
    pub fs: Arc<dyn FileSystem>,
    /// The time the engine goes by (default the system's; RocksDB's
    /// `Env` clock): file creation times, periodic and TTL compaction,
    /// scheduled major compactions, the off-peak window and the rate
    /// limiter. A [`ManualClock`](crate::ManualClock) runs a simulated
    /// day.
    pub clock: Arc<dyn Clock>,
    /// The user-key order (default bytewise). Recorded in the MANIFEST:
    /// reopening with another comparator fails.
    pub comparator: Arc<dyn Comparator>,
    /// Background threads for flushes and compactions (default 2). At most
    /// `max(1, jobs - max(1, jobs / 4))` of them compact at once, so a
    /// flush always finds a thread.
    pub max_background_jobs: usize,
    /// Key-range pieces a compaction is split into and run in parallel
    /// (default 1).
    pub max_subcompactions: usize,
    /// How damaged WAL records are handled on open (default point in time:
    /// replay stops at the first damage, and no later log is replayed).
    pub wal_recovery_mode: RecoveryMode,
    /// When false (the default), every write group's WAL record is handed
    /// to the operating system before the write returns, so it survives a
    /// crash of the process (not a power loss unless `sync`). When true,
    /// records collect in a 64 KiB buffer until it fills, a `sync` write,
    /// [`Db::flush_wal`](crate::Db::flush_wal) or close.
    pub manual_wal_flush: bool,
    /// How WAL records are stored (default as they are). With
    /// [`WalCompression::Lz4`] each write group's record is LZ4-compressed
    /// on its own and kept so when that is smaller (WAL format version 2),
    /// cutting the bytes the WAL writes by what the data's redundancy
    /// allows, at about a quarter of a microsecond per small write. Unlike
    /// RocksDB's `wal_compression` (zstd, one stream per WAL), damage to one
    /// record never costs the records after it. Logs written either way are
    /// read by every open; a database is not tied to the setting.
    pub wal_compression: WalCompression,
    /// Size each new WAL up front (default **true**): to 1.1 ×
    /// `write_buffer_size` (capped by `max_total_wal_size` when that is
    /// set), as RocksDB sizes its WAL preallocation, grown by as much again
    /// if the WAL outlasts it. Records are written into that space, so a
    /// `sync` write rarely changes the file's size, which makes its
    /// `fdatasync` cheaper (fjall sizes its journals so). The space is
    /// sparse where the file system allows, and cut off when the WAL is
    /// closed; after a crash, recovery takes the zeros after the last
    /// record as the WAL's clean end in every recovery mode.
    pub wal_preallocate: bool,
    /// Obsolete WAL files kept to be written over by later WALs (RocksDB's
    /// `recycle_log_file_num`; default 0, none). A recycled WAL is renamed
    /// to its new number and written from its start over the old log's
    /// bytes, so its syncs do not change the file's size; the new log's
    /// first fragment names the old one, and recovery takes the old bytes
    /// after the new log's last record as its clean end. As in RocksDB,
    /// recycling is turned off under `TolerateCorruptedTailRecords` and
    /// `AbsoluteConsistency` recovery (a stale tail and a torn one look
    /// alike there). RocksDB also turns it off when WALs are archived
    /// (`WAL_ttl_seconds`, `WAL_size_limit_MB`); lithify does not archive
    /// WALs.
    pub recycle_log_file_num: usize,
    /// Hand the allocator's free memory back to the kernel after
    /// background jobs (once they wrote 32 MiB since the last time) and
    /// after each manual compaction (`malloc_trim(0)` under glibc; nothing
    /// elsewhere). Default **false**: the call works on the whole
    /// process's heap, not only the database's, so an application opts
    /// in. Under glibc it pays off: without it, what a background job
    /// freed stays in that thread's arena (the engine README has the peak
    /// RSS both ways). `lithify bench` turns it on.
    pub release_memory_after_jobs: bool,
    /// Bytes per second writes are slowed to while a slowdown trigger holds
    /// (default 16 MiB/s).
    pub delayed_write_rate: u64,
    /// A MANIFEST larger than this is rewritten (default 1 GiB).
    pub max_manifest_file_size: u64,
    /// The block cache shared by all tables. `None` (the default) creates
    /// one of `block_cache_size` bytes.
    pub block_cache: Option<Arc<BlockCache>>,
    /// Capacity of the block cache created when `block_cache` is `None`
    /// (default 32 MiB; 0 disables caching).
    pub block_cache_size: usize,
    /// The cache of separated values (RocksDB's `blob_cache`). `None`, the
    /// default as in RocksDB: a get reads its value from the blob file each
    /// time, and the block cache keeps the tables' blocks. Give it the
    /// [`block_cache`](Self::block_cache) to share one budget (values then
    /// evict index, filter and data blocks: with 1 KiB values and a cache
    /// smaller than the tables, that made `readrandom` 30% slower), or a
    /// cache of its own. Compactions never fill it.
    pub blob_cache: Option<Arc<BlockCache>>,
    /// Upper bound of the bytes one write group commits (default 1 MiB).
    pub max_write_batch_group_size_bytes: u64,
    /// Check at open that every SST file the MANIFEST lists exists with
    /// the size it records and, where the MANIFEST records its unique id,
    /// carries that id (reading its footer, metaindex and properties;
    /// RocksDB's `verify_sst_unique_id_in_manifest`), and refuse to open
    /// otherwise, naming the file (RocksDB's `paranoid_checks`; default
    /// true).
    pub paranoid_checks: bool,
    /// Write a human-readable `LOG` file of the database's events in its
    /// directory (RocksDB's info LOG). Default false in the library (the
    /// events always go to `tracing`); the `lithify` command turns it on
    /// for read-write opens. A read-only open never writes it.
    pub info_log: bool,
    /// Old `LOG` files kept as `LOG.old.<micros>` (default 16).
    pub keep_log_file_num: usize,
    /// Callbacks told about flushes, compactions, stalls, background
    /// errors, strategy switches and recovery (RocksDB's `listeners`).
    pub listeners: Vec<Arc<dyn EventListener>>,
    /// Runs compactions in another process, on this or another machine
    /// (RocksDB's `compaction_service`; default none: every compaction
    /// runs here). See [`CompactionService`](crate::CompactionService).
    pub compaction_service: Option<Arc<dyn crate::CompactionService>>,

    // ----- memtables (per table) -----
    /// A memtable larger than this becomes immutable and is flushed
    /// (default 64 MiB).
    pub write_buffer_size: usize,
    /// Memtables (mutable + immutable) before writes stop (default 2).
    pub max_write_buffer_number: usize,
    /// A whole-key bloom filter in every memtable (about 2 % of
    /// `write_buffer_size`), so point lookups of keys a memtable does not
    /// hold skip its skiplist (RocksDB's `memtable_whole_key_filtering`;
    /// default **true** here, false in RocksDB).
    pub memtable_whole_key_filtering: bool,
    /// Immutable memtables merged into one flush (default 1).
    pub min_write_buffer_number_to_merge: usize,
    /// Memtable arena block size (of the keys and values; the skiplist
    /// nodes' blocks are a quarter of it); 0 (default) picks
    /// `min(1 MiB, write_buffer_size / 8)`.
    pub arena_block_size: usize,

    // ----- levels and compaction (per table) -----
    /// Number of levels (default 7).
    pub num_levels: usize,
    /// L0 files that trigger a compaction (default 4).
    pub level0_file_num_compaction_trigger: usize,
    /// L0 files at which writes slow down (default 20).
    pub level0_slowdown_writes_trigger: usize,
    /// L0 files at which writes stop (default 36).
    pub level0_stop_writes_trigger: usize,
    /// Target size of the base level (default 256 MiB).
    pub max_bytes_for_level_base: u64,
    /// Size ratio between adjacent levels (default 10).
    pub max_bytes_for_level_multiplier: f64,
    /// Level targets computed from the last level's size (default true).
    pub level_compaction_dynamic_level_bytes: bool,
    /// Target size of compaction output files at L1 (default 64 MiB).
    pub target_file_size_base: u64,
    /// Growth of the target file size per level (default 1).
    pub target_file_size_multiplier: u32,
    /// Upper bound of a compaction's input bytes; 0 (default) means
    /// `25 * target_file_size_base`.
    pub max_compaction_bytes: u64,
    /// Estimated pending compaction bytes that slow writes down (default
    /// 64 GiB; 0 disables).
    pub soft_pending_compaction_bytes_limit: u64,
    /// Estimated pending compaction bytes that stop writes (default
    /// 256 GiB; 0 disables).
    pub hard_pending_compaction_bytes_limit: u64,
    /// No automatic compactions (manual ones still run), and the L0 and
    /// pending-bytes stall triggers are ignored (default false).
    pub disable_auto_compactions: bool,
    /// Files older than this are compacted again (through the compaction
    /// filter). `None` (the default) is RocksDB's rule: 30 days when a
    /// compaction filter is set, else off; `Some(0)` is off.
    pub periodic_compaction_seconds: Option<u64>,
    /// Files above the last level whose oldest data is older than this
    /// many seconds are compacted down (default 30 days; 0 off).
    pub ttl: u64,
    /// The order files of a level are compacted in (default
    /// `MinOverlappingRatio`).
    pub compaction_pri: CompactionPri,
    /// User code deciding the fate of values during compactions (RocksDB's
    /// `CompactionFilter`): keep, remove, change, or remove and skip a
    /// range. Runs on the newest version of each key whatever the
    /// snapshots (as RocksDB does).
    pub compaction_filter: Option<Arc<dyn CompactionFilter>>,
    /// Combines merge operands ([`Db::merge`](crate::Db::merge)) with the
    /// value below them, in reads and compactions (RocksDB's
    /// `merge_operator`). Its name is recorded in the MANIFEST the first
    /// time a table is opened with one; opening it later with an operator
    /// of another name is refused. Without one, merges are refused and
    /// reads of keys holding operands fail, naming the recorded operator.
    /// `lithify_base::merge` has the built-in ones.
    pub merge_operator: Option<Arc<dyn MergeOperator>>,
    /// A compaction that finds a `SingleDelete` directly above a `Delete`
    /// of the same key (mixing the two breaks `SingleDelete`'s contract)
    /// fails with a corruption error (default true, RocksDB's
    /// `enforce_single_del_contracts`); false drops the single delete and
    /// counts it in `DbStats::single_delete_mismatches`.
    pub enforce_single_delete_contracts: bool,

    // ----- SST files (per table) -----
    /// Uncompressed data-block size (default 4 KiB).
    pub block_size: usize,
    /// Entries between restart points in data blocks (default 16).
    pub block_restart_interval: usize,
    /// Bloom filter bits per key, 0 for none (default 10; RocksDB has no
    /// filter by default and `db_bench` uses 10).
    pub bloom_bits_per_key: f64,
    /// Data-block compression (default none).
    pub compression: Compression,
    /// Verify block checksums on every read from a file (default true).
    pub verify_checksums: bool,
    /// Key-value separation: large values in blob files (default off).
    pub blob: BlobOptions,

    // ----- strategies, tables and resources -----
    /// The compaction strategy of the default table and of tables created
    /// without one (default `Leveled`, whose options are the fields above;
    /// the other strategies carry their own).
    pub compaction_strategy: CompactionStrategy,
    /// Options of named tables (column families), applied when the
    /// database opens with those tables (RocksDB's column family
    /// descriptors). Tables not listed get the database's options.
    pub table_options: BTreeMap<String, TableOptions>,
    /// When the live WAL files pass this many bytes, the tables whose
    /// unflushed data holds the oldest WAL are flushed, so an idle table
    /// never pins old WALs (RocksDB's `max_total_wal_size`; 0, the
    /// default, means 4 x the memtable budget of every table).
    pub max_total_wal_size: u64,
    /// Bytes per second compactions may write, database-wide (0, the
    /// default: unlimited). Flushes are never limited.
    pub compaction_rate_limit: u64,
    /// Bytes per second compactions may write inside the off-peak window
    /// (0, the default: unlimited).
    pub compaction_rate_limit_offpeak: u64,
    /// RocksDB's `daily_offpeak_time_utc`: `"HH:mm-HH:mm"` in UTC (empty:
    /// none), by [`clock`](Self::clock). Compactions run at
    /// `compaction_rate_limit_offpeak` inside it; `Adaptive` tables take
    /// their workload to repeat daily, score shapes on the whole day's mix
    /// and make their switches inside it.
    pub daily_offpeak_time_utc: String,
    /// A daily time (`"HH:mm"`, UTC) at which the default table gets a
    /// major compaction of everything (OceanBase's daily merge; `None`,
    /// the default: never).
    pub scheduled_major_time_utc: Option<String>,
}

lithify_base::options_builder!(Options {
    create_if_missing: bool,
    error_if_exists: bool,
    fs: Arc<dyn FileSystem>,
    clock: Arc<dyn Clock>,
    comparator: Arc<dyn Comparator>,
    max_background_jobs: usize,
    max_subcompactions: usize,
    wal_recovery_mode: RecoveryMode,
    manual_wal_flush: bool,
    wal_compression: WalCompression,
    wal_preallocate: bool,
    recycle_log_file_num: usize,
    release_memory_after_jobs: bool,
    delayed_write_rate: u64,
    max_manifest_file_size: u64,
    block_cache: Option<Arc<BlockCache>>,
    block_cache_size: usize,
    blob_cache: Option<Arc<BlockCache>>,
    max_write_batch_group_size_bytes: u64,
    paranoid_checks: bool,
    info_log: bool,
    keep_log_file_num: usize,
    listeners: Vec<Arc<dyn EventListener>>,
    compaction_service: Option<Arc<dyn crate::CompactionService>>,
    write_buffer_size: usize,
    max_write_buffer_number: usize,
    memtable_whole_key_filtering: bool,
    min_write_buffer_number_to_merge: usize,
    arena_block_size: usize,
    num_levels: usize,
    level0_file_num_compaction_trigger: usize,
    level0_slowdown_writes_trigger: usize,
    level0_stop_writes_trigger: usize,
    max_bytes_for_level_base: u64,
    max_bytes_for_level_multiplier: f64,
    level_compaction_dynamic_level_bytes: bool,
    target_file_size_base: u64,
    target_file_size_multiplier: u32,
    max_compaction_bytes: u64,
    soft_pending_compaction_bytes_limit: u64,
    hard_pending_compaction_bytes_limit: u64,
    disable_auto_compactions: bool,
    periodic_compaction_seconds: Option<u64>,
    ttl: u64,
    compaction_pri: CompactionPri,
    compaction_filter: Option<Arc<dyn CompactionFilter>>,
    merge_operator: Option<Arc<dyn MergeOperator>>,
    enforce_single_delete_contracts: bool,
    block_size: usize,
    block_restart_interval: usize,
    bloom_bits_per_key: f64,
    compression: Compression,
    verify_checksums: bool,
    blob: BlobOptions,
    compaction_strategy: CompactionStrategy,
    table_options: BTreeMap<String, TableOptions>,
    max_total_wal_size: u64,
    compaction_rate_limit: u64,
    compaction_rate_limit_offpeak: u64,
    daily_offpeak_time_utc: String,
    scheduled_major_time_utc: Option<String>,
});

/// Options of one table (column family) that differ from the database's
/// [`Options`]; `None` keeps the database's value.
///
/// ```
/// use lithify_engine::{CompactionStrategy, TableOptions};
///
/// let opts = TableOptions::default()
///     .compaction_strategy(CompactionStrategy::parse("two-tier:write-only"))
///     .write_buffer_size(Some(8 << 20));
/// assert!(opts.compaction_strategy.is_some());
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct TableOptions {
    /// The table's compaction strategy.
    pub compaction_strategy: Option<CompactionStrategy>,
    /// The table's memtable size.
    pub write_buffer_size: Option<usize>,
    /// Memtables (mutable + immutable) before writes stop.
    pub max_write_buffer_number: Option<usize>,
    /// Target size of the table's compaction outputs (leveled).
    pub target_file_size_base: Option<u64>,
    /// Data-block compression of the table's files.
    pub compression: Option<Compression>,
    /// No automatic compactions for this table.
    pub disable_auto_compactions: Option<bool>,
    /// The table's compaction filter.
    pub compaction_filter: Option<Arc<dyn CompactionFilter>>,
    /// The table's merge operator.
    pub merge_operator: Option<Arc<dyn MergeOperator>>,
    /// A daily time (`"HH:mm"`, UTC) for a major compaction of the whole
    /// table.
    pub scheduled_major_time_utc: Option<String>,
    /// The table's key-value separation.
    pub blob: Option<BlobOptions>,
}

lithify_base::options_builder!(TableOptions {
    compaction_strategy: Option<CompactionStrategy>,
    write_buffer_size: Option<usize>,
    max_write_buffer_number: Option<usize>,
    target_file_size_base: Option<u64>,
    compression: Option<Compression>,
    disable_auto_compactions: Option<bool>,
    compaction_filter: Option<Arc<dyn CompactionFilter>>,
    merge_operator: Option<Arc<dyn MergeOperator>>,
    scheduled_major_time_utc: Option<String>,
    blob: Option<BlobOptions>,
});

impl fmt::Debug for TableOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TableOptions")
            .field(
                "compaction_strategy",
                &self.compaction_strategy.as_ref().map(|s| s.to_string()),
            )
            .field("write_buffer_size", &self.write_buffer_size)
            .field("max_write_buffer_number", &self.max_write_buffer_number)
            .field("target_file_size_base", &self.target_file_size_base)
            .field("compression", &self.compression)
            .field("disable_auto_compactions", &self.disable_auto_compactions)
            .field(
                "compaction_filter",
                &self.compaction_filter.as_ref().map(|f| f.name().to_owned()),
            )
            .field(
                "merge_operator",
                &self.merge_operator.as_ref().map(|m| m.name().to_owned()),
            )
            .field("scheduled_major_time_utc", &self.scheduled_major_time_utc)
            .field("blob", &self.blob)
            .finish()
    }
}

impl TableOptions {
    /// The effective options of a table: `db` with these overrides.
    pub(crate) fn apply(&self, db: &Options) -> Options {
        let mut o = db.clone();
        if let Some(s) = &self.compaction_strategy {
            o.compaction_strategy = s.clone();
        }
        if let Some(v) = self.write_buffer_size {
            o.write_buffer_size = v;
        }
        if let Some(v) = self.max_write_buffer_number {
            o.max_write_buffer_number = v;
        }
        if let Some(v) = self.target_file_size_base {
            o.target_file_size_base = v;
        }
        if let Some(v) = self.compression {
            o.compression = v;
        }
        if let Some(v) = self.disable_auto_compactions {
            o.disable_auto_compactions = v;
        }
        if let Some(f) = &self.compaction_filter {
            o.compaction_filter = Some(Arc::clone(f));
        }
        if let Some(m) = &self.merge_operator {
            o.merge_operator = Some(Arc::clone(m));
        }
        if let Some(t) = &self.scheduled_major_time_utc {
            o.scheduled_major_time_utc = Some(t.clone());
        }
        if let Some(b) = self.blob {
            o.blob = b;
        }
        o
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: true,
            error_if_exists: false,
            fs: Arc::new(OsFs),
            clock: Arc::new(SystemClock),
            comparator: Arc::new(BytewiseComparator),
            max_background_jobs: 2,
            max_subcompactions: 1,
            wal_recovery_mode: RecoveryMode::PointInTimeRecovery,
            manual_wal_flush: false,
            wal_compression: WalCompression::None,
            wal_preallocate: true,
            recycle_log_file_num: 0,
            release_memory_after_jobs: false,
            delayed_write_rate: 16 << 20,
            max_manifest_file_size: 1 << 30,
            block_cache: None,
            block_cache_size: 32 << 20,
            blob_cache: None,
            max_write_batch_group_size_bytes: 1 << 20,
            paranoid_checks: true,
            info_log: false,
            keep_log_file_num: 16,
            listeners: Vec::new(),
            compaction_service: None,
            write_buffer_size: 64 << 20,
            max_write_buffer_number: 2,
            min_write_buffer_number_to_merge: 1,
            memtable_whole_key_filtering: true,
            arena_block_size: 0,
            num_levels: 7,
            level0_file_num_compaction_trigger: 4,
            level0_slowdown_writes_trigger: 20,
            level0_stop_writes_trigger: 36,
            max_bytes_for_level_base: 256 << 20,
            max_bytes_for_level_multiplier: 10.0,
            level_compaction_dynamic_level_bytes: true,
            target_file_size_base: 64 << 20,
            target_file_size_multiplier: 1,
            max_compaction_bytes: 0,
            soft_pending_compaction_bytes_limit: 64 << 30,
            hard_pending_compaction_bytes_limit: 256 << 30,
            disable_auto_compactions: false,
            periodic_compaction_seconds: None,
            ttl: DEFAULT_TTL_SECONDS,
            compaction_pri: CompactionPri::MinOverlappingRatio,
            compaction_filter: None,
            merge_operator: None,
            enforce_single_delete_contracts: true,
            block_size: 4096,
            block_restart_interval: 16,
            bloom_bits_per_key: 10.0,
            compression: Compression::None,
            verify_checksums: true,
            blob: BlobOptions::default(),
            compaction_strategy: CompactionStrategy::default(),
            table_options: BTreeMap::new(),
            max_total_wal_size: 0,
            compaction_rate_limit: 0,
            compaction_rate_limit_offpeak: 0,
            daily_offpeak_time_utc: String::new(),
            scheduled_major_time_utc: None,
        }
    }
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("create_if_missing", &self.create_if_missing)
            .field("error_if_exists", &self.error_if_exists)
            .field("fs", &self.fs)
            .field("clock", &"dyn Clock")
            .field("comparator", &self.comparator.name())
            .field("max_background_jobs", &self.max_background_jobs)
            .field("max_subcompactions", &self.max_subcompactions)
            .field("wal_recovery_mode", &self.wal_recovery_mode)
            .field("manual_wal_flush", &self.manual_wal_flush)
            .field("wal_compression", &self.wal_compression)
            .field("wal_preallocate", &self.wal_preallocate)
            .field("recycle_log_file_num", &self.recycle_log_file_num)
            .field("paranoid_checks", &self.paranoid_checks)
            .field("info_log", &self.info_log)
            .field("listeners", &self.listeners.len())
            .field(
                "compaction_service",
                &crate::remote_compaction::describe(&self.compaction_service),
            )
            .field("write_buffer_size", &self.write_buffer_size)
            .field("max_write_buffer_number", &self.max_write_buffer_number)
            .field("num_levels", &self.num_levels)
            .field(
                "level0_file_num_compaction_trigger",
                &self.level0_file_num_compaction_trigger,
            )
            .field("max_bytes_for_level_base", &self.max_bytes_for_level_base)
            .field("target_file_size_base", &self.target_file_size_base)
            .field("disable_auto_compactions", &self.disable_auto_compactions)
            .field("compaction_pri", &self.compaction_pri)
            .field(
                "compaction_filter",
                &self.compaction_filter.as_ref().map(|f| f.name().to_owned()),
            )
            .field(
                "merge_operator",
                &self.merge_operator.as_ref().map(|m| m.name().to_owned()),
            )
            .field(
                "enforce_single_delete_contracts",
                &self.enforce_single_delete_contracts,
            )
            .field("blob", &self.blob)
            .field("compaction_strategy", &self.compaction_strategy.to_string())
            .field("table_options", &self.table_options)
            .field("max_total_wal_size", &self.max_total_wal_size)
            .field("compaction_rate_limit", &self.compaction_rate_limit)
            .field("daily_offpeak_time_utc", &self.daily_offpeak_time_utc)
            .field("scheduled_major_time_utc", &self.scheduled_major_time_utc)
            .finish_non_exhaustive()
    }
}

impl Options {
    /// Bytes a new WAL is sized to up front: 1.1 × `write_buffer_size`,
    /// at most `max_total_wal_size` when that is set (RocksDB's
    /// `GetWalPreallocateBlockSize`); 0 without `wal_preallocate`.
    pub(crate) fn wal_preallocation(&self) -> u64 {
        if !self.wal_preallocate {
            return 0;
        }
        let size = self.write_buffer_size as u64 / 10 * 11;
        match self.max_total_wal_size {
            0 => size,
            cap => size.min(cap),
        }
    }

    /// Checks ranges and applies RocksDB's sanitisation (`SanitizeOptions`):
    /// `max_write_buffer_number >= 2`, triggers ordered, multiplier > 0.
    pub(crate) fn sanitized(&self) -> Result<Options> {
        let mut o = self.clone();
        let fail = |message: String| InvalidArgumentSnafu { message }.fail();
        if o.num_levels < 2 || o.num_levels > 64 {
            return fail(format!(
                "num_levels must be in 2..=64, not {}",
                o.num_levels
            ));
        }
        if o.max_background_jobs == 0 {
            return fail("max_background_jobs must be at least 1".to_owned());
        }
        if matches!(
            o.wal_recovery_mode,
            RecoveryMode::TolerateCorruptedTailRecords | RecoveryMode::AbsoluteConsistency
        ) {
            // A recycled WAL's stale tail cannot be told from a torn write
            // there (RocksDB's SanitizeOptions does the same).
            o.recycle_log_file_num = 0;
        }
        o.blob.validate()?;
        for t in o.table_options.values() {
            if let Some(b) = &t.blob {
                b.validate()?;
            }
        }
        if o.block_size == 0 {
            return fail("block_size must be positive, not 0".to_owned());
        }
        if o.block_restart_interval == 0 {
            return fail("block_restart_interval must be positive, not 0".to_owned());
        }
        if o.target_file_size_base == 0 {
            return fail("target_file_size_base must be positive, not 0".to_owned());
        }
        if o.max_bytes_for_level_base == 0 {
            return fail("max_bytes_for_level_base must be positive, not 0".to_owned());
        }
        if !(o.bloom_bits_per_key >= 0.0 && o.bloom_bits_per_key.is_finite()) {
            return fail(format!(
                "bloom_bits_per_key must be a number of bits, 0 or more, not {}",
                o.bloom_bits_per_key
            ));
        }
        for (name, t) in &o.table_options {
            if t.target_file_size_base == Some(0) {
                return fail(format!(
                    "table {name:?}: target_file_size_base must be positive, not 0"
                ));
            }
        }
        o.write_buffer_size = o.write_buffer_size.clamp(64 << 10, 64 << 30);
        o.max_write_buffer_number = o.max_write_buffer_number.max(2);
        o.min_write_buffer_number_to_merge = o
            .min_write_buffer_number_to_merge
            .clamp(1, o.max_write_buffer_number - 1);
        if o.arena_block_size == 0 {
            o.arena_block_size = (o.write_buffer_size / 8).min(1 << 20);
        }
        o.arena_block_size = o.arena_block_size.div_ceil(4096) * 4096;
        o.level0_file_num_compaction_trigger = o.level0_file_num_compaction_trigger.max(1);
        o.level0_slowdown_writes_trigger = o
            .level0_slowdown_writes_trigger
            .max(o.level0_file_num_compaction_trigger);
        o.level0_stop_writes_trigger = o
            .level0_stop_writes_trigger
            .max(o.level0_slowdown_writes_trigger);
        if o.max_bytes_for_level_multiplier <= 0.0 || o.max_bytes_for_level_multiplier.is_nan() {
            o.max_bytes_for_level_multiplier = 1.0;
        }
        o.target_file_size_multiplier = o.target_file_size_multiplier.max(1);
        if o.max_compaction_bytes == 0 {
            o.max_compaction_bytes = o.target_file_size_base.saturating_mul(25);
        }
        if o.soft_pending_compaction_bytes_limit == 0 {
            o.soft_pending_compaction_bytes_limit = o.hard_pending_compaction_bytes_limit;
        } else if o.hard_pending_compaction_bytes_limit > 0 {
            o.soft_pending_compaction_bytes_limit = o
                .soft_pending_compaction_bytes_limit
                .min(o.hard_pending_compaction_bytes_limit);
        }
        o.max_subcompactions = o.max_subcompactions.max(1);
        o.delayed_write_rate = o.delayed_write_rate.max(16 << 10);
        if !o.daily_offpeak_time_utc.is_empty() {
            OffpeakWindow::parse(&o.daily_offpeak_time_utc).map_err(|e| {
                InvalidArgumentSnafu {
                    message: e.to_string(),
                }
                .build()
            })?;
        }
        if let Some(t) = &o.scheduled_major_time_utc {
            DailyTime::parse(t).map_err(|e| {
                InvalidArgumentSnafu {
                    message: e.to_string(),
                }
                .build()
            })?;
        }
        for (name, t) in &o.table_options {
            if let Some(time) = &t.scheduled_major_time_utc {
                DailyTime::parse(time).map_err(|e| {
                    InvalidArgumentSnafu {
                        message: format!("table {name}: {e}"),
                    }
                    .build()
                })?;
            }
        }
        o.max_write_batch_group_size_bytes = o.max_write_batch_group_size_bytes.max(1);
        Ok(o)
    }

    /// `periodic_compaction_seconds` after RocksDB's defaulting.
    pub(crate) fn effective_periodic_compaction_seconds(&self) -> u64 {
        match self.periodic_compaction_seconds {
            Some(s) => s,
            None if self.compaction_filter.is_some() => 30 * 24 * 3600,
            None => 0,
        }
    }

    /// Flushes and compactions allowed at once: RocksDB's `GetBGJobLimits`
    /// split of `max_background_jobs`.
    pub(crate) fn job_limits(&self) -> (usize, usize) {
        let flushes = (self.max_background_jobs / 4).max(1);
        let compactions = self.max_background_jobs.saturating_sub(flushes).max(1);
        (flushes, compactions)
    }
}

/// Options of one write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriteOptions {
    /// Make the write durable (fsync the WAL) before returning (default
    /// false: the write survives a process crash but maybe not a power
    /// loss).
    pub sync: bool,
    /// Skip the WAL: the write is lost on a crash unless a flush made it
    /// durable first (default false).
    pub disable_wal: bool,
    /// Fail with `InvalidArgument` instead of waiting when writes are
    /// stalled (RocksDB returns `Incomplete`; default false).
    pub no_slowdown: bool,
}

lithify_base::options_builder!(WriteOptions {
    sync: bool,
    disable_wal: bool,
    no_slowdown: bool,
});

/// Options of a read (`get`, iterators).
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ReadOptions {
    /// Read as of this snapshot (default: the latest state).
    pub snapshot: Option<Snapshot>,
    /// Iterators start at or after this key (inclusive).
    pub lower_bound: Option<Bytes>,
    /// Iterators stop before this key (exclusive).
    pub upper_bound: Option<Bytes>,
}

lithify_base::options_builder!(ReadOptions {
    snapshot: Option<Snapshot>,
    lower_bound: Option<Bytes>,
    upper_bound: Option<Bytes>,
});

impl ReadOptions {
    /// Reads as of `snapshot`.
    pub fn at(snapshot: &Snapshot) -> Self {
        ReadOptions::default().snapshot(Some(snapshot.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rocksdb_defaults_and_sanitisation() {
        let o = Options::default();
        assert_eq!(o.write_buffer_size, 64 << 20);
        assert_eq!(o.max_write_buffer_number, 2);
        assert_eq!(o.level0_slowdown_writes_trigger, 20);
        assert_eq!(o.level0_stop_writes_trigger, 36);
        assert_eq!(o.max_bytes_for_level_base, 256 << 20);
        assert_eq!(o.num_levels, 7);
        assert!(o.level_compaction_dynamic_level_bytes);
        let s = o.sanitized().unwrap();
        assert_eq!(s.max_compaction_bytes, 25 * (64 << 20));
        assert_eq!(s.arena_block_size, 1 << 20);
        assert_eq!(s.job_limits(), (1, 1));
        let weird = Options::default()
            .max_write_buffer_number(1)
            .level0_file_num_compaction_trigger(10)
            .level0_slowdown_writes_trigger(2)
            .level0_stop_writes_trigger(1)
            .write_buffer_size(1)
            .max_background_jobs(8)
            .sanitized()
            .unwrap();
        assert_eq!(weird.max_write_buffer_number, 2);
        assert_eq!(weird.level0_slowdown_writes_trigger, 10);
        assert_eq!(weird.level0_stop_writes_trigger, 10);
        assert_eq!(weird.write_buffer_size, 64 << 10);
        assert_eq!(weird.arena_block_size, 8192);
        assert_eq!(weird.job_limits(), (2, 6));
        assert!(Options::default().num_levels(1).sanitized().is_err());
    }
}
