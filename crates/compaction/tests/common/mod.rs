//! A small data-driven test harness (Pebble's `datadriven` style).
//!
//! A test file is a sequence of blocks:
//!
//! ```text
//! # comments (kept when rewriting)
//! <command> [args...]
//! <input lines>
//! ----
//! <expected output lines>
//! <blank line>
//! ```
//!
//! `REWRITE=1` regenerates the expected outputs in place.

#![allow(dead_code)]

use std::fmt::Write as _;
use std::path::Path;

use lithify_vfs::OsFs;

pub(crate) struct Case {
    pub(crate) comments: Vec<String>,
    pub(crate) command: String,
    pub(crate) input: Vec<String>,
    pub(crate) expected: Vec<String>,
}

impl Case {
    pub(crate) fn args(&self) -> Vec<&str> {
        self.command.split_whitespace().collect()
    }

    /// The value of `name=value` among the command's arguments.
    pub(crate) fn arg(&self, name: &str) -> Option<&str> {
        self.command
            .split_whitespace()
            .find_map(|a| a.strip_prefix(name).and_then(|r| r.strip_prefix('=')))
    }

    /// Whether the bare flag `name` is among the arguments.
    pub(crate) fn flag(&self, name: &str) -> bool {
        self.command.split_whitespace().skip(1).any(|a| a == name)
    }
}

pub(crate) fn parse_cases(text: &str) -> Vec<Case> {
    let mut cases = Vec::new();
    let mut comments = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.starts_with('#') {
            comments.push(line.to_owned());
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        let mut input = Vec::new();
        for l in lines.by_ref() {
            if l == "----" {
                break;
            }
            input.push(l.to_owned());
        }
        let mut expected = Vec::new();
        while let Some(l) = lines.peek() {
            if l.is_empty() {
                break;
            }
            expected.push(l.to_string());
            lines.next();
        }
        cases.push(Case {
            comments: std::mem::take(&mut comments),
            command: line.to_owned(),
            input,
            expected,
        });
    }
    cases
}

/// Runs every case of `file` (relative to the crate) through `run`, which
/// returns the output text; compares, or rewrites with `REWRITE=1`.
pub(crate) fn run_file(file: &str, mut run: impl FnMut(&Case) -> String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    let fs = OsFs;
    let bytes = lithify_vfs::read_file(&fs, &path).expect("read test data");
    let text = String::from_utf8(bytes).expect("utf-8 test data");
    let cases = parse_cases(&text);
    assert!(!cases.is_empty(), "no cases in {file}");
    let rewrite = std::env::var_os("REWRITE").is_some();
    let mut out = String::new();
    let mut failures = Vec::new();
    for case in &cases {
        let got = run(case);
        let got_lines: Vec<&str> = got.lines().collect();
        if !rewrite && got_lines != case.expected {
            failures.push(format!(
                "{file}: `{}`\n--- expected\n{}\n--- got\n{}",
                case.command,
                case.expected.join("\n"),
                got
            ));
        }
        for c in &case.comments {
            writeln!(out, "{c}").unwrap();
        }
        writeln!(out, "{}", case.command).unwrap();
        for l in &case.input {
            writeln!(out, "{l}").unwrap();
        }
        writeln!(out, "----").unwrap();
        for l in got_lines {
            writeln!(out, "{l}").unwrap();
        }
        writeln!(out).unwrap();
    }
    if rewrite {
        let text = format!("{}\n", out.trim_end_matches('\n'));
        lithify_vfs::write_file_atomic(&fs, &path, text.as_bytes()).expect("rewrite test data");
        return;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
