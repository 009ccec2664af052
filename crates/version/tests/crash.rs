//! Crash safety: a fault at every file-system step of a workload of
//! `log_and_apply`, table creation and drop, and MANIFEST rollovers (both
//! forced and size-triggered), then power loss. Recovery must give the
//! state before or after the failed step — never a mix, never an error.
//! After a single fault, the next write must succeed and recover exactly.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use lithify_base::{Classify, ErrorKind, InternalKey, ValueKind};
use lithify_version::{
    DEFAULT_TABLE, FileMetadata, Result, VersionEdit, VersionSet, VersionSetOptions,
};
use lithify_vfs::{FaultFs, FaultRule, MemFs, OpKind};

const DIR: &str = "/db";
const STEPS: usize = 12;

fn options() -> VersionSetOptions {
    VersionSetOptions::default()
        // Small enough that some log_and_apply calls roll over on their own.
        .max_manifest_file_size(400)
}

fn file(number: u64, seq: u64) -> FileMetadata {
    FileMetadata::new(
        number,
        4096,
        InternalKey::new(format!("{number:04}a").as_bytes(), seq, ValueKind::Put),
        InternalKey::new(format!("{number:04}z").as_bytes(), seq, ValueKind::Put),
    )
}

fn flush(set: &VersionSet, table: u32, seq: u64) -> Result<()> {
    let n = set.new_file_number();
    let mut e = VersionEdit::new(table);
    e.add_file(0, file(n, seq));
    e.log_number = Some(seq);
    // Carried by the edit, so it is installed only if the edit is.
    e.last_sequence = Some(seq);
    set.log_and_apply(vec![e])
}

/// Step `i` of the workload.
fn step(set: &VersionSet, i: usize) -> Result<()> {
    let t1 = set.table_by_name("t1").map(|t| t.id);
    match i {
        0 | 1 | 7 | 10 => flush(set, DEFAULT_TABLE, 10 * (i as u64 + 1)),
        2 => set.create_table("t1", None, 20).map(drop),
        3 => {
            // Compact every L0 file into two L1 files.
            let v = set.current(DEFAULT_TABLE).unwrap();
            let mut e = VersionEdit::new(DEFAULT_TABLE);
            for f in v.files(0) {
                e.delete_file(0, f.number);
            }
            for _ in 0..2 {
                let n = set.new_file_number();
                e.add_file(1, file(n, 1));
            }
            set.log_and_apply(vec![e])
        }
        4 => flush(set, t1.expect("t1 exists"), 45),
        5 => {
            // Trivial move of the first L1 file, and a cursor.
            let v = set.current(DEFAULT_TABLE).unwrap();
            let f = v.files(1)[0].clone();
            let mut e = VersionEdit::new(DEFAULT_TABLE);
            e.delete_file(1, f.number);
            e.add_file(2, (*f).clone());
            e.compact_cursors
                .push((1, InternalKey::new(b"m", 0, ValueKind::Put)));
            set.log_and_apply(vec![e])
        }
        6 => set.roll_manifest(),
        8 => {
            // One group spanning two tables.
            let t1 = t1.expect("t1 exists");
            let mut a = VersionEdit::new(DEFAULT_TABLE);
            a.add_file(0, file(set.new_file_number(), 85));
            let mut b = VersionEdit::new(t1);
            b.add_file(3, file(set.new_file_number(), 85));
            b.log_number = Some(85);
            set.log_and_apply(vec![a, b])
        }
        9 => set.drop_table(t1.expect("t1 exists")),
        11 => set.roll_manifest(),
        _ => unreachable!(),
    }
}

/// Everything recovery must reproduce.
fn state(set: &VersionSet) -> String {
    let mut out = String::new();
    for t in set.tables() {
        writeln!(out, "table {} {} log={}", t.id, t.name, t.log_number).unwrap();
        write!(out, "{}", set.current(t.id).unwrap()).unwrap();
    }
    writeln!(out, "last_seq={}", set.last_sequence()).unwrap();
    out
}

