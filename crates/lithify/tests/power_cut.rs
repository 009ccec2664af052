//! Simulated power cuts at scale, through the public API only.
//!
//! Each scenario draws a workload (puts, deletes, range deletions, batches,
//! some with `sync`, flushes, manual compactions) and engine options
//! (block shape, compression, background jobs, compaction strategy,
//! key-value separation in half of them) from
//! its seed, and runs it on a `MemFs` with torn tails while the background
//! threads flush and compact. Crash points come two ways:
//!
//! * **snapshots**: `MemFs::crash_clone` at random moments of a run — the
//!   state a power cut would leave right then, mid-flush or mid-compaction
//!   if one is running;
//! * **cuts**: a rerun of the workload on a `FaultFs` that fails every
//!   mutation from the N-th on (N drawn over the mutations of the whole
//!   run), so the file system stops exactly before one write, sync,
//!   rename or remove — anywhere in a flush, a compaction, a MANIFEST
//!   update or a WAL switch — then power is cut.
//!
//! At every crash point the database must open, and hold exactly the
//! state after some prefix of the writes: at least every write before the
//! last acknowledged `sync` write (or flush, or manual compaction), at most
//! every write attempted. A quarter of the points also crash the recovery
//! itself part-way and check again; some write after recovery, close and
//! reopen.
//!
//! `LITHIFY_POWER_CUT_POINTS` (default 150) sets the number of crash
//! points, `LITHIFY_POWER_CUT_SEED` the seed the scenario seeds come from;
//! `LITHIFY_POWER_CUT_SCENARIO` runs one scenario seed alone.
//! `cargo xtask crash --simulated N` runs this in release mode.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use lithify::vfs::{FaultFs, FaultRule, FileSystem, MemFs, OpKind};
use lithify::{
    BlobCompression, BlobOptions, CompactionStrategy, Compression, Db, Options, WriteBatch,
    WriteOptions,
};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// The one seedable generator (splitmix64).
type Rng = lithify_base::rand::SplitMix64;

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

const KEYS: u64 = 200;

/// The compaction strategies scenarios draw from (leveled twice as often).
const STRATEGIES: [&str; 7] = [
    "leveled",
    "leveled",
    "major-only",
    "two-tier",
    "two-tier:write-mostly",
    "two-tier:read-mostly-few",
    "adaptive",
];

fn key(k: u64) -> Vec<u8> {
    format!("key{k:04}").into_bytes()
}

/// One write, as the model applies it.
#[derive(Debug, Clone)]
enum Write {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
    DeleteRange(Vec<u8>, Vec<u8>),
    Batch(Vec<(Vec<u8>, Option<Vec<u8>>)>),
}

#[derive(Debug, Clone)]
enum Step {
    Write(Write, bool),
    Flush,
    Compact(Vec<u8>, Vec<u8>),
}

struct Scenario {
    seed: u64,
    options: Options,
    steps: Vec<Step>,
}

impl Scenario {
    fn new(seed: u64) -> Scenario {
        let mut rng = Rng::new(seed);
        let options = common::small_levels()
            .block_size([256, 512, 4096][rng.below(3) as usize])
            .block_restart_interval([1, 4, 16][rng.below(3) as usize])
            .max_background_jobs(1 + rng.below(2) as usize)
            .manual_wal_flush(rng.below(4) == 0)
            .wal_preallocate(rng.below(4) != 0)
            .recycle_log_file_num(rng.below(3) as usize)
            .compression(if rng.below(3) == 0 {
                Compression::Zstd { level: 1 }
            } else {
                Compression::None
            })
            .compaction_strategy({
                let name = STRATEGIES[rng.below(STRATEGIES.len() as u64) as usize];
                CompactionStrategy::parse(name).expect("a strategy name")
            });
        // Key-value separation in half the scenarios: blob files are cut by
        // the power too, and must never lose an acknowledged value.
        let options = if rng.below(2) == 0 {
            options.blob(
                BlobOptions::enabled([64, 512, 1024][rng.below(3) as usize])
                    .blob_file_size([8 << 10, 64 << 10][rng.below(2) as usize])
                    .blob_compression(if rng.below(2) == 0 {
                        BlobCompression::Lz4
                    } else {
                        BlobCompression::None
                    })
                    .enable_blob_garbage_collection(rng.below(2) == 0)
                    .blob_garbage_collection_age_cutoff(0.5)
                    .blob_garbage_collection_force_threshold([0.3, 1.0][rng.below(2) as usize]),
            )
        } else {
            options
        };
        let n = 200 + rng.below(400);
        let sync_one_in = [0, 5, 20, 60][rng.below(4) as usize];
        let mut counter = 0u64;
        let mut value = |rng: &mut Rng| {
            counter += 1;
            let mut v = format!("{seed:x}-{counter}-").into_bytes();
            v.resize(
                v.len() + 50 + rng.below(1400) as usize,
                b'a' + (counter % 26) as u8,
            );
            v
        };
        let steps = (0..n)
            .map(|_| {
                let sync = sync_one_in > 0 && rng.below(sync_one_in) == 0;
                match rng.below(100) {
                    0 => Step::Flush,
                    1 => {
                        let (a, b) = (rng.below(KEYS), rng.below(KEYS));
                        Step::Compact(key(a.min(b)), key(a.max(b)))
                    }
                    2..=65 => Step::Write(Write::Put(key(rng.below(KEYS)), value(&mut rng)), sync),
                    66..=80 => Step::Write(Write::Delete(key(rng.below(KEYS))), sync),
                    81..=85 => {
                        let a = rng.below(KEYS);
                        let b = a + 1 + rng.below(20);
                        Step::Write(Write::DeleteRange(key(a), key(b)), sync)
                    }
                    _ => {
                        let entries = (0..1 + rng.below(6))
                            .map(|_| {
                                let k = key(rng.below(KEYS));
                                if rng.below(4) == 0 {
                                    (k, None)
                                } else {
                                    (k, Some(value(&mut rng)))
                                }
                            })
                            .collect();
                        Step::Write(Write::Batch(entries), sync)
                    }
                }
            })
            .collect();
        Scenario {
            seed,
            options,
            steps,
        }
    }

