//! Applying edits to a version.
//!
//! [`VersionBuilder`] accumulates the file changes of any number of edits
//! on top of a base version (deleted numbers per level, added files per
//! level) and builds the resulting version once: recovery replays a whole
//! MANIFEST into one builder over an empty version, `log_and_apply` applies
//! one edit group over the current version. Untouched levels keep sharing
//! the base's `Arc`s.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use lithify_base::{Comparator, InternalKey};

use crate::blob_file::{BlobFile, BlobFileMetadata};
use crate::edit::VersionEdit;
use crate::file_metadata::FileMetadata;
use crate::version::{LevelFiles, Version};

/// Accumulates edits over a base version. Errors are messages naming the
/// offending file; callers add where the edit came from.
pub(crate) struct VersionBuilder {
    base: Arc<Version>,
    /// Per level: base files removed.
    deleted: Vec<HashSet<u64>>,
    /// Per level: files added (possibly later deleted again).
    added: Vec<HashMap<u64, FileMetadata>>,
    /// Every number added, with its level.
    added_at: HashMap<u64, usize>,
    /// Cursor changes per level.
    cursors: Vec<Option<InternalKey>>,
    cursor_set: Vec<bool>,
    /// Number -> level of every base file, built on first need.
    base_index: Option<HashMap<u64, usize>>,
    /// Blob files added.
    blobs_added: BTreeMap<u64, BlobFile>,
    /// Garbage (count, bytes) recorded per blob file.
    blob_garbage: BTreeMap<u64, (u64, u64)>,
}

/// What [`VersionBuilder::build`] made.
pub(crate) struct Built {
    pub(crate) version: Version,
    /// The `Arc`s created for added files.
    pub(crate) created: Vec<Arc<FileMetadata>>,
    /// The `Arc`s of added blob files still in the version.
    pub(crate) created_blobs: Vec<Arc<BlobFileMetadata>>,
    /// Blob files of the base that left the version (no file refers to
    /// them any more).
    pub(crate) removed_blobs: Vec<u64>,
}

impl VersionBuilder {
    pub(crate) fn new(base: Arc<Version>) -> Self {
        let n = base.num_levels();
        VersionBuilder {
            base,
            deleted: vec![HashSet::new(); n],
            added: vec![HashMap::new(); n],
            added_at: HashMap::new(),
            cursors: vec![None; n],
            cursor_set: vec![false; n],
            base_index: None,
            blobs_added: BTreeMap::new(),
            blob_garbage: BTreeMap::new(),
        }
    }

    fn base_level_of(&mut self, number: u64) -> Option<usize> {
        let base = &self.base;
        self.base_index
            .get_or_insert_with(|| base.all_files().map(|(l, f)| (f.number, l)).collect())
            .get(&number)
            .copied()
    }

    fn check_level(&self, level: usize) -> Result<(), String> {
        if level >= self.base.num_levels() {
            return Err(format!(
                "level {level} does not exist (the table has {} levels)",
                self.base.num_levels()
            ));
        }
        Ok(())
    }

    /// Applies the file and cursor changes of `edit` (deletes first, then
    /// adds, so a file can move between levels in one edit).
    pub(crate) fn apply(&mut self, edit: &VersionEdit) -> Result<(), String> {
        for &(level, number) in &edit.deleted_files {
            self.check_level(level)?;
            if self.added[level].remove(&number).is_some() {
                self.added_at.remove(&number);
                continue;
            }
            if self.base_level_of(number) == Some(level) && self.deleted[level].insert(number) {
                continue;
            }
            return Err(format!(
                "deleting file {number:06}, which is not in L{level}"
            ));
        }
        for (level, file) in &edit.new_files {
            let level = *level;
            self.check_level(level)?;
            let number = file.number;
            let existing = match self.added_at.get(&number) {
                Some(&l) => Some(l),
                None => self
                    .base_level_of(number)
                    .filter(|&l| !self.deleted[l].contains(&number)),
            };
            if let Some(l) = existing {
                return Err(format!(
                    "adding file {number:06} to L{level}, but it is already in L{l}"
                ));
            }
            self.added[level].insert(number, file.clone());
            self.added_at.insert(number, level);
        }
        for (level, key) in &edit.compact_cursors {
            self.check_level(*level)?;
            self.cursors[*level] = Some(key.clone());
            self.cursor_set[*level] = true;
        }
        for blob in &edit.blob_file_additions {
            if self.base.blob_files.contains_key(&blob.number)
                || self.blobs_added.contains_key(&blob.number)
            {
                return Err(format!(
                    "adding blob file {:06}, which the table already has",
                    blob.number
                ));
            }
            self.blobs_added
                .insert(blob.number, BlobFile::new(blob.clone()));
        }
        for g in &edit.blob_file_garbage {
            if !self.base.blob_files.contains_key(&g.number)
                && !self.blobs_added.contains_key(&g.number)
            {
                return Err(format!(
                    "garbage in blob file {:06}, which the table does not have",
                    g.number
                ));
            }
            let sum = self.blob_garbage.entry(g.number).or_default();
            sum.0 += g.count;
            sum.1 += g.bytes;
        }
        Ok(())
    }

