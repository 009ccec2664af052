//! Compaction jobs on real tables through `lithify-vfs`: outputs match the
//! compaction iterator's result, are cut by size at user-key boundaries,
//! carry their share of range tombstones and correct metadata;
//! subcompactions give the same result as one compaction; a fault at any
//! write or sync yields an error, no edit, and intact inputs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use bytes::Bytes;
use lithify_base::keyspan::RangeTombstone;
use lithify_base::{
    Comparator as _, InternalIterator, InternalKey, InternalKeyComparator, SeqNo, ValueKind,
    VecIterator,
};
use lithify_compaction::iter::{
    CompactionIterOptions, CompactionIterator, RangeDelAggregator, Snapshots,
};
use lithify_compaction::{
    CompactFilesOptions, Compaction, CompactionPicker, CompactionsInProgress, FileNumbers,
    JobOptions, OutputFactory, PickContext, SstOpener, flush_to_level0, run_compaction,
};
use lithify_compaction_leveled::{LeveledOptions, LeveledPicker};
use lithify_sstable::{SstBuilder, SstOptions, SstReader};
use lithify_version::filename::sst_file_name;
use lithify_version::{DEFAULT_TABLE, FileMetadata, VersionEdit, VersionSet, VersionSetOptions};
use lithify_vfs::{FaultFs, FaultRule, FileSystem, MemFs, OpKind};
use proptest::prelude::*;

const DIR: &str = "/db";

/// Encoded internal keys and values.
type Points = Vec<(Vec<u8>, Vec<u8>)>;

/// Point entries and normalized range tombstones.
type Contents = (Points, Vec<String>);

fn sst_options() -> SstOptions<InternalKeyComparator> {
    SstOptions::for_internal_keys(InternalKeyComparator::bytewise())
        .block_size(512)
        .creation_time(Some(1000))
}

/// A database directory: a fault-injecting file system over a `MemFs`, a
/// version set, and the table opener.
struct Env {
    #[allow(dead_code)]
    mem: MemFs,
    fs: Arc<FaultFs<MemFs>>,
    set: VersionSet,
}

impl Env {
    fn new() -> Self {
        let mem = MemFs::new();
        let fs = Arc::new(FaultFs::new(mem.clone()));
        let set = VersionSet::create(fs.clone(), Path::new(DIR), VersionSetOptions::default())
            .expect("create version set");
        Env { mem, fs, set }
    }

    fn path(number: u64) -> PathBuf {
        Path::new(DIR).join(sst_file_name(number))
    }

    /// Writes a table of `entries` (internal key, value) and `tombstones`
    /// and returns its metadata.
    fn write_table(
        &self,
        entries: &[(InternalKey, Vec<u8>)],
        tombstones: &[RangeTombstone],
    ) -> FileMetadata {
        let number = self.set.new_file_number();
        let path = Self::path(number);
        let mut sorted: Vec<_> = entries.to_vec();
        let cmp = InternalKeyComparator::bytewise();
        sorted.sort_by(|a, b| cmp.compare(a.0.encoded(), b.0.encoded()));
        let mut b = SstBuilder::new(self.fs.create(&path).unwrap(), &path, &sst_options()).unwrap();
        for (k, v) in &sorted {
            b.add(k.encoded(), v).unwrap();
        }
        for t in tombstones {
            b.add_range_tombstone(t.start_key().encoded(), &t.end)
                .unwrap();
        }
        let built = b.finish().unwrap();
        self.fs.sync_dir(Path::new(DIR)).unwrap();
        let mut smallest: Option<InternalKey> = sorted.first().map(|e| e.0.clone());
        let mut largest: Option<InternalKey> = sorted.last().map(|e| e.0.clone());
        for t in tombstones {
            let s = t.start_key();
            if smallest
                .as_ref()
                .is_none_or(|x| cmp.compare(s.encoded(), x.encoded()).is_lt())
            {
                smallest = Some(s);
            }
            let e = lithify_compaction::bounds::sentinel(&t.end);
            if largest
                .as_ref()
                .is_none_or(|x| cmp.compare(e.encoded(), x.encoded()).is_gt())
            {
                largest = Some(e);
            }
        }
        let mut f = FileMetadata::new(number, built.file_size, smallest.unwrap(), largest.unwrap());
        f.smallest_seqno = built.properties.min_seqno;
        f.largest_seqno = built.properties.max_seqno;
        f.num_entries = built.properties.num_entries + built.properties.num_range_deletions;
        f.num_deletions = built.properties.num_deletions;
        f.num_range_deletions = built.properties.num_range_deletions;
        f
    }