    fn options(&self, fs: Arc<dyn FileSystem>) -> Options {
        self.options.clone().fs(fs)
    }
}

/// Runs one step; `Ok(true)` when it makes every earlier write durable.
fn run_step(db: &Db, step: &Step) -> lithify::Result<bool> {
    match step {
        Step::Write(w, sync) => {
            let wo = WriteOptions::default().sync(*sync);
            match w {
                Write::Put(k, v) => db.put_opt(k, v, &wo)?,
                Write::Delete(k) => db.delete_opt(k, &wo)?,
                Write::DeleteRange(a, b) => db.delete_range_opt(a, b, &wo)?,
                Write::Batch(entries) => {
                    let mut b = WriteBatch::new();
                    for (k, v) in entries {
                        match v {
                            Some(v) => b.put(k, v),
                            None => b.delete(k),
                        }
                    }
                    db.write_opt(b, &wo)?;
                }
            }
            Ok(*sync)
        }
        Step::Flush => db.flush().map(|()| true).map_err(Into::into),
        Step::Compact(a, b) => db
            .compact_range(Some(a), Some(b))
            .map(|()| true)
            .map_err(Into::into),
    }
}

/// Called with a key, its value before a write and after it.
type OnChange<'a> = dyn FnMut(&[u8], Option<&Vec<u8>>, Option<&Vec<u8>>) + 'a;

/// Applies `w` to `model`, calling `changed(key, before, after)` for every
/// key whose value it sets or removes.
fn apply(model: &mut Model, w: &Write, changed: &mut OnChange<'_>) {
    let mut set = |model: &mut Model, k: &[u8], v: Option<&Vec<u8>>| {
        let before = match v {
            Some(v) => model.insert(k.to_vec(), v.clone()),
            None => model.remove(k),
        };
        changed(k, before.as_ref(), v);
    };
    match w {
        Write::Put(k, v) => set(model, k, Some(v)),
        Write::Delete(k) => set(model, k, None),
        Write::DeleteRange(a, b) => {
            let doomed: Vec<Vec<u8>> = model
                .range(a.clone()..b.clone())
                .map(|(k, _)| k.clone())
                .collect();
            for k in doomed {
                set(model, &k, None);
            }
        }
        Write::Batch(entries) => {
            for (k, v) in entries {
                set(model, k, v.as_ref());
            }
        }
    }
}

/// What a crash point must recover: the model after the writes known
/// durable, and the writes after them that were attempted.
struct Expect<'a> {
    durable: &'a Model,
    attempted: Vec<&'a Write>,
}

fn scan(db: &Db) -> Model {
    db.iter()
        .map(|kv| {
            let (k, v) = kv.expect("a recovered database reads without error");
            (k.to_vec(), v.to_vec())
        })
        .collect()
}

/// The number of writes after the durable ones whose prefix `got` equals,
/// if any: one pass, counting keys that differ and updating the count as
/// each write changes keys.
fn matching_prefix(expect: &Expect<'_>, got: &Model) -> Option<usize> {
    let mut model = expect.durable.clone();
    let mut differ = model
        .iter()
        .filter(|(k, v)| got.get(*k) != Some(*v))
        .count()
        + got.keys().filter(|k| !model.contains_key(*k)).count();
    if differ == 0 {
        return Some(0);
    }
    for (i, w) in expect.attempted.iter().enumerate() {
        apply(&mut model, w, &mut |k, before, after| {
            let g = got.get(k);
            let was = g != before;
            let is = g != after;
            differ = differ + usize::from(is) - usize::from(was);
        });
        if differ == 0 {
            return Some(i + 1);
        }
    }
    None
}

