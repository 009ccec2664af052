//! Forced blob garbage collection in the two-tier strategies (lithify's
//! own rule): a major-level SST that pins the oldest, mostly-garbage blob
//! file is rewritten in place, one at a time; L0 tables pinning it are
//! left to the minor and major compactions.

use lithify_compaction::{
    BlobGcPolicy, CompactionPicker, CompactionReason, CompactionsInProgress, PickContext,
};
use lithify_compaction_tiered::{MajorOnlyOptions, MajorOnlyPicker, TwoTierOptions, TwoTierPicker};
use lithify_version::Version;

/// Blob file 1 is 90% garbage, pinned by the major-level SSTs 7 and 8
/// (and, with `l0`, by the L0 table 12).
fn shape(l0: bool) -> Version {
    let (l0, count, garbage) = if l0 {
        (
            "L0:\n  000012:[m#40,SET-n#40,SET] size=1K blob=000001:1/100\n",
            30,
            27,
        )
    } else {
        ("", 20, 18)
    };
    Version::from_text(&format!(
        "{l0}L6:
  000007:[d#10,SET-f#10,SET] size=1K blob=000001:1/100
  000008:[g#20,SET-h#20,SET] size=1K blob=000001:1/100 blob=000002:5/500
blobs:
  000001.blob values={count} bytes={} garbage={garbage}/{}
  000002.blob values=5 bytes=500 garbage=0/0
",
        count * 100,
        garbage * 100
    ))
    .unwrap()
}

type Pick = (CompactionReason, usize, usize, Vec<u64>);

/// Picks twice, the first pick registered as running: the second shows
/// what is left to force meanwhile.
fn picks(picker: &dyn CompactionPicker, v: &Version, policy: Option<BlobGcPolicy>) -> Vec<Pick> {
    let mut running = CompactionsInProgress::new();
    let mut out = Vec::new();
    for _ in 0..2 {
        let mut ctx = PickContext::new(&running);
        ctx.blob_gc = policy;
        let Some(c) = picker.pick_auto(v, &ctx) else {
            assert!(!picker.needs_compaction(v, &ctx));
            break;
        };
        assert!(picker.needs_compaction(v, &ctx));
        out.push((
            c.reason,
            c.start_level(),
            c.output_level,
            c.input_files().map(|(_, f)| f.number).collect(),
        ));
        running.register(&c, v.comparator());
    }
    out
}

const FORCED: CompactionReason = CompactionReason::ForcedBlobGc;

#[test]
fn major_only_rewrites_the_pinning_major_files_one_at_a_time() {
    let picker = MajorOnlyPicker::new(MajorOnlyOptions::default()).unwrap();
    let v = shape(false);
    assert_eq!(
        picks(&picker, &v, BlobGcPolicy::new(0.5, 0.8)),
        [(FORCED, 6, 6, vec![7]), (FORCED, 6, 6, vec![8])]
    );
    assert_eq!(picks(&picker, &v, BlobGcPolicy::new(0.5, 0.95)), []);
    assert_eq!(picks(&picker, &v, None), []);
}

#[test]
fn two_tier_rewrites_major_files_and_leaves_l0_to_its_compactions() {
    let picker = TwoTierPicker::new(TwoTierOptions::default()).unwrap();
    let v = shape(true);
    assert_eq!(
        picks(&picker, &v, BlobGcPolicy::new(0.5, 0.8)),
        [(FORCED, 6, 6, vec![7]), (FORCED, 6, 6, vec![8])]
    );
    assert_eq!(picks(&picker, &v, None), []);
}
