//! Records written are read back exactly, at the offsets the writer
//! returned, whatever their sizes.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::{compact_log, half_compressible, pattern, read_all, slice_file, write_log};
use lithify_vfs::{FileSystem, MemFs, OsFs};
use lithify_wal::format::{
    BLOCK_SIZE, COMPACT_FRAGMENT_HEADER_LEN, FILE_HEADER_LEN, FORMAT_VERSION_COMPACT,
    FORMAT_VERSION_COMPRESSED, FORMAT_VERSION_OWNED, FRAGMENT_HEADER_LEN, FileHeader, FragmentType,
    Framing, MAX_FRAGMENT_PAYLOAD,
};
use lithify_wal::{LogEnd, Reader, RecordCompression, RecoveryMode, Writer, WriterOptions};
use proptest::prelude::*;

fn check_round_trip(sizes: &[usize]) {
    check_round_trip_as(sizes, Framing::Tagged);
}

fn check_round_trip_as(sizes: &[usize], framing: Framing) {
    let records: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| pattern(n, i as u64))
        .collect();
    let (data, written) = match framing {
        Framing::Compact => compact_log(9, &records, WriterOptions::default()),
        _ => write_log(9, &records),
    };
    let data = Arc::new(data);
    for mode in [
        RecoveryMode::AbsoluteConsistency,
        RecoveryMode::TolerateCorruptedTailRecords,
        RecoveryMode::PointInTimeRecovery,
        RecoveryMode::SkipAnyCorruptedRecords,
    ] {
        let out = read_all(slice_file(&data, data.len()), 9, mode);
        assert!(out.error.is_none(), "{mode:?}: {:?}", out.error);
        assert!(out.dropped.is_empty(), "{mode:?}: {:?}", out.dropped);
        assert_eq!(out.end, Some(LogEnd::Clean));
        assert_eq!(out.records.len(), records.len());
        for (got, want) in out.records.iter().zip(&written) {
            assert_eq!(got.0, want.offset);
            assert_eq!(got.1, want.payload);
        }
    }
}

#[test]
fn edge_sizes_round_trip() {
    check_round_trip(&[0]);
    check_round_trip(&[1]);
    check_round_trip(&[BLOCK_SIZE]);
    check_round_trip(&[BLOCK_SIZE - FRAGMENT_HEADER_LEN]);
    // Exactly fills block 0 after the file header: the next record starts
    // a new block without a trailer.
    check_round_trip(&[BLOCK_SIZE - FILE_HEADER_LEN - FRAGMENT_HEADER_LEN, 5]);
    // Leaves exactly a header's room, then less than a header (trailer).
    check_round_trip(&[BLOCK_SIZE - FILE_HEADER_LEN - 2 * FRAGMENT_HEADER_LEN, 0, 3]);
    check_round_trip(&[BLOCK_SIZE - FILE_HEADER_LEN - FRAGMENT_HEADER_LEN - 5, 7, 0]);
    check_round_trip(&[1 << 20]);
    check_round_trip(&[0, 0, 0, MAX_FRAGMENT_PAYLOAD, 0, 1 << 20, 1]);
}

