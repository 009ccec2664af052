//! `VersionEdit` encoding: golden bytes, round trips, forward compatibility
//! and rejection of malformed input.

use lithify_base::coding::{put_length_prefixed, put_varint32};
use lithify_base::{Classify, ErrorKind, InternalKey, MAX_SEQNO, ValueKind};
use lithify_version::edit::{decode_group, encode_group, tag};
use lithify_version::{
    BlobFileGarbage, BlobFileMetadata, BlobRef, FileMetadata, VersionEdit, WalAddition,
};
use proptest::prelude::*;

fn key(text: &str) -> InternalKey {
    InternalKey::from_text(text).unwrap()
}

#[test]
fn golden_bytes() {
    let mut edit = VersionEdit::new(3);
    edit.log_number = Some(9);
    edit.delete_file(1, 7);
    edit.add_file(
        2,
        FileMetadata::new(12, 4096, key("a#5,SET"), key("k#9,DEL")),
    );
    let hex: String = edit.encode().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        hex,
        concat!(
            "c801",
            "01",
            "03", // TABLE (200) = 3
            "02",
            "01",
            "09", // LOG_NUMBER = 9
            "06",
            "02",
            "01",
            "07", // DELETED_FILE L1 #7
            "07",
            "24",
            "02", // NEW_FILE, 36 bytes, L2
            "01",
            "01",
            "0c", // number 12
            "02",
            "02",
            "8020", // size 4096
            "03",
            "09",
            "61",
            "0105000000000000", // smallest a#5,SET
            "04",
            "09",
            "6b",
            "0009000000000000", // largest k#9,DEL
            "05",
            "01",
            "05", // smallest seqno 5
            "06",
            "01",
            "09", // largest seqno 9
        )
    );
}

#[test]
fn unknown_tags() {
    let mut bytes = VersionEdit::new(0).encode();
    // A future optional field: skipped.
    put_varint32(&mut bytes, tag::SAFE_TO_IGNORE | 5);
    put_length_prefixed(&mut bytes, b"db id 1234");
    let mut edit = VersionEdit::new(0);
    edit.last_sequence = Some(77);
    edit.encode_into(&mut bytes);
    assert_eq!(VersionEdit::decode(&bytes).unwrap(), edit);

    // A future field that changes the meaning: refused.
    let mut bytes = Vec::new();
    put_varint32(&mut bytes, 99);
    put_length_prefixed(&mut bytes, b"x");
    let err = VersionEdit::decode(&bytes).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corruption);
    assert_eq!(
        err.to_string(),
        "malformed version edit at byte 0: unknown tag 99 that is not marked safe to ignore: the MANIFEST was written by a newer lithify, with a feature this one does not have"
    );
}

/// Blob files are recorded in fields a reader from before them refuses
/// (tags 400 and 401, and file field 13, none marked safe to ignore), and
/// they round-trip.
#[test]
fn blob_fields_round_trip_and_are_not_ignorable() {
    let mut edit = VersionEdit::new(0);
    let mut f = FileMetadata::new(7, 100, key("a#1,SET"), key("b#1,SET"));
    f.blob_refs = vec![BlobRef {
        file_number: 6,
        count: 2,
        bytes: 2048,
    }];
    edit.add_file(0, f);
    edit.blob_file_additions.push(BlobFileMetadata {
        number: 6,
        file_size: 2200,
        blob_count: 2,
        blob_bytes: 2048,
        file_checksum: Some(0xabcd),
        unique_id: None,
    });
    edit.blob_file_garbage.push(BlobFileGarbage {
        number: 5,
        count: 1,
        bytes: 10,
    });
    let bytes = edit.encode();
    assert_eq!(VersionEdit::decode(&bytes).unwrap(), edit);
    for t in [tag::BLOB_FILE_ADDITION, tag::BLOB_FILE_GARBAGE] {
        assert_eq!(t & tag::SAFE_TO_IGNORE, 0);
    }
    assert_eq!(lithify_version::edit::file_tag::BLOB_REFS, 13);
    assert_eq!(
        edit.to_string(),
        "edit table=0\n  add L0 000007:[a#1,SET-b#1,SET] size=100 blob=000006:2/2048\n  add blob 000006 values=2 bytes=2048 size=2200 checksum=0x000000000000abcd\n  garbage blob 000005 values=1 bytes=10\n"
    );
}

