//! One cleaning round of one log (Kafka's `Cleaner.doClean`).
//!
//! 1. **Snapshot** the log's segments under its lock; the rest of the round
//!    reads inactive segments without the lock.
//! 2. **Pass 1** fills the offset map from the dirty section `[F, U)`:
//!    every keyed record at or after `F` is put, until the map reaches its
//!    load factor (checked before every put); control batches and aborted
//!    data ([`txn_metadata`](crate::txn_metadata)) are never put; after each
//!    batch the map's latest offset moves to the batch's last offset, after
//!    each segment to the next segment's base minus one (so offset gaps are
//!    skipped). A full map ends the pass early: the round cleans up to the
//!    last offset it mapped and a later round continues. The map starts
//!    small and grows toward the configured memory (or toward the dirty
//!    section's size, when smaller); "full" is always the configured map's
//!    load factor, so this changes no decision. Each key is hashed here
//!    only: what pass 2 needs to know of the mapped records (replaced by a
//!    later put or not, tombstone or not) is kept in
//!    [`latest_marks`](crate::latest_marks).
//! 3. **Pass 2** rewrites every segment overlapping `[0, latest + 1)`,
//!    grouped ([`grouping`](crate::grouping)) into one `.cleaned`
//!    segment per group, batch by batch through
//!    [`filter`](crate::filter), the transaction state carried from
//!    segment to segment and group to group (each source segment adds the
//!    aborted transactions of its range): aborted data batches go whatever
//!    their keys; an ABORT marker whose data the round still saw stays and
//!    its transaction goes into the cleaned segment's `.txnindex`; a marker
//!    whose transaction left no data gets a delete horizon, and goes in a
//!    round past it. The last batch of the round (`next offset == U`) and
//!    an active producer's last batch (its last data batch, or its last
//!    marker when its state has no data batch) are kept, as an empty header
//!    if nothing else of them stays.
//! 4. **Swap** all cleaned segments in at once
//!    ([`Log::replace_segments`]), so a crash leaves the log
//!    exactly as before or after the round.
//!
//! The caller then writes `latest + 1` to the checkpoint.
//!
//! Differences from Kafka, all deliberate:
//!
//! * every batch's CRC is checked before it is mapped or rewritten (Kafka
//!   does not), so a damaged batch stops the round instead of being
//!   re-stamped with a valid CRC. Like any other failure, that aborts the
//!   round before anything is swapped in, leaves the checkpoint where it
//!   was, and the manager marks the log uncleanable with the error (file
//!   and byte offset); a segment whose end is not a complete batch fails
//!   the same way (Kafka's `growBuffersOrFail` fails there too);
//! * a valid batch is never refused for its size: Kafka grows its read
//!   buffer to the next batch's size, and we read each batch whole, so a
//!   batch larger than a `max.message.bytes` lowered after it was written
//!   is cleaned like any other;
//! * the groups of a round are swapped in together, not one by one: Kafka's
//!   per-group swaps leave a half-cleaned log after a crash, which holds
//!   the right latest value of every key but neither the old nor the new
//!   records. The price is disk space for every cleaned segment of the
//!   round at once;
//! * the last batch of the last rewritten segment is kept too (as an empty
//!   header if need be), not only the batch ending at `U`: then the
//!   replacement covers every segment it replaces, and recovery's
//!   `[min swap, max swap)` range can never miss one;
//! * when the dirty section is empty (a round chosen for expired
//!   tombstones or markers), the map covers nothing and everything below
//!   `F` is rewritten (Kafka never runs such a round);
//! * a producer is active for its last batch while `producer.id.expiration.ms`
//!   has not passed since its last write at the round's time (Kafka drops
//!   expired producers from its state every ten minutes, and the cleaner
//!   reads that state).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use lithify_base::sync::Mutex;
use lithify_offsetmap::{DigestKind, KeyDigest, Layout, LoadFactor, OffsetMap};
use snafu::ResultExt as _;

use crate::config::CleanerConfig;
use crate::error::{OffsetMapSnafu, Result, TransactionIndexMismatchSnafu};
use crate::filter::{
    BatchDecision, BatchFate, BatchRetention, FilterContext, filter_batch, marked_fate,
};
use crate::grouping::{GroupInput, group_segments_by_size};
use crate::latest_marks::LatestMarks;
use crate::read_ahead::{Busy, Cores, Feed, with_feed};
use crate::stats::{CleanerStats, RoundReport};
use crate::throttler::Throttler;
use crate::to_clean::LogToClean;
use crate::txn_metadata::CleanedTransactionMetadata;
use lithify_kafka_log::naming::Suffix;
use lithify_kafka_log::record::RecordBatch;
use lithify_kafka_log::{
    AppendedBatch, Log, LogSegment, LogSnapshot, OffsetOrder, SegmentSnapshot,
};

