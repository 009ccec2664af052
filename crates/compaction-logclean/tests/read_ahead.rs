//! The read-ahead thread changes where batches are read, checked and
//! decompressed, never what a round decides: the same logs cleaned with
//! `lithify.cleaner.read.ahead` on and off end byte for byte the same,
//! round after round, with the same counts.

mod common;

use std::sync::Arc;

use common::*;
use lithify_base::sync::Mutex;
use lithify_compaction_logclean::{Cleaner, CleanerConfig, CleanerStats, LogToClean, Throttler};
use lithify_kafka_log::Log;
use lithify_kafka_log::codec::Compression;
use lithify_kafka_log::record::{BatchBuilder, RecordBatch};
use lithify_vfs::MemFs;

/// `delete.retention.ms` of the logs.
const RETENTION: i64 = 5_000;

/// A log of `seed`'s batches: every codec, overwrites of 40 keys,
/// tombstones, and batches entirely overwritten later or
/// entirely kept (runs of fresh keys).
fn build(seed: u64) -> Log {
    let fs = Arc::new(MemFs::new());
    let config = compact(&[
        ("segment.bytes", "6000"),
        ("delete.retention.ms", &RETENTION.to_string()),
    ]);
    let mut log = open(fs, "/k/t-0", config, 0);
    let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move |n: u64| {
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        (rng.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) % n
    };
    let mut ts = 0;
    let mut fresh = 1_000;
    for b in 0..120 {
        let codec = Compression::ALL[b % Compression::ALL.len()];
        let base = log.log_end_offset();
        let mut builder = BatchBuilder::new(base).compression(codec);
        let count = 1 + next(8) as i64;
        let all_fresh = next(4) == 0;
        for i in 0..count {
            ts += 1;
            let key = if all_fresh {
                fresh += 1;
                format!("fresh-{fresh}")
            } else {
                format!("key-{}", next(40))
            };
            let value = (next(6) != 0).then(|| format!("value-{ts}"));
            builder
                .append(
                    base + i,
                    ts,
                    Some(key.as_bytes()),
                    value.as_deref().map(str::as_bytes),
                    &[],
                )
                .unwrap();
        }
        log.append_batch(RecordBatch::parse(builder.build()).unwrap())
            .unwrap();
    }
    log.roll().unwrap();
    log
}

fn cleaner(memory: usize, read_ahead: bool) -> Cleaner {
    let config = CleanerConfig::from_properties([
        (
            "log.cleaner.dedupe.buffer.size",
            memory.to_string().as_str(),
        ),
        ("log.cleaner.io.buffer.load.factor", "0.75"),
        (
            "lithify.cleaner.read.ahead",
            if read_ahead { "true" } else { "false" },
        ),
    ])
    .unwrap();
    let throttler = Arc::new(Throttler::new(
        f64::MAX,
        Arc::new(lithify_kafka_log::SystemClock),
    ));
    Cleaner::new(0, &config, throttler).unwrap()
}

/// The counts of a round, without its times.
fn counts(s: &CleanerStats) -> [u64; 13] {
    [
        s.bytes_read,
        s.bytes_written,
        s.map_bytes_read,
        s.map_messages_read,
        s.messages_read,
        s.messages_written,
        s.invalid_messages_read,
        s.tombstones_dropped,
        s.delete_horizons_set,
        s.batches_copied,
        s.batches_rewritten,
        s.batches_dropped,
        s.empty_headers,
    ]
}

