//! MANIFEST files, CURRENT, replay and `manifest dump`.
//!
//! A MANIFEST (`MANIFEST-NNNNNN`) is a [`lithify_wal`] record log whose log
//! number is the file number. Each record is an **edit group** (see
//! [`crate::edit`]). The first record of every MANIFEST is a **snapshot**:
//! its first edit carries [`tag::MANIFEST_FORMAT`](crate::edit::tag) and the
//! global counters and adds the default table; one more edit per table adds
//! the table with its comparator, log number, files and cursors. Later
//! records are the groups passed to `log_and_apply`, in order.
//!
//! `CURRENT` holds `MANIFEST-NNNNNN\n`: the name of the live MANIFEST. It
//! is replaced only through [`lithify_vfs::write_file_atomic`] (write
//! `CURRENT.tmp`, fsync, rename over `CURRENT`, fsync the directory), after
//! the new MANIFEST is complete, synced and its directory entry synced — so
//! at every instant CURRENT names a complete MANIFEST.
//!
//! Recovery reads the MANIFEST with
//! [`RecoveryMode::TolerateCorruptedTailRecords`]: a torn last record
//! (an edit whose append was cut by a crash, hence never acknowledged: the
//! file ends inside it, or zeros stand where its bytes would be) is
//! dropped and reported ([`VersionSet::recovered_torn_tail`](crate::VersionSet::recovered_torn_tail));
//! any other damage — changed bytes at the end, damage followed by intact
//! records — is corruption at the offset of the damaged record, the same
//! offset [`dump`] prints.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use lithify_base::{BytewiseComparator, Comparator, Id, InternalKeyComparator, SeqNo};
use lithify_vfs::FileSystem;
use lithify_wal::{DroppedRange, LogEnd, Reader, RecoveryMode};
use snafu::ResultExt;

use crate::builder::VersionBuilder;
use crate::edit::{DEFAULT_TABLE, MANIFEST_FORMAT_VERSION, TableId, VersionEdit, decode_group};
use crate::error::{CorruptionSnafu, IoSnafu, Result};
use crate::filename::{CURRENT, manifest_file_name};
use crate::version::Version;

/// Reads `CURRENT` in `dir` and returns the number of the MANIFEST it names.
pub fn read_current(fs: &dyn FileSystem, dir: &Path) -> Result<u64> {
    let path = dir.join(CURRENT);
    let bytes = lithify_vfs::read_file(fs, &path).context(IoSnafu {
        op: "reading",
        path: path.clone(),
    })?;
    let corrupt = |message: String| {
        CorruptionSnafu {
            path: path.clone(),
            offset: 0u64,
            message,
        }
        .build()
    };
    let text =
        std::str::from_utf8(&bytes).map_err(|_| corrupt("CURRENT is not text".to_owned()))?;
    let name = text
        .strip_suffix('\n')
        .ok_or_else(|| corrupt(format!("CURRENT does not end with a newline: {text:?}")))?;
    match crate::filename::parse_file_name(name) {
        Some(crate::filename::FileKind::Manifest(n)) => Ok(n),
        _ => Err(corrupt(format!("CURRENT names {name:?}, not a MANIFEST"))),
    }
}

/// The size the MANIFEST of the database in `dir` records for SST
/// `number` (as `sst_dump` checks a file against it): `None` when no
/// table's current version lists the file. Reads only.
///
/// ```
/// # use std::sync::Arc;
/// use lithify_version::VersionSet;
/// use lithify_version::manifest::recorded_sst_size;
/// use lithify_vfs::MemFs;
/// let fs = Arc::new(MemFs::new());
/// VersionSet::create(fs.clone(), "/db".as_ref(), Default::default()).unwrap();
/// assert_eq!(recorded_sst_size(fs, "/db".as_ref(), 7).unwrap(), None);
/// ```
pub fn recorded_sst_size(fs: Arc<dyn FileSystem>, dir: &Path, number: u64) -> Result<Option<u64>> {
    let versions = crate::VersionSet::recover(fs, dir, crate::VersionSetOptions::default())?;
    Ok(versions.tables().iter().find_map(|t| {
        versions
            .current(t.id)?
            .all_files()
            .find(|(_, f)| f.number == number)
            .map(|(_, f)| f.size)
    }))
}

/// Atomically points `CURRENT` in `dir` at MANIFEST `number`.
pub fn set_current(fs: &dyn FileSystem, dir: &Path, number: u64) -> Result<()> {
    let path = dir.join(CURRENT);
    let contents = format!("{}\n", manifest_file_name(number));
    lithify_vfs::write_file_atomic(fs, &path, contents.as_bytes()).context(IoSnafu {
        op: "replacing",
        path,
    })
}

