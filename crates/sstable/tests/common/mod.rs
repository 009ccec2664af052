//! Helpers shared by the integration tests.
#![allow(dead_code, unreachable_pub)]

use std::path::Path;
use std::sync::Arc;

use lithify_base::{Comparator, InternalIterator};
use lithify_sstable::{BlockCache, BuiltSst, SstBuilder, SstOptions, SstReader};
use lithify_vfs::{FileSystem, MemFs};

/// Builds a table of `entries` (sorted) and `tombstones` at `path` in `fs`.
pub fn build<C: Comparator + Clone>(
    fs: &MemFs,
    path: &str,
    opts: &SstOptions<C>,
    entries: &[(Vec<u8>, Vec<u8>)],
    tombstones: &[(Vec<u8>, Vec<u8>)],
) -> BuiltSst {
    let file = fs.create(Path::new(path)).expect("create");
    let mut b = SstBuilder::new(file, path, opts).expect("builder");
    for (k, v) in entries {
        b.add(k, v).expect("add");
    }
    for (s, e) in tombstones {
        b.add_range_tombstone(s, e).expect("tombstone");
    }
    b.finish().expect("finish")
}

/// Opens the table at `path` in `fs`.
pub fn open<C: Comparator + Clone>(
    fs: &MemFs,
    path: &str,
    opts: &SstOptions<C>,
    cache: Option<Arc<BlockCache>>,
) -> lithify_sstable::Result<Arc<SstReader<C>>> {
    let file = fs.open(Path::new(path)).expect("open");
    let size = fs.file_size(Path::new(path)).expect("size");
    SstReader::open(file, path, size, opts, cache).map(Arc::new)
}

/// Every entry of an iterator, first to last.
pub fn scan_forward(
    it: &mut dyn InternalIterator,
) -> lithify_base::Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut out = Vec::new();
    it.first()?;
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next()?;
    }
    Ok(out)
}

/// Every entry of an iterator, last to first, returned in forward order.
pub fn scan_backward(
    it: &mut dyn InternalIterator,
) -> lithify_base::Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut out = Vec::new();
    it.last()?;
    while it.valid() {
        out.push((it.key().to_vec(), it.value_bytes().to_vec()));
        it.prev()?;
    }
    out.reverse();
    Ok(out)
}
