//! Picker tests as data files: LSM shapes as text with the expected
//! targets, scores and picks beside them (`testdata/picker_*.txt`).
//!
//! Commands:
//! * `define [option=value...]`: the input is a version in the text form of
//!   `lithify-version`, plus `compacting: L<a>->L<b> <numbers...>
//!   [range=lo-hi]` lines (running compactions; the range defaults to their
//!   files') and a `marked: <numbers...>` line; prints the version back.
//! * `options option=value...`: changes options.
//! * `targets`: base level, unnecessary level, per-level targets and
//!   output file sizes.
//! * `scores`: scores in RocksDB's order and the pending-bytes estimate.
//! * `file-order L<n>`: the files of a level in `compaction_pri` order.
//! * `pick [now=] [threshold=] [register]`: `needs_compaction` and the pick
//!   (`register` records it as running).
//! * `marked [now=] [threshold=]`: the marked, bottommost, TTL and periodic
//!   lists.
//! * `manual [begin=] [end=] [bottommost=skip|filter|force|optimized]
//!   [change-level] [target=N] [filter]`: runs a `compact_range` plan,
//!   executing each step symbolically (a rewrite becomes one output file
//!   spanning its inputs, numbered by the version set), and prints the
//!   steps and the final version.
//! * `compact-files <n,n...> L<out> [allow-trivial-move]`: the
//!   `compact_files` compaction or its error.
//! * `refit L<n> [target=N]`: the `change_level` edit or its error.
//!
//! Options: `dynamic=bool base=SIZE mult=F trigger=N target-file=SIZE
//! file-mult=N max-compaction=SIZE pri=NAME ttl=S periodic=S levels=N
//! subcompactions=N per-level-compression=bool dynamic-file-size=bool`.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::Path;

use lithify_test_support::datadriven::{self, Case};
use std::sync::Arc;

use lithify_base::{InternalKey, InternalKeyComparator};
use lithify_compaction::{
    BottommostLevelCompaction, CompactFilesOptions, CompactRangeOptions, Compaction,
    CompactionPicker, CompactionPri, CompactionsInProgress, ManualCompaction, ManualStep,
    PickContext, exact_size,
};
use lithify_compaction_leveled::{
    LeveledOptions, LeveledPicker, MarkedFiles, estimated_compaction_needed_bytes,
};
use lithify_sstable::Compression;
use lithify_version::{
    DEFAULT_TABLE, FileMetadata, Version, VersionEdit, VersionSet, VersionSetOptions, text,
};
use lithify_vfs::MemFs;

struct State {
    opts: LeveledOptions,
    set: Option<VersionSet>,
    running: CompactionsInProgress,
    marked: HashSet<u64>,
}

impl State {
    fn new() -> Self {
        State {
            opts: LeveledOptions::default(),
            set: None,
            running: CompactionsInProgress::new(),
            marked: HashSet::new(),
        }
    }

    fn version(&self) -> Arc<Version> {
        self.set
            .as_ref()
            .expect("define first")
            .current(DEFAULT_TABLE)
            .expect("default table")
    }

