//! The one decoder of a batch's records (Kafka's `DefaultRecord.readFrom`),
//! zero-copy: [`RecordViews`] decodes records in place, keys and values
//! are slices of the (decompressed) records buffer, and the encoded header
//! section is kept as bytes.
//!
//! Everything that reads records goes through it: the cleaner looks at
//! every record of every batch it reads (its key for the offset map, its
//! value to spot tombstones) but keeps most records' bytes untouched, and
//! a record that must be re-encoded against a new base timestamp (see
//! [`BatchBuilder::append_view`](crate::record::BatchBuilder::append_view))
//! is rebuilt without decoding its headers; [`RecordBatch::records`] turns
//! each view into an owned [`Record`] whose keys, values and headers share
//! the same buffer.
//!
//! Every length is checked against the bytes that remain, the declared
//! record length must match the fields, and no bytes may follow the
//! declared count. Errors name the batch's file and byte offset.

use std::path::PathBuf;

use bytes::Bytes;

use crate::codec::{Compression, MAX_DECOMPRESSED_BYTES};
use crate::coding::{DecodeError, Reader};
use crate::error::{CorruptSnafu, Error, IN_MEMORY, Result};
use crate::record::RecordBatch;
use crate::record::batch::TimestampType;
use crate::record::layout::{RECORD_BATCH_OVERHEAD, RECORDS_COUNT_OFFSET};
use crate::record::record::{Header, Record};

/// Smallest encoded record: a 1-byte length and six 1-byte fields.
const MIN_RECORD_BYTES: usize = 7;

/// A record header seen through a [`RecordView`]: its key and its value
/// (`None` is Kafka's null), borrowed from the records buffer.
pub type HeaderView<'a> = (&'a [u8], Option<&'a [u8]>);

/// One record of a batch, borrowed from the records buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordView<'a> {
    /// Absolute offset.
    pub offset: i64,
    /// Absolute timestamp (the batch's max timestamp for LogAppendTime).
    pub timestamp: i64,
    /// The record's attribute byte (unused by Kafka; kept for exactness).
    pub attributes: i8,
    /// The key, `None` for a keyless record.
    pub key: Option<&'a [u8]>,
    /// The value, `None` for a tombstone.
    pub value: Option<&'a [u8]>,
    /// The encoded header section: the header count varint and every
    /// header, exactly as stored.
    pub headers_raw: &'a [u8],
}

impl<'a> RecordView<'a> {
    /// Whether this record is a tombstone (null value).
    pub fn is_tombstone(&self) -> bool {
        self.value.is_none()
    }

    /// The headers, `(key, value)` in order, decoded from
    /// [`headers_raw`](Self::headers_raw) on demand (a view handed out by
    /// [`RecordViews`] was checked whole, so this does not fail for one).
    pub fn headers(&self) -> Result<Vec<HeaderView<'a>>, DecodeError> {
        let mut r = Reader::new(self.headers_raw);
        let count = read_header_count(&mut r, self.headers_raw.len())?;
        (0..count).map(|_| read_header(&mut r)).collect()
    }
}

/// Reads the header count; more headers than fit between it and
/// `record_end` cannot be there (each takes at least two bytes).
fn read_header_count(r: &mut Reader<'_>, record_end: usize) -> Result<usize, DecodeError> {
    let at = r.position();
    let count = r.varint()?;
    if count < 0 {
        return Err(DecodeError {
            pos: at,
            message: format!("invalid negative header count {count}"),
        });
    }
    let count = count as usize;
    if count > record_end.saturating_sub(r.position()) / 2 {
        return Err(r.error(format!(
            "{count} headers cannot fit in the rest of the record"
        )));
    }
    Ok(count)
}

/// Reads one header: a key (its length must not be negative) and a
/// nullable value.
fn read_header<'a>(r: &mut Reader<'a>) -> Result<HeaderView<'a>, DecodeError> {
    let at = r.position();
    let key_len = r.varint()?;
    if key_len < 0 {
        return Err(DecodeError {
            pos: at,
            message: format!("invalid negative header key size {key_len}"),
        });
    }
    let key = r.bytes(key_len as usize, "a header key")?;
    let value = nullable(r, "a header value")?;
    Ok((key, value))
}

