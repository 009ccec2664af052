//! Loom models of the engine's own protocols (`cargo xtask loom`):
//!
//! * the write group: leader election, parallel inserts, and sequence
//!   publication — a reader never sees a sequence number before every
//!   smaller one is in the memtable;
//! * the memtable switch inside a group's `prepare`: no insert ever goes to
//!   a memtable after it was made immutable, and a reader that pins the
//!   current super version finds every write published before it pinned;
//! * the super-version swap: readers see a whole old or a whole new value;
//! * checked writes (optimistic transactions' validation): two
//!   read-modify-writes of one key racing through the write group never
//!   both commit after reading the same value.
//!
//! The models run the real [`WriteThread`] and [`ArcCell`] over toy
//! memtables (arrays of atomic flags), so loom explores the engine's code,
//! not a copy of it.

use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use loom::thread;

use lithify_base::sync::Arc;

use crate::super_version::ArcCell;
use crate::write_thread::{GroupCommit, WriteThread};

const SLOTS: usize = 8;

/// A toy memtable: which sequence numbers were inserted.
struct ToyMem {
    present: [AtomicBool; SLOTS],
    immutable: AtomicBool,
}

impl ToyMem {
    fn new() -> Self {
        ToyMem {
            present: std::array::from_fn(|_| AtomicBool::new(false)),
            immutable: AtomicBool::new(false),
        }
    }
}

/// The toy super version: the mutable memtable and the immutable one.
struct ToySv {
    mem: Arc<ToyMem>,
    imm: Option<Arc<ToyMem>>,
}

struct ToyBatch {
    records: u64,
    seq: u64,
}

struct Toy {
    /// Leader-only counter (the leader hand-off orders it).
    next_seq: AtomicU64,
    visible: AtomicU64,
    sv: ArcCell<ToySv>,
    /// Switch the memtable before the group that would assign this
    /// sequence number (0: never).
    switch_at: u64,
    switched: AtomicBool,
    inserts: AtomicUsize,
    /// The group byte limit (each batch counts 1 byte).
    max_group: usize,
}

impl Toy {
    fn new(switch_at: u64) -> Self {
        Toy {
            next_seq: AtomicU64::new(1),
            visible: AtomicU64::new(0),
            sv: ArcCell::new(ToySv {
                mem: Arc::new(ToyMem::new()),
                imm: None,
            }),
            switch_at,
            switched: AtomicBool::new(false),
            inserts: AtomicUsize::new(0),
            max_group: 16,
        }
    }

    /// Whether every sequence number in `1..=upto` is in `sv`.
    fn all_present(sv: &ToySv, upto: u64) -> bool {
        (1..=upto).all(|s| {
            let s = s as usize;
            sv.mem.present[s].load(Ordering::Acquire)
                || sv
                    .imm
                    .as_ref()
                    .is_some_and(|m| m.present[s].load(Ordering::Acquire))
        })
    }
}

impl GroupCommit for Toy {
    type Target = Self;
    type Batch = ToyBatch;
    type Ctx = Arc<ToyMem>;
    type Error = ();

    fn batch_bytes(_b: &ToyBatch) -> usize {
        1
    }
    fn batch_sync(_b: &ToyBatch) -> bool {
        false
    }
    fn batch_disables_wal(_b: &ToyBatch) -> bool {
        false
    }
    fn max_group_bytes(this: &Self) -> usize {
        this.max_group
    }

    fn prepare(this: &Self, group: &mut [ToyBatch]) -> Result<(Arc<ToyMem>, u64), ()> {
        let mut seq = this.next_seq.load(Ordering::Relaxed);
        if this.switch_at != 0 && seq >= this.switch_at && !this.switched.load(Ordering::Relaxed) {
            // The engine's switch: mark the old memtable immutable (no
            // group is inserting), then install the new super version.
            this.switched.store(true, Ordering::Relaxed);
            let old = this.sv.get();
            old.mem.immutable.store(true, Ordering::Release);
            this.sv.install(ToySv {
                mem: Arc::new(ToyMem::new()),
                imm: Some(Arc::clone(&old.mem)),
            });
        }
        for b in group.iter_mut() {
            b.seq = seq;
            seq += b.records;
        }
        this.next_seq.store(seq, Ordering::Relaxed);
        Ok((Arc::clone(&this.sv.get().mem), seq - 1))
    }

