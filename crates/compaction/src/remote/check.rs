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
/// What the worker says is checked against the job and the tables:
/// * the outcome answers this job, and the job succeeded;
/// * the records add up: every input record was read, each was written
///   or dropped, and the outputs hold the records written;
/// * every output number is one of the job's reserved numbers, once;
/// * each output's bounds are ordered and inside the inputs' user-key
///   range, and the outputs form one sorted run;
/// * each output's sequence numbers are within the inputs', its times
///   the job's clock (creation) and no later than it (oldest ancestor),
///   and it refers to no blob file;
/// * each output table exists with the claimed size, opens (footer,
///   index, properties, their checksums), carries the writer's identity
///   under its own number, and its properties (counts, sequence numbers,
///   creation time) are the claimed ones;
/// * with `verify_files`, the xxh3 of its whole file is the claimed
///   checksum (it reads every byte). Without it a damaged data block is
///   found when it is read, as in any table.
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
    // The sequence numbers and times the inputs bound: a compaction only
    // keeps or zeroes sequence numbers, and never dates data later than
    // the job's clock.
    let max_seqno = c
        .input_files()
        .map(|(_, f)| f.largest_seqno)
        .max()
        .unwrap_or(0);
    let oldest_input = c
        .input_files()
        .map(|(_, f)| f.oldest_ancestor_time)
        .filter(|&t| t != 0)
        .min()
        .unwrap_or(job.now);
    // The records the inputs hold (point entries), and what the outcome
    // says became of them.
    let input_records: u64 = c
        .input_files()
        .map(|(_, f)| f.num_entries.saturating_sub(f.num_range_deletions))
        .fold(0u64, u64::saturating_add);
    let it = &r.iter_stats;
    if it.records_in != input_records
        || Some(it.records_in) != it.records_out.checked_add(it.dropped())
    {
        return reject(format!(
            "the outcome accounts for {} of the inputs' {input_records} records ({} out, {} dropped)",
            it.records_in,
            it.records_out,
            it.dropped()
        ));
    }
    let output_records = r
        .outputs
        .iter()
        .map(|f| f.num_entries.saturating_sub(f.num_range_deletions))
        .fold(0u64, u64::saturating_add);
    if output_records != it.records_out {
        return reject(format!(
            "the outputs hold {output_records} records, the outcome says {} were written",
            it.records_out
        ));
    }
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
        // One job writes one sorted run, at any level.
        if i > 0 {
            let prev = &r.outputs[i - 1];
            if cmp
                .compare(prev.largest.encoded(), f.smallest.encoded())
                .is_ge()
            {
                return reject(format!("output {name} overlaps the output before it"));
            }
        }
        if f.smallest_seqno > f.largest_seqno || f.largest_seqno > max_seqno {
            return reject(format!(
                "output {name} claims sequence numbers {}..={}, the inputs end at {max_seqno}",
                f.smallest_seqno, f.largest_seqno
            ));
        }
        if !f.blob_refs.is_empty() {
            return reject(format!("output {name} refers to blob files"));
        }
        if f.creation_time != job.now
            || f.oldest_ancestor_time > job.now
            || f.oldest_ancestor_time < oldest_input.min(job.now)
        {
            return reject(format!(
                "output {name} claims creation time {} and oldest ancestor time {}, the job's clock is {} and its inputs' oldest {oldest_input}",
                f.creation_time, f.oldest_ancestor_time, job.now
            ));
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
        if p.num_entries.checked_add(p.num_range_deletions) != Some(f.num_entries)
            || p.num_range_deletions != f.num_range_deletions
            || p.num_deletions != f.num_deletions
            || p.min_seqno != f.smallest_seqno
            || p.max_seqno != f.largest_seqno
            || p.creation_time != f.creation_time
        {
            return reject(format!(
                "output {name}'s properties (entries {}, range deletions {}, deletions {}, sequence numbers {}..={}) differ from the outcome's",
                p.num_entries, p.num_range_deletions, p.num_deletions, p.min_seqno, p.max_seqno
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
