//! Write stalls: RocksDB's conditions (`GetWriteStallConditionAndCause`)
//! and its delayed-write token bucket (`WriteController::GetDelay`).

use std::time::{Duration, Instant};

use crate::options::Options;
use crate::stall::{StallCause, StallCondition};

/// What the stall decision of one table looks at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct StallInputs {
    /// Immutable memtables not yet flushed.
    pub(crate) unflushed_imm: usize,
    /// L0 files (including those being compacted).
    pub(crate) l0_files: usize,
    /// Estimated pending compaction bytes.
    pub(crate) pending_bytes: u64,
}

/// RocksDB's decision table (first match wins).
pub(crate) fn stall_condition(
    o: &Options,
    x: &StallInputs,
) -> (StallCondition, Option<StallCause>) {
    use StallCause::*;
    use StallCondition::*;
    let auto = !o.disable_auto_compactions;
    if x.unflushed_imm >= o.max_write_buffer_number {
        return (Stopped, Some(MemtableLimit));
    }
    if auto && x.l0_files >= o.level0_stop_writes_trigger {
        return (Stopped, Some(L0FileCount));
    }
    if auto
        && o.hard_pending_compaction_bytes_limit > 0
        && x.pending_bytes >= o.hard_pending_compaction_bytes_limit
    {
        return (Stopped, Some(PendingCompactionBytes));
    }
    if o.max_write_buffer_number > 3
        && x.unflushed_imm >= o.max_write_buffer_number - 1
        && x.unflushed_imm > o.min_write_buffer_number_to_merge
    {
        return (Delayed, Some(MemtableLimit));
    }
    if auto && x.l0_files >= o.level0_slowdown_writes_trigger {
        return (Delayed, Some(L0FileCount));
    }
    if auto
        && o.soft_pending_compaction_bytes_limit > 0
        && x.pending_bytes >= o.soft_pending_compaction_bytes_limit
    {
        return (Delayed, Some(PendingCompactionBytes));
    }
    (Normal, None)
}

/// Whether the table is near a stop, which makes RocksDB cut the delayed
/// rate harder (`penalize_stop`).
fn near_stop(o: &Options, x: &StallInputs) -> bool {
    let l0 = x.l0_files + 2 >= o.level0_stop_writes_trigger;
    let soft = o.soft_pending_compaction_bytes_limit;
    let hard = o.hard_pending_compaction_bytes_limit;
    let pending =
        hard > soft && x.pending_bytes > soft && (x.pending_bytes - soft) * 4 > (hard - soft) * 3;
    l0 || pending
}

/// The delayed write rate and its token bucket.
#[derive(Debug)]
pub(crate) struct WriteController {
    condition: StallCondition,
    cause: Option<StallCause>,
    max_rate: u64,
    /// Current delayed write rate, bytes per second.
    rate: u64,
    credit: u64,
    next_refill: Option<Instant>,
    prev_pending: u64,
}

/// The minimum delayed write rate (RocksDB: 16 KiB/s).
const MIN_RATE: u64 = 16 << 10;
const REFILL: Duration = Duration::from_millis(1);

impl WriteController {
    pub(crate) fn new(delayed_write_rate: u64) -> Self {
        WriteController {
            condition: StallCondition::Normal,
            cause: None,
            max_rate: delayed_write_rate,
            rate: delayed_write_rate,
            credit: 0,
            next_refill: None,
            prev_pending: 0,
        }
    }

    pub(crate) fn condition(&self) -> StallCondition {
        self.condition
    }

    pub(crate) fn cause(&self) -> Option<StallCause> {
        self.cause
    }

    /// The current delayed write rate.
    pub(crate) fn delayed_rate(&self) -> u64 {
        self.rate
    }

    /// Applies a new decision (RocksDB's `RecalculateWriteStallConditions`
    /// and `SetupDelay`): staying in the delayed state multiplies the rate
    /// by 0.6 (near a stop, or coming from one), 0.8 (debt not shrinking)
    /// or 1.25 (debt shrinking); leaving it multiplies the rate by 1.4.
    pub(crate) fn update(
        &mut self,
        o: &Options,
        decision: (StallCondition, Option<StallCause>),
        inputs: &StallInputs,
    ) {
        let (cond, cause) = decision;
        let was = self.condition;
        if cond == StallCondition::Delayed {
            if o.disable_auto_compactions {
                self.rate = self.max_rate;
            } else if was == StallCondition::Delayed || was == StallCondition::Stopped {
                let penalize = was == StallCondition::Stopped || near_stop(o, inputs);
                let pending = inputs.pending_bytes;
                let factor = if penalize {
                    0.6
                } else if self.prev_pending > 0 && self.prev_pending <= pending {
                    0.8
                } else if self.prev_pending > pending {
                    1.25
                } else {
                    1.0
                };
                self.rate = ((self.rate as f64 * factor) as u64).clamp(MIN_RATE, self.max_rate);
            }
        } else if was == StallCondition::Delayed {
            self.rate = ((self.rate as f64 * 1.4) as u64).min(self.max_rate);
        }
        self.prev_pending = inputs.pending_bytes;
        self.condition = cond;
        self.cause = cause;
    }

