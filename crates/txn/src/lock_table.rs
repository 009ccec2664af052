//! The per-key lock manager of pessimistic transactions.
//!
//! This follows RocksDB's `PointLockManager`
//! (`utilities/transactions/lock/point/point_lock_manager.cc`), exclusive
//! locks only: [`LockTable::lock`] is `TryLock` → `AcquireWithTimeout` →
//! `AcquireLocked`, [`LockTable::unlock`] is `UnLock` → `UnLockKey`, and the
//! wait-for graph is `IncrementWaiters` / `DecrementWaiters`. Lock expiration
//! (`TransactionOptions::expiration`), `max_num_locks` and shared locks are
//! not implemented.
//!
//! # Stripes
//!
//! A lock is a `(table, key)` pair. Locks are spread over `num_stripes`
//! stripes by xxh3 of the key seeded with the table id, mapped onto the
//! stripes with RocksDB's `FastRange64`. A stripe is a mutex over the locks
//! it holds (by table, then key, so that a lookup borrows the caller's
//! `&[u8]` and only taking a lock builds a [`Bytes`]) and a condition
//! variable that every waiter of the stripe sleeps on. A release wakes the
//! stripe's waiters (RocksDB's `NotifyAll`) when someone waits for that
//! lock; each re-checks its own lock under the stripe mutex, so a wake-up is
//! never lost: a waiter marks the lock contended and starts waiting without
//! letting go of the stripe mutex, and the release reads the mark under the
//! same mutex.
//!
//! # Deadlock detection
//!
//! A waiting transaction that asked for deadlock detection records an edge
//! `waiter → (holder, table, key)` in the wait-for graph before it sleeps,
//! and again each time the holder it waits for changes. Locks are exclusive,
//! so a waiter waits for exactly one holder and the graph is a set of chains.
//! Recording the edge and walking the chain from the holder happen in one
//! critical section, so of the transactions that close a cycle the last one
//! to record its edge sees it: that transaction fails with
//! [`LockError::Deadlock`] (RocksDB's `Status::Busy(kDeadlock)`) and the
//! others keep waiting. See [`LockTable::lock`] for the depth limit.
//!
//! An edge is removed when its waiter stops waiting (lock taken, timed out,
//! deadlock) and, unlike RocksDB, also when the holder releases that lock:
//! RocksDB keeps the stale edge until the woken waiter runs, so a
//! transaction that releases one key (rollback to a save point) and at once
//! waits for a key held by its former waiter can be told it deadlocked.
//!
//! # Lock order
//!
//! A stripe mutex, then the wait-for mutex; never two stripes at once, and
//! never a stripe while holding the wait-for mutex. `lock` records its edge
//! and `unlock` drops the stale edges while holding their stripe (as RocksDB
//! calls `IncrementWaiters` under the stripe mutex); the chain walk takes
//! no stripe. Nobody sleeps holding the wait-for mutex.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::time::{Duration, Instant};

use bytes::Bytes;
use lithify_base::sync::{Condvar, Mutex};
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// A transaction's id (unique per TransactionDb).
pub(crate) type TxnId = u64;

/// One hop of a wait-for chain: the waiting transaction, and the table and
/// key of the lock it waits for.
type Hop = (TxnId, u32, Bytes);

/// Why [`LockTable::lock`] did not take the lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LockError {
    /// The timeout ran out (at once for a zero timeout) and `holder` still
    /// held the lock. RocksDB's `Status::TimedOut(kLockTimeout)`.
    TimedOut {
        /// The transaction holding the lock at the last attempt.
        holder: TxnId,
    },
    /// Waiting would close a cycle: `cycle` lists the (waiting txn, table,
    /// key it waits for) hops, starting with `txn` itself; the holder of the
    /// last hop's key is `txn`. RocksDB's `Status::Busy(kDeadlock)`.
    ///
    /// When the chain is longer than the `depth` given to
    /// [`LockTable::lock`], RocksDB assumes a deadlock: `cycle` then holds
    /// the `depth + 1` hops walked, which do not close. A real cycle has at
    /// most `depth` hops, so `cycle.len() > depth` tells the two apart
    /// (RocksDB's `DeadlockPath::limit_exceeded`).
    Deadlock {
        /// The hops of the cycle (or of the chain walked up to the limit).
        cycle: Vec<(TxnId, u32, bytes::Bytes)>,
    },
}

impl fmt::Display for LockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockError::TimedOut { holder } => write!(
                f,
                "timed out waiting for a lock held by transaction {holder}"
            ),
            LockError::Deadlock { cycle } => write!(
                f,
                "waiting for the lock would deadlock: a wait-for chain of {} transactions",
                cycle.len()
            ),
        }
    }
}

impl std::error::Error for LockError {}

