//! `compaction-sim`: run a compaction strategy's picker over synthetic
//! flushes and print per-level sizes and write, read and space
//! amplification; or, with `--workload all --strategy all`, the strategies
//! table.
//!
//! ```text
//! cargo run --release -p lithify-compaction-sim --bin compaction-sim -- \
//!     --writes 10000000 --key-size 16 --value-size 100 --distribution uniform
//! cargo run --release -p lithify-compaction-sim --bin compaction-sim -- \
//!     --workload all --strategy all --writes 4000000 --keys 1000000
//! ```

use std::process::ExitCode;

use lithify_compaction::CompactionPri;
use lithify_compaction_sim::{
    KeyDistribution, SimConfig, WorkloadKind, calibration, report_strategies, simulate,
    sized_strategy, strategies_table,
};
use lithify_compaction_strategy::CompactionStrategy;

const USAGE: &str = "usage: compaction-sim [options]
  --writes N                 number of writes (default 10000000)
  --keys N                   key space (default: --writes)
  --key-size N               user key bytes (default 16)
  --value-size N             value bytes (default 100)
  --distribution D           uniform | zipfian[:theta] | sequential (default uniform)
  --write-buffer-size N      bytes (default 64M)
  --max-bytes-for-level-base N   bytes (default 256M)
  --level-multiplier F       (default 10)
  --target-file-size-base N  bytes (default 64M)
  --l0-trigger N             level0_file_num_compaction_trigger (default 4)
  --num-levels N             (default 7)
  --static-levels            level_compaction_dynamic_level_bytes = false
  --compaction-pri P         MinOverlappingRatio | ByCompensatedSize | OldestLargestSeqFirst | OldestSmallestSeqFirst | RoundRobin
  --memtable-overhead N      memtable bytes per entry beyond key+8+value (default 32)
  --strategy S               leveled | major-only | two-tier[:write-only|:write-mostly|
                             :read-mostly-few|:read-mostly-many|:read-mostly-many:table-count] |
                             adaptive | all (default leveled)
  --workload W               increasing | write-only | write-mostly | read-only |
                             read-mostly-few | read-mostly-many | phase-shift | diurnal |
                             moving-hot-spot | all:
                             operations (--writes of them, over --keys keys) instead of the
                             plain write stream
  --tier-file-size N         file size of the two-tier strategies (default: --target-file-size-base)
  --adaptive-window N        operations per adaptive window (default: 1/40 of --writes)
  --seed N
  --calibration small|full   print the cost model's calibration table (every fixed
                             strategy on every steady workload at the grid's sizes)
Sizes accept K, M and G suffixes (powers of 1024).";

