//! Writer and reader together: round trips, damage, faults.

use std::path::Path;
use std::sync::Arc;

use lithify_base::{Classify, ErrorKind, Id, xxh3_64};
use lithify_vfs::{FaultFs, FaultRule, FileSystem, MemFs, OpKind, RandomAccessFile, read_file};
use proptest::prelude::*;

use crate::*;

const PATH: &str = "/000009.blob";

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

fn header(compression: BlobCompression) -> BlobFileHeader {
    BlobFileHeader {
        table_id: 4,
        compression,
        db_id: Id::from_bytes([0x11; 16]),
        session_id: Id::from_bytes([0x22; 16]),
        file_number: 9,
    }
}

fn all_compressions() -> [BlobCompression; 3] {
    [
        BlobCompression::None,
        BlobCompression::zstd(),
        BlobCompression::Lz4,
    ]
}

fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn compressible(len: usize) -> Vec<u8> {
    (0..len).map(|i| b"compressible text "[i % 18]).collect()
}

/// Writes `entries` into a new file at `PATH` in `fs`.
fn write(
    fs: &dyn FileSystem,
    compression: BlobCompression,
    entries: &[(Vec<u8>, Vec<u8>)],
) -> (Vec<BlobIndex>, BuiltBlobFile) {
    let path = Path::new(PATH);
    let mut w = BlobFileWriter::new(fs.create(path).unwrap(), path, header(compression)).unwrap();
    let indexes = entries.iter().map(|(k, v)| w.add(k, v).unwrap()).collect();
    (indexes, w.finish().unwrap())
}

fn open(fs: &dyn FileSystem) -> Result<BlobFileReader> {
    BlobFileReader::open(fs.open(Path::new(PATH)).unwrap(), Path::new(PATH))
}

/// A reader over `bytes` held in memory.
fn open_bytes(bytes: &[u8]) -> Result<BlobFileReader> {
    let fs = MemFs::new();
    let mut f = fs.create(Path::new(PATH)).unwrap();
    f.append(bytes).unwrap();
    drop(f);
    open(&fs)
}

fn sample_entries() -> Entries {
    vec![
        (b"compressible".to_vec(), compressible(5000)),
        (b"noise".to_vec(), noise(3000, 7)),
        (b"empty".to_vec(), Vec::new()),
        (Vec::new(), b"empty key".to_vec()),
        (b"tiny".to_vec(), b"v".to_vec()),
        // Larger than the write chunk and the readahead.
        (b"huge".to_vec(), compressible(300 << 10)),
        (b"huge noise".to_vec(), noise(300 << 10, 3)),
        (b"after".to_vec(), compressible(1024)),
    ]
}

#[test]
fn round_trip_with_each_compression() {
    for compression in all_compressions() {
        let fs = MemFs::new();
        let entries = sample_entries();
        let (indexes, built) = write(&fs, compression, &entries);
        let bytes = read_file(&fs, Path::new(PATH)).unwrap();
        assert_eq!(built.file_size, bytes.len() as u64);
        assert_eq!(built.file_checksum, xxh3_64(&bytes));
        assert_eq!(built.blob_count, entries.len() as u64);
        assert_eq!(
            built.blob_bytes,
            indexes.iter().map(|i| i.size).sum::<u64>()
        );
        assert_eq!(built.file_number, 9);
        assert_eq!(built.unique_id, header(compression).unique_id());

        // Codes: compressible values take the file's compression, the rest
        // stay raw.
        let position = |name: &[u8]| entries.iter().position(|e| e.0 == name).unwrap();
        let code = |name: &[u8]| indexes[position(name)];
        for name in [&b"compressible"[..], b"huge", b"after"] {
            assert_eq!(
                code(name).compression,
                compression.code(),
                "{}",
                compression.name()
            );
            if compression != BlobCompression::None {
                let raw_len = entries[position(name)].1.len() as u64;
                assert!(code(name).size < raw_len / 8, "{} compresses", code(name));
            }
        }
        for name in [&b"noise"[..], b"empty", b"", b"tiny", b"huge noise"] {
            assert_eq!(code(name).compression, 0);
        }

        let reader = open(&fs).unwrap();
        assert_eq!(reader.file_size(), built.file_size);
        assert_eq!(reader.path(), Path::new(PATH));
        let expect_header = BlobFileHeader {
            compression: BlobCompression::from_code(compression.code()).unwrap(),
            ..header(compression)
        };
        assert_eq!(reader.header(), &expect_header);
        assert_eq!(
            reader.footer(),
            &BlobFileFooter {
                blob_count: built.blob_count,
                blob_bytes: built.blob_bytes
            }
        );
        for ((k, v), index) in entries.iter().zip(&indexes) {
            assert_eq!(index.file_number, 9);
            assert_eq!(&reader.get(k, index).unwrap()[..], &v[..]);
        }
        let records: Vec<BlobRecord> = reader.records().collect::<Result<_>>().unwrap();
        assert_eq!(records.len(), entries.len());
        for ((r, (k, v)), index) in records.iter().zip(&entries).zip(&indexes) {
            assert_eq!((&r.key, &r.value, &r.index), (k, v, index));
        }
        let summary = reader.verify().unwrap();
        assert_eq!(
            summary,
            BlobFileSummary {
                blob_count: built.blob_count,
                blob_bytes: built.blob_bytes,
                file_checksum: built.file_checksum,
            }
        );
    }
}

