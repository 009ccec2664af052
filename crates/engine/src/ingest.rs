//! Ingesting external SST files (RocksDB's `IngestExternalFile`).
//!
//! 1. **Check** every file before anything changes: it opens as a table
//!    of this table's comparator, every block's checksum holds, every
//!    entry has sequence number 0 (as [`SstFileWriter`](crate::SstFileWriter)
//!    writes them). A damaged or foreign file is refused with its path.
//!    With `move_files`, a file that is one of this database's own table
//!    files is refused: moving it would delete a file the database reads.
//!    Files may overlap one another (RocksDB's rule): then every one of
//!    them goes to L0 with a sequence number of its own, in the order
//!    given, so that a later file wins.
//! 2. If a memtable of the table holds a key (or a range deletion) inside
//!    a file's range, the memtables are **flushed** first (RocksDB's
//!    `RangesOverlapWithMemtables`, and `allow_blocking_flush`; refused
//!    when it is off): a memtable is read before any file, so an older
//!    memtable entry would hide an ingested one. Memtables whose keys
//!    only surround a file's range are left alone.
//! 3. Inside the write group, alone (no write is in flight or can start):
//!    the memtable check is repeated (a write that slipped in sends the
//!    ingestion back to step 2), then each file gets its **level**: the
//!    lowest level such that no level at or above it holds a key of the
//!    file's range (a key, or a range deletion reaching into it: RocksDB's
//!    `OverlapWithLevelIterator`), the level holds no file whose range
//!    overlaps the file's, and no running compaction writes that range
//!    into it — for leveled tables; MajorOnly, TwoTier and Adaptive tables
//!    take ingested files into L0, where their strategies pick them up
//!    like flushed files. A file gets a **sequence number** (the next one
//!    for each such file) when a level holds a key of its range, when the
//!    files overlap one another, or when a snapshot is open and
//!    `snapshot_consistency` is on (RocksDB's rule: an older snapshot must
//!    not see the ingested keys); otherwise its entries keep sequence
//!    number 0, which sorts below everything and is never visible above
//!    newer data because no key of its range exists. A file that needs a
//!    sequence number is rewritten with it (RocksDB can patch a global
//!    sequence number into the file; lithify's tables store each entry's
//!    number, so the copy is rewritten), otherwise it is hard-linked
//!    (`move_files`) or copied.
//! 4. One MANIFEST edit adds every file (atomic for the list); the
//!    last sequence number, if any, is published like a write's.

use std::path::{Path, PathBuf};
use std::sync::{Arc as StdArc, Mutex as StdMutex};

use lithify_base::key::{
    InternalKey, KIND_FOR_SEEK, MAX_SEQNO, append_internal_key, trailer, unpack_trailer, user_key,
};
use lithify_base::keyspan::RangeTombstone;
use lithify_base::{Comparator, InternalIterator, InternalKeyComparator, SeqNo, ValueKind};
use lithify_memtable::MemTableIter;
use lithify_sstable::{SstBuilder, SstReader};
use lithify_version::filename::sst_file_name;
use lithify_version::{FileMetadata, TableId, VersionEdit};
use snafu::ResultExt;

use crate::error::{Error, InvalidArgumentSnafu, IoSnafu, ReadSnafu, Result, SstSnafu};
use crate::live_set::copy_file_prefix;
use crate::state::DbInner;
use crate::state::leader::LeaderState;

/// How [`Db::ingest_external_file_opt`](crate::Db) ingests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct IngestOptions {
    /// Hard-link the files into the database and delete the originals
    /// (copy when the file system cannot link); otherwise copy them.
    pub move_files: bool,
    /// Give the ingested entries a sequence number newer than every open
    /// snapshot, so that those snapshots do not see them (default true).
    pub snapshot_consistency: bool,
    /// Flush the memtables when they hold keys of the files' range
    /// (default true); otherwise such an ingestion is refused.
    pub allow_blocking_flush: bool,
}

lithify_base::options_builder!(IngestOptions {
    move_files: bool,
    snapshot_consistency: bool,
    allow_blocking_flush: bool,
});

impl Default for IngestOptions {
    fn default() -> Self {
        IngestOptions {
            move_files: false,
            snapshot_consistency: true,
            allow_blocking_flush: true,
        }
    }
}