    fn install(&self, files: Vec<(usize, FileMetadata)>) {
        let mut edit = VersionEdit::new(DEFAULT_TABLE);
        for (level, f) in files {
            edit.add_file(level, f);
        }
        self.set.log_and_apply(vec![edit]).unwrap();
    }

    fn factory<'a>(&'a self, numbers: &'a dyn FileNumbers) -> OutputFactory<'a> {
        OutputFactory {
            fs: &*self.fs,
            dir: Path::new(DIR),
            numbers,
            sst_options: sst_options(),
            identity: None,
            blobs: lithify_compaction::BlobSettings::disabled(),
        }
    }
}

struct Opener {
    fs: Arc<dyn FileSystem>,
}

impl SstOpener for Opener {
    fn open_sst(
        &self,
        f: &FileMetadata,
    ) -> lithify_base::Result<Arc<SstReader<InternalKeyComparator>>> {
        let path = Env::path(f.number);
        let file = self
            .fs
            .open(&path)
            .map_err(|e| lithify_base::Error::io(&path, e))?;
        Ok(Arc::new(SstReader::open(
            file,
            &path,
            f.size,
            &sst_options(),
            None,
        )?))
    }
}

/// Everything in a set of tables: point entries in order, and the
/// normalized coverage of their range tombstones.
fn read_tables(fs: Arc<dyn FileSystem>, files: &[FileMetadata]) -> Contents {
    let opener = Opener { fs };
    let mut points = Vec::new();
    let mut tombstones = Vec::new();
    for f in files {
        let t = opener.open_sst(f).unwrap();
        let mut it = t.iter();
        it.first().unwrap();
        while it.valid() {
            points.push((it.key().to_vec(), it.value().to_vec()));
            it.next().unwrap();
        }
        for rt in t.range_tombstones() {
            tombstones.push(RangeTombstone::from_stored(&rt.start, &rt.end).unwrap());
        }
    }
    (points, normalized(tombstones))
}

fn normalized(tombstones: Vec<RangeTombstone>) -> Vec<String> {
    RangeDelAggregator::new(
        InternalKeyComparator::bytewise(),
        tombstones,
        Snapshots::none(),
    )
    .tombstones_in(None, None, false)
    .iter()
    .map(|t| t.to_string())
    .collect()
}

/// What the compaction iterator alone makes of the inputs of `c`.
fn expected(env: &Env, c: &Compaction, snapshots: &Snapshots) -> Contents {
    let cmp = InternalKeyComparator::bytewise();
    let inputs: Vec<FileMetadata> = c.input_files().map(|(_, f)| (**f).clone()).collect();
    let opener = Opener { fs: env.fs.clone() };
    let mut entries = Vec::new();
    let mut tombstones = Vec::new();
    for f in &inputs {
        let t = opener.open_sst(f).unwrap();
        let mut it = t.iter();
        it.first().unwrap();
        while it.valid() {
            entries.push((it.key().to_vec(), it.value().to_vec()));
            it.next().unwrap();
        }
        for rt in t.range_tombstones() {
            tombstones.push(RangeTombstone::from_stored(&rt.start, &rt.end).unwrap());
        }
    }
    let agg = RangeDelAggregator::new(cmp.clone(), tombstones, snapshots.clone());
    let mut it = CompactionIterator::new(
        VecIterator::new(cmp.clone(), entries),
        cmp,
        CompactionIterOptions::for_flush(snapshots.clone(), Some(&agg))
            .deeper(c.deeper_levels())
            .filter_level(c.start_level())
            .origin("expected".to_owned()),
    );
    it.seek_to_first().unwrap();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next().unwrap();
    }
    let kept = agg
        .tombstones_in(None, None, c.bottommost)
        .into_iter()
        .collect();
    (out, normalized(kept))
}

