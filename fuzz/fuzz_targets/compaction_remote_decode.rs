//! Decodes arbitrary bytes as a remote compaction job and as a worker's
//! outcome (`lithify_compaction::remote`): no panic; whatever decodes
//! re-encodes to the same bytes, and a flipped byte of it is refused.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lithify_compaction::remote::{RemoteJob, RemoteOutcome};

fuzz_target!(|data: &[u8]| {
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
});