/// Bytes read or written between two calls to the throttler and to the
/// abort check.
const CHECK_EVERY_BYTES: u64 = 64 << 10;

/// The fewest slots of a map sized to a small dirty section.
const MIN_SIZED_SLOTS: usize = 1024;

/// Keys a round's map is first sized for; it grows fourfold at a time
/// (see [`Cleaner::grow_map`]).
const INITIAL_MAP_KEYS: u64 = 32 << 10;

/// Offsets of the dirty section that pass 1's [`LatestMarks`] cover per
/// byte of the configured map memory (three bits an offset: the marks
/// take at most 3/8 of the map's memory).
const MARKED_OFFSETS_PER_MAP_BYTE: u64 = 1;

/// What a finished round leaves for the manager besides the report.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundOutcome {
    /// The report.
    pub report: RoundReport,
    /// The clean section after the round: `(base, size)` of its segments
    /// and the earliest delete horizon among its batches.
    pub clean_section: (Vec<(i64, u64)>, Option<i64>),
}

/// A cleaner: one offset map and its buffers, used by one thread at a time
/// (Kafka's `Cleaner`).
#[derive(Debug)]
pub struct Cleaner {
    id: usize,
    /// The last round's map: the configured memory, or less when the dirty
    /// section was small (see [`Cleaner::size_map`]).
    map: OffsetMap,
    /// `log.cleaner.dedupe.buffer.size` per thread: the most a map takes.
    map_memory: usize,
    /// This round's map at its largest: its slots and memory, and the keys
    /// it holds at the load factor (pass 1 stops there, as Kafka's does
    /// when its map reaches the load factor).
    target_slots: usize,
    target_memory: usize,
    capacity: usize,
    digest: DigestKind,
    marks: LatestMarks,
    /// Pass 1's records of one batch: offset, tombstone or not, and key
    /// digest (none for a
    /// keyless record or one below the first dirty offset).
    pending: Vec<(i64, bool, Option<KeyDigest>)>,
    /// Pass 1's keys of one batch (empty between batches: only the
    /// memory is kept, see [`reuse`]) and their digests.
    keys: Vec<&'static [u8]>,
    digests: Vec<KeyDigest>,
    load_factor: LoadFactor,
    write_buffer_size: usize,
    producer_id_expiration_ms: i64,
    throttler: Arc<Throttler>,
    write_buffer: Vec<u8>,
    written: Vec<AppendedBatch>,
    /// Where the snapshot of a round that replaced segments goes instead
    /// of being dropped on this thread (see [`Cleaner::close_elsewhere`]).
    closer: Option<Sender<LogSnapshot>>,
    /// The cores a pass may borrow one from for its read-ahead thread
    /// (`None`: `lithify.cleaner.read.ahead=false`).
    read_ahead: Option<Arc<Cores>>,
    /// Whether this cleaner counts itself busy during a round (a cleaner
    /// of its own), or its service's thread counts it (see
    /// [`Cleaner::share_cores`]).
    counts_itself: bool,
}

/// Where pass 2 is within the round.
struct Pass2<'a> {
    snap: &'a LogSnapshot,
    ctx: FilterContext<'a>,
    upper_bound: i64,
    txns: CleanedTransactionMetadata,
    earliest_horizon: Option<i64>,
}

impl Cleaner {
    /// A cleaner with `config`'s per-thread map memory, digest and load
    /// factor. Fails if the map cannot make progress (`slots * load factor
    /// <= 1`).
    pub fn new(id: usize, config: &CleanerConfig, throttler: Arc<Throttler>) -> Result<Self> {
        let map =
            OffsetMap::with_layout(config.map_memory_per_thread(), Layout::Kafka, config.digest)
                .context(OffsetMapSnafu)?;
        map.ensure_progress(config.dedupe_buffer_load_factor)
            .context(OffsetMapSnafu)?;
        let (target_slots, target_memory) = (map.slots(), map.memory());
        let capacity = map.max_entries(config.dedupe_buffer_load_factor);
        Ok(Cleaner {
            id,
            map,
            map_memory: config.map_memory_per_thread(),
            target_slots,
            target_memory,
            capacity,
            digest: config.digest,
            marks: LatestMarks::default(),
            pending: Vec::new(),
            keys: Vec::new(),
            digests: Vec::new(),
            load_factor: config.dedupe_buffer_load_factor,
            write_buffer_size: config.write_buffer_per_thread(),
            producer_id_expiration_ms: config.producer_id_expiration_ms,
            throttler,
            write_buffer: Vec::new(),
            written: Vec::new(),
            closer: None,
            read_ahead: config.read_ahead.then(Cores::of_machine),
            counts_itself: true,
        })
    }