/// A length-prefixed field; a negative length (any, as Kafka reads it) is
/// null.
fn nullable<'a>(r: &mut Reader<'a>, what: &str) -> Result<Option<&'a [u8]>, DecodeError> {
    let len = r.varint()?;
    if len < 0 {
        return Ok(None);
    }
    r.bytes(len as usize, what).map(Some)
}

/// The records of one batch: the decompressed buffer they borrow from.
///
/// ```
/// use lithify_kafka_format::record::{BatchBuilder, BatchRecords, RecordBatch};
///
/// let mut b = BatchBuilder::new(10);
/// b.append(10, 1000, Some(b"k"), Some(b"v"), &[]).unwrap();
/// b.append(12, 1001, None, None, &[]).unwrap();
/// let batch = RecordBatch::parse(b.build()).unwrap();
/// let records = BatchRecords::decompress(&batch).unwrap();
/// let views: Vec<_> = records.iter().collect::<Result<_, _>>().unwrap();
/// assert_eq!(views[0].key, Some(&b"k"[..]));
/// assert_eq!((views[1].offset, views[1].key, views[1].value), (12, None, None));
/// ```
#[derive(Debug)]
pub struct BatchRecords<'b> {
    batch: &'b RecordBatch,
    buf: Bytes,
    compressed: bool,
}

impl<'b> BatchRecords<'b> {
    /// Decompresses `batch`'s records (no copy for an uncompressed batch).
    pub fn decompress(batch: &'b RecordBatch) -> Result<Self> {
        Self::decompress_with_limit(batch, MAX_DECOMPRESSED_BYTES)
    }

    /// Like [`BatchRecords::decompress`], producing at most `limit` bytes.
    pub fn decompress_with_limit(batch: &'b RecordBatch, limit: usize) -> Result<Self> {
        let (buf, compressed) = uncompressed(batch, limit)?;
        Ok(BatchRecords {
            batch,
            buf,
            compressed,
        })
    }

    /// The records, in order. Iteration ends with an error (naming the
    /// batch's file and byte offset) at the first malformed record, or if
    /// bytes remain after the declared count.
    pub fn iter(&self) -> RecordViews<'_> {
        let batch = self.batch;
        let count = batch.records_count();
        let mut views = RecordViews {
            batch,
            buf: &self.buf,
            compressed: self.compressed,
            reader: Reader::new(&self.buf),
            remaining: 0,
            index: 0,
            base_offset: batch.base_offset(),
            base_timestamp: batch.base_timestamp(),
            log_append_time: (batch.timestamp_type() == TimestampType::LogAppendTime)
                .then(|| batch.max_timestamp()),
            pending_error: None,
        };
        if count < 0 {
            views.pending_error = Some(views.corrupt_at(
                RECORDS_COUNT_OFFSET,
                format!("negative records count {count}"),
            ));
        } else if count as usize > self.buf.len() / MIN_RECORD_BYTES {
            views.pending_error = Some(views.error(DecodeError {
                pos: 0,
                message: format!(
                    "a records count of {count} cannot fit in {} bytes of records",
                    self.buf.len()
                ),
            }));
        } else {
            views.remaining = count as usize;
        }
        views
    }

    /// Every record as an owned [`Record`]: keys, values and headers are
    /// slices of the records buffer, not copies.
    pub fn records(&self) -> Result<Vec<Record>> {
        let mut views = self.iter();
        let mut out = Vec::with_capacity(views.remaining);
        while let Some(view) = views.next() {
            let view = view?;
            let headers = view.headers().map_err(|e| views.error(e))?;
            let slice = |b: &[u8]| self.buf.slice_ref(b);
            out.push(Record {
                offset: view.offset,
                timestamp: view.timestamp,
                attributes: view.attributes,
                key: view.key.map(slice),
                value: view.value.map(slice),
                headers: headers
                    .into_iter()
                    .map(|(key, value)| Header {
                        key: slice(key),
                        value: value.map(slice),
                    })
                    .collect(),
            });
        }
        Ok(out)
    }
}

/// `batch`'s records, at most `limit` bytes of them, and whether they
/// were compressed.
fn uncompressed(batch: &RecordBatch, limit: usize) -> Result<(Bytes, bool)> {
    let compressed = batch.compression()? != Compression::None;
    Ok((batch.uncompressed_records(limit)?, compressed))
}

