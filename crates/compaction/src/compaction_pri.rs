//! The order in which the files of a level are considered for compaction
//! (RocksDB's `compaction_pri`): the leveled picker orders files by it, and
//! jobs cut round-robin subcompactions by it.

/// The order in which the files of a level are considered for compaction
/// (RocksDB's `compaction_pri`).
///
/// Exhaustive on purpose: each order is implemented by the pickers
/// (`lithify-compaction-leveled`), so a new one must stop their build
/// until they implement it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CompactionPri {
    /// Largest compensated size first (deletion-heavy files weigh more).
    ByCompensatedSize,
    /// Files whose newest data is oldest first (`largest_seqno` ascending).
    OldestLargestSeqFirst,
    /// Files whose oldest data is oldest first (`smallest_seqno` ascending).
    OldestSmallestSeqFirst,
    /// Smallest ratio of overlapping bytes in the next level to the file's
    /// compensated size first: the cheapest compaction per byte moved down.
    #[default]
    MinOverlappingRatio,
    /// Round robin from a per-level cursor kept in the MANIFEST.
    RoundRobin,
}

impl CompactionPri {
    /// The name in RocksDB's spelling, e.g. `kMinOverlappingRatio`.
    pub fn name(self) -> &'static str {
        match self {
            CompactionPri::ByCompensatedSize => "kByCompensatedSize",
            CompactionPri::OldestLargestSeqFirst => "kOldestLargestSeqFirst",
            CompactionPri::OldestSmallestSeqFirst => "kOldestSmallestSeqFirst",
            CompactionPri::MinOverlappingRatio => "kMinOverlappingRatio",
            CompactionPri::RoundRobin => "kRoundRobin",
        }
    }

    /// Parses a name, with or without RocksDB's `k` prefix.
    pub fn from_name(name: &str) -> Option<CompactionPri> {
        let name = name.strip_prefix('k').unwrap_or(name);
        Some(match name {
            "ByCompensatedSize" => CompactionPri::ByCompensatedSize,
            "OldestLargestSeqFirst" => CompactionPri::OldestLargestSeqFirst,
            "OldestSmallestSeqFirst" => CompactionPri::OldestSmallestSeqFirst,
            "MinOverlappingRatio" => CompactionPri::MinOverlappingRatio,
            "RoundRobin" => CompactionPri::RoundRobin,
            _ => return None,
        })
    }
}
