//! Kafka's log cleaner (log compaction) on the Kafka-format logs of
//! [`lithify_kafka_log`].
//!
//! A cleaning round keeps the latest record of every key of a log, as
//! Kafka's cleaner does:
//!
//! * [`LogCleanerManager`] chooses the dirtiest log (its dirty ratio, or
//!   `max.compaction.lag.ms`, or tombstones past their delete horizon;
//!   [`LogToClean`]), keeps the per-partition cleaning states (in
//!   progress, aborted, paused; loom-checked) and the data directory's
//!   `cleaner-offset-checkpoint` ([`checkpoint`]), and quarantines logs
//!   whose rounds fail;
//! * a [`Cleaner`] runs one round: an offset map (`lithify-offsetmap`'s
//!   `SkimpyOffsetMap`, MD5 digests) of the dirty section, a rewrite of
//!   the segments below its end (original offsets kept, tombstones kept
//!   until their delete horizon, KIP-534; aborted transactions removed and
//!   COMMIT/ABORT markers kept until their transaction's data is gone and a
//!   delete horizon has passed, as Kafka's `CleanedTransactionMetadata`
//!   decides) into `.cleaned` segments grouped
//!   as Kafka groups them, then a crash-safe swap of all of them at once
//!   ([`Log::replace_segments`](lithify_kafka_log::Log::replace_segments));
//! * [`LogCleaner`] is the service: `log.cleaner.threads` threads, the
//!   `log.cleaner.io.max.bytes.per.second` [`Throttler`], a
//!   [`CleanerEvent`] per round carrying Kafka's "Cleaner stats"
//!   ([`RoundReport`]).
//!
//! A log is shared between its owner (who appends) and the cleaner as a
//! [`SharedLog`](lithify_kafka_log::SharedLog): the cleaner holds its lock only to take a snapshot of the
//! segment list and to swap segments, so appends and reads go on during a
//! round. Settings use Kafka's broker names ([`CleanerConfig`]); a log's
//! own settings (`min.cleanable.dirty.ratio`, `delete.retention.ms`, ...)
//! are in its [`LogConfig`](lithify_kafka_log::LogConfig).
//!
//! Errors ([`Error`]) wrap the log's errors (file and byte offset of any
//! damage) as their source.
//!
//! ```
//! use std::path::Path;
//! use std::sync::Arc;
//! use lithify_vfs::MemFs;
//! use lithify_kafka_log::{Log, LogConfig, ManualClock, SimpleRecord};
//! use lithify_compaction_logclean::{CleanerConfig, CleanerEvent, LogCleaner};
//! use lithify_kafka_log::shared_log;
//!
//! let fs = Arc::new(MemFs::new());
//! let config = LogConfig::from_properties([("cleanup.policy", "compact"), ("segment.bytes", "300")]).unwrap();
//! let mut log = Log::open(fs.clone(), Path::new("/kafka/users-0"), config).unwrap();
//! for i in 0..30 {
//!     log.append(&[SimpleRecord::new(i, format!("user-{}", i % 3), format!("v{i}"))]).unwrap();
//! }
//! let cleaner = LogCleaner::new(CleanerConfig::default(), fs.clone(), Arc::new(ManualClock::at_ms(1_000)));
//! cleaner.add_log(shared_log(log)).unwrap();
//! let events = cleaner.clean_eligible_once().unwrap();
//! let CleanerEvent::Cleaned(report) = &events[0] else { panic!("{events:?}") };
//! assert!(report.stats.messages_written < report.stats.messages_read);
//! ```

pub mod checkpoint;
mod config;
mod error;
mod filter;
mod grouping;
mod latest_marks;
mod manager;
mod read_ahead;
mod round;
mod service;
mod states;
mod stats;
mod throttler;
mod to_clean;
mod txn_metadata;

/// The README's examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub use config::CleanerConfig;
pub use error::{Error, Result};
pub use manager::{Grab, LogCleanerManager};
pub use round::{Cleaner, RoundOutcome};
pub use service::{CleanerEvent, LogCleaner};
pub use states::CleaningState;
pub use stats::{CleanerStats, RoundReport};
pub use throttler::Throttler;
pub use to_clean::{CleaningReason, LogToClean};

// The thread-safety the documentation promises, checked at compile time.
const _: () = {
    const fn send_and_sync<T: Send + Sync>() {}
    send_and_sync::<LogCleaner>();
    send_and_sync::<Error>();
};
