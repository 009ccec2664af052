//! [`SimReport`]: what a simulation measured, and its text form.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use lithify_version::Version;

use crate::SizeModel;

use lithify_compaction::{CompactionStatsTable, CompactionsInProgress, LevelShape, human_size};
use lithify_compaction_strategy::adaptive::WorkloadStats;

/// Counts by kind of compaction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimCounts {
    /// Flushes.
    pub flushes: u64,
    /// Flushes that merged into existing files (flush plans).
    pub flush_plans: u64,
    /// Compactions that rewrote data, by reason.
    pub compactions: HashMap<&'static str, u64>,
    /// Trivial moves.
    pub trivial_moves: u64,
    /// Bytes incremental majors left in place.
    pub bytes_reused: u64,
}

/// A strategy switch `Adaptive` made.
#[derive(Debug, Clone, PartialEq)]
pub struct SimSwitch {
    /// Operations done when it switched.
    pub at_op: u64,
    /// The new strategy.
    pub to: String,
    /// Why.
    pub reason: String,
}

/// The simulator's result.
#[derive(Debug, Clone)]
pub struct SimReport {
    /// The configuration.
    pub config_summary: String,
    /// The strategy simulated (for `Adaptive`, `adaptive`).
    pub strategy: String,
    /// The final LSM shape.
    pub version: Arc<Version>,
    /// Cumulative stats per level (after the load, with a workload).
    pub stats: CompactionStatsTable,
    /// The final scores per level.
    pub scores: Vec<f64>,
    /// Counts.
    pub counts: SimCounts,
    /// Distinct keys held (live keys and tombstones not yet dropped).
    pub unique_keys: u64,
    /// Live keys at the end.
    pub live_keys: u64,
    /// Bytes the user wrote (writes x (key + value); after the load).
    pub user_bytes: u64,
    /// All bytes flushes and compactions wrote (after the load).
    pub bytes_written: u64,
    /// Bytes written by the load, if any.
    pub load_bytes_written: u64,
    /// Size of the live data compacted into one sorted run.
    pub logical_bytes: u64,
    /// The most bytes on disk at once, over the live data at the end.
    pub peak_space_amplification: f64,
    /// Point reads simulated, and tables they probed.
    pub reads_probed: u64,
    /// Tables those reads probed in total.
    pub tables_probed: u64,
    /// `Adaptive`'s switches.
    pub switches: Vec<SimSwitch>,
    /// The table size model used.
    pub size_model: SizeModel,
    /// Bytes of one user write (key + value).
    pub key_value_bytes: u64,
    /// What a [`WorkloadRecorder`](lithify_compaction_strategy::adaptive::WorkloadRecorder) saw over the whole run (windows
    /// merged; empty without a workload): the cost model's input.
    pub observed: WorkloadStats,
    /// Live data in one sorted run, averaged over the run's windows (the
    /// table size the cost model is given).
    pub mean_live_bytes: u64,
    /// Table bytes of one full flush (the memtable's entries as a file).
    pub flush_bytes: u64,
    /// Distinct keys per write in the flushed memtables (after the load):
    /// 1 when no flush held two writes of one key.
    pub flush_distinct_share: f64,
    /// Wall time of the simulation.
    pub elapsed_secs: f64,
    /// The blob files, with key-value separation.
    pub blobs: Option<SimBlobReport>,
}

/// The blob files of a simulation with key-value separation.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SimBlobReport {
    /// Blob files on disk at the end.
    pub files: usize,
    /// Their bytes.
    pub disk_bytes: u64,
    /// Bytes of the values the live keys hold (one per key).
    pub live_bytes: u64,
    /// Bytes flushes and relocations wrote to blob files (after the load
    /// phase, as `bytes_written`).
    pub written_bytes: u64,
    /// Of those, bytes garbage collection relocated.
    pub relocated_bytes: u64,
    /// Bytes of one value's record in a blob file.
    pub record_bytes: u64,
    /// The age cutoff of garbage collection (0: off).
    pub age_cutoff: f64,
}