/// Where one ingested file went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestedFile {
    /// The external file.
    pub external: PathBuf,
    /// Its number in the database.
    pub number: u64,
    /// Its level.
    pub level: usize,
    /// The sequence number its entries got (0: none was needed).
    pub sequence: SeqNo,
    /// Bytes of the file in the database.
    pub size: u64,
}

/// A checked external file.
#[derive(Debug, Clone)]
pub(crate) struct External {
    path: PathBuf,
    size: u64,
    smallest: Vec<u8>,
    largest: Vec<u8>,
}

/// An ingestion handed to the write group.
pub(crate) struct IngestJob {
    pub(crate) table: TableId,
    /// In the order given: where they overlap, a later file wins.
    files: Vec<External>,
    /// Some files overlap one another: all go to L0, each with a sequence
    /// number of its own.
    files_overlap: bool,
    options: IngestOptions,
    /// Set by the leader: the outcome, or `None` when a write to the
    /// range slipped in and the memtables must be flushed again.
    pub(crate) result: StdMutex<Option<Result<Vec<IngestedFile>>>>,
    pub(crate) raced: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for IngestJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IngestJob")
            .field("table", &self.table)
            .field("files", &self.files.len())
            .finish_non_exhaustive()
    }
}

/// See the [module documentation](db).
pub(crate) fn ingest_external_files(
    db: &DbInner,
    table: TableId,
    paths: &[PathBuf],
    options: &IngestOptions,
) -> Result<Vec<IngestedFile>> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    db.check_writable()?;
    let files = paths
        .iter()
        .map(|p| check_external(db, p, options.move_files))
        .collect::<Result<Vec<_>>>()?;
    let icmp = db.opener.options.comparator.clone();
    let mut by_start: Vec<&External> = files.iter().collect();
    by_start.sort_by(|a, b| icmp.compare_user(&a.smallest, &b.smallest));
    let files_overlap = by_start
        .windows(2)
        .any(|w| !icmp.compare_user(&w[0].largest, &w[1].smallest).is_lt());
    let job = StdArc::new(IngestJob {
        table,
        files,
        files_overlap,
        options: *options,
        result: StdMutex::new(None),
        raced: std::sync::atomic::AtomicBool::new(false),
    });
    // The first attempt lets writes go on. If a write lands in the files'
    // range between the flush and the placement, later attempts hold new
    // writes back (as RocksDB's ingestion does throughout): only writes
    // already on their way can race, and there are as many as threads.
    const ATTEMPTS: usize = 5;
    for attempt in 0..ATTEMPTS {
        let _stop = (attempt > 0).then(|| db.stop_writes_for_ingestion());
        if memtables_overlap(db, table, &job.files)? {
            if !options.allow_blocking_flush {
                return InvalidArgumentSnafu {
                    message: "the memtable holds keys inside the files' ranges and allow_blocking_flush is off"
                        .to_owned(),
                }
                .fail();
            }
            crate::flush::flush_table(db, table)?;
        }
        job.raced.store(false, std::sync::atomic::Ordering::Relaxed);
        crate::write::write_solo(db, StdArc::clone(&job) as _)?;
        if job.raced.load(std::sync::atomic::Ordering::Relaxed) {
            continue;
        }
        let result = job
            .result
            .lock()
            .expect("not poisoned")
            .take()
            .expect("the leader ran the ingestion");
        let placed = result?;
        if options.move_files {
            for f in &job.files {
                // Checked at step 1; checked again, since removing a
                // live table is never undone (and the ingestion is
                // done: a failed check keeps the file, it fails nothing).
                if matches!(own_table_file(db, &f.path), Ok(None)) {
                    let _ = db.fs.remove_file(&f.path);
                }
            }
        }
        db.wake_background();
        tracing::info!(
            target: "lithify::engine",
            table,
            files = placed.len(),
            levels = ?placed.iter().map(|f| f.level).collect::<Vec<_>>(),
            sequence = placed.iter().map(|f| f.sequence).max().unwrap_or(0),
            "external files ingested"
        );
        return Ok(placed);
    }
    InvalidArgumentSnafu {
        message: format!(
            "writes kept landing in the ingested range while it was flushed ({ATTEMPTS} attempts, the last {} with new writes held back)",
            ATTEMPTS - 1
        ),
    }
    .fail()
}

