//! The cost model's predictions against the compaction simulator's
//! figures in `testdata/cost_model_calibration.tsv` (written by
//! `cargo xtask calibrate`; `lithify-compaction-sim`'s tests check that
//! its lines are still what the simulator gives).

use lithify_compaction_strategy::CompactionStrategy;
use lithify_compaction_strategy::cost_model::{
    CpuCosts, Limits, Mix, Objective, Prediction, TOLERANCE, TOLERANCE_SEPARATED, TableSize,
    Tolerance, predict, rank,
};
use lithify_compaction_tiered::MinorPolicy;

const TABLE: &str = include_str!("../testdata/cost_model_calibration.tsv");

/// One line of the table.
struct Row {
    workload: String,
    shape: String,
    keys: u64,
    strategy: CompactionStrategy,
    mix: Mix,
    size: TableSize,
    steady: bool,
    measured: Prediction,
}

fn rows() -> Vec<Row> {
    let mut lines = TABLE.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    lines
        .filter(|line| !line.is_empty())
        .map(|line| {
            let cells: Vec<&str> = line.split('\t').collect();
            assert_eq!(cells.len(), header.len(), "{line}");
            let get = |name: &str| {
                let i = header.iter().position(|h| *h == name).unwrap();
                cells[i]
            };
            let num = |name: &str| get(name).parse::<f64>().unwrap();
            let file_size = num("file_size") as u64;
            let strategy = match CompactionStrategy::parse(get("shape")).unwrap() {
                CompactionStrategy::Leveled(o) => CompactionStrategy::Leveled(
                    o.max_bytes_for_level_base(num("level_base") as u64)
                        .target_file_size_base(file_size),
                ),
                CompactionStrategy::MajorOnly(mut o) => {
                    o.target_file_size = file_size;
                    CompactionStrategy::MajorOnly(o)
                }
                CompactionStrategy::TwoTier(mut o) => {
                    o.target_file_size = file_size;
                    CompactionStrategy::TwoTier(o)
                }
                other => other,
            };
            let entry_bytes = num("entry_bytes") as u64;
            Row {
                workload: get("workload").to_owned(),
                shape: get("shape").to_owned(),
                keys: num("keys") as u64,
                strategy,
                mix: Mix {
                    write_share: num("write_share"),
                    update_share: num("update_share"),
                    ordered_share: num("ordered_share"),
                    hot_share: num("hot_share"),
                    scan_share: 0.0,
                },
                size: TableSize {
                    live_bytes: num("live_bytes") as u64,
                    flush_bytes: num("flush_bytes") as u64,
                    entry_bytes,
                    table_bytes_per_user_byte: entry_bytes as f64 / num("kv_bytes"),
                    flush_distinct_share: num("flush_distinct"),
                    upper_bytes: num("live_bytes") as u64,
                    blob_bytes_per_user_byte: num("blob_share"),
                    blob_gc_age_cutoff: num("blob_cutoff"),
                },
                steady: get("steady") == "1",
                measured: Prediction {
                    write_amp: num("write_amp"),
                    read_amp: num("read_amp"),
                    space_amp: num("space_amp"),
                    sorted_runs: 0.0,
                    files_per_flush: 0.0,
                },
            }
        })
        .collect()
}

/// Whether the model covers `s`: every shape `Adaptive` chooses among.
/// Striped size-tiered minors (`two-tier:write-mostly`) are left out: the
/// simulator measures them far above `log2 n` once the table holds tens
/// of flushes (88 against ~10 at 190 flushes), because a stripe's major
/// takes every L0 table overlapping it, and merged L0 tables span stripes
/// after the boundaries move.
fn covered(s: &CompactionStrategy) -> bool {
    !matches!(
        s,
        CompactionStrategy::TwoTier(o) if o.stripes > 1 && matches!(o.minor, MinorPolicy::SizeTiered { .. })
    )
}

fn within_factor(predicted: f64, measured: f64, factor: f64, slack: f64) -> bool {
    let (p, m) = (predicted.max(1e-9), measured.max(1e-9));
    (p - m).abs() <= slack || (p / m <= factor && m / p <= factor)
}

