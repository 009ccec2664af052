//! `WriteBatch`: writes applied atomically, and their encoding, which is
//! also the payload of a write-ahead-log record.
//!
//! # Format
//!
//! All integers are little-endian.
//!
//! ```text
//! +-----------------+-------------------+-----------------+------------+
//! | type: u8 = 0x01 | sequence: u64     | count: u32      | records... |
//! +-----------------+-------------------+-----------------+------------+
//!
//! record:
//! +-----------+-----------------------------+----------------+------------------+
//! | tag: u8   | table: varint32 (if tag     | key: varint32  | value: varint32  |
//! |           | bit 7 is set)               | len ++ bytes   | len ++ bytes     |
//! +-----------+-----------------------------+----------------+------------------+
//! ```
//!
//! * `type` is [`BATCH_RECORD`] (1), the batch format version. A WAL record
//!   whose first byte is [`PREDECESSOR_RECORD`] (0x81) is not a batch but
//!   the note a new WAL starts with (see [`Predecessor`]).
//! * `sequence` is the sequence number of the first record; record `i` gets
//!   `sequence + i`. A batch not yet written holds 0.
//! * `count` is the number of records.
//! * `tag & 0x7f` is the [`ValueKind`] number: 0 `Delete` (no value), 1
//!   `Put`, 2 `Merge` (value = the operand), 7 `SingleDelete` (no value),
//!   15 `RangeDelete` (key = start, value = end, exclusive); no other
//!   kind (17, `BlobIndex`, is written only into SSTs). Bit 7
//!   set means a table id follows; without it the record belongs to the
//!   default table (0).
//!
//! A write group's WAL record is one batch: the header of the first member
//! with the summed count, then every member's records in order.

use std::fmt;

use lithify_base::ValueKind;
use lithify_base::coding::{Decoder, put_varint32};
use lithify_memtable::MAX_ENTRY_PART_LEN;
use lithify_version::{DEFAULT_TABLE, TableId};

/// The first byte of an encoded batch: record type and format version.
pub(crate) const BATCH_RECORD: u8 = 0x01;

/// The first byte of the record every WAL after the first starts with.
pub(crate) const PREDECESSOR_RECORD: u8 = 0x81;

/// Bytes before the first record: type, sequence, count.
pub(crate) const HEADER_LEN: usize = 13;

/// Set in a record tag when a table id follows.
const TABLE_FLAG: u8 = 0x80;

/// A group of writes applied atomically: all or none survive a crash, and
/// readers see all or none of them.
///
/// ```
/// use lithify_engine::WriteBatch;
///
/// let mut batch = WriteBatch::new();
/// batch.put(b"apple", b"red");
/// batch.delete(b"banana");
/// batch.delete_range(b"c", b"d");
/// assert_eq!(batch.len(), 3);
/// let kinds: Vec<_> = batch.iter().map(|e| e.unwrap().kind).collect();
/// assert_eq!(kinds.len(), 3);
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct WriteBatch {
    rep: Vec<u8>,
    /// The first problem with an added entry; `write` refuses the batch.
    invalid: Option<String>,
    has_range_deletes: bool,
    has_merges: bool,
    /// Sum of key and value lengths (the "user bytes" of write
    /// amplification).
    user_bytes: u64,
    /// The save points, oldest first.
    save_points: Vec<SavePoint>,
}

/// The state of a batch a rollback returns to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SavePoint {
    bytes: usize,
    count: u32,
    user_bytes: u64,
    has_range_deletes: bool,
    has_merges: bool,
    valid: bool,
}

/// The largest batch buffer kept for reuse by [`keep_spare`].
const SPARE_MAX: usize = 64 << 10;

std::thread_local! {
    /// A batch whose group completed on this thread, kept for the next
    /// `Db::put` or `Db::delete` of this thread (a single writer is the
    /// leader of every group it writes in, so its puts allocate no batch).
    static SPARE: std::cell::Cell<Option<WriteBatch>> = const { std::cell::Cell::new(None) };
}

/// An empty batch with room for `bytes` bytes of records: this thread's
/// spare batch if it has one, else a new one.
pub(crate) fn spare(bytes: usize) -> WriteBatch {
    match SPARE.try_with(|s| s.take()).ok().flatten() {
        Some(mut batch) => {
            batch.clear();
            batch.rep.reserve(bytes);
            batch
        }
        None => WriteBatch::with_capacity(bytes),
    }
}

