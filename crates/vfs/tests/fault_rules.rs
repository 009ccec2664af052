//! Each FaultFs rule fails exactly the operations it names.

use std::io;
use std::path::Path;

use lithify_vfs::{FaultFs, FaultRule, FileSystem, MemFs, OpKind, read_file};

fn p(s: &str) -> &Path {
    Path::new(s)
}

fn is_injected(e: &io::Error) -> bool {
    e.to_string().starts_with("injected fault")
}

#[test]
fn fail_nth_write_fails_once() {
    let fs = FaultFs::new(MemFs::new());
    fs.add_rule(FaultRule::fail_nth(OpKind::Write, 3));
    let mut f = fs.create(p("/f")).unwrap();
    f.append(b"1").unwrap();
    f.append(b"2").unwrap();
    let e = f.append(b"3").unwrap_err();
    assert!(is_injected(&e), "{e}");
    f.append(b"4").unwrap();
    assert_eq!(read_file(&fs, p("/f")).unwrap(), b"124");
    assert_eq!(fs.counts().injected, 1);
}

#[test]
fn fail_nth_sync_rename_open_remove() {
    for (op, n) in [
        (OpKind::Sync, 1),
        (OpKind::Rename, 1),
        (OpKind::Open, 2),
        (OpKind::Remove, 1),
    ] {
        let fs = FaultFs::new(MemFs::new());
        fs.add_rule(FaultRule::fail_nth(op, n));
        let result = (|| -> io::Result<()> {
            let mut f = fs.create(p("/a"))?; // open #1
            f.append(b"x")?;
            f.sync_data()?; // sync #1
            fs.rename(p("/a"), p("/b"))?; // rename #1
            let _r = fs.open(p("/b"))?; // open #2
            fs.remove_file(p("/b"))?; // remove #1
            Ok(())
        })();
        let e = result.unwrap_err();
        assert!(is_injected(&e), "{op:?}: {e}");
        assert_eq!(fs.counts().injected, 1);
    }
}

#[test]
fn failed_operation_has_no_effect() {
    let fs = FaultFs::new(MemFs::new());
    fs.add_rule(FaultRule::fail_nth(OpKind::Rename, 1));
    fs.create(p("/a")).unwrap();
    fs.rename(p("/a"), p("/b")).unwrap_err();
    assert!(fs.exists(p("/a")));
    assert!(!fs.exists(p("/b")));
}

#[test]
fn fail_from_keeps_failing() {
    let fs = FaultFs::new(MemFs::new());
    fs.add_rule(FaultRule::fail_from(OpKind::Mutation, 3));
    let mut f = fs.create(p("/f")).unwrap(); // 1
    f.append(b"a").unwrap(); // 2
    assert!(f.append(b"b").is_err()); // 3
    assert!(f.sync_data().is_err()); // 4
    assert!(fs.create(p("/g")).is_err()); // 5
    // Reads are not mutations.
    assert_eq!(read_file(&fs, p("/f")).unwrap(), b"a");
}

#[test]
fn no_space_writes_what_fits_then_fails() {
    let fs = FaultFs::new(MemFs::new());
    fs.add_rule(FaultRule::no_space_after(10));
    let mut f = fs.create(p("/f")).unwrap();
    f.append(b"0123456").unwrap();
    let e = f.append(b"789abc").unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::StorageFull);
    assert!(is_injected(&e));
    assert_eq!(read_file(&fs, p("/f")).unwrap(), b"0123456789");
    assert_eq!(
        f.append(b"z").unwrap_err().kind(),
        io::ErrorKind::StorageFull
    );
    // Non-write operations still work on a full device.
    f.sync_data().unwrap();
}

#[test]
fn short_write_writes_half() {
    let fs = FaultFs::new(MemFs::new());
    fs.add_rule(FaultRule::short_write_nth(2));
    let mut f = fs.create(p("/f")).unwrap();
    f.append(b"ab").unwrap();
    assert!(f.append(b"cdef").is_err());
    assert_eq!(read_file(&fs, p("/f")).unwrap(), b"abcd");
    f.append(b"g").unwrap();
}

#[test]
fn path_filter_limits_counting_and_failing() {
    let fs = FaultFs::new(MemFs::new());
    fs.add_rule(FaultRule::fail_nth(OpKind::Sync, 1).on_paths_containing("MANIFEST"));
    let mut data = fs.create(p("/000001.log")).unwrap();
    data.sync_data().unwrap();
    let mut manifest = fs.create(p("/MANIFEST-000001")).unwrap();
    assert!(manifest.sync_data().is_err());
    data.sync_data().unwrap();
}

#[test]
fn read_faults() {
    let fs = FaultFs::new(MemFs::new());
    let mut f = fs.create(p("/f")).unwrap();
    f.append(b"abc").unwrap();
    fs.add_rule(FaultRule::fail_nth(OpKind::Read, 2));
    let r = fs.open(p("/f")).unwrap();
    assert_eq!(r.read_vec(0, 3).unwrap(), b"abc");
    assert!(r.read_vec(0, 3).is_err());
    assert_eq!(r.read_vec(0, 3).unwrap(), b"abc");
}

#[test]
fn counts_every_kind() {
    let fs = FaultFs::new(MemFs::new());
    let mut f = fs.create(p("/a")).unwrap();
    f.append(b"xyz").unwrap();
    f.sync_all().unwrap();
    fs.sync_dir(p("/")).unwrap();
    fs.rename(p("/a"), p("/b")).unwrap();
    fs.open(p("/b")).unwrap().read_vec(0, 3).unwrap();
    fs.remove_file(p("/b")).unwrap();
    let c = fs.counts();
    assert_eq!(
        (
            c.opens,
            c.writes,
            c.bytes_written,
            c.syncs,
            c.renames,
            c.reads,
            c.removes
        ),
        (2, 1, 3, 2, 1, 1, 1)
    );
    assert_eq!(c.mutations(), 7);
}

#[test]
fn faults_then_crash_leave_only_durable_state() {
    // The pattern crash tests use: a fault stops the workload, then power
    // is lost.
    let mem = MemFs::new();
    let fs = FaultFs::new(mem.clone());
    fs.add_rule(FaultRule::fail_nth(OpKind::Sync, 2));
    let mut f = fs.create(p("/log")).unwrap();
    fs.sync_dir(p("/")).unwrap(); // sync #1
    f.append(b"record").unwrap();
    assert!(f.sync_data().is_err()); // sync #2 fails: not durable
    drop(f);
    mem.crash();
    assert_eq!(read_file(&mem, p("/log")).unwrap(), b"");
}

/// `write_file_atomic` that fails at its write, sync or rename leaves the
/// old contents and no `.tmp` file behind.
#[test]
fn a_failed_atomic_write_leaves_the_old_file_and_no_temporary() {
    for op in [OpKind::Write, OpKind::Sync, OpKind::Rename] {
        let fs = FaultFs::new(MemFs::new());
        fs.create_dir_all(p("/d")).unwrap();
        lithify_vfs::write_file_atomic(&fs, p("/d/f"), b"old").unwrap();
        fs.add_rule(FaultRule::fail_nth(op, 1));
        let e = lithify_vfs::write_file_atomic(&fs, p("/d/f"), b"new").unwrap_err();
        assert!(is_injected(&e), "{op:?}: {e}");
        fs.clear_rules();
        assert_eq!(read_file(&fs, p("/d/f")).unwrap(), b"old", "{op:?}");
        assert_eq!(fs.list_dir(p("/d")).unwrap(), ["f"], "{op:?}");
    }
}
