//! `check --db DIR`: is the database intact? RocksDB's `ldb
//! checkconsistency` and `sst_dump --command=verify` in one pass, reading
//! only (nothing in the directory changes).
//!
//! 1. `CURRENT` and the MANIFEST it names replay into a state (a torn last
//!    record is reported: an open would drop it);
//! 2. every SST file that state lists exists with its recorded size,
//!    carries the unique id and has the whole-file checksum the MANIFEST
//!    records (files written before they were recorded have none), opens,
//!    and every data block reads back with a matching checksum,
//!    decodes, and holds keys in order, with the counts its properties
//!    record (steps 1 and 2 are `lithify::verify_sst_files`);
//! 3. the WALs replay read-only in the chosen recovery mode: whatever the
//!    recovery would refuse or drop is a problem;
//! 4. every key whose merge operands do not merge is a problem
//!    (`Db::verify_merges`); without `--merge-operator`, keys holding
//!    operands cannot be checked and are counted in a note.
//!
//! One line per problem on stdout, naming the file and byte offset; the
//! exit status is 0 only when there is none.

use std::path::Path;
use std::sync::Arc;

use clap::Args;
use lithify::Db;
use lithify::vfs::{FileSystem, OsFs};

use crate::db::DbArgs;
use crate::error::{ProblemsSnafu, Result};

/// Arguments of `check`.
#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    #[command(flatten)]
    pub db: DbArgs,
}

/// The problems found, printed as they are found.
#[derive(Default)]
struct Problems(Vec<String>);

impl Problems {
    fn add(&mut self, file: &Path, message: impl std::fmt::Display) {
        let line = format!("problem: {}: {message}", file.display());
        println!("{line}");
        self.0.push(line);
    }
}

/// Runs `check`.
pub(crate) fn check(a: CheckArgs) -> Result<()> {
    a.db.check_dir()?;
    let dir = a.db.db.as_path();
    let fs: Arc<dyn FileSystem> = Arc::new(OsFs);
    let mut problems = Problems::default();

    // 1 and 2: CURRENT, the MANIFEST and every live SST.
    let ssts = lithify::verify_sst_files(Arc::clone(&fs), dir);
    for p in &ssts.problems {
        problems.add(&p.path, &p.message);
    }
    let Some(manifest) = ssts.manifest else {
        return finish(&problems, "the MANIFEST could not be replayed");
    };
    let (files, blocks, entries) = (ssts.files, ssts.data_blocks, ssts.entries);

    // 3. The WALs, as a read-only open would replay them; then every key
    //    whose merge operands do not merge.
    let options = a.db.options().paranoid_checks(false);
    let mut wals = 0;
    match Db::open_read_only(dir, options) {
        Err(e) => problems.add(dir, e),
        Ok(db) => {
            let report = db.recovery_report().clone();
            wals = report.wals_replayed.len();
            for d in &report.dropped {
                // The MANIFEST's torn tail was reported above.
                if d.file != manifest {
                    problems.add(
                        &d.file,
                        format!(
                            "at offset {}: {} bytes an open drops: {}",
                            d.offset, d.len, d.reason
                        ),
                    );
                }
            }
            match db.verify_merges() {
                // A damaged table stops the walk: step 2 may have named it.
                Err(e) => {
                    let text = e.to_string();
                    if !problems.0.iter().any(|p| p.ends_with(&text)) {
                        problems.add(dir, text);
                    }
                }
                Ok(failures) => {
                    let (unchecked, failures): (Vec<_>, Vec<_>) =
                        failures.into_iter().partition(|f| f.operator_missing);
                    if !unchecked.is_empty() {
                        println!(
                            "note: {} key(s) hold merge operands, not checked: pass --merge-operator ({})",
                            unchecked.len(),
                            unchecked[0].message
                        );
                    }
                    for f in failures {
                        problems.add(
                            dir,
                            format!(
                                "table {:?}: key {} cannot be read: {}",
                                f.table,
                                a.db.encoding().show(&f.key),
                                f.message
                            ),
                        );
                    }
                }
            }
            drop(db);
        }
    }
    let lost = lithify::vfs::lost::kept_files(&*fs, dir);
    if !lost.is_empty() {
        println!(
            "note: {} file(s) earlier recoveries kept in {}: {}",
            lost.len(),
            dir.join(lithify::vfs::lost::LOST_DIR).display(),
            lost.join(", ")
        );
    }
    finish(
        &problems,
        &format!(
            "{}, {files} SST files ({blocks} data blocks, {entries} entries), {wals} WAL(s)",
            manifest.display()
        ),
    )
}

fn finish(problems: &Problems, checked: &str) -> Result<()> {
    if problems.0.is_empty() {
        println!("ok: checked {checked}: no problem found");
        return Ok(());
    }
    ProblemsSnafu {
        message: format!("{} problem(s) found (checked {checked})", problems.0.len()),
    }
    .fail()
}
