//! Compaction filters (manual and periodic compaction), write stops and
//! their counters, statistics and properties, writes without WAL, prefix
//! and bounded iteration, `multi_get`.

mod common;

use std::fmt;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use bytes::Bytes;
use common::small_options;
use lithify_engine::{CompactionFilter, Db, FilterDecision, ReadOptions, WriteOptions};
use lithify_vfs::{FileLock, FileSystem, MemFs, RandomAccessFile, WritableFile};

/// Removes `tmp/` keys, upper-cases `up/` values, counts its calls.
#[derive(Default)]
struct Filter {
    calls: AtomicUsize,
}

impl CompactionFilter for Filter {
    fn name(&self) -> &str {
        "test-filter"
    }

    fn filter(&self, _level: usize, key: &[u8], value: &[u8]) -> FilterDecision {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if key.starts_with(b"tmp/") {
            FilterDecision::Remove
        } else if key.starts_with(b"up/") {
            FilterDecision::ChangeValue(value.to_ascii_uppercase())
        } else {
            FilterDecision::Keep
        }
    }
}

#[test]
fn compact_range_runs_the_compaction_filter() {
    let filter = Arc::new(Filter::default());
    let opts = small_options(Arc::new(MemFs::new())).compaction_filter(Some(filter.clone()));
    let db = Db::open("/db", opts).unwrap();
    for i in 0..50 {
        db.put(format!("tmp/{i:02}"), "x").unwrap();
        db.put(format!("keep/{i:02}"), "y").unwrap();
        db.put(format!("up/{i:02}"), "abc").unwrap();
    }
    db.compact_range(None, None).unwrap();
    assert!(filter.calls.load(Ordering::Relaxed) >= 150);
    assert_eq!(db.prefix("tmp/").count(), 0);
    assert_eq!(db.prefix("keep/").count(), 50);
    let ups: Vec<Bytes> = db.prefix("up/").map(|kv| kv.unwrap().1).collect();
    assert_eq!(ups.len(), 50);
    assert!(ups.iter().all(|v| v == &b"ABC"[..]));
}

#[test]
fn periodic_compaction_passes_old_files_through_the_filter() {
    let filter = Arc::new(Filter::default());
    let opts = small_options(Arc::new(MemFs::new()))
        .compaction_filter(Some(filter.clone()))
        .periodic_compaction_seconds(Some(1))
        // No size-triggered compaction: only the period can pick the file.
        .level0_file_num_compaction_trigger(1000)
        .level0_slowdown_writes_trigger(1000)
        .level0_stop_writes_trigger(1000);
    let db = Db::open("/db", opts).unwrap();
    for i in 0..20 {
        db.put(format!("tmp/{i:02}"), "x").unwrap();
    }
    db.flush().unwrap();
    // Let the file age past the period, then wake the background threads
    // with another flush; the picker finds the old file.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    db.put("later", "1").unwrap();
    db.flush().unwrap();
    let mut rounds = 0;
    while db.prefix("tmp/").count() > 0 {
        rounds += 1;
        assert!(rounds < 300, "no periodic compaction ran:\n{}", db.stats());
        std::thread::sleep(std::time::Duration::from_millis(10));
        db.put("poke", rounds.to_string()).unwrap();
        db.flush().unwrap();
    }
    assert!(filter.calls.load(Ordering::Relaxed) >= 20);
    assert_eq!(db.get("later").unwrap().as_deref(), Some(&b"1"[..]));
}

/// A file system whose SST files cannot be created while the gate is
/// closed: flushes block, so memtables pile up.
#[derive(Debug)]
struct Gate {
    inner: MemFs,
    open: Mutex<bool>,
    cv: Condvar,
    blocked: AtomicBool,
}

impl Gate {
    fn wait(&self, path: &Path) {
        if path.to_string_lossy().ends_with(".sst") {
            let mut open = self.open.lock().unwrap();
            while !*open {
                self.blocked.store(true, Ordering::Relaxed);
                open = self.cv.wait(open).unwrap();
            }
        }
    }

    fn set(&self, open: bool) {
        *self.open.lock().unwrap() = open;
        self.cv.notify_all();
    }
}

impl FileSystem for Gate {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.wait(path);
        self.inner.create(path)
    }
    fn create_new(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.wait(path);
        self.inner.create_new(path)
    }
    fn open_append(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        self.inner.open_append(path)
    }
    fn open(&self, path: &Path) -> io::Result<Arc<dyn RandomAccessFile>> {
        self.inner.open(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_file(path)
    }
    fn remove_dir(&self, path: &Path) -> io::Result<()> {
        self.inner.remove_dir(path)
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.inner.list_dir(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn is_dir(&self, path: &Path) -> bool {
        self.inner.is_dir(path)
    }
    fn file_size(&self, path: &Path) -> io::Result<u64> {
        self.inner.file_size(path)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }
    fn lock(&self, path: &Path) -> io::Result<FileLock> {
        self.inner.lock(path)
    }
}

impl fmt::Display for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "gate")
    }
}

