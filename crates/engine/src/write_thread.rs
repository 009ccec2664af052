//! The write group: concurrent writers commit together.
//!
//! This is LevelDB's writer queue, run as a *combining* queue, with
//! RocksDB's parallel memtable insert and its spin-before-park wait:
//!
//! 1. A writer takes a **ticket** and queues its batch. Any writer that
//!    finds no group in flight becomes the **leader** and takes a prefix
//!    of the queue as its group — the batches queued first, its own among
//!    them when it fits — so a writer never waits for a sleeping writer to
//!    wake up and lead its own batch (LevelDB and RocksDB make the writer
//!    at the front lead; on two cores that turns every hand-over into a
//!    sleep and a wake-up). A leader whose batch did not fit leads again.
//! 2. The group is bounded in bytes; a group whose first batch is not a
//!    sync write takes no sync write; WAL and no-WAL writes are not mixed,
//!    nor `no_slowdown` writes and writes that wait out stalls;
//!    a solo batch (an ingestion of external files) is a group alone.
//!    Without holding the queue lock the leader
//!    [`prepare`](GroupCommit::prepare)s it: stalls, memtable switch,
//!    sequence numbers in ticket order, one WAL record, one sync if any
//!    member asked for it.
//! 3. The batches are inserted into the memtable: by the leader alone for a
//!    group of fewer than four batches, otherwise by every waiting writer
//!    that is awake, each taking the next batch from a shared counter.
//! 4. When every insert returned, the leader [`publish`](GroupCommit::publish)es
//!    the group's last sequence number — readers never see a sequence
//!    number before every smaller one is in the memtable — marks the
//!    tickets complete and wakes the writers that sleep.
//!
//! A waiting writer first spins, then yields, for a bounded time (RocksDB's
//! `AwaitState`), watching two atomics — the completed-ticket mark and an
//! epoch bumped when a leader leaves or a parallel insert starts — and only
//! then sleeps on the condition variable: a group commits in about a
//! microsecond, far less than a sleep and a wake-up cost.
//!
//! **Sync groups gather.** A group that syncs the WAL takes hundreds of
//! microseconds (`fdatasync`), and writers that wait for it come back with
//! their next sync write right after it. Left alone, the writers split into
//! two groups that alternate (half of them queue while the other half
//! syncs), so each sync serves half of the writers. So the leader of a
//! sync group first waits, for at most a quarter of the recent sync
//! groups' commit time (and 200 µs), until every member of the previous sync group that
//! will come back has queued again (each thread remembers the ticket of
//! its last sync write; a writer whose ticket was in the last sync group
//! counts itself back). One writer alone never waits: it is the member it
//! would wait for. Compiled out under loom (it only delays a leader).
//!
//! Groups never overlap, so a memtable switch in `prepare` never races
//! with inserts. The protocol is checked by loom models
//! (`loom_write_group_publishes_in_order` and the others in
//! `loom_tests.rs`; under loom a waiter sleeps at once).

use std::collections::VecDeque;

use lithify_base::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use lithify_base::sync::{Arc, Condvar, Mutex};

/// What the write group needs from the database.
pub(crate) trait GroupCommit {
    /// What the group commits into (the database).
    type Target;
    /// One writer's unit of work.
    type Batch: Send + Sync;
    /// What the inserts of a group share (the memtables, the sequences).
    type Ctx: Send + Sync;
    /// An error every member of a failed group gets a copy of.
    type Error: Clone;

    /// Bytes of a batch (for the group size limit).
    fn batch_bytes(batch: &Self::Batch) -> usize;
    /// Whether the batch asked for a WAL sync.
    fn batch_sync(batch: &Self::Batch) -> bool;
    /// Whether the batch skips the WAL.
    fn batch_disables_wal(batch: &Self::Batch) -> bool;
    /// Whether the batch must be a group of its own (an ingestion).
    fn batch_solo(_batch: &Self::Batch) -> bool {
        false
    }
    /// Whether the batch fails rather than waits out a stall (a group's
    /// members must agree: the group waits or fails as one).
    fn batch_no_slowdown(_batch: &Self::Batch) -> bool {
        false
    }
    /// The upper bound of a group's bytes.
    fn max_group_bytes(target: &Self::Target) -> usize;
    /// Takes back a batch of a group the leader inserted alone, once the
    /// group is complete (on the leader's thread), e.g. to reuse its
    /// buffer. By default it is dropped.
    fn reclaim(_target: &Self::Target, _batch: Self::Batch) {}