/// Keeps `batch`, whose group completed, as this thread's spare batch,
/// unless its buffer is large.
pub(crate) fn keep_spare(batch: WriteBatch) {
    if batch.rep.capacity() <= SPARE_MAX {
        // Not kept while the thread's locals are being destroyed.
        let _ = SPARE.try_with(|s| s.set(Some(batch)));
    }
}

impl Default for WriteBatch {
    fn default() -> Self {
        WriteBatch::new()
    }
}

impl fmt::Debug for WriteBatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteBatch")
            .field("count", &self.len())
            .field("bytes", &self.rep.len())
            .finish()
    }
}

/// One decoded record of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchEntry<'a> {
    /// The table the record belongs to.
    pub table: TableId,
    /// `Put`, `Delete`, `Merge`, `SingleDelete` or `RangeDelete`.
    pub kind: ValueKind,
    /// The key (the start of a range deletion).
    pub key: &'a [u8],
    /// The value (the end of a range deletion; empty for a deletion).
    pub value: &'a [u8],
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        WriteBatch::with_capacity(0)
    }

    /// An empty batch with room for `bytes` bytes of records.
    pub fn with_capacity(bytes: usize) -> Self {
        let mut rep = Vec::with_capacity(HEADER_LEN + bytes);
        rep.push(BATCH_RECORD);
        rep.extend_from_slice(&[0; HEADER_LEN - 1]);
        WriteBatch {
            rep,
            invalid: None,
            has_range_deletes: false,
            has_merges: false,
            user_bytes: 0,
            save_points: Vec::new(),
        }
    }

    /// Sets `key` to `value`.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        self.add(DEFAULT_TABLE, ValueKind::Put, key.as_ref(), value.as_ref());
    }

    /// Deletes `key`.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) {
        self.add(DEFAULT_TABLE, ValueKind::Delete, key.as_ref(), &[]);
    }

    /// Adds a merge operand to `key`: the table's merge operator combines
    /// it with the key's value when the key is read or compacted. The write
    /// fails with `InvalidArgument` if the table has no merge operator.
    pub fn merge(&mut self, key: impl AsRef<[u8]>, operand: impl AsRef<[u8]>) {
        self.add(
            DEFAULT_TABLE,
            ValueKind::Merge,
            key.as_ref(),
            operand.as_ref(),
        );
    }

    /// Deletes `key`, which must have been put at most once since it was
    /// last deleted, and never merged: the deletion then vanishes together
    /// with that put in compaction (RocksDB's `SingleDelete`). Otherwise
    /// the result is undefined, as in RocksDB (see
    /// [`Db::single_delete`](crate::Db::single_delete)).
    pub fn single_delete(&mut self, key: impl AsRef<[u8]>) {
        self.add(DEFAULT_TABLE, ValueKind::SingleDelete, key.as_ref(), &[]);
    }

    /// Deletes every key in `[start, end)`. The write fails with
    /// `InvalidArgument` unless `start < end`.
    pub fn delete_range(&mut self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) {
        self.add(
            DEFAULT_TABLE,
            ValueKind::RangeDelete,
            start.as_ref(),
            end.as_ref(),
        );
    }

    /// Adds a record for `table` (the default table is 0).
    pub(crate) fn add(&mut self, table: TableId, kind: ValueKind, key: &[u8], value: &[u8]) {
        if key.len() > MAX_ENTRY_PART_LEN || value.len() > MAX_ENTRY_PART_LEN {
            self.invalid.get_or_insert_with(|| {
                format!(
                    "a key of {} bytes or a value of {} bytes exceeds the limit of {MAX_ENTRY_PART_LEN}",
                    key.len(),
                    value.len()
                )
            });
            return;
        }
        let count = self.len();
        if count == u32::MAX as usize {
            self.invalid
                .get_or_insert_with(|| "a batch holds at most 2^32 - 1 records".to_owned());
            return;
        }
        if table == DEFAULT_TABLE {
            self.rep.push(kind as u8);
        } else {
            self.rep.push(kind as u8 | TABLE_FLAG);
            put_varint32(&mut self.rep, table);
        }
        put_varint32(&mut self.rep, key.len() as u32);
        self.rep.extend_from_slice(key);
        if !kind.is_point_tombstone() {
            put_varint32(&mut self.rep, value.len() as u32);
            self.rep.extend_from_slice(value);
        }
        match kind {
            ValueKind::RangeDelete => self.has_range_deletes = true,
            ValueKind::Merge => self.has_merges = true,
            _ => {}
        }
        self.user_bytes += (key.len() + value.len()) as u64;
        self.set_count(count as u32 + 1);
    }

    /// The number of records.
    pub fn len(&self) -> usize {
        count_of(&self.rep) as usize
    }

    /// Whether the batch holds no record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Size of the encoding in bytes (what the WAL record will hold).
    pub fn size_in_bytes(&self) -> usize {
        self.rep.len()
    }

    /// Removes every record.
    pub fn clear(&mut self) {
        self.rep.truncate(HEADER_LEN);
        self.rep[1..].fill(0);
        self.invalid = None;
        self.has_range_deletes = false;
        self.has_merges = false;
        self.user_bytes = 0;
        self.save_points.clear();
    }

    /// Marks the current end of the batch: [`rollback_to_save_point`]
    /// returns to it (RocksDB's `WriteBatch::SetSavePoint`). Save points
    /// nest.
    ///
    /// ```
    /// use lithify_engine::WriteBatch;
    ///
    /// let mut batch = WriteBatch::new();
    /// batch.put(b"a", b"1");
    /// batch.set_save_point();
    /// batch.put(b"b", b"2");
    /// batch.delete(b"a");
    /// assert!(batch.rollback_to_save_point());
    /// assert_eq!(batch.len(), 1);
    /// assert!(!batch.rollback_to_save_point(), "no save point left");
    /// ```
    ///
    /// [`rollback_to_save_point`]: WriteBatch::rollback_to_save_point
    pub fn set_save_point(&mut self) {
        self.save_points.push(SavePoint {
            bytes: self.rep.len(),
            count: self.len() as u32,
            user_bytes: self.user_bytes,
            has_range_deletes: self.has_range_deletes,
            has_merges: self.has_merges,
            valid: self.invalid.is_none(),
        });
    }

    /// Removes every record added since the newest save point, and that
    /// save point; `false` if there is none.
    pub fn rollback_to_save_point(&mut self) -> bool {
        let Some(sp) = self.save_points.pop() else {
            return false;
        };
        self.rep.truncate(sp.bytes);
        self.set_count(sp.count);
        self.user_bytes = sp.user_bytes;
        self.has_range_deletes = sp.has_range_deletes;
        self.has_merges = sp.has_merges;
        if sp.valid {
            self.invalid = None;
        }
        true
    }

    /// Forgets the newest save point without rolling back; `false` if there
    /// is none.
    pub fn pop_save_point(&mut self) -> bool {
        self.save_points.pop().is_some()
    }

    /// The records in order.
    pub fn iter(&self) -> BatchIter<'_> {
        BatchIter::new(&self.rep[HEADER_LEN..], self.len() as u32)
    }

    /// The records from byte `offset` of the encoding on, `skipped` being
    /// the number of records before it: both as [`size_in_bytes`] and
    /// [`len`] returned them earlier (a reader that indexed a prefix of the
    /// batch resumes there). An offset that is not such a boundary yields
    /// a decoding error.
    ///
    /// ```
    /// use lithify_engine::WriteBatch;
    ///
    /// let mut batch = WriteBatch::new();
    /// batch.put(b"a", b"1");
    /// let (offset, seen) = (batch.size_in_bytes(), batch.len());
    /// batch.delete(b"b");
    /// let rest: Vec<_> = batch.iter_from(offset, seen).map(|e| e.unwrap().key.to_vec()).collect();
    /// assert_eq!(rest, [b"b".to_vec()]);
    /// ```
    ///
    /// [`size_in_bytes`]: WriteBatch::size_in_bytes
    /// [`len`]: WriteBatch::len
    pub fn iter_from(&self, offset: usize, skipped: usize) -> BatchIter<'_> {
        let offset = offset.clamp(HEADER_LEN, self.rep.len());
        let left = (self.len() as u32).saturating_sub(skipped as u32);
        BatchIter::new(&self.rep[offset..], left)
    }

    /// The encoding, header included.
    pub fn encoded(&self) -> &[u8] {
        &self.rep
    }

    pub(crate) fn invalid(&self) -> Option<&str> {
        self.invalid.as_deref()
    }

    pub(crate) fn has_range_deletes(&self) -> bool {
        self.has_range_deletes
    }

    /// Whether the batch holds merge operands.
    pub(crate) fn has_merges(&self) -> bool {
        self.has_merges
    }

    pub(crate) fn user_bytes(&self) -> u64 {
        self.user_bytes
    }

    /// Records the sequence number of the first record.
    pub(crate) fn set_sequence(&mut self, seqno: u64) {
        self.rep[1..9].copy_from_slice(&seqno.to_le_bytes());
    }

    /// The sequence number of the first record (0 until the write group
    /// assigns one).
    pub(crate) fn sequence(&self) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.rep[1..9]);
        u64::from_le_bytes(b)
    }

    /// The encoded records without the header: what a write group's
    /// record concatenates after its own header.
    pub(crate) fn encoded_records(&self) -> &[u8] {
        &self.rep[HEADER_LEN..]
    }

    fn set_count(&mut self, count: u32) {
        self.rep[9..13].copy_from_slice(&count.to_le_bytes());
    }
}

