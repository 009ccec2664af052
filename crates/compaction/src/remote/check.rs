//! The primary's side: [`check_remote_result`].

use std::collections::BTreeSet;

use lithify_base::{Comparator as _, Id, InternalKeyComparator};
use lithify_version::filename::sst_file_name;
use lithify_vfs::FileSystem;

use super::job::RemoteJob;
use super::outcome::RemoteOutcome;
use crate::error::{RemoteRejectedSnafu, Result};
use crate::job::{CompactionResult, SstOpener};

/// Checks a worker's `outcome` for `job` and turns it into the result the
/// engine installs (the edit deletes the inputs and adds the outputs at
/// the output level, with the job's round-robin cursor).
///
/// Nothing the worker says is believed unchecked:
/// * the outcome answers this job, and the job succeeded;
/// * every output number is one of the job's reserved numbers, once;
/// * each output's keys are in order, inside the inputs' user-key range,
///   and (below L0) the outputs do not overlap;
/// * each output table exists with the claimed size, opens (footer,
///   index, properties, their checksums), carries the writer's identity
///   under its own number and the claimed entry count, and the xxh3 of
///   its whole file is the claimed checksum (`verify_files`; it reads
///   every byte).
///
/// The error names the job and what failed; the caller then removes the
/// outputs (any file with a reserved number) and runs the job itself.
pub fn check_remote_result(
    job: &RemoteJob,
    outcome: RemoteOutcome,
    opener: &dyn SstOpener,
    fs: &dyn FileSystem,
    dir: &std::path::Path,
    cmp: &InternalKeyComparator,
    verify_files: bool,
) -> Result<CompactionResult> {
    let reject = |message: String| {
        RemoteRejectedSnafu {
            job: job.id,
            message,
        }
        .fail()
    };
    let r = match outcome {
        RemoteOutcome::Failed { id, message } if id == job.id => {
            return reject(format!("the worker failed: {message}"));
        }
        RemoteOutcome::Failed { id, .. } => return reject(format!("an outcome of job {id}")),
        RemoteOutcome::Done(r) if r.id != job.id => {
            return reject(format!("an outcome of job {}", r.id));
        }
        RemoteOutcome::Done(r) => *r,
    };
    let c = &job.compaction;
    let (lo, hi) = c.user_key_range(cmp);
    let mut seen = BTreeSet::new();
    for (i, f) in r.outputs.iter().enumerate() {
        let name = sst_file_name(f.number);
        if !job.output_numbers.contains(&f.number) || !seen.insert(f.number) {
            return reject(format!(
                "output {name} is not one of the job's reserved numbers, once"
            ));
        }
        if cmp
            .compare(f.smallest.encoded(), f.largest.encoded())
            .is_gt()
        {
            return reject(format!(
                "output {name} has its smallest key after its largest"
            ));
        }
        if cmp.compare_user(f.smallest_user_key(), &lo).is_lt()
            || cmp.compare_user(f.largest_user_key(), &hi).is_gt()
        {
            return reject(format!("output {name} has keys outside the inputs' range"));
        }
        if c.output_level > 0 && i > 0 {
            let prev = &r.outputs[i - 1];
            if cmp
                .compare(prev.largest.encoded(), f.smallest.encoded())
                .is_ge()
            {
                return reject(format!("output {name} overlaps the output before it"));
            }
        }
        let path = dir.join(&name);
        match fs.file_size(&path) {
            Ok(size) if size == f.size => {}
            Ok(size) => {
                return reject(format!(
                    "output {name} has {size} bytes, the outcome says {}",
                    f.size
                ));
            }
            Err(e) => return reject(format!("output {name}: {e}")),
        }
        let table = match opener.open_sst(f) {
            Ok(t) => t,
            Err(e) => return reject(format!("output {name} does not open: {e}")),
        };
        let p = table.properties();
        let expected = Id::derive(&[
            job.db_id.as_bytes(),
            job.session_id.as_bytes(),
            &f.number.to_le_bytes(),
        ]);
        if p.unique_id() != Some(expected) || f.unique_id != Some(expected) {
            return reject(format!(
                "output {name} does not carry the writer's identity under its number"
            ));
        }
        if p.num_entries + p.num_range_deletions != f.num_entries
            || p.num_range_deletions != f.num_range_deletions
        {
            return reject(format!(
                "output {name} holds {} entries, the outcome says {}",
                p.num_entries + p.num_range_deletions,
                f.num_entries
            ));
        }
        if verify_files {
            let Some(claimed) = f.file_checksum else {
                return reject(format!("output {name} has no checksum"));
            };
            let file = match fs.open(&path) {
                Ok(file) => file,
                Err(e) => return reject(format!("output {name}: {e}")),
            };
            match lithify_sstable::file_checksum(&*file, &path, f.size) {
                Ok(actual) if actual == claimed => {}
                Ok(actual) => {
                    return reject(format!(
                        "output {name}: the xxh3 of its bytes is {actual:016x}, the outcome says {claimed:016x}"
                    ));
                }
                Err(e) => return reject(format!("output {name}: {e}")),
            }
        }
    }
    let mut edit = c.input_deletion_edit();
    for f in &r.outputs {
        edit.add_file(c.output_level, f.clone());
    }
    Ok(CompactionResult {
        edit,
        outputs: r.outputs,
        blob_files: Vec::new(),
        stats: r.stats,
        iter_stats: r.iter_stats,
        subcompactions: r.subcompactions,
    })
}
