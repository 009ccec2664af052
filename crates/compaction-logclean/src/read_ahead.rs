//! A round's batches, read, checked and decompressed ahead on a second
//! thread while a core is idle.
//!
//! Both passes of a round read every batch they clean, check its CRC and
//! decompress the records they look at: on a zstd log that decompression
//! is nearly half of the round. When the machine has a core that no
//! cleaner thread is using ([`Cores`]), a pass hands that work to a
//! read-ahead thread, which sends the batches, in order, through a short
//! queue, so the decompression of the next batches overlaps the decoding,
//! hashing and filtering of this one. Without an idle core (or with
//! `lithify.cleaner.read.ahead=false`) the pass reads inline, as before.
//! Either way the round sees the same batches, the same errors at the
//! same batches, and makes the same decisions: only the thread that does
//! the work changes.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crossbeam_channel::{Receiver, Sender, bounded};
use lithify_kafka_log::codec::Compression;
use lithify_kafka_log::record::{BatchRecords, DecompressedBatch, RecordBatch};
use lithify_kafka_log::{FileBatches, SegmentSnapshot};

use crate::error::{ReadAheadSnafu, Result};

/// Batches the read-ahead thread sends at a time: one channel operation
/// (and at most one wake-up of a waiting thread) per group, not per batch.
const GROUP: usize = 8;

/// Groups the read-ahead thread may be ahead of the pass.
const QUEUE_GROUPS: usize = 4;

/// Queued groups below which the read-ahead thread leaves the next
/// batch's decompression to the pass.
const SHARE_BELOW: usize = 2;

/// Bytes of decompressed records the read-ahead thread may have sent and
/// the pass not yet dropped: beyond it batches go raw, so a log of very
/// compressible batches (each may decompress to 128 MiB) holds about one
/// batch's records more than reading inline does, not a queue of them.
const AHEAD_BYTES: usize = 16 << 20;

/// The cores of the machine, and how many the cleaner's threads use: one
/// for each thread awake (in a round, or looking for one), one for each
/// read-ahead thread.
#[derive(Debug)]
pub(crate) struct Cores {
    total: usize,
    /// The `lithify_base::sync` atomic, so that loom checks the grants.
    busy: lithify_base::sync::atomic::AtomicUsize,
}

impl Cores {
    /// This machine's cores, none busy yet.
    pub(crate) fn of_machine() -> Arc<Cores> {
        Arc::new(Cores::new(
            std::thread::available_parallelism().map_or(1, |n| n.get()),
        ))
    }

    fn new(total: usize) -> Cores {
        Cores {
            total,
            busy: lithify_base::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Counts a cleaner thread busy until the guard drops.
    pub(crate) fn awake(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::AcqRel);
        Busy(self.clone())
    }

    /// A core for a read-ahead thread, if one is idle.
    pub(crate) fn try_idle(self: &Arc<Self>) -> Option<Busy> {
        self.busy
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |busy| {
                (busy < self.total).then_some(busy + 1)
            })
            .ok()
            .map(|_| Busy(self.clone()))
    }
}

/// One busy core of [`Cores`], given back on drop.
#[derive(Debug)]
pub(crate) struct Busy(Arc<Cores>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A batch whose CRC was checked, with its records decompressed when the
/// read-ahead thread did that already.
#[derive(Debug)]
pub(crate) enum FedBatch {
    /// Records not decompressed yet.
    Raw(RecordBatch),
    /// Records decompressed by the read-ahead thread.
    Ready(Ready),
}

/// Records the read-ahead thread decompressed, counted in its budget
/// until the pass drops them.
#[derive(Debug)]
pub(crate) struct Ready {
    records: DecompressedBatch,
    bytes: usize,
    ahead: Arc<AtomicUsize>,
}

impl Drop for Ready {
    fn drop(&mut self) {
        self.ahead.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

impl FedBatch {
    /// The batch.
    pub(crate) fn batch(&self) -> &RecordBatch {
        match self {
            FedBatch::Raw(b) => b,
            FedBatch::Ready(r) => r.records.batch(),
        }
    }

    /// Its records, decompressed now if they were not yet.
    pub(crate) fn records(&self) -> Result<BatchRecords<'_>> {
        Ok(match self {
            FedBatch::Raw(b) => BatchRecords::decompress(b)?,
            FedBatch::Ready(r) => r.records.records(),
        })
    }
}

/// What the read-ahead thread sends.
enum Item {
    /// Up to [`GROUP`] batches of a region, in order; an error ends the
    /// reading.
    Batches(Vec<Result<FedBatch>>),
    /// The end of a segment: whether its bytes ended with a whole batch.
    End(Result<()>),
}

/// The regions a pass reads: each segment from a byte position.
pub(crate) type Regions<'a> = [(&'a SegmentSnapshot, u64)];

