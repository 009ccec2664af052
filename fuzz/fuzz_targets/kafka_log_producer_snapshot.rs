//! Decodes arbitrary bytes as a producer state snapshot (Kafka's
//! `ProducerStateManager` snapshot, version 1, CRC-32C), as they are and
//! with version 1 and a matching CRC written over them (so that the entry
//! decoding is reached): no panic, no allocation beyond the input's size;
//! what decodes re-encodes to a file that decodes to the same entries;
//! what does not is a corruption error naming the file and a byte offset
//! within it.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use lithify_kafka_log::producer_snapshot;

fuzz_target!(|data: &[u8]| {
    check(data);
    if data.len() >= producer_snapshot::HEADER_SIZE {
        let mut fixed = data.to_vec();
        fixed[..2].copy_from_slice(&producer_snapshot::SNAPSHOT_VERSION.to_be_bytes());
        let crc = crc32c(&fixed[6..]);
        fixed[2..6].copy_from_slice(&crc.to_be_bytes());
        check(&fixed);
    }
});

/// CRC-32C (Castagnoli), bit by bit: the fuzz target's own, so that it
/// does not trust the code under test for it.
fn crc32c(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn check(data: &[u8]) {
    let path = Path::new("/d/t-0/00000000000000000100.snapshot");
    match producer_snapshot::decode(path, data) {
        Ok(entries) => {
            assert_eq!(
                producer_snapshot::HEADER_SIZE + entries.len() * producer_snapshot::ENTRY_SIZE,
                data.len()
            );
            let again = producer_snapshot::encode(&entries);
            let back = producer_snapshot::decode(path, &again).expect("our encoding decodes");
            assert_eq!(back, entries);
        }
        Err(e) => {
            assert!(e.is_corruption());
            let (p, offset) = e.file_offset().expect("names the file");
            assert_eq!(p, path);
            assert!(offset as usize <= data.len());
            assert!(e.to_string().contains("snapshot"));
        }
    }
}
