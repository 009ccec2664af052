//! Replaying the WALs into memtables, and what the replay dropped.
//!
//! Every WAL at or above the minimum log number is read in order, in the
//! database's recovery mode, and each batch applied only whole and only if
//! it follows the sequence numbers before it. A WAL is replayed only if
//! its first record (the predecessor note) names the WAL before it and the
//! last sequence number replayed from it, so after a crash what survives
//! is a prefix of the writes in sequence order.
//!
//! What may be dropped, and what is refused (each drop is reported):
//!
//! * a WAL the MANIFEST records as synced through `S` bytes (a
//!   `WalAddition`) must exist, hold at least `S` bytes and read intact
//!   below `S`: only bytes past the last sync may be lost in a crash.
//!   Otherwise the open fails with the file and offset;
//! * a WAL whose predecessor note names a WAL that should have been
//!   replayed but is not in the directory fails the open (a WAL was
//!   deleted or lost);
//! * past the synced size, damage is handled by the recovery mode: the
//!   tail (point-in-time, tolerate-tail) or each damaged record (skip) is
//!   dropped; point-in-time recovery also drops every later WAL, and so
//!   does a predecessor note that does not match (its predecessor lost
//!   its tail). Absolute consistency refuses any damage.
//!
//! Skip mode (`SkipAnyCorruptedRecords`) is the salvage mode: it refuses
//! nothing, and reports everything it drops.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc as StdArc;

use lithify_base::sync::Arc;
use lithify_base::{Id, MAX_SEQNO, SeqNo, ValueKind};
use lithify_compaction::CompactionStatsTable;
use lithify_version::{FileMetadata, TableId, VersionSet};
use lithify_vfs::FileSystem;
use lithify_wal::{DroppedRange, LogEnd, Reader, RecoveryMode};
use parking_lot::Mutex;
use snafu::ResultExt;

use crate::batch::{BatchEntry, DecodedBatch, WalRecord};
use crate::error::{IoSnafu, MemtableSnafu, Result, WalRecordSnafu};
use crate::flush::flush_memtables;
use crate::options::Options;
use crate::recovery::DroppedBytes;
use crate::sst_files::SstFiles;
use crate::state::table::{TableState, new_memtable};
use crate::wal::log_path;
use lithify_compaction::OutputFactory;
use lithify_memtable::MemTable;

/// A table being recovered.
pub(super) struct Replay {
    pub(super) state: StdArc<TableState>,
    pub(super) log_number: u64,
    pub(super) mem: Arc<MemTable>,
    /// Memtables that filled during a read-only replay (they cannot be
    /// written to L0), oldest first.
    pub(super) imm: Vec<Arc<MemTable>>,
    /// L0 files written by a read-write replay.
    pub(super) files: Vec<FileMetadata>,
    /// The blob files their separated values went to.
    pub(super) blob_files: Vec<lithify_version::BlobFileMetadata>,
    /// The recovery flushes, recorded at L0.
    pub(super) stats: CompactionStatsTable,
}

/// What the replay found.
pub(super) struct Replayed {
    /// The largest sequence number replayed.
    pub(super) last_seq: SeqNo,
    /// WALs read (fully or in part), ascending.
    pub(super) wals_read: Vec<u64>,
    /// Each WAL read and its size when it was read.
    pub(super) wal_sizes: Vec<(u64, u64)>,
    /// Byte ranges dropped; `kept` is filled in when the files move.
    pub(super) dropped: Vec<DroppedBytes>,
}

/// The replay's fixed inputs.
pub(super) struct WalReplay<'a> {
    pub(super) fs: &'a dyn FileSystem,
    pub(super) dir: &'a Path,
    pub(super) options: &'a Options,
    pub(super) opener: &'a SstFiles,
    pub(super) versions: &'a VersionSet,
    /// Memtables that fill stay in memory instead of going to L0.
    pub(super) read_only: bool,
    /// The MANIFEST's name, for messages.
    pub(super) manifest: String,
    /// The database's and this open's identity, for the tables recovery
    /// flushes write.
    pub(super) identity: (Id, Id),
}

/// Why the replay stopped reading WALs: everything after is dropped.
struct Stop {
    why: String,
}

