//! The system clock is epoch-aligned and monotonic on a thread, and a keyed
//! limiter never lets one key's time run backwards, even on a clock whose
//! readings do (two cores' time-stamp counters are close, not equal).

use limits::{Algorithm, Clock, KeyedLimiter, Rule, SystemClock};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

const SECOND: u64 = 1_000_000_000;

#[test]
fn system_clock_reads_unix_nanoseconds_that_never_decrease() {
    let clock = SystemClock::new();
    let wall = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let first = clock.now();
    let wall = u64::try_from(wall.as_nanos()).unwrap();
    assert!(first.abs_diff(wall) < 5 * SECOND, "{first} vs {wall}");
    let mut last = first;
    for _ in 0..100_000 {
        let t = clock.now();
        assert!(t >= last, "{t} after {last}");
        last = t;
    }
    // A clone reads the same time scale.
    assert!(clock.clone().now() >= last);
}

/// Reads the given times in turn, then the last one for ever.
struct Replay(&'static [u64], AtomicUsize);

impl Clock for Replay {
    fn now(&self) -> u64 {
        let i = self.1.fetch_add(1, Ordering::SeqCst);
        self.0[i.min(self.0.len() - 1)]
    }
}

#[test]
fn a_clock_reading_earlier_than_the_last_decides_at_the_last() {
    // 10 s, then a reading half a second earlier (another core's counter).
    let clock = Replay(
        &[10 * SECOND, 10 * SECOND - SECOND / 2],
        AtomicUsize::new(0),
    );
    let rule = Rule::new(Algorithm::TokenBucket, "1/s".parse().unwrap());
    let limiter: KeyedLimiter<u64, _> = KeyedLimiter::with_clock(rule, clock);
    assert!(limiter.check(&7, 1).allowed);
    let denied = limiter.check(&7, 1);
    assert!(!denied.allowed);
    // Decided at 10 s, not 9.5 s: the bucket refills one token a second later.
    assert_eq!(
        denied.retry_after.duration().unwrap().as_nanos(),
        1_000_000_000
    );
}
