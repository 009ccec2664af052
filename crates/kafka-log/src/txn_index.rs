//! The transaction index (`.txnindex`) of a segment: Kafka's
//! `TransactionIndex` of `AbortedTxn` entries.
//!
//! A segment's `.txnindex` lists the transactions whose ABORT marker was
//! written in that segment (a transaction's data may start in an earlier
//! segment). A `read_committed` reader uses it to skip aborted data; the
//! log cleaner uses it to know which data batches it may drop. The file has
//! no header and no checksum, and exists only when it has entries (Kafka
//! creates it on the first abort). Each entry is 34 bytes, big-endian:
//!
//! ```text
//! off size field
//!   0  2  version           i16 = 0
//!   2  8  producerId        i64
//!  10  8  firstOffset       i64  the transaction's first data offset
//!  18  8  lastOffset        i64  the offset of its ABORT marker
//!  26  8  lastStableOffset  i64  the log's last stable offset once it was aborted
//! ```
//!
//! Entries follow each other by strictly growing `lastOffset`. The index is
//! derived from the `.log` (the markers, and the producers' first offsets),
//! so one that is malformed is rebuilt by replaying the log, as Kafka's
//! `LogLoader` recovers a segment whose transaction index fails its sanity
//! check.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lithify_vfs::{FileSystem, WritableFile, parent_dir};
use snafu::ResultExt as _;

use crate::coding::Reader;
use crate::error::{CorruptSnafu, InvalidArgumentSnafu, IoSnafu, Result};

/// Bytes per entry (`AbortedTxn.TOTAL_SIZE`).
pub const ABORTED_TXN_SIZE: usize = 34;

/// The only entry version (`AbortedTxn.CURRENT_VERSION`; frozen by the
/// format).
pub const ABORTED_TXN_VERSION: i16 = 0;

/// One aborted transaction (Kafka's `AbortedTxn`).
///
/// ```
/// use lithify_kafka_log::txn_index::AbortedTxn;
///
/// let txn = AbortedTxn { producer_id: 7, first_offset: 8, last_offset: 10, last_stable_offset: 11 };
/// let bytes = txn.encode();
/// assert_eq!(bytes.len(), 34);
/// assert_eq!(&bytes[..10], &[0, 0, 0, 0, 0, 0, 0, 0, 0, 7]);
/// assert_eq!(AbortedTxn::decode(&bytes), Ok(txn));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AbortedTxn {
    /// The producer of the transaction.
    pub producer_id: i64,
    /// Offset of its first data batch.
    pub first_offset: i64,
    /// Offset of its ABORT marker.
    pub last_offset: i64,
    /// The log's last stable offset once the transaction was aborted: the
    /// first offset of the earliest transaction of another producer still
    /// open then, or `last_offset + 1`.
    pub last_stable_offset: i64,
}

impl AbortedTxn {
    /// The 34-byte entry (version 0).
    pub fn encode(&self) -> [u8; ABORTED_TXN_SIZE] {
        let mut out = [0u8; ABORTED_TXN_SIZE];
        out[0..2].copy_from_slice(&ABORTED_TXN_VERSION.to_be_bytes());
        out[2..10].copy_from_slice(&self.producer_id.to_be_bytes());
        out[10..18].copy_from_slice(&self.first_offset.to_be_bytes());
        out[18..26].copy_from_slice(&self.last_offset.to_be_bytes());
        out[26..34].copy_from_slice(&self.last_stable_offset.to_be_bytes());
        out
    }

