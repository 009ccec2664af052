//! Forced blob garbage collection in the leveled strategy: when the
//! oldest blob files are mostly garbage, the SST that pins the oldest one
//! is rewritten at its level (RocksDB's `kForcedBlobGC`), and nothing is
//! picked when the rule is off or the garbage is below the threshold.

use lithify_compaction::{
    BlobGcPolicy, CompactionPicker, CompactionReason, CompactionsInProgress, PickContext,
};
use lithify_compaction_leveled::{LeveledOptions, LeveledPicker};
use lithify_version::Version;

/// Blob file 1 (the oldest) is 90% garbage and pinned by SST 7 at L6;
/// blob files 2 and 3 are all live. Everything is in the last level, so
/// no level is over its target.
const SHAPE: &str = "
L6:
  000010:[a#30,SET-c#30,SET] size=1K blob=000003:2/200
  000007:[d#10,SET-f#10,SET] size=1K blob=000001:1/100
  000008:[g#20,SET-h#20,SET] size=1K blob=000002:5/500
blobs:
  000001.blob values=10 bytes=1000 garbage=9/900
  000002.blob values=5 bytes=500 garbage=0/0
  000003.blob values=2 bytes=200 garbage=0/0
";

/// A pick: its reason, start and output levels, and input file numbers.
type Pick = (CompactionReason, usize, usize, Vec<u64>);

fn pick(policy: Option<BlobGcPolicy>) -> (bool, Option<Pick>) {
    let v = Version::from_text(SHAPE).unwrap();
    let picker = LeveledPicker::new(LeveledOptions::default()).unwrap();
    let running = CompactionsInProgress::new();
    let mut ctx = PickContext::new(&running);
    ctx.blob_gc = policy;
    let needs = picker.needs_compaction(&v, &ctx);
    let c = picker.pick_auto(&v, &ctx).map(|c| {
        let inputs = c.input_files().map(|(_, f)| f.number).collect();
        (c.reason, c.start_level(), c.output_level, inputs)
    });
    (needs, c)
}

#[test]
fn the_sst_pinning_the_oldest_blob_file_is_rewritten_at_its_level() {
    // Cutoff 0.5 of 3 files: the batch is blob file 1 alone, 90% garbage.
    let (needs, c) = pick(BlobGcPolicy::new(0.5, 0.8));
    assert!(needs);
    assert_eq!(
        c,
        Some((CompactionReason::ForcedBlobGc, 6, 6, vec![7])),
        "SST 7 rewritten in place at L6"
    );
}

#[test]
fn nothing_is_forced_below_the_threshold_or_without_the_rule() {
    assert_eq!(pick(BlobGcPolicy::new(0.5, 0.95)), (false, None));
    assert_eq!(pick(None), (false, None));
    // The default threshold (1.0) never forces.
    assert_eq!(BlobGcPolicy::new(0.5, 1.0), None);
    // A cutoff that selects no file (floor(0.2 × 3) = 0) forces nothing.
    assert_eq!(pick(BlobGcPolicy::new(0.2, 0.1)), (false, None));
    // The batch of the two oldest files: 900 of 1500 bytes are garbage.
    assert_eq!(pick(BlobGcPolicy::new(0.7, 0.61)), (false, None));
    assert_eq!(
        pick(BlobGcPolicy::new(0.7, 0.6)).1,
        Some((CompactionReason::ForcedBlobGc, 6, 6, vec![7]))
    );
}

#[test]
fn a_file_being_compacted_is_not_picked_again() {
    let v = Version::from_text(SHAPE).unwrap();
    let picker = LeveledPicker::new(LeveledOptions::default()).unwrap();
    let mut running = CompactionsInProgress::new();
    let mut ctx = PickContext::new(&running);
    ctx.blob_gc = BlobGcPolicy::new(0.5, 0.8);
    let first = picker.pick_auto(&v, &ctx).unwrap();
    running.register(&first, v.comparator());
    let mut ctx = PickContext::new(&running);
    ctx.blob_gc = BlobGcPolicy::new(0.5, 0.8);
    assert!(!picker.needs_compaction(&v, &ctx));
    assert!(picker.pick_auto(&v, &ctx).is_none());
}
