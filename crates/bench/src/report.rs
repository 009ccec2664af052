//! What `bench` prints: a db_bench-style line per workload with its
//! latency percentiles, or one JSON object per workload (`--json`).

use std::path::Path;

use lithify::DbStats;
use lithify::vfs::{FileSystem as _, OsFs};
use serde::Serialize;
use snafu::ResultExt as _;

use crate::error::{JsonSnafu, Result};
use crate::workload::{Outcome, Settings};

const MIB: f64 = (1u64 << 20) as f64;

/// Latency percentiles in microseconds.
#[derive(Debug, Serialize)]
pub struct Latency {
    /// Operations timed (batches, for batched writes).
    pub samples: u64,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p99_9: f64,
    /// Slowest operation.
    pub max: f64,
}

/// One level of the LSM tree in the JSON output.
#[derive(Debug, Serialize)]
pub struct LevelJson {
    /// The level.
    pub level: usize,
    /// Files in it.
    pub files: usize,
    /// Bytes of its files.
    pub size_bytes: u64,
    /// Bytes compactions (flushes at L0) wrote into it.
    pub write_bytes: u64,
}

/// The engine's own measurements after a workload (cumulative since the
/// database was opened).
#[derive(Debug, Serialize)]
pub struct EngineJson {
    /// (WAL + flush + compaction bytes) / user bytes.
    pub write_amp: f64,
    /// Tables probed per point lookup.
    pub read_amp_tables: f64,
    /// Data blocks read per point lookup.
    pub read_amp_blocks: f64,
    /// (table + blob file + WAL bytes) / estimated live bytes.
    pub space_amp: f64,
    /// Key and value bytes written by users.
    pub user_bytes: u64,
    /// Bytes appended to WALs.
    pub wal_bytes: u64,
    /// Bytes of tables written by flushes.
    pub flush_bytes: u64,
    /// Bytes of tables read by compactions.
    pub compaction_read_bytes: u64,
    /// Bytes of tables written by compactions.
    pub compaction_write_bytes: u64,
    /// Compactions run by a compaction service and installed.
    pub remote_compactions: u64,
    /// Compactions handed to the service and run here instead.
    pub remote_compaction_fallbacks: u64,
    /// Bytes of SST files now.
    pub sst_bytes: u64,
    /// Estimated live bytes.
    pub live_bytes: u64,
    /// Live blob files (key-value separation).
    pub blob_files: usize,
    /// Their bytes on disk.
    pub blob_file_bytes: u64,
    /// Stored value bytes in them no SST refers to any more.
    pub blob_garbage_bytes: u64,
    /// Values point lookups read through blob indexes.
    pub get_blob_reads: u64,
    /// Write groups slowed down by a stall.
    pub stall_delayed_writes: u64,
    /// Microseconds spent slowed down.
    pub stall_delayed_micros: u64,
    /// Write groups stopped by a stall.
    pub stall_stopped_writes: u64,
    /// Microseconds spent stopped.
    pub stall_stopped_micros: u64,
    /// Block cache hits.
    pub block_cache_hits: u64,
    /// Block cache misses.
    pub block_cache_misses: u64,
    /// Hits of a blob cache of its own (0 without one).
    pub blob_cache_hits: u64,
    /// Misses of a blob cache of its own.
    pub blob_cache_misses: u64,
    /// The levels of every table that hold files or have history.
    pub levels: Vec<LevelJson>,
    /// Each table: its strategy, size and amplification.
    pub tables: Vec<TableJson>,
}

