//! The single switch point between real synchronisation and loom.
//!
//! Every crate with lock-free or multi-threaded code imports its atomics,
//! `Arc`, locks, `UnsafeCell` and `thread` from here. Normally they are
//! `std`'s atomics and `parking_lot`'s locks; built with
//! `RUSTFLAGS="--cfg loom"` they are loom's, so that loom can explore every
//! interleaving of our own protocols (skiplist insert, write group, version
//! swap). Both configurations expose the same API:
//!
//! * `Mutex::lock` and `RwLock::read`/`write` return guards directly;
//! * `Condvar::wait` takes the guard by value and returns it;
//! * `UnsafeCell` is accessed through `with`/`with_mut` closures (loom's
//!   shape), so loom can check every access.
//!
//! ```
//! use lithify_base::sync::{Arc, Mutex, atomic::{AtomicU64, Ordering}};
//!
//! let counter = Arc::new(AtomicU64::new(0));
//! counter.fetch_add(1, Ordering::Relaxed);
//! let m = Mutex::new(5);
//! *m.lock() += 1;
//! assert_eq!(*m.lock(), 6);
//! ```

#[cfg(not(loom))]
pub use std::sync::Arc;

#[cfg(loom)]
pub use loom::sync::Arc;

/// Atomic types and orderings.
pub mod atomic {
    #[cfg(not(loom))]
    pub use std::sync::atomic::{
        AtomicBool, AtomicI64, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering,
        fence,
    };

    #[cfg(loom)]
    pub use loom::sync::atomic::{
        AtomicBool, AtomicI64, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering,
        fence,
    };
}

/// Threads: `std::thread` or `loom::thread`.
pub mod thread {
    #[cfg(not(loom))]
    pub use std::thread::{JoinHandle, current, spawn, yield_now};

    #[cfg(loom)]
    pub use loom::thread::{JoinHandle, current, spawn, yield_now};
}

/// Hints a spin-wait loop (a yield under loom, so loom can make progress).
#[inline]
pub fn spin_loop() {
    #[cfg(not(loom))]
    std::hint::spin_loop();
    #[cfg(loom)]
    loom::thread::yield_now();
}

#[cfg(not(loom))]
mod imp {
    use std::time::Duration;

    /// A mutual-exclusion lock (`parking_lot`).
    #[derive(Debug, Default)]
    pub struct Mutex<T: ?Sized>(parking_lot::Mutex<T>);

    /// The guard of a [`Mutex`].
    pub type MutexGuard<'a, T> = parking_lot::MutexGuard<'a, T>;

    impl<T> Mutex<T> {
        /// A new unlocked mutex.
        pub fn new(value: T) -> Self {
            Mutex(parking_lot::Mutex::new(value))
        }

        /// Consumes the mutex, returning its value.
        pub fn into_inner(self) -> T {
            self.0.into_inner()
        }
    }

    impl<T: ?Sized> Mutex<T> {
        /// Locks, blocking until available.
        #[inline]
        pub fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock()
        }

        /// Locks if available right now.
        #[inline]
        pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            self.0.try_lock()
        }

        /// Mutable access without locking (the borrow proves exclusivity).
        pub fn get_mut(&mut self) -> &mut T {
            self.0.get_mut()
        }
    }

    /// A reader-writer lock (`parking_lot`).
    #[derive(Debug, Default)]
    pub struct RwLock<T: ?Sized>(parking_lot::RwLock<T>);

    /// Shared guard of a [`RwLock`].
    pub type RwLockReadGuard<'a, T> = parking_lot::RwLockReadGuard<'a, T>;
    /// Exclusive guard of a [`RwLock`].
    pub type RwLockWriteGuard<'a, T> = parking_lot::RwLockWriteGuard<'a, T>;

    impl<T> RwLock<T> {
        /// A new unlocked lock.
        pub fn new(value: T) -> Self {
            RwLock(parking_lot::RwLock::new(value))
        }

        /// Consumes the lock, returning its value.
        pub fn into_inner(self) -> T {
            self.0.into_inner()
        }
    }

    impl<T: ?Sized> RwLock<T> {
        /// Shared access.
        #[inline]
        pub fn read(&self) -> RwLockReadGuard<'_, T> {
            self.0.read()
        }

        /// Exclusive access.
        #[inline]
        pub fn write(&self) -> RwLockWriteGuard<'_, T> {
            self.0.write()
        }
    }

    /// A condition variable (`parking_lot`).
    #[derive(Debug, Default)]
    pub struct Condvar(parking_lot::Condvar);

    impl Condvar {
        /// A new condition variable.
        pub fn new() -> Self {
            Condvar(parking_lot::Condvar::new())
        }

        /// Releases the lock, waits for a notification, relocks.
        pub fn wait<'a, T>(&self, mut guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
            self.0.wait(&mut guard);
            guard
        }

        /// Like [`wait`](Self::wait) with a timeout; the flag is true when
        /// the wait timed out.
        pub fn wait_timeout<'a, T>(
            &self,
            mut guard: MutexGuard<'a, T>,
            timeout: Duration,
        ) -> (MutexGuard<'a, T>, bool) {
            let timed_out = self.0.wait_for(&mut guard, timeout).timed_out();
            (guard, timed_out)
        }

        /// Wakes one waiter.
        pub fn notify_one(&self) {
            self.0.notify_one();
        }

        /// Wakes every waiter.
        pub fn notify_all(&self) {
            self.0.notify_all();
        }
    }

    /// An `UnsafeCell` with loom's closure-based access API.
    #[derive(Debug, Default)]
    pub struct UnsafeCell<T: ?Sized>(std::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        /// Wraps `value`.
        pub const fn new(value: T) -> Self {
            UnsafeCell(std::cell::UnsafeCell::new(value))
        }

        /// Consumes the cell.
        pub fn into_inner(self) -> T {
            self.0.into_inner()
        }
    }

    impl<T: ?Sized> UnsafeCell<T> {
        /// Calls `f` with a shared pointer to the value.
        #[inline]
        pub fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }

        /// Calls `f` with a mutable pointer to the value.
        #[inline]
        pub fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }
}

