//! What the facade's metamorphic and power-cut tests share.

use lithify::Options;

/// Small memtables, files and levels: many flushes and compactions from
/// little data, so a short operation sequence reaches every level.
pub(crate) fn small_levels() -> Options {
    Options::default()
        .write_buffer_size(64 << 10)
        .max_write_buffer_number(3)
        .level0_file_num_compaction_trigger(2)
        .level0_slowdown_writes_trigger(8)
        .level0_stop_writes_trigger(12)
        .max_bytes_for_level_base(16 << 10)
        .max_bytes_for_level_multiplier(4.0)
        .target_file_size_base(8 << 10)
        .block_cache_size(1 << 20)
        .num_levels(5)
}
