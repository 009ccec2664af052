//! `VersionSet` against a model, recovery, obsolete files, MANIFEST
//! rollover, damaged CURRENT and MANIFEST, and `manifest::dump`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use lithify_base::{BytewiseComparator, Classify, Comparator, ErrorKind, InternalKey, ValueKind};
use lithify_version::filename::manifest_file_name;
use lithify_version::{
    DEFAULT_TABLE, FileMetadata, TableId, Version, VersionEdit, VersionSet, VersionSetOptions,
    WalAddition, manifest,
};
use lithify_vfs::{FileSystem, MemFs};
use proptest::prelude::*;

const DIR: &str = "/db";

/// A file whose key range is unique to its number, so files never overlap.
fn file(number: u64, seq: u64) -> FileMetadata {
    let mut f = FileMetadata::new(
        number,
        1000 + number,
        InternalKey::new(format!("{number:06}a").as_bytes(), seq, ValueKind::Put),
        InternalKey::new(format!("{number:06}z").as_bytes(), seq, ValueKind::Delete),
    );
    f.num_entries = number % 7;
    f.creation_time = number * 10;
    f
}

fn options(max_manifest: u64) -> VersionSetOptions {
    VersionSetOptions::default().max_manifest_file_size(max_manifest)
}

#[derive(Debug, Clone, Default)]
struct ModelTable {
    name: String,
    log_number: u64,
    levels: Vec<BTreeMap<u64, FileMetadata>>,
    cursors: BTreeMap<usize, InternalKey>,
}

#[derive(Debug, Clone, Default)]
struct Model {
    tables: BTreeMap<TableId, ModelTable>,
    last_sequence: u64,
}

impl Model {
    fn new() -> Self {
        let mut m = Model::default();
        m.tables.insert(
            DEFAULT_TABLE,
            ModelTable {
                name: "default".into(),
                levels: vec![BTreeMap::new(); 7],
                ..ModelTable::default()
            },
        );
        m
    }

    fn numbers(&self) -> BTreeSet<u64> {
        self.tables
            .values()
            .flat_map(|t| t.levels.iter().flat_map(|l| l.keys().copied()))
            .collect()
    }
}

/// Asserts the set's state equals the model's.
fn check_state(set: &VersionSet, model: &Model) {
    let tables = set.tables();
    assert_eq!(
        tables.iter().map(|t| t.id).collect::<Vec<_>>(),
        model.tables.keys().copied().collect::<Vec<_>>()
    );
    for info in tables {
        let m = &model.tables[&info.id];
        assert_eq!(info.name, m.name);
        assert_eq!(info.log_number, m.log_number);
        let v = set.current(info.id).unwrap();
        v.check_invariants().unwrap();
        for (level, files) in m.levels.iter().enumerate() {
            let mut got: Vec<FileMetadata> = v.files(level).iter().map(|f| (**f).clone()).collect();
            got.sort_by_key(|f| f.number);
            let want: Vec<FileMetadata> = files.values().cloned().collect();
            assert_eq!(got, want, "table {} L{level}", info.id);
            assert_eq!(v.compact_cursor(level), m.cursors.get(&level));
        }
    }
    assert_eq!(set.last_sequence(), model.last_sequence);
    let min_log = model.tables.values().map(|t| t.log_number).min().unwrap();
    assert_eq!(set.min_log_number_to_keep(), min_log);
}

#[derive(Debug, Clone)]
enum Op {
    Flush(usize),
    Compact(usize, usize, usize),
    TrivialMove(usize, usize),
    Cursor(usize, usize, u8),
    CreateTable(u8),
    DropTable(usize),
    Roll,
    Reopen,
    Pin(usize),
    Unpin(usize),
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => any::<usize>().prop_map(Op::Flush),
        3 => (any::<usize>(), 0usize..5, 1usize..4).prop_map(|(t, l, n)| Op::Compact(t, l, n)),
        2 => (any::<usize>(), 0usize..5).prop_map(|(t, l)| Op::TrivialMove(t, l)),
        1 => (any::<usize>(), 0usize..7, any::<u8>()).prop_map(|(t, l, k)| Op::Cursor(t, l, k)),
        1 => (0u8..4).prop_map(Op::CreateTable),
        1 => any::<usize>().prop_map(Op::DropTable),
        1 => Just(Op::Roll),
        1 => Just(Op::Reopen),
        2 => any::<usize>().prop_map(Op::Pin),
        2 => any::<usize>().prop_map(Op::Unpin),
    ]
}

