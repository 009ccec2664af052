//! One adapter per engine, all opened with the same options: 64 MiB
//! memtable, 64 MiB block cache, 10 bloom bits per key, two background
//! jobs, no compression unless asked, the WAL written and synced only when
//! a write asks.

use std::path::Path;

/// Errors of any engine, as text.
pub type Result<T> = std::result::Result<T, String>;

/// What every engine gets configured with.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// zstd data blocks (level 3) instead of none.
    pub zstd: bool,
    /// WAL records compressed: each engine's own way (lithify LZ4 per
    /// record, RocksDB `wal_compression` zstd as one stream per WAL).
    pub wal_compression: bool,
    /// lithify's `release_memory_after_jobs` (on unless `run` is given
    /// `--no-release-memory`, which measures the library's default).
    pub release_memory: bool,
    /// Key-value separation for values of at least this many bytes
    /// (`--blob-min-size`): lithify's and RocksDB's blob files
    /// (`enable_blob_files`, `min_blob_size`), fjall's KV separation
    /// (`separation_threshold`). Garbage collection is on in lithify and
    /// RocksDB (`enable_blob_garbage_collection`, age cutoff 0.25); fjall
    /// collects by its own defaults. Other blob settings are each
    /// engine's defaults.
    pub blob_min_size: Option<u64>,
    /// `blob_garbage_collection_age_cutoff` of lithify and RocksDB when
    /// separating (`--blob-age-cutoff`; their default, 0.25, otherwise).
    pub blob_age_cutoff: Option<f64>,
    /// lithify and RocksDB keep 4 obsolete WAL files to write later WALs
    /// over (`recycle_log_file_num`, `--recycle-wal`); fjall has no such
    /// setting.
    pub recycle_wal: bool,
    /// Memtable bytes of every engine (`--write-buffer-size`; 64 MiB).
    pub write_buffer_size: usize,
}

/// The memtable size unless `--write-buffer-size` says otherwise.
pub const MEMTABLE: usize = 64 << 20;

const CACHE: usize = 64 << 20;

/// The operations the workloads need.
pub trait Kv: Send + Sync {
    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()>;
    /// Whether the key was found.
    fn get(&self, key: &[u8]) -> Result<bool>;
    /// Seeks to `key` and steps `next` entries; returns the entries seen.
    fn seek_next(&self, key: &[u8], next: usize) -> Result<usize>;
    /// Flushes the memtable and compacts everything into the last level.
    fn compact_all(&self) -> Result<()>;
    /// The engine's own count of bytes it wrote so far, split into WAL,
    /// flush and compaction bytes, and of its WAL syncs, where it keeps
    /// one.
    fn write_counters(&self) -> Option<WriteCounters>;
    /// Closes cleanly.
    fn close(self: Box<Self>) -> Result<()>;
}

/// Bytes an engine says it wrote, by kind, and its WAL syncs.
#[derive(Clone, Copy, Debug, Default)]
pub struct WriteCounters {
    pub wal: u64,
    pub flush: u64,
    pub compaction: u64,
    pub wal_syncs: u64,
}

impl std::ops::Sub for WriteCounters {
    type Output = WriteCounters;
    fn sub(self, o: WriteCounters) -> WriteCounters {
        WriteCounters {
            wal: self.wal.saturating_sub(o.wal),
            flush: self.flush.saturating_sub(o.flush),
            compaction: self.compaction.saturating_sub(o.compaction),
            wal_syncs: self.wal_syncs.saturating_sub(o.wal_syncs),
        }
    }
}

/// The engine names `--engine` takes.
pub const ENGINES: [&str; 3] = ["lithify", "rocksdb", "fjall"];

/// Whether `path` (relative to the database directory) is one of
/// `engine`'s write-ahead log files, all in the directory itself:
/// `NNNNNN.log` for lithify and RocksDB, `N.jnl` for fjall's journals.
pub fn is_wal_file(engine: &str, path: &Path) -> bool {
    let suffix = if engine == "fjall" { ".jnl" } else { ".log" };
    path.parent().is_some_and(|p| p.as_os_str().is_empty())
        && path
            .to_str()
            .and_then(|n| n.strip_suffix(suffix))
            .is_some_and(|stem| !stem.is_empty() && stem.bytes().all(|b| b.is_ascii_digit()))
}

