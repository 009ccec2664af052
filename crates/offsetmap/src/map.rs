//! [`OffsetMap`]: the fixed-memory key -> offset table.

use std::cell::Cell;
use std::fmt;
use std::num::NonZeroU32;
use std::ops::RangeInclusive;

use snafu::ensure;

use crate::digest::{DigestKind, KeyDigest};
use crate::error::{
    FullSnafu, MemoryTooSmallSnafu, NoProgressSnafu, OffsetOutOfRangeSnafu, OffsetTooLargeSnafu,
    Result, TooManySlotsSnafu,
};
use crate::layout::{CompactSlot, KafkaSlot, Layout, SlotFormat, slot_digest, write_digest};
use crate::load_factor::LoadFactor;
use crate::probe::{LAST_WINDOW, probe_slot};

/// The largest offset any map stores: Kafka offsets are non-negative `i64`s.
pub const MAX_OFFSET: u64 = i64::MAX as u64;

/// The most slots a map may have: the probe sequence reduces a 32-bit
/// absolute value modulo the slot count, so it cannot reach slots beyond
/// `i32::MAX`. (Kafka itself allows at most `(2^31 - 1) / 24`.)
pub const MAX_SLOTS: usize = i32::MAX as usize;

/// A fixed-memory map from key digests to the latest offset of each key:
/// Kafka's `SkimpyOffsetMap`.
///
/// One zero-filled buffer is allocated when the map is created and never
/// again: puts and gets do not allocate, and [`clear`](Self::clear) zeroes
/// the same memory. See the [crate documentation](crate) for the layouts,
/// the probe sequence and how a log cleaner uses the map.
///
/// # Offsets
///
/// Offsets are `u64` values in `0..=`[`MAX_OFFSET`] (`i64::MAX`): Kafka's
/// offsets are non-negative `i64`s, and Kafka's `-1` for "absent" is
/// `None` here. Where Kafka code reads `map.get(key)` and compares the
/// result with `>=`, write
///
/// ```text
/// let latest_for_key = map.get(key).is_none_or(|found| record_offset >= found);
/// ```
///
/// and where it needs the raw value, `map.get(key).map_or(-1, |o| o as i64)`
/// (lossless, since stored offsets are at most `i64::MAX`).
///
/// # Statistics and threads
///
/// Like Kafka's, the map counts lookups (puts and gets) and probes, so
/// [`get`](Self::get) updates counters through `&self`; the map is therefore
/// `Send` but not `Sync`.
///
/// ```
/// use lithify_offsetmap::{LoadFactor, OffsetMap};
///
/// let mut map = OffsetMap::new(4096)?; // Kafka's layout and MD5: 170 slots
/// assert_eq!(map.slots(), 170);
/// let lf = LoadFactor::KAFKA_DEFAULT;
/// for (offset, key) in [b"a", b"b", b"a"].into_iter().enumerate() {
///     if !map.has_room(lf) {
///         break; // a cleaner stops mapping here
///     }
///     map.put(key, offset as u64)?;
/// }
/// assert_eq!(map.get(b"a"), Some(2));
/// assert_eq!(map.get(b"b"), Some(1));
/// assert_eq!(map.get(b"c"), None); // Kafka: -1
/// assert_eq!(map.size(), 2);
/// assert_eq!(map.latest_offset(), Some(2));
/// # Ok::<(), lithify_offsetmap::Error>(())
/// ```
pub struct OffsetMap {
    /// `slots * bytes_per_entry` zero-initialised bytes.
    buf: Box<[u8]>,
    layout: Layout,
    digest: DigestKind,
    /// The memory asked for (the buffer drops the unused remainder).
    memory: usize,
    slots: NonZeroU32,
    /// Occupied slots.
    entries: usize,
    /// The smallest offset the compact layout stores (unused by Kafka's).
    base_offset: u64,
    latest_offset: Option<u64>,
    /// The most probes any put needed since the last clear: no stored key
    /// sits further along its probe sequence.
    longest_put: u64,
    lookups: Cell<u64>,
    probes: Cell<u64>,
}

