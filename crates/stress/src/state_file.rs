//! The bytes of an expected-state file (spec in `docs/FORMATS.md`,
//! "Expected-state file").
//!
//! A 64-byte header, then fixed-size 32-byte slots. Every part carries its
//! own checksum and is rewritten in place with one positional write, so a
//! process killed at any instant leaves each header and slot either old or
//! new, never torn: a write inside one 4 KiB page is all or nothing against
//! SIGKILL, and no header or slot crosses a page boundary (64 and 32 divide
//! 4096).
//!
//! This module knows only the framing; what a slot's 28 payload bytes mean
//! belongs to the engine's and the log's expected state. The fuzz target
//! `stress_state_file` feeds [`decode_file`] garbage.
//!
//! ```
//! use lithify_stress::state_file::{Header, StateKind, decode_file, encode_file};
//!
//! let header = Header { kind: StateKind::Db, slots: 2, keys: 2, max_value_size: 64, durable_stamp: 7 };
//! let slots = [[1u8; 28], [2u8; 28]];
//! let mut file = encode_file(&header, &slots);
//! assert_eq!(decode_file(&file).unwrap(), (header, slots.to_vec()));
//! file[64 + 32] ^= 1; // damage the second slot
//! assert_eq!(decode_file(&file).unwrap_err().offset, 64 + 32);
//! ```

use std::fmt;

use lithify_base::checksum::masked_xxh3_64;

/// The file's first 8 bytes.
pub const MAGIC: [u8; 8] = *b"LTHXSTAT";
/// The format version this code writes and reads.
pub const VERSION: u32 = 1;
/// Bytes of the header.
pub const HEADER_LEN: usize = 64;
/// Bytes of a slot.
pub const SLOT_LEN: usize = 32;
/// Payload bytes of a slot (the rest is its checksum).
pub const SLOT_PAYLOAD: usize = SLOT_LEN - 4;
/// Largest number of slots a file may declare (16 GiB of slots), so a
/// damaged count never asks for an absurd allocation.
pub const MAX_SLOTS: u64 = 1 << 29;

/// What the slots describe. Numbers are part of the format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateKind {
    /// One slot per key of an engine stress run.
    Db = 1,
    /// Per partition of a log stress run: one partition slot, then one
    /// slot per key.
    Log = 2,
}

/// The decoded header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// What the slots describe.
    pub kind: StateKind,
    /// Number of slots after the header.
    pub slots: u64,
    /// Keys of the key space (per partition for a log run).
    pub keys: u64,
    /// Largest value size the values are generated with.
    pub max_value_size: u32,
    /// The engine run's durability stamp (0 for a log run): every write
    /// acknowledged with a stamp at or below it is durable.
    pub durable_stamp: u64,
}

/// A header or slot that does not decode: where, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// Byte offset in the file of the damaged part.
    pub offset: u64,
    /// What is wrong, as a sentence fragment.
    pub message: String,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at byte {})", self.message, self.offset)
    }
}

fn checksum32(parts: &[&[u8]]) -> u32 {
    masked_xxh3_64(parts) as u32
}

/// Byte offset of slot `index`.
pub fn slot_offset(index: u64) -> u64 {
    HEADER_LEN as u64 + index * SLOT_LEN as u64
}

impl Header {
    /// The header's 64 bytes.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&(self.kind as u32).to_le_bytes());
        b[16..24].copy_from_slice(&self.slots.to_le_bytes());
        b[24..32].copy_from_slice(&self.keys.to_le_bytes());
        b[32..36].copy_from_slice(&self.max_value_size.to_le_bytes());
        b[36..44].copy_from_slice(&self.durable_stamp.to_le_bytes());
        // 44..60 reserved, zero.
        let sum = checksum32(&[&b[..60]]);
        b[60..64].copy_from_slice(&sum.to_le_bytes());
        b
    }

    /// Decodes the first 64 bytes of `file`, checking magic, version,
    /// checksum and that `file` holds every slot declared.
    pub fn decode(file: &[u8]) -> Result<Header, DecodeError> {
        let fail = |offset: u64, message: String| Err(DecodeError { offset, message });
        if file.len() < HEADER_LEN {
            return fail(
                0,
                format!(
                    "the file has {} bytes, fewer than the {HEADER_LEN}-byte header",
                    file.len()
                ),
            );
        }
        let b = &file[..HEADER_LEN];
        if b[0..8] != MAGIC {
            return fail(0, "the magic number is not LTHXSTAT".to_string());
        }
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64_at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(a)
        };
        let stored = u32_at(60);
        let computed = checksum32(&[&b[..60]]);
        if stored != computed {
            return fail(
                60,
                format!(
                    "header checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"
                ),
            );
        }
        let version = u32_at(8);
        if version != VERSION {
            return fail(
                8,
                format!("format version {version} is not the supported {VERSION}"),
            );
        }
        let kind = match u32_at(12) {
            1 => StateKind::Db,
            2 => StateKind::Log,
            other => return fail(12, format!("unknown state kind {other}")),
        };
        let slots = u64_at(16);
        if slots > MAX_SLOTS {
            return fail(
                16,
                format!("{slots} slots is more than the {MAX_SLOTS} allowed"),
            );
        }
        let needed = slot_offset(slots);
        if (file.len() as u64) < needed {
            return fail(
                file.len() as u64,
                format!(
                    "the file ends after {} bytes but its {slots} slots need {needed}",
                    file.len()
                ),
            );
        }
        Ok(Header {
            kind,
            slots,
            keys: u64_at(24),
            max_value_size: u32_at(32),
            durable_stamp: u64_at(36),
        })
    }
}