    fn picker(&self) -> LeveledPicker {
        LeveledPicker::new(self.opts.clone()).expect("valid options")
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

fn apply_options(opts: &mut LeveledOptions, args: &[&str]) {
    for arg in args {
        let Some((k, v)) = arg.split_once('=') else {
            continue;
        };
        match k {
            "dynamic" => opts.level_compaction_dynamic_level_bytes = v == "true",
            "base" => opts.max_bytes_for_level_base = size(v),
            "mult" => opts.max_bytes_for_level_multiplier = v.parse().expect("mult"),
            "trigger" => opts.level0_file_num_compaction_trigger = v.parse().expect("trigger"),
            "target-file" => opts.target_file_size_base = size(v),
            "file-mult" => opts.target_file_size_multiplier = v.parse().expect("file-mult"),
            "max-compaction" => opts.max_compaction_bytes = size(v),
            "pri" => opts.compaction_pri = CompactionPri::from_name(v).expect("pri"),
            "ttl" => opts.ttl = v.parse().expect("ttl"),
            "periodic" => opts.periodic_compaction_seconds = v.parse().expect("periodic"),
            "levels" => opts.num_levels = v.parse().expect("levels"),
            "subcompactions" => opts.max_subcompactions = v.parse().expect("subcompactions"),
            "per-level-compression" => {
                opts.compression_per_level = if v == "true" {
                    vec![Compression::None, Compression::None, Compression::zstd()]
                } else {
                    Vec::new()
                }
            }
            "dynamic-file-size" => opts.level_compaction_dynamic_file_size = v == "true",
            _ => {}
        }
    }
}

fn level_arg(s: &str) -> usize {
    s.strip_prefix('L')
        .and_then(|n| n.parse().ok())
        .expect("level like L1")
}

/// A running compaction: start level, output level, files, explicit range.
type Running = (usize, usize, Vec<u64>, Option<(Vec<u8>, Vec<u8>)>);

fn define(state: &mut State, case: &Case) -> String {
    let mut opts = LeveledOptions::default()
        // Picker tests use small sizes; keep the TTL off unless asked.
        .ttl(0);
    apply_options(&mut opts, &case.args()[1..]);
    state.opts = opts;
    state.running = CompactionsInProgress::new();
    state.marked.clear();
    let mut shape = String::new();
    let mut running: Vec<Running> = Vec::new();
    for line in &case.input {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("compacting:") {
            let mut parts = rest.split_whitespace();
            let levels = parts.next().expect("L<a>->L<b>");
            let (a, b) = levels.split_once("->").expect("L<a>->L<b>");
            let mut files = Vec::new();
            let mut range = None;
            for p in parts {
                match p.strip_prefix("range=") {
                    Some(r) => {
                        let (lo, hi) = r.split_once('-').expect("range=lo-hi");
                        range = Some((lo.as_bytes().to_vec(), hi.as_bytes().to_vec()));
                    }
                    None => files.push(p.parse().expect("file number")),
                }
            }
            running.push((level_arg(a), level_arg(b), files, range));
        } else if let Some(rest) = t.strip_prefix("marked:") {
            state.marked = rest
                .split_whitespace()
                .map(|n| n.parse().expect("number"))
                .collect();
        } else {
            shape.push_str(line);
            shape.push('\n');
        }
    }
    let num_levels = state.opts.num_levels;
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
    for level in 0..num_levels {
        if let Some(c) = v.compact_cursor(level) {
            edit.compact_cursors.push((level, c.clone()));
        }
    }
    set.log_and_apply(vec![edit])
        .expect("apply defined version");
    state.set = Some(set);
    let v = state.version();
    for (a, b, files, range) in running {
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
        let (lo, hi) = range.unwrap_or((lo, hi));
        state.running.register_raw(a, b, files, lo, hi);
    }
    v.to_string()
}

fn ctx_for<'a>(state: &'a State, case: &Case) -> PickContext<'a> {
    let mut ctx = PickContext::new(&state.running);
    ctx.marked_files = &state.marked;
    if let Some(now) = case.arg("now") {
        ctx.now = now.parse().expect("now");
    }
    if let Some(t) = case.arg("threshold") {
        ctx.bottommost_mark_threshold = t.parse().expect("threshold");
    }
    ctx.has_compaction_filter = case.flag("filter");
    ctx
}

fn targets(state: &State) -> String {
    let v = state.version();
    let picker = state.picker();
    let t = picker.targets(&v);
    let mut out = String::new();
    writeln!(
        out,
        "base=L{} unnecessary={}",
        t.base_level(),
        t.lowest_unnecessary_level()
            .map_or("none".to_owned(), |l| format!("L{l}"))
    )
    .unwrap();
    for level in 1..v.num_levels() {
        writeln!(
            out,
            "L{level}: target={} file={}",
            exact_size(t.target(level)),
            exact_size(t.target_file_size(level))
        )
        .unwrap();
    }
    out
}

fn scores(state: &State, case: &Case) -> String {
    let v = state.version();
    let picker = state.picker();
    let ctx = ctx_for(state, case);
    let s = picker.scores(&v, &ctx);
    let mut out = String::new();
    for ls in s.sorted() {
        writeln!(out, "L{} {:.3}", ls.level, ls.score).unwrap();
    }
    writeln!(
        out,
        "pending={}",
        estimated_compaction_needed_bytes(&v, picker.options(), &picker.targets(&v))
    )
    .unwrap();
    out
}

