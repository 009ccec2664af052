//! The two-tier strategies end to end on real tables: flush plans run by
//! `run_flush`, plain flushes, and every automatic compaction run by
//! `run_compaction`, against a `BTreeMap` model — reading the LSM the way
//! the engine does (memtable aside: L0 newest first, then one file per
//! level, the first file that knows a key decides), so a compaction that
//! broke the level order would show as a stale read. Strategies switch
//! mid-run; incremental majors reuse untouched files; faults leave no
//! output behind.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use lithify_base::keyspan::RangeTombstone;
use lithify_base::{
    Comparator as _, InternalIterator, InternalKey, InternalKeyComparator, ParsedInternalKey,
    SeqNo, ValueKind, VecIterator,
};
use lithify_compaction::iter::Snapshots;
use lithify_compaction::{
    CompactionPicker, CompactionsInProgress, JobOptions, MemtableInput, OutputFactory, PickContext,
    SstOpener, WriteRateLimiter, flush_to_level0, run_compaction, run_flush,
};
use lithify_compaction_leveled::LeveledOptions;
use lithify_compaction_strategy::CompactionStrategy;
use lithify_compaction_tiered::{MajorOnlyOptions, MinorPolicy, TwoTierOptions};
use lithify_sstable::{SstOptions, SstReader};
use lithify_version::filename::sst_file_name;
use lithify_version::{DEFAULT_TABLE, FileMetadata, Version, VersionSet, VersionSetOptions};
use lithify_vfs::{FaultFs, FaultRule, FileSystem, MemFs, OpKind};
use proptest::prelude::*;

const DIR: &str = "/db";

fn sst_options() -> SstOptions<InternalKeyComparator> {
    SstOptions::for_internal_keys(InternalKeyComparator::bytewise())
        .block_size(256)
        .creation_time(Some(1000))
}

fn path(number: u64) -> PathBuf {
    Path::new(DIR).join(sst_file_name(number))
}

struct Opener {
    fs: Arc<dyn FileSystem>,
}

impl SstOpener for Opener {
    fn open_sst(
        &self,
        f: &FileMetadata,
    ) -> lithify_base::Result<Arc<SstReader<InternalKeyComparator>>> {
        let p = path(f.number);
        let file = self
            .fs
            .open(&p)
            .map_err(|e| lithify_base::Error::io(&p, e))?;
        Ok(Arc::new(SstReader::open(
            file,
            &p,
            f.size,
            &sst_options(),
            None,
        )?))
    }
}

/// One table's contents, loaded once.
struct Loaded {
    /// Point entries in internal-key order: newest version of a key first.
    points: Vec<(Vec<u8>, SeqNo, ValueKind, Vec<u8>)>,
    tombstones: Vec<RangeTombstone>,
}

impl Loaded {
    /// What this file says about `key`: `Some(Some(v))` a value,
    /// `Some(None)` deleted, `None` nothing.
    fn decide(&self, key: &[u8]) -> Option<Option<Vec<u8>>> {
        let i = self.points.partition_point(|p| p.0.as_slice() < key);
        let point = self.points.get(i).filter(|p| p.0 == key);
        let tomb = self
            .tombstones
            .iter()
            .filter(|t| t.start.as_ref() <= key && key < t.end.as_ref())
            .map(|t| t.seqno)
            .max();
        match (point, tomb) {
            (Some(p), Some(t)) if t > p.1 => Some(None),
            (Some(p), _) => Some((p.2 == ValueKind::Put).then(|| p.3.clone())),
            (None, Some(_)) => Some(None),
            (None, None) => None,
        }
    }
}

/// A table's files on a fault-injecting `MemFs`, its version set, and a
/// cache of loaded file contents for model checks.
struct Lsm {
    fs: Arc<FaultFs<MemFs>>,
    set: VersionSet,
    running: CompactionsInProgress,
    loaded: HashMap<u64, Loaded>,
    seq: SeqNo,
    reused_bytes: u64,
    major_level_bytes_read: u64,
    /// Live snapshots flushes keep versions and tombstones for.
    snapshots: Snapshots,
}

