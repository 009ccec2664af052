//! Damage: a bit flipped in each fragment, and every other kind of problem,
//! under each recovery mode.

mod common;

use std::sync::Arc;

use common::{
    MODES, Written, compact_log, fragments, half_compressible, pattern, preallocated_log, read_all,
    slice_file, write_log, write_log_with,
};
use lithify_base::{Classify, ErrorKind};
use lithify_wal::format::{
    BLOCK_SIZE, FILE_HEADER_LEN, FRAGMENT_HEADER_LEN, FileHeader, FragmentType, Framing,
    put_fragment,
};
use lithify_wal::format::{DecompressError, compress_record};
use lithify_wal::{DropReason, LogEnd, RecordCompression, RecoveryMode, WriterOptions};

/// A log whose records span blocks in every way: small, block-crossing,
/// multi-block.
fn sample() -> (Vec<u8>, Vec<Written>) {
    write_log(21, &sample_records())
}

/// The records of [`sample`].
fn sample_records() -> Vec<Vec<u8>> {
    let sizes = [10, 0, 3000, 40_000, 5, 70_000, 200, 31_000, 1, 900];
    sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| pattern(n, i as u64 + 50))
        .collect()
}

/// [`sample`]'s sizes, compressible, stored LZ4-compressed (the 40 000-,
/// 70 000- and 31 000-byte records still span blocks), plus one record
/// that does not compress.
fn compressed_sample() -> (Vec<u8>, Vec<Written>) {
    write_log_with(21, &compressed_sample_records(), RecordCompression::Lz4)
}

/// The records of [`compressed_sample`].
fn compressed_sample_records() -> Vec<Vec<u8>> {
    let sizes = [10, 0, 3000, 40_000, 5, 70_000, 200, 31_000, 1, 900];
    sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| half_compressible(n, i as u64 + 50))
        .chain([pattern(700, 3)])
        .collect()
}

/// Which records each mode should return when the fragment at `frag_offset`
/// (belonging to record `victim`) is damaged, with rest-of-block dropping.
fn survivors_skip(written: &[Written], victim: usize, frag_offset: usize) -> Vec<usize> {
    let drop_lo = written[victim].offset;
    let drop_hi = (frag_offset / BLOCK_SIZE + 1) as u64 * BLOCK_SIZE as u64;
    (0..written.len())
        .filter(|&i| i != victim && (written[i].end <= drop_lo || written[i].offset >= drop_hi))
        .collect()
}

#[test]
fn bit_flip_in_each_fragment_under_each_mode() {
    let (data, written) = sample();
    bit_flip_in_each_fragment(data, written);
}

#[test]
fn bit_flip_in_each_fragment_of_a_compact_log() {
    let (data, written) = compact_log(21, &sample_records(), WriterOptions::default());
    assert_eq!(common::header_len(&data), 7);
    bit_flip_in_each_fragment(data, written);
    let (data, written) = compact_log(
        21,
        &compressed_sample_records(),
        WriterOptions::default().compression(RecordCompression::Lz4),
    );
    bit_flip_in_each_fragment(data, written);
}

#[test]
fn bit_flip_in_each_fragment_of_a_compressed_log() {
    let (data, written) = compressed_sample();
    let types: Vec<u8> = fragments(&data).iter().map(|f| f.ty).collect();
    assert!(types.contains(&(FragmentType::Lz4First as u8)));
    bit_flip_in_each_fragment(data, written);
}

