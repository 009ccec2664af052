//! Iteration: the internal merged cursor over a super version, the user-key
//! cursor on top of it, and the public iterators.

mod db_iter;
mod level;
mod public;

pub(crate) use db_iter::DbCursor;
pub(crate) use public::CursorSource;
pub use public::{DbIterator, RawIterator};

use std::sync::Arc;

use bytes::Bytes;
use lithify_base::{InternalIterator, InternalKeyComparator, MergingIterator, Result, SeqNo};
use lithify_memtable::MemTableIter;
use lithify_sstable::SstIter;

use crate::range_del::Fragments;
use crate::sst_files::SstFiles;
use crate::super_version::SuperVersion;
use level::LevelIter;
use lithify_base::keyspan::RangeTombstone;

/// One source of a merged iteration. An enum rather than a trait object so
/// that the hot `next`/`key` calls are direct.
pub(crate) enum ChildIter {
    Mem(MemTableIter),
    Table(SstIter<InternalKeyComparator>),
    Level(LevelIter),
}

macro_rules! each {
    ($self:ident, $it:ident => $e:expr) => {
        match $self {
            ChildIter::Mem($it) => $e,
            ChildIter::Table($it) => $e,
            ChildIter::Level($it) => $e,
        }
    };
}

impl InternalIterator for ChildIter {
    fn seek_ge(&mut self, target: &[u8]) -> Result<()> {
        each!(self, it => it.seek_ge(target))
    }
    fn seek_lt(&mut self, target: &[u8]) -> Result<()> {
        each!(self, it => it.seek_lt(target))
    }
    fn first(&mut self) -> Result<()> {
        each!(self, it => it.first())
    }
    fn last(&mut self) -> Result<()> {
        each!(self, it => it.last())
    }
    #[inline]
    fn next(&mut self) -> Result<()> {
        each!(self, it => it.next())
    }
    #[inline]
    fn prev(&mut self) -> Result<()> {
        each!(self, it => it.prev())
    }
    #[inline]
    fn valid(&self) -> bool {
        each!(self, it => it.valid())
    }
    #[inline]
    fn key(&self) -> &[u8] {
        each!(self, it => it.key())
    }
    #[inline]
    fn value(&self) -> &[u8] {
        each!(self, it => it.value())
    }
    fn value_bytes(&self) -> Bytes {
        each!(self, it => it.value_bytes())
    }
}

/// Whether file `m` holds keys in `[lower, upper)`.
pub(crate) fn within_bounds(
    icmp: &InternalKeyComparator,
    m: &lithify_version::FileMetadata,
    lower: Option<&[u8]>,
    upper: Option<&[u8]>,
) -> bool {
    !(upper.is_some_and(|u| icmp.compare_user(m.smallest_user_key(), u).is_ge())
        || lower.is_some_and(|l| icmp.compare_user(m.largest_user_key(), l).is_lt()))
}

/// The SST sorted runs a cursor over `[lower, upper)` of `version`
/// merges: each L0 file, and each level below, holding keys there.
pub(crate) fn sorted_runs(
    version: &lithify_version::Version,
    icmp: &InternalKeyComparator,
    lower: Option<&[u8]>,
    upper: Option<&[u8]>,
) -> usize {
    let within =
        |f: &&std::sync::Arc<lithify_version::FileMetadata>| within_bounds(icmp, f, lower, upper);
    version.files(0).iter().filter(within).count()
        + (1..version.num_levels())
            .filter(|&l| version.files(l).iter().any(|f| within(&f)))
            .count()
}

/// The merged internal cursor over everything a super version holds.
pub(crate) type Merged = MergingIterator<ChildIter, InternalKeyComparator>;

/// Builds the merged cursor of `sv` (newest sources first, so equal keys —
/// which cannot occur between sources — would resolve to the newest) and
/// the range tombstones visible at `snapshot` within `[lower, upper)`.
pub(crate) fn build_merged(
    sv: &SuperVersion,
    opener: &Arc<SstFiles>,
    icmp: &InternalKeyComparator,
    snapshot: SeqNo,
    lower: Option<&[u8]>,
    upper: Option<&[u8]>,
) -> Result<(Merged, Fragments)> {
    let version = &sv.version;
    let mut children = Vec::with_capacity(2 + sv.imm.len() + sv.levels.len() + 4);
    let mut tombstones = Vec::new();
    for mem in std::iter::once(&sv.mem).chain(sv.imm.iter()) {
        children.push(ChildIter::Mem(MemTableIter::new(mem.clone())));
        if mem.num_range_deletes() > 0 {
            tombstones.extend(
                mem.range_tombstones()
                    .into_iter()
                    .filter(|t| t.seqno <= snapshot),
            );
        }
    }
    let overlaps =
        |h: &crate::super_version::FileHandle| within_bounds(icmp, &h.meta, lower, upper);
    for (level, handles) in sv.levels.iter().enumerate() {
        if handles.is_empty() {
            continue;
        }
        let mut chosen = Vec::new();
        for h in handles {
            if !overlaps(h) {
                continue;
            }
            if h.meta.num_range_deletions > 0 {
                let table = h.sst(opener)?;
                tombstones.extend(
                    table
                        .range_tombstones()
                        .iter()
                        .filter_map(|t| RangeTombstone::from_stored(&t.start, &t.end))
                        .filter(|t| t.seqno <= snapshot),
                );
            }
            chosen.push(Arc::clone(h));
        }
        if level == 0 {
            for h in chosen {
                let table = h.sst(opener)?;
                children.push(ChildIter::Table(table.iter()));
            }
        } else if !chosen.is_empty() {
            children.push(ChildIter::Level(LevelIter::new(
                icmp.clone(),
                Arc::clone(opener),
                chosen,
            )));
        }
    }
    let _ = version;
    Ok((
        MergingIterator::new(icmp.clone(), children),
        Fragments::new(icmp, tombstones),
    ))
}