#[test]
fn writes_stop_at_the_memtable_limit_and_resume_after_the_flush() {
    let gate = Arc::new(Gate {
        inner: MemFs::new(),
        open: Mutex::new(false),
        cv: Condvar::new(),
        blocked: AtomicBool::new(false),
    });
    let opts = small_options(gate.clone()).max_write_buffer_number(2);
    let db = Arc::new(Db::open("/db", opts).unwrap());
    let value = vec![b'v'; 1000];
    // Two full memtables: the first is stuck in its flush, the second
    // makes two unflushed immutable memtables, which stops writes.
    let mut i = 0u64;
    while db.property("lithify.is-write-stopped").as_deref() != Some("1") {
        db.put(i.to_be_bytes(), &value).unwrap();
        i += 1;
        assert!(i < 10_000, "writes never stopped");
    }
    // The stop needs two unflushed memtables, not a running flush: the
    // first flush may still be on its way to the gate.
    for _ in 0..10_000 {
        if gate.blocked.load(Ordering::Relaxed) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    if !gate.blocked.load(Ordering::Relaxed) {
        gate.set(true); // let the database close
        panic!("no flush reached the gate:\n{}", db.stats());
    }
    // A write that refuses to wait fails at once.
    let no_wait = WriteOptions::default().no_slowdown(true);
    assert!(db.put_opt(b"impatient", b"1", &no_wait).is_err());
    // A normal write waits until the gate opens and the flushes finish.
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, done) = (db.clone(), done.clone());
        std::thread::spawn(move || {
            db.put(b"patient", b"1").unwrap();
            done.store(true, Ordering::Release);
        })
    };
    // Reads are not blocked by the stop.
    assert_eq!(
        db.get(0u64.to_be_bytes()).unwrap().as_deref(),
        Some(&value[..])
    );
    // The writer counts itself stopped when it starts waiting.
    for _ in 0..10_000 {
        if db.stats().stalls.stopped_writes >= 1 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert!(!done.load(Ordering::Acquire), "a write passed a stop");
    gate.set(true);
    writer.join().unwrap();
    assert!(done.load(Ordering::Acquire));
    let stats = db.stats();
    assert!(stats.stalls.stopped_writes >= 1, "{stats}");
    assert!(stats.stalls.memtable_limit >= 1, "{stats}");
    assert_eq!(db.get(b"patient").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get(b"impatient").unwrap(), None);
}

#[test]
fn statistics_and_properties() {
    // No background compaction: the sizes compared below stay put.
    let opts = small_options(Arc::new(MemFs::new())).disable_auto_compactions(true);
    let db = Db::open("/db", opts).unwrap();
    for i in 0..3000u32 {
        db.put(format!("key{:05}", i % 1000), vec![b'x'; 100])
            .unwrap();
    }
    db.flush().unwrap();
    for i in 0..500u32 {
        assert!(db.get(format!("key{i:05}")).unwrap().is_some());
    }
    assert_eq!(db.get("absent").unwrap(), None);
    let s = db.stats();
    assert_eq!(s.write_batches, 3000);
    assert_eq!(s.keys_written, 3000);
    assert_eq!(s.user_bytes, 3000 * 108);
    assert!(s.wal_bytes > s.user_bytes);
    assert!(s.flush_bytes > 0);
    assert!(s.write_amp > 1.0, "{s}");
    assert_eq!(s.gets, 501);
    assert!(s.read_amp_tables > 0.0 && s.read_amp_blocks > 0.0, "{s}");
    assert!(s.space_amp >= 1.0, "{s}");
    assert!(s.live_bytes > 0 && s.sst_bytes >= s.live_bytes);
    let table = &s.tables[0];
    assert_eq!(table.name, "default");
    assert!(table.levels.iter().any(|l| l.write_bytes > 0));
    assert_eq!(
        table.sum.files,
        table.levels.iter().map(|l| l.files).sum::<usize>()
    );
    let text = db.property("lithify.stats").unwrap();
    assert!(
        text.starts_with("** Compaction Stats [default] **"),
        "{text}"
    );
    for line in [
        "Write amplification:",
        "Read amplification:",
        "Space amplification:",
        "Stalls:",
    ] {
        assert!(text.contains(line), "missing {line} in\n{text}");
    }
    for name in Db::property_names() {
        let name = name.replace("level<N>", "level0");
        assert!(db.property(&name).is_some(), "property {name}");
    }
    assert_eq!(db.property("lithify.no-such-thing"), None);
    assert_eq!(
        db.property("lithify.total-sst-files-size").unwrap(),
        table.sst_bytes.to_string()
    );
}