fn bit_flip_in_each_fragment(data: Vec<u8>, written: Vec<Written>) {
    let header_len = common::header_len(&data);
    let frags = fragments(&data);
    assert!(frags.len() > 12);
    let record_of = |off: usize| {
        written
            .iter()
            .position(|w| w.offset as usize <= off && off < w.end as usize)
            .unwrap()
    };
    for (fi, frag) in frags.iter().enumerate() {
        if frag.ty & 0x80 != 0 {
            // The header's metadata (an `Identity` fragment), not a record.
            continue;
        }
        let victim = record_of(frag.offset);
        // Flip a bit in the checksum, the type, and the payload (if any).
        let mut spots = vec![frag.offset + 1, frag.offset + 6];
        if frag.len > 0 {
            spots.push(frag.offset + header_len + frag.len / 2);
        }
        for spot in spots {
            let mut bad = data.clone();
            bad[spot] ^= 0x10;
            let bad = Arc::new(bad);
            let file = || slice_file(&bad, bad.len());
            let later_valid = frags[fi + 1..].iter().any(|f| {
                f.offset % BLOCK_SIZE == 0 || f.offset == frag.offset + header_len + frag.len
            });
            let ctx = format!("fragment {fi} at {} byte {spot}", frag.offset);

            // Absolute consistency: an error naming the fragment.
            let strict = read_all(file(), 21, RecoveryMode::AbsoluteConsistency);
            let err = strict.error.expect(&ctx);
            assert_eq!(err.kind(), ErrorKind::Corruption, "{ctx}");
            assert!(
                err.to_string()
                    .contains(&format!("at offset {}", frag.offset)),
                "{ctx}: {err}"
            );
            assert_eq!(strict.records.len(), victim, "{ctx}");

            // Point in time: exactly the records before the victim.
            let pit = read_all(file(), 21, RecoveryMode::PointInTimeRecovery);
            assert!(pit.error.is_none(), "{ctx}");
            assert_eq!(pit.records.len(), victim, "{ctx}");
            for (got, want) in pit.records.iter().zip(&written) {
                assert_eq!((got.0, &got.1), (want.offset, &want.payload));
            }
            assert_eq!(pit.dropped.len(), 1);
            assert_eq!(pit.dropped[0].offset, written[victim].offset);
            assert_eq!(pit.dropped[0].end(), bad.len() as u64);
            match pit.end {
                Some(LogEnd::Corruption { offset, .. }) => {
                    assert!(later_valid, "{ctx}");
                    assert_eq!(offset, written[victim].offset);
                }
                Some(LogEnd::TornTail { offset, .. }) => {
                    assert!(!later_valid, "{ctx}");
                    assert_eq!(offset, written[victim].offset);
                }
                other => panic!("{ctx}: {other:?}"),
            }

            // Tolerate a corrupted tail: fine only if nothing valid follows.
            let tol = read_all(file(), 21, RecoveryMode::TolerateCorruptedTailRecords);
            assert_eq!(tol.error.is_some(), later_valid, "{ctx}");
            assert_eq!(tol.records.len(), victim, "{ctx}");

            // Skip: every record not sharing the damaged stretch.
            let skip = read_all(file(), 21, RecoveryMode::SkipAnyCorruptedRecords);
            assert!(skip.error.is_none(), "{ctx}");
            let want = survivors_skip(&written, victim, frag.offset);
            let got: Vec<u64> = skip.records.iter().map(|r| r.0).collect();
            let want_offsets: Vec<u64> = want.iter().map(|&i| written[i].offset).collect();
            assert_eq!(got, want_offsets, "{ctx}");
            for (g, &i) in skip.records.iter().zip(&want) {
                assert_eq!(g.1, written[i].payload);
            }
            // The dropped bytes cover every lost record.
            for i in (0..written.len()).filter(|i| !want.contains(i)) {
                assert!(
                    skip.dropped
                        .iter()
                        .any(|d| d.offset <= written[i].offset && written[i].offset < d.end()),
                    "{ctx}: record {i} lost but not reported: {:?}",
                    skip.dropped
                );
            }
            assert_eq!(skip.dropped[0].offset, written[victim].offset);
            assert_eq!(skip.dropped[0].reason, DropReason::ChecksumMismatch);
        }
    }
}

#[test]
fn damaged_length_drops_rest_of_block() {
    let (data, written) = sample();
    let frag = fragments(&data)[0];
    let mut bad = data.clone();
    bad[frag.offset + 5] = 0xff; // length > block
    let bad = Arc::new(bad);
    let skip = read_all(
        slice_file(&bad, bad.len()),
        21,
        RecoveryMode::SkipAnyCorruptedRecords,
    );
    assert_eq!(skip.dropped[0].reason, DropReason::BadLength);
    let want = survivors_skip(&written, 0, frag.offset);
    assert_eq!(skip.records.len(), want.len());
    let pit = read_all(
        slice_file(&bad, bad.len()),
        21,
        RecoveryMode::PointInTimeRecovery,
    );
    assert!(pit.records.is_empty());
    assert_eq!(
        pit.end,
        Some(LogEnd::Corruption {
            offset: FILE_HEADER_LEN as u64,
            reason: DropReason::BadLength
        })
    );
}

/// In a log not sized ahead of its records (no `Preallocated` fragment:
/// a MANIFEST, say), zeros after the last record are what a crash leaves
/// on a file system that extended the file but not its data: a torn tail.
#[test]
fn zero_filled_tail_of_a_log_not_preallocated_is_a_torn_tail() {
    let (mut data, written) = sample();
    let clean_len = data.len();
    data.resize(clean_len + 3 * BLOCK_SIZE + 100, 0);
    let data = Arc::new(data);
    let f = || slice_file(&data, data.len());
    let pit = read_all(f(), 21, RecoveryMode::PointInTimeRecovery);
    assert_eq!(pit.records.len(), written.len());
    assert_eq!(
        pit.end,
        Some(LogEnd::TornTail {
            offset: clean_len as u64,
            reason: DropReason::Zeroed
        })
    );
    assert_eq!(pit.dropped[0].len, (data.len() - clean_len) as u64);
    let tol = read_all(f(), 21, RecoveryMode::TolerateCorruptedTailRecords);
    assert!(tol.error.is_none());
    assert_eq!(tol.records.len(), written.len());
    let skip = read_all(f(), 21, RecoveryMode::SkipAnyCorruptedRecords);
    assert_eq!(skip.records.len(), written.len());
    assert_eq!(
        skip.dropped.len(),
        1,
        "adjacent zero blocks merge: {:?}",
        skip.dropped
    );
    assert_eq!(skip.dropped[0].end(), data.len() as u64);
    assert!(matches!(skip.end, Some(LogEnd::TornTail { .. })));
    let strict = read_all(f(), 21, RecoveryMode::AbsoluteConsistency);
    assert!(strict.error.unwrap().is_corruption());
}

