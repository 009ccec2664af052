//! Blob files in versions: added with the SSTs that refer to them,
//! garbage computed by the version set from what an edit stops referring
//! to, dropped (and reported obsolete) when nothing refers to them, and
//! recovered as they were from the MANIFEST, old or rolled over.

use std::path::Path;
use std::sync::Arc;

use lithify_base::{Classify, ErrorKind, InternalKey};
use lithify_version::{
    BlobFileMetadata, BlobRef, DEFAULT_TABLE, FileMetadata, Version, VersionEdit, VersionSet,
    VersionSetOptions,
};
use lithify_vfs::MemFs;

const DIR: &str = "/db";

fn key(text: &str) -> InternalKey {
    InternalKey::from_text(text).unwrap()
}

/// An SST over `[lo, hi]` referring to `refs` (blob file, values, bytes).
fn sst(number: u64, lo: &str, hi: &str, refs: &[(u64, u64, u64)]) -> FileMetadata {
    let mut f = FileMetadata::new(
        number,
        100,
        key(&format!("{lo}#5,BLOB_INDEX")),
        key(&format!("{hi}#5,BLOB_INDEX")),
    );
    f.blob_refs = refs
        .iter()
        .map(|&(file_number, count, bytes)| BlobRef {
            file_number,
            count,
            bytes,
        })
        .collect();
    f
}

fn blob(number: u64, count: u64, bytes: u64) -> BlobFileMetadata {
    BlobFileMetadata {
        number,
        file_size: bytes + 96,
        blob_count: count,
        blob_bytes: bytes,
        file_checksum: Some(number * 31),
        unique_id: None,
    }
}

fn numbers(set: &VersionSet, n: usize) -> Vec<u64> {
    (0..n).map(|_| set.new_file_number()).collect()
}

#[test]
fn blob_file_lifecycle_through_garbage_and_recovery() {
    let fs = Arc::new(MemFs::new());
    let dir = Path::new(DIR);
    let opts = || VersionSetOptions::default().max_manifest_file_size(1 << 30);
    let set = VersionSet::create(fs.clone(), dir, opts()).unwrap();
    let n = numbers(&set, 6);
    let (b1, s1, b2, s2, s3, s4) = (n[0], n[1], n[2], n[3], n[4], n[5]);

    // Two flushes, each with its blob file.
    for (b, s, lo, hi) in [(b1, s1, "a", "m"), (b2, s2, "c", "z")] {
        let mut edit = VersionEdit::new(DEFAULT_TABLE);
        edit.blob_file_additions.push(blob(b, 10, 10_000));
        edit.add_file(0, sst(s, lo, hi, &[(b, 10, 10_000)]));
        set.log_and_apply(vec![edit]).unwrap();
    }
    let v = set.current(DEFAULT_TABLE).unwrap();
    assert_eq!(v.blob_files().len(), 2);
    assert_eq!(v.blob_bytes(), (20_000, 0));
    drop(v);

    // A compaction of both: 4 values of b1 and 6 of b2 were overwritten.
    let mut edit = VersionEdit::new(DEFAULT_TABLE);
    edit.delete_file(0, s1).delete_file(0, s2);
    edit.add_file(1, sst(s3, "a", "k", &[(b1, 6, 6_000), (b2, 1, 1_000)]));
    edit.add_file(1, sst(s4, "l", "z", &[(b2, 3, 3_000)]));
    set.log_and_apply(vec![edit]).unwrap();
    let v = set.current(DEFAULT_TABLE).unwrap();
    assert_eq!(
        v.to_string(),
        format!(
            "L1:\n  {s3:06}:[a#5,BLOB_INDEX-k#5,BLOB_INDEX] size=100 blob={b1:06}:6/6000 blob={b2:06}:1/1000\n  {s4:06}:[l#5,BLOB_INDEX-z#5,BLOB_INDEX] size=100 blob={b2:06}:3/3000\nblobs:\n  {b1:06}.blob values=10 bytes=10000 size=10096 garbage=4/4000\n  {b2:06}.blob values=10 bytes=10000 size=10096 garbage=6/6000\n"
        )
    );
    // The text form parses back to the same version.
    assert_eq!(
        Version::from_text(&v.to_string()).unwrap().to_string(),
        v.to_string()
    );
    drop(v);
    let obsolete = set.obsolete_files();
    assert!(obsolete.blob_files.is_empty());
    assert_eq!(obsolete.tables, [s1, s2]);

    // Recovery sees the same garbage (replayed from the edits).
    let recovered = VersionSet::recover(fs.clone(), dir, opts()).unwrap();
    assert_eq!(
        *recovered.current(DEFAULT_TABLE).unwrap(),
        *set.current(DEFAULT_TABLE).unwrap()
    );
    drop(recovered);

    // Dropping the file that holds b1's last references: b1 leaves and is
    // obsolete once no version holds it; b2 stays.
    let mut edit = VersionEdit::new(DEFAULT_TABLE);
    edit.delete_file(1, s3);
    set.log_and_apply(vec![edit]).unwrap();
    let v = set.current(DEFAULT_TABLE).unwrap();
    assert_eq!(v.blob_files().keys().copied().collect::<Vec<_>>(), [b2]);
    assert_eq!(v.blob_files()[&b2].garbage_count, 7);
    let obsolete = set.obsolete_files();
    assert_eq!(obsolete.blob_files, [b1]);
    assert_eq!(obsolete.tables, [s3]);
    assert!(set.live_files().contains(&b2));

    // A new MANIFEST (a snapshot) records the blob files and their garbage.
    set.roll_manifest().unwrap();
    let recovered = VersionSet::recover(fs.clone(), dir, opts()).unwrap();
    assert_eq!(*recovered.current(DEFAULT_TABLE).unwrap(), *v);
}