/// Random table contents: `n` entries over `keys` user keys, seqnos from
/// `seq`, a few deletes.
fn random_entries(
    rng: &mut u64,
    n: usize,
    keys: u32,
    seq: &mut SeqNo,
) -> Vec<(InternalKey, Vec<u8>)> {
    let mut next = || {
        *rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (*rng >> 33) as u32
    };
    let mut seen = BTreeMap::new();
    for _ in 0..n {
        let k = format!("key{:05}", next() % keys);
        *seq += 1;
        let kind = if next() % 8 == 0 {
            ValueKind::Delete
        } else {
            ValueKind::Put
        };
        let value = if kind == ValueKind::Put {
            format!("value-{}-{}", k, seq).into_bytes().repeat(3)
        } else {
            Vec::new()
        };
        seen.insert((k, *seq), (kind, value));
    }
    seen.into_iter()
        .map(|((k, s), (kind, v))| (InternalKey::new(k.as_bytes(), s, kind), v))
        .collect()
}

fn check_outputs(env: &Env, c: &Compaction, outputs: &[FileMetadata]) {
    let cmp = InternalKeyComparator::bytewise();
    for (i, f) in outputs.iter().enumerate() {
        // Metadata matches the file.
        let (points, _) = read_tables(env.fs.clone(), std::slice::from_ref(f));
        assert_eq!(env.fs.file_size(&Env::path(f.number)).unwrap(), f.size);
        if let Some(first) = points.first() {
            assert!(cmp.compare(f.smallest.encoded(), &first.0).is_le(), "{f:?}");
            assert!(
                cmp.compare(f.largest.encoded(), &points.last().unwrap().0)
                    .is_ge(),
                "{f:?}"
            );
        }
        if i > 0 {
            let prev = &outputs[i - 1];
            // Sorted, non-overlapping, and no user key on both sides.
            assert!(
                cmp.compare(prev.largest.encoded(), f.smallest.encoded())
                    .is_lt()
            );
            assert!(
                prev.largest_user_key() < f.smallest_user_key()
                    || lithify_compaction::bounds::is_sentinel(&prev.largest),
                "{prev:?} / {f:?}"
            );
        }
        if c.output_level > 0 && i + 1 < outputs.len() {
            // Cut files stay near their size limit (one entry over at most,
            // plus tombstones and the meta blocks).
            assert!(f.size < c.max_output_file_size + 4096, "{f:?}");
        }
    }
}

/// L1: one file over key00000..key00399 with two range tombstones; L2: two
/// files split at key00200; L3 (older data, so the compaction is not
/// bottommost): one file of every tenth key.
fn two_level_env() -> (Env, u64, u64, SeqNo) {
    let env = Env::new();
    let mut rng = 7u64;
    let mut seq = 0;
    let mut l3 = random_entries(&mut rng, 100, 400, &mut seq);
    l3.retain(|e| e.0.user_key().ends_with(b"0"));
    let l3 = env.write_table(&l3, &[]);
    let l2_first = random_entries(&mut rng, 300, 200, &mut seq);
    let mut l2_second = random_entries(&mut rng, 300, 400, &mut seq);
    l2_second.retain(|e| e.0.user_key() >= b"key00200".as_slice());
    let l1_entries = random_entries(&mut rng, 500, 400, &mut seq);
    let tombstones = vec![
        RangeTombstone::new(
            Bytes::from_static(b"key00100"),
            Bytes::from_static(b"key00150"),
            seq + 1,
        ),
        RangeTombstone::new(
            Bytes::from_static(b"key00300"),
            Bytes::from_static(b"key00420"),
            seq + 2,
        ),
    ];
    seq += 2;
    let records = (l2_first.len() + l2_second.len() + l1_entries.len()) as u64;
    let a = env.write_table(&l2_first, &[]);
    let b = env.write_table(&l2_second, &[]);
    let l1 = env.write_table(&l1_entries, &tombstones);
    let l1_number = l1.number;
    env.install(vec![(1, l1), (2, a), (2, b), (3, l3)]);
    (env, l1_number, records, seq)
}