/// One table (column family) in the JSON output.
#[derive(Debug, Serialize)]
pub struct TableJson {
    /// Its name.
    pub name: String,
    /// The compaction strategy in force.
    pub strategy: String,
    /// Why that strategy (Adaptive's latest choice and its figures).
    pub strategy_reason: String,
    /// Live SST files.
    pub files: usize,
    /// Bytes of its SST files.
    pub sst_bytes: u64,
    /// Estimated live bytes.
    pub live_bytes: u64,
    /// Its live blob files.
    pub blob_files: usize,
    /// Their bytes on disk.
    pub blob_file_bytes: u64,
    /// Stored value bytes in them no SST refers to any more.
    pub blob_garbage_bytes: u64,
    /// Bytes compactions still owe.
    pub pending_compaction_bytes: u64,
    /// Bytes of its memtables.
    pub memtable_bytes: usize,
    /// (flush + compaction bytes) / user bytes of this table.
    pub write_amp: f64,
    /// Tables probed per point lookup.
    pub read_amp_tables: f64,
    /// (table + blob file bytes) / estimated live bytes.
    pub space_amp: f64,
    /// Its levels that hold files or have history.
    pub levels: Vec<LevelJson>,
}

fn level_json(l: &lithify::LevelStats) -> LevelJson {
    LevelJson {
        level: l.level.unwrap_or(0),
        files: l.files,
        size_bytes: l.size_bytes,
        write_bytes: l.write_bytes,
    }
}

impl EngineJson {
    /// The summary of `stats`.
    pub fn new(stats: &DbStats) -> Self {
        let (hits, misses) = stats
            .block_cache
            .as_ref()
            .map_or((0, 0), |c| (c.hits, c.misses));
        let (blob_hits, blob_misses) = stats
            .blob_cache
            .as_ref()
            .map_or((0, 0), |c| (c.hits, c.misses));
        EngineJson {
            write_amp: stats.write_amp,
            read_amp_tables: stats.read_amp_tables,
            read_amp_blocks: stats.read_amp_blocks,
            space_amp: stats.space_amp,
            user_bytes: stats.user_bytes,
            wal_bytes: stats.wal_bytes,
            flush_bytes: stats.flush_bytes,
            compaction_read_bytes: stats.compaction_read_bytes,
            compaction_write_bytes: stats.compaction_write_bytes,
            remote_compactions: stats.remote_compactions,
            remote_compaction_fallbacks: stats.remote_compaction_fallbacks,
            sst_bytes: stats.sst_bytes,
            live_bytes: stats.live_bytes,
            blob_files: stats.blob_files,
            blob_file_bytes: stats.blob_file_bytes,
            blob_garbage_bytes: stats.blob_garbage_bytes,
            get_blob_reads: stats.get_blob_reads,
            stall_delayed_writes: stats.stalls.delayed_writes,
            stall_delayed_micros: stats.stalls.delayed_time.as_micros() as u64,
            stall_stopped_writes: stats.stalls.stopped_writes,
            stall_stopped_micros: stats.stalls.stopped_time.as_micros() as u64,
            block_cache_hits: hits,
            block_cache_misses: misses,
            blob_cache_hits: blob_hits,
            blob_cache_misses: blob_misses,
            levels: stats
                .tables
                .iter()
                .flat_map(|t| t.levels.iter())
                .map(level_json)
                .collect(),
            tables: stats
                .tables
                .iter()
                .map(|t| TableJson {
                    name: t.name.clone(),
                    strategy: t.strategy.clone(),
                    strategy_reason: t.strategy_reason.clone(),
                    files: t.sum.files,
                    sst_bytes: t.sst_bytes,
                    live_bytes: t.live_bytes,
                    blob_files: t.blob_files,
                    blob_file_bytes: t.blob_file_bytes,
                    blob_garbage_bytes: t.blob_garbage_bytes,
                    pending_compaction_bytes: t.pending_compaction_bytes,
                    memtable_bytes: t.memtable_bytes,
                    write_amp: t.write_amp,
                    read_amp_tables: t.read_amp_tables,
                    space_amp: t.space_amp,
                    levels: t.levels.iter().map(level_json).collect(),
                })
                .collect(),
        }
    }
}

/// The transactions of `randomtransaction` in the JSON output.
#[derive(Debug, Serialize)]
pub struct TransactionsJson {
    /// `optimistic` or `pessimistic`.
    pub kind: &'static str,
    /// Transactions begun.
    pub attempts: u64,
    /// Transactions committed.
    pub committed: u64,
    /// Transactions another one got in the way of (conflict, lock
    /// timeout, deadlock), rolled back.
    pub failed: u64,
    /// Failed per hundred begun.
    pub conflict_rate_percent: f64,
    /// Sets of keys.
    pub sets: u16,
    /// The sum of every set's values (checked equal across sets).
    pub set_sum: u128,
}

