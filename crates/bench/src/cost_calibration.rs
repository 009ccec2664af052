//! This machine's unit costs for the cost model (`CpuCosts`), measured
//! with micro-benchmarks on real databases: what a write, a byte written
//! by compaction, a file, a lookup, a further table probed, a scan and a
//! further sorted run cost here in process CPU time.
//!
//! Each term is measured where it is alone or as the difference of two
//! databases that differ only in it:
//!
//! * `write_us`: puts into a memtable that never fills (WAL and memtable);
//! * `written_byte_us` and `file_us`: a compaction of the same L0 tables
//!   into small files and into large ones; two equations in the CPU per
//!   byte and per file;
//! * `read_us` and `scan_us`: lookups and 20-entry scans on one table,
//!   every block cached;
//! * `probe_us` and `run_us`: the same lookups and scans with
//!   [`TABLES`]` - 1` newer tables over the same key range on top (the
//!   lookups asking for keys of the oldest, so each probes every table),
//!   the difference per table probed or run merged, by the engine's own
//!   counters.
//!
//! Every figure is the median of [`PASSES`] passes. CPU time needs Linux
//! (`getrusage`); elsewhere the calibration fails with that said.

use std::path::Path;

use lithify::{CpuCosts, Db, Options};
use snafu::ResultExt as _;

use crate::data::{Values, make_key};
use crate::error::{DbSnafu, Result, UsageSnafu};
use crate::report::process_cpu_seconds;

/// Overlapping L0 tables of the probe and run measurements.
pub const TABLES: u64 = 8;

/// Passes of each measurement; the median is kept.
pub const PASSES: usize = 3;

/// How much each measurement does.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    /// Puts of the write measurement.
    writes: u64,
    /// Keys of the read measurements (lookups per pass; a quarter as many
    /// scans).
    read_keys: u64,
    /// Bytes of the compaction measurement's L0 tables.
    compaction_bytes: u64,
}

/// The sizes of [`calibrate`]: passes of a few tenths of a second.
const FULL: Sizes = Sizes {
    writes: 200_000,
    read_keys: 200_000,
    compaction_bytes: 24 << 20,
};

/// What a calibration measured: the unit costs and the figures behind
/// them.
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    /// The unit costs, in µs.
    pub costs: CpuCosts,
    /// Tables each lookup probed on one sorted run and on [`TABLES`]
    /// overlapping ones.
    pub tables_per_get: (f64, f64),
    /// Sorted runs each scan merged on one run and on [`TABLES`].
    pub runs_per_scan: (f64, f64),
    /// Bytes and files the two compactions wrote (small files, large
    /// files), and their CPU seconds.
    pub compactions: [(u64, u64, f64); 2],
}

/// Measures this machine's unit costs in fresh databases under `dir`
/// (the real file system), 100-byte values, 16-byte keys.
pub fn calibrate(dir: &Path) -> Result<Calibration> {
    calibrate_with(dir, FULL)
}

