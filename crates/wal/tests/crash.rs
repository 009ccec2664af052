//! Crashes: a torn tail at every byte position of the unsynced suffix, real
//! `MemFs` power losses with torn tails, and a fault at every I/O step.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::{half_compressible, pattern, read_all, slice_file};
use lithify_base::{Classify, ErrorKind};
use lithify_vfs::{FaultFs, FaultRule, FileSystem, MemFs, OpKind};
use lithify_wal::format::{BLOCK_SIZE, FILE_HEADER_LEN, FRAGMENT_HEADER_LEN};
use lithify_wal::{LogEnd, RecordCompression, RecoveryMode, Writer, WriterOptions};

/// (offset, end, payload) of each record written.
type Placed = Vec<(u64, u64, Vec<u8>)>;

/// Writes `synced` records and syncs, then `unsynced` records and flushes.
/// Returns the file bytes, the synced length and each record's
/// (offset, end, payload).
fn write_two_phases(synced: &[usize], unsynced: &[usize]) -> (Vec<u8>, u64, Placed) {
    let fs = MemFs::new();
    let path = Path::new("/000012.log");
    let mut w = Writer::new(fs.create(path).unwrap(), path, 12).unwrap();
    let mut records = Vec::new();
    let mut add = |w: &mut Writer, n: usize, seed: usize| {
        let p = pattern(n, seed as u64);
        let off = w.add_record(&p).unwrap();
        records.push((off, w.bytes_written(), p));
    };
    for (i, &n) in synced.iter().enumerate() {
        add(&mut w, n, i);
    }
    w.sync().unwrap();
    let synced_len = w.synced_len();
    for (i, &n) in unsynced.iter().enumerate() {
        add(&mut w, n, 1000 + i);
    }
    w.flush().unwrap();
    drop(w);
    (
        lithify_vfs::read_file(&fs, path).unwrap(),
        synced_len,
        records,
    )
}

#[test]
fn torn_tail_at_every_byte_of_the_unsynced_suffix() {
    // The synced part ends inside block 0; the unsynced suffix holds small
    // records, one that crosses into block 1 and one that leaves a trailer
    // to pad, an empty record and a record spanning into block 2.
    let synced = [100, 20_000, 0];
    let unsynced = [
        30,
        BLOCK_SIZE - FILE_HEADER_LEN - 20_100 - 5 * FRAGMENT_HEADER_LEN - 30 - 4,
        0,
        5_000,
        33_000,
        7,
    ];
    let (data, synced_len, records) = write_two_phases(&synced, &unsynced);
    assert!(data.len() > 2 * BLOCK_SIZE);
    let data = Arc::new(data);
    let mut torn = 0;
    for cut in synced_len as usize..=data.len() {
        let complete: Vec<_> = records.iter().filter(|r| r.1 as usize <= cut).collect();
        let last_end = complete.last().map_or(FILE_HEADER_LEN, |r| r.1 as usize);
        let in_trailer = last_end % BLOCK_SIZE > BLOCK_SIZE - FRAGMENT_HEADER_LEN
            && cut <= last_end.next_multiple_of(BLOCK_SIZE);
        let clean = cut == last_end || (in_trailer && data[last_end..cut].iter().all(|&b| b == 0));

        let out = read_all(
            slice_file(&data, cut),
            12,
            RecoveryMode::PointInTimeRecovery,
        );
        assert!(out.error.is_none(), "cut {cut}: {:?}", out.error);
        // Every synced record, then exactly the complete ones: never a
        // damaged record.
        assert_eq!(out.records.len(), complete.len(), "cut {cut}");
        assert!(out.records.len() >= synced.len());
        for (got, want) in out.records.iter().zip(&complete) {
            assert_eq!(got.0, want.0);
            assert_eq!(got.1, want.2);
        }
        if clean {
            assert_eq!(out.end, Some(LogEnd::Clean), "cut {cut}");
            assert!(out.dropped.is_empty());
        } else {
            torn += 1;
            let next = &records[complete.len()];
            assert!(
                matches!(out.end, Some(LogEnd::TornTail { offset, .. }) if offset == next.0),
                "cut {cut}: {:?}",
                out.end
            );
            assert_eq!(out.dropped.len(), 1);
            assert_eq!(out.dropped[0].offset, next.0);
            assert_eq!(out.dropped[0].end(), cut as u64);
        }

        // The tail-tolerant mode agrees; absolute consistency refuses any
        // torn tail; skip mode returns the same records.
        let tolerate = read_all(
            slice_file(&data, cut),
            12,
            RecoveryMode::TolerateCorruptedTailRecords,
        );
        assert!(tolerate.error.is_none());
        assert_eq!(tolerate.records, out.records);
        let skip = read_all(
            slice_file(&data, cut),
            12,
            RecoveryMode::SkipAnyCorruptedRecords,
        );
        assert_eq!(skip.records, out.records);
        assert_eq!(skip.end, out.end);
        if cut % 7 == 0 || !clean {
            let strict = read_all(
                slice_file(&data, cut),
                12,
                RecoveryMode::AbsoluteConsistency,
            );
            assert_eq!(strict.error.is_some(), !clean, "cut {cut}");
            if let Some(e) = strict.error {
                assert_eq!(e.kind(), ErrorKind::Corruption);
            }
        }
    }
    assert!(torn > 30_000);
}