/// Slot `index`'s 32 bytes for `payload`. The checksum covers the index
/// too, so a slot written at the wrong place does not verify.
pub fn encode_slot(index: u64, payload: &[u8; SLOT_PAYLOAD]) -> [u8; SLOT_LEN] {
    let mut b = [0u8; SLOT_LEN];
    b[..SLOT_PAYLOAD].copy_from_slice(payload);
    let sum = checksum32(&[&index.to_le_bytes(), payload]);
    b[SLOT_PAYLOAD..].copy_from_slice(&sum.to_le_bytes());
    b
}

/// The payload of slot `index` in `file` (whose header was decoded).
pub fn decode_slot(file: &[u8], index: u64) -> Result<[u8; SLOT_PAYLOAD], DecodeError> {
    let offset = slot_offset(index);
    let start = usize::try_from(offset).ok();
    let Some(bytes) = start.and_then(|s| file.get(s..s.checked_add(SLOT_LEN)?)) else {
        return Err(DecodeError {
            offset,
            message: format!("slot {index} lies past the end of the file"),
        });
    };
    let mut payload = [0u8; SLOT_PAYLOAD];
    payload.copy_from_slice(&bytes[..SLOT_PAYLOAD]);
    let stored = u32::from_le_bytes([
        bytes[SLOT_PAYLOAD],
        bytes[SLOT_PAYLOAD + 1],
        bytes[SLOT_PAYLOAD + 2],
        bytes[SLOT_PAYLOAD + 3],
    ]);
    let computed = checksum32(&[&index.to_le_bytes(), &payload]);
    if stored != computed {
        return Err(DecodeError {
            offset,
            message: format!(
                "slot {index} checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"
            ),
        });
    }
    Ok(payload)
}

/// Little-endian field access on a slot payload.
pub(crate) struct Fields<'a>(pub &'a [u8; SLOT_PAYLOAD]);

impl Fields<'_> {
    /// The `u32` at byte `i`.
    pub(crate) fn u32(&self, i: usize) -> u32 {
        let mut a = [0u8; 4];
        a.copy_from_slice(&self.0[i..i + 4]);
        u32::from_le_bytes(a)
    }

    /// The `u64` at byte `i`.
    pub(crate) fn u64(&self, i: usize) -> u64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&self.0[i..i + 8]);
        u64::from_le_bytes(a)
    }
}

/// Writes little-endian fields into a slot payload.
pub(crate) fn put_u32(p: &mut [u8; SLOT_PAYLOAD], i: usize, v: u32) {
    p[i..i + 4].copy_from_slice(&v.to_le_bytes());
}

/// Writes a little-endian `u64` into a slot payload.
pub(crate) fn put_u64(p: &mut [u8; SLOT_PAYLOAD], i: usize, v: u64) {
    p[i..i + 8].copy_from_slice(&v.to_le_bytes());
}

/// Decodes a whole file: its header and every slot's payload.
pub fn decode_file(file: &[u8]) -> Result<(Header, Vec<[u8; SLOT_PAYLOAD]>), DecodeError> {
    let header = Header::decode(file)?;
    let mut slots = Vec::with_capacity(header.slots as usize);
    for i in 0..header.slots {
        slots.push(decode_slot(file, i)?);
    }
    Ok((header, slots))
}

/// The error for a damaged expected-state file at `path`, `offset`.
pub(crate) fn damaged(path: &std::path::Path, offset: u64, message: String) -> crate::error::Error {
    crate::error::ExpectedStateSnafu {
        path,
        offset,
        message,
    }
    .build()
}