fn count_of(rep: &[u8]) -> u32 {
    u32::from_le_bytes([rep[9], rep[10], rep[11], rep[12]])
}

/// Builds the WAL record of a write group in a reused buffer.
pub(crate) fn encode_group_header(dst: &mut Vec<u8>, sequence: u64, count: u32) {
    dst.clear();
    dst.push(BATCH_RECORD);
    dst.extend_from_slice(&sequence.to_le_bytes());
    dst.extend_from_slice(&count.to_le_bytes());
}

/// A batch decoded from a WAL record: its first sequence number and its
/// records (checked lazily by [`BatchIter`]).
#[derive(Debug, Clone, Copy)]
pub struct DecodedBatch<'a> {
    /// Sequence number of the first record.
    pub sequence: u64,
    /// Number of records.
    pub count: u32,
    records: &'a [u8],
}

impl<'a> DecodedBatch<'a> {
    /// Checks the header of an encoded batch. The records are checked as
    /// they are iterated.
    pub fn parse(rep: &'a [u8]) -> Result<Self, String> {
        let mut d = Decoder::new(rep);
        let ty = d.u8().map_err(|e| e.to_string())?;
        if ty != BATCH_RECORD {
            return Err(format!("unknown record type {ty:#04x}"));
        }
        let sequence = d.fixed64().map_err(|e| e.to_string())?;
        let count = d.fixed32().map_err(|e| e.to_string())?;
        Ok(DecodedBatch {
            sequence,
            count,
            records: d.remaining(),
        })
    }

