//! Options of the two-tier strategies, OceanBase style: `MajorOnly`
//! ("Memtable + L1") and `TwoTier` ("Memtable + L0 + L1").
//!
//! Both keep their sorted data in one level, the **major level**: the last
//! level of the version (L6 with the default seven levels; OceanBase calls
//! it the major SSTable, the issue calls it L1). Keeping it at the bottom
//! makes a switch from `Leveled` a merge of the middle levels into data
//! already there, and a switch back free: L0 plus the last level is a
//! leveled shape already.

use lithify_sstable::Compression;

use lithify_compaction::{Error, Result};

/// Options of [`MajorOnlyPicker`](crate::MajorOnlyPicker): no L0 in the
/// steady state; a flush is a major compaction of the frozen memtables
/// into the major level, reusing major-level files whose key range
/// receives nothing.
///
/// ```
/// use lithify_compaction_tiered::MajorOnlyOptions;
///
/// let opts = MajorOnlyOptions::default().sanitize().unwrap();
/// assert_eq!(opts.target_file_size, 64 << 20);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct MajorOnlyOptions {
    /// Size of the major level's files (default 64 MiB). Smaller files make
    /// incremental majors finer: a file is reused when no new key falls in
    /// its range.
    pub target_file_size: u64,
    /// Parallel key-range pieces of one major compaction (default 1).
    pub max_subcompactions: usize,
    /// Compression of the output files (default none).
    pub compression: Compression,
    /// No automatic compaction (flush plans and manual compaction still
    /// work).
    pub disable_auto_compactions: bool,
}

lithify_base::options_builder!(MajorOnlyOptions {
    target_file_size: u64,
    max_subcompactions: usize,
    compression: Compression,
    disable_auto_compactions: bool,
});

impl Default for MajorOnlyOptions {
    fn default() -> Self {
        MajorOnlyOptions {
            target_file_size: 64 << 20,
            max_subcompactions: 1,
            compression: Compression::None,
            disable_auto_compactions: false,
        }
    }
}

impl MajorOnlyOptions {
    /// Corrects what can be corrected, rejects the rest.
    pub fn sanitize(mut self) -> Result<Self> {
        if self.target_file_size == 0 {
            return Err(Error::invalid_argument(
                "target_file_size must be positive".to_owned(),
            ));
        }
        self.max_subcompactions = self.max_subcompactions.max(1);
        Ok(self)
    }
}

/// How a [`TwoTierPicker`](crate::TwoTierPicker) keeps L0's table count
/// down between major compactions (its **minor compactions**). With
/// stripes, every rule applies per stripe: to the L0 tables overlapping
/// that key sub-range.
///
/// Exhaustive on purpose: the cost model (`lithify-compaction-strategy`)
/// predicts each policy, so a new one must stop its build until it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MinorPolicy {
    /// One L0 table per flush; nothing merges them before the major
    /// compaction (write-only workloads: reads do not pay for L0).
    None,
    /// Each flush is merged with the previous L0 table, so L0 stays one
    /// table (read-mostly, few updates: flushes are rare, reads see at most
    /// two sorted runs). The merge happens in the flush itself when the
    /// engine uses [`pick_flush`](lithify_compaction::CompactionPicker::pick_flush),
    /// else as a minor compaction right after it.
    MergeWithPrevious,
    /// Size-tiered merges (RocksDB's universal rule): starting from the
    /// newest table, tables join while the sum so far times
    /// `(100 + size_ratio_percent) / 100` reaches the next one's size; two
    /// or more are merged. When more than `max_tables` remain, the newest
    /// ones are merged regardless, bringing the count back to the bound.
    SizeTiered {
        /// L0 tables allowed per stripe.
        max_tables: usize,
        /// The universal size ratio, in percent (RocksDB's default 1).
        size_ratio_percent: u32,
    },
    /// Merged by hot range (read-mostly workloads with many random
    /// updates). By the table-count rule, a stripe with more than
    /// `max_tables` L0 tables gets all of them merged into one, the
    /// stripe with the most first. When the engine samples where reads go
    /// (`TwoTierOptions::merge_by_read_heat`) and reads are the load, the
    /// heat rule bounds each stripe by the reads it draws instead: hot
    /// stripes are merged at fewer tables, cold ones are left to their
    /// major, and the stripe whose reads probe the most extra tables goes
    /// first (see the crate README, "L0 merged by read heat").
    HotRange {
        /// L0 tables allowed in a stripe.
        max_tables: usize,
    },
}