    /// Leader only, groups never overlap: everything before the memtable
    /// inserts. Returns the shared insert context and the group's last
    /// sequence number.
    fn prepare(
        target: &Self::Target,
        group: &mut [Self::Batch],
    ) -> Result<(Self::Ctx, u64), Self::Error>;
    /// Inserts one batch (any thread, concurrently with other batches of
    /// the group).
    fn insert(
        target: &Self::Target,
        ctx: &Self::Ctx,
        batch: &Self::Batch,
    ) -> Result<(), Self::Error>;
    /// Leader only, after every insert of the group returned `Ok`: makes
    /// `last_seq` visible to readers.
    fn publish(target: &Self::Target, ctx: &Self::Ctx, last_seq: u64);
    /// Leader only, after an insert failed: the database must stop
    /// accepting writes (the WAL holds what the memtable lacks).
    fn insert_failed(target: &Self::Target, err: &Self::Error);
}

/// A group whose batches several threads insert.
struct ParallelInsert<B, X, E> {
    batches: Vec<B>,
    ctx: X,
    /// Index of the next batch to take.
    next: AtomicUsize,
    /// Batches not yet inserted.
    remaining: AtomicUsize,
    error: Mutex<Option<E>>,
}

impl<B, X, E> ParallelInsert<B, X, E> {
    fn has_work(&self) -> bool {
        self.next.load(Ordering::Relaxed) < self.batches.len()
    }
}

struct Failure<E> {
    first: u64,
    last: u64,
    /// Members (not the leader) that have yet to collect the error.
    waiting: u64,
    error: E,
}

/// The parallel insert of a group of `C`.
type SharedInsert<C> = Arc<
    ParallelInsert<<C as GroupCommit>::Batch, <C as GroupCommit>::Ctx, <C as GroupCommit>::Error>,
>;

struct State<C: GroupCommit> {
    pending: VecDeque<(u64, C::Batch)>,
    next_ticket: u64,
    /// Every ticket below this is complete.
    completed_below: u64,
    leader_active: bool,
    inserting: Option<SharedInsert<C>>,
    failures: Vec<Failure<C::Error>>,
    /// A spare vector for the next group's batches.
    spare: Vec<C::Batch>,
    /// Tickets of the last completed group that synced the WAL.
    last_sync_group: (u64, u64),
}

/// The queue of writers; see the [module documentation](self).
pub(crate) struct WriteThread<C: GroupCommit> {
    state: Mutex<State<C>>,
    cv: Condvar,
    /// `State::completed_below`, readable without the lock (by spinning
    /// waiters).
    completed: AtomicU64,
    /// Bumped when a leader leaves or a parallel insert starts: a spinning
    /// waiter that sees it change has something to check.
    epoch: AtomicU64,
    /// Members of the last sync group that have not yet come back with
    /// another sync write (changed under the state lock, read by a
    /// gathering leader without it).
    returners: AtomicUsize,
    /// Moving average of a sync group's commit time, in nanoseconds.
    #[cfg(not(loom))]
    sync_commit_nanos: AtomicU64,
}

#[cfg(not(loom))]
std::thread_local! {
    /// The write thread (by address) and ticket of this thread's last sync
    /// write.
    static LAST_SYNC_TICKET: std::cell::Cell<(usize, u64)> =
        const { std::cell::Cell::new((0, u64::MAX)) };
}

/// The longest a sync group's leader waits for returning writers.
#[cfg(not(loom))]
const MAX_GATHER: std::time::Duration = std::time::Duration::from_micros(200);

/// Groups of fewer batches are inserted by the leader alone: handing a
/// batch or two to other threads costs more than inserting it (fillrandom
/// with 2 and 4 writers: 6 % and 10 % more ops/s than from 2 batches).
#[cfg(not(loom))]
const PARALLEL_INSERT_MIN: usize = 4;
/// Under loom every group of two or more inserts in parallel, so that the
/// models reach that path with few writers.
#[cfg(loom)]
const PARALLEL_INSERT_MIN: usize = 2;

