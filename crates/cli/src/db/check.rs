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
//!    record, and every blob file (key-value separation) exists with its
//!    recorded size, identity and counts, and every record reads back
//!    with matching checksums (steps 1 and 2 are
//!    `lithify::verify_sst_files`);
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
use crate::json::JsonArgs;
use crate::text::HexArgs;

/// Arguments of `check`.
#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    #[command(flatten)]
    pub db: DbArgs,
    #[command(flatten)]
    pub hex: HexArgs,
    #[command(flatten)]
    pub json: JsonArgs,
}

/// The problems and notes found: printed as they are found, or with
/// `--json` gathered into one object at the end.
#[derive(Default)]
struct Problems {
    json: bool,
    /// Each problem's file and message.
    found: Vec<(String, String)>,
    notes: Vec<String>,
}

impl Problems {
    fn add(&mut self, file: &Path, message: impl std::fmt::Display) {
        let (file, message) = (file.display().to_string(), message.to_string());
        if !self.json {
            println!("problem: {file}: {message}");
        }
        self.found.push((file, message));
    }

    fn note(&mut self, note: String) {
        if !self.json {
            println!("note: {note}");
        }
        self.notes.push(note);
    }
}

/// Runs `check`.
pub(crate) fn check(a: CheckArgs) -> Result<()> {
    a.db.check_dir()?;
    let dir = a.db.db.as_path();
    let fs: Arc<dyn FileSystem> = Arc::new(OsFs);
    let mut problems = Problems {
        json: a.json.json,
        ..Problems::default()
    };

    // 1 and 2: CURRENT, the MANIFEST and every live SST.
    let mut bar = crate::progress::Bar::new(&format!("checking {}", dir.display()));
    let ssts = lithify::verify_sst_files_with(Arc::clone(&fs), dir, &mut |p| {
        bar.set(p.bytes_done, Some(p.bytes_total));
    });
    drop(bar);
    for p in &ssts.problems {
        problems.add(&p.path, &p.message);
    }
    let Some(manifest) = ssts.manifest else {
        return finish(&problems, "the MANIFEST could not be replayed");
    };
    let (files, blocks, entries) = (ssts.files, ssts.data_blocks, ssts.entries);
    let blobs = if ssts.blob_files > 0 {
        format!(
            ", {} blob files ({} values)",
            ssts.blob_files, ssts.blob_values
        )
    } else {
        String::new()
    };

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
                    if !problems.found.iter().any(|(_, m)| m.ends_with(&text)) {
                        problems.add(dir, text);
                    }
                }
                Ok(failures) => {
                    let (unchecked, failures): (Vec<_>, Vec<_>) =
                        failures.into_iter().partition(|f| f.operator_missing);
                    if !unchecked.is_empty() {
                        problems.note(format!(
                            "{} key(s) hold merge operands, not checked: pass --merge-operator ({})",
                            unchecked.len(),
                            unchecked[0].message
                        ));
                    }
                    for f in failures {
                        problems.add(
                            dir,
                            format!(
                                "table {:?}: key {} cannot be read: {}",
                                f.table,
                                a.hex.encoding().show(&f.key),
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
        problems.note(format!(
            "{} file(s) earlier recoveries kept in {}: {}",
            lost.len(),
            dir.join(lithify::vfs::lost::LOST_DIR).display(),
            lost.join(", ")
        ));
    }
    finish(
        &problems,
        &format!(
            "{}, {files} SST files ({blocks} data blocks, {entries} entries){blobs}, {wals} WAL(s)",
            manifest.display()
        ),
    )
}

fn finish(problems: &Problems, checked: &str) -> Result<()> {
    if problems.json {
        let found: Vec<serde_json::Value> = problems
            .found
            .iter()
            .map(|(file, message)| serde_json::json!({"file": file, "message": message}))
            .collect();
        crate::json::print(&serde_json::json!({
            "ok": found.is_empty(),
            "checked": checked,
            "problems": found,
            "notes": problems.notes,
        }))?;
    } else if problems.found.is_empty() {
        println!("ok: checked {checked}: no problem found");
    }
    if problems.found.is_empty() {
        return Ok(());
    }
    ProblemsSnafu {
        message: format!(
            "{} problem(s) found (checked {checked})",
            problems.found.len()
        ),
    }
    .fail()
}