    fn insert(this: &Self, mem: &Arc<ToyMem>, b: &ToyBatch) -> Result<(), ()> {
        assert!(
            !mem.immutable.load(Ordering::Acquire),
            "an insert reached an immutable memtable"
        );
        for s in b.seq..b.seq + b.records {
            mem.present[s as usize].store(true, Ordering::Release);
        }
        this.inserts.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn publish(this: &Self, _mem: &Arc<ToyMem>, last_seq: u64) {
        this.visible.store(last_seq, Ordering::Release);
    }

    fn insert_failed(_this: &Self, _err: &()) {
        unreachable!("toy inserts do not fail")
    }
}

fn run_writers(
    toy: &Arc<Toy>,
    wt: &Arc<WriteThread<Toy>>,
    sizes: &[u64],
) -> Vec<thread::JoinHandle<()>> {
    sizes
        .iter()
        .map(|&records| {
            let toy = Arc::clone(toy);
            let wt = Arc::clone(wt);
            thread::spawn(move || {
                wt.write(&toy, ToyBatch { records, seq: 0 }).unwrap();
                // Acknowledged: our records are visible.
                let v = toy.visible.load(Ordering::Acquire);
                assert!(Toy::all_present(&toy.sv.get(), v));
            })
        })
        .collect()
}

/// Two writers and a reader: the visible sequence number only covers
/// inserted records, and after both writes every record is visible.
#[test]
fn loom_write_group_publishes_in_order() {
    loom::model(|| {
        let toy = Arc::new(Toy::new(0));
        let wt = Arc::new(WriteThread::<Toy>::new());
        let writers = run_writers(&toy, &wt, &[2, 1]);
        let v = toy.visible.load(Ordering::Acquire);
        assert!(
            Toy::all_present(&toy.sv.get(), v),
            "visible {v} ahead of inserts"
        );
        for w in writers {
            w.join().unwrap();
        }
        assert_eq!(toy.visible.load(Ordering::Acquire), 3);
        assert!(Toy::all_present(&toy.sv.get(), 3));
        assert_eq!(toy.inserts.load(Ordering::Relaxed), 2);
    });
}

/// Three writers, so that a group of two or three batches is inserted by
/// several threads at once.
#[test]
fn loom_write_group_parallel_insert() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(|| {
        let toy = Arc::new(Toy::new(0));
        let wt = Arc::new(WriteThread::<Toy>::new());
        let writers = run_writers(&toy, &wt, &[1, 1, 1]);
        for w in writers {
            w.join().unwrap();
        }
        assert_eq!(toy.visible.load(Ordering::Acquire), 3);
        assert!(Toy::all_present(&toy.sv.get(), 3));
    });
}

/// Groups of one batch, three writers: a writer that finds no group in
/// flight leads the queue's front, which may be another writer's batch,
/// and then leads again for its own; every write is acknowledged once,
/// after its records are visible.
#[test]
fn loom_write_group_leads_others_batches() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(|| {
        let mut toy = Toy::new(0);
        toy.max_group = 1;
        let toy = Arc::new(toy);
        let wt = Arc::new(WriteThread::<Toy>::new());
        let writers = run_writers(&toy, &wt, &[1, 1, 1]);
        for w in writers {
            w.join().unwrap();
        }
        assert_eq!(toy.visible.load(Ordering::Acquire), 3);
        assert_eq!(toy.inserts.load(Ordering::Relaxed), 3);
    });
}

/// A memtable switch between groups: inserts never reach the immutable
/// memtable, and a reader that read the visible sequence number before
/// pinning the super version finds all of it there.
#[test]
fn loom_memtable_switch() {
    loom::model(|| {
        let toy = Arc::new(Toy::new(2));
        let wt = Arc::new(WriteThread::<Toy>::new());
        let writers = run_writers(&toy, &wt, &[1, 1]);
        let v = toy.visible.load(Ordering::Acquire);
        let sv = toy.sv.get();
        assert!(
            Toy::all_present(&sv, v),
            "a published write is missing from the pinned super version"
        );
        drop(sv);
        for w in writers {
            w.join().unwrap();
        }
        assert!(Toy::all_present(&toy.sv.get(), 2));
    });
}

/// Readers of the super-version cell see a whole value, old or new, and
/// every value is freed exactly once (loom checks leaks).
#[test]
fn loom_super_version_swap() {
    loom::model(|| {
        let cell = Arc::new(ArcCell::new((1u64, 10u64)));
        let writer = {
            let cell = Arc::clone(&cell);
            thread::spawn(move || {
                cell.install((2, 20));
                cell.install((3, 30));
            })
        };
        let a = cell.get();
        assert_eq!(a.1, a.0 * 10);
        let b = cell.get();
        assert!(b.0 >= a.0, "a reader went back in time");
        assert_eq!(b.1, b.0 * 10);
        writer.join().unwrap();
        assert_eq!(*cell.get(), (3, 30));
    });
}

