//! Outputs never land among stored data: `check_output_path` recognises a
//! database, a Kafka log, a Kafka data directory and a backup directory at
//! any depth, through any spelling of the path; the libraries refuse a
//! checkpoint inside its own database, a backup directory inside the
//! database it backs up, and a restore inside the backup directory.

use std::path::Path;
use std::sync::Arc;

use lithify::backup::BackupEngine;
use lithify::log::record::SimpleRecord;
use lithify::log::{Log, LogConfig};
use lithify::vfs::{FileSystem, MemFs};
use lithify::{Db, ErrorKind, Options, check_output_path, stored_data_at_or_above};

fn setup() -> Arc<MemFs> {
    let fs = Arc::new(MemFs::new());
    let options = Options::default().fs(fs.clone());
    let db = Db::open("/db", options).unwrap();
    db.put("k", "v").unwrap();
    let backups = BackupEngine::open(fs.clone(), "/bk").unwrap();
    backups.create_backup(&db).unwrap();
    db.close().unwrap();
    let mut log = Log::open(fs.clone(), Path::new("/data/t-0"), LogConfig::default()).unwrap();
    log.append(&[SimpleRecord::new(1, "k", "v")]).unwrap();
    log.close().unwrap();
    fs
}

#[test]
fn every_kind_of_stored_data_is_recognised_at_any_depth() {
    let fs = setup();
    for (path, dir, what) in [
        ("/db/CURRENT", "/db", "lithify database"),
        ("/db/./sub/new.html", "/db", "lithify database"),
        ("/data/t-0/x.html", "/data/t-0", "segment file"),
        (
            "/data/recovery-point-offset-checkpoint",
            "/data",
            "recovery-point",
        ),
        ("/bk/meta/1", "/bk", "backup directory"),
        ("/bk", "/bk", "backup directory"),
    ] {
        let found = stored_data_at_or_above(&*fs, Path::new(path))
            .unwrap()
            .unwrap_or_else(|| panic!("{path}"));
        assert_eq!(found.dir, Path::new(dir), "{path}");
        assert!(found.what.contains(what), "{path}: {}", found.what);
        let err = check_output_path(&*fs, Path::new(path)).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.to_string().contains(path), "{err}");
    }
    for free in ["/page.html", "/elsewhere/deep/x", "/db-copy"] {
        check_output_path(&*fs, Path::new(free)).unwrap();
    }
}

#[test]
fn the_libraries_refuse_copies_inside_their_sources() {
    let fs = setup();
    let options = Options::default().fs(fs.clone());
    let db = Db::open("/db", options).unwrap();
    let err = db.create_checkpoint("/db/copy").unwrap_err();
    assert!(err.to_string().contains("inside the database"), "{err}");
    assert!(!fs.exists(Path::new("/db/copy")));
    let inside = BackupEngine::open(fs.clone(), "/db/backups").unwrap();
    let err = inside.create_backup(&db).unwrap_err();
    assert!(err.to_string().contains("inside one another"), "{err}");
    let backups = BackupEngine::open(fs.clone(), "/bk").unwrap();
    let err = backups.restore(None, "/bk/restored").unwrap_err();
    assert!(
        err.to_string().contains("inside the backup directory"),
        "{err}"
    );
    db.create_checkpoint("/copy").unwrap();
}