/// [`sample`]'s records written by a writer that sizes the file ahead of
/// them (it says so in a `Preallocated` fragment), cut to the records.
fn preallocated_sample() -> (Vec<u8>, Vec<Written>) {
    preallocated_log(21, &sample_records())
}

/// In a preallocated log, zeros from where the next fragment would start
/// to the end of the file are the space the writer had not written yet,
/// or what a crash leaves of writes the file system had sized but not
/// written: the log's clean end in every mode, with nothing dropped.
#[test]
fn zero_filled_tail_is_a_clean_end_in_every_mode() {
    let compact = compact_log(
        21,
        &sample_records(),
        WriterOptions::default().preallocate(1 << 20),
    );
    for (clean, written) in [preallocated_sample(), compact] {
        zero_filled_tail_is_a_clean_end(clean, written);
    }
}

fn zero_filled_tail_is_a_clean_end(clean: Vec<u8>, written: Vec<Written>) {
    let clean_len = clean.len();
    for extra in [1, 10, BLOCK_SIZE - 1, 3 * BLOCK_SIZE + 100] {
        let mut data = clean.clone();
        data.resize(clean_len + extra, 0);
        let data = Arc::new(data);
        for mode in MODES {
            let out = read_all(slice_file(&data, data.len()), 21, mode);
            assert!(
                out.error.is_none(),
                "{mode:?}, {extra} zeros: {:?}",
                out.error
            );
            assert_eq!(out.records.len(), written.len(), "{mode:?}, {extra} zeros");
            assert_eq!(out.end, Some(LogEnd::Clean), "{mode:?}, {extra} zeros");
            assert!(out.dropped.is_empty(), "{mode:?}: {:?}", out.dropped);
            assert_eq!(
                out.zero_tail,
                Some(clean_len as u64),
                "{mode:?}, {extra} zeros"
            );
        }
    }
    // Without zeros there is no zero tail.
    let data = Arc::new(clean);
    let out = read_all(
        slice_file(&data, data.len()),
        21,
        RecoveryMode::AbsoluteConsistency,
    );
    assert_eq!((out.end, out.zero_tail), (Some(LogEnd::Clean), None));
}

/// Zeros followed by a valid fragment are a hole, not an end: a zeroed
/// block in the middle of a log is damage as before.
#[test]
fn zeros_followed_by_records_are_still_damage() {
    let records: Vec<Vec<u8>> = (0..40).map(|i| pattern(3000, i)).collect();
    let (mut data, written) = preallocated_log(21, &records);
    // Zero the whole second block: the records after it are intact.
    for b in &mut data[BLOCK_SIZE..2 * BLOCK_SIZE] {
        *b = 0;
    }
    let data = Arc::new(data);
    let pit = read_all(
        slice_file(&data, data.len()),
        21,
        RecoveryMode::PointInTimeRecovery,
    );
    assert!(
        matches!(pit.end, Some(LogEnd::Corruption { .. })),
        "{:?}",
        pit.end
    );
    assert_eq!(pit.zero_tail, None);
    assert!(pit.records.len() < written.len());
    let strict = read_all(
        slice_file(&data, data.len()),
        21,
        RecoveryMode::AbsoluteConsistency,
    );
    assert!(strict.error.unwrap().is_corruption());
}

/// A record whose first fragments were written but whose last fell in
/// the zeros is a torn write, dropped from its first fragment on.
#[test]
fn a_record_cut_by_the_zero_tail_is_incomplete() {
    let records = [pattern(100, 1), pattern(3 * BLOCK_SIZE, 2)];
    let (data, written) = preallocated_log(21, &records);
    let mut cut = data[..2 * BLOCK_SIZE].to_vec();
    cut.resize(data.len() + BLOCK_SIZE, 0);
    let cut = Arc::new(cut);
    let pit = read_all(
        slice_file(&cut, cut.len()),
        21,
        RecoveryMode::PointInTimeRecovery,
    );
    assert_eq!(pit.records.len(), 1);
    assert_eq!(
        pit.end,
        Some(LogEnd::TornTail {
            offset: written[1].offset,
            reason: DropReason::IncompleteRecord
        })
    );
    let strict = read_all(
        slice_file(&cut, cut.len()),
        21,
        RecoveryMode::AbsoluteConsistency,
    );
    assert!(strict.error.unwrap().is_corruption());
}