#[test]
fn writes_without_wal_survive_a_clean_close() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", small_options(fs.clone())).unwrap();
    let no_wal = WriteOptions::default().disable_wal(true);
    db.put_opt("a", "1", &no_wal).unwrap();
    db.put("b", "2").unwrap();
    db.close().unwrap();
    let db = Db::open("/db", small_options(fs)).unwrap();
    assert_eq!(db.get("a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get("b").unwrap().as_deref(), Some(&b"2"[..]));
}

#[test]
fn bounded_and_prefix_iteration_and_multi_get() {
    let db = Db::open("/db", small_options(Arc::new(MemFs::new()))).unwrap();
    for k in ["a", "ab", "abc", "abd", "b", "b\u{ff}", "c"] {
        db.put(k, k.to_uppercase()).unwrap();
    }
    db.flush().unwrap();
    db.delete("abc").unwrap();
    fn keys(it: impl Iterator<Item = lithify_engine::Result<(Bytes, Bytes)>>) -> Vec<String> {
        it.map(|kv| String::from_utf8_lossy(&kv.unwrap().0).into_owned())
            .collect()
    }
    assert_eq!(keys(db.prefix("ab")), ["ab", "abd"]);
    assert_eq!(keys(db.prefix("ab").rev()), ["abd", "ab"]);
    assert_eq!(keys(db.range("ab".."b")), ["ab", "abd"]);
    assert_eq!(keys(db.range("ab"..="b")), ["ab", "abd", "b"]);
    assert_eq!(
        keys(db.range::<&str>((std::ops::Bound::Excluded("ab"), std::ops::Bound::Unbounded))),
        ["abd", "b", "b\u{ff}", "c"]
    );
    // Both ends meet without crossing.
    let mut it = db.iter();
    let mut front = Vec::new();
    let mut back = Vec::new();
    loop {
        match it.next() {
            Some(kv) => front.push(kv.unwrap().0),
            None => break,
        }
        match it.next_back() {
            Some(kv) => back.push(kv.unwrap().0),
            None => break,
        }
    }
    assert_eq!(front.len() + back.len(), 6);
    let opts = ReadOptions::default()
        .lower_bound(Some(Bytes::from_static(b"ab")))
        .upper_bound(Some(Bytes::from_static(b"b")));
    let mut raw = db.raw_iterator(&opts).unwrap();
    raw.seek_to_last().unwrap();
    assert_eq!(raw.key(), Some(&b"abd"[..]));
    raw.seek_to_first().unwrap();
    assert_eq!(raw.key(), Some(&b"ab"[..]));
    raw.seek(b"zzz").unwrap();
    assert!(!raw.valid());
    raw.seek_for_prev(b"a").unwrap();
    assert!(!raw.valid());
    let got = db.multi_get(["a", "abc", "c", "zz"]);
    let got: Vec<Option<Bytes>> = got.into_iter().map(|r| r.unwrap()).collect();
    assert_eq!(
        got,
        [
            Some(Bytes::from_static(b"A")),
            None,
            Some(Bytes::from_static(b"C")),
            None
        ]
    );
}

#[test]
fn scans_count_the_sorted_runs_within_their_bounds() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let db = Db::open("/db", small_options(fs).disable_auto_compactions(true)).unwrap();
    // Three L0 files of disjoint ranges.
    for prefix in ["a", "b", "c"] {
        for i in 0..10 {
            db.put(format!("{prefix}{i}"), "v").unwrap();
        }
        db.flush().unwrap();
    }
    let runs = |db: &Db| {
        let t = &db.stats().tables[0];
        (t.scans, t.scan_sorted_runs)
    };
    assert_eq!(runs(&db), (0, 0));
    drop(db.iter());
    assert_eq!(runs(&db), (1, 3));
    let mut bounded = ReadOptions::default();
    bounded.lower_bound = Some(Bytes::from_static(b"b"));
    bounded.upper_bound = Some(Bytes::from_static(b"c"));
    let mut it = db.raw_iterator(&bounded).unwrap();
    it.seek(b"b").unwrap();
    assert_eq!(it.key(), Some(&b"b0"[..]));
    drop(it);
    assert_eq!(runs(&db), (2, 4));
    db.close().unwrap();
}