    /// Decodes one 34-byte entry, or says why it cannot be one (a version
    /// other than 0, a negative producer id or offset, a first offset
    /// after the last).
    pub fn decode(bytes: &[u8; ABORTED_TXN_SIZE]) -> Result<AbortedTxn, String> {
        let mut r = Reader::new(bytes);
        let field = |e: crate::coding::DecodeError| e.to_string();
        let version = r.i16().map_err(field)?;
        let txn = AbortedTxn {
            producer_id: r.i64().map_err(field)?,
            first_offset: r.i64().map_err(field)?,
            last_offset: r.i64().map_err(field)?,
            last_stable_offset: r.i64().map_err(field)?,
        };
        if version != ABORTED_TXN_VERSION {
            return Err(format!(
                "aborted transaction entry version {version} (only {ABORTED_TXN_VERSION} exists)"
            ));
        }
        if txn.producer_id < 0 || txn.first_offset < 0 || txn.last_stable_offset < 0 {
            return Err(format!(
                "aborted transaction entry {txn:?} has a negative producer id or offset"
            ));
        }
        if txn.first_offset > txn.last_offset {
            return Err(format!(
                "aborted transaction entry {txn:?} starts after its ABORT marker"
            ));
        }
        Ok(txn)
    }
}

/// The bytes of a `.txnindex` holding `entries`.
pub fn encode(entries: &[AbortedTxn]) -> Vec<u8> {
    entries.iter().flat_map(AbortedTxn::encode).collect()
}

/// Decodes a whole `.txnindex` of the segment at `base_offset`: whole
/// entries, each valid ([`AbortedTxn::decode`]), ending at or after the
/// segment's base (Kafka's `sanityCheck`), by strictly growing last offset
/// (what Kafka's `append` enforces). Anything else is a corruption error
/// naming `path` and the entry's byte offset. Kafka ignores a trailing
/// partial entry and stops at a version other than 0; both make the index
/// malformed here, and a malformed index is rebuilt from the `.log`.
///
/// ```
/// use std::path::Path;
/// use lithify_kafka_log::txn_index::{self, AbortedTxn};
///
/// let t = AbortedTxn { producer_id: 1, first_offset: 100, last_offset: 103, last_stable_offset: 104 };
/// let path = Path::new("/d/t-0/00000000000000000100.txnindex");
/// assert_eq!(txn_index::decode(path, 100, &txn_index::encode(&[t])).unwrap(), [t]);
/// let err = txn_index::decode(path, 200, &t.encode()).unwrap_err();
/// assert!(err.to_string().contains("below the segment's base offset 200"), "{err}");
/// ```
pub fn decode(path: &Path, base_offset: i64, bytes: &[u8]) -> Result<Vec<AbortedTxn>> {
    let corrupt = |offset: usize, message: String| {
        CorruptSnafu {
            path,
            offset: offset as u64,
            message,
        }
        .fail()
    };
    if !bytes.len().is_multiple_of(ABORTED_TXN_SIZE) {
        return corrupt(
            bytes.len() - bytes.len() % ABORTED_TXN_SIZE,
            format!(
                "transaction index size {} is not a multiple of {ABORTED_TXN_SIZE}",
                bytes.len()
            ),
        );
    }
    let mut out: Vec<AbortedTxn> = Vec::with_capacity(bytes.len() / ABORTED_TXN_SIZE);
    for (i, chunk) in bytes.chunks_exact(ABORTED_TXN_SIZE).enumerate() {
        let at = i * ABORTED_TXN_SIZE;
        let mut entry = [0u8; ABORTED_TXN_SIZE];
        entry.copy_from_slice(chunk);
        let txn = match AbortedTxn::decode(&entry) {
            Ok(t) => t,
            Err(message) => return corrupt(at, message),
        };
        if txn.last_offset < base_offset {
            return corrupt(
                at,
                format!(
                    "aborted transaction {txn:?} ends below the segment's base offset {base_offset}"
                ),
            );
        }
        if let Some(prev) = out.last()
            && prev.last_offset >= txn.last_offset
        {
            return corrupt(
                at,
                format!(
                    "aborted transaction {txn:?} does not end after the previous one (at {})",
                    prev.last_offset
                ),
            );
        }
        out.push(txn);
    }
    Ok(out)
}

/// What [`TransactionIndex::collect`] found: the aborted transactions
/// overlapping a range, and whether later segments can hold more (Kafka's
/// `TxnIndexSearchResult`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TxnSearch {
    pub(crate) found: Vec<AbortedTxn>,
    pub(crate) complete: bool,
}