/// Spin iterations (`spin_loop` hints, well under a microsecond in all)
/// before a waiter starts yielding its core.
#[cfg(not(loom))]
const SPIN_ROUNDS: u32 = 128;
/// How long a waiter yields before it sleeps. RocksDB adapts its yield
/// phase (up to 100 µs) to how often it paid off; a group here commits in
/// a few microseconds, so a fixed bound near that is enough.
#[cfg(not(loom))]
const YIELD_FOR: std::time::Duration = std::time::Duration::from_micros(50);

impl<C: GroupCommit> WriteThread<C> {
    pub(crate) fn new() -> Self {
        WriteThread {
            state: Mutex::new(State {
                pending: VecDeque::new(),
                next_ticket: 0,
                completed_below: 0,
                leader_active: false,
                inserting: None,
                failures: Vec::new(),
                spare: Vec::new(),
                last_sync_group: (u64::MAX, u64::MAX),
            }),
            cv: Condvar::new(),
            completed: AtomicU64::new(0),
            epoch: AtomicU64::new(0),
            returners: AtomicUsize::new(0),
            #[cfg(not(loom))]
            sync_commit_nanos: AtomicU64::new(0),
        }
    }

    /// Commits `batch` as part of a group; returns when its group is
    /// complete.
    pub(crate) fn write(&self, c: &C::Target, batch: C::Batch) -> Result<(), C::Error> {
        let sync = C::batch_sync(&batch);
        let mut st = self.state.lock();
        let ticket = st.next_ticket;
        st.next_ticket += 1;
        if sync {
            self.count_returner(&st, ticket);
        }
        st.pending.push_back((ticket, batch));
        loop {
            if ticket < st.completed_below {
                return Self::collect(&mut st, ticket);
            }
            if !st.leader_active {
                // Our batch is queued (no group is in flight), so the
                // queue is not empty: lead its front.
                st.leader_active = true;
                let front = &st.pending.front().expect("our batch is queued").1;
                if C::batch_sync(front) && self.returners.load(Ordering::Relaxed) > 0 {
                    drop(st);
                    self.gather();
                    st = self.state.lock();
                }
                let first = st.pending.front().expect("our batch is queued").0;
                let mut group = std::mem::take(&mut st.spare);
                let last = Self::take_group(c, &mut st.pending, &mut group);
                drop(st);
                let ours = ticket <= last;
                let result = self.lead(c, first, last, group, ours.then_some(ticket));
                if ours {
                    return result;
                }
                st = self.state.lock();
                continue;
            }
            if let Some(g) = st.inserting.clone()
                && g.has_work()
            {
                drop(st);
                self.help_and_notify(c, &g);
                drop(g);
                st = self.state.lock();
                continue;
            }
            let epoch = self.epoch.load(Ordering::Acquire);
            drop(st);
            let woke = self.spin_until(|| {
                self.completed.load(Ordering::Acquire) > ticket
                    || self.epoch.load(Ordering::Acquire) != epoch
            });
            st = self.state.lock();
            if woke || self.epoch.load(Ordering::Relaxed) != epoch {
                continue;
            }
            // Unchanged under the lock: every change is made under it, so
            // the notification for it cannot be missed.
            st = self.cv.wait(st);
        }
    }

    /// A sync write with `ticket` arrives: if this thread's previous sync
    /// write was in the last sync group, one fewer member is awaited.
    /// Remembers `ticket` as this thread's last sync write.
    #[cfg(not(loom))]
    fn count_returner(&self, st: &State<C>, ticket: u64) {
        let me = self as *const Self as usize;
        let (owner, previous) = LAST_SYNC_TICKET.with(|t| t.replace((me, ticket)));
        let (first, last) = st.last_sync_group;
        if owner == me && (first..=last).contains(&previous) {
            let n = self.returners.load(Ordering::Relaxed);
            self.returners.store(n.saturating_sub(1), Ordering::Relaxed);
        }
    }

    #[cfg(loom)]
    fn count_returner(&self, _st: &State<C>, _ticket: u64) {}