#[test]
fn memfs_power_loss_keeps_synced_records() {
    for seed in 0..150u64 {
        // Odd seeds write compressible records, LZ4-compressed.
        let compressed = seed % 2 == 1;
        let fs = MemFs::new();
        fs.set_torn_tails(Some(seed));
        let path = Path::new("/000001.log");
        let mut w = Writer::with_options(
            fs.create(path).unwrap(),
            path,
            1,
            WriterOptions::default()
                .buffer_size(1 + (seed as usize * 977) % 9000)
                .bytes_per_sync(0)
                .compression(if compressed {
                    RecordCompression::Lz4
                } else {
                    RecordCompression::None
                })
                .owner(None)
                // Every third seed writes into preallocated space, grown
                // in steps of one to three blocks.
                .preallocate(if seed % 3 == 0 {
                    seed * 1013 % 70_000 + 1
                } else {
                    0
                }),
        )
        .unwrap();
        fs.sync_dir(Path::new("/")).unwrap();
        let mut payloads = Vec::new();
        let mut durable = 0;
        let mut durable_len = 0;
        for i in 0..(seed % 40 + 1) {
            let len = (pattern(1, seed * 100 + i)[0] as usize) * ((i as usize % 5) * 60 + 1);
            payloads.push(if compressed {
                half_compressible(len, seed ^ i)
            } else {
                pattern(len, seed ^ i)
            });
            w.add_record(payloads.last().unwrap()).unwrap();
            if (seed + i) % 6 == 0 {
                w.sync().unwrap();
                durable = payloads.len();
                durable_len = w.synced_len();
            }
        }
        if seed % 5 == 0 {
            // Cut the preallocation off (unsynced: the crash may undo it).
            w.trim().unwrap();
        }
        drop(w);
        fs.crash();
        let out = read_all(fs.open(path).unwrap(), 1, RecoveryMode::PointInTimeRecovery);
        assert!(out.error.is_none());
        assert!(out.records.len() >= durable, "seed {seed}");
        if let Some(zeros) = out.zero_tail {
            assert!(
                zeros >= durable_len,
                "seed {seed}: zeros at {zeros}, synced {durable_len}"
            );
        }
        for (got, want) in out.records.iter().zip(&payloads) {
            assert_eq!(&got.1, want, "seed {seed}");
        }
        assert!(
            matches!(out.end, Some(LogEnd::Clean) | Some(LogEnd::TornTail { .. })),
            "seed {seed}: {:?}, {:?}",
            out.end,
            out.dropped
        );
    }
}

