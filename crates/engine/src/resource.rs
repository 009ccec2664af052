//! Resource control for compactions, beside the engine's scheduling that
//! uses it: an I/O rate limiter whose rate rises in a daily off-peak
//! window (charged by the compaction jobs through
//! [`WriteRateLimiter`]), and daily times for scheduled major compactions.
//!
//! The window is written as RocksDB's `daily_offpeak_time_utc`:
//! `"HH:mm-HH:mm"` in UTC, both ends inclusive at minute precision, and a
//! window whose start is after its end spans midnight (`"23:30-04:30"`).
//! RocksDB uses the window to bring periodic and TTL compactions forward;
//! here it also raises the compaction rate limit, the way OceanBase runs
//! its major merge at night.

use std::fmt;
use std::sync::Arc;

use lithify_compaction::job::WriteRateLimiter;
use parking_lot::Mutex;

use crate::error::{InvalidArgumentSnafu, Result};
use lithify_base::clock::{Clock, SystemClock};

const SECONDS_PER_DAY: u64 = 86_400;

/// A time of day in UTC, at minute precision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct DailyTime {
    minute_of_day: u32,
}

impl DailyTime {
    /// Parses `HH:mm` (00:00 to 23:59).
    ///
    /// ```
    /// use lithify_engine::DailyTime;
    ///
    /// let t = DailyTime::parse("02:30").unwrap();
    /// assert_eq!(t.seconds_of_day(), 9_000);
    /// assert!(DailyTime::parse("24:00").is_err());
    /// ```
    pub fn parse(s: &str) -> Result<DailyTime> {
        let bad = || {
            InvalidArgumentSnafu {
                message: format!("`{s}` is not a time of day in HH:mm form"),
            }
            .build()
        };
        let (h, m) = s.trim().split_once(':').ok_or_else(bad)?;
        if h.len() != 2 || m.len() != 2 {
            return Err(bad());
        }
        let h: u32 = h.parse().map_err(|_| bad())?;
        let m: u32 = m.parse().map_err(|_| bad())?;
        if h > 23 || m > 59 {
            return Err(bad());
        }
        Ok(DailyTime {
            minute_of_day: h * 60 + m,
        })
    }

    /// Seconds since midnight.
    pub fn seconds_of_day(self) -> u64 {
        self.minute_of_day as u64 * 60
    }

    /// The first moment at or after `now` (seconds since the Unix epoch)
    /// that falls on this time of day.
    pub fn next_at_or_after(self, now: u64) -> u64 {
        let midnight = now - now % SECONDS_PER_DAY;
        let today = midnight + self.seconds_of_day();
        if today >= now {
            today
        } else {
            today + SECONDS_PER_DAY
        }
    }
}

impl fmt::Display for DailyTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:02}:{:02}",
            self.minute_of_day / 60,
            self.minute_of_day % 60
        )
    }
}

/// RocksDB's `daily_offpeak_time_utc`: a daily window in UTC.
///
/// ```
/// use lithify_engine::OffpeakWindow;
///
/// let w = OffpeakWindow::parse("23:30-04:30").unwrap();
/// let day = 86_400 * 19_000; // some midnight
/// assert!(w.contains(day + 3_600)); // 01:00
/// assert!(!w.contains(day + 12 * 3_600)); // noon
/// assert!(w.contains(day + 4 * 3_600 + 30 * 60 + 59)); // 04:30:59, the end minute
/// assert_eq!(w.seconds_until_start(day + 12 * 3_600), 11 * 3_600 + 30 * 60);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffpeakWindow {
    start: DailyTime,
    end: DailyTime,
}

impl OffpeakWindow {
    /// Parses `HH:mm-HH:mm`; start and end must differ.
    pub fn parse(s: &str) -> Result<OffpeakWindow> {
        let (a, b) = s.split_once('-').ok_or_else(|| {
            InvalidArgumentSnafu {
                message: format!("`{s}` is not an off-peak window in HH:mm-HH:mm form"),
            }
            .build()
        })?;
        let (start, end) = (DailyTime::parse(a)?, DailyTime::parse(b)?);
        if start == end {
            return InvalidArgumentSnafu {
                message: format!("the off-peak window `{s}` starts where it ends"),
            }
            .fail();
        }
        Ok(OffpeakWindow { start, end })
    }

    /// Whether `now` (seconds since the Unix epoch) lies in the window.
    pub fn contains(&self, now: u64) -> bool {
        let minute = ((now % SECONDS_PER_DAY) / 60) as u32;
        let (s, e) = (self.start.minute_of_day, self.end.minute_of_day);
        if s > e {
            s <= minute || minute <= e
        } else {
            s <= minute && minute <= e
        }
    }

