//! Golden bytes: pins the blob file format. If a test here fails, the
//! format changed.
//!
//! * `the_worked_example_byte_by_byte`: the one-record file of
//!   `docs/FORMATS.md` ("Blob files", worked example), written and compared
//!   with the bytes printed there.
//! * `tests/data/golden.blob`: a checked-in file (lz4-configured, one value
//!   stored lz4-compressed and two stored raw). The writer must still
//!   produce it byte for byte, and the reader must still read it.
//!
//! The checked-in file is written once, by
//! `LITHIFY_WRITE_BLOB_GOLDEN=1 cargo test -p lithify-blob --test golden -- --ignored write_golden_file`.
//! Never rewrite it to make a test pass: a format change raises
//! `BLOB_FORMAT_VERSION` and adds a new golden file beside this one, which
//! the reader must keep reading.

use std::path::{Path, PathBuf};

use lithify_base::{Id, xxh3_64};
use lithify_blob::{
    BLOB_FORMAT_VERSION, BlobCompression, BlobFileFooter, BlobFileHeader, BlobFileReader,
    BlobFileWriter, BlobIndex, BlobRecord, HEADER_LEN,
};
use lithify_vfs::{FileSystem, MemFs, OsFs, read_file, write_file_atomic};

fn header(compression: BlobCompression, file_number: u64) -> BlobFileHeader {
    BlobFileHeader {
        table_id: 0,
        compression,
        db_id: Id::from_bytes([0x11; 16]),
        session_id: Id::from_bytes([0x22; 16]),
        file_number,
    }
}

/// Writes `entries` into a fresh file and returns its bytes and indexes.
fn write(header: BlobFileHeader, entries: &[(&[u8], Vec<u8>)]) -> (Vec<u8>, Vec<BlobIndex>) {
    let fs = MemFs::new();
    let path = Path::new("/golden.blob");
    let mut w = BlobFileWriter::new(fs.create(path).unwrap(), path, header).unwrap();
    let indexes = entries.iter().map(|(k, v)| w.add(k, v).unwrap()).collect();
    w.finish().unwrap();
    (read_file(&fs, path).unwrap(), indexes)
}

/// Parses whitespace-separated hex bytes.
fn hex(text: &str) -> Vec<u8> {
    text.split_whitespace()
        .map(|b| u8::from_str_radix(b, 16).unwrap())
        .collect()
}

/// The file of the worked example: key "k", value "v", no compression.
const WORKED_EXAMPLE: &str = "
    89 4c 49 54 48 42 4c 42  01 00 00 00  00 00 00 00  00  00 00 00
    11 11 11 11 11 11 11 11  11 11 11 11 11 11 11 11
    22 22 22 22 22 22 22 22  22 22 22 22 22 22 22 22
    07 00 00 00 00 00 00 00  25 19 09 66
    01 00 00 00  01 00 00 00  00  a8 68 df eb  63 a6 3e f5 87 03 52 20  6b  76
    01 00 00 00 00 00 00 00  01 00 00 00 00 00 00 00
    84 5b 3f 9f 2c 21 d6 b6  89 4c 49 54 48 42 4c 42
";

#[test]
fn the_worked_example_byte_by_byte() {
    let (bytes, indexes) = write(header(BlobCompression::None, 7), &[(b"k", b"v".to_vec())]);
    assert_eq!(bytes, hex(WORKED_EXAMPLE));
    assert_eq!(bytes.len(), 119);
    assert_eq!(indexes[0].encode(), hex("07 56 01 00"));
    assert_eq!(indexes[0].to_string(), "blob 000007 @ 86 +1 none");
    assert_eq!(xxh3_64(&bytes), 0x747a_d93b_44e5_a057);
}

/// The checked-in file.
fn golden_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/golden.blob")
}

/// Stored raw: too small to compress.
const TINY: &[u8] = b"v";
/// Stored raw: 32 bytes in which lz4 finds no match.
const NO_MATCH: &[u8] = b"0123456789abcdefghijklmnopqrstuv";

