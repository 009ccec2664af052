//! Records inside a batch (Kafka's `DefaultRecord`).
//!
//! ```text
//! length          varint   bytes of everything below
//! attributes      int8     unused, 0 when we write
//! timestampDelta  varlong  timestamp - batch baseTimestamp (may be negative)
//! offsetDelta     varint   offset - batch baseOffset
//! keyLength       varint   -1 (any negative, as Kafka reads it) = null key
//! key             bytes
//! valueLength     varint   -1 = null value = tombstone
//! value           bytes
//! headerCount     varint   must not be negative
//!   headerKeyLength   varint, must not be negative; headerKey bytes (UTF-8)
//!   headerValueLength varint, -1 = null;           headerValue bytes
//! ```

use bytes::Bytes;

use crate::coding::{DecodeError, Reader, put_varint, put_varlong, varint_len, varlong_len};

/// A record header: a key (UTF-8 text in Kafka, kept here as raw bytes so
/// that re-encoding is exact) and an optional value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Header {
    /// The header key.
    pub key: Bytes,
    /// The header value; `None` is Kafka's null.
    pub value: Option<Bytes>,
}

impl Header {
    /// A header from a text key and an optional value.
    pub fn new(key: impl Into<Bytes>, value: Option<Bytes>) -> Self {
        Header {
            key: key.into(),
            value,
        }
    }

    /// The key as text, if it is valid UTF-8.
    pub fn key_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.key).ok()
    }
}

/// A record to append: its offset is assigned by the log (Kafka's
/// `SimpleRecord`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct SimpleRecord {
    /// Create time in milliseconds since the epoch.
    pub timestamp: i64,
    /// The key; a compacted log requires one.
    pub key: Option<Bytes>,
    /// The value; `None` is a tombstone.
    pub value: Option<Bytes>,
    /// Headers, in order.
    pub headers: Vec<Header>,
}

impl SimpleRecord {
    /// A keyed record with a value.
    pub fn new(timestamp: i64, key: impl Into<Bytes>, value: impl Into<Bytes>) -> Self {
        SimpleRecord {
            timestamp,
            key: Some(key.into()),
            value: Some(value.into()),
            headers: Vec::new(),
        }
    }

    /// A tombstone: a key with a null value.
    pub fn tombstone(timestamp: i64, key: impl Into<Bytes>) -> Self {
        SimpleRecord {
            timestamp,
            key: Some(key.into()),
            value: None,
            headers: Vec::new(),
        }
    }

    /// This record with one more header.
    pub fn with_header(mut self, key: impl Into<Bytes>, value: Option<Bytes>) -> Self {
        self.headers.push(Header::new(key, value));
        self
    }
}

/// A record read from a batch, with its absolute offset and timestamp.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Record {
    /// Absolute offset: batch base offset + offset delta.
    pub offset: i64,
    /// Absolute timestamp: batch base timestamp + delta, or the batch's max
    /// timestamp for a LogAppendTime batch.
    pub timestamp: i64,
    /// The record's attribute byte (unused by Kafka; kept for exactness).
    pub attributes: i8,
    /// The key, `None` for a null key.
    pub key: Option<Bytes>,
    /// The value, `None` for a tombstone.
    pub value: Option<Bytes>,
    /// Headers, in order.
    pub headers: Vec<Header>,
}

impl Record {
    /// Whether this record is a tombstone (null value).
    pub fn is_tombstone(&self) -> bool {
        self.value.is_none()
    }
}

/// Smallest encoded record: a 1-byte length and six 1-byte fields.
pub(crate) const MIN_RECORD_BYTES: usize = 7;

/// How a batch maps record deltas to absolute values.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecordBase {
    pub base_offset: i64,
    pub base_timestamp: i64,
    /// `Some(max_timestamp)` for a LogAppendTime batch.
    pub log_append_time: Option<i64>,
}

/// Decodes exactly `count` records filling all of `buf` (the uncompressed
/// records section). Keys, values and headers are slices of `buf`.
pub(crate) fn decode_records(
    buf: &Bytes,
    count: usize,
    base: RecordBase,
) -> Result<Vec<Record>, DecodeError> {
    let mut r = Reader::new(buf);
    if count > buf.len() / MIN_RECORD_BYTES {
        return Err(r.error(format!(
            "a records count of {count} cannot fit in {} bytes of records",
            buf.len()
        )));
    }
    let mut records = Vec::with_capacity(count);
    for i in 0..count {
        records.push(decode_record(buf, &mut r, base).map_err(|e| DecodeError {
            pos: e.pos,
            message: format!("record {i}: {}", e.message),
        })?);
    }
    if !r.is_empty() {
        return Err(r.error(format!(
            "{} bytes remain after the {count} records the batch declares",
            r.remaining()
        )));
    }
    Ok(records)
}

