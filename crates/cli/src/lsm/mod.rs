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
use lithify::files::manifest_file_name;
use lithify::inspect::manifest::{HistoryStep, StepKind, TableId, read_history};
use lithify::vfs::OsFs;
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

/// One SST file as drawn.
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
    // The tables' order is the one the database was opened with above.
    let comparator = a.db.options().comparator;
    let known = |name: &str| (name == comparator.name()).then(|| comparator.clone());
    let history = read_history(&fs, &a.db.db, &known).context(VersionSnafu)?;
    let number = history.manifest_number;
    let steps: Vec<Step> = history.steps.iter().map(drawn).collect();
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

/// A step of the MANIFEST's history as drawn.
fn drawn(step: &HistoryStep) -> Step {
    let tree = step
        .tree
        .iter()
        .map(|(id, t)| {
            let levels = (0..t.levels_used)
                .map(|level| {
                    t.version
                        .files(level)
                        .iter()
                        .map(|f| {
                            let file = FileBox {
                                number: f.number,
                                size: f.size,
                                smallest: f.smallest_user_key().to_vec(),
                                largest: f.largest_user_key().to_vec(),
                            };
                            (f.number, file)
                        })
                        .collect()
                })
                .collect();
            let tree = TableTree {
                name: t.name.clone(),
                levels,
            };
            (*id, tree)
        })
        .collect();
    Step {
        kind: step.kind,
        table: step
            .tree
            .get(&step.table)
            .map_or_else(String::new, |t| t.name.clone()),
        levels: step.levels(),
        bytes_written: step.bytes_written,
        flushed_total: step.flushed_total,
        written_total: step.written_total,
        tree,
    }
}