/// A taken lock, in its stripe.
#[derive(Debug)]
struct LockEntry {
    /// The transaction holding the lock.
    holder: TxnId,
    /// Someone waited for this lock since it was taken: its release must
    /// wake the stripe and drop wait-for edges pointing at it. Never cleared
    /// while the lock is held (a waiter that gave up costs one spare
    /// wake-up).
    contended: bool,
}

/// The locks of one stripe, by table, then key.
type StripeLocks = HashMap<u32, HashMap<Bytes, LockEntry>>;

/// One lock stripe: RocksDB's `LockMapStripe`.
#[derive(Debug, Default)]
struct Stripe {
    /// The locks taken in this stripe.
    locks: Mutex<StripeLocks>,
    /// Notified when a contended lock of this stripe is released.
    released: Condvar,
}

/// What one attempt to take a lock found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attempt {
    /// The lock was free and is now held by the caller.
    Taken,
    /// The caller already held it.
    AlreadyHeld,
    /// Another transaction holds it.
    HeldBy(TxnId),
}

/// Tries to take `(table, key)` for `txn` in a stripe's locks (RocksDB's
/// `AcquireLocked`). When another transaction holds it and the caller is
/// about to wait (`will_wait`), marks the lock contended so that its release
/// wakes the caller.
fn try_acquire(
    locks: &mut StripeLocks,
    txn: TxnId,
    table: u32,
    key: &[u8],
    will_wait: bool,
) -> Attempt {
    let keys = locks.entry(table).or_default();
    match keys.get_mut(key) {
        Some(entry) if entry.holder == txn => Attempt::AlreadyHeld,
        Some(entry) => {
            entry.contended |= will_wait;
            Attempt::HeldBy(entry.holder)
        }
        None => {
            keys.insert(
                Bytes::copy_from_slice(key),
                LockEntry {
                    holder: txn,
                    contended: false,
                },
            );
            Attempt::Taken
        }
    }
}

/// A wait-for edge: its waiter waits for `holder` to release `(table, key)`.
#[derive(Debug)]
struct WaitEdge {
    /// The transaction holding the lock.
    holder: TxnId,
    /// The lock's table.
    table: u32,
    /// The lock's key.
    key: Bytes,
}

/// The wait-for graph of the transactions that asked for deadlock
/// detection: RocksDB's `wait_txn_map_` and `rev_wait_txn_map_`.
///
/// Invariant: the graph has no cycle, since the transaction whose edge would
/// close one removes it at once; so a walk along it ends.
#[derive(Debug, Default)]
struct WaitForGraph {
    /// Each waiting transaction's edge.
    edges: HashMap<TxnId, WaitEdge>,
    /// For each holder, how many edges point at it (absent when none).
    waiters_on: HashMap<TxnId, usize>,
}

impl WaitForGraph {
    /// Records that `txn` waits for `holder`'s lock on `(table, key)` and
    /// checks whether that closes a cycle (RocksDB's `IncrementWaiters`).
    ///
    /// If `txn` already had that very edge, nothing changed and nothing is
    /// checked. On a deadlock the edge is removed again and the hops are
    /// returned.
    fn start_waiting(
        &mut self,
        txn: TxnId,
        holder: TxnId,
        table: u32,
        key: &Bytes,
        depth: usize,
    ) -> Result<(), Vec<Hop>> {
        let unchanged = self
            .edges
            .get(&txn)
            .is_some_and(|e| e.holder == holder && e.table == table && e.key == *key);
        if unchanged {
            return Ok(());
        }
        self.set_edge(
            txn,
            WaitEdge {
                holder,
                table,
                key: key.clone(),
            },
        );
        // As RocksDB: with nobody waiting for `txn` no cycle can go through
        // it, whatever the depth.
        if !self.waiters_on.contains_key(&txn) {
            return Ok(());
        }
        match self.find_cycle(txn, depth) {
            Some(cycle) => {
                self.stop_waiting(txn);
                Err(cycle)
            }
            None => Ok(()),
        }
    }

    /// Walks the chain from `txn`'s own edge. Returns the hops if it comes
    /// back to `txn`, or if it is longer than `depth` hops (RocksDB assumes
    /// a deadlock then); `None` if it ends at a transaction that does not
    /// wait. A `depth` of 0 acts as 1.
    fn find_cycle(&self, txn: TxnId, depth: usize) -> Option<Vec<Hop>> {
        let depth = depth.max(1);
        let first = self.edges.get(&txn)?;
        let mut hops = vec![(txn, first.table, first.key.clone())];
        let mut next = first.holder;
        while next != txn {
            let edge = self.edges.get(&next)?;
            hops.push((next, edge.table, edge.key.clone()));
            if hops.len() > depth {
                break;
            }
            next = edge.holder;
        }
        Some(hops)
    }

    /// Sets `waiter`'s edge, replacing any previous one.
    fn set_edge(&mut self, waiter: TxnId, edge: WaitEdge) {
        *self.waiters_on.entry(edge.holder).or_insert(0) += 1;
        if let Some(old) = self.edges.insert(waiter, edge) {
            self.forget_waiters(old.holder, 1);
        }
    }

