//! The compaction iterator: data-driven cases from `key#seq,KIND` streams
//! (`testdata/compaction_iter.txt`), and a proptest comparing what every
//! snapshot sees before and after against a naive model.

mod common;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use bytes::Bytes;
use lithify_base::keyspan::RangeTombstone;
use lithify_base::{InternalKey, InternalKeyComparator, SeqNo, ValueKind, VecIterator};
use lithify_compaction_leveled::DeeperLevels;
use lithify_compaction_leveled::iter::{
    CompactionFilter, CompactionIterOptions, CompactionIterator, FilterDecision,
    RangeDelAggregator, Snapshots,
};
use lithify_version::FileMetadata;
use proptest::prelude::*;

/// A filter driven by rules: `remove:KEY`, `change:KEY=VALUE`,
/// `skip:KEY-UNTIL`, separated by `;`.
struct RuleFilter {
    rules: Vec<(String, FilterDecision)>,
}

impl RuleFilter {
    fn parse(spec: &str) -> Self {
        let rules = spec
            .split(';')
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
            .collect();
        RuleFilter { rules }
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
            points.push((key.into_encoded(), value.as_bytes().to_vec()));
        }
    }
    (points, tombstones)
}

fn run_iter(case: &common::Case) -> String {
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
    let agg = RangeDelAggregator::new(cmp.clone(), tombstones, snapshots.clone());
    let input = VecIterator::new(cmp.clone(), points);
    let mut it = CompactionIterator::new(
        input,
        cmp,
        CompactionIterOptions {
            snapshots,
            range_dels: Some(&agg),
            deeper,
            filter: filter.as_ref().map(|f| f as &dyn CompactionFilter),
            filter_level: 1,
            upper_bound: case.arg("upper").map(|u| u.as_bytes().to_vec()),
            origin: "test input".to_owned(),
        },
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
            writeln!(out, "{key}:{}", String::from_utf8_lossy(it.value())).unwrap();
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
    common::run_file("testdata/compaction_iter.txt", |case| {
        match case.args()[0] {
            "iter" => run_iter(case),
            other => panic!("unknown command {other}"),
        }
    });
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

/// One version in the model: (seqno, Some(value) for a put, None for a
/// delete).
type Versions = BTreeMap<SeqNo, Option<Vec<u8>>>;

/// What a reader at `snapshot` sees for every key, given point versions
/// and range tombstones.
fn visible(
    points: &BTreeMap<Vec<u8>, Versions>,
    tombstones: &[RangeTombstone],
    snapshot: SeqNo,
) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut out = BTreeMap::new();
    for (key, versions) in points {
        let Some((&seq, value)) = versions.range(..=snapshot).next_back() else {
            continue;
        };
        let deleted_by_range = tombstones.iter().any(|t| {
            t.seqno <= snapshot
                && t.seqno > seq
                && t.start.as_ref() <= key.as_slice()
                && key.as_slice() < t.end.as_ref()
        });
        if let (Some(v), false) = (value, deleted_by_range) {
            out.insert(key.clone(), v.clone());
        }
    }
    out
}

#[derive(Debug, Clone)]
struct Scenario {
    /// (key, seqno, is_put, value) of the compaction input.
    entries: Vec<(u8, SeqNo, bool, u8)>,
    /// (start, end, seqno).
    tombstones: Vec<(u8, u8, SeqNo)>,
    /// Older data below the output level: (key, is_put).
    deeper: Vec<(u8, bool)>,
    snapshots: Vec<SeqNo>,
    mode: u8,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    (
        proptest::collection::vec((0u8..8, any::<bool>(), any::<u8>()), 0..40),
        proptest::collection::vec((0u8..8, 1u8..4, 0usize..40), 0..4),
        proptest::collection::vec((0u8..8, any::<bool>()), 0..6),
        proptest::collection::vec(0u64..50, 0..4),
        0u8..3,
    )
        .prop_map(|(raw, raw_tombstones, deeper, snaps, mode)| {
            // Seqnos 10.. in input order, so every version is distinct and
            // newer than the deeper data (seqnos 1..9).
            let entries: Vec<_> = raw
                .into_iter()
                .enumerate()
                .map(|(i, (k, put, v))| (k, 10 + i as SeqNo, put, v))
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
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Every snapshot (and the tip) sees the same data before and after
    /// the compaction, counting the deeper levels beneath it; at the
    /// bottommost level nothing lies beneath. Modes: 0 = flush (nothing
    /// known below), 1 = middle level with deeper files, 2 = bottommost.
    #[test]
    fn every_snapshot_sees_the_same(s in scenario()) {
        let cmp = InternalKeyComparator::bytewise();
        let bottommost = s.mode == 2;
        let deeper_data: Vec<(u8, bool)> = if bottommost { Vec::new() } else { s.deeper.clone() };

        // Input points, model and stream.
        let mut before: BTreeMap<Vec<u8>, Versions> = BTreeMap::new();
        let mut stream = Vec::new();
        for &(k, seq, put, v) in &s.entries {
            let value = put.then(|| vec![b'v', v]);
            before.entry(vec![b'a' + k]).or_default().insert(seq, value.clone());
            let kind = if put { ValueKind::Put } else { ValueKind::Delete };
            stream.push((InternalKey::new(&[b'a' + k], seq, kind).into_encoded(), value.unwrap_or_default()));
        }
        let tombstones: Vec<RangeTombstone> = s
            .tombstones
            .iter()
            .map(|&(a, b, seq)| RangeTombstone::new(vec![b'a' + a], vec![b'a' + b], seq))
            .collect();
        // Deeper levels: one file per key, seqnos below every input.
        let mut below: BTreeMap<Vec<u8>, Versions> = BTreeMap::new();
        let mut deeper_files = Vec::new();
        for (i, &(k, put)) in deeper_data.iter().enumerate() {
            below.entry(vec![b'a' + k]).or_default().insert(1 + i as SeqNo % 9, put.then(|| vec![b'd', k]));
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
            CompactionIterOptions {
                snapshots: snapshots.clone(),
                range_dels: Some(&agg),
                deeper,
                filter: None,
                filter_level: 1,
                upper_bound: None,
                origin: "model".to_owned(),
            },
        );
        it.seek_to_first().unwrap();
        let mut after: BTreeMap<Vec<u8>, Versions> = BTreeMap::new();
        let mut last: Option<Vec<u8>> = None;
        while it.valid() {
            let key = it.key().to_vec();
            if let Some(l) = &last {
                prop_assert!(InternalKey::from_encoded(l.clone()).unwrap().to_string() != InternalKey::from_encoded(key.clone()).unwrap().to_string());
            }
            let value = (it.kind() == ValueKind::Put).then(|| it.value().to_vec());
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
            let want = visible(&before_all, &tombstones, snap);
            let got = visible(&after_all, &kept, snap);
            prop_assert_eq!(&got, &want, "snapshot {}", snap);
        }
    }
}
