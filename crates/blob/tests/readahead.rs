//! `get_sequential` against `get`: the same value or the same error for
//! any order of reads, any value sizes and compression, across files, and
//! reads in file order cost few file reads.

use std::path::Path;

use lithify_base::Id;
use lithify_blob::{
    BlobCompression, BlobFileHeader, BlobFileReader, BlobFileWriter, BlobIndex, Readahead,
};
use lithify_vfs::{FileSystem, MemFs};
use proptest::prelude::*;

fn write(fs: &MemFs, number: u64, sizes: &[usize], compression: BlobCompression) -> Vec<BlobIndex> {
    let path = format!("/{number:06}.blob");
    let header = BlobFileHeader {
        table_id: 0,
        compression,
        db_id: Id::random(),
        session_id: Id::random(),
        file_number: number,
    };
    let mut w = BlobFileWriter::new(
        fs.create(Path::new(&path)).unwrap(),
        Path::new(&path),
        header,
    )
    .unwrap();
    let indexes = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| w.add(&key(number, i), &value(i, n)).unwrap())
        .collect();
    w.finish().unwrap();
    indexes
}

fn key(file: u64, i: usize) -> Vec<u8> {
    format!("f{file}-k{i:05}").into_bytes()
}

fn value(i: usize, n: usize) -> Vec<u8> {
    (0..n).map(|j| (i * 31 + j / 7) as u8).collect()
}

fn reader(fs: &MemFs, number: u64) -> BlobFileReader {
    let path = format!("/{number:06}.blob");
    BlobFileReader::open(fs.open(Path::new(&path)).unwrap(), Path::new(&path)).unwrap()
}

proptest! {
    #[test]
    fn sequential_reads_return_what_single_reads_return(
        sizes in proptest::collection::vec(0usize..5000, 1..80),
        order in proptest::collection::vec((0u64..2, 0usize..80), 1..200),
        lz4 in any::<bool>(),
    ) {
        let fs = MemFs::new();
        let compression = if lz4 { BlobCompression::Lz4 } else { BlobCompression::None };
        let files = [write(&fs, 1, &sizes, compression), write(&fs, 2, &sizes, compression)];
        let readers = [reader(&fs, 1), reader(&fs, 2)];
        let mut ahead = Readahead::default();
        for (file, i) in order {
            let i = i % sizes.len();
            let (r, index) = (&readers[file as usize], &files[file as usize][i]);
            let k = key(file + 1, i);
            prop_assert_eq!(
                r.get_sequential(&k, index, &mut ahead).unwrap(),
                r.get(&k, index).unwrap()
            );
            // A wrong key is refused by both.
            prop_assert!(r.get_sequential(b"other", index, &mut ahead).is_err());
        }
    }
}

#[test]
fn reads_in_file_order_come_mostly_from_the_window() {
    let fs = MemFs::new();
    let sizes = vec![1000; 2000];
    let indexes = write(&fs, 3, &sizes, BlobCompression::None);
    let r = reader(&fs, 3);
    let mut ahead = Readahead::default();
    for (i, index) in indexes.iter().enumerate() {
        assert_eq!(
            r.get_sequential(&key(3, i), index, &mut ahead).unwrap(),
            value(i, 1000)
        );
    }
    // ~2 MB in windows doubling from 16 KiB to 128 KiB.
    assert!(ahead.file_reads() < 25, "{}", ahead.file_reads());
    // Every other record backwards: not in order, one read each.
    let before = ahead.file_reads();
    for i in (0..100).rev().step_by(2) {
        r.get_sequential(&key(3, i), &indexes[i], &mut ahead)
            .unwrap();
    }
    assert_eq!(ahead.file_reads() - before, 50);
}

#[test]
fn reads_in_reverse_file_order_read_ahead_backwards() {
    let fs = MemFs::new();
    let indexes = write(&fs, 4, &[1000; 2000], BlobCompression::None);
    let r = reader(&fs, 4);
    let mut ahead = Readahead::default();
    for (i, index) in indexes.iter().enumerate().rev() {
        assert_eq!(
            r.get_sequential(&key(4, i), index, &mut ahead).unwrap(),
            value(i, 1000)
        );
    }
    assert!(ahead.file_reads() < 25, "{}", ahead.file_reads());
    // Forwards again from the middle: the direction follows the reads.
    // Three reads alone (the run is not yet four long), then windows of
    // 16, 32, 64 and 128 KiB, three of 128 KiB, for ~500 KB.
    let before = ahead.file_reads();
    for (i, index) in indexes.iter().enumerate().skip(1000).take(500) {
        r.get_sequential(&key(4, i), index, &mut ahead).unwrap();
    }
    assert_eq!(ahead.file_reads() - before, 10);
}

#[test]
fn short_runs_in_order_are_read_value_by_value() {
    let fs = MemFs::new();
    let indexes = write(&fs, 6, &[1000; 400], BlobCompression::None);
    let r = reader(&fs, 6);
    let mut ahead = Readahead::default();
    // Runs of three values side by side, each run elsewhere in the file
    // (a seek and a few nexts): no run is long enough to read ahead.
    for start in (0..40).map(|run| (run * 37) % 380) {
        for (i, index) in indexes.iter().enumerate().skip(start).take(3) {
            assert_eq!(
                r.get_sequential(&key(6, i), index, &mut ahead).unwrap(),
                value(i, 1000)
            );
        }
    }
    assert_eq!(ahead.file_reads(), 120);
    // The fourth read in a row reads ahead: the next 14 come from its
    // 16 KiB window.
    let before = ahead.file_reads();
    for (i, index) in indexes.iter().enumerate().skip(200).take(18) {
        r.get_sequential(&key(6, i), index, &mut ahead).unwrap();
    }
    assert_eq!(ahead.file_reads() - before, 4);
}

#[test]
fn a_window_of_zero_reads_each_value_alone() {
    let fs = MemFs::new();
    let indexes = write(&fs, 5, &[1000; 300], BlobCompression::None);
    let r = reader(&fs, 5);
    let mut none = Readahead::with_max_window(0);
    let mut small = Readahead::with_max_window(4 << 10);
    for (i, index) in indexes.iter().enumerate() {
        assert_eq!(
            r.get_sequential(&key(5, i), index, &mut none).unwrap(),
            value(i, 1000)
        );
        assert_eq!(
            r.get_sequential(&key(5, i), index, &mut small).unwrap(),
            value(i, 1000)
        );
    }
    assert_eq!(none.file_reads(), 300);
    // 4 KiB windows hold three or four 1 KiB records each.
    assert!(
        (60..=110).contains(&small.file_reads()),
        "{}",
        small.file_reads()
    );
}
