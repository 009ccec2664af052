//! The data-driven test harness (Pebble's `datadriven` style).
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
//! [`run_file`] runs each block's command through a closure and compares
//! the text it returns with the expected lines; with `REWRITE=1` in the
//! environment it rewrites the expected outputs in place instead.
//!
//! ```
//! use lithify_test_support::datadriven::{Case, parse_cases};
//!
//! let text = "upper\nabc\n----\nABC\n\nupper\nxyz\n----\nXYZ\n";
//! let run = |case: &Case| case.input.join("\n").to_uppercase();
//! for case in parse_cases(text) {
//!     assert_eq!(run(&case), case.expected.join("\n"));
//! }
//! ```

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use lithify_vfs::{FileSystem, OsFs};

/// One block of a test file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// The comment lines (starting with `#`) before the command, and blank
    /// lines between them, kept when rewriting.
    pub comments: Vec<String>,
    /// The command line: a command name and its arguments.
    pub command: String,
    /// The lines between the command and `----`.
    pub input: Vec<String>,
    /// The lines after `----`, up to the next blank line.
    pub expected: Vec<String>,
}

impl Case {
    /// The command line split at whitespace: the command name first.
    pub fn args(&self) -> Vec<&str> {
        self.command.split_whitespace().collect()
    }

    /// The value of `name=value` among the command's arguments.
    pub fn arg(&self, name: &str) -> Option<&str> {
        self.command
            .split_whitespace()
            .find_map(|a| a.strip_prefix(name).and_then(|r| r.strip_prefix('=')))
    }

    /// Whether the bare flag `name` is among the arguments.
    pub fn flag(&self, name: &str) -> bool {
        self.command.split_whitespace().skip(1).any(|a| a == name)
    }
}

/// Splits the text of a test file into its blocks.
pub fn parse_cases(text: &str) -> Vec<Case> {
    let mut cases = Vec::new();
    let mut comments = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.starts_with('#') {
            comments.push(line.to_owned());
            continue;
        }
        if line.trim().is_empty() {
            // A blank line inside a comment block stays in it, so that a
            // rewrite keeps the file as it was written.
            if !comments.is_empty() {
                comments.push(String::new());
            }
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
            expected.push((*l).to_owned());
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

/// Runs every case of the file at `path` through `run`, which returns the
/// output text, in order (so `run` may keep state from one case to the
/// next). Panics naming each case whose output differs from its expected
/// lines; with `REWRITE=1` rewrites the file with the outputs instead.
pub fn run_file(path: &Path, mut run: impl FnMut(&Case) -> String) {
    let fs = OsFs;
    let bytes = lithify_vfs::read_file(&fs, path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let text = String::from_utf8(bytes).expect("utf-8 test data");
    let cases = parse_cases(&text);
    assert!(!cases.is_empty(), "no cases in {}", path.display());
    let rewrite = std::env::var_os("REWRITE").is_some();
    let mut out = String::new();
    let mut failures = Vec::new();
    for case in &cases {
        let got = run(case);
        let got_lines: Vec<&str> = got.lines().collect();
        if !rewrite && got_lines != case.expected {
            failures.push(format!(
                "{}: `{}`\n--- expected\n{}\n--- got\n{}",
                path.display(),
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
        lithify_vfs::write_file_atomic(&fs, path, text.as_bytes()).expect("rewrite test data");
        return;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The files of `dir` whose names end with `suffix`, sorted by name.
pub fn files_in(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut names: Vec<String> = OsFs
        .list_dir(dir)
        .unwrap_or_else(|e| panic!("listing {}: {e}", dir.display()))
        .into_iter()
        .filter(|n| n.ends_with(suffix))
        .collect();
    names.sort();
    names.into_iter().map(|n| dir.join(n)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_keep_comments_input_and_expected_lines() {
        let text = "# one\n\n# two\ndefine x=1 fast\na\nb\n----\nout\n\nempty\n----\n\n";
        let cases = parse_cases(text);
        assert_eq!(cases.len(), 2);
        assert_eq!(cases[0].comments, ["# one", "", "# two"]);
        assert_eq!(cases[0].args(), ["define", "x=1", "fast"]);
        assert_eq!(cases[0].arg("x"), Some("1"));
        assert_eq!(cases[0].arg("y"), None);
        assert!(cases[0].flag("fast"));
        assert!(!cases[0].flag("define"));
        assert_eq!(cases[0].input, ["a", "b"]);
        assert_eq!(cases[0].expected, ["out"]);
        assert_eq!(cases[1].command, "empty");
        assert!(cases[1].input.is_empty() && cases[1].expected.is_empty());
    }
}
