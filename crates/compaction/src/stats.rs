//! Compaction statistics in the shape of RocksDB's "Compaction Stats"
//! table (`db/internal_stats.cc`).

use std::fmt::Write as _;
use std::ops::AddAssign;

use lithify_version::Version;

use crate::compaction::CompactionsInProgress;

/// What one compaction (or flush) did. Compactions are recorded at their
/// **output** level, flushes at L0, as RocksDB does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactionStats {
    /// Wall time spent, in microseconds.
    pub micros: u64,
    /// Bytes read from the levels above the output level (`Rn`).
    pub bytes_read_non_output_levels: u64,
    /// Bytes read from the output level (`Rnp1`).
    pub bytes_read_output_level: u64,
    /// Bytes of SST files written (`Write`).
    pub bytes_written: u64,
    /// Bytes moved by trivial moves (`Moved`).
    pub bytes_moved: u64,
    /// Bytes of output-level input files an incremental major compaction
    /// left in place because no new data fell in their range.
    pub bytes_reused: u64,
    /// Input files above the output level.
    pub num_input_files_non_output_levels: u64,
    /// Input files in the output level.
    pub num_input_files_output_level: u64,
    /// Files written.
    pub num_output_files: u64,
    /// Point records read (`KeyIn`).
    pub num_input_records: u64,
    /// Point records dropped (`KeyDrop`).
    pub num_dropped_records: u64,
    /// Point records written.
    pub num_output_records: u64,
    /// Number of compactions (`Comp(cnt)`).
    pub count: u64,
}

impl AddAssign<&CompactionStats> for CompactionStats {
    fn add_assign(&mut self, o: &CompactionStats) {
        self.micros += o.micros;
        self.bytes_read_non_output_levels += o.bytes_read_non_output_levels;
        self.bytes_read_output_level += o.bytes_read_output_level;
        self.bytes_written += o.bytes_written;
        self.bytes_moved += o.bytes_moved;
        self.bytes_reused += o.bytes_reused;
        self.num_input_files_non_output_levels += o.num_input_files_non_output_levels;
        self.num_input_files_output_level += o.num_input_files_output_level;
        self.num_output_files += o.num_output_files;
        self.num_input_records += o.num_input_records;
        self.num_dropped_records += o.num_dropped_records;
        self.num_output_records += o.num_output_records;
        self.count += o.count;
    }
}

impl CompactionStats {
    /// `Read(GB)`: all bytes read.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read_non_output_levels + self.bytes_read_output_level
    }
}

/// The current shape of one level, for the table's first columns.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LevelShape {
    /// Number of files.
    pub files: usize,
    /// Files being compacted.
    pub files_being_compacted: usize,
    /// Total size in bytes.
    pub bytes: u64,
    /// Compaction score.
    pub score: f64,
}

impl LevelShape {
    /// The shape of every level of `version`, with `scores` (by level; a
    /// missing entry scores 0).
    pub fn of_version(
        version: &Version,
        in_progress: &CompactionsInProgress,
        scores: &[f64],
    ) -> Vec<LevelShape> {
        (0..version.num_levels())
            .map(|level| LevelShape {
                files: version.num_files(level),
                files_being_compacted: version
                    .files(level)
                    .iter()
                    .filter(|f| in_progress.is_being_compacted(f.number))
                    .count(),
                bytes: version.level_bytes(level),
                score: scores.get(level).copied().unwrap_or(0.0),
            })
            .collect()
    }
}

/// Cumulative compaction and flush statistics per level, printed as
/// RocksDB's "Compaction Stats" table.
///
/// ```
/// use lithify_compaction::{CompactionStats, CompactionStatsTable, LevelShape};
///
/// let mut table = CompactionStatsTable::new(7);
/// table.record_flush(&CompactionStats { bytes_written: 100 << 20, num_output_files: 1, count: 1, ..Default::default() });
/// table.record_compaction(1, &CompactionStats {
///     bytes_read_non_output_levels: 100 << 20,
///     bytes_written: 100 << 20,
///     count: 1,
///     ..Default::default()
/// });
/// assert_eq!(table.write_amplification(), 2.0); // (100 + 100) MB written / 100 MB flushed
/// let text = table.format("default", &[LevelShape::default(); 7]);
/// assert!(text.starts_with("** Compaction Stats [default] **"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionStatsTable {
    levels: Vec<CompactionStats>,
    bytes_flushed: u64,
    bytes_ingested: u64,
}