/// Step 1: the file opens as a table of this database, every block is
/// intact, every entry has sequence number 0; with `move_files`, it is
/// not one of this database's own SST files.
fn check_external(db: &DbInner, path: &Path, move_files: bool) -> Result<External> {
    let io = |op: &'static str| IoSnafu {
        op,
        path: path.to_path_buf(),
    };
    if move_files && let Some(number) = own_table_file(db, path)? {
        return InvalidArgumentSnafu {
            message: format!(
                "{} is SST file {number} of this database: moving it in would delete it (copy it out first, or ingest without moving)",
                path.display()
            ),
        }
        .fail();
    }
    let size = db.fs.file_size(path).context(io("reading the size of"))?;
    let file = db.fs.open(path).context(io("opening"))?;
    let mut opts = db.opener.options.clone();
    opts.verify_checksums = true;
    let reader = StdArc::new(SstReader::open(file, path, size, &opts, None).context(SstSnafu)?);
    let icmp = opts.comparator.clone();
    let mut smallest: Option<Vec<u8>> = None;
    let mut largest: Option<Vec<u8>> = None;
    let mut widen = |k: &[u8]| {
        if smallest
            .as_deref()
            .is_none_or(|s| icmp.compare_user(k, s).is_lt())
        {
            smallest = Some(k.to_vec());
        }
        if largest
            .as_deref()
            .is_none_or(|l| icmp.compare_user(k, l).is_gt())
        {
            largest = Some(k.to_vec());
        }
    };
    let not_external = |what: String| {
        InvalidArgumentSnafu {
            message: format!(
                "{} is not an external table ({what}); write it with SstFileWriter",
                path.display()
            ),
        }
        .build()
    };
    let mut it = reader.iter();
    it.first().context(ReadSnafu)?;
    while it.valid() {
        let (seq, kind) = unpack_trailer(trailer(it.key()));
        if seq != 0 {
            return Err(not_external(format!("an entry has sequence number {seq}")));
        }
        if kind == ValueKind::BlobIndex as u8 {
            // Its value is in a blob file of the database that wrote it,
            // which ingestion does not bring along.
            return Err(not_external(format!(
                "key {} holds a blob index, a value kept in another database's blob file",
                lithify_base::key::escape(user_key(it.key()))
            )));
        }
        widen(user_key(it.key()));
        it.next().context(ReadSnafu)?;
    }
    for t in reader.range_tombstones() {
        let (seq, _) = unpack_trailer(trailer(&t.start));
        if seq != 0 {
            return Err(not_external(format!(
                "a range deletion has sequence number {seq}"
            )));
        }
        widen(user_key(&t.start));
        widen(&t.end);
    }
    let (Some(smallest), Some(largest)) = (smallest, largest) else {
        return Err(not_external("it holds nothing".to_owned()));
    };
    Ok(External {
        path: path.to_path_buf(),
        size,
        smallest,
        largest,
    })
}

/// The number of the SST file `path` names when it is a file of this
/// database's directory (a live table, or one an old version or a
/// reader still holds), by canonical path.
fn own_table_file(db: &DbInner, path: &Path) -> Result<Option<u64>> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let Some(lithify_version::filename::FileKind::Sst(number)) =
        lithify_version::filename::parse_file_name(name)
    else {
        return Ok(None);
    };
    let canonical = |p: &Path| lithify_vfs::resolve(&*db.fs, p);
    let io = |p: &Path| IoSnafu {
        op: "resolving",
        path: p.to_path_buf(),
    };
    let dir = canonical(&db.dir).context(io(&db.dir))?;
    let parent = canonical(lithify_vfs::parent_dir(path)).context(io(path))?;
    Ok((parent == dir && db.versions.live_files().contains(&number)).then_some(number))
}

