//! A batch's damage as the format reports it: which error, naming what.

use lithify_kafka_format::Error;
use lithify_kafka_format::record::{BatchBuilder, RecordBatch};

#[test]
fn an_unknown_codec_is_an_error_naming_it() {
    let mut b = BatchBuilder::new(0);
    b.append(0, 1, Some(b"k"), Some(b"v"), &[]).unwrap();
    let mut raw = b.build().to_vec();
    raw[22] |= 0x06; // codec id 6
    let crc = lithify_kafka_format::record::compute_crc(&raw);
    raw[17..21].copy_from_slice(&crc.to_be_bytes());
    let batch = RecordBatch::parse(raw.into()).unwrap();
    let err = batch.records().unwrap_err();
    assert!(matches!(err, Error::UnknownCodec { id: 6, .. }));
    assert!(err.to_string().contains("codec id 6"), "{err}");
    assert!(batch.ensure_valid().is_err());
}