#[test]
fn an_empty_file_is_a_header_and_a_footer() {
    let fs = MemFs::new();
    let (_, built) = write(&fs, BlobCompression::zstd(), &[]);
    assert_eq!(built.file_size, (HEADER_LEN + FOOTER_LEN) as u64);
    assert_eq!((built.blob_count, built.blob_bytes), (0, 0));
    let reader = open(&fs).unwrap();
    assert_eq!(reader.records().count(), 0);
    let summary = reader.verify().unwrap();
    assert_eq!(summary.blob_count, 0);
    assert_eq!(summary.file_checksum, built.file_checksum);
    // Nothing is readable in it.
    let index = BlobIndex {
        file_number: 9,
        offset: HEADER_LEN as u64,
        size: 0,
        compression: 0,
    };
    assert!(reader.get(b"", &index).unwrap_err().is_corruption());
}

/// A file of three records, the middle one lz4-compressed, and the offsets
/// of the records.
fn small_file() -> (Vec<u8>, Entries, Vec<BlobIndex>, Vec<u64>) {
    let fs = MemFs::new();
    let entries = vec![
        (b"a".to_vec(), b"first".to_vec()),
        (b"bb".to_vec(), compressible(200)),
        (b"ccc".to_vec(), noise(40, 5)),
    ];
    let (indexes, _) = write(&fs, BlobCompression::Lz4, &entries);
    assert_eq!(indexes[1].compression, 2);
    let starts = entries
        .iter()
        .zip(&indexes)
        .map(|((k, _), i)| i.offset - (RECORD_HEADER_LEN + k.len()) as u64)
        .collect();
    (
        read_file(&fs, Path::new(PATH)).unwrap(),
        entries,
        indexes,
        starts,
    )
}

#[test]
fn a_wrong_key_or_index_is_corruption_at_the_record() {
    let (bytes, entries, indexes, starts) = small_file();
    let reader = open_bytes(&bytes).unwrap();
    let (key, index, start) = (&entries[1].0, indexes[1], starts[1]);
    let expect = |res: Result<bytes::Bytes>, offset: u64, phrase: &str| {
        let err = res.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corruption, "{err}");
        assert_eq!(err.offset(), Some(offset), "{err}");
        assert!(err.to_string().contains(phrase), "{err}");
        assert!(err.to_string().contains(PATH), "{err}");
    };
    // Same length, other bytes.
    expect(reader.get(b"bx", &index), start, "another key");
    // Another length: the record header is looked for elsewhere.
    expect(reader.get(b"bbb", &index), start - 1, "checksum");
    // Fields of the index that do not match the record.
    expect(
        reader.get(
            key,
            &BlobIndex {
                size: index.size - 1,
                ..index
            },
        ),
        start,
        "does not point at it",
    );
    expect(
        reader.get(
            key,
            &BlobIndex {
                compression: 1,
                ..index
            },
        ),
        start,
        "does not point at it",
    );
    expect(
        reader.get(
            key,
            &BlobIndex {
                offset: index.offset + 3,
                ..index
            },
        ),
        start + 3,
        "checksum",
    );
    // Outside the records.
    expect(
        reader.get(
            key,
            &BlobIndex {
                offset: 10,
                ..index
            },
        ),
        10,
        "before the first record",
    );
    expect(
        reader.get(
            key,
            &BlobIndex {
                offset: u64::MAX,
                ..index
            },
        ),
        u64::MAX - 23,
        "runs past",
    );
    expect(
        reader.get(
            key,
            &BlobIndex {
                size: bytes.len() as u64,
                ..index
            },
        ),
        start,
        "runs past",
    );
    expect(
        reader.get(
            key,
            &BlobIndex {
                size: u64::MAX,
                ..index
            },
        ),
        start,
        "more than the",
    );
    // The other records are unaffected.
    for ((k, v), i) in entries.iter().zip(&indexes) {
        assert_eq!(&reader.get(k, i).unwrap()[..], &v[..]);
    }
}

