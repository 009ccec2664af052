//! The LSM page: one self-contained HTML file (well-formed XHTML), inline
//! SVG and a few lines of script for the history slider; no network.
//!
//! A tree is drawn with levels as rows and each file as a box placed by
//! its key range (x) and sized by its bytes (height, relative to the
//! largest file drawn); hovering a box shows its number, size and keys.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use lithify::inspect::manifest::TableId;

use super::{BlobBox, Current, FileBox, Step, TableTree};
use crate::chart::{Paint, Svg, html_head, xml_escape as esc};

/// What the page shows.
pub(super) struct Page<'a> {
    pub db: &'a Path,
    pub manifest: &'a str,
    pub current: &'a Current,
    pub steps: &'a [Step],
    /// Older steps left out (`--max-steps`).
    pub skipped_steps: usize,
    pub show: &'a dyn Fn(&[u8]) -> String,
}

const WIDTH: f64 = 1100.0;
const LABEL: f64 = 380.0;
const ROW: f64 = 34.0;

/// Bytes as KB or MB.
pub(super) fn mb(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MB", bytes as f64 / 1e6)
    } else {
        format!("{:.1} KB", bytes as f64 / 1e3)
    }
}

/// Maps user keys onto [0, 1]: past the prefix every key drawn shares, the
/// next 8 bytes as a big-endian number, between the smallest and largest.
struct KeyScale {
    prefix: usize,
    lo: f64,
    hi: f64,
}

impl KeyScale {
    fn new<'k>(keys: impl Iterator<Item = &'k [u8]>) -> Self {
        let keys: Vec<&[u8]> = keys.collect();
        let (Some(min), Some(max)) = (keys.iter().min(), keys.iter().max()) else {
            return KeyScale {
                prefix: 0,
                lo: 0.0,
                hi: 1.0,
            };
        };
        let prefix = min
            .iter()
            .zip(max.iter())
            .take_while(|(a, b)| a == b)
            .count();
        let mut s = KeyScale {
            prefix,
            lo: 0.0,
            hi: 1.0,
        };
        let (lo, hi) = (s.raw(min), s.raw(max));
        s.lo = lo;
        s.hi = if hi > lo { hi } else { lo + 1.0 };
        s
    }

    fn raw(&self, key: &[u8]) -> f64 {
        let mut v = 0u64;
        for i in 0..8 {
            v = (v << 8) | u64::from(key.get(self.prefix + i).copied().unwrap_or(0));
        }
        v as f64
    }

    fn pos(&self, key: &[u8]) -> f64 {
        ((self.raw(key) - self.lo) / (self.hi - self.lo)).clamp(0.0, 1.0)
    }
}

/// One table's tree as an SVG: `levels[i]` = (label, files).
fn tree_svg(
    out: &mut String,
    levels: &[(String, Vec<&FileBox>)],
    scale: &KeyScale,
    max_size: u64,
    show: &dyn Fn(&[u8]) -> String,
    width: f64,
) {
    let rows = levels.len().max(1) as f64;
    let mut svg = Svg::open(out, width, rows * ROW + 4.0);
    let plot = width - LABEL - 10.0;
    for (i, (label, files)) in levels.iter().enumerate() {
        let y = i as f64 * ROW + 2.0;
        svg.rect((LABEL, y, plot, ROW - 4.0), Paint::Fill("#f4f4f4"), None);
        svg.text((4.0, y + ROW / 2.0 + 4.0), label, None);
        // Files whose boxes overlap (L0) go to separate lanes of the row.
        let spans: Vec<(f64, f64)> = files
            .iter()
            .map(|f| {
                let x0 = LABEL + scale.pos(&f.smallest) * plot;
                let x1 = LABEL + scale.pos(&f.largest) * plot;
                (x0, x0 + (x1 - x0).max(2.0))
            })
            .collect();
        let mut lane_ends: Vec<f64> = Vec::new();
        let lanes: Vec<usize> = spans
            .iter()
            .map(
                |&(x0, x1)| match lane_ends.iter().position(|&end| end <= x0) {
                    Some(l) => {
                        lane_ends[l] = x1;
                        l
                    }
                    None => {
                        lane_ends.push(x1);
                        lane_ends.len() - 1
                    }
                },
            )
            .collect();
        let lane_h = (ROW - 6.0) / lane_ends.len().max(1) as f64;
        for ((f, &(x0, x1)), lane) in files.iter().zip(&spans).zip(lanes) {
            let h = ((f.size as f64 / max_size.max(1) as f64).sqrt() * lane_h).max(2.0);
            let lane_bottom = y + ROW - 4.0 - lane as f64 * lane_h;
            let tooltip = format!(
                "{:06}.sst, {}, keys {} .. {}",
                f.number,
                mb(f.size),
                show(&f.smallest),
                show(&f.largest),
            );
            svg.rect(
                (x0, lane_bottom - h, x1 - x0, h),
                Paint::Class("file"),
                Some(&tooltip),
            );
        }
    }
    svg.close();
}

