//! The damage matrix: every database file kind (WAL, MANIFEST, CURRENT,
//! table, blob file) × every damage (missing, empty, cut at five points, a flipped
//! bit in three places, random bytes, the same-named file of another
//! database written by the same work), on `MemFs` and on real files, on the
//! image a clean close leaves and on the image a crash leaves.
//!
//! Each cell asserts one outcome, the one `docs/ARCHITECTURE.md` ("What
//! lithify does with damage") documents for it:
//!
//! * `Refused`: the open fails, and the error names the file (and the byte
//!   offset, where the damage has one);
//! * `RefusedAtRead`: the open succeeds (the damage is inside a checksummed
//!   block the open does not read) and the first read of those bytes fails
//!   naming the file and offset;
//! * `Reported`: the open recovers by its documented rule, and its
//!   `RecoveryReport` lists the damaged file with the bytes it dropped and
//!   where the file is kept (`lost/`); whatever the database holds then is
//!   what was written (a prefix, never garbage).
//!
//! Never: an open that succeeds with fewer records and a clean report. A
//! read-only open of every damaged image comes first: it must reach the
//! same verdict (refused or not) and leave every byte of the directory as
//! it was.
//!
//! Beside the files: a merge operand the operator cannot merge, in the
//! memtable and in L0, under both failure scopes (it stays with its key).
//! An output path that collides with a database file of each kind (a
//! checkpoint's target) is refused before any work and changes no byte;
//! every other output (backups, restores, pages, expected-state files) is
//! refused the same way by `lithify::check_output_path`:
//! `crates/lithify/tests/outputs.rs` and the CLI's
//! `no_output_lands_in_a_database_a_log_or_a_backup_directory`.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::{Model, model_pairs};
use lithify_engine::{Db, Options, ReadOptions, WalCompression, WriteOptions};
use lithify_version::filename::{FileKind, parse_file_name, sst_file_name};
use lithify_version::{VersionSet, VersionSetOptions};
use lithify_vfs::{FileSystem, MemFs, OsFs};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Wal,
    Manifest,
    Current,
    Table,
    /// A blob file of key-value separation (its images are built with
    /// separation on).
    Blob,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Point {
    Header,
    FirstBlock,
    Middle,
    Footer,
    LastByte,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Damage {
    Missing,
    Empty,
    Cut(Point),
    Flip(Point),
    Random,
    /// Replaced by the file of the same name in another database that did
    /// the same work: same name, same size, same records, another owner.
    Foreign,
}

const DAMAGES: [Damage; 12] = [
    Damage::Missing,
    Damage::Empty,
    Damage::Cut(Point::Header),
    Damage::Cut(Point::FirstBlock),
    Damage::Cut(Point::Middle),
    Damage::Cut(Point::Footer),
    Damage::Cut(Point::LastByte),
    Damage::Flip(Point::Header),
    Damage::Flip(Point::Middle),
    Damage::Flip(Point::Footer),
    Damage::Random,
    Damage::Foreign,
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Refused,
    RefusedAtRead,
    Reported,
}

/// Which image: after a clean close (every WAL synced and its size in the
/// MANIFEST) or a crash image (taken while the database was open after
/// synced writes: its live WAL's size is unknown to the MANIFEST).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Image {
    Closed,
    Crashed,
}

