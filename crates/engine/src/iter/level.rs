//! `LevelIter`: one cursor over all files of a sorted level (L1+), opening
//! each file's table iterator only when the cursor reaches it.

use std::sync::Arc;

use lithify_base::{Comparator, InternalIterator, InternalKeyComparator, Result};
use lithify_sstable::SstIter;

use crate::sst_files::SstFiles;
use crate::super_version::FileHandle;

/// A cursor over the files of one level, in key order. Files are disjoint
/// and sorted, so at most one table iterator is open at a time.
pub(crate) struct LevelIter {
    icmp: InternalKeyComparator,
    opener: Arc<SstFiles>,
    files: Vec<Arc<FileHandle>>,
    /// Index of the file `current` iterates.
    index: usize,
    current: Option<SstIter<InternalKeyComparator>>,
}

impl LevelIter {
    pub(crate) fn new(
        icmp: InternalKeyComparator,
        opener: Arc<SstFiles>,
        files: Vec<Arc<FileHandle>>,
    ) -> Self {
        LevelIter {
            icmp,
            opener,
            files,
            index: 0,
            current: None,
        }
    }

    /// Positions `current` on file `i` (not yet positioned inside it), or
    /// clears it when `i` is out of range.
    fn open(&mut self, i: usize) -> Result<bool> {
        if i >= self.files.len() {
            self.current = None;
            return Ok(false);
        }
        if self.index == i && self.current.is_some() {
            return Ok(true);
        }
        self.current = None;
        let table = self.files[i].sst(&self.opener)?;
        self.current = Some(table.iter());
        self.index = i;
        Ok(true)
    }

    fn skip_forward(&mut self) -> Result<()> {
        while self.current.as_ref().is_some_and(|c| !c.valid()) {
            let next = self.index + 1;
            if !self.open(next)? {
                return Ok(());
            }
            if let Some(c) = &mut self.current {
                c.first()?;
            }
        }
        Ok(())
    }

    fn skip_backward(&mut self) -> Result<()> {
        while self.current.as_ref().is_some_and(|c| !c.valid()) {
            if self.index == 0 {
                self.current = None;
                return Ok(());
            }
            let prev = self.index - 1;
            self.open(prev)?;
            if let Some(c) = &mut self.current {
                c.last()?;
            }
        }
        Ok(())
    }

    fn cur(&self) -> &SstIter<InternalKeyComparator> {
        self.current
            .as_ref()
            .expect("LevelIter::key/value on an invalid iterator")
    }
}

impl InternalIterator for LevelIter {
    fn seek_ge(&mut self, target: &[u8]) -> Result<()> {
        let i = self
            .files
            .partition_point(|f| self.icmp.compare(f.meta.largest.encoded(), target).is_lt());
        if self.open(i)? {
            if let Some(c) = &mut self.current {
                c.seek_ge(target)?;
            }
            self.skip_forward()?;
        }
        Ok(())
    }

    fn seek_lt(&mut self, target: &[u8]) -> Result<()> {
        let i = self
            .files
            .partition_point(|f| self.icmp.compare(f.meta.smallest.encoded(), target).is_lt());
        if i == 0 {
            self.current = None;
            return Ok(());
        }
        self.open(i - 1)?;
        if let Some(c) = &mut self.current {
            c.seek_lt(target)?;
        }
        self.skip_backward()
    }

    fn first(&mut self) -> Result<()> {
        if self.open(0)? {
            if let Some(c) = &mut self.current {
                c.first()?;
            }
            self.skip_forward()?;
        }
        Ok(())
    }

    fn last(&mut self) -> Result<()> {
        if self.files.is_empty() {
            self.current = None;
            return Ok(());
        }
        self.open(self.files.len() - 1)?;
        if let Some(c) = &mut self.current {
            c.last()?;
        }
        self.skip_backward()
    }

    #[inline]
    fn next(&mut self) -> Result<()> {
        if let Some(c) = &mut self.current {
            c.next()?;
            if !c.valid() {
                self.skip_forward()?;
            }
        }
        Ok(())
    }

    fn prev(&mut self) -> Result<()> {
        if let Some(c) = &mut self.current {
            c.prev()?;
            if !c.valid() {
                self.skip_backward()?;
            }
        }
        Ok(())
    }

    #[inline]
    fn valid(&self) -> bool {
        self.current.as_ref().is_some_and(|c| c.valid())
    }

    #[inline]
    fn key(&self) -> &[u8] {
        self.cur().key()
    }

    #[inline]
    fn value(&self) -> &[u8] {
        self.cur().value()
    }

    fn value_bytes(&self) -> bytes::Bytes {
        self.cur().value_bytes()
    }
}