fn compact_files_l1(env: &Env, l1: u64, limit: u64) -> Compaction {
    let picker = LeveledPicker::new(LeveledOptions::default()).unwrap();
    let version = env.set.current(DEFAULT_TABLE).unwrap();
    let running = CompactionsInProgress::new();
    let ctx = PickContext::new(&running);
    picker
        .compact_files(
            &version,
            &ctx,
            &[l1],
            2,
            &CompactFilesOptions::default().output_file_size_limit(limit),
        )
        .unwrap()
}

#[test]
fn compaction_matches_the_iterator_and_cuts_outputs() {
    let (env, l1, records, seq) = two_level_env();
    let c = compact_files_l1(&env, l1, 4 << 10);
    assert_eq!(c.num_input_files(), 3);
    assert!(!c.bottommost);
    for (round, snapshots) in [Snapshots::none(), Snapshots::new(vec![seq / 3, seq / 2])]
        .into_iter()
        .enumerate()
    {
        let numbers = AtomicU64::new(10_000 * (round as u64 + 1));
        let opener = Opener { fs: env.fs.clone() };
        let result = run_compaction(
            &c,
            &opener,
            &snapshots,
            None,
            &env.factory(&numbers),
            &JobOptions::default(),
        )
        .unwrap();
        assert!(
            result.outputs.len() > 3,
            "cut into several files: {:?}",
            result.outputs
        );
        check_outputs(&env, &c, &result.outputs);
        let got = read_tables(env.fs.clone(), &result.outputs);
        let want = expected(&env, &c, &snapshots);
        assert_eq!(got.0.len(), want.0.len());
        assert!(got.0 == want.0, "point entries differ");
        assert_eq!(got.1, want.1, "tombstones differ");
        assert!(!got.1.is_empty(), "non-bottommost outputs keep tombstones");
        let s = result.stats;
        assert_eq!(s.num_input_records, records);
        assert_eq!(s.num_output_records + s.num_dropped_records, records);
        assert_eq!(s.num_output_records, want.0.len() as u64);
        assert_eq!(
            s.bytes_written,
            result.outputs.iter().map(|f| f.size).sum::<u64>()
        );
        assert_eq!(result.edit.deleted_files.len(), 3);
        assert_eq!(result.edit.new_files.len(), result.outputs.len());
    }
}

/// L0: four overlapping files (one with a range tombstone); L1: two files.
fn level0_env() -> (Env, SeqNo) {
    let env = Env::new();
    let mut rng = 11u64;
    let mut seq = 0;
    let l1a = random_entries(&mut rng, 400, 250, &mut seq);
    let mut l1b = random_entries(&mut rng, 400, 500, &mut seq);
    l1b.retain(|e| e.0.user_key() >= b"key00250".as_slice());
    let mut files = vec![
        (1, env.write_table(&l1a, &[])),
        (1, env.write_table(&l1b, &[])),
    ];
    for i in 0..4 {
        let entries = random_entries(&mut rng, 250, 500, &mut seq);
        let tombstones = if i == 2 {
            seq += 1;
            vec![RangeTombstone::new(
                Bytes::from_static(b"key00050"),
                Bytes::from_static(b"key00400"),
                seq,
            )]
        } else {
            Vec::new()
        };
        files.push((0, env.write_table(&entries, &tombstones)));
    }
    env.install(files);
    (env, seq)
}

fn pick_level0(env: &Env, subcompactions: usize) -> Compaction {
    let picker = LeveledPicker::new(
        LeveledOptions::default()
            .level_compaction_dynamic_level_bytes(false)
            .target_file_size_base(4 << 10)
            .max_subcompactions(subcompactions),
    )
    .unwrap();
    let version = env.set.current(DEFAULT_TABLE).unwrap();
    let running = CompactionsInProgress::new();
    let c = picker
        .pick_auto(&version, &PickContext::new(&running))
        .expect("L0 compaction");
    assert_eq!(
        (c.start_level(), c.output_level, c.num_input_files()),
        (0, 1, 6)
    );
    c
}