/// A toy of checked writes (the validation of optimistic transactions):
/// every batch is a read-modify-write of one counter, checked in the
/// leader's `prepare` against the versions already inserted and against
/// the members ahead of it in its group, as `run_commit_checks` does.
struct ToyCounter {
    /// `versions[seq]` holds `value + 1` of the write at `seq` (0: none).
    versions: [AtomicU64; SLOTS],
    next_seq: AtomicU64,
    visible: AtomicU64,
}

struct CheckedWrite {
    /// The sequence number the writer read the counter at.
    since: u64,
    value: u64,
    seq: u64,
    committed: std::sync::Arc<AtomicBool>,
}

impl ToyCounter {
    /// The counter as of `snapshot`.
    fn read(&self, snapshot: u64) -> u64 {
        (1..=snapshot)
            .rev()
            .map(|s| self.versions[s as usize].load(Ordering::Acquire))
            .find(|v| *v != 0)
            .map_or(0, |v| v - 1)
    }
}

impl GroupCommit for ToyCounter {
    type Target = Self;
    type Batch = CheckedWrite;
    type Ctx = ();
    type Error = ();

    fn batch_bytes(_b: &CheckedWrite) -> usize {
        1
    }
    fn batch_sync(_b: &CheckedWrite) -> bool {
        false
    }
    fn batch_disables_wal(_b: &CheckedWrite) -> bool {
        false
    }
    fn max_group_bytes(_this: &Self) -> usize {
        16
    }

    fn prepare(this: &Self, group: &mut [CheckedWrite]) -> Result<((), u64), ()> {
        let mut seq = this.next_seq.load(Ordering::Relaxed);
        let mut written_ahead = false;
        for b in group.iter_mut() {
            let changed =
                (b.since + 1..seq).any(|s| this.versions[s as usize].load(Ordering::Acquire) != 0);
            if changed || written_ahead {
                continue;
            }
            written_ahead = true;
            b.seq = seq;
            b.committed.store(true, Ordering::Relaxed);
            seq += 1;
        }
        this.next_seq.store(seq, Ordering::Relaxed);
        Ok(((), seq - 1))
    }

    fn insert(this: &Self, _ctx: &(), b: &CheckedWrite) -> Result<(), ()> {
        if b.committed.load(Ordering::Relaxed) {
            this.versions[b.seq as usize].store(b.value + 1, Ordering::Release);
        }
        Ok(())
    }

    fn publish(this: &Self, _ctx: &(), last_seq: u64) {
        this.visible.fetch_max(last_seq, Ordering::Release);
    }

    fn insert_failed(_this: &Self, _err: &()) {
        unreachable!("toy inserts do not fail")
    }
}

/// Two read-modify-writes of one counter race: whichever interleaving,
/// the counter ends equal to the number of writes that committed (no lost
/// update), and when both read the same value exactly one of them wins.
#[test]
fn loom_commit_check_races_another_commit() {
    loom::model(|| {
        let toy = Arc::new(ToyCounter {
            versions: std::array::from_fn(|_| AtomicU64::new(0)),
            next_seq: AtomicU64::new(1),
            visible: AtomicU64::new(0),
        });
        let wt = Arc::new(WriteThread::<ToyCounter>::new());
        let writers: Vec<_> = (0..2)
            .map(|_| {
                let toy = Arc::clone(&toy);
                let wt = Arc::clone(&wt);
                thread::spawn(move || {
                    let since = toy.visible.load(Ordering::Acquire);
                    let read = toy.read(since);
                    let committed = std::sync::Arc::new(AtomicBool::new(false));
                    let w = CheckedWrite {
                        since,
                        value: read + 1,
                        seq: 0,
                        committed: std::sync::Arc::clone(&committed),
                    };
                    wt.write(&toy, w).unwrap();
                    (read, committed.load(Ordering::Relaxed))
                })
            })
            .collect();
        let results: Vec<(u64, bool)> = writers.into_iter().map(|w| w.join().unwrap()).collect();
        let wins = results.iter().filter(|r| r.1).count() as u64;
        let last = toy.visible.load(Ordering::Acquire);
        assert_eq!(toy.read(last), wins, "lost update: {results:?}");
        if results[0].0 == results[1].0 {
            assert_eq!(wins, 1, "both read {} and {wins} won", results[0].0);
        }
    });
}
