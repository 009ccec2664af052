//! lithify's db_bench: the benchmark workloads and their reports, for the
//! `lithify bench` command, `cargo xtask compare` and anyone measuring a
//! lithify database from their own program.
//!
//! * [`workload`]: db_bench's benchmarks by their db_bench names
//!   ([`Benchmark`]), run on an open [`Db`](lithify::Db) with
//!   [`Settings`], each returning an [`Outcome`] (operations, bytes,
//!   latency histogram);
//! * [`data`]: db_bench's keys and half-compressible values;
//! * [`cost_calibration`]: this machine's unit costs for the cost model
//!   (`CpuCosts`), measured by micro-benchmarks;
//! * [`histogram`]: the latency histogram;
//! * [`transaction`]: `randomtransaction`, on an optimistic or pessimistic
//!   transaction database;
//! * [`strategies`]: the compaction strategies' workloads (the workload
//!   classes of `Adaptive`, and two that change while they run), each run
//!   on a fresh database, and the strategies report;
//! * [`report`]: db_bench's text line and one JSON object per workload;
//! * [`timeline`]: throughput and amplification sampled over a run;
//! * [`chart`]: self-contained HTML pages with SVG charts;
//! * [`lsm`]: the LSM picture of a database, now and over the history its
//!   MANIFEST remembers (`lithify lsm`);
//! * [`strategies_html`]: the strategies report as such a page;
//! * `log_clean` (feature `log`, on by default): the log cleaner's
//!   benchmark against a plain copy of the same bytes, and the keyed
//!   record workload of `lithify log produce`.
//!
//! A workload shows a progress bar on stderr when stderr is a terminal
//! and the workload has run for a second.
//!
//! ```
//! use lithify::{Db, Options, WriteOptions};
//! use lithify_bench::{Benchmark, Settings};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let db = Db::open(dir.path(), Options::default())?;
//! let settings = Settings { num: 1000, reads: 1000, ..Settings::default() };
//! let benchmarks = [Benchmark::FillRandom, Benchmark::ReadRandom];
//! lithify_bench::workload::check(&settings, &benchmarks)?;
//! for b in benchmarks {
//!     let outcome = lithify_bench::workload::run(&db, b, &settings)?;
//!     assert_eq!(outcome.ops, 1000);
//!     println!("{}", lithify_bench::report::text(&outcome));
//! }
//! db.close()?;
//! # Ok(())
//! # }
//! ```

pub mod chart;
pub mod cost_calibration;
pub mod data;
mod error;
pub mod histogram;
#[cfg(feature = "log")]
pub mod log_clean;
pub mod lsm;
mod progress;
pub mod report;
pub mod strategies;
pub mod strategies_html;
pub mod timeline;
pub mod transaction;
pub mod workload;

pub use error::{Error, MAX_BATCH_BYTES, Result, check_product};
/// The generator behind every synthetic workload (keys, values, operation
/// mixes): a small, fast splitmix64, seeded for repeatable runs.
pub use lithify_base::rand::SplitMix64;
pub use workload::{Benchmark, Outcome, Settings};
