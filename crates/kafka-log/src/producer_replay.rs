//! Producer state when a log opens (Kafka's
//! `UnifiedLog.rebuildProducerState`, and the transaction-index half of
//! `LogSegment.recover`).
//!
//! 1. Producer snapshots beyond the log end (their records were
//!    truncated) are removed, and so are stray ones — named after no
//!    segment's base, except the latest when it is past the last base
//!    (Kafka's `removeStraySnapshots`).
//! 2. The segments whose `.txnindex` must be rebuilt are those with
//!    batches at or above the recovery point (an entry appended after
//!    the last flush may be missing), those whose `.txnindex` is malformed
//!    and those whose other indexes were rebuilt (as Kafka's
//!    `recoverSegment` rebuilds all three).
//! 3. The latest snapshot at or below the first such segment (or the log
//!    end) is loaded; one that does not decode is removed, with a
//!    warning, and the one before it is tried (Kafka's `loadFromSnapshot`).
//!    Without any, the state starts empty at the log start.
//! 4. Every batch from there to the log end is replayed (producer batches
//!    checked against their CRC first), and the segments of step 2 get
//!    their `.txnindex` rewritten from the transactions aborted in them.
//!    A replay that passes the base of one of the last two segments without
//!    a snapshot there takes one (Kafka's `offsetsToSnapshot`), so that the
//!    next open starts from it.
//!
//! A snapshot is a shortcut, never the truth: losing one only lengthens
//! the replay.

use std::collections::BTreeMap;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use lithify_vfs::FileSystem;

use crate::error::{CorruptSnafu, Result};
use crate::producer_state::{self, ProducerBatch, ProducerStateManager};
use crate::recovery::LogRecoveryReport;
use crate::segment::LogSegment;

/// The producer state at the log end, and the snapshots on disk.
#[derive(Debug)]
pub(crate) struct Loaded {
    pub(crate) state: ProducerStateManager,
    pub(crate) snapshots: BTreeSet<i64>,
    /// The offset the replay started from.
    pub(crate) replayed_from: i64,
}

/// Steps 1 to 4 for the (recovered) `segments` of the log in `dir`
/// ending at `log_end`, whose `.txnindex` must be rebuilt at `rebuild`.
pub(crate) fn load(
    fs: &dyn FileSystem,
    dir: &Path,
    segments: &mut BTreeMap<i64, LogSegment>,
    log_end: i64,
    rebuild: &BTreeSet<i64>,
    report: &mut LogRecoveryReport,
) -> Result<Loaded> {
    let log_start = segments.keys().next().copied().unwrap_or(0);
    let last_base = segments.keys().next_back().copied().unwrap_or(0);
    let mut snapshots: BTreeSet<i64> = BTreeSet::new();
    let found = producer_state::list_snapshots(fs, dir)?;
    let latest = found.last().copied();
    for offset in found {
        // Kept: one at a segment's base, and the latest when it is past
        // the last base (taken at the log end).
        let kept = segments.contains_key(&offset) || (Some(offset) == latest && offset > last_base);
        let stray = !kept;
        if offset > log_end || stray {
            producer_state::delete_snapshot(fs, dir, offset)?;
            report
                .deleted_files
                .push(file_name(&producer_state::snapshot_path(dir, offset)));
        } else {
            snapshots.insert(offset);
        }
    }

    let limit = rebuild.first().copied().unwrap_or(log_end).min(log_end);
    let mut state = None;
    for &offset in snapshots.clone().range(..=limit).rev() {
        match producer_state::read_snapshot(fs, dir, offset) {
            Ok(entries) => {
                state = Some(ProducerStateManager::from_snapshot(entries, offset));
                break;
            }
            Err(e) if e.is_corruption() => {
                tracing::warn!(
                    log = %dir.display(),
                    error = %e,
                    "removing a producer snapshot that cannot be read; the log is replayed from an earlier one"
                );
                producer_state::delete_snapshot(fs, dir, offset)?;
                snapshots.remove(&offset);
                report.dropped_snapshots.push(e.to_string());
            }
            Err(e) => return Err(e),
        }
    }
    let mut state = state.unwrap_or_else(|| ProducerStateManager::new(log_start));
    let from = state.map_end_offset();

    let first = segments
        .range(..=from)
        .next_back()
        .map_or(log_start, |(b, _)| *b);
    let last_two: Vec<i64> = segments.keys().rev().take(2).copied().collect();
    for (&base, seg) in segments.range_mut(first..) {
        if base >= from && last_two.contains(&base) && !snapshots.contains(&base) {
            state.skip(base);
            producer_state::write_snapshot(fs, dir, base, &state)?;
            snapshots.insert(base);
        }
        let rebuilding = rebuild.contains(&base);
        let mut aborted = Vec::new();
        let start = if from > base {
            seg.checked_lookup(from)
        } else {
            0
        };
        let mut batches = seg.batches_from_position(start);
        for batch in &mut batches {
            let batch = batch?;
            if batch.last_offset() < from {
                continue;
            }
            if !batch.has_producer_id() {
                state.skip(batch.next_offset());
                continue;
            }
            batch.ensure_valid()?;
            let Some(pb) = ProducerBatch::of(&batch)? else {
                continue;
            };
            match state.apply(&pb) {
                Ok(Some(txn)) if rebuilding => aborted.push(txn),
                Ok(_) => {}
                Err(message) => {
                    return CorruptSnafu {
                        path: seg.log_path(),
                        offset: batch.position(),
                        message,
                    }
                    .fail();
                }
            }
        }
        batches.check_complete()?;
        if rebuilding {
            let had = seg.aborted_txns().to_vec();
            if had != aborted {
                tracing::info!(
                    log = %dir.display(),
                    segment = base,
                    entries = aborted.len(),
                    "rebuilt a transaction index from the log"
                );
            }
            seg.rewrite_txn_index(aborted)?;
        }
    }
    state.skip(log_end);
    Ok(Loaded {
        state,
        snapshots,
        replayed_from: from,
    })
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| PathBuf::from(path).display().to_string())
}