    /// This cleaner's number.
    pub fn id(&self) -> usize {
        self.id
    }

    /// Sends the snapshot of every round that replaced segments to
    /// `closer` instead of dropping it at the end of the round.
    ///
    /// The snapshot holds the last open handles of the replaced segments
    /// (already renamed `.deleted` and unlinked): closing them makes the
    /// kernel drop their page cache, about 35 ms for a 118 MB segment,
    /// which a thread that receives them spends instead of the cleaner (as
    /// Kafka deletes replaced segments on its scheduler thread, and
    /// RocksDB's `avoid_unnecessary_blocking_io` deletes files in the
    /// background). The service ([`LogCleaner`](crate::LogCleaner)) does
    /// this with one closer thread. A snapshot that `closer` does not take
    /// at once (a bounded channel that is full, or a closer that has
    /// gone) is dropped on the cleaner's thread as before.
    pub fn close_elsewhere(&mut self, closer: Sender<LogSnapshot>) {
        self.closer = Some(closer);
    }

    /// Makes this cleaner's read-ahead threads share `cores` with the
    /// other threads of a service, which counts this cleaner's thread
    /// itself while it is awake.
    pub(crate) fn share_cores(&mut self, cores: Arc<Cores>) {
        if self.read_ahead.is_some() {
            self.read_ahead = Some(cores);
        }
        self.counts_itself = false;
    }

    /// The offset map (after a round: its last state).
    pub fn offset_map(&self) -> &OffsetMap {
        &self.map
    }

    /// Cleans `to_clean` once at time `now`. `check_done` is called between
    /// chunks and before the swap; an error from it aborts the round
    /// (nothing is swapped in, the `.cleaned` files are removed).
    pub fn clean(
        &mut self,
        log: &Mutex<Log>,
        to_clean: &LogToClean,
        now: i64,
        check_done: &dyn Fn() -> Result<()>,
    ) -> Result<RoundOutcome> {
        let started = Instant::now();
        let _awake = self
            .read_ahead
            .as_ref()
            .filter(|_| self.counts_itself)
            .map(Cores::awake);
        let snap = log.lock().snapshot(to_clean.first_dirty_offset);
        let outcome = self.clean_snapshot(log, &snap, started, to_clean, now, check_done);
        if let (Ok(o), Some(closer)) = (&outcome, &self.closer)
            && o.report.segments_out > 0
        {
            // A closer that has gone, or one with a full queue (each
            // queued snapshot keeps unlinked files open, so their space
            // is not freed), leaves the snapshot to drop here.
            let _ = closer.try_send(snap);
        }
        outcome
    }