    /// How long a write of `bytes` must sleep while delayed (0 when it is
    /// within the credit): a bucket refilled every millisecond at the
    /// delayed rate; a shortfall sleeps `shortfall / rate`, at least 1 ms.
    pub(crate) fn delay(&mut self, bytes: u64, now: Instant) -> Duration {
        if self.condition != StallCondition::Delayed {
            return Duration::ZERO;
        }
        if self.credit >= bytes {
            self.credit -= bytes;
            return Duration::ZERO;
        }
        let next = *self.next_refill.get_or_insert(now);
        if next <= now {
            let elapsed = now - next + REFILL;
            self.credit += (elapsed.as_secs_f64() * self.rate as f64).ceil() as u64;
            self.next_refill = Some(now + REFILL);
            if self.credit >= bytes {
                self.credit -= bytes;
                return Duration::ZERO;
            }
        }
        let over = bytes - self.credit;
        self.credit = 0;
        let needed = Duration::from_secs_f64(over as f64 / self.rate as f64);
        let next = self.next_refill.unwrap_or(now) + needed;
        self.next_refill = Some(next);
        next.saturating_duration_since(now).max(REFILL)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(imm: usize, l0: usize, pending: u64) -> StallInputs {
        StallInputs {
            unflushed_imm: imm,
            l0_files: l0,
            pending_bytes: pending,
        }
    }

    #[test]
    fn rocksdb_triggers_with_default_options() {
        let o = Options::default().sanitized().unwrap();
        use StallCondition::*;
        assert_eq!(stall_condition(&o, &inputs(0, 0, 0)).0, Normal);
        assert_eq!(stall_condition(&o, &inputs(1, 19, 0)).0, Normal);
        assert_eq!(
            stall_condition(&o, &inputs(2, 0, 0)),
            (Stopped, Some(StallCause::MemtableLimit))
        );
        assert_eq!(
            stall_condition(&o, &inputs(0, 20, 0)),
            (Delayed, Some(StallCause::L0FileCount))
        );
        assert_eq!(
            stall_condition(&o, &inputs(0, 36, 0)),
            (Stopped, Some(StallCause::L0FileCount))
        );
        assert_eq!(
            stall_condition(&o, &inputs(0, 0, 64 << 30)),
            (Delayed, Some(StallCause::PendingCompactionBytes))
        );
        assert_eq!(
            stall_condition(&o, &inputs(0, 0, 256 << 30)),
            (Stopped, Some(StallCause::PendingCompactionBytes))
        );
        let no_auto = o.clone().disable_auto_compactions(true);
        assert_eq!(
            stall_condition(&no_auto, &inputs(0, 100, u64::MAX)).0,
            Normal
        );
        assert_eq!(stall_condition(&no_auto, &inputs(2, 0, 0)).0, Stopped);
        let many = o.max_write_buffer_number(5);
        assert_eq!(
            stall_condition(&many, &inputs(4, 0, 0)),
            (Delayed, Some(StallCause::MemtableLimit))
        );
        assert_eq!(stall_condition(&many, &inputs(3, 0, 0)).0, Normal);
    }

    #[test]
    fn token_bucket_paces_to_the_rate() {
        let o = Options::default().sanitized().unwrap();
        let mut wc = WriteController::new(1 << 20);
        let x = inputs(0, 20, 0);
        wc.update(&o, stall_condition(&o, &x), &x);
        assert_eq!(wc.condition(), StallCondition::Delayed);
        let start = Instant::now();
        // Simulated clock: writing 10 MiB in 64 KiB writes at 1 MiB/s must
        // be spread over about 10 s of sleeps.
        let mut now = start;
        let mut slept = Duration::ZERO;
        for _ in 0..160 {
            let d = wc.delay(64 << 10, now);
            slept += d;
            now += d;
        }
        let secs = slept.as_secs_f64();
        assert!((9.0..=10.5).contains(&secs), "slept {secs} s");
        // Staying delayed with growing debt lowers the rate by 0.8.
        let y = inputs(0, 20, 100);
        wc.update(&o, stall_condition(&o, &y), &y);
        let z = inputs(0, 20, 200);
        wc.update(&o, stall_condition(&o, &z), &z);
        assert_eq!(wc.delayed_rate(), ((1u64 << 20) as f64 * 0.8) as u64);
        // Leaving the delay raises it by 1.4 (capped at the option).
        let n = inputs(0, 0, 0);
        wc.update(&o, stall_condition(&o, &n), &n);
        assert_eq!(wc.condition(), StallCondition::Normal);
        assert_eq!(wc.delayed_rate(), 1 << 20);
        assert_eq!(wc.delay(1 << 30, now), Duration::ZERO);
    }
}