/// A table as replayed from a MANIFEST.
pub(crate) struct ReplayedTable {
    pub(crate) name: String,
    pub(crate) comparator: String,
    pub(crate) merge_operator: Option<String>,
    pub(crate) log_number: u64,
    pub(crate) version: Version,
}

/// The state a MANIFEST describes.
pub(crate) struct Replayed {
    pub(crate) tables: BTreeMap<TableId, ReplayedTable>,
    pub(crate) next_file_number: u64,
    pub(crate) last_sequence: SeqNo,
    pub(crate) max_table_id: TableId,
    /// WALs at or above every table's log number known synced, with their
    /// synced sizes.
    pub(crate) wals: BTreeMap<u64, u64>,
    /// The torn last record dropped from the end of the MANIFEST, if any.
    pub(crate) torn_tail: Option<DroppedRange>,
    /// The bytes of the MANIFEST the state was replayed from (every whole
    /// record; a torn tail is past it).
    pub(crate) size: u64,
    /// The database identity the MANIFEST records, if any.
    pub(crate) db_id: Option<Id>,
}

struct TableReplay {
    name: String,
    comparator: String,
    merge_operator: Option<String>,
    log_number: u64,
    builder: VersionBuilder,
}

/// Replays edit groups into table states. Used by recovery (strict about
/// comparators) and by `dump` (which falls back to bytewise order).
pub(crate) struct Replayer<'a> {
    num_levels: usize,
    resolve: &'a dyn Fn(&str) -> Option<Arc<dyn Comparator>>,
    tables: BTreeMap<TableId, TableReplay>,
    next_file_number: u64,
    last_sequence: SeqNo,
    max_table_id: TableId,
    max_file_number: u64,
    wals: BTreeMap<u64, u64>,
    records: u64,
    db_id: Option<Id>,
}

impl<'a> Replayer<'a> {
    pub(crate) fn new(
        num_levels: usize,
        resolve: &'a dyn Fn(&str) -> Option<Arc<dyn Comparator>>,
    ) -> Self {
        Replayer {
            num_levels,
            resolve,
            tables: BTreeMap::new(),
            next_file_number: 0,
            last_sequence: 0,
            max_table_id: 0,
            max_file_number: 0,
            wals: BTreeMap::new(),
            records: 0,
            db_id: None,
        }
    }

    /// Applies one record's edits; errors are messages (the caller names
    /// the file and offset).
    pub(crate) fn apply_group(&mut self, edits: &[VersionEdit]) -> std::result::Result<(), String> {
        for (i, edit) in edits.iter().enumerate() {
            if self.records == 0 && i == 0 {
                match edit.manifest_format {
                    Some(MANIFEST_FORMAT_VERSION) => {}
                    Some(v) => {
                        return Err(format!(
                            "MANIFEST format version {v} is not supported (this reader knows {MANIFEST_FORMAT_VERSION})"
                        ));
                    }
                    None => {
                        return Err(
                            "the first edit does not carry the MANIFEST format version: not a MANIFEST"
                                .to_owned(),
                        );
                    }
                }
            }
            self.apply_edit(edit)
                .map_err(|m| format!("edit {i} of the record: {m}"))?;
        }
        self.records += 1;
        Ok(())
    }