/// A file of zeros only, header included, is an empty log in every mode:
/// a file sized before a power cut let any of its bytes reach the disk.
#[test]
fn a_file_of_zeros_is_an_empty_log() {
    for len in [1, 23, 24, 100, BLOCK_SIZE, 3 * BLOCK_SIZE + 7] {
        let data = Arc::new(vec![0u8; len]);
        for mode in MODES {
            let out = read_all(slice_file(&data, len), 21, mode);
            assert!(
                out.error.is_none(),
                "{len} zeros, {mode:?}: {:?}",
                out.error
            );
            assert!(out.records.is_empty());
            assert_eq!(out.end, Some(LogEnd::Clean), "{len} zeros, {mode:?}");
            assert_eq!(out.zero_tail, Some(0));
            assert!(out.dropped.is_empty());
        }
    }
}

/// A last record whose header is whole but whose bytes end in zeros (as
/// a crash that exposed unwritten space inside it leaves it) fails its
/// checksum: the reader ends at it with `ChecksumMismatch`, which is not a
/// torn write, so the MANIFEST's replay refuses it (`docs/FORMATS.md`), as
/// RocksDB refuses a checksum mismatch: a record cut by zeros cannot be
/// told from changed bytes, since a record may end in zeros.
#[test]
fn a_last_record_ending_in_zeros_is_a_checksum_mismatch() {
    let records = [pattern(100, 1), pattern(200, 2)];
    let (mut data, written) = write_log(21, &records);
    let last = written.last().unwrap();
    let len = data.len();
    for b in &mut data[last.offset as usize + FRAGMENT_HEADER_LEN + 10..] {
        *b = 0;
    }
    let data = Arc::new(data);
    let tol = read_all(
        slice_file(&data, len),
        21,
        RecoveryMode::TolerateCorruptedTailRecords,
    );
    assert_eq!(tol.records.len(), 1);
    let Some(LogEnd::TornTail { offset, reason }) = tol.end else {
        panic!("{:?}", tol.end);
    };
    assert_eq!(
        (offset, reason),
        (last.offset, DropReason::ChecksumMismatch)
    );
    assert!(!reason.is_torn_write());
}

#[test]
fn stale_bytes_of_a_reused_file_are_not_records() {
    // Log 21 fully written; log 22 then reuses the file with records of the
    // same sizes, overwriting only its first three records (what a crash
    // right after reuse leaves): the next fragment is an intact one of 21.
    let sizes = [10usize, 0, 3000, 40_000, 5, 70_000];
    let old: Vec<Vec<u8>> = sizes.iter().map(|&n| pattern(n, 1)).collect();
    let new: Vec<Vec<u8>> = sizes.iter().map(|&n| pattern(n, 2)).collect();
    let (old_bytes, _) = write_log(21, &old);
    let (new_bytes, new_written) = write_log(22, &new[..3]);
    let mut file = old_bytes.clone();
    file[..new_bytes.len()].copy_from_slice(&new_bytes);
    let file = Arc::new(file);
    let stale_at = new_written[2].end;
    for mode in [
        RecoveryMode::PointInTimeRecovery,
        RecoveryMode::TolerateCorruptedTailRecords,
    ] {
        let out = read_all(slice_file(&file, file.len()), 22, mode);
        assert!(out.error.is_none(), "{mode:?}");
        let payloads: Vec<_> = out.records.iter().map(|r| r.1.clone()).collect();
        assert_eq!(payloads, new[..3].to_vec());
        assert_eq!(
            out.end,
            Some(LogEnd::TornTail {
                offset: stale_at,
                reason: DropReason::OtherLog(21),
            })
        );
        assert_eq!(out.dropped[0].offset, stale_at);
        assert_eq!(out.dropped[0].end(), file.len() as u64);
    }
    // Skip mode also returns the new records and none of the old ones.
    let skip = read_all(
        slice_file(&file, file.len()),
        22,
        RecoveryMode::SkipAnyCorruptedRecords,
    );
    let payloads: Vec<_> = skip.records.iter().map(|r| r.1.clone()).collect();
    assert_eq!(payloads, new[..3].to_vec());
    assert_eq!(skip.dropped.len(), 1, "{:?}", skip.dropped);
    assert_eq!(skip.dropped[0].end(), file.len() as u64);
    // Absolute consistency refuses stale bytes.
    let strict = read_all(
        slice_file(&file, file.len()),
        22,
        RecoveryMode::AbsoluteConsistency,
    );
    assert!(strict.error.unwrap().is_corruption());

    // Unaligned overwrite: the stale bytes after the new ones are garbage
    // to the reader; still a torn tail, never a record.
    let (other, _) = write_log(22, &[b"x".to_vec()]);
    let mut file = old_bytes.clone();
    file[..other.len()].copy_from_slice(&other);
    let file = Arc::new(file);
    let out = read_all(
        slice_file(&file, file.len()),
        22,
        RecoveryMode::PointInTimeRecovery,
    );
    assert_eq!(out.records, vec![(FILE_HEADER_LEN as u64, b"x".to_vec())]);
    assert!(
        matches!(out.end, Some(LogEnd::TornTail { offset, .. }) if offset == other.len() as u64)
    );

    // The old file read as log 22 from the start: its header says 21.
    let old_bytes = Arc::new(old_bytes);
    let out = read_all(
        slice_file(&old_bytes, old_bytes.len()),
        22,
        RecoveryMode::PointInTimeRecovery,
    );
    assert!(out.records.is_empty());
    assert_eq!(
        out.end,
        Some(LogEnd::TornTail {
            offset: 0,
            reason: DropReason::OtherLog(21)
        })
    );
}

