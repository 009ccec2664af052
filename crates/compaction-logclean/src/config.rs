//! The cleaner's own settings, under Kafka's broker names and defaults
//! (Kafka's `CleanerConfig`). A log's settings (`min.cleanable.dirty.ratio`,
//! `delete.retention.ms`, ...) live in its [`LogConfig`](crate::LogConfig).
//!
//! | name | default | meaning |
//! |---|---|---|
//! | `log.cleaner.threads` | 1 | cleaner threads of a [`LogCleaner`](crate::LogCleaner) |
//! | `log.cleaner.dedupe.buffer.size` | 134217728 | offset map memory, shared by all threads |
//! | `log.cleaner.io.buffer.load.factor` | 0.9 | the offset map's load factor |
//! | `log.cleaner.io.buffer.size` | 524288 | I/O buffers, shared by all threads (a thread writes in chunks of size / threads / 2) |
//! | `log.cleaner.io.max.bytes.per.second` | 1.7976931348623157E308 | throttle on bytes read and written, all threads together |
//! | `log.cleaner.backoff.ms` | 15000 | a thread's sleep when no log needs cleaning |
//! | `message.max.bytes` | 1048588 | with the log's `max.message.bytes`, the largest batch the cleaner accepts |
//! | `producer.id.expiration.ms` | 86400000 | how long an idempotent producer stays active (its last batch is kept) |
//! | `lithify.cleaner.digest` | `md5` | `md5` (Kafka's) or `xxh3` (faster, same map layout) |
//! | `lithify.cleaner.read.ahead` | `true` | a round reads, checks and decompresses batches ahead on a second thread while a core is idle (no cleaner thread awake on it) |
//!
//! Kafka requires more than 1 MiB of map memory per thread; we accept any
//! memory that holds a map able to make progress (`slots * load factor >
//! 1`), so tests can force map-full rounds with a few slots.
//!
//! ```
//! use lithify_compaction_logclean::CleanerConfig;
//!
//! let c = CleanerConfig::from_properties([
//!     ("log.cleaner.dedupe.buffer.size", "480"),
//!     ("log.cleaner.io.buffer.load.factor", "0.75"),
//! ]).unwrap();
//! assert_eq!(c.map_memory_per_thread(), 480);
//! assert!(CleanerConfig::default().set("log.cleaner.threads", "x").is_err());
//! ```

use std::str::FromStr;

use lithify_offsetmap::{DigestKind, LoadFactor};

use crate::error::{InvalidArgumentSnafu, Result};

/// The cleaner's settings.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CleanerConfig {
    /// `log.cleaner.threads`.
    pub threads: usize,
    /// `log.cleaner.dedupe.buffer.size`: bytes of offset map, all threads.
    pub dedupe_buffer_size: u64,
    /// `log.cleaner.io.buffer.load.factor`.
    pub dedupe_buffer_load_factor: LoadFactor,
    /// `log.cleaner.io.buffer.size`: bytes of I/O buffers, all threads.
    pub io_buffer_size: usize,
    /// `log.cleaner.io.max.bytes.per.second`.
    pub max_io_bytes_per_second: f64,
    /// `log.cleaner.backoff.ms`.
    pub backoff_ms: u64,
    /// `message.max.bytes` (the broker's largest batch).
    pub max_message_bytes: i32,
    /// `producer.id.expiration.ms`.
    pub producer_id_expiration_ms: i64,
    /// `lithify.cleaner.digest`: the offset map's key digest.
    pub digest: DigestKind,
    /// `lithify.cleaner.read.ahead`: whether a round may read, check and
    /// decompress batches ahead on a second thread while a core of the
    /// machine is idle. The round's outcome is the same either way.
    pub read_ahead: bool,
}

lithify_base::options_builder!(CleanerConfig {
    threads: usize,
    dedupe_buffer_size: u64,
    dedupe_buffer_load_factor: LoadFactor,
    io_buffer_size: usize,
    max_io_bytes_per_second: f64,
    backoff_ms: u64,
    max_message_bytes: i32,
    producer_id_expiration_ms: i64,
    digest: DigestKind,
    read_ahead: bool,
});

impl Default for CleanerConfig {
    fn default() -> Self {
        CleanerConfig {
            threads: 1,
            dedupe_buffer_size: 128 << 20,
            dedupe_buffer_load_factor: LoadFactor::KAFKA_DEFAULT,
            io_buffer_size: 512 << 10,
            max_io_bytes_per_second: f64::MAX,
            backoff_ms: 15_000,
            max_message_bytes: 1_048_588,
            producer_id_expiration_ms: 86_400_000,
            digest: DigestKind::Md5,
            read_ahead: true,
        }
    }
}

fn parse<T: FromStr>(name: &str, value: &str) -> Result<T> {
    value.trim().parse().map_err(|_| {
        InvalidArgumentSnafu {
            message: format!("{name}={value:?} is not a valid value"),
        }
        .build()
    })
}

fn invalid<T>(message: String) -> Result<T> {
    InvalidArgumentSnafu { message }.fail()
}

