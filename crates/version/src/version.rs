//! `Version`: an immutable snapshot of one table's files, level by level.

use std::fmt;
use std::sync::Arc;

use lithify_base::key::user_key;
use lithify_base::{Comparator, InternalKey, InternalKeyComparator};

use std::collections::BTreeMap;

use crate::blob_file::BlobFile;
use crate::edit::TableId;
use crate::file_metadata::FileMetadata;

/// The default number of levels (L0..L6), as in RocksDB.
pub const DEFAULT_NUM_LEVELS: usize = 7;

/// One level's files, shared between versions that did not change it.
pub(crate) type LevelFiles = Arc<Vec<Arc<FileMetadata>>>;

/// A table's blob files by number, shared between versions that did not
/// change them.
pub(crate) type BlobFiles = Arc<BTreeMap<u64, BlobFile>>;

/// The files of one table at one moment.
///
/// * **L0** files may overlap; they are ordered **newest first** (largest
///   seqno descending, then smallest seqno, then file number), the order a
///   read must consult them in.
/// * **L1..Ln** are each one sorted run: files ordered by smallest key, and
///   each file's largest internal key sorts before the next file's smallest.
///
/// A `Version` never changes. The [`VersionSet`](crate::VersionSet) hands
/// out `Arc<Version>`; holding one pins its files (they are not reported
/// obsolete while any `Arc<FileMetadata>` of theirs is alive). Versions
/// built by an edit share the `Arc`s of unchanged levels and files with
/// their predecessor, so installing an edit costs in proportion to the
/// levels it touches.
///
/// ```
/// use lithify_version::Version;
///
/// let v = Version::from_text("
/// L0:
///   000009:[c#20,SET-f#25,SET] size=100
///   000008:[a#10,SET-d#15,SET] size=100
/// L1:
///   000004:[a#3,SET-b#3,SET] size=1000
///   000005:[e#2,SET-h#1,SET] size=1000
/// ").unwrap();
/// // L0 expansion: [e, e] hits 9 = [c, f], which pulls in 8 = [a, d].
/// let l0: Vec<u64> = v.overlapping_files(0, Some(b"e"), Some(b"e")).iter().map(|f| f.number).collect();
/// assert_eq!(l0, [9, 8]);
/// let l1: Vec<u64> = v.overlapping_files(1, Some(b"b"), Some(b"f")).iter().map(|f| f.number).collect();
/// assert_eq!(l1, [4, 5]);
/// assert_eq!(v.level_bytes(1), 2000);
/// ```
#[derive(Clone)]
pub struct Version {
    pub(crate) table: TableId,
    pub(crate) cmp: InternalKeyComparator,
    pub(crate) levels: Vec<LevelFiles>,
    pub(crate) level_bytes: Vec<u64>,
    pub(crate) cursors: Vec<Option<InternalKey>>,
    pub(crate) blob_files: BlobFiles,
}

impl Version {
    /// An empty version of `table` with `num_levels` levels.
    pub fn new(table: TableId, cmp: InternalKeyComparator, num_levels: usize) -> Self {
        let empty: LevelFiles = Arc::new(Vec::new());
        Version {
            table,
            cmp,
            levels: vec![empty; num_levels],
            level_bytes: vec![0; num_levels],
            cursors: vec![None; num_levels],
            blob_files: Arc::new(BTreeMap::new()),
        }
    }

    /// Parses the LSM text form (see [`crate::text`]) with the bytewise
    /// comparator and [`DEFAULT_NUM_LEVELS`] levels, for tests.
    pub fn from_text(text: &str) -> crate::Result<Version> {
        crate::text::parse_version(
            text,
            0,
            InternalKeyComparator::bytewise(),
            DEFAULT_NUM_LEVELS,
        )
    }

    /// The table this version belongs to.
    pub fn table(&self) -> TableId {
        self.table
    }

    /// The internal-key comparator of the table.
    pub fn comparator(&self) -> &InternalKeyComparator {
        &self.cmp
    }

    /// The table's blob files by number: those some file of the version
    /// refers to (empty without key-value separation).
    pub fn blob_files(&self) -> &BTreeMap<u64, BlobFile> {
        &self.blob_files
    }

