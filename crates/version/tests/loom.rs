//! Loom model of the version swap: a reader taking `current()` while a
//! flush allocates a file number and installs a new version, and a second
//! allocation racing with it. Run with `cargo xtask loom`.
#![cfg(loom)]

use std::path::Path;
use std::sync::Arc;

use lithify_base::{InternalKey, ValueKind};
use lithify_version::{DEFAULT_TABLE, FileMetadata, VersionEdit, VersionSet, VersionSetOptions};
use lithify_vfs::MemFs;

#[test]
fn loom_version_swap_and_file_numbers() {
    loom::model(|| {
        let fs = Arc::new(MemFs::new());
        let set = Arc::new(
            VersionSet::create(fs, Path::new("/db"), VersionSetOptions::default()).unwrap(),
        );
        let writer = {
            let set = set.clone();
            loom::thread::spawn(move || {
                let n = set.new_file_number();
                let mut edit = VersionEdit::new(DEFAULT_TABLE);
                edit.add_file(
                    0,
                    FileMetadata::new(
                        n,
                        10,
                        InternalKey::new(b"a", 1, ValueKind::Put),
                        InternalKey::new(b"b", 1, ValueKind::Put),
                    ),
                );
                set.log_and_apply(vec![edit]).unwrap();
                n
            })
        };
        // A reader sees the old or the new version, whole.
        let seen = set.current(DEFAULT_TABLE).unwrap();
        assert!(seen.num_files(0) <= 1);
        assert_eq!(seen.level_bytes(0), 10 * seen.num_files(0) as u64);
        let mine = set.new_file_number();
        let theirs = writer.join().unwrap();
        assert_ne!(mine, theirs);
        let now = set.current(DEFAULT_TABLE).unwrap();
        assert_eq!(now.files(0)[0].number, theirs);
        // The pinned old version does not make anything obsolete.
        drop(seen);
        assert!(set.obsolete_files().tables.is_empty());
        assert_eq!(
            set.live_files().into_iter().collect::<Vec<_>>(),
            vec![theirs]
        );
    });
}