impl Lsm {
    fn new() -> Self {
        let fs = Arc::new(FaultFs::new(MemFs::new()));
        let set = VersionSet::create(fs.clone(), Path::new(DIR), VersionSetOptions::default())
            .expect("version set");
        Lsm {
            fs,
            set,
            running: CompactionsInProgress::new(),
            loaded: HashMap::new(),
            seq: 0,
            reused_bytes: 0,
            major_level_bytes_read: 0,
            snapshots: Snapshots::none(),
        }
    }

    fn version(&self) -> Arc<Version> {
        self.set.current(DEFAULT_TABLE).expect("default table")
    }

    fn factory(&self) -> OutputFactory<'_> {
        OutputFactory {
            fs: &*self.fs,
            dir: Path::new(DIR),
            numbers: &self.set,
            sst_options: sst_options(),
            identity: None,
            blobs: lithify_compaction::BlobSettings::disabled(),
        }
    }

    fn opener(&self) -> Opener {
        Opener {
            fs: self.fs.clone(),
        }
    }

    fn load(&mut self, f: &FileMetadata) -> &Loaded {
        if !self.loaded.contains_key(&f.number) {
            let t = self.opener().open_sst(f).expect("open");
            let mut it = t.iter();
            it.first().unwrap();
            let mut points = Vec::new();
            while it.valid() {
                let p = ParsedInternalKey::parse(it.key()).unwrap();
                points.push((p.user_key.to_vec(), p.seqno, p.kind, it.value().to_vec()));
                it.next().unwrap();
            }
            let tombstones = t
                .range_tombstones()
                .iter()
                .map(|rt| RangeTombstone::from_stored(&rt.start, &rt.end).unwrap())
                .collect();
            self.loaded.insert(f.number, Loaded { points, tombstones });
        }
        &self.loaded[&f.number]
    }

    /// A point read as the engine does it below the memtables.
    fn get(&mut self, key: &[u8]) -> Option<Vec<u8>> {
        let v = self.version();
        let cmp = v.comparator().clone();
        for f in v.files(0) {
            if f.contains_user_key(&cmp, key)
                && let Some(decided) = self.load(f).decide(key)
            {
                return decided;
            }
        }
        // One file per deeper level, found as the engine finds it: by
        // internal key, so a file whose largest key is a range-tombstone
        // sentinel `k#MAX,RANGEDEL` does not claim `k` from the next file
        // (a user-key range test would, and stop at the wrong file).
        let seek = InternalKey::seek(key, self.seq);
        for level in 1..v.num_levels() {
            if let Some(f) = v.file_for_key(level, seek.encoded())
                && let Some(decided) = self.load(f).decide(key)
            {
                return decided;
            }
        }
        None
    }

    /// Flushes one memtable of `entries` (internal key, value) and
    /// `tombstones` by the picker's flush plan, or to L0, and installs it.
    fn flush(
        &mut self,
        picker: &dyn CompactionPicker,
        entries: Vec<(Vec<u8>, Vec<u8>)>,
        tombstones: Vec<RangeTombstone>,
    ) -> lithify_compaction::Result<()> {
        let edit = self.flush_job(picker, entries, tombstones)?;
        self.set.log_and_apply(vec![edit]).expect("apply flush");
        Ok(())
    }

    /// The flush job alone: its edit, not installed.
    fn flush_job(
        &mut self,
        picker: &dyn CompactionPicker,
        entries: Vec<(Vec<u8>, Vec<u8>)>,
        tombstones: Vec<RangeTombstone>,
    ) -> lithify_compaction::Result<lithify_version::VersionEdit> {
        let cmp = InternalKeyComparator::bytewise();
        let mut lo: Option<Vec<u8>> = None;
        let mut hi: Option<Vec<u8>> = None;
        let mut widen = |k: &[u8]| {
            if lo.as_deref().is_none_or(|l| k < l) {
                lo = Some(k.to_vec());
            }
            if hi.as_deref().is_none_or(|h| k > h) {
                hi = Some(k.to_vec());
            }
        };
        for (k, _) in &entries {
            widen(lithify_base::key::user_key(k));
        }
        for t in &tombstones {
            widen(&t.start);
            widen(&t.end);
        }
        let (Some(lo), Some(hi)) = (lo, hi) else {
            return Ok(lithify_version::VersionEdit::new(DEFAULT_TABLE));
        };
        let v = self.version();
        let plan = picker.pick_flush(&v, &PickContext::new(&self.running), &lo, &hi);
        let edit = match plan {
            Some(c) => {
                let open = || -> Box<dyn InternalIterator + Send> {
                    Box::new(VecIterator::new(cmp.clone(), entries.clone()))
                };
                let mem = MemtableInput {
                    open: &open,
                    range_tombstones: tombstones,
                    num_entries: entries.len() as u64,
                    flush_time: 5,
                };
                let result = run_flush(
                    &c,
                    &mem,
                    &self.opener(),
                    &self.snapshots,
                    None,
                    &self.factory(),
                    &JobOptions::default(),
                )?;
                self.account(&c, &result.stats);
                result.edit
            }
            None => {
                let result = flush_to_level0(
                    VecIterator::new(cmp.clone(), entries),
                    tombstones,
                    &self.snapshots,
                    &self.factory(),
                    &JobOptions::default(),
                    5,
                )?;
                let mut edit = lithify_version::VersionEdit::new(DEFAULT_TABLE);
                if let Some(f) = result.file {
                    edit.add_file(0, f);
                }
                edit
            }
        };
        Ok(edit)
    }

    fn account(
        &mut self,
        c: &lithify_compaction::Compaction,
        stats: &lithify_compaction::CompactionStats,
    ) {
        self.reused_bytes += stats.bytes_reused;
        if c.output_level == self.version().num_levels() - 1 {
            self.major_level_bytes_read += stats.bytes_read_output_level;
        }
    }

    /// Runs automatic compactions until the picker finds nothing.
    fn compact(&mut self, picker: &dyn CompactionPicker) {
        for _ in 0..200 {
            let v = self.version();
            let Some(c) = picker.pick_auto(&v, &PickContext::new(&self.running)) else {
                return;
            };
            let result = run_compaction(
                &c,
                &self.opener(),
                &Snapshots::none(),
                None,
                &self.factory(),
                &JobOptions::default(),
            )
            .unwrap_or_else(|e| panic!("{c}: {e}"));
            self.account(&c, &result.stats);
            self.set
                .log_and_apply(vec![result.edit])
                .unwrap_or_else(|e| panic!("{c}: {e}"));
        }
        panic!("the picker kept finding work");
    }
}

