//! A log's settings, under Kafka's topic-config names and defaults.
//!
//! | name | default | used for |
//! |---|---|---|
//! | `segment.bytes` | 1073741824 | roll when the active segment would exceed it |
//! | `segment.ms` | 604800000 | roll when the segment's first batch is this much older than the new one |
//! | `segment.index.bytes` | 10485760 | index preallocation; roll when an index is full |
//! | `index.interval.bytes` | 4096 | bytes between offset-index entries |
//! | `cleanup.policy` | `delete` | `compact` rejects keyless records (and is what the cleaner cleans) |
//! | `max.message.bytes` | 1048588 | largest batch accepted |
//! | `compression.type` | `producer` | codec of batches built by [`Log::append`](crate::Log::append) |
//! | `message.timestamp.type` | `CreateTime` | `LogAppendTime` stamps batches with the log's clock |
//! | `delete.retention.ms` | 86400000 | tombstone horizon (cleaner) |
//! | `min.compaction.lag.ms` | 0 | cleaner |
//! | `max.compaction.lag.ms` | 9223372036854775807 | cleaner |
//! | `min.cleanable.dirty.ratio` | 0.5 | cleaner |
//! | `file.delete.delay.ms` | 60000 | cleaner (delay before `.deleted` files go) |
//!
//! Kafka 4.0 raised the minimum `segment.bytes` to 1 MiB; we keep the older
//! minimum of 14 bytes so tests can roll tiny segments.
//!
//! ```
//! use lithify_kafka_log::{LogConfig, codec::Compression};
//!
//! let config = LogConfig::from_properties([
//!     ("segment.bytes", "1024"),
//!     ("cleanup.policy", "compact"),
//!     ("compression.type", "zstd"),
//! ]).unwrap();
//! assert_eq!(config.segment_bytes, 1024);
//! assert!(config.cleanup_policy.compact);
//! assert_eq!(config.append_codec(), Compression::Zstd);
//! assert!(LogConfig::default().set("segment.bytes", "-5").is_err());
//! ```

use std::str::FromStr;

use crate::codec::Compression;
use crate::error::{InvalidArgumentSnafu, Result};
use crate::record::TimestampType;

/// `cleanup.policy`: a list of `compact` and `delete`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanupPolicy {
    /// Whether the log is compacted by key.
    pub compact: bool,
    /// Whether old segments are deleted by retention.
    pub delete: bool,
}

impl Default for CleanupPolicy {
    fn default() -> Self {
        CleanupPolicy {
            compact: false,
            delete: true,
        }
    }
}

impl FromStr for CleanupPolicy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let mut policy = CleanupPolicy {
            compact: false,
            delete: false,
        };
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match part {
                "compact" => policy.compact = true,
                "delete" => policy.delete = true,
                other => return Err(format!("unknown cleanup policy {other:?}")),
            }
        }
        Ok(policy)
    }
}

/// `compression.type`: keep the producer's codec, or a fixed one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CompressionType {
    /// Keep what the producer sent (batches built by `Log::append` are
    /// uncompressed).
    #[default]
    Producer,
    /// Always this codec for batches built by `Log::append`.
    Codec(Compression),
}

/// The settings of one log.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LogConfig {
    /// `segment.bytes`.
    pub segment_bytes: i32,
    /// `segment.ms`.
    pub segment_ms: i64,
    /// `segment.index.bytes`.
    pub segment_index_bytes: i32,
    /// `index.interval.bytes`.
    pub index_interval_bytes: i32,
    /// `cleanup.policy`.
    pub cleanup_policy: CleanupPolicy,
    /// `max.message.bytes`.
    pub max_message_bytes: i32,
    /// `compression.type`.
    pub compression_type: CompressionType,
    /// `message.timestamp.type`.
    pub message_timestamp_type: TimestampType,
    /// `delete.retention.ms`.
    pub delete_retention_ms: i64,
    /// `min.compaction.lag.ms`.
    pub min_compaction_lag_ms: i64,
    /// `max.compaction.lag.ms`.
    pub max_compaction_lag_ms: i64,
    /// `min.cleanable.dirty.ratio`.
    pub min_cleanable_dirty_ratio: f64,
    /// `file.delete.delay.ms`.
    pub file_delete_delay_ms: i64,
}

lithify_base::options_builder!(LogConfig {
    segment_bytes: i32,
    segment_ms: i64,
    segment_index_bytes: i32,
    index_interval_bytes: i32,
    cleanup_policy: CleanupPolicy,
    max_message_bytes: i32,
    compression_type: CompressionType,
    message_timestamp_type: TimestampType,
    delete_retention_ms: i64,
    min_compaction_lag_ms: i64,
    max_compaction_lag_ms: i64,
    min_cleanable_dirty_ratio: f64,
    file_delete_delay_ms: i64,
});

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            segment_bytes: 1 << 30,
            segment_ms: 604_800_000,
            segment_index_bytes: 10 << 20,
            index_interval_bytes: 4096,
            cleanup_policy: CleanupPolicy::default(),
            max_message_bytes: 1_048_588,
            compression_type: CompressionType::Producer,
            message_timestamp_type: TimestampType::CreateTime,
            delete_retention_ms: 86_400_000,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            min_cleanable_dirty_ratio: 0.5,
            file_delete_delay_ms: 60_000,
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

fn at_least<T: PartialOrd + std::fmt::Display>(name: &str, v: T, min: T) -> Result<T> {
    if v < min {
        return InvalidArgumentSnafu {
            message: format!("{name}={v} is below its minimum {min}"),
        }
        .fail();
    }
    Ok(v)
}

