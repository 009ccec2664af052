//! `lithify log check PATH`: verify a log directory or a data directory
//! the way `Log::open` and the log cleaner would, changing nothing
//! (`lithify::log::verify`; this command only prints its report).
//!
//! Each problem (what open or the cleaner refuses) is an `error:` line on
//! stderr and each warning (what open repairs or accepts: a torn tail
//! above the recovery point, indexes it rebuilds, `.deleted` leftovers it
//! deletes, offset gaps) a `warning:` line, each naming the file and byte
//! offset; a summary goes to stdout. Exit status 3 if any problem was
//! found, 0 otherwise (warnings alone). While a writer (`log produce`,
//! `log clean`) holds the log, the check is refused, exit status 2.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use lithify::vfs::{FileSystem, OsFs};
use snafu::ResultExt as _;

use crate::error::{DamagedSnafu, LogSnafu, Result, UsageSnafu};
use crate::json::JsonArgs;

/// Arguments of `log check`.
#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// A log directory (`<topic>-<partition>`) or a data directory.
    pub path: PathBuf,
    #[command(flatten)]
    pub json: JsonArgs,
}

/// One problem or warning in `--json`.
fn finding_json(f: &lithify::log::Finding) -> serde_json::Value {
    serde_json::json!({
        "file": f.file.display().to_string(),
        "offset": f.offset,
        "message": f.message,
    })
}

/// Runs `log check`.
pub(crate) fn run(a: CheckArgs) -> Result<()> {
    let fs: Arc<dyn FileSystem> = Arc::new(OsFs);
    if !fs.is_dir(&a.path) {
        return UsageSnafu {
            message: format!(
                "{} is not a directory (log check takes a log directory or a data directory)",
                a.path.display()
            ),
        }
        .fail();
    }
    let report = lithify::log::verify(&fs, &a.path).context(LogSnafu)?;
    if a.json.json {
        crate::json::print(&serde_json::json!({
            "ok": report.problems.is_empty(),
            "path": a.path.display().to_string(),
            "logs": report.logs,
            "segments": report.segments,
            "batches": report.batches,
            "problems": report.problems.iter().map(finding_json).collect::<Vec<_>>(),
            "warnings": report.warnings.iter().map(finding_json).collect::<Vec<_>>(),
        }))?;
        return fail_on_problems(&report);
    }
    print_findings(&report);
    println!(
        "{}: {} logs, {} segments, {} batches checked: {} problems, {} warnings",
        a.path.display(),
        report.logs,
        report.segments,
        report.batches,
        report.problems.len(),
        report.warnings.len()
    );
    fail_on_problems(&report)
}

/// Prints a verification's problems, then its warnings, on stderr.
pub(crate) fn print_findings(report: &lithify::log::VerifyReport) {
    for p in &report.problems {
        eprintln!("error: {p}");
    }
    for w in &report.warnings {
        eprintln!("warning: {w}");
    }
}

/// An error for the first problem of a verification, if it found any.
pub(crate) fn fail_on_problems(report: &lithify::log::VerifyReport) -> Result<()> {
    match report.problems.first() {
        None => Ok(()),
        Some(first) => DamagedSnafu {
            path: first.file.clone(),
            message: format!(
                "{} problems that open or the cleaner refuse (see above), the first: {}",
                report.problems.len(),
                first.offset.map_or(first.message.clone(), |o| format!(
                    "at byte offset {o}: {}",
                    first.message
                ))
            ),
        }
        .fail(),
    }
}