    /// Stored value bytes of every blob file, and of the garbage among
    /// them.
    pub fn blob_bytes(&self) -> (u64, u64) {
        self.blob_files
            .values()
            .fold((0, 0), |(total, garbage), b| {
                (total + b.meta.blob_bytes, garbage + b.garbage_bytes)
            })
    }

    /// The number of levels.
    pub fn num_levels(&self) -> usize {
        self.levels.len()
    }

    /// The files of `level`, in level order (see the type docs).
    ///
    /// # Panics
    /// If `level >= self.num_levels()`.
    pub fn files(&self, level: usize) -> &[Arc<FileMetadata>] {
        &self.levels[level]
    }

    /// The number of files in `level`.
    pub fn num_files(&self, level: usize) -> usize {
        self.levels[level].len()
    }

    /// Total size in bytes of the files in `level`.
    pub fn level_bytes(&self, level: usize) -> u64 {
        self.level_bytes[level]
    }

    /// The byte sizes of all levels.
    pub fn all_level_bytes(&self) -> &[u64] {
        &self.level_bytes
    }

    /// Total size in bytes of all files.
    pub fn total_bytes(&self) -> u64 {
        self.level_bytes.iter().sum()
    }

    /// Total number of files.
    pub fn total_files(&self) -> usize {
        self.levels.iter().map(|l| l.len()).sum()
    }

    /// Whether the version holds no file.
    pub fn is_empty(&self) -> bool {
        self.total_files() == 0
    }

    /// The deepest level holding files, if any.
    pub fn bottommost_level(&self) -> Option<usize> {
        self.levels.iter().rposition(|l| !l.is_empty())
    }

    /// The compaction cursor of `level`: where its next round-robin
    /// compaction should start.
    pub fn compact_cursor(&self, level: usize) -> Option<&InternalKey> {
        self.cursors.get(level).and_then(Option::as_ref)
    }

    /// Every file with its level, level by level.
    pub fn all_files(&self) -> impl Iterator<Item = (usize, &Arc<FileMetadata>)> {
        self.levels
            .iter()
            .enumerate()
            .flat_map(|(level, files)| files.iter().map(move |f| (level, f)))
    }