    /// The records.
    pub fn iter(&self) -> BatchIter<'a> {
        BatchIter::new(self.records, self.count)
    }
}

/// Decodes the records of a batch; yields an error (and then stops) at the
/// first malformed record, or when the records do not match the count.
#[derive(Debug, Clone)]
pub struct BatchIter<'a> {
    d: Decoder<'a>,
    left: u32,
    failed: bool,
}

impl<'a> BatchIter<'a> {
    fn new(records: &'a [u8], count: u32) -> Self {
        BatchIter {
            d: Decoder::new(records),
            left: count,
            failed: false,
        }
    }

    fn decode(&mut self) -> Result<BatchEntry<'a>, String> {
        let at = self.d.position();
        let err = |e: lithify_base::DecodeError| format!("record at byte {}: {e}", HEADER_LEN + at);
        let tag = self.d.u8().map_err(err)?;
        let table = if tag & TABLE_FLAG != 0 {
            self.d.varint32().map_err(err)?
        } else {
            DEFAULT_TABLE
        };
        let kind = ValueKind::from_u8(tag & !TABLE_FLAG)
            .filter(|k| *k != ValueKind::BlobIndex)
            .ok_or_else(|| {
                format!(
                    "record at byte {}: unknown kind {:#04x}",
                    HEADER_LEN + at,
                    tag & !TABLE_FLAG
                )
            })?;
        let key = self.d.length_prefixed().map_err(err)?;
        let value = if kind.is_point_tombstone() {
            &[][..]
        } else {
            self.d.length_prefixed().map_err(err)?
        };
        Ok(BatchEntry {
            table,
            kind,
            key,
            value,
        })
    }
}

