//! `Version` queries against brute-force oracles, and the text form round
//! trip.

use std::path::Path;
use std::sync::Arc;

use lithify_base::{Comparator, InternalKey, InternalKeyComparator, ValueKind};
use lithify_version::{
    DEFAULT_TABLE, FileMetadata, Version, VersionEdit, VersionSet, VersionSetOptions,
};
use lithify_vfs::MemFs;
use proptest::prelude::*;

/// Builds a version through a `VersionSet`, as the engine would.
fn build(files: &[(usize, FileMetadata)]) -> Arc<Version> {
    let fs = Arc::new(MemFs::new());
    let set = VersionSet::create(fs, Path::new("/db"), VersionSetOptions::default()).unwrap();
    set.mark_file_number_used(10_000);
    let mut edit = VersionEdit::new(DEFAULT_TABLE);
    for (level, f) in files {
        edit.add_file(*level, f.clone());
    }
    set.log_and_apply(vec![edit]).unwrap();
    set.current(DEFAULT_TABLE).unwrap()
}

fn file(number: u64, lo: u8, hi: u8, seq: u64) -> FileMetadata {
    let mut f = FileMetadata::new(
        number,
        100 + number,
        InternalKey::new(&[lo], seq + 1, ValueKind::Put),
        InternalKey::new(&[hi], seq, ValueKind::Put),
    );
    f.num_entries = number % 5;
    f
}

/// L0: random ranges; L1/L2: sorted disjoint ranges.
fn arb_shape() -> impl Strategy<Value = Vec<(usize, FileMetadata)>> {
    (
        proptest::collection::vec((b'a'..=b'p', 0u8..6, 1u64..50), 0..6),
        proptest::collection::btree_set(b'a'..=b'z', 0..12),
        proptest::collection::btree_set(b'a'..=b'z', 0..12),
    )
        .prop_map(|(l0, l1, l2)| {
            let mut files = Vec::new();
            let mut n = 1;
            for (lo, width, seq) in l0 {
                files.push((0, file(n, lo, lo + width, seq * 10)));
                n += 1;
            }
            for (level, points) in [(1usize, l1), (2, l2)] {
                let points: Vec<u8> = points.into_iter().collect();
                for pair in points.chunks_exact(2) {
                    files.push((level, file(n, pair[0], pair[1], 1)));
                    n += 1;
                }
            }
            files
        })
}

fn oracle_overlaps(
    cmp: &InternalKeyComparator,
    files: &[Arc<FileMetadata>],
    level: usize,
    lo: Option<&[u8]>,
    hi: Option<&[u8]>,
) -> Vec<u64> {
    let mut lo = lo.map(<[u8]>::to_vec);
    let mut hi = hi.map(<[u8]>::to_vec);
    loop {
        let hit: Vec<&Arc<FileMetadata>> = files
            .iter()
            .filter(|f| f.overlaps_user_range(cmp, lo.as_deref(), hi.as_deref()))
            .collect();
        if level > 0 {
            return hit.iter().map(|f| f.number).collect();
        }
        let mut new_lo = lo.clone();
        let mut new_hi = hi.clone();
        for f in &hit {
            if let Some(l) = &new_lo
                && f.smallest_user_key() < l.as_slice()
            {
                new_lo = Some(f.smallest_user_key().to_vec());
            }
            if let Some(h) = &new_hi
                && f.largest_user_key() > h.as_slice()
            {
                new_hi = Some(f.largest_user_key().to_vec());
            }
        }
        if new_lo == lo && new_hi == hi {
            return hit.iter().map(|f| f.number).collect();
        }
        lo = new_lo;
        hi = new_hi;
    }
}

proptest! {
    #[test]
    fn overlapping_files_match_oracle(
        shape in arb_shape(),
        lo in proptest::option::of(b'a'..=b'z'),
        width in 0u8..8,
        unbounded_hi in any::<bool>(),
    ) {
        let v = build(&shape);
        prop_assert!(v.check_invariants().is_ok());
        let lo_key = lo.map(|b| vec![b]);
        let hi_key = if unbounded_hi { None } else { Some(vec![lo.unwrap_or(b'a').saturating_add(width)]) };
        for level in 0..3 {
            let got: Vec<u64> = v
                .overlapping_files(level, lo_key.as_deref(), hi_key.as_deref())
                .iter()
                .map(|f| f.number)
                .collect();
            let want = oracle_overlaps(v.comparator(), v.files(level), level, lo_key.as_deref(), hi_key.as_deref());
            prop_assert_eq!(got, want, "level {}", level);
        }
    }

    #[test]
    fn file_for_key_matches_linear_scan(shape in arb_shape(), k in b'a'..=b'z', seq in 0u64..600) {
        let v = build(&shape);
        let cmp = v.comparator();
        let key = InternalKey::seek(&[k], seq);
        for level in 1..3 {
            let want = v.files(level).iter().find(|f| cmp.compare(key.encoded(), f.largest.encoded()).is_le())
                .filter(|f| cmp.compare_user(f.smallest_user_key(), &[k]).is_le())
                .map(|f| f.number);
            prop_assert_eq!(v.file_for_key(level, key.encoded()).map(|f| f.number), want);
        }
        // L0: the newest file containing the user key.
        let want = v.files(0).iter().find(|f| f.smallest_user_key()[0] <= k && k <= f.largest_user_key()[0]).map(|f| f.number);
        prop_assert_eq!(v.file_for_key(0, key.encoded()).map(|f| f.number), want);
        let all: Vec<u64> = v.l0_files_for_key(&[k]).map(|f| f.number).collect();
        prop_assert_eq!(all.first().copied(), want);
    }

    #[test]
    fn text_form_round_trips(shape in arb_shape()) {
        let v = build(&shape);
        let text = v.to_string();
        let back = Version::from_text(&text).unwrap();
        prop_assert_eq!(&back, &*v);
        prop_assert_eq!(back.to_string(), text);
        // Level sizes are the sums of file sizes.
        for level in 0..v.num_levels() {
            prop_assert_eq!(v.level_bytes(level), v.files(level).iter().map(|f| f.size).sum::<u64>());
        }
        // L0 is newest first.
        for w in v.files(0).windows(2) {
            prop_assert!(w[0].largest_seqno >= w[1].largest_seqno);
        }
    }
}

#[test]
fn versions_share_untouched_levels() {
    let fs = Arc::new(MemFs::new());
    let set = VersionSet::create(fs, Path::new("/db"), VersionSetOptions::default()).unwrap();
    set.mark_file_number_used(100);
    let mut edit = VersionEdit::new(DEFAULT_TABLE);
    edit.add_file(1, file(1, b'a', b'c', 1));
    edit.add_file(2, file(2, b'a', b'z', 1));
    set.log_and_apply(vec![edit]).unwrap();
    let before = set.current(DEFAULT_TABLE).unwrap();
    let mut edit = VersionEdit::new(DEFAULT_TABLE);
    edit.add_file(0, file(3, b'b', b'd', 9));
    set.log_and_apply(vec![edit]).unwrap();
    let after = set.current(DEFAULT_TABLE).unwrap();
    assert!(Arc::ptr_eq(&before.files(2)[0], &after.files(2)[0]));
    assert!(std::ptr::eq(before.files(1), after.files(1)));
    assert_eq!(before.num_files(0), 0);
    assert_eq!(after.num_files(0), 1);
    assert_eq!(after.bottommost_level(), Some(2));
    assert_eq!(after.total_files(), 3);
    assert_eq!(
        after.comparator().name(),
        "lithify.InternalKeyComparator:lithify.BytewiseComparator"
    );
}
