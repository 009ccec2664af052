//! I/O faults at every step of building and reading, and power loss.

mod common;

use std::path::Path;
use std::sync::Arc;

use lithify_base::{Classify, ErrorKind, InternalIterator};
use lithify_sstable::{BlockCache, Error, SstBuilder, SstOptions, SstReader};
use lithify_vfs::{FaultFs, FaultRule, FileSystem, MemFs, OpKind};

use common::scan_forward;

fn entries() -> Vec<(Vec<u8>, Vec<u8>)> {
    // About 700 KB: the builder hands the file several chunks.
    (0..6000u32)
        .map(|i| (format!("k{i:06}").into_bytes(), vec![(i % 251) as u8; 110]))
        .collect()
}

fn opts() -> SstOptions {
    SstOptions::default().creation_time(Some(7))
}

/// Builds the table at `/d/t.sst`; the first error is returned with what
/// happened to the calls after it.
fn build_on(fs: &dyn FileSystem) -> Result<u64, Error> {
    let file = fs.create(Path::new("/d/t.sst")).expect("create");
    let mut b = SstBuilder::new(file, "/d/t.sst", &opts())?;
    for (k, v) in entries() {
        if let Err(e) = b.add(&k, &v) {
            // The builder is poisoned now.
            let again = b.add(b"zzzzzzz", b"").unwrap_err();
            assert!(matches!(again, Error::Poisoned { .. }), "{again}");
            assert_eq!(again.kind(), ErrorKind::Poisoned);
            return Err(e);
        }
    }
    Ok(b.finish()?.file_size)
}

fn setup() -> FaultFs<MemFs> {
    let fs = FaultFs::new(MemFs::new());
    fs.create_dir_all(Path::new("/d")).unwrap();
    fs.sync_dir(Path::new("/")).unwrap();
    fs.reset_counts();
    fs
}

#[test]
fn a_failed_write_or_sync_at_every_step_is_an_error() {
    let fs = setup();
    let size = build_on(&fs).unwrap();
    let counts = fs.counts();
    assert!(counts.writes >= 3, "only {} writes", counts.writes);
    assert_eq!(counts.syncs, 1, "finish fsyncs the file once");
    assert_eq!(counts.bytes_written, size);

    for n in 1..=counts.writes {
        let fs = setup();
        fs.add_rule(FaultRule::fail_nth(OpKind::Write, n).on_paths_containing(".sst"));
        let err = build_on(&fs).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Io, "write {n}: {err}");
        assert!(err.to_string().contains("/d/t.sst"), "{err}");
    }
    let fs = setup();
    fs.add_rule(FaultRule::fail_nth(OpKind::Sync, 1));
    let err = build_on(&fs).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io, "{err}");

    // A full device is reported as such.
    let fs = setup();
    fs.add_rule(FaultRule::no_space_after(size / 2));
    let err = build_on(&fs).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NoSpace, "{err}");

    // A torn write is an error too.
    let fs = setup();
    fs.add_rule(FaultRule::short_write_nth(2));
    assert!(build_on(&fs).is_err());
}

#[test]
fn a_failed_read_is_an_io_error_and_a_retry_succeeds() {
    let fs = setup();
    let size = build_on(&fs).unwrap();
    let want = entries();
    // Count the reads of opening and one scan.
    fs.reset_counts();
    let table = {
        let file = fs.open(Path::new("/d/t.sst")).unwrap();
        Arc::new(SstReader::open(file, "/d/t.sst", size, &opts(), None).unwrap())
    };
    let open_reads = fs.counts().reads;
    let mut it = table.iter();
    assert_eq!(scan_forward(&mut it).unwrap(), want);
    let total_reads = fs.counts().reads;
    assert!(total_reads > open_reads + 100);

    // Fail each read of opening in turn.
    for n in 1..=open_reads {
        fs.reset_counts();
        fs.clear_rules();
        fs.add_rule(FaultRule::fail_nth(OpKind::Read, n));
        let file = fs.open(Path::new("/d/t.sst")).unwrap();
        let err = SstReader::open(file, "/d/t.sst", size, &opts(), None).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Io, "read {n}: {err}");
    }
    fs.clear_rules();

    // Fail reads during a scan (every 50th data block read): the cursor
    // becomes invalid, reports an I/O error, and repositioning retries.
    for n in (1..=(total_reads - open_reads)).step_by(50) {
        fs.reset_counts();
        fs.add_rule(FaultRule::fail_nth(OpKind::Read, n));
        let mut it = table.iter();
        let mut seen = Vec::new();
        let mut res = it.first();
        while res.is_ok() && it.valid() {
            seen.push(it.key().to_vec());
            res = it.next();
        }
        let err = res.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Io, "{err}");
        assert!(!it.valid());
        let resume = seen.last().map(|k| {
            let mut k = k.clone();
            k.push(0);
            k
        });
        match resume {
            Some(k) => it.seek_ge(&k).unwrap(),
            None => it.first().unwrap(),
        }
        while it.valid() {
            seen.push(it.key().to_vec());
            it.next().unwrap();
        }
        let keys: Vec<Vec<u8>> = want.iter().map(|(k, _)| k.clone()).collect();
        assert_eq!(seen, keys);
        fs.clear_rules();
    }
}

#[test]
fn a_finished_table_survives_power_loss() {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/d")).unwrap();
    fs.sync_dir(Path::new("/")).unwrap();
    let size = build_on(&fs).unwrap();
    // The caller syncs the directory that names the file.
    fs.sync_dir(Path::new("/d")).unwrap();
    fs.crash();
    let file = fs.open(Path::new("/d/t.sst")).unwrap();
    let cache = Arc::new(BlockCache::new(1 << 20));
    let table = Arc::new(SstReader::open(file, "/d/t.sst", size, &opts(), Some(cache)).unwrap());
    let mut it = table.iter();
    assert_eq!(scan_forward(&mut it).unwrap(), entries());
}

#[test]
fn an_unfinished_table_is_never_read_as_valid() {
    // Crash after every chunk handed to the file, before `finish`: the
    // unsynced bytes are lost or torn, and opening fails with corruption.
    for stop_after in [1000usize, 3000, 5999] {
        for torn in [None, Some(stop_after as u64)] {
            let fs = MemFs::new();
            fs.set_torn_tails(torn);
            fs.create_dir_all(Path::new("/d")).unwrap();
            fs.sync_dir(Path::new("/")).unwrap();
            let file = fs.create(Path::new("/d/t.sst")).unwrap();
            fs.sync_dir(Path::new("/d")).unwrap();
            let mut b = SstBuilder::new(file, "/d/t.sst", &opts()).unwrap();
            for (k, v) in entries().into_iter().take(stop_after) {
                b.add(&k, &v).unwrap();
            }
            drop(b);
            fs.crash();
            let size = fs.file_size(Path::new("/d/t.sst")).unwrap();
            let file = fs.open(Path::new("/d/t.sst")).unwrap();
            let err = SstReader::open(file, "/d/t.sst", size, &opts(), None).unwrap_err();
            assert!(err.is_corruption(), "{err}");
        }
    }
}
