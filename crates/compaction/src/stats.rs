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
    /// Bytes of blob files written (`Wblob`): separated values, by a flush
    /// or by a compaction that separated or relocated them.
    pub bytes_written_blob: u64,
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
        self.bytes_written_blob += o.bytes_written_blob;
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

/// One row of the "Compaction Stats" table.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LevelStats {
    /// The level (`None` for the `Sum` row).
    pub level: Option<usize>,
    /// Files in the level.
    pub files: usize,
    /// Files an ongoing compaction reads.
    pub files_being_compacted: usize,
    /// Bytes of the level's files.
    pub size_bytes: u64,
    /// The level's compaction score.
    pub score: f64,
    /// Bytes read by compactions into this level (Rn + Rnp1).
    pub read_bytes: u64,
    /// Bytes read from the upper level(s) (Rn).
    pub read_n_bytes: u64,
    /// Bytes read from this level (Rnp1).
    pub read_np1_bytes: u64,
    /// Bytes written to this level (flushes at L0).
    pub write_bytes: u64,
    /// `write_bytes - read_np1_bytes`.
    pub write_new_bytes: u64,
    /// Bytes trivially moved into this level.
    pub moved_bytes: u64,
    /// `write_bytes / input` (input = flushed bytes at L0, Rn elsewhere).
    pub write_amp: f64,
    /// Seconds spent compacting into this level.
    pub comp_secs: f64,
    /// Compactions (flushes at L0) into this level.
    pub comp_count: u64,
    /// Records read.
    pub keys_in: u64,
    /// Records dropped.
    pub keys_dropped: u64,
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

    /// The table's rows, one per level that has files (in `shapes`) or
    /// history, and the `Sum` row.
    pub fn rows(&self, shapes: &[LevelShape]) -> (Vec<LevelStats>, LevelStats) {
        let mut rows = Vec::new();
        let mut sum = LevelStats::default();
        for level in 0..shapes.len().max(self.levels.len()) {
            let c = self.levels.get(level).copied().unwrap_or_default();
            let shape = shapes.get(level).copied().unwrap_or_default();
            if shape.files == 0 && c == CompactionStats::default() {
                continue;
            }
            // Ingested bytes count like flushed ones (`record_ingest`).
            let input = if level == 0 {
                self.bytes_flushed + self.bytes_ingested
            } else {
                c.bytes_read_non_output_levels
            };
            let row = LevelStats {
                level: Some(level),
                files: shape.files,
                files_being_compacted: shape.files_being_compacted,
                size_bytes: shape.bytes,
                score: shape.score,
                read_bytes: c.bytes_read(),
                read_n_bytes: c.bytes_read_non_output_levels,
                read_np1_bytes: c.bytes_read_output_level,
                write_bytes: c.bytes_written,
                write_new_bytes: c.bytes_written.saturating_sub(c.bytes_read_output_level),
                moved_bytes: c.bytes_moved,
                write_amp: ratio(c.bytes_written, input),
                comp_secs: c.micros as f64 / 1e6,
                comp_count: c.count,
                keys_in: c.num_input_records,
                keys_dropped: c.num_dropped_records,
            };
            sum.files += row.files;
            sum.files_being_compacted += row.files_being_compacted;
            sum.size_bytes += row.size_bytes;
            sum.read_bytes += row.read_bytes;
            sum.read_n_bytes += row.read_n_bytes;
            sum.read_np1_bytes += row.read_np1_bytes;
            sum.write_bytes += row.write_bytes;
            sum.write_new_bytes += row.write_new_bytes;
            sum.moved_bytes += row.moved_bytes;
            sum.comp_secs += row.comp_secs;
            sum.comp_count += row.comp_count;
            sum.keys_in += row.keys_in;
            sum.keys_dropped += row.keys_dropped;
            rows.push(row);
        }
        // RocksDB's Sum W-Amp: all bytes written over the bytes flushed.
        sum.write_amp = self.write_amplification();
        (rows, sum)
    }

    /// The table, in RocksDB's layout (without the blob and CPU columns),
    /// with `shapes[level]` for the first columns ([`write_table`]), then
    /// the cumulative flush and compaction lines.
    pub fn format(&self, name: &str, shapes: &[LevelShape]) -> String {
        let (rows, sum) = self.rows(shapes);
        let mut out = String::new();
        write_table(&mut out, name, &rows, &sum);
        let total = self.sum();
        let _ = writeln!(
            out,
            "Flush(GB): cumulative {:.3}",
            self.bytes_flushed as f64 / GB
        );
        let _ = writeln!(
            out,
            "Cumulative compaction: {:.2} GB write, {:.2} GB read, {:.1} seconds",
            total.bytes_written as f64 / GB,
            total.bytes_read() as f64 / GB,
            total.micros as f64 / 1e6
        );
        out
    }
}

