//! How big tables and memtables get, measured rather than guessed: the
//! simulator builds small real tables with `lithify-sstable` and fits
//! `file size = fixed + per_entry x entries`.

use std::path::Path;

use lithify_base::{InternalKey, InternalKeyComparator, ValueKind};
use lithify_sstable::{SstBuilder, SstOptions};
use lithify_vfs::{FileSystem, MemFs};

use crate::error::{IoSnafu, Result, SstSnafu};
use snafu::ResultExt as _;

/// File size as a function of the number of entries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SizeModel {
    /// Bytes per entry (data, index, filter, restart points).
    pub per_entry: f64,
    /// Bytes per file regardless of entries (meta blocks, footer).
    pub fixed: u64,
}

impl SizeModel {
    /// The size of a file of `entries` entries.
    pub fn file_size(&self, entries: u64) -> u64 {
        self.fixed + (self.per_entry * entries as f64).round() as u64
    }
}

/// db_bench's key layout: the id as 8 big-endian bytes, padded with `'0'`
/// to `key_size` (or truncated to it when shorter).
pub fn db_bench_key(id: u64, key_size: usize, out: &mut Vec<u8>) {
    out.clear();
    let be = id.to_be_bytes();
    let n = key_size.min(8);
    out.extend_from_slice(&be[8 - n..]);
    out.resize(key_size, b'0');
}

fn build(
    options: &SstOptions<InternalKeyComparator>,
    entries: u64,
    key_size: usize,
    value_size: usize,
    stride: u64,
) -> Result<u64> {
    let fs = MemFs::new();
    let path = Path::new("/calibrate.sst");
    let file = fs.create(path).context(IoSnafu {
        op: "creating",
        path,
    })?;
    let mut b = SstBuilder::new(file, path, options).context(SstSnafu)?;
    let mut user = Vec::new();
    // Values vary so that compression, if any, sees realistic data.
    let mut rng = super::workload::SplitMix64::new(42);
    let mut value = vec![0u8; value_size];
    for i in 0..entries {
        db_bench_key(i * stride, key_size, &mut user);
        let key = InternalKey::new(&user, i + 1, ValueKind::Put);
        for chunk in value.chunks_mut(8) {
            let r = rng.next_u64().to_le_bytes();
            chunk.copy_from_slice(&r[..chunk.len()]);
        }
        b.add(key.encoded(), &value).context(SstSnafu)?;
    }
    Ok(b.finish().context(SstSnafu)?.file_size)
}

/// Fits the size model of tables of `key_size`/`value_size` entries
/// (keys `stride` ids apart) built with `options`.
pub fn calibrate(
    options: &SstOptions<InternalKeyComparator>,
    key_size: usize,
    value_size: usize,
    stride: u64,
) -> Result<SizeModel> {
    const SMALL: u64 = 4_000;
    const LARGE: u64 = 20_000;
    let a = build(options, SMALL, key_size, value_size, stride)?;
    let b = build(options, LARGE, key_size, value_size, stride)?;
    let per_entry = (b.saturating_sub(a)) as f64 / (LARGE - SMALL) as f64;
    let fixed = (a as f64 - per_entry * SMALL as f64).max(0.0) as u64;
    Ok(SizeModel { per_entry, fixed })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_model() {
        let mut k = Vec::new();
        db_bench_key(0x0102, 16, &mut k);
        assert_eq!(k, b"\0\0\0\0\0\0\x01\x020000000000"[..16]);
        db_bench_key(0x0102, 4, &mut k);
        assert_eq!(k, [0, 0, 1, 2]);
        let opts = SstOptions::for_internal_keys(InternalKeyComparator::bytewise());
        let m = calibrate(&opts, 16, 100, 2).unwrap();
        // 16 + 8 key bytes and 100 value bytes, minus shared prefixes,
        // plus per-entry headers, restarts, index and filter.
        assert!(m.per_entry > 115.0 && m.per_entry < 135.0, "{m:?}");
        let n = 10_000;
        let actual = build(&opts, n, 16, 100, 2).unwrap();
        let predicted = m.file_size(n);
        assert!(
            (actual as f64 - predicted as f64).abs() / (actual as f64) < 0.01,
            "{actual} vs {predicted}"
        );
    }
}