impl WalReplay<'_> {
    /// Replays `logs` (ascending, every WAL at or above `min_log`).
    pub(super) fn run(
        &self,
        logs: &[u64],
        min_log: u64,
        tables: &mut BTreeMap<TableId, Replay>,
    ) -> Result<Replayed> {
        let mode = self.options.wal_recovery_mode;
        let salvage = mode == RecoveryMode::SkipAnyCorruptedRecords;
        let synced = self.versions.synced_wals();
        let mut out = Replayed {
            last_seq: 0,
            wals_read: Vec::new(),
            wal_sizes: Vec::new(),
            dropped: Vec::new(),
        };
        // RocksDB's `WalSet::CheckWals`: a WAL known synced must be there.
        let present: BTreeSet<u64> = logs.iter().copied().collect();
        for (&number, &size) in &synced {
            if present.contains(&number) || number < min_log {
                continue;
            }
            let path = log_path(self.dir, number);
            if !salvage {
                return Err(self.corrupt(
                    &path,
                    0,
                    format!(
                        "the WAL is missing, but {} records it as synced through {size} bytes",
                        self.manifest
                    ),
                ));
            }
            out.dropped.push(DroppedBytes {
                file: path,
                offset: 0,
                len: size,
                reason: format!(
                    "the WAL is missing ({} records {size} synced bytes)",
                    self.manifest
                ),
                kept: None,
            });
        }
        // A table's log number names the WAL holding its unflushed writes;
        // the edit that set it was made after the WAL's directory entry was
        // durable, so a missing one was lost.
        let mut missing = BTreeSet::new();
        for t in tables.values() {
            if t.log_number > 0 && !present.contains(&t.log_number) {
                let path = log_path(self.dir, t.log_number);
                if !salvage {
                    return Err(self.corrupt(
                        &path,
                        0,
                        format!(
                            "the WAL is missing, but {} names it as the log number of table {:?} (it holds the writes not yet flushed)",
                            self.manifest, t.state.name
                        ),
                    ));
                }
                // Salvaging (a writer taking over on a machine without the
                // previous one's WALs, say): reported, not silent. Its size
                // is unknown; it may have held nothing.
                if missing.insert(t.log_number) && !synced.contains_key(&t.log_number) {
                    out.dropped.push(DroppedBytes {
                        file: path,
                        offset: 0,
                        len: 0,
                        reason: format!(
                            "the WAL is missing ({} names it as the log number of table {:?}): the writes it held, not yet flushed, are lost (how many is unknown)",
                            self.manifest, t.state.name
                        ),
                        kept: None,
                    });
                }
            }
        }
        // (number, last sequence replayed from it)
        let mut prev: Option<(u64, SeqNo)> = None;
        let mut stop: Option<Stop> = None;
        for &number in logs {
            let path = log_path(self.dir, number);
            let file_len = self.fs.file_size(&path).context(IoSnafu {
                op: "reading the size of WAL",
                path: path.clone(),
            })?;
            if let Some(s) = &stop {
                if file_len > 0 {
                    out.dropped.push(DroppedBytes {
                        file: path,
                        offset: 0,
                        len: file_len,
                        reason: format!("not replayed: {}", s.why),
                        kept: None,
                    });
                }
                continue;
            }
            let synced_size = synced.get(&number).copied();
            if let Some(size) = synced_size
                && file_len < size
                && !salvage
            {
                return Err(self.corrupt(
                    &path,
                    file_len,
                    format!(
                        "the WAL is cut short: {} records it as synced through {size} bytes, the file ends at offset {file_len}",
                        self.manifest
                    ),
                ));
            }
            out.wals_read.push(number);
            out.wal_sizes.push((number, file_len));
            if file_len == 0 {
                // Not even the header: a power cut right after the WAL was
                // created leaves this, and so does damage; say so.
                out.dropped.push(DroppedBytes {
                    file: path.clone(),
                    offset: 0,
                    len: 0,
                    reason: "the WAL is empty: not even its header reached the disk (a power cut right after it was created, or damage)".to_owned(),
                    kept: None,
                });
            }
            let read = self.replay_one(number, &path, file_len, min_log, prev, tables, &mut out)?;
            if read.records_end == Some(0) && file_len > 0 {
                // Zeros only: the file was sized, then the power cut before
                // its header reached the disk (or it was damaged); say so,
                // as for an empty WAL.
                out.dropped.push(DroppedBytes {
                    file: path.clone(),
                    offset: 0,
                    len: 0,
                    reason: format!("the WAL holds {file_len} zero bytes and nothing else: not even its header reached the disk (a power cut right after it was created, or damage)"),
                    kept: None,
                });
            }
            if let Some(end) = read.records_end
                && let Some(size) = out.wal_sizes.last_mut()
            {
                // What a copy of this open needs: the records, not the
                // zeros or the older log's bytes after them.
                size.1 = end.min(size.1);
            }
            // Damage below the synced size is not a crash's doing, and
            // neither is an end of the records there.
            if let Some(size) = synced_size
                && !salvage
                && let Some(end) = read.records_end
                && end < size
            {
                return Err(self.corrupt(
                    &path,
                    end,
                    format!(
                        "the WAL's records end at offset {end} (only zeros, or an older log's bytes, follow), below the {size} bytes {} records as synced (only bytes past the last sync may be lost)",
                        self.manifest
                    ),
                ));
            }
            if let Some(size) = synced_size
                && !salvage
                && let Some(d) = out
                    .dropped
                    .iter()
                    .find(|d| d.file == path && d.offset < size)
            {
                return Err(self.corrupt(
                    &path,
                    d.offset,
                    format!(
                        "{}, below the {size} bytes {} records as synced (only bytes past the last sync may be lost)",
                        d.reason, self.manifest
                    ),
                ));
            }
            out.last_seq = out.last_seq.max(read.last_seq);
            prev = Some((number, read.last_in_log));
            stop = read.stop;
        }
        Ok(out)
    }

    fn corrupt(&self, path: &Path, offset: u64, message: String) -> crate::Error {
        WalRecordSnafu {
            path: path.to_path_buf(),
            offset,
            message,
        }
        .build()
    }

    /// Why a WAL whose intact header has format `version` and names
    /// `owner` is not this database's, when its MANIFEST records the
    /// database's identity: the owner is another database, or there is
    /// none in a header that predates owners (every WAL this database
    /// still needs was written after it recorded its identity, so it names
    /// it). A database whose MANIFEST records no identity yet cannot tell:
    /// `None`. So is a damaged header or `Identity` fragment: reading
    /// reports that as damage.
    fn foreign_owner(&self, version: Option<u32>, owner: Option<Id>) -> Option<String> {
        if !self.versions.db_id_recorded() {
            return None;
        }
        let db = self.versions.db_id();
        match (owner, version) {
            (Some(owner), _) if owner != db => Some(format!(
                "the WAL belongs to another database: its header names database {owner}, {} records this one as {db} (a file copied in from elsewhere?)",
                self.manifest
            )),
            (None, Some(v)) if v < lithify_wal::format::FORMAT_VERSION_OWNED => Some(format!(
                "the WAL is not this database's: its header (format {v}) names no database, but {} records this one as {db} and every WAL it wrote since names it (a file copied in from elsewhere?)",
                self.manifest
            )),
            _ => None,
        }
    }

    /// Replays WAL `number`; damage it drops goes to `out.dropped`.
    #[allow(clippy::too_many_arguments)]
    fn replay_one(
        &self,
        number: u64,
        path: &Path,
        file_len: u64,
        min_log: u64,
        prev: Option<(u64, SeqNo)>,
        tables: &mut BTreeMap<TableId, Replay>,
        out: &mut Replayed,
    ) -> Result<OneLog> {
        let mode = self.options.wal_recovery_mode;
        let file = self.fs.open(path).context(IoSnafu {
            op: "opening WAL",
            path: path.to_path_buf(),
        })?;
        let ranges: StdArc<Mutex<Vec<DroppedRange>>> = StdArc::default();
        let sink = StdArc::clone(&ranges);
        let mut reader = Reader::new(file, path, number)?
            .with_mode(mode)
            .with_reporter(move |r: &DroppedRange| sink.lock().push(*r));
        let version = reader.format_version()?;
        if let Some(why) = self.foreign_owner(version, reader.owner()?) {
            if mode != RecoveryMode::SkipAnyCorruptedRecords {
                return Err(self.corrupt(path, 0, why));
            }
            out.dropped.push(DroppedBytes {
                file: path.to_path_buf(),
                offset: 0,
                len: file_len,
                reason: format!("not replayed: {why}"),
                kept: None,
            });
            return Ok(OneLog {
                last_seq: out.last_seq,
                last_in_log: 0,
                stop: None,
                records_end: None,
            });
        }
        let mut first = true;
        let mut last_in_log: SeqNo = 0;
        let mut max_seq = out.last_seq;
        // A record the reader returned intact but recovery cannot apply.
        let mut bad_record: Option<(u64, usize, String)> = None;
        let mut stop: Option<Stop> = None;
        loop {
            let record = match reader.read_record() {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(e) => return Err(e.into()),
            };
            let offset = record.offset;
            let len = record.payload.len();
            let is_first = std::mem::replace(&mut first, false);
            let problem = match WalRecord::decode(record.payload) {
                Err(message) => Some(message),
                Ok(WalRecord::Predecessor(p)) => {
                    let consistent = is_first
                        && match prev {
                            Some((n, last)) => p.log_number == n && p.last_sequence == last,
                            None => p.log_number < min_log,
                        };
                    if !consistent && mode != RecoveryMode::SkipAnyCorruptedRecords {
                        let missing = match prev {
                            Some((n, _)) => p.log_number != n,
                            None => true,
                        };
                        if missing || mode == RecoveryMode::AbsoluteConsistency {
                            let what = if missing {
                                format!(
                                    "WAL {} is missing: this WAL continues it (from sequence {}), and {} needs every WAL from {min_log} on",
                                    p.log_number,
                                    p.last_sequence + 1,
                                    self.manifest
                                )
                            } else {
                                format!(
                                    "log {} lost records before sequence {}",
                                    p.log_number, p.last_sequence
                                )
                            };
                            return Err(self.corrupt(path, offset, what));
                        }
                        let (n, last) = prev.unwrap_or_default();
                        let why = format!(
                            "WAL {number} continues WAL {n} after sequence {}, but WAL {n} ends at sequence {last} (its tail was lost)",
                            p.last_sequence
                        );
                        out.dropped.push(DroppedBytes {
                            file: path.to_path_buf(),
                            offset: 0,
                            len: file_len,
                            reason: why.clone(),
                            kept: None,
                        });
                        stop = Some(Stop { why });
                        break;
                    }
                    None
                }
                Ok(WalRecord::Batch(b)) => match check_batch(&b, max_seq, tables) {
                    Err(message) => Some(message),
                    Ok(entries) => {
                        self.apply(&b, entries, number, tables)?;
                        let end = b.sequence + u64::from(b.count) - 1;
                        if b.count > 0 {
                            max_seq = max_seq.max(end);
                            last_in_log = last_in_log.max(end);
                        }
                        None
                    }
                },
            };
            if let Some(message) = problem {
                match mode {
                    RecoveryMode::SkipAnyCorruptedRecords => out.dropped.push(DroppedBytes {
                        file: path.to_path_buf(),
                        offset,
                        len: len as u64,
                        reason: format!("the record cannot be replayed: {message}"),
                        kept: None,
                    }),
                    RecoveryMode::PointInTimeRecovery => {
                        bad_record = Some((offset, len, message));
                        break;
                    }
                    _ => return Err(self.corrupt(path, offset, message)),
                }
            }
        }
        let end = reader.end();
        for r in ranges.lock().iter() {
            let at_end = r.end() >= file_len;
            let what = match end {
                Some(LogEnd::Corruption { offset, .. }) if offset == r.offset => {
                    format!("{}, followed by intact records", r.reason)
                }
                _ if at_end && r.reason.is_torn_write() => {
                    format!("{} (a write cut short by a crash)", r.reason)
                }
                _ if at_end => format!("{} at the end of the file", r.reason),
                _ => r.reason.to_string(),
            };
            out.dropped.push(DroppedBytes {
                file: path.to_path_buf(),
                offset: r.offset,
                len: r.len,
                reason: what,
                kept: None,
            });
        }
        if let Some((offset, _, message)) = bad_record {
            out.dropped.push(DroppedBytes {
                file: path.to_path_buf(),
                offset,
                len: file_len.saturating_sub(offset),
                reason: format!("the record cannot be replayed: {message}"),
                kept: None,
            });
            stop = Some(Stop {
                why: format!(
                    "recovery stopped at the damaged record at offset {offset} of WAL {number}"
                ),
            });
        }
        // A hole ends the replay. A torn tail does not by itself: if it
        // cost records, the next WAL's predecessor note says so.
        if stop.is_none()
            && let Some(LogEnd::Corruption { offset, .. }) = end
        {
            stop = Some(Stop {
                why: format!("recovery stopped at the damage at offset {offset} of WAL {number}"),
            });
        }
        Ok(OneLog {
            last_seq: max_seq,
            last_in_log,
            stop,
            records_end: reader.records_end(),
        })
    }

    /// Applies a checked batch to the memtables, moving a memtable that
    /// fills to L0 (or, read-only, aside).
    fn apply(
        &self,
        b: &DecodedBatch<'_>,
        entries: Vec<BatchEntry<'_>>,
        number: u64,
        tables: &mut BTreeMap<TableId, Replay>,
    ) -> Result<()> {
        let mut touched: Vec<TableId> = Vec::new();
        for (seq, e) in (b.sequence..).zip(entries) {
            if let Some(t) = tables.get_mut(&e.table)
                && number >= t.log_number
            {
                t.mem
                    .add(seq, e.kind, e.key, e.value)
                    .context(MemtableSnafu)?;
                if !touched.contains(&e.table) {
                    touched.push(e.table);
                }
            }
        }
        for id in touched {
            let t = tables.get_mut(&id).expect("touched tables exist");
            if t.state.is_full(&t.mem) {
                if self.read_only {
                    t.mem.mark_immutable();
                    let full = std::mem::replace(
                        &mut t.mem,
                        Arc::new(new_memtable(&t.state.icmp, &t.state.options)),
                    );
                    t.imm.push(full);
                } else {
                    flush_replayed(
                        self.fs,
                        self.dir,
                        self.opener,
                        self.versions,
                        self.identity,
                        t,
                    )?;
                }
            }
        }
        Ok(())
    }
}