impl SimReport {
    /// All bytes written (flushes and compactions) per byte flushed
    /// (RocksDB's `Sum W-Amp`; flushes merged into files count as
    /// compactions).
    pub fn write_amplification(&self) -> f64 {
        self.stats.write_amplification()
    }

    /// All bytes written per byte the user wrote (key + value).
    pub fn write_amplification_vs_user(&self) -> f64 {
        let blob = self.blobs.map_or(0, |b| b.written_bytes);
        (self.bytes_written + blob) as f64 / self.user_bytes.max(1) as f64
    }

    /// Bytes on disk per byte of live data (one version of each key in one
    /// sorted run), blob files and live values included.
    pub fn space_amplification(&self) -> f64 {
        let (disk, live) = self.blobs.map_or((0, 0), |b| (b.disk_bytes, b.live_bytes));
        (self.version.total_bytes() + disk) as f64 / (self.logical_bytes + live).max(1) as f64
    }

    /// Tables a point read probed on average (no bloom filters; 0 without
    /// reads).
    pub fn read_amplification(&self) -> f64 {
        self.tables_probed as f64 / self.reads_probed.max(1) as f64
    }
}

impl fmt::Display for SimReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.config_summary)?;
        writeln!(
            f,
            "size model: {:.1} bytes/entry + {} bytes/file (measured on lithify-sstable tables)",
            self.size_model.per_entry, self.size_model.fixed
        )?;
        writeln!(f)?;
        writeln!(f, "Level  Files        Size    Score")?;
        for level in 0..self.version.num_levels() {
            let n = self.version.num_files(level);
            if n == 0 {
                continue;
            }
            writeln!(
                f,
                "L{level:<5} {n:>5} {:>11} {:>8.2}",
                human_size(self.version.level_bytes(level)),
                self.scores.get(level).copied().unwrap_or(0.0)
            )?;
        }
        writeln!(
            f,
            "total  {:>5} {:>11}",
            self.version.total_files(),
            human_size(self.version.total_bytes())
        )?;
        writeln!(f)?;
        let shapes =
            LevelShape::of_version(&self.version, &CompactionsInProgress::new(), &self.scores);
        write!(f, "{}", self.stats.format("sim", &shapes))?;
        writeln!(f)?;
        let mut reasons: Vec<_> = self.counts.compactions.iter().collect();
        reasons.sort();
        writeln!(
            f,
            "flushes {} ({} merged into files), trivial moves {}, compactions {}, reused {}",
            self.counts.flushes,
            self.counts.flush_plans,
            self.counts.trivial_moves,
            reasons
                .iter()
                .map(|(r, n)| format!("{r}={n}"))
                .collect::<Vec<_>>()
                .join(" "),
            human_size(self.counts.bytes_reused)
        )?;
        for s in &self.switches {
            writeln!(
                f,
                "switched to {} after {} ops: {}",
                s.to, s.at_op, s.reason
            )?;
        }
        writeln!(
            f,
            "keys held {} (live {}); user data {}, live data {}",
            self.unique_keys,
            self.live_keys,
            human_size(self.user_bytes),
            human_size(self.logical_bytes)
        )?;
        write!(
            f,
            "write amplification {:.2} per user byte",
            self.write_amplification_vs_user()
        )?;
        if self.write_amplification() > 0.0 {
            write!(
                f,
                " ({:.2} bytes written / bytes flushed)",
                self.write_amplification()
            )?;
        }
        writeln!(f)?;
        if self.reads_probed > 0 {
            writeln!(
                f,
                "read amplification {:.2} tables probed per read ({} reads sampled)",
                self.read_amplification(),
                self.reads_probed
            )?;
        }
        writeln!(
            f,
            "space amplification {:.3} (bytes on disk / live data), peak {:.3}",
            self.space_amplification(),
            self.peak_space_amplification
        )?;
        if let Some(b) = &self.blobs {
            writeln!(
                f,
                "blob files {} ({} on disk, {} live); wrote {} to blob files, {} of it relocated",
                b.files,
                human_size(b.disk_bytes),
                human_size(b.live_bytes),
                human_size(b.written_bytes),
                human_size(b.relocated_bytes)
            )?;
        }
        write!(f, "simulated in {:.2} s", self.elapsed_secs)
    }
}