    /// Removes `waiter`'s edge, if any (RocksDB's `DecrementWaiters`).
    fn stop_waiting(&mut self, waiter: TxnId) {
        if let Some(old) = self.edges.remove(&waiter) {
            self.forget_waiters(old.holder, 1);
        }
    }

    /// Removes the edges pointing at `holder`'s lock on `(table, key)`, which
    /// `holder` just released.
    fn drop_edges_to(&mut self, holder: TxnId, table: u32, key: &[u8]) {
        if !self.waiters_on.contains_key(&holder) {
            return;
        }
        let before = self.edges.len();
        self.edges
            .retain(|_, e| !(e.holder == holder && e.table == table && e.key == key));
        self.forget_waiters(holder, before - self.edges.len());
    }

    /// Takes `n` edges off `holder`'s count of waiters.
    fn forget_waiters(&mut self, holder: TxnId, n: usize) {
        if n == 0 {
            return;
        }
        if let Entry::Occupied(mut count) = self.waiters_on.entry(holder) {
            *count.get_mut() = count.get().saturating_sub(n);
            if *count.get() == 0 {
                count.remove();
            }
        }
    }
}

/// The lock manager: RocksDB's `PointLockManager` for one database, with
/// every table (column family) in the same stripes.
#[derive(Debug)]
pub(crate) struct LockTable {
    /// The lock stripes (at least one).
    stripes: Box<[Stripe]>,
    /// The wait-for graph; taken after a stripe mutex, never before.
    wait_for: Mutex<WaitForGraph>,
}

impl LockTable {
    /// `stripes` lock stripes (RocksDB's num_stripes, default 16). Zero is
    /// taken as one.
    pub(crate) fn new(stripes: usize) -> Self {
        let stripes = (0..stripes.max(1)).map(|_| Stripe::default()).collect();
        LockTable {
            stripes,
            wait_for: Mutex::new(WaitForGraph::default()),
        }
    }