/// One memtable's worth of operations, applied to the model too.
struct Batch {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    tombstones: Vec<RangeTombstone>,
}

fn key(i: u32) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

/// Random writes over `keys` keys (or, `ordered`, keys from `*cursor` on):
/// puts, deletes, and now and then a range delete.
fn batch(
    lsm: &mut Lsm,
    model: &mut BTreeMap<Vec<u8>, Vec<u8>>,
    rng: &mut u64,
    n: usize,
    keys: u32,
    ordered: Option<&mut u32>,
) -> Batch {
    let mut next = || {
        *rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (*rng >> 33) as u32
    };
    let mut entries = Vec::new();
    let mut tombstones = Vec::new();
    let mut cursor = ordered;
    for _ in 0..n {
        lsm.seq += 1;
        let seq = lsm.seq;
        let roll = next() % 100;
        let k = match cursor.as_deref_mut() {
            Some(c) => {
                *c += 1;
                key(*c)
            }
            None => key(next() % keys),
        };
        if roll < 3 && cursor.is_none() {
            let end_i = String::from_utf8_lossy(&k[1..]).parse::<u32>().unwrap() + 1 + next() % 6;
            let end = key(end_i);
            let doomed: Vec<Vec<u8>> = model
                .range(k.clone()..end.clone())
                .map(|(k, _)| k.clone())
                .collect();
            for d in doomed {
                model.remove(&d);
            }
            tombstones.push(RangeTombstone::new(Bytes::from(k), Bytes::from(end), seq));
        } else if roll < 15 {
            model.remove(&k);
            entries.push((
                InternalKey::new(&k, seq, ValueKind::Delete).into_encoded(),
                Vec::new(),
            ));
        } else {
            let value = format!("v{seq}-").repeat(4).into_bytes();
            model.insert(k.clone(), value.clone());
            entries.push((
                InternalKey::new(&k, seq, ValueKind::Put).into_encoded(),
                value,
            ));
        }
    }
    let cmp = InternalKeyComparator::bytewise();
    entries.sort_by(|a, b| cmp.compare(&a.0, &b.0));
    Batch {
        entries,
        tombstones,
    }
}