impl<'a> Iterator for BatchIter<'a> {
    type Item = Result<BatchEntry<'a>, String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        if self.left == 0 {
            if self.d.is_empty() {
                return None;
            }
            self.failed = true;
            return Some(Err(format!(
                "{} bytes follow the last of the records the header counts",
                self.d.remaining().len()
            )));
        }
        self.left -= 1;
        match self.decode() {
            Ok(e) => Some(Ok(e)),
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// The record a new WAL starts with: which log came before it and the last
/// sequence number written to that log. Recovery replays a log only if its
/// predecessor was replayed to exactly that sequence number, so a log whose
/// tail was lost is never followed by a later log's records.
///
/// ```text
/// +-----------------+--------------------+-------------------------+
/// | type: u8 = 0x81 | log number: u64 LE | last sequence: u64 LE   |
/// +-----------------+--------------------+-------------------------+
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Predecessor {
    /// The previous WAL's number.
    pub log_number: u64,
    /// The last sequence number written to it (0 if none).
    pub last_sequence: u64,
}

impl Predecessor {
    /// Encoded length.
    pub const LEN: usize = 17;

    /// The encoding.
    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut out = [0; Self::LEN];
        out[0] = PREDECESSOR_RECORD;
        out[1..9].copy_from_slice(&self.log_number.to_le_bytes());
        out[9..17].copy_from_slice(&self.last_sequence.to_le_bytes());
        out
    }

    /// Decodes a predecessor record.
    pub fn decode(rep: &[u8]) -> Result<Self, String> {
        let mut d = Decoder::new(rep);
        let ty = d.u8().map_err(|e| e.to_string())?;
        if ty != PREDECESSOR_RECORD {
            return Err(format!("unknown record type {ty:#04x}"));
        }
        let log_number = d.fixed64().map_err(|e| e.to_string())?;
        let last_sequence = d.fixed64().map_err(|e| e.to_string())?;
        if !d.is_empty() {
            return Err(format!(
                "{} bytes follow a predecessor record",
                d.remaining().len()
            ));
        }
        Ok(Predecessor {
            log_number,
            last_sequence,
        })
    }
}

/// What a WAL record holds.
///
/// Exhaustive on purpose: a new payload type is a format change that
/// replay and every reader of WALs must handle, so it must stop their
/// build until they do.
#[derive(Debug, Clone, Copy)]
pub enum WalRecord<'a> {
    /// Writes.
    Batch(DecodedBatch<'a>),
    /// The predecessor note at the start of a log.
    Predecessor(Predecessor),
}