#[test]
fn subcompactions_give_the_same_result() {
    let (env, seq) = level0_env();
    let snapshots = Snapshots::new(vec![seq / 2]);
    let opener = Opener { fs: env.fs.clone() };
    let one = pick_level0(&env, 1);
    let numbers = AtomicU64::new(10_000);
    let single = run_compaction(
        &one,
        &opener,
        &snapshots,
        None,
        &env.factory(&numbers),
        &JobOptions::default(),
    )
    .unwrap();
    assert_eq!(single.subcompactions, 1);
    let four = pick_level0(&env, 4);
    let split = run_compaction(
        &four,
        &opener,
        &snapshots,
        None,
        &env.factory(&env.set),
        &JobOptions::default(),
    )
    .unwrap();
    assert!(split.subcompactions > 1, "{}", split.subcompactions);
    check_outputs(&env, &four, &split.outputs);
    let a = read_tables(env.fs.clone(), &single.outputs);
    let b = read_tables(env.fs.clone(), &split.outputs);
    assert!(a.0 == b.0, "point entries differ");
    assert_eq!(a.1, b.1, "tombstone coverage differs");
    assert_eq!(a, expected(&env, &one, &snapshots));
    assert_eq!(
        single.stats.num_input_records,
        split.stats.num_input_records
    );
    assert_eq!(
        single.stats.num_output_records,
        split.stats.num_output_records
    );
    // Both edits apply: the version stays valid (sorted, disjoint L1).
    env.set.log_and_apply(vec![split.edit]).unwrap();
    let v = env.set.current(DEFAULT_TABLE).unwrap();
    v.check_invariants().unwrap();
    assert_eq!(v.num_files(0), 0);
}

/// Files in the database directory that are tables.
fn tables_in_dir(fs: &dyn FileSystem) -> Vec<String> {
    fs.list_dir(Path::new(DIR))
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".sst"))
        .collect()
}

/// Runs the compaction of `setup` once to count its file-system
/// operations, then once per write and per sync with that operation
/// failing: every run must fail, leave no output behind, and leave the
/// inputs readable, also after a power loss.
fn fault_at_every_step(setup: impl Fn() -> (Env, Compaction)) {
    let (env, c) = setup();
    let before = tables_in_dir(&*env.fs);
    env.fs.reset_counts();
    let numbers = AtomicU64::new(10_000);
    let opener = Opener { fs: env.fs.clone() };
    let ok = run_compaction(
        &c,
        &opener,
        &Snapshots::none(),
        None,
        &env.factory(&numbers),
        &JobOptions::default(),
    )
    .unwrap();
    assert!(!ok.outputs.is_empty());
    let counts = env.fs.counts();
    assert!(
        counts.writes > 0 && counts.syncs > ok.outputs.len() as u64,
        "{counts:?}"
    );
    let inputs: Vec<FileMetadata> = c.input_files().map(|(_, f)| (**f).clone()).collect();

    let rules: Vec<FaultRule> = (1..=counts.writes)
        .map(|n| FaultRule::fail_nth(OpKind::Write, n))
        .chain((1..=counts.syncs).map(|n| FaultRule::fail_nth(OpKind::Sync, n)))
        .chain((1..=counts.writes).map(FaultRule::short_write_nth))
        .chain([FaultRule::no_space_after(counts.bytes_written / 2)])
        .collect();
    for rule in rules {
        let (env, c) = setup();
        let want = read_tables(env.fs.clone(), &inputs);
        let version_before = env.set.current(DEFAULT_TABLE).unwrap();
        env.fs.add_rule(rule.clone());
        let numbers = AtomicU64::new(10_000);
        let opener = Opener { fs: env.fs.clone() };
        let result = run_compaction(
            &c,
            &opener,
            &Snapshots::none(),
            None,
            &env.factory(&numbers),
            &JobOptions::default(),
        );
        assert!(result.is_err(), "{rule:?} did not fail the job");
        env.fs.clear_rules();
        assert_eq!(
            tables_in_dir(&*env.fs),
            before,
            "{rule:?} left outputs behind"
        );
        assert_eq!(
            read_tables(env.fs.clone(), &inputs),
            want,
            "{rule:?} damaged the inputs"
        );
        assert!(Arc::ptr_eq(
            &version_before,
            &env.set.current(DEFAULT_TABLE).unwrap()
        ));
        env.mem.crash();
        let survivor: Arc<dyn FileSystem> = Arc::new(env.mem.clone());
        assert_eq!(
            read_tables(survivor, &inputs),
            want,
            "{rule:?}: inputs lost at power loss"
        );
    }
}