impl MinorPolicy {
    /// A short name: `none`, `merge-previous`, `size-tiered:N`,
    /// `hot-range:N`.
    pub fn name(&self) -> String {
        match self {
            MinorPolicy::None => "none".to_owned(),
            MinorPolicy::MergeWithPrevious => "merge-previous".to_owned(),
            MinorPolicy::SizeTiered { max_tables, .. } => format!("size-tiered:{max_tables}"),
            MinorPolicy::HotRange { max_tables } => format!("hot-range:{max_tables}"),
        }
    }

    /// Parses [`name`](Self::name)'s forms (`size-tiered` alone means 8
    /// tables, `hot-range` alone 4).
    pub fn parse(s: &str) -> Option<MinorPolicy> {
        let (head, n) = match s.split_once(':') {
            Some((h, n)) => (h, Some(n.parse::<usize>().ok()?)),
            None => (s, None),
        };
        match head {
            "none" if n.is_none() => Some(MinorPolicy::None),
            "merge-previous" if n.is_none() => Some(MinorPolicy::MergeWithPrevious),
            "size-tiered" => Some(MinorPolicy::SizeTiered {
                max_tables: n.unwrap_or(8),
                size_ratio_percent: 1,
            }),
            "hot-range" => Some(MinorPolicy::HotRange {
                max_tables: n.unwrap_or(4),
            }),
            _ => None,
        }
    }
}

/// Options of [`TwoTierPicker`](crate::TwoTierPicker): flushes write L0
/// tables, minor compactions keep L0 small, and a major compaction merges
/// L0 into the major level once L0 holds `major_ratio` times the major
/// level's bytes — per stripe when the key space is striped.
///
/// The presets are the issue's rows:
///
/// ```
/// use lithify_compaction_tiered::{MinorPolicy, TwoTierOptions};
///
/// assert_eq!(TwoTierOptions::write_only().minor, MinorPolicy::None);
/// assert_eq!(TwoTierOptions::write_mostly().stripes, 8);
/// assert_eq!(TwoTierOptions::read_mostly_few_updates().minor, MinorPolicy::MergeWithPrevious);
/// assert!(matches!(TwoTierOptions::read_mostly_many_updates().minor, MinorPolicy::HotRange { .. }));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TwoTierOptions {
    /// A major compaction of a stripe starts when its L0 bytes reach this
    /// multiple of its major-level bytes (default 1.0, where the
    /// write amplification of repeated merges is lowest).
    pub major_ratio: f64,
    /// How L0 is kept small between majors.
    pub minor: MinorPolicy,
    /// Number of key sub-ranges (stripes) compacted on their own (default
    /// 1: every major merges all of L0). Stripe boundaries are the major
    /// level's file boundaries at equal shares of its bytes, so a major
    /// rewrites about `1/stripes` of the table and needs that much
    /// temporary space. Flushes are cut at the boundaries too.
    pub stripes: usize,
    /// Hard bound on a stripe's L0 tables: past it the stripe is
    /// major-compacted whatever its ratio (default 64).
    pub max_l0_tables: usize,
    /// Size of major-level files (default 64 MiB).
    pub target_file_size: u64,
    /// Parallel key-range pieces of one major compaction (default 1).
    pub max_subcompactions: usize,
    /// Compression of the output files (default none).
    pub compression: Compression,
    /// No automatic compaction.
    pub disable_auto_compactions: bool,
    /// With [`MinorPolicy::HotRange`], bound each stripe's L0 by the share
    /// of reads it draws when the engine samples them and reads are the
    /// load (default true); false keeps the table-count rule always.
    pub merge_by_read_heat: bool,
}

lithify_base::options_builder!(TwoTierOptions {
    major_ratio: f64,
    minor: MinorPolicy,
    stripes: usize,
    max_l0_tables: usize,
    target_file_size: u64,
    max_subcompactions: usize,
    compression: Compression,
    disable_auto_compactions: bool,
    merge_by_read_heat: bool,
});

