//! BucketFs and SplitFs against a real store: the file-system contract as
//! far as an object store can keep it, uploads at sync only, the page
//! cache and readahead, conditional creates, retries and outages.

use std::io::ErrorKind;
use std::path::Path;
use std::sync::Arc;

use lithify_bucket::{BucketFs, ReadOptions, SplitFs};
use lithify_test_support::bucket::test_bucket;
use lithify_vfs::{FileSystem, MemFs, read_file};

fn small_pages() -> ReadOptions {
    let mut o = ReadOptions::default();
    o.page_size = 16;
    o.readahead = 64;
    o.cache_bytes = 1 << 20;
    o
}

#[test]
fn files_are_objects_written_whole_at_sync() {
    let t = test_bucket("whole");
    let fs = BucketFs::new(t.bucket.clone(), "/db", &t.prefix, small_pages());
    let path = Path::new("/db/000007.sst");
    let key = format!("{}/000007.sst", t.prefix);

    let mut f = fs.create(path).unwrap();
    f.append(b"hello ").unwrap();
    f.append(b"world").unwrap();
    assert_eq!(f.len(), 11);
    assert_eq!(
        t.bucket.head(&key).unwrap(),
        None,
        "nothing reaches the bucket before a sync"
    );
    f.write_at(0, b"J").unwrap();
    f.sync_all().unwrap();
    assert_eq!(t.bucket.head(&key).unwrap(), Some(11));
    let puts = t.bucket.stats().put_requests;
    f.sync_all().unwrap();
    assert_eq!(
        t.bucket.stats().put_requests,
        puts,
        "a clean file is not uploaded again"
    );
    drop(f);
    assert_eq!(read_file(&fs, path).unwrap(), b"Jello world");
    assert_eq!(fs.file_size(path).unwrap(), 11);
    assert!(fs.exists(path));

    // A file dropped before its sync never reaches the bucket, like one
    // lost to a power cut.
    let lost = Path::new("/db/000008.sst");
    let mut f = fs.create(lost).unwrap();
    f.append(b"never synced").unwrap();
    drop(f);
    assert!(!fs.exists(lost));

    // Appending downloads the object; the next sync uploads it whole.
    let mut f = fs.open_append(path).unwrap();
    f.append(b"!").unwrap();
    f.sync_data().unwrap();
    drop(f);
    assert_eq!(read_file(&fs, path).unwrap(), b"Jello world!");

    assert_eq!(
        fs.create_new(path).map(|_| ()).unwrap_err().kind(),
        ErrorKind::AlreadyExists
    );
    let moved = Path::new("/db/000009.sst");
    fs.rename(path, moved).unwrap();
    assert!(!fs.exists(path));
    assert_eq!(read_file(&fs, moved).unwrap(), b"Jello world!");
    assert_eq!(fs.list_dir(Path::new("/db")).unwrap(), ["000009.sst"]);
    fs.remove_file(moved).unwrap();
    assert!(fs.list_dir(Path::new("/db")).unwrap().is_empty());
    assert_eq!(fs.open(moved).unwrap_err().kind(), ErrorKind::NotFound);
    assert_eq!(
        fs.open(Path::new("/elsewhere/1.sst")).unwrap_err().kind(),
        ErrorKind::InvalidInput,
        "a path outside the root names no object"
    );
    assert_eq!(
        fs.lock(Path::new("/db/LOCK")).unwrap_err().kind(),
        ErrorKind::Unsupported
    );
}

