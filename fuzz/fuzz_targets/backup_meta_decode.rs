//! Decodes arbitrary bytes as a backup's metadata file (`meta/<id>`): no
//! panic; whatever decodes re-encodes to bytes that decode the same, names
//! no path outside the backup directory, and a flipped byte of a valid
//! file is refused.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use lithify_backup::meta::Meta;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("meta/1");
    if let Ok(meta) = Meta::decode(data, path) {
        let bytes = meta.encode();
        assert_eq!(Meta::decode(&bytes, path).expect("re-encoded metadata"), meta);
        for f in &meta.files {
            assert!(!f.stored.starts_with('/') && !f.stored.contains(".."));
        }
        if !bytes.is_empty() {
            let mut flipped = bytes.clone();
            let i = data.len() % flipped.len();
            flipped[i] ^= 0x01;
            assert!(Meta::decode(&flipped, path).is_err(), "flip at {i} accepted");
        }
    }
});
