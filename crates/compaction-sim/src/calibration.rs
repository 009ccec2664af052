//! The cost model's calibration table: every fixed strategy on every
//! steady workload at a few table sizes, simulated, one line each, with
//! the inputs the model takes (the observed mix, the mean table size and
//! the flush size) and the amplification the simulator measured.
//!
//! `Adaptive`'s cost model ([`lithify_compaction_strategy::cost_model`])
//! must not depend on this crate, so the table is written to its crate's
//! `testdata` (`cargo xtask calibrate` regenerates it) and its tests
//! compare predictions against the lines there. This crate's test checks
//! that the small grid's lines are still what the simulator produces.

use lithify_compaction_strategy::CompactionStrategy;

use crate::{Result, SimBlobOptions, SimConfig, SimReport, WorkloadKind, simulate, sized_strategy};

/// The fixed strategies the table covers, by the names
/// [`CompactionStrategy::parse`] reads.
pub const SHAPES: [&str; 6] = CompactionStrategy::FIXED;

/// The header line of the table (tab-separated).
pub const HEADER: &str = "workload\tshape\tkeys\tops\twrite_buffer\tfile_size\tlevel_base\twrite_share\tupdate_share\tordered_share\thot_share\tlive_bytes\tflush_bytes\tflush_distinct\tentry_bytes\tkv_bytes\tblob_share\tblob_cutoff\tsteady\twrite_amp\tread_amp\tspace_amp";

/// One size of the grid: keys, with the memtable, file and level sizes
/// that go with them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GridSize {
    /// Key space.
    pub keys: u64,
    /// `write_buffer_size`.
    pub write_buffer: u64,
    /// Target file size of every strategy.
    pub file_size: u64,
    /// `max_bytes_for_level_base`.
    pub level_base: u64,
    /// Values of 1000 bytes, every one in a blob file, with garbage
    /// collection at RocksDB's age cutoff (0.25) and blob files of 16
    /// memtables; otherwise 100-byte values inline.
    pub separated: bool,
}

/// The value size of separated rows.
const SEPARATED_VALUE_SIZE: usize = 1000;
/// The age cutoff of separated rows.
const SEPARATED_AGE_CUTOFF: f64 = 0.25;

/// The sizes of the small grid (the test's): tables of 9 to 23 flushes,
/// and the same keys with separated values (tables of about 80 flushes,
/// one level of blob indexes).
pub const SMALL: [GridSize; 2] = [
    GridSize {
        keys: 10_000,
        write_buffer: 128 << 10,
        file_size: 128 << 10,
        level_base: 512 << 10,
        separated: false,
    },
    GridSize {
        keys: 10_000,
        write_buffer: 128 << 10,
        file_size: 128 << 10,
        level_base: 512 << 10,
        separated: true,
    },
];

/// The sizes of the full grid (`cargo xtask calibrate`): the small ones,
/// then tables of 3 – 8, 46 – 113 and 182 – 446 flushes (of distinct
/// keys; the range is over the workloads), and separated values in a
/// table of several levels of blob indexes.
pub const FULL: [GridSize; 6] = [
    SMALL[0],
    SMALL[1],
    GridSize {
        keys: 10_000,
        write_buffer: 512 << 10,
        file_size: 256 << 10,
        level_base: 1 << 20,
        separated: false,
    },
    GridSize {
        keys: 100_000,
        write_buffer: 256 << 10,
        file_size: 256 << 10,
        level_base: 1 << 20,
        separated: false,
    },
    GridSize {
        keys: 200_000,
        write_buffer: 128 << 10,
        file_size: 256 << 10,
        level_base: 1 << 20,
        separated: false,
    },
    GridSize {
        keys: 100_000,
        write_buffer: 1 << 20,
        file_size: 256 << 10,
        level_base: 1 << 20,
        separated: true,
    },
];

/// Operations per key of a workload: enough writes for several major
/// cycles where the write share allows (at most 40 per key).
fn ops_per_key(kind: WorkloadKind) -> u64 {
    match kind {
        WorkloadKind::IncreasingKeys => 8,
        WorkloadKind::WriteOnly | WorkloadKind::WriteMostly => 8,
        WorkloadKind::ReadMostlyManyUpdates => 24,
        WorkloadKind::ReadMostlyFewUpdates => 60,
        _ => 40,
    }
}

