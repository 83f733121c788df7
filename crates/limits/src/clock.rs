//! Where `now` comes from.
//!
//! Every decision is a pure function of (state, now, cost), with `now` in
//! integer nanoseconds. The production clock reads the wall clock once, at
//! start, and advances with a monotonic counter from then on: it never runs
//! backwards (a raw wall clock can, when NTP steps it), yet it stays aligned
//! to the Unix epoch, which fixed windows and saved state need. The counter
//! is `quanta`'s (governor's clock too): the CPU's time-stamp counter where
//! it is invariant, calibrated once against the OS monotonic clock, which
//! it falls back to otherwise. Reading the TSC costs a third of a vDSO
//! `clock_gettime` (BENCHMARKS.md, `clock-read`), and a check reads the clock
//! once. Tests and the simulator use [`ManualClock`], so that time only
//! moves when they say so.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source of time in nanoseconds since the clock's zero.
pub trait Clock: Send + Sync {
    /// The current time in nanoseconds. Never smaller than an earlier reading.
    fn now(&self) -> u64;
}

/// Unix-epoch nanoseconds that never run backwards: the wall clock read once
/// at construction, advanced by a monotonic counter (the TSC through
/// `quanta`, or the OS monotonic clock).
///
/// Readings on one thread never decrease. Two threads on two cores read
/// two cores' counters, which the hardware keeps in step but not to the
/// nanosecond, so [`KeyedLimiter`](crate::KeyedLimiter) never lets one
/// key's time run backwards whatever its clock does (each shard decides at
/// no earlier time than its latest). The first `SystemClock` of a process
/// calibrates the counter: it may take up to 200 ms, once.
///
/// ```
/// use limits::{Clock, SystemClock};
/// let clock = SystemClock::new();
/// let a = clock.now();
/// let b = clock.now();
/// assert!(b >= a);
/// assert!(a > 1_600_000_000 * 1_000_000_000); // after September 2020
/// ```
#[derive(Clone, Debug)]
pub struct SystemClock {
    epoch_at_start: u64,
    counter: quanta::Clock,
    /// The counter's raw reading when the wall clock was read.
    start: u64,
}

impl SystemClock {
    /// Reads the wall clock now; later readings add monotonic time to it.
    pub fn new() -> SystemClock {
        let counter = quanta::Clock::new();
        let start = counter.raw();
        let since_epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        SystemClock {
            epoch_at_start: u64::try_from(since_epoch.as_nanos()).unwrap_or(u64::MAX),
            counter,
            start,
        }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> u64 {
        // Nanoseconds since `start`, zero for a reading before it (another
        // core's counter a little behind): never before the epoch reading.
        let elapsed = self.counter.delta_as_nanos(self.start, self.counter.raw());
        self.epoch_at_start.saturating_add(elapsed)
    }
}

/// A clock that moves only when told to; clones share the same time.
///
/// ```
/// use limits::{Clock, ManualClock};
/// use std::time::Duration;
/// let clock = ManualClock::new(0);
/// let shared = clock.clone();
/// clock.advance(Duration::from_millis(5));
/// assert_eq!(shared.now(), 5_000_000);
/// ```
#[derive(Clone, Debug, Default)]
pub struct ManualClock {
    now: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock reading `start_nanos`.
    pub fn new(start_nanos: u64) -> ManualClock {
        ManualClock {
            now: Arc::new(AtomicU64::new(start_nanos)),
        }
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        let _ = self
            .now
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |t| {
                Some(t.saturating_add(by))
            });
    }

    /// Sets the clock to `nanos`, if that is not earlier than its reading:
    /// a clock never runs backwards.
    pub fn set(&self, nanos: u64) {
        self.now.fetch_max(nanos, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now(&self) -> u64 {
        (**self).now()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_never_runs_backwards() {
        let c = ManualClock::new(100);
        c.set(50);
        assert_eq!(c.now(), 100);
        c.set(150);
        assert_eq!(c.now(), 150);
        c.advance(Duration::MAX);
        assert_eq!(c.now(), u64::MAX);
    }
}