fn pick(state: &mut State, case: &Case) -> String {
    let v = state.version();
    let picker = state.picker();
    let picked = {
        let ctx = ctx_for(state, case);
        let needs = picker.needs_compaction(&v, &ctx);
        (needs, picker.pick_auto(&v, &ctx))
    };
    let mut out = format!("needs_compaction={}\n", picked.0);
    match picked.1 {
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

fn file_order(state: &State, case: &Case) -> String {
    let v = state.version();
    let level = level_arg(case.args()[1]);
    let ctx = ctx_for(state, case);
    let order = lithify_compaction_leveled::picker::files_by_compaction_pri(
        &v,
        level,
        state.opts.compaction_pri,
        &lithify_compaction_leveled::CompensatedSizes::compute(&v),
        &state.marked,
        ctx.now,
        state.opts.ttl,
    );
    let files = v.files(level);
    let nums: Vec<String> = order
        .iter()
        .map(|&i| format!("{:06}", files[i].number))
        .collect();
    format!("{}\n", nums.join(" "))
}

fn marked(state: &State, case: &Case) -> String {
    let v = state.version();
    let ctx = ctx_for(state, case);
    let m = MarkedFiles::compute(&v, &state.opts, &ctx);
    let list = |l: &[(usize, Arc<FileMetadata>)]| {
        if l.is_empty() {
            "none".to_owned()
        } else {
            l.iter()
                .map(|(level, f)| format!("L{level}:{:06}", f.number))
                .collect::<Vec<_>>()
                .join(" ")
        }
    };
    format!(
        "marked: {}\nbottommost: {}\nttl: {}\nperiodic: {}\n",
        list(&m.marked),
        list(&m.bottommost),
        list(&m.expired_ttl),
        list(&m.periodic)
    )
}

/// Applies a compaction symbolically: trivial moves move the files; a
/// rewrite replaces its inputs by one file spanning them.
fn execute(state: &mut State, c: &Compaction) -> String {
    let v = state.version();
    let edit = if c.trivial_move {
        c.trivial_move_edit()
    } else {
        let cmp = v.comparator();
        let mut lo: Option<InternalKey> = None;
        let mut hi: Option<InternalKey> = None;
        let (mut size, mut smallest_seq, mut largest_seq) = (0, u64::MAX, 0);
        for (_, f) in c.input_files() {
            use lithify_base::Comparator as _;
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
            smallest_seq = smallest_seq.min(f.smallest_seqno);
            largest_seq = largest_seq.max(f.largest_seqno);
        }
        let number = state.set.as_ref().expect("define first").new_file_number();
        let mut out = FileMetadata::new(number, size, lo.expect("inputs"), hi.expect("inputs"));
        out.smallest_seqno = smallest_seq;
        out.largest_seqno = largest_seq;
        let mut edit = c.input_deletion_edit();
        edit.add_file(c.output_level, out);
        edit
    };
    match state
        .set
        .as_ref()
        .expect("define first")
        .log_and_apply(vec![edit])
    {
        Ok(()) => String::new(),
        Err(e) => format!("error applying: {e}\n"),
    }
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
        .change_level(case.flag("change-level"))
        .target_level(case.arg("target").map(|t| t.parse().expect("target")));
    let next_file = state.set.as_ref().expect("define first").next_file_number();
    let mut plan = ManualCompaction::new(
        case.arg("begin").map(|b| b.as_bytes().to_vec()),
        case.arg("end").map(|e| e.as_bytes().to_vec()),
        options,
        next_file,
    );
    let picker = state.picker();
    let mut out = String::new();
    for _ in 0..50 {
        let v = state.version();
        let step = {
            let ctx = ctx_for(state, case);
            plan.next(&picker, &v, &ctx)
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
                if let Err(e) = state.set.as_ref().expect("set").log_and_apply(vec![edit]) {
                    writeln!(out, "error applying: {e}").unwrap();
                }
            }
        }
    }
    write!(out, "{}", state.version()).unwrap();
    out
}

fn compact_files(state: &State, case: &Case) -> String {
    let args = case.args();
    let files: Vec<u64> = args[1]
        .split(',')
        .map(|n| n.parse().expect("file number"))
        .collect();
    let output = level_arg(args[2]);
    let v = state.version();
    let ctx = ctx_for(state, case);
    let opts = CompactFilesOptions::default().allow_trivial_move(case.flag("allow-trivial-move"));
    match state
        .picker()
        .compact_files(&v, &ctx, &files, output, &opts)
    {
        Ok(c) => format!("{c}\n"),
        Err(e) => format!("error: {e}\n"),
    }
}

fn refit(state: &State, case: &Case) -> String {
    let level = level_arg(case.args()[1]);
    let target = case.arg("target").map(|t| t.parse().expect("target"));
    let v = state.version();
    let ctx = ctx_for(state, case);
    match lithify_compaction_leveled::picker::refit_level(&v, &state.picker(), &ctx, level, target)
    {
        Ok(edit) if edit.is_empty() => "nothing to move\n".to_owned(),
        Ok(edit) => edit.to_string(),
        Err(e) => format!("error: {e}\n"),
    }
}

fn run(state: &mut State, case: &Case) -> String {
    match case.args()[0] {
        "define" => define(state, case),
        "options" => {
            let args = case.args();
            apply_options(&mut state.opts, &args[1..]);
            "ok\n".to_owned()
        }
        "targets" => targets(state),
        "scores" => scores(state, case),
        "pick" => pick(state, case),
        "file-order" => file_order(state, case),
        "marked" => marked(state, case),
        "manual" => manual(state, case),
        "compact-files" => compact_files(state, case),
        "refit" => refit(state, case),
        other => panic!("unknown command {other}"),
    }
}

fn run_file(name: &str) {
    let mut state = State::new();
    datadriven::run_file(&Path::new(env!("CARGO_MANIFEST_DIR")).join(name), |case| {
        run(&mut state, case)
    });
}

#[test]
fn targets_and_scores() {
    run_file("testdata/picker_targets.txt");
}

#[test]
fn level0() {
    run_file("testdata/picker_l0.txt");
}

#[test]
fn levels_and_file_order() {
    run_file("testdata/picker_levels.txt");
}

#[test]
fn marked_ttl_periodic() {
    run_file("testdata/picker_marked.txt");
}

#[test]
fn manual_compaction() {
    run_file("testdata/picker_manual.txt");
}
