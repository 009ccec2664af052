//! Opens arbitrary bytes as a blob file and reads everything it can: no
//! panic, no hang, no unbounded allocation.
//!
//! Input: `n` (one byte, taken mod 32), `n` bytes decoded as a blob index,
//! `k` (one byte, mod 32), `k` bytes of key, then the file. Every record
//! `records()` returns intact must read back the same through `get`, and a
//! file that verifies must agree with its footer and its own bytes.
#![no_main]

use std::io;
use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use lithify_base::xxh3_64;
use lithify_blob::{BlobFileReader, BlobIndex, FOOTER_LEN, HEADER_LEN};
use lithify_vfs::RandomAccessFile;

#[derive(Debug)]
struct VecFile(Vec<u8>);

impl RandomAccessFile for VecFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(self.0.len());
        let n = buf.len().min(self.0.len() - start);
        buf[..n].copy_from_slice(&self.0[start..start + n]);
        Ok(n)
    }

    fn size(&self) -> io::Result<u64> {
        Ok(self.0.len() as u64)
    }
}

/// Splits a length-prefixed part (length byte mod 32) off the front.
fn take(data: &[u8]) -> (&[u8], &[u8]) {
    let Some((&n, rest)) = data.split_first() else {
        return (&[], &[]);
    };
    let n = usize::from(n % 32).min(rest.len());
    rest.split_at(n)
}

fuzz_target!(|data: &[u8]| {
    let (index_bytes, rest) = take(data);
    let (key, file) = take(rest);
    let index = BlobIndex::decode(index_bytes).ok();
    if let Some(index) = index {
        assert_eq!(index.encode(), index_bytes);
        let _ = index.to_string();
    }

    let path = Path::new("fuzz.blob");
    let file_bytes = file.to_vec();
    let Ok(reader) = BlobFileReader::open(Arc::new(VecFile(file_bytes)), path) else {
        return;
    };
    assert!(reader.file_size() >= (HEADER_LEN + FOOTER_LEN) as u64);
    let _ = reader.header().unique_id();

    let mut intact = 0u64;
    for record in reader.records() {
        match record {
            Ok(record) => {
                intact += 1;
                let got = reader
                    .get(&record.key, &record.index)
                    .expect("an intact record reads back through its index");
                assert_eq!(&got[..], &record.value[..]);
            }
            Err(e) => {
                assert!(e.is_corruption() && e.offset().is_some());
                let _ = e.to_string();
            }
        }
    }
    if let Ok(summary) = reader.verify() {
        assert_eq!(summary.blob_count, intact);
        assert_eq!(summary.blob_count, reader.footer().blob_count);
        assert_eq!(summary.blob_bytes, reader.footer().blob_bytes);
        assert_eq!(summary.file_checksum, xxh3_64(file));
    }
    if let Some(index) = index
        && let Err(e) = reader.get(key, &index)
    {
        assert!(e.is_corruption(), "{e}");
    }
});
