//! The compaction iterator: data-driven cases from `key#seq,KIND` streams
//! (`testdata/compaction_iter.txt`), and a proptest comparing what every
//! snapshot sees before and after against a naive model.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use lithify_base::keyspan::RangeTombstone;
use lithify_base::{
    InternalKey, InternalKeyComparator, MergeFailureScope, MergeOperator, SeqNo, ValueKind,
    VecIterator,
};
use lithify_compaction::DeeperLevels;
use lithify_compaction::iter::{
    CompactionFilter, CompactionIterOptions, CompactionIterator, FilterDecision,
    RangeDelAggregator, Snapshots,
};
use lithify_test_support::datadriven::{self, Case};
use lithify_version::FileMetadata;
use proptest::prelude::*;

/// A filter driven by rules: `remove:KEY`, `change:KEY=VALUE`,
/// `skip:KEY-UNTIL`, separated by `;`. Rules prefixed `op-` apply to merge
/// operands, matched by operand (`op-remove:OPERAND`, `op-change:OPERAND=NEW`,
/// `op-skip:OPERAND-UNTIL`).
struct RuleFilter {
    rules: Vec<(String, FilterDecision)>,
    operand_rules: Vec<(String, FilterDecision)>,
}

impl RuleFilter {
    fn parse(spec: &str) -> Self {
        let (operand_rules, rules): (Vec<&str>, Vec<&str>) =
            spec.split(';').partition(|r| r.starts_with("op-"));
        RuleFilter {
            rules: Self::parse_rules(rules.into_iter()),
            operand_rules: Self::parse_rules(operand_rules.into_iter().map(|r| &r[3..])),
        }
    }

    fn parse_rules<'a>(rules: impl Iterator<Item = &'a str>) -> Vec<(String, FilterDecision)> {
        rules
            .map(|r| {
                let (op, arg) = r.split_once(':').expect("rule op:arg");
                match op {
                    "remove" => (arg.to_owned(), FilterDecision::Remove),
                    "change" => {
                        let (k, v) = arg.split_once('=').expect("change:KEY=VALUE");
                        (
                            k.to_owned(),
                            FilterDecision::ChangeValue(v.as_bytes().to_vec()),
                        )
                    }
                    "skip" => {
                        let (k, until) = arg.split_once('-').expect("skip:KEY-UNTIL");
                        (
                            k.to_owned(),
                            FilterDecision::RemoveAndSkipUntil(until.as_bytes().to_vec()),
                        )
                    }
                    other => panic!("unknown filter rule {other}"),
                }
            })
            .collect()
    }
}

impl CompactionFilter for RuleFilter {
    fn name(&self) -> &str {
        "rules"
    }

    fn filter(&self, _level: usize, key: &[u8], _value: &[u8]) -> FilterDecision {
        self.rules
            .iter()
            .find(|(k, _)| k.as_bytes() == key)
            .map_or(FilterDecision::Keep, |(_, d)| d.clone())
    }

    fn filter_merge_operand(&self, _level: usize, _key: &[u8], operand: &[u8]) -> FilterDecision {
        self.operand_rules
            .iter()
            .find(|(o, _)| o.as_bytes() == operand)
            .map_or(FilterDecision::Keep, |(_, d)| d.clone())
    }
}

/// String append joined with `+` and no partial merge: operands that
/// cannot meet their value stay apart.
struct ConcatNoPartial;

impl MergeOperator for ConcatNoPartial {
    fn name(&self) -> &str {
        "concat-no-partial"
    }

    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>> {
        let parts: Vec<&[u8]> = existing
            .into_iter()
            .chain(operands.iter().copied())
            .collect();
        Some(parts.join(&b'+'))
    }
}

/// `+`-joined like [`ConcatNoPartial`], but cannot merge the operand `bad`,
/// failing with its scope.
struct RefuseBad(MergeFailureScope);

impl MergeOperator for RefuseBad {
    fn name(&self) -> &str {
        "refuse-bad"
    }

