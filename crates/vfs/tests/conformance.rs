//! The same behaviour from every FileSystem: OsFs, MemFs and FaultFs.

use std::io;
use std::path::{Path, PathBuf};

use lithify_vfs::{FaultFs, FileSystem, MemFs, OsFs, read_file, write_file_atomic};

fn exercise(fs: &dyn FileSystem, root: &Path) {
    let dir = root.join("db");
    fs.create_dir_all(&dir).unwrap();
    fs.create_dir_all(&dir).unwrap(); // idempotent
    assert!(fs.is_dir(&dir));

    let a = dir.join("a");
    let mut f = fs.create(&a).unwrap();
    assert!(f.is_empty());
    f.append(b"hello ").unwrap();
    f.append(b"world").unwrap();
    assert_eq!(f.len(), 11);
    f.write_at(0, b"J").unwrap();
    f.write_at(13, b"!").unwrap(); // past the end: zero-filled gap
    assert_eq!(f.len(), 14);
    f.sync_all().unwrap();
    drop(f);
    assert_eq!(read_file(fs, &a).unwrap(), b"Jello world\0\0!");
    assert_eq!(fs.file_size(&a).unwrap(), 14);

    let mut f = fs.open_append(&a).unwrap();
    f.set_len(5).unwrap();
    f.append(b"?").unwrap();
    drop(f);
    assert_eq!(read_file(fs, &a).unwrap(), b"Jello?");

    let r = fs.open(&a).unwrap();
    let mut buf = [0u8; 10];
    assert_eq!(r.read_at(4, &mut buf).unwrap(), 2);
    assert_eq!(r.read_at(100, &mut buf).unwrap(), 0);
    assert_eq!(
        r.read_vec(3, 10).unwrap_err().kind(),
        io::ErrorKind::UnexpectedEof
    );
    assert_eq!(r.read_vec(1, 5).unwrap(), b"ello?");
    assert_eq!(r.read_vec(6, 0).unwrap(), b"");
    // On Windows a removed file's name stays taken while a handle is open,
    // so the reader is closed before its file is renamed and removed below.
    drop(r);

    assert_eq!(
        fs.create_new(&a).map(|_| ()).unwrap_err().kind(),
        io::ErrorKind::AlreadyExists
    );

    let b = dir.join("b");
    fs.rename(&a, &b).unwrap();
    assert!(!fs.exists(&a));
    assert!(fs.exists(&b));
    write_file_atomic(fs, &dir.join("c"), b"atomic").unwrap();
    assert_eq!(read_file(fs, &dir.join("c")).unwrap(), b"atomic");
    fs.create_dir_all(&dir.join("sub")).unwrap();
    assert_eq!(fs.list_dir(&dir).unwrap(), ["b", "c", "sub"]);
    fs.sync_dir(&dir).unwrap();

    let lock = fs.lock(&dir.join("LOCK")).unwrap();
    assert_eq!(
        fs.lock(&dir.join("LOCK")).unwrap_err().kind(),
        io::ErrorKind::WouldBlock
    );
    drop(lock);
    drop(fs.lock(&dir.join("LOCK")).unwrap());

    // Shared locks: many readers together, none while a writer holds the
    // file, no writer while a reader does; a missing file is not created.
    let shared = dir.join("SHARED");
    assert_eq!(
        fs.lock_shared(&shared).unwrap_err().kind(),
        io::ErrorKind::NotFound
    );
    assert!(!fs.exists(&shared), "a shared lock creates nothing");
    let writer = fs.lock(&shared).unwrap();
    assert_eq!(
        fs.lock_shared(&shared).unwrap_err().kind(),
        io::ErrorKind::WouldBlock
    );
    drop(writer);
    let reader1 = fs.lock_shared(&shared).unwrap();
    let reader2 = fs.lock_shared(&shared).unwrap();
    assert_eq!(
        fs.lock(&shared).unwrap_err().kind(),
        io::ErrorKind::WouldBlock
    );
    drop(reader1);
    assert_eq!(
        fs.lock(&shared).unwrap_err().kind(),
        io::ErrorKind::WouldBlock,
        "one reader still holds it"
    );
    drop(reader2);
    drop(fs.lock(&shared).unwrap());
    fs.remove_file(&shared).unwrap();

    // A hard link names the same bytes, and outlives the first name.
    let linked = dir.join("sub").join("linked");
    fs.hard_link(&b, &linked).unwrap();
    assert_eq!(read_file(fs, &linked).unwrap(), b"Jello?");
    assert_eq!(
        fs.hard_link(&b, &linked).unwrap_err().kind(),
        io::ErrorKind::AlreadyExists
    );
    fs.remove_file(&b).unwrap();
    assert_eq!(read_file(fs, &linked).unwrap(), b"Jello?");
    fs.remove_file(&linked).unwrap();
    fs.hard_link(&dir.join("c"), &b).unwrap();

    fs.remove_file(&b).unwrap();
    assert_eq!(
        fs.open(&b).map(|_| ()).unwrap_err().kind(),
        io::ErrorKind::NotFound
    );
    assert_eq!(
        fs.remove_file(&b).unwrap_err().kind(),
        io::ErrorKind::NotFound
    );
    fs.remove_dir(&dir.join("sub")).unwrap();
    assert!(!fs.exists(&dir.join("sub")));
    assert!(fs.list_dir(&root.join("missing")).is_err());
}

#[test]
fn os_fs() {
    let tmp = tempfile::tempdir().unwrap();
    exercise(&OsFs, tmp.path());
}

#[test]
fn mem_fs() {
    exercise(&MemFs::new(), &PathBuf::from("/tmp/x"));
}

#[test]
fn fault_fs_without_rules_is_transparent() {
    exercise(&FaultFs::new(MemFs::new()), Path::new("/"));
    let tmp = tempfile::tempdir().unwrap();
    exercise(&FaultFs::new(OsFs), tmp.path());
}