    /// A sync group's leader waits, for at most a quarter of a sync group's
    /// recent commit time, until the last sync group's members are back
    /// (fillrandom with fsync, 8 threads: 0.23 syncs per write without the
    /// wait, 0.15 waiting an eighth, 0.128 a quarter).
    #[cfg(not(loom))]
    fn gather(&self) {
        let commit = self.sync_commit_nanos.load(Ordering::Relaxed);
        let limit = std::time::Duration::from_nanos(commit / 4).min(MAX_GATHER);
        let start = std::time::Instant::now();
        let mut spins = 0;
        while self.returners.load(Ordering::Relaxed) > 0 && start.elapsed() < limit {
            if spins < SPIN_ROUNDS {
                spins += 1;
                lithify_base::sync::spin_loop();
            } else {
                lithify_base::sync::thread::yield_now();
            }
        }
    }

    #[cfg(loom)]
    fn gather(&self) {}

    /// Spins, then yields, until `done` holds or the wait has lasted long
    /// enough that sleeping is cheaper; returns whether `done` held.
    #[cfg(not(loom))]
    fn spin_until(&self, done: impl Fn() -> bool) -> bool {
        for _ in 0..SPIN_ROUNDS {
            if done() {
                return true;
            }
            lithify_base::sync::spin_loop();
        }
        let start = std::time::Instant::now();
        while start.elapsed() < YIELD_FOR {
            if done() {
                return true;
            }
            lithify_base::sync::thread::yield_now();
        }
        done()
    }

    /// Under loom a waiter checks once and sleeps: spinning would only
    /// multiply the interleavings to explore.
    #[cfg(loom)]
    fn spin_until(&self, done: impl Fn() -> bool) -> bool {
        done()
    }

    /// A member's result once its group completed.
    fn collect(st: &mut State<C>, ticket: u64) -> Result<(), C::Error> {
        let Some(i) = st
            .failures
            .iter()
            .position(|f| f.first <= ticket && ticket <= f.last)
        else {
            return Ok(());
        };
        let f = &mut st.failures[i];
        let err = f.error.clone();
        f.waiting -= 1;
        if f.waiting == 0 {
            st.failures.swap_remove(i);
        }
        Err(err)
    }

    /// Moves the queue's front batch and the compatible ones behind it
    /// into `group`; returns the last ticket taken.
    fn take_group(
        c: &C::Target,
        pending: &mut VecDeque<(u64, C::Batch)>,
        group: &mut Vec<C::Batch>,
    ) -> u64 {
        let (mut last, leader) = pending.pop_front().expect("the queue is not empty");
        let sync = C::batch_sync(&leader);
        let no_wal = C::batch_disables_wal(&leader);
        let leader_bytes = C::batch_bytes(&leader);
        let mut max = C::max_group_bytes(c);
        if leader_bytes <= max / 8 {
            max = leader_bytes + max / 8;
        }
        let mut bytes = leader_bytes;
        let solo = C::batch_solo(&leader);
        let no_slowdown = C::batch_no_slowdown(&leader);
        group.push(leader);
        while let Some((_, next)) = pending.front() {
            let b = C::batch_bytes(next);
            if solo
                || C::batch_solo(next)
                || C::batch_no_slowdown(next) != no_slowdown
                || (C::batch_sync(next) && !sync)
                || C::batch_disables_wal(next) != no_wal
                || bytes + b > max
            {
                break;
            }
            bytes += b;
            let (t, next) = pending.pop_front().expect("front exists");
            last = t;
            group.push(next);
        }
        last
    }