/// A table's blob files as one SVG row: a bar per file, in number order,
/// as wide as its share of the bytes drawn; the part of each that is
/// garbage in grey, the rest blue.
fn blob_svg(out: &mut String, blobs: &[BlobBox], width: f64) {
    if blobs.is_empty() {
        return;
    }
    let total: u64 = blobs.iter().map(|b| b.size).sum::<u64>().max(1);
    let garbage: u64 = blobs.iter().map(|b| b.garbage_bytes).sum();
    let values: u64 = blobs.iter().map(|b| b.blob_bytes).sum::<u64>().max(1);
    let mut svg = Svg::open(out, width, ROW + 4.0);
    let plot = width - LABEL - 10.0;
    let label = format!(
        "blob files: {}, {}, {:.0}% garbage",
        blobs.len(),
        mb(total),
        garbage as f64 * 100.0 / values as f64
    );
    svg.text((4.0, ROW / 2.0 + 6.0), &label, None);
    let mut x = LABEL;
    for b in blobs {
        let w = (b.size as f64 / total as f64 * plot).max(2.0);
        let share = (b.garbage_bytes as f64 / b.blob_bytes.max(1) as f64).clamp(0.0, 1.0);
        let tooltip = format!(
            "{:06}.blob, {}, {:.0}% garbage",
            b.number,
            mb(b.size),
            share * 100.0
        );
        let h = ROW - 4.0;
        svg.rect((x, 2.0, w, h), Paint::Class("blob"), Some(&tooltip));
        if share > 0.0 {
            svg.rect(
                (x, 2.0, w, h * share),
                Paint::Class("garbage"),
                Some(&tooltip),
            );
        }
        x += w;
    }
    svg.close();
}

fn history_levels(t: &TableTree) -> Vec<(String, Vec<&FileBox>)> {
    t.levels
        .iter()
        .enumerate()
        .map(|(l, files)| {
            let bytes: u64 = files.values().map(|f| f.size).sum();
            (
                format!("L{l}: {} files, {}", files.len(), mb(bytes)),
                files.values().collect(),
            )
        })
        .collect()
}

