//! Reads arbitrary bytes as a log in each recovery mode: no panic, no hang,
//! and whatever comes out is consistent (records and dropped ranges inside
//! the file, in order, never overlapping).
//!
//! Random bytes rarely pass a checksum, so half the inputs are structured
//! instead: they describe records to write with the real `Writer`, then
//! byte flips and a truncation to apply to the file. Those reach every
//! fragment type, block crossings and each kind of damage; half of them
//! are written LZ4-compressed (format version 2), and half with compact
//! 7-byte fragment headers (format version 4).
#![no_main]

use std::io;
use std::sync::{Arc, Mutex};

use libfuzzer_sys::fuzz_target;
use lithify_vfs::{FileSystem, MemFs, RandomAccessFile};
use lithify_wal::format::{FileHeader, Framing};
use lithify_wal::{
    DroppedRange, LogEnd, Reader, RecordCompression, RecoveryMode, Writer, WriterOptions,
};

#[derive(Debug)]
struct Bytes(Vec<u8>);

impl RandomAccessFile for Bytes {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let start = (offset as usize).min(self.0.len());
        let n = buf.len().min(self.0.len() - start);
        buf[..n].copy_from_slice(&self.0[start..start + n]);
        Ok(n)
    }

    fn size(&self) -> io::Result<u64> {
        Ok(self.0.len() as u64)
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&control, rest)) = data.split_first() else {
        return;
    };
    let mode = match control & 3 {
        0 => RecoveryMode::TolerateCorruptedTailRecords,
        1 => RecoveryMode::AbsoluteConsistency,
        2 => RecoveryMode::PointInTimeRecovery,
        _ => RecoveryMode::SkipAnyCorruptedRecords,
    };
    let file = if control & 8 != 0 {
        structured(rest)
    } else {
        // Half the raw inputs get a valid header to reach the fragments,
        // tagged (version 1) or compact (version 4).
        let mut file = Vec::with_capacity(rest.len() + 24);
        if control & 4 != 0 {
            let header = if control & 16 != 0 {
                FileHeader::compact(1)
            } else {
                FileHeader::new(1)
            };
            file.extend_from_slice(&header.encode());
        }
        file.extend_from_slice(rest);
        file
    };
    let len = file.len() as u64;
    let dropped = Arc::new(Mutex::new(Vec::<DroppedRange>::new()));
    let sink = dropped.clone();
    let Ok(reader) = Reader::new(Arc::new(Bytes(file)), "fuzz.log", 1) else {
        return;
    };
    let mut reader = reader
        .with_mode(mode)
        .with_reporter(move |r: &DroppedRange| sink.lock().unwrap().push(*r));
    let mut last_offset = None;
    let mut failed = false;
    loop {
        match reader.read_record() {
            Ok(Some(r)) => {
                assert!(r.offset < len);
                // A compressed record expands at most 255 times (LZ4).
                assert!(r.payload.len() as u64 <= len * 255);
                assert!(last_offset.is_none_or(|l| r.offset > l));
                last_offset = Some(r.offset);
            }
            Ok(None) => break,
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    assert!(reader.read_record().unwrap().is_none());
    assert_eq!(reader.end().is_none(), failed);
    if let Some(LogEnd::TornTail { offset, .. } | LogEnd::Corruption { offset, .. }) = reader.end() {
        assert!(offset <= len);
    }
    let dropped = dropped.lock().unwrap();
    for d in dropped.iter() {
        assert!(d.len > 0 && d.end() <= len);
    }
    for pair in dropped.windows(2) {
        assert!(pair[0].end() <= pair[1].offset);
    }
});

/// Builds a damaged log from a description: up to 8 records whose sizes are
/// 16-bit values (the first byte: how many, with bit 7 whether they are
/// compressed and bit 6 whether the log is compact), then (position, xor)
/// flips, then a final cut.
fn structured(input: &[u8]) -> Vec<u8> {
    let Some((&count, mut input)) = input.split_first() else {
        return Vec::new();
    };
    let fs = MemFs::new();
    let path = std::path::Path::new("/log");
    let options = WriterOptions::default()
        .compression(if count & 0x80 != 0 {
            RecordCompression::Lz4
        } else {
            RecordCompression::None
        });
    let options = if count & 0x40 != 0 {
        options
            .owner(Some(lithify_base::Id::from_bytes([7; 16])))
            .framing(Framing::Compact)
    } else {
        options
    };
    let mut w = Writer::with_options(fs.create(path).unwrap(), path, 1, options).unwrap();
    for i in 0..(count % 9) {
        let Some((size, rest)) = input.split_first_chunk::<2>() else {
            break;
        };
        input = rest;
        let len = usize::from(u16::from_le_bytes(*size)) % 40_000;
        w.add_record(&vec![i; len]).unwrap();
    }
    w.flush().unwrap();
    drop(w);
    let mut file = lithify_vfs::read_file(&fs, path).unwrap();
    let mut ops = input.chunks_exact(4);
    for op in &mut ops {
        if file.is_empty() {
            break;
        }
        let pos = u32::from_le_bytes([op[0], op[1], op[2], 0]) as usize % file.len();
        if op[3] == 0 {
            file.truncate(pos);
        } else {
            file[pos] ^= op[3];
        }
    }
    file
}