/// Runs a workload on `fs`: returns the records written and how many of them
/// were acknowledged as durable before the first error (if any).
fn workload(fs: &dyn FileSystem) -> (Vec<Vec<u8>>, usize, bool) {
    let path = Path::new("/000002.log");
    let Ok(file) = fs.create(path) else {
        return (Vec::new(), 0, true);
    };
    let Ok(mut w) = Writer::with_options(
        file,
        path,
        2,
        WriterOptions::default()
            .buffer_size(8192)
            .bytes_per_sync(0)
            .compression(RecordCompression::None)
            .owner(None),
    ) else {
        return (Vec::new(), 0, true);
    };
    if fs.sync_dir(Path::new("/")).is_err() {
        return (Vec::new(), 0, true);
    }
    let mut written = Vec::new();
    let mut durable = 0;
    for i in 0..30u64 {
        let p = pattern((i as usize * 2311) % 12_000, i);
        let added = w.add_record(&p);
        if added.is_err() {
            let err = w.add_record(b"after").unwrap_err();
            assert_eq!(err.kind(), ErrorKind::Poisoned);
            assert!(w.is_poisoned());
            return (written, durable, true);
        }
        written.push(p);
        if i % 4 == 3 {
            if w.sync().is_err() {
                let err = w.sync().unwrap_err();
                assert_eq!(err.kind(), ErrorKind::Poisoned);
                return (written, durable, true);
            }
            durable = written.len();
        }
    }
    (written, durable, false)
}

#[test]
fn fault_at_every_step() {
    let counter = FaultFs::new(MemFs::new());
    let (_, _, failed) = workload(&counter);
    assert!(!failed);
    let total = counter.counts().mutations();
    assert!(total > 10);
    for rule in 0..2 {
        for n in 1..=total {
            let mem = MemFs::new();
            mem.set_torn_tails(Some(n));
            let fs = FaultFs::new(mem.clone());
            fs.add_rule(if rule == 0 {
                FaultRule::fail_nth(OpKind::Mutation, n)
            } else {
                FaultRule::short_write_nth(n)
            });
            let (written, durable, failed) = workload(&fs);
            assert!(failed || rule == 1, "fault {n} was not reported");
            mem.crash();
            let path = Path::new("/000002.log");
            if !mem.exists(path) {
                assert_eq!(durable, 0);
                continue;
            }
            let out = read_all(
                mem.open(path).unwrap(),
                2,
                RecoveryMode::PointInTimeRecovery,
            );
            assert!(out.error.is_none());
            assert!(
                out.records.len() >= durable,
                "rule {rule} fault {n}: {} < {durable}",
                out.records.len()
            );
            assert!(out.records.len() <= written.len());
            for (got, want) in out.records.iter().zip(&written) {
                assert_eq!(&got.1, want);
            }
        }
    }
}

#[test]
fn bytes_per_sync_syncs_as_it_goes() {
    let fs = FaultFs::new(MemFs::new());
    let path = Path::new("/000003.log");
    let mut w = Writer::with_options(
        fs.create(path).unwrap(),
        path,
        3,
        WriterOptions::default()
            .buffer_size(1000)
            .bytes_per_sync(10_000)
            .compression(RecordCompression::None)
            .owner(None),
    )
    .unwrap();
    for i in 0..100 {
        w.add_record(&pattern(500, i)).unwrap();
    }
    w.flush().unwrap();
    let syncs = fs.counts().syncs;
    // About 51 KiB written: a sync whenever 10 000 bytes are unsynced after
    // a flush (flushes come every ~1 KiB), never one per record.
    assert!((4..=5).contains(&syncs), "{syncs} syncs");
    assert!(w.flushed_len() - w.synced_len() < 10_000);
    assert_eq!(w.flushed_len(), w.bytes_written());
}

/// Preallocation is best effort: a file system that cannot size the file
/// gets plain writes, and every record reads back.
#[test]
fn a_file_that_cannot_be_sized_is_written_all_the_same() {
    let fs = FaultFs::new(MemFs::new());
    let path = Path::new("/000003.log");
    let file = fs.create(path).unwrap();
    // The first write is the `set_len` that sizes the file.
    fs.add_rule(FaultRule::fail_nth(OpKind::Write, 1));
    let mut w = Writer::with_options(
        file,
        path,
        3,
        WriterOptions::default().owner(None).preallocate(1 << 20),
    )
    .unwrap();
    for i in 0..20 {
        w.add_record(&pattern(500, i)).unwrap();
    }
    w.sync().unwrap();
    assert!(!w.is_poisoned());
    assert_eq!(fs.file_size(path).unwrap(), w.bytes_written());
    let out = read_all(fs.open(path).unwrap(), 3, RecoveryMode::AbsoluteConsistency);
    assert!(out.error.is_none(), "{:?}", out.error);
    assert_eq!(out.records.len(), 20);
}
