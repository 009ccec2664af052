//! Picker tests of the two-tier strategies as data files: LSM shapes as
//! text in, the choice out (`testdata/strategy_*.txt`; `REWRITE=1`
//! regenerates).
//!
//! Commands:
//! * `define strategy=NAME [option=value...]`: the input is a version in
//!   the text form of `lithify-version`, plus `compacting: L<a>->L<b>
//!   <numbers...>` lines (running compactions); prints the version back.
//! * `strategy NAME [option=value...]`: switches the table's strategy (the
//!   live switch: the version stays as it is).
//! * `pick [register]`: `needs_compaction`, then the pick (`register`
//!   records it as running).
//! * `flush LO HI [register]`: the flush plan for memtables holding user
//!   keys in `[LO, HI]`.
//! * `stripes`: stripe boundaries and each stripe's L0 tables, bytes and
//!   score.
//! * `scores`: level scores, pending bytes, whether L0 stalls apply.
//! * `run [max=N]`: picks and applies compactions symbolically until
//!   nothing is left (a rewrite becomes one output file per run of inputs
//!   between output boundaries), printing each; then the version.
//! * `manual [begin=K] [end=K] [bottommost=skip|filter|force|optimized]`:
//!   a `compact_range` plan, executed symbolically, then the version.
//! * `reads KEY=N... [writes=N]`: the table's read heat gets `N` sampled
//!   reads of each `KEY` and `N` writes; every pick sees it (`define`
//!   starts with none).
//!
//! Strategy names are `CompactionStrategy::parse`'s; options:
//! `ratio=F stripes=N minor=POLICY max-l0=N target-file=SIZE heat=off
//! levels=N`.

use std::fmt::Write as _;
use std::path::Path;

use lithify_test_support::datadriven::{self, Case};
use std::sync::Arc;

use lithify_base::{Comparator as _, InternalKey, InternalKeyComparator};
use lithify_compaction::{
    BottommostLevelCompaction, CompactRangeOptions, Compaction, CompactionPicker,
    CompactionsInProgress, ManualCompaction, ManualStep, PickContext, READ_HEAT_SAMPLE_EVERY,
    ReadHeat, exact_size,
};
use lithify_compaction_strategy::CompactionStrategy;
use lithify_compaction_tiered::{MinorPolicy, TwoTierPicker};
use lithify_version::{
    DEFAULT_TABLE, FileMetadata, Version, VersionEdit, VersionSet, VersionSetOptions, text,
};
use lithify_vfs::MemFs;

struct State {
    strategy: CompactionStrategy,
    picker: Option<Arc<dyn CompactionPicker>>,
    set: Option<VersionSet>,
    running: CompactionsInProgress,
    heat: ReadHeat,
}

impl State {
    /// What the picker sees besides the version.
    fn ctx(&self) -> PickContext<'_> {
        PickContext::new(&self.running).with_read_heat(&self.heat)
    }

    fn version(&self) -> Arc<Version> {
        self.set
            .as_ref()
            .expect("define first")
            .current(DEFAULT_TABLE)
            .expect("default table")
    }

    fn picker(&self) -> &dyn CompactionPicker {
        self.picker.as_deref().expect("define first")
    }

    fn set(&self) -> &VersionSet {
        self.set.as_ref().expect("define first")
    }
}