/// Whether a memtable of the table holds a key, or a range deletion
/// reaching, inside one of `files`' ranges (RocksDB's
/// `RangesOverlapWithMemtables`).
fn memtables_overlap(db: &DbInner, table: TableId, files: &[External]) -> Result<bool> {
    let mems = {
        let st = db.lock_state();
        let Some(t) = st.table(table) else {
            return InvalidArgumentSnafu {
                message: format!("no table with id {table}"),
            }
            .fail();
        };
        let mut mems = vec![lithify_base::sync::Arc::clone(t.mem())];
        mems.extend(
            t.imm()
                .iter()
                .map(|i| lithify_base::sync::Arc::clone(i.mem())),
        );
        mems
    };
    let icmp = db.opener.options.comparator.clone();
    for m in &mems {
        let mut it = MemTableIter::new(lithify_base::sync::Arc::clone(m));
        let tombstones = if m.num_range_deletes() > 0 {
            m.range_tombstones()
        } else {
            Vec::new()
        };
        for f in files {
            if holds_key_in(&icmp, &mut it, &f.smallest, &f.largest).context(ReadSnafu)?
                || tombstones
                    .iter()
                    .any(|t| reaches_into(&icmp, t, &f.smallest, &f.largest))
            {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// Whether an SST file of `level` holds a key, or a range deletion
/// reaching, inside `f`'s range (RocksDB's `OverlapWithLevelIterator`:
/// keys, not file ranges).
fn level_holds_key_of(
    db: &DbInner,
    version: &lithify_version::Version,
    level: usize,
    f: &External,
) -> Result<bool> {
    let icmp = db.opener.options.comparator.clone();
    for meta in version.overlapping_files(level, Some(&f.smallest), Some(&f.largest)) {
        let sst = db.opener.open(meta.number, meta.size)?;
        let mut it = sst.iter();
        if holds_key_in(&icmp, &mut it, &f.smallest, &f.largest).context(ReadSnafu)? {
            return Ok(true);
        }
        if sst
            .range_tombstones()
            .iter()
            .filter_map(|t| RangeTombstone::from_stored(&t.start, &t.end))
            .any(|t| reaches_into(&icmp, &t, &f.smallest, &f.largest))
        {
            return Ok(true);
        }
    }
    Ok(false)
}

impl crate::write::SoloJob for IngestJob {
    fn run(&self, db: &DbInner, leader: &mut LeaderState) -> SeqNo {
        apply_ingest(db, leader, self)
    }
}

/// Step 3, by the write group's leader with no group in flight.
/// Returns the last sequence number to publish.
fn apply_ingest(db: &DbInner, leader: &mut LeaderState, job: &IngestJob) -> SeqNo {
    match memtables_overlap(db, job.table, &job.files) {
        Ok(false) => {}
        Ok(true) => {
            job.raced.store(true, std::sync::atomic::Ordering::Relaxed);
            return leader.last_allocated;
        }
        Err(e) => {
            *job.result.lock().expect("not poisoned") = Some(Err(e));
            return leader.last_allocated;
        }
    }
    let (result, last) = match place_files(db, leader, job) {
        Ok((placed, last)) => (Ok(placed), last),
        Err(e) => (Err(e), leader.last_allocated),
    };
    *job.result.lock().expect("not poisoned") = Some(result);
    last
}

fn place_files(
    db: &DbInner,
    leader: &mut LeaderState,
    job: &IngestJob,
) -> Result<(Vec<IngestedFile>, SeqNo)> {
    let icmp = db.opener.options.comparator.clone();
    let mut st = db.lock_state();
    let t = st.table(job.table).ok_or_else(|| {
        InvalidArgumentSnafu {
            message: format!("no table with id {}", job.table),
        }
        .build()
    })?;
    let leveled = matches!(
        t.strategy().in_force(),
        crate::CompactionStrategy::Leveled(_)
    );
    let version = StdArc::clone(t.version());
    // (level, whether a level holds a key of the file's range)
    let mut plan = Vec::with_capacity(job.files.len());
    for f in &job.files {
        if job.files_overlap {
            plan.push((0, true));
            continue;
        }
        let mut target = 0;
        let mut overlap = false;
        // The target moves down while levels allow; every level is
        // still looked at for keys, which decide the sequence number.
        let mut placing = leveled;
        for level in 0..version.num_levels() {
            if level_holds_key_of(db, &version, level, f)? {
                overlap = true;
                break;
            }
            if !placing || level == 0 {
                continue;
            }
            if t.compactions()
                .output_range_conflicts(&icmp, level, &f.smallest, &f.largest)
            {
                // A running compaction writes the range here: nothing
                // deeper either.
                placing = false;
                continue;
            }
            let (lo, hi) = (Some(&f.smallest[..]), Some(&f.largest[..]));
            if version.overlapping_files(level, lo, hi).is_empty() {
                target = level;
            }
        }
        plan.push((target, overlap));
    }
    // No snapshot may be taken from the decision to the install: one
    // taken in between would see the entries of a file that kept
    // sequence number 0 appear under it.
    db.snapshots.with_no_new(|any_snapshot| {
        let force = job.options.snapshot_consistency && any_snapshot;
        // Each file that needs one gets the next sequence number, in
        // the order given.
        let mut last = leader.last_allocated;
        let mut sequences = Vec::with_capacity(plan.len());
        for &(_, overlap) in &plan {
            if overlap || force {
                last += 1;
                sequences.push(last);
            } else {
                sequences.push(0);
            }
        }
        if last > MAX_SEQNO {
            return InvalidArgumentSnafu {
                message: "sequence numbers are exhausted".to_owned(),
            }
            .fail();
        }
        let mut edit = VersionEdit::new(job.table);
        let mut placed = Vec::with_capacity(job.files.len());
        let mut written = Vec::new();
        let files = (|| -> Result<()> {
            for ((f, &(level, _)), &sequence) in job.files.iter().zip(&plan).zip(&sequences) {
                let number = db.versions.new_file_number();
                let dest = db.dir.join(sst_file_name(number));
                written.push(dest.clone());
                let mut checksum = None;
                if sequence > 0 {
                    checksum = Some(rewrite_with_sequence(
                        db, &f.path, f.size, &dest, number, sequence,
                    )?);
                } else if job.options.move_files && db.fs.hard_link(&f.path, &dest).is_ok() {
                    // A file another tool wrote may not be durable yet.
                    let mut linked = db.fs.open_append(&dest).context(IoSnafu {
                        op: "opening",
                        path: dest.clone(),
                    })?;
                    linked.sync_all().context(IoSnafu {
                        op: "syncing",
                        path: dest.clone(),
                    })?;
                } else {
                    // The checksum as the bytes go by: no second read.
                    let mut sum = lithify_sstable::FileChecksum::new();
                    copy_file_prefix(&*db.fs, &f.path, &*db.fs, &dest, f.size, |b| sum.update(b))?;
                    checksum = Some(sum.digest());
                }
                let meta = metadata_of(db, &dest, number, checksum)?;
                placed.push(IngestedFile {
                    external: f.path.clone(),
                    number,
                    level,
                    sequence,
                    size: meta.size,
                });
                edit.add_file(level, meta);
            }
            db.fs.sync_dir(&db.dir).context(IoSnafu {
                op: "syncing directory",
                path: db.dir.clone(),
            })
        })();
        if let Err(e) = files {
            // Nothing names them: they go.
            for p in &written {
                let _ = db.fs.remove_file(p);
            }
            return Err(e);
        }
        if last > leader.last_allocated {
            edit.last_sequence = Some(last);
            // Used even if the edit fails: its record may be durable.
            leader.last_allocated = last;
        }
        // A failed record may be on disk: the version set quarantines the
        // files, and the database stops accepting writes, as after any
        // failed MANIFEST write.
        db.apply_and_install(&mut st, job.table, vec![edit], |_| {})?;
        Ok((placed, leader.last_allocated))
    })
}

/// Copies the external table at `from` to `to` (SST file `number`),
/// every entry and range deletion given sequence number `sequence`.
/// The copy is this database's file, with its identity. Returns the
/// copy's whole-file checksum.
fn rewrite_with_sequence(
    db: &DbInner,
    from: &Path,
    size: u64,
    to: &Path,
    number: u64,
    sequence: SeqNo,
) -> Result<u64> {
    let file = db.fs.open(from).context(IoSnafu {
        op: "opening",
        path: from.to_path_buf(),
    })?;
    let opts = &db.opener.options;
    let reader = StdArc::new(SstReader::open(file, from, size, opts, None).context(SstSnafu)?);
    let out = db.fs.create_new(to).context(IoSnafu {
        op: "creating",
        path: to.to_path_buf(),
    })?;
    let mut b = SstBuilder::new(out, to, opts).context(SstSnafu)?;
    let (db_id, session_id) = db.writer_identity();
    b.set_identity(db_id, session_id, number);
    let mut key = Vec::new();
    let mut it = reader.iter();
    it.first().context(ReadSnafu)?;
    while it.valid() {
        let (_, kind) = unpack_trailer(trailer(it.key()));
        key.clear();
        append_internal_key(&mut key, user_key(it.key()), sequence, kind);
        b.add(&key, it.value()).context(SstSnafu)?;
        it.next().context(ReadSnafu)?;
    }
    for t in reader.range_tombstones() {
        key.clear();
        append_internal_key(
            &mut key,
            user_key(&t.start),
            sequence,
            ValueKind::RangeDelete as u8,
        );
        b.add_range_tombstone(&key, &t.end).context(SstSnafu)?;
    }
    Ok(b.finish().context(SstSnafu)?.file_checksum)
}

/// The MANIFEST metadata of the table at `path`: its smallest and
/// largest internal keys (a range deletion's end as its sentinel), its
/// sequence numbers and counts, its unique id (from its properties) and
/// its whole-file `checksum` (computed here when not given).
fn metadata_of(
    db: &DbInner,
    path: &Path,
    number: u64,
    checksum: Option<u64>,
) -> Result<FileMetadata> {
    let size = db.fs.file_size(path).context(IoSnafu {
        op: "reading the size of",
        path: path.to_path_buf(),
    })?;
    let file = db.fs.open(path).context(IoSnafu {
        op: "opening",
        path: path.to_path_buf(),
    })?;
    let icmp = db.opener.options.comparator.clone();
    let reader = StdArc::new(
        SstReader::open(StdArc::clone(&file), path, size, &db.opener.options, None)
            .context(SstSnafu)?,
    );
    let mut smallest: Option<InternalKey> = None;
    let mut largest: Option<InternalKey> = None;
    let mut take = |k: InternalKey| {
        if smallest
            .as_ref()
            .is_none_or(|s| icmp.compare(k.encoded(), s.encoded()).is_lt())
        {
            smallest = Some(k.clone());
        }
        if largest
            .as_ref()
            .is_none_or(|l| icmp.compare(k.encoded(), l.encoded()).is_gt())
        {
            largest = Some(k);
        }
    };
    let mut it = reader.iter();
    it.first().context(ReadSnafu)?;
    if it.valid() {
        take(
            InternalKey::from_encoded(it.key().to_vec())
                .map_err(|e| corrupt(path)(e.to_string()))?,
        );
        it.last().context(ReadSnafu)?;
        take(
            InternalKey::from_encoded(it.key().to_vec())
                .map_err(|e| corrupt(path)(e.to_string()))?,
        );
    }
    for t in reader.range_tombstones() {
        take(
            InternalKey::from_encoded(t.start.to_vec())
                .map_err(|e| corrupt(path)(e.to_string()))?,
        );
        take(InternalKey::new(&t.end, MAX_SEQNO, ValueKind::RangeDelete));
    }
    let (Some(smallest), Some(largest)) = (smallest, largest) else {
        return Err(corrupt(path)("the table is empty".to_owned()));
    };
    let mut meta =
        lithify_compaction::file_metadata(number, size, smallest, largest, reader.properties());
    meta.file_checksum = Some(match checksum {
        Some(sum) => sum,
        None => lithify_sstable::file_checksum(&*file, path, size).context(SstSnafu)?,
    });
    Ok(meta)
}

/// Whether `it` holds a key in `[lo, hi]` (user keys, inclusive): one seek.
fn holds_key_in(
    icmp: &InternalKeyComparator,
    it: &mut impl InternalIterator,
    lo: &[u8],
    hi: &[u8],
) -> lithify_base::Result<bool> {
    let mut target = Vec::with_capacity(lo.len() + 8);
    append_internal_key(&mut target, lo, MAX_SEQNO, KIND_FOR_SEEK);
    it.seek_ge(&target)?;
    Ok(it.valid() && icmp.compare_user(user_key(it.key()), hi).is_le())
}

/// Whether range deletion `t` (`[start, end)`) deletes anything in
/// `[lo, hi]`.
fn reaches_into(icmp: &InternalKeyComparator, t: &RangeTombstone, lo: &[u8], hi: &[u8]) -> bool {
    icmp.compare_user(&t.start, hi).is_le() && icmp.compare_user(&t.end, lo).is_gt()
}

fn corrupt(path: &Path) -> impl Fn(String) -> Error + '_ {
    move |message| {
        InvalidArgumentSnafu {
            message: format!("{}: {message}", path.display()),
        }
        .build()
    }
}
