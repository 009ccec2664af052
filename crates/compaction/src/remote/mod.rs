//! Compaction run elsewhere (RocksDB's `CompactionService` and
//! `DB::OpenAndCompact`): a picked [`Compaction`](crate::Compaction) as a
//! self-contained job another process runs, and its outcome back.
//!
//! * [`RemoteJob`]: everything a worker needs besides the files — the
//!   compaction (inputs, grandparents and deeper files as MANIFEST
//!   records), the snapshots, the output file numbers reserved for it,
//!   the table and job options, and the comparator, merge operator and
//!   compaction filter **by name**. Encoded in the `LTCJ` format of
//!   `docs/FORMATS.md`.
//! * [`run_remote_job`]: the worker's side. It runs the job through
//!   [`run_compaction`](crate::run_compaction) on any
//!   `lithify_vfs::FileSystem` holding the database's tables (a bucket,
//!   for a worker on another machine), with the named objects its
//!   [`WorkerEnv`] provides, and returns a [`RemoteOutcome`].
//! * [`check_remote_result`]: the primary's side. The outcome is checked
//!   against the job and the tables before the edit is built: the job id,
//!   the record counts, every output number (reserved, unique), the
//!   outputs' bounds, order, sequence numbers and times, and each output
//!   table itself (opened; its identity and properties, and optionally its
//!   whole-file checksum, against what the outcome claims).
//!
//! ```
//! use lithify_compaction::remote::RemoteOutcome;
//!
//! let failed = RemoteOutcome::Failed { id: 7, message: "out of disk".into() };
//! let bytes = failed.encode();
//! assert_eq!(RemoteOutcome::decode(&bytes).unwrap(), failed);
//!
//! // A flipped byte anywhere is refused, with where it was found.
//! let mut bad = bytes.clone();
//! bad[6] ^= 1;
//! assert!(RemoteOutcome::decode(&bad).is_err());
//! ```
//!
//! The engine's `CompactionService` shows a whole round trip.

mod check;
mod codec;
mod job;
mod outcome;
mod worker;

pub use check::check_remote_result;
pub use job::{RemoteJob, SstSettings};
pub use outcome::{RemoteOutcome, RemoteResult};
pub use worker::{FsSstOpener, NumberRange, WorkerEnv, run_remote_job};

#[cfg(test)]
mod tests;