/// Opens (creating) the named engine's database in `dir`.
pub fn open(engine: &str, dir: &Path, config: Config) -> Result<Box<dyn Kv>> {
    match engine {
        "lithify" => Lithify::open(dir, config).map(|e| Box::new(e) as Box<dyn Kv>),
        "rocksdb" => Rocks::open(dir, config).map(|e| Box::new(e) as Box<dyn Kv>),
        "fjall" => Fjall::open(dir, config).map(|e| Box::new(e) as Box<dyn Kv>),
        other => Err(format!("unknown engine {other:?}: one of {ENGINES:?}")),
    }
}

fn text(e: impl std::fmt::Display) -> String {
    e.to_string()
}

struct Lithify(lithify::Db);

/// The lithify database every lithify adapter opens.
fn lithify_db(dir: &Path, config: Config) -> Result<lithify::Db> {
    use std::sync::Arc;
    let options = lithify::Options::default()
        .write_buffer_size(config.write_buffer_size)
        .recycle_log_file_num(if config.recycle_wal { 4 } else { 0 })
        .block_cache(Some(Arc::new(lithify::BlockCache::new(CACHE))))
        .block_cache_size(CACHE)
        .bloom_bits_per_key(10.0)
        .max_background_jobs(2)
        // Off by default in the library (it trims the whole process's
        // heap); on here, as `lithify bench` has it, and said under the
        // table. RocksDB and fjall have no such setting.
        .release_memory_after_jobs(config.release_memory)
        .compression(if config.zstd {
            lithify::Compression::Zstd { level: 3 }
        } else {
            lithify::Compression::None
        })
        .wal_compression(if config.wal_compression {
            lithify::WalCompression::Lz4
        } else {
            lithify::WalCompression::None
        });
    let options = match config.blob_min_size {
        Some(min) => {
            let mut blob = lithify::BlobOptions::enabled(min).enable_blob_garbage_collection(true);
            if let Some(cutoff) = config.blob_age_cutoff {
                blob = blob.blob_garbage_collection_age_cutoff(cutoff);
            }
            options.blob(blob)
        }
        None => options,
    };
    lithify::Db::open(dir, options).map_err(text)
}

impl Lithify {
    fn open(dir: &Path, config: Config) -> Result<Self> {
        lithify_db(dir, config).map(Lithify)
    }
}

impl Kv for Lithify {
    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        if sync {
            let o = lithify::WriteOptions::default().sync(true);
            self.0.put_opt(key, value, &o).map_err(text)
        } else {
            self.0.put(key, value).map_err(text)
        }
    }

    fn get(&self, key: &[u8]) -> Result<bool> {
        self.0.get(key).map(|v| v.is_some()).map_err(text)
    }

    fn seek_next(&self, key: &[u8], next: usize) -> Result<usize> {
        let mut it = self
            .0
            .raw_iterator(&lithify::ReadOptions::default())
            .map_err(text)?;
        it.seek(key).map_err(text)?;
        let mut seen = 0;
        while it.key().is_some() && seen <= next {
            seen += 1;
            it.next().map_err(text)?;
        }
        Ok(seen)
    }

    fn compact_all(&self) -> Result<()> {
        self.0.flush().map_err(text)?;
        let o = lithify::CompactRangeOptions::default()
            .bottommost_level_compaction(lithify::BottommostLevelCompaction::Force);
        self.0
            .compact_range_opt(None::<&[u8]>, None::<&[u8]>, &o)
            .map_err(text)
    }

    fn write_counters(&self) -> Option<WriteCounters> {
        let s = self.0.stats();
        Some(WriteCounters {
            wal: s.wal_bytes,
            flush: s.flush_bytes,
            compaction: s.compaction_write_bytes,
            wal_syncs: s.wal_syncs,
        })
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.0.close().map_err(text)
    }
}

/// The database and the options it was opened with (they hold the
/// statistics object the tickers are read from).
struct Rocks(rocksdb::DB, rocksdb::Options);