    fn clean_snapshot(
        &mut self,
        log: &Mutex<Log>,
        snap: &LogSnapshot,
        started: Instant,
        to_clean: &LogToClean,
        now: i64,
        check_done: &dyn Fn() -> Result<()>,
    ) -> Result<RoundOutcome> {
        let throttled_before = self.throttler.total_slept_ms();
        let first_dirty = to_clean.first_dirty_offset;
        let upper_bound = to_clean.first_uncleanable_offset;
        let mut stats = CleanerStats::default();
        tracing::info!(
            log = %snap.dir.display(),
            cleaner = self.id,
            first_dirty_offset = first_dirty,
            first_uncleanable_offset = upper_bound,
            "cleaning round begins"
        );

        self.build_offset_map(snap, first_dirty, upper_bound, &mut stats, check_done)?;
        let latest = match self.map.latest_offset() {
            Some(o) => o as i64,
            // An empty dirty section: everything below F counts as mapped.
            None => first_dirty - 1,
        };
        let end_offset = latest + 1;
        stats.map_duration = started.elapsed();
        // Against the configured memory, as Kafka reports it, whatever the
        // size of this round's map.
        stats.map_utilization =
            self.map.size() as f64 / Layout::Kafka.slots_for(self.map_memory).max(1) as f64;
        stats.map_collision_rate = self.map.collision_rate();

        let rewrite: Vec<&SegmentSnapshot> = snap
            .inactive()
            .iter()
            .filter(|s| s.base_offset < end_offset)
            .collect();
        let inputs: Vec<GroupInput> = rewrite
            .iter()
            .map(|s| GroupInput {
                base_offset: s.base_offset,
                size: s.size,
                offset_index_bytes: s.offset_index_bytes,
                time_index_bytes: s.time_index_bytes,
            })
            .collect();
        let groups = group_segments_by_size(
            &inputs,
            snap.config.segment_bytes,
            snap.config.segment_index_bytes,
            upper_bound,
        );
        let core = self.read_ahead_core();
        let mut pass = Pass2 {
            snap,
            ctx: FilterContext {
                map: &self.map,
                marks: &self.marks,
                latest_offset: latest,
                now,
                delete_retention_ms: snap.config.delete_retention_ms,
            },
            upper_bound,
            txns: CleanedTransactionMetadata::default(),
            earliest_horizon: None,
        };
        // `pass` borrows the map; the rest of `self` is passed apart.
        let mut io = CleanIo {
            write_buffer_size: self.write_buffer_size,
            producer_id_expiration_ms: self.producer_id_expiration_ms,
            throttler: &self.throttler,
            write_buffer: &mut self.write_buffer,
            written: &mut self.written,
            since_check: 0,
        };
        let mut cleaned: Vec<LogSegment> = Vec::with_capacity(groups.len());
        let regions: Vec<(&SegmentSnapshot, u64)> = rewrite.iter().map(|s| (*s, 0)).collect();
        // Records pass 2 reads: not a control batch's (tiny, and not
        // compressed), not a batch the marks decide alone.
        let (marks, latest, now) = (pass.ctx.marks, pass.ctx.latest_offset, pass.ctx.now);
        let want =
            move |b: &RecordBatch| !b.is_control() && marked_fate(b, marks, latest, now).is_none();
        let result = with_feed(&regions, &want, core, |feed| {
            for (g, group) in groups.iter().enumerate() {
                let first = rewrite[group.start];
                let mut dest = LogSegment::create(
                    snap.fs.clone(),
                    &snap.dir,
                    first.base_offset,
                    Suffix::Cleaned,
                    &snap.config,
                    now,
                )?;
                let result = (|| -> Result<()> {
                    let members = &rewrite[group.clone()];
                    for (i, seg) in members.iter().enumerate() {
                        check_done()?;
                        let last_of_round =
                            g + 1 == groups.len() && group.start + i + 1 == group.end;
                        // Kafka collects the aborted transactions of each
                        // source segment's whole range, up to the next
                        // segment of the group or the segment's end.
                        let upper = members
                            .get(i + 1)
                            .map_or(seg.next_offset, |n| n.base_offset);
                        pass.txns
                            .add_aborted(snap.collect_aborted_transactions(seg.base_offset, upper));
                        io.clean_into(
                            &mut pass,
                            feed,
                            seg,
                            &mut dest,
                            last_of_round,
                            &mut stats,
                            check_done,
                        )?;
                    }
                    Ok(dest.on_become_inactive()?)
                })();
                cleaned.push(dest);
                result?;
            }
            check_done()
        });
        if let Err(e) = result {
            for seg in cleaned {
                // Best effort: recovery removes any `.cleaned` file left.
                let _ = seg.delete();
            }
            return Err(e);
        }
        let clean_section: Vec<(i64, u64)> = cleaned
            .iter()
            .map(|s| (s.base_offset(), s.size()))
            .collect();
        let segments_out = cleaned.len();
        if !cleaned.is_empty() {
            let old: Vec<i64> = rewrite.iter().map(|s| s.base_offset).collect();
            log.lock().replace_segments(cleaned, &old)?;
        }
        stats.duration = started.elapsed();
        stats.throttled = Duration::from_millis(
            self.throttler
                .total_slept_ms()
                .saturating_sub(throttled_before),
        );
        let earliest_horizon = pass.earliest_horizon;
        tracing::info!(
            log = %snap.dir.display(),
            cleaner = self.id,
            end_offset,
            bytes_read = stats.bytes_read,
            bytes_written = stats.bytes_written,
            records_kept = stats.messages_written,
            records_removed = stats.messages_read.saturating_sub(stats.messages_written),
            segments_in = rewrite.len(),
            segments_out,
            "cleaning round ends"
        );
        Ok(RoundOutcome {
            report: RoundReport {
                topic_partition: to_clean.topic_partition.clone(),
                dir: snap.dir.clone(),
                reason: to_clean.reason,
                first_dirty_offset: first_dirty,
                first_uncleanable_offset: upper_bound,
                end_offset,
                segments_in: rewrite.len(),
                segments_out,
                stats,
            },
            clean_section: (clean_section, earliest_horizon),
        })
    }

