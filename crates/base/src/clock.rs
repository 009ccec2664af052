//! Time, in one place for all of lithify: the [`Clock`] the engine (file
//! times, schedules, the off-peak window, the rate limiter), the Kafka log
//! (`segment.ms` rolls, LogAppendTime, retention) and the log cleaner
//! (selection, delete horizons, its I/O throttle) go by. The system's, or a
//! [`ManualClock`] that tests and simulations move by hand.
//!
//! ```
//! use lithify_base::clock::{Clock, ManualClock};
//!
//! let clock = ManualClock::at_ms(1_000);
//! assert_eq!(clock.now_ms(), 1_000);
//! clock.sleep_micros(2_500); // a manual clock moves instead of sleeping
//! assert_eq!(clock.now_micros(), 1_002_500);
//! clock.advance_ms(10);
//! assert_eq!(clock.now_ms(), 1_012);
//! ```

use std::fmt::Debug;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A source of time: wall-clock time since the Unix epoch, a monotonic
/// time for measuring intervals, and sleeping.
pub trait Clock: Send + Sync + Debug {
    /// Microseconds since the Unix epoch.
    fn now_micros(&self) -> u64;

    /// Nanoseconds since an arbitrary start that never goes backwards (for
    /// rates and intervals).
    fn monotonic_nanos(&self) -> u64;

    /// Sleeps `micros` microseconds (a manual clock advances instead).
    fn sleep_micros(&self, micros: u64);

    /// Seconds since the Unix epoch.
    fn now_secs(&self) -> u64 {
        self.now_micros() / 1_000_000
    }

    /// Milliseconds since the Unix epoch, as Kafka counts time.
    fn now_ms(&self) -> i64 {
        i64::try_from(self.now_micros() / 1_000).unwrap_or(i64::MAX)
    }
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_micros(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
    }

    fn monotonic_nanos(&self) -> u64 {
        static START: OnceLock<Instant> = OnceLock::new();
        let start = START.get_or_init(Instant::now);
        u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn sleep_micros(&self, micros: u64) {
        std::thread::sleep(Duration::from_micros(micros));
    }
}

/// A clock that only moves when slept on or told to (deterministic tests
/// and simulations). Its monotonic time is its wall-clock time. It keeps
/// signed microseconds: a time before the epoch reads as 0 from
/// [`now_micros`](Clock::now_micros) and as itself from
/// [`now_ms`](Clock::now_ms), as Kafka's millisecond clock allows.
#[derive(Debug, Default)]
pub struct ManualClock {
    micros: AtomicI64,
}

impl ManualClock {
    /// A clock at `micros` microseconds since the Unix epoch.
    pub fn at_micros(micros: u64) -> Self {
        ManualClock {
            micros: AtomicI64::new(i64::try_from(micros).unwrap_or(i64::MAX)),
        }
    }

    /// A clock at `ms` milliseconds since the Unix epoch.
    pub fn at_ms(ms: i64) -> Self {
        ManualClock {
            micros: AtomicI64::new(ms.saturating_mul(1_000)),
        }
    }

    /// Moves the clock forward by `micros` microseconds.
    pub fn advance_micros(&self, micros: u64) {
        self.add(i64::try_from(micros).unwrap_or(i64::MAX));
    }

    /// Moves the clock by `ms` milliseconds (back when negative).
    pub fn advance_ms(&self, ms: i64) {
        self.add(ms.saturating_mul(1_000));
    }

    /// Moves the clock to `micros` unless it is already past it.
    pub fn advance_to_micros(&self, micros: u64) {
        self.micros
            .fetch_max(i64::try_from(micros).unwrap_or(i64::MAX), Ordering::SeqCst);
    }

    /// Sets the clock to `ms` milliseconds since the Unix epoch (it may
    /// move back).
    pub fn set_ms(&self, ms: i64) {
        self.micros
            .store(ms.saturating_mul(1_000), Ordering::SeqCst);
    }

    fn add(&self, delta: i64) {
        let _ = self
            .micros
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| {
                Some(v.saturating_add(delta))
            });
    }

    fn signed_micros(&self) -> i64 {
        self.micros.load(Ordering::SeqCst)
    }
}

impl Clock for ManualClock {
    fn now_micros(&self) -> u64 {
        u64::try_from(self.signed_micros()).unwrap_or(0)
    }

    fn monotonic_nanos(&self) -> u64 {
        self.now_micros().saturating_mul(1_000)
    }

    fn sleep_micros(&self, micros: u64) {
        self.advance_micros(micros);
    }

    fn now_ms(&self) -> i64 {
        self.signed_micros().div_euclid(1_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told() {
        let c = ManualClock::at_micros(5);
        assert_eq!(c.now_micros(), 5);
        c.advance_to_micros(3);
        assert_eq!(c.now_micros(), 5);
        c.advance_to_micros(9);
        c.sleep_micros(1);
        assert_eq!((c.now_micros(), c.monotonic_nanos()), (10, 10_000));
        c.set_ms(7);
        assert_eq!((c.now_ms(), c.now_secs()), (7, 0));
        c.advance_ms(-2);
        assert_eq!(c.now_ms(), 5);
        // Before the epoch: Kafka's millisecond time goes negative, the
        // microsecond time stops at 0.
        c.set_ms(-3);
        assert_eq!((c.now_ms(), c.now_micros()), (-3, 0));
    }

    #[test]
    fn the_system_clock_is_after_2020_and_monotonic() {
        assert!(SystemClock.now_secs() > 1_577_836_800);
        let a = SystemClock.monotonic_nanos();
        assert!(SystemClock.monotonic_nanos() >= a);
    }
}
