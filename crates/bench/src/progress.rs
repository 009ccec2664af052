//! The progress bar of a running workload: drawn on stderr only when
//! stderr is a terminal, and only once the workload has run for a second
//! (a short run leaves no trace).

use std::io::IsTerminal as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

/// How long a workload runs before its bar appears.
const SHOW_AFTER: Duration = Duration::from_secs(1);

/// Operations a thread does between two updates of the bar.
pub(crate) const UPDATE_EVERY: u64 = 1024;

/// Operations done by every workload of this process so far (what the
/// `--html` timeline samples).
pub(crate) static OPS_DONE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// One workload's bar, shared by its threads.
#[derive(Debug)]
pub(crate) struct Progress {
    bar: ProgressBar,
    started: Instant,
    /// Whether the bar may ever be drawn (stderr is a terminal).
    drawable: bool,
    shown: AtomicBool,
}

impl Progress {
    /// A hidden bar for `total` operations of workload `name`.
    pub(crate) fn new(name: &str, total: u64) -> Self {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        let style = ProgressStyle::with_template(
            "{prefix:>16} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} ({rate}, eta {eta})",
        )
        .map(|style| {
            style.with_key("rate", |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.0} ops/s", state.per_sec());
            })
        })
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_prefix(name.to_string());
        Progress {
            bar,
            started: Instant::now(),
            drawable: std::io::stderr().is_terminal(),
            shown: AtomicBool::new(false),
        }
    }

    /// Counts `n` more operations done; shows the bar once the workload
    /// has run long enough.
    pub(crate) fn advance(&self, n: u64) {
        self.bar.inc(n);
        OPS_DONE.fetch_add(n, Ordering::Relaxed);
        if self.drawable
            && !self.shown.load(Ordering::Relaxed)
            && self.started.elapsed() >= SHOW_AFTER
            && !self.shown.swap(true, Ordering::Relaxed)
        {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    /// Removes the bar from the terminal.
    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
