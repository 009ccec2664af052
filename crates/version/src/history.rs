//! The history a MANIFEST holds: every change of a table's files since the
//! MANIFEST was started (at the last open or MANIFEST roll), each as a
//! [`HistoryStep`] with the tree after it.
//!
//! Each edit that adds or deletes files is applied with the one edit
//! applier (the `VersionBuilder` recovery and `log_and_apply` use) over the
//! table's version before it, so every step's tree is a [`Version`] that
//! shares its untouched levels with the step before.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use lithify_base::{BytewiseComparator, Comparator, InternalKeyComparator};
use lithify_vfs::FileSystem;

use crate::builder::VersionBuilder;
use crate::edit::{DEFAULT_TABLE, DEFAULT_TABLE_NAME, MAX_LEVELS, TableId, VersionEdit};
use crate::error::{CorruptionSnafu, Result};
use crate::filename::manifest_file_name;
use crate::version::Version;

/// What a step did to a table's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StepKind {
    /// Files added, none removed.
    Flush,
    /// Files replaced by new ones.
    Compaction,
    /// The same files at another level.
    TrivialMove,
}

impl StepKind {
    /// The step's name: `flush`, `compaction`, `trivial move`.
    pub fn name(self) -> &'static str {
        match self {
            StepKind::Flush => "flush",
            StepKind::Compaction => "compaction",
            StepKind::TrivialMove => "trivial move",
        }
    }
}

/// One table's files at a point of the history.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TableTree {
    /// The table's name.
    pub name: String,
    /// Its files, in the table's order.
    pub version: Arc<Version>,
    /// One more than the deepest level a file was ever added to in this
    /// history (the levels worth drawing).
    pub levels_used: usize,
}

/// One change of the files of one table.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HistoryStep {
    /// What it did.
    pub kind: StepKind,
    /// The table it changed.
    pub table: TableId,
    /// Levels files were removed from, ascending (none for a flush).
    pub from_levels: Vec<usize>,
    /// Levels files were added to, ascending.
    pub to_levels: Vec<usize>,
    /// Bytes of the SST and blob files it wrote (0 for a trivial move).
    pub bytes_written: u64,
    /// Bytes flushes wrote so far: the user data that reached SSTs and
    /// blob files.
    pub flushed_total: u64,
    /// Bytes flushes and compactions wrote so far.
    pub written_total: u64,
    /// Every table's files after the step.
    pub tree: BTreeMap<TableId, TableTree>,
}

impl HistoryStep {
    /// The levels it read and wrote, as `L0 -> L1`, or `memtable -> L0`
    /// for a flush.
    pub fn levels(&self) -> String {
        let show = |ls: &[usize]| {
            ls.iter()
                .map(|l| format!("L{l}"))
                .collect::<Vec<_>>()
                .join("+")
        };
        match self.kind {
            StepKind::Flush => format!("memtable -> {}", show(&self.to_levels)),
            _ => format!("{} -> {}", show(&self.from_levels), show(&self.to_levels)),
        }
    }
}

/// The history of the MANIFEST `CURRENT` names in `dir`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ManifestHistory {
    /// The MANIFEST's number.
    pub manifest_number: u64,
    /// Every step, oldest first.
    pub steps: Vec<HistoryStep>,
}

