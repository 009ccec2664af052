//! Recovers a segment made of arbitrary bytes: `Log::open` re-validates
//! the `.log` (and loads an arbitrary `.index`/`.timeindex` for an older
//! segment). No panic; what survives recovery is a prefix of valid
//! batches, readable end to end, and the log accepts a new append.
#![no_main]

use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use lithify_kafka_log::{Log, LogConfig, ManualClock, OpenOptions, SimpleRecord};
use lithify_vfs::{FileSystem, MemFs, write_file_atomic};

fuzz_target!(|data: &[u8]| {
    let fs = MemFs::new();
    let dir = Path::new("/t-0");
    fs.create_dir_all(dir).unwrap();
    // First byte: split point between an older segment's index bytes and
    // the active segment's log bytes.
    let (index, log) = match data.split_first() {
        Some((&n, rest)) => rest.split_at((n as usize).min(rest.len())),
        None => (&[][..], data),
    };
    write_file_atomic(&fs, &dir.join("00000000000000000000.log"), b"").unwrap();
    write_file_atomic(&fs, &dir.join("00000000000000000000.index"), index).unwrap();
    write_file_atomic(&fs, &dir.join("00000000000000000000.timeindex"), index).unwrap();
    write_file_atomic(
        &fs,
        &dir.join("00000000000000000000.log.swap"),
        &log[..log.len() / 3],
    )
    .unwrap();
    write_file_atomic(&fs, &dir.join("00000000000000000007.log"), log).unwrap();
    let options = OpenOptions::default()
        .recovery_point(Some(0))
        .clock(Arc::new(ManualClock::at_ms(0)));
    let config = LogConfig::from_properties([
        ("index.interval.bytes", "64"),
        ("segment.index.bytes", "4096"),
    ])
    .unwrap();
    let Ok(mut log) = Log::open_with(Arc::new(fs.clone()), dir, config.clone(), options) else {
        return;
    };
    let mut next = log.log_start_offset();
    for seg in log.segments() {
        for batch in seg.batches() {
            let batch = batch.expect("recovered segments hold whole batches");
            batch
                .ensure_valid()
                .expect("recovered batches have valid CRCs");
            assert!(batch.base_offset() >= next);
            next = batch.next_offset();
        }
    }
    let end = log.log_end_offset();
    if end > i64::MAX - 10 {
        return;
    }
    for r in log
        .records_from(log.log_start_offset())
        .expect("the start offset is readable")
    {
        let _ = r;
    }
    if log.append(&[SimpleRecord::new(1, "k", "v")]).is_ok() {
        assert_eq!(log.log_end_offset(), end + 1);
        log.flush().unwrap();
        drop(log);
        let reopened = Log::open(Arc::new(fs), dir, config).expect("a recovered log reopens");
        assert_eq!(reopened.log_end_offset(), end + 1);
    }
});