fn check(lsm: &mut Lsm, model: &BTreeMap<Vec<u8>, Vec<u8>>, upto: u32, label: &str) {
    let v = lsm.version();
    v.check_invariants()
        .unwrap_or_else(|e| panic!("{label}: {e}\n{v}"));
    for i in 0..upto {
        let k = key(i);
        assert_eq!(
            lsm.get(&k),
            model.get(&k).cloned(),
            "{label}: key {}\n{v}",
            String::from_utf8_lossy(&k)
        );
    }
}

fn strategies() -> Vec<CompactionStrategy> {
    let small_leveled = LeveledOptions::default()
        .max_bytes_for_level_base(16 << 10)
        .target_file_size_base(4 << 10)
        .level0_file_num_compaction_trigger(2)
        .ttl(0);
    let two_tier = |o: TwoTierOptions| CompactionStrategy::TwoTier(o.target_file_size(4 << 10));
    vec![
        CompactionStrategy::Leveled(small_leveled),
        CompactionStrategy::MajorOnly(MajorOnlyOptions::default().target_file_size(4 << 10)),
        two_tier(TwoTierOptions::write_only()),
        two_tier(TwoTierOptions::write_mostly()),
        two_tier(TwoTierOptions::read_mostly_few_updates()),
        two_tier(TwoTierOptions::read_mostly_many_updates()),
        two_tier(
            TwoTierOptions::default()
                .stripes(4)
                .minor(MinorPolicy::MergeWithPrevious)
                .major_ratio(0.5),
        ),
    ]
}

#[test]
fn every_strategy_keeps_reads_right() {
    for (i, s) in strategies().into_iter().enumerate() {
        let picker = s.picker().unwrap();
        let mut lsm = Lsm::new();
        let mut model = BTreeMap::new();
        let mut rng = 11 + i as u64;
        for round in 0..14 {
            let b = batch(&mut lsm, &mut model, &mut rng, 120, 400, None);
            lsm.flush(&*picker, b.entries, b.tombstones).unwrap();
            lsm.compact(&*picker);
            check(&mut lsm, &model, 400, &format!("{s} round {round}"));
        }
    }
}

#[test]
fn append_only_major_only_never_rewrites_the_major_level() {
    let picker =
        CompactionStrategy::MajorOnly(MajorOnlyOptions::default().target_file_size(2 << 10))
            .picker()
            .unwrap();
    let mut lsm = Lsm::new();
    let mut model = BTreeMap::new();
    let mut rng = 3;
    let mut cursor = 0u32;
    for _ in 0..10 {
        let b = batch(&mut lsm, &mut model, &mut rng, 60, 0, Some(&mut cursor));
        lsm.flush(&*picker, b.entries, b.tombstones).unwrap();
        lsm.compact(&*picker);
    }
    check(&mut lsm, &model, cursor + 1, "append-only");
    let v = lsm.version();
    assert_eq!(v.num_files(0), 0);
    assert!(v.num_files(6) >= 10, "{v}");
    assert_eq!(lsm.major_level_bytes_read, 0);
}