impl CompactionStatsTable {
    /// An empty table for `num_levels` levels.
    pub fn new(num_levels: usize) -> Self {
        CompactionStatsTable {
            levels: vec![CompactionStats::default(); num_levels.max(1)],
            bytes_flushed: 0,
            bytes_ingested: 0,
        }
    }

    /// Records a compaction at its output level.
    pub fn record_compaction(&mut self, output_level: usize, stats: &CompactionStats) {
        if output_level >= self.levels.len() {
            self.levels
                .resize(output_level + 1, CompactionStats::default());
        }
        self.levels[output_level] += stats;
    }

    /// Records a flush at L0; its bytes written are also the bytes flushed
    /// (the W-Amp denominator).
    pub fn record_flush(&mut self, stats: &CompactionStats) {
        self.levels[0] += stats;
        self.bytes_flushed += stats.bytes_written;
    }

    /// Records an ingested file at `level` (counted like flushed bytes).
    pub fn record_ingest(&mut self, level: usize, bytes: u64) {
        self.bytes_ingested += bytes;
        self.record_compaction(
            level,
            &CompactionStats {
                bytes_written: bytes,
                ..CompactionStats::default()
            },
        );
    }

    /// The per-level statistics.
    pub fn levels(&self) -> &[CompactionStats] {
        &self.levels
    }

    /// All levels summed.
    pub fn sum(&self) -> CompactionStats {
        let mut sum = CompactionStats::default();
        for l in &self.levels {
            sum += l;
        }
        sum
    }

    /// Bytes flushed from memtables.
    pub fn bytes_flushed(&self) -> u64 {
        self.bytes_flushed
    }

    /// RocksDB's `Sum W-Amp`: all bytes written (flushes included) per
    /// byte flushed or ingested.
    pub fn write_amplification(&self) -> f64 {
        let input = self.bytes_flushed + self.bytes_ingested;
        if input == 0 {
            0.0
        } else {
            self.sum().bytes_written as f64 / input as f64
        }
    }

    /// The table, in RocksDB's layout (without the blob and CPU columns),
    /// with `shapes[level]` for the first columns.
    pub fn format(&self, name: &str, shapes: &[LevelShape]) -> String {
        const GB: f64 = (1u64 << 30) as f64;
        let mut out = String::new();
        let _ = writeln!(out, "** Compaction Stats [{name}] **");
        let header = "Level    Files   Size     Score Read(GB)  Rn(GB) Rnp1(GB) Write(GB) Wnew(GB) Moved(GB) W-Amp Rd(MB/s) Wr(MB/s) Comp(sec) Comp(cnt) Avg(sec) KeyIn KeyDrop";
        let _ = writeln!(out, "{header}");
        let _ = writeln!(out, "{}", "-".repeat(header.len()));
        let row = |out: &mut String,
                   label: &str,
                   shape: LevelShape,
                   s: &CompactionStats,
                   w_amp: f64| {
            let secs = s.micros as f64 / 1e6;
            let mbps = |bytes: u64| {
                if s.micros == 0 {
                    0.0
                } else {
                    bytes as f64 / (1 << 20) as f64 / (s.micros as f64 / 1e6)
                }
            };
            let wnew = s.bytes_written.saturating_sub(s.bytes_read_output_level);
            let _ = writeln!(
                out,
                "{label:>5} {:>6}/{:<3} {:>8} {:>5.1} {:>8.1} {:>7.1} {:>8.1} {:>9.1} {:>8.1} {:>9.1} {:>5.1} {:>8.1} {:>8.1} {:>9.2} {:>9} {:>8.3} {:>5} {:>7}",
                shape.files,
                shape.files_being_compacted,
                human_size(shape.bytes),
                shape.score,
                s.bytes_read() as f64 / GB,
                s.bytes_read_non_output_levels as f64 / GB,
                s.bytes_read_output_level as f64 / GB,
                s.bytes_written as f64 / GB,
                wnew as f64 / GB,
                s.bytes_moved as f64 / GB,
                w_amp,
                mbps(s.bytes_read()),
                mbps(s.bytes_written),
                secs,
                s.count,
                if s.count == 0 {
                    0.0
                } else {
                    secs / s.count as f64
                },
                human_count(s.num_input_records),
                human_count(s.num_dropped_records),
            );
        };
        let mut total_shape = LevelShape::default();
        for (level, s) in self.levels.iter().enumerate() {
            let shape = shapes.get(level).copied().unwrap_or_default();
            if shape.files == 0 && s.count == 0 {
                continue;
            }
            total_shape.files += shape.files;
            total_shape.files_being_compacted += shape.files_being_compacted;
            total_shape.bytes += shape.bytes;
            let input = if level == 0 {
                self.bytes_flushed + self.bytes_ingested
            } else {
                s.bytes_read_non_output_levels
            };
            let w_amp = if input == 0 {
                0.0
            } else {
                s.bytes_written as f64 / input as f64
            };
            row(&mut out, &format!("L{level}"), shape, s, w_amp);
        }
        let sum = self.sum();
        row(
            &mut out,
            "Sum",
            total_shape,
            &sum,
            self.write_amplification(),
        );
        let _ = writeln!(
            out,
            "Flush(GB): cumulative {:.3}",
            self.bytes_flushed as f64 / GB
        );
        let _ = writeln!(
            out,
            "Cumulative compaction: {:.2} GB write, {:.2} GB read, {:.1} seconds",
            sum.bytes_written as f64 / GB,
            sum.bytes_read() as f64 / GB,
            sum.micros as f64 / 1e6
        );
        out
    }
}