/// A log made of hand-placed fragments.
fn handmade(log: u64, frags: &[(FragmentTypeOrRaw, &[u8])]) -> Arc<Vec<u8>> {
    let mut data = FileHeader::new(log).encode().to_vec();
    for (ty, payload) in frags {
        match ty {
            FragmentTypeOrRaw::Known(t) => {
                put_fragment(&mut data, Framing::Tagged, *t, log as u32, payload)
            }
            FragmentTypeOrRaw::Raw(t) => {
                // Same layout with a raw type byte and a correct checksum.
                let start = data.len();
                put_fragment(
                    &mut data,
                    Framing::Tagged,
                    FragmentType::Full,
                    log as u32,
                    payload,
                );
                data[start + 6] = *t;
                let crc = lithify_wal::format::fragment_checksum(&data[start + 4..]);
                data[start..start + 4].copy_from_slice(&crc.to_le_bytes());
            }
        }
    }
    Arc::new(data)
}

#[test]
fn compressed_records_that_do_not_decompress() {
    let h = FILE_HEADER_LEN as u64;
    let raw = half_compressible(400, 1);
    let mut good = Vec::new();
    assert!(compress_record(&raw, &mut good));
    // The stated length one byte off, a cut LZ4 block, a length LZ4 cannot
    // reach from that many bytes, a malformed length varint.
    let mut longer = good.clone();
    longer[0] += 1;
    let cut = good[..good.len() - 3].to_vec();
    let mut huge = Vec::new();
    lithify_base::coding::put_varint32(&mut huge, 1 << 30);
    huge.extend_from_slice(&good[2..]);
    let cases: [(&[u8], DecompressError); 4] = [
        (&longer, DecompressError::BadBlock),
        (&cut, DecompressError::BadBlock),
        (&huge, DecompressError::ImpossibleLength),
        (
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            DecompressError::BadLength,
        ),
    ];
    for (i, (bad, why)) in cases.into_iter().enumerate() {
        let ctx = format!("case {i}");
        // As one fragment, and split over First/Middle/Last.
        let third = bad.len() / 3;
        let split: [(FragmentTypeOrRaw, &[u8]); 3] = [
            (Known(FragmentType::Lz4First), &bad[..third]),
            (Known(FragmentType::Middle), &bad[third..2 * third]),
            (Known(FragmentType::Last), &bad[2 * third..]),
        ];
        let whole: [(FragmentTypeOrRaw, &[u8]); 1] = [(Known(FragmentType::Lz4Full), bad)];
        for shape in [&whole[..], &split[..]] {
            let mut frags: Vec<(FragmentTypeOrRaw, &[u8])> =
                vec![(Known(FragmentType::Lz4Full), &good)];
            frags.extend_from_slice(shape);
            frags.push((Known(FragmentType::Full), b"after"));
            let data = handmade(4, &frags);
            let bad_at = h + (FRAGMENT_HEADER_LEN + good.len()) as u64;
            let after = data.len() as u64 - (FRAGMENT_HEADER_LEN + 5) as u64;
            let skip = read_all(
                slice_file(&data, data.len()),
                4,
                RecoveryMode::SkipAnyCorruptedRecords,
            );
            assert_eq!(
                skip.records,
                vec![(h, raw.clone()), (after, b"after".to_vec())],
                "{ctx}"
            );
            assert_eq!(skip.dropped.len(), 1, "{ctx}");
            assert_eq!(skip.dropped[0].offset, bad_at, "{ctx}");
            assert_eq!(skip.dropped[0].end(), after, "{ctx}");
            assert_eq!(
                skip.dropped[0].reason,
                DropReason::Undecodable(why),
                "{ctx}"
            );
            let pit = read_all(
                slice_file(&data, data.len()),
                4,
                RecoveryMode::PointInTimeRecovery,
            );
            assert_eq!(pit.records, vec![(h, raw.clone())], "{ctx}");
            assert_eq!(
                pit.end,
                Some(LogEnd::Corruption {
                    offset: bad_at,
                    reason: DropReason::Undecodable(why)
                }),
                "{ctx}"
            );
            let strict = read_all(
                slice_file(&data, data.len()),
                4,
                RecoveryMode::AbsoluteConsistency,
            );
            let err = strict.error.expect("an error");
            assert_eq!(err.kind(), ErrorKind::Corruption, "{ctx}");
            let text = err.to_string();
            assert!(
                text.contains("does not decompress") && text.contains(&format!("{bad_at}")),
                "{ctx}: {text}"
            );
        }
    }
}