impl LogConfig {
    /// Every setting name [`LogConfig::set`] accepts.
    pub const NAMES: [&'static str; 13] = [
        "segment.bytes",
        "segment.ms",
        "segment.index.bytes",
        "index.interval.bytes",
        "cleanup.policy",
        "max.message.bytes",
        "compression.type",
        "message.timestamp.type",
        "delete.retention.ms",
        "min.compaction.lag.ms",
        "max.compaction.lag.ms",
        "min.cleanable.dirty.ratio",
        "file.delete.delay.ms",
    ];

    /// The defaults with `props` (Kafka names and values) applied in order.
    pub fn from_properties<'a>(
        props: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self> {
        let mut config = LogConfig::default();
        for (name, value) in props {
            config.set(name, value)?;
        }
        config.validate()?;
        Ok(config)
    }

    /// Sets one setting by its Kafka name, checking Kafka's bounds.
    pub fn set(&mut self, name: &str, value: &str) -> Result<&mut Self> {
        match name {
            "segment.bytes" => self.segment_bytes = at_least(name, parse(name, value)?, 14)?,
            "segment.ms" => self.segment_ms = at_least(name, parse(name, value)?, 1)?,
            "segment.index.bytes" => {
                self.segment_index_bytes = at_least(name, parse(name, value)?, 4)?
            }
            "index.interval.bytes" => {
                self.index_interval_bytes = at_least(name, parse(name, value)?, 0)?
            }
            "cleanup.policy" => {
                self.cleanup_policy = value
                    .parse()
                    .map_err(|message| InvalidArgumentSnafu { message }.build())?
            }
            "max.message.bytes" => self.max_message_bytes = at_least(name, parse(name, value)?, 0)?,
            "compression.type" => {
                self.compression_type = match value.trim() {
                    "producer" => CompressionType::Producer,
                    v => CompressionType::Codec(
                        v.parse()
                            .map_err(|message| InvalidArgumentSnafu { message }.build())?,
                    ),
                }
            }
            "message.timestamp.type" => {
                self.message_timestamp_type = match value.trim() {
                    "CreateTime" => TimestampType::CreateTime,
                    "LogAppendTime" => TimestampType::LogAppendTime,
                    _ => return parse::<NeverParses>(name, value).map(|_| self),
                }
            }
            "delete.retention.ms" => {
                self.delete_retention_ms = at_least(name, parse(name, value)?, 0)?
            }
            "min.compaction.lag.ms" => {
                self.min_compaction_lag_ms = at_least(name, parse(name, value)?, 0)?
            }
            "max.compaction.lag.ms" => {
                self.max_compaction_lag_ms = at_least(name, parse(name, value)?, 1)?
            }
            "min.cleanable.dirty.ratio" => {
                let r: f64 = parse(name, value)?;
                if !(0.0..=1.0).contains(&r) {
                    return InvalidArgumentSnafu {
                        message: format!("{name}={value} is not within [0, 1]"),
                    }
                    .fail();
                }
                self.min_cleanable_dirty_ratio = r;
            }
            "file.delete.delay.ms" => {
                self.file_delete_delay_ms = at_least(name, parse(name, value)?, 0)?
            }
            other => {
                return InvalidArgumentSnafu {
                    message: format!("unknown log setting {other:?}"),
                }
                .fail();
            }
        }
        Ok(self)
    }

    /// Checks settings that constrain each other.
    pub fn validate(&self) -> Result<()> {
        if self.min_compaction_lag_ms > self.max_compaction_lag_ms {
            return InvalidArgumentSnafu {
                message: format!(
                    "min.compaction.lag.ms={} exceeds max.compaction.lag.ms={}",
                    self.min_compaction_lag_ms, self.max_compaction_lag_ms
                ),
            }
            .fail();
        }
        at_least("segment.bytes", self.segment_bytes, 14)?;
        at_least("segment.index.bytes", self.segment_index_bytes, 4)?;
        at_least("index.interval.bytes", self.index_interval_bytes, 0)?;
        at_least("segment.ms", self.segment_ms, 1)?;
        Ok(())
    }

    /// The codec [`Log::append`](crate::Log::append) compresses with.
    pub fn append_codec(&self) -> Compression {
        match self.compression_type {
            CompressionType::Producer => Compression::None,
            CompressionType::Codec(c) => c,
        }
    }
}

/// A type no string parses as, to report a bad enum value uniformly.
struct NeverParses;

impl FromStr for NeverParses {
    type Err = ();
    fn from_str(_: &str) -> Result<Self, ()> {
        Err(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_accepted_and_bad_values_are_named() {
        let good = [
            "1024",
            "60000",
            "4096",
            "10",
            "compact,delete",
            "1000",
            "lz4",
            "LogAppendTime",
            "0",
            "0",
            "100",
            "0.25",
            "0",
        ];
        let mut c = LogConfig::default();
        for (name, value) in LogConfig::NAMES.iter().zip(good) {
            c.set(name, value).unwrap();
        }
        assert_eq!(
            c.cleanup_policy,
            CleanupPolicy {
                compact: true,
                delete: true
            }
        );
        assert_eq!(c.message_timestamp_type, TimestampType::LogAppendTime);
        assert_eq!(c.append_codec(), Compression::Lz4);
        for (name, value) in [
            ("segment.bytes", "13"),
            ("segment.bytes", "x"),
            ("cleanup.policy", "forever"),
            ("message.timestamp.type", "Now"),
            ("min.cleanable.dirty.ratio", "1.5"),
            ("compression.type", "brotli"),
            ("no.such.setting", "1"),
        ] {
            let err = LogConfig::default()
                .set(name, value)
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("invalid argument"), "{err}");
        }
        let err = LogConfig::from_properties([
            ("min.compaction.lag.ms", "10"),
            ("max.compaction.lag.ms", "5"),
        ]);
        assert!(err.is_err());
    }
}