fn nullable(
    buf: &Bytes,
    r: &mut Reader<'_>,
    len: i32,
    what: &str,
) -> Result<Option<Bytes>, DecodeError> {
    if len < 0 {
        return Ok(None);
    }
    let start = r.position();
    r.bytes(len as usize, what)?;
    Ok(Some(buf.slice(start..r.position())))
}

fn decode_record(buf: &Bytes, r: &mut Reader<'_>, base: RecordBase) -> Result<Record, DecodeError> {
    let at = r.position();
    let len = r.varint()?;
    if len < 0 || len as usize > r.remaining() {
        return Err(DecodeError {
            pos: at,
            message: format!(
                "record length {len} does not fit in the {} bytes left",
                r.remaining()
            ),
        });
    }
    let body_start = r.position();
    let attributes = r.i8()?;
    let timestamp_delta = r.varlong()?;
    let offset_delta = r.varint()?;
    let key_len = r.varint()?;
    let key = nullable(buf, r, key_len, "the key")?;
    let value_len = r.varint()?;
    let value = nullable(buf, r, value_len, "the value")?;
    let at = r.position();
    let header_count = r.varint()?;
    if header_count < 0 {
        return Err(DecodeError {
            pos: at,
            message: format!("invalid negative header count {header_count}"),
        });
    }
    let header_count = header_count as usize;
    if header_count > (len as usize).saturating_sub(r.position() - body_start) / 2 {
        return Err(r.error(format!(
            "{header_count} headers cannot fit in the rest of the record"
        )));
    }
    let mut headers = Vec::with_capacity(header_count);
    for _ in 0..header_count {
        let at = r.position();
        let key_len = r.varint()?;
        if key_len < 0 {
            return Err(DecodeError {
                pos: at,
                message: format!("invalid negative header key size {key_len}"),
            });
        }
        let key = nullable(buf, r, key_len, "a header key")?.unwrap_or_default();
        let value_len = r.varint()?;
        let value = nullable(buf, r, value_len, "a header value")?;
        headers.push(Header { key, value });
    }
    let read = r.position() - body_start;
    if read != len as usize {
        return Err(r.error(format!(
            "invalid record size: the record declares {len} bytes but its fields take {read}"
        )));
    }
    let timestamp = match base.log_append_time {
        Some(t) => t,
        None => base.base_timestamp.wrapping_add(timestamp_delta),
    };
    Ok(Record {
        offset: base.base_offset.wrapping_add(i64::from(offset_delta)),
        timestamp,
        attributes,
        key,
        value,
        headers,
    })
}

fn nullable_len(b: Option<&[u8]>) -> usize {
    match b {
        None => varint_len(-1),
        Some(b) => varint_len(b.len() as i32) + b.len(),
    }
}

fn put_nullable(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        None => put_varint(out, -1),
        Some(b) => {
            put_varint(out, b.len() as i32);
            out.extend_from_slice(b);
        }
    }
}

/// Appends one encoded record (attributes 0) to `out`.
pub(crate) fn encode_record(
    out: &mut Vec<u8>,
    offset_delta: i32,
    timestamp_delta: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[Header],
) {
    let mut body = 1 + varlong_len(timestamp_delta) + varint_len(offset_delta);
    body += nullable_len(key) + nullable_len(value) + varint_len(headers.len() as i32);
    for h in headers {
        body += varint_len(h.key.len() as i32) + h.key.len() + nullable_len(h.value.as_deref());
    }
    out.reserve(body + 5);
    put_varint(out, body as i32);
    out.push(0);
    put_varlong(out, timestamp_delta);
    put_varint(out, offset_delta);
    put_nullable(out, key);
    put_nullable(out, value);
    put_varint(out, headers.len() as i32);
    for h in headers {
        put_nullable(out, Some(&h.key));
        put_nullable(out, h.value.as_deref());
    }
}

/// Appends one encoded record (attributes 0) whose header section is
/// already encoded (`headers_raw`: the count varint and every header).
pub(crate) fn encode_record_raw(
    out: &mut Vec<u8>,
    offset_delta: i32,
    timestamp_delta: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers_raw: &[u8],
) {
    let body = 1
        + varlong_len(timestamp_delta)
        + varint_len(offset_delta)
        + nullable_len(key)
        + nullable_len(value)
        + headers_raw.len();
    out.reserve(body + 5);
    put_varint(out, body as i32);
    out.push(0);
    put_varlong(out, timestamp_delta);
    put_varint(out, offset_delta);
    put_nullable(out, key);
    put_nullable(out, value);
    out.extend_from_slice(headers_raw);
}