    fn apply_edit(&mut self, edit: &VersionEdit) -> std::result::Result<(), String> {
        if let Some(id) = edit.db_id {
            match self.db_id {
                Some(known) if known != id => {
                    return Err(format!(
                        "the MANIFEST names two database identities, {known} and {id}"
                    ));
                }
                _ => self.db_id = Some(id),
            }
        }
        if let Some(n) = edit.next_file_number {
            self.next_file_number = self.next_file_number.max(n);
        }
        if let Some(s) = edit.last_sequence {
            self.last_sequence = self.last_sequence.max(s);
        }
        if let Some(t) = edit.max_table_id {
            self.max_table_id = self.max_table_id.max(t);
        }
        crate::version_set::add_wals(&mut self.wals, &edit.wal_additions);
        let id = edit.table;
        if let Some(name) = &edit.table_add {
            if self.tables.contains_key(&id) {
                return Err(format!("table {id} is added twice"));
            }
            let comparator = edit
                .comparator
                .clone()
                .ok_or_else(|| format!("table {id} ({name}) is added without a comparator"))?;
            let user_cmp = (self.resolve)(&comparator).ok_or_else(|| {
                format!("table {id} ({name}) uses comparator {comparator}, which is not registered")
            })?;
            let base = Version::new(id, InternalKeyComparator::new(user_cmp), self.num_levels);
            self.max_table_id = self.max_table_id.max(id);
            self.tables.insert(
                id,
                TableReplay {
                    name: name.clone(),
                    comparator,
                    merge_operator: None,
                    log_number: 0,
                    builder: VersionBuilder::new(Arc::new(base)),
                },
            );
        }
        let table = self
            .tables
            .get_mut(&id)
            .ok_or_else(|| format!("edit of table {id}, which does not exist"))?;
        if let Some(c) = &edit.comparator
            && *c != table.comparator
        {
            return Err(format!(
                "table {id} uses comparator {}, an edit names {c}",
                table.comparator
            ));
        }
        crate::version_set::set_merge_operator(
            id,
            &mut table.merge_operator,
            edit.merge_operator.as_deref(),
        )?;
        if let Some(n) = edit.log_number {
            table.log_number = n;
        }
        table.builder.apply(edit)?;
        for (_, f) in &edit.new_files {
            self.max_file_number = self.max_file_number.max(f.number);
        }
        if edit.table_drop {
            if id == DEFAULT_TABLE {
                return Err("the default table is dropped".to_owned());
            }
            self.tables.remove(&id);
        }
        Ok(())
    }

    /// The final state. The next file number is bumped past every file and
    /// the MANIFEST itself.
    pub(crate) fn finish(self, manifest_number: u64) -> std::result::Result<Replayed, String> {
        if self.records == 0 {
            return Err("the MANIFEST holds no record".to_owned());
        }
        if !self.tables.contains_key(&DEFAULT_TABLE) {
            return Err("the MANIFEST does not define the default table".to_owned());
        }
        let min_log = self
            .tables
            .values()
            .map(|t| t.log_number)
            .min()
            .unwrap_or(0);
        let mut wals = self.wals;
        wals.retain(|n, _| *n >= min_log);
        let mut tables = BTreeMap::new();
        for (id, t) in self.tables {
            let version = t
                .builder
                .build()
                .map_err(|m| format!("table {id} ({}): {m}", t.name))?
                .version;
            tables.insert(
                id,
                ReplayedTable {
                    name: t.name,
                    comparator: t.comparator,
                    merge_operator: t.merge_operator,
                    log_number: t.log_number,
                    version,
                },
            );
        }
        Ok(Replayed {
            tables,
            next_file_number: self
                .next_file_number
                .max(self.max_file_number + 1)
                .max(manifest_number + 1),
            last_sequence: self.last_sequence,
            max_table_id: self.max_table_id,
            wals,
            torn_tail: None,
            size: 0,
            db_id: self.db_id,
        })
    }
}

/// Reads every record of MANIFEST `path` (log number `number`), decoding
/// each into its edit group and handing it to `on_record` with its offset.
/// Returns the torn last record the read dropped, if any.
///
/// One judgment for recovery and `dump`, so that one damage is reported at
/// one offset everywhere: every MANIFEST record is synced before its edit
/// is installed, so only the record being appended when a crash happened
/// can be incomplete. A tail that is cut short or zero-filled
/// ([`DropReason::is_torn_write`](lithify_wal::DropReason::is_torn_write))
/// is that record, dropped; any other damage at the end (a checksum
/// mismatch, stray bytes) and any damage followed by intact records is
/// corruption, reported at the offset of the damaged record.
fn read_records(
    fs: &dyn FileSystem,
    path: &Path,
    number: u64,
    on_record: &mut dyn FnMut(u64, Vec<VersionEdit>) -> std::result::Result<(), String>,
) -> Result<(Option<DroppedRange>, u64, Option<Id>)> {
    let file = fs.open(path).context(IoSnafu {
        op: "opening",
        path: path.to_path_buf(),
    })?;
    let dropped: Arc<Mutex<Vec<DroppedRange>>> = Arc::new(Mutex::new(Vec::new()));
    let sink = dropped.clone();
    let mut reader = Reader::new(file, path, number)?
        .with_mode(RecoveryMode::TolerateCorruptedTailRecords)
        .with_reporter(move |r: &DroppedRange| {
            if let Ok(mut v) = sink.lock() {
                v.push(*r);
            }
        });
    let owner = reader.owner()?;
    while let Some(record) = reader.read_record()? {
        let offset = record.offset;
        let corrupt = |message: String| {
            CorruptionSnafu {
                path: path.to_path_buf(),
                offset,
                message,
            }
            .build()
        };
        let edits = decode_group(record.payload).map_err(|e| corrupt(e.to_string()))?;
        on_record(offset, edits).map_err(corrupt)?;
    }
    let torn = match reader.end() {
        Some(LogEnd::TornTail { offset, reason }) => {
            if !reason.is_torn_write() {
                return CorruptionSnafu {
                    path: path.to_path_buf(),
                    offset,
                    message: format!(
                        "{reason} in the last record: bytes that were written have changed \
                         (a crash can only cut a record short)"
                    ),
                }
                .fail();
            }
            let len = dropped
                .lock()
                .ok()
                .and_then(|v| v.iter().find(|d| d.offset == offset).map(|d| d.len))
                .unwrap_or(0);
            Some(DroppedRange {
                offset,
                len,
                reason,
            })
        }
        Some(LogEnd::Corruption { offset, reason }) => {
            return CorruptionSnafu {
                path: path.to_path_buf(),
                offset,
                message: format!("{reason}, followed by intact records"),
            }
            .fail();
        }
        Some(LogEnd::Clean) | None => None,
        // An end this build does not know: refused, never taken as clean.
        Some(other) => {
            return CorruptionSnafu {
                path: path.to_path_buf(),
                offset: reader.file_len(),
                message: format!("the log ended in a way this reader does not know: {other:?}"),
            }
            .fail();
        }
    };
    let size = torn.map_or(reader.file_len(), |t| t.offset);
    Ok((torn, size, owner))
}