fn pick(model: &Model, i: usize) -> TableId {
    let ids: Vec<TableId> = model.tables.keys().copied().collect();
    ids[i % ids.len()]
}

struct Harness {
    fs: Arc<MemFs>,
    set: VersionSet,
    model: Model,
    pinned: Vec<Arc<Version>>,
    /// Numbers ever removed from a current version.
    removed: BTreeSet<u64>,
    /// Numbers reported obsolete.
    reported: BTreeSet<u64>,
    manifests_reported: BTreeSet<u64>,
}

impl Harness {
    fn new(max_manifest: u64) -> Self {
        let fs = Arc::new(MemFs::new());
        let set = VersionSet::create(fs.clone(), Path::new(DIR), options(max_manifest)).unwrap();
        Harness {
            fs,
            set,
            model: Model::new(),
            pinned: Vec::new(),
            removed: BTreeSet::new(),
            reported: BTreeSet::new(),
            manifests_reported: BTreeSet::new(),
        }
    }

    fn run(&mut self, op: &Op) {
        let before = self.model.numbers();
        match *op {
            Op::Flush(t) => {
                let id = pick(&self.model, t);
                let n = self.set.new_file_number();
                let seq = self.model.last_sequence + 10;
                let mut edit = VersionEdit::new(id);
                edit.add_file(0, file(n, seq));
                let table = self.model.tables.get_mut(&id).unwrap();
                table.log_number += 1;
                edit.log_number = Some(table.log_number);
                table.levels[0].insert(n, file(n, seq));
                self.set.set_last_sequence(seq);
                self.model.last_sequence = seq;
                self.set.log_and_apply(vec![edit]).unwrap();
            }
            Op::Compact(t, level, count) => {
                let id = pick(&self.model, t);
                let table = self.model.tables.get_mut(&id).unwrap();
                let inputs: Vec<u64> = table.levels[level].keys().take(count).copied().collect();
                if inputs.is_empty() {
                    return;
                }
                let mut edit = VersionEdit::new(id);
                for n in &inputs {
                    edit.delete_file(level, *n);
                    table.levels[level].remove(n);
                }
                let next: Vec<u64> = table.levels[level + 1].keys().copied().collect();
                for n in next {
                    edit.delete_file(level + 1, n);
                    table.levels[level + 1].remove(&n);
                }
                for _ in 0..2 {
                    let n = self.set.new_file_number();
                    edit.add_file(level + 1, file(n, 1));
                    table.levels[level + 1].insert(n, file(n, 1));
                }
                self.set.log_and_apply(vec![edit]).unwrap();
            }
            Op::TrivialMove(t, level) => {
                let id = pick(&self.model, t);
                let table = self.model.tables.get_mut(&id).unwrap();
                let Some((&n, f)) = table.levels[level].iter().next() else {
                    return;
                };
                let f = f.clone();
                let mut edit = VersionEdit::new(id);
                edit.delete_file(level, n);
                edit.add_file(level + 1, f.clone());
                table.levels[level].remove(&n);
                table.levels[level + 1].insert(n, f);
                self.set.log_and_apply(vec![edit]).unwrap();
            }
            Op::Cursor(t, level, k) => {
                let id = pick(&self.model, t);
                let key = InternalKey::new(&[k], 3, ValueKind::Put);
                let mut edit = VersionEdit::new(id);
                edit.compact_cursors.push((level, key.clone()));
                self.model
                    .tables
                    .get_mut(&id)
                    .unwrap()
                    .cursors
                    .insert(level, key);
                self.set.log_and_apply(vec![edit]).unwrap();
            }
            Op::CreateTable(i) => {
                let name = format!("t{i}");
                if self.model.tables.values().any(|t| t.name == name) {
                    let err = self.set.create_table(&name, None, 0).unwrap_err();
                    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
                    return;
                }
                let log = self
                    .model
                    .tables
                    .values()
                    .map(|t| t.log_number)
                    .max()
                    .unwrap();
                let id = self.set.create_table(&name, None, log).unwrap();
                assert!(!self.model.tables.contains_key(&id));
                self.model.tables.insert(
                    id,
                    ModelTable {
                        name,
                        log_number: log,
                        levels: vec![BTreeMap::new(); 7],
                        cursors: BTreeMap::new(),
                    },
                );
            }
            Op::DropTable(t) => {
                let id = pick(&self.model, t);
                if id == DEFAULT_TABLE {
                    assert!(self.set.drop_table(id).is_err());
                    return;
                }
                self.set.drop_table(id).unwrap();
                self.model.tables.remove(&id);
            }
            Op::Roll => {
                let old = self.set.manifest_number();
                self.set.roll_manifest().unwrap();
                assert!(self.set.manifest_number() > old);
            }
            Op::Reopen => {
                // Everything acknowledged is durable: power loss changes
                // nothing.
                self.pinned.clear();
                self.fs.crash();
                self.set =
                    VersionSet::recover(self.fs.clone(), Path::new(DIR), options(512)).unwrap();
                // Numbers removed before the crash are the engine's orphans
                // now; the new set never saw them.
                let live = self.model.numbers();
                self.reported
                    .extend(self.removed.difference(&live).copied());
            }
            Op::Pin(t) => {
                let id = pick(&self.model, t);
                self.pinned.push(self.set.current(id).unwrap());
            }
            Op::Unpin(i) => {
                if !self.pinned.is_empty() {
                    let i = i % self.pinned.len();
                    self.pinned.remove(i);
                }
            }
        }
        let after = self.model.numbers();
        self.removed.extend(before.difference(&after));
        self.check();
    }

