//! The S3 server stops and comes back mid-run. Within the retry policy's
//! window a flush stalls and then goes through; past it, the flush fails
//! with an error naming the table and the tries, the database stops
//! taking writes, and a reopen once the server is back finds every
//! acknowledged write.
//!
//! With `LITHIFY_S3FS_BIN` set (CI sets it), the server is a real
//! `s3s-fs` process this test starts, kills and restarts on the same
//! port and directory; without it, the outage is a `FaultStore` switched
//! off and on in front of `object_store`'s local store.

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lithify_bucket::{Bucket, BucketFs, FaultStore, ReadOptions, RetryPolicy, S3Config, SplitFs};
use lithify_engine::{Db, Options};
use lithify_vfs::{FileSystem, MemFs};

const DIR: &str = "/db";

/// Stops and starts the store.
trait Outage: Send + Sync {
    fn stop(&self);
    fn start(&self);
}

struct RealServer {
    bin: PathBuf,
    root: tempfile::TempDir,
    port: u16,
    child: parking_lot::Mutex<Option<Child>>,
}

impl RealServer {
    fn new(bin: PathBuf) -> Self {
        let root = tempfile::tempdir().unwrap();
        lithify_vfs::OsFs
            .create_dir_all(&root.path().join("lithify"))
            .unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let s = RealServer {
            bin,
            root,
            port,
            child: parking_lot::Mutex::new(None),
        };
        s.start();
        s
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Outage for RealServer {
    fn stop(&self) {
        if let Some(mut c) = self.child.lock().take() {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }

    fn start(&self) {
        let child = Command::new(&self.bin)
            .args(["--host", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--access-key", "lithify", "--secret-key", "lithify-secret"])
            .arg(self.root.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        *self.child.lock() = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "s3s-fs did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for RealServer {
    fn drop(&mut self) {
        self.stop();
    }
}

struct Switch(Arc<FaultStore>);

impl Outage for Switch {
    fn stop(&self) {
        self.0.set_down(true);
    }
    fn start(&self) {
        self.0.set_down(false);
    }
}

/// A bucket with `retry`, and the switch that takes its store away.
fn store(retry: RetryPolicy) -> (Bucket, Arc<dyn Outage>, Option<tempfile::TempDir>) {
    match std::env::var_os("LITHIFY_S3FS_BIN").filter(|b| !b.is_empty()) {
        Some(bin) => {
            let server = RealServer::new(bin.into());
            let mut config = S3Config::new(server.endpoint(), "lithify");
            config.access_key_id = "lithify".into();
            config.secret_access_key = "lithify-secret".into();
            config.request_timeout = Duration::from_secs(2);
            let bucket = Bucket::s3(&config).unwrap().with_retry(retry);
            (bucket, Arc::new(server), None)
        }
        None => {
            let dir = tempfile::tempdir().unwrap();
            let local =
                lithify_bucket::object_store::local::LocalFileSystem::new_with_prefix(dir.path())
                    .unwrap();
            let faults = Arc::new(FaultStore::new(Arc::new(local)));
            let bucket = Bucket::from_store(faults.clone(), "local")
                .unwrap()
                .with_retry(retry);
            (bucket, Arc::new(Switch(faults)), Some(dir))
        }
    }
}

fn options(local: Arc<MemFs>, bucket: &Bucket) -> Options {
    let tables = BucketFs::new(bucket.clone(), DIR, "restart", ReadOptions::default());
    Options::default()
        .fs(Arc::new(SplitFs::new(local, tables)))
        .write_buffer_size(64 << 10)
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn check(db: &Db, n: u64) {
    for i in (0..n).step_by(7) {
        assert_eq!(
            db.get(key(i)).unwrap().as_deref(),
            Some(&b"value"[..]),
            "key {i}"
        );
    }
}

#[test]
fn a_restart_within_the_retries_stalls_a_flush_and_loses_nothing() {
    // About 20 s of tries: far more than the restart takes.
    let retry = RetryPolicy::new(40, Duration::from_millis(50), Duration::from_millis(500));
    let (bucket, outage, _dir) = store(retry);
    let local = Arc::new(MemFs::new());
    let db = Db::open(DIR, options(local.clone(), &bucket)).unwrap();
    for i in 0..2000 {
        db.put(key(i), b"value").unwrap();
    }
    db.flush().unwrap();
    outage.stop();
    for i in 2000..4000 {
        db.put(key(i), b"value").unwrap();
    }
    let back = {
        let outage = outage.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(800));
            outage.start();
        })
    };
    let retries = bucket.stats().retries;
    db.flush().expect("the flush waits the outage out");
    back.join().unwrap();
    assert!(bucket.stats().retries > retries, "the flush was retried");
    assert!(db.background_error().is_none());
    check(&db, 4000);
    db.close().unwrap();
    let db = Db::open(DIR, options(local, &bucket)).unwrap();
    check(&db, 4000);
}

#[test]
fn an_outage_past_the_retries_is_a_clear_error_and_a_reopen_resumes() {
    let retry = RetryPolicy::new(3, Duration::from_millis(10), Duration::from_millis(20));
    let (bucket, outage, _dir) = store(retry);
    let local = Arc::new(MemFs::new());
    let db = Db::open(DIR, options(local.clone(), &bucket)).unwrap();
    for i in 0..1000 {
        db.put(key(i), b"value").unwrap();
    }
    db.flush().unwrap();
    outage.stop();
    for i in 1000..2000 {
        db.put(key(i), b"value").unwrap();
    }
    let err = db.flush().unwrap_err().to_string();
    assert!(
        err.contains(".sst") && err.contains("after 3 tries"),
        "{err}"
    );
    assert!(db.background_error().is_some());
    assert!(
        db.put(key(0), b"value").is_err(),
        "writes stop after the error"
    );
    drop(db);
    outage.start();
    let db = Db::open(DIR, options(local, &bucket)).unwrap();
    check(&db, 2000);
    db.flush().unwrap();
    check(&db, 2000);
}
