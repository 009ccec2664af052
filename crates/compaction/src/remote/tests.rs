//! Round trips and strictness of the two remote-compaction objects.

use std::sync::Arc;

use lithify_base::{Id, InternalKey, ValueKind};
use lithify_sstable::Compression;
use lithify_version::FileMetadata;

use super::*;
use crate::compaction::{Compaction, CompactionInputs, CompactionReason};
use crate::compaction_pri::CompactionPri;
use crate::iter::IterStats;
use crate::stats::CompactionStats;

fn file(number: u64, lo: &str, hi: &str) -> Arc<FileMetadata> {
    let mut f = FileMetadata::new(
        number,
        1000 + number,
        InternalKey::new(lo.as_bytes(), 10 + number, ValueKind::Put),
        InternalKey::new(hi.as_bytes(), 5, ValueKind::Delete),
    );
    f.num_entries = 40;
    f.file_checksum = Some(0xfeed_0000 + number);
    f.unique_id = Some(Id::from_bytes([number as u8; 16]));
    Arc::new(f)
}

/// A job using every field.
pub(crate) fn sample_job() -> RemoteJob {
    let l1 = file(12, "b", "k");
    RemoteJob {
        id: 40,
        db_id: Id::from_bytes([1; 16]),
        session_id: Id::from_bytes([2; 16]),
        compaction: Compaction {
            table: 3,
            reason: CompactionReason::LevelMaxLevelSize,
            inputs: vec![
                CompactionInputs {
                    level: 0,
                    files: vec![file(10, "a", "f"), file(11, "c", "m")],
                },
                CompactionInputs {
                    level: 1,
                    files: vec![Arc::clone(&l1)],
                },
            ],
            output_level: 1,
            grandparents: vec![file(7, "a", "z")],
            target_output_file_size: 64 << 20,
            max_output_file_size: 128 << 20,
            max_compaction_bytes: 1 << 30,
            compression: Compression::Zstd { level: -3 },
            score: 1.25,
            manual: false,
            bottommost: false,
            trivial_move: false,
            max_subcompactions: 2,
            dynamic_file_size: true,
            deeper_files: vec![vec![file(7, "a", "z")], vec![], vec![file(3, "a", "c")]],
            new_compact_cursor: Some((0, InternalKey::new(b"m", 9, ValueKind::Put))),
            output_split_key: Some(InternalKey::new(b"g", 0, ValueKind::Put)),
            ttl_cut_files: vec![l1],
            output_boundaries: vec![b"d".to_vec(), b"h".to_vec()],
            reuse_untouched_files: true,
            memtable_range: None,
        },
        snapshots: vec![3, 17],
        output_numbers: 40..60,
        comparator: "leveldb.BytewiseComparator".to_owned(),
        merge_operator: Some("UInt64AddOperator".to_owned()),
        compaction_filter: None,
        sst: SstSettings {
            block_size: 4096,
            block_restart_interval: 16,
            bloom_bits_per_key: 10.0,
            verify_checksums: true,
        },
        verify_record_count: true,
        now: 1_765_000_000,
        compaction_pri: CompactionPri::RoundRobin,
        enforce_single_delete_contracts: false,
    }
}

fn sample_outcome() -> RemoteOutcome {
    let mut out = (*file(41, "a", "m")).clone();
    out.oldest_ancestor_time = 99;
    RemoteOutcome::Done(Box::new(RemoteResult {
        id: 40,
        outputs: vec![out, (*file(42, "n", "z")).clone()],
        stats: CompactionStats {
            bytes_written: 5000,
            count: 1,
            micros: 12,
            ..CompactionStats::default()
        },
        iter_stats: IterStats {
            records_in: 120,
            records_out: 100,
            dropped_hidden: 20,
            ..IterStats::default()
        },
        subcompactions: 2,
    }))
}

