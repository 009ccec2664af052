//! Key anchors: a table's key space cut into pieces of about equal size,
//! for splitting a compaction into subcompactions (RocksDB's
//! `ApproximateKeyAnchors`).

use lithify_base::Comparator;

use crate::block::BlockIter;
use crate::error::Result;
use crate::reader::SstReader;

/// A key of the table's index with the approximate number of data bytes
/// from the previous anchor (or the start of the table) up to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyAnchor {
    /// An index separator: `>=` every key before it in the table.
    pub key: Vec<u8>,
    /// Data bytes between the previous anchor and this one.
    pub range_size: u64,
}

impl<C: Comparator> SstReader<C> {
    /// Up to `max` anchors spread evenly over the data blocks (one per
    /// block when there are fewer blocks); the last anchor is the last
    /// block's separator. Read from the in-memory index only.
    pub fn approximate_key_anchors(&self, max: usize) -> Result<Vec<KeyAnchor>> {
        let mut index = BlockIter::new(self.index_block().clone(), Vec::new());
        index.first().map_err(|e| self.index_corrupt(e))?;
        let mut blocks: Vec<(Vec<u8>, u64)> = Vec::new();
        while index.valid() {
            let handle = self.index_handle(&index)?;
            let end = handle.end_with_trailer().unwrap_or(u64::MAX);
            blocks.push((index.key().to_vec(), end));
            index.next().map_err(|e| self.index_corrupt(e))?;
        }
        if blocks.is_empty() || max == 0 {
            return Ok(Vec::new());
        }
        let step = blocks.len().div_ceil(max);
        let mut anchors = Vec::with_capacity(blocks.len() / step + 1);
        let mut previous_end = 0u64;
        let last = blocks.len() - 1;
        for (i, (key, end)) in blocks.into_iter().enumerate() {
            if (i + 1) % step == 0 || i == last {
                anchors.push(KeyAnchor {
                    key,
                    range_size: end.saturating_sub(previous_end),
                });
                previous_end = end;
            }
        }
        Ok(anchors)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use lithify_vfs::{FileSystem, MemFs};

    use crate::{SstBuilder, SstOptions, SstReader};

    #[test]
    fn anchors_cover_the_table_in_order() {
        let fs = MemFs::new();
        let opts = SstOptions::default().block_size(256);
        let path = Path::new("/a.sst");
        let mut b = SstBuilder::new(fs.create(path).unwrap(), path, &opts).unwrap();
        for i in 0..1000u32 {
            b.add(format!("key{i:05}").as_bytes(), &[7u8; 40]).unwrap();
        }
        let built = b.finish().unwrap();
        let table = Arc::new(
            SstReader::open(fs.open(path).unwrap(), path, built.file_size, &opts, None).unwrap(),
        );
        let anchors = table.approximate_key_anchors(16).unwrap();
        assert!(
            anchors.len() <= 16 && anchors.len() >= 8,
            "{}",
            anchors.len()
        );
        assert!(anchors.windows(2).all(|w| w[0].key < w[1].key));
        let total: u64 = anchors.iter().map(|a| a.range_size).sum();
        assert_eq!(total, built.properties.data_size);
        assert!(anchors.last().unwrap().key.as_slice() >= b"key00999".as_slice());
        assert!(table.approximate_key_anchors(0).unwrap().is_empty());
    }
}
