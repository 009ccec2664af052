//! Drives every compaction strategy's picker through operation sequences
//! decoded from arbitrary bytes — flushes (with the strategy's flush plan),
//! compactions run at once or registered and run later (so picks made
//! while others run are checked for conflicts), strategy switches — on a
//! model LSM whose files hold `key -> seqno` maps. After every step the
//! version must be valid and a read of every key, done as the engine does
//! it (L0 newest first, then one file per level, the first file holding
//! the key decides), must find the newest version written. Compaction has
//! no on-disk format; this target hunts for picks that break the level
//! order, overlap running compactions, or panic.
#![no_main]

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use lithify_base::{InternalKey, ValueKind};
use lithify_compaction::{Compaction, CompactionsInProgress, PickContext};
use lithify_compaction_leveled::LeveledOptions;
use lithify_compaction_strategy::CompactionStrategy;
use lithify_compaction_tiered::{MajorOnlyOptions, MinorPolicy, TwoTierOptions};
use lithify_version::{DEFAULT_TABLE, FileMetadata, Version, VersionEdit, VersionSet, VersionSetOptions};
use lithify_vfs::MemFs;

const KEYS: u8 = 40;
const ENTRY: u64 = 16;

struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
}

fn strategies() -> Vec<CompactionStrategy> {
    let leveled = LeveledOptions::default()
        .max_bytes_for_level_base(256)
        .max_bytes_for_level_multiplier(2.0)
        .target_file_size_base(64)
        .level0_file_num_compaction_trigger(2)
        .ttl(0);
    let tt = |minor, stripes, ratio| {
        CompactionStrategy::TwoTier(TwoTierOptions::default()
            .minor(minor)
            .stripes(stripes)
            .major_ratio(ratio)
            .target_file_size(64)
            .max_l0_tables(6))
    };
    vec![
        CompactionStrategy::Leveled(leveled.clone()),
        CompactionStrategy::Leveled(leveled
            .level_compaction_dynamic_level_bytes(false)),
        CompactionStrategy::MajorOnly(MajorOnlyOptions::default()
            .target_file_size(64)),
        tt(MinorPolicy::None, 1, 1.0),
        tt(
            MinorPolicy::SizeTiered {
                max_tables: 2,
                size_ratio_percent: 1,
            },
            4,
            1.0,
        ),
        tt(MinorPolicy::MergeWithPrevious, 1, 0.5),
        tt(MinorPolicy::MergeWithPrevious, 3, 0.5),
        tt(MinorPolicy::HotRange { max_tables: 2 }, 4, 2.0),
    ]
}

struct Model {
    set: VersionSet,
    contents: HashMap<u64, BTreeMap<u8, u64>>,
    newest: BTreeMap<u8, u64>,
    seq: u64,
    running: CompactionsInProgress,
    pending: Vec<(u64, Compaction)>,
}

fn meta(number: u64, content: &BTreeMap<u8, u64>) -> FileMetadata {
    let (&lo, &lo_seq) = content.iter().next().expect("non-empty");
    let (&hi, &hi_seq) = content.iter().next_back().expect("non-empty");
    let mut f = FileMetadata::new(
        number,
        content.len() as u64 * ENTRY,
        InternalKey::new(&[lo], lo_seq, ValueKind::Put),
        InternalKey::new(&[hi], hi_seq, ValueKind::Put),
    );
    f.smallest_seqno = *content.values().min().expect("non-empty");
    f.largest_seqno = *content.values().max().expect("non-empty");
    f.num_entries = content.len() as u64;
    f
}

impl Model {
    fn version(&self) -> Arc<Version> {
        self.set.current(DEFAULT_TABLE).expect("table")
    }

