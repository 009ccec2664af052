//! The transaction index sanity check of `lithify log dump
//! --transaction-index-sanity-check` and of `lithify stress log
//! --transactional`: a log directory's `.txnindex` files against its
//! markers, read-only.
//!
//! Reading the segments in offset order, each producer's transactional
//! data since its last marker is its open transaction. Then:
//!
//! * an ABORT marker closing a transaction that still has data in the log
//!   must be listed in its segment's `.txnindex` (same producer, last
//!   offset the marker's), starting at or before that data (the cleaner
//!   keeps the original entry when it removes the first batches);
//! * every entry of a `.txnindex` must be an ABORT marker of its producer
//!   in that segment;
//! * a COMMIT marker must not be listed.
//!
//! An ABORT marker whose transaction has no data left may or may not be
//! listed (Kafka writes the entry; the cleaner drops it once the data is
//! gone). Entries are compared on producer and offsets, not on their last
//! stable offset, which a cleaned log no longer lets one recompute.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use lithify_kafka_log::FileBatches;
use lithify_kafka_log::naming::{self, FileKind, Suffix};
use lithify_kafka_log::record::ControlRecordType;
use lithify_kafka_log::txn_index::{self, AbortedTxn};
use lithify_vfs::FileSystem;
use snafu::ResultExt as _;

use crate::error::{IoSnafu, LogSnafu, Result};

/// What the check found in one log directory.
#[derive(Debug, Default)]
pub(crate) struct TxnCheck {
    /// ABORT markers whose transaction still has data.
    pub aborted_with_data: usize,
    /// `.txnindex` entries read.
    pub entries: usize,
    /// Each disagreement, as a sentence naming the file.
    pub problems: Vec<String>,
}

/// Checks the `.txnindex` files of the log directory `dir`.
pub(crate) fn check_dir(fs: &dyn FileSystem, dir: &Path) -> Result<TxnCheck> {
    let mut names = fs.list_dir(dir).context(IoSnafu {
        action: "list",
        path: dir,
    })?;
    names.sort();
    let bases: Vec<i64> = names
        .iter()
        .filter_map(|n| naming::parse(n))
        .filter(|p| p.kind == FileKind::Log && p.suffix == Suffix::None)
        .map(|p| p.base_offset)
        .collect();
    let mut out = TxnCheck::default();
    // Producer id -> first offset of its data since its last marker.
    let mut open: HashMap<i64, i64> = HashMap::new();
    for base in bases {
        let log_path = dir.join(naming::file_name(base, FileKind::Log, Suffix::None));
        let index_path = dir.join(naming::file_name(base, FileKind::TxnIndex, Suffix::None));
        let entries: Vec<AbortedTxn> = match lithify_vfs::read_file(fs, &index_path) {
            Ok(bytes) => txn_index::decode(&index_path, base, &bytes).context(LogSnafu)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => {
                return Err(e).context(IoSnafu {
                    action: "read",
                    path: &index_path,
                });
            }
        };
        out.entries += entries.len();
        let mut listed: BTreeMap<i64, AbortedTxn> =
            entries.iter().map(|t| (t.last_offset, *t)).collect();
        let file = fs.open(&log_path).context(IoSnafu {
            action: "open",
            path: &log_path,
        })?;
        let size = file.size().context(IoSnafu {
            action: "stat",
            path: &log_path,
        })?;
        for batch in FileBatches::new(file, Arc::new(log_path.clone()), 0, size) {
            let batch = batch.context(LogSnafu)?;
            if !batch.has_producer_id() {
                continue;
            }
            let pid = batch.producer_id();
            if !batch.is_control() {
                if batch.is_transactional() {
                    open.entry(pid).or_insert(batch.base_offset());
                }
                continue;
            }
            let at = batch.base_offset();
            let entry = listed.remove(&at);
            match batch.control_type().context(LogSnafu)? {
                Some(ControlRecordType::Abort) => {
                    let data = open.remove(&pid);
                    match (data, entry) {
                        (Some(first), Some(t)) if t.producer_id == pid && t.first_offset <= first => {
                            out.aborted_with_data += 1;
                        }
                        (Some(first), Some(t)) => out.problems.push(format!(
                            "{}: the entry {t:?} does not cover the ABORT marker of producer {pid} at offset {at}, whose transaction has data from offset {first}",
                            index_path.display()
                        )),
                        (Some(first), None) => out.problems.push(format!(
                            "{}: the ABORT marker of producer {pid} at offset {at} (data from offset {first}) is not listed",
                            index_path.display()
                        )),
                        (None, Some(t)) if t.producer_id != pid => out.problems.push(format!(
                            "{}: the entry {t:?} names producer {}, but the ABORT marker at offset {at} is producer {pid}'s",
                            index_path.display(),
                            t.producer_id
                        )),
                        (None, _) => {}
                    }
                }
                Some(ControlRecordType::Commit) => {
                    open.remove(&pid);
                    if let Some(t) = entry {
                        out.problems.push(format!(
                            "{}: the entry {t:?} lists the COMMIT marker at offset {at} as aborted",
                            index_path.display()
                        ));
                    }
                }
                _ => {
                    if let Some(t) = entry {
                        out.problems.push(format!(
                            "{}: the entry {t:?} ends at offset {at}, which is no end transaction marker",
                            index_path.display()
                        ));
                    }
                }
            }
        }
        for t in listed.values() {
            out.problems.push(format!(
                "{}: the entry {t:?} ends at offset {}, where its segment holds no marker",
                index_path.display(),
                t.last_offset
            ));
        }
    }
    Ok(out)
}
