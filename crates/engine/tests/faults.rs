//! Fault injection with `FaultFs`: an I/O error in a flush, a compaction or
//! a MANIFEST write makes the database read-only, reads keep working and
//! nothing acknowledged is lost; and a device that dies at any step of a
//! workload leaves a database that reopens with every acknowledged write
//! (and, after power loss, every synced write and a prefix of the rest).

mod common;

use std::sync::Arc;

use common::{Model, model_pairs, scan, small_options};
use lithify_engine::{Db, ReadOptions, WriteOptions};
use lithify_vfs::{FaultFs, FaultRule, FileSystem, MemFs, OpKind};

fn key(i: u64) -> Vec<u8> {
    format!("key{:04}", i % 300).into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    let mut v = format!("value{i}-").into_bytes();
    v.resize(200, b'=');
    v
}

fn fill(db: &Db, model: &mut Model, range: std::ops::Range<u64>) {
    for i in range {
        db.put(key(i), value(i)).unwrap();
        model.insert(key(i), value(i));
    }
}

fn options(fs: Arc<dyn FileSystem>) -> lithify_engine::Options {
    small_options(fs).disable_auto_compactions(true)
}

/// Checks read-only mode, then reopens without the fault and compares.
fn check_read_only_then_reopen(db: Db, fs: &Arc<FaultFs<MemFs>>, model: &Model) {
    assert!(db.background_error().is_some());
    let err = db.put(b"x", b"y").unwrap_err();
    assert!(err.is_read_only(), "{err}");
    assert_eq!(
        scan(&db, &ReadOptions::default()),
        model_pairs(model),
        "reads after the error"
    );
    assert!(db.close().is_err(), "close reports the background error");
    fs.clear_rules();
    let db = Db::open("/db", options(fs.clone())).unwrap();
    assert_eq!(scan(&db, &ReadOptions::default()), model_pairs(model));
    db.put(b"x", b"y").unwrap();
}

#[test]
fn a_failed_flush_makes_the_database_read_only() {
    let fs = Arc::new(FaultFs::new(MemFs::new()));
    let db = Db::open("/db", options(fs.clone())).unwrap();
    let mut model = Model::new();
    fill(&db, &mut model, 0..100);
    fs.add_rule(FaultRule::fail_from(OpKind::Write, 1).on_paths_containing(".sst"));
    let err = db.flush().unwrap_err();
    assert!(err.is_read_only(), "{err}");
    check_read_only_then_reopen(db, &fs, &model);
}

#[test]
fn a_failed_compaction_makes_the_database_read_only() {
    let fs = Arc::new(FaultFs::new(MemFs::new()));
    let db = Db::open("/db", options(fs.clone())).unwrap();
    let mut model = Model::new();
    for round in 0..3 {
        fill(&db, &mut model, round * 100..round * 100 + 150);
        db.flush().unwrap();
    }
    fs.add_rule(FaultRule::fail_nth(OpKind::Sync, 1).on_paths_containing(".sst"));
    let err = db.compact_range(None, None).unwrap_err();
    assert!(err.is_read_only(), "{err}");
    check_read_only_then_reopen(db, &fs, &model);
}

#[test]
fn a_failed_manifest_write_makes_the_database_read_only() {
    let fs = Arc::new(FaultFs::new(MemFs::new()));
    let db = Db::open("/db", options(fs.clone())).unwrap();
    let mut model = Model::new();
    fill(&db, &mut model, 0..100);
    fs.add_rule(FaultRule::fail_from(OpKind::Write, 1).on_paths_containing("MANIFEST"));
    assert!(db.flush().unwrap_err().is_read_only());
    check_read_only_then_reopen(db, &fs, &model);
}

#[test]
fn a_failed_wal_sync_fails_the_write_and_loses_nothing_acknowledged() {
    let fs = Arc::new(FaultFs::new(MemFs::new()));
    let db = Db::open("/db", options(fs.clone())).unwrap();
    let mut model = Model::new();
    fill(&db, &mut model, 0..50);
    fs.add_rule(FaultRule::fail_nth(OpKind::Sync, 1).on_paths_containing(".log"));
    let sync = WriteOptions::default().sync(true);
    assert!(db.put_opt(b"zz", b"1", &sync).is_err());
    // The failed write may or may not have reached the log.
    drop(db);
    fs.clear_rules();
    let db = Db::open("/db", options(fs.clone())).unwrap();
    let mut got = scan(&db, &ReadOptions::default());
    got.retain(|(k, _)| k != b"zz");
    assert_eq!(got, model_pairs(&model));
}

