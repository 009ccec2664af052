//! Transaction state while a round reads a log in offset order (Kafka's
//! `CleanedTransactionMetadata`): which data batches belong to aborted
//! transactions, and which COMMIT and ABORT markers may go.
//!
//! The aborted transactions of the range being read (from the
//! transaction indexes, [`LogSnapshot::collect_aborted_transactions`]) wait
//! in first-offset order; before each batch, those starting at or before
//! its last offset become the *ongoing aborted* transaction of their
//! producer — unless their ABORT marker lies before the batch (Kafka keeps
//! those too: pass 1 starts reading at the first dirty offset's index
//! entry, so a transaction aborted just before it in the same segment
//! would stay "ongoing" and its producer's later committed batches would
//! be taken for aborted ones and left out of the offset map). Then:
//!
//! * a transactional data batch of a producer with an ongoing aborted
//!   transaction is aborted data: it may be discarded whatever its keys,
//!   and the transaction is marked as having data left;
//! * any other transactional data batch makes its producer's transaction
//!   an *ongoing committed* one with data left;
//! * an ABORT marker ends the producer's ongoing aborted transaction: the
//!   marker stays while the round saw data of the transaction (the
//!   transaction then goes to the cleaned segment's `.txnindex`), and may
//!   go otherwise;
//! * a COMMIT marker may go if the round saw no data of its transaction;
//! * another control record stays; an empty control batch (a marker the
//!   cleaner already emptied) may go.
//!
//! Beyond Kafka, the markers are checked against the indexes: an ABORT
//! marker after transactional data of its producer that no index entry
//! covered (an index that lost entries), or a COMMIT marker of a producer
//! an entry says is aborting, stops the round: cleaning on would turn the
//! aborted data into committed data for good.
//!
//! "May go" is not "goes": a marker first gets a delete horizon and is
//! removed by a later round past it (see [`filter`](crate::filter)).
//!
//! [`LogSnapshot::collect_aborted_transactions`]: lithify_kafka_log::LogSnapshot::collect_aborted_transactions

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};

use lithify_kafka_log::record::{ControlRecordType, RecordBatch};
use lithify_kafka_log::txn_index::AbortedTxn;

/// An ongoing aborted transaction, and the last offset of its data seen.
#[derive(Debug, Clone, Copy)]
struct OngoingAborted {
    txn: AbortedTxn,
    last_observed: Option<i64>,
}

/// What to do with a control batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ControlOutcome {
    /// Whether the marker may go (its transaction left no data).
    pub(crate) can_discard: bool,
    /// The aborted transaction to record in the cleaned segment's
    /// `.txnindex`: an ABORT marker kept for the data it still covers.
    pub(crate) index: Option<AbortedTxn>,
}

/// See the module documentation.
#[derive(Debug, Default)]
pub(crate) struct CleanedTransactionMetadata {
    ongoing_committed: HashSet<i64>,
    ongoing_aborted: HashMap<i64, OngoingAborted>,
    /// Aborted transactions not reached yet, by first offset.
    waiting: BinaryHeap<Reverse<(i64, i64, i64, i64)>>,
}

impl CleanedTransactionMetadata {
    /// Adds aborted transactions of the range about to be read.
    pub(crate) fn add_aborted(&mut self, txns: impl IntoIterator<Item = AbortedTxn>) {
        self.waiting.extend(txns.into_iter().map(|t| {
            Reverse((
                t.first_offset,
                t.producer_id,
                t.last_offset,
                t.last_stable_offset,
            ))
        }));
    }

    /// Makes the aborted transactions starting at or before the last offset
    /// of `batch` ongoing (a producer keeps the first one it gets), except
    /// those whose ABORT marker lies before `batch`: they ended in what the
    /// pass did not read (pass 1 starts at the offset-index entry of the
    /// first dirty offset, not at its segment's start).
    fn consume_up_to(&mut self, batch: &RecordBatch) {
        while let Some(Reverse((first, pid, last, lso))) = self.waiting.peek().copied()
            && first <= batch.last_offset()
        {
            self.waiting.pop();
            if last < batch.base_offset() {
                continue;
            }
            self.ongoing_aborted.entry(pid).or_insert(OngoingAborted {
                txn: AbortedTxn {
                    producer_id: pid,
                    first_offset: first,
                    last_offset: last,
                    last_stable_offset: lso,
                },
                last_observed: None,
            });
        }
    }

    /// A data batch was read: whether it is aborted data (Kafka's
    /// `onBatchRead`).
    pub(crate) fn on_batch_read(&mut self, batch: &RecordBatch) -> bool {
        self.consume_up_to(batch);
        if !batch.is_transactional() {
            return false;
        }
        match self.ongoing_aborted.get_mut(&batch.producer_id()) {
            Some(t) => {
                t.last_observed = Some(batch.last_offset());
                true
            }
            None => {
                self.ongoing_committed.insert(batch.producer_id());
                false
            }
        }
    }

