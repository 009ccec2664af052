//! Point lookups: the memtable, the immutable memtables, the L0 files newest
//! first, then one file per level found by binary search — each table's
//! bloom filter first — stopping at the first layer that decides.
//!
//! A lookup that meets a merge operand starts again on the merge path
//! ([`DbInner::get_merged`]): it walks the same layers collecting every
//! operand down to the value they apply to (a put, a tombstone, or the
//! start of the key's history) and merges them with the table's operator.

use std::cell::RefCell;

use bytes::Bytes;
use lithify_base::key::{KIND_FOR_SEEK, append_internal_key, trailer, unpack_trailer, user_key};
use lithify_base::sync::atomic::Ordering;
use lithify_base::{Comparator, InternalIterator, InternalKeyComparator, SeqNo, ValueKind};
use lithify_memtable::Lookup;
use lithify_sstable::ReadStats;

use crate::error::Result;
use crate::range_del::covering_seq;
use crate::sst_files::SstFiles;
use crate::state::DbInner;
use crate::state::table::TableState;
use crate::stats::Counters;
use crate::super_version::{FileHandle, SuperVersion};

thread_local! {
    /// The seek key and the found-key buffer, reused by every lookup of a
    /// thread so that a lookup allocates nothing but its result.
    static BUFFERS: RefCell<(Vec<u8>, Vec<u8>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// What one table says about a key.
enum Probe {
    /// Not here: look deeper.
    Miss,
    Found(Bytes),
    Deleted,
    /// The newest visible version is a merge operand.
    Merge,
}

/// What the files say about a key.
enum FileAnswer {
    Value(Bytes),
    Absent,
    Merge,
}

/// Costs of one lookup.
#[derive(Default)]
struct GetCost {
    probed: u64,
    reads: ReadStats,
    /// Values read through blob indexes.
    blob_reads: u64,
}

/// Looks `key` up in `table` at `snapshot` (`None`: the latest state).
pub(crate) fn get_in(
    db: &DbInner,
    table: &TableState,
    key: &[u8],
    snapshot: Option<SeqNo>,
) -> Result<Option<Bytes>> {
    // Pin first, then read the sequence number: everything at or below
    // it is in the pinned parts or was written concurrently.
    let sv = table.sv.get();
    let snap = snapshot.unwrap_or_else(|| db.visible());
    crate::strategy::observe_read(db, table);
    get_at(db, table, &sv, key, snap)
}

/// Looks `key` up in the pinned `sv` of `table` at `snap`.
pub(crate) fn get_at(
    db: &DbInner,
    table: &TableState,
    sv: &SuperVersion,
    key: &[u8],
    snap: SeqNo,
) -> Result<Option<Bytes>> {
    for mem in std::iter::once(&sv.mem).chain(sv.imm.iter()) {
        let answer = match mem.get(key, snap) {
            Lookup::NotFound => continue,
            Lookup::Found { value, .. } => Ok(Some(Bytes::copy_from_slice(value))),
            Lookup::Deleted { .. } => Ok(None),
            Lookup::Merge { .. } => get_merged(db, table, sv, key, snap),
        };
        Counters::add(&db.counters.gets, 1);
        count_get(table, key);
        return answer;
    }
    let mut cost = GetCost::default();
    let r = BUFFERS.with(|b| {
        let (seek, found) = &mut *b.borrow_mut();
        lookup_files(
            sv,
            &db.opener,
            &table.icmp,
            key,
            snap,
            seek,
            found,
            &mut cost,
        )
    });
    let c = &db.counters;
    Counters::add(&c.gets, 1);
    Counters::add(&c.get_tables_probed, cost.probed);
    Counters::add(&c.get_blocks, cost.reads.blocks_read());
    Counters::add(&c.get_blocks_from_file, cost.reads.blocks_from_file);
    Counters::add(&c.get_filter_negatives, cost.reads.filter_negatives);
    if cost.blob_reads > 0 {
        Counters::add(&c.get_blob_reads, cost.blob_reads);
    }
    count_get(table, key);
    let t = &table.counters;
    Counters::add(&t.get_tables_probed, cost.probed);
    Counters::add(&t.get_blocks, cost.reads.blocks_read());
    match r? {
        FileAnswer::Value(v) => Ok(Some(v)),
        FileAnswer::Absent => Ok(None),
        FileAnswer::Merge => get_merged(db, table, sv, key, snap),
    }
}

/// Counts a lookup of `key` in `table`, and samples it for the table's
/// read heat.
#[inline]
fn count_get(table: &TableState, key: &[u8]) {
    let n = table.counters.gets.fetch_add(1, Ordering::Relaxed);
    table.read_heat.record_read(n, key);
}

/// Collects the merge operands of `key` visible at `snap`, newest
/// first, down to the version they apply to, and merges them.
fn get_merged(
    db: &DbInner,
    table: &TableState,
    sv: &SuperVersion,
    key: &[u8],
    snap: SeqNo,
) -> Result<Option<Bytes>> {
    let mut operands: Vec<Bytes> = Vec::new();
    let mut base: Option<Bytes> = None;
    let mut decided = false;
    for mem in std::iter::once(&sv.mem).chain(sv.imm.iter()) {
        let mut found = Vec::new();
        let end = mem.collect_operands(key, snap, &mut found);
        operands.extend(found.into_iter().map(Bytes::copy_from_slice));
        match end {
            Lookup::Found { value, .. } => {
                base = Some(Bytes::copy_from_slice(value));
                decided = true;
            }
            Lookup::Deleted { .. } => decided = true,
            Lookup::NotFound | Lookup::Merge { .. } => {}
        }
        if decided {
            break;
        }
    }
    if !decided {
        base = collect_file_operands(sv, &db.opener, &table.icmp, key, snap, &mut operands)?;
    }
    if operands.is_empty() {
        return Ok(base);
    }
    table
        .merge
        .full_merge(key, base.as_deref(), &operands)
        .map(Some)
}

/// The files' part of the merge path: appends the operands of `key` the
/// files hold (newest first) and returns the value below them, if any.
fn collect_file_operands(
    sv: &SuperVersion,
    opener: &SstFiles,
    icmp: &InternalKeyComparator,
    key: &[u8],
    snap: SeqNo,
    operands: &mut Vec<Bytes>,
) -> Result<Option<Bytes>> {
    let mut seek = Vec::new();
    append_internal_key(&mut seek, key, snap, KIND_FOR_SEEK);
    let mut covering: SeqNo = 0;
    for (level, files) in sv.levels.iter().enumerate() {
        let candidates: Vec<_> = if level == 0 {
            files
                .iter()
                .filter(|h| h.meta.contains_user_key(icmp, key))
                .collect()
        } else {
            let i =
                files.partition_point(|h| icmp.compare(h.meta.largest.encoded(), &seek).is_lt());
            files
                .get(i)
                .filter(|h| icmp.compare_user(h.meta.smallest_user_key(), key).is_le())
                .into_iter()
                .collect()
        };
        for h in candidates {
            let table = h.sst(opener)?;
            if h.meta.num_range_deletions > 0 {
                covering = covering.max(covering_seq(icmp, table.range_tombstones(), key, snap));
            }
            if !table.may_contain(table.key_schema().filter_key(&seek)) {
                continue;
            }
            let mut it = table.iter();
            it.seek_ge(&seek)?;
            while it.valid() && icmp.compare_user(user_key(it.key()), key).is_eq() {
                let (seq, kind) = unpack_trailer(trailer(it.key()));
                if seq < covering {
                    return Ok(None);
                }
                match ValueKind::from_u8(kind) {
                    Some(ValueKind::Put) => return Ok(Some(it.value_bytes())),
                    Some(ValueKind::BlobIndex) => {
                        return Ok(Some(opener.blobs.get(key, it.value())?));
                    }
                    Some(ValueKind::Merge) => operands.push(it.value_bytes()),
                    _ => return Ok(None),
                }
                it.next()?;
            }
        }
    }
    Ok(None)
}

#[allow(clippy::too_many_arguments)]
fn lookup_files(
    sv: &SuperVersion,
    opener: &SstFiles,
    icmp: &InternalKeyComparator,
    key: &[u8],
    snap: SeqNo,
    seek: &mut Vec<u8>,
    found: &mut Vec<u8>,
    cost: &mut GetCost,
) -> Result<FileAnswer> {
    seek.clear();
    append_internal_key(seek, key, snap, KIND_FOR_SEEK);
    // The newest range tombstone seen so far that covers the key.
    let mut covering: SeqNo = 0;
    for (level, files) in sv.levels.iter().enumerate() {
        if files.is_empty() {
            continue;
        }
        if level == 0 {
            let mut holding = L0Holding::new(sv, icmp, key);
            while let Some(h) = holding.next_file(files, icmp, key) {
                match probe(h, opener, icmp, key, snap, seek, found, &mut covering, cost)? {
                    Probe::Miss => {}
                    Probe::Found(v) => return Ok(FileAnswer::Value(v)),
                    Probe::Deleted => return Ok(FileAnswer::Absent),
                    Probe::Merge => return Ok(FileAnswer::Merge),
                }
            }
            continue;
        }
        let i = files.partition_point(|h| icmp.compare(h.meta.largest.encoded(), seek).is_lt());
        if let Some(h) = files.get(i)
            && icmp.compare_user(h.meta.smallest_user_key(), key).is_le()
        {
            match probe(h, opener, icmp, key, snap, seek, found, &mut covering, cost)? {
                Probe::Miss => {}
                Probe::Found(v) => return Ok(FileAnswer::Value(v)),
                Probe::Deleted => return Ok(FileAnswer::Absent),
                Probe::Merge => return Ok(FileAnswer::Merge),
            }
        }
    }
    Ok(FileAnswer::Absent)
}

/// The L0 files whose key range holds a key, newest first: from the
/// super version's [`L0Index`](crate::l0_index::L0Index) when it has one,
/// else by walking L0.
enum L0Holding<'a> {
    Indexed(std::slice::Iter<'a, u32>),
    Walk(usize),
}

impl<'a> L0Holding<'a> {
    #[inline]
    fn new(sv: &'a SuperVersion, icmp: &InternalKeyComparator, key: &[u8]) -> Self {
        match &sv.l0_index {
            Some(index) => L0Holding::Indexed(index.covering(icmp, key).iter()),
            None => L0Holding::Walk(0),
        }
    }

    #[inline]
    fn next_file<'f>(
        &mut self,
        files: &'f [std::sync::Arc<FileHandle>],
        icmp: &InternalKeyComparator,
        key: &[u8],
    ) -> Option<&'f std::sync::Arc<FileHandle>> {
        match self {
            L0Holding::Indexed(positions) => positions.next().map(|&i| &files[i as usize]),
            L0Holding::Walk(next) => {
                while let Some(h) = files.get(*next) {
                    *next += 1;
                    if h.meta.contains_user_key(icmp, key) {
                        return Some(h);
                    }
                }
                None
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
#[inline]
fn probe(
    h: &FileHandle,
    opener: &SstFiles,
    icmp: &InternalKeyComparator,
    key: &[u8],
    snap: SeqNo,
    seek: &[u8],
    found: &mut Vec<u8>,
    covering: &mut SeqNo,
    cost: &mut GetCost,
) -> Result<Probe> {
    let table = h.sst(opener)?;
    cost.probed += 1;
    if h.meta.num_range_deletions > 0 {
        *covering = (*covering).max(covering_seq(icmp, table.range_tombstones(), key, snap));
    }
    let value = table.point_lookup(Some(key), seek, found, &mut cost.reads)?;
    let Some(value) = value else {
        return Ok(Probe::Miss);
    };
    if !icmp.compare_user(user_key(found), key).is_eq() {
        return Ok(Probe::Miss);
    }
    let (seq, kind) = unpack_trailer(trailer(found));
    if seq < *covering {
        return Ok(Probe::Deleted);
    }
    if kind == ValueKind::Put as u8 {
        Ok(Probe::Found(value))
    } else if kind == ValueKind::BlobIndex as u8 {
        cost.blob_reads += 1;
        Ok(Probe::Found(opener.blobs.get(key, &value)?))
    } else if kind == ValueKind::Merge as u8 {
        Ok(Probe::Merge)
    } else {
        Ok(Probe::Deleted)
    }
}