impl<'a> WalRecord<'a> {
    /// Decodes a WAL record's payload (records of a batch are checked when
    /// iterated).
    pub fn decode(payload: &'a [u8]) -> Result<Self, String> {
        match payload.first() {
            Some(&BATCH_RECORD) => DecodedBatch::parse(payload).map(WalRecord::Batch),
            Some(&PREDECESSOR_RECORD) => Predecessor::decode(payload).map(WalRecord::Predecessor),
            Some(other) => Err(format!("unknown record type {other:#04x}")),
            None => Err("empty record".to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A thread's spare batch comes back empty, whatever it held; a large
    /// one is not kept.
    #[test]
    fn a_spare_batch_is_reused_empty() {
        let mut used = WriteBatch::with_capacity(1000);
        used.put(b"k", b"v");
        used.set_save_point();
        used.merge(b"m", b"x");
        used.delete_range(b"a", b"b");
        used.set_sequence(9);
        let capacity = used.rep.capacity();
        keep_spare(used);
        let b = spare(10);
        assert_eq!(b.rep.capacity(), capacity, "the kept buffer");
        assert_eq!(b, WriteBatch::new());
        assert_eq!((b.len(), b.user_bytes()), (0, 0));
        assert!(!b.has_merges() && !b.has_range_deletes());
        // Taken: the next one is new.
        assert_eq!(spare(10).rep.capacity(), HEADER_LEN + 10);
        keep_spare(WriteBatch::with_capacity(SPARE_MAX + 1));
        assert_eq!(spare(10).rep.capacity(), HEADER_LEN + 10);
    }

    #[test]
    fn golden_bytes() {
        let mut b = WriteBatch::new();
        b.put(b"k", b"v1");
        b.delete(b"d");
        b.add(7, ValueKind::RangeDelete, b"a", b"c");
        b.set_sequence(0x0102);
        assert_eq!(
            b.encoded(),
            [
                0x01, // batch record, version 1
                0x02, 0x01, 0, 0, 0, 0, 0, 0, // sequence 0x0102
                3, 0, 0, 0, // count
                0x01, 1, b'k', 2, b'v', b'1', // put k v1
                0x00, 1, b'd', // delete d
                0x8f, 7, 1, b'a', 1, b'c', // range delete [a, c) in table 7
            ]
        );
        assert_eq!(b.user_bytes(), 3 + 1 + 2);
        // The worked example of docs/FORMATS.md.
        let p = Predecessor {
            log_number: 5,
            last_sequence: 0x0104,
        };
        assert_eq!(
            p.encode(),
            [0x81, 5, 0, 0, 0, 0, 0, 0, 0, 0x04, 0x01, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(Predecessor::decode(&p.encode()), Ok(p));
    }

    #[test]
    fn malformed_records_are_errors() {
        let mut b = WriteBatch::new();
        b.put(b"key", b"value");
        let rep = b.encoded().to_vec();
        // Every truncation fails (header or record), none panics.
        for n in 0..rep.len() {
            match WalRecord::decode(&rep[..n]) {
                Err(_) => {}
                Ok(WalRecord::Batch(d)) => assert!(d.iter().any(|e| e.is_err()), "cut at {n}"),
                Ok(WalRecord::Predecessor(_)) => panic!("cut at {n}"),
            }
        }
        let mut bad = rep.clone();
        bad[HEADER_LEN] = 0x05; // unknown kind
        let WalRecord::Batch(d) = WalRecord::decode(&bad).unwrap() else {
            panic!()
        };
        assert!(
            d.iter()
                .next()
                .unwrap()
                .unwrap_err()
                .contains("unknown kind")
        );
        let mut extra = rep;
        extra.push(0);
        let WalRecord::Batch(d) = WalRecord::decode(&extra).unwrap() else {
            panic!()
        };
        assert!(d.iter().nth(1).unwrap().is_err());
        assert!(WalRecord::decode(&[0x02]).is_err());
    }

    #[derive(Debug, Clone)]
    enum Op {
        Put(u32, Vec<u8>, Vec<u8>),
        Del(u32, Vec<u8>),
        Range(u32, Vec<u8>, Vec<u8>),
    }

    fn op() -> impl Strategy<Value = Op> {
        let bytes = || proptest::collection::vec(any::<u8>(), 0..40);
        let table = prop_oneof![Just(0u32), any::<u32>()];
        prop_oneof![
            (table.clone(), bytes(), bytes()).prop_map(|(t, k, v)| Op::Put(t, k, v)),
            (table.clone(), bytes()).prop_map(|(t, k)| Op::Del(t, k)),
            (table, bytes(), bytes()).prop_map(|(t, k, v)| Op::Range(t, k, v)),
        ]
    }

    proptest! {
        #[test]
        fn round_trip(ops in proptest::collection::vec(op(), 0..30), seq in 0..lithify_base::MAX_SEQNO) {
            let mut b = WriteBatch::new();
            let mut expected = Vec::new();
            for op in &ops {
                let (t, kind, k, v) = match op {
                    Op::Put(t, k, v) => (*t, ValueKind::Put, k.clone(), v.clone()),
                    Op::Del(t, k) => (*t, ValueKind::Delete, k.clone(), Vec::new()),
                    Op::Range(t, k, v) => (*t, ValueKind::RangeDelete, k.clone(), v.clone()),
                };
                b.add(t, kind, &k, &v);
                expected.push((t, kind, k, v));
            }
            b.set_sequence(seq);
            let WalRecord::Batch(d) = WalRecord::decode(b.encoded()).unwrap() else { panic!() };
            prop_assert_eq!(d.sequence, seq);
            prop_assert_eq!(d.count as usize, ops.len());
            let got: Vec<_> = d.iter().map(|e| {
                let e = e.unwrap();
                (e.table, e.kind, e.key.to_vec(), e.value.to_vec())
            }).collect();
            prop_assert_eq!(got, expected);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(WalRecord::Batch(d)) = WalRecord::decode(&bytes) {
                for e in d.iter() {
                    if e.is_err() { break; }
                }
            }
        }
    }
}