#[test]
fn edge_sizes_round_trip_in_a_compact_log() {
    const H: usize = COMPACT_FRAGMENT_HEADER_LEN;
    // The `Identity` fragment after the file header.
    const ID: usize = H + 16;
    let compact = |sizes: &[usize]| check_round_trip_as(sizes, Framing::Compact);
    compact(&[0]);
    compact(&[BLOCK_SIZE - H]);
    compact(&[BLOCK_SIZE - FILE_HEADER_LEN - ID - H, 5]);
    compact(&[BLOCK_SIZE - FILE_HEADER_LEN - ID - 2 * H, 0, 3]);
    compact(&[BLOCK_SIZE - FILE_HEADER_LEN - ID - H - 5, 7, 0]);
    compact(&[BLOCK_SIZE - FILE_HEADER_LEN - ID - H - 4, 7, 0]);
    compact(&[1 << 20]);
    compact(&[0, 0, 0, BLOCK_SIZE - H, 0, 1 << 20, 1]);
    // A record that leaves exactly a compact header's room in block 0 (an
    // empty `First` fragment goes there), and one that leaves a byte less
    // (a 6-byte trailer).
    let first = BLOCK_SIZE - FILE_HEADER_LEN - ID - 2 * H;
    let (data, written) = compact_log(1, &[vec![1; first], vec![2; 10]], WriterOptions::default());
    let types: Vec<(usize, usize, u8)> = common::fragments(&data)
        .iter()
        .map(|f| (f.offset, f.len, f.ty))
        .collect();
    assert_eq!(
        types,
        vec![
            (FILE_HEADER_LEN, 16, FragmentType::Identity as u8),
            (FILE_HEADER_LEN + ID, first, 1),
            (BLOCK_SIZE - H, 0, 2),
            (BLOCK_SIZE, 10, 4),
        ]
    );
    assert_eq!(written[1].offset, (BLOCK_SIZE - H) as u64);
    let (data, written) = compact_log(
        1,
        &[vec![1; first + 1], vec![2; 10]],
        WriterOptions::default(),
    );
    assert_eq!(written[1].offset, BLOCK_SIZE as u64);
    assert!(data[BLOCK_SIZE - 6..BLOCK_SIZE].iter().all(|&b| b == 0));
}

/// Compact framing saves 4 bytes per fragment, and names the owner it
/// needs; a recycled log stays tagged whatever its options say.
#[test]
fn compact_framing_needs_an_owner_and_is_never_recycled() {
    let records: Vec<Vec<u8>> = (0..100).map(|i| pattern(100, i)).collect();
    let (tagged, _) = common::write_log_with(3, &records, RecordCompression::None);
    let (compact, _) = compact_log(3, &records, WriterOptions::default());
    // Tagged: no identity; compact: a 23-byte identity, 4 bytes less per record.
    assert_eq!(compact.len() + 400, tagged.len() + 23);
    let data = Arc::new(compact);
    let mut r = Reader::new(slice_file(&data, data.len()), "/log", 3).unwrap();
    assert_eq!(r.format_version().unwrap(), Some(FORMAT_VERSION_COMPACT));
    assert_eq!(r.owner().unwrap(), Some(common::OWNER));

    let fs = MemFs::new();
    let path = Path::new("/000006.log");
    let options = WriterOptions::default().framing(Framing::Compact);
    let err = Writer::with_options(fs.create(path).unwrap(), path, 6, options).unwrap_err();
    assert!(err.to_string().contains("needs an owner"), "{err}");
    let mut old = fs.create(path).unwrap();
    old.append(&[1; 100]).unwrap();
    let options = options.owner(Some(common::OWNER));
    let mut w = Writer::recycle(old, path, 6, 5, options).unwrap();
    let at = w.add_record(b"x").unwrap() as usize;
    w.close().unwrap();
    let bytes = lithify_vfs::read_file(&fs, path).unwrap();
    let header = FileHeader::decode(bytes[..FILE_HEADER_LEN].try_into().unwrap()).unwrap();
    assert_eq!(header.version, FORMAT_VERSION_OWNED);
    // The record's fragment is tagged: length, type Full, log number 6.
    assert_eq!(&bytes[at + 4..at + 12], &[1, 0, 1, 6, 0, 0, 0, b'x']);
    let mut r = Reader::new(fs.open(path).unwrap(), path, 6).unwrap();
    assert_eq!(r.read_record().unwrap().unwrap().payload, b"x");
}