fn calibrate_with(dir: &Path, sizes: Sizes) -> Result<Calibration> {
    let cpu = || {
        process_cpu_seconds().ok_or_else(|| {
            UsageSnafu {
                message:
                    "calibrating needs the process's CPU time, which this platform does not report"
                        .to_owned(),
            }
            .build()
        })
    };
    cpu()?;
    let write_us = median(PASSES, |pass| {
        let db = open(&dir.join(format!("writes-{pass}")), big_memtable())?;
        let mut values = Values::new(100, 0.5, 7);
        let mut rng = crate::SplitMix64::new(pass as u64);
        let mut key = [0u8; 16];
        let n = sizes.writes;
        let start = cpu()?;
        for _ in 0..n {
            make_key(rng.next_u64(), &mut key);
            db.put(key, values.next_value()).context(DbSnafu)?;
        }
        let used = cpu()? - start;
        db.close().context(DbSnafu)?;
        Ok(used * 1e6 / n as f64)
    })?;
    let small = compaction(&dir.join("compact-small"), 256 << 10, sizes, &cpu)?;
    let large = compaction(&dir.join("compact-large"), 16 << 20, sizes, &cpu)?;
    // cpu = bytes * b + files * f, for both; the byte counts are equal
    // up to block alignment.
    let (file_us, written_byte_us) = {
        let (b1, f1, c1) = small;
        let (b2, f2, c2) = large;
        let per_file = if f1 > f2 {
            ((c1 / b1 as f64 - c2 / b2 as f64) * 1e6)
                / (f1 as f64 / b1 as f64 - f2 as f64 / b2 as f64)
        } else {
            0.0
        };
        let per_file = per_file.max(0.0);
        let per_byte = ((c2 * 1e6 - per_file * f2 as f64) / b2 as f64).max(0.0);
        (per_file, per_byte)
    };
    let keys = sizes.read_keys;
    let one = read_db(&dir.join("reads-1"), 1, keys)?;
    let many = read_db(&dir.join("reads-n"), TABLES, keys)?;
    let (get_1, probes_1) = gets(&one, keys, &cpu)?;
    let (get_n, probes_n) = gets(&many, keys, &cpu)?;
    let (scan_1, runs_1) = scans(&one, keys, &cpu)?;
    let (scan_n, runs_n) = scans(&many, keys, &cpu)?;
    one.close().context(DbSnafu)?;
    many.close().context(DbSnafu)?;
    let probe_us = ((get_n - get_1) / (probes_n - probes_1).max(1.0)).max(0.0);
    let run_us = ((scan_n - scan_1) / (runs_n - runs_1).max(1.0)).max(0.0);
    Ok(Calibration {
        costs: CpuCosts::default()
            .write_us(write_us)
            .written_byte_us(written_byte_us)
            .file_us(file_us)
            .read_us(get_1)
            .probe_us(probe_us)
            .scan_us((scan_1 - run_us * runs_1).max(0.0))
            .run_us(run_us),
        tables_per_get: (probes_1, probes_n),
        runs_per_scan: (runs_1, runs_n),
        compactions: [small, large],
    })
}

/// The median of `passes` runs of `f(pass)`.
fn median(passes: usize, mut f: impl FnMut(usize) -> Result<f64>) -> Result<f64> {
    let mut v = Vec::with_capacity(passes);
    for pass in 0..passes {
        v.push(f(pass)?);
    }
    v.sort_by(f64::total_cmp);
    Ok(v[(v.len() - 1) / 2])
}

fn open(dir: &Path, options: Options) -> Result<Db> {
    Db::open(dir, options).context(DbSnafu)
}

/// A memtable that holds every write of the measurement.
fn big_memtable() -> Options {
    Options::default()
        .write_buffer_size(256 << 20)
        .disable_auto_compactions(true)
}

/// `sizes.compaction_bytes` of random keys in 1 MiB L0 tables, compacted
/// into files of `file_size`: bytes and files written, CPU seconds (the
/// median pass's).
fn compaction(
    dir: &Path,
    file_size: u64,
    sizes: Sizes,
    cpu: &dyn Fn() -> Result<f64>,
) -> Result<(u64, u64, f64)> {
    let mut runs = Vec::new();
    for pass in 0..PASSES {
        let options = Options::default()
            .write_buffer_size(1 << 20)
            // Enough memtables that the load never waits for a flush.
            .max_write_buffer_number(32)
            .target_file_size_base(file_size)
            .max_bytes_for_level_base(sizes.compaction_bytes * 4)
            .disable_auto_compactions(true);
        let db = open(&dir.join(pass.to_string()), options)?;
        let mut values = Values::new(100, 0.5, 11);
        let mut rng = crate::SplitMix64::new(5);
        let mut key = [0u8; 16];
        for _ in 0..sizes.compaction_bytes / 116 {
            make_key(rng.next_u64(), &mut key);
            db.put(key, values.next_value()).context(DbSnafu)?;
        }
        db.flush().context(DbSnafu)?;
        let before = db.stats().tables[0].clone();
        let start = cpu()?;
        db.compact_range(None, None).context(DbSnafu)?;
        let used = cpu()? - start;
        let after = db.stats().tables[0].clone();
        db.close().context(DbSnafu)?;
        runs.push((
            after.compaction_write_bytes - before.compaction_write_bytes,
            after.files_written - before.files_written,
            used,
        ));
    }
    runs.sort_by(|a, b| a.2.total_cmp(&b.2));
    Ok(runs[(runs.len() - 1) / 2])
}

