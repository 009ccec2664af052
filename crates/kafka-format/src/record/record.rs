//! Records inside a batch (Kafka's `DefaultRecord`): the types, and the
//! encoder (the one decoder is [`RecordViews`](crate::record::RecordViews)).
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

use crate::coding::{put_varint, put_varlong, varint_len, varlong_len};

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

/// The header section of a record to encode.
#[derive(Debug, Clone, Copy)]
pub(crate) enum HeaderSection<'a> {
    /// Headers to encode.
    Headers(&'a [Header]),
    /// A section already encoded (the count varint and every header), as
    /// a [`RecordView`](crate::record::RecordView) keeps it.
    Raw(&'a [u8]),
}

impl HeaderSection<'_> {
    fn encoded_len(self) -> usize {
        match self {
            HeaderSection::Raw(raw) => raw.len(),
            HeaderSection::Headers(headers) => {
                varint_len(headers.len() as i32)
                    + headers
                        .iter()
                        .map(|h| {
                            varint_len(h.key.len() as i32)
                                + h.key.len()
                                + nullable_len(h.value.as_deref())
                        })
                        .sum::<usize>()
            }
        }
    }

    fn put(self, out: &mut Vec<u8>) {
        match self {
            HeaderSection::Raw(raw) => out.extend_from_slice(raw),
            HeaderSection::Headers(headers) => {
                put_varint(out, headers.len() as i32);
                for h in headers {
                    put_nullable(out, Some(&h.key));
                    put_nullable(out, h.value.as_deref());
                }
            }
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
    headers: HeaderSection<'_>,
) {
    let body = 1
        + varlong_len(timestamp_delta)
        + varint_len(offset_delta)
        + nullable_len(key)
        + nullable_len(value)
        + headers.encoded_len();
    out.reserve(body + 5);
    put_varint(out, body as i32);
    out.push(0);
    put_varlong(out, timestamp_delta);
    put_varint(out, offset_delta);
    put_nullable(out, key);
    put_nullable(out, value);
    headers.put(out);
}