#[test]
fn fragment_layout_is_as_specified() {
    // A record that leaves exactly FRAGMENT_HEADER_LEN bytes in block 0:
    // the next record starts with an empty First fragment there.
    let first = BLOCK_SIZE - FILE_HEADER_LEN - 2 * FRAGMENT_HEADER_LEN;
    let (data, written) = write_log(1, &[vec![1; first], vec![2; 10]]);
    let frags = common::fragments(&data);
    let types: Vec<(usize, usize, u8)> = frags.iter().map(|f| (f.offset, f.len, f.ty)).collect();
    assert_eq!(
        types,
        vec![
            (FILE_HEADER_LEN, first, 1),
            (BLOCK_SIZE - FRAGMENT_HEADER_LEN, 0, 2),
            (BLOCK_SIZE, 10, 4),
        ]
    );
    assert_eq!(written[1].offset, (BLOCK_SIZE - FRAGMENT_HEADER_LEN) as u64);
    // Leaving 10 bytes: they become a zero trailer.
    let (data, written) = write_log(1, &[vec![1; first + 1], vec![2; 10]]);
    assert_eq!(written[1].offset, BLOCK_SIZE as u64);
    assert!(data[BLOCK_SIZE - 10..BLOCK_SIZE].iter().all(|&b| b == 0));
}

#[test]
fn golden_bytes() {
    // Log 5 holding "ab" and an empty record. Pins the whole format.
    let (data, _) = write_log(5, &[b"ab".to_vec(), Vec::new()]);
    let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        hex,
        concat!(
            "4c544846594c4f47",
            "01000000",
            "0500000000000000",
            "aa10b806",
            "c40d7cba",
            "0200",
            "01",
            "05000000",
            "6162",
            "deb776cf",
            "0000",
            "01",
            "05000000",
        )
    );
}

#[test]
fn os_file_system_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("000004.log");
    let fs = OsFs;
    let mut w = Writer::new(fs.create(&path).unwrap(), &path, 4).unwrap();
    for i in 0..100 {
        w.add_record(&pattern(i * 997, i as u64)).unwrap();
    }
    w.close().unwrap();
    let mut r = Reader::new(fs.open(&path).unwrap(), &path, 4).unwrap();
    for i in 0..100 {
        let rec = r.read_record().unwrap().unwrap();
        assert_eq!(rec.payload, pattern(i * 997, i as u64));
    }
    assert!(r.read_record().unwrap().is_none());
    assert_eq!(r.end(), Some(LogEnd::Clean));
}

#[test]
fn writer_refuses_non_empty_file() {
    let fs = MemFs::new();
    let path = Path::new("/x.log");
    let mut f = fs.create(path).unwrap();
    f.append(b"old").unwrap();
    let err = Writer::new(f, path, 1).unwrap_err();
    assert_eq!(
        lithify_base::Classify::kind(&err),
        lithify_base::ErrorKind::InvalidArgument
    );
}