/// Checks the steady, covered rows `rows` against `tolerance`: every row,
/// and the median factors of write and read amplification (and of space
/// amplification, when `space_median`). Returns the rows checked.
fn check(rows: &[&Row], tolerance: &Tolerance, space_median: bool) -> usize {
    let mut failures = Vec::new();
    let factor = |p: f64, m: f64| (p.max(1e-9) / m.max(1e-9)).max(m.max(1e-9) / p.max(1e-9));
    let (mut wa, mut ra, mut sa) = (Vec::new(), Vec::new(), Vec::new());
    for r in rows {
        let p = predict(&r.strategy, &r.mix, &r.size);
        let m = &r.measured;
        let label = format!("{} {} {} keys", r.workload, r.shape, r.keys);
        if !within_factor(p.write_amp, m.write_amp, tolerance.write_amp_factor, 0.0) {
            failures.push(format!(
                "{label}: write amp {:.2} vs {:.2}",
                p.write_amp, m.write_amp
            ));
        }
        // The increasing workload reads recent keys, mostly from the
        // memtable and the newest table; the model assumes reads of
        // random keys.
        let reads = r.mix.read_share() > 0.0 && r.workload != "increasing";
        if reads
            && !within_factor(
                p.read_amp,
                m.read_amp,
                tolerance.read_amp_factor,
                tolerance.read_amp_slack,
            )
        {
            failures.push(format!(
                "{label}: read amp {:.2} vs {:.2}",
                p.read_amp, m.read_amp
            ));
        }
        if (p.space_amp - m.space_amp).abs() > tolerance.space_amp_diff {
            failures.push(format!(
                "{label}: space amp {:.2} vs {:.2}",
                p.space_amp, m.space_amp
            ));
        }
        wa.push(factor(p.write_amp, m.write_amp));
        if reads {
            ra.push(factor(p.read_amp, m.read_amp));
        }
        sa.push(factor(p.space_amp, m.space_amp));
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (wa, ra, sa) = (median(&mut wa), median(&mut ra), median(&mut sa));
    assert!(
        wa <= tolerance.median_factor && ra <= tolerance.median_factor,
        "median factors {wa:.3} (write amp), {ra:.3} (read amp)"
    );
    assert!(
        !space_median || sa <= tolerance.median_factor,
        "median factor {sa:.3} (space amp)"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    rows.len()
}

#[test]
fn predictions_are_within_the_stated_tolerances_of_the_simulator() {
    let rows = rows();
    assert!(rows.len() >= 36);
    // The model predicts the steady state: rows whose run wrote less than
    // twice the table are not held to it.
    let inline: Vec<&Row> = rows
        .iter()
        .filter(|r| r.steady && covered(&r.strategy) && r.size.blob_bytes_per_user_byte == 0.0)
        .collect();
    assert!(check(&inline, &TOLERANCE, false) >= 30);
}

#[test]
fn separated_predictions_are_within_their_stated_tolerances() {
    let rows = rows();
    let separated: Vec<&Row> = rows
        .iter()
        .filter(|r| r.steady && covered(&r.strategy) && r.size.blob_bytes_per_user_byte > 0.0)
        .collect();
    assert!(check(&separated, &TOLERANCE_SEPARATED, true) >= 30);
}

/// What matters for `Adaptive`: among the covered shapes, the one the
/// model ranks first costs, by the simulator's own figures, at most a
/// quarter more than the simulator's cheapest (CPU objective, steady rows).
#[test]
fn the_model_picks_a_shape_the_simulator_finds_nearly_cheapest() {
    let rows = rows();
    let costs = CpuCosts::default();
    let mut groups: Vec<(&str, u64, u64)> = rows
        .iter()
        .filter(|r| r.steady)
        .map(|r| (r.workload.as_str(), r.keys, r.size.flush_bytes))
        .collect();
    groups.dedup();
    assert!(groups.len() >= 6);
    let mut failures = Vec::new();
    for (workload, keys, flush) in groups {
        let cell: Vec<&Row> = rows
            .iter()
            .filter(|r| r.workload == workload && r.keys == keys && r.size.flush_bytes == flush)
            .filter(|r| covered(&r.strategy))
            .collect();
        let strategies: Vec<CompactionStrategy> = cell.iter().map(|r| r.strategy.clone()).collect();
        let r0 = cell[0];
        let ranked = rank(
            &strategies,
            &r0.mix,
            &r0.size,
            Objective::Cpu,
            &Limits::default(),
            &costs,
        );
        // The table holds amplification only: files per flush and sorted
        // runs come from the model on both sides.
        let measured_cost = |s: &CompactionStrategy| -> f64 {
            let r = cell.iter().find(|r| &r.strategy == s).unwrap();
            let p = predict(s, &r.mix, &r.size);
            let m = Prediction {
                files_per_flush: p.files_per_flush,
                sorted_runs: p.sorted_runs,
                ..r.measured
            };
            costs.per_op(&m, &r.mix, &r.size)
        };
        let best = cell
            .iter()
            .map(|r| measured_cost(&r.strategy))
            .fold(f64::INFINITY, f64::min);
        let picked = measured_cost(&ranked[0].strategy);
        if picked > 1.25 * best {
            failures.push(format!(
                "{workload} {keys} keys: picked {} at {picked:.2} µs/op, cheapest {best:.2}",
                ranked[0].strategy
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