/// What one WAL gave.
struct OneLog {
    last_seq: SeqNo,
    last_in_log: SeqNo,
    stop: Option<Stop>,
    /// Where the WAL's records end when that is before the end of its
    /// file: zeros after them, or a recycled file's stale tail.
    records_end: Option<u64>,
}

/// The entries of a replayed batch, if the batch can be applied whole:
/// every record decodes, its sequence numbers follow everything replayed
/// before and stay below `MAX_SEQNO`, and its range deletions are not
/// empty. Anything else is damage a valid checksum did not catch.
fn check_batch<'a>(
    b: &DecodedBatch<'a>,
    replayed: SeqNo,
    tables: &BTreeMap<TableId, Replay>,
) -> std::result::Result<Vec<BatchEntry<'a>>, String> {
    let count = u64::from(b.count);
    if b.sequence <= replayed
        || b.sequence
            .checked_add(count)
            .is_none_or(|end| end > MAX_SEQNO + 1)
    {
        return Err(format!(
            "batch of {count} records at sequence {} does not follow sequence {replayed}",
            b.sequence
        ));
    }
    let entries = b.iter().collect::<std::result::Result<Vec<_>, String>>()?;
    for e in &entries {
        if e.kind == ValueKind::RangeDelete
            && let Some(t) = tables.get(&e.table)
            && !t.state.icmp.compare_user(e.key, e.value).is_lt()
        {
            return Err("an empty range deletion".to_owned());
        }
    }
    Ok(entries)
}

/// Writes a recovered memtable to an L0 file and starts a fresh one.
pub(super) fn flush_replayed(
    fs: &dyn FileSystem,
    dir: &Path,
    opener: &SstFiles,
    versions: &VersionSet,
    identity: (Id, Id),
    r: &mut Replay,
) -> Result<()> {
    // A merge that fails here must not keep the database from opening,
    // whatever the operator's scope: its operands are written out as they
    // are, and only reads of that key fail.
    let mut options = (*r.state.options).clone();
    options.merge_operator = options.merge_operator.map(crate::merge::contained_failures);
    let factory = OutputFactory {
        fs,
        dir,
        numbers: versions,
        sst_options: opener.options.clone(),
        identity: Some(identity),
        blobs: crate::options::translate::blob_settings(
            &options.blob,
            r.state.id,
            0,
            &opener.blobs,
        ),
    };
    let flushed = flush_memtables(&factory, &options, std::slice::from_ref(&r.mem), &[])?;
    r.stats.record_flush(&flushed.stats);
    if let Some(f) = flushed.file {
        r.files.push(f);
    }
    r.blob_files.extend(flushed.blob_files);
    r.mem = Arc::new(new_memtable(&r.state.icmp, &r.state.options));
    Ok(())
}
