//! The two slot layouts and the capacity arithmetic they imply.
//!
//! Both layouts cut the map's memory into `memory / bytes_per_entry` slots;
//! slot `i` is the bytes `[i * bytes_per_entry, (i + 1) * bytes_per_entry)`,
//! and a slot whose bytes are all zero is empty. The trailing
//! `memory % bytes_per_entry` bytes are never used (and not allocated).
//!
//! **Kafka** (24 bytes, Kafka's `SkimpyOffsetMap` with MD5):
//!
//! ```text
//! +--------------------------------+----------------------+
//! | key digest (16 bytes)          | offset (i64, BE)     |
//! +--------------------------------+----------------------+
//!  0                             15 16                   23
//! ```
//!
//! **Compact** (20 bytes, lithify's own):
//!
//! ```text
//! +--------------------------------+-------------------------------+
//! | key digest (16 bytes)          | offset - base_offset (u32 BE) |
//! +--------------------------------+-------------------------------+
//!  0                             15 16                           19
//! ```
//!
//! The compact layout stores offsets `base_offset ..= base_offset +
//! u32::MAX` only, where `base_offset` is chosen when the map is
//! [reset](crate::OffsetMap::reset). A cleaner that maps the dirty section
//! `[firstDirtyOffset, firstUncleanableOffset)` sets the base to
//! `firstDirtyOffset`; any section shorter than 2^32 offsets fits.
//!
//! Capacity at Kafka's defaults (128 MiB, load factor 0.9):
//!
//! | layout  | slots                     | keys per cleaning round       |
//! |---------|---------------------------|-------------------------------|
//! | Kafka   | 134,217,728 / 24 = 5,592,405 | floor(5,592,405 x 0.9) = 5,033,164 |
//! | Compact | 134,217,728 / 20 = 6,710,886 | floor(6,710,886 x 0.9) = 6,039,797 |
//!
//! ```
//! use lithify_offsetmap::{Layout, LoadFactor};
//!
//! let memory = 128 << 20;
//! assert_eq!(LoadFactor::KAFKA_DEFAULT.max_entries(Layout::Kafka.slots_for(memory)), 5_033_164);
//! assert_eq!(LoadFactor::KAFKA_DEFAULT.max_entries(Layout::Compact.slots_for(memory)), 6_039_797);
//! ```

/// How a slot stores a key's digest and offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Layout {
    /// Kafka's 24-byte slot: 16-byte digest, offset as a big-endian `i64`.
    /// With [`DigestKind::Md5`](crate::DigestKind::Md5) the map's memory is
    /// byte for byte what Kafka's `SkimpyOffsetMap` holds. The default.
    #[default]
    Kafka,
    /// A 20-byte slot: 16-byte digest, then the offset as a big-endian `u32`
    /// delta from the map's base offset. Holds 20% more keys in the same
    /// memory.
    Compact,
}

impl Layout {
    /// Bytes per slot: 24 or 20.
    pub const fn bytes_per_entry(self) -> usize {
        match self {
            Layout::Kafka => KafkaSlot::BYTES,
            Layout::Compact => CompactSlot::BYTES,
        }
    }

    /// The slots `memory` bytes make: `floor(memory / bytes_per_entry)`.
    pub const fn slots_for(self, memory: usize) -> usize {
        memory / self.bytes_per_entry()
    }
}

/// Digest bytes at the start of every slot.
pub(crate) const DIGEST_BYTES: usize = 16;

/// How one layout reads and writes the part of a slot after the digest; the
/// probing code is generic over it so that each layout gets its own loop.
///
/// A slot is empty when its digest and its suffix are both zero.
pub(crate) trait SlotFormat {
    /// Bytes per slot.
    const BYTES: usize;

    /// The suffix of the slot at byte `pos` of `buf`, as an integer.
    fn suffix(buf: &[u8], pos: usize) -> u64;

    /// The offset a suffix stands for.
    fn offset(suffix: u64, base_offset: u64) -> u64;

    /// Writes the suffix that stands for `offset` into the slot at `pos`;
    /// the caller has checked that the layout can store it (for the compact
    /// layout, `base_offset <= offset <= base_offset + u32::MAX`).
    fn write_offset(buf: &mut [u8], pos: usize, offset: u64, base_offset: u64);
}

