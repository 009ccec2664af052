//! The offset index's entries: 8 bytes `int32 relativeOffset, int32
//! position`, mapping an offset (relative to the segment's base offset) to
//! the byte position of a batch in the `.log`.
//!
//! An entry `(o, p)` says: the batch starting at position `p` has last
//! offset `o`, so every batch before `p` ends below `o`. A lookup returns
//! the last entry with offset <= the target (or `(base, 0)`), and the read
//! scans forward from there. Offsets strictly increase from entry to entry,
//! positions never decrease.

use super::{Index, IndexEntry};
use crate::error::{InvalidArgumentSnafu, Result};

/// An offset and the byte position of the batch holding it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetPosition {
    /// Absolute offset.
    pub offset: i64,
    /// Byte position in the segment's `.log`.
    pub position: u32,
}

/// An offset-index entry as stored: `(relative offset, position)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetEntry {
    relative_offset: u32,
    position: u32,
}

/// A segment's offset index.
pub type OffsetIndex = Index<OffsetEntry>;

impl IndexEntry for OffsetEntry {
    type Absolute = OffsetPosition;

    const SIZE: usize = 8;
    const NAME: &'static str = "offset index";
    const RESERVED_SLOTS: usize = 0;

    fn decode(e: &[u8]) -> Result<Self, String> {
        let rel = u32::from_be_bytes([e[0], e[1], e[2], e[3]]);
        let pos = u32::from_be_bytes([e[4], e[5], e[6], e[7]]);
        if rel > i32::MAX as u32 || pos > i32::MAX as u32 {
            return Err(format!("entry ({rel}, {pos}) is out of range"));
        }
        Ok(OffsetEntry {
            relative_offset: rel,
            position: pos,
        })
    }

    fn encode(self) -> [u8; 12] {
        let mut e = [0; 12];
        e[..4].copy_from_slice(&self.relative_offset.to_be_bytes());
        e[4..8].copy_from_slice(&self.position.to_be_bytes());
        e
    }

    fn check_follows(self, prev: Self) -> Result<(), String> {
        let (rel, pos) = (self.relative_offset, self.position);
        let (prev_rel, prev_pos) = (prev.relative_offset, prev.position);
        if rel <= prev_rel || pos < prev_pos {
            return Err(format!(
                "entry ({rel}, {pos}) does not follow ({prev_rel}, {prev_pos})"
            ));
        }
        Ok(())
    }

    fn absolute(self, base_offset: i64) -> OffsetPosition {
        OffsetPosition {
            offset: base_offset + i64::from(self.relative_offset),
            position: self.position,
        }
    }

    fn none(base_offset: i64) -> OffsetPosition {
        OffsetPosition {
            offset: base_offset,
            position: 0,
        }
    }

    fn at_or_before(self, target: i64, base_offset: i64) -> bool {
        i64::from(self.relative_offset) <= target - base_offset
    }
}

impl Index<OffsetEntry> {
    /// Adds `(offset, position)`; the offset must exceed the last entry's
    /// and the index must not be full.
    pub(crate) fn append(&mut self, offset: i64, position: u32) -> Result<()> {
        let rel = offset - self.base_offset;
        let ok = (0..=i64::from(i32::MAX)).contains(&rel)
            && !self.is_full()
            && self
                .last_stored()
                .is_none_or(|e| i64::from(e.relative_offset) < rel);
        if !ok {
            return InvalidArgumentSnafu {
                message: format!(
                    "cannot append offset {offset} to offset index {} ({} of {} entries used)",
                    self.path().display(),
                    self.len(),
                    self.max_entries()
                ),
            }
            .fail();
        }
        self.push(OffsetEntry {
            relative_offset: rel as u32,
            position,
        })
    }
}
