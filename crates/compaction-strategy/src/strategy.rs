//! A table's compaction strategy: which picker shapes its levels.

use std::fmt;
use std::sync::Arc;

use crate::adaptive::AdaptiveOptions;
use lithify_compaction::{CompactionPicker, Result};
use lithify_compaction_leveled::{LeveledOptions, LeveledPicker};
use lithify_compaction_tiered::{MajorOnlyOptions, MinorPolicy, TwoTierOptions};
use lithify_compaction_tiered::{MajorOnlyPicker, TwoTierPicker};

/// How one table (column family) is compacted. Every variant's picker
/// accepts every shape, so a table can switch on the fly: the new picker's
/// first compaction reshapes what the old one left (see the crate README,
/// "Switching strategy").
///
/// ```
/// use lithify_compaction_strategy::CompactionStrategy;
///
/// let s = CompactionStrategy::parse("two-tier:write-mostly").unwrap();
/// assert_eq!(s.to_string(), "two-tier(minor=size-tiered:8,stripes=8,ratio=1)");
/// assert_eq!(s.picker().unwrap().name(), "two-tier");
/// assert_eq!(CompactionStrategy::parse("major-only").unwrap().to_string(), "major-only");
/// ```
///
/// Exhaustive on purpose: the engine builds and translates each strategy,
/// so a new one must stop its build until it does.
#[derive(Debug, Clone, PartialEq)]
// `Adaptive` carries its templates and goal: a strategy is configured once
// per table, so its size does not matter.
#[allow(clippy::large_enum_variant)]
pub enum CompactionStrategy {
    /// RocksDB's leveled compaction (the default).
    Leveled(LeveledOptions),
    /// "Memtable + L1": flushes merge into the single sorted run.
    MajorOnly(MajorOnlyOptions),
    /// "Memtable + L0 + L1": L0 tables, minor and (striped) major
    /// compactions.
    TwoTier(TwoTierOptions),
    /// Chosen from the observed workload by
    /// [`choose_strategy`](crate::adaptive::choose_strategy).
    Adaptive(AdaptiveOptions),
}

impl Default for CompactionStrategy {
    fn default() -> Self {
        CompactionStrategy::Leveled(LeveledOptions::default())
    }
}

impl CompactionStrategy {
    /// The short name of the variant: `leveled`, `major-only`, `two-tier`,
    /// `adaptive`.
    pub fn kind_name(&self) -> &'static str {
        match self {
            CompactionStrategy::Leveled(_) => "leveled",
            CompactionStrategy::MajorOnly(_) => "major-only",
            CompactionStrategy::TwoTier(_) => "two-tier",
            CompactionStrategy::Adaptive(_) => "adaptive",
        }
    }

    /// Parses `leveled`, `major-only`, `two-tier` (default options),
    /// `two-tier:write-only`, `two-tier:write-mostly`,
    /// `two-tier:read-mostly-few`, `two-tier:read-mostly-many` (the
    /// presets), `two-tier:read-mostly-many:table-count` (that preset
    /// merging L0 where writes went, whatever the reads: the rule read heat
    /// replaced, for comparison), and `adaptive`.
    pub fn parse(s: &str) -> Option<CompactionStrategy> {
        Some(match s {
            "leveled" => CompactionStrategy::Leveled(LeveledOptions::default()),
            "major-only" => CompactionStrategy::MajorOnly(MajorOnlyOptions::default()),
            "two-tier" => CompactionStrategy::TwoTier(TwoTierOptions::default()),
            "two-tier:write-only" => CompactionStrategy::TwoTier(TwoTierOptions::write_only()),
            "two-tier:write-mostly" => CompactionStrategy::TwoTier(TwoTierOptions::write_mostly()),
            "two-tier:read-mostly-few" => {
                CompactionStrategy::TwoTier(TwoTierOptions::read_mostly_few_updates())
            }
            "two-tier:read-mostly-many" => {
                CompactionStrategy::TwoTier(TwoTierOptions::read_mostly_many_updates())
            }
            "two-tier:read-mostly-many:table-count" => CompactionStrategy::TwoTier(
                TwoTierOptions::read_mostly_many_updates().merge_by_read_heat(false),
            ),
            "adaptive" => CompactionStrategy::Adaptive(AdaptiveOptions::default()),
            _ => return None,
        })
    }

    /// The fixed strategies the strategies report and the cost model's
    /// calibration compare: every name of [`NAMES`](Self::NAMES) but the
    /// plain `two-tier`, `two-tier:read-mostly-many:table-count` (a
    /// variant for comparison) and `adaptive`.
    pub const FIXED: [&'static str; 6] = [
        "leveled",
        "major-only",
        "two-tier:write-only",
        "two-tier:write-mostly",
        "two-tier:read-mostly-few",
        "two-tier:read-mostly-many",
    ];

    /// The names [`parse`](Self::parse) accepts.
    pub const NAMES: [&'static str; 9] = [
        "leveled",
        "major-only",
        "two-tier",
        "two-tier:write-only",
        "two-tier:write-mostly",
        "two-tier:read-mostly-few",
        "two-tier:read-mostly-many",
        "two-tier:read-mostly-many:table-count",
        "adaptive",
    ];

    /// The picker of this strategy; for `Adaptive`, of its initial choice
    /// (the engine replaces it as the workload is observed).
    pub fn picker(&self) -> Result<Arc<dyn CompactionPicker>> {
        Ok(match self {
            CompactionStrategy::Leveled(o) => Arc::new(LeveledPicker::new(o.clone())?),
            CompactionStrategy::MajorOnly(o) => Arc::new(MajorOnlyPicker::new(o.clone())?),
            CompactionStrategy::TwoTier(o) => Arc::new(TwoTierPicker::new(o.clone())?),
            CompactionStrategy::Adaptive(a) => return a.initial.picker(),
        })
    }

    /// Whether this is `Adaptive`.
    pub fn is_adaptive(&self) -> bool {
        matches!(self, CompactionStrategy::Adaptive(_))
    }
}

