//! Cleans a log whose first segment is arbitrary bytes (the log's own
//! open only checks structure, so bad CRCs, bad records, odd offsets and
//! codecs reach the cleaner), with a map of a size chosen by the input:
//! no panic, no hang; a round either fails with an error or leaves a log
//! that reopens and reads end to end.
#![no_main]

use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use lithify_base::sync::Mutex;
use lithify_compaction_logclean::{Cleaner, CleanerConfig, LogToClean, Throttler};
use lithify_kafka_log::record::{BatchBuilder, RecordBatch};
use lithify_kafka_log::{Log, LogConfig, ManualClock, OpenOptions};
use lithify_vfs::{FileSystem, MemFs, write_file_atomic};

const ACTIVE: i64 = 1 << 40;

fuzz_target!(|data: &[u8]| {
    let Some((&knobs, segment)) = data.split_first() else {
        return;
    };
    if segment.len() > 1 << 16 {
        return;
    }
    let fs = MemFs::new();
    let dir = Path::new("/d/t-0");
    fs.create_dir_all(dir).unwrap();
    write_file_atomic(&fs, &dir.join("00000000000000000000.log"), segment).unwrap();
    write_file_atomic(&fs, &dir.join("00000000000000000000.index"), b"").unwrap();
    write_file_atomic(&fs, &dir.join("00000000000000000000.timeindex"), b"").unwrap();
    let mut active = BatchBuilder::new(ACTIVE);
    active
        .append(ACTIVE, 5, Some(b"k"), Some(b"v"), &[])
        .unwrap();
    write_file_atomic(
        &fs,
        &dir.join(format!("{ACTIVE:020}.log")),
        &RecordBatch::parse(active.build()).unwrap().raw()[..],
    )
    .unwrap();
    let config = LogConfig::from_properties([
        ("cleanup.policy", "compact"),
        ("segment.index.bytes", "4096"),
        ("segment.bytes", "2048"),
        ("index.interval.bytes", "64"),
        ("delete.retention.ms", "10"),
    ])
    .unwrap();
    let options = || OpenOptions::default()
        .recovery_point(None)
        .clock(Arc::new(ManualClock::at_ms(0)));
    let Ok(log) = Log::open_with(Arc::new(fs.clone()), dir, config.clone(), options()) else {
        return;
    };
    let memory = 48 + 24 * (knobs as usize & 0x3f);
    let cleaner_config = CleanerConfig::from_properties([
        (
            "log.cleaner.dedupe.buffer.size",
            memory.to_string().as_str(),
        ),
        ("log.cleaner.io.buffer.load.factor", "0.75"),
        ("log.cleaner.io.buffer.size", "256"),
    ])
    .unwrap();
    let throttler = Arc::new(Throttler::new(f64::MAX, Arc::new(lithify_kafka_log::SystemClock)));
    let mut cleaner = Cleaner::new(0, &cleaner_config, throttler).unwrap();
    let now = i64::from(knobs >> 6) * 1_000_000;
    let Ok(ltc) = LogToClean::from_log(&log, None, now) else {
        return;
    };
    let log = Mutex::new(log);
    if cleaner.clean(&log, &ltc, now, &|| Ok(())).is_ok() {
        drop(log);
        let log =
            Log::open_with(Arc::new(fs), dir, config, options()).expect("a cleaned log reopens");
        for b in log.batches_from(log.log_start_offset()).expect("readable") {
            let b = b.expect("cleaned segments hold whole batches");
            b.ensure_valid().expect("the cleaner writes valid batches");
        }
    }
});