    /// Takes the exclusive lock of (table, key) for `txn`. Returns Ok(true)
    /// if newly taken, Ok(false) if `txn` already held it (re-entrant, no
    /// count).
    ///
    /// `timeout`: None waits forever; Some(Duration::ZERO) fails at once
    /// with [`LockError::TimedOut`] if another txn holds it, without
    /// deadlock detection (as RocksDB with `lock_timeout` 0); otherwise waits
    /// at most that long, then makes one last attempt (as RocksDB) before
    /// [`LockError::TimedOut`].
    ///
    /// `deadlock_detect`: before each wait, and each time the holder it
    /// waits for changes, follows the wait-for chain starting from the
    /// holder; if it reaches `txn` within `depth` hops (counting `txn`'s
    /// own), returns [`LockError::Deadlock`] with the cycle. If the chain
    /// goes on past `depth` hops, this is a deadlock too, as in RocksDB's
    /// `IncrementWaiters` ("Wait cycle too big, just assume deadlock"); and
    /// as there, no deadlock is reported while nobody waits for `txn`. One
    /// difference: RocksDB's walk also gives up when the `depth`-th
    /// transaction on the chain does not wait, where this walk sees that the
    /// chain ends there and reports no deadlock.
    ///
    /// A transaction waits for one lock at a time (one thread per
    /// transaction).
    pub(crate) fn lock(
        &self,
        txn: TxnId,
        table: u32,
        key: &[u8],
        timeout: Option<Duration>,
        deadlock_detect: bool,
        depth: usize,
    ) -> Result<bool, LockError> {
        let stripe = self.stripe(table, key);
        let may_wait = timeout != Some(Duration::ZERO);
        let mut locks = stripe.locks.lock();
        let mut holder = match try_acquire(&mut locks, txn, table, key, may_wait) {
            Attempt::Taken => return Ok(true),
            Attempt::AlreadyHeld => return Ok(false),
            Attempt::HeldBy(holder) => holder,
        };
        if !may_wait {
            return Err(LockError::TimedOut { holder });
        }
        // A timeout too large for an `Instant` waits forever.
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        // The key of the wait-for edge, built once per call.
        let edge_key = deadlock_detect.then(|| Bytes::copy_from_slice(key));
        loop {
            // Here `holder` holds the lock and `locks` is still held since
            // the failed attempt, so the release cannot slip in between.
            if let Some(edge_key) = &edge_key {
                let verdict = self
                    .wait_for
                    .lock()
                    .start_waiting(txn, holder, table, edge_key, depth);
                if let Err(cycle) = verdict {
                    return Err(LockError::Deadlock { cycle });
                }
            }
            let timed_out = match deadline {
                None => {
                    locks = stripe.released.wait(locks);
                    false
                }
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        true
                    } else {
                        let (guard, timed_out) = stripe.released.wait_timeout(locks, left);
                        locks = guard;
                        timed_out
                    }
                }
            };
            // One more attempt even after a time-out, as RocksDB.
            let attempt = try_acquire(&mut locks, txn, table, key, !timed_out);
            let result = match attempt {
                Attempt::Taken => Ok(true),
                Attempt::AlreadyHeld => Ok(false),
                Attempt::HeldBy(now_held_by) if timed_out => Err(LockError::TimedOut {
                    holder: now_held_by,
                }),
                Attempt::HeldBy(now_held_by) => {
                    holder = now_held_by;
                    continue;
                }
            };
            if deadlock_detect {
                self.wait_for.lock().stop_waiting(txn);
            }
            return result;
        }
    }

    /// Releases (table, key) if `txn` holds it (no-op otherwise); wakes
    /// waiters.
    pub(crate) fn unlock(&self, txn: TxnId, table: u32, key: &[u8]) {
        let stripe = self.stripe(table, key);
        let mut locks = stripe.locks.lock();
        let Some(keys) = locks.get_mut(&table) else {
            return;
        };
        if keys.get(key).is_none_or(|e| e.holder != txn) {
            return;
        }
        let contended = keys.remove(key).is_some_and(|e| e.contended);
        if contended {
            self.wait_for.lock().drop_edges_to(txn, table, key);
            drop(locks);
            stripe.released.notify_all();
        }
    }

    /// The holder of (table, key), if any.
    #[cfg_attr(
        not(test),
        allow(dead_code, reason = "part of the API; only tests call it so far")
    )]
    pub(crate) fn holder(&self, table: u32, key: &[u8]) -> Option<TxnId> {
        let locks = self.stripe(table, key).locks.lock();
        locks.get(&table)?.get(key).map(|e| e.holder)
    }

    /// Number of locks held (all stripes), for stats/tests. The stripes are
    /// counted one after the other, so under concurrent use the sum need not
    /// match any single moment.
    pub(crate) fn len(&self) -> usize {
        self.stripes
            .iter()
            .map(|s| s.locks.lock().values().map(HashMap::len).sum::<usize>())
            .sum()
    }

    /// The stripe of `(table, key)`: xxh3 of the key seeded with the table,
    /// mapped onto the stripes with RocksDB's `FastRange64` (the high half
    /// of hash × stripes), as `LockMap::GetStripe`.
    fn stripe(&self, table: u32, key: &[u8]) -> &Stripe {
        let hash = xxh3_64_with_seed(key, u64::from(table));
        let index = (u128::from(hash) * self.stripes.len() as u128) >> 64;
        // `index < stripes.len()` since `hash < 2^64`.
        &self.stripes[index as usize]
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Barrier, mpsc};
    use std::thread;

    use super::*;

    /// The table of most tests.
    const T: u32 = 7;
    /// RocksDB's default `deadlock_detect_depth`.
    const DEPTH: usize = 50;
    /// Only a safety net against hangs: no test waits this long when it
    /// passes.
    const SAFETY: Duration = Duration::from_secs(5);
    /// A timeout that runs out while the test holds the lock.
    const SHORT: Duration = Duration::from_millis(20);

    type LockResult = Result<bool, LockError>;

    fn hop(txn: TxnId, key: &'static [u8]) -> Hop {
        (txn, T, Bytes::from_static(key))
    }

    /// Locks `(T, key)` for `txn` on another thread; the result comes on the
    /// channel.
    fn spawn_lock(
        locks: &Arc<LockTable>,
        txn: TxnId,
        key: &'static [u8],
        timeout: Option<Duration>,
        deadlock_detect: bool,
    ) -> mpsc::Receiver<LockResult> {
        let (tx, rx) = mpsc::channel();
        let locks = Arc::clone(locks);
        thread::spawn(move || {
            let _ = tx.send(locks.lock(txn, T, key, timeout, deadlock_detect, DEPTH));
        });
        rx
    }

    /// Polls until `done` holds, failing after [`SAFETY`].
    fn eventually(what: &str, done: impl Fn() -> bool) {
        let deadline = Instant::now() + SAFETY;
        while !done() {
            assert!(Instant::now() < deadline, "never happened: {what}");
            thread::sleep(Duration::from_millis(1));
        }
    }

    /// The holder `txn`'s wait-for edge points at, if any.
    fn waits_for(locks: &LockTable, txn: TxnId) -> Option<TxnId> {
        locks.wait_for.lock().edges.get(&txn).map(|e| e.holder)
    }

    /// Blocks until `txn` (with deadlock detection) waits for `holder`. The
    /// edge is recorded under the stripe mutex, which the waiter keeps until
    /// it sleeps, so anything the test does to that stripe afterwards comes
    /// after the waiter sleeps.
    fn until_waiting(locks: &LockTable, txn: TxnId, holder: TxnId) {
        eventually(&format!("txn {txn} waits for {holder}"), || {
            waits_for(locks, txn) == Some(holder)
        });
    }

    /// Blocks until someone waits for `(T, key)` (works without deadlock
    /// detection).
    fn until_contended(locks: &LockTable, key: &[u8]) {
        eventually("the lock is contended", || {
            let stripe = locks.stripe(T, key);
            let guard = stripe.locks.lock();
            guard
                .get(&T)
                .and_then(|keys| keys.get(key))
                .is_some_and(|e| e.contended)
        });
    }

    fn recv(rx: &mpsc::Receiver<LockResult>) -> LockResult {
        rx.recv_timeout(SAFETY).expect("the locking thread hung")
    }

    #[test]
    fn relock_by_holder_is_reentrant_without_count() {
        let locks = LockTable::new(16);
        assert_eq!(locks.lock(1, T, b"k", None, true, DEPTH), Ok(true));
        assert_eq!(locks.lock(1, T, b"k", None, true, DEPTH), Ok(false));
        assert_eq!(
            locks.lock(1, T, b"k", Some(Duration::ZERO), false, DEPTH),
            Ok(false)
        );
        assert_eq!(locks.len(), 1);
        // No count: one unlock releases it.
        locks.unlock(1, T, b"k");
        assert_eq!(locks.holder(T, b"k"), None);
        assert_eq!(locks.len(), 0);
    }

    #[test]
    fn other_txn_fails_at_once_with_zero_timeout() {
        let locks = LockTable::new(16);
        assert_eq!(locks.lock(1, T, b"k", None, false, DEPTH), Ok(true));
        for detect in [false, true] {
            assert_eq!(
                locks.lock(2, T, b"k", Some(Duration::ZERO), detect, DEPTH),
                Err(LockError::TimedOut { holder: 1 })
            );
        }
        assert_eq!(locks.holder(T, b"k"), Some(1));
        assert_eq!(waits_for(&locks, 2), None);
    }

    #[test]
    fn other_txn_times_out_after_short_timeout() {
        let locks = LockTable::new(16);
        assert_eq!(locks.lock(1, T, b"k", None, false, DEPTH), Ok(true));
        for detect in [false, true] {
            assert_eq!(
                locks.lock(2, T, b"k", Some(SHORT), detect, DEPTH),
                Err(LockError::TimedOut { holder: 1 })
            );
            // The edge is gone with the wait.
            assert_eq!(waits_for(&locks, 2), None);
        }
        assert_eq!(locks.holder(T, b"k"), Some(1));
        // The waiter did not leave a lock behind.
        assert_eq!(locks.len(), 1);
    }

    #[test]
    fn zero_timeout_skips_deadlock_detection() {
        // As RocksDB: `lock_timeout` 0 fails with a time-out, even where
        // waiting would deadlock.
        let locks = Arc::new(LockTable::new(16));
        assert_eq!(locks.lock(1, T, b"a", None, true, DEPTH), Ok(true));
        assert_eq!(locks.lock(2, T, b"b", None, true, DEPTH), Ok(true));
        let waiter = spawn_lock(&locks, 1, b"b", Some(SAFETY), true);
        until_waiting(&locks, 1, 2);
        assert_eq!(
            locks.lock(2, T, b"a", Some(Duration::ZERO), true, DEPTH),
            Err(LockError::TimedOut { holder: 1 })
        );
        locks.unlock(2, T, b"b");
        assert_eq!(recv(&waiter), Ok(true));
    }

    #[test]
    fn waiter_takes_lock_after_unlock() {
        for detect in [false, true] {
            let locks = Arc::new(LockTable::new(16));
            assert_eq!(locks.lock(1, T, b"k", None, false, DEPTH), Ok(true));
            let waiter = spawn_lock(&locks, 2, b"k", None, detect);
            until_contended(&locks, b"k");
            if detect {
                until_waiting(&locks, 2, 1);
            }
            assert!(waiter.try_recv().is_err(), "took a held lock");
            locks.unlock(1, T, b"k");
            assert_eq!(recv(&waiter), Ok(true));
            assert_eq!(locks.holder(T, b"k"), Some(2));
            assert_eq!(waits_for(&locks, 2), None);
            assert_eq!(locks.len(), 1);
        }
    }

    #[test]
    fn waiter_with_timeout_takes_lock_after_unlock() {
        let locks = Arc::new(LockTable::new(1));
        assert_eq!(locks.lock(1, T, b"k", None, false, DEPTH), Ok(true));
        // Another lock of the same (only) stripe: its waiter and release
        // wake the waiter of `k` too, which must go back to sleep.
        assert_eq!(locks.lock(1, T, b"j", None, false, DEPTH), Ok(true));
        let k_waiter = spawn_lock(&locks, 2, b"k", Some(SAFETY), true);
        let j_waiter = spawn_lock(&locks, 3, b"j", Some(SAFETY), true);
        until_waiting(&locks, 2, 1);
        until_waiting(&locks, 3, 1);
        locks.unlock(1, T, b"j");
        assert_eq!(recv(&j_waiter), Ok(true));
        assert!(k_waiter.try_recv().is_err(), "took a held lock");
        assert_eq!(waits_for(&locks, 2), Some(1));
        locks.unlock(1, T, b"k");
        assert_eq!(recv(&k_waiter), Ok(true));
        assert_eq!(locks.holder(T, b"k"), Some(2));
        assert_eq!(locks.holder(T, b"j"), Some(3));
    }

    #[test]
    fn waiter_follows_a_new_holder() {
        // 2 and 3 wait for 1; 1 releases, one of them takes the lock and the
        // other now waits for it, with its edge moved to the new holder.
        let locks = Arc::new(LockTable::new(16));
        assert_eq!(locks.lock(1, T, b"k", None, false, DEPTH), Ok(true));
        let w2 = spawn_lock(&locks, 2, b"k", Some(SAFETY), true);
        let w3 = spawn_lock(&locks, 3, b"k", Some(SAFETY), true);
        until_waiting(&locks, 2, 1);
        until_waiting(&locks, 3, 1);
        locks.unlock(1, T, b"k");
        let deadline = Instant::now() + SAFETY;
        let (first, first_rx, second, second_rx) = loop {
            if let Ok(r) = w2.try_recv() {
                break (2, r, 3, &w3);
            }
            if let Ok(r) = w3.try_recv() {
                break (3, r, 2, &w2);
            }
            assert!(Instant::now() < deadline, "neither waiter took the lock");
            thread::sleep(Duration::from_millis(1));
        };
        assert_eq!(first_rx, Ok(true));
        until_waiting(&locks, second, first);
        locks.unlock(first, T, b"k");
        assert_eq!(recv(second_rx), Ok(true));
        assert_eq!(locks.holder(T, b"k"), Some(second));
    }

    #[test]
    fn two_txns_in_opposite_order_deadlock() {
        let locks = Arc::new(LockTable::new(16));
        assert_eq!(locks.lock(1, T, b"a", None, true, DEPTH), Ok(true));
        assert_eq!(locks.lock(2, T, b"b", None, true, DEPTH), Ok(true));
        let waiter = spawn_lock(&locks, 1, b"b", Some(SAFETY), true);
        until_waiting(&locks, 1, 2);
        assert_eq!(
            locks.lock(2, T, b"a", Some(SAFETY), true, DEPTH),
            Err(LockError::Deadlock {
                cycle: vec![hop(2, b"a"), hop(1, b"b")]
            })
        );
        assert_eq!(waits_for(&locks, 2), None);
        assert_eq!(locks.holder(T, b"a"), Some(1));
        // 2 rolls back: 1 gets the lock.
        locks.unlock(2, T, b"b");
        assert_eq!(recv(&waiter), Ok(true));
        assert_eq!(locks.holder(T, b"b"), Some(1));
        assert_eq!(waits_for(&locks, 1), None);
    }

    #[test]
    fn racing_opposite_order_deadlocks_exactly_one() {
        for _ in 0..20 {
            let locks = Arc::new(LockTable::new(16));
            let barrier = Arc::new(Barrier::new(2));
            let run = |txn: TxnId, first: &'static [u8], second: &'static [u8]| {
                let locks = Arc::clone(&locks);
                let barrier = Arc::clone(&barrier);
                thread::spawn(move || {
                    assert_eq!(locks.lock(txn, T, first, None, true, DEPTH), Ok(true));
                    barrier.wait();
                    let result = locks.lock(txn, T, second, Some(SAFETY), true, DEPTH);
                    // Commit or roll back: release everything held.
                    locks.unlock(txn, T, second);
                    locks.unlock(txn, T, first);
                    result
                })
            };
            let one = run(1, b"a", b"b");
            let two = run(2, b"b", b"a");
            let results = [
                one.join().expect("txn 1 panicked"),
                two.join().expect("txn 2 panicked"),
            ];
            let deadlocks: Vec<_> = results
                .iter()
                .filter_map(|r| match r {
                    Err(LockError::Deadlock { cycle }) => Some(cycle),
                    _ => None,
                })
                .collect();
            assert_eq!(deadlocks.len(), 1, "{results:?}");
            let mut txns: Vec<_> = deadlocks[0].iter().map(|h| h.0).collect();
            txns.sort_unstable();
            assert_eq!(txns, [1, 2]);
            assert!(results.contains(&Ok(true)), "{results:?}");
            assert_eq!(locks.len(), 0);
            assert!(locks.wait_for.lock().edges.is_empty());
        }
    }

    #[test]
    fn three_txn_cycle() {
        let locks = Arc::new(LockTable::new(16));
        assert_eq!(locks.lock(1, T, b"a", None, true, DEPTH), Ok(true));
        assert_eq!(locks.lock(2, T, b"b", None, true, DEPTH), Ok(true));
        assert_eq!(locks.lock(3, T, b"c", None, true, DEPTH), Ok(true));
        let w1 = spawn_lock(&locks, 1, b"b", Some(SAFETY), true);
        until_waiting(&locks, 1, 2);
        let w2 = spawn_lock(&locks, 2, b"c", Some(SAFETY), true);
        until_waiting(&locks, 2, 3);
        assert_eq!(
            locks.lock(3, T, b"a", Some(SAFETY), true, DEPTH),
            Err(LockError::Deadlock {
                cycle: vec![hop(3, b"a"), hop(1, b"b"), hop(2, b"c")]
            })
        );
        // 3 rolls back: 2 gets `c`, then commits, and 1 gets `b`.
        locks.unlock(3, T, b"c");
        assert_eq!(recv(&w2), Ok(true));
        locks.unlock(2, T, b"b");
        locks.unlock(2, T, b"c");
        assert_eq!(recv(&w1), Ok(true));
        assert_eq!(locks.holder(T, b"b"), Some(1));
    }

    #[test]
    fn cycle_longer_than_depth_is_a_deadlock_flagged_by_its_length() {
        // A two-txn cycle with depth 1: the walk gives up after one hop.
        let locks = Arc::new(LockTable::new(16));
        assert_eq!(locks.lock(1, T, b"a", None, true, DEPTH), Ok(true));
        assert_eq!(locks.lock(2, T, b"b", None, true, DEPTH), Ok(true));
        let waiter = spawn_lock(&locks, 1, b"b", Some(SAFETY), true);
        until_waiting(&locks, 1, 2);
        let Err(LockError::Deadlock { cycle }) = locks.lock(2, T, b"a", Some(SAFETY), true, 1)
        else {
            panic!("expected a deadlock");
        };
        assert_eq!(cycle.len(), 2, "depth + 1 hops: limit exceeded");
        locks.unlock(2, T, b"b");
        assert_eq!(recv(&waiter), Ok(true));
    }

    #[test]
    fn depth_limit_follows_rocksdb() {
        // RocksDB's `DeadlockDepthExceeded`:
        // 4 ->(k3) 3 ->(k2) 2 ->(k1) 1, where 3's wait is the last edge.
        let locks = Arc::new(LockTable::new(16));
        assert_eq!(locks.lock(1, T, b"k1", None, true, DEPTH), Ok(true));
        assert_eq!(locks.lock(2, T, b"k2", None, true, DEPTH), Ok(true));
        assert_eq!(locks.lock(3, T, b"k3", None, true, DEPTH), Ok(true));
        let w2 = spawn_lock(&locks, 2, b"k1", Some(SAFETY), true);
        until_waiting(&locks, 2, 1);
        let w4 = spawn_lock(&locks, 4, b"k3", Some(SAFETY), true);
        until_waiting(&locks, 4, 3);

        // Depth 1: the chain 3 -> 2 -> 1 goes on past one hop.
        assert_eq!(
            locks.lock(3, T, b"k2", Some(SAFETY), true, 1),
            Err(LockError::Deadlock {
                cycle: vec![hop(3, b"k2"), hop(2, b"k1")]
            })
        );
        assert_eq!(waits_for(&locks, 3), None);
        // Depth 2: the walk sees the chain end at 1, which does not wait.
        assert_eq!(
            locks.lock(3, T, b"k2", Some(SHORT), true, 2),
            Err(LockError::TimedOut { holder: 2 })
        );
        // Nobody waits for 5: no deadlock whatever the depth.
        assert_eq!(
            locks.lock(5, T, b"k2", Some(SHORT), true, 1),
            Err(LockError::TimedOut { holder: 2 })
        );
        assert!(
            locks
                .wait_for
                .lock()
                .edges
                .keys()
                .all(|t| *t == 2 || *t == 4)
        );

        locks.unlock(1, T, b"k1");
        assert_eq!(recv(&w2), Ok(true));
        locks.unlock(3, T, b"k3");
        assert_eq!(recv(&w4), Ok(true));
    }

    #[test]
    fn release_drops_stale_wait_edges() {
        // 2 waits for 1's `k`. 1 releases `k` (say, a rollback to a
        // save point) and at once waits for `j`, held by 2: that is no
        // deadlock, as 2 no longer waits for 1.
        let locks = Arc::new(LockTable::new(16));
        assert_eq!(locks.lock(1, T, b"k", None, true, DEPTH), Ok(true));
        assert_eq!(locks.lock(2, T, b"j", None, true, DEPTH), Ok(true));
        let (tx, rx) = mpsc::channel();
        let locks2 = Arc::clone(&locks);
        thread::spawn(move || {
            let result = locks2.lock(2, T, b"k", Some(SAFETY), true, DEPTH);
            locks2.unlock(2, T, b"j");
            let _ = tx.send(result);
        });
        until_waiting(&locks, 2, 1);
        locks.unlock(1, T, b"k");
        assert_eq!(waits_for(&locks, 2), None);
        assert_eq!(locks.lock(1, T, b"j", Some(SAFETY), true, DEPTH), Ok(true));
        assert_eq!(recv(&rx), Ok(true));
    }

    #[test]
    fn unlock_by_non_holder_is_a_no_op() {
        let locks = LockTable::new(16);
        assert_eq!(locks.lock(1, T, b"k", None, false, DEPTH), Ok(true));
        locks.unlock(2, T, b"k");
        locks.unlock(2, T, b"never locked");
        locks.unlock(1, T + 1, b"k");
        assert_eq!(locks.holder(T, b"k"), Some(1));
        assert_eq!(locks.len(), 1);
        assert_eq!(
            locks.lock(2, T, b"k", Some(Duration::ZERO), false, DEPTH),
            Err(LockError::TimedOut { holder: 1 })
        );
    }

    #[test]
    fn holder_and_len_count_every_stripe_and_table() {
        for stripes in [0, 1, 16] {
            let locks = LockTable::new(stripes);
            assert_eq!(locks.len(), 0);
            assert_eq!(locks.holder(T, b"k"), None);
            for i in 0..100u64 {
                let key = i.to_le_bytes();
                assert_eq!(locks.lock(i, 1, &key, None, false, DEPTH), Ok(true));
                // The same key in another table is another lock.
                assert_eq!(locks.lock(i + 1000, 2, &key, None, false, DEPTH), Ok(true));
            }
            assert_eq!(locks.len(), 200);
            for i in 0..100u64 {
                let key = i.to_le_bytes();
                assert_eq!(locks.holder(1, &key), Some(i));
                assert_eq!(locks.holder(2, &key), Some(i + 1000));
                locks.unlock(i, 1, &key);
            }
            assert_eq!(locks.len(), 100);
            assert_eq!(locks.holder(1, &0u64.to_le_bytes()), None);
            assert_eq!(locks.holder(2, &0u64.to_le_bytes()), Some(1000));
            // The empty key is a key like any other.
            assert_eq!(locks.lock(5, 3, b"", None, false, DEPTH), Ok(true));
            assert_eq!(locks.holder(3, b""), Some(5));
            assert_eq!(locks.len(), 101);
        }
    }

    #[test]
    fn contending_txns_exclude_each_other_and_always_finish() {
        // Several threads run transactions over a few keys in random order,
        // retrying as a new transaction after a deadlock. A lost wake-up or
        // an undetected deadlock shows as a time-out; two holders of one key
        // as a non-zero owner.
        const THREADS: u64 = 4;
        const TXNS: usize = 100;
        const KEYS: [&[u8]; 4] = [b"a", b"b", b"c", b"d"];
        let locks = Arc::new(LockTable::new(2));
        let next_txn = Arc::new(AtomicU64::new(1));
        let owners: Arc<[AtomicU64; 4]> = Arc::new(Default::default());
        let workers: Vec<_> = (0..THREADS)
            .map(|seed| {
                let (locks, next_txn, owners) = (
                    Arc::clone(&locks),
                    Arc::clone(&next_txn),
                    Arc::clone(&owners),
                );
                thread::spawn(move || {
                    let mut rng = 0x9E37_79B9_7F4A_7C15_u64 ^ (seed + 1);
                    let mut random = move || {
                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        rng
                    };
                    let mut deadlocks = 0;
                    for _ in 0..TXNS {
                        let n = 2 + (random() % 2) as usize;
                        let order: Vec<usize> = (0..n).map(|_| (random() % 4) as usize).collect();
                        'retry: loop {
                            let txn = next_txn.fetch_add(1, Ordering::Relaxed);
                            let mut taken = Vec::new();
                            for &k in &order {
                                match locks.lock(txn, T, KEYS[k], Some(SAFETY), true, DEPTH) {
                                    Ok(true) => {
                                        assert_eq!(owners[k].swap(txn, Ordering::SeqCst), 0);
                                        taken.push(k);
                                    }
                                    Ok(false) => assert!(taken.contains(&k)),
                                    Err(LockError::Deadlock { cycle }) => {
                                        assert_eq!(cycle[0].0, txn);
                                        deadlocks += 1;
                                        for &k in &taken {
                                            owners[k].store(0, Ordering::SeqCst);
                                            locks.unlock(txn, T, KEYS[k]);
                                        }
                                        continue 'retry;
                                    }
                                    Err(e) => panic!("txn {txn}: {e}"),
                                }
                            }
                            thread::yield_now();
                            for &k in &taken {
                                assert_eq!(owners[k].swap(0, Ordering::SeqCst), txn);
                                locks.unlock(txn, T, KEYS[k]);
                            }
                            break;
                        }
                    }
                    deadlocks
                })
            })
            .collect();
        for worker in workers {
            worker.join().expect("a worker panicked");
        }
        assert_eq!(locks.len(), 0);
        let graph = locks.wait_for.lock();
        assert!(graph.edges.is_empty());
        assert!(graph.waiters_on.is_empty());
    }
}
