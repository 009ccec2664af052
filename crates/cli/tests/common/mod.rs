//! What the command-line tests of stress runs and transactions share:
//! running the binary and checking its outcome.

use std::path::Path;
use std::process::{Command, Output};

/// Runs `lithify args`.
pub(crate) fn lithify(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lithify"))
        .args(args)
        .output()
        .expect("the lithify binary runs")
}

/// Runs a command that must succeed; returns stdout.
pub(crate) fn ok(args: &[&str]) -> String {
    let out = lithify(args);
    assert!(
        out.status.success(),
        "lithify {args:?} failed:\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs a command that must fail with an `error: ` message and no panic;
/// returns stderr.
pub(crate) fn fails(args: &[&str]) -> String {
    let out = lithify(args);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        !out.status.success(),
        "lithify {args:?} succeeded: {stderr}"
    );
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("internal error"),
        "{stderr}"
    );
    stderr
}

/// A path as an argument.
pub(crate) fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}