#[test]
fn every_flipped_bit_is_caught_where_it_is() {
    let (bytes, entries, indexes, starts) = small_file();
    let footer_at = (bytes.len() - FOOTER_LEN) as u64;
    // Which record a byte belongs to.
    let record_of = |at: u64| starts.iter().rposition(|&s| s <= at).unwrap();
    for at in 0..bytes.len() {
        for bit in [0, 3, 7] {
            let mut damaged = bytes.clone();
            damaged[at] ^= 1 << bit;
            let at = at as u64;
            let opened = open_bytes(&damaged);
            if at < HEADER_LEN as u64 || at >= footer_at {
                let err = opened.unwrap_err();
                assert!(err.is_corruption(), "byte {at}: {err}");
                let expect = if at < HEADER_LEN as u64 { 0 } else { footer_at };
                assert_eq!(err.offset(), Some(expect), "byte {at}: {err}");
                continue;
            }
            let reader = opened.unwrap_or_else(|e| panic!("byte {at}: {e}"));
            let damaged_record = record_of(at);
            for (n, ((k, v), index)) in entries.iter().zip(&indexes).enumerate() {
                let got = reader.get(k, index);
                if n == damaged_record {
                    let err = got.unwrap_err();
                    assert!(err.is_corruption(), "byte {at}: {err}");
                    assert_eq!(err.offset(), Some(starts[n]), "byte {at}: {err}");
                } else {
                    assert_eq!(&got.unwrap()[..], &v[..], "byte {at}");
                }
            }
            let err = reader.verify().unwrap_err();
            assert_eq!(
                err.offset(),
                Some(starts[damaged_record]),
                "byte {at}: {err}"
            );
            let records: Vec<_> = reader.records().collect();
            assert_eq!(records.len(), damaged_record + 1, "stops after the error");
            assert!(records.last().unwrap().is_err());
        }
    }
}

