//! Producer state: what each idempotent or transactional producer last
//! wrote, and which transactions are still open (Kafka's
//! `ProducerStateManager`, `ProducerAppendInfo` and `ProducerStateEntry`).
//!
//! Every batch with a producer id updates its producer's entry: a data
//! batch records its last sequence and offset, and a transactional one
//! opens a transaction at its base offset if the producer has none open; a
//! COMMIT or ABORT marker closes the producer's open transaction. An
//! aborted transaction becomes an entry of the transaction index
//! ([`AbortedTxn`]) of the segment holding the marker, with the log's last
//! stable offset at that moment. The **first unstable offset** is the first
//! offset of the earliest open transaction: a `read_committed` reader stops
//! there and the log cleaner never cleans at or above it.
//!
//! Kafka's broker validates appends from clients with this state (epochs,
//! sequence numbers, duplicates); we check what keeps the transactions
//! well-formed — a producer's epoch never goes back, a producer with an open
//! transaction writes only transactional batches until its marker, a
//! marker's coordinator epoch never goes back — and neither check sequence
//! numbers nor remember batches for duplicate detection. Replaying the log
//! (recovery) applies Kafka's rules for replicated batches: only the
//! transactional check can fail.
//!
//! Kafka also forgets producers idle for `producer.id.expiration.ms`; here
//! every producer is kept (the state grows with the producer ids a log has
//! seen), and the cleaner, which is what the expiry matters to, applies
//! its own `producer.id.expiration.ms` when it reads the state.
//!
//! The state is written to `<offset>.snapshot` files
//! ([`producer_snapshot`](crate::producer_snapshot)) when a segment rolls
//! and when the log closes, so that opening a log replays only the batches
//! after the latest snapshot.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use lithify_vfs::FileSystem;
use snafu::ResultExt as _;

use crate::error::{CorruptSnafu, IN_MEMORY, IoSnafu, Result};
use crate::naming::{self, FileKind, Suffix};
use crate::producer_snapshot;
use crate::record::{ControlRecordType, EndTransactionMarker, RecordBatch};
use crate::txn_index::AbortedTxn;

/// The last data batch of a producer (Kafka's `BatchMetadata`; Kafka keeps
/// the last five for duplicate detection, a snapshot only the last).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BatchMetadata {
    /// Sequence number of the batch's last record.
    pub last_sequence: i32,
    /// Offset of the batch's last record.
    pub last_offset: i64,
    /// `last_offset` minus the batch's base offset.
    pub offset_delta: i32,
}

/// One producer's state (Kafka's `ProducerStateEntry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProducerStateEntry {
    /// The producer id.
    pub producer_id: i64,
    /// Its current epoch (-1: none seen).
    pub producer_epoch: i16,
    /// The epoch of the coordinator that wrote its last marker (-1: none).
    pub coordinator_epoch: i32,
    /// The max timestamp of its last batch, or its last marker's timestamp:
    /// what `producer.id.expiration.ms` is measured from.
    pub last_timestamp: i64,
    /// The first offset of its open transaction, if one is open.
    pub current_txn_first_offset: Option<i64>,
    /// Its last data batch in the current epoch, if any.
    pub last_batch: Option<BatchMetadata>,
}

impl ProducerStateEntry {
    fn empty(producer_id: i64) -> Self {
        ProducerStateEntry {
            producer_id,
            producer_epoch: -1,
            coordinator_epoch: -1,
            last_timestamp: -1,
            current_txn_first_offset: None,
            last_batch: None,
        }
    }

    /// The offset of its last data record (Kafka's `lastDataOffset`), if it
    /// wrote one in the current epoch.
    pub fn last_data_offset(&self) -> Option<i64> {
        self.last_batch.map(|b| b.last_offset)
    }

    /// Whether `producer.id.expiration.ms` has passed since its last write
    /// at `now` (a producer with an open transaction never expires).
    pub fn is_expired(&self, now: i64, expiration_ms: i64) -> bool {
        self.current_txn_first_offset.is_none()
            && now.saturating_sub(self.last_timestamp) >= expiration_ms
    }

    /// A new epoch forgets the batches of the old one.
    fn maybe_update_epoch(&mut self, epoch: i16) {
        if self.producer_epoch != epoch {
            self.last_batch = None;
            self.producer_epoch = epoch;
        }
    }
}

/// An end transaction marker as producer state reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EndMarker {
    pub(crate) aborted: bool,
    pub(crate) coordinator_epoch: i32,
    /// The marker record's timestamp.
    pub(crate) timestamp: i64,
}