/// Simulates `shape` on `kind` at `size`.
pub fn simulate_cell(kind: WorkloadKind, shape: &str, size: GridSize) -> Result<SimReport> {
    let ops = size.keys * ops_per_key(kind);
    let mut config = SimConfig::fillrandom(ops);
    config.key_space = size.keys;
    config.write_buffer_size = size.write_buffer;
    config.options.max_bytes_for_level_base = size.level_base;
    config.options.target_file_size_base = size.file_size;
    config.workload = Some(kind);
    config.adaptive_window = (ops / 40).max(1);
    if size.separated {
        config.value_size = SEPARATED_VALUE_SIZE;
        config.blob = Some(SimBlobOptions {
            age_cutoff: Some(SEPARATED_AGE_CUTOFF),
            blob_file_size: 16 * size.write_buffer,
        });
    }
    config.read_sample = 2;
    let strategy = CompactionStrategy::parse(shape).unwrap_or_default();
    config.strategy = Some(sized_strategy(strategy, &config.options, size.file_size));
    simulate(&config)
}

/// The table line of one simulated cell. `steady` is 1 when the run wrote
/// at least twice the table's size (several major cycles: the write
/// amplification is the steady state's), else 0.
pub fn line(kind: WorkloadKind, shape: &str, size: GridSize, r: &SimReport) -> String {
    let o = &r.observed;
    // Separated, the table the writes are measured against is the user
    // data (values in blob files), not the tables' blob indexes.
    let table = match r.blobs {
        Some(_) => r.live_keys * r.key_value_bytes,
        None => r.logical_bytes.max(r.mean_live_bytes),
    };
    let steady = r.user_bytes >= 2 * table;
    let (blob_share, blob_cutoff) = r.blobs.map_or((0.0, 0.0), |b| {
        (
            b.record_bytes as f64 / r.key_value_bytes.max(1) as f64,
            b.age_cutoff,
        )
    });
    format!(
        "{}\t{shape}\t{}\t{}\t{}\t{}\t{}\t{:.4}\t{:.4}\t{:.4}\t{:.4}\t{}\t{}\t{:.4}\t{}\t{}\t{:.4}\t{:.2}\t{}\t{:.3}\t{:.3}\t{:.3}",
        kind.name(),
        size.keys,
        size.keys * ops_per_key(kind),
        size.write_buffer,
        size.file_size,
        size.level_base,
        o.write_share(),
        o.update_share(),
        o.ordered_share(),
        o.hot_range_share,
        r.mean_live_bytes,
        r.flush_bytes,
        r.flush_distinct_share,
        r.size_model.per_entry.round() as u64,
        r.key_value_bytes,
        blob_share,
        blob_cutoff,
        u8::from(steady),
        r.write_amplification_vs_user(),
        r.read_amplification(),
        r.space_amplification(),
    )
}

/// The table for `sizes`: [`HEADER`], then one line per size, workload
/// and shape, in that order.
///
/// ```no_run
/// use lithify_compaction_sim::calibration::{SMALL, table};
///
/// let text = table(&SMALL).unwrap();
/// assert_eq!(text.lines().count(), 1 + 2 * 6 * 6);
/// ```
pub fn table(sizes: &[GridSize]) -> Result<String> {
    let mut out = String::from(HEADER);
    out.push('\n');
    for &size in sizes {
        for kind in WorkloadKind::ALL {
            for shape in SHAPES {
                let r = simulate_cell(kind, shape, size)?;
                out.push_str(&line(kind, shape, size, &r));
                out.push('\n');
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calibration table in the cost model's crate.
    const TABLE: &str =
        include_str!("../../compaction-strategy/testdata/cost_model_calibration.tsv");

    #[test]
    fn the_small_grid_lines_are_what_the_simulator_gives() {
        let expected = table(&SMALL).unwrap();
        let mut lines = TABLE.lines();
        assert_eq!(lines.next(), Some(HEADER));
        for want in expected.lines().skip(1) {
            let got = lines.next().unwrap_or("");
            assert_eq!(
                got, want,
                "the calibration table is stale: run `cargo xtask calibrate`"
            );
        }
    }
}