/// The whole page.
pub(super) fn page(p: &Page<'_>) -> String {
    let mut keys: Vec<&[u8]> = Vec::new();
    let mut max_size = 1;
    for t in &p.current.tables {
        for (_, f) in &t.files {
            keys.push(&f.smallest);
            keys.push(&f.largest);
            max_size = max_size.max(f.size);
        }
    }
    for s in p.steps {
        for t in s.tree.values() {
            for f in t.levels.iter().flat_map(|l| l.values()) {
                keys.push(&f.smallest);
                keys.push(&f.largest);
                max_size = max_size.max(f.size);
            }
        }
    }
    let scale = KeyScale::new(keys.into_iter());
    let mut out = String::new();
    let title = format!("lithify LSM: {}", p.db.display());
    out.push_str(&html_head(
        &title,
        ".file { fill: #3b7dd8; fill-opacity: 0.75; stroke: #1d3f70; stroke-width: 0.5; }\n\
         .file:hover { fill: #e0662d; }\n\
         .blob { fill: #3b7dd8; fill-opacity: 0.45; stroke: #1d3f70; stroke-width: 0.5; }\n\
         .garbage { fill: #999999; fill-opacity: 0.8; }\n\
         .note { color: #555; font-size: 13px; }\n",
    ));
    out.push_str("<h2>The tree now</h2>\n");
    for t in &p.current.tables {
        let files: usize = t.levels.values().map(|l| l.0).sum();
        let bytes: u64 = t.levels.values().map(|l| l.1).sum();
        let _ = writeln!(
            out,
            r#"<h3>table "{}": {files} files, {} — strategy {}</h3><p class="note">{}</p>"#,
            esc(&t.name),
            mb(bytes),
            esc(&t.strategy),
            esc(&t.strategy_reason)
        );
        let mut by_level: BTreeMap<usize, Vec<&FileBox>> = BTreeMap::new();
        for (level, f) in &t.files {
            by_level.entry(*level).or_default().push(f);
        }
        let deepest = t
            .levels
            .iter()
            .filter(|(_, l)| l.0 > 0)
            .map(|(level, _)| *level)
            .chain(by_level.keys().copied())
            .max()
            .unwrap_or(0);
        let levels: Vec<(String, Vec<&FileBox>)> = (0..=deepest)
            .map(|l| {
                let (n, bytes, score) = t.levels.get(&l).copied().unwrap_or((0, 0, 0.0));
                let target = if l > 0 && score > 0.0 {
                    format!(", target {}", mb((bytes as f64 / score) as u64))
                } else {
                    String::new()
                };
                (
                    format!("L{l}: {n} files, {}, score {score:.2}{target}", mb(bytes)),
                    by_level.remove(&l).unwrap_or_default(),
                )
            })
            .collect();
        tree_svg(&mut out, &levels, &scale, max_size, p.show, WIDTH);
        blob_svg(&mut out, &t.blob_files, WIDTH);
    }

    out.push_str("<h2>How it got here</h2>\n");
    let _ = writeln!(
        out,
        r#"<p class="note">{} step(s) replayed from {}: every flush, compaction and trivial move since that MANIFEST was started (the last open or MANIFEST roll); earlier history is not kept.{}</p>"#,
        p.steps.len() + p.skipped_steps,
        esc(p.manifest),
        if p.skipped_steps > 0 {
            format!(" The oldest {} are not drawn.", p.skipped_steps)
        } else {
            String::new()
        }
    );
    if p.steps.is_empty() {
        out.push_str("</body></html>\n");
        return out;
    }
    let last = p.steps.len() - 1;
    let _ = writeln!(
        out,
        r#"<p><input type="range" id="step" min="0" max="{last}" value="{last}"/> <span id="steplabel"></span></p>"#
    );
    for (i, s) in p.steps.iter().enumerate() {
        let _ = write!(
            out,
            r#"<div class="step" id="step{i}" style="display:{}"><p>step {} of {}: {} of table "{}", {}, wrote {}; write amplification so far {:.2}</p>"#,
            if i == last { "block" } else { "none" },
            i + 1 + p.skipped_steps,
            p.steps.len() + p.skipped_steps,
            s.kind.name(),
            esc(&s.table),
            esc(&s.levels),
            mb(s.bytes_written),
            s.written_total as f64 / s.flushed_total.max(1) as f64
        );
        let ids: Vec<&TableId> = s.tree.keys().collect();
        for id in ids {
            let t = &s.tree[id];
            if t.levels.iter().all(BTreeMap::is_empty) && t.blob_files.is_empty() {
                continue;
            }
            let _ = write!(out, r#"<p class="note">table "{}"</p>"#, esc(&t.name));
            tree_svg(
                &mut out,
                &history_levels(t),
                &scale,
                max_size,
                p.show,
                WIDTH,
            );
            blob_svg(&mut out, &t.blob_files, WIDTH);
        }
        out.push_str("</div>\n");
    }
    chart(&mut out, p.steps);
    out.push_str(
        r#"<script>
//<![CDATA[
(function () {
  var slider = document.getElementById('step');
  var label = document.getElementById('steplabel');
  function show() {
    var divs = document.getElementsByClassName('step');
    for (var i = 0; i < divs.length; i++) { divs[i].style.display = 'none'; }
    document.getElementById('step' + slider.value).style.display = 'block';
    label.textContent = 'step ' + (Number(slider.value) + 1) + ' of ' + divs.length + ' drawn';
  }
  slider.addEventListener('input', show);
  show();
})();
//]]>
</script>
</body></html>
"#,
    );
    out
}

/// Bytes written per step (bars) and cumulative write amplification
/// (flush and compaction bytes over flush bytes: the WAL is not in the
/// MANIFEST) as a line.
fn chart(out: &mut String, steps: &[Step]) {
    let (w, h, pad) = (WIDTH, 220.0, 40.0);
    let n = steps.len().max(1) as f64;
    let max_bytes = steps
        .iter()
        .map(|s| s.bytes_written)
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let wa = |s: &Step| s.written_total as f64 / s.flushed_total.max(1) as f64;
    let max_wa = steps.iter().map(wa).fold(1.0f64, f64::max);
    let _ = writeln!(
        out,
        "<h3>Bytes written per step (bars) and cumulative write amplification (line, max {max_wa:.2})</h3>"
    );
    let mut svg = Svg::open(out, w, h);
    let plot_w = w - 2.0 * pad;
    let plot_h = h - 2.0 * pad;
    let bar = (plot_w / n).max(1.0);
    let mut line = Vec::with_capacity(steps.len());
    for (i, s) in steps.iter().enumerate() {
        let x = pad + i as f64 * plot_w / n;
        let bh = s.bytes_written as f64 / max_bytes * plot_h;
        let colour = match s.kind {
            super::StepKind::Flush => "#3b7dd8",
            super::StepKind::Compaction => "#e0662d",
            // A trivial move, or a kind this page does not know.
            _ => "#999999",
        };
        let tooltip = format!(
            "step {}: {} {}, {}",
            i + 1,
            s.kind.name(),
            s.levels,
            mb(s.bytes_written)
        );
        svg.rect(
            (x, pad + plot_h - bh, (bar - 1.0).max(1.0), bh),
            Paint::Fill(colour),
            Some(&tooltip),
        );
        line.push((x + bar / 2.0, pad + plot_h - wa(s) / max_wa * plot_h));
    }
    svg.polyline(&line, "#222");
    svg.line(
        (pad, pad + plot_h),
        (pad + plot_w, pad + plot_h),
        "#888",
        false,
    );
    svg.text(
        (pad, h - 8.0),
        "flush (blue), compaction (orange), trivial move (grey); line: cumulative write amplification",
        None,
    );
    svg.close();
}