/// The fields of a batch that producer state reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProducerBatch {
    pub(crate) producer_id: i64,
    pub(crate) producer_epoch: i16,
    pub(crate) base_sequence: i32,
    pub(crate) base_offset: i64,
    pub(crate) last_offset: i64,
    pub(crate) max_timestamp: i64,
    pub(crate) transactional: bool,
    /// For a control batch, its marker (`None`: an empty control batch,
    /// what the cleaner leaves of a marker).
    pub(crate) control: Option<Option<EndMarker>>,
}

impl ProducerBatch {
    /// Reads `batch`'s producer fields, and for a control batch with a
    /// producer its ABORT or COMMIT marker; `None` for a batch without a
    /// producer. A control batch of a producer whose record is not an end
    /// transaction marker is a corruption error naming the batch.
    pub(crate) fn of(batch: &RecordBatch) -> Result<Option<ProducerBatch>> {
        if !batch.has_producer_id() {
            return Ok(None);
        }
        let control = if batch.is_control() {
            let records = batch.records()?;
            Some(match records.first() {
                None => None,
                Some(r) => {
                    let bad = |message: String| {
                        let (path, offset) = match batch.origin() {
                            Some(o) => ((*o.path).clone(), o.position),
                            None => (PathBuf::from(IN_MEMORY), 0),
                        };
                        CorruptSnafu {
                            path,
                            offset,
                            message,
                        }
                        .fail()
                    };
                    let key = r.key.as_deref().unwrap_or_default();
                    let aborted = match ControlRecordType::parse_key(key) {
                        Ok(ControlRecordType::Abort) => true,
                        Ok(ControlRecordType::Commit) => false,
                        Ok(t) => {
                            return bad(format!(
                                "the control batch of producer {} holds a {t:?} record, not an end transaction marker",
                                batch.producer_id()
                            ));
                        }
                        Err(e) => return bad(format!("bad control record key: {e}")),
                    };
                    let value = r.value.as_deref().unwrap_or_default();
                    let marker = match EndTransactionMarker::parse(value) {
                        Ok(m) => m,
                        Err(e) => return bad(format!("bad end transaction marker: {e}")),
                    };
                    Some(EndMarker {
                        aborted,
                        coordinator_epoch: marker.coordinator_epoch,
                        timestamp: r.timestamp,
                    })
                }
            })
        } else {
            None
        };
        Ok(Some(ProducerBatch {
            producer_id: batch.producer_id(),
            producer_epoch: batch.producer_epoch(),
            base_sequence: batch.base_sequence(),
            base_offset: batch.base_offset(),
            last_offset: batch.last_offset(),
            max_timestamp: batch.max_timestamp(),
            transactional: batch.is_transactional(),
            control,
        }))
    }

    /// The sequence number of the batch's last record (Kafka's
    /// `lastSequence`, wrapping past `i32::MAX` to 0).
    fn last_sequence(&self) -> i32 {
        if self.base_sequence < 0 {
            return -1;
        }
        let delta = (self.last_offset - self.base_offset).clamp(0, i64::from(i32::MAX)) as i32;
        if self.base_sequence > i32::MAX - delta {
            delta - (i32::MAX - self.base_sequence) - 1
        } else {
            self.base_sequence + delta
        }
    }
}

/// A transaction a marker closed (Kafka's `CompletedTxn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CompletedTxn {
    pub(crate) producer_id: i64,
    pub(crate) first_offset: i64,
    /// The marker's offset.
    pub(crate) last_offset: i64,
    pub(crate) aborted: bool,
}

/// Every producer's state and the open transactions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ProducerStateManager {
    producers: BTreeMap<i64, ProducerStateEntry>,
    /// Open transactions: first offset -> producer id.
    ongoing: BTreeMap<i64, i64>,
    /// The offset after the last batch applied.
    map_end_offset: i64,
}

impl ProducerStateManager {
    /// An empty state at `offset`.
    pub(crate) fn new(offset: i64) -> Self {
        ProducerStateManager {
            map_end_offset: offset,
            ..Default::default()
        }
    }

    /// The state of a snapshot taken at `offset` (Kafka's
    /// `loadFromSnapshot`, which also drops the producers expired by then;
    /// here expiry is the cleaner's business, see the module doc).
    pub(crate) fn from_snapshot(entries: Vec<ProducerStateEntry>, offset: i64) -> Self {
        let mut s = Self::new(offset);
        for e in entries {
            if let Some(first) = e.current_txn_first_offset {
                s.ongoing.insert(first, e.producer_id);
            }
            s.producers.insert(e.producer_id, e);
        }
        s
    }