/// What each cell must give. `Refused | Reported` cells are those where
/// the verdict depends on what the cut MANIFEST still describes (a torn
/// last record is dropped and reported; a state that lost more is refused
/// by the live-file and WAL checks).
fn expected(kind: Kind, damage: Damage, image: Image) -> &'static [Outcome] {
    use Outcome::*;
    match (kind, damage) {
        // The open reads each table's footer, metaindex and properties (to
        // check its identity): damage there is refused at open, damage in
        // a data block at its first read.
        (Kind::Table, Damage::Flip(Point::Header | Point::Middle)) => &[RefusedAtRead],
        (Kind::Table, _) => &[Refused],
        // The open checks each blob file's size, header, footer, identity
        // and counts: damage inside a record is found by the read of that
        // value (a scan reads them all).
        (Kind::Blob, Damage::Flip(Point::Middle)) => &[RefusedAtRead],
        (Kind::Blob, _) => &[Refused],
        // Another database's MANIFEST records other tables' identities (the
        // open names the first table that does not match) and another
        // database's identity (which the WALs do not carry); another's WAL
        // names its owner in its header.
        (_, Damage::Foreign) => &[Refused],
        (Kind::Current, _) => &[Refused],
        (Kind::Manifest, Damage::Cut(Point::Middle | Point::Footer | Point::LastByte)) => {
            &[Refused, Reported]
        }
        (Kind::Manifest, _) => &[Refused],
        // Synced and recorded: nothing below the synced size may go.
        (Kind::Wal, _) if image == Image::Closed => &[Refused],
        // The crash image's live WAL (its size unknown to the MANIFEST):
        // a missing WAL that a log number names is refused; any other
        // damage is dropped by point-in-time recovery and reported.
        (Kind::Wal, Damage::Missing) => &[Refused],
        (Kind::Wal, _) => &[Reported],
    }
}

/// A backend with a directory.
struct Place {
    fs: Arc<dyn FileSystem>,
    root: PathBuf,
    _tmp: Option<tempfile::TempDir>,
    /// How the WALs are written (the in-memory matrix runs on LZ4
    /// compressed WALs that grow as they are written, the real-file one on
    /// plain ones sized up front, written over obsolete WALs' files).
    wal_compression: WalCompression,
    wal_preallocate: bool,
    recycle_log_file_num: usize,
}

impl Place {
    fn mem() -> Place {
        let fs = Arc::new(MemFs::new());
        fs.create_dir_all(Path::new("/t")).unwrap();
        Place {
            fs,
            root: PathBuf::from("/t"),
            _tmp: None,
            wal_compression: WalCompression::Lz4,
            wal_preallocate: false,
            recycle_log_file_num: 0,
        }
    }

    fn os() -> Place {
        let tmp = tempfile::tempdir().unwrap();
        Place {
            fs: Arc::new(OsFs),
            root: tmp.path().to_path_buf(),
            _tmp: Some(tmp),
            wal_compression: WalCompression::None,
            wal_preallocate: true,
            recycle_log_file_num: 2,
        }
    }