const GB: f64 = (1u64 << 30) as f64;
const MB: f64 = (1u64 << 20) as f64;

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// Writes RocksDB's "Compaction Stats" table for table `name`: its
/// heading, one line per row of `rows`, then the `Sum` row, as RocksDB
/// prints them (GB to one decimal, record counts as `12K`). The one
/// renderer of the table: the engine's statistics and the simulator's
/// report both print with it.
///
/// ```
/// use lithify_compaction::{LevelStats, write_table};
///
/// let l0 = LevelStats { level: Some(0), files: 2, write_bytes: 1 << 30, ..LevelStats::default() };
/// let mut out = String::new();
/// write_table(&mut out, "default", &[l0.clone()], &l0);
/// let lines: Vec<&str> = out.lines().collect();
/// assert_eq!(lines[0], "** Compaction Stats [default] **");
/// assert!(lines[1].starts_with("Level  Files"));
/// assert!(lines[3].starts_with("   L0    2/0") && lines[4].starts_with("  Sum"));
/// ```
pub fn write_table(out: &mut String, name: &str, rows: &[LevelStats], sum: &LevelStats) {
    let _ = writeln!(out, "** Compaction Stats [{name}] **");
    let _ = writeln!(
        out,
        "Level  Files       Size  Score Read(GB)  Rn(GB) Rnp1(GB) Write(GB) Wnew(GB) Moved(GB)  W-Amp Rd(MB/s) Wr(MB/s) Comp(sec) Comp(cnt) Avg(sec)     KeyIn  KeyDrop"
    );
    let _ = writeln!(out, "{}", "-".repeat(170));
    for r in rows {
        write_row(out, &format!("L{}", r.level.unwrap_or(0)), r);
    }
    write_row(out, "Sum", sum);
}

fn write_row(out: &mut String, name: &str, r: &LevelStats) {
    // MB/s over the time spent; none spent (the simulator's, or no work)
    // prints 0.
    let mbps = |bytes: u64| {
        if r.comp_secs > 0.0 {
            bytes as f64 / MB / r.comp_secs
        } else {
            0.0
        }
    };
    let _ = writeln!(
        out,
        "{name:>5} {:>6} {:>10} {:>6.1} {:>8.1} {:>7.1} {:>8.1} {:>9.1} {:>8.1} {:>9.1} {:>6.1} {:>8.1} {:>8.1} {:>9.2} {:>9} {:>8.3} {:>9} {:>8}",
        format!("{}/{}", r.files, r.files_being_compacted),
        human_size(r.size_bytes),
        r.score,
        r.read_bytes as f64 / GB,
        r.read_n_bytes as f64 / GB,
        r.read_np1_bytes as f64 / GB,
        r.write_bytes as f64 / GB,
        r.write_new_bytes as f64 / GB,
        r.moved_bytes as f64 / GB,
        r.write_amp,
        mbps(r.read_bytes),
        mbps(r.write_bytes),
        r.comp_secs,
        r.comp_count,
        if r.comp_count == 0 {
            0.0
        } else {
            r.comp_secs / r.comp_count as f64
        },
        human_count(r.keys_in),
        human_count(r.keys_dropped),
    );
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