#[derive(Clone, Copy)]
enum FragmentTypeOrRaw {
    Known(FragmentType),
    Raw(u8),
}
use FragmentTypeOrRaw::{Known, Raw};

#[test]
fn fragment_sequence_problems() {
    let h = FILE_HEADER_LEN as u64;
    let f = |n: u64| h + n;
    // Middle without first, then a good record.
    let data = handmade(
        4,
        &[
            (Known(FragmentType::Middle), b"mm"),
            (Known(FragmentType::Full), b"ok"),
        ],
    );
    let skip = read_all(
        slice_file(&data, data.len()),
        4,
        RecoveryMode::SkipAnyCorruptedRecords,
    );
    assert_eq!(skip.records, vec![(f(13), b"ok".to_vec())]);
    assert_eq!(skip.dropped[0].offset, h);
    assert_eq!(skip.dropped[0].len, 13);
    assert_eq!(skip.dropped[0].reason, DropReason::MissingStart);
    let pit = read_all(
        slice_file(&data, data.len()),
        4,
        RecoveryMode::PointInTimeRecovery,
    );
    assert!(pit.records.is_empty());
    assert_eq!(
        pit.end,
        Some(LogEnd::Corruption {
            offset: h,
            reason: DropReason::MissingStart
        })
    );
    let tol = read_all(
        slice_file(&data, data.len()),
        4,
        RecoveryMode::TolerateCorruptedTailRecords,
    );
    assert!(tol.error.is_some());

    // First, then Full: the first record has no end.
    let data = handmade(
        4,
        &[
            (Known(FragmentType::First), b"aa"),
            (Known(FragmentType::Full), b"bb"),
            (Known(FragmentType::First), b"c"),
            (Known(FragmentType::Last), b"d"),
        ],
    );
    let skip = read_all(
        slice_file(&data, data.len()),
        4,
        RecoveryMode::SkipAnyCorruptedRecords,
    );
    assert_eq!(
        skip.records,
        vec![(f(13), b"bb".to_vec()), (f(26), b"cd".to_vec())]
    );
    assert_eq!(skip.dropped.len(), 1);
    assert_eq!((skip.dropped[0].offset, skip.dropped[0].len), (h, 13));
    assert_eq!(skip.dropped[0].reason, DropReason::PartialRecord);
    let pit = read_all(
        slice_file(&data, data.len()),
        4,
        RecoveryMode::PointInTimeRecovery,
    );
    assert!(pit.records.is_empty());
    assert!(matches!(
        pit.end,
        Some(LogEnd::Corruption {
            reason: DropReason::PartialRecord,
            ..
        })
    ));

    // Unknown types: bit 7 set is skipped silently, others are damage.
    let data = handmade(
        4,
        &[
            (Known(FragmentType::Full), b"a"),
            (Raw(0x85), b"future metadata"),
            (Known(FragmentType::Full), b"b"),
            (Raw(9), b"?"),
            (Known(FragmentType::Full), b"c"),
        ],
    );
    let skip = read_all(
        slice_file(&data, data.len()),
        4,
        RecoveryMode::SkipAnyCorruptedRecords,
    );
    let payloads: Vec<&[u8]> = skip.records.iter().map(|r| &r.1[..]).collect();
    assert_eq!(payloads, vec![&b"a"[..], b"b", b"c"]);
    assert_eq!(skip.dropped.len(), 1);
    assert_eq!(skip.dropped[0].reason, DropReason::UnknownType(9));
    assert_eq!(skip.dropped[0].len, 12);
    let strict = read_all(
        slice_file(&data, data.len()),
        4,
        RecoveryMode::AbsoluteConsistency,
    );
    assert_eq!(strict.records.len(), 2);
    assert!(
        strict
            .error
            .unwrap()
            .to_string()
            .contains("unknown fragment type 9")
    );

    // The file ends after a First fragment.
    let data = handmade(
        4,
        &[
            (Known(FragmentType::Full), b"a"),
            (Known(FragmentType::First), b"b"),
        ],
    );
    let pit = read_all(
        slice_file(&data, data.len()),
        4,
        RecoveryMode::PointInTimeRecovery,
    );
    assert_eq!(pit.records.len(), 1);
    assert_eq!(
        pit.end,
        Some(LogEnd::TornTail {
            offset: f(12),
            reason: DropReason::IncompleteRecord
        })
    );
    let tol = read_all(
        slice_file(&data, data.len()),
        4,
        RecoveryMode::TolerateCorruptedTailRecords,
    );
    assert!(tol.error.is_none());
    let strict = read_all(
        slice_file(&data, data.len()),
        4,
        RecoveryMode::AbsoluteConsistency,
    );
    assert!(strict.error.is_some());
}

