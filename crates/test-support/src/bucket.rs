//! The bucket a test runs against: the S3-compatible server named by
//! `LITHIFY_S3_ENDPOINT` when it is set (CI starts one), else
//! `object_store`'s local store in a temporary directory.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lithify_bucket::{Bucket, FaultStore, RetryPolicy, S3Config};

/// A place in a bucket no other test uses.
#[derive(Debug)]
pub struct TestBucket {
    /// The bucket, behind `faults`.
    pub bucket: Bucket,
    /// A prefix no other test uses.
    pub prefix: String,
    /// Fails the bucket's requests on demand.
    pub faults: Arc<FaultStore>,
    _dir: Option<tempfile::TempDir>,
}

/// A fresh place in the test bucket, with a fault switch in front of it and
/// fast retries.
pub fn test_bucket(test: &str) -> TestBucket {
    make(test, S3Config::from_env())
}

/// A fresh place in `object_store`'s local store, whatever the
/// environment: for races that need an atomic create-if-absent, which the
/// CI's S3 server (s3s-fs) checks and writes in two steps.
pub fn local_test_bucket(test: &str) -> TestBucket {
    make(test, None)
}

fn make(test: &str, s3: Option<S3Config>) -> TestBucket {
    static N: AtomicU64 = AtomicU64::new(0);
    let unique = format!(
        "{test}-{}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let (store, name, dir): (Arc<dyn lithify_bucket::object_store::ObjectStore>, _, _) = match s3 {
        Some(config) => (
            config.store().unwrap(),
            format!("s3://{}", config.bucket),
            None,
        ),
        None => {
            let dir = tempfile::tempdir().unwrap();
            let store =
                lithify_bucket::object_store::local::LocalFileSystem::new_with_prefix(dir.path())
                    .unwrap()
                    .with_automatic_cleanup(true);
            (
                Arc::new(store),
                format!("file://{}", dir.path().display()),
                Some(dir),
            )
        }
    };
    let faults = Arc::new(FaultStore::new(store));
    let bucket = Bucket::from_store(faults.clone(), name)
        .unwrap()
        .with_retry(RetryPolicy::new(
            4,
            Duration::from_millis(2),
            Duration::from_millis(10),
        ));
    TestBucket {
        bucket,
        prefix: unique,
        faults,
        _dir: dir,
    }
}

/// Whether the tests run against a real S3-compatible server.
pub fn on_s3() -> bool {
    S3Config::from_env().is_some()
}

/// A power cut of the machine whose local disk is `local`, with `process`
/// (a database, say) running on it: the bucket keeps every object whose
/// PUT returned, and nothing the dead process would have done after (the
/// store goes dark first); the local disk keeps what was synced. Returns
/// the disk as it comes back.
pub fn power_cut<P>(
    t: &TestBucket,
    local: &lithify_vfs::MemFs,
    process: P,
) -> Arc<lithify_vfs::MemFs> {
    t.faults.set_down(true);
    let image = Arc::new(local.crash_clone());
    drop(process);
    t.faults.set_down(false);
    image
}
