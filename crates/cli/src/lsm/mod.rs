//! `lithify lsm`: a picture of the LSM tree, now and over time.
//!
//! The current tree comes from a read-only open (levels, files, scores and
//! each table's strategy). The history comes from the MANIFEST `CURRENT`
//! names: every record since that MANIFEST was started (at the last open
//! or MANIFEST roll) is replayed, and each record that changed the files
//! of a table becomes one step — a flush (files added, none removed), a
//! compaction (files replaced), a trivial move (the same files at a new
//! level) — with the bytes it wrote. Earlier history is not kept anywhere,
//! and the page says how far back it reaches.

mod html;

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Args;
use lithify_version::TableId;
use lithify_version::filename::manifest_file_name;
use lithify_version::{DEFAULT_TABLE, DEFAULT_TABLE_NAME, VersionEdit};
use lithify_vfs::OsFs;
use snafu::ResultExt as _;

use crate::db::{DbArgs, close};
use crate::error::{Result, VersionSnafu};

/// Arguments of `lsm`.
#[derive(Debug, Args)]
pub(crate) struct LsmArgs {
    #[command(flatten)]
    pub db: DbArgs,
    /// Write the picture as one self-contained HTML file (inline SVG, no
    /// network).
    #[arg(long, value_name = "OUT.html")]
    pub html: PathBuf,
    /// Steps of history to draw (the newest ones) [range: 0..=1000000].
    #[arg(long, default_value_t = 200, value_parser = crate::numbers::int::<usize>(0, 1_000_000))]
    pub max_steps: usize,
}

/// One table file as drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileBox {
    pub number: u64,
    pub size: u64,
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
}

/// One table's levels.
#[derive(Debug, Clone, Default)]
pub(crate) struct TableTree {
    pub name: String,
    pub levels: Vec<BTreeMap<u64, FileBox>>,
}

/// What a step did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StepKind {
    Flush,
    Compaction,
    TrivialMove,
}

impl StepKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            StepKind::Flush => "flush",
            StepKind::Compaction => "compaction",
            StepKind::TrivialMove => "trivial move",
        }
    }
}

/// One change of the tree.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    pub kind: StepKind,
    pub table: String,
    /// Levels read from and written to, as "L0 -> L1".
    pub levels: String,
    /// Bytes of the files it wrote (0 for a trivial move).
    pub bytes_written: u64,
    /// Bytes flushes wrote so far (the user data that reached tables).
    pub flushed_total: u64,
    /// Bytes flushes and compactions wrote so far.
    pub written_total: u64,
    /// The tree after the step.
    pub tree: BTreeMap<TableId, TableTree>,
}

/// The current tree as the engine reports it.
#[derive(Debug, Clone)]
pub(crate) struct Current {
    pub tables: Vec<CurrentTable>,
}

/// One table of the current tree.
#[derive(Debug, Clone)]
pub(crate) struct CurrentTable {
    pub name: String,
    pub strategy: String,
    pub strategy_reason: String,
    /// Per level: level -> (files, bytes, score).
    pub levels: BTreeMap<usize, (usize, u64, f64)>,
    pub files: Vec<(usize, FileBox)>,
}

/// Writes the picture of the database.
pub(crate) fn run(a: LsmArgs) -> Result<()> {
    crate::output::check(&a.html)?;
    let db = a.db.open_read_only()?;
    let stats = db.stats();
    let live = db.live_files();
    close(db)?;
    let mut tables = Vec::new();
    for t in &stats.tables {
        let files = live
            .iter()
            .filter(|f| f.table == t.name)
            .map(|f| {
                (
                    f.level,
                    FileBox {
                        number: f.number,
                        size: f.size,
                        smallest: f.smallest_key.clone(),
                        largest: f.largest_key.clone(),
                    },
                )
            })
            .collect();
        tables.push(CurrentTable {
            name: t.name.clone(),
            strategy: t.strategy.clone(),
            strategy_reason: t.strategy_reason.clone(),
            levels: t
                .levels
                .iter()
                .filter_map(|l| Some((l.level?, (l.files, l.size_bytes, l.score))))
                .collect(),
            files,
        });
    }
    let current = Current { tables };
    let fs = OsFs;
    let number = lithify_version::manifest::read_current(&fs, &a.db.db).context(VersionSnafu)?;
    let manifest = a.db.db.join(manifest_file_name(number));
    let groups =
        lithify_version::manifest::read_edit_groups(&fs, &manifest).context(VersionSnafu)?;
    let steps = replay(&groups);
    let shown = steps.len().saturating_sub(a.max_steps);
    let page = html::page(&html::Page {
        db: &a.db.db,
        manifest: manifest_file_name(number),
        current: &current,
        steps: &steps[shown..],
        skipped_steps: shown,
        encoding: a.db.encoding(),
    });
    crate::output::write(&a.html, page.as_bytes())?;
    let files: usize = current.tables.iter().map(|t| t.files.len()).sum();
    println!(
        "wrote {}: {} table(s), {files} live file(s); {} step(s) of history from {}{}",
        a.html.display(),
        current.tables.len(),
        steps.len(),
        manifest_file_name(number),
        if shown > 0 {
            format!(" (the newest {} drawn)", steps.len() - shown)
        } else {
            String::new()
        }
    );
    Ok(())
}

