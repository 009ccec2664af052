//! What the command-line tests share: running the binary and checking
//! its outcome (the `log` and `engine` tests run it their own way and
//! check the outcome here).

use std::path::Path;
use std::process::{Command, Output};

/// Where the tests' runs look for a calibration of the unit costs
/// (`bench --calibrate`'s default file): nowhere, so that a machine's
/// calibration does not change what the tests see.
pub(crate) const NO_CONFIG: &str = "/nonexistent/lithify-test-config";

/// Runs `lithify args`.
pub(crate) fn lithify(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lithify"))
        .args(args)
        .env("XDG_CONFIG_HOME", NO_CONFIG)
        .output()
        .expect("the lithify binary runs")
}

/// Runs a command that must succeed; returns stdout.
pub(crate) fn ok(args: &[&str]) -> String {
    checked(args, lithify(args))
}

/// Checks that the run of `lithify args` succeeded; returns stdout.
pub(crate) fn checked(args: &[&str], out: Output) -> String {
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
    refused(args, lithify(args))
}

/// Checks that the run of `lithify args` failed with an `error: ` message,
/// no panic and no backtrace; returns stderr.
pub(crate) fn refused(args: &[&str], out: Output) -> String {
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        !out.status.success(),
        "lithify {args:?} succeeded: {stderr}"
    );
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(
        !stderr.contains("panicked")
            && !stderr.contains("internal error")
            && !stderr.contains("RUST_BACKTRACE"),
        "{stderr}"
    );
    stderr
}

/// A path as an argument.
pub(crate) fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}
