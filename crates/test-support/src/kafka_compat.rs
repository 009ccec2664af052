//! What the kafka-python check (`kafka-log/tests/kafka_compat/check.py`)
//! compares a batch with: its fields and records as JSON. Shared by the
//! log's and the cleaner's `kafka_compat` tests.

use std::fmt::Write as _;

use lithify_kafka_log::record::RecordBatch;

/// The environment variable naming the directory where `cargo xtask
/// kafka-compat` wants the files.
pub const ENV: &str = "LITHIFY_KAFKA_COMPAT_DIR";

/// `b` as lowercase hex.
pub fn hex(b: &[u8]) -> String {
    b.iter().fold(String::new(), |mut s, x| {
        let _ = write!(s, "{x:02x}");
        s
    })
}

/// `b` as a JSON string of hex, or `null`.
pub fn json_bytes(b: Option<&[u8]>) -> String {
    b.map_or("null".to_string(), |b| format!("\"{}\"", hex(b)))
}

/// The batch's header fields and records as one JSON object.
pub fn batch_json(b: &RecordBatch) -> String {
    let records: Vec<String> = b
        .records()
        .unwrap()
        .iter()
        .map(|r| {
            let headers: Vec<String> = r
                .headers
                .iter()
                .map(|h| {
                    format!(
                        "[\"{}\", {}]",
                        h.key_str().unwrap(),
                        json_bytes(h.value.as_deref())
                    )
                })
                .collect();
            format!(
                "[{}, {}, {}, {}, [{}]]",
                r.offset,
                r.timestamp,
                json_bytes(r.key.as_deref()),
                json_bytes(r.value.as_deref()),
                headers.join(", ")
            )
        })
        .collect();
    format!(
        "{{\"base_offset\": {}, \"last_offset\": {}, \"attributes\": {}, \"first_timestamp\": {}, \"max_timestamp\": {}, \"producer_id\": {}, \"producer_epoch\": {}, \"base_sequence\": {}, \"crc\": {}, \"records\": [{}]}}",
        b.base_offset(),
        b.last_offset(),
        b.attributes(),
        b.base_timestamp(),
        b.max_timestamp(),
        b.producer_id(),
        b.producer_epoch(),
        b.base_sequence(),
        b.checksum(),
        records.join(", ")
    )
}
