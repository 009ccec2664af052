//! Merge operands on the read path: one table's operator, applied to the
//! operands a lookup or a cursor collected, and the errors when it is
//! missing or fails. Compactions merge through the compaction iterator
//! (`lithify_compaction::iter`); both apply the same operator.

use std::sync::Arc as StdArc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use lithify_base::key::escape;
use lithify_base::{MergeFailureScope, MergeOperator};

use crate::error::{MergeFailedSnafu, NoMergeOperatorSnafu, Result};

/// `op` with its failures contained to their keys
/// ([`MergeFailureScope::MustMerge`]) whatever its own scope: what the
/// flushes of a recovery use, so that an operator that fails never keeps a
/// database from opening.
pub(crate) fn contained_failures(op: StdArc<dyn MergeOperator>) -> StdArc<dyn MergeOperator> {
    struct Contained(StdArc<dyn MergeOperator>);
    impl MergeOperator for Contained {
        fn name(&self) -> &str {
            self.0.name()
        }
        fn full_merge(
            &self,
            key: &[u8],
            existing: Option<&[u8]>,
            operands: &[&[u8]],
        ) -> Option<Vec<u8>> {
            self.0.full_merge(key, existing, operands)
        }
        fn failure_scope(&self) -> MergeFailureScope {
            MergeFailureScope::MustMerge
        }
        fn partial_merge(&self, key: &[u8], older: &[u8], newer: &[u8]) -> Option<Vec<u8>> {
            self.0.partial_merge(key, older, newer)
        }
        fn partial_merge_multi(&self, key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
            self.0.partial_merge_multi(key, operands)
        }
    }
    StdArc::new(Contained(op))
}

/// What a table resolves merge operands with.
pub(crate) struct TableMerge {
    operator: Option<StdArc<dyn MergeOperator>>,
    /// The name the MANIFEST records for the table, if any.
    recorded: Option<String>,
    table: String,
    /// Lookups and cursor positions whose value was merged.
    reads_merged: AtomicU64,
}

impl TableMerge {
    pub(crate) fn new(
        table: &str,
        operator: Option<StdArc<dyn MergeOperator>>,
        recorded: Option<String>,
    ) -> Self {
        TableMerge {
            operator,
            recorded,
            table: table.to_owned(),
            reads_merged: AtomicU64::new(0),
        }
    }

    /// Reads whose value was merged from operands.
    pub(crate) fn reads_merged(&self) -> u64 {
        self.reads_merged.load(Ordering::Relaxed)
    }

    /// Whether the table can take merges.
    pub(crate) fn has_operator(&self) -> bool {
        self.operator.is_some()
    }

    /// The value of `key`: `operands` (newest first) applied to `base`.
    pub(crate) fn full_merge(
        &self,
        key: &[u8],
        base: Option<&[u8]>,
        operands: &[Bytes],
    ) -> Result<Bytes> {
        let Some(op) = &self.operator else {
            return NoMergeOperatorSnafu {
                table: self.table.clone(),
                key: escape(key),
                recorded: self
                    .recorded
                    .clone()
                    .unwrap_or_else(|| "no operator".to_owned()),
            }
            .fail();
        };
        self.reads_merged.fetch_add(1, Ordering::Relaxed);
        let oldest_first: Vec<&[u8]> = operands.iter().rev().map(|b| &b[..]).collect();
        match op.full_merge(key, base, &oldest_first) {
            Some(v) => Ok(Bytes::from(v)),
            None => MergeFailedSnafu {
                table: self.table.clone(),
                operator: op.name().to_owned(),
                key: escape(key),
            }
            .fail(),
        }
    }
}
