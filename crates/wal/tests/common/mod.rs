//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};

use lithify_base::Id;
use lithify_vfs::{FileSystem, MemFs, RandomAccessFile};
use lithify_wal::format::{BLOCK_SIZE, FILE_HEADER_LEN, Framing};
use lithify_wal::{DroppedRange, Reader, RecordCompression, RecoveryMode, Writer, WriterOptions};

/// Every recovery mode.
pub(crate) const MODES: [RecoveryMode; 4] = [
    RecoveryMode::TolerateCorruptedTailRecords,
    RecoveryMode::AbsoluteConsistency,
    RecoveryMode::PointInTimeRecovery,
    RecoveryMode::SkipAnyCorruptedRecords,
];

/// An in-memory file that is a prefix of shared bytes (no copy per cut).
#[derive(Debug)]
pub(crate) struct SliceFile {
    pub(crate) data: Arc<Vec<u8>>,
    pub(crate) len: usize,
}

impl RandomAccessFile for SliceFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let start = (offset as usize).min(self.len);
        let n = buf.len().min(self.len - start);
        buf[..n].copy_from_slice(&self.data[start..start + n]);
        Ok(n)
    }

    fn size(&self) -> io::Result<u64> {
        Ok(self.len as u64)
    }
}

pub(crate) fn slice_file(data: &Arc<Vec<u8>>, len: usize) -> Arc<dyn RandomAccessFile> {
    Arc::new(SliceFile {
        data: data.clone(),
        len,
    })
}

/// A written record: where it starts and ends in the file, and its bytes.
#[derive(Debug, Clone)]
pub(crate) struct Written {
    pub(crate) offset: u64,
    pub(crate) end: u64,
    pub(crate) payload: Vec<u8>,
}

/// Writes `records` as log `log_number` and returns the file bytes and
/// where each record landed.
pub(crate) fn write_log(log_number: u64, records: &[Vec<u8>]) -> (Vec<u8>, Vec<Written>) {
    write_log_with(log_number, records, RecordCompression::None)
}

/// [`write_log`] with the records stored as `compression` says.
pub(crate) fn write_log_with(
    log_number: u64,
    records: &[Vec<u8>],
    compression: RecordCompression,
) -> (Vec<u8>, Vec<Written>) {
    let options = WriterOptions::default()
        .bytes_per_sync(0)
        .compression(compression);
    write_records(log_number, records, options)
}

/// Writes `records` as log `log_number` with a writer that sizes the file
/// ahead of them, and returns the file bytes up to the last record (its
/// `Preallocated` fragment included) and where each record landed.
pub(crate) fn preallocated_log(log_number: u64, records: &[Vec<u8>]) -> (Vec<u8>, Vec<Written>) {
    write_records(
        log_number,
        records,
        WriterOptions::default().preallocate(1 << 20),
    )
}

/// The owner of the logs [`compact_log`] writes.
pub(crate) const OWNER: Id = Id::from_bytes([7; 16]);

/// Writes `records` as a compact log (format version 4, owned by
/// [`OWNER`]) with `options`, and returns the file bytes and where each
/// record landed.
pub(crate) fn compact_log(
    log_number: u64,
    records: &[Vec<u8>],
    options: WriterOptions,
) -> (Vec<u8>, Vec<Written>) {
    write_records(
        log_number,
        records,
        options.owner(Some(OWNER)).framing(Framing::Compact),
    )
}

/// Writes `records` as log `log_number` with `options` (4 KiB buffer, no
/// owner unless the options name one), closes it, and returns the file
/// bytes and where each record landed.
fn write_records(
    log_number: u64,
    records: &[Vec<u8>],
    options: WriterOptions,
) -> (Vec<u8>, Vec<Written>) {
    let fs = MemFs::new();
    let path = Path::new("/log");
    let options = options.buffer_size(4096);
    let mut w = Writer::with_options(fs.create(path).unwrap(), path, log_number, options).unwrap();
    let mut written = Vec::new();
    for r in records {
        let offset = w.add_record(r).unwrap();
        written.push(Written {
            offset,
            end: w.bytes_written(),
            payload: r.clone(),
        });
    }
    w.close().unwrap();
    (lithify_vfs::read_file(&fs, path).unwrap(), written)
}

/// Everything a reader produced.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub(crate) records: Vec<(u64, Vec<u8>)>,
    pub(crate) dropped: Vec<DroppedRange>,
    pub(crate) error: Option<lithify_wal::Error>,
    pub(crate) end: Option<lithify_wal::LogEnd>,
    pub(crate) zero_tail: Option<u64>,
    pub(crate) stale_tail: Option<u64>,
}

pub(crate) fn read_all(
    file: Arc<dyn RandomAccessFile>,
    log_number: u64,
    mode: RecoveryMode,
) -> Outcome {
    let dropped = Arc::new(Mutex::new(Vec::new()));
    let sink = dropped.clone();
    let mut reader = Reader::new(file, "/log", log_number)
        .unwrap()
        .with_mode(mode)
        .with_reporter(move |r: &DroppedRange| sink.lock().unwrap().push(*r));
    let mut out = Outcome::default();
    loop {
        match reader.read_record() {
            Ok(Some(r)) => out.records.push((r.offset, r.payload.to_vec())),
            Ok(None) => break,
            Err(e) => {
                out.error = Some(e);
                break;
            }
        }
    }
    // Fused: nothing more after the end or an error.
    assert!(reader.read_record().unwrap().is_none());
    out.end = reader.end();
    out.zero_tail = reader.zero_tail();
    out.stale_tail = reader.stale_tail();
    out.dropped = dropped.lock().unwrap().clone();
    let stats = reader.stats();
    assert_eq!(stats.records, out.records.len() as u64);
    assert_eq!(stats.dropped_ranges, out.dropped.len() as u64);
    assert_eq!(
        stats.dropped_bytes,
        out.dropped.iter().map(|d| d.len).sum::<u64>()
    );
    // Dropped ranges are in order and disjoint.
    for pair in out.dropped.windows(2) {
        assert!(pair[0].end() <= pair[1].offset, "{:?}", out.dropped);
    }
    out
}

/// One physical fragment of a well-formed log.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fragment {
    pub(crate) offset: usize,
    pub(crate) len: usize,
    pub(crate) ty: u8,
}

/// The length of a fragment header in the log `data`, by its header's
/// version.
pub(crate) fn header_len(data: &[u8]) -> usize {
    let version = u32::from_le_bytes(data[8..12].try_into().unwrap());
    Framing::of_version(version).header_len()
}

/// Walks the fragments of an undamaged log.
pub(crate) fn fragments(data: &[u8]) -> Vec<Fragment> {
    let header_len = header_len(data);
    let mut out = Vec::new();
    let mut pos = FILE_HEADER_LEN;
    while pos < data.len() {
        let in_block = pos % BLOCK_SIZE;
        if BLOCK_SIZE - in_block < header_len {
            pos += BLOCK_SIZE - in_block;
            continue;
        }
        let len = u16::from_le_bytes([data[pos + 4], data[pos + 5]]) as usize;
        out.push(Fragment {
            offset: pos,
            len,
            ty: data[pos + 6],
        });
        pos += header_len + len;
    }
    out
}

/// Deterministic bytes that compress to about half: each 64-byte stretch
/// is 32 pseudo-random bytes then 32 copies of one byte.
pub(crate) fn half_compressible(len: usize, seed: u64) -> Vec<u8> {
    let random = pattern(len, seed);
    (0..len)
        .map(|i| if i % 64 < 32 { random[i] } else { b'x' })
        .collect()
}

/// Deterministic pseudo-random bytes.
pub(crate) fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