/// The error for a MANIFEST whose records do not make a state: at the torn
/// record if one was dropped (that is where the damage is), else at the
/// end of the file.
fn unfinished(
    fs: &dyn FileSystem,
    path: &Path,
    torn: Option<DroppedRange>,
    message: String,
) -> crate::Error {
    let (offset, message) = match torn {
        Some(t) => (
            t.offset,
            format!(
                "{message}: the record at offset {} is cut short ({})",
                t.offset, t.reason
            ),
        ),
        None => (fs.file_size(path).unwrap_or(0), message),
    };
    CorruptionSnafu {
        path: path.to_path_buf(),
        offset,
        message,
    }
    .build()
}

/// Replays MANIFEST `number` in `dir`.
pub(crate) fn replay(
    fs: &dyn FileSystem,
    dir: &Path,
    number: u64,
    num_levels: usize,
    resolve: &dyn Fn(&str) -> Option<Arc<dyn Comparator>>,
) -> Result<Replayed> {
    let path = dir.join(manifest_file_name(number));
    let mut replayer = Replayer::new(num_levels, resolve);
    let (torn, size, owner) = read_records(fs, &path, number, &mut |_, edits| {
        replayer.apply_group(&edits)
    })?;
    let mut replayed = replayer
        .finish(number)
        .map_err(|message| unfinished(fs, &path, torn, message))?;
    check_owner(&path, owner, replayed.db_id)?;
    replayed.torn_tail = torn;
    replayed.size = size;
    Ok(replayed)
}

/// A MANIFEST names its database twice: in its header (the log's owner)
/// and in its first record. Both must agree.
fn check_owner(path: &Path, owner: Option<Id>, recorded: Option<Id>) -> Result<()> {
    match (owner, recorded) {
        (Some(owner), Some(id)) if owner != id => CorruptionSnafu {
            path: path.to_path_buf(),
            offset: 0u64,
            message: format!("its header names database {owner}, its records database {id}"),
        }
        .fail(),
        _ => Ok(()),
    }
}

/// Every record of the MANIFEST at `path`, in order: its byte offset and
/// its edit group (the history a MANIFEST holds: every flush, compaction
/// and table change since the MANIFEST was started). A torn last record
/// (a crash during its append) is left out, as recovery leaves it out.
pub fn read_edit_groups(fs: &dyn FileSystem, path: &Path) -> Result<Vec<(u64, Vec<VersionEdit>)>> {
    let (_, number) = name_and_number(fs, path)?;
    let mut groups = Vec::new();
    read_records(fs, path, number, &mut |offset, edits| {
        groups.push((offset, edits));
        Ok(())
    })?;
    Ok(groups)
}