#[test]
fn into_records_iterates_owned_records() {
    let (data, written) = write_log(3, &[b"x".to_vec(), vec![7; 70_000], b"z".to_vec()]);
    let data = Arc::new(data);
    let reader = Reader::new(slice_file(&data, data.len()), "/log", 3).unwrap();
    let got: Vec<_> = reader.into_records().map(|r| r.unwrap()).collect();
    assert_eq!(got.len(), 3);
    for (g, w) in got.iter().zip(&written) {
        assert_eq!((g.offset, &g.payload), (w.offset, &w.payload));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_sizes_round_trip(
        sizes in proptest::collection::vec(
            prop_oneof![0usize..64, 0usize..2000, 30_000usize..70_000], 0..24),
        buffer_size in prop_oneof![Just(0usize), 1usize..100_000],
        compression in prop_oneof![Just(RecordCompression::None), Just(RecordCompression::Lz4)],
        compressible in proptest::collection::vec(any::<bool>(), 24),
        compact in any::<bool>(),
    ) {
        let fs = MemFs::new();
        let path = Path::new("/p.log");
        let mut w = Writer::with_options(
            fs.create(path).unwrap(), path, 77,
            WriterOptions::default()
                .buffer_size(buffer_size)
                .bytes_per_sync(0)
                .compression(compression)
                .owner(compact.then_some(common::OWNER))
                .framing(if compact { Framing::Compact } else { Framing::Tagged }),
        ).unwrap();
        let record = |i: usize, n: usize| if compressible[i] {
            half_compressible(n, i as u64)
        } else {
            pattern(n, i as u64)
        };
        let mut offsets = Vec::new();
        let mut given = 0;
        for (i, &n) in sizes.iter().enumerate() {
            offsets.push(w.add_record(&record(i, n)).unwrap());
            given += n as u64;
            prop_assert!(w.flushed_len() <= w.bytes_written());
        }
        prop_assert_eq!(w.record_bytes(), given);
        let total = w.bytes_written();
        w.sync().unwrap();
        prop_assert_eq!(w.synced_len(), total);
        prop_assert_eq!(fs.file_size(path).unwrap(), total);
        let mut r = Reader::new(fs.open(path).unwrap(), path, 77).unwrap()
            .with_mode(RecoveryMode::AbsoluteConsistency);
        for (i, &n) in sizes.iter().enumerate() {
            let rec = r.read_record().unwrap().unwrap();
            prop_assert_eq!(rec.offset, offsets[i]);
            prop_assert_eq!(rec.payload, &record(i, n)[..]);
        }
        prop_assert!(r.read_record().unwrap().is_none());
    }
}

#[test]
fn compressed_records_are_smaller_and_read_back() {
    let records: Vec<Vec<u8>> = [0, 10, 31, 32, 100, 3000, 40_000, 70_000, 5]
        .iter()
        .enumerate()
        .map(|(i, &n)| half_compressible(n, i as u64))
        .chain([pattern(500, 9)]) // does not compress: stored as it is
        .collect();
    let (plain, _) = write_log(4, &records);
    let (packed, written) = common::write_log_with(4, &records, RecordCompression::Lz4);
    assert!(
        packed.len() * 10 < plain.len() * 7,
        "{} vs {}",
        packed.len(),
        plain.len()
    );
    let header = FileHeader::decode(packed[..FILE_HEADER_LEN].try_into().unwrap()).unwrap();
    assert_eq!(header.version, FORMAT_VERSION_COMPRESSED);
    let types: Vec<u8> = common::fragments(&packed).iter().map(|f| f.ty).collect();
    assert!(types.contains(&(FragmentType::Lz4Full as u8)));
    assert!(types.contains(&(FragmentType::Lz4First as u8)));
    // Short and incompressible records are stored as they are.
    assert!(types.contains(&(FragmentType::Full as u8)));
    let packed = Arc::new(packed);
    for mode in [
        RecoveryMode::AbsoluteConsistency,
        RecoveryMode::SkipAnyCorruptedRecords,
    ] {
        let out = read_all(slice_file(&packed, packed.len()), 4, mode);
        assert!(out.error.is_none() && out.dropped.is_empty(), "{mode:?}");
        assert_eq!(out.end, Some(LogEnd::Clean));
        let got: Vec<_> = out.records.iter().map(|r| (r.0, &r.1)).collect();
        let want: Vec<_> = written.iter().map(|w| (w.offset, &w.payload)).collect();
        assert_eq!(got, want, "{mode:?}");
    }
}

/// Format version 3: an owner's identity right after the header. Records
/// read back as ever (compressed or not, across blocks), the owner is
/// read, and older versions have none.
#[test]
fn an_owned_log_names_its_owner() {
    let fs = MemFs::new();
    let owner = lithify_base::Id::from_bytes(*b"0123456789abcdef");
    for compression in [RecordCompression::None, RecordCompression::Lz4] {
        let path = Path::new("/000011.log");
        let options = WriterOptions::default()
            .compression(compression)
            .owner(Some(owner));
        let mut w = Writer::with_options(fs.create(path).unwrap(), path, 11, options).unwrap();
        let records: Vec<Vec<u8>> = (0..40)
            .map(|i| half_compressible(100 + i * 2000, i as u64))
            .collect();
        let offsets: Vec<u64> = records.iter().map(|r| w.add_record(r).unwrap()).collect();
        w.close().unwrap();
        assert_eq!(
            offsets[0],
            (FILE_HEADER_LEN + FRAGMENT_HEADER_LEN + 16) as u64
        );
        let bytes = lithify_vfs::read_file(&fs, path).unwrap();
        let header = FileHeader::decode(bytes[..FILE_HEADER_LEN].try_into().unwrap()).unwrap();
        assert_eq!(header.version, 3);
        assert_eq!(bytes[FILE_HEADER_LEN + 6], FragmentType::Identity as u8);
        let mut r = Reader::new(fs.open(path).unwrap(), path, 11).unwrap();
        assert_eq!(r.owner().unwrap(), Some(owner));
        for (want, at) in records.iter().zip(&offsets) {
            let got = r.read_record().unwrap().unwrap();
            assert_eq!((got.offset, got.payload), (*at, &want[..]));
        }
        assert!(r.read_record().unwrap().is_none());
        assert_eq!(r.end(), Some(LogEnd::Clean));
        fs.remove_file(path).unwrap();
    }
    // No owner: version 1 or 2, as before.
    let (data, _) = write_log(9, &[pattern(10, 1)]);
    let data = Arc::new(data);
    let mut r = Reader::new(slice_file(&data, data.len()), "/x", 9).unwrap();
    assert_eq!(r.owner().unwrap(), None);
    assert!(r.read_record().unwrap().is_some());
}

/// A damaged `Identity` fragment is damage like any other: the owner is
/// unknown, and the reader reports the bytes by its mode.
#[test]
fn a_damaged_owner_is_reported_not_trusted() {
    let fs = MemFs::new();
    let path = Path::new("/000012.log");
    let options = WriterOptions::default().owner(Some(lithify_base::Id::from_bytes([7; 16])));
    let mut w = Writer::with_options(fs.create(path).unwrap(), path, 12, options).unwrap();
    w.add_record(b"record").unwrap();
    w.close().unwrap();
    let mut bytes = lithify_vfs::read_file(&fs, path).unwrap();
    bytes[FILE_HEADER_LEN + FRAGMENT_HEADER_LEN + 3] ^= 1;
    let data = Arc::new(bytes);
    let mut r = Reader::new(slice_file(&data, data.len()), path, 12)
        .unwrap()
        .with_mode(RecoveryMode::AbsoluteConsistency);
    assert_eq!(r.owner().unwrap(), None);
    let err = r.read_record().unwrap_err();
    assert!(err.to_string().contains("checksum mismatch"), "{err}");
}

/// Log 5 holding "ab", written into preallocated space: pins the
/// `Preallocated` fragment (`docs/FORMATS.md`, "The zero tail").
#[test]
fn golden_preallocated_bytes() {
    let fs = MemFs::new();
    let path = Path::new("/000005.log");
    let options = WriterOptions::default().owner(None).preallocate(1);
    let mut w = Writer::with_options(fs.create(path).unwrap(), path, 5, options).unwrap();
    assert_eq!(w.add_record(b"ab").unwrap(), 35);
    w.sync().unwrap();
    let data = lithify_vfs::read_file(&fs, path).unwrap();
    assert_eq!(data.len(), 32 * 1024, "one block, sized up front");
    assert!(data[48..].iter().all(|&b| b == 0));
    let hex: String = data[..48].iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        hex,
        concat!(
            "4c544846594c4f47",
            "01000000",
            "0500000000000000",
            "aa10b806",
            "74ceb275",
            "0000",
            "83",
            "05000000",
            "c40d7cba",
            "0200",
            "01",
            "05000000",
            "6162",
        )
    );
}

#[test]
fn golden_compact_bytes() {
    // Compact log 5 (format version 4) owned by [7; 16], holding "ab" and
    // an empty record. Pins the whole format.
    let (data, _) = compact_log(5, &[b"ab".to_vec(), Vec::new()], WriterOptions::default());
    let hex: String = data.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        hex,
        concat!(
            "4c544846594c4f47",
            "04000000",
            "0500000000000000",
            "ca13ae00",
            // Identity: checksum, length 16, type 0x81, the owner.
            "a68afa91",
            "1000",
            "81",
            "07070707070707070707070707070707",
            // "ab": checksum, length 2, type Full, payload; no log number.
            "a3459697",
            "0200",
            "01",
            "6162",
            "96c4a295",
            "0000",
            "01",
        )
    );
}