    /// Pass 1 over `[start, end)`.
    fn build_offset_map(
        &mut self,
        snap: &LogSnapshot,
        start: i64,
        end: i64,
        stats: &mut CleanerStats,
        check_done: &dyn Fn() -> Result<()>,
    ) -> Result<()> {
        let dirty = snap.overlapping(start, end);
        // Pass 1 puts only offsets in `[start, next offset of the last
        // dirty segment)`: at most that many distinct keys.
        let bound = dirty
            .last()
            .map_or(0, |s| s.next_offset.saturating_sub(start).max(0) as u64);
        self.size_map(bound)?;
        self.map.clear();
        let marked =
            bound.min((self.map_memory as u64).saturating_mul(MARKED_OFFSETS_PER_MAP_BYTE));
        self.marks.reset(start, marked);
        let mut txns = CleanedTransactionMetadata::default();
        txns.add_aborted(snap.collect_aborted_transactions(start, end));
        let regions: Vec<(&SegmentSnapshot, u64)> =
            dirty.iter().map(|s| (s, s.lookup_position)).collect();
        // Control batches never enter the map: their records are not read.
        let want = |b: &RecordBatch| !b.is_control();
        let core = self.read_ahead_core();
        with_feed(&regions, &want, core, |feed| {
            self.map_regions(feed, dirty, start, end, &mut txns, stats, check_done)
        })
    }

    /// Pass 1's loop over the batches of the dirty segments, fed by
    /// `feed`.
    #[allow(clippy::too_many_arguments)]
    fn map_regions(
        &mut self,
        feed: &mut Feed<'_>,
        dirty: &[SegmentSnapshot],
        start: i64,
        end: i64,
        txns: &mut CleanedTransactionMetadata,
        stats: &mut CleanerStats,
        check_done: &dyn Fn() -> Result<()>,
    ) -> Result<()> {
        let mut since_check = 0u64;
        for (i, seg) in dirty.iter().enumerate() {
            check_done()?;
            let next_start = dirty.get(i + 1).map_or(end, |s| s.base_offset);
            let mut order = OffsetOrder::new(seg.base_offset, next_start);
            while let Some(fed) = feed.next() {
                let fed = fed?;
                let batch = fed.batch();
                order.check(batch)?;
                if batch.is_control() {
                    // Control records never enter the map.
                    txns.on_control_batch_read(batch, batch.control_type()?)
                        .map_err(|message| mismatch(batch, message))?;
                    stats.map_messages_read += 1;
                } else if txns.on_batch_read(batch) {
                    // Aborted data never enters the map.
                    stats.map_messages_read += batch.records_count().max(0) as u64;
                } else {
                    // The batch's digests first (MD5 several keys side by
                    // side), their slots prefetched, then the puts: the
                    // puts' cache misses overlap.
                    let records = fed.records()?;
                    let mut pending = std::mem::take(&mut self.pending);
                    pending.clear();
                    let mut keys = reuse(std::mem::take(&mut self.keys));
                    for r in records.iter() {
                        let r = r?;
                        let digest = match r.key {
                            Some(key) if r.offset >= start => {
                                keys.push(key);
                                Some(NO_DIGEST_YET)
                            }
                            _ => None,
                        };
                        pending.push((r.offset, r.is_tombstone(), digest));
                    }
                    self.digests.clear();
                    self.digests.resize(keys.len(), NO_DIGEST_YET);
                    KeyDigest::compute_many(self.digest, &keys, &mut self.digests);
                    self.keys = reuse(keys);
                    let mut digests = self.digests.iter();
                    for (_, _, digest) in pending.iter_mut().filter(|p| p.2.is_some()) {
                        let d = *digests.next().expect("a digest per key");
                        self.map.prefetch(&d);
                        *digest = Some(d);
                    }
                    let full = self.put_pending(&pending, stats);
                    self.pending = pending;
                    if full? {
                        return Ok(());
                    }
                }
                if batch.last_offset() >= start {
                    self.map.update_latest_offset(batch.last_offset() as u64);
                }
                let size = batch.size_in_bytes() as u64;
                stats.map_bytes_read += size;
                since_check += size;
                if since_check >= CHECK_EVERY_BYTES {
                    self.throttler.maybe_throttle(since_check as f64);
                    since_check = 0;
                    check_done()?;
                }
            }
            feed.end_region()?;
            self.map
                .update_latest_offset((next_start - 1).max(0) as u64);
        }
        if since_check > 0 {
            self.throttler.maybe_throttle(since_check as f64);
        }
        Ok(())
    }

