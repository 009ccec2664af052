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

use std::collections::{HashSet, VecDeque};

use crate::error::Result;
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
            if batch.is_control() {
                if batch.control_type()? == Some(ControlRecordType::Abort) {
                    self.aborting.remove(&batch.producer_id());
                }
            } else if batch.is_transactional() && self.aborting.contains(&batch.producer_id()) {
                return Ok(false);
            }
        }
        Ok(!batch.is_control())
    }
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
            let kept = batch.ensure_valid().and_then(|()| self.keep(&batch));
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
                Err(e) => return Some(Err(e)),
            }
        }
    }
}
