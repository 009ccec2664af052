//! `bench --strategies-report --html OUT.html`: the report as one page —
//! per workload, bar charts of each strategy's ops/s, CPU per operation,
//! write, read and space amplification and p99 (Adaptive's bars marked
//! with the shape it chose), and line charts of write and space
//! amplification over the operations, one line per strategy, with
//! Adaptive's switches marked.

use std::fmt::Write as _;

use crate::bench::strategies::{AmpSample, WorkloadRun, workload_name};
use crate::bench::timeline::{LineChart, line_chart};
use crate::text::{html_head, xml_escape as esc};

/// One metric of a run, its label and whether lower is better.
type Metric = (&'static str, fn(&WorkloadRun) -> Option<f64>, bool);

const METRICS: [Metric; 6] = [
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
];

/// The page for `runs` (in workload order, as the report runs them).
pub(crate) fn page(runs: &[WorkloadRun]) -> String {
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

fn bars(
    out: &mut String,
    label: &str,
    runs: &[WorkloadRun],
    value: fn(&WorkloadRun) -> Option<f64>,
    lower_better: bool,
) {
    let values: Vec<Option<f64>> = runs.iter().map(value).collect();
    let max = values
        .iter()
        .flatten()
        .copied()
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let best = values
        .iter()
        .flatten()
        .copied()
        .fold(None, |b: Option<f64>, v| {
            Some(match b {
                None => v,
                Some(b) if lower_better => b.min(v),
                Some(b) => b.max(v),
            })
        });
    let (row, label_w, plot_w) = (18.0, 360.0, 520.0);
    let h = runs.len() as f64 * row + 24.0;
    let _ = write!(
        out,
        r#"<h3>{}</h3><svg xmlns="http://www.w3.org/2000/svg" width="{:.0}" height="{h:.0}" viewBox="0 0 {:.0} {h:.0}">"#,
        esc(label),
        label_w + plot_w + 120.0,
        label_w + plot_w + 120.0
    );
    for (k, (r, v)) in runs.iter().zip(&values).enumerate() {
        let y = k as f64 * row + 4.0;
        let name = if r.strategy == r.in_force || r.in_force.is_empty() {
            r.strategy.clone()
        } else {
            format!("{} ({})", r.strategy, r.in_force)
        };
        let _ = write!(
            out,
            r#"<text x="4" y="{:.1}" class="lvl">{}</text>"#,
            y + 12.0,
            esc(&name)
        );
        match v {
            Some(v) => {
                let w = (v / max * plot_w).max(1.0);
                let fill = if Some(*v) == best {
                    "#1d3f70"
                } else {
                    "#3b7dd8"
                };
                let _ = write!(
                    out,
                    r#"<rect x="{label_w}" y="{y:.1}" width="{w:.1}" height="{:.1}" fill="{fill}"/><text x="{:.1}" y="{:.1}" class="lvl">{}</text>"#,
                    row - 4.0,
                    label_w + w + 4.0,
                    y + 12.0,
                    esc(&format!("{v:.2}"))
                );
            }
            None => {
                let _ = write!(
                    out,
                    r#"<text x="{label_w}" y="{:.1}" class="lvl">not measured</text>"#,
                    y + 12.0
                );
            }
        }
    }
    out.push_str("</svg>\n");
}