    /// The offset after the last batch applied.
    pub(crate) fn map_end_offset(&self) -> i64 {
        self.map_end_offset
    }

    /// Every producer's state, by producer id.
    pub(crate) fn producers(&self) -> &BTreeMap<i64, ProducerStateEntry> {
        &self.producers
    }

    /// The first offset of the earliest open transaction.
    pub(crate) fn first_unstable_offset(&self) -> Option<i64> {
        self.ongoing.keys().next().copied()
    }

    /// Checks `b` as an append from a producer or a coordinator (before it
    /// is written): its epoch must not be older than the producer's, a
    /// producer with an open transaction must write a transactional batch,
    /// and a marker's coordinator epoch must not be older than the last
    /// one. Says what is wrong otherwise.
    pub(crate) fn check_append(&self, b: &ProducerBatch) -> Result<(), String> {
        let Some(entry) = self.producers.get(&b.producer_id) else {
            return Ok(());
        };
        if b.producer_epoch < entry.producer_epoch {
            return Err(format!(
                "producer {} writes with epoch {}, older than its epoch {} (fenced)",
                b.producer_id, b.producer_epoch, entry.producer_epoch
            ));
        }
        match b.control {
            Some(Some(m)) if m.coordinator_epoch < entry.coordinator_epoch => Err(format!(
                "the marker for producer {} has coordinator epoch {}, older than {} (a zombie coordinator)",
                b.producer_id, m.coordinator_epoch, entry.coordinator_epoch
            )),
            None if entry.current_txn_first_offset.is_some() && !b.transactional => {
                Err(self.not_transactional(b, entry))
            }
            _ => Ok(()),
        }
    }

    fn not_transactional(&self, b: &ProducerBatch, entry: &ProducerStateEntry) -> String {
        format!(
            "producer {} wrote a non-transactional batch at offset {} while its transaction from offset {} is open",
            b.producer_id,
            b.base_offset,
            entry.current_txn_first_offset.unwrap_or(-1)
        )
    }

    /// Applies `b` (a batch with a producer, already written) as Kafka
    /// applies a replicated batch, then completes the transaction its
    /// marker closes: an aborted one is returned as the entry for the
    /// transaction index of the segment holding the marker, with the last
    /// stable offset at this moment. Fails only for a non-transactional
    /// batch of a producer with an open transaction.
    pub(crate) fn apply(&mut self, b: &ProducerBatch) -> Result<Option<AbortedTxn>, String> {
        let completed = self.update(b)?;
        self.map_end_offset = self.map_end_offset.max(b.last_offset.saturating_add(1));
        let Some(c) = completed else {
            return Ok(None);
        };
        let lso = self.last_stable_offset(&c);
        self.ongoing.remove(&c.first_offset);
        Ok(c.aborted.then_some(AbortedTxn {
            producer_id: c.producer_id,
            first_offset: c.first_offset,
            last_offset: c.last_offset,
            last_stable_offset: lso,
        }))
    }

    /// A batch without a producer: only the end offset moves.
    pub(crate) fn skip(&mut self, next_offset: i64) {
        self.map_end_offset = self.map_end_offset.max(next_offset);
    }

    /// Kafka's `ProducerAppendInfo.append` + `ProducerStateManager.update`.
    fn update(&mut self, b: &ProducerBatch) -> Result<Option<CompletedTxn>, String> {
        let entry = self
            .producers
            .entry(b.producer_id)
            .or_insert_with(|| ProducerStateEntry::empty(b.producer_id));
        match b.control {
            // An empty control batch: the cleaner removed the transaction.
            Some(None) => Ok(None),
            Some(Some(m)) => {
                let completed = entry.current_txn_first_offset.map(|first| CompletedTxn {
                    producer_id: b.producer_id,
                    first_offset: first,
                    last_offset: b.base_offset,
                    aborted: m.aborted,
                });
                entry.maybe_update_epoch(b.producer_epoch);
                entry.coordinator_epoch = m.coordinator_epoch;
                entry.current_txn_first_offset = None;
                entry.last_timestamp = m.timestamp;
                Ok(completed)
            }
            None => {
                if entry.current_txn_first_offset.is_some() && !b.transactional {
                    let e = *entry;
                    return Err(self.not_transactional(b, &e));
                }
                entry.maybe_update_epoch(b.producer_epoch);
                entry.last_batch = Some(BatchMetadata {
                    last_sequence: b.last_sequence(),
                    last_offset: b.last_offset,
                    offset_delta: (b.last_offset - b.base_offset) as i32,
                });
                entry.last_timestamp = b.max_timestamp;
                if b.transactional && entry.current_txn_first_offset.is_none() {
                    entry.current_txn_first_offset = Some(b.base_offset);
                    self.ongoing.insert(b.base_offset, b.producer_id);
                }
                Ok(None)
            }
        }
    }