/// The options every RocksDB adapter opens with.
fn rocks_options(config: Config) -> rocksdb::Options {
    let mut table = rocksdb::BlockBasedOptions::default();
    table.set_block_cache(&rocksdb::Cache::new_lru_cache(CACHE));
    table.set_bloom_filter(10.0, false);
    let mut o = rocksdb::Options::default();
    o.create_if_missing(true);
    o.set_write_buffer_size(config.write_buffer_size);
    if config.recycle_wal {
        o.set_recycle_log_file_num(4);
    }
    o.set_max_background_jobs(2);
    o.set_block_based_table_factory(&table);
    // For the WAL / flush / compaction split of the bytes written: tickers
    // only (no histograms, no timers), the cheapest statistics level.
    o.enable_statistics();
    o.set_statistics_level(rocksdb::statistics::StatsLevel::ExceptHistogramOrTimers);
    if config.wal_compression {
        // RocksDB's only WAL codec.
        o.set_wal_compression_type(rocksdb::DBCompressionType::Zstd);
    }
    o.set_compression_type(if config.zstd {
        rocksdb::DBCompressionType::Zstd
    } else {
        rocksdb::DBCompressionType::None
    });
    if let Some(min) = config.blob_min_size {
        o.set_enable_blob_files(true);
        o.set_min_blob_size(min);
        o.set_enable_blob_gc(true);
        if let Some(cutoff) = config.blob_age_cutoff {
            o.set_blob_gc_age_cutoff(cutoff);
        }
    }
    o
}

impl Rocks {
    fn open(dir: &Path, config: Config) -> Result<Self> {
        let options = rocks_options(config);
        rocksdb::DB::open(&options, dir)
            .map(|db| Rocks(db, options))
            .map_err(text)
    }
}

impl Kv for Rocks {
    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        let mut o = rocksdb::WriteOptions::default();
        o.set_sync(sync);
        self.0.put_opt(key, value, &o).map_err(text)
    }

    fn get(&self, key: &[u8]) -> Result<bool> {
        self.0.get_pinned(key).map(|v| v.is_some()).map_err(text)
    }

    fn seek_next(&self, key: &[u8], next: usize) -> Result<usize> {
        let mut it = self.0.raw_iterator();
        it.seek(key);
        let mut seen = 0;
        while it.valid() && seen <= next {
            seen += 1;
            it.next();
        }
        it.status().map_err(text)?;
        Ok(seen)
    }

    fn compact_all(&self) -> Result<()> {
        self.0.flush().map_err(text)?;
        let mut o = rocksdb::CompactOptions::default();
        o.set_bottommost_level_compaction(rocksdb::BottommostLevelCompaction::Force);
        self.0.compact_range_opt(None::<&[u8]>, None::<&[u8]>, &o);
        Ok(())
    }

    fn write_counters(&self) -> Option<WriteCounters> {
        use rocksdb::statistics::Ticker;
        Some(WriteCounters {
            wal: self.1.get_ticker_count(Ticker::WalFileBytes),
            flush: self.1.get_ticker_count(Ticker::FlushWriteBytes),
            compaction: self.1.get_ticker_count(Ticker::CompactWriteBytes),
            wal_syncs: self.1.get_ticker_count(Ticker::WalFileSynced),
        })
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.0.flush_wal(true).map_err(text)?;
        drop(self);
        Ok(())
    }
}

/// The options of every fjall keyspace.
fn fjall_keyspace(config: Config) -> fjall::KeyspaceCreateOptions {
    fjall::KeyspaceCreateOptions::default()
        .max_memtable_size(config.write_buffer_size as u64)
        .data_block_compression_policy(fjall::config::CompressionPolicy::disabled())
}

struct Fjall {
    db: fjall::Database,
    ks: fjall::Keyspace,
}

impl Fjall {
    fn open(dir: &Path, config: Config) -> Result<Self> {
        if config.zstd {
            return Err("fjall has no zstd compression".to_owned());
        }
        if config.wal_compression {
            return Err("fjall compresses only journal values of 4 KiB or more".to_owned());
        }
        if config.recycle_wal {
            return Err("fjall has no WAL recycling".to_owned());
        }
        let db = fjall::Database::builder(dir)
            .cache_size(CACHE as u64)
            .open()
            .map_err(text)?;
        let ks = match config.blob_min_size {
            None => db.keyspace("default", || fjall_keyspace(config)),
            Some(min) => db.keyspace("default", || {
                let threshold = u32::try_from(min).unwrap_or(u32::MAX);
                fjall_keyspace(config).with_kv_separation(Some(
                    fjall::KvSeparationOptions::default().separation_threshold(threshold),
                ))
            }),
        }
        .map_err(text)?;
        Ok(Fjall { db, ks })
    }
}