    /// Seconds from `now` to the next start of the window (0 inside it).
    pub fn seconds_until_start(&self, now: u64) -> u64 {
        if self.contains(now) {
            0
        } else {
            self.start.next_at_or_after(now) - now
        }
    }
}

impl fmt::Display for OffpeakWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.start, self.end)
    }
}

/// Options of a [`RateLimiter`] (default: unlimited, no off-peak window).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RateLimiterOptions {
    /// Bytes per second outside the off-peak window (0: unlimited).
    pub bytes_per_sec: u64,
    /// Bytes per second inside it (0: unlimited).
    pub offpeak_bytes_per_sec: u64,
    /// The daily off-peak window, if any.
    pub offpeak: Option<OffpeakWindow>,
}

lithify_base::options_builder!(RateLimiterOptions {
    bytes_per_sec: u64,
    offpeak_bytes_per_sec: u64,
    offpeak: Option<OffpeakWindow>,
});

struct Bucket {
    available: u64,
    last_refill_micros: u64,
    granted: u64,
    waited_micros: u64,
}

/// A token bucket over compaction output bytes (RocksDB's
/// `GenericRateLimiter` in its simplest form: one priority, refilled
/// continuously, holding at most 100 ms of tokens). Jobs call
/// [`request`](Self::request) for the bytes they are about to write; it
/// returns once they may.
///
/// ```
/// use std::sync::Arc;
/// use lithify_engine::{Clock, ManualClock, RateLimiter, RateLimiterOptions};
///
/// let clock = Arc::new(ManualClock::at_micros(0));
/// let limiter = RateLimiter::new(RateLimiterOptions::default().bytes_per_sec(1 << 20), clock.clone());
/// limiter.request(4 << 20);
/// // 4 MiB at 1 MiB/s: the clock slept about four seconds (less the
/// // initial 100 ms burst).
/// assert!((3_800_000..=4_000_000).contains(&clock.now_micros()));
/// ```
pub struct RateLimiter {
    opts: RateLimiterOptions,
    clock: Arc<dyn Clock>,
    bucket: Mutex<Bucket>,
}

impl fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimiter")
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}

impl RateLimiter {
    /// A limiter on `clock`, starting with a full bucket.
    pub fn new(opts: RateLimiterOptions, clock: Arc<dyn Clock>) -> Self {
        let now = clock.now_micros();
        let limiter = RateLimiter {
            opts,
            clock,
            bucket: Mutex::new(Bucket {
                available: 0,
                last_refill_micros: now,
                granted: 0,
                waited_micros: 0,
            }),
        };
        limiter.bucket.lock().available = limiter.capacity(limiter.rate_at(now));
        limiter
    }

    /// A limiter on the system clock.
    pub fn with_system_clock(opts: RateLimiterOptions) -> Self {
        Self::new(opts, Arc::new(SystemClock))
    }

    /// The options.
    pub fn options(&self) -> &RateLimiterOptions {
        &self.opts
    }

    fn rate_at(&self, now_micros: u64) -> u64 {
        match self.opts.offpeak {
            Some(w) if w.contains(now_micros / 1_000_000) => self.opts.offpeak_bytes_per_sec,
            _ => self.opts.bytes_per_sec,
        }
    }

    /// The rate in force now, bytes per second (0: unlimited).
    pub fn current_rate(&self) -> u64 {
        self.rate_at(self.clock.now_micros())
    }

    /// Whether the clock is in the off-peak window now.
    pub fn is_offpeak(&self) -> bool {
        self.opts
            .offpeak
            .is_some_and(|w| w.contains(self.clock.now_micros() / 1_000_000))
    }

    fn capacity(&self, rate: u64) -> u64 {
        (rate / 10).max(1)
    }

    /// Waits until `bytes` may be written, then takes them.
    pub fn request(&self, bytes: u64) {
        let mut left = bytes;
        while left > 0 {
            let now = self.clock.now_micros();
            let rate = self.rate_at(now);
            let mut b = self.bucket.lock();
            if rate == 0 {
                b.granted += left;
                b.last_refill_micros = now;
                return;
            }
            let capacity = self.capacity(rate);
            let elapsed = now.saturating_sub(b.last_refill_micros);
            let refill = (elapsed as u128 * rate as u128 / 1_000_000) as u64;
            if refill > 0 {
                b.available = (b.available + refill).min(capacity);
                b.last_refill_micros = now;
            }
            let chunk = left.min(capacity);
            if b.available >= chunk {
                b.available -= chunk;
                b.granted += chunk;
                left -= chunk;
                continue;
            }
            let deficit = chunk - b.available;
            let wait = (deficit as u128 * 1_000_000).div_ceil(rate as u128) as u64;
            b.waited_micros += wait;
            drop(b);
            self.clock.sleep_micros(wait.max(1));
        }
    }

