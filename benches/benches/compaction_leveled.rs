//! Benchmarks of the compaction crates (`lithify-compaction-leveled`,
//! `-tiered`, `-sim`): the compaction iterator
//! (records per second over an in-memory stream, and over a memtable as a
//! flush reads it), a compaction job on
//! real tables in a `MemFs` (MB/s of input, one and four subcompactions),
//! picking on a large LSM shape (leveled, two-tier reshape and striped
//! majors, a major-only flush plan), and the simulator (writes or
//! operations per second).

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use lithify_base::{InternalIterator, InternalKey, InternalKeyComparator, ValueKind, VecIterator};
use lithify_compaction::iter::{CompactionIterOptions, CompactionIterator, Snapshots};
use lithify_compaction::{
    CompactFilesOptions, CompactionPicker, CompactionsInProgress, JobOptions, OutputFactory,
    PickContext, SstOpener, run_compaction,
};
use lithify_compaction_leveled::{LeveledOptions, LeveledPicker};
use lithify_compaction_sim::{SimConfig, WorkloadKind, simulate};
use lithify_compaction_strategy::CompactionStrategy;
use lithify_compaction_tiered::{MajorOnlyOptions, MajorOnlyPicker, TwoTierOptions, TwoTierPicker};
use lithify_sstable::{SstBuilder, SstOptions, SstReader};
use lithify_version::filename::sst_file_name;
use lithify_version::{
    DEFAULT_TABLE, FileMetadata, Version, VersionEdit, VersionSet, VersionSetOptions,
};
use lithify_vfs::{FileSystem, MemFs};

const KEYS: u64 = 100_000;
const VERSIONS: u64 = 3;
const VALUE: [u8; 100] = [7; 100];

fn user_key(i: u64) -> Vec<u8> {
    format!("user{:012}", i).into_bytes()
}

/// `KEYS` user keys with `VERSIONS` versions each, as a sorted stream.
fn stream() -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::with_capacity((KEYS * VERSIONS) as usize);
    for i in 0..KEYS {
        for v in (0..VERSIONS).rev() {
            let seq = 1 + v * KEYS + i;
            out.push((
                InternalKey::new(&user_key(i), seq, ValueKind::Put).into_encoded(),
                VALUE.to_vec(),
            ));
        }
    }
    out
}

fn compaction_iterator(c: &mut Criterion) {
    let cmp = InternalKeyComparator::bytewise();
    let entries = stream();
    let mut g = c.benchmark_group("compaction_iter");
    g.throughput(Throughput::Elements(entries.len() as u64));
    for (name, snapshots) in [
        ("no_snapshots", Snapshots::none()),
        ("two_snapshots", Snapshots::new(vec![KEYS, 2 * KEYS])),
    ] {
        g.bench_function(name, |b| {
            b.iter_batched(
                || VecIterator::new(cmp.clone(), entries.clone()),
                |input| black_box(drain(input, &cmp, &snapshots)),
                criterion::BatchSize::LargeInput,
            );
        });
    }
    // A flush: the same versions read from a memtable, whose values are
    // not shared bytes.
    let mem = Arc::new(lithify_memtable::MemTable::new(cmp.clone()));
    for (key, value) in &entries {
        let parsed = InternalKey::from_encoded(key.clone()).unwrap();
        mem.add(parsed.seqno(), ValueKind::Put, parsed.user_key(), value)
            .unwrap();
    }
    g.bench_function("memtable_flush", |b| {
        b.iter(|| {
            let input = lithify_memtable::MemTableIter::new(mem.clone());
            black_box(drain(input, &cmp, &Snapshots::none()))
        });
    });
    g.finish();
}

/// Runs a flush's compaction iterator over `input` to its end; returns
/// the bytes of the values it output.
fn drain<I: InternalIterator>(input: I, cmp: &InternalKeyComparator, snapshots: &Snapshots) -> u64 {
    let mut it = CompactionIterator::new(
        input,
        cmp.clone(),
        CompactionIterOptions::for_flush(snapshots.clone(), None),
    );
    it.seek_to_first().unwrap();
    let mut n = 0u64;
    while it.valid() {
        n += it.value().len() as u64;
        it.next().unwrap();
    }
    n
}

fn sst_options() -> SstOptions<InternalKeyComparator> {
    SstOptions::for_internal_keys(InternalKeyComparator::bytewise())
}

struct Opener {
    fs: Arc<MemFs>,
}

