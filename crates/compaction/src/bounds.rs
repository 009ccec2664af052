//! Key-range arithmetic on file boundaries, with RocksDB's rule for the
//! range-tombstone sentinel.
//!
//! A file whose last entry is a range tombstone ending at user key `k`
//! records `k#MAX,RANGEDEL` as its largest key: the *sentinel*. The file
//! holds nothing at `k` itself, so two neighbouring files of a level
//! overlap only if the first one's largest user key equals the second one's
//! smallest user key **and** the first one's largest key is not the
//! sentinel (RocksDB's `sstableKeyCompare`). Everything here that decides
//! overlap between files of L1+ uses [`sstable_key_compare`]; L0 uses plain
//! user-key ranges, as RocksDB does.

use lithify_base::Comparator as _;
use std::cmp::Ordering;
use std::sync::Arc;

use lithify_base::{InternalKey, InternalKeyComparator, MAX_SEQNO, ValueKind};
use lithify_version::{FileMetadata, Version};

/// Whether `key` is the range-tombstone sentinel `user_key#MAX,RANGEDEL`.
#[inline]
pub fn is_sentinel(key: &InternalKey) -> bool {
    key.seqno() == MAX_SEQNO && key.kind_byte() == ValueKind::RangeDelete as u8
}

/// The sentinel key for `user_key`.
pub fn sentinel(user_key: &[u8]) -> InternalKey {
    InternalKey::new(user_key, MAX_SEQNO, ValueKind::RangeDelete)
}

/// RocksDB's `sstableKeyCompare`: user keys decide; at equal user keys a
/// sentinel sorts before any other key, and otherwise the keys are equal.
pub fn sstable_key_compare(
    cmp: &InternalKeyComparator,
    a: &InternalKey,
    b: &InternalKey,
) -> Ordering {
    cmp.compare_user(a.user_key(), b.user_key()).then_with(|| {
        match (is_sentinel(a), is_sentinel(b)) {
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            _ => Ordering::Equal,
        }
    })
}

/// The internal-key range of `files` of `level` (RocksDB's `GetRange`): for
/// L0 the smallest smallest and largest largest; for L1+ the first file's
/// smallest and the last file's largest (files in level order).
///
/// # Panics
/// If `files` is empty.
pub fn key_range(
    cmp: &InternalKeyComparator,
    level: usize,
    files: &[Arc<FileMetadata>],
) -> (InternalKey, InternalKey) {
    assert!(!files.is_empty(), "the range of no files");
    if level > 0 {
        return (
            files[0].smallest.clone(),
            files[files.len() - 1].largest.clone(),
        );
    }
    let mut lo = &files[0].smallest;
    let mut hi = &files[0].largest;
    for f in &files[1..] {
        if cmp.compare(f.smallest.encoded(), lo.encoded()).is_lt() {
            lo = &f.smallest;
        }
        if cmp.compare(f.largest.encoded(), hi.encoded()).is_gt() {
            hi = &f.largest;
        }
    }
    (lo.clone(), hi.clone())
}

/// The union of two internal-key ranges.
pub fn union_range(
    cmp: &InternalKeyComparator,
    a: (InternalKey, InternalKey),
    b: (InternalKey, InternalKey),
) -> (InternalKey, InternalKey) {
    let lo = if cmp.compare(a.0.encoded(), b.0.encoded()).is_le() {
        a.0
    } else {
        b.0
    };
    let hi = if cmp.compare(a.1.encoded(), b.1.encoded()).is_ge() {
        a.1
    } else {
        b.1
    };
    (lo, hi)
}

/// The files of `level` overlapping `[begin, end]` (RocksDB's
/// `GetOverlappingInputs`; `None` is unbounded). L0 uses user keys with the
/// transitive expansion of [`Version::overlapping_files`]; L1+ compares
/// with [`sstable_key_compare`].
pub fn overlapping_files(
    version: &Version,
    level: usize,
    begin: Option<&InternalKey>,
    end: Option<&InternalKey>,
) -> Vec<Arc<FileMetadata>> {
    if level == 0 {
        return version.overlapping_files(
            0,
            begin.map(InternalKey::user_key),
            end.map(InternalKey::user_key),
        );
    }
    let cmp = version.comparator();
    let files = version.files(level);
    let first = match begin {
        None => 0,
        Some(b) => files.partition_point(|f| sstable_key_compare(cmp, &f.largest, b).is_lt()),
    };
    files[first..]
        .iter()
        .take_while(|f| end.is_none_or(|e| sstable_key_compare(cmp, e, &f.smallest).is_ge()))
        .cloned()
        .collect()
}

