//! The transaction index sanity check (of [`verify`](crate::verify),
//! `lithify log dump --transaction-index-sanity-check` and `lithify
//! stress log --transactional`): a log directory's `.txnindex` files
//! against its markers, read-only. The log cleaner refuses a round that
//! meets an ABORT marker no entry lists; this finds it without a round.
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

use lithify_vfs::FileSystem;
use snafu::ResultExt as _;

use crate::error::{IoSnafu, Result};
use crate::file_batches::FileBatches;
use crate::naming::{self, FileKind, Suffix};
use crate::record::ControlRecordType;
use crate::txn_index::{self, AbortedTxn};
use crate::verify::Finding;

/// What the check found in one log directory.
#[derive(Debug, Default)]
pub struct TxnCheck {
    /// ABORT markers whose transaction still has data.
    pub aborted_with_data: usize,
    /// `.txnindex` entries read.
    pub entries: usize,
    /// Each disagreement, naming the `.txnindex` (the file) and the marker.
    pub problems: Vec<Finding>,
}

/// Checks the `.txnindex` files of the log directory `dir`. An `Err` is
/// an I/O failure, or a `.log` or `.txnindex` that cannot be read at all
/// (naming the file and byte offset).
///
/// ```
/// use std::path::Path;
/// use std::sync::Arc;
/// use lithify_vfs::MemFs;
/// use lithify_kafka_log::{Log, LogConfig, Producer, SimpleRecord, txn_check};
/// use lithify_kafka_log::record::TransactionResult;
///
/// let fs = Arc::new(MemFs::new());
/// let dir = Path::new("/k/t-0");
/// let mut log = Log::open(fs.clone(), dir, LogConfig::default()).unwrap();
/// let p = Producer { producer_id: 7, producer_epoch: 0, base_sequence: 0, transactional: true };
/// log.append_as(&p, &[SimpleRecord::new(1, "k", "aborted")]).unwrap();
/// log.append_end_txn_marker(7, 0, TransactionResult::Abort, 0).unwrap();
/// log.close().unwrap();
/// let check = txn_check::check_dir(&*fs, dir).unwrap();
/// assert_eq!((check.entries, check.aborted_with_data), (1, 1));
/// assert!(check.problems.is_empty());
/// ```
pub fn check_dir(fs: &dyn FileSystem, dir: &Path) -> Result<TxnCheck> {
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
            Ok(bytes) => txn_index::decode(&index_path, base, &bytes)?,
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
            let batch = batch?;
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
            match batch.control_type()? {
                Some(ControlRecordType::Abort) => {
                    let data = open.remove(&pid);
                    match (data, entry) {
                        (Some(first), Some(t)) if t.producer_id == pid && t.first_offset <= first => {
                            out.aborted_with_data += 1;
                        }
                        (Some(first), Some(t)) => out.problems.push(Finding {
                            file: index_path.clone(),
                            offset: None,
                            message: format!(
                            "the entry {t:?} does not cover the ABORT marker of producer {pid} at offset {at}, whose transaction has data from offset {first}"
                        ),
                        }),
                        (Some(first), None) => out.problems.push(Finding {
                            file: index_path.clone(),
                            offset: None,
                            message: format!(
                            "the ABORT marker of producer {pid} at offset {at} (data from offset {first}) is not listed"
                        ),
                        }),
                        (None, Some(t)) if t.producer_id != pid => out.problems.push(Finding {
                            file: index_path.clone(),
                            offset: None,
                            message: format!(
                            "the entry {t:?} names producer {}, but the ABORT marker at offset {at} is producer {pid}'s",
                            t.producer_id
                        ),
                        }),
                        (None, _) => {}
                    }
                }
                Some(ControlRecordType::Commit) => {
                    open.remove(&pid);
                    if let Some(t) = entry {
                        out.problems.push(Finding {
                            file: index_path.clone(),
                            offset: None,
                            message: format!(
                                "the entry {t:?} lists the COMMIT marker at offset {at} as aborted"
                            ),
                        });
                    }
                }
                _ => {
                    if let Some(t) = entry {
                        out.problems.push(Finding {
                            file: index_path.clone(),
                            offset: None,
                            message: format!(
                            "the entry {t:?} ends at offset {at}, which is no end transaction marker"
                        ),
                        });
                    }
                }
            }
        }
        for t in listed.values() {
            out.problems.push(Finding {
                file: index_path.clone(),
                offset: None,
                message: format!(
                    "the entry {t:?} ends at offset {}, where its segment holds no marker",
                    t.last_offset
                ),
            });
        }
    }
    Ok(out)
}