    /// A core for a read-ahead thread, when enabled and one is idle.
    fn read_ahead_core(&self) -> Option<Busy> {
        self.read_ahead.as_ref().and_then(Cores::try_idle)
    }
}

impl Cleaner {
    /// Makes `self.map` the map of a round that puts at most `bound`
    /// keys.
    ///
    /// The round's map at its largest (the *target*) has the configured
    /// memory, unless fewer slots hold `bound` keys at the load factor, in
    /// which case it has those slots (at least [`MIN_SIZED_SLOTS`]). The
    /// round starts with a map for [`INITIAL_MAP_KEYS`] keys (or the target,
    /// if smaller) and grows it toward the target when it reaches the load
    /// factor ([`grow_map`](Self::grow_map)); pass 1 stops when the map
    /// holds as many keys as the target holds at the load factor.
    ///
    /// This changes no decision of the round: the keys a pass 1 may put
    /// are the ones the configured map would take before reaching its
    /// load factor (a sized target holds the whole section, and so does
    /// the configured map then), and a map answers by digest whatever its
    /// size (the layout and the probe sequence stay Kafka's). It only keeps
    /// the random accesses of the puts within less memory.
    fn size_map(&mut self, bound: u64) -> Result<()> {
        let lf = self.load_factor;
        let full_slots = Layout::Kafka.slots_for(self.map_memory);
        let bytes = Layout::Kafka.bytes_per_entry();
        let (target_slots, target_memory) = match sized_slots(bound, lf) {
            Some(s) if s < full_slots => (s, s * bytes),
            _ => (full_slots, self.map_memory),
        };
        self.target_slots = target_slots;
        self.target_memory = target_memory;
        self.capacity = lf.max_entries(target_slots);
        let memory = match sized_slots(bound.min(INITIAL_MAP_KEYS), lf) {
            Some(s) if s < target_slots => s * bytes,
            _ => target_memory,
        };
        if self.map.memory() != memory {
            self.map = OffsetMap::with_layout(memory, Layout::Kafka, self.digest)
                .context(OffsetMapSnafu)?;
        }
        Ok(())
    }

    /// Puts one batch's records (see `pending`) in order; true when the map
    /// reached its capacity before a put (the pass ends there, the records
    /// before it counted).
    fn put_pending(
        &mut self,
        pending: &[(i64, bool, Option<KeyDigest>)],
        stats: &mut CleanerStats,
    ) -> Result<bool> {
        for &(offset, tombstone, digest) in pending {
            if let Some(digest) = digest {
                if self.map.size() >= self.capacity {
                    stats.map_full = true;
                    return Ok(true);
                }
                if !self.map.has_room(self.load_factor) {
                    self.grow_map()?;
                }
                let previous = self
                    .map
                    .insert_digest(&digest, offset as u64)
                    .context(OffsetMapSnafu)?;
                self.marks.on_put(offset, tombstone, previous);
            }
            stats.map_messages_read += 1;
        }
        Ok(false)
    }

    /// Replaces the map, at its load factor, by one with four times its
    /// slots (at most the target's) holding the same digests and offsets
    /// ([`OffsetMap::rehashed`]).
    fn grow_map(&mut self) -> Result<()> {
        let slots = self.map.slots().saturating_mul(4);
        let memory = if slots >= self.target_slots {
            self.target_memory
        } else {
            slots * Layout::Kafka.bytes_per_entry()
        };
        self.map = self.map.rehashed(memory).context(OffsetMapSnafu)?;
        tracing::debug!(
            cleaner = self.id,
            slots = self.map.slots(),
            keys = self.map.size(),
            "offset map grown"
        );
        Ok(())
    }
}

/// A placeholder for a digest about to be computed.
const NO_DIGEST_YET: KeyDigest = KeyDigest::from_bytes([0; 16]);

