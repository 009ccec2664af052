//! Decodes arbitrary bytes as varints, fixed-width integers and internal
//! keys: no panic, and whatever decodes re-encodes to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lithify_base::coding::{Decoder, put_varint32, put_varint64};
use lithify_base::{InternalKey, ParsedInternalKey};

fuzz_target!(|data: &[u8]| {
    // A stream of tagged values: the first byte of each picks the decoder.
    let mut d = Decoder::new(data);
    while let Ok(tag) = d.u8() {
        let start = d.position();
        let ok = match tag % 5 {
            0 => d.varint32().map(|v| {
                let mut buf = Vec::new();
                put_varint32(&mut buf, v);
                assert_eq!(&data[start..d.position()], &buf[..]);
            }),
            1 => d.varint64().map(|v| {
                let mut buf = Vec::new();
                put_varint64(&mut buf, v);
                assert_eq!(&data[start..d.position()], &buf[..]);
            }),
            2 => d.fixed32().map(drop),
            3 => d.fixed64().map(drop),
            _ => d.length_prefixed().map(|key| {
                if let Ok(parsed) = ParsedInternalKey::parse(key) {
                    let mut buf = Vec::new();
                    parsed.encode_into(&mut buf);
                    assert_eq!(buf, key);
                    let text = parsed.to_string();
                    let back = InternalKey::from_text(&text).expect("text form parses back");
                    assert_eq!(back.encoded(), key);
                }
            }),
        };
        if let Err(e) = ok {
            assert!(e.position() >= start && e.position() <= data.len());
            break;
        }
    }
});