/// The JSON object of one workload.
#[derive(Debug, Serialize)]
pub struct WorkloadJson<'a> {
    /// db_bench's name of the benchmark.
    pub benchmark: &'a str,
    /// Operations done.
    pub ops: u64,
    /// Threads that did them.
    pub threads: usize,
    /// Wall time in seconds.
    pub seconds: f64,
    /// Operations per second of wall time.
    pub ops_per_sec: f64,
    /// Key and value bytes per second, in MiB (db_bench's MB/s).
    pub mb_per_sec: f64,
    /// Key and value bytes written or returned.
    pub bytes: u64,
    /// Lookups that found their key (read workloads).
    pub found: Option<u64>,
    /// Writes of the background writer (`readwhilewriting`).
    pub background_writes: Option<u64>,
    /// The transactions of `randomtransaction` (whose `ops` are the
    /// committed ones).
    pub transactions: Option<TransactionsJson>,
    /// Latency of one operation (one batch for batched writes).
    pub latency_us: Latency,
    /// Keys of the key space.
    pub num: u64,
    /// Bytes per key.
    pub key_size: usize,
    /// Bytes per value.
    pub value_size: usize,
    /// Peak resident memory of the process so far, in MiB (Linux).
    pub peak_rss_mb: Option<f64>,
    /// CPU seconds of the whole process during the workload.
    pub cpu_seconds: Option<f64>,
    /// The engine's statistics after the workload.
    pub engine: EngineJson,
}

fn micros(nanos: u64) -> f64 {
    nanos as f64 / 1e3
}

fn latency(o: &Outcome) -> Latency {
    histogram_latency(&o.latency)
}

fn histogram_latency(h: &crate::histogram::Histogram) -> Latency {
    Latency {
        samples: h.count(),
        mean: h.mean() / 1e3,
        p50: micros(h.quantile(0.5)),
        p99: micros(h.quantile(0.99)),
        p99_9: micros(h.quantile(0.999)),
        max: micros(h.max()),
    }
}

fn per_sec(n: f64, o: &Outcome) -> f64 {
    let secs = o.elapsed.as_secs_f64();
    if secs > 0.0 { n / secs } else { 0.0 }
}

/// The JSON line of `o`.
pub fn json_line(o: &Outcome, s: &Settings, stats: &DbStats) -> Result<String> {
    let threads = match o.benchmark {
        crate::workload::Benchmark::Flush
        | crate::workload::Benchmark::Compact
        | crate::workload::Benchmark::WaitForCompaction => 1,
        _ => s.threads,
    };
    let object = WorkloadJson {
        benchmark: o.benchmark.name(),
        ops: o.ops,
        threads,
        seconds: o.elapsed.as_secs_f64(),
        ops_per_sec: per_sec(o.ops as f64, o),
        mb_per_sec: per_sec(o.bytes as f64 / MIB, o),
        bytes: o.bytes,
        found: o.found,
        background_writes: o.background_writes,
        transactions: o.transactions.map(|t| TransactionsJson {
            kind: t.kind.name(),
            attempts: t.attempts,
            committed: o.ops,
            failed: t.failed,
            conflict_rate_percent: t.conflict_rate_percent(),
            sets: t.sets,
            set_sum: t.set_sum,
        }),
        latency_us: latency(o),
        num: s.num,
        key_size: s.key_size,
        value_size: s.value_size,
        peak_rss_mb: peak_rss_mb(),
        cpu_seconds: o.cpu_seconds,
        engine: EngineJson::new(stats),
    };
    serde_json::to_string(&object).context(JsonSnafu)
}

