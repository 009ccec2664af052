//! Applying edits to a version.
//!
//! [`VersionBuilder`] accumulates the file changes of any number of edits
//! on top of a base version (deleted numbers per level, added files per
//! level) and builds the resulting version once: recovery replays a whole
//! MANIFEST into one builder over an empty version, `log_and_apply` applies
//! one edit group over the current version. Untouched levels keep sharing
//! the base's `Arc`s.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use lithify_base::{Comparator, InternalKey};

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
        Ok(())
    }

    /// Builds the version and returns it with the `Arc`s it created for
    /// added files (so the caller can track them).
    pub(crate) fn build(self) -> Result<(Version, Vec<Arc<FileMetadata>>), String> {
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
        let version = Version {
            table: base.table,
            cmp: base.cmp.clone(),
            levels,
            level_bytes,
            cursors,
        };
        version.check_invariants()?;
        Ok((version, created))
    }
}