/// The digest of the slot at `pos`, as a native-endian integer (only ever
/// compared for equality, and with zero).
#[inline]
pub(crate) fn slot_digest(buf: &[u8], pos: usize) -> u128 {
    let mut bytes = [0u8; DIGEST_BYTES];
    bytes.copy_from_slice(&buf[pos..pos + DIGEST_BYTES]);
    u128::from_ne_bytes(bytes)
}

/// Writes the digest into the slot at `pos`.
#[inline]
pub(crate) fn write_digest(buf: &mut [u8], pos: usize, digest: &[u8; DIGEST_BYTES]) {
    buf[pos..pos + DIGEST_BYTES].copy_from_slice(digest);
}

/// Kafka's 24-byte slot.
pub(crate) struct KafkaSlot;

impl SlotFormat for KafkaSlot {
    const BYTES: usize = 24;

    #[inline]
    fn suffix(buf: &[u8], pos: usize) -> u64 {
        let mut be = [0u8; 8];
        be.copy_from_slice(&buf[pos + DIGEST_BYTES..pos + Self::BYTES]);
        u64::from_be_bytes(be)
    }

    #[inline]
    fn offset(suffix: u64, _base_offset: u64) -> u64 {
        // Stored offsets are at most i64::MAX, so reading the big-endian i64
        // as a u64 gives Kafka's value.
        suffix
    }

    #[inline]
    fn write_offset(buf: &mut [u8], pos: usize, offset: u64, _base_offset: u64) {
        buf[pos + DIGEST_BYTES..pos + Self::BYTES].copy_from_slice(&offset.to_be_bytes());
    }
}

/// The compact 20-byte slot.
pub(crate) struct CompactSlot;

impl SlotFormat for CompactSlot {
    const BYTES: usize = 20;

    #[inline]
    fn suffix(buf: &[u8], pos: usize) -> u64 {
        let mut be = [0u8; 4];
        be.copy_from_slice(&buf[pos + DIGEST_BYTES..pos + Self::BYTES]);
        u64::from(u32::from_be_bytes(be))
    }

    #[inline]
    fn offset(suffix: u64, base_offset: u64) -> u64 {
        base_offset + suffix
    }

    #[inline]
    fn write_offset(buf: &mut [u8], pos: usize, offset: u64, base_offset: u64) {
        // Checked by the caller: the delta fits 32 bits.
        let delta = (offset - base_offset) as u32;
        buf[pos + DIGEST_BYTES..pos + Self::BYTES].copy_from_slice(&delta.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_counts_follow_kafka_integer_division() {
        assert_eq!(Layout::Kafka.slots_for(4096), 170);
        assert_eq!(Layout::Kafka.slots_for(72), 3);
        assert_eq!(Layout::Kafka.slots_for(23), 0);
        assert_eq!(Layout::Kafka.slots_for(128 << 20), 5_592_405);
        assert_eq!(Layout::Compact.slots_for(4096), 204);
        assert_eq!(Layout::Compact.slots_for(128 << 20), 6_710_886);
    }

    #[test]
    fn slots_round_trip_offsets() {
        let mut buf = vec![0u8; 48];
        assert_eq!((slot_digest(&buf, 24), KafkaSlot::suffix(&buf, 24)), (0, 0));
        KafkaSlot::write_offset(&mut buf, 24, i64::MAX as u64, 0);
        assert_eq!(
            KafkaSlot::offset(KafkaSlot::suffix(&buf, 24), 0),
            i64::MAX as u64
        );
        assert_eq!(
            buf[40..48],
            [0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
        );
        assert_eq!(buf[..40], [0; 40]);

        let mut buf = vec![0u8; 40];
        CompactSlot::write_offset(&mut buf, 20, 1_000 + u64::from(u32::MAX), 1_000);
        assert_eq!(buf[36..40], [0xff; 4]);
        assert_eq!(
            CompactSlot::offset(CompactSlot::suffix(&buf, 20), 1_000),
            1_000 + u64::from(u32::MAX)
        );
        write_digest(&mut buf, 0, &[7; 16]);
        assert_eq!(slot_digest(&buf, 0), u128::from_ne_bytes([7; 16]));
        assert_eq!(buf[16..36], [0; 20]);
    }
}
