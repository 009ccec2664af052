//! A cursor over one block.

use std::borrow::Borrow;
use std::cmp::Ordering;

use bytes::Bytes;
use lithify_base::Comparator;

use super::{Block, BlockError, err};

/// Where the current key lives.
#[derive(Debug, Clone, Copy)]
enum KeyAt {
    /// The whole key is stored in the block (`shared = 0`): no copy.
    InBlock { start: u32, len: u32 },
    /// The key was rebuilt in the iterator's buffer.
    Buffer,
}

/// A cursor over the entries of a [`Block`], forward and backward.
///
/// Keys of restart entries are borrowed from the block; others are rebuilt
/// in a buffer that is kept across blocks ([`reset`](Self::reset)), so
/// iterating does not allocate once the buffer has grown to the longest key.
/// Values are slices of the block's [`Bytes`].
///
/// The cursor owns its [`Block`] (a cheap clone) by default; a
/// `BlockIter<&Block>` borrows one instead, which saves the reference-count
/// traffic of a clone for short-lived cursors (a table's point lookup walks
/// its pinned index block that way).
#[derive(Debug)]
pub struct BlockIter<B: Borrow<Block> = Block> {
    block: B,
    /// Offset of the current entry (meaningful when `valid`).
    cur: u32,
    /// Offset of the entry after the current one.
    next: u32,
    /// Restart point at or before `cur`.
    restart_index: u32,
    key: KeyAt,
    key_buf: Vec<u8>,
    value_at: u32,
    value_len: u32,
    valid: bool,
}

/// The block a cursor's `B` stands for (a field-level borrow, so the key
/// buffer stays writable while the block is read).
#[inline]
fn as_block<B: Borrow<Block>>(block: &B) -> &Block {
    block.borrow()
}

impl<B: Borrow<Block>> BlockIter<B> {
    /// An unpositioned cursor over `block`, using `key_buf` as its key
    /// buffer.
    pub fn new(block: B, key_buf: Vec<u8>) -> Self {
        BlockIter {
            block,
            cur: 0,
            next: 0,
            restart_index: 0,
            key: KeyAt::Buffer,
            key_buf,
            value_at: 0,
            value_len: 0,
            valid: false,
        }
    }

    /// Switches to another block, keeping the key buffer; unpositioned.
    pub fn reset(&mut self, block: B) {
        self.block = block;
        self.valid = false;
        self.key = KeyAt::Buffer;
        self.key_buf.clear();
    }

    /// Gives the key buffer back.
    pub fn into_key_buf(self) -> Vec<u8> {
        self.key_buf
    }

    /// Gives the key buffer back holding the current key (which must be
    /// valid).
    pub fn into_current_key(mut self) -> Vec<u8> {
        if let KeyAt::InBlock { start, len } = self.key {
            self.key_buf.clear();
            self.key_buf.extend_from_slice(
                &as_block(&self.block).data[start as usize..(start + len) as usize],
            );
        }
        self.key_buf
    }

    /// The current key as shared bytes: a slice of the block for restart
    /// entries, a copy otherwise. Requires `valid()`.
    pub fn key_bytes(&self) -> Bytes {
        match self.key {
            KeyAt::InBlock { start, len } => self
                .block()
                .data
                .slice(start as usize..(start + len) as usize),
            KeyAt::Buffer => Bytes::copy_from_slice(&self.key_buf),
        }
    }

    /// The block.
    #[inline]
    pub fn block(&self) -> &Block {
        as_block(&self.block)
    }

    /// Whether the cursor is on an entry.
    #[inline]
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current key. Requires `valid()`.
    #[inline]
    pub fn key(&self) -> &[u8] {
        debug_assert!(self.valid);
        match self.key {
            KeyAt::InBlock { start, len } => {
                &as_block(&self.block).data[start as usize..start as usize + len as usize]
            }
            KeyAt::Buffer => &self.key_buf,
        }
    }

    /// The current value. Requires `valid()`.
    #[inline]
    pub fn value(&self) -> &[u8] {
        debug_assert!(self.valid);
        let at = self.value_at as usize;
        &as_block(&self.block).data[at..at + self.value_len as usize]
    }

    /// The current value as a zero-copy slice of the block. Requires
    /// `valid()`.
    #[inline]
    pub fn value_bytes(&self) -> Bytes {
        let at = self.value_at as usize;
        as_block(&self.block)
            .data
            .slice(at..at + self.value_len as usize)
    }

    /// Offset of the current entry within the block.
    pub fn entry_offset(&self) -> u32 {
        self.cur
    }

    /// Positions before restart point `i`: the next `parse_next` decodes it.
    fn seek_to_restart(&mut self, i: u32) -> Result<(), BlockError> {
        self.next = self.block().restart(i)?;
        self.restart_index = i;
        self.key = KeyAt::Buffer;
        self.key_buf.clear();
        self.valid = false;
        Ok(())
    }

