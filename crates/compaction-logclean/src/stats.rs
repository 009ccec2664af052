//! What a cleaning round did (Kafka's `CleanerStats` and the "Cleaner
//! stats" it logs after every round).

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::to_clean::CleaningReason;
use lithify_kafka_log::TopicPartition;

/// Counters of one round.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CleanerStats {
    /// Bytes read by pass 1 (building the offset map).
    pub map_bytes_read: u64,
    /// Records read by pass 1.
    pub map_messages_read: u64,
    /// Bytes read by pass 2 (the source segments).
    pub bytes_read: u64,
    /// Bytes written (the cleaned segments).
    pub bytes_written: u64,
    /// Records read by pass 2.
    pub messages_read: u64,
    /// Records written.
    pub messages_written: u64,
    /// Keyless records dropped (Kafka's `invalidMessagesRead`).
    pub invalid_messages_read: u64,
    /// Tombstones dropped.
    pub tombstones_dropped: u64,
    /// Batches whose delete horizon this round stamped.
    pub delete_horizons_set: u64,
    /// Batches copied byte for byte.
    pub batches_copied: u64,
    /// Batches rebuilt with fewer records or a new delete horizon.
    pub batches_rewritten: u64,
    /// Batches reduced to a 61-byte empty header.
    pub empty_headers: u64,
    /// Batches dropped.
    pub batches_dropped: u64,
    /// Data batches of aborted transactions whose records were removed
    /// (dropped, or kept as an empty header).
    pub aborted_batches_removed: u64,
    /// COMMIT/ABORT (and other control) batches kept with their record.
    pub markers_kept: u64,
    /// Control batches removed (dropped, or kept as an empty header).
    pub markers_removed: u64,
    /// Aborted transactions written to the cleaned segments' `.txnindex`.
    pub aborted_txns_indexed: u64,
    /// Offset map: entries / slots at the end of pass 1.
    pub map_utilization: f64,
    /// Offset map: `(probes - lookups) / lookups`, if any lookup was made.
    pub map_collision_rate: Option<f64>,
    /// Whether pass 1 stopped because the map was full.
    pub map_full: bool,
    /// Time spent in pass 1.
    pub map_duration: Duration,
    /// Time of the whole round.
    pub duration: Duration,
    /// Time spent sleeping in the throttler.
    pub throttled: Duration,
}

const MB: f64 = 1024.0 * 1024.0;

impl CleanerStats {
    /// Pass-2 read rate in MB/s (Kafka's "MB of log processed ... MB/sec").
    pub fn mb_per_sec(&self) -> f64 {
        let secs = self.duration.as_secs_f64();
        if secs > 0.0 {
            self.bytes_read as f64 / MB / secs
        } else {
            0.0
        }
    }
}

/// The report of one round of one log.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundReport {
    /// The partition.
    pub topic_partition: TopicPartition,
    /// The log directory.
    pub dir: PathBuf,
    /// Why it was cleaned.
    pub reason: Option<CleaningReason>,
    /// `F` before the round.
    pub first_dirty_offset: i64,
    /// `U`: the round's upper bound.
    pub first_uncleanable_offset: i64,
    /// The new first dirty offset (the checkpoint written).
    pub end_offset: i64,
    /// Segments the round rewrote.
    pub segments_in: usize,
    /// Cleaned segments that replaced them.
    pub segments_out: usize,
    /// The counters.
    pub stats: CleanerStats,
}

impl fmt::Display for RoundReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.stats;
        writeln!(
            f,
            "cleaned log {} ({}) dirty section [{}, {}), new first dirty offset {}{}",
            self.topic_partition,
            self.dir.display(),
            self.first_dirty_offset,
            self.first_uncleanable_offset,
            self.end_offset,
            self.reason
                .map(|r| format!(", chosen for {r}"))
                .unwrap_or_default()
        )?;
        writeln!(
            f,
            "  {:.1} MB of log processed in {:.3} s ({:.1} MB/s)",
            s.bytes_read as f64 / MB,
            s.duration.as_secs_f64(),
            s.mb_per_sec()
        )?;
        writeln!(
            f,
            "  indexed {:.1} MB ({} records) in {:.3} s; offset map {:.1}% full{}, collision rate {}",
            s.map_bytes_read as f64 / MB,
            s.map_messages_read,
            s.map_duration.as_secs_f64(),
            100.0 * s.map_utilization,
            if s.map_full {
                " (full: partial round)"
            } else {
                ""
            },
            s.map_collision_rate
                .map_or("n/a".to_string(), |c| format!("{c:.4}"))
        )?;
        writeln!(
            f,
            "  start size {:.1} MB ({} records), end size {:.1} MB ({} records): {:.1}% size reduction ({:.1}% fewer records)",
            s.bytes_read as f64 / MB,
            s.messages_read,
            s.bytes_written as f64 / MB,
            s.messages_written,
            reduction(s.bytes_written, s.bytes_read),
            reduction(s.messages_written, s.messages_read)
        )?;
        writeln!(
            f,
            "  segments {} -> {}; batches copied {}, rewritten {}, emptied {}, dropped {}; delete horizons set {}, tombstones dropped {}, keyless records dropped {}",
            self.segments_in,
            self.segments_out,
            s.batches_copied,
            s.batches_rewritten,
            s.empty_headers,
            s.batches_dropped,
            s.delete_horizons_set,
            s.tombstones_dropped,
            s.invalid_messages_read
        )?;
        if s.aborted_batches_removed + s.markers_kept + s.markers_removed > 0 {
            writeln!(
                f,
                "  transactions: aborted batches removed {}, markers kept {}, markers removed {}, aborted transactions indexed {}",
                s.aborted_batches_removed,
                s.markers_kept,
                s.markers_removed,
                s.aborted_txns_indexed
            )?;
        }
        if !s.throttled.is_zero() {
            writeln!(f, "  throttled for {:.3} s", s.throttled.as_secs_f64())?;
        }
        Ok(())
    }
}

fn reduction(after: u64, before: u64) -> f64 {
    if before == 0 {
        0.0
    } else {
        100.0 * (1.0 - after as f64 / before as f64)
    }
}
