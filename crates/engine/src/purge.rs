//! Deleting files nothing needs any more: tables and blob files no
//! version references,
//! MANIFESTs CURRENT no longer names, WALs below the minimum log number
//! to keep, and (at open) orphans left by a crashed flush or compaction.
//! A file being written by a running job is never deleted: running jobs'
//! outputs are not in any version yet, and orphan deletion runs only at
//! open, before any job starts.

use std::collections::BTreeSet;

use lithify_base::sync::atomic::Ordering;
use lithify_version::filename::{
    FileKind, blob_file_name, manifest_file_name, parse_file_name, sst_file_name,
};

use crate::state::DbInner;
use crate::wal::log_path;

/// Why obsolete SST files outlived a purge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeldBy {
    /// `disable_file_deletions`, or a checkpoint or backup in progress.
    DeletionsDisabled,
    /// An iterator, a snapshot read in progress or a running job still
    /// reads a version that names them.
    Readers,
}

impl HeldBy {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            HeldBy::DeletionsDisabled => {
                "file deletions are disabled (disable_file_deletions, or a checkpoint or backup in progress)"
            }
            HeldBy::Readers => {
                "an iterator or a running job still reads an older version that names them"
            }
        }
    }
}

/// One more reason not to delete obsolete files; returns once no
/// purge that started before it is still deleting.
pub(crate) fn disable_file_deletions(db: &DbInner) {
    db.deletions_disabled.fetch_add(1, Ordering::AcqRel);
    drop(db.purge_lock.lock());
}

/// One reason less; at none, the files that became obsolete meanwhile
/// are deleted. Returns how many reasons remain.
pub(crate) fn enable_file_deletions(db: &DbInner) -> usize {
    let previous = db
        .deletions_disabled
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            Some(n.saturating_sub(1))
        })
        .unwrap_or(0);
    let now = previous.saturating_sub(1);
    if now == 0 && previous > 0 {
        purge_obsolete_files(db);
    }
    now
}

/// Whether file deletions are disabled.
pub(crate) fn file_deletions_disabled(db: &DbInner) -> bool {
    db.deletions_disabled.load(Ordering::Acquire) > 0
}

/// Deletes obsolete tables, MANIFESTs and WALs. Failures to delete are
/// ignored, with a warning: the file is an orphan the next open
/// removes. Returns the SST files that stay obsolete but undeleted,
/// and why.
pub(crate) fn purge_obsolete_files(db: &DbInner) -> Option<(Vec<u64>, HeldBy)> {
    // Held to the end: a disable that comes meanwhile waits for this
    // purge, so nothing is deleted after it returns.
    let _purging = db.purge_lock.lock();
    if db.opened_read_only {
        return None;
    }
    if file_deletions_disabled(db) {
        // Disabled: the files stay candidates (the version set keeps
        // them) until deletions are enabled again.
        let held = db.versions.pending_obsolete();
        return (!held.is_empty()).then_some((held, HeldBy::DeletionsDisabled));
    }
    let obsolete = db.versions.obsolete_files();
    for number in obsolete.tables {
        remove_obsolete(db, &db.dir.join(sst_file_name(number)));
    }
    for number in obsolete.blob_files {
        db.opener.blobs.evict(number);
        remove_obsolete(db, &db.dir.join(blob_file_name(number)));
    }
    for number in obsolete.manifests {
        remove_obsolete(db, &db.dir.join(manifest_file_name(number)));
    }
    let held = db.versions.pending_obsolete();
    let held = (!held.is_empty()).then_some((held, HeldBy::Readers));
    let min_log = db.versions.min_log_number_to_keep();
    let dead = db.lock_state().take_logs_below(min_log);
    if !dead.is_empty() {
        let mut leader = db.leader.lock();
        leader.drop_logs_below(min_log);
        // Up to `recycle_log_file_num` of them wait to be written over.
        let keep = db
            .options
            .recycle_log_file_num
            .saturating_sub(leader.recyclable.len())
            .min(dead.len());
        leader.recyclable.extend(&dead[dead.len() - keep..]);
        drop(leader);
        for &n in &dead[..dead.len() - keep] {
            remove_obsolete(db, &log_path(&db.dir, n));
        }
    }
    held
}

/// Removes the obsolete WALs kept for recycling (at close: no later WAL
/// of this open will reuse them).
pub(crate) fn remove_recyclable_wals(db: &DbInner) {
    if file_deletions_disabled(db) {
        return;
    }
    let numbers: Vec<u64> = db.leader.lock().recyclable.drain(..).collect();
    for n in numbers {
        remove_obsolete(db, &log_path(&db.dir, n));
    }
}

/// Removes an obsolete file; a failure is reported (an event and a
/// `LOG` line naming it) and left to the next open's orphan sweep.
fn remove_obsolete(db: &DbInner, path: &std::path::Path) {
    match db.fs.remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => db.events.emit(
            crate::events::Level::Warn,
            "delete_failed",
            format_args!(
                "cannot delete obsolete file {}: {e}; the next open removes it",
                path.display()
            ),
        ),
    }
}

/// Files of a database directory that no live state needs, found at open:
/// tables and blob files not in `live_tables`, WALs below `min_log`,
/// MANIFESTs other than `manifest`, a leftover `CURRENT.tmp`.
pub(crate) fn orphans(
    names: &[String],
    live_tables: &BTreeSet<u64>,
    min_log: u64,
    manifest: u64,
) -> Vec<String> {
    names
        .iter()
        .filter(|name| match parse_file_name(name) {
            Some(FileKind::Sst(n) | FileKind::Blob(n)) => !live_tables.contains(&n),
            Some(FileKind::Log(n)) => n < min_log,
            Some(FileKind::Manifest(n)) => n != manifest,
            Some(FileKind::CurrentTmp) => true,
            Some(FileKind::Current) | None => false,
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orphan_rules() {
        let names: Vec<String> = [
            "000001.log",
            "000007.log",
            "000003.sst",
            "000004.sst",
            "000006.blob",
            "000008.blob",
            "MANIFEST-000002",
            "MANIFEST-000005",
            "CURRENT",
            "CURRENT.tmp",
            "LOCK",
            "notes.txt",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let live = BTreeSet::from([4, 8]);
        let got = orphans(&names, &live, 7, 5);
        assert_eq!(
            got,
            [
                "000001.log",
                "000003.sst",
                "000006.blob",
                "MANIFEST-000002",
                "CURRENT.tmp"
            ]
        );
    }
}