/// Opens the crashed file system (maybe crashing the recovery itself
/// first) and checks the prefix rule.
fn check_point(s: &Scenario, crashed: MemFs, expect: &Expect<'_>, rng: &mut Rng, what: &str) {
    let ctx = |detail: String| {
        format!(
            "power-cut scenario seed {} ({what}): {detail}\nreproduce with \
             LITHIFY_POWER_CUT_SCENARIO={} cargo test -p lithify --test power_cut",
            s.seed, s.seed
        )
    };
    let mut fs = crashed;
    if rng.below(4) == 0 {
        // Power fails again while the recovery writes (L0 tables from the
        // WAL, a new WAL, MANIFEST edits).
        let cut = 1 + rng.below(30);
        let faulty = Arc::new(FaultFs::new(fs.clone()));
        faulty.add_rule(FaultRule::fail_from(OpKind::Mutation, cut));
        drop(Db::open("/db", s.options(faulty)));
        fs = fs.crash_clone();
    }
    let fs = Arc::new(fs);
    let db = Db::open("/db", s.options(fs.clone()))
        .unwrap_or_else(|e| panic!("{}", ctx(format!("the database does not open: {e}"))));
    let got = scan(&db);
    if matching_prefix(expect, &got).is_none() {
        let durable = expect.durable;
        let missing: Vec<_> = durable
            .keys()
            .filter(|k| !got.contains_key(*k))
            .take(5)
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect();
        panic!(
            "{}",
            ctx(format!(
                "the recovered database ({} keys) is not the state after any prefix of the {} \
                 writes attempted since the last durable point ({} keys then; keys of it missing \
                 now: {missing:?})",
                got.len(),
                expect.attempted.len(),
                durable.len()
            ))
        );
    }
    if rng.below(4) == 0 {
        // The recovered database works and survives a clean reopen.
        db.put(b"zz-after-crash", b"1")
            .unwrap_or_else(|e| panic!("{}", ctx(format!("a write after recovery failed: {e}"))));
        db.close()
            .unwrap_or_else(|e| panic!("{}", ctx(format!("close after recovery failed: {e}"))));
        let db = Db::open("/db", s.options(fs))
            .unwrap_or_else(|e| panic!("{}", ctx(format!("the second reopen failed: {e}"))));
        let mut again = scan(&db);
        assert_eq!(
            again.remove(&b"zz-after-crash"[..]).as_deref(),
            Some(&b"1"[..]),
            "{}",
            ctx("a write after recovery was lost by a clean reopen".into())
        );
        assert!(
            again == got,
            "{}",
            ctx("a second reopen changed the data".into())
        );
    }
}

/// The workload's writes and where the durable point stands.
struct Progress<'a> {
    s: &'a Scenario,
    durable: Model,
    durable_steps: usize,
}

impl<'a> Progress<'a> {
    fn new(s: &'a Scenario) -> Self {
        Progress {
            s,
            durable: Model::new(),
            durable_steps: 0,
        }
    }

    /// Every write of the first `steps` steps is durable.
    fn advance(&mut self, steps: usize) {
        for step in &self.s.steps[self.durable_steps..steps] {
            if let Step::Write(w, _) = step {
                apply(&mut self.durable, w, &mut |_, _, _| {});
            }
        }
        self.durable_steps = steps;
    }

    /// What a crash after `attempted` steps must recover.
    fn expect(&self, attempted: usize) -> Expect<'_> {
        Expect {
            durable: &self.durable,
            attempted: self.s.steps[self.durable_steps..attempted]
                .iter()
                .filter_map(|st| match st {
                    Step::Write(w, _) => Some(w),
                    _ => None,
                })
                .collect(),
        }
    }
}

/// Runs the scenario once with crash snapshots at random moments; returns
/// the points checked and the file-system mutations of the whole run.
fn snapshots(s: &Scenario, budget: u64, rng: &mut Rng) -> (u64, u64) {
    let mem = MemFs::new();
    mem.set_torn_tails(Some(s.seed));
    let fs = Arc::new(FaultFs::new(mem.clone()));
    let db = Db::open("/db", s.options(fs.clone())).expect("open on a healthy file system");
    let mut p = Progress::new(s);
    let mut points = 0;
    let every = (s.steps.len() as u64 / budget.max(1)).max(1);
    for (i, step) in s.steps.iter().enumerate() {
        let durable = run_step(&db, step).unwrap_or_else(|e| {
            panic!(
                "scenario seed {}: step {i} failed on a healthy file system: {e}",
                s.seed
            )
        });
        if durable {
            p.advance(i + 1);
        }
        if points < budget && rng.below(every) == 0 {
            points += 1;
            check_point(
                s,
                mem.crash_clone(),
                &p.expect(i + 1),
                rng,
                &format!("snapshot after step {i}"),
            );
        }
    }
    drop(db);
    (points, fs.counts().mutations())
}