impl OffsetMap {
    /// A map over `memory` bytes with Kafka's layout and MD5 digests:
    /// `memory / 24` slots.
    pub fn new(memory: usize) -> Result<Self> {
        Self::with_layout(memory, Layout::Kafka, DigestKind::Md5)
    }

    /// A map over `memory` bytes with the given layout and digest:
    /// `memory / layout.bytes_per_entry()` slots, at least 1 and at most
    /// [`MAX_SLOTS`]. The compact layout starts with base offset 0.
    pub fn with_layout(memory: usize, layout: Layout, digest: DigestKind) -> Result<Self> {
        let bytes_per_entry = layout.bytes_per_entry();
        let slots = layout.slots_for(memory);
        ensure!(
            slots <= MAX_SLOTS,
            TooManySlotsSnafu {
                memory,
                slots,
                max_slots: MAX_SLOTS
            }
        );
        let slots = u32::try_from(slots)
            .ok()
            .and_then(NonZeroU32::new)
            .ok_or_else(|| {
                MemoryTooSmallSnafu {
                    memory,
                    bytes_per_entry,
                }
                .build()
            })?;
        Ok(OffsetMap {
            // `vec![0; n]` asks the allocator for zeroed memory, which for a
            // large map is fresh pages from the OS: nothing is written here.
            buf: vec![0u8; slots.get() as usize * bytes_per_entry].into_boxed_slice(),
            layout,
            digest,
            memory,
            slots,
            entries: 0,
            base_offset: 0,
            latest_offset: None,
            longest_put: 0,
            lookups: Cell::new(0),
            probes: Cell::new(0),
        })
    }

    /// Associates `key` with `offset`: overwrites the offset if the key's
    /// digest is in the map, else takes the first empty slot of its probe
    /// sequence. Either way `offset` becomes the
    /// [latest offset](Self::latest_offset).
    ///
    /// Fails, changing nothing, when every slot is taken (as Kafka does,
    /// even if the key is in the map: a cleaner checks
    /// [`has_room`](Self::has_room) first), when `offset > i64::MAX`, or
    /// when the compact layout cannot store `offset` (see
    /// [`can_store`](Self::can_store)).
    pub fn put(&mut self, key: &[u8], offset: u64) -> Result<()> {
        self.insert(key, offset).map(|_| ())
    }

    /// [`put`](Self::put), returning the offset the key's digest held
    /// before (`None` when the put took an empty slot).
    ///
    /// A cleaner that puts offsets in ascending order learns from it which
    /// record each put supersedes, so its second pass can tell whether a
    /// mapped record is its key's latest without hashing the key again.
    pub fn insert(&mut self, key: &[u8], offset: u64) -> Result<Option<u64>> {
        self.insert_digest(&KeyDigest::compute(self.digest, key), offset)
    }

    /// [`insert`](Self::insert) of a key whose digest (of this map's
    /// [`digest_kind`](Self::digest_kind)) the caller computed, e.g. for a
    /// batch of keys at a time, their slots [prefetched](Self::prefetch)
    /// first.
    pub fn insert_digest(&mut self, digest: &KeyDigest, offset: u64) -> Result<Option<u64>> {
        ensure!(
            self.entries < self.slots(),
            FullSnafu {
                entries: self.entries,
                slots: self.slots()
            }
        );
        self.check_offset(offset)?;
        Ok(match self.layout {
            Layout::Kafka => self.put_digest::<KafkaSlot>(digest, offset),
            Layout::Compact => self.put_digest::<CompactSlot>(digest, offset),
        })
    }

    /// Asks the processor to load the first slot of `digest`'s probe
    /// sequence (a hint: changes nothing). A caller about to put several
    /// digests prefetches all their slots first, so that the cache misses
    /// of a large map overlap instead of coming one after another.
    #[inline]
    pub fn prefetch(&self, digest: &KeyDigest) {
        let pos = probe_slot(digest, 0, self.slots) as usize * self.layout.bytes_per_entry();
        lithify_base::hint::prefetch_read(self.buf[pos..].as_ptr());
    }