#[test]
fn two_creators_of_one_name_cannot_both_win() {
    let t = test_bucket("create-new");
    let key = format!("{}/MANIFEST-000001", t.prefix);
    t.bucket.put(&key, b"first".to_vec().into(), true).unwrap();
    let err = t
        .bucket
        .put(&key, b"second".to_vec().into(), true)
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AlreadyExists, "{err}");
    assert_eq!(t.bucket.get(&key).unwrap().as_ref(), b"first");

    // A create whose answer was lost is tried again and refused: the bytes
    // there are its own, so it succeeded.
    let other = format!("{}/MANIFEST-000002", t.prefix);
    t.faults.lose_next_answers(1);
    t.bucket.put(&other, b"mine".to_vec().into(), true).unwrap();
    assert_eq!(t.bucket.get(&other).unwrap().as_ref(), b"mine");
    // Other bytes there: refused.
    t.faults.lose_next_answers(1);
    let third = format!("{}/MANIFEST-000003", t.prefix);
    t.bucket
        .put(&third, b"theirs".to_vec().into(), true)
        .unwrap();
    let err = t
        .bucket
        .put(&third, b"mine".to_vec().into(), true)
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::AlreadyExists);

    // A replacement conditional on the ETag seen: refused once another
    // write came between (where the store has conditional updates).
    let (_, etag) = t.bucket.head_etag(&third).unwrap().unwrap();
    let etag = etag.expect("stores give ETags");
    match t.bucket.put_if_match(&third, b"v2".to_vec().into(), &etag) {
        Err(e) if e.kind() == ErrorKind::Unsupported => {
            assert!(!lithify_test_support::bucket::on_s3(), "S3 takes If-Match")
        }
        result => {
            result.unwrap();
            assert_eq!(t.bucket.get(&third).unwrap().as_ref(), b"v2");
            let stale = t
                .bucket
                .put_if_match(&third, b"v3".to_vec().into(), &etag)
                .unwrap_err();
            assert_eq!(stale.kind(), ErrorKind::AlreadyExists, "{stale}");
            assert_eq!(t.bucket.get(&third).unwrap().as_ref(), b"v2");
        }
    }
}

#[test]
fn a_file_system_of_new_objects_only_touches_nothing_it_did_not_create() {
    let t = test_bucket("own");
    let other = BucketFs::new(t.bucket.clone(), "/db", &t.prefix, small_pages());
    let mine = BucketFs::new(t.bucket.clone(), "/w", &t.prefix, small_pages()).new_objects_only();
    let write = |fs: &BucketFs, path: &str, bytes: &[u8]| {
        let mut f = fs.create(Path::new(path))?;
        f.append(bytes)?;
        f.sync_all()
    };
    write(&other, "/db/000009.sst", b"theirs").unwrap();
    // Another's object is neither replaced nor removed.
    let e = write(&mine, "/w/000009.sst", b"mine").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AlreadyExists);
    let e = mine.remove_file(Path::new("/w/000009.sst")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
    assert_eq!(
        read_file(&other, Path::new("/db/000009.sst")).unwrap(),
        b"theirs"
    );
    // Its own is written, synced again (replaced), and removed.
    let mut f = mine.create(Path::new("/w/000010.sst")).unwrap();
    f.append(b"one").unwrap();
    f.sync_all().unwrap();
    f.append(b" two").unwrap();
    f.sync_all().unwrap();
    drop(f);
    assert_eq!(
        read_file(&other, Path::new("/db/000010.sst")).unwrap(),
        b"one two"
    );
    mine.remove_file(Path::new("/w/000010.sst")).unwrap();
    assert!(!other.exists(Path::new("/db/000010.sst")));
    // Once removed it is no longer its own: a new object by that name from
    // someone else stays.
    write(&other, "/db/000010.sst", b"later").unwrap();
    assert!(mine.remove_file(Path::new("/w/000010.sst")).is_err());
}

