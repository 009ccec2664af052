//! Decodes arbitrary bytes as a Kafka offset checkpoint file (the format of
//! `cleaner-offset-checkpoint` and `recovery-point-offset-checkpoint`): no
//! panic; a file that decodes re-encodes to text that decodes to the same
//! entries.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use lithify_kafka_log::checkpoint;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("/d/cleaner-offset-checkpoint");
    if let Ok(entries) = checkpoint::decode(path, data) {
        let text = checkpoint::encode(&entries);
        let again = checkpoint::decode(path, text.as_bytes()).expect("our encoding decodes");
        assert_eq!(again, entries);
    } else if let Err(e) = checkpoint::decode(path, data) {
        assert!(e.is_corruption());
        assert!(e.to_string().contains("cleaner-offset-checkpoint"));
    }
});