impl Default for TwoTierOptions {
    fn default() -> Self {
        TwoTierOptions {
            major_ratio: 1.0,
            minor: MinorPolicy::SizeTiered {
                max_tables: 8,
                size_ratio_percent: 1,
            },
            stripes: 1,
            max_l0_tables: 64,
            target_file_size: 64 << 20,
            max_subcompactions: 1,
            compression: Compression::None,
            disable_auto_compactions: false,
            merge_by_read_heat: true,
        }
    }
}

impl TwoTierOptions {
    /// Write-only, random: one L0 table per flush, major when L0 = L1.
    pub fn write_only() -> Self {
        TwoTierOptions::default().minor(MinorPolicy::None)
    }

    /// Write-mostly, random: L0 accumulates (size-tiered minors), striped
    /// progressive major compaction over 8 stripes.
    pub fn write_mostly() -> Self {
        TwoTierOptions::default().stripes(8)
    }

    /// Read-mostly, few random updates: each flush merged with the
    /// previous L0 table, major at a quarter of the major level (the one
    /// L0 table is rewritten by every flush, so it is kept small).
    pub fn read_mostly_few_updates() -> Self {
        TwoTierOptions::default()
            .minor(MinorPolicy::MergeWithPrevious)
            .major_ratio(0.25)
    }

    /// Read-mostly, many random updates: L0 merged by hot range, striped
    /// major over 8 stripes.
    pub fn read_mostly_many_updates() -> Self {
        TwoTierOptions::default()
            .minor(MinorPolicy::HotRange { max_tables: 4 })
            .stripes(8)
    }

    /// Corrects what can be corrected, rejects the rest.
    pub fn sanitize(mut self) -> Result<Self> {
        if !(self.major_ratio.is_finite() && self.major_ratio > 0.0) {
            return Err(Error::invalid_argument(format!(
                "major_ratio must be positive, not {}",
                self.major_ratio
            )));
        }
        if self.target_file_size == 0 {
            return Err(Error::invalid_argument(
                "target_file_size must be positive".to_owned(),
            ));
        }
        self.stripes = self.stripes.max(1);
        self.max_l0_tables = self.max_l0_tables.max(2);
        self.max_subcompactions = self.max_subcompactions.max(1);
        match &mut self.minor {
            MinorPolicy::SizeTiered { max_tables, .. } | MinorPolicy::HotRange { max_tables } => {
                *max_tables = (*max_tables).max(1);
            }
            MinorPolicy::None | MinorPolicy::MergeWithPrevious => {}
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minor_policy_names_round_trip() {
        for p in [
            MinorPolicy::None,
            MinorPolicy::MergeWithPrevious,
            MinorPolicy::SizeTiered {
                max_tables: 6,
                size_ratio_percent: 1,
            },
            MinorPolicy::HotRange { max_tables: 3 },
        ] {
            assert_eq!(MinorPolicy::parse(&p.name()), Some(p));
        }
        assert_eq!(
            MinorPolicy::parse("hot-range"),
            Some(MinorPolicy::HotRange { max_tables: 4 })
        );
        assert_eq!(MinorPolicy::parse("none:3"), None);
        assert_eq!(MinorPolicy::parse("size-tiered:x"), None);
    }

    #[test]
    fn sanitize_rejects_and_corrects() {
        let bad = TwoTierOptions::default().major_ratio(0.0);
        assert!(
            bad.sanitize()
                .unwrap_err()
                .to_string()
                .contains("major_ratio")
        );
        let fixed = TwoTierOptions::default()
            .stripes(0)
            .max_l0_tables(0)
            .minor(MinorPolicy::HotRange { max_tables: 0 })
            .sanitize()
            .unwrap();
        assert_eq!((fixed.stripes, fixed.max_l0_tables), (1, 2));
        assert_eq!(fixed.minor, MinorPolicy::HotRange { max_tables: 1 });
        assert!(
            MajorOnlyOptions::default()
                .target_file_size(0)
                .sanitize()
                .is_err()
        );
    }
}
