//! Rate limiting of the cleaner's I/O (Kafka's `Throttler`), shared by all
//! cleaner threads: `log.cleaner.io.max.bytes.per.second`.
//!
//! Every read chunk (both passes) and every written chunk reports its bytes
//! through [`Throttler::maybe_throttle`]. Once more than the check interval
//! (300 ms) has passed since the period started, the observed rate is
//! compared with the desired one; if it is higher, the caller sleeps
//! `round(observed / (rate / 1000) - elapsed_ms)` milliseconds, so that the
//! period's average comes down to the desired rate; then a new period
//! starts. As in Kafka, the sleep happens under the throttler's lock, so
//! all threads together stay under the rate.
//!
//! Time comes from a [`Clock`] (its monotonic time, and its sleep), so
//! tests drive the throttler with a `ManualClock` and check the exact sleeps
//! instead of measuring wall-clock time.

use lithify_base::clock::Clock;
use lithify_base::sync::Mutex;

/// Kafka's check interval for the cleaner's throttler.
pub(crate) const CHECK_INTERVAL_MS: u64 = 300;

#[derive(Debug)]
struct Period {
    start_ns: u64,
    observed: f64,
    slept_ms: u64,
}

/// Keeps a process (bytes of I/O) under a desired rate per second.
///
/// ```
/// use std::sync::Arc;
/// use lithify_base::SystemClock;
/// use lithify_compaction_logclean::Throttler;
///
/// let unlimited = Throttler::new(f64::MAX, Arc::new(SystemClock));
/// assert_eq!(unlimited.maybe_throttle(1e9), 0); // never sleeps
/// ```
#[derive(Debug)]
pub struct Throttler {
    desired_per_sec: f64,
    check_interval_ns: u64,
    clock: std::sync::Arc<dyn Clock>,
    period: Mutex<Period>,
}

impl Throttler {
    /// A throttler at `desired_per_sec` with Kafka's 300 ms check interval.
    pub fn new(desired_per_sec: f64, clock: std::sync::Arc<dyn Clock>) -> Self {
        Self::with_interval(desired_per_sec, CHECK_INTERVAL_MS, clock)
    }

    /// A throttler with a chosen check interval.
    pub fn with_interval(
        desired_per_sec: f64,
        check_interval_ms: u64,
        clock: std::sync::Arc<dyn Clock>,
    ) -> Self {
        let start_ns = clock.monotonic_nanos();
        Throttler {
            desired_per_sec,
            check_interval_ns: check_interval_ms.saturating_mul(1_000_000),
            clock,
            period: Mutex::new(Period {
                start_ns,
                observed: 0.0,
                slept_ms: 0,
            }),
        }
    }

    /// The desired rate per second.
    pub fn desired_per_sec(&self) -> f64 {
        self.desired_per_sec
    }

    /// Reports `observed` units (bytes) and sleeps if the rate of the
    /// current period is too high. Returns the milliseconds slept.
    pub fn maybe_throttle(&self, observed: f64) -> u64 {
        let mut p = self.period.lock();
        p.observed += observed;
        let now = self.clock.monotonic_nanos();
        let elapsed_ns = now.saturating_sub(p.start_ns);
        let mut slept = 0;
        if elapsed_ns > self.check_interval_ns && p.observed > 0.0 {
            let rate = p.observed * 1e9 / elapsed_ns as f64;
            if rate > self.desired_per_sec {
                let desired_per_ms = self.desired_per_sec / 1000.0;
                let elapsed_ms = elapsed_ns / 1_000_000;
                let sleep = (p.observed / desired_per_ms - elapsed_ms as f64).round();
                if sleep > 0.0 {
                    slept = sleep as u64;
                    self.clock.sleep_micros(slept.saturating_mul(1_000));
                    p.slept_ms += slept;
                }
            }
            p.start_ns = self.clock.monotonic_nanos();
            p.observed = 0.0;
        }
        slept
    }

    /// Milliseconds slept so far, all callers together.
    pub fn total_slept_ms(&self) -> u64 {
        self.period.lock().slept_ms
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn sleeps_exactly_enough_to_bring_the_period_to_the_rate() {
        let clock = Arc::new(lithify_base::ManualClock::default());
        let t = Throttler::new(1000.0, clock.clone()); // 1000 bytes/s
        // Within the check interval nothing happens, whatever the rate.
        clock.advance_ms(100);
        assert_eq!(t.maybe_throttle(5000.0), 0);
        // 400 ms in, 6000 bytes observed: 6000 bytes need 6000 ms at 1 B/ms,
        // 400 ms have passed, so sleep 5600 ms.
        clock.advance_ms(300);
        assert_eq!(t.maybe_throttle(1000.0), 5600);
        assert_eq!(t.total_slept_ms(), 5600);
        // A new period started after the sleep: a slow period never sleeps.
        clock.advance_ms(1000);
        assert_eq!(t.maybe_throttle(500.0), 0);
        // An unlimited throttler never sleeps.
        let free = Throttler::new(f64::MAX, clock.clone());
        clock.advance_ms(1000);
        assert_eq!(free.maybe_throttle(1e12), 0);
    }

    #[test]
    fn an_idle_period_does_not_sleep() {
        let clock = Arc::new(lithify_base::ManualClock::default());
        let t = Throttler::new(1.0, clock.clone());
        clock.advance_ms(10_000);
        // Nothing observed: the period goes on.
        assert_eq!(t.maybe_throttle(0.0), 0);
        // 1 byte in 10.4 s is under 1 B/s: no sleep, a new period starts.
        clock.advance_ms(400);
        assert_eq!(t.maybe_throttle(1.0), 0);
        // 1 byte in 400 ms is 2.5 B/s: sleep until it took 1000 ms.
        clock.advance_ms(400);
        assert_eq!(t.maybe_throttle(1.0), 600);
    }
}