/// Reads the history of the MANIFEST `CURRENT` names in the database
/// directory `dir`; `comparators` gives the comparator of each name a
/// table records (files are ordered by it). A torn last record is left
/// out, as recovery leaves it out; an edit that cannot apply (a file
/// deleted that is not there) or a comparator `comparators` does not know
/// is corruption naming the MANIFEST and the record's offset.
///
/// ```
/// use std::path::Path;
/// use std::sync::Arc;
/// use lithify_base::{BytewiseComparator, Comparator, InternalKey, ValueKind};
/// use lithify_version::history::{StepKind, read_history};
/// use lithify_version::{DEFAULT_TABLE, FileMetadata, VersionEdit, VersionSet, VersionSetOptions};
/// use lithify_vfs::MemFs;
///
/// let fs = Arc::new(MemFs::new());
/// let set = VersionSet::create(fs.clone(), Path::new("/db"), VersionSetOptions::default()).unwrap();
/// let key = |k: &str| InternalKey::new(k.as_bytes(), 1, ValueKind::Put);
/// let mut flush = VersionEdit::new(DEFAULT_TABLE);
/// flush.add_file(0, FileMetadata::new(set.new_file_number(), 100, key("a"), key("k")));
/// set.log_and_apply(vec![flush]).unwrap();
///
/// let bytewise = |name: &str| -> Option<Arc<dyn Comparator>> {
///     (name == BytewiseComparator::NAME).then(|| Arc::new(BytewiseComparator) as _)
/// };
/// let history = read_history(&*fs, Path::new("/db"), &bytewise).unwrap();
/// assert_eq!(history.steps.len(), 1);
/// assert_eq!(history.steps[0].kind, StepKind::Flush);
/// assert_eq!(history.steps[0].levels(), "memtable -> L0");
/// ```
pub fn read_history(
    fs: &dyn FileSystem,
    dir: &Path,
    comparators: &dyn Fn(&str) -> Option<Arc<dyn Comparator>>,
) -> Result<ManifestHistory> {
    let number = crate::manifest::read_current(fs, dir)?;
    let path = dir.join(manifest_file_name(number));
    let groups = crate::manifest::read_edit_groups(fs, &path)?;
    let steps = replay_steps(&groups, comparators).map_err(|(offset, message)| {
        CorruptionSnafu {
            path: path.clone(),
            offset,
            message,
        }
        .build()
    })?;
    Ok(ManifestHistory {
        manifest_number: number,
        steps,
    })
}