#[test]
fn malformed_edits_are_errors() {
    let mut full = VersionEdit::new(2);
    full.comparator = Some("c".into());
    full.next_file_number = Some(100);
    full.add_file(1, FileMetadata::new(5, 10, key("a#1,SET"), key("b#1,SET")));
    let bytes = full.encode();
    // Every strict prefix that is not a field boundary fails cleanly.
    for cut in 0..bytes.len() {
        let _ = VersionEdit::decode(&bytes[..cut]);
    }
    // Duplicate scalar tag.
    let mut twice = Vec::new();
    let mut e = VersionEdit::new(0);
    e.log_number = Some(1);
    e.encode_into(&mut twice);
    e.encode_into(&mut twice);
    assert!(
        VersionEdit::decode(&twice)
            .unwrap_err()
            .to_string()
            .contains("appears twice")
    );
    // Extra bytes inside a scalar field.
    let mut extra = Vec::new();
    put_varint32(&mut extra, tag::LOG_NUMBER);
    put_length_prefixed(&mut extra, &[1, 2]);
    assert!(
        VersionEdit::decode(&extra)
            .unwrap_err()
            .to_string()
            .contains("unexpected bytes")
    );
    // A new file without its size.
    let mut no_size = Vec::new();
    let mut body = Vec::new();
    put_varint32(&mut body, 1); // level
    put_varint32(&mut body, 1);
    put_length_prefixed(&mut body, &[5]);
    put_varint32(&mut no_size, tag::NEW_FILE);
    put_length_prefixed(&mut no_size, &body);
    assert!(
        VersionEdit::decode(&no_size)
            .unwrap_err()
            .to_string()
            .contains("without its size")
    );
    // A level far out of range.
    let mut deep = Vec::new();
    let mut body = Vec::new();
    put_varint32(&mut body, 1000);
    put_varint32(&mut body, 1);
    put_varint32(&mut deep, tag::DELETED_FILE);
    put_length_prefixed(&mut deep, &body);
    assert!(VersionEdit::decode(&deep).is_err());
    // A bad internal key (unknown kind).
    let mut cursor = Vec::new();
    let mut body = Vec::new();
    put_varint32(&mut body, 1);
    body.extend_from_slice(b"k\x42\x01\0\0\0\0\0\0");
    put_varint32(&mut cursor, tag::COMPACT_CURSOR);
    put_length_prefixed(&mut cursor, &body);
    assert!(VersionEdit::decode(&cursor).is_err());
    // An empty group.
    assert!(decode_group(&[]).is_err());
}

fn arb_key() -> impl Strategy<Value = InternalKey> {
    (
        proptest::collection::vec(any::<u8>(), 0..6),
        0..=MAX_SEQNO,
        prop_oneof![
            Just(ValueKind::Put),
            Just(ValueKind::Delete),
            Just(ValueKind::RangeDelete)
        ],
    )
        .prop_map(|(k, s, t)| InternalKey::new(&k, s, t))
}

fn arb_file() -> impl Strategy<Value = FileMetadata> {
    (
        any::<u64>(),
        any::<u64>(),
        arb_key(),
        arb_key(),
        any::<(u64, u64, u64, u64, u64, u64, u64)>(),
        proptest::option::of(any::<u64>()),
        proptest::option::of(any::<[u8; 16]>()),
        proptest::collection::btree_map(any::<u64>(), (1..u64::MAX, any::<u64>()), 0..3),
    )
        .prop_map(
            |(number, size, a, b, (s1, s2, e, d, r, c, o), sum, id, refs)| {
                let mut f = FileMetadata::new(number, size, a, b);
                f.smallest_seqno = s1;
                f.largest_seqno = s2;
                f.num_entries = e;
                f.num_deletions = d;
                f.num_range_deletions = r;
                f.creation_time = c;
                f.oldest_ancestor_time = o;
                f.file_checksum = sum;
                f.unique_id = id.map(lithify_base::Id::from_bytes);
                f.blob_refs = refs
                    .into_iter()
                    .map(|(file_number, (count, bytes))| BlobRef {
                        file_number,
                        count,
                        bytes,
                    })
                    .collect();
                f
            },
        )
}

