//! `bench --html OUT.html`: throughput and amplification over the run.
//!
//! A sampler thread reads, every 250 ms, the operations the workloads
//! have done (`progress::OPS_DONE`) and the engine's statistics (write and
//! space amplification, L0 files, pending compaction bytes, stalls), and
//! the page draws them as lines over time, one band per workload.

use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use lithify::Db;

use crate::bench::progress::OPS_DONE;
use crate::text::xml_escape as esc;

/// How often the sampler looks.
const EVERY: Duration = Duration::from_millis(250);

/// One look at the run.
#[derive(Debug, Clone)]
pub(crate) struct Sample {
    pub secs: f64,
    pub workload: String,
    pub ops: u64,
    pub write_amp: f64,
    pub space_amp: f64,
    pub l0_files: usize,
    pub pending_mb: f64,
    pub stalled_writes: u64,
}

/// The samples of a run and what runs now.
#[derive(Debug, Default)]
pub(crate) struct Timeline {
    pub samples: Mutex<Vec<Sample>>,
    pub workload: Mutex<String>,
    pub stop: AtomicBool,
}

impl Timeline {
    /// Samples `db` until [`stop`](Self::stop) is set.
    pub(crate) fn sample(&self, db: &Db) {
        let start = Instant::now();
        loop {
            let stats = db.stats();
            let sample = Sample {
                secs: start.elapsed().as_secs_f64(),
                workload: self.workload.lock().map(|w| w.clone()).unwrap_or_default(),
                ops: OPS_DONE.load(Ordering::Relaxed),
                write_amp: stats.write_amp,
                space_amp: stats.space_amp,
                l0_files: stats
                    .tables
                    .iter()
                    .filter_map(|t| t.levels.iter().find(|l| l.level == Some(0)))
                    .map(|l| l.files)
                    .sum(),
                pending_mb: stats
                    .tables
                    .iter()
                    .map(|t| t.pending_compaction_bytes)
                    .sum::<u64>() as f64
                    / 1e6,
                stalled_writes: stats.stalls.delayed_writes + stats.stalls.stopped_writes,
            };
            if let Ok(mut s) = self.samples.lock() {
                s.push(sample);
            }
            // Sleep in short steps so the end of the run is not delayed.
            let until = Instant::now() + EVERY;
            while Instant::now() < until {
                if self.stop.load(Ordering::Relaxed) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

/// A series of a chart: name, colour, points (x, value).
pub(crate) type Series = (String, &'static str, Pts);

/// A line chart over `0..=x_max`: shaded bands `(x0, x1, label)`, the
/// series, and vertical marks `(x, colour)`.
pub(crate) struct LineChart<'a> {
    pub title: &'a str,
    pub x_max: f64,
    pub x_unit: &'a str,
    pub bands: Vec<(f64, f64, String)>,
    pub series: Vec<Series>,
    pub marks: Vec<(f64, &'static str)>,
}

/// Legend entries per row under a chart.
const LEGEND_PER_ROW: usize = 4;

/// Draws `c` as one SVG.
pub(crate) fn line_chart(out: &mut String, c: &LineChart<'_>) {
    let legend_rows = c.series.len().div_ceil(LEGEND_PER_ROW).max(1) as f64;
    let (w, plot_h, pad) = (1100.0, 140.0, 44.0);
    let h = plot_h + 2.0 * pad + (legend_rows - 1.0) * 14.0;
    let x_max = c.x_max.max(1e-9);
    let y_max = c
        .series
        .iter()
        .flat_map(|(_, _, pts)| pts.iter().map(|p| p.1))
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let pw = w - 2.0 * pad;
    let x = |t: f64| pad + t / x_max * pw;
    let y = |v: f64| pad + plot_h - v / y_max * plot_h;
    let _ = write!(
        out,
        r#"<h3>{}</h3><svg xmlns="http://www.w3.org/2000/svg" width="{w:.0}" height="{h:.0}" viewBox="0 0 {w:.0} {h:.0}">"#,
        esc(c.title)
    );
    for (k, (x0, x1, label)) in c.bands.iter().enumerate() {
        let (a, b) = (x(*x0), x(*x1).max(x(*x0) + 1.0));
        let fill = if k % 2 == 1 { "#eeeeee" } else { "#f8f8f8" };
        let _ = write!(
            out,
            r#"<rect x="{a:.1}" y="{pad}" width="{:.1}" height="{plot_h}" fill="{fill}"/><text x="{:.1}" y="{:.1}" class="lvl">{}</text>"#,
            b - a,
            a + 2.0,
            pad - 4.0,
            esc(label)
        );
    }
    for (at, color) in &c.marks {
        let _ = write!(
            out,
            r#"<line x1="{0:.1}" y1="{pad}" x2="{0:.1}" y2="{1:.1}" stroke="{color}" stroke-dasharray="3,3"/>"#,
            x(*at),
            pad + plot_h
        );
    }
    for (k, (name, color, pts)) in c.series.iter().enumerate() {
        let points: Vec<String> = pts
            .iter()
            .map(|&(t, v)| format!("{:.1},{:.1}", x(t), y(v)))
            .collect();
        let _ = write!(
            out,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="1.5"/><text x="{:.1}" y="{:.1}" class="lvl" fill="{color}">{}</text>"#,
            points.join(" "),
            pad + (k % LEGEND_PER_ROW) as f64 * 260.0,
            pad + plot_h + 30.0 + (k / LEGEND_PER_ROW) as f64 * 14.0,
            esc(name)
        );
    }
    let _ = write!(
        out,
        r##"<line x1="{pad}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#888"/><text x="2" y="{:.1}" class="lvl">{}</text><text x="2" y="{:.1}" class="lvl">0</text><text x="{:.1}" y="{:.1}" class="lvl">{}</text></svg>"##,
        pad + plot_h,
        pad + pw,
        pad + plot_h,
        pad + 10.0,
        esc(&format!("{y_max:.3}")),
        pad + plot_h,
        pad + pw - 60.0,
        pad + plot_h + 14.0,
        esc(&format!("{:.1} {}", c.x_max, c.x_unit)),
    );
    out.push('\n');
}

/// Points of a series: (x, value).
type Pts = Vec<(f64, f64)>;

/// One line chart over the run's time, with a band per workload.
fn chart(out: &mut String, title: &str, samples: &[Sample], series: &[(&str, &'static str, Pts)]) {
    let mut bands = Vec::new();
    let mut i = 0;
    while i < samples.len() {
        let name = &samples[i].workload;
        let mut j = i;
        while j + 1 < samples.len() && samples[j + 1].workload == *name {
            j += 1;
        }
        bands.push((samples[i].secs, samples[j].secs, name.clone()));
        i = j + 1;
    }
    line_chart(
        out,
        &LineChart {
            title,
            x_max: samples.last().map_or(1.0, |s| s.secs).max(0.001),
            x_unit: "s",
            bands,
            series: series
                .iter()
                .map(|(n, c, p)| ((*n).to_owned(), *c, p.clone()))
                .collect(),
            marks: Vec::new(),
        },
    );
}

/// The page of a run.
pub(crate) fn page(title: &str, samples: &[Sample]) -> String {
    let mut out = crate::text::html_head(title, "");
    let _ = writeln!(
        out,
        "<p>{} samples, one every {} ms; each band is one workload.</p>",
        samples.len(),
        EVERY.as_millis()
    );
    let rate: Vec<(f64, f64)> = samples
        .windows(2)
        .map(|w| {
            let dt = (w[1].secs - w[0].secs).max(1e-6);
            (w[1].secs, (w[1].ops - w[0].ops) as f64 / dt / 1000.0)
        })
        .collect();
    let pts = |f: fn(&Sample) -> f64| -> Vec<(f64, f64)> {
        samples.iter().map(|s| (s.secs, f(s))).collect()
    };
    chart(
        &mut out,
        "Throughput (K operations per second)",
        samples,
        &[("K ops/s", "#3b7dd8", rate)],
    );
    chart(
        &mut out,
        "Amplification",
        samples,
        &[
            ("write amplification", "#e0662d", pts(|s| s.write_amp)),
            ("space amplification", "#2d9e5a", pts(|s| s.space_amp)),
        ],
    );
    chart(
        &mut out,
        "Compaction debt",
        samples,
        &[
            ("L0 files", "#7b3fb5", pts(|s| s.l0_files as f64)),
            ("pending compaction MB", "#b58a3f", pts(|s| s.pending_mb)),
            (
                "stalled writes",
                "#c03030",
                pts(|s| s.stalled_writes as f64),
            ),
        ],
    );
    out.push_str("</body></html>\n");
    out
}