/// Bytes as RocksDB's `BytesToHumanString` prints them (`1.23 MB`).
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.2} {}", UNITS[unit])
    }
}

/// `n` bytes exactly, as `12M`, `3K`, `7` (a unit only for exact
/// multiples of powers of 1024; `inf` for `u64::MAX`): sizes that are
/// settings, where [`human_size`] rounds measured ones.
pub fn exact_size(n: u64) -> String {
    if n == u64::MAX {
        return "inf".to_owned();
    }
    for (shift, suffix) in [(30, "G"), (20, "M"), (10, "K")] {
        if n >= 1 << shift && n.is_multiple_of(1 << shift) {
            return format!("{}{suffix}", n >> shift);
        }
    }
    n.to_string()
}

/// A count as RocksDB's `NumberToHumanString` prints it (`12K`, `3M`).
pub fn human_count(n: u64) -> String {
    if n < 10_000 {
        n.to_string()
    } else if n < 10_000_000 {
        format!("{}K", n / 1000)
    } else if n < 10_000_000_000 {
        format!("{}M", n / 1_000_000)
    } else {
        format!("{}G", n / 1_000_000_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_size_forms() {
        assert_eq!(exact_size(64 << 20), "64M");
        assert_eq!(exact_size(3 << 10), "3K");
        assert_eq!(exact_size(1000), "1000");
        assert_eq!(exact_size(u64::MAX), "inf");
    }

    #[test]
    fn rows_and_amplification() {
        let mut t = CompactionStatsTable::new(3);
        t.record_flush(&CompactionStats {
            bytes_written: 1 << 30,
            num_output_files: 1,
            count: 1,
            micros: 1_000_000,
            ..CompactionStats::default()
        });
        t.record_compaction(
            2,
            &CompactionStats {
                bytes_read_non_output_levels: 1 << 30,
                bytes_read_output_level: 1 << 30,
                bytes_written: 2 << 30,
                num_input_records: 20_000,
                num_dropped_records: 500,
                count: 1,
                micros: 2_000_000,
                ..CompactionStats::default()
            },
        );
        assert_eq!(t.write_amplification(), 3.0);
        let shapes = [
            LevelShape {
                files: 1,
                files_being_compacted: 0,
                bytes: 1 << 20,
                score: 0.25,
            },
            LevelShape::default(),
            LevelShape {
                files: 2,
                files_being_compacted: 1,
                bytes: 3 << 30,
                score: 0.0,
            },
        ];
        let text = t.format("default", &shapes);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 8, "{text}");
        let l0: Vec<&str> = lines[3].split_whitespace().collect();
        assert_eq!(
            l0[..9],
            ["L0", "1/0", "1.00", "MB", "0.2", "0.0", "0.0", "0.0", "1.0"],
            "{}",
            lines[3]
        );
        assert!(
            lines[4].contains("2/1") && lines[4].contains("3.00 GB"),
            "{}",
            lines[4]
        );
        // L2: W-Amp = 2 GB written / 1 GB read from L1; KeyIn 20K.
        assert!(
            lines[4].contains("  2.0 ") && lines[4].contains("20K"),
            "{}",
            lines[4]
        );
        assert!(lines[5].trim_start().starts_with("Sum"), "{}", lines[5]);
        assert_eq!(human_count(1234), "1234");
        assert_eq!(human_size(1536), "1.50 KB");
    }
}
