//! Pinning the state an iterator reads.

use lithify_base::sync::atomic::Ordering;
use lithify_compaction::READ_HEAT_SAMPLE_EVERY;

use crate::iter::CursorSource;
use crate::options::ReadOptions;
use crate::snapshot::Snapshot;
use crate::state::DbInner;
use crate::state::table::TableState;

/// Pins `table`'s super version, then takes the snapshot to read at (the
/// options' snapshot, else the latest sequence number).
pub(crate) fn cursor_source(
    inner: &DbInner,
    table: &TableState,
    options: &ReadOptions,
) -> CursorSource {
    // A scan to `Adaptive` (one per iterator, however far it goes).
    crate::strategy::observe_scan(inner, table);
    let sv = table.sv.get();
    let runs = crate::iter::sorted_runs(
        &sv.version,
        &table.icmp,
        options.lower_bound.as_deref(),
        options.upper_bound.as_deref(),
    );
    // The read heat samples one scan in `READ_HEAT_SAMPLE_EVERY` where it
    // starts: its lower bound, else the first key it seeks.
    let n = table.counters.scans.fetch_add(1, Ordering::Relaxed);
    let mut heat_at_first_seek = None;
    if n.is_multiple_of(READ_HEAT_SAMPLE_EVERY) {
        match options.lower_bound.as_deref() {
            Some(lower) => table.read_heat.record_read(n, lower),
            None => heat_at_first_seek = Some(std::sync::Arc::clone(&table.read_heat)),
        }
    }
    crate::stats::Counters::add(&table.counters.scan_sorted_runs, runs as u64);
    let snapshot = options
        .snapshot
        .as_ref()
        .map_or_else(|| inner.visible(), Snapshot::sequence_number);
    CursorSource {
        sv,
        opener: std::sync::Arc::clone(&inner.opener),
        icmp: table.icmp.clone(),
        snapshot,
        lower: options.lower_bound.clone(),
        upper: options.upper_bound.clone(),
        merge: std::sync::Arc::clone(&table.merge),
        heat_at_first_seek,
        _pin: options.snapshot.clone(),
    }
}
