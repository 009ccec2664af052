//! The strategies report: every strategy sized alike, each run over each
//! workload, in one table.

use crate::{SimConfig, SimReport, WorkloadKind, simulate};

use crate::error::Result;

use lithify_compaction_leveled::LeveledOptions;
use lithify_compaction_strategy::CompactionStrategy;

/// `s` with the simulation's sizes: `Leveled` (and `Adaptive`'s leveled
/// candidate) takes `options`; the two-tier strategies (and `Adaptive`'s
/// other templates and initial strategy) take `target_file_size`.
pub fn sized_strategy(
    mut s: CompactionStrategy,
    options: &LeveledOptions,
    target_file_size: u64,
) -> CompactionStrategy {
    match &mut s {
        CompactionStrategy::Leveled(o) => *o = options.clone(),
        CompactionStrategy::MajorOnly(o) => o.target_file_size = target_file_size,
        CompactionStrategy::TwoTier(o) => o.target_file_size = target_file_size,
        CompactionStrategy::Adaptive(a) => {
            a.leveled = options.clone();
            a.major_only.target_file_size = target_file_size;
            a.two_tier.target_file_size = target_file_size;
            let initial = std::mem::take(&mut *a.initial);
            *a.initial = sized_strategy(initial, options, target_file_size);
        }
    }
    s
}

/// The strategies the report compares, sized by [`sized_strategy`]: every
/// fixed strategy (leveled, major-only, the four two-tier presets) and
/// `Adaptive`.
pub fn report_strategies(
    options: &LeveledOptions,
    target_file_size: u64,
) -> Vec<CompactionStrategy> {
    CompactionStrategy::FIXED
        .iter()
        .chain(&["adaptive"])
        .filter_map(|n| CompactionStrategy::parse(n))
        .map(|s| sized_strategy(s, options, target_file_size))
        .collect()
}

/// The strategies table: one line per (workload, strategy) with write,
/// read and space amplification, from [`simulate`] runs of `base` with
/// each workload and strategy.
///
/// ```
/// use lithify_compaction_sim::{SimConfig, WorkloadKind, report_strategies, strategies_table};
///
/// let mut base = SimConfig::fillrandom(20_000);
/// base.key_space = 5_000;
/// base.write_buffer_size = 256 << 10;
/// base.options.max_bytes_for_level_base = 1 << 20;
/// base.options.target_file_size_base = 256 << 10;
/// let strategies = report_strategies(&base.options, 256 << 10);
/// let (text, reports) = strategies_table(&base, &[WorkloadKind::WriteOnly], &strategies).unwrap();
/// assert_eq!(reports.len(), strategies.len());
/// assert!(text.contains("write-only"));
/// ```
pub fn strategies_table(
    base: &SimConfig,
    workloads: &[WorkloadKind],
    strategies: &[CompactionStrategy],
) -> Result<(String, Vec<SimReport>)> {
    let mut text = String::from(
        "| workload | strategy | write amp | read amp (tables/read) | space amp | peak space amp |\n|---|---|---|---|---|---|\n",
    );
    let mut reports = Vec::new();
    for &w in workloads {
        for s in strategies {
            let mut config = base.clone();
            config.workload = Some(w);
            config.strategy = Some(s.clone());
            if config.adaptive_window == 0 {
                config.adaptive_window = (config.num_writes / 40).max(1);
            }
            let r = simulate(&config)?;
            let label = if r.switches.is_empty() {
                r.strategy.clone()
            } else {
                format!(
                    "{} -> {}",
                    r.strategy,
                    r.switches.last().map_or("", |s| s.to.as_str())
                )
            };
            text.push_str(&format!(
                "| {} | {} | {:.2} | {:.2} | {:.2} | {:.2} |\n",
                w.name(),
                label,
                r.write_amplification_vs_user(),
                r.read_amplification(),
                r.space_amplification(),
                r.peak_space_amplification,
            ));
            reports.push(r);
        }
    }
    Ok((text, reports))
}
