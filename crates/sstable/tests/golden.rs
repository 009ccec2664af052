//! Golden bytes: pins the table format. The table here is the worked
//! example of `docs/FORMATS.md`; if this test fails, the format changed.

mod common;

use lithify_base::xxh3_64;
use lithify_sstable::SstOptions;
use lithify_sstable::testing::{FOOTER_LEN, Footer};
use lithify_vfs::{MemFs, read_file};

use common::{build, open};

fn golden_table() -> Vec<u8> {
    let fs = MemFs::new();
    let opts = SstOptions::default()
        .creation_time(Some(1_700_000_000))
        .block_size(32);
    let entries = vec![
        (b"apple".to_vec(), b"red".to_vec()),
        (b"apricot".to_vec(), b"orange".to_vec()),
        (b"banana".to_vec(), b"yellow".to_vec()),
    ];
    let built = build(
        &fs,
        "/g.sst",
        &opts,
        &entries,
        &[(b"c".to_vec(), b"d".to_vec())],
    );
    assert_eq!(built.file_size, 936);
    let table = open(&fs, "/g.sst", &opts, None).unwrap();
    assert_eq!(
        table.get(b"apricot").unwrap().as_deref(),
        Some(&b"orange"[..])
    );
    read_file(&fs, std::path::Path::new("/g.sst")).unwrap()
}

#[test]
fn data_blocks_byte_by_byte() {
    let bytes = golden_table();
    // Data block 0 at offset 0, 33 bytes, then its trailer.
    let block0: &[u8] = b"\x00\x05\x03applered\
                          \x02\x05\x06ricotorange\
                          \x00\x00\x00\x00\
                          \x01\x00\x00\x00";
    assert_eq!(&bytes[..33], block0);
    assert_eq!(bytes[33], 0, "block type: raw");
    let checksum = lithify_base::masked_xxh3_64(&[block0, &[0]]);
    assert_eq!(&bytes[34..42], &checksum.to_le_bytes());
    // Data block 1 at offset 42, 23 bytes.
    let block1: &[u8] = b"\x00\x06\x06bananayellow\x00\x00\x00\x00\x01\x00\x00\x00";
    assert_eq!(&bytes[42..65], block1);
    assert_eq!(bytes[65], 0);
    // The filter follows at 74: one 64-byte line and its metadata
    // (6 probes, hash scheme 1, 1 line).
    assert_eq!(&bytes[74 + 64..74 + 72], &[6, 1, 0, 0, 1, 0, 0, 0]);
    // The range-deletion block at 155: "c" -> "d".
    assert_eq!(
        &bytes[155..168],
        b"\x00\x01\x01cd\x00\x00\x00\x00\x01\x00\x00\x00"
    );
    // The index block at 177: "apricot" -> (0, 33), "c" -> (42, 23).
    let index: &[u8] = b"\x00\x07\x02apricot\x00\x21\
                         \x00\x01\x02c\x2a\x17\
                         \x00\x00\x00\x00\x0c\x00\x00\x00\
                         \x02\x00\x00\x00";
    assert_eq!(&bytes[177..207], index);
}

#[test]
fn footer_byte_by_byte() {
    let bytes = golden_table();
    let at = bytes.len() - FOOTER_LEN;
    let mut raw = [0u8; FOOTER_LEN];
    raw.copy_from_slice(&bytes[at..]);
    let footer = Footer::decode(&raw).unwrap();
    assert_eq!((footer.index.offset, footer.index.size), (177, 30));
    assert_eq!((footer.metaindex.offset, footer.metaindex.size), (789, 82));
    assert_eq!(&raw[32..40], &[1, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(&raw[48..], b"\x89LITHSST");
}

#[test]
fn whole_file_is_pinned() {
    // Covers the properties, metaindex and filter bits too.
    assert_eq!(xxh3_64(&golden_table()), 0x4fa5_2937_8de6_cf50);
}