    /// The files of `level` whose user-key range intersects `[begin, end]`
    /// (inclusive; `None` is unbounded), in level order.
    ///
    /// In L0 the range grows transitively, as RocksDB's
    /// `GetOverlappingInputs` does: a file that overlaps the range extends
    /// it to its own bounds, and the search restarts, so the result holds
    /// every L0 file that must be compacted together with the range.
    pub fn overlapping_files(
        &self,
        level: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Vec<Arc<FileMetadata>> {
        let files = &self.levels[level];
        if level == 0 {
            return self.overlapping_l0(files, begin, end);
        }
        // Sorted, disjoint: binary search for the first file ending at or
        // after `begin`, then walk while files start at or before `end`.
        let first = match begin {
            None => 0,
            Some(b) => {
                files.partition_point(|f| self.cmp.compare_user(f.largest_user_key(), b).is_lt())
            }
        };
        files[first..]
            .iter()
            .take_while(|f| {
                end.is_none_or(|e| self.cmp.compare_user(f.smallest_user_key(), e).is_le())
            })
            .cloned()
            .collect()
    }

    fn overlapping_l0(
        &self,
        files: &[Arc<FileMetadata>],
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Vec<Arc<FileMetadata>> {
        let mut lo: Option<Vec<u8>> = begin.map(<[u8]>::to_vec);
        let mut hi: Option<Vec<u8>> = end.map(<[u8]>::to_vec);
        let mut taken = vec![false; files.len()];
        loop {
            let mut grew = false;
            for (i, f) in files.iter().enumerate() {
                if taken[i] || !f.overlaps_user_range(&self.cmp, lo.as_deref(), hi.as_deref()) {
                    continue;
                }
                taken[i] = true;
                if let Some(l) = &lo
                    && self.cmp.compare_user(f.smallest_user_key(), l).is_lt()
                {
                    lo = Some(f.smallest_user_key().to_vec());
                    grew = true;
                }
                if let Some(h) = &hi
                    && self.cmp.compare_user(f.largest_user_key(), h).is_gt()
                {
                    hi = Some(f.largest_user_key().to_vec());
                    grew = true;
                }
            }
            if !grew {
                break;
            }
        }
        files
            .iter()
            .zip(taken)
            .filter(|(_, t)| *t)
            .map(|(f, _)| f.clone())
            .collect()
    }

    /// The file of `level` that may hold `internal_key` (a lookup key such
    /// as `InternalKey::seek(user_key, snapshot)`).
    ///
    /// For L1+ this is a binary search for the first file whose largest key
    /// is not before `internal_key`, kept if its smallest user key is not
    /// after the key's user key. For L0 it is the newest file whose range
    /// contains the user key (a read must look at every such L0 file, newest
    /// first: see [`Version::l0_files_for_key`]).
    pub fn file_for_key(&self, level: usize, internal_key: &[u8]) -> Option<&Arc<FileMetadata>> {
        let uk = user_key(internal_key);
        if level == 0 {
            return self.levels[0]
                .iter()
                .find(|f| f.contains_user_key(&self.cmp, uk));
        }
        let files = &self.levels[level];
        let i =
            files.partition_point(|f| self.cmp.compare(f.largest.encoded(), internal_key).is_lt());
        let f = files.get(i)?;
        self.cmp
            .compare_user(f.smallest_user_key(), uk)
            .is_le()
            .then_some(f)
    }

    /// The L0 files whose range contains `user_key`, newest first.
    pub fn l0_files_for_key<'a>(
        &'a self,
        user_key: &'a [u8],
    ) -> impl Iterator<Item = &'a Arc<FileMetadata>> + 'a {
        self.levels[0]
            .iter()
            .filter(move |f| f.contains_user_key(&self.cmp, user_key))
    }

    /// Checks the level invariants; `Err` names the first violation.
    pub fn check_invariants(&self) -> Result<(), String> {
        for (level, files) in self.levels.iter().enumerate() {
            for f in files.iter() {
                if self
                    .cmp
                    .compare(f.smallest.encoded(), f.largest.encoded())
                    .is_gt()
                {
                    return Err(format!(
                        "L{level} file {:06} has smallest key {} after largest key {}",
                        f.number, f.smallest, f.largest
                    ));
                }
                if f.smallest_seqno > f.largest_seqno {
                    return Err(format!(
                        "L{level} file {:06} has smallest seqno {} above largest seqno {}",
                        f.number, f.smallest_seqno, f.largest_seqno
                    ));
                }
            }
            if level == 0 {
                if let Some(w) = files
                    .windows(2)
                    .find(|w| FileMetadata::l0_order(&w[0], &w[1]).is_gt())
                {
                    return Err(format!(
                        "L0 files {:06} and {:06} are not newest first",
                        w[0].number, w[1].number
                    ));
                }
                continue;
            }
            for w in files.windows(2) {
                if self
                    .cmp
                    .compare(w[0].largest.encoded(), w[1].smallest.encoded())
                    .is_ge()
                {
                    return Err(format!(
                        "L{level} files {:06} [{} - {}] and {:06} [{} - {}] overlap or are out of order",
                        w[0].number,
                        w[0].smallest,
                        w[0].largest,
                        w[1].number,
                        w[1].smallest,
                        w[1].largest
                    ));
                }
            }
        }
        Ok(())
    }
}

impl fmt::Display for Version {
    /// The LSM text form (see [`crate::text`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::text::write_version(f, self)
    }
}

impl fmt::Debug for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Version(table {}):\n{self}", self.table)
    }
}

impl PartialEq for Version {
    /// Same table, comparator name, files (by content) and cursors.
    fn eq(&self, other: &Self) -> bool {
        self.table == other.table
            && self.cmp.name() == other.cmp.name()
            && self.levels.len() == other.levels.len()
            && self
                .levels
                .iter()
                .zip(&other.levels)
                .all(|(a, b)| a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| **x == **y))
            && self.cursors == other.cursors
            && self.blob_files == other.blob_files
    }
}

impl Eq for Version {}