#[test]
fn reads_go_through_pages_and_sequential_readers_fetch_ahead() {
    let t = test_bucket("pages");
    let fs = BucketFs::new(t.bucket.clone(), "/db", &t.prefix, {
        let mut o = small_pages();
        o.cache_written = false;
        o
    });
    let path = Path::new("/db/000001.sst");
    let data: Vec<u8> = (0..200u32).map(|i| i as u8).collect();
    let mut f = fs.create(path).unwrap();
    f.append(&data).unwrap();
    f.sync_all().unwrap();
    drop(f);

    let r = fs.open(path).unwrap();
    let before = t.bucket.stats();
    // A random read: the pages it touches, one request.
    assert_eq!(r.read_vec(20, 20).unwrap(), &data[20..40]);
    let s = t.bucket.stats();
    assert_eq!(s.get_requests - before.get_requests, 1);
    assert_eq!(s.bytes_downloaded - before.bytes_downloaded, 32); // pages 1 and 2
    // Again: from the cache.
    assert_eq!(r.read_vec(24, 8).unwrap(), &data[24..32]);
    assert_eq!(t.bucket.stats().get_requests, s.get_requests);
    // Sequential from where the last read ended: 64 bytes fetched at once.
    assert_eq!(r.read_vec(32, 16).unwrap(), &data[32..48]); // page 2: cached
    let s = t.bucket.stats();
    assert_eq!(r.read_vec(48, 16).unwrap(), &data[48..64]);
    let s2 = t.bucket.stats();
    assert_eq!(s2.get_requests - s.get_requests, 1);
    assert_eq!(s2.bytes_downloaded - s.bytes_downloaded, 64);
    assert_eq!(s2.readahead_bytes - s.readahead_bytes, 48);
    for at in (64..112).step_by(16) {
        assert_eq!(
            r.read_vec(at, 16).unwrap(),
            &data[at as usize..at as usize + 16]
        );
    }
    assert_eq!(t.bucket.stats().get_requests, s2.get_requests, "read ahead");
    // The end of the object: short reads, then nothing.
    let mut buf = [0u8; 50];
    assert_eq!(r.read_at(190, &mut buf).unwrap(), 10);
    assert_eq!(&buf[..10], &data[190..]);
    assert_eq!(r.read_at(200, &mut buf).unwrap(), 0);
    let s = t.bucket.stats();
    assert!(s.cache_hits > 0 && s.cache_misses > 0, "{s:?}");
}

#[test]
fn passing_failures_are_retried_and_an_outage_is_an_error() {
    let t = test_bucket("outage");
    let fs = BucketFs::new(t.bucket.clone(), "/db", &t.prefix, small_pages());
    let path = Path::new("/db/000003.sst");
    t.faults.fail_next(2);
    let mut f = fs.create(path).unwrap();
    f.append(b"table").unwrap();
    f.sync_all().unwrap();
    assert_eq!(t.bucket.stats().retries, 2);

    t.faults.set_down(true);
    let mut f = fs.create(Path::new("/db/000004.sst")).unwrap();
    f.append(b"table").unwrap();
    let err = f.sync_all().unwrap_err();
    assert!(err.to_string().contains("000004.sst"), "{err}");
    assert!(err.to_string().contains("after 4 tries"), "{err}");
    assert_eq!(t.bucket.stats().failures, 1);
    // The writer still holds the bytes: once the store is back, the sync
    // goes through.
    t.faults.set_down(false);
    f.sync_all().unwrap();
    assert_eq!(
        read_file(&fs, Path::new("/db/000004.sst")).unwrap(),
        b"table"
    );
    assert_eq!(read_file(&fs, path).unwrap(), b"table");
}