/// Reads and decodes the expected-state file at `path`.
pub(crate) fn read_file(
    fs: &dyn lithify::vfs::FileSystem,
    path: &std::path::Path,
) -> crate::error::Result<(Header, Vec<[u8; SLOT_PAYLOAD]>)> {
    use snafu::ResultExt as _;
    let bytes = lithify::vfs::read_file(fs, path).context(crate::error::IoSnafu {
        action: "read",
        path,
    })?;
    decode_file(&bytes).map_err(|e| damaged(path, e.offset, e.message))
}

/// Encodes a whole file.
pub fn encode_file(header: &Header, slots: &[[u8; SLOT_PAYLOAD]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + slots.len() * SLOT_LEN);
    out.extend_from_slice(&header.encode());
    for (i, p) in slots.iter().enumerate() {
        out.extend_from_slice(&encode_slot(i as u64, p));
    }
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn header(slots: u64) -> Header {
        Header {
            kind: StateKind::Db,
            slots,
            keys: slots,
            max_value_size: 256,
            durable_stamp: 7,
        }
    }

    /// The worked example of `docs/FORMATS.md`.
    #[test]
    fn golden_bytes() {
        let h = header(1).encode();
        #[rustfmt::skip]
        let want: [u8; HEADER_LEN] = [
            b'L', b'T', b'H', b'X', b'S', b'T', b'A', b'T', // magic
            0x01, 0x00, 0x00, 0x00, // version 1
            0x01, 0x00, 0x00, 0x00, // kind 1: engine run
            0x01, 0, 0, 0, 0, 0, 0, 0, // 1 slot
            0x01, 0, 0, 0, 0, 0, 0, 0, // 1 key
            0x00, 0x01, 0x00, 0x00, // values of up to 256 bytes
            0x07, 0, 0, 0, 0, 0, 0, 0, // durability stamp 7
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // reserved
            0x76, 0xad, 0x1d, 0xb0, // masked xxh3 of bytes 0..60, low 32 bits
        ];
        assert_eq!(h, want);
        // The header declares a slot that is missing.
        assert_eq!(Header::decode(&want).map_err(|e| e.offset), Err(64));
        let mut payload = [0u8; SLOT_PAYLOAD];
        payload[0] = 1;
        payload[27] = 0xff;
        #[rustfmt::skip]
        let slot: [u8; SLOT_LEN] = [
            0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff,
            0x7a, 0xdc, 0x97, 0x65, // masked xxh3 of the index (u64) and the payload
        ];
        assert_eq!(encode_slot(0, &payload), slot);
        let file = [&want[..], &slot[..]].concat();
        assert_eq!(decode_file(&file), Ok((header(1), vec![payload])));
        // The same payload is not valid as slot 1.
        let moved = [&header(2).encode()[..], &slot[..], &slot[..]].concat();
        assert_eq!(decode_slot(&moved, 0), Ok(payload));
        assert!(decode_slot(&moved, 1).is_err());
    }

    #[test]
    fn every_flipped_byte_and_every_truncation_is_caught() {
        let payloads: Vec<[u8; SLOT_PAYLOAD]> = (0..3u8).map(|i| [i; SLOT_PAYLOAD]).collect();
        let file = encode_file(&header(3), &payloads);
        assert_eq!(decode_file(&file), Ok((header(3), payloads)));
        for i in 0..file.len() {
            let mut bad = file.clone();
            bad[i] ^= 0x10;
            let err = decode_file(&bad).expect_err("a flipped byte decodes");
            let part = if i < HEADER_LEN {
                0..HEADER_LEN as u64
            } else {
                let s = slot_offset(((i - HEADER_LEN) / SLOT_LEN) as u64);
                s..s + SLOT_LEN as u64
            };
            assert!(part.contains(&err.offset), "byte {i}: {err}");
        }
        for len in 0..file.len() {
            assert!(decode_file(&file[..len]).is_err(), "truncated to {len}");
        }
    }

    proptest! {
        #[test]
        fn round_trip(
            kind in prop_oneof![Just(StateKind::Db), Just(StateKind::Log)],
            keys in any::<u64>(),
            max_value_size in any::<u32>(),
            durable_stamp in any::<u64>(),
            payloads in proptest::collection::vec(any::<[u8; SLOT_PAYLOAD]>(), 0..20),
        ) {
            let h = Header { kind, slots: payloads.len() as u64, keys, max_value_size, durable_stamp };
            let file = encode_file(&h, &payloads);
            prop_assert_eq!(file.len(), HEADER_LEN + payloads.len() * SLOT_LEN);
            prop_assert_eq!(decode_file(&file), Ok((h, payloads)));
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let _ = decode_file(&bytes);
            let mut with_header = header(u64::from(bytes.first().copied().unwrap_or(0))).encode().to_vec();
            with_header.extend_from_slice(&bytes);
            let _ = decode_file(&with_header);
        }
    }
}
