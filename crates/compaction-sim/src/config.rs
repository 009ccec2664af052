//! [`SimConfig`]: what to simulate.

use lithify_base::InternalKeyComparator;
use lithify_sstable::SstOptions;

use crate::{KeyDistribution, SimBlobOptions, WorkloadKind};

use lithify_compaction_leveled::LeveledOptions;
use lithify_compaction_strategy::CompactionStrategy;

/// What to simulate.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Number of writes (with a workload: operations after its load).
    pub num_writes: u64,
    /// Number of distinct keys writes are drawn from (db_bench's `--num`).
    pub key_space: u64,
    /// User key size in bytes.
    pub key_size: usize,
    /// Value size in bytes.
    pub value_size: usize,
    /// How keys are drawn (without a workload).
    pub distribution: KeyDistribution,
    /// Memtable size that triggers a flush (`write_buffer_size`).
    pub write_buffer_size: u64,
    /// Memtable bytes per entry beyond key, trailer and value (skiplist
    /// node header and links).
    pub memtable_entry_overhead: u64,
    /// Table options of the engine (block size, filter, compression).
    pub sst_options: SstOptions<InternalKeyComparator>,
    /// Leveled options (the strategy when `strategy` is `None`; its
    /// `num_levels` is the version's for every strategy).
    pub options: LeveledOptions,
    /// The strategy; `None` means `Leveled(options)`.
    pub strategy: Option<CompactionStrategy>,
    /// One of the strategies report's workloads instead of the plain write
    /// stream.
    pub workload: Option<WorkloadKind>,
    /// Operations per `Adaptive` observation window.
    pub adaptive_window: u64,
    /// One point read in this many is probed for read amplification.
    pub read_sample: u64,
    /// Random seed.
    pub seed: u64,
    /// Key-value separation of every value (`None`: values inline).
    pub blob: Option<SimBlobOptions>,
}

impl SimConfig {
    /// db_bench-like defaults: `num_writes` writes over as many keys,
    /// 16-byte keys, 100-byte values, uniform keys, 64 MiB write buffer,
    /// default options.
    pub fn fillrandom(num_writes: u64) -> Self {
        SimConfig {
            num_writes,
            key_space: num_writes,
            key_size: 16,
            value_size: 100,
            distribution: KeyDistribution::Uniform,
            write_buffer_size: 64 << 20,
            memtable_entry_overhead: 32,
            sst_options: SstOptions::for_internal_keys(InternalKeyComparator::bytewise()),
            options: LeveledOptions::default(),
            strategy: None,
            workload: None,
            adaptive_window: 0,
            read_sample: 4,
            seed: 0x5eed,
            blob: None,
        }
    }

    /// `ops` operations of `workload` over `key_space` keys with
    /// `strategy`; the adaptive window defaults to 1/40 of the operations.
    pub fn workload(
        workload: WorkloadKind,
        ops: u64,
        key_space: u64,
        strategy: CompactionStrategy,
    ) -> Self {
        SimConfig {
            key_space,
            workload: Some(workload),
            strategy: Some(strategy),
            adaptive_window: (ops / 40).max(1),
            ..SimConfig::fillrandom(ops)
        }
    }

    pub(crate) fn strategy(&self) -> CompactionStrategy {
        self.strategy
            .clone()
            .unwrap_or_else(|| CompactionStrategy::Leveled(self.options.clone()))
    }
}