/// Which batches are worth decompressing ahead.
pub(crate) type WantRecords<'a> = dyn Fn(&RecordBatch) -> bool + Sync + 'a;

/// The batches of a pass, region by region: [`next`](Feed::next) until
/// `None`, then [`end_region`](Feed::end_region).
pub(crate) struct Feed<'a> {
    source: Source<'a>,
}

enum Source<'a> {
    Inline {
        regions: &'a Regions<'a>,
        next_region: usize,
        current: Option<FileBatches>,
    },
    Ahead {
        items: Receiver<Item>,
        group: std::vec::IntoIter<Result<FedBatch>>,
        ended: Option<Result<()>>,
    },
}

impl Feed<'_> {
    /// The next batch of the current region, its CRC checked.
    pub(crate) fn next(&mut self) -> Option<Result<FedBatch>> {
        match &mut self.source {
            Source::Inline {
                regions,
                next_region,
                current,
            } => {
                let batches = current.get_or_insert_with(|| {
                    let (seg, position) = regions[*next_region];
                    *next_region += 1;
                    seg.batches_from(position)
                });
                let batch = batches.next()?;
                Some(
                    batch
                        .map_err(Into::into)
                        .and_then(checked)
                        .map(FedBatch::Raw),
                )
            }
            Source::Ahead {
                items,
                group,
                ended,
            } => loop {
                if let Some(batch) = group.next() {
                    return Some(batch);
                }
                match items.recv() {
                    Ok(Item::Batches(batches)) => *group = batches.into_iter(),
                    Ok(Item::End(end)) => {
                        *ended = Some(end);
                        return None;
                    }
                    // The thread sends an error before it stops early.
                    Err(_) => {
                        return Some(
                            ReadAheadSnafu {
                                message: "it stopped without a word",
                            }
                            .fail(),
                        );
                    }
                }
            },
        }
    }

    /// After [`next`](Feed::next) returned `None`: whether the region
    /// ended with a whole batch (see
    /// [`FileBatches::check_complete`]).
    pub(crate) fn end_region(&mut self) -> Result<()> {
        match &mut self.source {
            Source::Inline { current, .. } => match current.take() {
                Some(batches) => Ok(batches.check_complete()?),
                None => Ok(()),
            },
            Source::Ahead { ended, .. } => ended.take().unwrap_or(Ok(())),
        }
    }
}

/// Runs `pass` over the batches of `regions`: read ahead, with the
/// batches `want` names decompressed, on a thread of its own when `core`
/// is granted; inline otherwise.
pub(crate) fn with_feed<R>(
    regions: &Regions<'_>,
    want: &WantRecords<'_>,
    core: Option<Busy>,
    pass: impl FnOnce(&mut Feed<'_>) -> Result<R>,
) -> Result<R> {
    let Some(core) = core else {
        return pass(&mut Feed {
            source: inline(regions),
        });
    };
    let (send, items) = bounded(QUEUE_GROUPS);
    let ahead = Arc::new(AtomicUsize::new(0));
    std::thread::scope(|scope| {
        let reader = ReadAhead {
            regions,
            want,
            send,
            ahead,
            group: Vec::with_capacity(GROUP),
        };
        let spawned = std::thread::Builder::new()
            .name("lithify-read-ahead".to_string())
            .spawn_scoped(scope, move || {
                let _core = core;
                reader.run();
            });
        let source = match spawned {
            // `items` drops when the pass returns, which stops the thread.
            Ok(_) => Source::Ahead {
                items,
                group: Vec::new().into_iter(),
                ended: None,
            },
            // No thread to be had: the pass reads inline.
            Err(e) => {
                tracing::debug!(error = %e, "no read-ahead thread, reading inline");
                inline(regions)
            }
        };
        pass(&mut Feed { source })
    })
}

fn inline<'a>(regions: &'a Regions<'a>) -> Source<'a> {
    Source::Inline {
        regions,
        next_region: 0,
        current: None,
    }
}

/// The read-ahead thread's state.
struct ReadAhead<'a> {
    regions: &'a Regions<'a>,
    want: &'a WantRecords<'a>,
    send: Sender<Item>,
    /// Bytes of decompressed records sent and not yet dropped by the pass.
    ahead: Arc<AtomicUsize>,
    /// The batches read and not sent yet.
    group: Vec<Result<FedBatch>>,
}

