//! Every rule of MemFs's power-loss model, each with a test that fails if
//! the rule is broken.

use std::path::Path;

use lithify_vfs::{FileSystem, MemFs, read_file, write_file_atomic};

fn p(s: &str) -> &Path {
    Path::new(s)
}

/// A file system with a durable directory `/d`.
fn fs_with_dir() -> MemFs {
    let fs = MemFs::new();
    fs.create_dir_all(p("/d")).unwrap();
    fs.sync_dir(p("/")).unwrap();
    fs
}

/// A durable file `/d/f` holding `contents`.
fn durable_file(fs: &MemFs, contents: &[u8]) {
    let mut f = fs.create(p("/d/f")).unwrap();
    f.append(contents).unwrap();
    f.sync_data().unwrap();
    fs.sync_dir(p("/d")).unwrap();
}

#[test]
fn unsynced_appends_are_lost() {
    let fs = fs_with_dir();
    durable_file(&fs, b"synced");
    let mut f = fs.open_append(p("/d/f")).unwrap();
    f.append(b" unsynced").unwrap();
    assert_eq!(read_file(&fs, p("/d/f")).unwrap(), b"synced unsynced");
    fs.crash();
    assert_eq!(read_file(&fs, p("/d/f")).unwrap(), b"synced");
}

#[test]
fn synced_data_in_a_synced_directory_survives() {
    let fs = fs_with_dir();
    durable_file(&fs, b"kept");
    fs.crash();
    assert_eq!(read_file(&fs, p("/d/f")).unwrap(), b"kept");
}

#[test]
fn synced_file_without_directory_sync_disappears() {
    let fs = fs_with_dir();
    let mut f = fs.create(p("/d/new")).unwrap();
    f.append(b"data").unwrap();
    f.sync_all().unwrap();
    drop(f);
    fs.crash();
    assert!(!fs.exists(p("/d/new")));
}

#[test]
fn directory_sync_without_data_sync_keeps_an_empty_file() {
    let fs = fs_with_dir();
    let mut f = fs.create(p("/d/new")).unwrap();
    f.append(b"data").unwrap();
    fs.sync_dir(p("/d")).unwrap();
    drop(f);
    fs.crash();
    assert_eq!(read_file(&fs, p("/d/new")).unwrap(), b"");
}

#[test]
fn unsynced_rename_reverts_to_the_old_name() {
    let fs = fs_with_dir();
    durable_file(&fs, b"x");
    fs.rename(p("/d/f"), p("/d/g")).unwrap();
    assert!(!fs.exists(p("/d/f")));
    fs.crash();
    assert!(fs.exists(p("/d/f")));
    assert!(!fs.exists(p("/d/g")));
    assert_eq!(read_file(&fs, p("/d/f")).unwrap(), b"x");
}

#[test]
fn synced_rename_is_durable() {
    let fs = fs_with_dir();
    durable_file(&fs, b"x");
    fs.rename(p("/d/f"), p("/d/g")).unwrap();
    fs.sync_dir(p("/d")).unwrap();
    fs.crash();
    assert!(!fs.exists(p("/d/f")));
    assert_eq!(read_file(&fs, p("/d/g")).unwrap(), b"x");
}

#[test]
fn unsynced_rename_over_a_file_brings_the_old_target_back() {
    let fs = fs_with_dir();
    durable_file(&fs, b"new");
    let mut old = fs.create(p("/d/target")).unwrap();
    old.append(b"old").unwrap();
    old.sync_all().unwrap();
    fs.sync_dir(p("/d")).unwrap();
    drop(old);
    fs.rename(p("/d/f"), p("/d/target")).unwrap();
    assert_eq!(read_file(&fs, p("/d/target")).unwrap(), b"new");
    fs.crash();
    assert_eq!(read_file(&fs, p("/d/target")).unwrap(), b"old");
    assert_eq!(read_file(&fs, p("/d/f")).unwrap(), b"new");
}

