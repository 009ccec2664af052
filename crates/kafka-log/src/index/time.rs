//! The time index's entries: 12 bytes `int64 timestamp, int32
//! relativeOffset`.
//!
//! An entry `(t, o)` says: up to offset `o` the largest timestamp seen is
//! `t`. Entries are added only when the timestamp grows, and the last slot
//! is kept for the entry written when the segment rolls, so the last entry
//! of an inactive segment holds its largest timestamp. A lookup returns
//! the last entry with timestamp <= the target (or `(-1, base)`).

use super::{Index, IndexEntry};
use crate::error::{InvalidArgumentSnafu, Result};
use crate::record::layout::NO_TIMESTAMP;

/// A timestamp and the offset it was reached at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimestampOffset {
    /// Milliseconds since the epoch (-1 for none).
    pub timestamp: i64,
    /// Absolute offset.
    pub offset: i64,
}

/// A time-index entry as stored: `(timestamp, relative offset)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeEntry {
    timestamp: i64,
    relative_offset: u32,
}

/// A segment's time index.
pub type TimeIndex = Index<TimeEntry>;

impl IndexEntry for TimeEntry {
    type Absolute = TimestampOffset;

    const SIZE: usize = 12;
    const NAME: &'static str = "time index";
    const RESERVED_SLOTS: usize = 1;

    fn decode(e: &[u8]) -> Result<Self, String> {
        let mut ts = [0; 8];
        ts.copy_from_slice(&e[..8]);
        let timestamp = i64::from_be_bytes(ts);
        let rel = u32::from_be_bytes([e[8], e[9], e[10], e[11]]);
        if rel > i32::MAX as u32 {
            return Err(format!("relative offset {rel} is out of range"));
        }
        Ok(TimeEntry {
            timestamp,
            relative_offset: rel,
        })
    }

    fn encode(self) -> [u8; 12] {
        let mut e = [0; 12];
        e[..8].copy_from_slice(&self.timestamp.to_be_bytes());
        e[8..].copy_from_slice(&self.relative_offset.to_be_bytes());
        e
    }

    fn check_follows(self, prev: Self) -> Result<(), String> {
        let (ts, rel) = (self.timestamp, self.relative_offset);
        let (pts, prel) = (prev.timestamp, prev.relative_offset);
        if ts < pts || rel < prel {
            return Err(format!(
                "entry ({ts}, {rel}) does not follow ({pts}, {prel})"
            ));
        }
        Ok(())
    }

    fn absolute(self, base_offset: i64) -> TimestampOffset {
        TimestampOffset {
            timestamp: self.timestamp,
            offset: base_offset + i64::from(self.relative_offset),
        }
    }

    fn none(base_offset: i64) -> TimestampOffset {
        TimestampOffset {
            timestamp: NO_TIMESTAMP,
            offset: base_offset,
        }
    }

    fn at_or_before(self, target: i64, _base_offset: i64) -> bool {
        self.timestamp <= target
    }
}

impl Index<TimeEntry> {
    /// Adds `(timestamp, offset)` if the timestamp exceeds the last entry's
    /// (Kafka's `maybeAppend`). Unless `skip_full_check`, the index must not
    /// be full.
    pub(crate) fn maybe_append(
        &mut self,
        timestamp: i64,
        offset: i64,
        skip_full_check: bool,
    ) -> Result<()> {
        let last = self.last_entry();
        let rel = offset - self.base_offset;
        let bad = (!skip_full_check && self.is_full())
            || !(0..=i64::from(i32::MAX)).contains(&rel)
            || (!self.is_empty() && (offset < last.offset || timestamp < last.timestamp));
        if bad {
            return InvalidArgumentSnafu {
                message: format!(
                    "cannot append ({timestamp}, {offset}) to time index {} after ({}, {})",
                    self.path().display(),
                    last.timestamp,
                    last.offset
                ),
            }
            .fail();
        }
        if timestamp <= last.timestamp {
            return Ok(());
        }
        self.push(TimeEntry {
            timestamp,
            relative_offset: rel as u32,
        })
    }
}