    /// The options of the images; `blob` puts every value in blob files.
    fn options(&self, blob: bool) -> Options {
        let options = Options::default()
            .fs(self.fs.clone())
            // Room for the 400 entries between two explicit flushes: no
            // memtable switches on its own, so the WAL sequence (and the
            // recycling the real-file image checks) is the one `build`
            // makes.
            .write_buffer_size(128 << 10)
            .target_file_size_base(16 << 10)
            .max_bytes_for_level_base(64 << 10)
            .block_size(1024)
            .disable_auto_compactions(true)
            .wal_compression(self.wal_compression)
            .wal_preallocate(self.wal_preallocate)
            .recycle_log_file_num(self.recycle_log_file_num);
        if blob {
            options.blob(lithify_engine::BlobOptions::enabled(64).blob_file_size(32 << 10))
        } else {
            options
        }
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    format!("value-{i:06}-{}", "x".repeat(90)).into_bytes()
}

/// Builds a database in `place.root/src`: tables on two levels, several
/// MANIFEST records, and synced writes still only in the WAL. Returns the
/// model and the directory of the image.
fn build(place: &Place, image: Image, name: &str, blob: bool) -> (Model, PathBuf) {
    let src = place.root.join(name);
    let db = Db::open(&src, place.options(blob)).unwrap();
    let mut model = Model::new();
    let sync = WriteOptions::default().sync(true);
    for i in 0..1200 {
        db.put(key(i), value(i)).unwrap();
        model.insert(key(i), value(i));
        if i % 400 == 399 {
            db.flush().unwrap();
            // The purge that follows runs now, not when the background
            // gets to it: the flushed WAL is deleted, or kept for
            // recycling, before the next one is created, in both images.
            db.disable_file_deletions();
            db.enable_file_deletions();
        }
    }
    db.compact_range(None, None).unwrap();
    for i in 1200..1300 {
        db.put_opt(key(i), value(i), &sync).unwrap();
        model.insert(key(i), value(i));
    }
    if place.recycle_log_file_num > 0 {
        // The live WAL was written over an obsolete one's file.
        let name = file_of(&place.fs, &src, Kind::Wal);
        let Some(FileKind::Log(number)) = parse_file_name(&name) else {
            unreachable!()
        };
        let path = src.join(&name);
        let mut r = lithify_wal::Reader::new(place.fs.open(&path).unwrap(), &path, number).unwrap();
        assert!(
            r.recycled_from().unwrap().is_some(),
            "{name} is not recycled"
        );
    }
    match image {
        Image::Closed => {
            db.close().unwrap();
            (model, src)
        }
        Image::Crashed => {
            // Nothing runs in the background (no automatic compactions, no
            // flush pending): a copy now is what a crash leaves.
            let dst = place.root.join(format!("{name}-crashed"));
            copy_dir(&*place.fs, &src, &dst);
            drop(db);
            (model, dst)
        }
    }
}

fn copy_dir(fs: &dyn FileSystem, from: &Path, to: &Path) {
    fs.create_dir_all(to).unwrap();
    for name in fs.list_dir(from).unwrap() {
        let path = from.join(&name);
        if fs.is_dir(&path) {
            continue;
        }
        // A purge after the last flush may still be removing obsolete
        // files while a crash image is taken: a file gone is not copied.
        let bytes = match lithify_vfs::read_file(fs, &path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => panic!("{path:?}: {e}"),
        };
        let mut f = fs.create(&to.join(&name)).unwrap();
        f.append(&bytes).unwrap();
        f.sync_all().unwrap();
    }
    fs.sync_dir(to).unwrap();
}

/// Every file of `dir` and below, with its bytes.
fn snapshot(fs: &dyn FileSystem, dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for name in fs.list_dir(dir).unwrap() {
        let path = dir.join(&name);
        if fs.is_dir(&path) {
            for (n, b) in snapshot(fs, &path) {
                out.insert(format!("{name}/{n}"), b);
            }
        } else {
            out.insert(name, lithify_vfs::read_file(fs, &path).unwrap());
        }
    }
    out
}

/// The file of `kind` in `dir`: the live WAL, the MANIFEST CURRENT names,
/// CURRENT, the newest SST file.
fn file_of(fs: &Arc<dyn FileSystem>, dir: &Path, kind: Kind) -> String {
    let names = fs.list_dir(dir).unwrap();
    match kind {
        Kind::Current => "CURRENT".to_owned(),
        Kind::Wal => {
            // The live WAL: the newest. (A crash image may still hold WALs
            // a flush made obsolete before the purge that follows it ran;
            // recovery ignores those.)
            let newest = names
                .iter()
                .filter_map(|n| match parse_file_name(n) {
                    Some(FileKind::Log(number)) => Some(number),
                    _ => None,
                })
                .max()
                .unwrap_or_else(|| panic!("no WAL in {names:?}"));
            lithify_version::filename::log_file_name(newest)
        }
        Kind::Manifest => {
            let n = lithify_version::manifest::read_current(&**fs, dir).unwrap();
            lithify_version::filename::manifest_file_name(n)
        }
        Kind::Table => {
            let set = VersionSet::recover(fs.clone(), dir, VersionSetOptions::default()).unwrap();
            let newest = set
                .current(lithify_version::DEFAULT_TABLE)
                .unwrap()
                .all_files()
                .map(|(_, f)| f.number)
                .max()
                .unwrap();
            sst_file_name(newest)
        }
        Kind::Blob => {
            let set = VersionSet::recover(fs.clone(), dir, VersionSetOptions::default()).unwrap();
            let version = set.current(lithify_version::DEFAULT_TABLE).unwrap();
            let newest = *version.blob_files().keys().max().unwrap();
            lithify_version::filename::blob_file_name(newest)
        }
    }
}

/// The byte offset of `point` in a file of `len` bytes of `kind`.
fn offset(kind: Kind, point: Point, len: u64) -> u64 {
    let at = match (kind, point) {
        (Kind::Current, Point::Header) => 3,
        (Kind::Current, Point::FirstBlock) => 8,
        (_, Point::Header) => 10,
        // Inside the first record (after the 24-byte log header) or the
        // first data block.
        (_, Point::FirstBlock) => 40,
        (_, Point::Middle) => len / 2,
        (Kind::Current, Point::Footer) => len - 3,
        // Inside the last record, or the table footer.
        (_, Point::Footer) => len - 20,
        (_, Point::LastByte) => len - 1,
    };
    at.min(len.saturating_sub(1))
}

/// Where the WAL `name` at `path` has its last record's end: the start of
/// its zero tail or of a recycled file's stale tail, or its size.
fn records_len(fs: &dyn FileSystem, path: &Path, name: &str) -> u64 {
    let Some(FileKind::Log(number)) = parse_file_name(name) else {
        panic!("{name} is not a WAL");
    };
    let mut reader = lithify_wal::Reader::new(fs.open(path).unwrap(), path, number).unwrap();
    while reader.read_record().unwrap().is_some() {}
    reader.records_end().unwrap_or(reader.file_len())
}

/// Damages `name` in `dir` (`other` is another database that did the same
/// work); returns the offset of the damage, if it has one.
fn damage(
    fs: &dyn FileSystem,
    dir: &Path,
    name: &str,
    kind: Kind,
    d: Damage,
    other: &Path,
) -> Option<u64> {
    let path = dir.join(name);
    let bytes = lithify_vfs::read_file(fs, &path).unwrap();
    // A live WAL's damage goes into its records, not into the zeros of
    // its preallocated space after them.
    let len = match kind {
        Kind::Wal => records_len(fs, &path, name),
        _ => bytes.len() as u64,
    };
    let rewrite = |b: &[u8]| {
        let mut f = fs.create(&path).unwrap();
        f.append(b).unwrap();
        f.sync_all().unwrap();
    };
    match d {
        Damage::Missing => {
            fs.remove_file(&path).unwrap();
            fs.sync_dir(dir).unwrap();
            None
        }
        Damage::Empty => {
            rewrite(&[]);
            Some(0)
        }
        Damage::Cut(p) => {
            let at = offset(kind, p, len);
            rewrite(&bytes[..at as usize]);
            Some(at)
        }
        Damage::Flip(p) => {
            let at = offset(kind, p, len);
            let mut b = bytes.clone();
            b[at as usize] ^= 0x04;
            rewrite(&b);
            Some(at)
        }
        Damage::Random => {
            let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ len;
            let b: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            rewrite(&b);
            Some(0)
        }
        Damage::Foreign => {
            let theirs = lithify_vfs::read_file(fs, &other.join(name))
                .unwrap_or_else(|e| panic!("the other database has no {name}: {e}"));
            assert_eq!(theirs.len(), bytes.len(), "{name}: not the same size");
            assert_ne!(theirs, bytes, "{name}: the same bytes");
            rewrite(&theirs);
            None
        }
    }
}

type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// Every pair of the database, or the first error.
fn try_scan(db: &Db) -> Result<Pairs, lithify_engine::Error> {
    db.iter_opt(&ReadOptions::default())
        .map(|kv| kv.map(|(k, v)| (k.to_vec(), v.to_vec())))
        .collect()
}

/// What opening `dir` gives, checked against the rules of the module
/// documentation.
/// One damaged image: where it is and what was done to it.
struct Cell<'a> {
    fs: &'a Arc<dyn FileSystem>,
    opts: &'a Options,
    dir: &'a Path,
    /// The damaged file's name.
    name: &'a str,
    /// The damage's offset, when it has one.
    at: Option<u64>,
    model: &'a Model,
    what: &'a str,
}

