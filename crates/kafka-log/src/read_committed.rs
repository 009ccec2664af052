//! Reading a log as a `read_committed` Kafka consumer does: the broker
//! serves batches below the last stable offset with the aborted
//! transactions of the range (`UnifiedLog.read` with `TXN_COMMITTED`), and
//! the consumer drops the batches they cover (the fetcher's
//! `abortedProducerIds` bookkeeping):
//!
//! * aborted transactions are taken in first-offset order; before each
//!   batch of a producer, every one starting at or before the batch's last
//!   offset marks its producer as aborting;
//! * a transactional data batch of an aborting producer is skipped;
//! * an ABORT marker ends its producer's aborting state;
//! * control batches are skipped, and so is everything at or after the
//!   last stable offset (undecided transactions).
//!
//! Beyond Kafka's consumer, the markers are checked against the
//! transaction indexes: an ABORT marker after transactional data that no
//! index entry covered (a `.txnindex` that lost entries: Kafka cannot tell
//! a missing index from one without aborts), or a COMMIT marker of a
//! producer an entry says is aborting, is a corruption error naming the
//! marker's file and byte offset, never records of an aborted transaction
//! handed out as committed.

use std::collections::{HashSet, VecDeque};
use std::path::Path;

use crate::error::{CorruptSnafu, Error, Result};
use crate::log::LogBatches;
use crate::record::{ControlRecordType, Record, RecordBatch};
use crate::txn_index::AbortedTxn;

/// The committed records of a log from an offset; see
/// [`Log::committed_records_from`](crate::Log::committed_records_from).
#[derive(Debug)]
pub struct CommittedRecords<'a> {
    batches: LogBatches<'a>,
    /// The last stable offset: nothing at or after it is read.
    stable_end: i64,
    /// Aborted transactions not reached yet, by first offset.
    aborted: VecDeque<AbortedTxn>,
    aborting: HashSet<i64>,
    /// Producers whose transactional data was read as committed since
    /// their last marker.
    committing: HashSet<i64>,
    pending: VecDeque<Record>,
    start_offset: i64,
}

impl<'a> CommittedRecords<'a> {
    /// The committed records of `batches` (from `start_offset`) below
    /// `stable_end`, dropping what the transactions `aborted` cover.
    pub(crate) fn new(
        batches: LogBatches<'a>,
        start_offset: i64,
        stable_end: i64,
        mut aborted: Vec<AbortedTxn>,
    ) -> Self {
        aborted.sort_by_key(|t| t.first_offset);
        CommittedRecords {
            batches,
            stable_end,
            aborted: aborted.into(),
            aborting: HashSet::new(),
            committing: HashSet::new(),
            pending: VecDeque::new(),
            start_offset,
        }
    }

    /// Whether the batch is to be read; updates the aborting producers.
    fn keep(&mut self, batch: &RecordBatch) -> Result<bool> {
        if batch.has_producer_id() {
            while let Some(t) = self.aborted.front()
                && t.first_offset <= batch.last_offset()
            {
                self.aborting.insert(t.producer_id);
                self.aborted.pop_front();
            }
            let pid = batch.producer_id();
            if batch.is_control() {
                match batch.control_type()? {
                    Some(ControlRecordType::Abort) => {
                        if self.committing.remove(&pid) {
                            return mismatch(
                                batch,
                                "ends a transaction whose data no transaction index entry lists as aborted (a .txnindex lost entries)",
                            );
                        }
                        self.aborting.remove(&pid);
                    }
                    Some(ControlRecordType::Commit) => {
                        if self.aborting.contains(&pid) {
                            return mismatch(
                                batch,
                                "ends a transaction that a transaction index entry lists as aborted",
                            );
                        }
                        self.committing.remove(&pid);
                    }
                    _ => {}
                }
            } else if batch.is_transactional() {
                if self.aborting.contains(&pid) {
                    return Ok(false);
                }
                self.committing.insert(pid);
            }
        }
        Ok(!batch.is_control())
    }
}

/// A marker that disagrees with the transaction indexes.
fn mismatch(batch: &RecordBatch, what: &str) -> Result<bool> {
    let kind = if batch.control_type()? == Some(ControlRecordType::Abort) {
        "ABORT"
    } else {
        "COMMIT"
    };
    CorruptSnafu {
        path: batch.path().map(Path::to_path_buf).unwrap_or_default(),
        offset: batch.position(),
        message: format!(
            "the {kind} marker of producer {} at offset {} {what}; reopen the log with OpenOptions::recovery_point = Some(0) to rebuild every .txnindex from the log",
            batch.producer_id(),
            batch.base_offset()
        ),
    }
    .fail()
}

impl Iterator for CommittedRecords<'_> {
    type Item = Result<Record>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = self.pending.pop_front() {
                return Some(Ok(r));
            }
            let batch = match self.batches.next()? {
                Ok(b) => b,
                Err(e) => return Some(Err(e)),
            };
            if batch.base_offset() >= self.stable_end {
                return None;
            }
            // Records only from a batch whose CRC holds (as `records_from`).
            let kept = batch
                .ensure_valid()
                .map_err(Error::from)
                .and_then(|()| self.keep(&batch));
            match kept {
                Ok(false) => continue,
                Ok(true) => {}
                Err(e) => return Some(Err(e)),
            }
            match batch.records() {
                Ok(records) => self.pending.extend(
                    records
                        .into_iter()
                        .filter(|r| r.offset >= self.start_offset && r.offset < self.stable_end),
                ),
                Err(e) => return Some(Err(e.into())),
            }
        }
    }
}
