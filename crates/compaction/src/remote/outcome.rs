//! [`RemoteOutcome`]: what a worker sends back.

use std::sync::Arc;

use lithify_base::coding::{put_length_prefixed, put_varint64};
use lithify_version::FileMetadata;

use super::codec::{Body, frame, put_files, unframe};
use crate::error::Result;
use crate::iter::IterStats;
use crate::stats::CompactionStats;

/// The magic of an encoded outcome.
pub(crate) const OUTCOME_MAGIC: &[u8; 4] = b"LTCR";

/// A job's result as the worker reports it: claims the primary checks
/// ([`check_remote_result`](super::check_remote_result)) before it
/// believes any of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteResult {
    /// The job's id.
    pub id: u64,
    /// The output tables, in key order.
    pub outputs: Vec<FileMetadata>,
    /// The job's statistics.
    pub stats: CompactionStats,
    /// The compaction iterator's counts.
    pub iter_stats: IterStats,
    /// Subcompactions run.
    pub subcompactions: usize,
}

/// What a worker sends back for a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoteOutcome {
    /// The job ran; its outputs are in place.
    Done(Box<RemoteResult>),
    /// The job failed on the worker, which removed what it wrote.
    Failed {
        /// The job's id.
        id: u64,
        /// Why.
        message: String,
    },
}

impl RemoteOutcome {
    /// The job this answers.
    pub fn id(&self) -> u64 {
        match self {
            RemoteOutcome::Done(r) => r.id,
            RemoteOutcome::Failed { id, .. } => *id,
        }
    }

    /// The outcome's bytes (the `LTCR` format).
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        match self {
            RemoteOutcome::Failed { id, message } => {
                b.push(0);
                put_varint64(&mut b, *id);
                put_length_prefixed(&mut b, message.as_bytes());
            }
            RemoteOutcome::Done(r) => {
                b.push(1);
                put_varint64(&mut b, r.id);
                let outputs: Vec<Arc<FileMetadata>> =
                    r.outputs.iter().cloned().map(Arc::new).collect();
                put_files(&mut b, outputs.iter().map(|f| (0, f)));
                for v in stats_fields(&r.stats) {
                    put_varint64(&mut b, v);
                }
                for v in iter_fields(&r.iter_stats) {
                    put_varint64(&mut b, v);
                }
                put_varint64(&mut b, r.subcompactions as u64);
            }
        }
        frame(OUTCOME_MAGIC, &b)
    }

    /// Decodes an outcome, refusing anything [`encode`](Self::encode)
    /// could not have written; the error names the byte position.
    pub fn decode(bytes: &[u8]) -> Result<RemoteOutcome> {
        const WHAT: &str = "compaction outcome";
        let mut d = Body::new(unframe(bytes, OUTCOME_MAGIC, WHAT)?, WHAT);
        let at = d.at();
        let outcome = match d.byte()? {
            0 => RemoteOutcome::Failed {
                id: d.u64()?,
                message: d.string()?,
            },
            1 => {
                let id = d.u64()?;
                let outputs = d.files()?.into_iter().map(|(_, f)| f).collect();
                let mut s = [0u64; STATS_FIELDS];
                for v in &mut s {
                    *v = d.u64()?;
                }
                let mut it = [0u64; ITER_FIELDS];
                for v in &mut it {
                    *v = d.u64()?;
                }
                RemoteOutcome::Done(Box::new(RemoteResult {
                    id,
                    outputs,
                    stats: stats_from(s),
                    iter_stats: iter_from(it),
                    subcompactions: d.usize()?,
                }))
            }
            b => return d.invalid(at, format!("unknown outcome {b}")),
        };
        d.finish()?;
        if outcome.encode() != bytes {
            return super::codec::fail(WHAT, 5, "fields not in their one encoding");
        }
        Ok(outcome)
    }
}

const STATS_FIELDS: usize = 14;

fn stats_fields(s: &CompactionStats) -> [u64; STATS_FIELDS] {
    [
        s.micros,
        s.bytes_read_non_output_levels,
        s.bytes_read_output_level,
        s.bytes_written,
        s.bytes_written_blob,
        s.bytes_moved,
        s.bytes_reused,
        s.num_input_files_non_output_levels,
        s.num_input_files_output_level,
        s.num_output_files,
        s.num_input_records,
        s.num_dropped_records,
        s.num_output_records,
        s.count,
    ]
}

fn stats_from(v: [u64; STATS_FIELDS]) -> CompactionStats {
    CompactionStats {
        micros: v[0],
        bytes_read_non_output_levels: v[1],
        bytes_read_output_level: v[2],
        bytes_written: v[3],
        bytes_written_blob: v[4],
        bytes_moved: v[5],
        bytes_reused: v[6],
        num_input_files_non_output_levels: v[7],
        num_input_files_output_level: v[8],
        num_output_files: v[9],
        num_input_records: v[10],
        num_dropped_records: v[11],
        num_output_records: v[12],
        count: v[13],
    }
}

const ITER_FIELDS: usize = 15;

fn iter_fields(s: &IterStats) -> [u64; ITER_FIELDS] {
    [
        s.records_in,
        s.records_out,
        s.input_deletions,
        s.dropped_hidden,
        s.dropped_obsolete,
        s.dropped_range_del,
        s.dropped_filter,
        s.filter_removed,
        s.filter_changed,
        s.dropped_merged,
        s.dropped_single_delete,
        s.full_merges,
        s.partial_merges,
        s.single_delete_mismatch,
        s.merge_failures_kept,
    ]
}

fn iter_from(v: [u64; ITER_FIELDS]) -> IterStats {
    IterStats {
        records_in: v[0],
        records_out: v[1],
        input_deletions: v[2],
        dropped_hidden: v[3],
        dropped_obsolete: v[4],
        dropped_range_del: v[5],
        dropped_filter: v[6],
        filter_removed: v[7],
        filter_changed: v[8],
        dropped_merged: v[9],
        dropped_single_delete: v[10],
        full_merges: v[11],
        partial_merges: v[12],
        single_delete_mismatch: v[13],
        merge_failures_kept: v[14],
    }
}