    fn full_merge(
        &self,
        key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Option<Vec<u8>> {
        if operands.contains(&&b"bad"[..]) {
            return None;
        }
        ConcatNoPartial.full_merge(key, existing, operands)
    }

    fn failure_scope(&self) -> MergeFailureScope {
        self.0
    }
}

/// The operator named by a case's `merge=` argument.
fn merge_operator(name: &str) -> Arc<dyn MergeOperator> {
    match name {
        "concat-no-partial" => Arc::new(ConcatNoPartial),
        "refuse-bad" => Arc::new(RefuseBad(MergeFailureScope::MustMerge)),
        "refuse-bad-try" => Arc::new(RefuseBad(MergeFailureScope::TryMerge)),
        other => lithify_base::merge::built_in(other).expect("a built-in merge operator"),
    }
}

fn deeper_file(lo: &str, hi: &str) -> Arc<FileMetadata> {
    Arc::new(FileMetadata::new(
        1,
        1,
        InternalKey::new(lo.as_bytes(), 1, ValueKind::Put),
        InternalKey::new(hi.as_bytes(), 1, ValueKind::Put),
    ))
}

/// Parses `key#seq,KIND[:value]` lines into points and tombstones.
/// Encoded internal keys and values.
type Points = Vec<(Vec<u8>, Vec<u8>)>;

/// A value of the text form: `\xNN` is the byte NN.
fn unescape_value(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && bytes.get(i + 1) == Some(&b'x') && i + 4 <= bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 2..i + 4]).expect("hex digits");
            out.push(u8::from_str_radix(hex, 16).expect("\\xNN"));
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

/// The text form of a value: printable ASCII as is, other bytes `\xNN`.
fn escape_value(value: &[u8]) -> String {
    let mut out = String::new();
    for &b in value {
        if b.is_ascii_graphic() && b != b'\\' || b == b' ' {
            out.push(b as char);
        } else {
            write!(out, "\\x{b:02x}").unwrap();
        }
    }
    out
}

fn parse_stream(lines: &[String]) -> (Points, Vec<RangeTombstone>) {
    let mut points = Vec::new();
    let mut tombstones = Vec::new();
    for line in lines {
        let line = line.trim();
        let comma = line.find(',').expect("key#seq,KIND");
        let (key_text, value) = match line[comma..].find(':') {
            Some(i) => (&line[..comma + i], &line[comma + i + 1..]),
            None => (line, ""),
        };
        let key = InternalKey::from_text(key_text).expect("internal key");
        if key.parsed().map(|p| p.kind) == Some(ValueKind::RangeDelete) {
            tombstones.push(RangeTombstone::new(
                Bytes::copy_from_slice(key.user_key()),
                Bytes::copy_from_slice(value.as_bytes()),
                key.seqno(),
            ));
        } else {
            points.push((key.into_encoded(), unescape_value(value)));
        }
    }
    (points, tombstones)
}