#[test]
fn a_truncated_or_extended_file_does_not_open() {
    let (bytes, ..) = small_file();
    for len in 0..bytes.len() {
        let err = open_bytes(&bytes[..len]).unwrap_err();
        assert!(err.is_corruption(), "length {len}: {err}");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(open_bytes(&longer).unwrap_err().is_corruption());
}

#[test]
fn the_footer_must_match_the_records() {
    let (bytes, ..) = small_file();
    let footer_at = bytes.len() - FOOTER_LEN;
    let reader = open_bytes(&bytes).unwrap();
    let footer = *reader.footer();
    let with_footer = |f: BlobFileFooter| {
        let mut b = bytes[..footer_at].to_vec();
        b.extend_from_slice(&f.encode());
        b
    };
    // A footer counting fewer records opens, but does not verify.
    let fewer = with_footer(BlobFileFooter {
        blob_count: footer.blob_count - 1,
        ..footer
    });
    let err = open_bytes(&fewer).unwrap().verify().unwrap_err();
    assert_eq!(err.offset(), Some(footer_at as u64), "{err}");
    assert!(err.to_string().contains("footer says 2 records"), "{err}");
    // One claiming more than the file holds does not open.
    for f in [
        BlobFileFooter {
            blob_count: 1000,
            ..footer
        },
        BlobFileFooter {
            blob_bytes: u64::MAX,
            ..footer
        },
        BlobFileFooter {
            blob_count: u64::MAX,
            blob_bytes: 0,
        },
    ] {
        let err = open_bytes(&with_footer(f)).unwrap_err();
        assert_eq!(err.offset(), Some(footer_at as u64), "{err}");
    }
    // Bytes between the last record and the footer.
    let mut extra = bytes[..footer_at].to_vec();
    extra.extend_from_slice(&[0; 5]);
    extra.extend_from_slice(&footer.encode());
    let reader = open_bytes(&extra).unwrap();
    let err = reader.records().last().unwrap().unwrap_err();
    assert_eq!(err.offset(), Some(footer_at as u64));
    assert!(err.to_string().contains("do not make a record"), "{err}");
}

#[test]
fn the_writer_refuses_what_the_format_cannot_hold() {
    let fs = MemFs::new();
    let path = Path::new(PATH);
    let mut f = fs.create(path).unwrap();
    f.append(b"x").unwrap();
    let err = BlobFileWriter::new(f, path, header(BlobCompression::None)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(matches!(err, Error::NotEmpty { len: 1, .. }), "{err}");

    let mut w = BlobFileWriter::new(
        fs.create(path).unwrap(),
        path,
        header(BlobCompression::zstd()),
    )
    .unwrap();
    assert_eq!(w.file_size(), HEADER_LEN as u64);
    let too_big = vec![0u8; MAX_BLOB_LEN + 1];
    let err = w.add(b"k", &too_big).unwrap_err();
    assert!(matches!(err, Error::ValueTooLarge { .. }), "{err}");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    // Still usable.
    let index = w.add(b"k", b"v").unwrap();
    assert_eq!(w.blob_count(), 1);
    assert_eq!(w.blob_bytes(), 1);
    assert_eq!(w.path(), path);
    assert_eq!(w.header(), &header(BlobCompression::zstd()));
    assert!(format!("{w:?}").contains("BlobFileWriter"));
    w.finish().unwrap();
    assert_eq!(&open(&fs).unwrap().get(b"k", &index).unwrap()[..], b"v");
}

#[test]
fn small_values_reach_the_file_in_chunks() {
    let fs = FaultFs::new(MemFs::new());
    let value = noise(1024, 9);
    let entries: Vec<_> = (0..1000u32)
        .map(|i| (i.to_be_bytes().to_vec(), value.clone()))
        .collect();
    write(&fs, BlobCompression::None, &entries);
    // ~1 MiB in 64 KiB chunks, plus the header and the final chunk.
    let writes = fs.counts().writes;
    assert!(writes <= 20, "{writes} appends");
    assert!(open(&fs).unwrap().verify().is_ok());
}

#[test]
fn an_io_error_poisons_the_writer() {
    let fs = FaultFs::new(MemFs::new());
    let path = Path::new(PATH);
    let mut w =
        BlobFileWriter::new(fs.create(path).unwrap(), path, header(BlobCompression::Lz4)).unwrap();
    fs.add_rule(FaultRule::fail_nth(OpKind::Write, 1));
    let value = noise(100 << 10, 1); // larger than a chunk: written at once
    let err = w.add(b"k", &value).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io, "{err}");
    assert_eq!(err.offset(), Some(HEADER_LEN as u64));
    let err = w.add(b"k2", b"v").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Poisoned, "{err}");
    assert!(
        w.finish()
            .unwrap_err()
            .to_string()
            .contains("failed earlier")
    );

    // A failed sync fails `finish`.
    fs.clear_rules();
    let mut w =
        BlobFileWriter::new(fs.create(path).unwrap(), path, header(BlobCompression::Lz4)).unwrap();
    w.add(b"k", b"v").unwrap();
    fs.add_rule(FaultRule::fail_nth(OpKind::Sync, 1));
    let err = w.finish().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io, "{err}");

    // A header that cannot be written fails `new`.
    fs.clear_rules();
    fs.add_rule(FaultRule::fail_nth(OpKind::Write, 1));
    let err = BlobFileWriter::new(
        fs.create(path).unwrap(),
        path,
        header(BlobCompression::None),
    )
    .unwrap_err();
    assert_eq!((err.kind(), err.offset()), (ErrorKind::Io, Some(0)));
}

#[test]
fn a_read_error_is_an_io_error() {
    let (bytes, entries, indexes, _) = small_file();
    let fs = FaultFs::new(MemFs::new());
    let mut f = fs.create(Path::new(PATH)).unwrap();
    f.append(&bytes).unwrap();
    drop(f);
    let reader = open(&fs).unwrap();
    fs.add_rule(FaultRule::fail_from(OpKind::Read, 1));
    let err = reader.get(&entries[0].0, &indexes[0]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io, "{err}");
    assert_eq!(reader.verify().unwrap_err().kind(), ErrorKind::Io);
    assert_eq!(open(&fs).unwrap_err().kind(), ErrorKind::Io);
}

#[test]
fn a_finished_file_survives_power_loss() {
    let fs = MemFs::new();
    let entries = sample_entries();
    let (indexes, built) = write(&fs, BlobCompression::zstd(), &entries);
    fs.sync_dir(Path::new("/")).unwrap();
    fs.crash();
    let reader = open(&fs).unwrap();
    assert_eq!(reader.verify().unwrap().file_checksum, built.file_checksum);
    for ((k, v), i) in entries.iter().zip(&indexes) {
        assert_eq!(&reader.get(k, i).unwrap()[..], &v[..]);
    }
}