fn recover(mem: &MemFs) -> Result<VersionSet> {
    VersionSet::recover(Arc::new(mem.clone()), Path::new(DIR), options())
}

/// The state after each step of a fault-free run, and the number of
/// file-system mutations the whole run makes.
fn reference() -> (Vec<String>, u64) {
    let fs = Arc::new(FaultFs::new(MemFs::new()));
    let set = VersionSet::create(fs.clone(), Path::new(DIR), options()).unwrap();
    let mut states = vec![state(&set)];
    for i in 0..STEPS {
        step(&set, i).unwrap();
        states.push(state(&set));
    }
    // The workload rolls over on its own, not only when forced.
    assert!(set.manifest_number() > 10);
    (states, fs.counts().mutations())
}

fn run_with_fault(rule: FaultRule, seed: u64, states: &[String], retry: bool) {
    let mem = MemFs::new();
    mem.set_torn_tails(Some(seed));
    let fs = Arc::new(FaultFs::new(mem.clone()));
    fs.add_rule(rule.clone());
    let set = match VersionSet::create(fs.clone(), Path::new(DIR), options()) {
        Ok(set) => set,
        Err(e) => {
            assert!(
                matches!(e.kind(), ErrorKind::Io | ErrorKind::NoSpace),
                "{e}"
            );
            // The database may or may not exist; if it does, it is empty.
            mem.crash();
            if let Ok(set) = recover(&mem) {
                assert_eq!(state(&set), states[0], "{rule:?}");
            }
            return;
        }
    };
    let mut done = 0;
    let mut failed = false;
    for i in 0..STEPS {
        match step(&set, i) {
            Ok(()) => done = i + 1,
            Err(e) => {
                assert!(
                    matches!(e.kind(), ErrorKind::Io | ErrorKind::NoSpace),
                    "{rule:?}: {e}"
                );
                failed = true;
                break;
            }
        }
    }
    // In memory: exactly the acknowledged steps.
    assert_eq!(state(&set), states[done], "{rule:?}");
    let crashed = mem.crash_clone();
    let recovered = recover(&crashed).unwrap_or_else(|e| panic!("{rule:?}: {e}"));
    let got = state(&recovered);
    if got != states[done] {
        assert!(failed, "{rule:?}: lost acknowledged state");
        assert_eq!(got, states[done + 1], "{rule:?}: neither before nor after");
    }
    if !(retry && failed) {
        return;
    }
    // The fault is gone: the next write starts a new MANIFEST from memory,
    // and recovery then gives exactly the in-memory state.
    set.roll_manifest().unwrap();
    let obsolete = set.obsolete_files();
    let live = set.live_files();
    assert!(obsolete.tables.iter().all(|n| !live.contains(n)));
    mem.crash();
    let recovered = recover(&mem).unwrap();
    assert_eq!(state(&recovered), states[done], "{rule:?} after retry");
    // Nothing reported obsolete is referenced after the crash either.
    for (_, v) in recovered.current_all() {
        for (_, f) in v.all_files() {
            assert!(
                !obsolete.tables.contains(&f.number),
                "{rule:?}: {} in use",
                f.number
            );
        }
    }
    for m in &obsolete.manifests {
        assert_ne!(*m, recovered.manifest_number());
    }
}

#[test]
fn fault_at_every_step_then_power_loss() {
    let (states, total) = reference();
    assert!(total > 50, "{total} mutations");
    for n in 1..=total {
        run_with_fault(FaultRule::fail_nth(OpKind::Mutation, n), n, &states, true);
        run_with_fault(
            FaultRule::fail_from(OpKind::Mutation, n),
            n + 1000,
            &states,
            false,
        );
    }
}

#[test]
fn short_writes_and_full_disk() {
    let (states, _) = reference();
    for n in 1..40 {
        run_with_fault(FaultRule::short_write_nth(n), n, &states, true);
    }
    for bytes in (0..6000).step_by(97) {
        run_with_fault(FaultRule::no_space_after(bytes), bytes, &states, false);
    }
}
