//! `bench --strategies-report --html OUT.html`: the report as one page —
//! per workload, bar charts of each strategy's ops/s, CPU per operation,
//! write, read and space amplification and p99 (Adaptive's bars marked
//! with the shape it chose), peak space and stalled writes, line charts
//! of write and space amplification over the operations, one line per
//! strategy, with Adaptive's switches marked, and of each second's p99.9
//! latency.

use std::fmt::Write as _;

use crate::chart::{BarChart, LineChart, bar_chart, html_head, line_chart, xml_escape as esc};
use crate::strategies::{AmpSample, WorkloadRun, workload_name};

/// One metric of a run, its label and whether lower is better.
type Metric = (&'static str, fn(&WorkloadRun) -> Option<f64>, bool);

const METRICS: [Metric; 8] = [
    ("ops/s", |r| Some(r.ops_per_sec()), false),
    ("CPU µs/op", |r| r.cpu_us_per_op, true),
    ("write amp", |r| Some(r.write_amp), true),
    ("read amp (tables/get)", |r| Some(r.read_amp), true),
    ("space amp", |r| Some(r.space_amp), true),
    (
        "p99 (µs)",
        |r| Some(r.latency.quantile(0.99) as f64 / 1000.0),
        true,
    ),
    (
        "peak space amp (live and not yet deleted files)",
        |r| Some(r.counts.peak_space_amp),
        true,
    ),
    ("stalled writes", |r| Some(r.stalled_writes as f64), true),
];

/// The page for `runs` (in workload order, as the report runs them).
pub fn page(runs: &[WorkloadRun]) -> String {
    let mut out = html_head(
        "lithify strategies report",
        ".best { font-weight: bold; }\n.note { color: #555; font-size: 13px; }\n",
    );
    out.push_str(
        "<p class=\"note\">Each workload under every fixed strategy and under Adaptive; \
         the best bar of each chart is darker. Adaptive's label names the shape it chose.</p>\n",
    );
    let mut i = 0;
    while i < runs.len() {
        let w = runs[i].workload;
        let mut j = i;
        while j < runs.len() && runs[j].workload == w {
            j += 1;
        }
        let group = &runs[i..j];
        let _ = writeln!(out, "<h2>{}</h2>", esc(workload_name(w)));
        for (label, value, lower_better) in METRICS {
            bars(&mut out, label, group, value, lower_better);
        }
        over_time(
            &mut out,
            "write amp so far, over the operations",
            group,
            |p| p.write_amp,
        );
        over_time(&mut out, "space amp, over the operations", group, |p| {
            p.space_amp
        });
        per_second(&mut out, group);
        i = j;
    }
    out.push_str("</body></html>\n");
    out
}

/// Line colours, one per strategy of the report.
const COLOURS: [&str; 7] = [
    "#3b7dd8", "#e0662d", "#2d9e5a", "#7b3fb5", "#b58a3f", "#808080", "#c03030",
];

/// One line per run of `runs` (one workload) of `value` over its
/// operations; Adaptive's switches are dashed lines in its colour.
fn over_time(out: &mut String, title: &str, runs: &[WorkloadRun], value: fn(&AmpSample) -> f64) {
    let series = runs
        .iter()
        .enumerate()
        .map(|(k, r)| {
            let pts = r
                .timeline
                .iter()
                .map(|p| (p.ops as f64, value(p)))
                .collect();
            (r.strategy.clone(), COLOURS[k % COLOURS.len()], pts)
        })
        .collect();
    let marks = runs
        .iter()
        .enumerate()
        .filter(|(_, r)| r.strategy == "adaptive")
        .flat_map(|(k, r)| {
            r.switches
                .iter()
                .map(move |(at, _)| (*at as f64, COLOURS[k % COLOURS.len()]))
        })
        .collect();
    line_chart(
        out,
        &LineChart {
            title,
            x_max: runs.iter().map(|r| r.ops).max().unwrap_or(1) as f64,
            x_unit: "ops",
            bands: Vec::new(),
            series,
            marks,
        },
    );
}

/// Each second's p99.9 latency, one line per run of `runs` (one
/// workload).
fn per_second(out: &mut String, runs: &[WorkloadRun]) {
    let series = runs
        .iter()
        .enumerate()
        .map(|(k, r)| {
            let pts = r
                .per_second
                .iter()
                .map(|s| (s.second as f64 + 0.5, s.p999_us))
                .collect();
            (r.strategy.clone(), COLOURS[k % COLOURS.len()], pts)
        })
        .collect();
    let seconds = runs
        .iter()
        .filter_map(|r| r.per_second.last())
        .map(|s| s.second + 1)
        .max()
        .unwrap_or(1);
    line_chart(
        out,
        &LineChart {
            title: "p99.9 latency of each second (µs)",
            x_max: seconds as f64,
            x_unit: "s",
            bands: Vec::new(),
            series,
            marks: Vec::new(),
        },
    );
}

/// One bar per run of `runs` (one workload) of `value`; Adaptive's label
/// names the shape it chose.
fn bars(
    out: &mut String,
    title: &str,
    runs: &[WorkloadRun],
    value: fn(&WorkloadRun) -> Option<f64>,
    lower_is_better: bool,
) {
    let rows = runs
        .iter()
        .map(|r| {
            let name = if r.strategy == r.in_force || r.in_force.is_empty() {
                r.strategy.clone()
            } else {
                format!("{} ({})", r.strategy, r.in_force)
            };
            (name, value(r))
        })
        .collect();
    bar_chart(
        out,
        &BarChart {
            title,
            rows,
            lower_is_better,
        },
    );
}