#[test]
fn readers_are_shared_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<BlobFileReader>();
    fn send<T: Send>() {}
    send::<BlobFileWriter>();

    let fs = MemFs::new();
    let entries = sample_entries();
    let (indexes, _) = write(&fs, BlobCompression::Lz4, &entries);
    let reader = Arc::new(open(&fs).unwrap());
    std::thread::scope(|s| {
        for t in 0..4 {
            let (reader, entries, indexes) = (&reader, &entries, &indexes);
            s.spawn(move || {
                for round in 0..20 {
                    let n = (t + round) % entries.len();
                    let got = reader.get(&entries[n].0, &indexes[n]).unwrap();
                    assert_eq!(&got[..], &entries[n].1[..]);
                }
            });
        }
    });
}

#[test]
fn a_reader_over_any_random_access_file() {
    #[derive(Debug)]
    struct VecFile(Vec<u8>);
    impl RandomAccessFile for VecFile {
        fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
            let start = (offset as usize).min(self.0.len());
            let n = buf.len().min(self.0.len() - start);
            buf[..n].copy_from_slice(&self.0[start..start + n]);
            Ok(n)
        }
        fn size(&self) -> std::io::Result<u64> {
            Ok(self.0.len() as u64)
        }
    }
    let (bytes, entries, indexes, _) = small_file();
    let reader = BlobFileReader::open(Arc::new(VecFile(bytes)), Path::new("v.blob")).unwrap();
    assert_eq!(
        &reader.get(&entries[2].0, &indexes[2]).unwrap()[..],
        &entries[2].1[..]
    );
}

fn compression_strategy() -> impl Strategy<Value = BlobCompression> {
    prop_oneof![
        Just(BlobCompression::None),
        (-5i32..10).prop_map(|level| BlobCompression::Zstd { level }),
        Just(BlobCompression::Lz4),
    ]
}

fn value_strategy() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..300),
        (0usize..5000, 1u8..4)
            .prop_map(|(len, period)| (0..len).map(|i| (i % usize::from(period)) as u8).collect()),
        (0usize..200_000).prop_map(compressible),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_files_round_trip(
        compression in compression_strategy(),
        entries in proptest::collection::vec(
            (proptest::collection::vec(any::<u8>(), 0..40), value_strategy()),
            0..24,
        ),
    ) {
        let fs = MemFs::new();
        let (indexes, built) = write(&fs, compression, &entries);
        let reader = open(&fs).unwrap();
        for ((k, v), index) in entries.iter().zip(&indexes) {
            prop_assert_eq!(&reader.get(k, index).unwrap()[..], &v[..]);
            prop_assert!(index.compression == 0 || index.compression == compression.code());
            prop_assert!(index.size <= v.len() as u64);
        }
        let records: Vec<BlobRecord> = reader.records().collect::<Result<_>>().unwrap();
        prop_assert_eq!(records.len(), entries.len());
        for ((r, (k, v)), index) in records.iter().zip(&entries).zip(&indexes) {
            prop_assert_eq!(&r.key, k);
            prop_assert_eq!(&r.value, v);
            prop_assert_eq!(&r.index, index);
        }
        let summary = reader.verify().unwrap();
        prop_assert_eq!(summary.file_checksum, built.file_checksum);
        prop_assert_eq!(summary.blob_count, entries.len() as u64);
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        mut bytes in proptest::collection::vec(any::<u8>(), 0..400),
        seal in any::<bool>(),
        index in proptest::collection::vec(any::<u8>(), 0..20),
    ) {
        // Sealed: a valid header and footer around random records.
        if seal && bytes.len() >= HEADER_LEN + FOOTER_LEN {
            let h = header(BlobCompression::Lz4).encode();
            bytes[..HEADER_LEN].copy_from_slice(&h);
            let at = bytes.len() - FOOTER_LEN;
            bytes[at..].copy_from_slice(&BlobFileFooter::default().encode());
        }
        if let Ok(reader) = open_bytes(&bytes) {
            let records: Vec<_> = reader.records().collect();
            let _ = reader.verify();
            if let Ok(index) = BlobIndex::decode(&index) {
                let _ = reader.get(b"k", &index);
            }
            for r in records.into_iter().flatten() {
                prop_assert_eq!(reader.get(&r.key, &r.index).unwrap(), r.value);
            }
        }
    }
}
