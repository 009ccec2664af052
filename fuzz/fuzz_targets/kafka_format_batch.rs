//! Decodes arbitrary bytes as a Kafka RecordBatch v2: header, CRC check,
//! every codec's decompression (bounded), records and control records. No
//! panic, no unbounded allocation; a batch that decodes re-encodes (codec
//! none) to bytes that decode to the same records.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lithify_kafka_format::codec::{Compression, decompress};
use lithify_kafka_format::record::{BatchBuilder, RecordBatch};

const LIMIT: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    // The raw codecs on their own.
    if let Some((&tag, rest)) = data.split_first() {
        let _ = decompress(Compression::ALL[tag as usize % 5], rest, LIMIT);
    }
    let Ok(batch) = RecordBatch::parse(bytes::Bytes::copy_from_slice(data)) else {
        return;
    };
    let _ = batch.ensure_valid();
    let _ = batch.control_type();
    let Ok(records) = batch.records_with_limit(LIMIT) else {
        return;
    };
    let mut b = BatchBuilder::new(batch.base_offset());
    let mut prev = None;
    for r in &records {
        if prev.is_some_and(|p| r.offset <= p)
            || b.append(
                r.offset,
                r.timestamp,
                r.key.as_deref(),
                r.value.as_deref(),
                &r.headers,
            )
            .is_err()
        {
            return;
        }
        prev = Some(r.offset);
    }
    if batch.timestamp_type() != lithify_kafka_format::record::TimestampType::CreateTime {
        return;
    }
    let again = RecordBatch::parse(b.build()).expect("our own batch parses");
    again.ensure_valid().expect("our own batch has a valid CRC");
    let decoded = again.records().expect("our own batch decodes");
    assert_eq!(decoded.len(), records.len());
    for (x, y) in decoded.iter().zip(&records) {
        assert_eq!(
            (x.offset, x.timestamp, &x.key, &x.value, &x.headers),
            (y.offset, y.timestamp, &y.key, &y.value, &y.headers)
        );
    }
});