fn verdict(cell: &Cell<'_>, read_only: bool) -> Outcome {
    let Cell {
        fs,
        opts,
        dir,
        name,
        at,
        model,
        what,
    } = *cell;
    let opened = if read_only {
        Db::open_read_only(dir, opts.clone())
    } else {
        Db::open(dir, opts.clone())
    };
    let names_the_file = |e: &lithify_engine::Error| {
        let m = e.to_string();
        assert!(
            m.contains(name),
            "{what}: the error does not name {name}: {m}"
        );
        if at.is_some() {
            assert!(
                m.contains("offset"),
                "{what}: the error names no offset: {m}"
            );
        }
    };
    let db = match opened {
        Err(e) => {
            names_the_file(&e);
            return Outcome::Refused;
        }
        Ok(db) => db,
    };
    let got = match try_scan(&db) {
        Err(e) => {
            names_the_file(&e);
            return Outcome::RefusedAtRead;
        }
        Ok(got) => got,
    };
    let report = db.recovery_report().clone();
    // Never garbage: every pair read is one that was written.
    for (k, v) in &got {
        assert_eq!(
            model.get(k),
            Some(v),
            "{what}: a pair that was never written"
        );
    }
    if got == model_pairs(model) && report.is_clean() {
        panic!("{what}: the damage went unnoticed (everything read back, a clean report)");
    }
    assert!(
        !report.is_clean(),
        "{what}: {} of {} pairs are gone and the recovery report is clean",
        model.len() - got.len(),
        model.len()
    );
    let listed = report
        .dropped
        .iter()
        .find(|d| d.file.ends_with(name))
        .unwrap_or_else(|| panic!("{what}: the report does not list {name}: {report:?}"));
    if std::env::var("DAMAGE_DEBUG").is_ok() {
        eprintln!("{what}: {listed}");
    }
    if read_only {
        assert_eq!(listed.kept, None, "{what}: a read-only open moved a file");
    } else {
        let kept = listed
            .kept
            .as_ref()
            .unwrap_or_else(|| panic!("{what}: the report says not where {name} is kept"));
        assert!(
            kept.starts_with(dir.join(lithify_engine::LOST_DIR)) && fs.exists(kept),
            "{what}: {name} is not kept in lost/: {kept:?}"
        );
        // Reopened, the database is whatever the recovery made of it, and
        // the stats say what the previous open kept.
        drop(db);
        let db = Db::open(dir, opts.clone()).unwrap();
        assert_eq!(
            try_scan(&db).unwrap(),
            got,
            "{what}: the recovered state moved"
        );
        assert!(db.stats().lost_files.iter().any(|n| n.starts_with(name)));
    }
    Outcome::Reported
}

