//! The compaction simulator: the real pickers of every strategy driven by
//! synthetic flushes, with file contents tracked as key sets instead of
//! written.
//!
//! Keys are integers. A flush turns the memtable's newest operation per
//! key (a put or a delete) into an L0 file — or, when the strategy's
//! [`pick_flush`](lithify_compaction::CompactionPicker::pick_flush) plans one, merges it
//! straight into existing files (major flushes of `MajorOnly`, flushes
//! cut by stripe or merged with the previous L0 table of `TwoTier`). Each
//! level L1+ keeps bitmaps of its keys and tombstones, so a compaction is
//! a merge of bitmap ranges and L0 key lists, newest first, walked in key
//! order through the same [`OutputCutter`](lithify_compaction::job::OutputCutter) the
//! job uses; incremental majors leave files without new keys in place.
//! File sizes come from a [`SizeModel`] measured on real tables. Metadata
//! goes through a real `VersionSet` on an in-memory file system, so
//! versions, edits and pickers are exactly the engine's.
//!
//! Compactions run to completion after each flush (an infinitely fast
//! compaction thread, one compaction at a time); at the end the last
//! memtable is flushed and compactions drained.
//!
//! Two kinds of input: the plain write stream of db_bench's `fillrandom`
//! / `fillseq` (by [`KeyDistribution`]), or one of the six workloads of
//! the strategies report ([`WorkloadKind`]: reads, puts and deletes, some
//! after a sorted load). With a workload, point reads are simulated too
//! (tables probed per read), and `Adaptive` observes the operations in
//! windows and switches strategy as
//! [`AdaptiveState`](lithify_compaction_strategy::adaptive::AdaptiveState) decides.
//!
//! With key-value separation ([`SimConfig::blob`]) every value goes to a
//! blob file at flush, the tables hold blob indexes, and the simulator
//! follows which blob file each entry's value is in: garbage when an
//! entry is dropped, relocation by garbage collection when a compaction
//! writes an entry whose blob file is among the oldest (the engine's
//! rule, [`relocate_below`](lithify_compaction::relocate_below)).

mod bitmap;
mod blobs;
pub mod calibration;
mod config;
mod error;
mod lsm;
mod ops;
mod report;
mod simulate;
mod size_model;
mod strategies;
mod workload;

pub use blobs::SimBlobOptions;
pub use config::SimConfig;
pub use error::{Error, Result};
pub use ops::{
    DIURNAL_DAYTIME_TENTHS, DIURNAL_OFFPEAK_UTC, Op, OpGenerator, SCAN_LENGTH, WorkloadKind,
};
pub use report::{SimBlobReport, SimCounts, SimReport, SimSwitch};
pub use simulate::simulate;
pub use size_model::{SizeModel, calibrate, db_bench_key};
pub use strategies::{report_strategies, sized_strategy, strategies_table};
pub use workload::{KeyDistribution, KeyGenerator};