/// Writes a readable account of MANIFEST `path` into `out`: every record
/// with its offset and edits, how the log ended, then the resulting state
/// of every table in the LSM text form.
///
/// The text is written as the file is read, so on an error `out` holds
/// everything up to the damage, then one `error:` line that says what
/// recovery would say (same offset). Comparators are not needed: tables
/// whose comparator is not bytewise are ordered bytewise in the printed
/// state (noted in the output).
///
/// ```
/// use std::path::Path;
/// use std::sync::Arc;
/// use lithify_vfs::{FileSystem, MemFs};
/// use lithify_version::{VersionSet, VersionSetOptions, manifest};
///
/// let fs = Arc::new(MemFs::new());
/// let set = VersionSet::create(fs.clone(), Path::new("/db"), VersionSetOptions::default()).unwrap();
/// let number = set.manifest_number();
/// let mut out = String::new();
/// let path = Path::new("/db").join(lithify_version::filename::manifest_file_name(number));
/// manifest::dump(&*fs, &path, &mut out).unwrap();
/// assert!(out.starts_with("MANIFEST-000001\nrecord 1 at offset 47:\n  edit table=0 format=1 db_id="));
/// assert!(out.contains("table 0 \"default\" comparator=lithify.BytewiseComparator log=0"));
/// ```
pub fn dump(fs: &dyn FileSystem, path: &Path, out: &mut String) -> Result<()> {
    let (name, number) = name_and_number(fs, path)?;
    let _ = writeln!(out, "{name}");
    // Any comparator name is accepted; files are ordered bytewise.
    let resolve = |_: &str| -> Option<Arc<dyn Comparator>> { Some(Arc::new(BytewiseComparator)) };
    let mut replayer = Replayer::new(crate::edit::MAX_LEVELS, &resolve);
    let mut index = 0;
    let read = read_records(fs, path, number, &mut |offset, edits| {
        index += 1;
        let _ = writeln!(out, "record {index} at offset {offset}:");
        for edit in &edits {
            for line in edit.to_string().lines() {
                let _ = writeln!(out, "  {line}");
            }
        }
        replayer.apply_group(&edits)
    });
    let (torn, owner) = match read {
        Ok((torn, _, owner)) => (torn, owner),
        Err(e) => {
            let _ = writeln!(out, "error: {e}");
            return Err(e);
        }
    };
    let end = match torn {
        None => "clean".to_owned(),
        Some(t) => format!(
            "torn tail: the record at offset {} ({} bytes) is cut short ({}); recovery drops it",
            t.offset, t.len, t.reason
        ),
    };
    let _ = writeln!(out, "end: {end}, {index} records");
    if let Some(owner) = owner {
        let _ = writeln!(out, "owner: database {owner}");
    }
    let state = match replayer
        .finish(number)
        .map_err(|m| unfinished(fs, path, torn, m))
        .and_then(|s| check_owner(path, owner, s.db_id).map(|()| s))
    {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(out, "error: {e}");
            return Err(e);
        }
    };
    let _ = writeln!(
        out,
        "state: next_file={} last_seq={} max_table={}",
        state.next_file_number, state.last_sequence, state.max_table_id
    );
    for (id, t) in &state.tables {
        let merge = t
            .merge_operator
            .as_ref()
            .map(|m| format!(" merge_operator={m}"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "table {id} {:?} comparator={}{merge} log={}{}",
            t.name,
            t.comparator,
            t.log_number,
            if t.comparator != BytewiseComparator::NAME {
                " (printed in bytewise order)"
            } else {
                ""
            }
        );
        for line in t.version.to_string().lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    for (number, size) in &state.wals {
        let _ = writeln!(out, "wal {number:06} synced={size}");
    }
    Ok(())
}

/// The file name of the MANIFEST at `path` and its number: from the name,
/// or, for a file not named like a MANIFEST, from its header.
fn name_and_number(fs: &dyn FileSystem, path: &Path) -> Result<(String, u64)> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let number = match crate::filename::parse_file_name(&name) {
        Some(crate::filename::FileKind::Manifest(n)) => n,
        _ => header_number(fs, path)?,
    };
    Ok((name, number))
}

fn header_number(fs: &dyn FileSystem, path: &Path) -> Result<u64> {
    let file = fs.open(path).context(IoSnafu {
        op: "opening",
        path: path.to_path_buf(),
    })?;
    let mut bytes = [0u8; lithify_wal::format::FILE_HEADER_LEN];
    file.read_exact_at(0, &mut bytes).context(IoSnafu {
        op: "reading the header of",
        path: path.to_path_buf(),
    })?;
    lithify_wal::format::FileHeader::decode(&bytes)
        .map(|h| h.log_number)
        .map_err(|e| {
            CorruptionSnafu {
                path: PathBuf::from(path),
                offset: 0u64,
                message: format!("not a record log: {e:?}"),
            }
            .build()
        })
}