    /// A control batch whose record is of type `control` (`None`: no
    /// record) was read (Kafka's `onControlBatchRead`); says what
    /// disagrees when the marker contradicts the indexes.
    pub(crate) fn on_control_batch_read(
        &mut self,
        batch: &RecordBatch,
        control: Option<ControlRecordType>,
    ) -> Result<ControlOutcome, String> {
        self.consume_up_to(batch);
        let pid = batch.producer_id();
        let discard = |can_discard| ControlOutcome {
            can_discard,
            index: None,
        };
        Ok(match control {
            None => discard(true),
            Some(ControlRecordType::Abort) => {
                if self.ongoing_committed.remove(&pid) {
                    return Err(format!(
                        "the ABORT marker of producer {pid} at offset {} ends a transaction whose data no transaction index entry lists as aborted (a .txnindex lost entries)",
                        batch.base_offset()
                    ));
                }
                match self.ongoing_aborted.remove(&pid) {
                    Some(t) if t.last_observed.is_some() => ControlOutcome {
                        can_discard: false,
                        index: Some(t.txn),
                    },
                    _ => discard(true),
                }
            }
            Some(ControlRecordType::Commit) => {
                if self.ongoing_aborted.contains_key(&pid) {
                    return Err(format!(
                        "the COMMIT marker of producer {pid} at offset {} ends a transaction that a transaction index entry lists as aborted",
                        batch.base_offset()
                    ));
                }
                discard(!self.ongoing_committed.remove(&pid))
            }
            Some(_) => discard(false),
        })
    }
}

#[cfg(test)]
mod tests {
    use lithify_kafka_log::record::BatchBuilder;

    use super::*;

    fn data(pid: i64, offset: i64) -> RecordBatch {
        let mut b = BatchBuilder::new(offset)
            .producer(pid, 0, 0)
            .transactional(true);
        b.append(offset, 0, Some(b"k"), Some(b"v"), &[]).unwrap();
        RecordBatch::parse(b.build()).unwrap()
    }

    fn marker(pid: i64, offset: i64) -> RecordBatch {
        let b = BatchBuilder::new(offset)
            .producer(pid, 0, -1)
            .transactional(true)
            .control(true)
            .max_timestamp(0);
        RecordBatch::parse(b.build()).unwrap()
    }

    #[test]
    fn markers_stay_while_their_data_does() {
        let mut m = CleanedTransactionMetadata::default();
        let aborted = AbortedTxn {
            producer_id: 1,
            first_offset: 0,
            last_offset: 2,
            last_stable_offset: 3,
        };
        m.add_aborted([aborted]);
        assert!(m.on_batch_read(&data(1, 0)), "aborted data");
        assert!(!m.on_batch_read(&data(2, 1)), "committed data");
        let abort = m
            .on_control_batch_read(&marker(1, 2), Some(ControlRecordType::Abort))
            .unwrap();
        assert_eq!(
            abort,
            ControlOutcome {
                can_discard: false,
                index: Some(aborted)
            }
        );
        let commit = m
            .on_control_batch_read(&marker(2, 3), Some(ControlRecordType::Commit))
            .unwrap();
        assert!(!commit.can_discard, "its data was seen");
        // A second commit of producer 2 with no data: may go; so may an
        // abort whose data is gone, and an empty control batch.
        let again = m
            .on_control_batch_read(&marker(2, 4), Some(ControlRecordType::Commit))
            .unwrap();
        assert!(again.can_discard);
        m.add_aborted([AbortedTxn {
            first_offset: 5,
            last_offset: 6,
            ..aborted
        }]);
        let empty_abort = m
            .on_control_batch_read(&marker(1, 6), Some(ControlRecordType::Abort))
            .unwrap();
        assert_eq!(empty_abort.index, None);
        assert!(empty_abort.can_discard);
        assert!(
            m.on_control_batch_read(&marker(1, 7), None)
                .unwrap()
                .can_discard
        );
        assert!(
            !m.on_control_batch_read(&marker(1, 8), Some(ControlRecordType::LeaderChange))
                .unwrap()
                .can_discard
        );
    }

    #[test]
    fn a_transaction_aborted_before_the_first_batch_read_is_not_ongoing() {
        // Pass 1 starts at offset 5: producer 1's transaction [0, 2] ended
        // before it; its committed batch at 5 is not aborted data, and its
        // COMMIT at 6 contradicts nothing.
        let mut m = CleanedTransactionMetadata::default();
        m.add_aborted([AbortedTxn {
            producer_id: 1,
            first_offset: 0,
            last_offset: 2,
            last_stable_offset: 3,
        }]);
        assert!(!m.on_batch_read(&data(1, 5)));
        let commit = m
            .on_control_batch_read(&marker(1, 6), Some(ControlRecordType::Commit))
            .unwrap();
        assert!(!commit.can_discard);
    }

    #[test]
    fn markers_that_contradict_the_index_are_refused() {
        let mut m = CleanedTransactionMetadata::default();
        // Data of producer 1 that no entry covers, then its ABORT.
        assert!(!m.on_batch_read(&data(1, 0)));
        let err = m
            .on_control_batch_read(&marker(1, 1), Some(ControlRecordType::Abort))
            .unwrap_err();
        assert!(err.contains("lost entries"), "{err}");
        // An entry for producer 2, then its COMMIT.
        m.add_aborted([AbortedTxn {
            producer_id: 2,
            first_offset: 2,
            last_offset: 4,
            last_stable_offset: 5,
        }]);
        assert!(m.on_batch_read(&data(2, 2)));
        let err = m
            .on_control_batch_read(&marker(2, 3), Some(ControlRecordType::Commit))
            .unwrap_err();
        assert!(err.contains("lists as aborted"), "{err}");
    }
}