impl SstOpener for Opener {
    fn open_sst(
        &self,
        f: &FileMetadata,
    ) -> lithify_base::Result<Arc<SstReader<InternalKeyComparator>>> {
        let path = Path::new("/db").join(sst_file_name(f.number));
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

fn write_table(
    fs: &MemFs,
    set: &VersionSet,
    keys: impl Iterator<Item = u64>,
    seq: u64,
) -> FileMetadata {
    let number = set.new_file_number();
    let path = Path::new("/db").join(sst_file_name(number));
    let mut b = SstBuilder::new(fs.create(&path).unwrap(), &path, &sst_options()).unwrap();
    let mut first = None;
    let mut last = None;
    for i in keys {
        let k = InternalKey::new(&user_key(i), seq, ValueKind::Put);
        b.add(k.encoded(), &VALUE).unwrap();
        first.get_or_insert_with(|| k.clone());
        last = Some(k);
    }
    let built = b.finish().unwrap();
    let mut f = FileMetadata::new(number, built.file_size, first.unwrap(), last.unwrap());
    f.num_entries = built.properties.num_entries;
    f
}

fn compaction_job(c: &mut Criterion) {
    let fs = Arc::new(MemFs::new());
    let set =
        VersionSet::create(fs.clone(), Path::new("/db"), VersionSetOptions::default()).unwrap();
    // L1: every third key, newer; L2: every key, older. About 4.5 MB in all.
    let l1 = write_table(&fs, &set, (0..KEYS / 3).map(|i| i * 3), 2);
    let l2 = write_table(&fs, &set, 0..KEYS / 3, 1);
    let l1_number = l1.number;
    let input_bytes = l1.size + l2.size;
    let mut edit = VersionEdit::new(DEFAULT_TABLE);
    edit.add_file(1, l1);
    edit.add_file(2, l2);
    set.log_and_apply(vec![edit]).unwrap();
    let version = set.current(DEFAULT_TABLE).unwrap();
    let picker = LeveledPicker::new(LeveledOptions::default()).unwrap();
    let running = CompactionsInProgress::new();
    let opener = Opener { fs: fs.clone() };
    let mut g = c.benchmark_group("compaction_job");
    g.throughput(Throughput::Bytes(input_bytes));
    g.sample_size(10);
    for subcompactions in [1usize, 4] {
        let mut compaction = picker
            .compact_files(
                &version,
                &PickContext::new(&running),
                &[l1_number],
                2,
                &CompactFilesOptions::default().output_file_size_limit(512 << 10),
            )
            .unwrap();
        compaction.max_subcompactions = subcompactions;
        g.bench_function(BenchmarkId::new("l1_to_l2", subcompactions), |b| {
            let numbers = AtomicU64::new(1_000_000);
            b.iter(|| {
                let factory = OutputFactory {
                    fs: &*fs,
                    dir: Path::new("/db"),
                    numbers: &numbers,
                    sst_options: sst_options(),
                    identity: Some((lithify_base::Id::random(), lithify_base::Id::random())),
                    blobs: lithify_compaction::BlobSettings::disabled(),
                };
                let result = run_compaction(
                    &compaction,
                    &opener,
                    &Snapshots::none(),
                    None,
                    &factory,
                    &JobOptions::default(),
                )
                .unwrap();
                for f in &result.outputs {
                    fs.remove_file(&factory.path_of(f.number)).unwrap();
                }
                black_box(result.stats.bytes_written)
            });
        });
    }
    g.finish();
}

fn picking(c: &mut Criterion) {
    // 2000 files in L6, 200 in L5, 8 in L0.
    let mut text = String::from("L0:\n");
    for i in 0..8u64 {
        text.push_str(&format!(
            "  {:06}:[a#{},SET-z#{},SET] size=64M\n",
            9000 + i,
            1000 + i,
            1000 + i
        ));
    }
    for (level, count, base) in [(5u64, 200u64, 5000u64), (6, 2000, 10000)] {
        text.push_str(&format!("L{level}:\n"));
        for i in 0..count {
            let lo = format!("k{:08}", i * 1000);
            let hi = format!("k{:08}", i * 1000 + 999);
            text.push_str(&format!(
                "  {:06}:[{lo}#1,SET-{hi}#1,SET] size=64M\n",
                base + i
            ));
        }
    }
    let version: Version = Version::from_text(&text).unwrap();
    let picker = LeveledPicker::new(LeveledOptions::default()).unwrap();
    let running = CompactionsInProgress::new();
    c.bench_function("pick_auto_2208_files", |b| {
        b.iter(|| black_box(picker.pick_auto(&version, &PickContext::new(&running))))
    });
    // The same shape under the two-tier strategies: a reshape (middle
    // levels present), then, without L5, striped majors, minors and flush
    // plans over 2000 major-level files.
    let striped = TwoTierPicker::new(TwoTierOptions::write_mostly()).unwrap();
    c.bench_function("two_tier_reshape_2208_files", |b| {
        b.iter(|| black_box(striped.pick_auto(&version, &PickContext::new(&running))))
    });
    let no_l5: String = text
        .lines()
        .filter(|l| !l.contains(":[k") || !l.trim_start().starts_with("005"))
        .filter(|l| *l != "L5:")
        .map(|l| format!("{l}\n"))
        .collect();
    let two_tier_shape = Version::from_text(&no_l5).unwrap();
    c.bench_function("two_tier_striped_pick_2008_files", |b| {
        b.iter(|| black_box(striped.pick_auto(&two_tier_shape, &PickContext::new(&running))))
    });
    let major_only = MajorOnlyPicker::new(MajorOnlyOptions::default()).unwrap();
    c.bench_function("major_only_flush_plan_2008_files", |b| {
        b.iter(|| {
            black_box(major_only.pick_flush(
                &two_tier_shape,
                &PickContext::new(&running),
                b"k00100000",
                b"k00200000",
            ))
        })
    });
}

fn simulator(c: &mut Criterion) {
    let mut g = c.benchmark_group("simulator");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(10));
    let writes = 1_000_000;
    g.throughput(Throughput::Elements(writes));
    let mut config = SimConfig::fillrandom(writes);
    config.write_buffer_size = 4 << 20;
    config.options.max_bytes_for_level_base = 16 << 20;
    config.options.target_file_size_base = 4 << 20;
    g.bench_function("fillrandom_1M_small_buffers", |b| {
        b.iter(|| black_box(simulate(&config).unwrap().write_amplification()))
    });
    let mut striped = config.clone();
    striped.workload = Some(WorkloadKind::WriteMostly);
    striped.key_space = 250_000;
    striped.strategy = Some(CompactionStrategy::TwoTier(
        TwoTierOptions::write_mostly().target_file_size(4 << 20),
    ));
    g.bench_function("write_mostly_1M_two_tier_striped", |b| {
        b.iter(|| black_box(simulate(&striped).unwrap().write_amplification_vs_user()))
    });
    g.finish();
}

criterion_group!(
    benches,
    compaction_iterator,
    compaction_job,
    picking,
    simulator
);
criterion_main!(benches);