fn size(s: &str) -> u64 {
    let (digits, mult) = match s.as_bytes().last() {
        Some(b'K') => (&s[..s.len() - 1], 1u64 << 10),
        Some(b'M') => (&s[..s.len() - 1], 1 << 20),
        Some(b'G') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    digits.parse::<u64>().expect("size") * mult
}

fn strategy_from(args: &[&str]) -> (CompactionStrategy, usize) {
    let mut strategy = None;
    let mut levels = 7;
    let mut rest = Vec::new();
    for a in args {
        match a.split_once('=') {
            Some(("strategy", v)) => strategy = Some(v),
            Some(("levels", v)) => levels = v.parse().expect("levels"),
            Some(_) => rest.push(*a),
            None => strategy = strategy.or(Some(a)),
        }
    }
    let name = strategy.expect("a strategy");
    let mut s = CompactionStrategy::parse(name).unwrap_or_else(|| panic!("strategy {name}"));
    for a in rest {
        let (k, v) = a.split_once('=').expect("option=value");
        match &mut s {
            CompactionStrategy::TwoTier(o) => match k {
                "ratio" => o.major_ratio = v.parse().expect("ratio"),
                "stripes" => o.stripes = v.parse().expect("stripes"),
                "minor" => o.minor = MinorPolicy::parse(v).expect("minor policy"),
                "max-l0" => o.max_l0_tables = v.parse().expect("max-l0"),
                "target-file" => o.target_file_size = size(v),
                "heat" => o.merge_by_read_heat = v != "off",
                _ => panic!("unknown two-tier option {k}"),
            },
            CompactionStrategy::MajorOnly(o) => match k {
                "target-file" => o.target_file_size = size(v),
                _ => panic!("unknown major-only option {k}"),
            },
            CompactionStrategy::Leveled(o) => match k {
                "base" => o.max_bytes_for_level_base = size(v),
                "target-file" => o.target_file_size_base = size(v),
                "trigger" => o.level0_file_num_compaction_trigger = v.parse().expect("trigger"),
                "dynamic" => o.level_compaction_dynamic_level_bytes = v == "true",
                _ => panic!("unknown leveled option {k}"),
            },
            CompactionStrategy::Adaptive(_) => panic!("adaptive has no picker options here"),
        }
    }
    if let CompactionStrategy::Leveled(o) = &mut s {
        o.num_levels = levels;
        o.ttl = 0;
    }
    (s, levels)
}

fn define(state: &mut State, case: &Case) -> String {
    let (strategy, num_levels) = strategy_from(&case.args()[1..]);
    state.picker = Some(strategy.picker().expect("valid options"));
    state.strategy = strategy;
    state.running = CompactionsInProgress::new();
    state.heat = ReadHeat::new();
    let mut shape = String::new();
    let mut running: Vec<(usize, usize, Vec<u64>)> = Vec::new();
    for line in &case.input {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("compacting:") {
            let mut parts = rest.split_whitespace();
            let (a, b) = parts
                .next()
                .and_then(|l| l.split_once("->"))
                .expect("L<a>->L<b>");
            let level = |s: &str| s.trim_start_matches('L').parse::<usize>().expect("level");
            let files = parts.map(|p| p.parse().expect("file number")).collect();
            running.push((level(a), level(b), files));
        } else {
            shape.push_str(line);
            shape.push('\n');
        }
    }
    let v = match text::parse_version(
        &shape,
        DEFAULT_TABLE,
        InternalKeyComparator::bytewise(),
        num_levels,
    ) {
        Ok(v) => v,
        Err(e) => return format!("error: {e}\n"),
    };
    let set = VersionSet::create(
        Arc::new(MemFs::new()),
        Path::new("/db"),
        VersionSetOptions::default().num_levels(num_levels),
    )
    .expect("create version set");
    let mut edit = VersionEdit::new(DEFAULT_TABLE);
    for (level, f) in v.all_files() {
        edit.add_file(level, (**f).clone());
        set.mark_file_number_used(f.number);
    }
    set.log_and_apply(vec![edit]).expect("apply");
    state.set = Some(set);
    let v = state.version();
    for (a, b, files) in running {
        let metas: Vec<&Arc<FileMetadata>> = v
            .all_files()
            .filter(|(_, f)| files.contains(&f.number))
            .map(|(_, f)| f)
            .collect();
        let lo = metas
            .iter()
            .map(|f| f.smallest_user_key().to_vec())
            .min()
            .unwrap_or_default();
        let hi = metas
            .iter()
            .map(|f| f.largest_user_key().to_vec())
            .max()
            .unwrap_or_default();
        state.running.register_raw(a, b, files, lo, hi);
    }
    v.to_string()
}

fn pick(state: &mut State, case: &Case) -> String {
    let v = state.version();
    let (needs, picked) = {
        let ctx = state.ctx();
        (
            state.picker().needs_compaction(&v, &ctx),
            state.picker().pick_auto(&v, &ctx),
        )
    };
    let mut out = format!("needs_compaction={needs}\n");
    match picked {
        None => out.push_str("nothing to compact\n"),
        Some(c) => {
            writeln!(out, "{c}").unwrap();
            if case.flag("register") {
                state.running.register(&c, v.comparator());
            }
        }
    }
    out
}

fn flush(state: &mut State, case: &Case) -> String {
    let args = case.args();
    let (lo, hi) = (args[1].as_bytes(), args[2].as_bytes());
    let v = state.version();
    let plan = {
        let ctx = state.ctx();
        state.picker().pick_flush(&v, &ctx, lo, hi)
    };
    match plan {
        None => "plain flush to L0\n".to_owned(),
        Some(c) => {
            if case.flag("register") {
                state.running.register(&c, v.comparator());
            }
            format!("{c}\n")
        }
    }
}

fn stripes(state: &State) -> String {
    let CompactionStrategy::TwoTier(o) = &state.strategy else {
        return "not a two-tier strategy\n".to_owned();
    };
    let picker = TwoTierPicker::new(o.clone()).expect("options");
    let v = state.version();
    let boundaries = picker.stripes(&v);
    let mut out = format!(
        "boundaries: {}\n",
        boundaries
            .iter()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    );
    for s in picker.stripe_scores(&v, &boundaries) {
        let l0: Vec<String> = s.l0.iter().map(|f| format!("{:06}", f.number)).collect();
        writeln!(
            out,
            "stripe {}: L0 [{}] l0={} major={} score={:.2}",
            s.stripe,
            l0.join(" "),
            exact_size(s.l0_bytes),
            exact_size(s.major_bytes),
            s.score
        )
        .unwrap();
    }
    out
}

fn scores(state: &State) -> String {
    let v = state.version();
    let ctx = state.ctx();
    let picker = state.picker();
    let mut out = String::new();
    for s in picker.level_scores(&v, &ctx) {
        if s.score > 0.0 {
            writeln!(out, "L{} {:.2}", s.level, s.score).unwrap();
        }
    }
    writeln!(
        out,
        "pending={} base=L{} l0-stalls={}",
        picker.estimated_compaction_needed_bytes(&v),
        picker.base_level(&v),
        picker.l0_count_stalls_writes()
    )
    .unwrap();
    out
}

/// Applies `c` symbolically: a trivial move moves its files; a rewrite
/// writes one file per run of inputs between output boundaries (a
/// boundary inside an input file does not cut), each spanning its run.
fn execute(state: &State, c: &Compaction) -> String {
    let v = state.version();
    let cmp = v.comparator().clone();
    let edit = if c.trivial_move {
        c.trivial_move_edit()
    } else {
        let mut files: Vec<&Arc<FileMetadata>> = c.input_files().map(|(_, f)| f).collect();
        files.sort_by(|a, b| cmp.compare(a.smallest.encoded(), b.smallest.encoded()));
        let cuts: Vec<&Vec<u8>> = c
            .output_boundaries
            .iter()
            .filter(|b| {
                !files.iter().any(|f| {
                    cmp.compare_user(f.smallest_user_key(), b).is_lt()
                        && cmp.compare_user(f.largest_user_key(), b).is_ge()
                })
            })
            .collect();
        let mut groups: Vec<Vec<&Arc<FileMetadata>>> = Vec::new();
        let mut group_of_last = usize::MAX;
        for f in files {
            let g = cuts.partition_point(|b| cmp.compare_user(b, f.smallest_user_key()).is_le());
            if g != group_of_last {
                groups.push(Vec::new());
                group_of_last = g;
            }
            groups.last_mut().expect("pushed").push(f);
        }
        let mut edit = c.input_deletion_edit();
        for group in groups {
            let mut lo: Option<InternalKey> = None;
            let mut hi: Option<InternalKey> = None;
            let (mut size, mut s_lo, mut s_hi) = (0, u64::MAX, 0);
            for f in group {
                if lo
                    .as_ref()
                    .is_none_or(|l| cmp.compare(f.smallest.encoded(), l.encoded()).is_lt())
                {
                    lo = Some(f.smallest.clone());
                }
                if hi
                    .as_ref()
                    .is_none_or(|h| cmp.compare(f.largest.encoded(), h.encoded()).is_gt())
                {
                    hi = Some(f.largest.clone());
                }
                size += f.size;
                s_lo = s_lo.min(f.smallest_seqno);
                s_hi = s_hi.max(f.largest_seqno);
            }
            let number = state.set().new_file_number();
            let mut out = FileMetadata::new(number, size, lo.expect("inputs"), hi.expect("inputs"));
            out.smallest_seqno = s_lo;
            out.largest_seqno = s_hi;
            edit.add_file(c.output_level, out);
        }
        edit
    };
    match state.set().log_and_apply(vec![edit]) {
        Ok(()) => String::new(),
        Err(e) => format!("error applying: {e}\n"),
    }
}

fn run(state: &mut State, case: &Case) -> String {
    let max: usize = case.arg("max").map_or(20, |m| m.parse().expect("max"));
    let mut out = String::new();
    for _ in 0..max {
        let v = state.version();
        let picked = {
            let ctx = state.ctx();
            state.picker().pick_auto(&v, &ctx)
        };
        let Some(c) = picked else {
            writeln!(out, "idle").unwrap();
            break;
        };
        writeln!(out, "{c}").unwrap();
        out.push_str(&execute(state, &c));
    }
    write!(out, "{}", state.version()).unwrap();
    out
}

fn manual(state: &mut State, case: &Case) -> String {
    let options = CompactRangeOptions::default()
        .bottommost_level_compaction(match case.arg("bottommost") {
            None | Some("filter") => BottommostLevelCompaction::IfHaveCompactionFilter,
            Some("skip") => BottommostLevelCompaction::Skip,
            Some("force") => BottommostLevelCompaction::Force,
            Some("optimized") => BottommostLevelCompaction::ForceOptimized,
            Some(other) => panic!("bottommost={other}"),
        })
        .change_level(case.flag("change-level"));
    let mut plan = ManualCompaction::new(
        case.arg("begin").map(|b| b.as_bytes().to_vec()),
        case.arg("end").map(|e| e.as_bytes().to_vec()),
        options,
        state.set().next_file_number(),
    );
    let mut out = String::new();
    for _ in 0..20 {
        let v = state.version();
        let step = {
            let ctx = state.ctx();
            plan.next(state.picker(), &v, &ctx)
        };
        match step {
            Err(e) => {
                writeln!(out, "error: {e}").unwrap();
                break;
            }
            Ok(ManualStep::Done) => {
                writeln!(out, "done").unwrap();
                break;
            }
            Ok(ManualStep::Compact(c)) => {
                writeln!(out, "{c}").unwrap();
                out.push_str(&execute(state, &c));
            }
            Ok(ManualStep::Refit(edit)) => {
                write!(out, "refit {edit}").unwrap();
            }
        }
    }
    write!(out, "{}", state.version()).unwrap();
    out
}

/// `reads KEY=N... [writes=N]`: sampled reads and writes for the heat.
fn reads(state: &mut State, case: &Case) -> String {
    let mut sampled = 0u64;
    for a in &case.args()[1..] {
        let (k, n) = a.split_once('=').expect("KEY=N");
        let n: u64 = n.parse().expect("a count");
        if k == "writes" {
            state.heat.record_writes(n);
            continue;
        }
        for _ in 0..n {
            state
                .heat
                .record_read(sampled * READ_HEAT_SAMPLE_EVERY, k.as_bytes());
            sampled += 1;
        }
    }
    let v = state.version();
    match state.heat.stripe_heat(v.comparator(), &[]) {
        Some(h) => format!("samples={} read-share={:.2}\n", h.samples, h.read_share),
        None => "no samples\n".to_owned(),
    }
}

fn dispatch(state: &mut State, case: &Case) -> String {
    match case.args()[0] {
        "define" => define(state, case),
        "strategy" => {
            let (s, _) = strategy_from(&case.args()[1..]);
            state.picker = Some(s.picker().expect("valid options"));
            let name = s.to_string();
            state.strategy = s;
            format!("{name}\n")
        }
        "pick" => pick(state, case),
        "flush" => flush(state, case),
        "stripes" => stripes(state),
        "scores" => scores(state),
        "run" => run(state, case),
        "manual" => manual(state, case),
        "reads" => reads(state, case),
        other => panic!("unknown command {other}"),
    }
}

fn run_file(name: &str) {
    let mut state = State {
        strategy: CompactionStrategy::default(),
        picker: None,
        set: None,
        running: CompactionsInProgress::new(),
        heat: ReadHeat::new(),
    };
    datadriven::run_file(&Path::new(env!("CARGO_MANIFEST_DIR")).join(name), |case| {
        dispatch(&mut state, case)
    });
}

#[test]
fn major_only() {
    run_file("testdata/strategy_major_only.txt");
}

#[test]
fn two_tier() {
    run_file("testdata/strategy_two_tier.txt");
}

#[test]
fn striped() {
    run_file("testdata/strategy_striped.txt");
}

#[test]
fn switching() {
    run_file("testdata/strategy_switch.txt");
}
