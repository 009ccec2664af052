//! Key/value blocks: data, index, range-deletion, properties and metaindex
//! blocks all share this layout.
//!
//! ```text
//! +---------+---------+-----+-----------+-----------+-----+------------------+
//! | entry 0 | entry 1 | ... | restart 0 | restart 1 | ... | num_restarts     |
//! +---------+---------+-----+-----------+-----------+-----+------------------+
//!                             u32 LE each                   u32 LE
//!
//! entry = varint32 shared | varint32 unshared | varint32 value_len
//!         | key[shared..] (unshared bytes) | value (value_len bytes)
//! ```
//!
//! `shared` is the length of the prefix the key has in common with the
//! previous key of the block. Every `restart_interval`-th entry is a
//! **restart point**: it stores its whole key (`shared = 0`) and its offset is
//! listed in the restart array, so a seek binary-searches the restart points
//! and then scans at most `restart_interval` entries. An empty block has no
//! restart point (`num_restarts = 0`).

mod builder;
mod iter;

pub use builder::BlockBuilder;
pub use iter::BlockIter;

use bytes::Bytes;
use lithify_base::coding::decode_varint32;

/// What is wrong with a block, and where (offset within the decoded block).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockError {
    /// Offset within the (uncompressed) block.
    pub at: usize,
    /// What is wrong, as a phrase.
    pub what: &'static str,
}

impl std::fmt::Display for BlockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at byte {} of the block", self.what, self.at)
    }
}

fn err<T>(at: usize, what: &'static str) -> Result<T, BlockError> {
    Err(BlockError { at, what })
}

/// A decoded block: its bytes and where its restart array starts. Cheap to
/// clone (the bytes are shared).
#[derive(Debug, Clone)]
pub struct Block {
    data: Bytes,
    /// Offset of the restart array, which is also the end of the entries.
    restarts_at: u32,
    num_restarts: u32,
}

/// The header fields of one entry.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EntryHeader {
    pub shared: u32,
    pub unshared: u32,
    pub value_len: u32,
    /// Offset of the key suffix.
    pub key_at: u32,
}

impl EntryHeader {
    /// Offset of the value.
    #[inline]
    pub(crate) fn value_at(&self) -> u32 {
        self.key_at + self.unshared
    }

    /// Offset just past the entry.
    #[inline]
    pub(crate) fn end(&self) -> u32 {
        self.key_at + self.unshared + self.value_len
    }
}

impl Block {
    /// A block without entries.
    pub fn empty() -> Block {
        Block {
            data: Bytes::from_static(&[0, 0, 0, 0]),
            restarts_at: 0,
            num_restarts: 0,
        }
    }

    /// Checks the restart count of `data` and wraps it. Entries are checked
    /// as they are decoded.
    pub fn new(data: Bytes) -> Result<Block, BlockError> {
        let len = data.len();
        if len < 4 {
            return err(0, "block shorter than its restart count");
        }
        if len > u32::MAX as usize {
            return err(0, "block larger than 4 GiB");
        }
        let mut count = [0u8; 4];
        count.copy_from_slice(&data[len - 4..]);
        let num_restarts = u32::from_le_bytes(count);
        let array_len = u64::from(num_restarts) * 4 + 4;
        if array_len > len as u64 {
            return err(len - 4, "restart count larger than the block");
        }
        let restarts_at = (len as u64 - array_len) as u32;
        if (num_restarts == 0) != (restarts_at == 0) {
            return err(len - 4, "restart count does not match the entries");
        }
        Ok(Block {
            data,
            restarts_at,
            num_restarts,
        })
    }

    /// The block's bytes.
    pub fn data(&self) -> &Bytes {
        &self.data
    }

    /// The block's bytes, giving the block up.
    pub(crate) fn into_data(self) -> Bytes {
        self.data
    }

    /// Whether the block has no entries.
    pub fn is_empty(&self) -> bool {
        self.num_restarts == 0
    }

    /// Number of restart points.
    pub fn num_restarts(&self) -> u32 {
        self.num_restarts
    }

    /// Offset of restart point `i`, checked to lie among the entries.
    #[inline]
    pub(crate) fn restart(&self, i: u32) -> Result<u32, BlockError> {
        debug_assert!(i < self.num_restarts);
        let at = self.restarts_at as usize + 4 * i as usize;
        let mut b = [0u8; 4];
        b.copy_from_slice(&self.data[at..at + 4]);
        let offset = u32::from_le_bytes(b);
        if offset >= self.restarts_at {
            return err(at, "restart offset points past the entries");
        }
        Ok(offset)
    }

    /// End of the entries (start of the restart array).
    #[inline]
    pub(crate) fn entries_end(&self) -> u32 {
        self.restarts_at
    }

    /// Decodes the header of the entry at `at`, checking that the whole
    /// entry lies among the entries.
    #[inline]
    pub(crate) fn entry_header(&self, at: u32) -> Result<EntryHeader, BlockError> {
        let end = self.restarts_at as usize;
        let start = at as usize;
        if start >= end {
            return err(start, "entry starts past the entries");
        }
        let src = &self.data[start..end];
        // Fast path: three one-byte varints.
        let (shared, unshared, value_len, header_len) =
            if src.len() >= 3 && (src[0] | src[1] | src[2]) < 0x80 {
                (
                    u32::from(src[0]),
                    u32::from(src[1]),
                    u32::from(src[2]),
                    3usize,
                )
            } else {
                let bad = |_| BlockError {
                    at: start,
                    what: "bad entry header varint",
                };
                let (shared, n1) = decode_varint32(src).map_err(bad)?;
                let (unshared, n2) = decode_varint32(&src[n1..]).map_err(bad)?;
                let (value_len, n3) = decode_varint32(&src[n1 + n2..]).map_err(bad)?;
                (shared, unshared, value_len, n1 + n2 + n3)
            };
        let key_at = start + header_len;
        let entry_end = key_at as u64 + u64::from(unshared) + u64::from(value_len);
        if entry_end > end as u64 {
            return err(start, "entry runs past the entries");
        }
        Ok(EntryHeader {
            shared,
            unshared,
            value_len,
            key_at: key_at as u32,
        })
    }

    /// The whole key of the restart entry at `at` (it must share nothing).
    #[inline]
    pub(crate) fn restart_key(&self, at: u32) -> Result<&[u8], BlockError> {
        let h = self.entry_header(at)?;
        if h.shared != 0 {
            return err(at as usize, "restart entry shares a key prefix");
        }
        Ok(&self.data[h.key_at as usize..h.value_at() as usize])
    }
}

#[cfg(test)]
mod tests;