fn run_iter(case: &Case) -> String {
    let cmp = InternalKeyComparator::bytewise();
    let (points, tombstones) = parse_stream(&case.input);
    let snapshots = Snapshots::new(
        case.arg("snapshots")
            .map(|s| s.split(',').map(|n| n.parse().expect("snapshot")).collect())
            .unwrap_or_default(),
    );
    let bottommost = case.flag("bottommost");
    let deeper = if bottommost {
        DeeperLevels::bottommost()
    } else if let Some(spec) = case.arg("deeper") {
        let files = spec
            .split(',')
            .filter(|r| !r.is_empty())
            .map(|r| {
                let (lo, hi) = r.split_once('-').expect("deeper=lo-hi,...");
                deeper_file(lo, hi)
            })
            .collect();
        DeeperLevels::files(vec![files])
    } else {
        DeeperLevels::unknown()
    };
    let filter = case.arg("filter").map(RuleFilter::parse);
    let merge = case.arg("merge").map(merge_operator);
    let agg = RangeDelAggregator::new(cmp.clone(), tombstones, snapshots.clone());
    let input = VecIterator::new(cmp.clone(), points);
    let mut it = CompactionIterator::new(
        input,
        cmp,
        CompactionIterOptions::for_flush(snapshots, Some(&agg))
            .deeper(deeper)
            .filter(filter.as_ref().map(|f| f as &dyn CompactionFilter))
            .filter_level(1)
            .upper_bound(case.arg("upper").map(|u| u.as_bytes().to_vec()))
            .origin("test input".to_owned())
            .merge_operator(merge.as_deref())
            .enforce_single_delete_contracts(!case.flag("lax-single-delete")),
    );
    let mut out = String::new();
    let positioned = match case.arg("lower") {
        Some(l) => it.seek(l.as_bytes()),
        None => it.seek_to_first(),
    };
    if let Err(e) = positioned {
        return format!("error: {e}\n");
    }
    while it.valid() {
        let key = InternalKey::from_encoded(it.key().to_vec()).expect("output key");
        if it.value().is_empty() {
            writeln!(out, "{key}").unwrap();
        } else {
            writeln!(out, "{key}:{}", escape_value(it.value())).unwrap();
        }
        if let Err(e) = it.next() {
            writeln!(out, "error: {e}").unwrap();
            return out;
        }
    }
    let kept = agg.tombstones_in(None, None, bottommost);
    if !kept.is_empty() {
        let list: Vec<String> = kept.iter().map(|t| t.to_string()).collect();
        writeln!(out, "tombstones: {}", list.join(" ")).unwrap();
    }
    let s = it.stats();
    write!(
        out,
        "stats: in={} out={} hidden={} obsolete={} rangedel={} filter={}",
        s.records_in,
        s.records_out,
        s.dropped_hidden,
        s.dropped_obsolete,
        s.dropped_range_del,
        s.dropped_filter
    )
    .unwrap();
    for (name, n) in [
        ("merged", s.dropped_merged),
        ("full-merges", s.full_merges),
        ("partial-merges", s.partial_merges),
        ("single-delete", s.dropped_single_delete),
        ("single-delete-mismatch", s.single_delete_mismatch),
        ("merge-failures-kept", s.merge_failures_kept),
    ] {
        if n > 0 {
            write!(out, " {name}={n}").unwrap();
        }
    }
    if s.filter_removed + s.filter_changed > 0 {
        write!(
            out,
            " filter-removed={} filter-changed={}",
            s.filter_removed, s.filter_changed
        )
        .unwrap();
    }
    writeln!(out).unwrap();
    assert_eq!(
        s.records_in,
        s.records_out + s.dropped(),
        "every record accounted for"
    );
    out
}

#[test]
fn compaction_iter_datadriven() {
    datadriven::run_file(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/compaction_iter.txt"),
        |case| match case.args()[0] {
            "iter" => run_iter(case),
            other => panic!("unknown command {other}"),
        },
    );
}

#[test]
fn corrupt_key_is_an_error() {
    let cmp = InternalKeyComparator::bytewise();
    let mut bad = InternalKey::new(b"k", 3, ValueKind::Put).into_encoded();
    let n = bad.len();
    bad[n - 8] = 0x42; // unknown kind
    let input = VecIterator::new(cmp.clone(), vec![(bad, b"v".to_vec())]);
    let mut it = CompactionIterator::new(
        input,
        cmp,
        CompactionIterOptions::for_flush(Snapshots::none(), None),
    );
    let err = it.seek_to_first().unwrap_err();
    assert!(lithify_base::Classify::is_corruption(&err), "{err}");
    assert!(err.to_string().contains("flush input"), "{err}");
}

// ---------------------------------------------------------------------
// Model test.

/// One version in the model.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Version {
    Put(Vec<u8>),
    Delete,
    Merge(Vec<u8>),
}

/// The versions of one key by seqno.
type Versions = BTreeMap<SeqNo, Version>;