/// Stored lz4-compressed.
fn repetitive() -> Vec<u8> {
    b"lithify blob ".repeat(20)
}

fn golden_entries() -> Vec<(&'static [u8], Vec<u8>)> {
    vec![
        (b"k", TINY.to_vec()),
        (b"lz4", repetitive()),
        (b"raw", NO_MATCH.to_vec()),
    ]
}

fn golden_header() -> BlobFileHeader {
    BlobFileHeader {
        table_id: 3,
        ..header(BlobCompression::Lz4, 12)
    }
}

#[test]
fn the_writer_still_writes_the_golden_file() {
    let (bytes, _) = write(golden_header(), &golden_entries());
    let golden = read_file(&OsFs, &golden_path()).unwrap();
    assert_eq!(
        bytes, golden,
        "the writer's output differs from tests/data/golden.blob: the format changed"
    );
}

#[test]
fn the_golden_file_still_reads() {
    let path = golden_path();
    let bytes = read_file(&OsFs, &path).unwrap();
    let reader = BlobFileReader::open(OsFs.open(&path).unwrap(), &path).unwrap();
    assert_eq!(reader.header(), &golden_header());
    assert_eq!(reader.header().file_number, 12);
    assert_eq!(&bytes[8..12], &BLOB_FORMAT_VERSION.to_le_bytes());
    assert_eq!(reader.file_size(), bytes.len() as u64);

    let records: Vec<BlobRecord> = reader.records().collect::<Result<_, _>>().unwrap();
    let expected = [
        (
            b"k".as_slice(),
            TINY.to_vec(),
            HEADER_LEN as u64 + 21 + 1,
            1,
            0,
        ),
        (b"lz4", repetitive(), 87 + 21 + 3, LZ4_STORED_LEN, 2),
        (
            b"raw",
            NO_MATCH.to_vec(),
            111 + LZ4_STORED_LEN + 21 + 3,
            32,
            0,
        ),
    ];
    assert_eq!(records.len(), expected.len());
    for (r, (key, value, offset, size, compression)) in records.iter().zip(expected) {
        let index = BlobIndex {
            file_number: 12,
            offset,
            size,
            compression,
        };
        assert_eq!(r.key, key);
        assert_eq!(r.value, value);
        assert_eq!(r.index, index);
        assert_eq!(&reader.get(key, &index).unwrap()[..], &value[..]);
    }
    assert_eq!(
        reader.footer(),
        &BlobFileFooter {
            blob_count: 3,
            blob_bytes: 1 + LZ4_STORED_LEN + 32
        }
    );
    let summary = reader.verify().unwrap();
    assert_eq!(summary.file_checksum, xxh3_64(&bytes));
    assert_eq!(summary.file_checksum, GOLDEN_CHECKSUM);
}

/// Stored length of the lz4 value in the golden file.
const LZ4_STORED_LEN: u64 = 28;
/// xxh3-64 of the golden file.
const GOLDEN_CHECKSUM: u64 = 0x2e4c_a02c_a8cc_f321;

#[test]
#[ignore = "writes tests/data/golden.blob; see the module documentation"]
fn write_golden_file() {
    assert!(
        std::env::var_os("LITHIFY_WRITE_BLOB_GOLDEN").is_some(),
        "set LITHIFY_WRITE_BLOB_GOLDEN=1 to write tests/data/golden.blob"
    );
    assert!(
        !OsFs.exists(&golden_path()),
        "tests/data/golden.blob exists: golden files are never rewritten"
    );
    let (bytes, indexes) = write(golden_header(), &golden_entries());
    write_file_atomic(&OsFs, &golden_path(), &bytes).unwrap();
    println!("indexes: {indexes:?}");
    println!("length {}, xxh3 {:#018x}", bytes.len(), xxh3_64(&bytes));
}