/// The text lines of `o`, as db_bench prints them, with the latency
/// percentiles under them.
pub fn text(o: &Outcome) -> String {
    let secs = o.elapsed.as_secs_f64();
    let micros_per_op = if o.ops == 0 {
        0.0
    } else {
        secs * 1e6 / o.ops as f64
    };
    let mut out = format!(
        "{:<16}: {:>10.3} micros/op {:>10.0} ops/sec; {:>7.1} MB/s; {:.2} s, {} ops",
        o.benchmark.name(),
        micros_per_op,
        per_sec(o.ops as f64, o),
        per_sec(o.bytes as f64 / MIB, o),
        secs,
        o.ops
    );
    if let Some(found) = o.found {
        out.push_str(&format!(" ({found} of {} found)", o.ops));
    }
    if let Some(w) = o.background_writes {
        out.push_str(&format!(" ({w} writes alongside)"));
    }
    if let Some(t) = &o.transactions {
        out.push_str(&format!(
            " ({}: {} committed, {} failed of {} begun; conflict rate {:.2}%; \
             each of the {} sets sums to {})",
            t.kind.name(),
            o.ops,
            t.failed,
            t.attempts,
            t.conflict_rate_percent(),
            t.sets,
            t.set_sum
        ));
    }
    let l = latency(o);
    out.push_str(&format!(
        "\n{:<16}  latency us: p50 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}  mean {:.1}",
        "", l.p50, l.p99, l.p99_9, l.max, l.mean
    ));
    if let Some(cpu) = o.cpu_seconds
        && o.ops > 0
    {
        out.push_str(&format!(
            "\n{:<16}  cpu: {cpu:.2} s of the process, {:.3} us/op",
            "",
            cpu * 1e6 / o.ops as f64
        ));
    }
    out
}

/// Peak resident set size of this process in MiB, from
/// `/proc/self/status` (Linux only; `None` elsewhere). `/proc` files report
/// a size of 0, so this reads until the end instead of trusting it.
pub fn peak_rss_mb() -> Option<f64> {
    let text = read_proc("/proc/self/status")?;
    let line = text.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// CPU seconds (user + system, every thread) this process has used:
/// `getrusage(RUSAGE_SELF)` on Unix, `GetProcessTimes` on Windows (both
/// in microseconds or finer, where `/proc/self/stat` counts clock ticks
/// of a size it does not state); `None` where neither exists or the call
/// fails.
pub fn process_cpu_seconds() -> Option<f64> {
    cpu::process_cpu_seconds()
}

#[cfg(unix)]
mod cpu {
    pub(super) fn process_cpu_seconds() -> Option<f64> {
        let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: getrusage writes one `rusage` through the pointer, which
        // points at memory of that size and alignment.
        let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
        if rc != 0 {
            return None;
        }
        // SAFETY: getrusage returned 0, so it filled the struct (and it
        // was zeroed before, so every field is initialised either way).
        let usage = unsafe { usage.assume_init() };
        let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        Some(seconds(usage.ru_utime) + seconds(usage.ru_stime))
    }
}

#[cfg(windows)]
mod cpu {
    use std::ffi::c_void;

    /// `FILETIME`: 100-nanosecond units in two halves.
    #[repr(C)]
    #[derive(Default)]
    struct FileTime {
        low: u32,
        high: u32,
    }

    unsafe extern "system" {
        fn GetCurrentProcess() -> *mut c_void;
        fn GetProcessTimes(
            process: *mut c_void,
            creation: *mut FileTime,
            exit: *mut FileTime,
            kernel: *mut FileTime,
            user: *mut FileTime,
        ) -> i32;
    }

    pub(super) fn process_cpu_seconds() -> Option<f64> {
        let (mut creation, mut exit, mut kernel, mut user) = Default::default();
        // SAFETY: the pseudo-handle of the current process needs no
        // closing, and each pointer is to a FILETIME the call fills.
        let ok = unsafe {
            GetProcessTimes(
                GetCurrentProcess(),
                &mut creation,
                &mut exit,
                &mut kernel,
                &mut user,
            )
        };
        if ok == 0 {
            return None;
        }
        let seconds = |t: &FileTime| ((u64::from(t.high) << 32) | u64::from(t.low)) as f64 / 1e7;
        Some(seconds(&kernel) + seconds(&user))
    }
}

#[cfg(not(any(unix, windows)))]
mod cpu {
    pub(super) fn process_cpu_seconds() -> Option<f64> {
        None
    }
}

/// The text of a `/proc` file (whose size reads as 0), if readable.
fn read_proc(path: &str) -> Option<String> {
    let file = OsFs.open(Path::new(path)).ok()?;
    let mut text = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = file.read_at(text.len() as u64, &mut buf).ok()?;
        if n == 0 {
            break;
        }
        text.extend_from_slice(&buf[..n]);
    }
    String::from_utf8(text).ok()
}

