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

use crate::chart::{LineChart, html_head, line_chart};
use crate::histogram::{PerSecond, SecondLatency};
use crate::progress::OPS_DONE;

/// How often the sampler looks.
const EVERY: Duration = Duration::from_millis(250);

/// One look at the run.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Seconds since the run started.
    pub secs: f64,
    /// The workload running.
    pub workload: String,
    /// Operations done by every workload so far.
    pub ops: u64,
    /// Write amplification so far.
    pub write_amp: f64,
    /// Space amplification now.
    pub space_amp: f64,
    /// L0 files of every table.
    pub l0_files: usize,
    /// Estimated bytes compaction has to rewrite, in MB.
    pub pending_mb: f64,
    /// Writes delayed or stopped so far.
    pub stalled_writes: u64,
}

/// The samples of a run and what runs now.
#[derive(Debug, Default)]
pub struct Timeline {
    /// The samples taken so far.
    pub samples: Mutex<Vec<Sample>>,
    /// The name of the workload running (the sampler labels samples with it).
    pub workload: Mutex<String>,
    /// Set to end [`sample`](Self::sample).
    pub stop: AtomicBool,
    /// Each second's latency percentiles (pass it to the workloads in
    /// `Settings::per_second`); its start is the timeline's.
    pub latency: std::sync::Arc<PerSecond>,
}

impl Timeline {
    /// Samples `db` until [`stop`](Self::stop) is set.
    pub fn sample(&self, db: &Db) {
        let start = self.latency.start();
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
            x_max: series
                .iter()
                .flat_map(|(_, _, p)| p.iter().map(|(x, _)| *x))
                .fold(samples.last().map_or(1.0, |s| s.secs), f64::max)
                .max(0.001),
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

/// The page of a run: its samples, and the latency of each second.
pub fn page(title: &str, samples: &[Sample], seconds: &[SecondLatency]) -> String {
    let mut out = html_head(title, "");
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
    let at = |s: &SecondLatency| s.second as f64 + 0.5;
    chart(
        &mut out,
        "Latency of each second (µs)",
        samples,
        &[
            (
                "p99",
                "#2d9e5a",
                seconds.iter().map(|s| (at(s), s.p99_us)).collect(),
            ),
            (
                "p99.9",
                "#c03030",
                seconds.iter().map(|s| (at(s), s.p999_us)).collect(),
            ),
        ],
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