#[test]
fn cross_directory_rename_needs_both_directories_synced() {
    let fs = fs_with_dir();
    fs.create_dir_all(p("/e")).unwrap();
    fs.sync_dir(p("/")).unwrap();
    durable_file(&fs, b"x");
    fs.rename(p("/d/f"), p("/e/f")).unwrap();
    fs.sync_dir(p("/e")).unwrap(); // target synced, source not
    let after = fs.crash_clone();
    // Both names exist: the new entry is durable, the removal is not.
    assert!(after.exists(p("/d/f")));
    assert!(after.exists(p("/e/f")));
    fs.sync_dir(p("/d")).unwrap();
    fs.crash();
    assert!(!fs.exists(p("/d/f")));
    assert!(fs.exists(p("/e/f")));
}

#[test]
fn unsynced_remove_is_undone() {
    let fs = fs_with_dir();
    durable_file(&fs, b"back");
    fs.remove_file(p("/d/f")).unwrap();
    assert!(!fs.exists(p("/d/f")));
    fs.crash();
    assert_eq!(read_file(&fs, p("/d/f")).unwrap(), b"back");
}

#[test]
fn synced_remove_is_durable() {
    let fs = fs_with_dir();
    durable_file(&fs, b"gone");
    fs.remove_file(p("/d/f")).unwrap();
    fs.sync_dir(p("/d")).unwrap();
    fs.crash();
    assert!(!fs.exists(p("/d/f")));
}

#[test]
fn unsynced_overwrite_of_synced_bytes_is_undone() {
    let fs = fs_with_dir();
    durable_file(&fs, b"abcdef");
    let mut f = fs.open_append(p("/d/f")).unwrap();
    f.write_at(2, b"XY").unwrap();
    f.append(b"gh").unwrap();
    assert_eq!(read_file(&fs, p("/d/f")).unwrap(), b"abXYefgh");
    fs.crash();
    assert_eq!(read_file(&fs, p("/d/f")).unwrap(), b"abcdef");
}

#[test]
fn unsynced_truncation_is_undone() {
    let fs = fs_with_dir();
    durable_file(&fs, b"abcdef");
    let mut f = fs.open_append(p("/d/f")).unwrap();
    f.set_len(2).unwrap();
    fs.crash();
    assert_eq!(read_file(&fs, p("/d/f")).unwrap(), b"abcdef");
}

#[test]
fn truncating_create_of_a_durable_file_reverts() {
    let fs = fs_with_dir();
    durable_file(&fs, b"old contents");
    let mut f = fs.create(p("/d/f")).unwrap();
    f.append(b"new").unwrap();
    fs.crash();
    assert_eq!(read_file(&fs, p("/d/f")).unwrap(), b"old contents");
}

#[test]
fn sync_after_overwrite_makes_it_durable() {
    let fs = fs_with_dir();
    durable_file(&fs, b"abcdef");
    let mut f = fs.open_append(p("/d/f")).unwrap();
    f.write_at(0, b"Z").unwrap();
    f.set_len(3).unwrap();
    f.sync_data().unwrap();
    fs.crash();
    assert_eq!(read_file(&fs, p("/d/f")).unwrap(), b"Zbc");
}

#[test]
fn unsynced_directory_disappears_with_its_contents() {
    let fs = MemFs::new();
    fs.create_dir_all(p("/a/b")).unwrap();
    fs.sync_dir(p("/a")).unwrap(); // b is durable in a, but a is not in /
    let mut f = fs.create(p("/a/b/f")).unwrap();
    f.append(b"x").unwrap();
    f.sync_all().unwrap();
    fs.sync_dir(p("/a/b")).unwrap();
    drop(f);
    fs.crash();
    assert!(!fs.exists(p("/a")));
    assert!(!fs.exists(p("/a/b/f")));
}