/// Kafka's `collectAbortedTxns` over `entries`: those ending at or after
/// `fetch_offset` and starting below `upper_bound`; complete once an entry's
/// last stable offset reaches `upper_bound` (no transaction aborted later
/// can start below it).
pub(crate) fn collect(entries: &[AbortedTxn], fetch_offset: i64, upper_bound: i64) -> TxnSearch {
    let mut found = Vec::new();
    for t in entries {
        if t.last_offset >= fetch_offset && t.first_offset < upper_bound {
            found.push(*t);
        }
        if t.last_stable_offset >= upper_bound {
            return TxnSearch {
                found,
                complete: true,
            };
        }
    }
    TxnSearch {
        found,
        complete: false,
    }
}

/// A segment's transaction index: its entries in memory and its file,
/// created on the first entry (the file of an index without entries does
/// not exist).
#[derive(Debug)]
pub(crate) struct TransactionIndex {
    fs: Arc<dyn FileSystem>,
    path: PathBuf,
    entries: Vec<AbortedTxn>,
    writer: Option<Box<dyn WritableFile>>,
    /// Entries appended since the file was last synced.
    unsynced: bool,
}

impl TransactionIndex {
    /// An empty index for `path` (nothing on disk).
    pub(crate) fn new(fs: Arc<dyn FileSystem>, path: PathBuf) -> Self {
        TransactionIndex {
            fs,
            path,
            entries: Vec::new(),
            writer: None,
            unsynced: false,
        }
    }

    /// The index at `path` of the segment at `base_offset`: empty when the
    /// file does not exist, a corruption error when it is malformed
    /// ([`decode`]).
    pub(crate) fn load(fs: Arc<dyn FileSystem>, path: PathBuf, base_offset: i64) -> Result<Self> {
        let entries = match lithify_vfs::read_file(&*fs, &path) {
            Ok(bytes) => decode(&path, base_offset, &bytes)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => {
                return Err(e).context(IoSnafu {
                    action: "read",
                    path,
                });
            }
        };
        Ok(TransactionIndex {
            fs,
            path,
            entries,
            writer: None,
            unsynced: false,
        })
    }

    /// The file's path (whether or not it exists).
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The entries, in order.
    pub(crate) fn entries(&self) -> &[AbortedTxn] {
        &self.entries
    }

    /// Appends `txn` (Kafka's `append`): its last offset must be above the
    /// last entry's. The first entry creates the file and syncs the
    /// directory, so that a flush of the segment makes the entry durable.
    pub(crate) fn append(&mut self, txn: AbortedTxn) -> Result<()> {
        if let Some(last) = self.entries.last()
            && last.last_offset >= txn.last_offset
        {
            return InvalidArgumentSnafu {
                message: format!(
                    "aborted transaction {txn:?} does not end after the last entry of {} (at {})",
                    self.path.display(),
                    last.last_offset
                ),
            }
            .fail();
        }
        if self.writer.is_none() {
            let ctx = |action| IoSnafu {
                action,
                path: self.path.clone(),
            };
            let created = !self.fs.exists(&self.path);
            let w = if created {
                self.fs.create(&self.path).context(ctx("create"))?
            } else {
                self.fs.open_append(&self.path).context(ctx("open"))?
            };
            self.writer = Some(w);
            if created {
                self.fs
                    .sync_dir(parent_dir(&self.path))
                    .context(ctx("sync the directory of"))?;
            }
        }
        if let Some(w) = &mut self.writer {
            w.append(&txn.encode()).context(IoSnafu {
                action: "append to",
                path: &self.path,
            })?;
        }
        self.entries.push(txn);
        self.unsynced = true;
        Ok(())
    }

    /// Replaces every entry with `entries` (a rebuild): the file is
    /// rewritten and synced, or removed when there are none.
    pub(crate) fn rewrite(&mut self, entries: Vec<AbortedTxn>) -> Result<()> {
        self.writer = None;
        self.unsynced = false;
        if entries.is_empty() {
            self.delete()?;
        } else {
            let ctx = |action| IoSnafu {
                action,
                path: self.path.clone(),
            };
            let mut f = self.fs.create(&self.path).context(ctx("create"))?;
            f.append(&encode(&entries)).context(ctx("write"))?;
            f.sync_data().context(ctx("sync"))?;
        }
        self.entries = entries;
        Ok(())
    }