#[test]
fn split_sends_tables_and_blobs_to_the_bucket_and_the_rest_to_disk() {
    let t = test_bucket("split");
    let local = Arc::new(MemFs::new());
    let fs = SplitFs::new(
        local.clone(),
        BucketFs::new(t.bucket.clone(), "/db", &t.prefix, small_pages()),
    );
    fs.create_dir_all(Path::new("/db")).unwrap();
    for name in [
        "000001.log",
        "MANIFEST-000002",
        "CURRENT",
        "000003.sst",
        "000004.blob",
        "LOG",
    ] {
        let mut f = fs.create(&Path::new("/db").join(name)).unwrap();
        f.append(name.as_bytes()).unwrap();
        f.sync_all().unwrap();
    }
    assert_eq!(
        t.bucket.list(&t.prefix).unwrap(),
        ["000003.sst", "000004.blob"]
    );
    assert_eq!(
        local.list_dir(Path::new("/db")).unwrap(),
        ["000001.log", "CURRENT", "LOG", "MANIFEST-000002"]
    );
    assert_eq!(
        fs.list_dir(Path::new("/db")).unwrap(),
        [
            "000001.log",
            "000003.sst",
            "000004.blob",
            "CURRENT",
            "LOG",
            "MANIFEST-000002"
        ]
    );
    assert_eq!(
        read_file(&fs, Path::new("/db/000003.sst")).unwrap(),
        b"000003.sst"
    );
    // The lock is the local one.
    let lock = fs.lock(Path::new("/db/LOCK")).unwrap();
    assert_eq!(
        fs.lock(Path::new("/db/LOCK")).unwrap_err().kind(),
        ErrorKind::WouldBlock
    );
    drop(lock);
    // A table outside the root stays local (a checkpoint directory, say).
    let mut f = fs
        .create(Path::new("/ckpt/000003.sst"))
        .unwrap_or_else(|_| {
            fs.create_dir_all(Path::new("/ckpt")).unwrap();
            fs.create(Path::new("/ckpt/000003.sst")).unwrap()
        });
    f.append(b"copy").unwrap();
    f.sync_all().unwrap();
    assert!(local.exists(Path::new("/ckpt/000003.sst")));
    // A rename across the sides is a copy and a removal.
    fs.rename(Path::new("/db/000003.sst"), Path::new("/db/lost-000003"))
        .unwrap();
    assert!(!fs.exists(Path::new("/db/000003.sst")));
    assert_eq!(
        read_file(&*local, Path::new("/db/lost-000003")).unwrap(),
        b"000003.sst"
    );
}

#[test]
fn the_server_takes_bodies_with_and_without_a_signed_hash() {
    let Some(config) = lithify_bucket::S3Config::from_env() else {
        eprintln!("skipped: no S3 server is configured (LITHIFY_S3_ENDPOINT)");
        return;
    };
    let key = format!(
        "payload-signing-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    for sign in [true, false] {
        let mut c = config.clone();
        c.sign_payload = sign;
        let bucket = lithify_bucket::Bucket::s3(&c).unwrap();
        let name = format!("{key}-{sign}");
        let body: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        bucket.put(&name, body.clone().into(), true).unwrap();
        assert_eq!(
            bucket.get(&name).unwrap().as_ref(),
            &body[..],
            "sign {sign}"
        );
        assert_eq!(
            bucket.get_range(&name, 1000..1010).unwrap().as_ref(),
            &body[1000..1010]
        );
        bucket.delete(&name).unwrap();
        assert_eq!(bucket.head(&name).unwrap(), None);
    }
}

/// Serves one request on loopback with `200 OK` and returns the request's
/// head (lower-cased), with the endpoint to send it to.
fn one_request_server() -> (String, std::thread::JoinHandle<String>) {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let head = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut got = Vec::new();
        let mut chunk = [0u8; 4096];
        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = conn.read(&mut chunk).unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&chunk[..n]);
        }
        let _ = conn.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\netag: \"e\"\r\nconnection: close\r\n\r\n",
        );
        String::from_utf8_lossy(&got).to_ascii_lowercase()
    });
    (endpoint, head)
}

#[test]
fn a_put_signs_its_body_only_when_asked() {
    for sign in [true, false] {
        let (endpoint, head) = one_request_server();
        let mut config = lithify_bucket::S3Config::new(endpoint, "lithify");
        config.sign_payload = sign;
        let bucket = lithify_bucket::Bucket::s3(&config).unwrap().with_retry(
            lithify_bucket::RetryPolicy::new(
                1,
                std::time::Duration::from_millis(1),
                std::time::Duration::from_millis(1),
            ),
        );
        let _ = bucket.put("k", b"body".to_vec().into(), false);
        let head = head.join().unwrap();
        let hash = head
            .lines()
            .find_map(|l| l.strip_prefix("x-amz-content-sha256:"))
            .map(str::trim)
            .unwrap_or_else(|| panic!("no payload hash header in {head}"));
        if sign {
            assert_eq!(hash.len(), 64, "a SHA-256 of the body: {hash}");
            assert!(hash.bytes().all(|b| b.is_ascii_hexdigit()), "{hash}");
        } else {
            assert_eq!(hash, "unsigned-payload");
        }
    }
}