#[test]
fn incremental_major_reuses_files_without_new_keys() {
    let picker =
        CompactionStrategy::MajorOnly(MajorOnlyOptions::default().target_file_size(1 << 10))
            .picker()
            .unwrap();
    let mut lsm = Lsm::new();
    let mut model = BTreeMap::new();
    let mut rng = 5;
    // Load 400 keys in order: many small L6 files.
    let mut cursor = 0u32;
    let b = batch(&mut lsm, &mut model, &mut rng, 400, 0, Some(&mut cursor));
    lsm.flush(&*picker, b.entries, b.tombstones).unwrap();
    let files_before = lsm.version().num_files(6);
    assert!(files_before > 10);
    // Update two keys far apart: only the files holding them are rewritten;
    // the memtable's range spans everything between.
    for k in [key(20), key(380)] {
        lsm.seq += 1;
        let entries = vec![(
            InternalKey::new(&k, lsm.seq, ValueKind::Put).into_encoded(),
            b"new".to_vec(),
        )];
        model.insert(k, b"new".to_vec());
        lsm.flush(&*picker, entries, Vec::new()).unwrap();
    }
    check(&mut lsm, &model, 402, "incremental");
    assert!(
        lsm.reused_bytes == 0,
        "single-key flushes meet one file each"
    );
    // One memtable holding both keys: its range spans the whole table, the
    // plan takes every L6 file, and the job reuses all but two.
    let before = lsm.version();
    let mut entries = Vec::new();
    for k in [key(21), key(379)] {
        lsm.seq += 1;
        entries.push((
            InternalKey::new(&k, lsm.seq, ValueKind::Put).into_encoded(),
            b"newer".to_vec(),
        ));
        model.insert(k, b"newer".to_vec());
    }
    let plan = picker
        .pick_flush(
            &before,
            &PickContext::new(&lsm.running),
            b"k00021",
            b"k00379",
        )
        .unwrap();
    assert!(plan.num_input_files() > 2);
    lsm.flush(&*picker, entries, Vec::new()).unwrap();
    check(&mut lsm, &model, 402, "incremental, spanning");
    let after = lsm.version();
    let kept = after
        .files(6)
        .iter()
        .filter(|f| before.files(6).iter().any(|g| g.number == f.number))
        .count();
    assert_eq!(kept, before.num_files(6) - 2, "{before}\n{after}");
    assert!(lsm.reused_bytes > 0);
}

#[test]
fn a_range_tombstone_touches_the_files_it_covers() {
    let picker =
        CompactionStrategy::MajorOnly(MajorOnlyOptions::default().target_file_size(1 << 10))
            .picker()
            .unwrap();
    let mut lsm = Lsm::new();
    let mut model = BTreeMap::new();
    let mut rng = 9;
    let mut cursor = 0u32;
    let b = batch(&mut lsm, &mut model, &mut rng, 300, 0, Some(&mut cursor));
    lsm.flush(&*picker, b.entries, b.tombstones).unwrap();
    let before = lsm.version();
    // A put at each end and a range delete in the middle.
    let mut entries = Vec::new();
    for k in [key(2), key(290)] {
        lsm.seq += 1;
        entries.push((
            InternalKey::new(&k, lsm.seq, ValueKind::Put).into_encoded(),
            b"x".to_vec(),
        ));
        model.insert(k, b"x".to_vec());
    }
    lsm.seq += 1;
    let t = RangeTombstone::new(Bytes::from(key(140)), Bytes::from(key(160)), lsm.seq);
    for i in 140..160 {
        model.remove(&key(i));
    }
    lsm.flush(&*picker, entries, vec![t]).unwrap();
    check(&mut lsm, &model, 302, "range delete");
    let after = lsm.version();
    let rewritten: Vec<u64> = before
        .files(6)
        .iter()
        .filter(|f| !after.files(6).iter().any(|g| g.number == f.number))
        .map(|f| f.number)
        .collect();
    let cmp = InternalKeyComparator::bytewise();
    let meets =
        |f: &FileMetadata, lo: &[u8], hi: &[u8]| f.overlaps_user_range(&cmp, Some(lo), Some(hi));
    let expected: Vec<u64> = before
        .files(6)
        .iter()
        .filter(|f| {
            meets(f, &key(2), &key(2))
                || meets(f, &key(290), &key(290))
                || meets(f, &key(140), &key(159))
        })
        .map(|f| f.number)
        .collect();
    assert_eq!(rewritten, expected);
}

