//! The LSM picture of a database (`lithify lsm`): the tree now, and every
//! flush, compaction and trivial move its MANIFEST remembers, as one
//! self-contained HTML page drawn with [`chart::Svg`](crate::chart::Svg).
//!
//! The current tree comes from an open database (read-only is enough):
//! levels, files, scores and each table's strategy, and its blob files
//! (key-value separation) with the share of each that is garbage. The history comes from
//! the MANIFEST `CURRENT` names: every record since that MANIFEST was
//! started (at the last open or MANIFEST roll) is replayed, and each
//! record that changed the files of a table becomes one step — a flush
//! (files added, none removed), a compaction (files replaced), a trivial
//! move (the same files at a new level) — with the bytes it wrote. Earlier
//! history is not kept anywhere, and the page says how far back it
//! reaches.
//!
//! ```
//! use lithify::{Db, Options};
//! use lithify_bench::lsm::Picture;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let db = Db::open(dir.path(), Options::default())?;
//! db.put(b"k", b"v")?;
//! db.flush()?;
//! let picture = Picture::read(&db)?;
//! db.close()?;
//! assert_eq!(picture.steps.len(), 1); // the flush
//! let page = picture.page(dir.path(), 200, &|key| lithify::text::escape(key));
//! assert!(page.contains("<svg"));
//! # Ok(())
//! # }
//! ```

mod html;

use std::collections::BTreeMap;
use std::path::Path;

use lithify::Db;
use lithify::files::manifest_file_name;
use lithify::inspect::manifest::{HistoryStep, StepKind, TableId, read_history};
use snafu::ResultExt as _;

use crate::error::{ManifestSnafu, Result};

/// One SST file as drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileBox {
    /// The file's number (`000012.sst`).
    pub number: u64,
    /// Its bytes.
    pub size: u64,
    /// Its smallest user key.
    pub smallest: Vec<u8>,
    /// Its largest user key.
    pub largest: Vec<u8>,
}

/// One blob file as drawn (key-value separation): its bytes and how much
/// of its values are garbage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobBox {
    /// The file's number (`000013.blob`).
    pub number: u64,
    /// Its bytes.
    pub size: u64,
    /// Stored value bytes in it.
    pub blob_bytes: u64,
    /// Of those, bytes no SST refers to any more.
    pub garbage_bytes: u64,
}

/// One table's levels.
#[derive(Debug, Clone, Default)]
pub struct TableTree {
    /// The table's name.
    pub name: String,
    /// Per level, its files by number.
    pub levels: Vec<BTreeMap<u64, FileBox>>,
    /// Its blob files by number.
    pub blob_files: Vec<BlobBox>,
}

/// One change of the tree.
#[derive(Debug, Clone)]
pub struct Step {
    /// Flush, compaction or trivial move.
    pub kind: StepKind,
    /// The table it changed.
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
pub struct Current {
    /// Every table, in the order the database lists them.
    pub tables: Vec<CurrentTable>,
}

/// One table of the current tree.
#[derive(Debug, Clone)]
pub struct CurrentTable {
    /// The table's name.
    pub name: String,
    /// Its compaction strategy in force.
    pub strategy: String,
    /// Why that strategy is in force.
    pub strategy_reason: String,
    /// Per level: level -> (files, bytes, score).
    pub levels: BTreeMap<usize, (usize, u64, f64)>,
    /// Its live files with their levels.
    pub files: Vec<(usize, FileBox)>,
    /// Its live blob files by number.
    pub blob_files: Vec<BlobBox>,
}

/// What the page draws: the current tree and the MANIFEST's history.
#[derive(Debug, Clone)]
pub struct Picture {
    /// The tree now.
    pub current: Current,
    /// Every step the MANIFEST remembers, oldest first.
    pub steps: Vec<Step>,
    /// The MANIFEST the history comes from (`MANIFEST-000005`).
    pub manifest: String,
}

impl Picture {
    /// Reads the picture of the database `db`: its tree from `db`, its
    /// history from the MANIFEST in its directory.
    pub fn read(db: &Db) -> Result<Picture> {
        let dir = db.path();
        let stats = db.stats();
        let live = db.live_files();
        let blobs = db.live_blob_files();
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
                blob_files: blobs
                    .iter()
                    .filter(|b| b.table == t.name)
                    .map(|b| BlobBox {
                        number: b.number,
                        size: b.size,
                        blob_bytes: b.blob_bytes,
                        garbage_bytes: b.garbage_bytes,
                    })
                    .collect(),
            });
        }
        let options = db.options();
        let comparator = options.comparator.clone();
        let known = |name: &str| (name == comparator.name()).then(|| comparator.clone());
        let history = read_history(&*options.fs, dir, &known).context(ManifestSnafu)?;
        Ok(Picture {
            current: Current { tables },
            steps: history.steps.iter().map(drawn).collect(),
            manifest: manifest_file_name(history.manifest_number),
        })
    }

    /// The page: the tree now, then the newest `max_steps` steps (a slider
    /// picks one) and a chart of the bytes each wrote; `show` prints a key.
    pub fn page(&self, db: &Path, max_steps: usize, show: &dyn Fn(&[u8]) -> String) -> String {
        let skipped = self.steps.len().saturating_sub(max_steps);
        html::page(&html::Page {
            db,
            manifest: &self.manifest,
            current: &self.current,
            steps: &self.steps[skipped..],
            skipped_steps: skipped,
            show,
        })
    }
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
                blob_files: t
                    .version
                    .blob_files()
                    .values()
                    .map(|b| BlobBox {
                        number: b.number(),
                        size: b.meta.file_size,
                        blob_bytes: b.meta.blob_bytes,
                        garbage_bytes: b.garbage_bytes,
                    })
                    .collect(),
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
