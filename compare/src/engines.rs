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
}

const MEMTABLE: usize = 64 << 20;
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
    /// Closes cleanly.
    fn close(self: Box<Self>) -> Result<()>;
}

/// The engine names `--engine` takes.
pub const ENGINES: [&str; 3] = ["lithify", "rocksdb", "fjall"];

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

impl Lithify {
    fn open(dir: &Path, config: Config) -> Result<Self> {
        use std::sync::Arc;
        let options = lithify::Options {
            write_buffer_size: MEMTABLE,
            block_cache: Some(Arc::new(lithify::BlockCache::new(CACHE))),
            block_cache_size: CACHE,
            bloom_bits_per_key: 10.0,
            max_background_jobs: 2,
            compression: if config.zstd {
                lithify::Compression::Zstd { level: 3 }
            } else {
                lithify::Compression::None
            },
            ..lithify::Options::default()
        };
        lithify::Db::open(dir, options).map(Lithify).map_err(text)
    }
}

impl Kv for Lithify {
    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        if sync {
            let o = lithify::WriteOptions {
                sync: true,
                ..lithify::WriteOptions::default()
            };
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
        let o = lithify::CompactRangeOptions {
            bottommost_level_compaction: lithify::BottommostLevelCompaction::Force,
            ..lithify::CompactRangeOptions::default()
        };
        self.0
            .compact_range_opt(None::<&[u8]>, None::<&[u8]>, &o)
            .map_err(text)
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.0.close().map_err(text)
    }
}

struct Rocks(rocksdb::DB);

impl Rocks {
    fn open(dir: &Path, config: Config) -> Result<Self> {
        let mut table = rocksdb::BlockBasedOptions::default();
        table.set_block_cache(&rocksdb::Cache::new_lru_cache(CACHE));
        table.set_bloom_filter(10.0, false);
        let mut o = rocksdb::Options::default();
        o.create_if_missing(true);
        o.set_write_buffer_size(MEMTABLE);
        o.set_max_background_jobs(2);
        o.set_block_based_table_factory(&table);
        o.set_compression_type(if config.zstd {
            rocksdb::DBCompressionType::Zstd
        } else {
            rocksdb::DBCompressionType::None
        });
        rocksdb::DB::open(&o, dir).map(Rocks).map_err(text)
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

    fn close(self: Box<Self>) -> Result<()> {
        self.0.flush_wal(true).map_err(text)?;
        drop(self);
        Ok(())
    }
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
        let db = fjall::Database::builder(dir)
            .cache_size(CACHE as u64)
            .open()
            .map_err(text)?;
        let ks = db
            .keyspace("default", || {
                fjall::KeyspaceCreateOptions::default()
                    .max_memtable_size(MEMTABLE as u64)
                    .data_block_compression_policy(fjall::config::CompressionPolicy::disabled())
            })
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

    fn close(self: Box<Self>) -> Result<()> {
        self.db.persist(fjall::PersistMode::Buffer).map_err(text)
    }
}
