//! Drives the compaction iterator with streams decoded from arbitrary
//! bytes: versions of colliding keys (some with invalid kind bytes), range
//! tombstones, snapshots, and the three kinds of deeper-level knowledge
//! (flush, middle level, bottommost), merge operands resolved by string
//! append with or without a partial merge. Compaction has no on-disk format;
//! this target hunts for panics and for results that change what a
//! snapshot sees. A stream with a corrupt key must fail with a corruption
//! error; any other stream must read the same at every snapshot and at the
//! tip before and after, deeper data included.
#![no_main]

use std::collections::BTreeMap;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use lithify_base::key::append_internal_key;
use lithify_base::merge::StringAppend;
use lithify_base::{
    Classify, InternalKey, InternalKeyComparator, MAX_SEQNO, MergeOperator, SeqNo, ValueKind,
    VecIterator,
};
use lithify_base::keyspan::RangeTombstone;
use lithify_compaction::DeeperLevels;
use lithify_compaction::iter::{
    CompactionIterOptions, CompactionIterator, RangeDelAggregator, Snapshots,
};
use lithify_version::FileMetadata;

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

#[derive(Debug, Clone, PartialEq, Eq)]
enum Version {
    Put(Vec<u8>),
    Delete,
    Merge(Vec<u8>),
}

type Versions = BTreeMap<SeqNo, Version>;

/// String append without a partial merge: operands stay apart until they
/// meet their value.
struct AppendNoPartial;

impl MergeOperator for AppendNoPartial {
    fn name(&self) -> &str {
        "append-no-partial"
    }

    fn full_merge(&self, key: &[u8], existing: Option<&[u8]>, ops: &[&[u8]]) -> Option<Vec<u8>> {
        StringAppend::default().full_merge(key, existing, ops)
    }
}

