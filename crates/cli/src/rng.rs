//! The generator behind every synthetic workload of the command line
//! (`bench` keys, `log produce` records): lithify's one splitmix64.

pub(crate) use lithify_bench::SplitMix64 as Rng;