    /// The last stable offset once `c` completes (Kafka's
    /// `lastStableOffset(completedTxn)`): the first offset of the earliest
    /// open transaction of another producer, or the offset after the
    /// marker.
    fn last_stable_offset(&self, c: &CompletedTxn) -> i64 {
        self.ongoing
            .iter()
            .find(|(_, pid)| **pid != c.producer_id)
            .map_or(c.last_offset + 1, |(first, _)| *first)
    }

    /// The snapshot file's bytes for this state.
    pub(crate) fn snapshot_bytes(&self) -> Vec<u8> {
        let entries: Vec<ProducerStateEntry> = self.producers.values().copied().collect();
        producer_snapshot::encode(&entries)
    }
}

/// The producer snapshot of `dir` at `offset`.
pub(crate) fn snapshot_path(dir: &Path, offset: i64) -> PathBuf {
    dir.join(naming::file_name(offset, FileKind::Snapshot, Suffix::None))
}

/// The offsets of `dir`'s producer snapshots, ascending.
pub(crate) fn list_snapshots(fs: &dyn FileSystem, dir: &Path) -> Result<Vec<i64>> {
    let names = fs.list_dir(dir).context(IoSnafu {
        action: "list",
        path: dir,
    })?;
    let mut out: Vec<i64> = names
        .iter()
        .filter_map(|n| naming::parse(n))
        .filter(|p| p.kind == FileKind::Snapshot && p.suffix == Suffix::None)
        .map(|p| p.base_offset)
        .collect();
    out.sort_unstable();
    Ok(out)
}

/// Writes `state` as the snapshot at `offset` and syncs the file (the
/// caller syncs the directory). Written in place, as Kafka does: a torn
/// file fails its CRC and is replaced by a replay.
pub(crate) fn write_snapshot(
    fs: &dyn FileSystem,
    dir: &Path,
    offset: i64,
    state: &ProducerStateManager,
) -> Result<()> {
    let path = snapshot_path(dir, offset);
    let ctx = |action| IoSnafu {
        action,
        path: path.clone(),
    };
    let mut f = fs.create(&path).context(ctx("create"))?;
    f.append(&state.snapshot_bytes()).context(ctx("write"))?;
    f.sync_data().context(ctx("sync"))
}

/// Reads and decodes the snapshot at `offset`.
pub(crate) fn read_snapshot(
    fs: &dyn FileSystem,
    dir: &Path,
    offset: i64,
) -> Result<Vec<ProducerStateEntry>> {
    let path = snapshot_path(dir, offset);
    let bytes = lithify_vfs::read_file(fs, &path).context(IoSnafu {
        action: "read",
        path: &path,
    })?;
    producer_snapshot::decode(&path, &bytes)
}

