//! Self-contained HTML pages with inline SVG charts: no script library, no
//! network, well-formed XHTML (so a test can parse a page as XML).
//!
//! The one chart writer of lithify's tools: the `bench --html` timeline,
//! the strategies report's bars and lines, and `lithify lsm`'s tree
//! pictures are all drawn with [`Svg`]; [`line_chart`] and [`bar_chart`]
//! are the two chart shapes built on it.
//!
//! ```
//! use lithify_bench::chart::{BarChart, html_head, bar_chart};
//!
//! let mut page = html_head("two engines", "");
//! bar_chart(&mut page, &BarChart {
//!     title: "ops/s",
//!     rows: vec![("a".into(), Some(120.0)), ("b".into(), Some(80.0)), ("c".into(), None)],
//!     lower_is_better: false,
//! });
//! page.push_str("</body></html>\n");
//! assert!(page.contains("<svg") && page.contains("not measured"));
//! ```

use std::fmt::Write as _;

/// `s` escaped for XML text and attribute values (control characters
/// dropped).
///
/// ```
/// assert_eq!(lithify_bench::chart::xml_escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
/// ```
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// The start of a page titled `title`, with the common style plus `css`,
/// up to and including its `<h1>`. The caller ends it with
/// `</body></html>`.
pub fn html_head(title: &str, css: &str) -> String {
    let title = xml_escape(title);
    format!(
        "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\"><head>\
         <meta charset=\"utf-8\"/><title>{title}</title>\n<style>\n\
         body {{ font-family: sans-serif; margin: 20px; color: #222; }}\n\
         .lvl {{ font-size: 12px; font-family: monospace; }}\n{css}</style></head><body>\n\
         <h1>{title}</h1>\n"
    )
}

/// How a rectangle is painted: a fill colour, or a CSS class of the page.
#[derive(Debug, Clone, Copy)]
pub enum Paint<'a> {
    /// `fill="#rrggbb"`.
    Fill(&'a str),
    /// `class="name"` (the page's style says how).
    Class(&'a str),
}

/// One `<svg>` element being written into a page; [`close`](Svg::close)
/// ends it. Coordinates are pixels from the top left.
#[derive(Debug)]
pub struct Svg<'a> {
    out: &'a mut String,
}