/// Replays edit groups (a MANIFEST's records, with their offsets) into
/// the steps that changed files. An error is the offset of the record
/// that could not apply and why.
pub(crate) fn replay_steps(
    groups: &[(u64, Vec<VersionEdit>)],
    comparators: &dyn Fn(&str) -> Option<Arc<dyn Comparator>>,
) -> std::result::Result<Vec<HistoryStep>, (u64, String)> {
    let empty = |id: TableId, name: &str, cmp: Arc<dyn Comparator>| TableTree {
        name: name.to_owned(),
        version: Arc::new(Version::new(
            id,
            InternalKeyComparator::new(cmp),
            MAX_LEVELS,
        )),
        levels_used: 0,
    };
    let mut tree: BTreeMap<TableId, TableTree> = BTreeMap::new();
    tree.insert(
        DEFAULT_TABLE,
        empty(
            DEFAULT_TABLE,
            DEFAULT_TABLE_NAME,
            Arc::new(BytewiseComparator),
        ),
    );
    let (mut flushed_total, mut written_total) = (0u64, 0u64);
    let mut steps = Vec::new();
    for (offset, edits) in groups {
        for edit in edits {
            if let Some(name) = &edit.table_add {
                let cmp = match &edit.comparator {
                    None => Arc::new(BytewiseComparator) as Arc<dyn Comparator>,
                    Some(c) => comparators(c).ok_or_else(|| {
                        (
                            *offset,
                            format!(
                                "table {} ({name}) uses comparator {c}, which is not given",
                                edit.table
                            ),
                        )
                    })?,
                };
                tree.insert(edit.table, empty(edit.table, name, cmp));
            }
            if edit.table_drop {
                tree.remove(&edit.table);
                continue;
            }
            if edit.new_files.is_empty() && edit.deleted_files.is_empty() {
                continue;
            }
            let t = tree.get_mut(&edit.table).ok_or_else(|| {
                (
                    *offset,
                    format!("edit of table {}, which does not exist", edit.table),
                )
            })?;
            let mut builder = VersionBuilder::new(Arc::clone(&t.version));
            builder.apply(edit).map_err(|m| (*offset, m))?;
            let built = builder.build().map_err(|m| (*offset, m))?;
            t.version = Arc::new(built.version);

            let removed: BTreeMap<u64, usize> =
                edit.deleted_files.iter().map(|&(l, n)| (n, l)).collect();
            let mut written = 0;
            let mut moved_only = !edit.new_files.is_empty();
            let mut to_levels = Vec::new();
            for (level, f) in &edit.new_files {
                t.levels_used = t.levels_used.max(level + 1);
                if !removed.contains_key(&f.number) {
                    moved_only = false;
                    written += f.size;
                }
                to_levels.push(*level);
            }
            // Blob files the step wrote (key-value separation) count as
            // written too.
            written += edit
                .blob_file_additions
                .iter()
                .map(|b| b.file_size)
                .sum::<u64>();
            let kind = if removed.is_empty() {
                StepKind::Flush
            } else if moved_only {
                StepKind::TrivialMove
            } else {
                StepKind::Compaction
            };
            if kind == StepKind::Flush {
                flushed_total += written;
            }
            written_total += written;
            let mut from_levels: Vec<usize> = removed.values().copied().collect();
            from_levels.sort_unstable();
            from_levels.dedup();
            to_levels.sort_unstable();
            to_levels.dedup();
            steps.push(HistoryStep {
                kind,
                table: edit.table,
                from_levels,
                to_levels,
                bytes_written: written,
                flushed_total,
                written_total,
                tree: tree.clone(),
            });
        }
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use lithify_base::ValueKind;
    use lithify_base::key::InternalKey;

    use super::*;
    use crate::FileMetadata;

    fn bytewise(name: &str) -> Option<Arc<dyn Comparator>> {
        (name == BytewiseComparator::NAME).then(|| Arc::new(BytewiseComparator) as _)
    }

    fn file(number: u64, size: u64, lo: &str, hi: &str) -> FileMetadata {
        FileMetadata::new(
            number,
            size,
            InternalKey::new(lo.as_bytes(), 1, ValueKind::Put),
            InternalKey::new(hi.as_bytes(), 1, ValueKind::Put),
        )
    }

    #[test]
    fn flushes_compactions_and_moves_are_told_apart() {
        let mut flush1 = VersionEdit::new(DEFAULT_TABLE);
        flush1.add_file(0, file(5, 100, "a", "m"));
        let mut flush2 = VersionEdit::new(DEFAULT_TABLE);
        flush2.add_file(0, file(6, 100, "c", "z"));
        let mut compaction = VersionEdit::new(DEFAULT_TABLE);
        compaction.deleted_files = vec![(0, 5), (0, 6)];
        compaction.add_file(1, file(7, 120, "a", "k"));
        compaction.add_file(1, file(8, 60, "l", "z"));
        let mut moved = VersionEdit::new(DEFAULT_TABLE);
        moved.deleted_files = vec![(1, 8)];
        moved.add_file(2, file(8, 60, "l", "z"));
        let groups = vec![
            (0, vec![flush1]),
            (10, vec![flush2]),
            (20, vec![compaction]),
            (30, vec![moved]),
        ];
        let steps = replay_steps(&groups, &bytewise).unwrap();
        let kinds: Vec<_> = steps.iter().map(|s| s.kind).collect();
        assert_eq!(
            kinds,
            [
                StepKind::Flush,
                StepKind::Flush,
                StepKind::Compaction,
                StepKind::TrivialMove
            ]
        );
        let written: Vec<_> = steps.iter().map(|s| s.bytes_written).collect();
        assert_eq!(written, [100, 100, 180, 0]);
        assert_eq!(steps[2].levels(), "L0 -> L1");
        assert_eq!(steps[3].levels(), "L1 -> L2");
        let last = &steps[3];
        assert_eq!((last.flushed_total, last.written_total), (200, 380));
        let v = &last.tree[&DEFAULT_TABLE].version;
        assert!(v.files(0).is_empty());
        let numbers = |l: usize| v.files(l).iter().map(|f| f.number).collect::<Vec<_>>();
        assert_eq!(numbers(1), [7]);
        assert_eq!(numbers(2), [8]);
    }

    #[test]
    fn an_edit_that_cannot_apply_names_its_record() {
        let mut bad = VersionEdit::new(DEFAULT_TABLE);
        bad.deleted_files = vec![(0, 9)];
        let (offset, message) =
            replay_steps(&[(0, vec![]), (42, vec![bad])], &bytewise).unwrap_err();
        assert_eq!(offset, 42);
        assert!(message.contains("000009"), "{message}");
    }
}