#[test]
fn fault_at_any_write_or_sync_yields_an_error_and_no_edit() {
    fault_at_every_step(|| {
        let (env, l1, _, _) = two_level_env();
        let c = compact_files_l1(&env, l1, 4 << 10);
        (env, c)
    });
}

#[test]
fn fault_in_subcompactions_yields_an_error_and_no_edit() {
    fault_at_every_step(|| {
        let (env, _) = level0_env();
        let c = pick_level0(&env, 3);
        (env, c)
    });
}

#[test]
fn trivial_move_is_metadata_only() {
    let env = Env::new();
    let mut rng = 3u64;
    let mut seq = 0;
    let f = env.write_table(&random_entries(&mut rng, 50, 100, &mut seq), &[]);
    let number = f.number;
    env.install(vec![(1, f)]);
    let picker = LeveledPicker::new(LeveledOptions::default()).unwrap();
    let version = env.set.current(DEFAULT_TABLE).unwrap();
    let running = CompactionsInProgress::new();
    let c = picker
        .compact_files(
            &version,
            &PickContext::new(&running),
            &[number],
            3,
            &CompactFilesOptions::default().allow_trivial_move(true),
        )
        .unwrap();
    assert!(c.trivial_move);
    env.fs.reset_counts();
    let numbers = AtomicU64::new(10_000);
    let result = run_compaction(
        &c,
        &Opener { fs: env.fs.clone() },
        &Snapshots::none(),
        None,
        &env.factory(&numbers),
        &JobOptions::default(),
    )
    .unwrap();
    assert_eq!(env.fs.counts().mutations(), 0);
    assert_eq!(result.stats.bytes_moved, c.input_bytes());
    assert_eq!(result.stats.bytes_written, 0);
    env.set.log_and_apply(vec![result.edit]).unwrap();
    let v = env.set.current(DEFAULT_TABLE).unwrap();
    assert_eq!(v.files(3)[0].number, number);
}

fn memtable() -> (Points, Vec<RangeTombstone>) {
    let mut entries = Vec::new();
    for (k, seq, kind, v) in [
        ("a", 10, ValueKind::Put, "a10"),
        ("a", 8, ValueKind::Put, "a8"),
        ("a", 3, ValueKind::Put, "a3"),
        ("b", 9, ValueKind::Delete, ""),
        ("b", 2, ValueKind::Put, "b2"),
        ("c", 7, ValueKind::Put, "c7"),
        ("d", 4, ValueKind::Put, "d4"),
    ] {
        entries.push((
            InternalKey::new(k.as_bytes(), seq, kind).into_encoded(),
            v.as_bytes().to_vec(),
        ));
    }
    let tombstones = vec![RangeTombstone::new(
        Bytes::from_static(b"c"),
        Bytes::from_static(b"e"),
        6,
    )];
    (entries, tombstones)
}

