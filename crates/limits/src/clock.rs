//! Where `now` comes from.
//!
//! Every decision is a pure function of (state, now, cost), with `now` in
//! integer nanoseconds. The production clock reads the wall clock once, at
//! start, and advances with the monotonic clock from then on: it never runs
//! backwards (a raw wall clock can, when NTP steps it), yet it stays aligned
//! to the Unix epoch, which fixed windows and saved state need. Tests and the
//! simulator use [`ManualClock`], so that time only moves when they say so.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A source of time in nanoseconds since the clock's zero.
pub trait Clock: Send + Sync {
    /// The current time in nanoseconds. Never smaller than an earlier reading.
    fn now(&self) -> u64;
}

/// Unix-epoch nanoseconds that never run backwards: the wall clock read once
/// at construction, advanced by the monotonic clock.
///
/// ```
/// use limits::{Clock, SystemClock};
/// let clock = SystemClock::new();
/// let a = clock.now();
/// let b = clock.now();
/// assert!(b >= a);
/// assert!(a > 1_600_000_000 * 1_000_000_000); // after September 2020
/// ```
#[derive(Clone, Copy, Debug)]
pub struct SystemClock {
    epoch_at_start: u64,
    start: Instant,
}

impl SystemClock {
    /// Reads the wall clock now; later readings add monotonic time to it.
    pub fn new() -> SystemClock {
        let start = Instant::now();
        let since_epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        SystemClock {
            epoch_at_start: u64::try_from(since_epoch.as_nanos()).unwrap_or(u64::MAX),
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
        let elapsed = u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
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