/// A reused major-level file between the memtable's point keys and its
/// range tombstones: the outputs are cut where the reused file starts, so
/// the tombstone-only piece after it gets its own file and no output's
/// range (stretched by a tombstone) covers the reused file. (Found by the
/// metamorphic test: the major level once held overlapping files.)
#[test]
fn tombstones_past_a_reused_file_get_their_own_output() {
    let picker = CompactionStrategy::MajorOnly(MajorOnlyOptions::default())
        .picker()
        .unwrap();
    let mut lsm = Lsm::new();
    let mut model = BTreeMap::new();
    lsm.seq += 1;
    let old = vec![(
        InternalKey::new(&key(51), lsm.seq, ValueKind::Put).into_encoded(),
        b"old".to_vec(),
    )];
    model.insert(key(51), b"old".to_vec());
    lsm.flush(&*picker, old, Vec::new()).unwrap();
    let before = lsm.version();
    assert_eq!(before.num_files(6), 1, "{before}");
    let reused = before.files(6)[0].number;
    // A snapshot older than the tombstone keeps it in the major level.
    lsm.snapshots = Snapshots::new(vec![lsm.seq]);
    lsm.seq += 1;
    let put = vec![(
        InternalKey::new(&key(0), lsm.seq, ValueKind::Put).into_encoded(),
        b"v".to_vec(),
    )];
    model.insert(key(0), b"v".to_vec());
    lsm.seq += 1;
    let t = RangeTombstone::new(Bytes::from(key(52)), Bytes::from(key(53)), lsm.seq);
    lsm.flush(&*picker, put, vec![t]).unwrap();
    check(&mut lsm, &model, 60, "tombstone past a reused file");
    let after = lsm.version();
    let ranges: Vec<(u64, String, String)> = after
        .files(6)
        .iter()
        .map(|f| {
            (
                f.number,
                String::from_utf8_lossy(f.smallest_user_key()).into_owned(),
                String::from_utf8_lossy(f.largest_user_key()).into_owned(),
            )
        })
        .collect();
    let names: Vec<(&str, &str)> = ranges
        .iter()
        .map(|(_, lo, hi)| (lo.as_str(), hi.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("k00000", "k00000"),
            ("k00051", "k00051"),
            ("k00052", "k00053"),
        ],
        "{after}"
    );
    assert_eq!(ranges[1].0, reused, "the middle file stays in place");
}

#[test]
fn a_fault_in_a_flush_plan_leaves_no_output_and_no_edit() {
    let picker =
        CompactionStrategy::MajorOnly(MajorOnlyOptions::default().target_file_size(1 << 10))
            .picker()
            .unwrap();
    let mut failed = 0;
    for n in 1..40 {
        for kind in [OpKind::Write, OpKind::Sync] {
            let mut lsm = Lsm::new();
            let mut model = BTreeMap::new();
            let mut rng = 21;
            let b = batch(&mut lsm, &mut model, &mut rng, 150, 200, None);
            lsm.flush(&*picker, b.entries, b.tombstones).unwrap();
            let before = lsm.version();
            let live: Vec<String> = table_names(&*lsm.fs);
            let b = batch(&mut lsm, &mut BTreeMap::new(), &mut rng, 150, 200, None);
            lsm.fs.reset_counts();
            lsm.fs.add_rule(FaultRule::fail_nth(kind, n));
            let result = lsm.flush_job(&*picker, b.entries, b.tombstones);
            lsm.fs.clear_rules();
            if let Ok(edit) = result {
                lsm.set.log_and_apply(vec![edit]).unwrap();
            } else {
                failed += 1;
                assert_eq!(table_names(&*lsm.fs), live, "{kind:?} {n}");
                assert_eq!(lsm.version().to_string(), before.to_string());
                // The inputs are intact.
                check(&mut lsm, &model, 200, "after a failed flush");
            }
        }
    }
    // Every write and sync of the job failed once (a few dozen of them).
    assert!(failed > 10, "{failed}");
}

