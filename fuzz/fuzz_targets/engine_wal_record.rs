//! Decodes arbitrary bytes as an engine WAL record (a write batch or a
//! predecessor note): no panic, no hang, no allocation beyond the input.
//! Then replays arbitrary records through a real recovery: the input is
//! split into WAL record payloads of a well-framed log (so they reach the
//! engine's decoder, not the log's checksums), and the database must open
//! or refuse with an error — never panic — in every recovery mode.
#![no_main]

use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use lithify_engine::WalRecord;
use lithify_engine::{Db, Options, RecoveryMode};
use lithify_vfs::{FileSystem, MemFs};
use lithify_wal::Writer;

fuzz_target!(|data: &[u8]| {
    if let Ok(WalRecord::Batch(b)) = WalRecord::decode(data) {
        for entry in b.iter() {
            if entry.is_err() {
                break;
            }
        }
    }
    if data.len() < 2 {
        return;
    }
    let mode = match data[0] % 4 {
        0 => RecoveryMode::PointInTimeRecovery,
        1 => RecoveryMode::TolerateCorruptedTailRecords,
        2 => RecoveryMode::AbsoluteConsistency,
        _ => RecoveryMode::SkipAnyCorruptedRecords,
    };
    let fs = Arc::new(MemFs::new());
    let options = || Options::default()
        .fs(fs.clone())
        .wal_recovery_mode(mode)
        .max_background_jobs(1)
        .write_buffer_size(64 << 10);
    let Ok(db) = Db::open("/db", options()) else {
        return;
    };
    drop(db);
    // The live WAL of the closed database becomes the fuzzed log.
    let Some(log) = fs
        .list_dir(Path::new("/db"))
        .unwrap()
        .into_iter()
        .find(|n| n.ends_with(".log"))
    else {
        return;
    };
    let number: u64 = log.trim_end_matches(".log").parse().unwrap();
    let path = format!("/db/{log}");
    fs.remove_file(Path::new(&path)).unwrap();
    let mut w = Writer::new(fs.create(Path::new(&path)).unwrap(), &path, number).unwrap();
    // Records separated by 0xfe 0xfe; a leading valid batch header gives the
    // decoder something to chew on beyond the type byte.
    for payload in data[1..].split(|&b| b == 0xfe).filter(|p| !p.is_empty()) {
        w.add_record(payload).unwrap();
    }
    w.sync().unwrap();
    if let Ok(db) = Db::open("/db", options()) {
        for kv in db.iter().take(1000) {
            if kv.is_err() {
                break;
            }
        }
    }
});