fn run_matrix(make: fn() -> Place) {
    for (image, blob) in [
        (Image::Closed, false),
        (Image::Crashed, false),
        (Image::Closed, true),
        (Image::Crashed, true),
    ] {
        let place = make();
        let (model, src) = build(&place, image, "src", blob);
        let (_, other) = build(&place, image, "other", blob);
        let opts = place.options(blob);
        let kinds: &[Kind] = if blob {
            &[Kind::Blob]
        } else {
            &[Kind::Wal, Kind::Manifest, Kind::Current, Kind::Table]
        };
        for &kind in kinds {
            for d in DAMAGES {
                if kind == Kind::Current && d == Damage::Foreign {
                    // CURRENT holds only a MANIFEST's name: another
                    // database's names the same file.
                    continue;
                }
                let what = format!("{kind:?} {d:?} on the {image:?} image");
                let dir = place
                    .root
                    .join(format!("{kind:?}-{d:?}-{image:?}").replace(['(', ')'], "_"));
                copy_dir(&*place.fs, &src, &dir);
                let name = file_of(&place.fs, &dir, kind);
                let at = damage(&*place.fs, &dir, &name, kind, d, &other);
                let before = snapshot(&*place.fs, &dir);
                let cell = Cell {
                    fs: &place.fs,
                    opts: &opts,
                    dir: &dir,
                    name: &name,
                    at,
                    model: &model,
                    what: &what,
                };
                let ro = verdict(&cell, true);
                assert_eq!(
                    snapshot(&*place.fs, &dir),
                    before,
                    "{what}: a read-only open changed the directory"
                );
                let rw = verdict(&cell, false);
                assert_eq!(
                    ro == Outcome::Refused,
                    rw == Outcome::Refused,
                    "{what}: read-only {ro:?}, read-write {rw:?}"
                );
                assert!(
                    expected(kind, d, image).contains(&rw),
                    "{what}: {rw:?}, expected one of {:?}",
                    expected(kind, d, image)
                );
            }
        }
    }
}