#[test]
fn file_header_problems() {
    let (data, written) = sample();
    // Empty file: an empty log in every mode.
    let empty = Arc::new(Vec::new());
    for mode in [
        RecoveryMode::AbsoluteConsistency,
        RecoveryMode::PointInTimeRecovery,
    ] {
        let out = read_all(slice_file(&empty, 0), 21, mode);
        assert!(out.error.is_none() && out.records.is_empty());
        assert_eq!(out.end, Some(LogEnd::Clean));
    }
    // Torn header.
    let data = Arc::new(data);
    let out = read_all(slice_file(&data, 10), 21, RecoveryMode::PointInTimeRecovery);
    assert_eq!(
        out.end,
        Some(LogEnd::TornTail {
            offset: 0,
            reason: DropReason::TruncatedHeader
        })
    );
    assert!(
        read_all(slice_file(&data, 10), 21, RecoveryMode::AbsoluteConsistency)
            .error
            .is_some()
    );

    // Damaged header with valid fragments after it: a hole.
    let mut bad = (*data).clone();
    bad[13] ^= 1;
    damaged_header_is_a_hole(bad, &written);

    // Intact header of another format or version: an error in every mode.
    let mut other = (*data).clone();
    other[..8].copy_from_slice(b"NOTALOG!");
    let crc = lithify_base::masked_xxh3_64(&[&other[..20]]) as u32;
    other[20..24].copy_from_slice(&crc.to_le_bytes());
    let other = Arc::new(other);
    let out = read_all(
        slice_file(&other, other.len()),
        21,
        RecoveryMode::SkipAnyCorruptedRecords,
    );
    let err = out.error.unwrap();
    assert!(
        err.to_string().contains("is not a readable lithify log"),
        "{err}"
    );
    // Version 2 (compressed records allowed) is read. Version 3 without
    // its identity fragment reads (the owner is unknown); a version from
    // the future is refused by name.
    for (version, readable) in [(2u8, true), (3, true), (5, false)] {
        let mut v = (*data).clone();
        v[8] = version;
        let crc = lithify_base::masked_xxh3_64(&[&v[..20]]) as u32;
        v[20..24].copy_from_slice(&crc.to_le_bytes());
        let v = Arc::new(v);
        let out = read_all(
            slice_file(&v, v.len()),
            21,
            RecoveryMode::PointInTimeRecovery,
        );
        if readable {
            assert!(out.error.is_none());
            assert_eq!(out.records.len(), written.len());
        } else {
            let text = out.error.unwrap().to_string();
            assert!(text.contains("format version 5"), "{text}");
        }
    }
}

/// A compact log whose header and `Identity` fragment are both damaged
/// (a zeroed first sector, say): the framing is found at a later block
/// start, so the damage is a hole before intact records, not a torn tail.
#[test]
fn a_compact_log_with_a_damaged_first_sector_is_a_hole() {
    let records = sample_records();
    let (mut data, written) = compact_log(21, &records, WriterOptions::default());
    data[..FILE_HEADER_LEN + 23].fill(0);
    let data = Arc::new(data);
    let file = || slice_file(&data, data.len());
    let pit = read_all(file(), 21, RecoveryMode::PointInTimeRecovery);
    assert!(pit.records.is_empty());
    assert!(
        matches!(pit.end, Some(LogEnd::Corruption { offset: 0, .. })),
        "{:?}",
        pit.end
    );
    let tolerate = read_all(file(), 21, RecoveryMode::TolerateCorruptedTailRecords);
    assert!(tolerate.error.unwrap().is_corruption());
    // Skip mode keeps every record that starts in a later block.
    let skip = read_all(file(), 21, RecoveryMode::SkipAnyCorruptedRecords);
    let got: Vec<u64> = skip.records.iter().map(|r| r.0).collect();
    let want: Vec<u64> = written
        .iter()
        .filter(|w| w.offset >= BLOCK_SIZE as u64)
        .map(|w| w.offset)
        .collect();
    assert!(!want.is_empty());
    for offset in &want {
        assert!(got.contains(offset), "{offset} lost: {got:?}");
    }
}