    /// The offset stored for `key`, or `None` if it is absent (Kafka's -1).
    ///
    /// Probes `key`'s sequence until it meets the key's digest or an empty
    /// slot, giving up after `max(slots + 12, longest put)` probes, where
    /// "longest put" is the most probes any put needed since the last
    /// clear. Kafka gives up after `slots + 12` probes; the longer limit
    /// only matters in a (nearly) full map whose linear probe phase revisits
    /// slots (see [`probe`](crate::probe_slot)), where Kafka can miss a key
    /// it stored and answer -1. Here a stored key is always found, and a
    /// lookup of an absent key in a completely full map still ends.
    pub fn get(&self, key: &[u8]) -> Option<u64> {
        let digest = KeyDigest::compute(self.digest, key);
        match self.layout {
            Layout::Kafka => self.get_digest::<KafkaSlot>(&digest),
            Layout::Compact => self.get_digest::<CompactSlot>(&digest),
        }
    }

    /// A map over `memory` bytes (same layout, digest and base offset)
    /// holding what this one holds: every stored digest with its offset,
    /// put again in slot order, and the same size and latest offset. Its
    /// answers are this map's, since a map answers by digest whatever its
    /// slot count; only where the digests sit differs. The statistics
    /// carry over, not counting the re-puts.
    ///
    /// A cleaner grows a small map this way as a section's keys turn out
    /// to be many, rather than spreading a few keys over all the
    /// configured memory. Fails as [`with_layout`](Self::with_layout)
    /// does, or when the new map has fewer slots than this one has
    /// entries.
    pub fn rehashed(&self, memory: usize) -> Result<OffsetMap> {
        let mut map = OffsetMap::with_layout(memory, self.layout, self.digest)?;
        ensure!(
            self.entries < map.slots() || self.entries == 0,
            FullSnafu {
                entries: self.entries,
                slots: map.slots()
            }
        );
        map.base_offset = self.base_offset;
        let bytes = self.layout.bytes_per_entry();
        for pos in (0..self.buf.len()).step_by(bytes) {
            let suffix = match self.layout {
                Layout::Kafka => KafkaSlot::suffix(&self.buf, pos),
                Layout::Compact => CompactSlot::suffix(&self.buf, pos),
            };
            if slot_digest(&self.buf, pos) == 0 && suffix == 0 {
                continue;
            }
            let mut digest = [0u8; 16];
            digest.copy_from_slice(&self.buf[pos..pos + 16]);
            let digest = KeyDigest::from_bytes(digest);
            let offset = match self.layout {
                Layout::Kafka => KafkaSlot::offset(suffix, self.base_offset),
                Layout::Compact => CompactSlot::offset(suffix, self.base_offset),
            };
            match self.layout {
                Layout::Kafka => map.put_digest::<KafkaSlot>(&digest, offset),
                Layout::Compact => map.put_digest::<CompactSlot>(&digest, offset),
            };
        }
        // Kafka counts a put that lands on an all-zero slot content as a new
        // entry each time; keep this map's count so that load-factor checks
        // answer the same.
        map.entries = self.entries;
        map.latest_offset = self.latest_offset;
        map.lookups.set(self.lookups.get());
        map.probes.set(self.probes.get());
        Ok(map)
    }

    /// The offset of the last put, or what [`update_latest_offset`] set
    /// after it; `None` (Kafka's -1) after [`clear`](Self::clear).
    ///
    /// [`update_latest_offset`]: Self::update_latest_offset
    pub fn latest_offset(&self) -> Option<u64> {
        self.latest_offset
    }

    /// Sets the latest offset unconditionally (the cleaner moves it to the
    /// last offset of each batch, and to the offset before the next segment
    /// at the end of each segment, to skip offset gaps).
    pub fn update_latest_offset(&mut self, offset: u64) {
        self.latest_offset = Some(offset);
    }

