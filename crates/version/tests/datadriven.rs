//! Data-driven tests: LSM shapes and edits written as text in
//! `testdata/*.txt`, with the expected output beside each command (Pebble's
//! `datadriven` style).
//!
//! A test file is a sequence of blocks:
//!
//! ```text
//! <command> [args...]
//! <input lines>
//! ----
//! <expected output lines>
//! <blank line>
//! ```
//!
//! Commands:
//! * `define`: the input is a version in the text form; prints it back in
//!   canonical form (or the error).
//! * `overlapping L<n> <lo|-> <hi|->`: file numbers of
//!   `overlapping_files` (`-` is unbounded).
//! * `file-for-key L<n> <internal key>`: the file `file_for_key` returns.
//! * `level-bytes`: the size of every non-empty level and the total.
//! * `apply`: the input is edit lines (`add L<n> <file>`, `delete L<n>
//!   <number>`, `cursor L<n> <key>`) applied to the current version through
//!   a `VersionSet`; prints the new version and the file numbers it made
//!   obsolete, which then becomes the current version (or the error, and
//!   the current version stays).
//!
//! Run with `REWRITE=1` to regenerate the expected outputs.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use lithify_base::InternalKey;
use lithify_test_support::datadriven::{self, Case};
use lithify_version::{
    DEFAULT_TABLE, Version, VersionEdit, VersionSet, VersionSetOptions, text::parse_file,
};
use lithify_vfs::MemFs;

fn level_arg(s: &str) -> usize {
    s.strip_prefix('L')
        .and_then(|n| n.parse().ok())
        .expect("level like L1")
}

fn run(case: &Case, current: &mut Option<Version>) -> String {
    let args: Vec<&str> = case.command.split_whitespace().collect();
    let mut out = String::new();
    match args[0] {
        "define" => match Version::from_text(&case.input.join("\n")) {
            Ok(v) => {
                write!(out, "{v}").unwrap();
                *current = Some(v);
            }
            Err(e) => writeln!(out, "error: {e}").unwrap(),
        },
        "overlapping" => {
            let v = current.as_ref().expect("define first");
            let bound = |s: &str| (s != "-").then(|| s.as_bytes().to_vec());
            let (lo, hi) = (bound(args[2]), bound(args[3]));
            let files = v.overlapping_files(level_arg(args[1]), lo.as_deref(), hi.as_deref());
            let numbers: Vec<String> = files.iter().map(|f| format!("{:06}", f.number)).collect();
            writeln!(
                out,
                "{}",
                if numbers.is_empty() {
                    "none".to_owned()
                } else {
                    numbers.join(" ")
                }
            )
            .unwrap();
        }
        "file-for-key" => {
            let v = current.as_ref().expect("define first");
            let key = InternalKey::from_text(args[2]).expect("key");
            match v.file_for_key(level_arg(args[1]), key.encoded()) {
                Some(f) => writeln!(out, "{f}").unwrap(),
                None => writeln!(out, "none").unwrap(),
            }
        }
        "level-bytes" => {
            let v = current.as_ref().expect("define first");
            for level in 0..v.num_levels() {
                if v.num_files(level) > 0 {
                    writeln!(out, "L{level}: {}", v.level_bytes(level)).unwrap();
                }
            }
            writeln!(out, "total: {}", v.total_bytes()).unwrap();
        }
        "apply" => {
            let v = current.as_ref().expect("define first");
            let fs = Arc::new(MemFs::new());
            let set =
                VersionSet::create(fs, Path::new("/db"), VersionSetOptions::default()).unwrap();
            // Install the defined version, then apply the edit.
            let mut seed = VersionEdit::new(DEFAULT_TABLE);
            let mut max = 0;
            for (level, f) in v.all_files() {
                seed.add_file(level, (**f).clone());
                max = max.max(f.number);
            }
            for level in 0..v.num_levels() {
                if let Some(c) = v.compact_cursor(level) {
                    seed.compact_cursors.push((level, c.clone()));
                }
            }
            set.mark_file_number_used(max + 1000);
            set.log_and_apply(vec![seed]).unwrap();
            let mut edit = VersionEdit::new(DEFAULT_TABLE);
            for line in &case.input {
                let (verb, rest) = line.trim().split_once(' ').expect("edit line");
                let (level, rest) = rest.split_once(' ').expect("level");
                let level = level_arg(level);
                match verb {
                    "add" => {
                        edit.add_file(level, parse_file(rest).expect("file"));
                    }
                    "delete" => {
                        edit.delete_file(level, rest.trim().parse().expect("number"));
                    }
                    "cursor" => edit
                        .compact_cursors
                        .push((level, InternalKey::from_text(rest.trim()).expect("key"))),
                    other => panic!("unknown edit verb {other}"),
                }
            }
            match set.log_and_apply(vec![edit]) {
                Ok(()) => {
                    let v = set.current(DEFAULT_TABLE).unwrap();
                    write!(out, "{v}").unwrap();
                    let obsolete = set.obsolete_files().tables;
                    if !obsolete.is_empty() {
                        writeln!(out, "obsolete: {obsolete:?}").unwrap();
                    }
                    *current = Some((*v).clone());
                }
                Err(e) => writeln!(out, "error: {e}").unwrap(),
            }
        }
        other => panic!("unknown command {other}"),
    }
    out
}

#[test]
fn testdata() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let files = datadriven::files_in(&dir, ".txt");
    assert!(!files.is_empty());
    for path in files {
        let mut current = None;
        datadriven::run_file(&path, |case| run(case, &mut current));
    }
}