fn table_names(fs: &dyn FileSystem) -> Vec<String> {
    let mut names: Vec<String> = fs
        .list_dir(Path::new(DIR))
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".sst"))
        .collect();
    names.sort();
    names
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Random workloads with a random strategy switch before every flush:
    /// every switch's first compaction reshapes what the last strategy
    /// left, and reads stay right throughout.
    #[test]
    fn switching_strategies_mid_run_keeps_reads_right(
        seed in any::<u64>(),
        plan in proptest::collection::vec((0usize..7, any::<bool>()), 6..14),
    ) {
        let all = strategies();
        let mut lsm = Lsm::new();
        let mut model = BTreeMap::new();
        let mut rng = seed;
        let mut cursor = 1000u32;
        for (round, (which, ordered)) in plan.into_iter().enumerate() {
            let picker = all[which].picker().unwrap();
            lsm.compact(&*picker);
            let b = if ordered {
                batch(&mut lsm, &mut model, &mut rng, 80, 0, Some(&mut cursor))
            } else {
                batch(&mut lsm, &mut model, &mut rng, 80, 300, None)
            };
            lsm.flush(&*picker, b.entries, b.tombstones).unwrap();
            lsm.compact(&*picker);
            check(&mut lsm, &model, 300, &format!("round {round}, {}", all[which]));
            for i in 1000..=cursor {
                let k = key(i);
                prop_assert_eq!(lsm.get(&k), model.get(&k).cloned());
            }
        }
    }
}

/// Counts what a job asks for (the engine's token bucket, whose pacing
/// its own tests cover, implements the same trait).
#[derive(Default)]
struct CountingLimiter {
    requested: std::sync::atomic::AtomicU64,
    requests: std::sync::atomic::AtomicU64,
}

impl WriteRateLimiter for CountingLimiter {
    fn request(&self, bytes: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        self.requested.fetch_add(bytes, Relaxed);
        self.requests.fetch_add(1, Relaxed);
    }
}

#[test]
fn a_rate_limited_job_charges_every_byte_it_writes() {
    let picker =
        CompactionStrategy::TwoTier(TwoTierOptions::write_only().target_file_size(2 << 10))
            .picker()
            .unwrap();
    let mut lsm = Lsm::new();
    let mut model = BTreeMap::new();
    let mut rng = 17;
    for _ in 0..2 {
        let b = batch(&mut lsm, &mut model, &mut rng, 300, 400, None);
        lsm.flush(&*picker, b.entries, b.tombstones).unwrap();
    }
    let c = picker
        .pick_auto(&lsm.version(), &PickContext::new(&lsm.running))
        .expect("a major");
    assert!(!c.trivial_move);
    let limiter = Arc::new(CountingLimiter::default());
    let opts = JobOptions::default().rate_limiter(Some(limiter.clone()));
    let result = run_compaction(
        &c,
        &lsm.opener(),
        &Snapshots::none(),
        None,
        &lsm.factory(),
        &opts,
    )
    .unwrap();
    let written = result.stats.bytes_written;
    let charged = limiter.requested.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(charged, written);
    // Charged as the output grows, not once at the end.
    assert!(limiter.requests.load(std::sync::atomic::Ordering::Relaxed) > 1);
    lsm.set.log_and_apply(vec![result.edit]).unwrap();
    check(&mut lsm, &model, 400, "rate limited");
}
