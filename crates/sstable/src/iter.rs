//! The table iterator: a two-level cursor (index block, then data block).

use std::sync::Arc;

use bytes::Bytes;
use lithify_base::{Comparator, InternalIterator};

use crate::block::{Block, BlockIter};
use crate::error::Result;
use crate::format::BlockHandle;
use crate::reader::SstReader;
use crate::stats::ReadStats;

/// A cursor over a table's point entries, implementing
/// [`InternalIterator`]. It holds an [`Arc`] of its table, so it lives
/// independently of whoever opened the table (the engine's level iterators
/// keep them). Values are zero-copy slices of the cached block
/// ([`value_bytes`](InternalIterator::value_bytes)). Range tombstones are
/// not returned: see [`SstReader::range_tombstones`].
///
/// Moving within a data block costs no allocation; moving to another block
/// costs a cache lookup (or a read). A seek that lands in the block the
/// cursor is already on reuses it.
pub struct SstIter<C = lithify_base::BytewiseComparator> {
    table: Arc<SstReader<C>>,
    index: BlockIter,
    data: BlockIter,
    /// The block `data` iterates, if any.
    loaded: Option<BlockHandle>,
    stats: ReadStats,
}

impl<C: Comparator> std::fmt::Debug for SstIter<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SstIter")
            .field("table", &self.table.path())
            .field("valid", &self.data.valid())
            .finish_non_exhaustive()
    }
}

impl<C: Comparator> SstIter<C> {
    pub(crate) fn new(table: Arc<SstReader<C>>) -> Self {
        let index = BlockIter::new(table.index_block().clone(), Vec::new());
        SstIter {
            table,
            index,
            data: BlockIter::new(Block::empty(), Vec::new()),
            loaded: None,
            stats: ReadStats::default(),
        }
    }

    /// The table.
    pub fn table(&self) -> &Arc<SstReader<C>> {
        &self.table
    }

    /// Block reads since the iterator was created (or since the last
    /// [`take_read_stats`](Self::take_read_stats)).
    pub fn read_stats(&self) -> ReadStats {
        self.stats
    }

    /// Returns the read statistics and starts counting from zero.
    pub fn take_read_stats(&mut self) -> ReadStats {
        std::mem::take(&mut self.stats)
    }

    fn invalidate(&mut self) {
        self.data.reset(Block::empty());
        self.loaded = None;
    }

    /// Loads the data block the index cursor points at.
    fn load_block(&mut self) -> Result<()> {
        let handle = self.table.index_handle(&self.index)?;
        if self.loaded == Some(handle) {
            return Ok(());
        }
        self.loaded = None;
        let block = self.table.data_block(handle, &mut self.stats)?;
        self.data.reset(block);
        self.loaded = Some(handle);
        Ok(())
    }

    fn data_err(&self, e: crate::block::BlockError) -> crate::Error {
        match self.loaded {
            Some(handle) => self.table.data_corrupt(handle, e),
            None => self.table.corrupt(0, e.to_string()),
        }
    }

    /// Moves forward over exhausted (or empty) blocks.
    fn skip_forward(&mut self) -> Result<()> {
        while !self.data.valid() {
            self.index.next().map_err(|e| self.table.index_corrupt(e))?;
            if !self.index.valid() {
                self.invalidate();
                return Ok(());
            }
            self.load_block()?;
            self.data.first().map_err(|e| self.data_err(e))?;
        }
        Ok(())
    }

    /// Moves backward over exhausted (or empty) blocks.
    fn skip_backward(&mut self) -> Result<()> {
        while !self.data.valid() {
            self.index.prev().map_err(|e| self.table.index_corrupt(e))?;
            if !self.index.valid() {
                self.invalidate();
                return Ok(());
            }
            self.load_block()?;
            self.data.last().map_err(|e| self.data_err(e))?;
        }
        Ok(())
    }

    fn try_seek_ge(&mut self, target: &[u8]) -> Result<()> {
        self.table.index_seek_ge(&mut self.index, target)?;
        if !self.index.valid() {
            self.invalidate();
            return Ok(());
        }
        self.load_block()?;
        let cmp = self.table.comparator();
        self.data
            .seek_ge(target, cmp)
            .map_err(|e| self.data_err(e))?;
        self.skip_forward()
    }

    fn try_seek_lt(&mut self, target: &[u8]) -> Result<()> {
        self.table.index_seek_ge(&mut self.index, target)?;
        if !self.index.valid() {
            // Every key is below `target`: the answer is in the last block.
            self.index.last().map_err(|e| self.table.index_corrupt(e))?;
            if !self.index.valid() {
                self.invalidate();
                return Ok(());
            }
        }
        self.load_block()?;
        let cmp = self.table.comparator();
        self.data
            .seek_lt(target, cmp)
            .map_err(|e| self.data_err(e))?;
        self.skip_backward()
    }

    fn try_first(&mut self) -> Result<()> {
        self.index
            .first()
            .map_err(|e| self.table.index_corrupt(e))?;
        if !self.index.valid() {
            self.invalidate();
            return Ok(());
        }
        self.load_block()?;
        self.data.first().map_err(|e| self.data_err(e))?;
        self.skip_forward()
    }

    fn try_last(&mut self) -> Result<()> {
        self.index.last().map_err(|e| self.table.index_corrupt(e))?;
        if !self.index.valid() {
            self.invalidate();
            return Ok(());
        }
        self.load_block()?;
        self.data.last().map_err(|e| self.data_err(e))?;
        self.skip_backward()
    }

    fn try_next(&mut self) -> Result<()> {
        self.data.next().map_err(|e| self.data_err(e))?;
        self.skip_forward()
    }

    fn try_prev(&mut self) -> Result<()> {
        self.data.prev().map_err(|e| self.data_err(e))?;
        self.skip_backward()
    }

    /// Runs a positioning step; on error the cursor becomes invalid.
    #[inline]
    fn run(&mut self, step: fn(&mut Self) -> Result<()>) -> lithify_base::Result<()> {
        match step(self) {
            Ok(()) => Ok(()),
            Err(e) => {
                self.invalidate();
                Err(e.into())
            }
        }
    }
}

impl<C: Comparator> InternalIterator for SstIter<C> {
    fn seek_ge(&mut self, target: &[u8]) -> lithify_base::Result<()> {
        match self.try_seek_ge(target) {
            Ok(()) => Ok(()),
            Err(e) => {
                self.invalidate();
                Err(e.into())
            }
        }
    }

    fn seek_lt(&mut self, target: &[u8]) -> lithify_base::Result<()> {
        match self.try_seek_lt(target) {
            Ok(()) => Ok(()),
            Err(e) => {
                self.invalidate();
                Err(e.into())
            }
        }
    }

    fn first(&mut self) -> lithify_base::Result<()> {
        self.run(Self::try_first)
    }

    fn last(&mut self) -> lithify_base::Result<()> {
        self.run(Self::try_last)
    }

    #[inline]
    fn next(&mut self) -> lithify_base::Result<()> {
        if !self.data.valid() {
            return Ok(());
        }
        self.run(Self::try_next)
    }

    fn prev(&mut self) -> lithify_base::Result<()> {
        if !self.data.valid() {
            return Ok(());
        }
        self.run(Self::try_prev)
    }

    #[inline]
    fn valid(&self) -> bool {
        self.data.valid()
    }

    #[inline]
    fn key(&self) -> &[u8] {
        self.data.key()
    }

    #[inline]
    fn value(&self) -> &[u8] {
        self.data.value()
    }

    #[inline]
    fn value_bytes(&self) -> Bytes {
        self.data.value_bytes()
    }
}
