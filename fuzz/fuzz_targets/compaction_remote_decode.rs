//! Decodes arbitrary bytes as a remote compaction job and as a worker's
//! outcome (`lithify_compaction::remote`), as they are and as the body of
//! a valid frame (magic, version, checksum: so that the fuzzer reaches
//! the fields): no panic; whatever decodes re-encodes to the same bytes,
//! and a flipped byte of it is refused.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lithify_compaction::remote::{RemoteJob, RemoteOutcome};

/// `body` framed as the encoders frame it.
fn framed(magic: &[u8; 4], body: &[u8]) -> Vec<u8> {
    let mut out = magic.to_vec();
    out.push(1);
    out.extend_from_slice(body);
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

fuzz_target!(|data: &[u8]| {
    check(data);
    check(&framed(b"LTCJ", data));
    check(&framed(b"LTCR", data));
});

fn check(data: &[u8]) {
    if let Ok(job) = RemoteJob::decode(data) {
        let bytes = job.encode();
        assert_eq!(&bytes[..], data, "a job has one encoding");
        let mut flipped = bytes.clone();
        let i = job.id as usize % flipped.len();
        flipped[i] ^= 0x01;
        assert!(RemoteJob::decode(&flipped).is_err(), "flip at {i} accepted");
    }
    if let Ok(outcome) = RemoteOutcome::decode(data) {
        let bytes = outcome.encode();
        assert_eq!(&bytes[..], data, "an outcome has one encoding");
        let mut flipped = bytes.clone();
        let i = outcome.id() as usize % flipped.len();
        flipped[i] ^= 0x01;
        assert!(RemoteOutcome::decode(&flipped).is_err(), "flip at {i} accepted");
    }
}