    /// Decodes the entry at `self.next`; invalid at the end of the entries.
    #[inline]
    fn parse_next(&mut self) -> Result<(), BlockError> {
        let at = self.next;
        if at >= self.block().entries_end() {
            self.valid = false;
            return Ok(());
        }
        self.valid = false;
        let h = self.block().entry_header(at)?;
        let data = &as_block(&self.block).data;
        if h.shared == 0 {
            self.key = KeyAt::InBlock {
                start: h.key_at,
                len: h.unshared,
            };
        } else {
            let shared = h.shared as usize;
            match self.key {
                KeyAt::InBlock { start, len } => {
                    if shared > len as usize {
                        return err(at as usize, "shared prefix longer than the previous key");
                    }
                    self.key_buf.clear();
                    self.key_buf
                        .extend_from_slice(&data[start as usize..start as usize + shared]);
                }
                KeyAt::Buffer => {
                    if shared > self.key_buf.len() {
                        return err(at as usize, "shared prefix longer than the previous key");
                    }
                    self.key_buf.truncate(shared);
                }
            }
            self.key_buf
                .extend_from_slice(&data[h.key_at as usize..h.value_at() as usize]);
            self.key = KeyAt::Buffer;
        }
        self.cur = at;
        self.next = h.end();
        self.value_at = h.value_at();
        self.value_len = h.value_len;
        // Keep `restart_index` on the last restart point at or before `cur`.
        while self.restart_index + 1 < self.block().num_restarts
            && self.block().restart(self.restart_index + 1)? <= at
        {
            self.restart_index += 1;
        }
        self.valid = true;
        Ok(())
    }

    /// Positions at the entry of restart point `i`; invalid when `i` is
    /// past the last restart point.
    pub(crate) fn seek_to_restart_entry(&mut self, i: u32) -> Result<(), BlockError> {
        self.valid = false;
        if i >= self.block().num_restarts {
            return Ok(());
        }
        self.seek_to_restart(i)?;
        self.parse_next()
    }

    /// Positions at the first entry.
    pub fn first(&mut self) -> Result<(), BlockError> {
        self.valid = false;
        if self.block().is_empty() {
            return Ok(());
        }
        self.seek_to_restart(0)?;
        self.parse_next()
    }

    /// Positions at the last entry.
    pub fn last(&mut self) -> Result<(), BlockError> {
        self.valid = false;
        if self.block().is_empty() {
            return Ok(());
        }
        self.seek_to_restart(self.block().num_restarts - 1)?;
        self.parse_next()?;
        while self.valid && self.next < self.block().entries_end() {
            self.parse_next()?;
        }
        Ok(())
    }

    /// Moves to the next entry (no-op when not valid). Named like the
    /// cursor methods of [`InternalIterator`](lithify_base::InternalIterator).
    #[allow(clippy::should_implement_trait)]
    #[inline]
    pub fn next(&mut self) -> Result<(), BlockError> {
        if !self.valid {
            return Ok(());
        }
        self.parse_next()
    }

    /// Moves to the previous entry (no-op when not valid).
    pub fn prev(&mut self) -> Result<(), BlockError> {
        if !self.valid {
            return Ok(());
        }
        let original = self.cur;
        // Find the last restart point strictly before the current entry.
        let mut ri = self.restart_index;
        loop {
            if self.block().restart(ri)? < original {
                break;
            }
            if ri == 0 {
                // The current entry is the first one.
                self.valid = false;
                return Ok(());
            }
            ri -= 1;
        }
        self.seek_to_restart(ri)?;
        // Scan to the entry that ends where the original one starts.
        loop {
            self.parse_next()?;
            if !self.valid {
                return err(
                    original as usize,
                    "entries do not lead to the current entry",
                );
            }
            match self.next.cmp(&original) {
                Ordering::Less => {}
                Ordering::Equal => return Ok(()),
                Ordering::Greater => {
                    self.valid = false;
                    return err(
                        original as usize,
                        "entries do not lead to the current entry",
                    );
                }
            }
        }
    }

    /// Positions at the first entry with key `>= target`.
    pub fn seek_ge<C: Comparator + ?Sized>(
        &mut self,
        target: &[u8],
        cmp: &C,
    ) -> Result<(), BlockError> {
        self.valid = false;
        if self.block().is_empty() {
            return Ok(());
        }
        // Binary search for the last restart point whose key is < target.
        let (mut lo, mut hi) = (0u32, self.block().num_restarts - 1);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            let at = self.block().restart(mid)?;
            let key = self.block().restart_key(at)?;
            if cmp.compare(key, target) == Ordering::Less {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        self.seek_to_restart(lo)?;
        loop {
            self.parse_next()?;
            if !self.valid || cmp.compare(self.key(), target) != Ordering::Less {
                return Ok(());
            }
        }
    }

    /// Positions at the last entry with key `< target`.
    pub fn seek_lt<C: Comparator + ?Sized>(
        &mut self,
        target: &[u8],
        cmp: &C,
    ) -> Result<(), BlockError> {
        self.seek_ge(target, cmp)?;
        if self.valid { self.prev() } else { self.last() }
    }
}