    /// The blob files after the edits: the base's and the added ones with
    /// their garbage, checked against the references of `levels` (every
    /// reference names a blob file, and the values referred to are exactly
    /// those not garbage). A blob file nothing refers to leaves. Returns
    /// the map, the added files kept and the base files that left.
    #[allow(clippy::type_complexity)]
    fn build_blob_files(
        base: &Version,
        blobs_added: BTreeMap<u64, BlobFile>,
        blob_garbage: BTreeMap<u64, (u64, u64)>,
        levels: &[LevelFiles],
    ) -> Result<
        (
            Arc<BTreeMap<u64, BlobFile>>,
            Vec<Arc<BlobFileMetadata>>,
            Vec<u64>,
        ),
        String,
    > {
        let mut refs: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
        for file in levels.iter().flat_map(|l| l.iter()) {
            for r in &file.blob_refs {
                let sum = refs.entry(r.file_number).or_default();
                sum.0 += r.count;
                sum.1 += r.bytes;
            }
        }
        if refs.is_empty() && blobs_added.is_empty() && base.blob_files.is_empty() {
            return Ok((base.blob_files.clone(), Vec::new(), Vec::new()));
        }
        let mut files: BTreeMap<u64, BlobFile> = (*base.blob_files).clone();
        files.extend(blobs_added);
        for (number, (count, bytes)) in blob_garbage {
            let Some(blob) = files.get_mut(&number) else {
                return Err(format!(
                    "garbage in blob file {number:06}, which the table does not have"
                ));
            };
            blob.garbage_count += count;
            blob.garbage_bytes += bytes;
            if blob.garbage_count > blob.meta.blob_count
                || blob.garbage_bytes > blob.meta.blob_bytes
            {
                return Err(format!(
                    "blob file {number:06} would have {} garbage values of {} bytes, more than its {} values of {} bytes",
                    blob.garbage_count,
                    blob.garbage_bytes,
                    blob.meta.blob_count,
                    blob.meta.blob_bytes
                ));
            }
        }
        if let Some(number) = refs.keys().find(|n| !files.contains_key(n)) {
            return Err(format!(
                "a file refers to blob file {number:06}, which the table does not have"
            ));
        }
        let mut removed = Vec::new();
        let mut kept = BTreeMap::new();
        for (number, blob) in files {
            let live = refs.get(&number).copied().unwrap_or_default();
            if live != (blob.live_count(), blob.live_bytes()) {
                return Err(format!(
                    "blob file {number:06} has {} values of {} bytes that are not garbage, but files refer to {} values of {} bytes",
                    blob.live_count(),
                    blob.live_bytes(),
                    live.0,
                    live.1
                ));
            }
            if live.0 == 0 {
                if base.blob_files.contains_key(&number) {
                    removed.push(number);
                }
                continue;
            }
            kept.insert(number, blob);
        }
        let created = kept
            .iter()
            .filter(|(n, _)| !base.blob_files.contains_key(n))
            .map(|(_, b)| b.meta.clone())
            .collect();
        Ok((Arc::new(kept), created, removed))
    }

    /// Builds the version and returns it with the `Arc`s it created for
    /// added files and blob files (so the caller can track them) and the
    /// blob files that left.
    pub(crate) fn build(self) -> Result<Built, String> {
        let base = &self.base;
        let mut levels: Vec<LevelFiles> = Vec::with_capacity(base.num_levels());
        let mut level_bytes = Vec::with_capacity(base.num_levels());
        let mut created = Vec::new();
        for (level, (deleted, added)) in self.deleted.into_iter().zip(self.added).enumerate() {
            if deleted.is_empty() && added.is_empty() {
                levels.push(base.levels[level].clone());
                level_bytes.push(base.level_bytes[level]);
                continue;
            }
            let mut files: Vec<Arc<FileMetadata>> = base.levels[level]
                .iter()
                .filter(|f| !deleted.contains(&f.number))
                .cloned()
                .collect();
            for (_, file) in added {
                let file = Arc::new(file);
                created.push(file.clone());
                files.push(file);
            }
            if level == 0 {
                files.sort_by(|a, b| FileMetadata::l0_order(a, b));
            } else {
                files.sort_by(|a, b| {
                    base.cmp
                        .compare(a.smallest.encoded(), b.smallest.encoded())
                        .then(a.number.cmp(&b.number))
                });
            }
            level_bytes.push(files.iter().map(|f| f.size).sum());
            levels.push(Arc::new(files));
        }
        let cursors = base
            .cursors
            .iter()
            .zip(self.cursors.into_iter().zip(self.cursor_set))
            .map(|(old, (new, set))| if set { new } else { old.clone() })
            .collect();
        let (blob_files, created_blobs, removed_blobs) =
            Self::build_blob_files(base, self.blobs_added, self.blob_garbage, &levels)?;
        let version = Version {
            table: base.table,
            cmp: base.cmp.clone(),
            levels,
            level_bytes,
            cursors,
            blob_files,
        };
        version.check_invariants()?;
        Ok(Built {
            version,
            created,
            created_blobs,
            removed_blobs,
        })
    }
}