impl fmt::Display for CompactionStrategy {
    /// `leveled`, `major-only`, `two-tier(minor=..,stripes=..,ratio=..)`
    /// (with `,max-l0=..` when the L0 bound is not the default 64, and
    /// `,table-count` for hot-range minors that ignore read heat),
    /// `adaptive`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompactionStrategy::TwoTier(o) => {
                write!(
                    f,
                    "two-tier(minor={},stripes={},ratio={}",
                    o.minor.name(),
                    o.stripes,
                    o.major_ratio
                )?;
                if o.max_l0_tables != TwoTierOptions::default().max_l0_tables {
                    write!(f, ",max-l0={}", o.max_l0_tables)?;
                }
                if matches!(o.minor, MinorPolicy::HotRange { .. }) && !o.merge_by_read_heat {
                    f.write_str(",table-count")?;
                }
                f.write_str(")")
            }
            other => f.write_str(other.kind_name()),
        }
    }
}

/// Short label of a two-tier configuration for tables and logs.
pub(crate) fn two_tier_label(o: &TwoTierOptions) -> &'static str {
    match (o.minor, o.stripes > 1) {
        (MinorPolicy::None, _) => "one L0 table per flush",
        (MinorPolicy::MergeWithPrevious, _) => "each flush merged with the previous L0 table",
        (MinorPolicy::SizeTiered { .. }, true) => "L0 accumulates, striped progressive major",
        (MinorPolicy::SizeTiered { .. }, false) => "L0 accumulates (size-tiered minors)",
        (MinorPolicy::HotRange { .. }, true) => "L0 merged by hot range, striped major",
        (MinorPolicy::HotRange { .. }, false) => "L0 merged when it grows",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_and_builds_a_picker() {
        for name in CompactionStrategy::NAMES {
            let s = CompactionStrategy::parse(name).unwrap();
            let picker = s.picker().unwrap();
            let expected = match s.kind_name() {
                "adaptive" => "two-tier",
                k => k,
            };
            assert_eq!(picker.name(), expected, "{name}");
        }
        assert!(CompactionStrategy::parse("tiered").is_none());
        assert_eq!(CompactionStrategy::default().to_string(), "leveled");
        assert_eq!(
            CompactionStrategy::parse("adaptive").unwrap().to_string(),
            "adaptive"
        );
    }
}