#[test]
fn a_job_round_trips_field_by_field() {
    let job = sample_job();
    let bytes = job.encode();
    let back = RemoteJob::decode(&bytes).unwrap();
    assert_eq!(back.encode(), bytes);
    let (a, b) = (&job.compaction, &back.compaction);
    assert_eq!(a.inputs, b.inputs);
    assert_eq!(a.grandparents, b.grandparents);
    assert_eq!(a.deeper_files, b.deeper_files);
    assert_eq!(a.ttl_cut_files, b.ttl_cut_files);
    assert_eq!(a.new_compact_cursor, b.new_compact_cursor);
    assert_eq!(a.output_split_key, b.output_split_key);
    assert_eq!(a.output_boundaries, b.output_boundaries);
    assert_eq!(a.compression, b.compression);
    assert_eq!(a.score, b.score);
    assert_eq!(
        (
            a.reason,
            a.output_level,
            a.max_subcompactions,
            a.bottommost,
            a.dynamic_file_size
        ),
        (
            b.reason,
            b.output_level,
            b.max_subcompactions,
            b.bottommost,
            b.dynamic_file_size
        )
    );
    assert_eq!(back.snapshots, job.snapshots);
    assert_eq!(back.output_numbers, job.output_numbers);
    assert_eq!(back.merge_operator, job.merge_operator);
    assert_eq!(back.sst, job.sst);
    assert_eq!(back.compaction_pri, job.compaction_pri);
    assert_eq!(back.now, job.now);
    assert!(!back.enforce_single_delete_contracts);
}

#[test]
fn an_outcome_round_trips() {
    for o in [
        sample_outcome(),
        RemoteOutcome::Failed {
            id: 40,
            message: "input 000010.sst: not found".to_owned(),
        },
    ] {
        let bytes = o.encode();
        assert_eq!(RemoteOutcome::decode(&bytes).unwrap(), o);
    }
}

#[test]
fn every_flipped_bit_and_every_cut_is_refused() {
    for bytes in [sample_job().encode(), sample_outcome().encode()] {
        let decodes = |b: &[u8]| {
            if b.starts_with(b"LTCJ") {
                RemoteJob::decode(b).map(|_| ())
            } else {
                RemoteOutcome::decode(b).map(|_| ())
            }
        };
        decodes(&bytes).unwrap();
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut b = bytes.clone();
                b[i] ^= 1 << bit;
                assert!(
                    decodes(&b).is_err(),
                    "flip of bit {bit} of byte {i} accepted"
                );
            }
        }
        for len in 0..bytes.len() {
            assert!(decodes(&bytes[..len]).is_err(), "cut at {len} accepted");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decodes(&longer).is_err());
    }
}

#[test]
fn the_error_names_the_object_and_the_position() {
    let mut b = sample_job().encode();
    b[4] = 9;
    let e = RemoteJob::decode(&b).unwrap_err().to_string();
    assert_eq!(e, "corrupt compaction job at byte 4: unknown version 9");
    let b = sample_outcome().encode();
    let e = RemoteJob::decode(&b).unwrap_err().to_string();
    assert_eq!(e, "corrupt compaction job at byte 0: wrong magic");
}

#[test]
fn trivial_moves_flush_plans_and_reused_files_stay_local() {
    let mut c = sample_job().compaction;
    assert!(!RemoteJob::is_remotable(&c), "reuse_untouched_files");
    c.reuse_untouched_files = false;
    assert!(RemoteJob::is_remotable(&c));
    c.trivial_move = true;
    assert!(!RemoteJob::is_remotable(&c));
    c.trivial_move = false;
    c.memtable_range = Some((b"a".to_vec(), b"b".to_vec()));
    assert!(!RemoteJob::is_remotable(&c));
}

#[test]
fn output_numbers_cover_the_inputs_twice_over() {
    let c = sample_job().compaction;
    // 3036 input bytes at a 64 MiB target: one output, twice, plus one
    // per subcompaction (2), boundary (2), TTL cut file (1), and 4.
    assert_eq!(RemoteJob::output_numbers_for(&c), 2 + 2 + 2 + 1 + 4);
}

