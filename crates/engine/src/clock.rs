//! Time, in one place: the [`Clock`] the engine goes by (file metadata,
//! schedules, the off-peak window) and the rate limiter waits on — the
//! system's, or a [`ManualClock`] tests and simulations move by hand.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

/// The engine's time: the system clock, or a test clock that advances
/// when slept on or told to.
pub trait Clock: Send + Sync {
    /// Microseconds since the Unix epoch.
    fn now_micros(&self) -> u64;
    /// Sleeps `micros` microseconds.
    fn sleep_micros(&self, micros: u64);
    /// Seconds since the Unix epoch.
    fn now_secs(&self) -> u64 {
        self.now_micros() / 1_000_000
    }
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_micros(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64)
    }

    fn sleep_micros(&self, micros: u64) {
        std::thread::sleep(Duration::from_micros(micros));
    }
}

/// A clock that only moves when slept on or told to (deterministic tests
/// and simulations).
#[derive(Debug, Default)]
pub struct ManualClock {
    now: Mutex<u64>,
}

impl ManualClock {
    /// A clock at `micros` since the Unix epoch.
    pub fn new(micros: u64) -> Self {
        ManualClock {
            now: Mutex::new(micros),
        }
    }

    /// Moves the clock forward.
    pub fn advance(&self, micros: u64) {
        *self.now.lock() += micros;
    }

    /// Moves the clock to `micros` since the Unix epoch, if that is
    /// later (a clock a sleeper moved further stays where it is).
    ///
    /// ```
    /// use lithify_engine::{Clock, ManualClock};
    ///
    /// let clock = ManualClock::new(1_000);
    /// clock.advance_to(5_000);
    /// clock.advance_to(3_000);
    /// assert_eq!(clock.now_micros(), 5_000);
    /// ```
    pub fn advance_to(&self, micros: u64) {
        let mut now = self.now.lock();
        *now = (*now).max(micros);
    }
}

impl Clock for ManualClock {
    fn now_micros(&self) -> u64 {
        *self.now.lock()
    }

    fn sleep_micros(&self, micros: u64) {
        self.advance(micros);
    }
}