/// An empty vector of slices of another lifetime in `v`'s memory (the
/// element types differ only in lifetime, so the standard library's
/// in-place `collect` keeps the allocation; a test checks it does): a
/// batch's key slices borrow its records, so the vector that holds them
/// cannot outlive the batch, but its memory can.
fn reuse<'b>(mut v: Vec<&[u8]>) -> Vec<&'b [u8]> {
    v.clear();
    v.into_iter()
        .map(|_| unreachable!("the vector is empty"))
        .collect()
}

/// The fewest slots (at least [`MIN_SIZED_SLOTS`]) whose map holds `keys`
/// keys at load factor `lf`, or `None` beyond `i32::MAX` slots.
fn sized_slots(keys: u64, lf: LoadFactor) -> Option<usize> {
    let keys = usize::try_from(keys).ok()?;
    let mut slots = ((keys as f64 / lf.value()).ceil() as usize).max(MIN_SIZED_SLOTS);
    // The float estimate may land a slot short of `floor(slots * lf)`.
    while lf.max_entries(slots) < keys {
        slots = slots.checked_add(1)?;
    }
    (slots <= i32::MAX as usize).then_some(slots)
}

/// Pass 2's buffers and limits, apart from the map that [`Pass2`] borrows.
struct CleanIo<'a> {
    write_buffer_size: usize,
    producer_id_expiration_ms: i64,
    throttler: &'a Throttler,
    write_buffer: &'a mut Vec<u8>,
    written: &'a mut Vec<AppendedBatch>,
    since_check: u64,
}

impl CleanIo<'_> {
    /// Cleans one source segment into `dest`.
    #[allow(clippy::too_many_arguments)]
    fn clean_into(
        &mut self,
        pass: &mut Pass2<'_>,
        feed: &mut Feed<'_>,
        seg: &SegmentSnapshot,
        dest: &mut LogSegment,
        last_of_round: bool,
        stats: &mut CleanerStats,
        check_done: &dyn Fn() -> Result<()>,
    ) -> Result<()> {
        self.write_buffer.clear();
        self.written.clear();
        let mut order =
            OffsetOrder::new(seg.base_offset, pass.snap.next_base_after(seg.base_offset));
        while let Some(fed) = feed.next() {
            let fed = fed?;
            let batch = fed.batch();
            order.check(batch)?;
            let size = batch.size_in_bytes() as u64;
            let ends_segment = batch.position() + size == seg.size;
            // Kafka's `checkBatchRetention`.
            let control = batch.is_control();
            let can_discard = if control {
                let outcome = pass
                    .txns
                    .on_control_batch_read(batch, batch.control_type()?)
                    .map_err(|message| mismatch(batch, message))?;
                if let Some(txn) = outcome.index {
                    dest.append_aborted_txn(txn)?;
                    stats.aborted_txns_indexed += 1;
                }
                outcome.can_discard
            } else {
                pass.txns.on_batch_read(batch)
            };
            let discard_records = if control {
                can_discard && batch.delete_horizon_ms().is_some_and(|h| h <= pass.ctx.now)
            } else {
                can_discard
            };
            let retention = if batch.next_offset() == pass.upper_bound
                || (last_of_round && ends_segment)
                || self.is_producers_last_batch(pass, batch)
            {
                BatchRetention::RetainEmpty
            } else if discard_records {
                BatchRetention::Delete
            } else {
                BatchRetention::DeleteEmpty
            };
            let decision = BatchDecision {
                retention,
                discard_records,
                marker_for_empty_txn: can_discard && control,
            };
            let f = filter_batch(&fed, &pass.ctx, decision)?;
            if control {
                if f.records_kept > 0 {
                    stats.markers_kept += 1;
                } else {
                    stats.markers_removed += 1;
                }
            } else if can_discard {
                stats.aborted_batches_removed += 1;
            }
            stats.bytes_read += size;
            stats.messages_read += f.records_read;
            stats.messages_written += f.records_kept;
            stats.invalid_messages_read += f.invalid;
            stats.tombstones_dropped += f.tombstones_dropped;
            stats.delete_horizons_set += u64::from(f.horizon_set);
            match (&f.fate, f.empty_header) {
                (BatchFate::Copied, _) => stats.batches_copied += 1,
                (BatchFate::Rewritten(_), true) => stats.empty_headers += 1,
                (BatchFate::Rewritten(_), false) => stats.batches_rewritten += 1,
                (BatchFate::Dropped, _) => stats.batches_dropped += 1,
            }
            if let Some(h) = f.delete_horizon_ms {
                pass.earliest_horizon = Some(pass.earliest_horizon.map_or(h, |e| e.min(h)));
            }
            if let Some(written) = f.written(batch) {
                let bytes = written.raw();
                self.write_buffer.extend_from_slice(bytes);
                self.written.push(AppendedBatch {
                    size: bytes.len() as u32,
                    last_offset: batch.last_offset(),
                    max_timestamp: written.max_timestamp(),
                });
                stats.bytes_written += bytes.len() as u64;
                if self.write_buffer.len() >= self.write_buffer_size {
                    self.flush(dest)?;
                }
            }
            self.since_check += size;
            if self.since_check >= CHECK_EVERY_BYTES {
                self.throttler.maybe_throttle(self.since_check as f64);
                self.since_check = 0;
                check_done()?;
            }
        }
        feed.end_region()?;
        self.flush(dest)
    }

    fn flush(&mut self, dest: &mut LogSegment) -> Result<()> {
        if self.written.is_empty() {
            return Ok(());
        }
        dest.append_batches(self.write_buffer, self.written)?;
        self.throttler
            .maybe_throttle(self.write_buffer.len() as f64);
        self.write_buffer.clear();
        self.written.clear();
        Ok(())
    }

    /// Whether `batch` is the last batch of an active producer (Kafka's
    /// `lastRecordsOfActiveProducers`): the batch holding its last data
    /// offset, or, when its state has no data batch, a control batch of
    /// its epoch; active while `producer.id.expiration.ms` has not passed
    /// since its last write.
    fn is_producers_last_batch(&self, pass: &Pass2<'_>, batch: &RecordBatch) -> bool {
        if !batch.has_producer_id() {
            return false;
        }
        let Some(p) = pass.snap.producers.get(&batch.producer_id()) else {
            return false;
        };
        if p.is_expired(pass.ctx.now, self.producer_id_expiration_ms) {
            return false;
        }
        match p.last_data_offset() {
            Some(last) => batch.last_offset() == last,
            None => batch.is_control() && batch.producer_epoch() == p.producer_epoch,
        }
    }
}