#[test]
fn rounds_with_and_without_read_ahead_write_the_same_bytes() {
    for seed in 0..8u64 {
        // A small map makes partial rounds; a large one whole rounds.
        let memory = if seed % 2 == 0 { 1_200 } else { 1 << 20 };
        let logs = [Mutex::new(build(seed)), Mutex::new(build(seed))];
        let mut cleaners = [cleaner(memory, true), cleaner(memory, false)];
        assert_eq!(batches(&logs[0].lock()), batches(&logs[1].lock()));
        let mut dirty = 0;
        let mut now = 1_000;
        for round in 0..6 {
            let mut outcomes = Vec::new();
            for (log, c) in logs.iter().zip(&mut cleaners) {
                let ltc = LogToClean::from_log(&log.lock(), Some(dirty), now).unwrap();
                outcomes.push(c.clean(log, &ltc, now, &|| Ok(())).unwrap());
            }
            let what = format!("seed {seed} round {round}");
            assert_eq!(
                counts(&outcomes[0].report.stats),
                counts(&outcomes[1].report.stats),
                "{what}"
            );
            assert_eq!(
                outcomes[0].report.end_offset, outcomes[1].report.end_offset,
                "{what}"
            );
            assert_eq!(outcomes[0].clean_section, outcomes[1].clean_section);
            assert_eq!(batches(&logs[0].lock()), batches(&logs[1].lock()), "{what}");
            dirty = outcomes[0].report.end_offset;
            now += RETENTION / 2;
        }
    }
}

/// A batch whose CRC holds but whose compressed records do not decompress
/// (written so by a faulty producer or tool): with read-ahead on and off
/// the round fails with the same error, naming the file and byte offset,
/// whichever thread met it.
#[test]
fn a_batch_that_does_not_decompress_fails_the_round_the_same_either_way() {
    use lithify_kafka_log::record::compute_crc;
    use lithify_kafka_log::record::layout::{ATTRIBUTES_OFFSET, CRC_OFFSET, RECORD_BATCH_OVERHEAD};
    use lithify_vfs::{FileSystem, read_file, write_file_atomic};

    for codec in Compression::ALL
        .into_iter()
        .filter(|c| *c != Compression::None)
    {
        let mut outcomes = Vec::new();
        let mut victim_at = 0;
        for read_ahead in [true, false] {
            let fs = Arc::new(MemFs::new());
            let config = compact(&[("segment.bytes", "1000000")]);
            let mut log = open(fs.clone(), "/k/t-0", config.clone(), 0);
            for b in 0..40i64 {
                let mut builder = BatchBuilder::new(log.log_end_offset()).compression(codec);
                for i in 0..20 {
                    let offset = log.log_end_offset() + i;
                    builder
                        .append(
                            offset,
                            b * 20 + i,
                            Some(format!("key-{}", i % 7).as_bytes()),
                            Some(&[b as u8; 64][..]),
                            &[],
                        )
                        .unwrap();
                }
                log.append_batch(RecordBatch::parse(builder.build()).unwrap())
                    .unwrap();
            }
            log.roll().unwrap();
            let victim = batches(&log)[25].clone();
            let at = victim.position() as usize;
            victim_at = at as u64;
            let size = victim.size_in_bytes();
            let path = victim.path().unwrap().to_path_buf();
            drop(log);
            // Garble the start of the compressed records (each codec's
            // frame header), then make the CRC agree.
            let mut bytes = read_file(&*fs, &path).unwrap();
            let records = at + RECORD_BATCH_OVERHEAD;
            for b in &mut bytes[records..records + 8] {
                *b ^= 0x5a;
            }
            let crc = compute_crc(&bytes[at..at + size]);
            bytes[at + CRC_OFFSET..at + ATTRIBUTES_OFFSET].copy_from_slice(&crc.to_be_bytes());
            write_file_atomic(&*fs, &path, &bytes).unwrap();
            assert!(fs.exists(&path));
            let log = Mutex::new(open(fs.clone(), "/k/t-0", config, 0));
            let mut c = cleaner(1 << 20, read_ahead);
            let ltc = LogToClean::from_log(&log.lock(), Some(0), 1_000).unwrap();
            let outcome = c.clean(&log, &ltc, 1_000, &|| Ok(()));
            outcomes.push(outcome.map(|o| o.report.end_offset).map_err(|e| {
                let place = e.file_offset().map(|(p, o)| (p.to_path_buf(), o));
                (e.to_string(), place)
            }));
        }
        let what = format!("{codec:?}");
        assert_eq!(outcomes[0], outcomes[1], "{what}");
        let (message, place) = outcomes[0].clone().expect_err(&what);
        let (file, offset) = place.unwrap_or_else(|| panic!("{what}: {message} names no place"));
        assert!(
            file.ends_with("00000000000000000000.log"),
            "{what}: {message}"
        );
        assert_eq!(offset, victim_at, "{what}: {message}");
    }
}