impl Kv for Fjall {
    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        if sync {
            let mut b = self
                .db
                .batch()
                .durability(Some(fjall::PersistMode::SyncData));
            b.insert(&self.ks, key, value);
            b.commit().map_err(text)
        } else {
            self.ks.insert(key, value).map_err(text)
        }
    }

    fn get(&self, key: &[u8]) -> Result<bool> {
        self.ks.get(key).map(|v| v.is_some()).map_err(text)
    }

    fn seek_next(&self, key: &[u8], next: usize) -> Result<usize> {
        let mut seen = 0;
        for kv in self.ks.range(key..).take(next + 1) {
            kv.key().map_err(text)?;
            seen += 1;
        }
        Ok(seen)
    }

    fn compact_all(&self) -> Result<()> {
        self.ks.rotate_memtable_and_wait().map_err(text)?;
        self.ks.major_compact().map_err(text)
    }

    fn write_counters(&self) -> Option<WriteCounters> {
        None
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.persist(fjall::PersistMode::Buffer).map_err(text)
    }
}

// ------------------------------------------------------- transactions ----

/// How a transactional database keeps transactions apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnMode {
    /// No locks; a commit is validated against the writes made since the
    /// transaction's snapshot (taken when it begins).
    Optimistic,
    /// `get_for_update` locks the key until the transaction ends (no
    /// snapshot); a lock wait times out after [`LOCK_TIMEOUT`], and a wait
    /// that would close a cycle fails at once (deadlock detection).
    Pessimistic,
}

/// The `--txn` names.
pub const TXN_MODES: [&str; 2] = ["optimistic", "pessimistic"];

impl TxnMode {
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "optimistic" => Ok(TxnMode::Optimistic),
            "pessimistic" => Ok(TxnMode::Pessimistic),
            other => Err(format!("unknown --txn {other:?}: one of {TXN_MODES:?}")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            TxnMode::Optimistic => "optimistic",
            TxnMode::Pessimistic => "pessimistic",
        }
    }
}

/// How long a pessimistic transaction waits for a lock.
pub const LOCK_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(100);

/// A transactional database: what `randomtransaction` needs.
pub trait TxnKv: Send + Sync {
    /// One transaction: for each key in order, reads it for update (a
    /// missing key counts 0; a value is an 8-byte little-endian counter),
    /// adds `increment` and writes it back; then commits. `Ok(false)` if
    /// another transaction got in the way (a conflict, a lock wait timeout,
    /// a deadlock): the transaction was rolled back, nothing written.
    fn rmw(&self, keys: &[[u8; 16]; 2], increment: u64) -> Result<bool>;
    /// The sum of the counters of the keys starting with `prefix` (read
    /// when no transaction runs).
    fn sum_prefix(&self, prefix: &[u8]) -> Result<u128>;
    /// Closes cleanly.
    fn close(self: Box<Self>) -> Result<()>;
}

/// Opens (creating) the named engine's transactional database in `dir`.
pub fn open_txn(engine: &str, mode: TxnMode, dir: &Path, config: Config) -> Result<Box<dyn TxnKv>> {
    match engine {
        "lithify" => LithifyTxn::open(mode, dir, config).map(|e| Box::new(e) as Box<dyn TxnKv>),
        "rocksdb" => RocksTxn::open(mode, dir, config).map(|e| Box::new(e) as Box<dyn TxnKv>),
        "fjall" => FjallTxn::open(mode, dir, config).map(|e| Box::new(e) as Box<dyn TxnKv>),
        other => Err(format!("unknown engine {other:?}: one of {ENGINES:?}")),
    }
}

/// An 8-byte little-endian counter.
fn counter(key: &[u8], value: Option<&[u8]>) -> Result<u64> {
    match value {
        None => Ok(0),
        Some(v) => v.try_into().map(u64::from_le_bytes).map_err(|_| {
            format!(
                "key {} holds {} bytes, not an 8-byte counter",
                String::from_utf8_lossy(key),
                v.len()
            )
        }),
    }
}

enum LithifyTxn {
    Optimistic(lithify::txn::OptimisticDb),
    Pessimistic(lithify::txn::TransactionDb),
}