#[test]
fn torn_tail_keeps_a_prefix_of_the_unsynced_suffix() {
    let mut lengths = std::collections::BTreeSet::new();
    for seed in 0..200 {
        let fs = fs_with_dir();
        durable_file(&fs, b"0123");
        fs.set_torn_tails(Some(seed));
        let mut f = fs.open_append(p("/d/f")).unwrap();
        f.append(b"456789").unwrap();
        drop(f);
        fs.crash();
        let data = read_file(&fs, p("/d/f")).unwrap();
        assert!(data.len() >= 4, "synced bytes lost with seed {seed}");
        assert_eq!(&data[..], &b"0123456789"[..data.len()], "not a prefix");
        lengths.insert(data.len());
    }
    // Every cut from "nothing kept" to "everything kept" happens.
    assert_eq!(
        lengths.into_iter().collect::<Vec<_>>(),
        (4..=10).collect::<Vec<_>>()
    );
}

#[test]
fn torn_tails_are_deterministic_per_seed() {
    let run = |seed| {
        let fs = fs_with_dir();
        durable_file(&fs, b"");
        fs.set_torn_tails(Some(seed));
        let mut f = fs.open_append(p("/d/f")).unwrap();
        f.append(&[7; 1000]).unwrap();
        drop(f);
        fs.crash();
        read_file(&fs, p("/d/f")).unwrap().len()
    };
    assert_eq!(run(42), run(42));
}

#[test]
fn handles_from_before_a_crash_fail() {
    let fs = fs_with_dir();
    durable_file(&fs, b"x");
    let mut w = fs.open_append(p("/d/f")).unwrap();
    let r = fs.open(p("/d/f")).unwrap();
    fs.crash();
    assert!(w.append(b"y").is_err());
    assert!(w.sync_data().is_err());
    assert!(r.read_vec(0, 1).is_err());
    // New handles work.
    assert_eq!(fs.open(p("/d/f")).unwrap().read_vec(0, 1).unwrap(), b"x");
}

#[test]
fn crash_releases_locks() {
    let fs = fs_with_dir();
    let lock = fs.lock(p("/d/LOCK")).unwrap();
    assert!(fs.lock(p("/d/LOCK")).is_err());
    fs.crash();
    let relocked = fs.lock(p("/d/LOCK")).unwrap();
    // The stale guard of the dead "process" does not release the new lock.
    drop(lock);
    assert!(fs.lock(p("/d/LOCK")).is_err());
    drop(relocked);
    fs.lock(p("/d/LOCK")).unwrap();
}

#[test]
fn crash_clone_leaves_the_original_alone() {
    let fs = fs_with_dir();
    durable_file(&fs, b"a");
    let mut f = fs.open_append(p("/d/f")).unwrap();
    f.append(b"b").unwrap();
    let clone = fs.crash_clone();
    assert_eq!(read_file(&clone, p("/d/f")).unwrap(), b"a");
    assert_eq!(read_file(&fs, p("/d/f")).unwrap(), b"ab");
    f.append(b"c").unwrap(); // original handle still works
    assert_eq!(read_file(&clone, p("/d/f")).unwrap(), b"a");
}

#[test]
fn atomic_replace_gives_old_or_new_at_every_step() {
    // Run write_file_atomic, crashing a clone after each of its steps.
    let fs = fs_with_dir();
    write_file_atomic(&fs, p("/d/CURRENT"), b"old").unwrap();
    // Steps, replayed by hand to crash between them.
    let mut seen = Vec::new();
    type Step = Box<dyn Fn(&MemFs)>;
    let steps: Vec<Step> = vec![
        Box::new(|fs| {
            let mut f = fs.create(p("/d/CURRENT.tmp")).unwrap();
            f.append(b"new").unwrap();
        }),
        Box::new(|fs| {
            fs.open_append(p("/d/CURRENT.tmp"))
                .unwrap()
                .sync_all()
                .unwrap()
        }),
        Box::new(|fs| fs.rename(p("/d/CURRENT.tmp"), p("/d/CURRENT")).unwrap()),
        Box::new(|fs| fs.sync_dir(p("/d")).unwrap()),
    ];
    for step in &steps {
        step(&fs);
        let after = fs.crash_clone();
        seen.push(read_file(&after, p("/d/CURRENT")).unwrap());
    }
    assert_eq!(seen, [b"old", b"old", b"old", b"new"]);
}