fn visible(
    points: &BTreeMap<Vec<u8>, Versions>,
    tombstones: &[RangeTombstone],
    snapshot: SeqNo,
    op: &dyn MergeOperator,
) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut out = BTreeMap::new();
    for (key, versions) in points {
        let covered = |seq: SeqNo| {
            tombstones.iter().any(|t| {
                t.seqno <= snapshot
                    && t.seqno > seq
                    && t.start.as_ref() <= key.as_slice()
                    && key.as_slice() < t.end.as_ref()
            })
        };
        let mut operands: Vec<&[u8]> = Vec::new();
        let mut base = None;
        for (&seq, version) in versions.range(..=snapshot).rev() {
            if covered(seq) {
                break;
            }
            match version {
                Version::Put(v) => {
                    base = Some(&v[..]);
                    break;
                }
                Version::Delete => break,
                Version::Merge(o) => operands.push(o),
            }
        }
        if operands.is_empty() {
            if let Some(v) = base {
                out.insert(key.clone(), v.to_vec());
            }
        } else {
            operands.reverse();
            out.insert(key.clone(), op.full_merge(key, base, &operands).unwrap());
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let mode = input.byte() % 3;
    let op: Arc<dyn MergeOperator> = if input.byte() % 2 == 0 {
        Arc::new(StringAppend::default())
    } else {
        Arc::new(AppendNoPartial)
    };
    let cmp = InternalKeyComparator::bytewise();
    let mut stream = Vec::new();
    let mut before: BTreeMap<Vec<u8>, Versions> = BTreeMap::new();
    let mut corrupt = false;
    let n = input.byte() % 48;
    for i in 0..n {
        let key = vec![b'a' + input.byte() % 6];
        let seq = 20 + i as SeqNo;
        let kind_byte = input.byte();
        let value = vec![b'v', input.byte()];
        let kind = match kind_byte % 17 {
            16 => None,
            k if k % 4 == 0 => Some(ValueKind::Delete),
            k if k % 4 == 1 => Some(ValueKind::Merge),
            _ => Some(ValueKind::Put),
        };
        let mut encoded = Vec::new();
        match kind {
            Some(k) => {
                append_internal_key(&mut encoded, &key, seq, k as u8);
                let version = match k {
                    ValueKind::Put => Version::Put(value.clone()),
                    ValueKind::Merge => Version::Merge(value.clone()),
                    _ => Version::Delete,
                };
                before.entry(key).or_default().insert(seq, version);
            }
            None => {
                append_internal_key(&mut encoded, &key, seq, 0x42);
                corrupt = true;
            }
        }
        stream.push((encoded, value));
    }
    let mut tombstones = Vec::new();
    for _ in 0..input.byte() % 4 {
        let start = b'a' + input.byte() % 6;
        let len = 1 + input.byte() % 3;
        let seq = 20 + (input.byte() % 50) as SeqNo;
        tombstones.push(RangeTombstone::new(vec![start], vec![start + len], seq));
    }
    let snapshots: Vec<SeqNo> = (0..input.byte() % 4)
        .map(|_| (input.byte() % 80) as SeqNo)
        .collect();
    // Deeper data (seqnos below every input) unless bottommost.
    let mut below: BTreeMap<Vec<u8>, Versions> = BTreeMap::new();
    let mut deeper_files = Vec::new();
    if mode != 2 {
        for i in 0..input.byte() % 4 {
            let key = vec![b'a' + input.byte() % 6];
            let put = input.byte() % 2 == 0;
            below
                .entry(key.clone())
                .or_default()
                .insert(
                    1 + i as SeqNo,
                    if put { Version::Put(b"deep".to_vec()) } else { Version::Delete },
                );
            let k = InternalKey::new(&key, 1, ValueKind::Put);
            deeper_files.push(Arc::new(FileMetadata::new(1, 1, k.clone(), k)));
        }
    }
    deeper_files.sort_by(|a, b| a.smallest.user_key().cmp(b.smallest.user_key()));
    deeper_files.dedup_by(|a, b| a.smallest.user_key() == b.smallest.user_key());
    let deeper = match mode {
        0 => DeeperLevels::unknown(),
        1 => DeeperLevels::files(vec![deeper_files]),
        _ => DeeperLevels::bottommost(),
    };

    let snaps = Snapshots::new(snapshots.clone());
    let agg = RangeDelAggregator::new(cmp.clone(), tombstones.clone(), snaps.clone());
    let mut it = CompactionIterator::new(
        VecIterator::new(cmp.clone(), stream),
        cmp,
        CompactionIterOptions::for_flush(snaps, Some(&agg))
            .deeper(deeper)
            .filter_level(1)
            .origin("fuzz".to_owned())
            .merge_operator(Some(&*op)),
    );
    let mut after: BTreeMap<Vec<u8>, Versions> = BTreeMap::new();
    let mut step = it.seek_to_first();
    loop {
        match step {
            Err(e) => {
                assert!(corrupt && e.is_corruption(), "unexpected error: {e}");
                return;
            }
            Ok(()) if !it.valid() => break,
            Ok(()) => {
                let value = match it.kind() {
                    ValueKind::Put => Version::Put(it.value().to_vec()),
                    ValueKind::Merge => Version::Merge(it.value().to_vec()),
                    _ => Version::Delete,
                };
                after
                    .entry(it.user_key().to_vec())
                    .or_default()
                    .insert(it.seqno(), value);
                step = it.next();
            }
        }
    }
    assert!(!corrupt, "a corrupt key went unnoticed");
    let s = it.stats();
    assert_eq!(s.records_in, s.records_out + s.dropped());
    let kept = agg.tombstones_in(None, None, mode == 2);
    let merge = |top: &BTreeMap<Vec<u8>, Versions>| {
        let mut all = below.clone();
        for (k, vs) in top {
            all.entry(k.clone())
                .or_default()
                .extend(vs.iter().map(|(s, v)| (*s, v.clone())));
        }
        all
    };
    let (before_all, after_all) = (merge(&before), merge(&after));
    for snap in snapshots.iter().copied().chain([MAX_SEQNO]) {
        assert_eq!(
            visible(&after_all, &kept, snap, &*op),
            visible(&before_all, &tombstones, snap, &*op),
            "snapshot {snap}"
        );
    }
});
