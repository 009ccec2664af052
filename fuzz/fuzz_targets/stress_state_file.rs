//! Decodes arbitrary bytes as a stress run's expected-state file: no
//! panic and no allocation beyond the slots the bytes hold; what decodes
//! re-encodes to a file that decodes the same, with the same slot bytes;
//! what does not names a byte offset within the file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lithify_stress::state_file::{HEADER_LEN, SLOT_LEN, decode_file, encode_file};

fuzz_target!(|data: &[u8]| {
    match decode_file(data) {
        Ok((header, slots)) => {
            assert_eq!(slots.len() as u64, header.slots);
            let encoded = encode_file(&header, &slots);
            assert_eq!(encoded.len(), HEADER_LEN + slots.len() * SLOT_LEN);
            // The slots are byte for byte what was read (the header's
            // reserved bytes are not kept).
            assert_eq!(encoded[HEADER_LEN..], data[HEADER_LEN..encoded.len()]);
            assert_eq!(decode_file(&encoded).expect("re-encoded"), (header, slots));
        }
        Err(e) => {
            assert!(e.offset <= data.len() as u64, "{e}");
            assert!(!e.message.is_empty());
        }
    }
});