#[test]
fn flush_applies_snapshot_rules_and_syncs() {
    let env = Env::new();
    let (entries, tombstones) = memtable();
    let cmp = InternalKeyComparator::bytewise();
    let numbers = AtomicU64::new(100);
    let result = flush_to_level0(
        VecIterator::new(cmp.clone(), entries),
        tombstones,
        &Snapshots::new(vec![5]),
        &env.factory(&numbers),
        &JobOptions::default(),
        777,
    )
    .unwrap();
    let f = result.file.expect("a file");
    assert_eq!(f.oldest_ancestor_time, 777);
    let (points, tombs) = read_tables(env.fs.clone(), std::slice::from_ref(&f));
    let shown: Vec<String> = points
        .iter()
        .map(|(k, _)| InternalKey::from_encoded(k.clone()).unwrap().to_string())
        .collect();
    // a#8 is hidden by a#10 (same stripe above snapshot 5); a#3 is what the
    // snapshot sees. The tombstone b#9 stays (a flush knows nothing below).
    // [c, e)#6 lies above the snapshot and d#4 below it: both stay.
    assert_eq!(
        shown,
        [
            "a#10,SET", "a#3,SET", "b#9,DEL", "b#2,SET", "c#7,SET", "d#4,SET"
        ]
    );
    assert_eq!(tombs, ["[c, e)#6"]);
    assert_eq!((f.smallest_seqno, f.largest_seqno), (2, 10));
    assert_eq!(f.num_entries, 7);
    assert_eq!(result.stats.num_dropped_records, 1);
    // Durable: survives power loss.
    env.mem.crash();
    let survivor: Arc<dyn FileSystem> = Arc::new(env.mem.clone());
    assert_eq!(read_tables(survivor, std::slice::from_ref(&f)).0, points);

    // Nothing in, nothing out.
    let numbers = AtomicU64::new(200);
    let env = Env::new();
    let empty = flush_to_level0(
        VecIterator::new(cmp, Vec::<(Vec<u8>, Vec<u8>)>::new()),
        Vec::new(),
        &Snapshots::none(),
        &env.factory(&numbers),
        &JobOptions::default(),
        0,
    )
    .unwrap();
    assert!(empty.file.is_none());
    assert!(tables_in_dir(&*env.fs).is_empty());
}

#[test]
fn flush_fault_leaves_no_file() {
    let cmp = InternalKeyComparator::bytewise();
    for n in 1..=4 {
        for kind in [OpKind::Write, OpKind::Sync] {
            let env = Env::new();
            let (entries, tombstones) = memtable();
            env.fs.reset_counts();
            env.fs.add_rule(FaultRule::fail_nth(kind, n));
            let numbers = AtomicU64::new(100);
            let result = flush_to_level0(
                VecIterator::new(cmp.clone(), entries),
                tombstones,
                &Snapshots::none(),
                &env.factory(&numbers),
                &JobOptions::default(),
                0,
            );
            env.fs.clear_rules();
            let counts = env.fs.counts();
            if n <= if kind == OpKind::Write {
                counts.writes
            } else {
                counts.syncs
            } {
                assert!(result.is_err(), "{kind:?} {n}");
                assert!(tables_in_dir(&*env.fs).is_empty(), "{kind:?} {n}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Random two-level compactions with random output limits and
    /// snapshots: the job's outputs are exactly the iterator's result.
    #[test]
    fn random_jobs_match_the_iterator(seed in any::<u64>(), limit in 1u64..16, snaps in proptest::collection::vec(0u64..1200, 0..3), subs in 1usize..4) {
        let env = Env::new();
        let mut rng = seed;
        let mut seq = 0;
        let l2 = random_entries(&mut rng, 200, 300, &mut seq);
        let l1 = random_entries(&mut rng, 200, 300, &mut seq);
        let t = RangeTombstone::new(Bytes::from_static(b"key00020"), Bytes::from_static(b"key00090"), seq + 1);
        let (a, b) = (env.write_table(&l2, &[]), env.write_table(&l1, &[t]));
        let l1_number = b.number;
        env.install(vec![(2, a), (1, b)]);
        let mut c = compact_files_l1(&env, l1_number, limit << 10);
        c.max_subcompactions = subs;
        c.manual = true;
        let snapshots = Snapshots::new(snaps);
        let numbers = AtomicU64::new(10_000);
        let result = run_compaction(&c, &Opener { fs: env.fs.clone() }, &snapshots, None, &env.factory(&numbers), &JobOptions::default()).unwrap();
        check_outputs(&env, &c, &result.outputs);
        prop_assert_eq!(read_tables(env.fs.clone(), &result.outputs), expected(&env, &c, &snapshots));
    }
}