fn size(s: &str) -> Option<u64> {
    let (digits, mult) = match s.as_bytes().last()? {
        b'K' | b'k' => (&s[..s.len() - 1], 1u64 << 10),
        b'M' | b'm' => (&s[..s.len() - 1], 1 << 20),
        b'G' | b'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(mult)
}

/// What to run: one simulation, the strategies table, or the cost
/// model's calibration table.
struct Run {
    calibration: Option<&'static [calibration::GridSize]>,
    config: SimConfig,
    strategies: Vec<String>,
    workloads: Vec<WorkloadKind>,
    tier_file_size: Option<u64>,
}

fn parse(args: &[String]) -> Result<Run, String> {
    let mut config = SimConfig::fillrandom(10_000_000);
    let mut key_space = None;
    let mut strategies = vec!["leveled".to_owned()];
    let mut workloads = Vec::new();
    let mut tier_file_size = None;
    let mut calibration = None;
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].as_str();
        if flag == "--static-levels" {
            config.options.level_compaction_dynamic_level_bytes = false;
            i += 1;
            continue;
        }
        if flag == "--help" || flag == "-h" {
            return Err(String::new());
        }
        let value = args
            .get(i + 1)
            .ok_or_else(|| format!("{flag} needs a value"))?;
        let num = || size(value).ok_or_else(|| format!("bad number `{value}` for {flag}"));
        match flag {
            "--writes" => config.num_writes = num()?,
            "--keys" => key_space = Some(num()?),
            "--key-size" => config.key_size = num()? as usize,
            "--value-size" => config.value_size = num()? as usize,
            "--distribution" => {
                config.distribution = KeyDistribution::parse(value)
                    .ok_or_else(|| format!("unknown distribution `{value}`"))?
            }
            "--write-buffer-size" => config.write_buffer_size = num()?,
            "--max-bytes-for-level-base" => config.options.max_bytes_for_level_base = num()?,
            "--level-multiplier" => {
                config.options.max_bytes_for_level_multiplier = value
                    .parse()
                    .map_err(|_| format!("bad multiplier `{value}`"))?
            }
            "--target-file-size-base" => config.options.target_file_size_base = num()?,
            "--l0-trigger" => config.options.level0_file_num_compaction_trigger = num()? as usize,
            "--num-levels" => config.options.num_levels = num()? as usize,
            "--compaction-pri" => {
                config.options.compaction_pri = CompactionPri::from_name(value)
                    .ok_or_else(|| format!("unknown compaction_pri `{value}`"))?
            }
            "--memtable-overhead" => config.memtable_entry_overhead = num()?,
            "--strategy" => {
                strategies = if value == "all" {
                    vec!["all".to_owned()]
                } else if CompactionStrategy::parse(value).is_some() {
                    vec![value.clone()]
                } else {
                    return Err(format!("unknown strategy `{value}`"));
                }
            }
            "--workload" => {
                workloads = if value == "all" {
                    WorkloadKind::EVERY.to_vec()
                } else {
                    vec![
                        WorkloadKind::parse(value)
                            .ok_or_else(|| format!("unknown workload `{value}`"))?,
                    ]
                }
            }
            "--tier-file-size" => tier_file_size = Some(num()?),
            "--adaptive-window" => config.adaptive_window = num()?,
            "--seed" => config.seed = num()?,
            "--calibration" => {
                calibration = Some(match value.as_str() {
                    "small" => &calibration::SMALL[..],
                    "full" => &calibration::FULL[..],
                    _ => return Err(format!("unknown calibration grid `{value}`")),
                })
            }
            _ => return Err(format!("unknown option {flag}")),
        }
        i += 2;
    }
    config.key_space = key_space.unwrap_or(config.num_writes);
    Ok(Run {
        calibration,
        config,
        strategies,
        workloads,
        tier_file_size,
    })
}

fn run(r: Run) -> Result<String, String> {
    if let Some(sizes) = r.calibration {
        return calibration::table(sizes).map_err(|e| e.to_string());
    }
    let tier = r
        .tier_file_size
        .unwrap_or(r.config.options.target_file_size_base);
    let strategies: Vec<CompactionStrategy> = if r.strategies == ["all"] {
        report_strategies(&r.config.options, tier)
    } else {
        let name = &r.strategies[0];
        let s = CompactionStrategy::parse(name).ok_or(format!("unknown strategy `{name}`"))?;
        vec![sized_strategy(s, &r.config.options, tier)]
    };
    if r.workloads.len() > 1 || strategies.len() > 1 {
        let workloads = if r.workloads.is_empty() {
            vec![WorkloadKind::WriteOnly]
        } else {
            r.workloads
        };
        let (text, _) =
            strategies_table(&r.config, &workloads, &strategies).map_err(|e| e.to_string())?;
        return Ok(text);
    }
    let mut config = r.config;
    config.workload = r.workloads.first().copied();
    config.strategy = strategies.into_iter().next();
    if config.adaptive_window == 0 {
        config.adaptive_window = (config.num_writes / 40).max(1);
    }
    simulate(&config)
        .map(|r| r.to_string())
        .map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let run_args = match parse(&args) {
        Ok(c) => c,
        Err(msg) => {
            if !msg.is_empty() {
                eprintln!("compaction-sim: {msg}");
            }
            eprintln!("{USAGE}");
            return if msg.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            };
        }
    };
    match run(run_args) {
        Ok(report) => {
            println!("{report}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("compaction-sim: {e}");
            ExitCode::FAILURE
        }
    }
}
