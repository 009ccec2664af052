//! Progress of long commands (`compact`, `check`, `checkpoint`, `backup
//! create` and `restore`, `ingest`, `log clean`): a bar on stderr that
//! appears once the work has run for a second, only when stderr is a
//! terminal and neither `--quiet` nor `-v` was given (the events `-v`
//! prints would tear it), and is cleared when the work ends. What it
//! counts: `verify_sst_files_with`'s report (`check`), the bytes of the
//! files in the output directory as they grow (`checkpoint`, `backup`,
//! `ingest`, and `compact`, whose new files grow until each compaction
//! deletes its inputs), the bytes the log cleaner wrote (`log clean`).

use std::io::IsTerminal as _;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use lithify::vfs::{FileSystem as _, OsFs};

/// Set by `--quiet`: no progress bars.
static QUIET: AtomicBool = AtomicBool::new(false);

/// How long work runs before its bar appears.
const SHOW_AFTER: Duration = Duration::from_secs(1);

/// How often [`watch`] looks at the work.
const POLL: Duration = Duration::from_millis(200);

/// `--quiet` (or `-v`), from the command line.
pub(crate) fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// One piece of work's bar: of `total` bytes when known, else a spinner
/// with the bytes so far.
pub(crate) struct Bar {
    bar: ProgressBar,
    started: Instant,
    drawable: bool,
    shown: bool,
    has_total: bool,
}

/// The look of a bar with a known total, and of one without.
const WITH_TOTAL: &str =
    "{msg} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} ({bytes_per_sec}, eta {eta})";
const WITHOUT_TOTAL: &str = "{msg} [{elapsed_precise}] {spinner} {bytes} ({bytes_per_sec})";

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar())
}

impl Bar {
    /// A bar for `what` (`compacting`, `checking /db`), hidden for now; a
    /// spinner until [`set`](Self::set) gives it a total.
    pub(crate) fn new(what: &str) -> Bar {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        bar.set_style(style(WITHOUT_TOTAL));
        bar.set_message(what.to_owned());
        Bar {
            bar,
            started: Instant::now(),
            drawable: Bar::drawable(),
            shown: false,
            has_total: false,
        }
    }

    /// Whether the bar may ever be drawn.
    fn drawable() -> bool {
        std::io::stderr().is_terminal() && !QUIET.load(Ordering::Relaxed)
    }

    /// `done` bytes so far, of `total` when known. The bar never moves
    /// back (a compaction deleting its inputs shrinks a directory).
    pub(crate) fn set(&mut self, done: u64, total: Option<u64>) {
        let done = done.max(self.bar.position());
        if let Some(t) = total {
            if !self.has_total {
                self.has_total = true;
                self.bar.set_style(style(WITH_TOTAL));
            }
            self.bar.set_length(t);
        }
        self.bar.set_position(done);
        if self.drawable && !self.shown && self.started.elapsed() >= SHOW_AFTER {
            self.shown = true;
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// Runs `work`, showing its progress: when a bar may be drawn, `work`
/// runs on its own thread while this one asks `observe` every 200 ms,
/// from the first second on, how many bytes are done (and the total, when
/// it knows one). Otherwise `work` runs here and `observe` is never
/// called. Returns what `work` returns.
pub(crate) fn watch<T: Send>(
    what: &str,
    observe: impl Fn() -> (u64, Option<u64>),
    work: impl FnOnce() -> T + Send,
) -> T {
    if !Bar::drawable() {
        return work();
    }
    let mut bar = Bar::new(what);
    let watcher = std::thread::current();
    std::thread::scope(|scope| {
        let worker = scope.spawn(move || {
            let t = work();
            watcher.unpark();
            t
        });
        let started = Instant::now();
        while !worker.is_finished() {
            std::thread::park_timeout(POLL);
            if !worker.is_finished() && started.elapsed() >= SHOW_AFTER {
                let (done, total) = observe();
                bar.set(done, total);
            }
        }
        match worker.join() {
            Ok(t) => t,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// Bytes of the files in `dir` and below it (0 when it does not exist):
/// what an output directory holds so far.
pub(crate) fn dir_bytes(dir: &Path) -> u64 {
    let Ok(names) = OsFs.list_dir(dir) else {
        return 0;
    };
    names
        .iter()
        .map(|n| dir.join(n))
        .map(|p| {
            if OsFs.is_dir(&p) {
                dir_bytes(&p)
            } else {
                OsFs.file_size(&p).unwrap_or(0)
            }
        })
        .sum()
}