    /// Empties the map, keeping its memory and (compact layout) its base
    /// offset: zeroes the buffer, and resets the size, the statistics and
    /// the latest offset (to `None`). Skips the zeroing if nothing was put
    /// since the last clear.
    pub fn clear(&mut self) {
        if self.entries > 0 {
            self.buf.fill(0);
        }
        self.entries = 0;
        self.latest_offset = None;
        self.longest_put = 0;
        self.lookups.set(0);
        self.probes.set(0);
    }

    /// Empties the map (as [`clear`](Self::clear)) and sets its base offset:
    /// the compact layout then stores offsets `base_offset ..= base_offset +
    /// u32::MAX`. A cleaner resets the map to its first dirty offset. Kafka's
    /// layout stores any offset and only records the base.
    pub fn reset(&mut self, base_offset: u64) -> Result<()> {
        ensure!(
            base_offset <= MAX_OFFSET,
            OffsetTooLargeSnafu {
                offset: base_offset
            }
        );
        self.clear();
        self.base_offset = base_offset;
        Ok(())
    }

    /// The number of keys in the map (Kafka's `size()`).
    pub fn size(&self) -> usize {
        self.entries
    }

    /// The number of slots: the most keys the map can hold.
    pub fn slots(&self) -> usize {
        self.slots.get() as usize
    }

    /// The share of slots in use, `size / slots`.
    pub fn utilization(&self) -> f64 {
        self.entries as f64 / self.slots() as f64
    }

    /// Kafka's collision rate: extra probes per lookup, `(probes - lookups) /
    /// lookups`, over the puts and gets since the last clear; `None` before
    /// the first (where Kafka divides 0 by 0).
    pub fn collision_rate(&self) -> Option<f64> {
        let lookups = self.lookups.get();
        (lookups > 0).then(|| (self.probes.get() - lookups) as f64 / lookups as f64)
    }

    /// Puts and gets since the last clear.
    pub fn lookups(&self) -> u64 {
        self.lookups.get()
    }

    /// Slots examined by the puts and gets since the last clear.
    pub fn probes(&self) -> u64 {
        self.probes.get()
    }

    /// How many keys a cleaner may put at load factor `lf`:
    /// `floor(slots * lf)`.
    pub fn max_entries(&self, lf: LoadFactor) -> usize {
        lf.max_entries(self.slots())
    }

    /// Whether a cleaner at load factor `lf` may put another key (new or
    /// not): `size < floor(slots * lf)`, the check Kafka's cleaner makes
    /// before every put.
    pub fn has_room(&self, lf: LoadFactor) -> bool {
        self.entries < self.max_entries(lf)
    }

    /// Fails if a cleaner at load factor `lf` could never put a key into
    /// this map (Kafka's `slots * load_factor > 1` requirement).
    pub fn ensure_progress(&self, lf: LoadFactor) -> Result<()> {
        ensure!(
            lf.allows_progress(self.slots()),
            NoProgressSnafu {
                slots: self.slots(),
                load_factor: lf.value()
            }
        );
        Ok(())
    }

    /// The offsets [`put`](Self::put) accepts: `0..=i64::MAX` for Kafka's
    /// layout; `base_offset ..= base_offset + u32::MAX` (capped at
    /// `i64::MAX`) for the compact one.
    pub fn offset_range(&self) -> RangeInclusive<u64> {
        match self.layout {
            Layout::Kafka => 0..=MAX_OFFSET,
            Layout::Compact => {
                let last = self
                    .base_offset
                    .saturating_add(u64::from(u32::MAX))
                    .min(MAX_OFFSET);
                self.base_offset..=last
            }
        }
    }

    /// Whether [`put`](Self::put) accepts `offset`. A cleaner filling a
    /// compact map treats an offset it cannot store like a full map: it
    /// stops mapping there, and the next round starts from that offset.
    pub fn can_store(&self, offset: u64) -> bool {
        self.offset_range().contains(&offset)
    }

