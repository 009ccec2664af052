//! Decodes arbitrary bytes as a segment's `.txnindex` (Kafka's 34-byte
//! `AbortedTxn` entries) at a base offset taken from the first bytes: no
//! panic; what decodes holds whole, valid, ordered entries and re-encodes
//! to the same bytes; what does not is a corruption error naming the file
//! and an entry's byte offset within it.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use lithify_kafka_log::txn_index::{self, ABORTED_TXN_SIZE};

fuzz_target!(|data: &[u8]| {
    let (base, file) = match data.split_first_chunk::<8>() {
        Some((b, rest)) => (i64::from_be_bytes(*b) & 0xffff_ffff, rest),
        None => (0, data),
    };
    let path = Path::new("/d/t-0/00000000000000000000.txnindex");
    match txn_index::decode(path, base, file) {
        Ok(entries) => {
            assert_eq!(entries.len() * ABORTED_TXN_SIZE, file.len());
            assert_eq!(txn_index::encode(&entries), file);
            for w in entries.windows(2) {
                assert!(w[0].last_offset < w[1].last_offset);
            }
            for t in &entries {
                assert!(t.first_offset <= t.last_offset && t.last_offset >= base);
            }
        }
        Err(e) => {
            assert!(e.is_corruption());
            let (p, offset) = e.file_offset().expect("names the file");
            assert_eq!(p, path);
            assert!(offset as usize <= file.len());
            assert!(e.to_string().contains("txnindex"));
        }
    }
});