/// Runs the scenario on a file system that stops before mutation `cut`,
/// then cuts the power and checks.
fn cut_at(s: &Scenario, cut: u64, rng: &mut Rng) {
    let mem = MemFs::new();
    mem.set_torn_tails(Some(s.seed ^ cut));
    let fs = Arc::new(FaultFs::new(mem.clone()));
    fs.add_rule(FaultRule::fail_from(OpKind::Mutation, cut));
    let what = format!("power cut before file-system mutation {cut}");
    let mut p = Progress::new(s);
    let mut attempted = 0;
    if let Ok(db) = Db::open("/db", s.options(fs.clone())) {
        for (i, step) in s.steps.iter().enumerate() {
            attempted = i + 1;
            match run_step(&db, step) {
                Ok(true) => p.advance(i + 1),
                Ok(false) => {}
                Err(_) => break,
            }
        }
        let crashed = mem.crash_clone();
        drop(db);
        check_point(s, crashed, &p.expect(attempted), rng, &what);
    } else {
        check_point(s, mem.crash_clone(), &p.expect(0), rng, &what);
    }
}

#[test]
fn power_cuts_keep_a_prefix_with_every_synced_write() {
    let points = env_u64("LITHIFY_POWER_CUT_POINTS").unwrap_or(150);
    let seeds: Box<dyn Iterator<Item = u64>> = match env_u64("LITHIFY_POWER_CUT_SCENARIO") {
        Some(one) => Box::new(std::iter::once(one)),
        None => {
            let mut master = Rng::new(env_u64("LITHIFY_POWER_CUT_SEED").unwrap_or(0x11f1));
            Box::new(std::iter::repeat_with(move || master.next_u64()))
        }
    };
    let mut done = 0u64;
    let mut scenarios = 0u64;
    let (mut snaps, mut cuts) = (0u64, 0u64);
    for seed in seeds {
        if done >= points {
            break;
        }
        scenarios += 1;
        let s = Scenario::new(seed);
        let mut rng = Rng::new(seed ^ 0xC0FFEE);
        let budget = (points - done).min(8);
        let (n, mutations) = snapshots(&s, budget, &mut rng);
        done += n;
        snaps += n;
        for _ in 0..8 {
            if done >= points {
                break;
            }
            cut_at(&s, 1 + rng.below(mutations + 1), &mut rng);
            done += 1;
            cuts += 1;
        }
        if env_u64("LITHIFY_POWER_CUT_SCENARIO").is_some() && done < points {
            // One scenario alone: spend the rest of the points on it.
            while done < points {
                cut_at(&s, 1 + rng.below(mutations + 1), &mut rng);
                done += 1;
                cuts += 1;
            }
        }
    }
    eprintln!(
        "power cuts: {done} crash points ({snaps} snapshots, {cuts} cuts before a mutation) in \
         {scenarios} scenarios, every one recovered a prefix holding every synced write"
    );
}

/// The checker itself: a state that is no prefix is caught, and the
/// prefix found is the right one.
#[test]
fn the_prefix_check_tells_prefixes_from_other_states() {
    let v = |s: &str| s.as_bytes().to_vec();
    let durable: Model = [(v("a"), v("1"))].into_iter().collect();
    let writes = [
        Write::Put(v("b"), v("2")),
        Write::DeleteRange(v("a"), v("b")),
        Write::Batch(vec![(v("c"), Some(v("3"))), (v("b"), None)]),
    ];
    let expect = Expect {
        durable: &durable,
        attempted: writes.iter().collect(),
    };
    let state =
        |pairs: &[(&str, &str)]| -> Model { pairs.iter().map(|(k, x)| (v(k), v(x))).collect() };
    assert_eq!(matching_prefix(&expect, &state(&[("a", "1")])), Some(0));
    assert_eq!(
        matching_prefix(&expect, &state(&[("a", "1"), ("b", "2")])),
        Some(1)
    );
    assert_eq!(matching_prefix(&expect, &state(&[("b", "2")])), Some(2));
    assert_eq!(matching_prefix(&expect, &state(&[("c", "3")])), Some(3));
    // Lost durable data, a write without the one before it, a value never
    // written, a key never written.
    assert_eq!(matching_prefix(&expect, &state(&[])), None);
    assert_eq!(
        matching_prefix(&expect, &state(&[("a", "1"), ("c", "3")])),
        None
    );
    assert_eq!(matching_prefix(&expect, &state(&[("a", "9")])), None);
    assert_eq!(
        matching_prefix(&expect, &state(&[("a", "1"), ("z", "1")])),
        None
    );
}