impl<'a> Svg<'a> {
    /// Starts an SVG of `width` x `height` pixels.
    #[must_use = "an Svg must be closed to end its element"]
    pub fn open(out: &'a mut String, width: f64, height: f64) -> Self {
        let _ = write!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}">"#
        );
        Svg { out }
    }

    /// A rectangle; `tooltip`, when given, shows on hover.
    pub fn rect(
        &mut self,
        (x, y, w, h): (f64, f64, f64, f64),
        paint: Paint<'_>,
        tooltip: Option<&str>,
    ) {
        let paint = match paint {
            Paint::Fill(colour) => format!(r#"fill="{}""#, xml_escape(colour)),
            Paint::Class(class) => format!(r#"class="{}""#, xml_escape(class)),
        };
        let _ = write!(
            self.out,
            r#"<rect {paint} x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}""#
        );
        match tooltip {
            Some(t) => {
                let _ = write!(self.out, "><title>{}</title></rect>", xml_escape(t));
            }
            None => self.out.push_str("/>"),
        }
    }

    /// A label whose baseline starts at (`x`, `y`), in `colour` if given.
    pub fn text(&mut self, (x, y): (f64, f64), text: &str, colour: Option<&str>) {
        let fill = colour
            .map(|c| format!(r#" fill="{}""#, xml_escape(c)))
            .unwrap_or_default();
        let _ = write!(
            self.out,
            r#"<text x="{x:.1}" y="{y:.1}" class="lvl"{fill}>{}</text>"#,
            xml_escape(text)
        );
    }

    /// A straight line, dashed if `dashed`.
    pub fn line(&mut self, from: (f64, f64), to: (f64, f64), colour: &str, dashed: bool) {
        let dash = if dashed {
            r#" stroke-dasharray="3,3""#
        } else {
            ""
        };
        let _ = write!(
            self.out,
            r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}"{dash}/>"#,
            from.0,
            from.1,
            to.0,
            to.1,
            xml_escape(colour)
        );
    }

    /// A line through `points`.
    pub fn polyline(&mut self, points: &[(f64, f64)], colour: &str) {
        self.out.push_str(r#"<polyline points=""#);
        for (i, (x, y)) in points.iter().enumerate() {
            let sep = if i == 0 { "" } else { " " };
            let _ = write!(self.out, "{sep}{x:.1},{y:.1}");
        }
        let _ = write!(
            self.out,
            r#"" fill="none" stroke="{}" stroke-width="1.5"/>"#,
            xml_escape(colour)
        );
    }

    /// Ends the SVG.
    pub fn close(self) {
        self.out.push_str("</svg>\n");
    }
}

/// A series of a [`LineChart`]: name, colour, points (x, value).
pub type Series = (String, &'static str, Vec<(f64, f64)>);

/// Lines over `0..=x_max`, with shaded bands and vertical marks.
#[derive(Debug, Clone)]
pub struct LineChart<'a> {
    /// The heading above the chart.
    pub title: &'a str,
    /// The right end of the x axis.
    pub x_max: f64,
    /// The x axis' unit ("s", "ops").
    pub x_unit: &'a str,
    /// Shaded stretches `(x0, x1, label)`, e.g. one per workload.
    pub bands: Vec<(f64, f64, String)>,
    /// The lines; the y axis runs from 0 to the largest value.
    pub series: Vec<Series>,
    /// Dashed vertical lines `(x, colour)`, e.g. strategy switches.
    pub marks: Vec<(f64, &'static str)>,
}

/// Legend entries per row under a line chart.
const LEGEND_PER_ROW: usize = 4;

/// Draws `c` under an `<h3>` heading.
pub fn line_chart(out: &mut String, c: &LineChart<'_>) {
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
    let _ = write!(out, "<h3>{}</h3>", xml_escape(c.title));
    let mut svg = Svg::open(out, w, h);
    for (k, (x0, x1, label)) in c.bands.iter().enumerate() {
        let (a, b) = (x(*x0), x(*x1).max(x(*x0) + 1.0));
        let fill = if k % 2 == 1 { "#eeeeee" } else { "#f8f8f8" };
        svg.rect((a, pad, b - a, plot_h), Paint::Fill(fill), None);
        svg.text((a + 2.0, pad - 4.0), label, None);
    }
    for (at, colour) in &c.marks {
        svg.line((x(*at), pad), (x(*at), pad + plot_h), colour, true);
    }
    for (k, (name, colour, pts)) in c.series.iter().enumerate() {
        let points: Vec<(f64, f64)> = pts.iter().map(|&(t, v)| (x(t), y(v))).collect();
        svg.polyline(&points, colour);
        let legend = (
            pad + (k % LEGEND_PER_ROW) as f64 * 260.0,
            pad + plot_h + 30.0 + (k / LEGEND_PER_ROW) as f64 * 14.0,
        );
        svg.text(legend, name, Some(colour));
    }
    svg.line((pad, pad + plot_h), (pad + pw, pad + plot_h), "#888", false);
    svg.text((2.0, pad + 10.0), &format!("{y_max:.3}"), None);
    svg.text((2.0, pad + plot_h), "0", None);
    svg.text(
        (pad + pw - 60.0, pad + plot_h + 14.0),
        &format!("{:.1} {}", c.x_max, c.x_unit),
        None,
    );
    svg.close();
}

/// Horizontal bars, one per row, the best one darker.
#[derive(Debug, Clone)]
pub struct BarChart<'a> {
    /// The heading above the chart.
    pub title: &'a str,
    /// `(label, value)`; a row without a value reads "not measured".
    pub rows: Vec<(String, Option<f64>)>,
    /// Whether the smallest value is the best (latency) rather than the
    /// largest (throughput).
    pub lower_is_better: bool,
}

/// Draws `c` under an `<h3>` heading.
pub fn bar_chart(out: &mut String, c: &BarChart<'_>) {
    let values = c.rows.iter().filter_map(|(_, v)| *v);
    let max = values.clone().fold(0.0f64, f64::max).max(1e-9);
    let best = values.reduce(|b, v| {
        if c.lower_is_better {
            b.min(v)
        } else {
            b.max(v)
        }
    });
    let (row, label_w, plot_w) = (18.0, 360.0, 520.0);
    let h = c.rows.len() as f64 * row + 24.0;
    let _ = write!(out, "<h3>{}</h3>", xml_escape(c.title));
    let mut svg = Svg::open(out, label_w + plot_w + 120.0, h);
    for (k, (label, value)) in c.rows.iter().enumerate() {
        let y = k as f64 * row + 4.0;
        svg.text((4.0, y + 12.0), label, None);
        match value {
            Some(v) => {
                let w = (v / max * plot_w).max(1.0);
                let fill = if Some(*v) == best {
                    "#1d3f70"
                } else {
                    "#3b7dd8"
                };
                svg.rect((label_w, y, w, row - 4.0), Paint::Fill(fill), None);
                svg.text((label_w + w + 4.0, y + 12.0), &format!("{v:.2}"), None);
            }
            None => svg.text((label_w, y + 12.0), "not measured", None),
        }
    }
    svg.close();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_exactly_the_elements_asked_for() {
        let mut out = String::new();
        let mut svg = Svg::open(&mut out, 10.0, 20.0);
        svg.rect((1.0, 2.0, 3.0, 4.0), Paint::Class("file"), Some("a<b"));
        svg.rect((0.0, 0.0, 1.0, 1.0), Paint::Fill("#fff"), None);
        svg.text((5.0, 6.0), "x&y", Some("#123"));
        svg.line((0.0, 1.0), (2.0, 3.0), "#888", true);
        svg.polyline(&[(0.0, 0.0), (1.5, 2.26)], "#222");
        svg.close();
        assert_eq!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"20\" viewBox=\"0 0 10 20\">\
             <rect class=\"file\" x=\"1.0\" y=\"2.0\" width=\"3.0\" height=\"4.0\"><title>a&lt;b</title></rect>\
             <rect fill=\"#fff\" x=\"0.0\" y=\"0.0\" width=\"1.0\" height=\"1.0\"/>\
             <text x=\"5.0\" y=\"6.0\" class=\"lvl\" fill=\"#123\">x&amp;y</text>\
             <line x1=\"0.0\" y1=\"1.0\" x2=\"2.0\" y2=\"3.0\" stroke=\"#888\" stroke-dasharray=\"3,3\"/>\
             <polyline points=\"0.0,0.0 1.5,2.3\" fill=\"none\" stroke=\"#222\" stroke-width=\"1.5\"/></svg>\n"
        );
    }

    #[test]
    fn the_best_bar_is_the_darker_one() {
        for (lower, best) in [(false, "b"), (true, "a")] {
            let mut out = String::new();
            bar_chart(
                &mut out,
                &BarChart {
                    title: "t",
                    rows: vec![("a".into(), Some(1.0)), ("b".into(), Some(3.0))],
                    lower_is_better: lower,
                },
            );
            let dark = out.find("#1d3f70").unwrap();
            let label = out.find(&format!(">{best}</text>")).unwrap();
            let other = out
                .find(&format!(">{}</text>", if best == "a" { "b" } else { "a" }))
                .unwrap();
            // The darker bar follows its own label and precedes the other's
            // when it is the first row, or follows the other's otherwise.
            assert!(label < dark);
            assert_eq!(dark < other, best == "a");
        }
    }
}