impl ReadAhead<'_> {
    /// Reads everything, containing a panic: the pass gets the batches
    /// read before it, then the panic as an error, and the round fails
    /// alone.
    fn run(mut self) {
        let read = std::panic::AssertUnwindSafe(|| self.read_regions());
        if let Err(panic) = std::panic::catch_unwind(read) {
            self.group.push(
                ReadAheadSnafu {
                    message: panic_message(&*panic),
                }
                .fail(),
            );
            let _ = self.send_group();
        }
    }

    /// Every batch of the regions, in order, then each region's end,
    /// until the pass stops listening or an error is sent.
    fn read_regions(&mut self) {
        for &(seg, position) in self.regions {
            let mut batches = seg.batches_from(position);
            for batch in &mut batches {
                let fed = batch
                    .map_err(Into::into)
                    .and_then(checked)
                    .map(|b| self.prepare(b));
                let failed = fed.is_err();
                self.group.push(fed);
                // A pass that has stopped (its receiver gone) or an error
                // sent ends the reading.
                if failed || self.group.len() == GROUP {
                    let sent = self.send_group();
                    if !sent || failed {
                        return;
                    }
                }
            }
            if !self.send_group() {
                return;
            }
            let end = batches.check_complete().map_err(Into::into);
            if self.send.send(Item::End(end)).is_err() {
                return;
            }
        }
    }

    /// Sends the batches read so far, if any; false if the pass has
    /// stopped.
    fn send_group(&mut self) -> bool {
        if self.group.is_empty() {
            return true;
        }
        let group = std::mem::replace(&mut self.group, Vec::with_capacity(GROUP));
        self.send.send(Item::Batches(group)).is_ok()
    }

    /// `batch` with its records decompressed, or raw: when the pass does
    /// not want them, when fewer than [`SHARE_BELOW`] groups are queued
    /// (the pass is about to wait for this thread: it decompresses this
    /// one itself, so the two share the work), or when the records sent
    /// ahead already take [`AHEAD_BYTES`].
    fn prepare(&self, batch: RecordBatch) -> FedBatch {
        if !(self.want)(&batch)
            || !worth_moving(&batch)
            || self.send.len() < SHARE_BELOW
            || self.ahead.load(Ordering::Acquire) >= AHEAD_BYTES
        {
            return FedBatch::Raw(batch);
        }
        // A batch that fails to decompress, or whose decompression panics,
        // goes raw: the pass decompresses it itself, if it needs its
        // records, and meets the error (or the panic) exactly as it would
        // without this thread.
        let attempt = std::panic::catch_unwind(|| DecompressedBatch::new(batch.clone()));
        match attempt {
            Ok(Ok(records)) => {
                let bytes = records.records_len();
                self.ahead.fetch_add(bytes, Ordering::AcqRel);
                FedBatch::Ready(Ready {
                    records,
                    bytes,
                    ahead: self.ahead.clone(),
                })
            }
            _ => FedBatch::Raw(batch),
        }
    }
}

/// What a panic said, if it said it as a string.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

/// Whether decompressing `batch` on the read-ahead thread saves the pass
/// anything: not for an uncompressed batch, whose records are its bytes.
fn worth_moving(batch: &RecordBatch) -> bool {
    batch.compression().is_ok_and(|c| c != Compression::None)
}

