//! Finding the keys whose merge operands cannot be merged, without changing
//! anything: [`Table::verify_merges`] and [`Db::verify_merges`], the engine
//! half of `lithify check`.
//!
//! A merge that fails under the default failure scope
//! ([`MergeFailureScope::MustMerge`](lithify_base::MergeFailureScope)) is
//! contained: flushes and compactions keep that key's operands unmerged and
//! only reads of the key fail. Nothing else notices it, so a check walks
//! every key: one internal scan at a snapshot, and a point lookup of each
//! key whose newest visible version is a merge operand.

use bytes::Bytes;
use lithify_base::key::{trailer, unpack_trailer, user_key};
use lithify_base::{InternalIterator, ValueKind};

use crate::db::Db;
use crate::error::{Error, ReadSnafu, Result};
use crate::iter::build_merged;
use crate::options::ReadOptions;
use crate::table::Table;
use snafu::ResultExt as _;

/// A key whose value cannot be read because its merge operands do not
/// merge (found by [`Table::verify_merges`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct MergeFailure {
    /// The table's name.
    pub table: String,
    /// The key.
    pub key: Bytes,
    /// Why: the read's error, as a sentence.
    pub message: String,
    /// The database was opened without the merge operator the table
    /// records (the operands may be fine): not a failure of the operator.
    pub operator_missing: bool,
}

impl Table {
    /// Every key of the table whose read fails because its merge operands
    /// cannot be merged (the operator's `full_merge` returned `None`, or the
    /// database was opened without the operator its operands need), at the
    /// current state. Other read errors (a damaged block) are returned as
    /// the error.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use std::sync::Arc;
    /// use lithify_engine::{Db, MergeOperator, Options};
    ///
    /// /// Appends single digits; anything else cannot be merged.
    /// struct Digits;
    /// impl MergeOperator for Digits {
    ///     fn name(&self) -> &str { "digits" }
    ///     fn full_merge(&self, _: &[u8], base: Option<&[u8]>, ops: &[&[u8]]) -> Option<Vec<u8>> {
    ///         let mut v = base.unwrap_or_default().to_vec();
    ///         for op in ops {
    ///             if op.len() != 1 || !op[0].is_ascii_digit() { return None; }
    ///             v.extend_from_slice(op);
    ///         }
    ///         Some(v)
    ///     }
    /// }
    ///
    /// let options = Options::default()
    ///     .merge_operator(Some(Arc::new(Digits)));
    /// let db = Db::open(dir.path(), options).unwrap();
    /// db.merge(b"good", b"1").unwrap();
    /// db.merge(b"bad", b"x").unwrap();
    /// // Only the bad key's reads fail; a flush keeps its operand unmerged.
    /// assert!(db.get(b"bad").is_err());
    /// db.flush().unwrap();
    /// let failures = db.verify_merges().unwrap();
    /// assert_eq!(failures.len(), 1);
    /// assert_eq!(failures[0].key, &b"bad"[..]);
    /// assert_eq!(db.get(b"good").unwrap().unwrap(), &b"1"[..]);
    /// ```
    pub fn verify_merges(&self) -> Result<Vec<MergeFailure>> {
        let db = self.db()?;
        let snapshot = db.snapshots.acquire(db.visible());
        let at = snapshot.sequence_number();
        let sv = self.state.sv.get();
        let (mut iter, _) =
            build_merged(&sv, &db.opener, &self.state.icmp, at, None, None).context(ReadSnafu)?;
        let options = ReadOptions::at(&snapshot);
        let mut failures = Vec::new();
        // The user key whose newest visible version was already judged.
        let mut judged: Option<Vec<u8>> = None;
        iter.first().context(ReadSnafu)?;
        while iter.valid() {
            let ikey = iter.key();
            let ukey = user_key(ikey);
            let (seq, kind) = unpack_trailer(trailer(ikey));
            let seen = judged
                .as_deref()
                .is_some_and(|j| self.state.icmp.compare_user(j, ukey).is_eq());
            if seq <= at && !seen {
                judged = Some(ukey.to_vec());
                if kind == ValueKind::Merge as u8 {
                    let key = Bytes::copy_from_slice(ukey);
                    match self.get_opt(&key, &options) {
                        Ok(_) => {}
                        Err(e) if is_merge_failure(&e) => failures.push(MergeFailure {
                            table: self.state.name.clone(),
                            key,
                            message: e.to_string(),
                            operator_missing: matches!(e, Error::NoMergeOperator { .. }),
                        }),
                        Err(e) => return Err(e),
                    }
                }
            }
            iter.next().context(ReadSnafu)?;
        }
        Ok(failures)
    }
}

fn is_merge_failure(e: &Error) -> bool {
    matches!(e, Error::MergeFailed { .. } | Error::NoMergeOperator { .. })
}

impl Db {
    /// [`Table::verify_merges`] of every table, the default table first.
    pub fn verify_merges(&self) -> Result<Vec<MergeFailure>> {
        let mut failures = Vec::new();
        for name in self.table_names() {
            if let Some(table) = self.table(&name) {
                failures.extend(table.verify_merges()?);
            }
        }
        Ok(failures)
    }
}