impl LithifyTxn {
    fn open(mode: TxnMode, dir: &Path, config: Config) -> Result<Self> {
        use lithify::txn::{OptimisticDb, TransactionDb, TransactionDbOptions};
        let db = lithify_db(dir, config)?;
        Ok(match mode {
            TxnMode::Optimistic => LithifyTxn::Optimistic(OptimisticDb::new(db)),
            TxnMode::Pessimistic => {
                LithifyTxn::Pessimistic(TransactionDb::new(db, TransactionDbOptions::default()))
            }
        })
    }

    fn db(&self) -> &lithify::Db {
        match self {
            LithifyTxn::Optimistic(db) => db.db(),
            LithifyTxn::Pessimistic(db) => db.db(),
        }
    }
}

/// `Some` of a transaction call's value, `None` if another transaction got
/// in the way.
fn lithify_unless_busy<T>(r: lithify::txn::Result<T>) -> Result<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_busy() => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

impl TxnKv for LithifyTxn {
    fn rmw(&self, keys: &[[u8; 16]; 2], increment: u64) -> Result<bool> {
        let mut txn = match self {
            // The snapshot at begin (the default), as RocksDB's and
            // fjall's optimistic transactions here.
            LithifyTxn::Optimistic(db) => db.transaction(),
            LithifyTxn::Pessimistic(db) => db.transaction_opt(
                &lithify::WriteOptions::default(),
                &lithify::txn::TransactionOptions::default()
                    .deadlock_detect(true)
                    .lock_timeout(Some(LOCK_TIMEOUT)),
            ),
        };
        for key in keys {
            let Some(value) = lithify_unless_busy(txn.get_for_update(key))? else {
                return Ok(false);
            };
            let n = counter(key, value.as_deref())?.wrapping_add(increment);
            if lithify_unless_busy(txn.put(key, n.to_le_bytes()))?.is_none() {
                return Ok(false);
            }
        }
        Ok(lithify_unless_busy(txn.commit())?.is_some())
    }

    fn sum_prefix(&self, prefix: &[u8]) -> Result<u128> {
        let mut it = self
            .db()
            .raw_iterator(&lithify::ReadOptions::default())
            .map_err(text)?;
        it.seek(prefix).map_err(text)?;
        let mut sum = 0;
        while let Some(k) = it.key() {
            if !k.starts_with(prefix) {
                break;
            }
            sum += u128::from(counter(k, it.value())?);
            it.next().map_err(text)?;
        }
        Ok(sum)
    }

    fn close(self: Box<Self>) -> Result<()> {
        match *self {
            LithifyTxn::Optimistic(db) => db.close().map_err(text),
            LithifyTxn::Pessimistic(db) => db.close().map_err(text),
        }
    }
}

enum RocksTxn {
    Optimistic(rocksdb::OptimisticTransactionDB),
    Pessimistic(rocksdb::TransactionDB),
}

impl RocksTxn {
    fn open(mode: TxnMode, dir: &Path, config: Config) -> Result<Self> {
        let o = rocks_options(config);
        Ok(match mode {
            TxnMode::Optimistic => {
                RocksTxn::Optimistic(rocksdb::OptimisticTransactionDB::open(&o, dir).map_err(text)?)
            }
            TxnMode::Pessimistic => {
                let mut t = rocksdb::TransactionDBOptions::default();
                t.set_txn_lock_timeout(LOCK_TIMEOUT.as_millis() as i64);
                RocksTxn::Pessimistic(rocksdb::TransactionDB::open(&o, &t, dir).map_err(text)?)
            }
        })
    }
}

/// Whether a RocksDB error means another transaction got in the way.
fn rocks_busy(e: &rocksdb::Error) -> bool {
    use rocksdb::ErrorKind::*;
    matches!(e.kind(), Busy | TimedOut | TryAgain)
}

/// One `rmw` transaction on either RocksDB transaction type.
fn rocks_rmw<D>(
    txn: rocksdb::Transaction<'_, D>,
    keys: &[[u8; 16]; 2],
    increment: u64,
) -> Result<bool> {
    let unless_busy = |r: std::result::Result<(), rocksdb::Error>| match r {
        Ok(()) => Ok(true),
        Err(e) if rocks_busy(&e) => Ok(false),
        Err(e) => Err(e.to_string()),
    };
    for key in keys {
        let n = match txn.get_pinned_for_update(key, true) {
            Ok(v) => counter(key, v.as_deref())?.wrapping_add(increment),
            Err(e) if rocks_busy(&e) => {
                txn.rollback().map_err(text)?;
                return Ok(false);
            }
            Err(e) => return Err(e.to_string()),
        };
        if !unless_busy(txn.put(key, n.to_le_bytes()))? {
            txn.rollback().map_err(text)?;
            return Ok(false);
        }
    }
    unless_busy(txn.commit())
}