/// What a reader at `snapshot` sees for every key, given point versions
/// and range tombstones, resolving merge operands with `op`.
fn visible(
    points: &BTreeMap<Vec<u8>, Versions>,
    tombstones: &[RangeTombstone],
    snapshot: SeqNo,
    op: &dyn MergeOperator,
) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut out = BTreeMap::new();
    for (key, versions) in points {
        let deleted_by_range = |seq: SeqNo| {
            tombstones.iter().any(|t| {
                t.seqno <= snapshot
                    && t.seqno > seq
                    && t.start.as_ref() <= key.as_slice()
                    && key.as_slice() < t.end.as_ref()
            })
        };
        // Operands newest first, down to the version they apply to.
        let mut operands: Vec<&[u8]> = Vec::new();
        let mut base: Option<&[u8]> = None;
        let mut seen = false;
        for (&seq, version) in versions.range(..=snapshot).rev() {
            seen = true;
            if deleted_by_range(seq) {
                break;
            }
            match version {
                Version::Put(v) => {
                    base = Some(v);
                    break;
                }
                Version::Delete => break,
                Version::Merge(o) => operands.push(o),
            }
        }
        if !seen {
            continue;
        }
        if operands.is_empty() {
            if let Some(v) = base {
                out.insert(key.clone(), v.to_vec());
            }
            continue;
        }
        operands.reverse();
        let merged = op.full_merge(key, base, &operands).expect("merge");
        out.insert(key.clone(), merged);
    }
    out
}