impl CleanerConfig {
    /// Every setting name [`CleanerConfig::set`] accepts.
    pub const NAMES: [&'static str; 10] = [
        "log.cleaner.threads",
        "log.cleaner.dedupe.buffer.size",
        "log.cleaner.io.buffer.load.factor",
        "log.cleaner.io.buffer.size",
        "log.cleaner.io.max.bytes.per.second",
        "log.cleaner.backoff.ms",
        "message.max.bytes",
        "producer.id.expiration.ms",
        "lithify.cleaner.digest",
        "lithify.cleaner.read.ahead",
    ];

    /// The defaults with `props` (Kafka names and values) applied in order.
    pub fn from_properties<'a>(
        props: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self> {
        let mut config = CleanerConfig::default();
        for (name, value) in props {
            config.set(name, value)?;
        }
        Ok(config)
    }

    /// Sets one setting by its Kafka name, checking Kafka's bounds.
    pub fn set(&mut self, name: &str, value: &str) -> Result<&mut Self> {
        match name {
            "log.cleaner.threads" => {
                let n: usize = parse(name, value)?;
                if n == 0 {
                    return invalid(format!("{name}={value} must be at least 1"));
                }
                self.threads = n;
            }
            "log.cleaner.dedupe.buffer.size" => self.dedupe_buffer_size = parse(name, value)?,
            "log.cleaner.io.buffer.load.factor" => {
                let lf: f64 = parse(name, value)?;
                self.dedupe_buffer_load_factor = LoadFactor::new(lf).map_err(|e| {
                    InvalidArgumentSnafu {
                        message: format!("{name}={value}: {e}"),
                    }
                    .build()
                })?;
            }
            "log.cleaner.io.buffer.size" => {
                let n: usize = parse(name, value)?;
                if n == 0 {
                    return invalid(format!("{name}={value} must be positive"));
                }
                self.io_buffer_size = n;
            }
            "log.cleaner.io.max.bytes.per.second" => {
                let r: f64 = parse(name, value)?;
                if r.is_nan() || r <= 0.0 {
                    return invalid(format!("{name}={value} must be positive"));
                }
                self.max_io_bytes_per_second = r;
            }
            "log.cleaner.backoff.ms" => self.backoff_ms = parse(name, value)?,
            "message.max.bytes" => {
                let n: i32 = parse(name, value)?;
                if n < 0 {
                    return invalid(format!("{name}={value} must not be negative"));
                }
                self.max_message_bytes = n;
            }
            "producer.id.expiration.ms" => {
                let n: i64 = parse(name, value)?;
                if n < 1 {
                    return invalid(format!("{name}={value} must be at least 1"));
                }
                self.producer_id_expiration_ms = n;
            }
            "lithify.cleaner.digest" => {
                self.digest = match value.trim() {
                    "md5" | "MD5" => DigestKind::Md5,
                    "xxh3" => DigestKind::Xxh3_128,
                    _ => return invalid(format!("{name}={value:?} is not md5 or xxh3")),
                }
            }
            "lithify.cleaner.read.ahead" => {
                self.read_ahead = match value.trim() {
                    "true" => true,
                    "false" => false,
                    _ => return invalid(format!("{name}={value:?} is not true or false")),
                }
            }
            other => return invalid(format!("unknown cleaner setting {other:?}")),
        }
        Ok(self)
    }

    /// Whether `name` is one of the cleaner's settings.
    pub fn is_cleaner_setting(name: &str) -> bool {
        Self::NAMES.contains(&name)
    }

    /// Offset map memory of one thread: `dedupe.buffer.size / threads`,
    /// capped at `i32::MAX` bytes as Kafka caps it.
    pub fn map_memory_per_thread(&self) -> usize {
        let per = self.dedupe_buffer_size / self.threads.max(1) as u64;
        usize::try_from(per.min(i32::MAX as u64)).unwrap_or(i32::MAX as usize)
    }

    /// The chunk size one thread writes in: `io.buffer.size / threads / 2`.
    pub fn write_buffer_per_thread(&self) -> usize {
        (self.io_buffer_size / self.threads.max(1) / 2).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_accepted_and_bad_values_are_named() {
        let good = [
            "4", "1000000", "0.5", "65536", "1e6", "10", "2000000", "1000", "xxh3", "false",
        ];
        let mut c = CleanerConfig::default();
        for (name, value) in CleanerConfig::NAMES.iter().zip(good) {
            c.set(name, value).unwrap();
            assert!(CleanerConfig::is_cleaner_setting(name));
        }
        assert_eq!(c.threads, 4);
        assert_eq!(c.map_memory_per_thread(), 250_000);
        assert_eq!(c.write_buffer_per_thread(), 8192);
        assert_eq!(c.digest, DigestKind::Xxh3_128);
        assert!(!c.read_ahead);
        for (name, value) in [
            ("log.cleaner.threads", "0"),
            ("log.cleaner.io.buffer.load.factor", "0"),
            ("log.cleaner.io.buffer.load.factor", "1.5"),
            ("log.cleaner.io.max.bytes.per.second", "-1"),
            ("lithify.cleaner.digest", "sha1"),
            ("lithify.cleaner.read.ahead", "yes"),
            ("log.cleaner.enable.magic", "true"),
        ] {
            let err = CleanerConfig::default().set(name, value).unwrap_err();
            assert!(err.to_string().contains(name), "{err}");
        }
        let huge =
            CleanerConfig::from_properties([("log.cleaner.dedupe.buffer.size", "99999999999")])
                .unwrap();
        assert_eq!(huge.map_memory_per_thread(), i32::MAX as usize);
    }
}
