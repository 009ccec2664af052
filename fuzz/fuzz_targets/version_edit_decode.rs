//! Decodes arbitrary bytes as a `VersionEdit` and as an edit group: no
//! panic, and whatever decodes re-encodes to something that decodes the
//! same (and prints).
#![no_main]

use libfuzzer_sys::fuzz_target;
use lithify_version::VersionEdit;
use lithify_version::edit::{decode_group, encode_group};

fuzz_target!(|data: &[u8]| {
    if let Ok(edit) = VersionEdit::decode(data) {
        let again = VersionEdit::decode(&edit.encode()).expect("re-encoded edit decodes");
        assert_eq!(again, edit);
        let _ = edit.to_string();
    }
    if let Ok(edits) = decode_group(data) {
        assert_eq!(decode_group(&encode_group(&edits)).expect("re-encoded group"), edits);
    }
});
