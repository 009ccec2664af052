//! What the kernel says about this process and its files: bytes written
//! (`/proc/self/io`), peak resident memory (`/proc/self/status`, reset
//! through `/proc/self/clear_refs`) and the bytes of a directory.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// `write_bytes` of `/proc/self/io`: bytes this process caused to be sent
/// to storage (page-cache writes count when they are dirtied).
pub fn write_bytes() -> u64 {
    proc_field("/proc/self/io", "write_bytes:")
}

/// Peak resident set size (`VmHWM`), in bytes.
pub fn peak_rss() -> u64 {
    proc_field("/proc/self/status", "VmHWM:") * 1024
}

/// Starts a new peak: `VmHWM` becomes the current RSS (Linux 4.0+).
pub fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn proc_field(file: &str, field: &str) -> u64 {
    let Ok(text) = std::fs::read_to_string(file) else {
        return 0;
    };
    text.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Waits until this process has written nothing for `quiet` (an engine's
/// flushes and compactions have caught up with the writes), looking every
/// 100 ms, for at most `limit`; returns how long it waited.
pub fn settle(quiet: Duration, limit: Duration) -> Duration {
    let start = std::time::Instant::now();
    let mut last = write_bytes();
    let mut since = start;
    while since.elapsed() < quiet && start.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(100));
        let now = write_bytes();
        if now != last {
            last = now;
            since = std::time::Instant::now();
        }
    }
    start.elapsed()
}

/// Bytes of every file under `dir`.
pub fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Watches a database directory's write-ahead log files while a workload
/// runs, and adds up the bytes each one held at its largest: the WAL bytes
/// written, measured the same way for every engine (whatever each engine's
/// own counters include). Sizes are the blocks a file has allocated, so a
/// file made long in advance and written later (fjall's journals) counts
/// what was written; files deleted between two looks 5 ms apart are
/// counted as last seen.
pub struct WalBytes {
    stop: Arc<AtomicBool>,
    watcher: JoinHandle<HashMap<PathBuf, u64>>,
}

impl WalBytes {
    /// Starts watching the files under `dir` for which `is_wal` (given the
    /// path relative to `dir`) holds.
    pub fn watch(dir: &Path, is_wal: impl Fn(&Path) -> bool + Send + 'static) -> WalBytes {
        let stop = Arc::new(AtomicBool::new(false));
        let dir = dir.to_path_buf();
        let done = Arc::clone(&stop);
        let watcher = std::thread::spawn(move || {
            let mut largest = HashMap::new();
            loop {
                let last = done.load(Ordering::Acquire);
                look(&dir, &dir, &is_wal, &mut largest);
                if last {
                    return largest;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        WalBytes { stop, watcher }
    }

    /// Stops watching (after one last look) and returns the bytes.
    pub fn finish(self) -> u64 {
        self.stop.store(true, Ordering::Release);
        self.watcher
            .join()
            .map(|largest| largest.values().sum())
            .unwrap_or(0)
    }
}

fn look(
    root: &Path,
    dir: &Path,
    is_wal: &impl Fn(&Path) -> bool,
    largest: &mut HashMap<PathBuf, u64>,
) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        match e.metadata() {
            Ok(m) if m.is_dir() => look(root, &path, is_wal, largest),
            Ok(m) => {
                let rel = path.strip_prefix(root).unwrap_or(&path);
                if is_wal(rel) {
                    let bytes = (m.blocks() * 512).min(m.len());
                    let seen = largest.entry(rel.to_path_buf()).or_insert(0);
                    *seen = (*seen).max(bytes);
                }
            }
            Err(_) => {}
        }
    }
}