    /// Bytes granted so far.
    pub fn total_bytes(&self) -> u64 {
        self.bucket.lock().granted
    }

    /// Microseconds requests spent waiting so far.
    pub fn total_wait_micros(&self) -> u64 {
        self.bucket.lock().waited_micros
    }
}

impl WriteRateLimiter for RateLimiter {
    fn request(&self, bytes: u64) {
        RateLimiter::request(self, bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lithify_base::clock::ManualClock;

    fn limiter(
        rate: u64,
        offpeak_rate: u64,
        window: Option<&str>,
        start: u64,
    ) -> (RateLimiter, Arc<ManualClock>) {
        let clock = Arc::new(ManualClock::at_micros(start));
        let l = RateLimiter::new(
            RateLimiterOptions {
                bytes_per_sec: rate,
                offpeak_bytes_per_sec: offpeak_rate,
                offpeak: window.map(|w| OffpeakWindow::parse(w).unwrap()),
            },
            clock.clone(),
        );
        (l, clock)
    }

    #[test]
    fn rate_is_enforced_exactly_on_a_manual_clock() {
        // 10 MB at 1 MB/s after a 100 KB burst: 9.9 s of waiting.
        let (l, clock) = limiter(1_000_000, 0, None, 0);
        for _ in 0..100 {
            l.request(100_000);
        }
        assert_eq!(clock.now_micros(), 9_900_000);
        assert_eq!(l.total_bytes(), 10_000_000);
        assert_eq!(l.total_wait_micros(), 9_900_000);
        // Idle time refills at most 100 ms worth.
        clock.advance_micros(60_000_000);
        l.request(100_000);
        assert_eq!(clock.now_micros(), 69_900_000);
        l.request(100_000);
        assert_eq!(clock.now_micros(), 70_000_000);
    }

    #[test]
    fn a_job_writing_in_chunks_sleeps_the_deficit_past_the_burst() {
        // What a compaction job's output writer does: ask before each
        // stretch of output (moved here from the job test when the limiter
        // moved into the engine). At 10 kB/s after a 1 kB burst, the clock
        // sleeps (written - 1000) / 10 ms, give or take a microsecond per
        // wait.
        let (l, clock) = limiter(10_000, 0, None, 0);
        let chunks = [4096u64, 4096, 4096, 1234, 4096, 777, 4096];
        let written: u64 = chunks.iter().sum();
        for c in chunks {
            l.request(c);
        }
        assert_eq!(l.total_bytes(), written);
        let expected = (written - 1_000) * 100;
        let slept = clock.now_micros();
        assert!(
            slept >= expected && slept <= expected + 1_000,
            "{slept} vs {expected}"
        );
    }

    #[test]
    fn offpeak_window_raises_or_lifts_the_rate() {
        let day = 86_400 * 20_000u64;
        let noon = (day + 12 * 3_600) * 1_000_000;
        let night = (day + 2 * 3_600) * 1_000_000;
        let (l, clock) = limiter(1_000_000, 4_000_000, Some("23:00-05:00"), noon);
        assert!(!l.is_offpeak());
        assert_eq!(l.current_rate(), 1_000_000);
        let (l2, clock2) = limiter(1_000_000, 4_000_000, Some("23:00-05:00"), night);
        assert!(l2.is_offpeak());
        for _ in 0..40 {
            l.request(100_000);
            l2.request(100_000);
        }
        // 4 MB: 3.9 s at peak, 0.9 s at four times the rate (after a 400 KB
        // burst).
        assert_eq!(clock.now_micros() - noon, 3_900_000);
        assert_eq!(clock2.now_micros() - night, 900_000);
        // Unlimited off-peak: no waiting at all.
        let (l3, clock3) = limiter(1_000, 0, Some("00:00-23:59"), night);
        l3.request(1 << 30);
        assert_eq!(clock3.now_micros(), night);
    }

    #[test]
    fn parsing() {
        assert!(OffpeakWindow::parse("01:00-01:00").is_err());
        assert!(OffpeakWindow::parse("1:00-02:00").is_err());
        assert!(OffpeakWindow::parse("01:00").is_err());
        assert_eq!(
            OffpeakWindow::parse("22:15-06:05").unwrap().to_string(),
            "22:15-06:05"
        );
        let t = DailyTime::parse("03:00").unwrap();
        let day = 86_400 * 7u64;
        assert_eq!(t.next_at_or_after(day), day + 10_800);
        assert_eq!(t.next_at_or_after(day + 10_800), day + 10_800);
        assert_eq!(t.next_at_or_after(day + 10_801), day + 86_400 + 10_800);
    }
}