#[test]
fn every_damage_is_refused_or_reported_on_memfs() {
    run_matrix(Place::mem);
}

#[test]
fn every_damage_is_refused_or_reported_on_real_files() {
    run_matrix(Place::os);
}

#[test]
fn a_read_only_open_changes_nothing_and_takes_no_writes() {
    let place = Place::mem();
    let (model, dir) = build(&place, Image::Crashed, "src", false);
    let before = snapshot(&*place.fs, &dir);
    let db = Db::open_read_only(&dir, place.options(false)).unwrap();
    assert_eq!(try_scan(&db).unwrap(), model_pairs(&model));
    assert_eq!(db.get(key(1250)).unwrap().unwrap(), value(1250));
    let _ = db.stats();
    let _ = db.property("lithify.stats").unwrap();
    for err in [
        db.put(b"k", b"v").unwrap_err(),
        db.delete(b"k").unwrap_err(),
        db.flush().unwrap_err(),
        db.compact_range(None, None).unwrap_err(),
    ] {
        assert!(err.is_read_only(), "{err}");
        assert!(err.to_string().contains("opened read-only"), "{err}");
    }
    // Two read-only opens at once: no LOCK is taken.
    let second = Db::open_read_only(&dir, place.options(false)).unwrap();
    assert_eq!(try_scan(&second).unwrap(), model_pairs(&model));
    drop((db, second));
    assert_eq!(snapshot(&*place.fs, &dir), before);
    // A directory without a database is refused, and nothing is created.
    let empty = place.root.join("empty");
    let err = Db::open_read_only(&empty, place.options(false)).unwrap_err();
    assert!(err.to_string().contains("no database"), "{err}");
    assert!(!place.fs.exists(&empty));
}

// ----- merge failures: one bad operand, contained to its key -----

/// Appends `+operand`, and cannot merge the operand `bad`.
struct Strict(lithify_engine::MergeFailureScope);

impl lithify_engine::MergeOperator for Strict {
    fn name(&self) -> &str {
        "strict"
    }
    fn full_merge(&self, _: &[u8], base: Option<&[u8]>, ops: &[&[u8]]) -> Option<Vec<u8>> {
        let mut v = base.unwrap_or_default().to_vec();
        for op in ops {
            if *op == b"bad" {
                return None;
            }
            v.push(b'+');
            v.extend_from_slice(op);
        }
        Some(v)
    }
    fn failure_scope(&self) -> lithify_engine::MergeFailureScope {
        self.0
    }
}

/// Where the bad operand is when the flush and compaction come.
#[derive(Debug, Clone, Copy)]
enum Layer {
    /// With its put, in the memtable: the flush meets the full merge.
    Memtable,
    /// In L0, over a put at the bottom: the compaction meets it.
    Level0,
}