#[test]
fn a_hard_link_is_durable_once_its_directory_is_synced() {
    let fs = fs_with_dir();
    durable_file(&fs, b"shared");
    fs.create_dir_all(p("/e")).unwrap();
    fs.sync_dir(p("/")).unwrap();
    fs.hard_link(p("/d/f"), p("/e/g")).unwrap();
    let after = fs.crash_clone();
    assert!(!after.exists(p("/e/g")), "an unsynced link is lost");
    fs.sync_dir(p("/e")).unwrap();
    fs.remove_file(p("/d/f")).unwrap();
    fs.sync_dir(p("/d")).unwrap();
    fs.crash();
    assert!(!fs.exists(p("/d/f")));
    assert_eq!(read_file(&fs, p("/e/g")).unwrap(), b"shared");
}

#[test]
fn writes_into_preallocated_space_are_lost_unless_synced() {
    let fs = fs_with_dir();
    durable_file(&fs, b"head");
    let mut f = fs.open_append(p("/d/f")).unwrap();
    f.set_len(1 << 30).unwrap(); // a gigabyte of zeros, held implicitly
    f.sync_data().unwrap();
    f.write_at(4, b"synced").unwrap();
    f.sync_data().unwrap();
    f.write_at(10, b"lost").unwrap();
    assert_eq!(fs.file_size(p("/d/f")).unwrap(), 1 << 30);
    let mut buf = [9u8; 16];
    fs.open(p("/d/f"))
        .unwrap()
        .read_exact_at(0, &mut buf)
        .unwrap();
    assert_eq!(&buf, b"headsyncedlost\0\0");
    drop(f);
    fs.crash();
    let after = fs.open(p("/d/f")).unwrap();
    assert_eq!(after.size().unwrap(), 1 << 30);
    after.read_exact_at(0, &mut buf).unwrap();
    assert_eq!(&buf, b"headsynced\0\0\0\0\0\0");
    let mut end = [9u8; 4];
    after.read_exact_at((1 << 30) - 4, &mut end).unwrap();
    assert_eq!(end, [0; 4]);
}

#[test]
fn torn_overwrites_keep_a_prefix_of_the_unsynced_writes_in_order() {
    let mut outcomes = std::collections::BTreeSet::new();
    for seed in 0..300 {
        let fs = fs_with_dir();
        durable_file(&fs, b"");
        let mut f = fs.open_append(p("/d/f")).unwrap();
        f.set_len(12).unwrap();
        f.sync_data().unwrap();
        fs.set_torn_tails(Some(seed));
        f.write_at(0, b"abcd").unwrap();
        f.write_at(4, b"efgh").unwrap();
        f.write_at(8, b"ijkl").unwrap();
        drop(f);
        fs.crash();
        let data = read_file(&fs, p("/d/f")).unwrap();
        assert_eq!(data.len(), 12, "a synced size was lost with seed {seed}");
        let written = data.iter().take_while(|&&b| b != 0).count();
        assert!(
            data[written..].iter().all(|&b| b == 0),
            "not a prefix with seed {seed}: {data:?}"
        );
        assert_eq!(&data[..written], &b"abcdefghijkl"[..written]);
        outcomes.insert(written);
    }
    // Every cut, from no write kept to all three, happens.
    assert_eq!(
        outcomes.into_iter().collect::<Vec<_>>(),
        (0..=12).collect::<Vec<_>>()
    );
}

#[test]
fn truncating_preallocated_space_then_crashing_keeps_the_synced_size() {
    let fs = fs_with_dir();
    durable_file(&fs, b"");
    let mut f = fs.open_append(p("/d/f")).unwrap();
    f.set_len(64).unwrap();
    f.sync_data().unwrap();
    f.write_at(0, b"record").unwrap();
    f.sync_data().unwrap();
    f.set_len(6).unwrap(); // trimmed, not synced
    drop(f);
    fs.crash();
    let data = read_file(&fs, p("/d/f")).unwrap();
    assert_eq!(data.len(), 64);
    assert_eq!(&data[..6], b"record");
    assert!(data[6..].iter().all(|&b| b == 0));
}