/// The error for a marker that contradicts the transaction indexes.
fn mismatch(batch: &RecordBatch, message: String) -> crate::Error {
    TransactionIndexMismatchSnafu {
        path: batch
            .path()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_default(),
        offset: batch.position(),
        message,
    }
    .build()
}

/// Checks a batch before the cleaner uses it: its CRC.
///
/// Its size is not held against `message.max.bytes` or the log's
/// `max.message.bytes`: a valid batch written before the limit was lowered
/// is cleaned like any other, as Kafka's cleaner grows its read buffer to
/// the next batch's size (`growBuffersOrFail`). The batch was read whole
/// already, and its length was checked against the segment's size.
pub(crate) fn check_batch(batch: &RecordBatch) -> Result<()> {
    Ok(batch.ensure_valid()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reused_key_vectors_keep_their_memory() {
        let bytes = b"key".to_vec();
        let mut keys: Vec<&[u8]> = Vec::with_capacity(100);
        keys.push(&bytes);
        let at = keys.as_ptr() as usize;
        let again: Vec<&'static [u8]> = reuse(keys);
        assert!(again.is_empty());
        assert_eq!((again.as_ptr() as usize, again.capacity()), (at, 100));
    }

    #[test]
    fn sized_slots_hold_the_keys_at_the_load_factor() {
        let kafka = LoadFactor::KAFKA_DEFAULT;
        assert_eq!(sized_slots(0, kafka), Some(MIN_SIZED_SLOTS));
        for keys in [1u64, 921, 922, 1_000, 99_999, 1_000_000, 5_033_164] {
            for lf in [
                kafka,
                LoadFactor::new(0.5).expect("valid"),
                LoadFactor::new(1.0).expect("valid"),
            ] {
                let slots = sized_slots(keys, lf).expect("fits");
                assert!(
                    lf.max_entries(slots) as u64 >= keys,
                    "{keys} keys, {slots} slots"
                );
                if slots > MIN_SIZED_SLOTS {
                    assert!(
                        (lf.max_entries(slots - 1) as u64) < keys,
                        "{slots} is the fewest"
                    );
                }
            }
        }
        assert_eq!(sized_slots(u64::from(u32::MAX), kafka), None);
    }
}
