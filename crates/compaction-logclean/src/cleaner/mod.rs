//! The log cleaner: Kafka's log compaction on [`Log`](crate::Log)s.
//!
//! * [`config`] — the cleaner's settings under Kafka's broker names;
//! * [`to_clean`] — a log's clean / cleanable / uncleanable sections and
//!   dirty ratio;
//! * [`manager`] — choosing the dirtiest log, checkpoints, cleaning states,
//!   uncleanable logs;
//! * [`round`] — one cleaning round (offset map, rewrite, swap);
//! * [`grouping`], [`filter`] — how segments and batches are rewritten;
//! * [`snapshot`] — what a round reads outside the log's lock;
//! * [`states`] — the per-partition state machine (loom-checked);
//! * [`throttler`] — `log.cleaner.io.max.bytes.per.second`;
//! * [`stats`] — the report of a round;
//! * [`service`] — the threads.

pub mod config;
pub mod filter;
pub mod grouping;
pub mod manager;
pub mod round;
pub mod service;
pub mod snapshot;
pub mod states;
pub mod stats;
pub mod throttler;
pub mod to_clean;