/// The sum of the counters under `prefix`, from a RocksDB iterator.
fn rocks_sum<'a>(
    it: impl Iterator<Item = std::result::Result<(Box<[u8]>, Box<[u8]>), rocksdb::Error>> + 'a,
    prefix: &[u8],
) -> Result<u128> {
    let mut sum = 0;
    for kv in it {
        let (k, v) = kv.map_err(text)?;
        if !k.starts_with(prefix) {
            break;
        }
        sum += u128::from(counter(&k, Some(&v))?);
    }
    Ok(sum)
}

impl TxnKv for RocksTxn {
    fn rmw(&self, keys: &[[u8; 16]; 2], increment: u64) -> Result<bool> {
        let w = rocksdb::WriteOptions::default();
        match self {
            RocksTxn::Optimistic(db) => {
                let mut o = rocksdb::OptimisticTransactionOptions::default();
                o.set_snapshot(true);
                rocks_rmw(db.transaction_opt(&w, &o), keys, increment)
            }
            RocksTxn::Pessimistic(db) => {
                let mut o = rocksdb::TransactionOptions::default();
                o.set_deadlock_detect(true);
                o.set_lock_timeout(LOCK_TIMEOUT.as_millis() as i64);
                rocks_rmw(db.transaction_opt(&w, &o), keys, increment)
            }
        }
    }

    fn sum_prefix(&self, prefix: &[u8]) -> Result<u128> {
        let from = rocksdb::IteratorMode::From(prefix, rocksdb::Direction::Forward);
        match self {
            RocksTxn::Optimistic(db) => rocks_sum(db.iterator(from), prefix),
            RocksTxn::Pessimistic(db) => rocks_sum(db.iterator(from), prefix),
        }
    }

    fn close(self: Box<Self>) -> Result<()> {
        match &*self {
            RocksTxn::Optimistic(db) => db.flush_wal(true).map_err(text)?,
            RocksTxn::Pessimistic(db) => db.flush_wal(true).map_err(text)?,
        }
        drop(self);
        Ok(())
    }
}

struct FjallTxn {
    db: fjall::OptimisticTxDatabase,
    ks: fjall::OptimisticTxKeyspace,
}

impl FjallTxn {
    fn open(mode: TxnMode, dir: &Path, config: Config) -> Result<Self> {
        if mode == TxnMode::Pessimistic {
            return Err("fjall has no pessimistic (locking) transactions".to_owned());
        }
        if config.zstd {
            return Err("fjall has no zstd compression".to_owned());
        }
        if config.wal_compression {
            return Err("fjall compresses only journal values of 4 KiB or more".to_owned());
        }
        let db = fjall::OptimisticTxDatabase::builder(dir)
            .cache_size(CACHE as u64)
            .open()
            .map_err(text)?;
        let ks = db
            .keyspace("default", || fjall_keyspace(config))
            .map_err(text)?;
        Ok(FjallTxn { db, ks })
    }
}

impl TxnKv for FjallTxn {
    fn rmw(&self, keys: &[[u8; 16]; 2], increment: u64) -> Result<bool> {
        use fjall::Readable as _;
        // fjall's transactions read at the snapshot taken when they begin
        // and are validated at commit against the keys they read.
        let mut tx = self.db.write_tx().map_err(text)?;
        for key in keys {
            let value = tx.get(&self.ks, key).map_err(text)?;
            let n = counter(key, value.as_deref())?.wrapping_add(increment);
            tx.insert(&self.ks, key.as_slice(), n.to_le_bytes().as_slice());
        }
        match tx.commit().map_err(text)? {
            Ok(()) => Ok(true),
            Err(fjall::Conflict) => Ok(false),
        }
    }

    fn sum_prefix(&self, prefix: &[u8]) -> Result<u128> {
        let mut sum = 0;
        for kv in self.ks.inner().prefix(prefix) {
            let (k, v) = kv.into_inner().map_err(text)?;
            sum += u128::from(counter(&k, Some(&v))?);
        }
        Ok(sum)
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.persist(fjall::PersistMode::Buffer).map_err(text)
    }
}