/// A preallocated compact log whose header is damaged: the intact
/// `Preallocated` fragment after it still makes the zeros after the last
/// record the log's clean end.
#[test]
fn a_damaged_header_keeps_the_zero_tail() {
    let (mut data, written) = compact_log(
        21,
        &sample_records(),
        WriterOptions::default().preallocate(1 << 20),
    );
    let records_end = data.len() as u64;
    data.resize(data.len() + 3 * BLOCK_SIZE, 0);
    data[13] ^= 1;
    let data = Arc::new(data);
    let skip = read_all(
        slice_file(&data, data.len()),
        21,
        RecoveryMode::SkipAnyCorruptedRecords,
    );
    assert_eq!(skip.records.len(), written.len());
    assert_eq!(skip.dropped.len(), 1, "{:?}", skip.dropped);
    assert_eq!(
        (skip.dropped[0].offset, skip.dropped[0].len),
        (0, FILE_HEADER_LEN as u64)
    );
    assert_eq!(skip.zero_tail, Some(records_end));
    assert_eq!(skip.end, Some(LogEnd::Clean));
}

/// A compact log (version 4) whose file header is damaged: its fragments
/// are still found, by the framing the first one verifies with.
#[test]
fn a_compact_log_with_a_damaged_header_keeps_its_records() {
    let (data, written) = compact_log(21, &sample_records(), WriterOptions::default());
    for spot in [1, 8, 13, 22] {
        let mut bad = data.clone();
        bad[spot] ^= 1;
        damaged_header_is_a_hole(bad, &written);
    }
}

/// `data`, a log of `written` records whose file header is damaged, is a
/// hole: point in time stops at offset 0 reporting a corruption (intact
/// fragments follow), skip mode drops the header alone.
fn damaged_header_is_a_hole(data: Vec<u8>, written: &[Written]) {
    let bad = Arc::new(data);
    let pit = read_all(
        slice_file(&bad, bad.len()),
        21,
        RecoveryMode::PointInTimeRecovery,
    );
    assert!(pit.records.is_empty());
    assert_eq!(
        pit.end,
        Some(LogEnd::Corruption {
            offset: 0,
            reason: DropReason::ChecksumMismatch
        })
    );
    let skip = read_all(
        slice_file(&bad, bad.len()),
        21,
        RecoveryMode::SkipAnyCorruptedRecords,
    );
    assert!(skip.error.is_none(), "{:?}", skip.error);
    let got: Vec<u64> = skip.records.iter().map(|r| r.0).collect();
    let want: Vec<u64> = written.iter().map(|w| w.offset).collect();
    assert_eq!(got, want);
    assert_eq!(
        (skip.dropped[0].offset, skip.dropped[0].len),
        (0, FILE_HEADER_LEN as u64)
    );
}

#[test]
fn torn_trailer_padding_is_clean() {
    // A record leaving 5 bytes in block 0, then a record in block 1, cut
    // inside the padding: nothing was lost.
    let first = BLOCK_SIZE - FILE_HEADER_LEN - FRAGMENT_HEADER_LEN - 5;
    let (data, _) = write_log(8, &[vec![3; first], vec![4; 100]]);
    let data = Arc::new(data);
    for cut in BLOCK_SIZE - 5..=BLOCK_SIZE {
        let out = read_all(slice_file(&data, cut), 8, RecoveryMode::AbsoluteConsistency);
        assert!(out.error.is_none(), "cut {cut}");
        assert_eq!(out.records.len(), 1);
        assert_eq!(out.end, Some(LogEnd::Clean));
    }
}

/// A log written by a newer release (a version this reader does not know,
/// with an intact header) is refused by its header under every recovery
/// mode, naming the file and the versions it knows: never taken for
/// damaged records to drop or skip (docs/FORMATS.md, "Compatibility").
#[test]
fn a_newer_format_version_is_refused_in_every_mode() {
    let (data, _) = sample();
    let mut newer = data.clone();
    let header = FileHeader {
        version: 5,
        log_number: 21,
    };
    newer[..FILE_HEADER_LEN].copy_from_slice(&header.encode());
    let newer = Arc::new(newer);
    for mode in [
        RecoveryMode::TolerateCorruptedTailRecords,
        RecoveryMode::AbsoluteConsistency,
        RecoveryMode::PointInTimeRecovery,
        RecoveryMode::SkipAnyCorruptedRecords,
    ] {
        let out = read_all(slice_file(&newer, newer.len()), 21, mode);
        assert!(out.records.is_empty(), "{mode:?}");
        assert!(out.dropped.is_empty(), "{mode:?}: nothing dropped");
        let err = out.error.expect("refused");
        let text = err.to_string();
        assert!(
            text.contains("/log")
                && text.contains("format version 5 is not supported (this reader knows 1 to 4)"),
            "{mode:?}: {text}"
        );
        // The kind of any file this build cannot read as a log.
        assert_eq!(err.kind(), ErrorKind::Corruption, "{mode:?}");
    }
}