/// Every cell: one key's operand cannot be merged. Reads of that key fail
/// naming it; every other key reads; with the default scope
/// (`MustMerge`) the flush and the compaction go on, the database keeps
/// taking writes, the failure outlives a reopen and `verify_merges` names
/// exactly that key; with `TryMerge` (RocksDB's default) the job that
/// meets it fails and the database turns read-only — but nothing written
/// before is lost.
#[test]
fn a_bad_merge_operand_stays_with_its_key() {
    use lithify_engine::MergeFailureScope::{MustMerge, TryMerge};
    for make in [Place::mem as fn() -> Place, Place::os] {
        for scope in [MustMerge, TryMerge] {
            for layer in [Layer::Memtable, Layer::Level0] {
                let what = format!("{scope:?} {layer:?}");
                let place = make();
                let dir = place.root.join("merge");
                let options = place
                    .options(false)
                    .merge_operator(Some(Arc::new(Strict(scope))))
                    .disable_auto_compactions(true);
                let db = Db::open(&dir, options.clone()).unwrap();
                for i in 0..200 {
                    db.put(key(i), value(i)).unwrap();
                }
                if let Layer::Level0 = layer {
                    db.flush().unwrap();
                    db.compact_range(None, None).unwrap();
                }
                db.merge(key(7), b"bad").unwrap();
                if let Layer::Level0 = layer {
                    db.flush().unwrap();
                }
                let err = db.get(key(7)).unwrap_err();
                assert!(err.is_corruption(), "{what}: {err}");
                assert!(err.to_string().contains("key key"), "{what}: {err}");
                assert_eq!(db.get(key(8)).unwrap().unwrap(), value(8), "{what}");
                let jobs = db.flush().and_then(|()| db.compact_range(None, None));
                match scope {
                    MustMerge => {
                        jobs.unwrap();
                        db.put(b"after", b"ok").unwrap();
                        let failed: Vec<_> = db
                            .verify_merges()
                            .unwrap()
                            .into_iter()
                            .map(|f| f.key)
                            .collect();
                        assert_eq!(failed, [key(7)], "{what}");
                    }
                    _ => {
                        jobs.unwrap_err();
                        assert!(db.background_error().is_some(), "{what}");
                        assert!(db.put(b"after", b"x").is_err(), "{what}");
                    }
                }
                drop(db);
                let db = Db::open(&dir, options).unwrap();
                assert!(db.get(key(7)).is_err(), "{what}");
                for i in (0..200).filter(|&i| i != 7) {
                    assert_eq!(db.get(key(i)).unwrap().unwrap(), value(i), "{what}");
                }
            }
        }
    }
}

/// The output-path column: a checkpoint aimed at each live file kind of a
/// database (or at a new name inside its directory) is refused, and the
/// directory keeps every byte, on both file systems.
#[test]
fn an_output_aimed_at_a_database_file_is_refused_and_changes_nothing() {
    for make in [Place::mem as fn() -> Place, Place::os] {
        let place = make();
        let (model, dir) = build(&place, Image::Closed, "out", false);
        let db = Db::open(&dir, place.options(false)).unwrap();
        let before = snapshot(&*place.fs, &dir);
        // Each live file is taken (refused as existing); a new name in
        // the directory or below any of its files is inside the database.
        let mut targets = vec![(dir.join("copy"), "inside the database")];
        for kind in [Kind::Wal, Kind::Manifest, Kind::Current, Kind::Table] {
            let file = dir.join(file_of(&place.fs, &dir, kind));
            targets.push((file.join("copy"), "inside the database"));
            targets.push((file, "already exists"));
        }
        for (target, why) in targets {
            let err = db.create_checkpoint(&target).unwrap_err().to_string();
            assert!(err.contains(why), "{target:?}: {err}");
            assert_eq!(snapshot(&*place.fs, &dir), before, "{target:?}");
        }
        let pairs = try_scan(&db).unwrap();
        assert_eq!(pairs, model_pairs(&model));
    }
}
