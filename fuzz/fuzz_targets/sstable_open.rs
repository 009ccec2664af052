//! Opens arbitrary bytes as a table and reads everything it can: no panic,
//! no hang, no unbounded allocation. The first byte picks the options
//! (bit 0: verify checksums; bit 1: use a block cache), so both the
//! checksum gate and the decoders behind it are exercised.
#![no_main]

use std::io;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use lithify_base::InternalIterator;
use lithify_sstable::{BlockCache, ReadStats, SstOptions, SstReader};
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

/// Steps per scan: a damaged block with checksums off can hold millions of
/// entries whose backward scan is quadratic.
const MAX_STEPS: usize = 20_000;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, file)) = data.split_first() else {
        return;
    };
    let opts = SstOptions::default()
        .verify_checksums(flags & 1 == 1);
    let cache = (flags & 2 == 2).then(|| Arc::new(BlockCache::with_shard_bits(1 << 20, 1)));
    let size = file.len() as u64;
    let file: Arc<dyn RandomAccessFile> = Arc::new(VecFile(file.to_vec()));
    let Ok(table) = SstReader::open(file, "fuzz.sst", size, &opts, cache) else {
        return;
    };
    let table = Arc::new(table);
    let _ = table.properties();
    let tombstones = table.range_tombstones().len();
    assert!(tombstones as u64 == table.properties().num_range_deletions);

    // Forward scan, collecting a few keys to probe with.
    let mut probes: Vec<Vec<u8>> = vec![Vec::new(), b"\xff\xff".to_vec()];
    let mut it = table.iter();
    let mut steps = 0;
    let mut res = it.first();
    while res.is_ok() && it.valid() && steps < MAX_STEPS {
        if steps % 64 == 0 && probes.len() < 16 {
            probes.push(it.key().to_vec());
        }
        let _ = it.value_bytes();
        res = it.next();
        steps += 1;
    }
    if let Err(e) = res {
        assert!(!it.valid());
        let _ = e.to_string();
    }
    // Backward scan.
    let mut steps = 0;
    let mut res = it.last();
    while res.is_ok() && it.valid() && steps < MAX_STEPS {
        res = it.prev();
        steps += 1;
    }
    // Seeks and lookups.
    let mut stats = ReadStats::default();
    let mut key_buf = Vec::new();
    for p in &probes {
        let _ = it.seek_ge(p);
        let _ = it.seek_lt(p);
        if it.valid() {
            let _ = it.next();
            let _ = it.prev();
        }
        let _ = table.get(p);
        let _ = table.point_lookup(Some(p), p, &mut key_buf, &mut stats);
        if let Ok(offset) = table.approximate_offset_of(p) {
            assert!(offset <= size);
        }
    }
});