#[cfg(loom)]
mod imp {
    use std::time::Duration;

    pub use loom::cell::UnsafeCell;

    /// A mutual-exclusion lock (loom).
    #[derive(Debug, Default)]
    pub struct Mutex<T>(loom::sync::Mutex<T>);

    /// The guard of a [`Mutex`].
    pub type MutexGuard<'a, T> = loom::sync::MutexGuard<'a, T>;

    impl<T> Mutex<T> {
        /// A new unlocked mutex.
        pub fn new(value: T) -> Self {
            Mutex(loom::sync::Mutex::new(value))
        }

        /// Consumes the mutex, returning its value.
        pub fn into_inner(self) -> T {
            self.0.into_inner().expect("loom mutex poisoned")
        }

        /// Locks, blocking until available.
        pub fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock().expect("loom mutex poisoned")
        }

        /// Locks if available right now.
        pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            self.0.try_lock().ok()
        }

        /// Mutable access without locking.
        pub fn get_mut(&mut self) -> &mut T {
            self.0.get_mut().expect("loom mutex poisoned")
        }
    }

    /// A reader-writer lock (loom).
    #[derive(Debug, Default)]
    pub struct RwLock<T>(loom::sync::RwLock<T>);

    /// Shared guard of a [`RwLock`].
    pub type RwLockReadGuard<'a, T> = loom::sync::RwLockReadGuard<'a, T>;
    /// Exclusive guard of a [`RwLock`].
    pub type RwLockWriteGuard<'a, T> = loom::sync::RwLockWriteGuard<'a, T>;

    impl<T> RwLock<T> {
        /// A new unlocked lock.
        pub fn new(value: T) -> Self {
            RwLock(loom::sync::RwLock::new(value))
        }

        /// Consumes the lock, returning its value.
        pub fn into_inner(self) -> T {
            self.0.into_inner().expect("loom rwlock poisoned")
        }

        /// Shared access.
        pub fn read(&self) -> RwLockReadGuard<'_, T> {
            self.0.read().expect("loom rwlock poisoned")
        }

        /// Exclusive access.
        pub fn write(&self) -> RwLockWriteGuard<'_, T> {
            self.0.write().expect("loom rwlock poisoned")
        }
    }

    /// A condition variable (loom).
    #[derive(Debug, Default)]
    pub struct Condvar(loom::sync::Condvar);

    impl Condvar {
        /// A new condition variable.
        pub fn new() -> Self {
            Condvar(loom::sync::Condvar::new())
        }

        /// Releases the lock, waits for a notification, relocks.
        pub fn wait<'a, T>(&self, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
            self.0.wait(guard).expect("loom mutex poisoned")
        }

        /// Like [`wait`](Self::wait) with a timeout; the flag is true when
        /// the wait timed out.
        pub fn wait_timeout<'a, T>(
            &self,
            guard: MutexGuard<'a, T>,
            timeout: Duration,
        ) -> (MutexGuard<'a, T>, bool) {
            let (g, r) = self
                .0
                .wait_timeout(guard, timeout)
                .expect("loom mutex poisoned");
            (g, r.timed_out())
        }

        /// Wakes one waiter.
        pub fn notify_one(&self) {
            self.0.notify_one();
        }

        /// Wakes every waiter.
        pub fn notify_all(&self) {
            self.0.notify_all();
        }
    }
}

pub use imp::{Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard, UnsafeCell};

#[cfg(all(test, loom))]
mod loom_tests {
    use super::atomic::{AtomicUsize, Ordering};
    use super::*;

    /// The shim's condvar protocol: a waiter always sees the flag set by the
    /// notifier, whatever the interleaving.
    #[test]
    fn condvar_handshake() {
        loom::model(|| {
            let state = Arc::new((Mutex::new(false), Condvar::new()));
            let s2 = state.clone();
            let t = thread::spawn(move || {
                *s2.0.lock() = true;
                s2.1.notify_one();
            });
            let mut ready = state.0.lock();
            while !*ready {
                ready = state.1.wait(ready);
            }
            drop(ready);
            t.join().unwrap();
        });
    }

    #[test]
    fn unsafe_cell_and_atomics() {
        loom::model(|| {
            let cell = Arc::new((UnsafeCell::new(0u32), AtomicUsize::new(0)));
            let c2 = cell.clone();
            let t = thread::spawn(move || {
                // SAFETY: the release store below publishes this write and
                // the reader only reads after acquiring it.
                c2.0.with_mut(|p| unsafe { *p = 7 });
                c2.1.store(1, Ordering::Release);
            });
            if cell.1.load(Ordering::Acquire) == 1 {
                // SAFETY: acquired the writer's release; it no longer writes.
                let v = cell.0.with(|p| unsafe { *p });
                assert_eq!(v, 7);
            }
            t.join().unwrap();
        });
    }
}
