//! Damaged tables: flip every byte of a small table in turn; every read must
//! return the right data or a `Corruption` error naming the file and an
//! offset inside it — never a panic, never wrong data. Truncations too.

mod common;

use std::io;
use std::path::Path;
use std::sync::Arc;

use lithify_base::InternalIterator;
use lithify_sstable::{BlockCache, Compression, Error, SstOptions, SstReader};
use lithify_vfs::{FileSystem, MemFs, RandomAccessFile, read_file};

use common::build;

const PATH: &str = "/db/000042.sst";

/// A read-only file over a byte vector.
#[derive(Debug)]
struct VecFile(Vec<u8>);

impl RandomAccessFile for VecFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let start = (offset as usize).min(self.0.len());
        let n = buf.len().min(self.0.len() - start);
        buf[..n].copy_from_slice(&self.0[start..start + n]);
        Ok(n)
    }

    fn size(&self) -> io::Result<u64> {
        Ok(self.0.len() as u64)
    }
}

struct Fixture {
    bytes: Vec<u8>,
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    tombstones: Vec<(Vec<u8>, Vec<u8>)>,
    opts: SstOptions,
}

fn fixture(compression: Compression) -> Fixture {
    let opts = SstOptions::default()
        .block_size(160)
        .block_restart_interval(4)
        .compression(compression)
        .creation_time(Some(1_700_000_000));
    let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..40u32)
        .map(|i| {
            let k = format!("key{:03}", i * 3).into_bytes();
            let v = format!("value-{i}-{}", "v".repeat((i % 5) as usize * 6)).into_bytes();
            (k, v)
        })
        .collect();
    let tombstones = vec![
        (b"key010".to_vec(), b"key020".to_vec()),
        (b"key050".to_vec(), b"key051".to_vec()),
    ];
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/db")).unwrap();
    build(&fs, PATH, &opts, &entries, &tombstones);
    let bytes = read_file(&fs, Path::new(PATH)).unwrap();
    Fixture {
        bytes,
        entries,
        tombstones,
        opts,
    }
}

/// Checks that `err` is corruption naming the file and an offset inside it.
fn assert_corruption(err: &Error, size: usize, what: &str) {
    match err {
        Error::Corruption { path, offset, .. } => {
            assert_eq!(path, Path::new(PATH), "{what}: {err}");
            assert!(
                (*offset as usize) < size,
                "{what}: offset past the file: {err}"
            );
            let text = err.to_string();
            assert!(
                text.contains(PATH) && text.contains("offset"),
                "{what}: {text}"
            );
        }
        other => panic!("{what}: expected corruption, got {other}"),
    }
}

/// The same for the shared error iterators return.
fn assert_shared_corruption(err: &lithify_base::Error, size: usize, what: &str) {
    assert!(err.is_corruption(), "{what}: {err}");
    match err {
        lithify_base::Error::External { source, .. } => {
            let inner = source
                .downcast_ref::<Error>()
                .unwrap_or_else(|| panic!("{what}: not an sstable error: {err}"));
            assert_corruption(inner, size, what);
        }
        other => panic!("{what}: unexpected error {other}"),
    }
}

/// Where a damage was detected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Detected {
    Nowhere,
    AtOpen,
    ByReads,
}

/// Runs every read against a possibly damaged copy; returns where
/// corruption was reported.
fn check_all_reads(
    f: &Fixture,
    bytes: Vec<u8>,
    cache: Option<Arc<BlockCache>>,
    what: &str,
) -> Detected {
    let size = bytes.len();
    let file: Arc<dyn RandomAccessFile> = Arc::new(VecFile(bytes));
    let table = match SstReader::open(file, PATH, size as u64, &f.opts, cache) {
        Ok(t) => Arc::new(t),
        Err(e) => {
            assert_corruption(&e, size, what);
            return Detected::AtOpen;
        }
    };
    let mut detected = false;
    // Meta data loaded at open is verified, so it must be exact.
    let tombstones: Vec<(Vec<u8>, Vec<u8>)> = table
        .range_tombstones()
        .iter()
        .map(|t| (t.start.to_vec(), t.end.to_vec()))
        .collect();
    assert_eq!(tombstones, f.tombstones, "{what}");
    assert_eq!(
        table.properties().num_entries,
        f.entries.len() as u64,
        "{what}"
    );

    for (k, v) in &f.entries {
        match table.get(k) {
            Ok(got) => assert_eq!(got.as_deref(), Some(&v[..]), "{what}: get {k:?}"),
            Err(e) => {
                assert_corruption(&e, size, what);
                detected = true;
            }
        }
    }
    for absent in [&b"key001"[..], b"a", b"zzz", b"key0", b"key999"] {
        match table.get(absent) {
            Ok(got) => assert_eq!(got, None, "{what}: get {absent:?}"),
            Err(e) => {
                assert_corruption(&e, size, what);
                detected = true;
            }
        }
    }

    // A forward scan yields a prefix of the entries, then maybe an error.
    let mut it = table.iter();
    let mut seen = Vec::new();
    let mut res = it.first();
    while res.is_ok() && it.valid() {
        seen.push((it.key().to_vec(), it.value().to_vec()));
        res = it.next();
    }
    match res {
        Ok(()) => assert_eq!(seen, f.entries, "{what}: forward scan"),
        Err(e) => {
            assert_shared_corruption(&e, size, what);
            assert!(!it.valid());
            assert_eq!(
                &seen[..],
                &f.entries[..seen.len()],
                "{what}: forward prefix"
            );
            detected = true;
        }
    }
    // A backward scan yields a suffix.
    let mut seen = Vec::new();
    let mut res = it.last();
    while res.is_ok() && it.valid() {
        seen.push((it.key().to_vec(), it.value_bytes().to_vec()));
        res = it.prev();
    }
    seen.reverse();
    match res {
        Ok(()) => assert_eq!(seen, f.entries, "{what}: backward scan"),
        Err(e) => {
            assert_shared_corruption(&e, size, what);
            let tail = &f.entries[f.entries.len() - seen.len()..];
            assert_eq!(&seen[..], tail, "{what}: backward suffix");
            detected = true;
        }
    }
    // Seeks land on the right entry or fail.
    for (i, (k, v)) in f.entries.iter().enumerate().step_by(7) {
        match it.seek_ge(k) {
            Ok(()) => {
                assert!(it.valid(), "{what}");
                assert_eq!((it.key(), it.value()), (&k[..], &v[..]), "{what}");
            }
            Err(e) => {
                assert_shared_corruption(&e, size, what);
                detected = true;
            }
        }
        match it.seek_lt(k) {
            Ok(()) if i == 0 => assert!(!it.valid(), "{what}"),
            Ok(()) => assert_eq!(it.key(), &f.entries[i - 1].0[..], "{what}"),
            Err(e) => {
                assert_shared_corruption(&e, size, what);
                detected = true;
            }
        }
    }
    if detected {
        Detected::ByReads
    } else {
        Detected::Nowhere
    }
}