    fn help(c: &C::Target, g: &ParallelInsert<C::Batch, C::Ctx, C::Error>) -> bool {
        let mut did_last = false;
        loop {
            let i = g.next.fetch_add(1, Ordering::Relaxed);
            let Some(batch) = g.batches.get(i) else {
                return did_last;
            };
            if let Err(e) = C::insert(c, &g.ctx, batch) {
                g.error.lock().get_or_insert(e);
            }
            // AcqRel: the leader's acquire of 0 sees every insert.
            if g.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
                did_last = true;
            }
        }
    }

    /// Commits the group of tickets `first..=last`; `own` is the leader's
    /// ticket when its batch is in the group (the leader gets that result
    /// directly, the other members collect theirs).
    fn lead(
        &self,
        c: &C::Target,
        first: u64,
        last: u64,
        mut group: Vec<C::Batch>,
        own: Option<u64>,
    ) -> Result<(), C::Error> {
        let sync = group.first().is_some_and(C::batch_sync);
        #[cfg(not(loom))]
        let started = sync.then(std::time::Instant::now);
        let result = match C::prepare(c, &mut group) {
            Err(e) => Err(e),
            Ok((ctx, last_seq)) if group.len() < PARALLEL_INSERT_MIN => {
                let inserted = group.iter().try_for_each(|b| C::insert(c, &ctx, b));
                Self::finish_inserts(c, &ctx, last_seq, inserted)
            }
            Ok((ctx, last_seq)) => {
                let n = group.len();
                let g = Arc::new(ParallelInsert {
                    batches: std::mem::take(&mut group),
                    ctx,
                    next: AtomicUsize::new(0),
                    remaining: AtomicUsize::new(n),
                    error: Mutex::new(None),
                });
                {
                    let mut st = self.state.lock();
                    st.inserting = Some(Arc::clone(&g));
                    self.epoch.fetch_add(1, Ordering::Release);
                }
                self.cv.notify_all();
                Self::help(c, &g);
                // The helpers still inserting are running: spin first.
                if !self.spin_until(|| g.remaining.load(Ordering::Acquire) == 0) {
                    let mut st = self.state.lock();
                    while g.remaining.load(Ordering::Acquire) > 0 {
                        st = self.cv.wait(st);
                    }
                }
                // Acquire: every helper's insert happened before its
                // decrement that `remaining` shows.
                debug_assert_eq!(g.remaining.load(Ordering::Acquire), 0);
                self.state.lock().inserting = None;
                let inserted = match g.error.lock().take() {
                    Some(e) => Err(e),
                    None => Ok(()),
                };
                Self::finish_inserts(c, &g.ctx, last_seq, inserted)
            }
        };
        for batch in group.drain(..) {
            C::reclaim(c, batch);
        }
        let mut st = self.state.lock();
        if sync {
            // Before the tickets complete: a member coming back must find
            // its group here.
            st.last_sync_group = (first, last);
            self.returners
                .store((last - first + 1) as usize, Ordering::Relaxed);
            #[cfg(not(loom))]
            if let Some(started) = started {
                let took = started.elapsed().as_nanos().min(u128::from(u64::MAX)) as u64;
                let avg = self.sync_commit_nanos.load(Ordering::Relaxed);
                let avg = if avg == 0 {
                    took
                } else {
                    avg - avg / 8 + took / 8
                };
                self.sync_commit_nanos.store(avg, Ordering::Relaxed);
            }
        }
        st.completed_below = last + 1;
        self.completed.store(last + 1, Ordering::Release);
        st.leader_active = false;
        self.epoch.fetch_add(1, Ordering::Release);
        if st.spare.capacity() < group.capacity() {
            st.spare = group;
        }
        let members = last - first + 1 - u64::from(own.is_some());
        if let Err(e) = &result
            && members > 0
        {
            st.failures.push(Failure {
                first,
                last,
                waiting: members,
                error: e.clone(),
            });
        }
        drop(st);
        self.cv.notify_all();
        result
    }

    fn finish_inserts(
        c: &C::Target,
        ctx: &C::Ctx,
        last_seq: u64,
        inserted: Result<(), C::Error>,
    ) -> Result<(), C::Error> {
        match inserted {
            Ok(()) => {
                C::publish(c, ctx, last_seq);
                Ok(())
            }
            Err(e) => {
                C::insert_failed(c, &e);
                Err(e)
            }
        }
    }

    /// `help` as called from a waiting writer: wakes the leader (if it
    /// sleeps) when this writer inserted the group's last batch.
    fn help_and_notify(&self, c: &C::Target, g: &ParallelInsert<C::Batch, C::Ctx, C::Error>) {
        if Self::help(c, g) {
            let _st = self.state.lock();
            self.cv.notify_all();
        }
    }
}