/// Four threads of synced writes when a WAL sync fails: the write group
/// may commit one writer's batch in another writer's group, so the failure
/// must reach every member of the failed group. Every writer returns, each
/// write acknowledged before the failure survives a reopen, and no write
/// succeeds after it.
#[test]
fn a_failed_wal_sync_reaches_every_writer_of_its_group() {
    let fs = Arc::new(FaultFs::new(MemFs::new()));
    let db = Db::open("/db", options(fs.clone())).unwrap();
    fs.add_rule(FaultRule::fail_nth(OpKind::Sync, 40).on_paths_containing(".log"));
    let sync = WriteOptions::default().sync(true);
    let acked: Vec<Vec<Vec<u8>>> = std::thread::scope(|s| {
        let writers: Vec<_> = (0..4u64)
            .map(|t| {
                let db = &db;
                s.spawn(move || {
                    let mut acked = Vec::new();
                    for i in 0..100u64 {
                        let k = format!("t{t}-{i:03}").into_bytes();
                        match db.put_opt(&k, b"v", &sync) {
                            Ok(()) => acked.push(k),
                            Err(e) => {
                                assert!(e.is_read_only() || db.background_error().is_some());
                                break;
                            }
                        }
                    }
                    acked
                })
            })
            .collect();
        writers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let total: usize = acked.iter().map(Vec::len).sum();
    assert!(total < 400, "the failed sync failed some write");
    assert!(db.background_error().is_some());
    assert!(db.put(b"after", b"x").unwrap_err().is_read_only());
    drop(db);
    fs.clear_rules();
    let db = Db::open("/db", options(fs.clone())).unwrap();
    for k in acked.iter().flatten() {
        assert_eq!(
            db.get(k).unwrap().as_deref(),
            Some(&b"v"[..]),
            "acknowledged {}",
            String::from_utf8_lossy(k)
        );
    }
}

/// One run of the fault-at-every-step workload; returns the mutation
/// count when `fail_at` is `None`.
fn workload(fail_at: Option<u64>) -> u64 {
    let mem = MemFs::new();
    mem.set_torn_tails(Some(fail_at.unwrap_or(0)));
    let fs = Arc::new(FaultFs::new(mem));
    if let Some(n) = fail_at {
        fs.add_rule(FaultRule::fail_from(OpKind::Mutation, n));
    }
    let mut states = vec![Model::new()];
    let mut model = Model::new();
    let mut acked = 0;
    let mut synced = 0;
    if let Ok(db) = Db::open("/db", small_options(fs.clone())) {
        for i in 0..240u64 {
            let sync = i % 16 == 15;
            let r = db.put_opt(key(i * 7), value(i), &WriteOptions::default().sync(sync));
            model.insert(key(i * 7), value(i));
            // A failed write may have reached the log: its state is a
            // possible outcome, but it is not acknowledged.
            states.push(model.clone());
            if r.is_err() {
                break;
            }
            acked = i as usize + 1;
            if sync {
                synced = acked;
            }
            if i % 60 == 59 && db.flush().is_err() {
                break;
            }
        }
        let _ = db.compact_range(None, None);
        drop(db);
    }
    let mutations = fs.counts().mutations();
    fs.clear_rules();
    // A process restart: every acknowledged write is there (the failed
    // one may be too).
    let crashed = fs.inner().crash_clone();
    {
        let db = Db::open("/db", small_options(fs.clone()))
            .unwrap_or_else(|e| panic!("reopen after a fault at mutation {fail_at:?}: {e}"));
        let got = scan(&db, &ReadOptions::default());
        let ok =
            (acked..=(acked + 1).min(states.len() - 1)).any(|k| model_pairs(&states[k]) == got);
        assert!(
            ok,
            "fault at mutation {fail_at:?}: acknowledged writes lost ({acked} acknowledged, {} keys found)",
            got.len()
        );
    }
    // Power loss: every synced write, and a prefix of the others.
    let db = Db::open("/db", small_options(Arc::new(crashed)))
        .unwrap_or_else(|e| panic!("reopen after power loss, fault at {fail_at:?}: {e}"));
    let got = scan(&db, &ReadOptions::default());
    let ok = (synced..=(acked + 1).min(states.len() - 1)).any(|k| model_pairs(&states[k]) == got);
    assert!(
        ok,
        "fault at mutation {fail_at:?}, then power loss: not a prefix covering the {synced} synced writes"
    );
    mutations
}

#[test]
fn a_device_failing_at_any_step_loses_nothing_acknowledged() {
    let total = workload(None);
    assert!(total > 50, "the workload did only {total} mutations");
    let step = (total / 400).max(1);
    let mut n = 1;
    while n <= total {
        workload(Some(n));
        n += step;
    }
}

/// What an `EventListener` heard, in order.
#[derive(Default)]
struct Heard(std::sync::Mutex<Vec<String>>);

impl lithify_engine::EventListener for Heard {
    fn on_flush_completed(&self, info: &lithify_engine::FlushJobInfo) {
        self.0.lock().unwrap().push(format!(
            "flush {} -> L{} {:?}",
            info.table, info.output_level, info.output_files
        ));
    }
    fn on_compaction_completed(&self, info: &lithify_engine::CompactionJobInfo) {
        self.0
            .lock()
            .unwrap()
            .push(format!("compaction -> L{}", info.output_level));
    }
    fn on_background_error(&self, error: &lithify_engine::Error) {
        self.0.lock().unwrap().push(format!("error {error}"));
    }
    fn on_recovery_completed(&self, report: &lithify_engine::RecoveryReport) {
        self.0
            .lock()
            .unwrap()
            .push(format!("recovery clean={}", report.is_clean()));
    }
}

#[test]
fn listeners_hear_recovery_flushes_compactions_and_the_background_error() {
    let fs = Arc::new(FaultFs::new(MemFs::new()));
    let heard = Arc::new(Heard::default());
    let opts = options(fs.clone()).listeners(vec![heard.clone()]);
    let db = Db::open("/db", opts).unwrap();
    let mut model = Model::new();
    fill(&db, &mut model, 0..200);
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    // The next flush fails: the listener hears the error.
    fill(&db, &mut model, 200..260);
    fs.add_rule(FaultRule::fail_nth(OpKind::Sync, 1).on_paths_containing(".sst"));
    assert!(db.flush().is_err());
    let _ = db.close();
    let heard = heard.0.lock().unwrap().clone();
    assert_eq!(heard[0], "recovery clean=true", "{heard:?}");
    assert!(heard[1].starts_with("flush default -> L0 ["), "{heard:?}");
    assert!(
        heard.iter().any(|h| h.starts_with("compaction -> L")),
        "{heard:?}"
    );
    let last = heard.last().unwrap();
    assert!(
        last.starts_with("error ") && last.contains(".sst"),
        "{heard:?}"
    );
}

/// A file system that cannot tell whether CURRENT exists (an object store
/// that does not answer): `exists` says no, `try_exists` says why.
#[derive(Debug)]
struct Unsure(MemFs);

fn unsure_of(path: &std::path::Path) -> bool {
    path.file_name().is_some_and(|n| n == "CURRENT")
}

impl FileSystem for Unsure {
    fn create(&self, p: &std::path::Path) -> std::io::Result<Box<dyn lithify_vfs::WritableFile>> {
        self.0.create(p)
    }
    fn create_new(
        &self,
        p: &std::path::Path,
    ) -> std::io::Result<Box<dyn lithify_vfs::WritableFile>> {
        self.0.create_new(p)
    }
    fn open_append(
        &self,
        p: &std::path::Path,
    ) -> std::io::Result<Box<dyn lithify_vfs::WritableFile>> {
        self.0.open_append(p)
    }
    fn open(&self, p: &std::path::Path) -> std::io::Result<Arc<dyn lithify_vfs::RandomAccessFile>> {
        self.0.open(p)
    }
    fn rename(&self, from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
        self.0.rename(from, to)
    }
    fn remove_file(&self, p: &std::path::Path) -> std::io::Result<()> {
        self.0.remove_file(p)
    }
    fn remove_dir(&self, p: &std::path::Path) -> std::io::Result<()> {
        self.0.remove_dir(p)
    }
    fn list_dir(&self, p: &std::path::Path) -> std::io::Result<Vec<String>> {
        self.0.list_dir(p)
    }
    fn create_dir_all(&self, p: &std::path::Path) -> std::io::Result<()> {
        self.0.create_dir_all(p)
    }
    fn exists(&self, p: &std::path::Path) -> bool {
        !unsure_of(p) && self.0.exists(p)
    }
    fn try_exists(&self, p: &std::path::Path) -> std::io::Result<bool> {
        if unsure_of(p) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the store did not answer",
            ));
        }
        self.0.try_exists(p)
    }
    fn is_dir(&self, p: &std::path::Path) -> bool {
        self.0.is_dir(p)
    }
    fn file_size(&self, p: &std::path::Path) -> std::io::Result<u64> {
        self.0.file_size(p)
    }
    fn sync_dir(&self, p: &std::path::Path) -> std::io::Result<()> {
        self.0.sync_dir(p)
    }
    fn lock(&self, p: &std::path::Path) -> std::io::Result<lithify_vfs::FileLock> {
        self.0.lock(p)
    }
}

#[test]
fn an_open_that_cannot_tell_whether_current_exists_fails_and_creates_nothing() {
    let mem = MemFs::new();
    let mut model = Model::new();
    {
        let db = Db::open("/db", options(Arc::new(mem.clone()))).unwrap();
        fill(&db, &mut model, 0..200);
        db.flush().unwrap();
    }
    let before = mem.list_dir(std::path::Path::new("/db")).unwrap();
    // Not knowing is an error naming CURRENT, never "no database here",
    // which would create one (and with it delete the tables as orphans).
    let err = Db::open("/db", options(Arc::new(Unsure(mem.clone())))).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("/db/CURRENT"), "{msg}");
    assert!(msg.contains("did not answer"), "{msg}");
    assert_eq!(
        mem.list_dir(std::path::Path::new("/db")).unwrap(),
        before,
        "nothing was written"
    );
    let db = Db::open("/db", options(Arc::new(mem))).unwrap();
    assert_eq!(scan(&db, &ReadOptions::default()), model_pairs(&model));
}