#[test]
fn inconsistent_blob_edits_are_refused() {
    let fs = Arc::new(MemFs::new());
    let set = VersionSet::create(fs, Path::new(DIR), VersionSetOptions::default()).unwrap();
    let n = numbers(&set, 4);
    let invalid = |edit: VersionEdit| {
        let err = set.log_and_apply(vec![edit]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
        err.to_string()
    };
    // A reference to a blob file the table does not have.
    let mut edit = VersionEdit::new(DEFAULT_TABLE);
    edit.add_file(0, sst(n[1], "a", "b", &[(n[0], 1, 10)]));
    assert!(invalid(edit).contains("which the table does not have"));
    // A blob file whose values are not all referred to.
    let mut edit = VersionEdit::new(DEFAULT_TABLE);
    edit.blob_file_additions.push(blob(n[0], 5, 50));
    edit.add_file(0, sst(n[1], "a", "b", &[(n[0], 4, 40)]));
    assert!(invalid(edit).contains("not garbage"));
    // Garbage given with an edit.
    let mut edit = VersionEdit::new(DEFAULT_TABLE);
    edit.blob_file_garbage
        .push(lithify_version::BlobFileGarbage {
            number: n[0],
            count: 1,
            bytes: 1,
        });
    assert!(invalid(edit).contains("computed by the version set"));
    // A consistent flush, then a compaction output that refers to more of
    // the blob file than its inputs did.
    let mut edit = VersionEdit::new(DEFAULT_TABLE);
    edit.blob_file_additions.push(blob(n[0], 5, 50));
    edit.add_file(0, sst(n[1], "a", "b", &[(n[0], 5, 50)]));
    set.log_and_apply(vec![edit]).unwrap();
    let mut edit = VersionEdit::new(DEFAULT_TABLE);
    edit.delete_file(0, n[1]);
    edit.add_file(1, sst(n[2], "a", "b", &[(n[0], 6, 60)]));
    assert!(invalid(edit).contains("refer to more of blob file"));
    // A move keeps every reference: no garbage.
    let mut edit = VersionEdit::new(DEFAULT_TABLE);
    edit.delete_file(0, n[1]);
    edit.add_file(1, sst(n[1], "a", "b", &[(n[0], 5, 50)]));
    set.log_and_apply(vec![edit]).unwrap();
    let v = set.current(DEFAULT_TABLE).unwrap();
    assert_eq!(v.blob_files()[&n[0]].garbage_count, 0);
}