#[derive(Debug, Clone)]
struct Scenario {
    /// (key, seqno, kind: 0 put / 1 delete / 2 merge, value) of the
    /// compaction input.
    entries: Vec<(u8, SeqNo, u8, u8)>,
    /// (start, end, seqno).
    tombstones: Vec<(u8, u8, SeqNo)>,
    /// Older data below the output level: (key, is_put).
    deeper: Vec<(u8, bool)>,
    snapshots: Vec<SeqNo>,
    mode: u8,
    /// Whether the operator has a partial merge.
    partial: bool,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        proptest::collection::vec((0u8..8, 0u8..3, any::<u8>()), 0..40),
        proptest::collection::vec((0u8..8, 1u8..4, 0usize..40), 0..4),
        proptest::collection::vec((0u8..8, any::<bool>()), 0..6),
        proptest::collection::vec(0u64..50, 0..4),
        0u8..3,
        any::<bool>(),
    )
        .prop_map(|(raw, raw_tombstones, deeper, snaps, mode, partial)| {
            // Seqnos 10.. in input order, so every version is distinct and
            // newer than the deeper data (seqnos 1..9).
            let entries: Vec<_> = raw
                .into_iter()
                .enumerate()
                .map(|(i, (k, kind, v))| (k, 10 + i as SeqNo, kind, v))
                .collect();
            let tombstones = raw_tombstones
                .into_iter()
                .map(|(start, len, at)| (start, start + len, 10 + at as SeqNo))
                .collect();
            Scenario {
                entries,
                tombstones,
                deeper,
                snapshots: snaps,
                mode,
                partial,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Every snapshot (and the tip) sees the same data before and after
    /// the compaction, counting the deeper levels beneath it; at the
    /// bottommost level nothing lies beneath. Modes: 0 = flush (nothing
    /// known below), 1 = middle level with deeper files, 2 = bottommost.
    /// Merge operands resolve with string append, with or without a
    /// partial merge.
    #[test]
    fn every_snapshot_sees_the_same(s in scenario()) {
        let cmp = InternalKeyComparator::bytewise();
        let bottommost = s.mode == 2;
        let deeper_data: Vec<(u8, bool)> = if bottommost { Vec::new() } else { s.deeper.clone() };

        // Input points, model and stream.
        let mut before: BTreeMap<Vec<u8>, Versions> = BTreeMap::new();
        let mut stream = Vec::new();
        for &(k, seq, kind, v) in &s.entries {
            let (version, kind, value) = match kind {
                0 => (Version::Put(vec![b'v', v]), ValueKind::Put, vec![b'v', v]),
                1 => (Version::Delete, ValueKind::Delete, Vec::new()),
                _ => (Version::Merge(vec![b'm', v]), ValueKind::Merge, vec![b'm', v]),
            };
            before.entry(vec![b'a' + k]).or_default().insert(seq, version);
            stream.push((InternalKey::new(&[b'a' + k], seq, kind).into_encoded(), value));
        }
        let op: Arc<dyn MergeOperator> = if s.partial {
            Arc::new(lithify_base::merge::StringAppend::default())
        } else {
            Arc::new(ConcatNoPartial)
        };
        let tombstones: Vec<RangeTombstone> = s
            .tombstones
            .iter()
            .map(|&(a, b, seq)| RangeTombstone::new(vec![b'a' + a], vec![b'a' + b], seq))
            .collect();
        // Deeper levels: one file per key, seqnos below every input.
        let mut below: BTreeMap<Vec<u8>, Versions> = BTreeMap::new();
        let mut deeper_files = Vec::new();
        for (i, &(k, put)) in deeper_data.iter().enumerate() {
            let version = if put { Version::Put(vec![b'd', k]) } else { Version::Delete };
            below.entry(vec![b'a' + k]).or_default().insert(1 + i as SeqNo % 9, version);
            deeper_files.push(deeper_file(&((b'a' + k) as char).to_string(), &((b'a' + k) as char).to_string()));
        }
        deeper_files.sort_by(|a, b| a.smallest.user_key().cmp(b.smallest.user_key()));
        deeper_files.dedup_by(|a, b| a.smallest.user_key() == b.smallest.user_key());
        let deeper = match s.mode {
            0 => DeeperLevels::unknown(),
            1 => DeeperLevels::files(vec![deeper_files]),
            _ => DeeperLevels::bottommost(),
        };

        let snapshots = Snapshots::new(s.snapshots.clone());
        let agg = RangeDelAggregator::new(cmp.clone(), tombstones.clone(), snapshots.clone());
        let mut it = CompactionIterator::new(
            VecIterator::new(cmp.clone(), stream),
            cmp,
            CompactionIterOptions::for_flush(snapshots.clone(), Some(&agg))
                .deeper(deeper)
                .filter_level(1)
                .origin("model".to_owned())
                .merge_operator(Some(&*op)),
        );
        it.seek_to_first().unwrap();
        let mut after: BTreeMap<Vec<u8>, Versions> = BTreeMap::new();
        let mut last: Option<Vec<u8>> = None;
        while it.valid() {
            let key = it.key().to_vec();
            if let Some(l) = &last {
                prop_assert!(InternalKey::from_encoded(l.clone()).unwrap().to_string() != InternalKey::from_encoded(key.clone()).unwrap().to_string());
            }
            let value = match it.kind() {
                ValueKind::Put => Version::Put(it.value().to_vec()),
                ValueKind::Merge => Version::Merge(it.value().to_vec()),
                _ => Version::Delete,
            };
            let prev = after.entry(it.user_key().to_vec()).or_default().insert(it.seqno(), value);
            prop_assert!(prev.is_none(), "two outputs with one seqno");
            last = Some(key);
            it.next().unwrap();
        }
        let st = it.stats();
        prop_assert_eq!(st.records_in, s.entries.len() as u64);
        prop_assert_eq!(st.records_in, st.records_out + st.dropped());
        let kept = agg.tombstones_in(None, None, bottommost);

        // Merge the deeper data under both sides.
        let merge = |top: &BTreeMap<Vec<u8>, Versions>| {
            let mut all = below.clone();
            for (k, vs) in top {
                all.entry(k.clone()).or_default().extend(vs.iter().map(|(s, v)| (*s, v.clone())));
            }
            all
        };
        let (before_all, after_all) = (merge(&before), merge(&after));
        let mut points_of_view: Vec<SeqNo> = s.snapshots.clone();
        points_of_view.push(lithify_base::MAX_SEQNO);
        for snap in points_of_view {
            let want = visible(&before_all, &tombstones, snap, &*op);
            let got = visible(&after_all, &kept, snap, &*op);
            prop_assert_eq!(&got, &want, "snapshot {}", snap);
        }
    }
}
