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

use crate::{Result, SimConfig, SimReport, WorkloadKind, simulate, sized_strategy};

/// The fixed strategies the table covers, by the names
/// [`CompactionStrategy::parse`] reads.
pub const SHAPES: [&str; 6] = CompactionStrategy::FIXED;

/// The header line of the table (tab-separated).
pub const HEADER: &str = "workload\tshape\tkeys\tops\twrite_buffer\tfile_size\tlevel_base\twrite_share\tupdate_share\tordered_share\thot_share\tlive_bytes\tflush_bytes\tflush_distinct\tentry_bytes\tkv_bytes\tsteady\twrite_amp\tread_amp\tspace_amp";

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
}

/// The sizes of the small grid (the test's): tables of 9 to 23 flushes.
pub const SMALL: [GridSize; 1] = [GridSize {
    keys: 10_000,
    write_buffer: 128 << 10,
    file_size: 128 << 10,
    level_base: 512 << 10,
}];

/// The sizes of the full grid (`cargo xtask calibrate`): the small one,
/// then tables of 3 – 8, 46 – 113 and 182 – 446 flushes (of distinct
/// keys; the range is over the workloads).
pub const FULL: [GridSize; 4] = [
    SMALL[0],
    GridSize {
        keys: 10_000,
        write_buffer: 512 << 10,
        file_size: 256 << 10,
        level_base: 1 << 20,
    },
    GridSize {
        keys: 100_000,
        write_buffer: 256 << 10,
        file_size: 256 << 10,
        level_base: 1 << 20,
    },
    GridSize {
        keys: 200_000,
        write_buffer: 128 << 10,
        file_size: 256 << 10,
        level_base: 1 << 20,
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
    let steady = r.user_bytes >= 2 * r.logical_bytes.max(r.mean_live_bytes);
    format!(
        "{}\t{shape}\t{}\t{}\t{}\t{}\t{}\t{:.4}\t{:.4}\t{:.4}\t{:.4}\t{}\t{}\t{:.4}\t{}\t{}\t{}\t{:.3}\t{:.3}\t{:.3}",
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
/// assert_eq!(text.lines().count(), 1 + 6 * 6);
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