/// Replays the MANIFEST's records into the steps that changed files.
pub(crate) fn replay(groups: &[(u64, Vec<VersionEdit>)]) -> Vec<Step> {
    let mut tree: BTreeMap<TableId, TableTree> = BTreeMap::new();
    tree.insert(
        DEFAULT_TABLE,
        TableTree {
            name: DEFAULT_TABLE_NAME.to_owned(),
            levels: Vec::new(),
        },
    );
    let (mut flushed_total, mut written_total) = (0u64, 0u64);
    let mut steps = Vec::new();
    for (_, edits) in groups {
        for edit in edits {
            if let Some(name) = &edit.table_add {
                tree.entry(edit.table).or_default().name = name.clone();
            }
            if edit.table_drop {
                tree.remove(&edit.table);
                continue;
            }
            if edit.new_files.is_empty() && edit.deleted_files.is_empty() {
                continue;
            }
            let t = tree.entry(edit.table).or_default();
            let mut removed: BTreeMap<u64, usize> = BTreeMap::new();
            for &(level, number) in &edit.deleted_files {
                if let Some(files) = t.levels.get_mut(level) {
                    files.remove(&number);
                }
                removed.insert(number, level);
            }
            let mut written = 0;
            let mut moved_only = !edit.new_files.is_empty();
            let mut to_levels = Vec::new();
            for (level, f) in &edit.new_files {
                if t.levels.len() <= *level {
                    t.levels.resize_with(level + 1, BTreeMap::new);
                }
                t.levels[*level].insert(
                    f.number,
                    FileBox {
                        number: f.number,
                        size: f.size,
                        smallest: f.smallest_user_key().to_vec(),
                        largest: f.largest_user_key().to_vec(),
                    },
                );
                if !removed.contains_key(&f.number) {
                    moved_only = false;
                    written += f.size;
                }
                to_levels.push(*level);
            }
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
            let mut from: Vec<usize> = removed.values().copied().collect();
            from.sort_unstable();
            from.dedup();
            to_levels.sort_unstable();
            to_levels.dedup();
            let show = |ls: &[usize]| {
                ls.iter()
                    .map(|l| format!("L{l}"))
                    .collect::<Vec<_>>()
                    .join("+")
            };
            let levels = match kind {
                StepKind::Flush => format!("memtable -> {}", show(&to_levels)),
                _ => format!("{} -> {}", show(&from), show(&to_levels)),
            };
            steps.push(Step {
                kind,
                table: t.name.clone(),
                levels,
                bytes_written: written,
                flushed_total,
                written_total,
                tree: tree.clone(),
            });
        }
    }
    steps
}

#[cfg(test)]
mod tests {
    use lithify_base::ValueKind;
    use lithify_base::key::InternalKey;
    use lithify_version::FileMetadata;

    use super::*;

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
        let steps = replay(&groups);
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
        assert_eq!(steps[2].levels, "L0 -> L1");
        assert_eq!(steps[3].levels, "L1 -> L2");
        let last = &steps[3];
        assert_eq!((last.flushed_total, last.written_total), (200, 380));
        let levels = &last.tree[&DEFAULT_TABLE].levels;
        assert!(levels[0].is_empty());
        assert_eq!(levels[1].keys().copied().collect::<Vec<_>>(), [7]);
        assert_eq!(levels[2].keys().copied().collect::<Vec<_>>(), [8]);
    }
}