/// One JSON line of a workload run (`--workload`, `--strategies-report`).
#[derive(Debug, Serialize)]
struct WorkloadRunJson<'a> {
    workload: &'a str,
    strategy: &'a str,
    in_force: &'a str,
    ops: u64,
    seconds: f64,
    ops_per_sec: f64,
    write_amp: f64,
    read_amp_tables_per_get: f64,
    space_amp: f64,
    cpu_us_per_op: Option<f64>,
    /// CPU µs per operation of every run of the cell (the reported one is
    /// their median).
    cpu_us_per_op_runs: &'a [f64],
    latency_us: Latency,
    /// `synchronous` (deterministic counts) or `background`.
    schedule: &'static str,
    /// The engine's counts of the operations' work.
    counts: &'a crate::strategies::WorkCounts,
    /// The counts priced at `cpu_costs`.
    counted_us_per_op: f64,
    /// Latency percentiles of each second.
    per_second: Vec<SecondJson>,
    /// Writes delayed or stopped by write stalls.
    stalled_writes: u64,
}

/// One second's latency in a workload run's JSON line.
#[derive(Debug, Serialize)]
struct SecondJson {
    second: u64,
    ops: u64,
    p99_us: f64,
    p999_us: f64,
}

/// The JSON line of a workload run, its counts priced at `costs`.
pub fn workload_json(
    r: &crate::strategies::WorkloadRun,
    costs: &lithify::CpuCosts,
) -> Result<String> {
    let object = WorkloadRunJson {
        workload: crate::strategies::workload_name(r.workload),
        strategy: &r.strategy,
        in_force: &r.in_force,
        ops: r.ops,
        seconds: r.elapsed.as_secs_f64(),
        ops_per_sec: r.ops_per_sec(),
        write_amp: r.write_amp,
        read_amp_tables_per_get: r.read_amp,
        space_amp: r.space_amp,
        cpu_us_per_op: r.cpu_us_per_op,
        cpu_us_per_op_runs: &r.cpu_samples,
        latency_us: histogram_latency(&r.latency),
        schedule: match r.schedule {
            crate::strategies::Schedule::Background => "background",
            crate::strategies::Schedule::Synchronous => "synchronous",
        },
        counts: &r.counts,
        counted_us_per_op: r.counts.cost_us_per_op(costs),
        per_second: r
            .per_second
            .iter()
            .map(|s| SecondJson {
                second: s.second,
                ops: s.ops,
                p99_us: s.p99_us,
                p999_us: s.p999_us,
            })
            .collect(),
        stalled_writes: r.stalled_writes,
    };
    serde_json::to_string(&object).context(JsonSnafu)
}

#[cfg(test)]
mod cpu_tests {
    #[test]
    fn cpu_time_is_read_and_grows_with_work() {
        let before = super::process_cpu_seconds().expect("this platform reports CPU time");
        // Work until the counter moves: getrusage counts in microseconds,
        // but some kernels update it per scheduler tick.
        let mut x = 0u64;
        let mut after = before;
        // A bounded amount of work (a second or more of CPU), so a clock
        // that never moves fails the test instead of hanging it.
        for _ in 0..2_000 {
            for i in 0..1_000_000u64 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
            }
            after = super::process_cpu_seconds().unwrap();
            if after > before {
                break;
            }
        }
        std::hint::black_box(x);
        assert!(
            after > before && after < before + 3600.0,
            "{before} -> {after}"
        );
    }
}
