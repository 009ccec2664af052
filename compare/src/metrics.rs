//! What the kernel says about this process and its files: bytes written
//! (`/proc/self/io`), peak resident memory (`/proc/self/status`, reset
//! through `/proc/self/clear_refs`) and the bytes of a directory.

use std::path::Path;

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
