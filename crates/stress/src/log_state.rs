//! The slots of a log stress run's expected-state file: one head per
//! partition, then one per key (see [`log_expected`](crate::log_expected)
//! for what they mean).

use crate::state_file::{Fields, SLOT_PAYLOAD, put_u32, put_u64};

/// A record's place and kind: its offset and whether it is a tombstone.
pub(crate) type Latest = Option<(i64, bool)>;

const ACKED_TOMBSTONE: u32 = 1;
const PENDING_TOMBSTONE: u32 = 1 << 1;

/// One key of a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct LogKeyState {
    /// The latest acknowledged record of the key.
    pub acked: Latest,
    /// The key's last record in the append in flight.
    pub pending: Latest,
}

impl LogKeyState {
    /// The key's latest record if the log ends at `end` and the append in
    /// flight ended at `pending_end`: the append's record when the append
    /// made it (the log reaches its end), else the acknowledged one. For a
    /// plain batch that is "the record's offset is below `end`"; for a
    /// transaction the append in flight is its COMMIT marker, which decides
    /// every record of the transaction at once.
    pub(crate) fn expected(&self, end: i64, pending_end: i64) -> Latest {
        match self.pending {
            Some(_) if end >= pending_end => self.pending,
            _ => self.acked,
        }
    }

    /// Slot payload: acked offset, pending offset (i64, -1 for none),
    /// flags (u32), 8 zero bytes.
    pub(crate) fn encode(&self) -> [u8; SLOT_PAYLOAD] {
        let mut p = [0u8; SLOT_PAYLOAD];
        let mut flags = 0;
        put_u64(&mut p, 0, self.acked.map_or(-1, |(o, _)| o) as u64);
        put_u64(&mut p, 8, self.pending.map_or(-1, |(o, _)| o) as u64);
        if self.acked.is_some_and(|(_, t)| t) {
            flags |= ACKED_TOMBSTONE;
        }
        if self.pending.is_some_and(|(_, t)| t) {
            flags |= PENDING_TOMBSTONE;
        }
        put_u32(&mut p, 16, flags);
        p
    }

    /// Decodes a slot payload; `None` for values no writer produces.
    pub(crate) fn decode(p: &[u8; SLOT_PAYLOAD]) -> Option<LogKeyState> {
        let f = Fields(p);
        let flags = f.u32(16);
        if flags & !(ACKED_TOMBSTONE | PENDING_TOMBSTONE) != 0 || f.u64(20) != 0 {
            return None;
        }
        let field = |at: usize, tomb: u32| -> Option<Latest> {
            match f.u64(at) as i64 {
                -1 => (flags & tomb == 0).then_some(None),
                o if o >= 0 => Some(Some((o, flags & tomb != 0))),
                _ => None,
            }
        };
        Some(LogKeyState {
            acked: field(0, ACKED_TOMBSTONE)?,
            pending: field(8, PENDING_TOMBSTONE)?,
        })
    }
}

/// One partition's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PartitionState {
    /// Every record below this offset was acknowledged.
    pub acked_end: i64,
    /// The end of the append in flight (`acked_end` if none).
    pub pending_end: i64,
    /// Per key.
    pub keys: Vec<LogKeyState>,
}

impl PartitionState {
    /// Head slot payload: acked end, pending end (i64 each), 12 zero
    /// bytes.
    pub(crate) fn encode_head(&self) -> [u8; SLOT_PAYLOAD] {
        let mut p = [0u8; SLOT_PAYLOAD];
        put_u64(&mut p, 0, self.acked_end as u64);
        put_u64(&mut p, 8, self.pending_end as u64);
        p
    }

    /// Decodes a head slot payload (the keys' states start empty).
    pub(crate) fn decode_head(p: &[u8; SLOT_PAYLOAD], keys: usize) -> Option<PartitionState> {
        let f = Fields(p);
        let (acked_end, pending_end) = (f.u64(0) as i64, f.u64(8) as i64);
        let sane = 0 <= acked_end && acked_end <= pending_end && p[16..].iter().all(|&b| b == 0);
        sane.then(|| PartitionState {
            acked_end,
            pending_end,
            keys: vec![LogKeyState::default(); keys],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latest_is_exact_around_the_crash_point() {
        let s = LogKeyState {
            acked: Some((10, false)),
            pending: Some((20, true)),
        };
        assert_eq!(s.expected(20, 21), Some((10, false)));
        assert_eq!(s.expected(21, 21), Some((20, true)));
        // A transaction's record (at 20) counts only with its marker (21).
        assert_eq!(s.expected(21, 22), Some((10, false)));
        assert_eq!(s.expected(22, 22), Some((20, true)));
        assert_eq!(LogKeyState::decode(&s.encode()), Some(s));
        let empty = LogKeyState::default();
        assert_eq!(LogKeyState::decode(&empty.encode()), Some(empty));
        let mut bad = s.encode();
        bad[16] = 4;
        assert_eq!(LogKeyState::decode(&bad), None);
    }
}
