//! Decodes arbitrary bytes as a CURRENT object and as a MANIFEST part of a
//! database in a bucket (`lithify_bucket::format`): no panic; whatever
//! decodes re-encodes to the same bytes, and a flipped byte of it is
//! refused.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lithify_bucket::format::{CurrentObject, ManifestPart};

fuzz_target!(|data: &[u8]| {
    if let Ok(current) = CurrentObject::decode("CURRENT/1", data) {
        let bytes = current.encode();
        assert_eq!(&bytes[..], data, "a CURRENT object has one encoding");
        let mut flipped = bytes.to_vec();
        let i = data.len() % flipped.len();
        flipped[i] ^= 0x01;
        assert!(CurrentObject::decode("CURRENT/1", &flipped).is_err(), "flip at {i} accepted");
    }
    let bytes = bytes::Bytes::copy_from_slice(data);
    if let Ok(part) = ManifestPart::decode("MANIFEST-000001", "MANIFEST-000001/0", 0, &bytes) {
        let again = ManifestPart::encode(part.epoch, &part.payload);
        assert_eq!(again, bytes, "a MANIFEST part has one encoding");
        let mut flipped = again.to_vec();
        let i = (part.epoch as usize) % flipped.len();
        flipped[i] ^= 0x01;
        assert!(
            ManifestPart::decode("MANIFEST-000001", "k", 0, &flipped.into()).is_err(),
            "flip at {i} accepted"
        );
    }
});