fn flip_every_byte(compression: Compression, with_cache: bool) {
    let f = fixture(compression);
    let clean = check_all_reads(&f, f.bytes.clone(), None, "undamaged");
    assert_eq!(
        clean,
        Detected::Nowhere,
        "the undamaged table reported corruption"
    );
    let (mut at_open, mut by_reads) = (0, 0);
    for i in 0..f.bytes.len() {
        for mask in [0x01u8, 0x80] {
            let mut bytes = f.bytes.clone();
            bytes[i] ^= mask;
            let cache = with_cache.then(|| Arc::new(BlockCache::with_shard_bits(1 << 16, 0)));
            let what = format!("byte {i} ^ {mask:#04x}");
            // Every byte is covered by a checksum, so every flip is seen.
            match check_all_reads(&f, bytes, cache, &what) {
                Detected::Nowhere => panic!("{what}: damage went unnoticed"),
                Detected::AtOpen => at_open += 1,
                Detected::ByReads => by_reads += 1,
            }
        }
    }
    // Damage in data blocks is found by reads, in meta blocks at open.
    assert_eq!(at_open + by_reads, 2 * f.bytes.len());
    assert!(
        by_reads as u64 >= 2 * f.opts.block_size as u64,
        "only {by_reads} of the flips hit data blocks"
    );
    assert!(at_open > 0);
}

#[test]
fn every_flipped_byte_is_detected_uncompressed() {
    flip_every_byte(Compression::None, false);
}

#[test]
fn every_flipped_byte_is_detected_zstd_with_cache() {
    let f = fixture(Compression::Zstd { level: 1 });
    // The fixture's repetitive values make some blocks compress.
    assert!(f.bytes.len() < fixture(Compression::None).bytes.len());
    flip_every_byte(Compression::Zstd { level: 1 }, true);
}

#[test]
fn every_truncation_is_corruption() {
    let f = fixture(Compression::None);
    for len in 0..f.bytes.len() {
        let bytes = f.bytes[..len].to_vec();
        let file: Arc<dyn RandomAccessFile> = Arc::new(VecFile(bytes));
        match SstReader::open(file, PATH, len as u64, &f.opts, None) {
            Ok(_) => panic!("a table truncated to {len} bytes opened"),
            Err(e) => assert!(e.is_corruption(), "truncated to {len}: {e}"),
        }
    }
}

#[test]
fn a_size_larger_than_the_file_is_corruption() {
    let f = fixture(Compression::None);
    let mut bytes = f.bytes.clone();
    let claimed = bytes.len() as u64;
    bytes.truncate(bytes.len() - 100);
    let file: Arc<dyn RandomAccessFile> = Arc::new(VecFile(bytes));
    let err = SstReader::open(file, PATH, claimed, &f.opts, None).unwrap_err();
    assert!(err.is_corruption(), "{err}");
}

#[test]
fn opening_with_another_comparator_or_schema_is_refused() {
    use lithify_base::InternalKeyComparator;
    let f = fixture(Compression::None);
    let size = f.bytes.len() as u64;
    let file: Arc<dyn RandomAccessFile> = Arc::new(VecFile(f.bytes.clone()));
    let other = SstOptions::for_internal_keys(InternalKeyComparator::bytewise());
    let err = SstReader::open(file.clone(), PATH, size, &other, None).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Incompatible {
                what: "comparator",
                ..
            }
        ),
        "{err}"
    );
    let mut schema_only = f.opts.clone();
    schema_only.key_schema = Arc::new(lithify_sstable::InternalKeys);
    let err = SstReader::open(file, PATH, size, &schema_only, None).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Incompatible {
                what: "key schema",
                ..
            }
        ),
        "{err}"
    );
}