    /// Makes the appended entries durable.
    pub(crate) fn sync(&mut self) -> Result<()> {
        if let (Some(w), true) = (&mut self.writer, self.unsynced) {
            w.sync_data().context(IoSnafu {
                action: "sync",
                path: &self.path,
            })?;
        }
        self.unsynced = false;
        Ok(())
    }

    /// Syncs and closes the file (the segment became inactive).
    pub(crate) fn close(&mut self) -> Result<()> {
        self.sync()?;
        self.writer = None;
        Ok(())
    }

    /// Renames the file (if it exists) to `to`.
    pub(crate) fn rename(&mut self, to: PathBuf) -> Result<()> {
        crate::index::rename_if_exists(&*self.fs, &mut self.path, to)
    }

    /// Removes the file, if it exists.
    pub(crate) fn delete(&mut self) -> Result<()> {
        self.writer = None;
        crate::index::remove_if_exists(&*self.fs, &self.path)
    }
}

#[cfg(test)]
mod tests {
    use lithify_vfs::MemFs;

    use super::*;

    fn txn(p: i64, first: i64, last: i64, lso: i64) -> AbortedTxn {
        AbortedTxn {
            producer_id: p,
            first_offset: first,
            last_offset: last,
            last_stable_offset: lso,
        }
    }

    #[test]
    fn append_rewrite_load_and_collect() {
        let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
        fs.create_dir_all(Path::new("/d")).unwrap();
        let path = PathBuf::from("/d/00000000000000000010.txnindex");
        let mut idx = TransactionIndex::new(fs.clone(), path.clone());
        assert!(!fs.exists(&path), "no entry, no file");
        idx.append(txn(1, 8, 10, 11)).unwrap();
        idx.append(txn(2, 11, 16, 17)).unwrap();
        assert!(idx.append(txn(3, 12, 16, 17)).is_err(), "last offsets grow");
        idx.sync().unwrap();
        let loaded = TransactionIndex::load(fs.clone(), path.clone(), 10).unwrap();
        assert_eq!(loaded.entries(), idx.entries());
        assert_eq!(
            lithify_vfs::read_file(&*fs, &path).unwrap().len(),
            2 * ABORTED_TXN_SIZE
        );
        // Kafka's collectAbortedTxns: overlap, and complete at an LSO.
        let e = idx.entries();
        let search = |found: Vec<AbortedTxn>, complete| TxnSearch { found, complete };
        assert_eq!(collect(e, 0, 9), search(vec![txn(1, 8, 10, 11)], true));
        assert_eq!(collect(e, 11, 100), search(vec![txn(2, 11, 16, 17)], false));
        assert_eq!(collect(e, 0, 17), search(e.to_vec(), true));
        idx.rewrite(Vec::new()).unwrap();
        assert!(!fs.exists(&path), "an empty index has no file");
        assert!(
            TransactionIndex::load(fs, path, 10)
                .unwrap()
                .entries()
                .is_empty()
        );
    }

    #[test]
    fn malformed_indexes_are_refused_with_the_entry_offset() {
        let path = Path::new("/d/00000000000000000100.txnindex");
        let good = txn(5, 100, 104, 105).encode();
        let mut bad_version = good;
        bad_version[1] = 1;
        let cases: [(Vec<u8>, &str, u64); 5] = [
            (good[..33].to_vec(), "not a multiple of 34", 0),
            (bad_version.to_vec(), "version 1", 0),
            (txn(5, 10, 20, 21).encode().to_vec(), "below the segment", 0),
            (
                [good, good].concat(),
                "does not end after the previous one",
                34,
            ),
            (txn(5, 110, 104, 105).encode().to_vec(), "starts after", 0),
        ];
        for (bytes, message, offset) in cases {
            let err = decode(path, 100, &bytes).unwrap_err();
            assert!(err.is_corruption(), "{err}");
            assert_eq!(err.file_offset(), Some((path, offset)), "{err}");
            assert!(err.to_string().contains(message), "{err}");
        }
    }
}