fn arb_blob_file() -> impl Strategy<Value = BlobFileMetadata> {
    (
        any::<(u64, u64, u64, u64)>(),
        proptest::option::of(any::<u64>()),
        proptest::option::of(any::<[u8; 16]>()),
    )
        .prop_map(
            |((number, file_size, blob_count, blob_bytes), file_checksum, id)| BlobFileMetadata {
                number,
                file_size,
                blob_count,
                blob_bytes,
                file_checksum,
                unique_id: id.map(lithify_base::Id::from_bytes),
            },
        )
}

prop_compose! {
    fn arb_edit()(
        table in any::<u32>(),
        table_add in proptest::option::of("[a-z]{0,8}"),
        table_drop in any::<bool>(),
        format in proptest::option::of(any::<u32>()),
        comparator in proptest::option::of("[a-zA-Z.]{0,20}"),
        merge_operator in proptest::option::of("[a-zA-Z0-9]{0,20}"),
        log_number in proptest::option::of(any::<u64>()),
        next_file in proptest::option::of(any::<u64>()),
        last_seq in proptest::option::of(any::<u64>()),
        max_table in proptest::option::of(any::<u32>()),
        cursors in proptest::collection::vec((0usize..64, arb_key()), 0..3),
        deleted in proptest::collection::vec((0usize..64, any::<u64>()), 0..4),
        added in proptest::collection::vec((0usize..64, arb_file()), 0..4),
        wals in proptest::collection::vec(any::<(u64, u64)>(), 0..3),
        db_id in proptest::option::of(any::<[u8; 16]>()),
        blobs in proptest::collection::vec(arb_blob_file(), 0..3),
        garbage in proptest::collection::vec(any::<(u64, u64, u64)>(), 0..3),
    ) -> VersionEdit {
        VersionEdit {
            table,
            table_add,
            table_drop,
            manifest_format: format,
            comparator,
            merge_operator,
            log_number,
            next_file_number: next_file,
            last_sequence: last_seq,
            max_table_id: max_table,
            compact_cursors: cursors,
            deleted_files: deleted,
            new_files: added,
            wal_additions: wals
                .into_iter()
                .map(|(number, synced_size)| WalAddition { number, synced_size })
                .collect(),
            db_id: db_id.map(lithify_base::Id::from_bytes),
            blob_file_additions: blobs,
            blob_file_garbage: garbage
                .into_iter()
                .map(|(number, count, bytes)| BlobFileGarbage { number, count, bytes })
                .collect(),
        }
    }
}

proptest! {
    #[test]
    fn edit_round_trip(edit in arb_edit()) {
        let bytes = edit.encode();
        prop_assert_eq!(VersionEdit::decode(&bytes).unwrap(), edit.clone());
        // Cutting the encoding anywhere never panics, and cutting inside a
        // field is an error.
        for cut in 0..bytes.len() {
            let _ = VersionEdit::decode(&bytes[..cut]);
        }
        // The display form is one header line plus one per list entry.
        let lines = edit.to_string().lines().count();
        prop_assert_eq!(lines, 1 + edit.compact_cursors.len() + edit.deleted_files.len() + edit.new_files.len() + edit.wal_additions.len() + edit.blob_file_additions.len() + edit.blob_file_garbage.len());
    }

    #[test]
    fn group_round_trip(edits in proptest::collection::vec(arb_edit(), 1..4)) {
        let bytes = encode_group(&edits);
        prop_assert_eq!(decode_group(&bytes).unwrap(), edits);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(edit) = VersionEdit::decode(&bytes) {
            // Whatever decodes re-encodes to something that decodes the same.
            prop_assert_eq!(VersionEdit::decode(&edit.encode()).unwrap(), edit);
        }
        let _ = decode_group(&bytes);
    }
}