/// Writes the fuzz target's seeds (`cargo test -p lithify-compaction
/// write_fuzz_seeds -- --ignored`).
#[test]
#[ignore = "writes the fuzz seeds into the source tree"]
fn write_fuzz_seeds() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/seeds/compaction_remote_decode");
    use lithify_vfs::FileSystem as _;
    let fs = lithify_vfs::OsFs;
    fs.create_dir_all(&dir).unwrap();
    for (name, bytes) in [
        ("job", sample_job().encode()),
        ("outcome", sample_outcome().encode()),
    ] {
        let mut f = fs.create(&dir.join(name)).unwrap();
        f.append(&bytes).unwrap();
        f.sync_all().unwrap();
    }
}

#[test]
fn the_formats_worked_example() {
    // docs/FORMATS.md, "Remote compaction: jobs and outcomes".
    let failed = RemoteOutcome::Failed {
        id: 7,
        message: "x".to_owned(),
    };
    assert_eq!(
        failed.encode(),
        [
            0x4c, 0x54, 0x43, 0x52, 0x01, 0x00, 0x07, 0x01, 0x78, 0x25, 0x07, 0xc4, 0xc0
        ]
    );
}

#[test]
fn a_body_in_a_valid_frame_that_encodes_otherwise_is_refused() {
    // A grandparent recorded at level 2: decodable, but the job encodes
    // grandparents at level 0. Where the list starts: the first byte at
    // which a job without grandparents and one with them differ.
    let mut job = sample_job();
    job.compaction.grandparents.clear();
    let without = job.encode();
    job.compaction.grandparents = vec![file(7, "a", "z")];
    let with = job.encode();
    let at = without
        .iter()
        .zip(&with)
        .take_while(|(a, b)| a == b)
        .count();
    let empty = lithify_version::VersionEdit::new(0).encode();
    let mut odd = lithify_version::VersionEdit::new(0);
    odd.add_file(2, (*file(7, "a", "z")).clone());
    let body = &without[5..without.len() - 4];
    let at = at - 5;
    let mut new_body = body[..at].to_vec();
    lithify_base::coding::put_length_prefixed(&mut new_body, &odd.encode());
    new_body.extend_from_slice(&body[at + 1 + empty.len()..]);
    let bytes = super::codec::frame(super::job::JOB_MAGIC, &new_body);
    let e = RemoteJob::decode(&bytes).unwrap_err().to_string();
    assert!(e.contains("one encoding"), "{e}");
    // The same body with the grandparent at level 0 is the job itself.
    let mut same_body = body[..at].to_vec();
    let mut even = lithify_version::VersionEdit::new(0);
    even.add_file(0, (*file(7, "a", "z")).clone());
    lithify_base::coding::put_length_prefixed(&mut same_body, &even.encode());
    same_body.extend_from_slice(&body[at + 1 + empty.len()..]);
    assert_eq!(super::codec::frame(super::job::JOB_MAGIC, &same_body), with);
}

proptest::proptest! {
    /// Any body in a valid frame: refused or decoded, never a panic, and
    /// what decodes re-encodes to the same bytes.
    #[test]
    fn framed_garbage_never_panics(body in proptest::collection::vec(proptest::num::u8::ANY, 0..600)) {
        for magic in [super::job::JOB_MAGIC, super::outcome::OUTCOME_MAGIC] {
            let bytes = super::codec::frame(magic, &body);
            if let Ok(job) = RemoteJob::decode(&bytes) {
                proptest::prop_assert_eq!(job.encode(), bytes.clone());
            }
            if let Ok(o) = RemoteOutcome::decode(&bytes) {
                proptest::prop_assert_eq!(o.encode(), bytes);
            }
        }
    }
}