/// `batch`, if its CRC holds (see [`check_batch`](crate::round)).
fn checked(batch: RecordBatch) -> Result<RecordBatch> {
    crate::round::check_batch(&batch)?;
    Ok(batch)
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use lithify_base::sync::thread;

    /// Two read-ahead threads ask for the one idle core at once: exactly
    /// one gets it, and every core comes back.
    #[test]
    fn loom_one_idle_core_goes_to_one_read_ahead_thread() {
        loom::model(|| {
            let cores = Arc::new(Cores::new(3));
            let awake = [cores.awake(), cores.awake()];
            let ask = |cores: Arc<Cores>| thread::spawn(move || cores.try_idle());
            let (a, b) = (ask(cores.clone()), ask(cores.clone()));
            let (a, b) = (a.join().unwrap(), b.join().unwrap());
            assert_eq!(usize::from(a.is_some()) + usize::from(b.is_some()), 1);
            drop((a, b, awake));
            assert_eq!(cores.busy.load(Ordering::Acquire), 0);
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use lithify_kafka_log::record::SimpleRecord;
    use lithify_kafka_log::{Log, LogConfig, LogSnapshot};
    use lithify_vfs::MemFs;

    /// A snapshot of a log of ten one-record batches (offsets 0 ..= 9) in
    /// one inactive segment.
    fn ten_batches() -> LogSnapshot {
        let mut log = Log::open(
            Arc::new(MemFs::new()),
            std::path::Path::new("/k/t-0"),
            LogConfig::default(),
        )
        .unwrap();
        for i in 0..10 {
            log.append(&[SimpleRecord::new(i, format!("k{i}"), "v")])
                .unwrap();
        }
        log.roll().unwrap();
        log.snapshot(0)
    }

    /// Every inactive segment of `snap`, from its start.
    fn regions(snap: &LogSnapshot) -> Vec<(&SegmentSnapshot, u64)> {
        snap.inactive().iter().map(|s| (s, 0)).collect()
    }

    /// Every batch's base offset, or the error that ended the pass.
    fn offsets(feed: &mut Feed<'_>) -> Result<Vec<i64>> {
        let mut seen = Vec::new();
        while let Some(b) = feed.next() {
            seen.push(b?.batch().base_offset());
        }
        feed.end_region()?;
        Ok(seen)
    }

    #[test]
    fn both_feeds_give_the_same_batches() {
        let snap = ten_batches();
        let regions = regions(&snap);
        let want = |_: &RecordBatch| true;
        let cores = Arc::new(Cores::new(2));
        let inline = with_feed(&regions, &want, None, offsets).unwrap();
        let ahead = with_feed(&regions, &want, cores.try_idle(), offsets).unwrap();
        assert_eq!(inline, (0..10).collect::<Vec<_>>());
        assert_eq!(ahead, inline);
        assert_eq!(
            cores.busy.load(Ordering::Acquire),
            0,
            "the core is given back"
        );
    }

    /// A panic on the read-ahead thread reaches the pass as an error after
    /// the batches read before it, and does not take the pass's thread
    /// down.
    #[test]
    fn a_panic_on_the_read_ahead_thread_fails_the_pass_alone() {
        let snap = ten_batches();
        let regions = regions(&snap);
        let want = |b: &RecordBatch| {
            assert!(b.base_offset() != 5, "read-ahead test panic");
            true
        };
        let cores = Arc::new(Cores::new(2));
        let mut seen = Vec::new();
        let err = with_feed(&regions, &want, cores.try_idle(), |feed| {
            while let Some(b) = feed.next() {
                seen.push(b?.batch().base_offset());
            }
            Ok(())
        })
        .unwrap_err();
        assert!(matches!(err, crate::Error::ReadAhead { .. }), "{err}");
        assert!(err.to_string().contains("read-ahead test panic"), "{err}");
        assert_eq!(seen, [0, 1, 2, 3, 4]);
    }

    /// A pass that stops early (the map is full, the round is aborted)
    /// does not wait for the thread to read the rest.
    #[test]
    fn a_pass_that_stops_early_stops_the_thread() {
        let snap = ten_batches();
        let regions = regions(&snap);
        let want = |_: &RecordBatch| true;
        let cores = Arc::new(Cores::new(2));
        let first = with_feed(&regions, &want, cores.try_idle(), |feed| {
            Ok(feed.next().expect("a batch")?.batch().base_offset())
        })
        .unwrap();
        assert_eq!(first, 0);
        assert_eq!(cores.busy.load(Ordering::Acquire), 0);
    }

    #[test]
    fn read_ahead_takes_only_idle_cores() {
        let cores = Arc::new(Cores::new(2));
        let a = cores.awake();
        let helper = cores.try_idle().expect("one core idle");
        assert!(cores.try_idle().is_none(), "both cores busy");
        let b = cores.awake();
        assert_eq!(
            cores.busy.load(Ordering::Acquire),
            3,
            "threads always count"
        );
        drop(helper);
        assert!(cores.try_idle().is_none(), "two threads awake on two cores");
        drop(b);
        assert!(cores.try_idle().is_some());
        drop(a);
        assert_eq!(cores.busy.load(Ordering::Acquire), 0);
    }
}