/// Removes the snapshot at `offset`, if it exists.
pub(crate) fn delete_snapshot(fs: &dyn FileSystem, dir: &Path, offset: i64) -> Result<()> {
    let path = snapshot_path(dir, offset);
    match fs.remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).context(IoSnafu {
            action: "remove",
            path: &path,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(pid: i64, base: i64, last: i64, txn: bool) -> ProducerBatch {
        ProducerBatch {
            producer_id: pid,
            producer_epoch: 0,
            base_sequence: base as i32,
            base_offset: base,
            last_offset: last,
            max_timestamp: 100 + last,
            transactional: txn,
            control: None,
        }
    }

    fn marker(pid: i64, at: i64, aborted: bool) -> ProducerBatch {
        ProducerBatch {
            control: Some(Some(EndMarker {
                aborted,
                coordinator_epoch: 0,
                timestamp: 100 + at,
            })),
            ..data(pid, at, at, true)
        }
    }

    /// Kafka's testMultiPassSegmentCleaningWithAbortedTransactions log:
    /// the transaction index entries and their last stable offsets.
    #[test]
    fn aborted_transactions_and_last_stable_offsets() {
        let mut s = ProducerStateManager::new(0);
        let mut aborted = Vec::new();
        let mut go = |s: &mut ProducerStateManager, b| {
            if let Some(t) = s.apply(&b).unwrap() {
                aborted.push(t);
            }
        };
        go(&mut s, data(1, 0, 1, true));
        assert_eq!(s.first_unstable_offset(), Some(0));
        go(&mut s, data(2, 2, 3, true));
        go(&mut s, data(1, 4, 5, true));
        go(&mut s, marker(1, 6, false));
        assert_eq!(s.first_unstable_offset(), Some(2));
        go(&mut s, marker(2, 7, false));
        assert_eq!(s.first_unstable_offset(), None);
        go(&mut s, data(1, 8, 9, true));
        go(&mut s, marker(1, 10, true));
        go(&mut s, data(2, 11, 12, true));
        go(&mut s, data(1, 13, 14, true));
        go(&mut s, marker(1, 15, false));
        go(&mut s, marker(2, 16, true));
        go(&mut s, data(2, 17, 18, true));
        go(&mut s, marker(2, 19, false));
        let t = |p, f, l, lso| AbortedTxn {
            producer_id: p,
            first_offset: f,
            last_offset: l,
            last_stable_offset: lso,
        };
        assert_eq!(aborted, [t(1, 8, 10, 11), t(2, 11, 16, 17)]);
        assert_eq!(s.map_end_offset(), 20);
        let p1 = s.producers()[&1];
        assert_eq!(p1.last_data_offset(), Some(14), "a marker keeps the batch");
        assert_eq!(p1.last_timestamp, 115, "the marker's timestamp");
    }

    #[test]
    fn an_open_transaction_of_another_producer_bounds_the_last_stable_offset() {
        let mut s = ProducerStateManager::new(0);
        s.apply(&data(2, 0, 0, true)).unwrap();
        s.apply(&data(1, 1, 2, true)).unwrap();
        let t = s.apply(&marker(1, 3, true)).unwrap().unwrap();
        assert_eq!((t.first_offset, t.last_stable_offset), (1, 0));
    }

    #[test]
    fn appends_are_checked_replays_only_for_transactions() {
        let mut s = ProducerStateManager::new(0);
        s.apply(&data(1, 0, 0, true)).unwrap();
        let plain = data(1, 1, 1, false);
        assert!(
            s.check_append(&plain)
                .unwrap_err()
                .contains("while its transaction")
        );
        assert!(s.apply(&plain).is_err(), "a replay refuses it too");
        let old = ProducerBatch {
            producer_epoch: -1,
            ..data(1, 1, 1, true)
        };
        assert!(s.check_append(&old).unwrap_err().contains("fenced"));
        let end = |coordinator_epoch| ProducerBatch {
            control: Some(Some(EndMarker {
                aborted: false,
                coordinator_epoch,
                timestamp: 0,
            })),
            ..data(1, 2, 2, true)
        };
        s.apply(&end(3)).unwrap();
        assert!(s.check_append(&end(2)).unwrap_err().contains("zombie"));
        assert_eq!(s.check_append(&end(3)), Ok(()));
    }

    #[test]
    fn last_sequence_wraps_like_kafka() {
        let mut b = data(1, 10, 14, false);
        assert_eq!(b.last_sequence(), 14);
        b.base_sequence = i32::MAX - 1;
        assert_eq!(b.last_sequence(), 2);
        b.base_sequence = -1;
        assert_eq!(b.last_sequence(), -1);
    }

    #[test]
    fn snapshots_round_trip() {
        let mut s = ProducerStateManager::new(0);
        s.apply(&data(1, 0, 0, false)).unwrap();
        s.apply(&data(2, 1, 1, true)).unwrap();
        let bytes = s.snapshot_bytes();
        let entries = producer_snapshot::decode(Path::new("/x.snapshot"), &bytes).unwrap();
        let loaded = ProducerStateManager::from_snapshot(entries.clone(), 2);
        assert_eq!(loaded, s);
        assert_eq!(loaded.first_unstable_offset(), Some(1));
        // Producer 1 wrote at 100: expired for a cleaner at 5000 with a
        // 1000 ms expiration; 2 has an open transaction and never expires.
        assert!(entries[0].is_expired(5000, 1000));
        assert!(!entries[1].is_expired(5000, 1000));
    }
}