    /// Runs `c` (and a flush plan's memtable) on the contents.
    fn execute(&mut self, c: &Compaction, mem: Option<&BTreeMap<u8, u64>>) {
        let mut edit = VersionEdit::new(DEFAULT_TABLE);
        if c.trivial_move && mem.is_none() {
            for (level, f) in c.input_files() {
                edit.delete_file(level, f.number);
                edit.add_file(c.output_level, (**f).clone());
            }
            self.set.log_and_apply(vec![edit]).expect("trivial move applies");
            return;
        }
        let mut merged: BTreeMap<u8, u64> = BTreeMap::new();
        let mut absorb = |content: &BTreeMap<u8, u64>| {
            for (&k, &s) in content {
                let e = merged.entry(k).or_insert(s);
                *e = (*e).max(s);
            }
        };
        if let Some(m) = mem {
            absorb(m);
        }
        for (level, f) in c.input_files() {
            if level != c.output_level || c.output_level == 0 {
                absorb(&self.contents[&f.number]);
            }
        }
        let mut boundaries: Vec<u8> = c.output_boundaries.iter().map(|b| b[0]).collect();
        for (level, f) in c.input_files() {
            if level != c.output_level || c.output_level == 0 {
                edit.delete_file(level, f.number);
                continue;
            }
            let (lo, hi) = (f.smallest_user_key()[0], f.largest_user_key()[0]);
            if c.reuse_untouched_files && merged.range(lo..=hi).next().is_none() {
                boundaries.push(lo);
                continue;
            }
            edit.delete_file(level, f.number);
            let content = self.contents[&f.number].clone();
            for (k, s) in content {
                let e = merged.entry(k).or_insert(s);
                *e = (*e).max(s);
            }
        }
        boundaries.sort_unstable();
        let per_file = if c.output_level == 0 {
            usize::MAX
        } else {
            (c.target_output_file_size / ENTRY).max(1) as usize
        };
        let mut outputs: Vec<BTreeMap<u8, u64>> = vec![BTreeMap::new()];
        let mut next_boundary = 0;
        for (k, s) in merged {
            let mut crossed = false;
            while next_boundary < boundaries.len() && k >= boundaries[next_boundary] {
                next_boundary += 1;
                crossed = true;
            }
            let last = outputs.last().expect("one");
            if !last.is_empty() && (crossed || last.len() >= per_file) {
                outputs.push(BTreeMap::new());
            }
            outputs.last_mut().expect("one").insert(k, s);
        }
        for out in outputs.into_iter().filter(|o| !o.is_empty()) {
            let number = self.set.new_file_number();
            edit.add_file(c.output_level, meta(number, &out));
            self.contents.insert(number, out);
        }
        if let Err(e) = self.set.log_and_apply(vec![edit]) {
            panic!("{c}\nbroke the version: {e}\n{}", self.version());
        }
    }

    fn check(&self) {
        let v = self.version();
        v.check_invariants().expect("valid version");
        for (&k, &want) in &self.newest {
            let mut found = None;
            'levels: for level in 0..v.num_levels() {
                for f in v.files(level) {
                    if let Some(&s) = self.contents[&f.number].get(&k) {
                        found = Some(s);
                        break 'levels;
                    }
                }
            }
            assert_eq!(found, Some(want), "key {k}\n{v}");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let all = strategies();
    let set = VersionSet::create(
        Arc::new(MemFs::new()),
        Path::new("/db"),
        VersionSetOptions::default(),
    )
    .expect("version set");
    let mut m = Model {
        set,
        contents: HashMap::new(),
        newest: BTreeMap::new(),
        seq: 0,
        running: CompactionsInProgress::new(),
        pending: Vec::new(),
    };
    let mut picker = all[input.byte() as usize % all.len()].picker().expect("picker");
    for _ in 0..80 {
        if input.0.is_empty() {
            break;
        }
        match input.byte() % 6 {
            0 | 1 => {
                // A flush of a memtable of up to 16 keys.
                let n = 1 + input.byte() % 16;
                let base = input.byte() % KEYS;
                let spread = 1 + input.byte() % KEYS;
                let mut mem = BTreeMap::new();
                for _ in 0..n {
                    m.seq += 1;
                    let k = (base + input.byte() % spread) % KEYS;
                    mem.insert(k, m.seq);
                    m.newest.insert(k, m.seq);
                }
                let (lo, hi) = (*mem.keys().next().unwrap(), *mem.keys().next_back().unwrap());
                let v = m.version();
                let plan = picker.pick_flush(&v, &PickContext::new(&m.running), &[lo], &[hi]);
                match plan {
                    Some(c) => m.execute(&c, Some(&mem)),
                    None => {
                        let number = m.set.new_file_number();
                        let mut edit = VersionEdit::new(DEFAULT_TABLE);
                        edit.add_file(0, meta(number, &mem));
                        m.contents.insert(number, mem);
                        m.set.log_and_apply(vec![edit]).expect("flush applies");
                    }
                }
            }
            2 => {
                // Run one compaction now.
                let v = m.version();
                if let Some(c) = picker.pick_auto(&v, &PickContext::new(&m.running)) {
                    m.execute(&c, None);
                }
            }
            3 => {
                // Start one and leave it running.
                let v = m.version();
                if let Some(c) = picker.pick_auto(&v, &PickContext::new(&m.running)) {
                    let id = m.running.register(&c, v.comparator());
                    m.pending.push((id, c));
                }
            }
            4 => {
                // Finish the oldest running one.
                if !m.pending.is_empty() {
                    let (id, c) = m.pending.remove(0);
                    m.execute(&c, None);
                    m.running.unregister(id);
                }
            }
            _ => {
                picker = all[input.byte() as usize % all.len()].picker().expect("picker");
            }
        }
        m.check();
    }
    while let Some((id, c)) = (!m.pending.is_empty()).then(|| m.pending.remove(0)) {
        m.execute(&c, None);
        m.running.unregister(id);
        m.check();
    }
});