/// A batch that owns its decompressed records: what one thread prepares
/// so that another decodes the records without decompressing them (the
/// log cleaner's read-ahead thread).
///
/// ```
/// use lithify_kafka_format::codec::Compression;
/// use lithify_kafka_format::record::{BatchBuilder, DecompressedBatch, RecordBatch};
///
/// let mut b = BatchBuilder::new(7).compression(Compression::Zstd);
/// b.append(7, 1000, Some(b"k"), Some(b"v"), &[]).unwrap();
/// let batch = RecordBatch::parse(b.build()).unwrap();
/// let ready = std::thread::spawn(move || DecompressedBatch::new(batch).unwrap())
///     .join()
///     .unwrap();
/// let records = ready.records();
/// let first = records.iter().next().unwrap().unwrap();
/// assert_eq!((first.offset, first.value), (7, Some(&b"v"[..])));
/// ```
#[derive(Debug, Clone)]
pub struct DecompressedBatch {
    batch: RecordBatch,
    buf: Bytes,
    compressed: bool,
}

impl DecompressedBatch {
    /// Decompresses `batch`'s records, as [`BatchRecords::decompress`]
    /// does (same limit, same errors).
    pub fn new(batch: RecordBatch) -> Result<Self> {
        let (buf, compressed) = uncompressed(&batch, MAX_DECOMPRESSED_BYTES)?;
        Ok(DecompressedBatch {
            batch,
            buf,
            compressed,
        })
    }

    /// The batch.
    pub fn batch(&self) -> &RecordBatch {
        &self.batch
    }

    /// Its records, without decompressing again.
    pub fn records(&self) -> BatchRecords<'_> {
        BatchRecords {
            batch: &self.batch,
            buf: self.buf.clone(),
            compressed: self.compressed,
        }
    }

    /// Bytes of the decompressed records.
    pub fn records_len(&self) -> usize {
        self.buf.len()
    }

    /// The batch, its records dropped.
    pub fn into_batch(self) -> RecordBatch {
        self.batch
    }
}

/// Iterator over the [`RecordView`]s of a batch; see [`BatchRecords::iter`].
#[derive(Debug)]
pub struct RecordViews<'a> {
    batch: &'a RecordBatch,
    buf: &'a [u8],
    compressed: bool,
    reader: Reader<'a>,
    remaining: usize,
    index: usize,
    base_offset: i64,
    base_timestamp: i64,
    /// `Some(max_timestamp)` for a LogAppendTime batch.
    log_append_time: Option<i64>,
    pending_error: Option<Error>,
}

impl<'a> RecordViews<'a> {
    fn corrupt_at(&self, within: usize, message: String) -> Error {
        let (path, at) = match self.batch.path() {
            Some(p) => (p.to_path_buf(), self.batch.position()),
            None => (PathBuf::from(IN_MEMORY), 0),
        };
        CorruptSnafu {
            path,
            offset: at + within as u64,
            message,
        }
        .build()
    }

    fn error(&self, e: DecodeError) -> Error {
        if self.compressed {
            self.corrupt_at(
                RECORD_BATCH_OVERHEAD,
                format!("{e} of the decompressed records"),
            )
        } else {
            self.corrupt_at(RECORD_BATCH_OVERHEAD + e.pos, e.message)
        }
    }

    fn next_view(&mut self) -> Result<RecordView<'a>, DecodeError> {
        let r = &mut self.reader;
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
        let key = nullable(r, "the key")?;
        let value = nullable(r, "the value")?;
        let headers_start = r.position();
        let header_count = read_header_count(r, body_start + len as usize)?;
        for _ in 0..header_count {
            read_header(r)?;
        }
        let end = r.position();
        let read = end - body_start;
        if read != len as usize {
            return Err(r.error(format!(
                "invalid record size: the record declares {len} bytes but its fields take {read}"
            )));
        }
        let timestamp = match self.log_append_time {
            Some(t) => t,
            None => self.base_timestamp.wrapping_add(timestamp_delta),
        };
        Ok(RecordView {
            offset: self.base_offset.wrapping_add(i64::from(offset_delta)),
            timestamp,
            attributes,
            key,
            value,
            headers_raw: &self.buf[headers_start..end],
        })
    }

    /// Ends the iteration after an error: the rest of the buffer counts as
    /// read, so no "bytes remain" error follows.
    fn finish(&mut self) {
        self.remaining = 0;
        let rest = self.reader.remaining();
        let _ = self.reader.bytes(rest, "the rest");
    }
}

