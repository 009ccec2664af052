//! Kafka's `SkimpyOffsetMap`: a fixed-memory map from keys to the latest
//! offset of each, for log compaction.
//!
//! A Kafka-style log cleaner reads the dirty part of a log once and records,
//! for every key, the last offset where it appears; then it rewrites the log
//! keeping only records whose offset is at least the one recorded for their
//! key. [`OffsetMap`] is that record. It never stores keys, only a 16-byte
//! digest of each, in one buffer allocated (zeroed) once and reused by
//! [`clear`](OffsetMap::clear); puts and gets do not allocate.
//!
//! # Kafka parity
//!
//! With the defaults ([`Layout::Kafka`], [`DigestKind::Md5`]) the map
//! behaves like Kafka's, bit for bit:
//!
//! * `slots = memory / 24`; slot `i` holds the MD5 of the raw key then the
//!   offset as a big-endian `i64`; an all-zero slot is empty;
//! * the probe sequence is Kafka's ([`probe_slot`]): attempts 0..=12 read
//!   the 13 overlapping 4-byte windows of the digest, later attempts walk
//!   linearly from the last window, with Java's 32-bit wrapping addition and
//!   `abs`;
//! * [`put`](OffsetMap::put) fails when every slot is taken (even for a key
//!   already present), else overwrites the key's slot or takes the first
//!   empty one; either way the offset becomes the latest offset;
//! * [`get`](OffsetMap::get) answers the stored offset or `None` (Kafka's
//!   -1); [`collision_rate`](OffsetMap::collision_rate),
//!   [`utilization`](OffsetMap::utilization), [`size`](OffsetMap::size),
//!   [`latest_offset`](OffsetMap::latest_offset) and
//!   [`update_latest_offset`](OffsetMap::update_latest_offset) are Kafka's.
//!
//! After the same puts the map's [bytes](OffsetMap::as_bytes) equal Kafka's
//! buffer. One deliberate difference: where Kafka's `get` gives up after
//! `slots + 12` probes, this one also allows as many probes as the longest
//! put needed, so that a key stored in a nearly full map is always found
//! (Kafka can miss it, see [`OffsetMap::get`]).
//!
//! # Beyond Kafka
//!
//! * [`DigestKind::Xxh3_128`]: a much faster digest for logs that need no
//!   parity with Kafka.
//! * [`Layout::Compact`]: 20-byte slots (digest + 32-bit offset delta from a
//!   base offset set by [`reset`](OffsetMap::reset)), 20% more keys in the
//!   same memory. A put whose offset is out of reach fails with
//!   [`Error::OffsetOutOfRange`].
//!
//! # How a cleaner uses it
//!
//! The load factor is the cleaner's business, not the map's: before **every**
//! put (overwrites included) Kafka's cleaner checks `size < floor(slots *
//! load_factor)` and stops mapping when that fails. [`LoadFactor`] and
//! [`OffsetMap::has_room`] compute that rule, so both sides agree.
//!
//! ```
//! use lithify_offsetmap::{DigestKind, Layout, LoadFactor, OffsetMap};
//!
//! // Pass 1: map the dirty section [first_dirty, first_uncleanable).
//! let records: &[(u64, &[u8])] = &[(100, b"k1"), (101, b"k2"), (102, b"k1")];
//! let mut map = OffsetMap::with_layout(1 << 20, Layout::Compact, DigestKind::Xxh3_128)?;
//! let lf = LoadFactor::KAFKA_DEFAULT;
//! map.ensure_progress(lf)?;
//! map.reset(100)?; // base offset = first dirty offset
//! for &(offset, key) in records {
//!     if !map.has_room(lf) || !map.can_store(offset) {
//!         break; // map full: this round cleans up to latest_offset
//!     }
//!     map.put(key, offset)?;
//! }
//! // Pass 2: keep a record iff it is the latest for its key.
//! let kept: Vec<u64> = records
//!     .iter()
//!     .filter(|&&(offset, key)| map.get(key).is_none_or(|found| offset >= found))
//!     .map(|&(offset, _)| offset)
//!     .collect();
//! assert_eq!(kept, [101, 102]);
//! assert_eq!(map.latest_offset(), Some(102)); // the next checkpoint is 103
//! # Ok::<(), lithify_offsetmap::Error>(())
//! ```

mod digest;
mod error;
mod layout;
mod load_factor;
mod map;
mod md5_lanes;
mod probe;

pub use digest::{DigestKind, KeyDigest};
pub use error::{Error, Result};
pub use layout::Layout;
pub use load_factor::LoadFactor;
pub use map::{MAX_OFFSET, MAX_SLOTS, OffsetMap};
pub use probe::{probe_sequence, probe_slot};

#[cfg(test)]
mod tests;

/// The README's examples run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