    fn check(&mut self) {
        check_state(&self.set, &self.model);
        let current = self.model.numbers();
        let pinned: BTreeSet<u64> = self
            .pinned
            .iter()
            .flat_map(|v| v.all_files().map(|(_, f)| f.number).collect::<Vec<_>>())
            .collect();
        let live: BTreeSet<u64> = current.union(&pinned).copied().collect();
        assert_eq!(self.set.live_files(), live);
        let obsolete = self.set.obsolete_files();
        for n in &obsolete.tables {
            assert!(!live.contains(n), "{n} reported obsolete but live");
            assert!(self.reported.insert(*n), "{n} reported twice");
        }
        // Exactly the removed numbers nothing pins are reported.
        let expect: BTreeSet<u64> = self.removed.difference(&live).copied().collect();
        assert_eq!(self.reported, expect);
        let manifest = self.set.manifest_number();
        for m in obsolete.manifests {
            assert_ne!(m, manifest);
            assert!(self.manifests_reported.insert(m));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn model_and_recovery(ops in proptest::collection::vec(arb_op(), 1..40)) {
        let mut h = Harness::new(512);
        for op in &ops {
            h.run(op);
        }
        // Recovery rebuilds exactly the model's state, also after a crash.
        h.pinned.clear();
        h.fs.crash();
        let set = VersionSet::recover(h.fs.clone(), Path::new(DIR), options(512)).unwrap();
        check_state(&set, &h.model);
        prop_assert!(set.next_file_number() >= h.set.next_file_number());
        // Files on disk are never reused: numbers keep growing.
        let n = set.new_file_number();
        prop_assert!(h.model.numbers().iter().all(|&m| m < n));
        prop_assert!(n > set.manifest_number());
    }
}

#[test]
fn rollover_reports_old_manifests() {
    let mut h = Harness::new(300);
    for i in 0..40 {
        h.run(&Op::Flush(i));
    }
    // Each MANIFEST holds a snapshot plus a few edits before it is
    // replaced; the old ones are reported once each.
    assert!(
        h.manifests_reported.len() >= 5,
        "{:?}",
        h.manifests_reported
    );
    let current = h.set.manifest_number();
    let listed: Vec<String> = h.fs.list_dir(Path::new(DIR)).unwrap();
    assert!(listed.contains(&manifest_file_name(current)));
    assert!(h.set.manifest_size() > 0);
    // Deleting the reported MANIFESTs loses nothing.
    for m in &h.manifests_reported {
        h.fs.remove_file(&Path::new(DIR).join(manifest_file_name(*m)))
            .unwrap();
    }
    h.fs.sync_dir(Path::new(DIR)).unwrap();
    h.fs.crash();
    let set = VersionSet::recover(h.fs.clone(), Path::new(DIR), options(300)).unwrap();
    check_state(&set, &h.model);
}

#[test]
fn first_write_after_recovery_starts_a_new_manifest() {
    let h = Harness::new(1 << 20);
    let old = h.set.manifest_number();
    drop(h.set);
    let set = VersionSet::recover(h.fs.clone(), Path::new(DIR), options(1 << 20)).unwrap();
    assert_eq!(set.manifest_number(), old);
    assert_eq!(set.manifest_size(), 0);
    let mut edit = VersionEdit::new(DEFAULT_TABLE);
    edit.log_number = Some(5);
    set.log_and_apply(vec![edit]).unwrap();
    assert!(set.manifest_number() > old);
    assert_eq!(set.obsolete_files().manifests, vec![old]);
}

#[test]
fn refused_edits_change_nothing() {
    let h = Harness::new(1 << 20);
    let set = &h.set;
    let n = set.new_file_number();
    let mut ok = VersionEdit::new(DEFAULT_TABLE);
    ok.add_file(1, file(n, 1));
    set.log_and_apply(vec![ok]).unwrap();
    let size = set.manifest_size();
    let cases: Vec<(VersionEdit, &str)> = vec![
        (
            {
                let mut e = VersionEdit::new(DEFAULT_TABLE);
                e.add_file(0, file(10_000, 1));
                e
            },
            "was never allocated",
        ),
        (
            {
                let mut e = VersionEdit::new(DEFAULT_TABLE);
                e.delete_file(2, n);
                e
            },
            "not in L2",
        ),
        (
            {
                let mut e = VersionEdit::new(DEFAULT_TABLE);
                e.add_file(9, file(n, 1));
                e
            },
            "level 9 does not exist",
        ),
        (VersionEdit::new(42), "table 42 does not exist"),
        (
            {
                let mut e = VersionEdit::new(DEFAULT_TABLE);
                e.comparator = Some("other".into());
                e
            },
            "uses comparator",
        ),
        (
            {
                let mut e = VersionEdit::new(DEFAULT_TABLE);
                e.table_drop = true;
                e
            },
            "default table cannot be dropped",
        ),
        (
            {
                let mut e = VersionEdit::new(7);
                e.table_add = Some("x".into());
                e.comparator = Some("unknown.Comparator".into());
                e
            },
            "not registered",
        ),
    ];
    for (edit, message) in cases {
        let err = set.log_and_apply(vec![edit]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.to_string().contains(message), "{err}");
    }
    // A group is all-or-nothing: the valid first edit is not applied either.
    let mut first = VersionEdit::new(DEFAULT_TABLE);
    first.log_number = Some(3);
    let mut bad = VersionEdit::new(DEFAULT_TABLE);
    bad.delete_file(3, 12345);
    assert!(set.log_and_apply(vec![first, bad]).is_err());
    assert_eq!(set.min_log_number_to_keep(), 0);
    assert_eq!(set.manifest_size(), size);
    assert_eq!(set.current(DEFAULT_TABLE).unwrap().total_files(), 1);
}

#[test]
fn tables_and_comparators() {
    #[derive(Debug)]
    struct Reverse;
    impl Comparator for Reverse {
        fn name(&self) -> &str {
            "test.Reverse"
        }
        fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
            b.cmp(a)
        }
    }
    let fs = Arc::new(MemFs::new());
    let opts = VersionSetOptions::default()
        .comparators(vec![Arc::new(BytewiseComparator), Arc::new(Reverse)]);
    let set = VersionSet::create(fs.clone(), Path::new(DIR), opts.clone()).unwrap();
    let id = set.create_table("rev", Some("test.Reverse"), 4).unwrap();
    assert_eq!(id, 1);
    let (a, b) = (set.new_file_number(), set.new_file_number());
    let mut edit = VersionEdit::new(id);
    let f = |n, lo: &[u8], hi: &[u8]| {
        FileMetadata::new(
            n,
            10,
            InternalKey::new(lo, 1, ValueKind::Put),
            InternalKey::new(hi, 1, ValueKind::Put),
        )
    };
    // In reverse order "z".."m" comes before "l".."a".
    edit.add_file(1, f(a, b"l", b"a"));
    edit.add_file(1, f(b, b"z", b"m"));
    set.log_and_apply(vec![edit]).unwrap();
    let v = set.current(id).unwrap();
    assert_eq!(v.files(1)[0].number, b);
    assert_eq!(set.table_by_name("rev").unwrap().comparator, "test.Reverse");
    fs.crash();
    // Recovery needs the comparator registered.
    let err =
        VersionSet::recover(fs.clone(), Path::new(DIR), VersionSetOptions::default()).unwrap_err();
    assert!(
        err.to_string()
            .contains("test.Reverse, which is not registered"),
        "{err}"
    );
    let set = VersionSet::recover(fs.clone(), Path::new(DIR), opts).unwrap();
    assert_eq!(*set.current(id).unwrap(), *v);
    assert_eq!(set.table(id).unwrap().log_number, 4);
    // Creating over an existing database is refused.
    assert!(VersionSet::create(fs, Path::new(DIR), VersionSetOptions::default()).is_err());
}

#[test]
fn merge_operator_name_is_recorded_once() {
    let fs = Arc::new(MemFs::new());
    let dir = Path::new(DIR);
    let set = VersionSet::create(fs.clone(), dir, VersionSetOptions::default()).unwrap();
    assert_eq!(set.table(DEFAULT_TABLE).unwrap().merge_operator, None);
    let mut e = VersionEdit::new(DEFAULT_TABLE);
    e.merge_operator = Some("UInt64AddOperator".into());
    set.log_and_apply(vec![e.clone()]).unwrap();
    // Naming it again is fine; another name is refused.
    set.log_and_apply(vec![e]).unwrap();
    let mut other = VersionEdit::new(DEFAULT_TABLE);
    other.merge_operator = Some("MaxOperator".into());
    let err = set.log_and_apply(vec![other]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(
        err.to_string()
            .contains("uses merge operator UInt64AddOperator, an edit names MaxOperator"),
        "{err}"
    );
    // The name survives recovery, and a new MANIFEST's snapshot.
    for _ in 0..2 {
        fs.crash();
        let set = VersionSet::recover(fs.clone(), dir, VersionSetOptions::default()).unwrap();
        assert_eq!(
            set.table(DEFAULT_TABLE).unwrap().merge_operator.as_deref(),
            Some("UInt64AddOperator")
        );
        set.roll_manifest().unwrap();
    }
    let mut out = String::new();
    let number = VersionSet::recover(fs.clone(), dir, VersionSetOptions::default())
        .unwrap()
        .manifest_number();
    lithify_version::manifest::dump(&*fs, &dir.join(manifest_file_name(number)), &mut out).unwrap();
    assert!(out.contains("merge_operator=UInt64AddOperator"), "{out}");
}

#[test]
fn damaged_current_and_manifest() {
    let h = Harness::new(1 << 20);
    let fs = h.fs.clone();
    let dir = Path::new(DIR);
    for i in 0..3 {
        let n = h.set.new_file_number();
        let mut e = VersionEdit::new(DEFAULT_TABLE);
        e.add_file(0, file(n, i + 1));
        h.set.log_and_apply(vec![e]).unwrap();
    }
    let manifest_path = dir.join(manifest_file_name(h.set.manifest_number()));
    let good = lithify_vfs::read_file(&*fs, &manifest_path).unwrap();
    let recover = || VersionSet::recover(fs.clone(), dir, VersionSetOptions::default());

    // CURRENT without its newline, or naming something else.
    for bad in [&b"MANIFEST-000001"[..], b"000001.sst\n", b"\xff\n"] {
        lithify_vfs::write_file_atomic(&*fs, &dir.join("CURRENT"), bad).unwrap();
        let err = recover().unwrap_err();
        assert!(err.is_corruption(), "{err}");
        assert!(err.to_string().contains("CURRENT"), "{err}");
    }
    // CURRENT naming a MANIFEST that is not there is damage, reported
    // against CURRENT (it was an I/O error on the MANIFEST's name before).
    lithify_vfs::write_file_atomic(&*fs, &dir.join("CURRENT"), b"MANIFEST-000099\n").unwrap();
    let err = recover().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corruption);
    assert!(
        err.to_string()
            .contains("CURRENT at offset 0: CURRENT names MANIFEST-000099, which does not exist"),
        "{err}"
    );
    manifest::set_current(&*fs, dir, h.set.manifest_number()).unwrap();
    recover().unwrap();

    let write = |bytes: &[u8]| {
        let mut f = fs.create(&manifest_path).unwrap();
        f.append(bytes).unwrap();
        f.sync_all().unwrap();
    };
    // A torn last record is dropped: the state before the last edit.
    write(&good[..good.len() - 3]);
    let set = recover().unwrap();
    assert_eq!(set.current(DEFAULT_TABLE).unwrap().num_files(0), 2);
    // A damaged record followed by intact ones is corruption, with the file
    // and offset.
    let mut bad = good.clone();
    bad[40] ^= 0x20;
    write(&bad);
    let err = recover().unwrap_err();
    assert!(err.is_corruption());
    assert!(err.to_string().contains("MANIFEST-"), "{err}");
    // A record that is intact but holds an impossible edit.
    write(&good);
    let mut edit = VersionEdit::new(DEFAULT_TABLE);
    edit.delete_file(4, 999);
    let extended = append_record(
        &good,
        h.set.manifest_number(),
        &lithify_version::edit::encode_group(&[edit]),
    );
    write(&extended);
    let err = recover().unwrap_err();
    assert!(err.is_corruption());
    assert!(
        err.to_string()
            .contains("deleting file 000999, which is not in L4"),
        "{err}"
    );
}

/// `log` plus one more record, as the writer would frame it.
fn append_record(log: &[u8], number: u64, payload: &[u8]) -> Vec<u8> {
    // Re-frame the whole log with the extra record: read the records back
    // and write them all again.
    let fs = MemFs::new();
    let src = Path::new("/src");
    let mut f = fs.create(src).unwrap();
    f.append(log).unwrap();
    let mut reader = lithify_wal::Reader::new(fs.open(src).unwrap(), src, number).unwrap();
    let dst = Path::new("/dst");
    let mut w = lithify_wal::Writer::new(fs.create(dst).unwrap(), dst, number).unwrap();
    while let Some(r) = reader.read_record().unwrap() {
        w.add_record(r.payload).unwrap();
    }
    w.add_record(payload).unwrap();
    w.close().unwrap();
    lithify_vfs::read_file(&fs, dst).unwrap()
}

#[test]
fn dump_is_readable() {
    let fs = Arc::new(MemFs::new());
    let set = VersionSet::create(fs.clone(), Path::new(DIR), options(1 << 20)).unwrap();
    let n = set.new_file_number();
    let mut e = VersionEdit::new(DEFAULT_TABLE);
    e.add_file(0, file(n, 5));
    e.log_number = Some(3);
    set.set_last_sequence(5);
    set.log_and_apply(vec![e]).unwrap();
    let id = set.create_table("users", None, 3).unwrap();
    let m = set.new_file_number();
    let mut e = VersionEdit::new(id);
    e.add_file(1, file(m, 2));
    let mut e0 = VersionEdit::new(DEFAULT_TABLE);
    e0.delete_file(0, n);
    e0.add_file(1, file(n, 5));
    set.log_and_apply(vec![e0, e]).unwrap();
    let path = Path::new(DIR).join(manifest_file_name(set.manifest_number()));
    let mut out = String::new();
    manifest::dump(&*fs, &path, &mut out).unwrap();
    // Records start after the 24-byte header and the 23-byte identity
    // fragment (compact framing, format version 4: 7-byte fragment
    // headers); the identity is the set's own, random.
    let out = out.replace(&set.db_id().to_string(), "<db_id>");
    assert_eq!(
        out,
        "MANIFEST-000001
record 1 at offset 47:
  edit table=0 format=1 db_id=<db_id> add=\"default\" comparator=lithify.BytewiseComparator log=0 next_file=2 last_seq=0 max_table=0
record 2 at offset 128:
  edit table=0 log=3 next_file=3 last_seq=5
    add L0 000002:[000002a#5,SET-000002z#5,DEL] size=1002 entries=2 created=20
record 3 at offset 201:
  edit table=1 add=\"users\" comparator=lithify.BytewiseComparator log=3 next_file=3 last_seq=5 max_table=1
record 4 at offset 262:
  edit table=0 next_file=4 last_seq=5
    delete L0 000002
    add L1 000002:[000002a#5,SET-000002z#5,DEL] size=1002 entries=2 created=20
  edit table=1
    add L1 000003:[000003a#2,SET-000003z#2,DEL] size=1003 entries=3 created=30
end: clean, 4 records
owner: database <db_id>
state: next_file=4 last_seq=5 max_table=1
table 0 \"default\" comparator=lithify.BytewiseComparator log=3
  L1:
    000002:[000002a#5,SET-000002z#5,DEL] size=1002 entries=2 created=20
table 1 \"users\" comparator=lithify.BytewiseComparator log=3
  L1:
    000003:[000003a#2,SET-000003z#2,DEL] size=1003 entries=3 created=30
"
    );
}

/// A MANIFEST whose header names another database than its first record
/// does is refused at offset 0, by recovery and by `dump`.
#[test]
fn a_manifest_naming_two_databases_is_refused() {
    let fs = Arc::new(MemFs::new());
    let set = VersionSet::create(fs.clone(), Path::new(DIR), options(1 << 20)).unwrap();
    let path = Path::new(DIR).join(manifest_file_name(set.manifest_number()));
    let number = set.manifest_number();
    drop(set);
    // The same records under a header naming another owner.
    let mut reader = lithify_wal::Reader::new(fs.open(&path).unwrap(), &path, number).unwrap();
    let mut records = Vec::new();
    while let Some(r) = reader.read_record().unwrap() {
        records.push(r.payload.to_vec());
    }
    let other = lithify_base::Id::random();
    let owned = lithify_wal::WriterOptions::default().owner(Some(other));
    let mut w =
        lithify_wal::Writer::with_options(fs.create(&path).unwrap(), &path, number, owned).unwrap();
    for r in &records {
        w.add_record(r).unwrap();
    }
    w.close().unwrap();
    let err = VersionSet::recover(fs.clone(), Path::new(DIR), options(1 << 20)).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(&format!("its header names database {other}")) && text.contains("offset 0"),
        "{text}"
    );
    let mut out = String::new();
    let err = manifest::dump(&*fs, &path, &mut out).unwrap_err();
    assert_eq!(err.to_string(), text);
    assert!(
        out.contains(&format!("owner: database {other}\nerror: ")),
        "{out}"
    );
}

#[test]
fn synced_wals_survive_rollover_and_leave_with_the_log_number() {
    let fs = Arc::new(MemFs::new());
    let dir = Path::new(DIR);
    // A tiny MANIFEST limit: every write starts a new MANIFEST, so the
    // tracked WALs must travel in the snapshot.
    let set = VersionSet::create(fs.clone(), dir, options(1)).unwrap();
    let mut e = VersionEdit::new(DEFAULT_TABLE);
    e.log_number = Some(5);
    e.wal_additions = vec![
        WalAddition {
            number: 4,
            synced_size: 100,
        },
        WalAddition {
            number: 5,
            synced_size: 300,
        },
        WalAddition {
            number: 6,
            synced_size: 50,
        },
    ];
    set.log_and_apply(vec![e]).unwrap();
    // WAL 4 is below the log number: forgotten.
    assert_eq!(set.synced_wals(), BTreeMap::from([(5, 300), (6, 50)]));
    // Sizes only grow (two syncs may be logged out of order).
    let mut e = VersionEdit::new(DEFAULT_TABLE);
    e.wal_additions = vec![
        WalAddition {
            number: 6,
            synced_size: 40,
        },
        WalAddition {
            number: 6,
            synced_size: 80,
        },
    ];
    set.log_and_apply(vec![e]).unwrap();
    assert_eq!(set.synced_wals(), BTreeMap::from([(5, 300), (6, 80)]));
    let recovered = VersionSet::recover(fs.clone(), dir, options(1)).unwrap();
    assert_eq!(recovered.synced_wals(), BTreeMap::from([(5, 300), (6, 80)]));
    assert_eq!(recovered.recovered_torn_tail(), None);
    // Raising the log number forgets the WALs below it.
    let mut e = VersionEdit::new(DEFAULT_TABLE);
    e.log_number = Some(6);
    recovered.log_and_apply(vec![e]).unwrap();
    assert_eq!(recovered.synced_wals(), BTreeMap::from([(6, 80)]));
}

#[test]
fn manifest_damage_has_one_offset_in_recovery_and_dump() {
    let h = Harness::new(1 << 20);
    let fs = h.fs.clone();
    let dir = Path::new(DIR);
    for i in 0..3 {
        let n = h.set.new_file_number();
        let mut e = VersionEdit::new(DEFAULT_TABLE);
        e.add_file(0, file(n, i + 1));
        h.set.log_and_apply(vec![e]).unwrap();
    }
    let path = dir.join(manifest_file_name(h.set.manifest_number()));
    let good = lithify_vfs::read_file(&*fs, &path).unwrap();
    let write = |bytes: &[u8]| {
        let mut f = fs.create(&path).unwrap();
        f.append(bytes).unwrap();
        f.sync_all().unwrap();
    };
    let recover = || VersionSet::recover(fs.clone(), dir, VersionSetOptions::default());
    let dump = || {
        let mut out = String::new();
        let r = manifest::dump(&*fs, &path, &mut out);
        (r, out)
    };
    // Offsets of the records, from a clean dump.
    let (r, out) = dump();
    r.unwrap();
    let offsets: Vec<u64> = out
        .lines()
        .filter_map(|l| l.strip_prefix("record "))
        .map(|l| l.split(" at offset ").nth(1).unwrap().trim_end_matches(':'))
        .map(|o| o.parse().unwrap())
        .collect();
    assert_eq!(offsets.len(), 4);
    let last = offsets[3];

    // Cut inside the last record: a torn write, dropped and reported at the
    // record's offset.
    write(&good[..good.len() - 3]);
    let set = recover().unwrap();
    let torn = set
        .recovered_torn_tail()
        .expect("the torn record is reported");
    assert_eq!(torn.offset, last);
    assert_eq!(torn.offset + torn.len, good.len() as u64 - 3);
    let (r, out) = dump();
    r.unwrap();
    assert!(
        out.contains(&format!("torn tail: the record at offset {last} ")),
        "{out}"
    );

    // Changed bytes in the last record (nothing intact follows): not a
    // torn write but corruption, at the same offset in both.
    let mut bad = good.clone();
    let n = bad.len();
    bad[n - 2] ^= 0x10;
    write(&bad);
    let err = recover().unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(
        err.to_string().contains(&format!("at offset {last}:")),
        "{err}"
    );
    let (r, out) = dump();
    assert_eq!(r.unwrap_err().to_string(), err.to_string());
    assert!(out.ends_with(&format!("error: {err}\n")), "{out}");

    // The last record's bytes ending in zeros, its header whole: refused
    // the same way (as `docs/FORMATS.md` says): zeros inside a record
    // cannot be told from changed bytes, a record may end in zeros.
    let mut zeroed = good.clone();
    for b in &mut zeroed[last as usize + 7 + 4..] {
        *b = 0;
    }
    write(&zeroed);
    let err = recover().unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(
        err.to_string().contains(&format!("at offset {last}:")),
        "{err}"
    );
    // Zeros where the last record's header would be: a torn write.
    let mut cut = good[..last as usize].to_vec();
    cut.resize(good.len(), 0);
    write(&cut);
    let set = recover().unwrap();
    assert_eq!(set.recovered_torn_tail().unwrap().offset, last);

    // Cut inside the first record: no state at all; the error names the
    // first record's offset (the header's end), in recovery and in dump.
    write(&good[..offsets[0] as usize + 16]);
    let err = recover().unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(
        err.to_string().contains(&format!(
            "at offset {}: the MANIFEST holds no record",
            offsets[0]
        )),
        "{err}"
    );
    let (r, out) = dump();
    assert_eq!(r.unwrap_err().to_string(), err.to_string());
    assert!(out.contains("torn tail"), "{out}");
}