/// The keys below `keys` in `tables` overlapping L0 tables, key `i` in
/// table `i % TABLES`, the oldest table first (so with one table, only
/// the multiples of [`TABLES`]); every block cached. The lookups ask for
/// keys of the oldest table, which is the same in both databases.
fn read_db(dir: &Path, tables: u64, keys: u64) -> Result<Db> {
    let options = Options::default()
        .write_buffer_size(256 << 20)
        .block_cache_size(256 << 20)
        .disable_auto_compactions(true);
    let db = open(dir, options)?;
    let mut values = Values::new(100, 0.5, 13);
    let mut key = [0u8; 16];
    for t in 0..tables {
        for i in (t..keys).step_by(TABLES as usize) {
            make_key(i, &mut key);
            db.put(key, values.next_value()).context(DbSnafu)?;
        }
        db.flush().context(DbSnafu)?;
    }
    Ok(db)
}

/// µs per lookup of keys of the oldest table, and tables probed per
/// lookup.
fn gets(db: &Db, keys: u64, cpu: &dyn Fn() -> Result<f64>) -> Result<(f64, f64)> {
    let mut key = [0u8; 16];
    let lookups = |rng: &mut crate::SplitMix64, n: u64| -> Result<()> {
        for _ in 0..n {
            make_key(rng.below(keys / TABLES) * TABLES, &mut key);
            std::hint::black_box(db.get(key).context(DbSnafu)?);
        }
        Ok(())
    };
    per_op(db, keys, cpu, lookups, |t| t.get_tables_probed)
}

/// µs per scan (the strategies' scans: a seek and 20 entries) from random keys of
/// the oldest table, and sorted runs per scan.
fn scans(db: &Db, keys: u64, cpu: &dyn Fn() -> Result<f64>) -> Result<(f64, f64)> {
    let mut key = [0u8; 16];
    let scans = |rng: &mut crate::SplitMix64, n: u64| -> Result<()> {
        for _ in 0..n {
            make_key(rng.below(keys / TABLES) * TABLES, &mut key);
            crate::strategies::scan(db, &key)?;
        }
        Ok(())
    };
    per_op(db, keys / 4, cpu, scans, |t| t.scan_sorted_runs)
}

/// µs per operation of `ops(rng, n)` (the median of [`PASSES`] passes,
/// after one that warms the cache), and the engine's `counter` per
/// operation.
fn per_op(
    db: &Db,
    n: u64,
    cpu: &dyn Fn() -> Result<f64>,
    mut ops: impl FnMut(&mut crate::SplitMix64, u64) -> Result<()>,
    counter: fn(&lithify::TableStats) -> u64,
) -> Result<(f64, f64)> {
    ops(&mut crate::SplitMix64::new(1), n)?;
    let mut per = 0.0;
    let us = median(PASSES, |p| {
        let before = counter(&db.stats().tables[0]);
        let start = cpu()?;
        ops(&mut crate::SplitMix64::new(p as u64 + 2), n)?;
        let used = cpu()? - start;
        per = (counter(&db.stats().tables[0]) - before) as f64 / n.max(1) as f64;
        Ok(used * 1e6 / n.max(1) as f64)
    })?;
    Ok((us, per))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_passes() {
        let v = [3.0, 1.0, 2.0];
        assert_eq!(median(3, |i| Ok(v[i])).unwrap(), 2.0);
    }

    #[test]
    fn a_small_calibration_measures_every_unit_cost() {
        let dir = tempfile::tempdir().unwrap();
        let sizes = Sizes {
            writes: 20_000,
            read_keys: 16_000,
            compaction_bytes: 2 << 20,
        };
        let c = calibrate_with(dir.path(), sizes).unwrap();
        // The lookups of the oldest run's keys probe every table; the
        // scans merge every run.
        assert!((c.tables_per_get.0 - 1.0).abs() < 0.01, "{c:?}");
        assert!((c.tables_per_get.1 - TABLES as f64).abs() < 0.5, "{c:?}");
        assert_eq!(c.runs_per_scan, (1.0, TABLES as f64), "{c:?}");
        // Small files: more of them for the same bytes.
        let [(b1, f1, _), (b2, f2, _)] = c.compactions;
        assert!(f1 > f2 && f2 >= 1, "{c:?}");
        assert!(b1 > 0 && b2 > 0, "{c:?}");
        let k = &c.costs;
        for (name, v) in [
            ("write", k.write_us),
            ("byte", k.written_byte_us),
            ("read", k.read_us),
            ("scan", k.scan_us),
        ] {
            assert!(v > 0.0 && v.is_finite(), "{name}: {c:?}");
        }
        for v in [k.probe_us, k.run_us, k.file_us] {
            assert!(v >= 0.0 && v.is_finite(), "{c:?}");
        }
        // The stored form reads back.
        assert_eq!(CpuCosts::from_text(&k.to_text()), Ok(*k));
    }
}