/// The largest clean set of files of `level` (L1+) lying entirely within
/// `[begin, end]` (RocksDB's `GetCleanInputsWithinInterval`): files are
/// dropped at either end while they share a boundary user key with a
/// neighbour outside the set. Empty for L0 or an empty level.
pub fn clean_files_within(
    version: &Version,
    level: usize,
    begin: &InternalKey,
    end: &InternalKey,
) -> Vec<Arc<FileMetadata>> {
    if level == 0 {
        return Vec::new();
    }
    let cmp = version.comparator();
    let files = version.files(level);
    let mut start = files.partition_point(|f| sstable_key_compare(cmp, &f.smallest, begin).is_lt());
    while start > 0
        && start < files.len()
        && sstable_key_compare(cmp, &files[start - 1].largest, &files[start].smallest).is_eq()
    {
        start += 1;
    }
    let mut stop = start
        + files[start..].partition_point(|f| sstable_key_compare(cmp, end, &f.largest).is_ge());
    while stop < files.len()
        && stop > start
        && sstable_key_compare(cmp, &files[stop - 1].largest, &files[stop].smallest).is_eq()
    {
        stop -= 1;
    }
    files[start..stop].to_vec()
}

/// Whether a file's user-key range meets the user-key range `[lo, hi]`.
pub fn file_meets_user_range(
    cmp: &InternalKeyComparator,
    f: &FileMetadata,
    lo: &[u8],
    hi: &[u8],
) -> bool {
    cmp.compare_user(f.smallest_user_key(), hi).is_le()
        && cmp.compare_user(f.largest_user_key(), lo).is_ge()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(text: &str) -> InternalKey {
        InternalKey::from_text(text).unwrap()
    }

    #[test]
    fn sentinel_sorts_before_other_keys_of_its_user_key() {
        let cmp = InternalKeyComparator::bytewise();
        let s = sentinel(b"k");
        assert!(is_sentinel(&s));
        assert_eq!(s.to_string(), "k#MAX,RANGEDEL");
        assert_eq!(
            sstable_key_compare(&cmp, &s, &key("k#5,SET")),
            Ordering::Less
        );
        assert_eq!(
            sstable_key_compare(&cmp, &key("k#5,SET"), &s),
            Ordering::Greater
        );
        assert_eq!(
            sstable_key_compare(&cmp, &key("k#5,SET"), &key("k#9,DEL")),
            Ordering::Equal
        );
        assert_eq!(
            sstable_key_compare(&cmp, &s, &key("j#1,SET")),
            Ordering::Greater
        );
    }

    #[test]
    fn overlap_and_clean_interval() {
        let v = Version::from_text(
            "
L1:
  000001:[a#5,SET-c#4,SET] size=1
  000002:[c#3,SET-e#MAX,RANGEDEL] size=1
  000003:[e#3,SET-g#3,SET] size=1
  000004:[h#3,SET-k#3,SET] size=1
",
        )
        .unwrap();
        let nums = |fs: Vec<Arc<FileMetadata>>| fs.iter().map(|f| f.number).collect::<Vec<_>>();
        // [c, c] meets files 1 and 2 (both hold user key c).
        assert_eq!(
            nums(overlapping_files(
                &v,
                1,
                Some(&key("c#9,SET")),
                Some(&key("c#0,SET"))
            )),
            [1, 2]
        );
        // [e, e]: file 2 ends with the sentinel at e, so only file 3 holds e.
        assert_eq!(
            nums(overlapping_files(
                &v,
                1,
                Some(&key("e#9,SET")),
                Some(&key("e#0,SET"))
            )),
            [3]
        );
        // Within [a, k]: everything. Within [b, k]: file 1 starts before b,
        // and file 2 shares c with it, so both go; 3 and 4 remain.
        assert_eq!(
            nums(clean_files_within(&v, 1, &key("a#9,SET"), &key("k#0,SET"))),
            [1, 2, 3, 4]
        );
        assert_eq!(
            nums(clean_files_within(&v, 1, &key("b#9,SET"), &key("k#0,SET"))),
            [3, 4]
        );
        // Within [a, f]: file 3 ends after f; file 2's sentinel makes the cut
        // between 2 and 3 clean.
        assert_eq!(
            nums(clean_files_within(&v, 1, &key("a#9,SET"), &key("f#0,SET"))),
            [1, 2]
        );
    }
}
