//! Borrowed views of a batch's records, decoded without allocating.
//!
//! The cleaner looks at every record of every batch it reads (its key for
//! the offset map, its value to spot tombstones), but keeps most records'
//! bytes untouched. [`RecordViews`] decodes records in place: keys and
//! values are slices of the (decompressed) records buffer, and the encoded
//! header section is kept as bytes, so a record that must be re-encoded
//! against a new base timestamp (see
//! [`BatchBuilder::append_view`](crate::record::BatchBuilder::append_view))
//! is rebuilt without decoding its headers into `Header` values.
//!
//! Validation is the same as [`RecordBatch::records`]: every length is
//! checked against the bytes that remain, the declared record length must
//! match the fields, and no bytes may follow the declared count.

use std::path::PathBuf;

use bytes::Bytes;

use crate::codec::{Compression, MAX_DECOMPRESSED_BYTES};
use crate::coding::{DecodeError, Reader};
use crate::error::{CorruptSnafu, Error, IN_MEMORY, Result};
use crate::record::RecordBatch;
use crate::record::batch::{RECORD_BATCH_OVERHEAD, RECORDS_COUNT_OFFSET, TimestampType};
use crate::record::record::{MIN_RECORD_BYTES, RecordBase};

/// One record of a batch, borrowed from the records buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordView<'a> {
    /// Absolute offset.
    pub offset: i64,
    /// Absolute timestamp (the batch's max timestamp for LogAppendTime).
    pub timestamp: i64,
    /// The key, `None` for a keyless record.
    pub key: Option<&'a [u8]>,
    /// The value, `None` for a tombstone.
    pub value: Option<&'a [u8]>,
    /// The encoded header section: the header count varint and every
    /// header, exactly as stored.
    pub headers_raw: &'a [u8],
}

impl RecordView<'_> {
    /// Whether this record is a tombstone (null value).
    pub fn is_tombstone(&self) -> bool {
        self.value.is_none()
    }
}

/// The records of one batch: the decompressed buffer they borrow from.
///
/// ```
/// use lithify_compaction_logclean::record::{BatchBuilder, RecordBatch, view::BatchRecords};
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
        let compressed = batch.compression()? != Compression::None;
        let buf = batch.uncompressed_records(MAX_DECOMPRESSED_BYTES)?;
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
        let base = RecordBase {
            base_offset: batch.base_offset(),
            base_timestamp: batch.base_timestamp(),
            log_append_time: (batch.timestamp_type() == TimestampType::LogAppendTime)
                .then(|| batch.max_timestamp()),
        };
        let mut views = RecordViews {
            batch,
            buf: &self.buf,
            compressed: self.compressed,
            reader: Reader::new(&self.buf),
            remaining: 0,
            index: 0,
            base,
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
    base: RecordBase,
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
        let _attributes = r.i8()?;
        let timestamp_delta = r.varlong()?;
        let offset_delta = r.varint()?;
        let key_len = r.varint()?;
        let key = if key_len < 0 {
            None
        } else {
            Some(r.bytes(key_len as usize, "the key")?)
        };
        let value_len = r.varint()?;
        let value = if value_len < 0 {
            None
        } else {
            Some(r.bytes(value_len as usize, "the value")?)
        };
        let headers_start = r.position();
        let header_count = r.varint()?;
        if header_count < 0 {
            return Err(DecodeError {
                pos: headers_start,
                message: format!("invalid negative header count {header_count}"),
            });
        }
        let header_count = header_count as usize;
        if header_count > (len as usize).saturating_sub(r.position() - body_start) / 2 {
            return Err(r.error(format!(
                "{header_count} headers cannot fit in the rest of the record"
            )));
        }
        for _ in 0..header_count {
            let at = r.position();
            let key_len = r.varint()?;
            if key_len < 0 {
                return Err(DecodeError {
                    pos: at,
                    message: format!("invalid negative header key size {key_len}"),
                });
            }
            r.bytes(key_len as usize, "a header key")?;
            let value_len = r.varint()?;
            if value_len >= 0 {
                r.bytes(value_len as usize, "a header value")?;
            }
        }
        let end = r.position();
        let read = end - body_start;
        if read != len as usize {
            return Err(r.error(format!(
                "invalid record size: the record declares {len} bytes but its fields take {read}"
            )));
        }
        let timestamp = match self.base.log_append_time {
            Some(t) => t,
            None => self.base.base_timestamp.wrapping_add(timestamp_delta),
        };
        Ok(RecordView {
            offset: self.base.base_offset.wrapping_add(i64::from(offset_delta)),
            timestamp,
            key,
            value,
            headers_raw: &self.buf[headers_start..end],
        })
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
                let rest = self.reader.remaining();
                let mut done = self.reader.clone();
                let _ = done.bytes(rest, "the rest");
                self.reader = done;
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
                self.remaining = 0;
                let rest = self.reader.remaining();
                let _ = self.reader.bytes(rest, "the rest");
                Some(Err(self.error(e)))
            }
        }
    }
}