impl<'a> Iterator for RecordViews<'a> {
    type Item = Result<RecordView<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.pending_error.take() {
            self.remaining = 0;
            return Some(Err(e));
        }
        if self.remaining == 0 {
            if !self.reader.is_empty() {
                let message = format!(
                    "{} bytes remain after the {} records the batch declares",
                    self.reader.remaining(),
                    self.index
                );
                let e = self.error(self.reader.error(message));
                // Report once, then end.
                self.finish();
                return Some(Err(e));
            }
            return None;
        }
        match self.next_view() {
            Ok(v) => {
                self.remaining -= 1;
                self.index += 1;
                Some(Ok(v))
            }
            Err(e) => {
                let e = DecodeError {
                    pos: e.pos,
                    message: format!("record {}: {}", self.index, e.message),
                };
                self.finish();
                Some(Err(self.error(e)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::BatchBuilder;

    /// Every record shape through the one decoder, as views and as owned
    /// records: keyed, keyless, tombstone, empty key and value, headers
    /// with null and empty values, a LogAppendTime batch.
    #[test]
    fn views_and_owned_records_agree_on_every_shape() {
        let headers = [
            Header::new("h1", Some(Bytes::from_static(b"x"))),
            Header::new("h2", None),
            Header::new("", Some(Bytes::new())),
        ];
        for log_append in [false, true] {
            let mut b = BatchBuilder::new(100);
            if log_append {
                b = b.log_append_time(9_999);
            }
            b.append(100, 5_000, Some(b"k"), Some(b"v"), &headers)
                .unwrap();
            b.append(101, 4_000, None, Some(b"keyless"), &[]).unwrap();
            b.append(103, 6_000, Some(b"k"), None, &[]).unwrap();
            b.append(104, 6_001, Some(b""), Some(b""), &headers[1..2])
                .unwrap();
            let batch = RecordBatch::parse(b.build()).unwrap();
            let records = BatchRecords::decompress(&batch).unwrap();
            let views: Vec<_> = records.iter().collect::<Result<_>>().unwrap();
            let owned = batch.records().unwrap();
            assert_eq!(views.len(), 4);
            assert_eq!(owned.len(), 4);
            for (v, r) in views.iter().zip(&owned) {
                assert_eq!(v.offset, r.offset);
                assert_eq!(v.timestamp, r.timestamp);
                assert_eq!(v.attributes, r.attributes);
                assert_eq!(v.key, r.key.as_deref());
                assert_eq!(v.value, r.value.as_deref());
                assert_eq!(v.is_tombstone(), r.is_tombstone());
                let hv = v.headers().unwrap();
                assert_eq!(hv.len(), r.headers.len());
                for ((k, val), h) in hv.iter().zip(&r.headers) {
                    assert_eq!(*k, &h.key[..]);
                    assert_eq!(*val, h.value.as_deref());
                }
            }
            let ts: Vec<_> = owned.iter().map(|r| r.timestamp).collect();
            if log_append {
                assert_eq!(ts, [9_999; 4]);
            } else {
                assert_eq!(ts, [5_000, 4_000, 6_000, 6_001]);
            }
            assert_eq!(owned[0].headers, headers);
            assert_eq!(owned[1].key, None);
            assert!(owned[2].is_tombstone());
            assert_eq!(owned[3].key.as_deref(), Some(&b""[..]));
        }
    }

    /// A malformed record is the same error through either path.
    #[test]
    fn both_paths_report_the_same_damage() {
        let mut b = BatchBuilder::new(0);
        b.append(0, 1, Some(b"key"), Some(b"value"), &[]).unwrap();
        let mut raw = b.build().to_vec();
        // The record's length varint (first byte of the records section).
        raw[RECORD_BATCH_OVERHEAD] = 0x7e;
        let batch = RecordBatch::parse(Bytes::from(raw)).unwrap();
        let from_views = BatchRecords::decompress(&batch)
            .unwrap()
            .iter()
            .find_map(Result::err)
            .unwrap()
            .to_string();
        let from_records = batch.records().unwrap_err().to_string();
        assert_eq!(from_views, from_records);
        assert!(
            from_records.contains("record 0: record length 63"),
            "{from_records}"
        );
    }
}