    /// The base offset set by [`reset`](Self::reset) (0 for a new map).
    pub fn base_offset(&self) -> u64 {
        self.base_offset
    }

    /// The slot layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The digest function.
    pub fn digest_kind(&self) -> DigestKind {
        self.digest
    }

    /// The memory the map was created with, in bytes.
    pub fn memory(&self) -> usize {
        self.memory
    }

    /// The map's buffer: slot `i` starts at byte `i * bytes_per_entry`.
    /// With Kafka's layout and MD5 these are the bytes Kafka's map would
    /// hold after the same puts.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    fn check_offset(&self, offset: u64) -> Result<()> {
        ensure!(offset <= MAX_OFFSET, OffsetTooLargeSnafu { offset });
        if self.layout == Layout::Compact {
            let range = self.offset_range();
            ensure!(
                range.contains(&offset),
                OffsetOutOfRangeSnafu {
                    offset,
                    base_offset: *range.start(),
                    last_offset: *range.end()
                }
            );
        }
        Ok(())
    }

    /// The put loop; the caller has checked that a slot is free and that the
    /// layout can store `offset`.
    /// Returns the offset the digest held before, if any.
    pub(crate) fn put_digest<F: SlotFormat>(
        &mut self,
        digest: &KeyDigest,
        offset: u64,
    ) -> Option<u64> {
        let wanted = u128::from_ne_bytes(*digest.as_bytes());
        let mut attempt = 0u64;
        let mut previous = None;
        let pos = loop {
            let pos = probe_slot(digest, attempt, self.slots) as usize * F::BYTES;
            attempt += 1;
            let stored = slot_digest(&self.buf, pos);
            if stored == 0 && F::suffix(&self.buf, pos) == 0 {
                write_digest(&mut self.buf, pos, digest.as_bytes());
                self.entries += 1;
                break pos;
            }
            if stored == wanted {
                previous = Some(F::offset(F::suffix(&self.buf, pos), self.base_offset));
                break pos;
            }
            // An empty slot exists and the linear phase reaches every slot
            // within 2 * slots + 2 steps (see `probe`), so this is a bound.
            debug_assert!(attempt <= 2 * u64::from(self.slots.get()) + LAST_WINDOW + 3);
        };
        F::write_offset(&mut self.buf, pos, offset, self.base_offset);
        self.latest_offset = Some(offset);
        self.longest_put = self.longest_put.max(attempt);
        self.lookups.set(self.lookups.get() + 1);
        self.probes.set(self.probes.get() + attempt);
        previous
    }

    /// The get loop.
    pub(crate) fn get_digest<F: SlotFormat>(&self, digest: &KeyDigest) -> Option<u64> {
        let wanted = u128::from_ne_bytes(*digest.as_bytes());
        let max_attempts = (u64::from(self.slots.get()) + LAST_WINDOW).max(self.longest_put);
        let mut found = None;
        let mut attempt = 0u64;
        while attempt < max_attempts {
            let pos = probe_slot(digest, attempt, self.slots) as usize * F::BYTES;
            attempt += 1;
            let stored = slot_digest(&self.buf, pos);
            if stored == 0 && F::suffix(&self.buf, pos) == 0 {
                break;
            }
            if stored == wanted {
                found = Some(F::offset(F::suffix(&self.buf, pos), self.base_offset));
                break;
            }
        }
        self.lookups.set(self.lookups.get() + 1);
        self.probes.set(self.probes.get() + attempt);
        found
    }

    /// The most probes any put needed since the last clear.
    #[cfg(test)]
    pub(crate) fn longest_put(&self) -> u64 {
        self.longest_put
    }
}

impl fmt::Debug for OffsetMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OffsetMap")
            .field("layout", &self.layout)
            .field("digest", &self.digest)
            .field("memory", &self.memory)
            .field("slots", &self.slots)
            .field("entries", &self.entries)
            .field("base_offset", &self.base_offset)
            .field("latest_offset", &self.latest_offset)
            .finish_non_exhaustive()
    }
}
